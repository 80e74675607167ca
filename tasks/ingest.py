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
from simweb.core.html import parse_page
from simweb.core.replay import payload_digest, timestamp14
from simweb.core.urls import normalize_url, url_id
from simweb.tasks.archives import FORMATS, ArchiveRecords, RecordEnd
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
from simweb.tasks.storage import file_digest, filesystem, identify, join, local_path, write_bytes_atomic

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
    TRUNCATED, TOO_LARGE, UNSUPPORTED_ENCODING, ENCODING_ERROR, EMPTY, DUPLICATE, PARSE_ERROR,
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
    fs, stats_path = filesystem(join(out_dir, "stats", f"{part}.json"))
    try:
        with fs.open(stats_path, "rb") as f:
            saved = json.loads(f.read())
    except (FileNotFoundError, json.JSONDecodeError, UnicodeDecodeError):
        return None
    if not isinstance(saved, dict) or saved.get("format") != INGEST_FORMAT or not isinstance(saved.get("files"), dict):
        return None
    for rel in (f"{data_set}/{part}.parquet" for data_set in DATA_SETS):
        dfs, p = filesystem(join(out_dir, rel))
        try:
            if int(dfs.size(p)) != saved["files"].get(rel, {}).get("bytes"):
                return None
        except (FileNotFoundError, OSError):
            return None
    try:
        return IngestStats.from_dict(saved["stats"])
    except (KeyError, TypeError, ValueError):
        return None


def _part_files(out_dir: str, part: str) -> dict[str, dict[str, Any]]:
    """Size and SHA-256 of a part's pages, links and aliases files, recorded in its stats file."""
    files = {}
    for rel in (f"{data_set}/{part}.parquet" for data_set in DATA_SETS):
        fs, path = filesystem(join(out_dir, rel))
        files[rel] = {"bytes": int(fs.size(path)), "sha256": file_digest(join(out_dir, rel))}
    return files


def ingest_warc(path: str, out_dir: str) -> IngestStats:
    """Ingest one archive file — WARC or ARC, plain or gzipped (or a .warc.zst), local path or fsspec URL — into
    ``out_dir``; see the module docstring.

    Returns this file's :class:`IngestStats`. Raises ``OSError`` only when the file cannot be
    read at all (missing, unreadable, I/O failure), which is worth retrying; a damaged file is
    reported in ``file_errors`` instead.
    """
    source = local_path(path) or path
    identity = identify(path)
    digest = identity.digest
    part = part_name(digest)
    earlier = _earlier_ingest(out_dir, part)
    if earlier is not None:
        return IngestStats(
            files_unchanged=1, files_by_format=earlier.files_by_format, pages_unchanged=earlier.pages_written,
            file_errors=tuple(FileError(source, e.reason, e.damage) for e in earlier.file_errors), parts=(part,),
        )

    parts = IngestParts(out_dir, part)
    try:
        counts = _read_archive(path, source, parts)
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
              "stats": stats.to_dict(), "files": _part_files(out_dir, part)}
    write_bytes_atomic(json.dumps(record, indent=1, sort_keys=True).encode(),
                       join(out_dir, "stats", f"{part}.json"))
    return stats


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


def _read_archive(path: str, source: str, parts: IngestParts) -> _Counts:
    """Stream the records of one WARC or ARC file into its parts, reading on past damage."""
    counts = _Counts()
    skipped = counts.skipped
    seen: set[str] = set()
    redirected: set[str] = set()
    fs, fs_path = filesystem(path)
    with fs.open(fs_path, "rb") as raw:
        records = ArchiveRecords(raw)
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
                        log: logging.Logger | logging.LoggerAdapter | None = None) -> IngestStats:
    """:func:`ingest_warc` of one file, retried up to ``io_retries`` times on transient I/O errors
    with exponential back-off. A file that still cannot be read — or fails with any other
    error — is reported in ``file_errors`` with the reason and skipped: it never stops the
    other files. Retrying is safe: a file's outputs are published only when it is complete."""
    log = log or logger
    for attempt in range(io_retries + 1):
        try:
            return ingest_warc(path, out_dir)
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
    first = os.path.basename(str(paths[0]).rstrip("/")) if paths else "no files"
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
def ingest_shard(paths: list[str], out: str, io_retries: int = 3, retry_delay: float = RETRY_DELAY) -> IngestStats:
    """Ingest a shard of WARC files into ``out`` one after another (see :func:`ingest_warc`);
    each file retried on transient I/O errors and reported on its own; the summed stats."""
    log = run_logger("simweb.ingest")
    results = []
    for path in paths:
        start = time.perf_counter()
        stats = ingest_with_retries(path, out, io_retries, retry_delay, log)
        if stats.files_unchanged:
            log.info("%s: unchanged since an earlier ingest; outputs kept", path)
        elif stats.files_read:
            log.info("%s: %d records, %d pages, %d links, %d skipped in %.1f s", path, stats.records_read,
                     stats.pages_written, stats.links_written, stats.records_skipped, time.perf_counter() - start)
        for error in stats.file_errors:
            log.warning("%s: %s", error.path, error.reason)
        results.append(stats)
    return IngestStats.total(results)


#: Bytes of archive at or above which a file is a shard of its own: at the ingest's pace (~3 MB
#: of gzipped WARC a second on one core) about twenty seconds of work, next to which a task's
#: own cost (a few hundred ms) is small. Smaller files are packed together up to this size.
SHARD_BYTES = 64 << 20
#: Shards wanted per worker slot, at least, when the files allow: the last to finish are then
#: small, so that no slot waits long for another at the end.
SHARDS_PER_SLOT = 4


def plan_shards(files: list[str], slots: int) -> list[list[str]]:
    """``files`` in shards to be ingested by ``slots`` worker slots, the largest shard first.

    A shard holds at most ``min(SHARD_BYTES, total / (SHARDS_PER_SLOT × slots))`` bytes unless
    it is a single file: every file that large is a shard of its own, and the smaller ones are
    packed, largest first, into the lightest shard that still has room. Handed out in this
    order, each shard to the first slot that is free, the slots end close together as far as
    bytes tell the work: a file's pages and links, not its bytes, set its time (the 100k scale
    crawl's five files take 0.34–0.50 s a MB on one core, and their HTML's bytes, sampled
    from each file's start, tell it no better), so a few files of uneven make still end
    unevenly; cutting a file at its records would even them out. A shard of several files
    holds at most 64 MB (about half a minute of work), so the progress bar and its estimate
    move file by file on a crawl of many files, and a lost worker takes little work with it.
    A file whose size cannot be read counts as the median size (its error is reported when
    it is ingested)."""
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
    sizes = [s if s >= 0 else fill for s in sizes]
    cap = max(1, min(SHARD_BYTES, sum(sizes) // (SHARDS_PER_SLOT * max(1, slots))))
    loads: list[int] = []
    members: list[list[int]] = []
    open_shards: list[tuple[int, int]] = []  # (load, shard) of the shards files are packed into
    for i in sorted(range(len(files)), key=lambda i: (-sizes[i], i)):
        if sizes[i] < cap and open_shards and open_shards[0][0] + sizes[i] <= cap:
            _, b = heapq.heappop(open_shards)  # the lightest: if it has no room, none has
            loads[b] += sizes[i]
            members[b].append(i)
        else:
            b = len(loads)
            loads.append(sizes[i])
            members.append([i])
        if loads[b] < cap:
            heapq.heappush(open_shards, (loads[b], b))
    order = sorted(range(len(loads)), key=lambda b: (-loads[b], b))
    return [[files[i] for i in sorted(members[b])] for b in order]
