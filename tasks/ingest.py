"""The ingest stage: one WARC or ARC file in, its HTML pages and their link contexts out.

Paper Section 6.1 generates bags by scanning the Web repository; Section 3.1 builds them
from page content and from the anchor windows of pages linking in. This stage does the scan
once and keeps what every strategy needs (page words; anchors with the word offsets of their
anchor text and context in the page's words, and their SYNTACTIC/TOPICAL region lengths), so a
strategy sweep never re-reads WARC files.

For an archive file (WARC or ARC, plain or gzipped; WARC also .warc.zst) with identity ``h`` — the SHA-256 of a local
file's bytes, of a remote object's ETag and size (:func:`simweb.tasks.storage.identify`) — whose
first 16 hex digits are ``h16`` it writes::

    DIR/pages/part-<h16>.parquet   one row per HTML page   (schema simweb.tasks.schemas.PAGES)
    DIR/links/part-<h16>.parquet   one row per anchor      (schema simweb.tasks.schemas.LINKS)
    DIR/aliases/part-<h16>.parquet one row per piece of alias evidence (schema simweb.tasks.schemas.ALIASES)
    DIR/stats/part-<h16>.json      this file's IngestStats, written last

A large file may be read in pieces by several workers at once (:func:`plan_shards` cuts a
file whose records are compressed one by one when it would otherwise keep one worker busy
long after the others): piece ``k`` of ``n`` reads the records that start in the ``k``-th of
``n`` equal byte ranges (simweb.tasks.archives.ArchiveRecords) into ``DIR/{pages,links,aliases}/
part-<h16>.<k>of<n>.parquet`` and records itself in ``DIR/pieces/part-<h16>.<k>of<n>.json``;
when every piece is there, :func:`finish_pieces` writes the file's stats, which list the
pieces' files. A URL recorded in two pieces of one file is then a duplicate across parts,
which the crawl reader resolves as it does for two files (first record wins), so the pieces
give the bags one whole reading gives.

Each part is written under a temporary name and renamed, and the stats file is the mark of
a finished part: ingesting a file whose content was already ingested into DIR is skipped and
counted (``files_unchanged``), whatever the file is called now (a remote object: while its ETag
and size stay the same; it is not read at all then).

Which records become pages:

- ``response`` records with an HTTP status 200–299 and ``resource`` records (status 200);
  ``request``, ``metadata``, ``warcinfo``, ``revisit``, ``conversion`` and ``continuation``
  records are skipped and counted by type. ARC (v1) files are read like WARC files, their
  records converted as warcio's ``arc2warc`` does: the version block is a ``warcinfo``
  record, every other record a ``response`` (:mod:`simweb.tasks.archives`).
- HTML by Content-Type (``text/html``, ``application/xhtml+xml``); when the type is missing or
  generic (``application/octet-stream`` and the like) the payload is sniffed. A payload that
  starts with a binary format's signature (an image, a PDF, an archive: served as text/html by
  a misconfigured server) is no page either (:func:`simweb.core.charset.looks_binary`).
- The payload is de-chunked (``Transfer-Encoding: chunked``) and decoded (``Content-Encoding``
  gzip, x-gzip, deflate, br, zstd; :mod:`simweb.tasks.payloads`),
  then read with the charset :func:`simweb.core.charset.decode_html` finds (UTF-8 bytes go to the
  parser as they are: :func:`simweb.core.charset.html_for_parser`).
- The WARC-Target-URI is normalised with :func:`simweb.core.urls.normalize_url`; a record without
  one, or with one that is not an http(s) URL, is skipped and counted.
- A response with status 301, 302, 303, 307 or 308 is no page (counted as ``HTTP 3xx``); its URL
  and Location become a row of the aliases data set (simweb.core.aliases holds the rules; a
  redirect without a usable Location is counted in ``aliases_skipped``). Each page adds a row for
  its ``<link rel="canonical">`` to another URL of its origin, and one per slash, index or noslash variant
  name of its URL: candidates, which the crawl reader (simweb.tasks.crawl) resolves over the whole crawl.
- Each page keeps what a web-archive player needs to replay its record (simweb.core.replay):
  ``record_offset``, ``record_length`` (as warcio's indexer counts it), ``surt``, ``timestamp``, ``digest``.
- The first record of a URL in a file wins; later ones are skipped as ``duplicate URL``.
  Duplicates across files are not removed here (files are ingested in parallel): the
  ``source_file`` and ``record_offset`` columns let a later stage keep the first.

Bad input, three tiers (STYLE.md habit 8): a record that cannot become a page is skipped
and counted by reason (:data:`SKIP_REASONS`); a damaged file (truncated, corrupt framing,
bytes inserted, gzipped as a whole or in members that split records) is read on past the
damage — a record whose payload was read in full is kept, reading resumes at the next record
that parses (:mod:`simweb.tasks.archives`) — and is logged and listed in ``file_errors``
with where it is damaged, the bytes skipped and the records recovered; an ``OSError`` (the
file cannot be read at all) propagates, so the Prefect task can retry it.
"""
from __future__ import annotations

import base64
import dataclasses
import hashlib
import heapq
import json
import logging
import os
import random
import re
import time
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from prefect import task
from prefect.cache_policies import NO_CACHE
from prefect.states import Failed, State
from warcio.bufferedreaders import ChunkedDataReader
from warcio.statusandheaders import StatusAndHeadersParser

