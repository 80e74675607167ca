"""One archive file's records into its parts: which records become pages and why the others
do not (the reasons counted in IngestStats.skipped), each page decoded and parsed; see
simweb.tasks.ingest."""
from __future__ import annotations

import base64
import hashlib
import logging
import re
from collections import Counter
from dataclasses import dataclass, field

from warcio.bufferedreaders import ChunkedDataReader

from simweb.core.aliases import REDIRECT, REDIRECT_STATUSES, redirect_target
from simweb.core.charset import charset_from_content_type, html_for_parser, looks_binary, looks_like_html
from simweb.core.html import PAGE_TOO_DEEP, PAGE_TOO_SLOW, PageOverBudget, parse_page
from simweb.core.replay import payload_digest, timestamp14
from simweb.core.urls import normalize_url, target_uri, url_id
from simweb.tasks.archives import ArchiveRecords, RecordEnd
from simweb.tasks.crawl.aliases import GONE, GONE_STATUSES, REVISIT
from simweb.tasks.ingest.parts import IngestParts, RecordPlace
from simweb.tasks.payloads import (
    ENCODING_ERROR,
    TOO_LARGE,
    UNSUPPORTED_ENCODING,
    EncodingError,
    decode_content_encoding,
    encoded_payload_ends,
)
from simweb.tasks.readers import open_records
from simweb.tasks.warcio_readers import HeaderParser

__all__ = ["BAD_STATUS", "DUPLICATE", "EMPTY", "GENERIC_TYPES", "HTML_TYPES", "INVALID_URI", "MAX_PAYLOAD_BYTES",
           "NOT_HTML", "NOT_WEB_URI", "NO_URI", "PAGE_RECORD_TYPES", "PARSE_ERROR", "SKIP_REASONS", "TRUNCATED",
           "ArchiveCounts", "read_archive"]


logger = logging.getLogger("simweb.ingest")

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


def _media_type(content_type: str | None) -> str:
    return (content_type or "").split(";", 1)[0].strip().lower()


def _status_reason(status: int) -> str:
    return f"HTTP {status // 100}xx" if 100 <= status <= 599 else BAD_STATUS


_HTTP_PARSER = HeaderParser(["HTTP/1.0", "HTTP/1.1"], verify=False)


@dataclass
class ArchiveCounts:
    """What reading one archive file (or piece) counted, besides the rows its parts hold."""

    format: str = "unknown"
    records: int = 0
    recovered: int = 0
    skipped: Counter = field(default_factory=Counter)
    links_skipped: Counter = field(default_factory=Counter)
    aliases_skipped: Counter = field(default_factory=Counter)
    damage: tuple[tuple[int, int], ...] = ()
    error: str | None = None
    later: dict[tuple[str, str], int] = field(default_factory=dict)  # see read_archive


class _Captures:
    """Which record of a URL a file's parts keep, per kind of capture (a page, a redirect, a 404/410,
    a revisit): the latest by WARC-Date, then offset. Read once, the first of each is written and
    the later ones noted (``later``); read again with ``keep`` (what the first reading noted),
    those URLs' latest records are written instead."""

    def __init__(self, keep: dict[tuple[str, str], int] | None = None):
        self.keep = keep or {}
        self.seen: dict[tuple[str, str], str] = {}
        self.later: dict[tuple[str, str], int] = {}

    def admit(self, kind: str, url: str, record, offset: int) -> bool:
        key = (kind, url)
        if key in self.keep:
            return offset == self.keep[key]
        stamp = timestamp14(record.rec_headers.get_header("WARC-Date")) or ""
        if key not in self.seen:
            self.seen[key] = stamp
            return True
        if stamp >= self.seen[key]:
            self.seen[key] = stamp
            self.later[key] = offset
        return False


def read_archive(path: str, source: str, parts: IngestParts, start: int = 0, stop: int | None = None,
                 keep: dict[tuple[str, str], int] | None = None) -> ArchiveCounts:
    """Stream the records of one WARC or ARC file (of its records that start in [``start``,
    ``stop``) when given) into its parts, reading on past damage. Of a URL's records of one kind
    the first is written, or with ``keep`` the one at the offset it names (ArchiveCounts.later:
    the latest records of the URLs a first reading found captured again later in the file)."""
    counts = ArchiveCounts()
    skipped = counts.skipped
    captures = _Captures(keep)
    with open_records(path, start, stop) as records:
        for offset, record in records:
            counts.records += 1
            reason, found = _page_of(record, records)
            if reason is None:
                if not captures.admit("page", found[0], record, offset):
                    reason = DUPLICATE
                else:
                    reason = _add_page(found, _record_of(record, offset, records, found), source, parts, counts)
            elif reason == REDIRECT:
                url, status, media_type, location = found
                target, why_not = redirect_target(url, location)
                if target is None:
                    counts.aliases_skipped[why_not] += 1
                elif captures.admit(REDIRECT, url, record, offset):  # as for pages, one record of a URL in a file
                    parts.add_alias(url, url_id(url), target, url_id(target), REDIRECT, status, source, offset,
                                    _record_of(record, offset, records, (url, status, media_type)))
                reason = _status_reason(status)  # not a page: counted as before, its alias beside
            elif reason == GONE:
                url, status = found
                if captures.admit(GONE, url, record, offset):  # a capture with no page: the page is gone if latest
                    parts.add_alias(url, url_id(url), "", 0, GONE, status, source, offset,
                                    _record_of(record, offset, records, (url, status, "")))
                reason = _status_reason(status)
            elif reason == REVISIT:
                url, refers_to = found
                if captures.admit(REVISIT, url, record, offset):  # a capture of an earlier capture's payload
                    parts.add_alias(url, url_id(url), refers_to, url_id(refers_to), REVISIT, 200, source, offset,
                                    _record_of(record, offset, records, (url, 200, "")))
                reason = "revisit record"
            if reason is not None:
                skipped[reason] += 1
        counts.format = records.format or "unknown"
        counts.recovered = records.recovered
        counts.damage = tuple((gap.offset, gap.skipped) for gap in records.gaps)
        counts.error = records.damage_note(source)
        counts.later = captures.later
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


def _revisit_of(record, records: ArchiveRecords):
    """(REVISIT, (url, the URL it refers to)) for a revisit record of a web URL, else its skip reason."""
    records.finish()
    headers = record.rec_headers
    url = normalize_url(target_uri(headers.get_header("WARC-Target-URI") or ""))
    if url is None:
        return "revisit record", None
    refers_to = normalize_url(target_uri(headers.get_header("WARC-Refers-To-Target-URI") or "")) or url
    return REVISIT, (url, refers_to)


def _page_of(record, records: ArchiveRecords):
    """(skip reason, None); (REDIRECT, (url, status, media type, Location)) for a redirect record;
    (GONE, (url, status)) for a 404 or 410; (REVISIT, (url, refers to)) for a revisit record; or (None, (url, status, media type, charset label, body))."""
    rec_type = record.rec_type
    if rec_type == "revisit":
        return _revisit_of(record, records)
    if rec_type not in PAGE_RECORD_TYPES:
        records.finish()
        return f"{rec_type or 'untyped'} record", None

    uri = target_uri(record.rec_headers.get_header("WARC-Target-URI") or "")
    if not uri:
        records.finish()
        return NO_URI, None
    url = normalize_url(uri)
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
        if status in GONE_STATUSES:
            records.finish()
            return GONE, (url, status)
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


def _add_page(page, record: RecordPlace, source: str, parts: IngestParts, counts: ArchiveCounts) -> str | None:
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
