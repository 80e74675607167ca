"""The related-pages index on disk: H, I, the document map, the bags (paper Section 6.2, Figure 12).

Byte layout of one index version (a folder; all integers little-endian, arrays without headers,
so each is one ``np.memmap``):

    index.json        the manifest: format "simweb-index", format_version, the min-hash
                      parameters (m, seed, algorithm, hash_family), n_docs, n_indexed,
                      metric (how the re-ranking query orders what I finds: "jaccard",
                      or "overlap" for bags compared by overlap; absent: "jaccard"),
                      min_in_degree (the I filter; null when in-degrees were unknown),
                      n_buckets, n_postings, offsets_dtype, and for every file below its
                      size in bytes and SHA-256.
    H.u32             n_docs × m uint32, row-major: document d's signatures are the 4·m bytes at
                      offset 4·m·d (one seek, Section 6.2).
    I.keys.u64        n_buckets uint64, strictly rising: (j << 32) | h for position j ∈ [0, m)
                      and signature value h, one per bucket: a value that two or more
                      documents of H share at position j and that holds an indexed document.
    I.offsets.u32     n_buckets + 1 rising integers (uint32, or uint64 in I.offsets.u64 when
                      n_postings ≥ 2^32): bucket b holds I.docs[offsets[b]:offsets[b+1]].
    I.docs.u32        n_postings uint32 ids of the indexed documents (in-degree above the
                      filter, non-empty bag), rising within each bucket.
    urls.u64          n_docs uint64 url ids (simweb.core.urls.url_id), sorted;
    urls.docs.u32     n_docs uint32: the document id of each entry of urls.u64.
    docs.parquet      doc_id, url_id, url, title, in_degree, category, n_terms, indexed — one
                      row per document id, in id order.
    bags-<first>.parquet
                      doc_id, terms, weights (the BAGS rows, Section 6.1) of the documents
                      first, first + 1, … in id order, <first> written in ten digits; one file
                      for at most BAG_FILE_DOCS documents, the files together holding every
                      document once; row groups of BAG_ROW_GROUP rows counted from the file's
                      first document, read one group at a time for re-ranking and top terms.
                      The manifest's "bags" lists the files in id order: file, first_doc, docs.
                      (Format version 1, still read, held all the bags in one bags.parquet.)

An index folder published with :func:`publish` holds ``versions/<name>/`` folders, a
``CURRENT`` file naming the live one, and ``live``, a symbolic link to it (``OUT/live/docs.parquet``
is the live document map, for pandas, DuckDB or any tool that reads a path). A new version is
written whole under its own name and then ``CURRENT`` and ``live`` are each replaced by an atomic
rename, so a reader resolves either the old or the new version, never a mix; a reader keeps the
version it opened (its files stay readable while it holds them open, and the previous version is
kept on disk at each publish). ``CURRENT`` is what simweb reads; ``live`` is for people and
tools (a file system without symbolic links has only ``CURRENT``).
"""
from __future__ import annotations

import datetime as _dt
import hashlib
import json
import os
import shutil
import threading
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from simweb.core.minhash import MinHashParams
from simweb.core.query import InvertedIndex

FORMAT = "simweb-index"
FORMAT_VERSION = 2
#: The format versions this code reads (1: the bags in one file, bags.parquet).
READABLE_VERSIONS = (1, 2)
MANIFEST = "index.json"
CURRENT = "CURRENT"
LIVE = "live"
VERSIONS = "versions"
H_FILE = "H.u32"
KEYS_FILE = "I.keys.u64"
DOCS_FILE = "I.docs.u32"
URLS_FILE = "urls.u64"
URL_DOCS_FILE = "urls.docs.u32"
DOCMAP_FILE = "docs.parquet"
BAGS_FILE = "bags.parquet"  # format version 1
BAG_ROW_GROUP = 1024
#: Documents in one bags file: a build's files hold documents [k·BAG_FILE_DOCS, (k+1)·BAG_FILE_DOCS)
#: (the last fewer), whatever the number of workers that wrote them in parallel; an incremental
#: update rewrites only the files holding a touched document and copies the others. 64 row
#: groups: 16 files at a million pages.
BAG_FILE_DOCS = 64 * BAG_ROW_GROUP
#: Row groups of the bags an opened version keeps in memory (the most recently read).
BAG_GROUPS_KEPT = 64
KEEP_VERSIONS = 2

