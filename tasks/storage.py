"""Where stage outputs live: fsspec URLs (local paths by default), written atomically.

Every data set is a folder of Parquet parts. A part is written under a temporary name in
the same folder and then renamed, so a reader (or a resumed run) never sees half a file.
What names an input file for caching, local or remote, is :func:`identify`'s.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import tempfile
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import fsspec
import pyarrow as pa
import pyarrow.parquet as pq

TMP_PREFIX = ".tmp-"


def filesystem(url: str) -> tuple[fsspec.AbstractFileSystem, str]:
    """The fsspec file system and the path inside it for a local path or URL."""
    fs, path = fsspec.core.url_to_fs(url)
    return fs, path


def join(base: str, *parts: str) -> str:
    return "/".join([base.rstrip("/"), *[p.strip("/") for p in parts]])


def write_parquet_atomic(table: pa.Table, url: str, *, row_group_size: int = 64_000) -> str:
    """Write ``table`` to ``url`` so that the file appears whole or not at all."""
    fs, path = filesystem(url)
    parent = path.rsplit("/", 1)[0]
    fs.makedirs(parent, exist_ok=True)
    tmp = f"{parent}/{TMP_PREFIX}{uuid.uuid4().hex}-{path.rsplit('/', 1)[1]}"
    try:
        with fs.open(tmp, "wb") as out:
            pq.write_table(table, out, row_group_size=row_group_size, compression="zstd")
        fs.mv(tmp, path)
    except BaseException:
        if fs.exists(tmp):
            fs.rm(tmp)
        raise
    return url


@contextmanager
def parquet_writer_atomic(url: str, schema: pa.Schema, options: dict | None = None) -> Iterator[pq.ParquetWriter]:
    """A Parquet writer for ``url`` whose tables (one or more row groups each) appear as one
    file when the block ends without error, and not at all otherwise: a part written slice by
    slice, never held whole. ``options`` are further writer options (zstd compression unless
    they name another)."""
    fs, path = filesystem(url)
    parent = path.rsplit("/", 1)[0]
    fs.makedirs(parent, exist_ok=True)
    tmp = f"{parent}/{TMP_PREFIX}{uuid.uuid4().hex}-{path.rsplit('/', 1)[1]}"
    try:
        with fs.open(tmp, "wb") as out, pq.ParquetWriter(out, schema, **{"compression": "zstd", **(options or {})}) as writer:
            yield writer
        fs.mv(tmp, path)
    except BaseException:
        if fs.exists(tmp):
            fs.rm(tmp)
        raise


def write_bytes_atomic(data: bytes, url: str) -> str:
    fs, path = filesystem(url)
    parent = path.rsplit("/", 1)[0]
    fs.makedirs(parent, exist_ok=True)
    tmp = f"{parent}/{TMP_PREFIX}{uuid.uuid4().hex}-{path.rsplit('/', 1)[1]}"
    try:
        with fs.open(tmp, "wb") as out:
            out.write(data)
        fs.mv(tmp, path)
    except BaseException:  # a full disk, say: no half-written file left to take the room
        try:
            fs.rm(tmp)
        except (OSError, FileNotFoundError):
            pass
        raise
    return url


def parts(url: str) -> list[str]:
    """The finished Parquet parts of a data set folder, sorted (temporary files excluded)."""
    fs, path = filesystem(url)
    if not fs.exists(path):
        return []
    names = [p for p in fs.ls(path, detail=False) if p.endswith(".parquet")]
    names = [p for p in names if not p.rsplit("/", 1)[-1].startswith(TMP_PREFIX)]
    protocol = fs.protocol if isinstance(fs.protocol, str) else fs.protocol[0]
    prefix = "" if protocol in ("file", "local") else f"{protocol}://"
    return sorted(prefix + p for p in names)


def read_parquet(url: str, columns: Iterable[str] | None = None) -> pa.Table:
    """Read one part or a whole data set folder into one table."""
    fs, path = filesystem(url)
    if fs.isdir(path):
        tables = [read_parquet(p, columns) for p in parts(url)]
        if not tables:
            raise FileNotFoundError(f"no Parquet parts in {url}: expected a data set folder written by simweb")
        return pa.concat_tables(tables)
    return read_parquet_file(url, columns)


def read_parquet_file(url: str, columns: Iterable[str] | None = None,
                      read_dictionary: Iterable[str] | None = None) -> pa.Table:
    """``columns`` (all when None) of the Parquet file ``url``, local or remote; the columns
    ``read_dictionary`` names (Parquet paths: ``terms.list.element`` for a list's strings)
    dictionary-encoded as the file stores them, one dictionary a row group, not decoded.

    A local file is read by Arrow itself. A remote one is read through its fsspec file object in
    this thread alone — no pre-buffering, no decoding on Arrow's thread pools: Arrow's threads
    calling back into a Python file object could still be at work when the interpreter exited,
    and the process then aborted after its work was done ("terminate called without an active
    exception", exit 134: one run in two of a short command, whatever it had read)."""
    columns = list(columns) if columns is not None else None
    dictionaries = list(read_dictionary) if read_dictionary is not None else None
    local = local_path(url)
    if local is not None:
        return pq.read_table(local, columns=columns, read_dictionary=dictionaries)
    fs, path = filesystem(url)
    with fs.open(path, "rb") as f:
        return pq.read_table(f, columns=columns, read_dictionary=dictionaries, pre_buffer=False, use_threads=False)


def arrow_threads(url: str) -> bool:
    """Whether Arrow may read and decode the Parquet file or data set ``url`` on its thread pools:
    only where it reads the files itself (local ones). A remote file is read through a Python
    file object (fsspec), which Arrow's threads would call back into — and a process whose
    threads were still doing so when the interpreter exited aborted after its work was done
    (exit 134; a data set scan over an fsspec file system 12 runs in 20) — so it is read in the
    calling thread alone (see :func:`read_parquet_file`)."""
    return local_path(url) is not None


def read_parquet_schema(url: str) -> pa.Schema:
    """The Arrow schema of the Parquet file ``url`` (see :func:`read_parquet_file`)."""
    local = local_path(url)
    if local is not None:
        return pq.read_schema(local)
    fs, path = filesystem(url)
    with fs.open(path, "rb") as f:
        return pq.read_schema(f)


def fsync_path(path: str) -> None:
    """Flush the local file or folder ``path`` to disk (a folder: the names it holds, after a rename)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def file_digest(url: str, *, chunk: int = 1 << 20) -> str:
    """SHA-256 of a file's bytes (hex), the identity of an input file for caching and dedup."""
    fs, path = filesystem(url)
    h = hashlib.sha256()
    with fs.open(path, "rb") as f:
        while block := f.read(chunk):
            h.update(block)
    return h.hexdigest()


#: What an object store or web server says about an object that changes when its bytes do,
#: in the order looked for (S3's ETag, a web server's ETag or Last-Modified, other stores').
_VALIDATORS = ("ETag", "etag", "md5Hash", "Last-Modified", "LastModified", "last_modified", "mtime")
_MD5_ETAG = re.compile(r'^"?[0-9a-f]{32}"?$')


@dataclass(frozen=True, slots=True)
class FileIdentity:
    """What names an input file for caching: ``digest`` (64 hex digits) and what it was made from.

    A local file is named by the SHA-256 of its bytes (``basis`` {"sha256": digest}), wherever it
    lies and whatever it is called. A remote object is not read for it (a Common Crawl WARC file
    is a gigabyte): it is named by the SHA-256 of what its store says about it — its size and
    ETag (or Last-Modified), and its URL unless the ETag is an S3 single-part MD5 of the bytes,
    which names the content wherever it lies. A store that says neither gets the SHA-256 of the
    bytes after all.
    """

    digest: str
    basis: dict


def identify(url: str) -> FileIdentity:
    """The :class:`FileIdentity` of the local file or remote object ``url``."""
    fs, path = filesystem(url)
    if local_path(url) is None:
        fs.invalidate_cache(path)  # what a listing said may be stale by now
        info = fs.info(path)
        validator = next(((k, str(info[k])) for k in _VALIDATORS if info.get(k)), None)
        if validator is not None:
            basis = {"size": int(info.get("size") or 0), validator[0]: validator[1]}
            s3_md5 = validator[0] == "ETag" and protocol_of(fs) in ("s3", "s3a") and _MD5_ETAG.match(validator[1])
            if not s3_md5:
                basis["url"] = url
            text = json.dumps(basis, sort_keys=True, separators=(",", ":"))
            return FileIdentity(hashlib.sha256(text.encode()).hexdigest(), basis)
    digest = file_digest(url)
    return FileIdentity(digest, {"sha256": digest})


def protocol_of(fs: fsspec.AbstractFileSystem) -> str:
    """The protocol of an fsspec file system ("file" for the local disk, "s3", "https", ...)."""
    return fs.protocol if isinstance(fs.protocol, str) else fs.protocol[0]


def local_path(url: str) -> str | None:
    """The local file system path of ``url``, or None when it is remote."""
    fs, path = filesystem(url)
    return os.path.abspath(path) if protocol_of(fs) in ("file", "local") else None


def file_problems(folder: str, files: Mapping[str, Mapping[str, Any]], *, digests: bool,
                  differs: Callable[[str, str, str], str]) -> list[str]:
    """What is wrong with the files of ``folder`` (local, or on an object store) that ``files``
    records — a path relative to ``folder`` → its ``bytes`` and, where recorded, its ``sha256``:
    each one missing or of another size, or with ``digests`` of other content, which
    ``differs(name, recorded, found)`` says; [] when all are whole."""
    fs, root = filesystem(folder)
    root = root.rstrip("/")
    problems = []
    for name, meta in files.items():
        try:
            size = int(fs.size(f"{root}/{name}"))
        except OSError:  # FileNotFoundError among them
            problems.append(f"{name} is missing")
            continue
        if size != meta.get("bytes"):
            problems.append(f"{name}: expected {meta.get('bytes')} bytes, found {size}")
        elif digests and meta.get("sha256") and (found := file_digest(join(folder, name))) != meta["sha256"]:
            problems.append(differs(name, meta["sha256"], found))
    return problems


def is_remote(url: str) -> bool:
    """Whether ``url`` names an object store or another file system than the local one."""
    return local_path(url) is None


@contextmanager
def local_stand_in(url: str, fetch: Iterable[str] = ()) -> Iterator[str]:
    """A local folder in which to write the files of the folder ``url``: ``url`` itself when local.

    For a folder on an object store (a stage output that workers on other machines share), a
    temporary local folder holding a copy of the files ``fetch`` names (paths relative to
    ``url``, read-only here); every other file written under it is uploaded to the same path under
    ``url`` — each object appears whole — when the block ends without error. The temporary folder
    is removed either way.
    """
    local = local_path(url)
    if local is not None:
        os.makedirs(local, exist_ok=True)
        yield local
        return
    fs, root = filesystem(url)
    root = root.rstrip("/")
    scratch = tempfile.mkdtemp(prefix="simweb-stage-")
    try:
        fetched = set()
        for name in fetch:
            target = os.path.join(scratch, name)
            os.makedirs(os.path.dirname(target), exist_ok=True)
            fs.get_file(f"{root}/{name}", target)
            fetched.add(os.path.normpath(name))
        yield scratch
        for base, _, names in os.walk(scratch):
            for name in sorted(names):
                rel = os.path.relpath(os.path.join(base, name), scratch)
                if rel not in fetched:
                    fs.put_file(os.path.join(base, name), f"{root}/{rel.replace(os.sep, '/')}")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def exists(url: str) -> bool:
    """Whether the file or folder ``url`` is there (local, or on an object store)."""
    fs, path = filesystem(url)
    return fs.exists(path)


def read_range(url: str, offset: int, size: int) -> bytes:
    """``size`` bytes of the file ``url`` from ``offset`` (a range request on an object store)."""
    fs, path = filesystem(url)
    with fs.open(path, "rb") as f:
        f.seek(offset)
        return f.read(size)


def download(url: str, dest: str) -> None:
    """Copy the file ``url`` to the local path ``dest``."""
    fs, path = filesystem(url)
    fs.get_file(path, dest)


def read_text(url: str) -> str:
    fs, path = filesystem(url)
    with fs.open(path, "rb") as f:
        return f.read().decode("utf-8")


def remove(url: str) -> None:
    """Remove the file or folder ``url``, if there."""
    fs, path = filesystem(url)
    try:
        fs.rm(path, recursive=True)
    except FileNotFoundError:
        pass
