"""Addressing a crawled record for replay: SURT keys, 14-digit timestamps, CDXJ lines, replay URLs.

A result is replayed by a web-archive player — pywb, or a Wayback Machine — from the record it
was read from. The player finds a record by its URL's **SURT** key and its **timestamp** in a
sorted **CDXJ** index, then reads ``length`` bytes at ``offset`` of ``filename``; a person opens
``<prefix><timestamp>/<url>`` to see it.

SURT (Sort-friendly URI Reordering Transform), as pywb computes it (``surt.surt(url)`` with its
defaults: the Internet Archive's canonicaliser, no scheme, no trailing comma), is written out
here step by step:

1. Google's "safe browsing" canonicalisation: the fragment is dropped; host, path and query are
   percent-decoded until nothing changes, then every byte outside printable ASCII, and ``%``,
   ``#`` and space, is escaped once (upper-case hex); the host loses empty labels and becomes a
   dotted quad when it is a number (``3279880203`` → ``195.127.0.11``; ``10.0.258`` → ``10.0.1.2``,
   as ``inet_aton`` reads it); the path loses ``.``/``..`` and empty segments.
2. The Internet Archive's canonicalisation: user and password dropped; a leading ``www``,
   ``www2``, … label dropped; the scheme's default port dropped; path and query lower-cased;
   the session ids of ASP.NET paths and of ``jsessionid``, ``phpsessid``, ``sid``,
   ``aspsessionid`` and ColdFusion ``cfid``/``cftoken`` query arguments removed; a trailing
   ``/`` removed unless the path is ``/``; query arguments sorted (as byte strings, by name then
   value); an empty query dropped.
3. The SURT form: host labels reversed and joined by ``,`` (an IPv4 address too), the port
   after them, ``)``, then the path and ``?query``; the scheme is left out, so http and https
   share a key (``http://www.example.com/A/?b=2&a=1`` → ``com,example)/a?a=1&b=2``).

A CDXJ line is ``<SURT> <timestamp> <JSON>``, the JSON's fields in pywb's order: url, mime,
status, digest, length, offset, filename, every value a string (as pywb's ``cdxj-indexer`` writes
them). A CDXJ file is sorted by SURT, then timestamp.

The timestamp is the record's WARC-Date (ISO 8601, UTC or with an offset) as 14 digits
``YYYYMMDDhhmmss`` in UTC; a date that is not a valid ISO 8601 date-time has no timestamp.

A replay prefix is either a template holding ``{url}`` (and ``{timestamp}``), such as
``http://localhost:8080/my-coll/{timestamp}/{url}``, or a prefix to which
``<timestamp>/<url>`` is appended (a ``/`` added if it lacks one), such as pywb's
``http://localhost:8080/my-coll/`` or the Wayback Machine's ``https://web.archive.org/web/``.
Either must be an http or https URL with a host (:func:`replay_prefix_problem`): a replay address
becomes a link's ``href``, and a ``javascript:`` or ``data:`` one would run in the page that shows it.
"""
from __future__ import annotations

import functools
import json
import re
from datetime import datetime, timedelta, timezone
from urllib.parse import quote, unquote, urlsplit

__all__ = ["cdxj_line", "payload_digest", "replay_prefix_problem", "replay_url", "surt", "timestamp14"]

# Step 1: bytes kept as they are when escaping once (everything else outside 0x21-0x7E is escaped).
_SAFE = "!\"$&'()*+,-./:;<=>?@[\\]^_`{|}~"
_WWW = re.compile(r"^www\d*\.")
_DEFAULT_PORTS = {"http": 80, "https": 443}
# Step 2: session ids in ASP.NET paths ("/(S(24 chars))/x.aspx") and in queries.
_PATH_SESSION_IDS = (
    re.compile(r"^(.*/)(\((?:[a-z]\([0-9a-z]{24}\))+\)/)([^?]+\.aspx.*)$", re.I),
    re.compile(r"^(.*/)(\([0-9a-z]{24}\)/)([^?]+\.aspx.*)$", re.I),
)
_QUERY_SESSION_IDS = (
    re.compile(r"^(.*)(?:jsessionid=[0-9a-zA-Z]{32})(?:&(.*))?$", re.I),
    re.compile(r"^(.*)(?:phpsessid=[0-9a-zA-Z]{32})(?:&(.*))?$", re.I),
    re.compile(r"^(.*)(?:sid=[0-9a-zA-Z]{32})(?:&(.*))?$", re.I),
    re.compile(r"^(.*)(?:aspsessionid[a-zA-Z]{8}=[a-zA-Z]{24})(?:&(.*))?$", re.I),
    re.compile(r"^(.*)(?:cfid=[^&]+&cftoken=[^&]+)(?:&(.*))?$", re.I),
)
_DOTTED_DECIMAL = re.compile(r"[1-9][0-9]*(?:\.[0-9]+){0,3}")
_DOTTED_OCTAL = re.compile(r"0[0-7]*(?:\.[0-7]+){0,3}")
_ISO_DATE = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2})(?:\.\d+)?)?(Z|[+-]\d{2}:?\d{2})")