DOCMAP = pa.schema(
    [
        pa.field("doc_id", pa.uint32(), nullable=False),
        pa.field("url_id", pa.uint64(), nullable=False),
        pa.field("url", pa.string(), nullable=False),
        pa.field("title", pa.string()),
        pa.field("in_degree", pa.int32()),
        pa.field("category", pa.string()),
        pa.field("n_terms", pa.int32(), nullable=False),
        pa.field("indexed", pa.bool_(), nullable=False),
    ]
)
INDEX_BAGS = pa.schema(
    [
        pa.field("doc_id", pa.uint32(), nullable=False),
        pa.field("terms", pa.list_(pa.string()), nullable=False),
        pa.field("weights", pa.list_(pa.float32()), nullable=False),
    ]
)
#: How the bags files are written (pyarrow.parquet writer options). Their row groups are small
#: (BAG_ROW_GROUP bags, for look-ups), too small for a dictionary of float weights to pay: the
#: weights go byte-stream-split instead, which zstd packs well. Measured on the 10k-page scale
#: crawl: 36.3 MB with dictionaries on every column, 26.6 MB so, read 0.28 → 0.24 s.
INDEX_BAGS_WRITE = {"compression": "zstd", "use_dictionary": ["doc_id", "terms.list.element"],
                    "use_byte_stream_split": ["weights.list.element"]}


class IndexFormatError(ValueError):
    """An index folder that is not a complete simweb index of a version this code reads."""


def bags_file_name(first_doc: int) -> str:
    """The name of the bags file whose first document is ``first_doc``."""
    return f"bags-{first_doc:010d}.parquet"


@dataclass(frozen=True, slots=True)
class BagFile:
    """One bags file of a version: its name and the documents first_doc … first_doc + docs − 1."""

    file: str
    first_doc: int
    docs: int

    def to_dict(self) -> dict[str, Any]:
        return {"file": self.file, "first_doc": self.first_doc, "docs": self.docs}


def bag_files(manifest: Mapping[str, Any]) -> list[BagFile]:
    """The bags files of a version, in id order, checked to hold documents 0 … n_docs − 1 once each."""
    n = int(manifest["n_docs"])
    if manifest.get("format_version") == 1:
        return [BagFile(BAGS_FILE, 0, n)]
    try:
        files = [BagFile(str(e["file"]), int(e["first_doc"]), int(e["docs"])) for e in manifest["bags"]]
    except (KeyError, TypeError, ValueError):
        raise IndexFormatError("the manifest's \"bags\" is missing or not a list of {file, first_doc, docs}; "
                               "rebuild the index") from None
    at = 0
    for f in files:
        if f.file not in manifest.get("files", {f.file: None}):
            raise IndexFormatError(f"the manifest names bags file {f.file} but not its size and digest; "
                                   "rebuild the index")
        if f.first_doc != at or f.docs <= 0 or os.path.basename(f.file) != f.file:
            raise IndexFormatError(f"the manifest's bags files do not hold documents 0 … {n - 1} in order "
                                   f"(at {f.file}); rebuild the index")
        at += f.docs
    if at != n:
        raise IndexFormatError(f"the manifest's bags files hold {at} documents, not {n}; rebuild the index")
    return files


