"""The one reader of a topic directory file: an ODP RDF dump or a ``url<TAB>Top/category/path`` TSV.

The directory is the evaluation's ground truth (paper Section 2: the Open Directory's classes
give each pair of pages a familial distance) and the category the index shows beside a related
page (Figure 13). Files may be local or remote (fsspec URLs) and compressed (.gz, .bz2); the
format is sniffed from the first bytes; parsing streams (simweb.core.directory), so a 2 GB dump
is never held in memory.
"""
from __future__ import annotations

import io
from collections.abc import Sequence

import fsspec
import pyarrow as pa

from simweb.core.directory import (CLASS_DEPTH, Directory, DirectoryFormatError, UntilCut, cut_note, nothing_listed,
                                   read_directory, sniff_format)
from simweb.core.urls import url_id
from simweb.tasks.logs import run_logger

__all__ = ["directory_format", "read_directory_file", "read_lines", "url_categories"]

# Bytes read to tell an RDF dump from a TSV file.
SNIFF_BYTES = 512


def read_lines(url: str) -> list[str]:
    """Non-empty, non-comment lines of a text file (e.g. the directory's own pages, one URL a line)."""
    with fsspec.open(url, "rb", compression="infer") as f:
        data = io.BufferedReader(UntilCut(f)).read()
    try:
        text = data.decode("utf-8-sig")  # a byte order mark first is no part of the first line
    except UnicodeDecodeError as err:
        raise ValueError(f"{url} is not UTF-8 text (byte {data[err.start]:#04x} at offset {err.start:,}); "
                         "save it as UTF-8, one URL a line") from None
    return [line.strip() for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")]


def directory_format(url: str) -> str:
    """"rdf" or "tsv", from the first bytes of the (possibly compressed) directory file."""
    with fsspec.open(url, "rb", compression="infer") as f:
        return sniff_format(io.BufferedReader(UntilCut(f)).read(SNIFF_BYTES))


def read_directory_file(
    url: str,
    *,
    fmt: str = "auto",
    directory_pages: Sequence[str] = (),
    keep: set[str] | None = None,
    depth: int = CLASS_DEPTH,
) -> Directory:
    """Parse a directory file (ODP RDF dump or ``url<TAB>category`` TSV, optionally .gz/.bz2),
    streaming; ``fmt="auto"`` sniffs the first bytes. ``directory_pages`` and ``keep`` are those
    of :func:`simweb.core.directory.read_directory`. Raises DirectoryFormatError for a file that
    lists no page (:func:`simweb.core.directory.nothing_listed`)."""
    with fsspec.open(url, "rb", compression="infer") as f:
        whole = UntilCut(f)
        stream = io.BufferedReader(whole, buffer_size=1 << 20)
        if fmt == "auto":
            fmt = sniff_format(stream.peek(SNIFF_BYTES)[:SNIFF_BYTES])
        found = read_directory(stream, fmt=fmt, directory_pages=directory_pages, keep=keep, depth=depth)
    if whole.cut:
        found.counts["compressed_file_cut"] = 1
    if problem := nothing_listed(found.counts, fmt):
        raise DirectoryFormatError(problem)
    return found


def url_categories(url: str) -> pa.Table:
    """(url_id, category) of every URL the directory classifies, its class as a ``/`` path."""
    found = read_directory_file(url)
    note = cut_note(found.counts)
    if note:
        run_logger("simweb.directory").warning("%s: %s; the categories of those listings are shown", url, note)
    ids, categories = [], []
    for page, cls in found.classes.items():
        ids.append(url_id(page))
        categories.append(cls if isinstance(cls, str) else "/".join(cls))
    return pa.table({"url_id": pa.array(ids, pa.uint64()), "category": pa.array(categories, pa.string())})
