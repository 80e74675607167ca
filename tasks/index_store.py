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
    bags.parquet      doc_id, terms, weights (the BAGS rows, Section 6.1) in id order, row groups
                      of BAG_ROW_GROUP rows, read one group at a time for re-ranking and top terms.

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
FORMAT_VERSION = 1
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
BAGS_FILE = "bags.parquet"
BAG_ROW_GROUP = 1024
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
#: How bags.parquet is written (pyarrow.parquet writer options). Its row groups are small
#: (BAG_ROW_GROUP bags, for look-ups), too small for a dictionary of float weights to pay: the
#: weights go byte-stream-split instead, which zstd packs well. Measured on the 10k-page scale
#: crawl: 36.3 MB with dictionaries on every column, 26.6 MB so, read 0.28 → 0.24 s.
INDEX_BAGS_WRITE = {"compression": "zstd", "use_dictionary": ["doc_id", "terms.list.element"],
                    "use_byte_stream_split": ["weights.list.element"]}


class IndexFormatError(ValueError):
    """An index folder that is not a complete simweb index of a version this code reads."""


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
    if manifest.get("format") != FORMAT or manifest.get("format_version") != FORMAT_VERSION:
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
        group = self._bag_group(doc_id // BAG_ROW_GROUP)
        row = doc_id % BAG_ROW_GROUP
        terms = group.column("terms")[row].as_py()
        weights = group.column("weights")[row].as_py()
        return dict(zip(terms, weights))

    def bag_columns(self, doc_ids: np.ndarray) -> tuple[pa.Array, np.ndarray, np.ndarray]:
        """The bags of several documents, given in rising id order, as flat columns: (terms,
        offsets, weights), document i's terms being ``terms[offsets[i]:offsets[i + 1]]``; read a
        row group at a time (for re-ranking many candidates at once)."""
        doc_ids = np.asarray(doc_ids, dtype=np.int64)
        if doc_ids.size > 1 and np.any(np.diff(doc_ids) < 0):
            raise ValueError("bag_columns: expected document ids in rising order")
        groups = doc_ids // BAG_ROW_GROUP
        tables = [self._bag_group(g).take(pa.array(doc_ids[groups == g] % BAG_ROW_GROUP))
                  for g in np.unique(groups).tolist()]
        if not tables:
            return pa.array([], pa.string()), np.zeros(1, dtype=np.int64), np.zeros(0)
        rows = pa.concat_tables(tables)
        terms = rows.column("terms").combine_chunks()
        offsets = np.zeros(doc_ids.size + 1, dtype=np.int64)
        np.cumsum(pc.list_value_length(terms).to_numpy(zero_copy_only=False), out=offsets[1:])
        weights = pc.list_flatten(rows.column("weights").combine_chunks()).to_numpy(zero_copy_only=False)
        return pc.list_flatten(terms), offsets, weights.astype(np.float64)

    def _bag_group(self, g: int) -> pa.Table:
        # The server may answer from several threads: one reader of the file and its 64
        # most recent row groups, under one lock (dict.setdefault is atomic).
        with self._cache.setdefault("bags_lock", threading.Lock()):
            groups = self._cache.setdefault("bag_groups", {})
            table = groups.get(g)
            if table is None:
                pf = self._cache.get("bags_file")
                if pf is None:
                    pf = self._cache["bags_file"] = pq.ParquetFile(os.path.join(self.path, BAGS_FILE))
                if len(groups) >= BAG_GROUPS_KEPT:
                    groups.pop(next(iter(groups)))
                table = groups[g] = pf.read_row_group(g)
            return table

    def verify(self) -> None:
        """Check every file's SHA-256 against the manifest (reads the whole index)."""
        problems = damage(self.path, digests=True)
        if problems:
            raise IndexFormatError(f"{self.path} is damaged: {'; '.join(problems)}; rebuild the index "
                                   "(or run the build again with --verify to publish an intact copy)")


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
    # Hold the metadata and an open handle on the bags now: once open, a later prune of this
    # version cannot take them away (an unlinked file stays readable while open).
    version._cache["docs"] = pq.read_table(os.path.join(path, DOCMAP_FILE))
    version._cache["bags_file"] = pq.ParquetFile(open(os.path.join(path, BAGS_FILE), "rb"))
    if verify:
        version.verify()
    return version