class BagsWriter:
    """Writes the bags of documents ``first_doc``, ``first_doc`` + 1, … (given in that order, a
    table of terms and weights at a time) into the bags files of a version folder: a file each
    ``file_docs`` documents, in row groups of BAG_ROW_GROUP; each file appears whole when done.
    :meth:`close` returns the files written."""

    def __init__(self, folder: str, first_doc: int, file_docs: int | None = None) -> None:
        file_docs = BAG_FILE_DOCS if file_docs is None else file_docs
        if file_docs <= 0:
            raise ValueError(f"file_docs: expected a count > 0, got {file_docs}")
        self.folder, self.file_docs = folder, file_docs
        self.next_doc = first_doc
        self.files: list[BagFile] = []
        self._writer: pq.ParquetWriter | None = None
        self._first = first_doc
        self._in_file = 0
        self._pending: list[pa.Table] = []
        self._pending_rows = 0

    def write(self, bags: pa.Table) -> None:
        """Append the bags of the next ``bags.num_rows`` documents (columns terms, weights)."""
        while bags.num_rows:
            room = self.file_docs - self._in_file - self._pending_rows
            take = bags.slice(0, room)
            bags = bags.slice(take.num_rows)
            ids = np.arange(self.next_doc, self.next_doc + take.num_rows, dtype=np.uint32)
            self.next_doc += take.num_rows
            self._pending.append(pa.table({"doc_id": ids, "terms": take.column("terms"),
                                           "weights": take.column("weights")}).cast(INDEX_BAGS))
            self._pending_rows += take.num_rows
            if self._in_file + self._pending_rows == self.file_docs:
                self._flush(everything=True)
                self._finish_file()
            elif self._pending_rows >= BAG_ROW_GROUP:
                self._flush(everything=False)

    def _flush(self, everything: bool) -> None:
        merged = pa.concat_tables(self._pending)
        rows = merged.num_rows if everything else merged.num_rows - merged.num_rows % BAG_ROW_GROUP
        if rows:
            if self._writer is None:
                self._writer = pq.ParquetWriter(self._tmp(), INDEX_BAGS, **INDEX_BAGS_WRITE)
            self._writer.write_table(merged.slice(0, rows), row_group_size=BAG_ROW_GROUP)
            self._in_file += rows
        rest = merged.slice(rows)
        self._pending, self._pending_rows = [rest], rest.num_rows

    def _tmp(self) -> str:
        return os.path.join(self.folder, f".tmp-{bags_file_name(self._first)}")

    def _finish_file(self) -> None:
        if self._writer is not None:
            self._writer.close()
            self._writer = None
            name = bags_file_name(self._first)
            os.replace(self._tmp(), os.path.join(self.folder, name))
            self.files.append(BagFile(name, self._first, self._in_file))
        self._first += self._in_file
        self._in_file = 0

    def close(self) -> list[BagFile]:
        if self._pending_rows:
            self._flush(everything=True)
        self._finish_file()
        return self.files

    def abort(self) -> None:
        """Drop the file being written (the finished ones stay)."""
        if self._writer is not None:
            self._writer.close()
            self._writer = None
            os.remove(self._tmp())


def offsets_file(dtype: np.dtype | str) -> str:
    return "I.offsets.u64" if np.dtype(dtype) == np.uint64 else "I.offsets.u32"


def local_dir(url: str) -> str:
    """The local path of an index folder: memory-mapping needs a local file system."""
    from simweb.tasks.storage import local_path

    path = local_path(url)
    if path is None:
        raise ValueError(
            f"index folder {url!r} is not on a local file system; the index is memory-mapped, "
            "so build it to (or copy it to) a local path"
        )
    return path


def write_array_atomic(array: np.ndarray, path: str) -> None:
    """Write a raw little-endian array so that the file appears whole or not at all."""
    tmp = f"{path}.tmp-{uuid.uuid4().hex[:8]}"
    try:
        with open(tmp, "wb") as f:
            np.ascontiguousarray(array).astype(array.dtype.newbyteorder("<"), copy=False).tofile(f)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.remove(tmp)
        raise


def sha256(path: str, chunk: int = 1 << 22) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(chunk):
            h.update(block)
    return h.hexdigest()


def write_manifest(version: str, info: Mapping[str, Any]) -> dict[str, Any]:
    """Write ``index.json`` last, with the size and SHA-256 of every file of the version."""
    files = {}
    for name in sorted(os.listdir(version)):
        path = os.path.join(version, name)
        if name == MANIFEST or not os.path.isfile(path) or ".tmp-" in name:
            continue
        files[name] = {"bytes": os.path.getsize(path), "sha256": sha256(path)}
    manifest = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        **dict(info),
        "files": files,
    }
    tmp = os.path.join(version, f".tmp-{uuid.uuid4().hex[:8]}-{MANIFEST}")
    with open(tmp, "w") as f:
        json.dump(manifest, f, indent=1, sort_keys=True)
    os.replace(tmp, os.path.join(version, MANIFEST))
    return manifest


