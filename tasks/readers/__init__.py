"""The kinds of input file a crawl is read from, in one registry: a file's name says which reader
reads it, and the reader says which archive files it holds and opens their records. The folder
listing (simweb.tasks.sources), the inbox (simweb.tasks.ledger) and the ingest
(simweb.tasks.ingest) find every reader here, so a new kind of input is one module and its line
in :data:`READERS`.

A reader is a module with:

    NAME       what its files are, for messages ("WACZ package")
    SUFFIXES   the names of its files end in one of these (lower case)
    files(url)    the archive files it holds, each a URL the ingest reads (an archive file: itself)
    problem(url)  why a file listed as itself gives nothing to read, found before reading records; or None
    records(raw, start, stop)   the record iterator of an open file (its records that start in
                 [start, stop)), or None for a reader whose files are read through the files it holds

    wacz   WACZ packages: their archive/ folder's WARC files                      :mod:`.wacz`
    warc   WARC and ARC files, plain, gzipped or .warc.zst (by their first bytes)  :mod:`.warc`

A file named explicitly is read whatever its name: one no reader names is read by :mod:`.warc`,
which tells a WARC or ARC file by its first bytes.
"""
from __future__ import annotations

import contextlib
from collections.abc import Iterator
from types import ModuleType

from simweb.tasks.readers import wacz, warc
from simweb.tasks.storage import filesystem

#: Every reader, looked up by the names of its files.
READERS: tuple[ModuleType, ...] = (wacz, warc)


def reader_named(name: str) -> ModuleType | None:
    """The reader whose files are named as ``name`` (a file name, path or URL) is; None when no reader's are."""
    name = name.lower()
    return next((reader for reader in READERS if name.endswith(reader.SUFFIXES)), None)


def reader_of(url: str) -> ModuleType:
    """The reader of the file ``url`` names — for a chained URL (a file inside a package,
    ``zip://archive/data.warc.gz::/crawls/site.wacz``), the file inside — by its name, or
    :mod:`.warc` for a name no reader's files have."""
    return reader_named(url.split("::", 1)[0]) or warc


def archive_files(url: str) -> list[str]:
    """The archive files the file at ``url`` holds, each a URL the ingest reads."""
    return reader_of(url).files(url)


def not_readable(url: str) -> str | None:
    """Why the file at ``url`` gives nothing to read (a package without an archive file in it),
    found before reading records; None when its records are to be read."""
    return reader_of(url).problem(url)


@contextlib.contextmanager
def open_records(url: str, start: int = 0, stop: int | None = None) -> Iterator:
    """The records of the archive file at ``url`` (a local path or an fsspec URL) that start in
    [``start``, ``stop``), read by its reader from the file opened for the block."""
    reader = reader_of(url)
    if reader.records is None:
        raise ValueError(f"{url}: a {reader.NAME} is read through the archive files it holds "
                         "(simweb.tasks.readers.archive_files), not as an archive file")
    fs, path = filesystem(url)
    with fs.open(path, "rb") as raw:
        yield reader.records(raw, start, stop)
