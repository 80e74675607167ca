"""URL normalisation and 64-bit URL ids.

Every stage names a page by its normalised URL, and every index by ``url_id`` of it, so two
spellings of one address (relative vs absolute, ``HTTP://Example.COM:80/a/./b#top`` vs
``http://example.com/a/b``) land on one document — needed for the link-based terms and the
anchor windows of paper Section 3.1, where the anchors of page v are credited to the page u
they point to. The normalisation is RFC 3986 Section 6.2.2 (case, percent-encoding, dot
segments) plus the scheme-based steps of 6.2.3 (default port, empty path), restricted to
http and https; fragments are dropped because they name a place inside the same document.
"""
from __future__ import annotations

import ipaddress
import re
from itertools import compress, repeat
from operator import is_
from urllib.parse import urlsplit

import mmh3

from simweb.core.memo import Memo

__all__ = ["normal_url_id", "normalize_links", "normalize_url", "target_uri", "url_id"]

_DEFAULT_PORTS = {"http": 80, "https": 443}
_UNRESERVED = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
# A percent-escape, a stray "%", or a character that may not appear raw in a path or query
# (RFC 3986 Section 2: anything outside unreserved, gen-delims and sub-delims).
_TO_NORMALISE = re.compile(r"%[0-9A-Fa-f]{2}|%|[^A-Za-z0-9\-._~!$&'()*+,;=:@/?]")
# WHATWG URL: tab and newlines inside a URL are removed; C0 controls and spaces at the ends trimmed.
_INNER_WHITESPACE = re.compile(r"[\t\n\r]")
_EDGE_JUNK = "".join(map(chr, range(0x21)))
# Characters a host may not contain (WHATWG "forbidden host code points" plus controls).
_FORBIDDEN_HOST = re.compile(r"[\x00-\x20#%/:<>?@\[\\\]^|\x7f]")

# A reference that starts with a scheme name (RFC 3986 Section 3.1).
_SCHEME_PREFIX = re.compile(r"([A-Za-z][A-Za-z0-9+.\-]*):")
# Most links on the web are already normal: lower-case http(s) scheme and ASCII host, no port or
# user info, only characters that need no escaping, no "%". They are returned as they are
# (once no "/." shows a possible dot segment); the test suite checks that this equals the full path.
_ALREADY_NORMAL = re.compile(
    r"https?://[a-z0-9][a-z0-9.\-]*((?:/[A-Za-z0-9\-._~!$&'()*+,;=:@]*)*)(?:\?[A-Za-z0-9\-._~!$&'()*+,;=:@/?]+)?"
)

#: Each reference's normal form. Keys: (reference, base directory or None) for normalize_url; for
#: normalize_links, also a reference that names its authority as written, and None (a bare href)
#: and False (no href). Emptied when it reaches its limit (simweb.core.memo).
URL_MEMO: Memo = Memo(1 << 18)


def _normalise_escape(match: re.Match[str]) -> str:
    text = match.group()
    if len(text) == 3:
        char = chr(int(text[1:], 16))
        return char if char in _UNRESERVED else text.upper()
    if text == "%":
        return "%25"
    if "\ud800" <= text <= "\udfff":
        # A lone surrogate (from a JSON string, say) is no character: U+FFFD, as the WHATWG URL
        # standard's parser reads scalar values, and as a page's invalid bytes are read.
        return "%EF%BF%BD"
    return "".join(f"%{b:02X}" for b in text.encode("utf-8"))


def _normalise_percent(text: str) -> str:
    """Decode escaped unreserved characters, upper-case other escapes, escape raw ones (RFC 3986 6.2.2.2)."""
    return _TO_NORMALISE.sub(_normalise_escape, text)


def _remove_dot_segments(path: str) -> str:
    """RFC 3986 Section 5.2.4 on an absolute path."""
    if "." not in path:
        return path
    output: list[str] = []
    segments = path.split("/")
    for i, segment in enumerate(segments[1:], start=1):
        last = i == len(segments) - 1
        if segment == ".":
            if last:
                output.append("")
        elif segment == "..":
            if output:
                output.pop()
            if last:
                output.append("")
        else:
            output.append(segment)
    return "/" + "/".join(output)


def _normalise_host(host: str) -> str | None:
    if "%" in host:
        host = _TO_NORMALISE.sub(lambda m: chr(int(m.group()[1:], 16)) if len(m.group()) == 3 else m.group(), host)
    if host.startswith("["):
        try:
            return f"[{ipaddress.IPv6Address(host[1:-1]).compressed}]" if host.endswith("]") else None
        except ValueError:
            return None
    if not host.isascii():
        try:
            host = host.encode("idna").decode("ascii")
        except UnicodeError:
            return None
    host = host.lower()
    if not host or _FORBIDDEN_HOST.search(host):
        return None
    return host


def _backslashes_to_slashes(url: str) -> str:
    """Browsers read "\\" as "/" before the query of an http(s) URL, and real pages rely on it."""
    if "\\" not in url:
        return url
    end = min((i for i in (url.find("?"), url.find("#")) if i != -1), default=len(url))
    return url[:end].replace("\\", "/") + url[end:]