def resolve(index: str) -> str:
    """The version folder of ``index``: itself if it holds index.json, else the one CURRENT names."""
    path = local_dir(index)
    if os.path.isfile(os.path.join(path, MANIFEST)):
        return path
    current = os.path.join(path, CURRENT)
    if not os.path.isfile(current):
        raise FileNotFoundError(
            f"no index at {index}: expected {MANIFEST} or a {CURRENT} file there; "
            "build one with `simweb build CRAWL --out INDEX`"
        )
    name = current_name(path)
    version = os.path.join(path, VERSIONS, name)
    if not name or "/" in name or not os.path.isfile(os.path.join(version, MANIFEST)):
        raise IndexFormatError(f"{current} names version {name!r}, which is missing or incomplete under {path}/{VERSIONS}")
    return version


def current_name(index: str) -> str:
    """The version name the ``CURRENT`` file of ``index`` holds (raises FileNotFoundError when
    there is none, IndexFormatError when it cannot be read as a name)."""
    current = os.path.join(local_dir(index), CURRENT)
    try:
        with open(current, "rb") as f:
            return f.read(4096).decode("utf-8").strip()
    except UnicodeDecodeError:
        raise IndexFormatError(f"{current} is unreadable: expected a version name in UTF-8, found other bytes; "
                               "re-publish the index") from None
    except IsADirectoryError:
        raise IndexFormatError(f"{current} is a folder, expected a file naming a version; re-publish the index") from None


def publish(version: str, index: str, *, name: str | None = None, keep: int = KEEP_VERSIONS) -> str:
    """Make the complete version folder ``version`` the live version of ``index``; returns its path.

    The files are copied into ``index/versions/<name>`` (a reflink where the file system
    offers one, so no data is duplicated; never a hard link: the published version must not
    share its inodes with the cache it came from, or damage to one would be damage to both),
    each checked against its SHA-256 in the manifest on the way and flushed to disk; then
    ``index/CURRENT`` is switched by an atomic rename. Versions beyond the ``keep`` most
    recent are removed (the one just replaced stays, for readers that still hold it). ``version``
    may be on an object store (a build whose stage outputs are kept there): its files are then
    downloaded, and checked the same way.
    """
    from simweb.tasks.storage import join, local_path

    src = local_path(version) or version
    root = local_dir(index)
    manifest = read_manifest(src)
    name = name or f"v-{_dt.datetime.now(_dt.timezone.utc):%Y%m%dT%H%M%S}-{uuid.uuid4().hex[:8]}"
    versions = os.path.join(root, VERSIONS)
    os.makedirs(versions, exist_ok=True)
    dest = os.path.join(versions, name)
    tmp = os.path.join(versions, f".tmp-{name}")
    os.makedirs(tmp)
    try:
        for fname, meta in manifest["files"].items():
            copy_file(join(src, fname), os.path.join(tmp, fname), meta["sha256"])
        copy_file(join(src, MANIFEST), os.path.join(tmp, MANIFEST), None)
        _fsync_path(tmp)
        os.rename(tmp, dest)
        _fsync_path(versions)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    pointer = os.path.join(root, f".tmp-{uuid.uuid4().hex[:8]}-{CURRENT}")
    with open(pointer, "w") as f:
        f.write(name + "\n")
        f.flush()
        os.fsync(f.fileno())
    os.replace(pointer, os.path.join(root, CURRENT))
    _link_live(root, name)
    _fsync_path(root)
    _prune(versions, name, keep)
    return dest


def _link_live(root: str, name: str) -> None:
    """Point ``root/live`` at ``versions/<name>`` (relative, so the folder can move) by an atomic rename."""
    link = os.path.join(root, f".tmp-{uuid.uuid4().hex[:8]}-{LIVE}")
    try:
        os.symlink(os.path.join(VERSIONS, name), link)
    except (OSError, NotImplementedError):  # no symbolic links here: CURRENT alone names the version
        return
    os.replace(link, os.path.join(root, LIVE))


_FICLONE = 0x40049409  # ioctl: share the source's extents copy-on-write (btrfs, XFS, …)


def copy_file(src: str, dst: str, sha: str | None = None) -> None:
    """Copy ``src`` (a local file, or an object's URL) to the local file ``dst`` (a reflink
    where possible), check its SHA-256 and flush it to disk."""
    from simweb.tasks.storage import filesystem, local_path

    h = hashlib.sha256()
    fs, path = filesystem(src)
    with (open(path, "rb") if local_path(src) else fs.open(path, "rb")) as fin, open(dst, "wb") as fout:
        try:
            import fcntl

            fcntl.ioctl(fout.fileno(), _FICLONE, fin.fileno())
            cloned = True
        except (OSError, ImportError, AttributeError):  # no reflinks here, or the source is remote
            cloned = False
        while block := fin.read(1 << 22):
            h.update(block)
            if not cloned:
                fout.write(block)
        fout.flush()
        os.fsync(fout.fileno())
    if sha is not None and h.hexdigest() != sha:
        raise IndexFormatError(
            f"{src}: its content differs from the SHA-256 its manifest records (the cached index "
            "version is damaged); run the build again with --verify to compute it anew"
        )