from simweb.core.aliases import REDIRECT, REDIRECT_STATUSES, redirect_target
from simweb.core.charset import charset_from_content_type, html_for_parser, looks_binary, looks_like_html
from simweb.core.html import PAGE_TOO_DEEP, PAGE_TOO_SLOW, PageOverBudget, parse_page
from simweb.core.replay import payload_digest, timestamp14
from simweb.core.urls import normalize_url, url_id
from simweb.tasks.archives import FORMATS, ArchiveRecords, RecordEnd
from simweb.tasks.crawl import file_stem, part_files
from simweb.tasks.ingest_parts import DATA_SETS, IngestParts, RecordPlace
from simweb.tasks.logs import run_logger
from simweb.tasks.payloads import (
    ENCODING_ERROR,
    TOO_LARGE,
    UNSUPPORTED_ENCODING,
    EncodingError,
    decode_content_encoding,
    encoded_payload_ends,
)
from simweb.tasks.storage import file_digest, filesystem, identify, join, local_path, remove, write_bytes_atomic

logger = logging.getLogger("simweb.ingest")

# Bumped whenever what a part holds changes (schema, parsing, filtering), so that parts
# written by an older simweb are re-ingested instead of being taken as finished.
# 3: ARC files; damaged files read on past the damage.
# 4: the aliases data set (redirects, canonical links, slash and index variants); pages keep
#    their record's length, SURT key, timestamp and digest for replay.
INGEST_FORMAT = 4

# Decoded payloads above this size are skipped: no web page needs more, and it stops a
# "gzip bomb" from exhausting memory.
MAX_PAYLOAD_BYTES = 16 << 20

HTML_TYPES = frozenset({"text/html", "application/xhtml+xml"})
# Types that say nothing about the payload: the payload is sniffed instead.
GENERIC_TYPES = frozenset({
    "", "application/octet-stream", "binary/octet-stream", "application/unknown",
    "unknown/unknown", "application/x-unknown-content-type", "*/*",
})
PAGE_RECORD_TYPES = frozenset({"response", "resource"})

# Why a record did not become a page (the keys of IngestStats.skipped). Record types other
# than response/resource are counted as "<type> record", e.g. "request record".
NO_URI = "no target URI"
INVALID_URI = "invalid target URI"
# A crawler's DNS and WHOIS captures (dns:, whois: in Heritrix crawls) and its own log and
# settings (metadata:// resources in wget's): records of the crawl, not damage.
NOT_WEB_URI = "target URI not http(s)"
NOT_HTML = "not HTML"
BAD_STATUS = "invalid HTTP status"
EMPTY = "empty body"
TRUNCATED = "truncated record"  # not read whole, or its payload cut by a short Content-Length
DUPLICATE = "duplicate URL"
PARSE_ERROR = "parse error"
SKIP_REASONS = (
    "<type> record", NO_URI, NOT_WEB_URI, INVALID_URI, "HTTP 1xx/3xx/4xx/5xx", BAD_STATUS, NOT_HTML,
    TRUNCATED, TOO_LARGE, UNSUPPORTED_ENCODING, ENCODING_ERROR, EMPTY, DUPLICATE, PAGE_TOO_DEEP, PAGE_TOO_SLOW,
    PARSE_ERROR,
)

# ---------------------------------------------------------------------------------------
# Stats


@dataclass(frozen=True, slots=True)
class FileError:
    """An archive file that was damaged or unreadable, and why; ``damage`` lists where a damaged
    file was skipped, as (offset, bytes skipped) — see :class:`simweb.tasks.archives.Gap`."""

    path: str
    reason: str
    damage: tuple[tuple[int, int], ...] = ()


