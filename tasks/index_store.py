"""The related-pages index on disk: H, I, the document map, the bags (paper Section 6.2, Figure 12).

Byte layout of one index version (a folder; all integers little-endian, arrays without headers,
so each is one ``np.memmap``):

    index.json        the manifest: format "simweb-index", format_version, the min-hash
                      parameters (m, seed, algorithm, hash_family), n_docs, n_indexed,
                      n_crawled (documents that are crawled pages; the others are pages
                      only linked to; null when unknown), n_terms (the vocabulary) and
                      n_entries (the bags' terms, all documents together),
                      metric (how the re-ranking query orders what I finds: "jaccard",
                      or "overlap" for bags compared by overlap; absent: "jaccard"),
                      min_in_degree (the I filter; null when in-degrees were unknown),
                      n_buckets, n_postings, offsets_dtype, and for every file below its
                      size in bytes and SHA-256.
    H.u32             n_docs × m uint32, row-major: document d's signatures are the 4·m bytes at
                      offset 4·m·d (one seek, Section 6.2).
    H2.u8             n_docs × 256 uint8, row-major: the fine signatures the default query reads for
                      its candidates (simweb.core.fine); absent from an index ordered by overlap,
                      and from an index built before them (its queries use H alone).
    I.keys.u64        n_buckets uint64, strictly rising: (j << 32) | h for position j ∈ [0, m)
                      and signature value h, one per bucket: a value that two or more
                      documents of H share at position j and that holds an indexed document.
    I.offsets.u32     n_buckets + 1 rising integers (uint32, or uint64 in I.offsets.u64 when
                      n_postings ≥ 2^32): bucket b holds I.docs[offsets[b]:offsets[b+1]].
    I.docs.u32        n_postings uint32 ids of the indexed documents (in-degree above the
                      filter, non-empty bag), rising within each bucket.
    urls.u64          n_docs uint64 url ids (simweb.core.urls.url_id), sorted;
    urls.docs.u32     n_docs uint32: the document id of each entry of urls.u64.
    aliases.u64       uint64 url ids, sorted: the URLs that name a document of the index
                      without being its URL (a redirect, a canonical link, a slash or index
                      variant: simweb.core.aliases), as the crawl resolved them at the build;
    aliases.docs.u32  uint32: the document id each entry of aliases.u64 names.
    updated.docs.u32  (a version an incremental update made, whose manifest's "updated_from" is
                      the SHA-256 of the index.json it was made from) uint32, rising: the
                      documents whose rows it replaced or appended; every other document is
                      the same as there (simweb.tasks.precomputed updates a table by it).
    bags.offsets.u64  n_docs + 1 rising uint64: document d's bag is entries offsets[d] …
                      offsets[d + 1] − 1 of the two arrays below (simweb.core.rerank).
    bags.terms.u32    uint32 term ids (places in terms.offsets.u64), rising within a document.
    bags.weights.f32  float32, one per entry: the term's weight in the bag (Section 6.1).
    bags.sums.f64     n_docs float64: each bag's sum of weights, added in term order.
    terms.offsets.u64 n_terms + 1 rising uint64, and
    terms.utf8        the vocabulary: term id t is the UTF-8 text terms.utf8[offsets[t]:
                      offsets[t + 1]], in UTF-8 byte order (simweb.tasks.bag_arrays).
    docs.parquet      doc_id, url_id, url, title, in_degree, category, n_terms, indexed, crawled —
                      one row per document id, in id order.
    docs.arrow        the same table as an Arrow IPC file, uncompressed: what queries read,
                      memory-mapped (the server's processes share its pages, copying none).
    bags-<first>.parquet
                      doc_id, terms, weights (the BAGS rows, Section 6.1) of the documents
                      first, first + 1, … in id order, <first> written in ten digits; one file
                      for at most BAG_FILE_DOCS documents, the files together holding every
                      document once, in row groups of BAG_ROW_GROUP rows: the bags as tables,
                      for pandas, DuckDB and the incremental update (queries read the arrays).
                      The manifest's "bags" lists the files in id order: file, first_doc, docs.

Format version 3 added the aliases, the bags as arrays with their sums, the vocabulary, docs.arrow and the
doc map's ``crawled``; earlier versions are refused with the advice to rebuild (``simweb
build`` reuses the ingested crawl and its bags, and redoes only the signatures and invert
stages).

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
import uuid
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.ipc

from simweb.core.aliases import AliasMap
from simweb.core.errors import IndexFormatError
from simweb.core.minhash import MinHashParams
from simweb.core.query import InvertedIndex
from simweb.core.rerank import BagArrays
from simweb.tasks.storage import fsync_path

FORMAT = "simweb-index"
FORMAT_VERSION = 3
#: The format versions this code reads.
READABLE_VERSIONS = (3,)
MANIFEST = "index.json"
CURRENT = "CURRENT"
LIVE = "live"
VERSIONS = "versions"
H_FILE = "H.u32"
H2_FILE = "H2.u8"
KEYS_FILE = "I.keys.u64"
DOCS_FILE = "I.docs.u32"
URLS_FILE = "urls.u64"
URL_DOCS_FILE = "urls.docs.u32"
DOCMAP_FILE = "docs.parquet"
DOCMAP_ARROW_FILE = "docs.arrow"
ALIASES_FILE = "aliases.u64"
ALIAS_DOCS_FILE = "aliases.docs.u32"
UPDATED_DOCS_FILE = "updated.docs.u32"
BAG_OFFSETS_FILE = "bags.offsets.u64"
BAG_TERMS_FILE = "bags.terms.u32"
BAG_WEIGHTS_FILE = "bags.weights.f32"
BAG_SUMS_FILE = "bags.sums.f64"
VOCAB_OFFSETS_FILE = "terms.offsets.u64"
VOCAB_FILE = "terms.utf8"
BAG_ROW_GROUP = 1024
#: Documents in one bags file: a build's files hold documents [k·BAG_FILE_DOCS, (k+1)·BAG_FILE_DOCS)
#: (the last fewer), whatever the number of workers that wrote them in parallel; an incremental
#: update rewrites only the files holding a touched document and copies the others. 64 row
#: groups: 16 files at a million pages.
BAG_FILE_DOCS = 64 * BAG_ROW_GROUP
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
        pa.field("crawled", pa.bool_()),
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
        self._writer: Any = None  # a pyarrow.parquet.ParquetWriter while a file is open
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
                import pyarrow.parquet as pq

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
    if "://" not in url and "::" not in url:  # a plain path (without loading fsspec: queries start fast)
        return os.path.abspath(url)
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


@contextmanager
def appending(folder: str, names: Sequence[str]) -> Iterator[dict[str, Any]]:
    """Open files of ``names`` in ``folder`` to be written piece by piece (raw little-endian arrays
    appended with ``ndarray.tofile``), each appearing whole under its name only when the block ends
    without an error: memory holds a piece, never a whole array."""
    tmp = {name: os.path.join(folder, f".tmp-{uuid.uuid4().hex[:8]}-{name}") for name in names}
    files: dict[str, Any] = {}
    try:
        for name in names:
            files[name] = open(tmp[name], "wb")
        yield files
        for f in files.values():
            f.close()
        for name in names:
            os.replace(tmp[name], os.path.join(folder, name))
    finally:
        for f in files.values():
            f.close()
        for path in tmp.values():
            if os.path.exists(path):
                os.remove(path)


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
        fsync_path(tmp)
        os.rename(tmp, dest)
        fsync_path(versions)
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
    fsync_path(root)
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


def version_damage(version: str, *, digests: bool = False) -> list[str]:
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
    if "://" in version or "::" in version:
        from simweb.tasks.storage import join, read_text

        path = join(version, MANIFEST)
    else:  # a plain path, read without loading fsspec (queries start fast)
        path = os.path.join(version, MANIFEST)

        def read_text(name: str) -> str:
            with open(name, encoding="utf-8") as f:
                return f.read()
    try:
        manifest = json.loads(read_text(path))
    except FileNotFoundError:
        raise IndexFormatError(f"{version} is not a finished index version: {MANIFEST} is missing") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise IndexFormatError(f"{path} is not valid JSON ({e}); rebuild the index") from None
    if manifest.get("format") != FORMAT or manifest.get("format_version") not in READABLE_VERSIONS:
        raise IndexFormatError(
            f"{path}: expected format {FORMAT!r} version {FORMAT_VERSION}, found "
            f"{manifest.get('format')!r} version {manifest.get('format_version')!r}; rebuild the index with this simweb "
            "(`simweb build` reuses the ingested crawl and its bags)"
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
    """One opened index version, every file memory-mapped: H, I, the url and alias lookups, the
    bags as arrays, the vocabulary and the doc map (docs.arrow). Nothing of it is copied into
    the process: the processes of a server share the pages of one version."""

    path: str
    manifest: dict[str, Any]
    params: MinHashParams
    h: np.ndarray
    inverted: InvertedIndex
    url_ids: np.ndarray
    url_docs: np.ndarray
    alias_ids: np.ndarray
    alias_docs: np.ndarray
    bag_arrays: BagArrays
    vocabulary: tuple[np.ndarray, np.ndarray]  # (terms.offsets.u64, terms.utf8)
    docs: pa.Table  # docs.arrow, memory-mapped
    h2: np.ndarray | None = None  # H2.u8 (simweb.core.fine), None where the version has none
    _cache: dict[str, Any] = field(default_factory=dict)

    @property
    def n_docs(self) -> int:
        return int(self.manifest["n_docs"])

    @property
    def n_crawled(self) -> int | None:
        """How many documents are crawled pages (the others are pages only linked to); None when unknown."""
        n = self.manifest.get("n_crawled")
        return None if n is None else int(n)

    @property
    def metric(self) -> str:
        """How the re-ranking query orders candidates: ``jaccard``, or ``overlap`` for an index of
        bags compared by overlap (simweb.core.strategy, "Overlap"); found by Jaccard either way."""
        return str(self.manifest.get("metric", "jaccard"))

    def doc_of(self, url_id: int) -> int | None:
        """The document id of a url id, or None."""
        return _look_up(self.url_ids, self.url_docs, url_id)

    def alias_of(self, url_id: int) -> int | None:
        """The document id an alias URL names (aliases.u64), or None when it is no alias."""
        return _look_up(self.alias_ids, self.alias_docs, url_id)

    def doc_rows(self, doc_ids: np.ndarray | list[int]) -> list[dict[str, Any]]:
        """The doc map's rows of ``doc_ids`` as dicts, read value by value from the mapped table
        (a take through Arrow's compute functions would load them, and pandas, at a cold start)."""
        columns = [(name, self.docs.column(name)) for name in self.docs.column_names]
        rows = []
        for d in np.asarray(doc_ids, dtype=np.int64).tolist():
            if not 0 <= d < self.n_docs:
                raise IndexError(f"document {d} is not in this index (it holds 0 … {self.n_docs - 1})")
            rows.append({name: column[d].as_py() for name, column in columns})
        return rows

    def bag(self, doc_id: int) -> dict[str, float]:
        """The weighted bag of a document as {term: weight}."""
        if not 0 <= doc_id < self.n_docs:
            raise IndexError(f"document {doc_id} is not in this index (it holds 0 … {self.n_docs - 1})")
        ids, weights = self.bag_arrays.bag(doc_id)
        return dict(zip(self.terms(ids), weights.tolist()))

    def terms(self, ids: np.ndarray) -> list[str]:
        """The text of the term ids ``ids`` (the vocabulary, terms.utf8)."""
        offsets, text = self.vocabulary
        ids = np.asarray(ids, dtype=np.int64)
        lo, hi = offsets[ids].tolist(), offsets[ids + 1].tolist()
        return [bytes(text[a:b]).decode("utf-8") for a, b in zip(lo, hi)]

    @property
    def held(self) -> dict[str, Any]:
        """What is read once from this version and kept with it (by this module and its readers)."""
        return self._cache

    @property
    def bag_files(self) -> list[BagFile]:
        """The bags files of this version, in id order."""
        files = self._cache.get("bag_files")
        if files is None:
            files = self._cache["bag_files"] = bag_files(self.manifest)
        return files

    def verify(self) -> None:
        """Check every file's SHA-256 against the manifest (reads the whole index)."""
        problems = version_damage(self.path, digests=True)
        if problems:
            raise IndexFormatError(f"{self.path} is damaged: {'; '.join(problems)}; rebuild the index "
                                   "(or run the build again with --verify to publish an intact copy)")


def _look_up(keys: np.ndarray, values: np.ndarray, key: int) -> int | None:
    at = int(np.searchsorted(keys, np.uint64(key)))
    if at < keys.size and int(keys[at]) == key:
        return int(values[at])
    return None


def write_docmap(table: pa.Table, folder: str) -> None:
    """The doc map of a version into ``folder``: docs.parquet (for people and tools) and
    docs.arrow (for queries, memory-mapped), each written whole under a temporary name first."""
    import pyarrow.parquet as pq

    table = table.cast(DOCMAP)
    for name in (DOCMAP_FILE, DOCMAP_ARROW_FILE):
        path = os.path.join(folder, name)
        tmp = os.path.join(folder, f".tmp-{uuid.uuid4().hex[:8]}-{name}")
        try:
            if name == DOCMAP_FILE:
                pq.write_table(table, tmp)
            else:
                with pa.OSFile(tmp, "wb") as sink, pa.ipc.new_file(sink, DOCMAP) as writer:
                    writer.write_table(table, max_chunksize=1 << 20)
            os.replace(tmp, path)
        finally:
            if os.path.exists(tmp):
                os.remove(tmp)


def write_aliases(folder: str, aliases: AliasMap | None, url_ids: np.ndarray, url_docs: np.ndarray) -> int:
    """aliases.u64 and aliases.docs.u32 into ``folder``: each alias of the crawl (``aliases``;
    None: none) whose target is a document of the version (``url_ids`` sorted, ``url_docs``
    their documents), and that document; a URL that is a document itself is no alias here.
    Returns the aliases written."""
    ids = np.zeros(0, np.uint64) if aliases is None else np.asarray(aliases.ids, dtype=np.uint64)
    targets = np.zeros(0, np.uint64) if aliases is None else np.asarray(aliases.targets, dtype=np.uint64)
    url_ids = np.asarray(url_ids, dtype=np.uint64)
    docs = np.full(ids.size, -1, dtype=np.int64)
    if url_ids.size and ids.size:
        at = np.minimum(np.searchsorted(url_ids, targets), url_ids.size - 1)
        hit = url_ids[at] == targets
        docs[hit] = np.asarray(url_docs, dtype=np.int64)[at[hit]]
        own = np.minimum(np.searchsorted(url_ids, ids), url_ids.size - 1)
        docs[url_ids[own] == ids] = -1  # a document's own URL names it
    keep = docs >= 0
    order = np.argsort(ids[keep], kind="stable")
    write_array_atomic(ids[keep][order], os.path.join(folder, ALIASES_FILE))
    write_array_atomic(docs[keep][order].astype(np.uint32), os.path.join(folder, ALIAS_DOCS_FILE))
    return int(keep.sum())


def _mapped_docs(path: str, n: int) -> pa.Table:
    """docs.arrow memory-mapped: the table's buffers are the file's pages (zero-copy)."""
    try:
        table = pa.ipc.open_file(pa.memory_map(path, "r")).read_all()
    except pa.ArrowInvalid as e:
        raise IndexFormatError(f"{path}: not an Arrow IPC file ({e}); rebuild the index") from None
    if table.num_rows != n or not table.schema.equals(DOCMAP):
        raise IndexFormatError(f"{path}: expected the doc map of {n} documents, found {table.num_rows} rows of "
                               f"{table.schema.names}; rebuild the index")
    return table


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
    n_aliases = _items(path, ALIASES_FILE, 8)
    entries, n_terms = int(manifest["n_entries"]), int(manifest["n_terms"])
    vocab_offsets = _memmap(os.path.join(path, VOCAB_OFFSETS_FILE), "<u8", (n_terms + 1,))
    version = IndexVersion(
        path=path,
        manifest=manifest,
        params=params,
        h=_memmap(os.path.join(path, H_FILE), "<u4", (n, m)),
        inverted=inverted,
        url_ids=_memmap(os.path.join(path, URLS_FILE), "<u8", (n,)),
        url_docs=_memmap(os.path.join(path, URL_DOCS_FILE), "<u4", (n,)),
        alias_ids=_memmap(os.path.join(path, ALIASES_FILE), "<u8", (n_aliases,)),
        alias_docs=_memmap(os.path.join(path, ALIAS_DOCS_FILE), "<u4", (n_aliases,)),
        bag_arrays=BagArrays(
            _memmap(os.path.join(path, BAG_OFFSETS_FILE), "<u8", (n + 1,)),
            _memmap(os.path.join(path, BAG_TERMS_FILE), "<u4", (entries,)),
            _memmap(os.path.join(path, BAG_WEIGHTS_FILE), "<f4", (entries,)),
            _memmap(os.path.join(path, BAG_SUMS_FILE), "<f8", (n,)),
        ),
        vocabulary=(vocab_offsets, _memmap(os.path.join(path, VOCAB_FILE), "u1", (int(vocab_offsets[-1]),))),
        docs=_mapped_docs(os.path.join(path, DOCMAP_ARROW_FILE), n),
        h2=_fine_rows(path, manifest, n),
    )
    if verify:
        version.verify()
    return version


def _fine_rows(path: str, manifest: Mapping[str, Any], n: int) -> np.ndarray | None:
    """H2 mapped (n rows of the width its size gives), or None where the version has none."""
    meta = manifest["files"].get(H2_FILE)
    if meta is None or n == 0:
        return None
    if meta["bytes"] % n:
        raise IndexFormatError(f"{path}/{H2_FILE}: {meta['bytes']} bytes are not {n} rows; rebuild the index")
    return _memmap(os.path.join(path, H2_FILE), "u1", (n, meta["bytes"] // n))


def _items(path: str, name: str, size: int) -> int:
    """The number of ``size``-byte items of the array file ``name`` of the version ``path``."""
    return os.path.getsize(os.path.join(path, name)) // size