def _fsync_path(path: str) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def damage(version: str, *, digests: bool = False) -> list[str]:
    """What is wrong with an index version folder (local, or on an object store) against its
    manifest: files missing or of another size (and with ``digests``, of other content); [] when whole."""
    from simweb.tasks.storage import file_problems

    try:
        manifest = read_manifest(version)
    except IndexFormatError as err:
        return [str(err)]
    return file_problems(version, manifest["files"], digests=digests,
                         differs=lambda name, recorded, found: f"{name}: expected SHA-256 {recorded} (in {MANIFEST}), "
                                                               f"found {found}")


def _prune(versions: str, live: str, keep: int) -> None:
    names = [n for n in os.listdir(versions) if not n.startswith(".tmp-") and n != live]
    names.sort(key=lambda n: os.path.getmtime(os.path.join(versions, n)), reverse=True)
    for old in names[max(0, keep - 1):]:
        shutil.rmtree(os.path.join(versions, old), ignore_errors=True)


def read_manifest(version: str) -> dict[str, Any]:
    """The manifest of the index version folder ``version`` (local, or on an object store)."""
    from simweb.tasks.storage import join, read_text

    path = join(version, MANIFEST)
    try:
        manifest = json.loads(read_text(path))
    except FileNotFoundError:
        raise IndexFormatError(f"{version} is not a finished index version: {MANIFEST} is missing") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise IndexFormatError(f"{path} is not valid JSON ({e}); rebuild the index") from None
    if manifest.get("format") != FORMAT or manifest.get("format_version") not in READABLE_VERSIONS:
        raise IndexFormatError(
            f"{path}: expected format {FORMAT!r} version {FORMAT_VERSION}, found "
            f"{manifest.get('format')!r} version {manifest.get('format_version')!r}; rebuild the index with this simweb"
        )
    return manifest


def _memmap(path: str, dtype: str, shape: tuple[int, ...]) -> np.ndarray:
    want = int(np.prod(shape)) * np.dtype(dtype).itemsize
    size = os.path.getsize(path)
    if size != want:
        raise IndexFormatError(f"{path}: expected {want} bytes for shape {shape} of {dtype}, found {size}; rebuild the index")
    if want == 0:
        return np.zeros(shape, dtype=dtype)
    # A plain ndarray view of the map: slicing it is cheaper than slicing np.memmap objects.
    return np.asarray(np.memmap(path, dtype=dtype, mode="r", shape=shape))


