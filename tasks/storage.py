"""Where stage outputs live: fsspec URLs (local paths by default), written atomically.

Every data set is a folder of Parquet parts. A part is written under a temporary name in
the same folder and then renamed, so a reader (or a resumed run) never sees half a file.
"""
from __future__ import annotations

import hashlib
import os
import uuid
from collections.abc import Iterable, Iterator
from contextlib import contextmanager

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
def parquet_writer_atomic(url: str, schema: pa.Schema) -> Iterator[pq.ParquetWriter]:
    """A Parquet writer for ``url`` whose tables (one or more row groups each) appear as one
    file when the block ends without error, and not at all otherwise: a part written slice by
    slice, never held whole."""
    fs, path = filesystem(url)
    parent = path.rsplit("/", 1)[0]
    fs.makedirs(parent, exist_ok=True)
    tmp = f"{parent}/{TMP_PREFIX}{uuid.uuid4().hex}-{path.rsplit('/', 1)[1]}"
    try:
        with fs.open(tmp, "wb") as out, pq.ParquetWriter(out, schema, compression="zstd") as writer:
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
    with fs.open(tmp, "wb") as out:
        out.write(data)
    fs.mv(tmp, path)
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
    with fs.open(path, "rb") as f:
        return pq.read_table(f, columns=list(columns) if columns is not None else None)


def file_digest(url: str, *, chunk: int = 1 << 20) -> str:
    """SHA-256 of a file's bytes (hex), the identity of an input file for caching and dedup."""
    fs, path = filesystem(url)
    h = hashlib.sha256()
    with fs.open(path, "rb") as f:
        while block := f.read(chunk):
            h.update(block)
    return h.hexdigest()


def local_path(url: str) -> str | None:
    """The local file system path of ``url``, or None when it is remote."""
    fs, path = filesystem(url)
    protocol = fs.protocol if isinstance(fs.protocol, str) else fs.protocol[0]
    return os.path.abspath(path) if protocol in ("file", "local") else None