@dataclass(frozen=True, slots=True)
class IngestStats:
    """What the ingest stage did; ``+`` sums two of them (associative and commutative).

    ``files_read`` counts files read in this run, ``files_unchanged`` files skipped because
    the same content was already ingested into the output folder (their ``pages_unchanged``
    pages and their ``file_errors`` are those of that ingest); ``files_by_format`` counts
    both kinds by format ("warc", "arc"; "unknown" for a file in which no record was found).
    ``skipped`` maps a reason (see :data:`SKIP_REASONS`) to the number of records skipped for
    it; ``links_skipped`` the same for links of written pages that were not kept
    (``simweb.core.html`` reasons, such as a ``mailto:`` target). ``alias_evidence`` counts the
    rows of the aliases data set by kind (simweb.core.aliases: redirect records, canonical links,
    slash and index variant names — candidates the crawl reader resolves), ``aliases_skipped``
    the redirects and canonical links that named no alias, by reason. ``file_errors`` lists the
    damaged or unreadable files; a damaged file's records are counted in the other fields,
    ``records_recovered`` those read after its first damage, ``bytes_skipped`` the bytes
    between the damage and the next record that parses. ``parts`` names the parts
    (``part-<h16>``) this run wrote or found unchanged: the identity of the stage's output for
    the stages after it.
    """

    files_read: int = 0
    files_unchanged: int = 0
    files_by_format: Mapping[str, int] = field(default_factory=dict)
    records_read: int = 0
    records_recovered: int = 0
    bytes_skipped: int = 0
    pages_written: int = 0
    pages_unchanged: int = 0
    links_written: int = 0
    skipped: Mapping[str, int] = field(default_factory=dict)
    links_skipped: Mapping[str, int] = field(default_factory=dict)
    alias_evidence: Mapping[str, int] = field(default_factory=dict)
    aliases_skipped: Mapping[str, int] = field(default_factory=dict)
    file_errors: tuple[FileError, ...] = ()
    parts: tuple[str, ...] = ()

    def __add__(self, other: IngestStats) -> IngestStats:
        if not isinstance(other, IngestStats):
            return NotImplemented
        return IngestStats(
            files_read=self.files_read + other.files_read,
            files_unchanged=self.files_unchanged + other.files_unchanged,
            files_by_format=_add_counts(self.files_by_format, other.files_by_format),
            records_read=self.records_read + other.records_read,
            records_recovered=self.records_recovered + other.records_recovered,
            bytes_skipped=self.bytes_skipped + other.bytes_skipped,
            pages_written=self.pages_written + other.pages_written,
            pages_unchanged=self.pages_unchanged + other.pages_unchanged,
            links_written=self.links_written + other.links_written,
            skipped=_add_counts(self.skipped, other.skipped),
            links_skipped=_add_counts(self.links_skipped, other.links_skipped),
            alias_evidence=_add_counts(self.alias_evidence, other.alias_evidence),
            aliases_skipped=_add_counts(self.aliases_skipped, other.aliases_skipped),
            file_errors=tuple(sorted(self.file_errors + other.file_errors, key=lambda e: (e.path, e.reason, e.damage))),
            parts=tuple(sorted(set(self.parts) | set(other.parts))),
        )

    @property
    def records_skipped(self) -> int:
        return sum(self.skipped.values())

    @property
    def usable(self) -> bool:
        """Whether the crawl gave any page (in this run or an earlier one): something to index."""
        return self.pages_written + self.pages_unchanged > 0

    @classmethod
    def total(cls, stats: Iterable[IngestStats]) -> IngestStats:
        result = cls()
        for s in stats:
            result = result + s
        return result

    def to_dict(self) -> dict[str, Any]:
        data = dataclasses.asdict(self)
        data["file_errors"] = [{"path": e.path, "reason": e.reason, "damage": [list(d) for d in e.damage]}
                               for e in self.file_errors]
        data["parts"] = list(self.parts)
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> IngestStats:
        values = dict(data)
        for name in ("files_by_format", "skipped", "links_skipped", "alias_evidence", "aliases_skipped"):
            values[name] = {str(k): int(v) for k, v in data.get(name, {}).items()}
        values["file_errors"] = tuple(
            FileError(e["path"], e["reason"], tuple((int(o), int(n)) for o, n in e.get("damage", ())))
            for e in data["file_errors"])
        values["parts"] = tuple(data["parts"])
        return cls(**values)

    def summary(self) -> str:
        """A few lines for people: files by format, records read, pages and links written, skips,
        file errors with what was recovered from them."""
        files = f"{self.files_read} file{'s' if self.files_read != 1 else ''} read"
        if self.files_unchanged:
            files += f", {self.files_unchanged} unchanged since an earlier ingest (skipped)"
        if self.files_by_format:
            files += "; " + ", ".join(f"{n} {fmt.upper() if fmt in FORMATS else fmt}"
                                      for fmt, n in _by_count(self.files_by_format))
        rows = [
            ("records read", self.records_read, 2),
            ("pages written", self.pages_written, 2),
            ("links written", self.links_written, 2),
            ("records skipped", self.records_skipped, 2),
            *((reason, n, 4) for reason, n in _by_count(self.skipped)),
        ]
        if self.links_skipped:
            rows.append(("links not kept", sum(self.links_skipped.values()), 2))
            rows.extend((reason, n, 4) for reason, n in _by_count(self.links_skipped))
        if self.alias_evidence:
            rows.append(("alias evidence", sum(self.alias_evidence.values()), 2))
            rows.extend((_EVIDENCE_LABELS.get(kind, kind), n, 4) for kind, n in _by_count(self.alias_evidence))
        if self.aliases_skipped:
            rows.append(("redirects and canonical links not taken", sum(self.aliases_skipped.values()), 2))
            rows.extend((reason, n, 4) for reason, n in _by_count(self.aliases_skipped))
        rows.append(("file errors", len(self.file_errors), 2))
        rows.append(("records recovered", self.records_recovered, 4))
        rows.append(("bytes skipped", self.bytes_skipped, 4))
        width = max(indent + len(label) for label, _, indent in rows) + 2
        lines = [f"ingest: {files}"]
        lines += [f"{' ' * indent}{label:<{width - indent}}{n:>10,}" for label, n, indent in rows]
        lines += [f"    {error.path}: {error.reason}" for error in self.file_errors]
        return "\n".join(lines)


_EVIDENCE_LABELS = {"redirect": "redirect records", "canonical": "canonical links",
                    "slash": "slash variant names", "index": "index variant names",
                    "noslash": "noslash variant names"}


def _add_counts(a: Mapping[str, int], b: Mapping[str, int]) -> dict[str, int]:
    total = Counter(a)
    total.update(b)
    return dict(sorted(total.items()))


def _by_count(counts: Mapping[str, int]) -> list[tuple[str, int]]:
    return sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))


# ---------------------------------------------------------------------------------------
# Records


def _media_type(content_type: str | None) -> str:
    return (content_type or "").split(";", 1)[0].strip().lower()


def _status_reason(status: int) -> str:
    return f"HTTP {status // 100}xx" if 100 <= status <= 599 else BAD_STATUS


# ---------------------------------------------------------------------------------------
# The stage


_HTTP_PARSER = StatusAndHeadersParser(["HTTP/1.0", "HTTP/1.1"], verify=False)
# Damaged places listed per file in its FileError (the totals count them all).
MAX_DAMAGE_LISTED = 100


def part_name(digest: str) -> str:
    return f"part-{digest[:16]}"