#: Each base URL's parts (_split_base), bounded as URL_MEMO is.
BASE_MEMO: Memo = Memo(1 << 18)


def _split_base(base: str) -> tuple[str, str, str, str, tuple[str, str, str]]:
    """Scheme, authority, path, query and directory of a base URL, cached: one page resolves
    all its links against it. The directory is (scheme, authority, path up to its last "/")."""
    parts = BASE_MEMO.get(base)
    if parts is None:
        if len(BASE_MEMO) >= BASE_MEMO.limit:
            BASE_MEMO.clear()
        b = urlsplit(_backslashes_to_slashes(_INNER_WHITESPACE.sub("", base).strip(_EDGE_JUNK)))
        directory = (b.scheme, b.netloc, b.path[: b.path.rfind("/") + 1])
        parts = BASE_MEMO[base] = (b.scheme, b.netloc, b.path, b.query, directory)
    return parts


# A reference whose resolution reads no more of the base than its directory (see _resolve):
# only one with an empty path ("", "?q", "#f", "http:?q") reads the base's whole path and
# query. Tab and newlines are removed before resolving and could empty a path ("\t?q",
# "ht\ttp:?q"), so references holding them are left out, as are references starting with
# white space or controls; white space and controls at the end are trimmed, so a scheme
# followed by nothing else ("http:\x0b") is left out too.
_NEEDS_ONLY_DIRECTORY = re.compile(
    r"(?![A-Za-z][A-Za-z0-9+.\-]*:(?:[?#]|[\x00-\x20]*\Z))[^\x00-\x20?#][^\t\n\r]*", re.S
).fullmatch


# A reference naming its scheme and authority ("https://host/…"): once resolution has trimmed
# it, it is itself (see _resolve), whatever the base.
_NAMES_AUTHORITY = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*://").match


def _resolve(ref: str, base: str) -> str:
    """RFC 3986 Section 5.2.2 reference resolution (fragments and dot segments are dealt with later).

    Written out because urllib's urljoin drops empty ";" parameters. As browsers do, a
    reference naming the base's own http(s) scheme without "//" ("http:page.html") is relative.
    """
    scheme, netloc, base_path, base_query, _ = _split_base(base)
    named = _SCHEME_PREFIX.match(ref)
    if named is not None:
        rest = ref[named.end() :]
        if named.group(1).lower() != scheme.lower() or rest.startswith("//"):
            return ref
        ref = rest
    if ref.startswith("//"):
        return f"{scheme}:{ref}"
    path, has_query, query = ref.partition("#")[0].partition("?")
    if not path:
        path = base_path
        if not has_query:
            query = base_query
    elif path[0] != "/":
        path = (base_path[: base_path.rfind("/") + 1] or "/") + path
    return f"{scheme}://{netloc}{path}?{query}" if query else f"{scheme}://{netloc}{path}"


def _normalise(url: str, base: str | None) -> str | None:
    if base is not None:
        url = _resolve(_backslashes_to_slashes(_INNER_WHITESPACE.sub("", url).strip(_EDGE_JUNK)), base)
    url = url.partition("#")[0]
    clean = _ALREADY_NORMAL.fullmatch(url)
    if clean is not None and "/." not in clean.group(1):
        return url if clean.group(1) else f"{url[: clean.start(1)]}/{url[clean.start(1) :]}"
    return _normalise_in_full(url)


def _normalise_in_full(url: str) -> str | None:
    url = _backslashes_to_slashes(_INNER_WHITESPACE.sub("", url).strip(_EDGE_JUNK))
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    if scheme not in _DEFAULT_PORTS:
        return None
    netloc, path = parts.netloc, parts.path
    userinfo, at, hostport = netloc.rpartition("@")
    host, port = hostport, ""
    colon = hostport.rfind(":")
    if colon != -1 and "]" not in hostport[colon:]:
        host, port = hostport[:colon], hostport[colon + 1 :]
    host = _normalise_host(host)
    if host is None:
        return None
    if port:
        if not port.isascii() or not port.isdigit() or int(port) > 65535:
            return None
        if int(port) != _DEFAULT_PORTS[scheme]:
            host = f"{host}:{int(port)}"
    if at:
        host = f"{_normalise_percent(userinfo)}@{host}"
    path = _remove_dot_segments(_normalise_percent(path) or "/")
    if not path.startswith("/"):
        path = "/" + path
    query = f"?{_normalise_percent(parts.query)}" if parts.query else ""
    return f"{scheme}://{host}{path}{query}"


def target_uri(value: str) -> str:
    """The URL a record's WARC-Target-URI names: white space and controls at its ends trimmed (as
    the WHATWG URL parser trims them), and one pair of angle brackets around it removed (WARC 1.0
    wrote the URI as ``<http://…>``) — only a matching pair: a URL ending in ``>`` keeps it."""
    value = value.strip(_EDGE_JUNK)
    if len(value) >= 2 and value[0] == "<" and value[-1] == ">":
        value = value[1:-1].strip(_EDGE_JUNK)
    return value


