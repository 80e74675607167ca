"""A CDXJ index of a crawl's captures, for a web-archive player (pywb) to replay them.

Each page of the crawl's ingest parts, and each redirect, revisit and 404/410 record beside them
(so that the address a link used replays too, and a player shows a URL as it was captured at every
date, as its own indexer would list the records), gives one line (simweb.core.replay.cdxj_line)::

    <SURT key> <14-digit timestamp> {"url", "mime", "status", "digest", "length", "offset", "filename"}

read from the columns the ingest keeps for it (schemas.PAGES and schemas.ALIASES: surt,
timestamp, record_offset, record_length, digest, source_file). A record whose WARC-Date is not
a valid date has no timestamp and is left out, counted; so is a record with no byte range of its
own (a record_length of 0: one of many records in the gzip member of a file gzipped as a whole,
simweb.tasks.archives), which no player can seek to, its file named. Every other capture is
listed, copies of a URL in several files too: a player picks among captures by timestamp. A
revisit's line has the media type ``warc/revisit`` and its payload's digest, by which a player
finds the capture it revisits (the page a query answers with for a URL whose latest capture is a
revisit, simweb.tasks.crawl.copies).

Lines are sorted as pywb expects (byte order of the whole line, as ``LC_ALL=C sort`` does: by
SURT key, then timestamp). Memory is bounded by a part: each part's lines are sorted into a
temporary run, and the runs are merged as they are written.

``filename`` is the archive file's name (pywb finds it in the collection's ``archive`` folder, or
through its ``archive_paths`` setting); ``full_paths`` keeps the path the crawl was read from.
"""
from __future__ import annotations

import heapq
import os
import sys
import tempfile
from collections.abc import Iterator
from contextlib import ExitStack
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from simweb.core.replay import cdxj_line
from simweb.tasks import schemas
from simweb.core.aliases import REDIRECT
from simweb.tasks.crawl.aliases import GONE, REVISIT
from simweb.tasks.crawl.parts import crawl_parts
from simweb.tasks.crawl.read import read_part

__all__ = ["write_cdxj"]

_PAGE_COLUMNS = ["url", "surt", "timestamp", "content_type", "status", "digest", "record_length", "record_offset",
                 "source_file"]
_ALIAS_COLUMNS = [*_PAGE_COLUMNS, "kind"]
#: The kinds of alias evidence that are captures of their own (a record at a date), by their count's name.
_CAPTURES = {REDIRECT: "redirects", REVISIT: "revisits", GONE: "gone"}
#: The media type a revisit record's CDXJ line has, as web-archive players expect it.
REVISIT_MIME = "warc/revisit"


def archive_name(source: str) -> str:
    """The name pywb knows an archive file by: its file name; for a WARC file read from inside a
    WACZ package (``zip://archive/data.warc.gz::site.wacz``), its name in the package, as the
    package's own indexes name it — the offsets are within it."""
    return os.path.basename(source.split("::", 1)[0])


def _lines(table, full_paths: bool, counts: dict[str, Any], kinds: list[str]) -> list[str]:
    """The CDXJ lines of ``table``'s rows, each counted under its name in ``kinds``."""
    out = []
    columns = {name: table.column(name).to_pylist() for name in _PAGE_COLUMNS}
    for i in range(table.num_rows):
        stamp = columns["timestamp"][i]
        if not stamp:
            counts["without_timestamp"] += 1
            continue
        source = columns["source_file"][i]
        if columns["record_length"][i] == 0:  # no byte range holds it alone: nothing to replay it from
            counts["not_replayable"] += 1
            counts["not_replayable_files"].add(source if full_paths else archive_name(source))
            continue
        mime = REVISIT_MIME if kinds[i] == "revisits" else columns["content_type"][i]
        out.append(cdxj_line(columns["surt"][i], stamp, columns["url"][i], mime,
                             columns["status"][i], columns["digest"][i], columns["record_length"][i] or 0,
                             columns["record_offset"][i], source if full_paths else archive_name(source)))
        counts[kinds[i]] += 1
    out.sort()
    return out


def _runs(crawl_dir: str, full_paths: bool, counts: dict[str, Any], tmp: str) -> list[str]:
    found = crawl_parts(crawl_dir)
    runs = []
    for data_set, urls in (("pages", found.pages), ("aliases", found.aliases)):
        for url in urls:
            if data_set == "pages":
                table = read_part(url, schemas.PAGES, _PAGE_COLUMNS)
                kinds = ["pages"] * table.num_rows
            else:
                table = read_part(url, schemas.ALIASES, _ALIAS_COLUMNS)
                table = table.filter(pc.is_in(table.column("kind"), pa.array(list(_CAPTURES))))
                kinds = [_CAPTURES[kind] for kind in table.column("kind").to_pylist()]
            lines = _lines(table, full_paths, counts, kinds)
            if lines:
                run = os.path.join(tmp, f"run-{len(runs):06d}.cdxj")
                with open(run, "w", encoding="utf-8") as f:
                    f.writelines(line + "\n" for line in lines)
                runs.append(run)
    return runs


def _merged(runs: list[str], stack: ExitStack) -> Iterator[str]:
    files = [stack.enter_context(open(run, encoding="utf-8")) for run in runs]
    return heapq.merge(*files)


def write_cdxj(crawl_dir: str, out: str | None = None, full_paths: bool = False) -> dict[str, Any]:
    """Write the CDXJ index of the crawl in ``crawl_dir`` to ``out`` (a local file, written under a
    temporary name and renamed; None or ``-``: standard output). Returns the lines written by
    kind (``pages``, ``redirects``, ``revisits``, ``gone``: 404/410 captures), the records left out (``without_timestamp``,
    ``not_replayable``) and the files of the records not replayable (``not_replayable_files``,
    sorted)."""
    counts: dict[str, Any] = {"pages": 0, "redirects": 0, "revisits": 0, "gone": 0, "without_timestamp": 0, "not_replayable": 0,
                              "not_replayable_files": set()}
    with tempfile.TemporaryDirectory(prefix="simweb-cdxj-") as tmp, ExitStack() as stack:
        lines = _merged(_runs(crawl_dir, full_paths, counts, tmp), stack)
        counts["not_replayable_files"] = sorted(counts["not_replayable_files"])
        if out in (None, "-"):
            sys.stdout.writelines(lines)
            sys.stdout.flush()
            return counts
        folder = os.path.dirname(os.path.abspath(out))
        os.makedirs(folder, exist_ok=True)
        fd, partial = tempfile.mkstemp(prefix=".tmp-", suffix=".cdxj", dir=folder)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.writelines(lines)
            os.replace(partial, out)
        except BaseException:
            if os.path.exists(partial):
                os.remove(partial)
            raise
    return counts