def _earlier_ingest(out_dir: str, part: str) -> IngestStats | None:
    """The stats of the finished ingest of ``part`` into ``out_dir``; None if there is none: its
    stats file (written last) is missing or of another format, or its pages and links parts
    do not have the sizes it records (a damaged part is ingested again)."""
    saved = _read_json(join(out_dir, "stats", f"{part}.json"))
    if not _whole(out_dir, saved):
        return None
    try:
        return IngestStats.from_dict(saved["stats"])
    except (KeyError, TypeError, ValueError):
        return None


def _whole(out_dir: str, saved: Any) -> bool:
    """Whether a stats record (a file's or a piece's) is of this format and every file it lists
    — a pages, links and aliases part each at least — has the size it records."""
    if not isinstance(saved, dict) or saved.get("format") != INGEST_FORMAT or not isinstance(saved.get("files"), dict):
        return False
    files = saved["files"]
    if {rel.split("/", 1)[0] for rel in files} != set(DATA_SETS):
        return False
    for rel, meta in files.items():
        dfs, p = filesystem(join(out_dir, rel))
        try:
            if int(dfs.size(p)) != (meta or {}).get("bytes"):
                return False
        except (OSError, TypeError, AttributeError):
            return False
    return True


def _read_json(url: str) -> Any:
    """The JSON at ``url``; None when it is missing or not JSON."""
    fs, path = filesystem(url)
    try:
        with fs.open(path, "rb") as f:
            return json.loads(f.read())
    except (FileNotFoundError, json.JSONDecodeError, UnicodeDecodeError):
        return None


def _part_files(out_dir: str, part: str) -> dict[str, dict[str, Any]]:
    """Size and SHA-256 of a part's pages, links and aliases files, recorded in its stats file."""
    files = {}
    for rel in (f"{data_set}/{part}.parquet" for data_set in DATA_SETS):
        fs, path = filesystem(join(out_dir, rel))
        files[rel] = {"bytes": int(fs.size(path)), "sha256": file_digest(join(out_dir, rel))}
    return files


def piece_name(part: str, k: int, n: int) -> str:
    """The name of piece ``k`` (from 0) of ``n`` of a part: ``part-<h16>.<k+1>of<n>``."""
    return f"{part}.{k + 1}of{n}"


def piece_range(size: int, k: int, n: int) -> tuple[int, int | None]:
    """The bytes [start, stop) of a file of ``size`` bytes in which piece ``k`` of ``n`` finds the
    starts of its records (stop None: to the end)."""
    return k * size // n, (None if k == n - 1 else (k + 1) * size // n)


def ingest_warc(path: str, out_dir: str, piece: tuple[int, int] = (0, 1)) -> IngestStats:
    """Ingest one archive file — WARC or ARC, plain or gzipped (or a .warc.zst), local path or fsspec URL — into
    ``out_dir``; see the module docstring. ``piece`` = (k, n) reads only piece ``k`` of ``n``
    of it (see :func:`finish_pieces`, which then gives the file's stats).

    Returns this file's :class:`IngestStats` (a piece's: its counts and its part, no file
    counted — a piece read earlier only its part and pages, as unchanged; the piece ``k`` = 0
    of a file ingested earlier returns that file's stats, the others nothing).
    Raises ``OSError`` only when the file cannot be read at all (missing, unreadable, I/O
    failure), which is worth retrying; a damaged file is reported in ``file_errors`` instead.
    """
    k, n = piece
    source = local_path(path) or path
    identity = identify(path)
    digest = identity.digest
    part = part_name(digest)
    earlier = _earlier_ingest(out_dir, part)
    if earlier is not None:
        if k:
            return IngestStats()
        return IngestStats(
            files_unchanged=1, files_by_format=earlier.files_by_format, pages_unchanged=earlier.pages_written,
            file_errors=tuple(FileError(source, e.reason, e.damage) for e in earlier.file_errors), parts=(part,),
        )
    name = part if n == 1 else piece_name(part, k, n)
    record_path = join(out_dir, "stats", f"{part}.json") if n == 1 else join(out_dir, "pieces", f"{name}.json")
    if n > 1:
        saved = _read_json(record_path)
        if _whole(out_dir, saved) and saved.get("identity") == digest:  # read by a run stopped before the file was finished
            return IngestStats(pages_unchanged=int(saved["stats"].get("pages_written", 0)), parts=(part,))
        fs, pieces = filesystem(join(out_dir, "pieces"))
        fs.makedirs(pieces, exist_ok=True)  # the mark that pieces may be left to remove (_remove_unlisted)
    parts = IngestParts(out_dir, name)
    try:
        fs, fs_path = filesystem(path)
        start, stop = piece_range(int(fs.size(fs_path)), k, n) if n > 1 else (0, None)
        counts = _read_archive(path, source, parts, start, stop)
        parts.publish()
    except BaseException:
        parts.discard()
        raise
    stats = IngestStats(
        files_read=1,
        files_by_format={counts.format: 1},
        records_read=counts.records,
        records_recovered=counts.recovered,
        bytes_skipped=sum(skipped for _, skipped in counts.damage),
        pages_written=parts.pages.rows,
        links_written=parts.links.rows,
        skipped=dict(sorted(counts.skipped.items())),
        links_skipped=dict(sorted(counts.links_skipped.items())),
        alias_evidence=dict(sorted(parts.alias_kinds.items())),
        aliases_skipped=dict(sorted(counts.aliases_skipped.items())),
        file_errors=(FileError(source, counts.error, counts.damage[:MAX_DAMAGE_LISTED]),) if counts.error else (),
        parts=(part,),
    )
    record = {"format": INGEST_FORMAT, "source": source, **identity.basis, "identity": digest,
              "stats": stats.to_dict(), "files": _part_files(out_dir, name)}
    if n > 1:
        record["piece"] = [k, n]
    write_bytes_atomic(json.dumps(record, indent=1, sort_keys=True).encode(), record_path)
    if n > 1:
        return _piece_stats(record)
    fs, pieces = filesystem(join(out_dir, "pieces"))
    if fs.exists(pieces):  # a folder into which no file was read in pieces has none to remove
        _remove_unlisted(out_dir, part, record["files"])
    return stats