def _unescape_repeatedly(text: str) -> str:
    while True:
        decoded = unquote(text)
        if decoded == text:
            return text
        text = decoded


# What escaping once changes: anything outside printable ASCII, and "%" and "#" (_SAFE holds
# every other printable ASCII character). Most URLs have none, and searching costs less than quoting.
_ESCAPED = re.compile(r"[^!-~]|[%#]")


def _escape_once(text: str) -> str:
    if _ESCAPED.search(text) is None:
        return text
    return quote(text.encode("utf-8"), safe=_SAFE)


def _inet_aton(host: str) -> str | None:
    """The dotted quad of a host written as ``inet_aton`` reads it (1–4 parts, each decimal, or
    octal with a leading 0; the last part fills the remaining bytes); None when it is not one."""
    parts = host.split(".")
    try:
        values = [int(p, 8) if len(p) > 1 and p.startswith("0") else int(p) for p in parts]
    except ValueError:
        return None
    *head, last = values
    if any(v > 255 for v in head) or last >= 256 ** (4 - len(head)):
        return None
    number = last
    for i, v in enumerate(head):
        number += v << (8 * (3 - i))
    return ".".join(str((number >> shift) & 255) for shift in (24, 16, 8, 0))


@functools.lru_cache(maxsize=1 << 14)  # a crawl's pages share few hosts
def _canonical_host(host: str) -> str:
    host = _unescape_repeatedly(host)
    try:
        host = host.encode("idna").decode("ascii")
    except UnicodeError:
        pass
    host = ".".join(label for label in host.split(".") if label)
    if host.isdigit():  # a 32-bit number (masked, as the Wayback's own tools do)
        number = int(host) & 0xFFFFFFFF
        return ".".join(str((number >> shift) & 255) for shift in (24, 16, 8, 0))
    if _DOTTED_DECIMAL.fullmatch(host) or _DOTTED_OCTAL.fullmatch(host):
        dotted = _inet_aton(host)
        if dotted is not None:
            return dotted
    return _escape_once(host.lower())


def _canonical_path(path: str) -> str:
    if path[:1] == "/" and "%" not in path and "/." not in path and "//" not in path:
        return _escape_once(path)  # no escapes, dot segments or empty segments: kept as it is
    kept: list[str] = []
    segments = _unescape_repeatedly(path).split("/")[1:] if path else []
    for segment in segments:
        if segment == ".":
            continue
        if segment == "..":
            if kept:
                kept.pop()
            else:
                kept.append(segment)
        else:
            kept.append(segment)
    # Empty segments fall out, except the last one: it keeps a trailing "/".
    path = "/" + "".join(f"{s}/" for s in kept[:-1] if s) + (kept[-1] if kept else "")
    return _escape_once(path)


def _sorted_query(query: str) -> str:
    pairs = [tuple(arg.encode("utf-8").split(b"=", 1)) for arg in query.split("&")]
    return "&".join(b"=".join(pair).decode("utf-8") for pair in sorted(pairs))


def surt(url: str) -> str:
    """The SURT key of an http(s) URL as pywb computes it (see the module docstring).

    >>> surt("http://www.archive.org/goo/?a=2&b&a=1")
    'org,archive)/goo?a=1&a=2&b'
    """
    parts = urlsplit(url.strip())
    scheme = parts.scheme.lower()
    netloc = parts.netloc.rpartition("@")[2]  # user and password are dropped
    host, port = netloc, None
    colon = netloc.rfind(":")
    if colon != -1 and "]" not in netloc[colon:]:
        host, port_text = netloc[:colon], netloc[colon + 1:]
        port = int(port_text) if port_text.isdigit() else None
    host = _WWW.sub("", _canonical_host(host), count=1)
    if port == _DEFAULT_PORTS.get(scheme):
        port = None
    path = _canonical_path(parts.path).lower()
    for pattern in _PATH_SESSION_IDS:
        match = pattern.match(path)
        if match:
            path = match.group(1) + match.group(3)
    if len(path) > 1 and path.endswith("/"):
        path = path[:-1]
    query = _escape_once(_unescape_repeatedly(parts.query)) if parts.query else ""
    for pattern in _QUERY_SESSION_IDS:
        match = pattern.match(query)
        if match:
            query = match.group(1) + (match.group(2) or "")
    query = _sorted_query(query.lower()) if len(query) > 1 else query.lower()
    key = ",".join(reversed(host.split(".")))
    if port is not None:
        key += f":{port}"
    key += ")" + (path or ("/" if query else ""))
    return f"{key}?{query}" if query else key