@dataclass(frozen=True, slots=True, eq=False)
class IndexVersion:
    """One opened index version: memory-mapped H and I, the url lookup, lazily read metadata."""

    path: str
    manifest: dict[str, Any]
    params: MinHashParams
    h: np.ndarray
    inverted: InvertedIndex
    url_ids: np.ndarray
    url_docs: np.ndarray
    _cache: dict[str, Any] = field(default_factory=dict)

    @property
    def n_docs(self) -> int:
        return int(self.manifest["n_docs"])

    @property
    def metric(self) -> str:
        """How the re-ranking query orders candidates: ``jaccard``, or ``overlap`` for an index of
        bags compared by overlap (simweb.core.strategy, "Overlap"); found by Jaccard either way."""
        return str(self.manifest.get("metric", "jaccard"))

    def doc_of(self, url_id: int) -> int | None:
        """The document id of a url id, or None."""
        at = int(np.searchsorted(self.url_ids, np.uint64(url_id)))
        if at < self.url_ids.size and int(self.url_ids[at]) == url_id:
            return int(self.url_docs[at])
        return None

    @property
    def docs(self) -> pa.Table:
        """docs.parquet, read on first use (a few dozen bytes per document)."""
        table = self._cache.get("docs")
        if table is None:
            table = self._cache["docs"] = pq.read_table(os.path.join(self.path, DOCMAP_FILE))
        return table

    def doc_rows(self, doc_ids: np.ndarray | list[int]) -> list[dict[str, Any]]:
        return self.docs.take(pa.array(np.asarray(doc_ids, dtype=np.int64))).to_pylist()

    def bag(self, doc_id: int) -> dict[str, float]:
        """The weighted bag of a document as {term: weight}."""
        if not 0 <= doc_id < self.n_docs:
            raise IndexError(f"document {doc_id} is not in this index (it holds 0 … {self.n_docs - 1})")
        f = int(np.searchsorted(self._bag_firsts, doc_id, side="right")) - 1
        g, row = divmod(doc_id - int(self._bag_firsts[f]), self._bag_handle(f)[1])
        group = self._bag_group(f, g)
        return dict(zip(group.column("terms")[row].as_py(), group.column("weights")[row].as_py()))

    def bag_columns(self, doc_ids: np.ndarray) -> tuple[pa.Array, np.ndarray, np.ndarray]:
        """The bags of several documents, given in rising id order, as flat columns: (terms,
        offsets, weights), document i's terms being ``terms[offsets[i]:offsets[i + 1]]``; read a
        row group at a time (for re-ranking many candidates at once)."""
        doc_ids = np.asarray(doc_ids, dtype=np.int64)
        if doc_ids.size > 1 and np.any(np.diff(doc_ids) < 0):
            raise ValueError("bag_columns: expected document ids in rising order")
        if doc_ids.size and (doc_ids[0] < 0 or doc_ids[-1] >= self.n_docs):
            raise IndexError(f"bag_columns: document ids outside 0 … {self.n_docs - 1}")
        firsts = self._bag_firsts
        files = np.searchsorted(firsts, doc_ids, side="right") - 1
        rows = doc_ids - firsts[files]
        # The rows of a row group in each file asked for (an index may have thousands of files).
        asked = np.unique(files)
        group_rows = np.array([self._bag_handle(f)[1] for f in asked.tolist()], dtype=np.int64)[
            np.searchsorted(asked, files)]
        # One key per (file, row group), rising with the document ids.
        keys = files * (1 << 32) + rows // group_rows
        tables = []
        for key in np.unique(keys).tolist():
            f, g = divmod(key, 1 << 32)
            at = keys == key
            tables.append(self._bag_group(f, g).take(pa.array(rows[at] % group_rows[at])))
        if not tables:
            return pa.array([], pa.string()), np.zeros(1, dtype=np.int64), np.zeros(0)
        found = pa.concat_tables(tables)
        terms = found.column("terms").combine_chunks()
        offsets = np.zeros(doc_ids.size + 1, dtype=np.int64)
        np.cumsum(pc.list_value_length(terms).to_numpy(zero_copy_only=False), out=offsets[1:])
        weights = pc.list_flatten(found.column("weights").combine_chunks()).to_numpy(zero_copy_only=False)
        return pc.list_flatten(terms), offsets, weights.astype(np.float64)

    @property
    def bag_files(self) -> list[BagFile]:
        """The bags files of this version, in id order."""
        files = self._cache.get("bag_files")
        if files is None:
            files = self._cache["bag_files"] = bag_files(self.manifest)
        return files

    @property
    def _bag_firsts(self) -> np.ndarray:
        firsts = self._cache.get("bag_firsts")
        if firsts is None:
            firsts = self._cache["bag_firsts"] = np.array([f.first_doc for f in self.bag_files], dtype=np.int64)
        return firsts

    def _bag_handle(self, f: int) -> tuple[pq.ParquetFile, int]:
        """The open bags file ``f`` and the rows of its row groups (all but the last alike)."""
        handles = self._cache.setdefault("bag_handles", {})
        found = handles.get(f)
        if found is None:
            path = os.path.join(self.path, self.bag_files[f].file)
            found = handles[f] = _bags_handle(open(path, "rb"), path, self.bag_files[f].docs)
        return found

    def _bag_group(self, f: int, g: int) -> pa.Table:
        # The server may answer from several threads: one reader of each file and the 64 most
        # recent row groups, under one lock (dict.setdefault is atomic).
        with self._cache.setdefault("bags_lock", threading.Lock()):
            groups = self._cache.setdefault("bag_groups", {})
            table = groups.get((f, g))
            if table is None:
                pf = self._bag_handle(f)[0]
                if len(groups) >= BAG_GROUPS_KEPT:
                    groups.pop(next(iter(groups)))
                table = groups[(f, g)] = pf.read_row_group(g)
            return table

    def verify(self) -> None:
        """Check every file's SHA-256 against the manifest (reads the whole index)."""
        problems = damage(self.path, digests=True)
        if problems:
            raise IndexFormatError(f"{self.path} is damaged: {'; '.join(problems)}; rebuild the index "
                                   "(or run the build again with --verify to publish an intact copy)")