def _piece_stats(saved: Mapping[str, Any]) -> IngestStats:
    """What a piece adds to the stage's counts: its records, pages and links, and the part it is
    of, but no file read (its file is counted when it is finished)."""
    return dataclasses.replace(IngestStats.from_dict(saved["stats"]), files_read=0, files_by_format={})


def finish_pieces(path: str, out_dir: str, n: int, part: str) -> IngestStats | None:
    """The stats of a file read in ``n`` pieces, once every piece is done: written as the file's
    stats record (listing the pieces' files; the piece records are then removed) and returned
    as one reading of the file would give them, except that a URL recorded in two pieces is
    written by both (the crawl reader keeps the first). None when a piece is missing."""
    pieces = [_read_json(join(out_dir, "pieces", f"{piece_name(part, k, n)}.json")) for k in range(n)]
    if not all(_whole(out_dir, saved) and saved.get("piece") == [k, n] for k, saved in enumerate(pieces)):
        return None
    each = [IngestStats.from_dict(saved["stats"]) for saved in pieces]
    total = dataclasses.replace(IngestStats.total(map(_piece_stats, pieces)), files_read=1,
                                files_by_format=dict(each[0].files_by_format), parts=(part,))
    errors = [e for stats in each for e in stats.file_errors]
    if errors:
        # The records after the first damage, in its piece and in every piece after it.
        first = next(k for k, stats in enumerate(each) if stats.file_errors)
        recovered = each[first].records_recovered + sum(stats.records_read for stats in each[first + 1:])
        damage = tuple(d for e in errors for d in e.damage)[:MAX_DAMAGE_LISTED]
        total = dataclasses.replace(total, records_recovered=recovered, file_errors=(
            FileError(errors[0].path, "; ".join(e.reason for e in errors), damage),))
    files = {rel: meta for saved in pieces for rel, meta in saved["files"].items()}
    record = {**{key: value for key, value in pieces[0].items() if key != "piece"}, "pieces": n,
              "stats": total.to_dict(), "files": dict(sorted(files.items()))}
    write_bytes_atomic(json.dumps(record, indent=1, sort_keys=True).encode(), join(out_dir, "stats", f"{part}.json"))
    _remove_unlisted(out_dir, part, files)
    for k in range(n):
        fs, p = filesystem(join(out_dir, "pieces", f"{piece_name(part, k, n)}.json"))
        try:
            fs.rm(p)
        except FileNotFoundError:
            pass
    return total


def _remove_unlisted(out_dir: str, part: str, listed: Mapping[str, Any]) -> None:
    """Remove the files of ``part`` that its stats record does not list: those of an earlier
    reading of the file in other pieces (or whole), which the crawl would otherwise read twice."""
    for data_set in DATA_SETS:
        for url in part_files(out_dir, part, data_set):
            if f"{data_set}/{file_stem(url)}.parquet" not in listed:
                remove(url)


@dataclass
class _Counts:
    format: str = "unknown"
    records: int = 0
    recovered: int = 0
    skipped: Counter = field(default_factory=Counter)
    links_skipped: Counter = field(default_factory=Counter)
    aliases_skipped: Counter = field(default_factory=Counter)
    damage: tuple[tuple[int, int], ...] = ()
    error: str | None = None


def _read_archive(path: str, source: str, parts: IngestParts, start: int = 0, stop: int | None = None) -> _Counts:
    """Stream the records of one WARC or ARC file (of its records that start in [``start``,
    ``stop``) when given) into its parts, reading on past damage."""
    counts = _Counts()
    skipped = counts.skipped
    seen: set[str] = set()
    redirected: set[str] = set()
    fs, fs_path = filesystem(path)
    with fs.open(fs_path, "rb") as raw:
        records = ArchiveRecords(raw, start, stop)
        for offset, record in records:
            counts.records += 1
            reason, found = _page_of(record, records)
            if reason is None:
                url = found[0]
                if url in seen:
                    reason = DUPLICATE
                else:
                    seen.add(url)
                    reason = _add_page(found, _record_of(record, offset, records, found), source, parts, counts)
            elif reason == REDIRECT:
                url, status, media_type, location = found
                target, why_not = redirect_target(url, location)
                if target is None:
                    counts.aliases_skipped[why_not] += 1
                elif url not in redirected:  # as for pages, the first record of a URL in a file wins
                    redirected.add(url)
                    parts.add_alias(url, url_id(url), target, url_id(target), REDIRECT, status, source, offset,
                                    _record_of(record, offset, records, (url, status, media_type)))
                reason = _status_reason(status)  # not a page: counted as before, its alias beside
            if reason is not None:
                skipped[reason] += 1
        counts.format = records.format or "unknown"
        counts.recovered = records.recovered
        counts.damage = tuple((gap.offset, gap.skipped) for gap in records.gaps)
        counts.error = records.damage(source)
    return counts