def timestamp14(warc_date: str | None) -> str | None:
    """A WARC-Date (ISO 8601 date-time, ``Z`` or an offset; seconds and fraction optional) as
    ``YYYYMMDDhhmmss`` in UTC, or None when it is not a valid date-time.

    >>> timestamp14("2017-03-06T04:02:06Z")
    '20170306040206'
    """
    match = _ISO_DATE.fullmatch((warc_date or "").strip())
    if match is None:
        return None
    year, month, day, hour, minute, second, zone = match.groups()
    try:
        moment = datetime(int(year), int(month), int(day), int(hour), int(minute), int(second or 0))
    except ValueError:  # a day or hour out of range ("2008-10-294T05:21:46-0700")
        return None
    if zone != "Z":
        sign = 1 if zone[0] == "+" else -1
        digits = zone[1:].replace(":", "")
        moment -= sign * timedelta(hours=int(digits[:2]), minutes=int(digits[2:]))
    if moment.year < 1000:  # strftime writes such a year without its leading zeros
        return moment.replace(tzinfo=timezone.utc).strftime("%Y%m%d%H%M%S")
    # the same digits as strftime, which costs a page's record more than the rest of this
    return f"{moment.year}{moment.month:02}{moment.day:02}{moment.hour:02}{moment.minute:02}{moment.second:02}"


def payload_digest(header: str | None) -> str:
    """The digest a CDXJ line shows for a WARC-Payload-Digest header: its value without the
    algorithm label (``sha1:G7HR…`` → ``G7HR…``); ``-`` when there is none."""
    value = (header or "").strip()
    return value.rsplit(":", 1)[-1] if value else "-"


def cdxj_line(key: str, timestamp: str, url: str, mime: str, status: int, digest: str, length: int,
              offset: int, filename: str) -> str:
    """One CDXJ line (without its line break), as pywb's ``cdxj-indexer`` writes it."""
    fields = {"url": url, "mime": mime or "-", "status": str(status), "digest": digest or "-",
              "length": str(length), "offset": str(offset), "filename": filename}
    return f"{key} {timestamp} {json.dumps(fields)}"


_CONTROLS_OR_SPACE = re.compile(r"[\x00-\x20\x7f]")


def replay_prefix_problem(prefix: str | None) -> str | None:
    """What is wrong with a replay prefix, in a sentence; None when it is an http(s) URL with a
    host (or when there is none)."""
    if not prefix:
        return None
    shown = prefix if len(prefix) <= 80 else prefix[:80] + "…"
    expected = ("expected a web-archive player's http(s) address, such as http://localhost:8080/my-coll/ (pywb) "
                f"or https://web.archive.org/web/, got {shown!r}")
    if _CONTROLS_OR_SPACE.search(prefix):
        return f"replay prefix: {expected}, which holds white space or control characters"
    try:
        parts = urlsplit(prefix)
    except ValueError:
        return f"replay prefix: {expected}, which is no URL"
    if parts.scheme.lower() not in ("http", "https") or not parts.hostname:
        return f"replay prefix: {expected}"
    return None


def replay_url(prefix: str, timestamp: str | None, url: str) -> str | None:
    """The address at which a player shows the record of ``url`` captured at ``timestamp``
    (see the module docstring for the two forms of ``prefix``); None without a timestamp.
    Raises ValueError for a prefix that is not an http(s) URL (:func:`replay_prefix_problem`)."""
    problem = replay_prefix_problem(prefix)
    if problem:
        raise ValueError(problem)
    if not timestamp:
        return None
    if "{url}" in prefix:
        return prefix.replace("{timestamp}", timestamp).replace("{url}", url)
    return f"{prefix if prefix.endswith('/') else prefix + '/'}{timestamp}/{url}"