def _bags_handle(file, path: str, docs: int) -> tuple[pq.ParquetFile, int]:
    """A bags file opened: its reader and its row groups' rows, checked against the manifest."""
    pf = pq.ParquetFile(file)
    meta = pf.metadata
    sizes = [meta.row_group(i).num_rows for i in range(meta.num_row_groups)]
    if meta.num_rows != docs or (sizes and (any(n != sizes[0] for n in sizes[:-1]) or sizes[-1] > sizes[0])):
        raise IndexFormatError(f"{path}: expected {docs} bags in row groups of one size, found {meta.num_rows} "
                               f"in {sizes[:5]}{'…' if len(sizes) > 5 else ''}; rebuild the index")
    return pf, max(sizes[0] if sizes else 1, 1)


def _room_for_files(n: int) -> None:
    """Raise the open-file limit (the soft one, within the hard) for an index of ``n`` bags
    files, all held open: 1,526 at a hundred million pages, beyond a default of 1,024."""
    if n <= 256:
        return
    try:
        import resource

        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        want = 4 * n + 1024
        if soft != resource.RLIM_INFINITY and soft < want:
            resource.setrlimit(resource.RLIMIT_NOFILE, (want if hard == resource.RLIM_INFINITY else min(want, hard), hard))
    except (ImportError, ValueError, OSError):  # no such limit here, or not ours to raise
        pass


def open_version(index: str, *, verify: bool = False) -> IndexVersion:
    """Open the live version of ``index`` (or a version folder) memory-mapped, read-only.

    A version pruned by a concurrent publish between resolving CURRENT and opening its files
    is not an error: CURRENT is resolved again (it names a newer, complete version).
    """
    for attempt in range(5):
        try:
            return _open_version(index, verify)
        except (FileNotFoundError, IndexFormatError):
            if attempt == 4 or os.path.isfile(os.path.join(local_dir(index), MANIFEST)):
                raise
    raise AssertionError("unreachable")


def _open_version(index: str, verify: bool) -> IndexVersion:
    path = resolve(index)
    manifest = read_manifest(path)
    for name, meta in manifest["files"].items():
        full = os.path.join(path, name)
        if not os.path.isfile(full) or os.path.getsize(full) != meta["bytes"]:
            raise IndexFormatError(f"{full}: missing or not {meta['bytes']} bytes as the manifest says; rebuild the index")
    params = MinHashParams.from_dict(manifest["minhash"])
    n, m = int(manifest["n_docs"]), params.m
    k, p = int(manifest["n_buckets"]), int(manifest["n_postings"])
    off_dtype = manifest["offsets_dtype"]
    inverted = InvertedIndex(
        _memmap(os.path.join(path, KEYS_FILE), "<u8", (k,)),
        _memmap(os.path.join(path, offsets_file(off_dtype)), "<" + np.dtype(off_dtype).str[1:], (k + 1,)),
        _memmap(os.path.join(path, DOCS_FILE), "<u4", (p,)),
        m,
    )
    version = IndexVersion(
        path=path,
        manifest=manifest,
        params=params,
        h=_memmap(os.path.join(path, H_FILE), "<u4", (n, m)),
        inverted=inverted,
        url_ids=_memmap(os.path.join(path, URLS_FILE), "<u8", (n,)),
        url_docs=_memmap(os.path.join(path, URL_DOCS_FILE), "<u4", (n,)),
    )
    # Hold the metadata and an open handle on each bags file now: once open, a later prune of
    # this version cannot take them away (an unlinked file stays readable while open).
    version._cache["docs"] = pq.read_table(os.path.join(path, DOCMAP_FILE))
    _room_for_files(len(version.bag_files))
    for f in range(len(version.bag_files)):
        version._bag_handle(f)
    if verify:
        version.verify()
    return version