def _record_of(record, offset: int, records: ArchiveRecords, found: tuple) -> RecordPlace:
    """Where the record lies and what a CDXJ line says of it (its digest: the WARC-Payload-Digest,
    else the SHA-1 of the payload read, base32 as the WARC standard writes it)."""
    headers = record.rec_headers
    digest = payload_digest(headers.get_header("WARC-Payload-Digest"))
    if digest == "-" and len(found) > 4:
        digest = base64.b32encode(hashlib.sha1(found[4]).digest()).decode("ascii")
    return RecordPlace(offset, records.length or 0, timestamp14(headers.get_header("WARC-Date")) or "", digest,
                   found[2])


def _scheme(uri: str) -> str:
    """The lower-case scheme a target URI names ("" for none, or for text that is no URI)."""
    found = re.match(r"\s*<?\s*([A-Za-z][A-Za-z0-9+.-]*):", uri)
    return found.group(1).lower() if found else ""


def _page_of(record, records: ArchiveRecords):
    """(skip reason, None); (REDIRECT, (url, status, media type, Location)) for a redirect record;
    or (None, (url, status, media type, charset label, body))."""
    rec_type = record.rec_type
    if rec_type not in PAGE_RECORD_TYPES:
        records.finish()
        return f"{rec_type or 'untyped'} record", None

    uri = record.rec_headers.get_header("WARC-Target-URI")
    if not uri or not uri.strip("<> "):
        records.finish()
        return NO_URI, None
    url = normalize_url(uri.strip().strip("<>"))
    if url is None:
        records.finish()
        return (INVALID_URI if _scheme(uri) in ("", "http", "https") else NOT_WEB_URI), None

    http = record.http_headers
    if http is None and rec_type == "response" and _media_type(
            record.rec_headers.get_header("Content-Type")) == "application/http":
        # warcio parses HTTP headers only for URIs starting with lower-case "http:"/"https:".
        try:
            http = _HTTP_PARSER.parse(record.raw_stream)
        except Exception:
            records.finish()
            return BAD_STATUS, None
    if http is not None:
        try:
            status = int(http.get_statuscode())
        except (TypeError, ValueError):
            records.finish()
            return BAD_STATUS, None
        if status in REDIRECT_STATUSES:
            records.finish()
            return REDIRECT, (url, status, _media_type(http.get_header("Content-Type")), http.get_header("Location"))
        if not 200 <= status <= 299:
            records.finish()
            return _status_reason(status), None
        content_type = http.get_header("Content-Type")
    else:
        status = 200
        content_type = record.rec_headers.get_header("Content-Type")
    media_type = _media_type(content_type)
    if media_type not in HTML_TYPES and media_type not in GENERIC_TYPES:
        records.finish()
        return NOT_HTML, None

    # The payload: de-chunked here, decoded below (we decode Content-Encoding ourselves so that
    # an unsupported or corrupt encoding is counted instead of passed on as bytes).
    stream = record.raw_stream
    if http is not None and "chunked" in (http.get_header("Transfer-Encoding") or "").lower():
        stream = ChunkedDataReader(stream)
    try:
        body = stream.read(MAX_PAYLOAD_BYTES + 1)
    except OSError:
        raise
    except Exception:  # a corrupt compressed member: the record cannot be read whole
        records.finish()
        return TRUNCATED, None
    end = records.finish()
    if end is RecordEnd.CUT:
        return TRUNCATED, None
    if len(body) > MAX_PAYLOAD_BYTES:
        return TOO_LARGE, None
    encoding = http.get_header("Content-Encoding") if http is not None else None
    if end is RecordEnd.UNFRAMED and not (encoding and encoded_payload_ends(body, encoding, MAX_PAYLOAD_BYTES)):
        return TRUNCATED, None  # a short Content-Length cut the payload, or may have: nothing tells
    payload = body
    if encoding:
        try:
            body = decode_content_encoding(body, encoding, MAX_PAYLOAD_BYTES)
        except EncodingError as exc:
            return exc.reason, None
    if not body.strip():
        return EMPTY, None
    if media_type in GENERIC_TYPES and not looks_like_html(body):
        return NOT_HTML, None
    if looks_binary(body):  # an image or a download labelled text/html
        return NOT_HTML, None
    return None, (url, status, media_type, charset_from_content_type(content_type), payload, body)


def _add_page(page, record: RecordPlace, source: str, parts: IngestParts, counts: _Counts) -> str | None:
    """Decode and parse one page and add its rows; the skip reason if it cannot be parsed."""
    url, status, _, http_charset, _, body = page
    link_skips: Counter[str] = Counter()
    alias_skips: Counter[str] = Counter()
    try:
        html, charset = html_for_parser(body, http_charset)
        parts.add(parse_page(html, url, link_skips), status, charset, source, record, alias_skips)
    except PageOverBudget as exc:  # a page beyond its depth or time (simweb.core.html.PageLimits)
        logger.info("%s: page %s at offset %d skipped: %s", source, url, record.offset, exc)
        return exc.reason
    except Exception as exc:  # a page the parser cannot handle must not stop the file
        logger.warning("%s: page %s at offset %d skipped: %s: %s", source, url, record.offset,
                       type(exc).__name__, exc, exc_info=True)
        return PARSE_ERROR
    if link_skips:
        counts.links_skipped.update(link_skips)
    if alias_skips:
        counts.aliases_skipped.update(alias_skips)
    return None


# ---------------------------------------------------------------------------------------
# Many files, in-process (tests, benchmarks, `simweb ingest --no-prefect`)


def ingest_files(files: Iterable[str], out_dir: str) -> IngestStats:
    """Ingest archive files one after another in this process (no Prefect, no Dask).

    A file that cannot be read at all is reported in ``file_errors`` and skipped.
    """
    total = IngestStats()
    for path in files:
        try:
            total = total + ingest_warc(path, out_dir)
        except OSError as exc:
            total = total + unreadable(path, exc)
    return total