def normalize_url(url: str, base: str | None = None) -> str | None:
    """The normalised absolute http(s) form of ``url`` (resolved against ``base``), or None.

    Resolves a relative reference against ``base``; drops the fragment; lower-cases scheme and
    host; converts an internationalised host to IDNA; drops the default port; decodes escaped
    unreserved characters and upper-cases other escapes; removes ``.`` and ``..`` segments; an
    empty path becomes ``/``. Anything that is not http or https (``mailto:``, ``javascript:``,
    ``data:``, ``ftp:``) or cannot be parsed gives None; it never raises. Idempotent.
    """
    if not isinstance(url, str) or not (base is None or isinstance(base, str)):
        return None
    # The fragment names a place inside the document and is dropped: the links to the places
    # of one page ("#l00144", "a.html#top") share one memo entry.
    if "#" in url:
        url = url[: url.index("#")]
    # The pages of a directory share most of their links ("/about", "next.html"): a relative
    # reference is memoised per base directory, not per base, when that is all it reads; one
    # that names its scheme and authority reads nothing of its base, and shares the entry of
    # the URL asked for alone.
    key = (url, base)
    if base is not None and _NEEDS_ONLY_DIRECTORY(url) is not None:
        parts = BASE_MEMO.get(base)
        try:
            directory = (parts or _split_base(base))[4]
        except (ValueError, TypeError, UnicodeError):  # a base urlsplit refuses ("http://[")
            pass
        else:
            key = (url, None) if _NAMES_AUTHORITY(url) is not None else (url, directory)
    try:
        return URL_MEMO[key]
    except KeyError:
        pass
    result = _resolved(url, base if key[1] is not None else None)  # see _NAMES_AUTHORITY
    URL_MEMO[key] = result
    if result is not None:
        URL_MEMO[(result, None)] = result
    return result


def _resolved(url: str, base: str | None) -> str | None:
    """``url`` (without its fragment) normalised against ``base``, None where it cannot be, for
    the caller to memoise: the memo is emptied first when it is full."""
    if len(URL_MEMO) >= URL_MEMO.limit:
        URL_MEMO.clear()
    try:
        return _normalise(url, base)
    except (ValueError, TypeError, UnicodeError):
        return None


_MISSING = object()


def normalize_links(hrefs: list, base: str) -> list[str | None]:
    """``[normalize_url(href, base) for href in hrefs]``: the links of one page, in one batch.

    A page's links are looked up in the memo of :func:`normalize_url` by C-level maps, under
    the base's directory (what most references read of their base), so that a link seen
    before on a page of the same directory costs one dict look-up; a link that names its
    authority is memoised once for every directory; the others take the full path. Entries
    that are not strings (None for a bare ``href``) give None.
    """
    try:
        directory = _split_base(base)[4]
    except (ValueError, TypeError, UnicodeError):  # a base urlsplit refuses: every link the long way
        return [normalize_url(href, base) for href in hrefs]
    # Two C-level look-ups: a link that names its authority (and an entry that is no string) is
    # memoised as written, for pages of every directory (a mirror's pages, or a CMS's, link
    # absolutely from thousands of directories); the links the first misses are looked up
    # under the base's directory, and only the links both miss take a Python step.
    found = list(map(URL_MEMO.get, hrefs, repeat(_MISSING)))
    if _MISSING not in found:
        return found
    missing = list(compress(range(len(found)), map(is_, found, repeat(_MISSING))))
    rest = list(map(hrefs.__getitem__, missing))
    own = _MISSING  # the page itself: what "" and "#place" name
    for i, href, result in zip(missing, rest, map(URL_MEMO.get, zip(rest, repeat(directory)), repeat(_MISSING))):
        if result is _MISSING:
            if not isinstance(href, str):
                result = URL_MEMO[href] = None
            elif _NEEDS_ONLY_DIRECTORY(href) is not None:
                if _NAMES_AUTHORITY(href) is not None:
                    result = URL_MEMO[href] = _resolved(href.partition("#")[0], None)  # reads no base
                else:
                    result = URL_MEMO[(href, directory)] = normalize_url(href, base)
            elif href[:1] in ("", "#"):
                if own is _MISSING:
                    own = normalize_url("", base)
                result = own
            else:  # reads the base's whole path and query
                result = normalize_url(href, base)
        found[i] = result
    return found


def url_id(url: str) -> int:
    """The document id of a URL: unsigned 64-bit MurmurHash3 (x64, seed 0) of its normalised UTF-8 form.

    Raises ValueError for a string that is not an http(s) URL (see normalize_url).
    """
    normalised = normalize_url(url)
    if normalised is None:
        raise ValueError(
            f"expected an absolute http or https URL, got {url!r}; "
            "check normalize_url(url) is not None before asking for its id"
        )
    return normal_url_id(normalised)


def normal_url_id(normalised: str) -> int:
    """:func:`url_id` of a URL that is normalised already (what :func:`normalize_url` and
    :func:`normalize_links` return): the hash alone, without normalising it again. A link's
    target is normalised once; the ingest asks the id of every new one, and the second
    normalisation cost more than the hash."""
    return mmh3.hash64(normalised.encode("utf-8"), 0, signed=False)[0]