def unreadable(path: str, exc: BaseException | str) -> IngestStats:
    """The stats of a file that could not be read at all."""
    reason = exc if isinstance(exc, str) else f"could not be read: {type(exc).__name__}: {exc}"
    return IngestStats(file_errors=(FileError(local_path(path) or path, reason),))


# Files made from a crawl's WARC files that hold no page's HTML (Common Crawl's WET and WAT
# files): what their records are, by the skip reason most of them get.
_EXTRACTS = {"conversion record": "conversion records: the pages' text without their HTML and links, as in a WET file",
             "metadata record": "metadata records: what was found of the pages, without their HTML, as in a WAT file"}


def no_page_hint(stats: IngestStats) -> str:
    """Why files that were read gave no page, when their records tell (WET or WAT files): a
    clause to add to the "nothing usable was read" message, or ""."""
    if not stats.skipped:
        return ""
    reason, count = max(stats.skipped.items(), key=lambda item: item[1])
    if reason not in _EXTRACTS or count < sum(stats.skipped.values()) / 2:
        return ""
    return f"; the files hold {_EXTRACTS[reason]} — simweb reads the crawl's WARC files themselves"


class NothingIngested(Exception):
    """No file of a crawl gave a page: there is nothing to build an index from."""

    def __init__(self, stats: IngestStats):
        self.stats = stats
        super().__init__(
            f"nothing usable was read: the crawl's files gave no HTML page ({len(stats.file_errors)} "
            "damaged or unreadable, listed in the file errors); stopped before the bags stage, no index published"
            + no_page_hint(stats)
        )


def nothing_ingested(stats: IngestStats) -> State:
    """What a flow returns when its crawl gave no page: a Failed state whose result is
    :class:`NothingIngested`, so that the run fails with a one-line message (no traceback in
    its log) and a caller of the flow gets the exception."""
    exc = NothingIngested(stats)
    return Failed(message=str(exc), data=exc)


# ---------------------------------------------------------------------------------------
# The Prefect task: one shard of WARC files per task run (never one record: a task run on a
# Dask worker costs a few hundred ms of submission, hand-off and state reporting)

# OSErrors that retrying cannot cure: the file is not there or not ours to read.
_PERMANENT_OS_ERRORS = (FileNotFoundError, IsADirectoryError, NotADirectoryError, PermissionError)

#: Seconds before the first retry of a file that failed with a transient I/O error; doubled
#: for each further attempt (2 s, 4 s, 8 s), each delay jittered by up to ±50 %.
RETRY_DELAY = 2.0


def is_transient_io_error(exc: BaseException) -> bool:
    """Whether ``exc`` is worth another attempt: an ``OSError`` such as a dropped network mount
    or an object-store hiccup — not a missing or forbidden file — or a web server's dropped
    connection, cut transfer or answer 5xx / 429 (aiohttp's errors, which are not all OSErrors).
    A damaged WARC file does not raise (it is reported in the stats), and parsing the same bytes
    again gives the same answer."""
    if isinstance(exc, OSError):
        return not isinstance(exc, _PERMANENT_OS_ERRORS)
    if type(exc).__module__.split(".", 1)[0] == "aiohttp":
        status = getattr(exc, "status", None)
        return status is None or status >= 500 or status == 429
    return False


def ingest_with_retries(path: str, out_dir: str, io_retries: int = 3, retry_delay: float = RETRY_DELAY,
                        log: logging.Logger | logging.LoggerAdapter | None = None,
                        piece: tuple[int, int] = (0, 1)) -> IngestStats:
    """:func:`ingest_warc` of one file, retried up to ``io_retries`` times on transient I/O errors
    with exponential back-off. A file that still cannot be read — or fails with any other
    error — is reported in ``file_errors`` with the reason and skipped: it never stops the
    other files. Retrying is safe: a file's outputs are published only when it is complete."""
    log = log or logger
    for attempt in range(io_retries + 1):
        try:
            return ingest_warc(path, out_dir, piece)
        except Exception as exc:  # noqa: BLE001 — every failure is reported, per file
            if not is_transient_io_error(exc) or attempt == io_retries:
                tries = f" after {attempt + 1} attempts" if attempt else ""
                return unreadable(path, f"could not be read{tries}: {type(exc).__name__}: {exc}")
            delay = retry_delay * 2 ** attempt * random.uniform(0.5, 1.5)
            log.warning("%s: %s: %s; retry %d of %d in %.1f s", path, type(exc).__name__, exc,
                        attempt + 1, io_retries, delay)
            time.sleep(delay)
    raise AssertionError("unreachable")


def _shard_run_name() -> str:
    from prefect.runtime import task_run

    paths = task_run.parameters.get("paths") or []
    pieces = task_run.parameters.get("pieces") or []
    first = os.path.basename(str(paths[0]).rstrip("/")) if paths else "no files"
    if pieces and pieces[0][1] > 1:
        first += f" ({pieces[0][0] + 1}/{pieces[0][1]})"
    return f"ingest {first}" + (f" +{len(paths) - 1}" if len(paths) > 1 else "")


@task(
    name="ingest-files",
    task_run_name=_shard_run_name,
    # Transient I/O errors are retried per file inside the task (ingest_with_retries), so
    # that one flaky file does not re-run its whole shard; the task itself does not fail.
    retries=0,
    # Our own cache: a part named by the file's content hash is never computed twice.
    cache_policy=NO_CACHE,
    persist_result=False,
)
def ingest_shard(paths: list[str], out: str, io_retries: int = 3, retry_delay: float = RETRY_DELAY,
                 pieces: list[list[int]] | None = None) -> list[IngestStats]:
    """Ingest a shard of WARC files (or of pieces of them: ``pieces`` gives (k, n) per path, see
    :func:`ingest_warc`) into ``out`` one after another, each retried on transient I/O errors
    and reported on its own; the stats of each."""
    log = run_logger("simweb.ingest")
    results = []
    for path, (k, n) in zip(paths, pieces or [(0, 1)] * len(paths)):
        start = time.perf_counter()
        stats = ingest_with_retries(path, out, io_retries, retry_delay, log, (k, n))
        what = path if n == 1 else f"{path} (piece {k + 1} of {n})"
        if stats.files_unchanged or (stats.pages_unchanged and not stats.records_read):
            log.info("%s: unchanged since an earlier ingest; outputs kept", what)
        elif stats.files_read or stats.records_read:
            log.info("%s: %d records, %d pages, %d links, %d skipped in %.1f s", what, stats.records_read,
                     stats.pages_written, stats.links_written, stats.records_skipped, time.perf_counter() - start)
        for error in stats.file_errors:
            log.warning("%s: %s", what if n > 1 else error.path, error.reason)
        results.append(stats)
    return results


#: Bytes of archive at or above which a file is a shard of its own: at the ingest's pace (~3 MB
#: of gzipped WARC a second on one core) about twenty seconds of work, next to which a task's
#: own cost (a few hundred ms) is small. Smaller files are packed together up to this size.
SHARD_BYTES = 64 << 20
#: Shards wanted per worker slot, at least, when the files allow: the last to finish are then
#: small, so that no slot waits long for another at the end.
SHARDS_PER_SLOT = 4
#: The smallest piece a file is cut into (about five seconds of work).
PIECE_BYTES = 16 << 20


@dataclass(frozen=True, slots=True)
class ShardItem:
    """A file to ingest in a shard, or piece ``k`` of ``n`` of it."""

    path: str
    k: int = 0
    n: int = 1


def plan_shards(files: list[str], slots: int) -> list[list[ShardItem]]:
    """``files`` in shards to be ingested by ``slots`` worker slots, the largest shard first.

    Work is shared out by bytes. A file of more than ``total / (SHARDS_PER_SLOT × slots)``
    bytes (and at least 2 × PIECE_BYTES) whose records are compressed one by one is cut into
    pieces no larger than that (:func:`ingest_warc`), read at once by several slots: a crawl of
    a few large files would otherwise keep one slot busy with the last of them while the
    others wait (the 100k scale crawl's five files of 30–181 MB on two slots), and one huge
    file would use one slot only. A shard holds at most ``min(SHARD_BYTES, total /
    (SHARDS_PER_SLOT × slots))`` bytes unless it is a single file or piece: every one that
    large is a shard of its own, and the smaller ones are packed, largest first, into the
    lightest shard that still has room. Handed out in this order, each shard to the first slot
    that is free, the slots end close together as far as bytes tell the work (a file's pages
    and links, not its bytes, set its time: the 100k scale crawl's files take 0.34–0.50 s a
    MB on one core). A shard of several files holds at most 64 MB (about half a minute of
    work), so the progress bar and its estimate move file by file on a crawl of many files,
    and a lost worker takes little work with it. A file whose size cannot be read counts as
    the median size (its error is reported when it is ingested); it is not cut."""
    if not files:
        return []
    sizes = []
    for path in files:
        try:
            fs, p = filesystem(path)
            sizes.append(int(fs.size(p) or 0))
        except Exception:  # noqa: BLE001 — reported by the ingest itself
            sizes.append(-1)
    known = sorted(s for s in sizes if s >= 0)
    fill = known[len(known) // 2] if known else 1
    share = sum(s if s >= 0 else fill for s in sizes) // (SHARDS_PER_SLOT * max(1, slots))
    cut_above = max(2 * PIECE_BYTES, share)
    items: list[ShardItem] = []
    loads: list[int] = []
    for path, size in zip(files, sizes):
        n = -(-size // max(PIECE_BYTES, share)) if slots > 1 and size > cut_above and _cuttable(path) else 1
        for k in range(n):
            start, stop = piece_range(size, k, n)
            items.append(ShardItem(path, k, n))
            loads.append(fill if size < 0 else (size if stop is None else stop) - start)
    cap = max(1, min(SHARD_BYTES, share))
    shard_loads: list[int] = []
    members: list[list[int]] = []
    open_shards: list[tuple[int, int]] = []  # (load, shard) of the shards files are packed into
    for i in sorted(range(len(items)), key=lambda i: (-loads[i], i)):
        if loads[i] < cap and open_shards and open_shards[0][0] + loads[i] <= cap:
            _, b = heapq.heappop(open_shards)  # the lightest: if it has no room, none has
            shard_loads[b] += loads[i]
            members[b].append(i)
        else:
            b = len(shard_loads)
            shard_loads.append(loads[i])
            members.append([i])
        if shard_loads[b] < cap:
            heapq.heappush(open_shards, (shard_loads[b], b))
    order = sorted(range(len(shard_loads)), key=lambda b: (-shard_loads[b], b))
    return [[items[i] for i in sorted(members[b])] for b in order]


def _cuttable(path: str) -> bool:
    """Whether the archive file's records are compressed one by one (ArchiveRecords.cuttable)."""
    try:
        fs, p = filesystem(path)
        with fs.open(p, "rb") as raw:
            return ArchiveRecords(raw).cuttable
    except Exception:  # noqa: BLE001 — read whole; its error is reported by the ingest itself
        return False
