"""A topic directory as ground truth: Open Directory RDF dumps and ``url<TAB>category`` files.

Paper Section 2.1: the directory is treated as a tree ("soft links" whose name ends in ``@``
are ignored, footnote 2), collapsed below a fixed depth of three, and the relatively few
documents listed above that depth are ignored. Section 5, footnote 8: the directory's own
pages are kept out of the data set, so that its descriptive links cannot leak the classes
into the anchor text being judged.

The parsers read a binary file-like object handed in by the caller (this layer never opens
files) and stream it: the Open Directory's ``content.rdf.u8`` is several gigabytes, and only
one ``Topic`` or ``ExternalPage`` element is held in memory at a time. The XML parser refuses
entity declarations and external entities (defusedxml), so a hostile file cannot expand
itself into gigabytes or read local files.

Memberships are read from both places the dump states them — an ``ExternalPage``'s
``<topic>`` and a ``Topic``'s ``<link>``/``<link1>`` elements — and deduplicated, so an
excerpt that lists a URL in only one of the two places still counts it.

The dumps of the paper's years are not well-formed XML throughout: URLs with a bare ``&``
(``?a=1&b=2``), HTML entities such as ``&nbsp;`` that XML does not define, control characters
and stray Latin-1 bytes in titles and descriptions. A UTF-8 dump is read through a repair that
escapes such an ``&``, drops the characters XML forbids and replaces bytes that are not UTF-8
(each counted: ``bare_ampersands_escaped``, ``forbidden_characters_dropped``,
``bytes_not_utf8_replaced``), so that one bad listing among millions does not stop the reading;
a well-formed dump passes through unchanged.

A dump whose download was cut short ends inside an element: the listings before the cut are
read, and the cut is counted (``file_cut_at_line``) for the report to say; malformed XML
before the end still stops the reading.
"""
from __future__ import annotations

import codecs
import io
import re
from collections import Counter
from collections.abc import Callable, Container, Iterable, Iterator
from dataclasses import dataclass, field
from typing import BinaryIO
from xml.etree.ElementTree import ParseError
from xml.parsers.expat import errors as expat_errors

import defusedxml.ElementTree as safe_et
from defusedxml import DefusedXmlException

from simweb.core.errors import DirectoryFormatError
from simweb.core.urls import normalize_url

ROOT = "Top"
CLASS_DEPTH = 3
SOFT_LINK_SUFFIX = "@"

# Hosts serving the Open Directory itself (and its best-known mirror); their pages are the
# directory's own pages and are excluded from the data set (paper Section 5, footnote 8).
ODP_HOSTS = ("dmoz.org", "dmoz.com", "odp.org", "directory.google.com")

Class = tuple[str, ...]



class DirectoryRefused(DirectoryFormatError):
    """The directory file declares XML entities, which are refused (an expansion bomb or a file read)."""


@dataclass(frozen=True, slots=True)
class Listing:
    """One directory membership as written in the file: a URL listed under a topic path."""

    url: str
    topic: str


def topic_segments(topic: str) -> tuple[str, ...]:
    """The category names below the root: ``"Top/Arts/Animation"`` → ``("Arts", "Animation")``.

    Leading/trailing slashes and a leading ``Top`` are dropped, so ODP topic ids, TSV paths
    such as ``/home/gardens/plants`` and the paper's Figure 2 spelling all read the same.
    """
    parts = [p for p in topic.strip().split("/") if p]
    if parts and parts[0] == ROOT:
        parts = parts[1:]
    return tuple(parts)


def collapse(topic: str, depth: int = CLASS_DEPTH) -> Class | None:
    """The class of a listing after collapsing the hierarchy below ``depth`` (Section 2.1).

    Returns None for a topic above ``depth`` (those documents are ignored) and for a path
    through a soft link (a segment ending in ``@``): the hierarchy is treated as a tree.
    """
    parts = topic_segments(topic)
    if any(p.endswith(SOFT_LINK_SUFFIX) for p in parts):
        return None
    if len(parts) < depth:
        return None
    return parts[:depth]


def _local(tag: str) -> str:
    return tag.rsplit("}", 1)[-1]


def _attr(elem, name: str) -> str | None:
    for key, value in elem.attrib.items():
        if _local(key) == name:
            return value
    return None


# An "&" that starts no reference XML knows without a DTD (the five predefined entities and
# character references): escaped by the repair.
_BARE_AMPERSAND = re.compile(r"&(?!(?:amp|lt|gt|quot|apos|#[0-9]+|#x[0-9A-Fa-f]+);)")
# Characters XML 1.0 forbids: C0 controls other than tab, line feed and carriage return, and
# U+FFFE/U+FFFF. Bytes that are not UTF-8 come out of the decoder as lone surrogates.
_FORBIDDEN = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")
_NOT_UTF8 = re.compile("[\udc80-\udcff]")
_DECLARED_ENCODING = re.compile(rb"""^\s*<\?xml[^>]*\bencoding\s*=\s*["']([A-Za-z0-9._-]+)["']""")
_REPAIR_CHUNK = 1 << 18  # the bytes the repair holds at a time (a few copies of them while it works)
_REPAIRS = ((_NOT_UTF8, "\ufffd", "bytes_not_utf8_replaced"), (_FORBIDDEN, "", "forbidden_characters_dropped"),
            (_BARE_AMPERSAND, "&amp;", "bare_ampersands_escaped"))


def _peekable(stream: BinaryIO) -> BinaryIO:
    """``stream`` itself if its first bytes can be looked at without reading them, else buffered."""
    return stream if hasattr(stream, "peek") else io.BufferedReader(stream, 1 << 16)


def _as_utf8(stream: BinaryIO, chunk: int = _REPAIR_CHUNK) -> BinaryIO:
    """``stream`` (peekable) as UTF-8 bytes: a file that starts with a UTF-16 byte order mark (a
    spreadsheet's "Unicode text" export, an XML file saved as UTF-16) is decoded from UTF-16 as
    it is read, undecodable units replaced, and an XML declaration of its encoding made to
    say UTF-8; any other file is returned as it is."""
    buffered = _peekable(stream)
    if buffered.peek(2)[:2] not in (codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE):
        return buffered
    return io.BufferedReader(_ChunkReader(_utf16_chunks(buffered, chunk)), 1 << 16)


_DECLARED_TEXT_ENCODING = re.compile(r"""^(\s*<\?xml[^>]*\bencoding\s*=\s*["'])[A-Za-z0-9._-]+(["'])""")


def _utf16_chunks(stream: BinaryIO, chunk: int) -> Iterator[bytes]:
    decoder = codecs.getincrementaldecoder("utf-16")("replace")
    head = ""  # the text before the end of a declaration (its first ">"), or its first 256 characters
    while raw := stream.read(chunk):
        text = decoder.decode(raw)
        if head is not None:
            head += text
            if ">" not in head and len(head) < 256:
                continue
            text, head = _DECLARED_TEXT_ENCODING.sub(r"\1UTF-8\2", head, count=1), None
        yield text.encode("utf-8")
    yield ((head or "") + decoder.decode(b"", final=True)).encode("utf-8")


def repaired_xml(stream: BinaryIO, counts: Counter, chunk: int = _REPAIR_CHUNK) -> BinaryIO:
    """``stream``, a UTF-8 XML file (or UTF-16 with a byte order mark: :func:`_as_utf8`), with what keeps real Open Directory dumps from being
    well-formed repaired (see the module docstring), the repairs counted in ``counts``. A file
    that declares another encoding is returned as it is."""
    buffered = _as_utf8(stream, chunk)
    declared = _DECLARED_ENCODING.match(buffered.peek(256)[:256])
    if declared and codecs.lookup(declared.group(1).decode("ascii")).name != "utf-8":
        return buffered
    return io.BufferedReader(_ChunkReader(_repaired_chunks(buffered, counts, chunk)), 1 << 16)


def _repaired_chunks(stream: BinaryIO, counts: Counter, chunk: int) -> Iterator[bytes]:
    decoder = codecs.getincrementaldecoder("utf-8")("surrogateescape")
    held = ""
    while True:
        raw = stream.read(chunk)
        text = held + decoder.decode(raw, final=not raw)
        held = ""
        if raw:  # an "&" near the end may start a reference the next chunk completes
            cut = text.find("&", max(0, len(text) - 16))
            if cut >= 0:
                text, held = text[:cut], text[cut:]
        for pattern, replacement, counted in _REPAIRS:
            text, n = pattern.subn(replacement, text)
            if n:
                counts[counted] += n
        yield text.encode("utf-8")
        if not raw:
            return


class _ChunkReader(io.RawIOBase):
    """A raw binary stream over an iterator of byte chunks."""

    def __init__(self, chunks: Iterator[bytes]) -> None:
        self._chunks = chunks
        self._chunk = memoryview(b"")

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        while not self._chunk:
            data = next(self._chunks, None)
            if data is None:
                return 0
            self._chunk = memoryview(data)
        n = min(len(buffer), len(self._chunk))
        buffer[:n] = self._chunk[:n]
        self._chunk = self._chunk[n:]
        return n


# What the XML parser says when the file ends before the document does (it is told so only
# once the whole file is read): an element left open, a tag, a character or a CDATA section cut.
_ENDS_EARLY = frozenset(expat_errors.codes[message] for message in (
    expat_errors.XML_ERROR_NO_ELEMENTS, expat_errors.XML_ERROR_UNCLOSED_TOKEN, expat_errors.XML_ERROR_PARTIAL_CHAR,
    expat_errors.XML_ERROR_UNCLOSED_CDATA_SECTION))


class UntilCut(io.RawIOBase):
    """A decompressing stream (gzip, bzip2) read up to where its data ends: a compressed file
    cut short ends there, ``cut`` set, instead of raising EOFError mid-read (the decompressors
    raise it only once no more of the data decodes, so nothing that decodes is lost)."""

    def __init__(self, stream: BinaryIO) -> None:
        self._stream = stream
        self.cut = False

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        if self.cut:
            return 0
        try:
            # One read of the decompressor at a time (read1): a read that asks for more fails
            # whole at the cut, with what it had decoded before it.
            data = (self._stream.read1 if hasattr(self._stream, "read1") else self._stream.read)(len(buffer))
        except EOFError:
            self.cut = True
            return 0
        buffer[: len(data)] = data
        return len(data)


def cut_note(counts: dict) -> str | None:
    """What to tell the user of a directory file that ends early (``counts`` of a read that
    counted ``file_cut_at_line`` or ``compressed_file_cut``), or None for a whole file."""
    line, compressed = counts.get("file_cut_at_line"), counts.get("compressed_file_cut")
    if not (line or compressed):
        return None
    where = f", inside its XML at line {line:,}" if line else ""
    why = "its compressed data is cut short" if compressed else "a download cut short?"
    return f"the directory file ends early{where} ({why}): the listings before the cut are read, the rest is missing"


# The children of a Topic in an Open Directory structure dump (structure.rdf.u8), which names
# the categories and how they link to each other but lists no pages.
_STRUCTURE_LINKS = frozenset({"narrow", "narrow1", "narrow2", "symbolic", "symbolic1", "symbolic2", "related",
                              "letterbar", "altlang", "newsGroup"})


def nothing_listed(counts: dict, fmt: str) -> str | None:
    """Why a directory file whose read gave ``counts`` (of :func:`read_directory`) is of no use,
    when it lists no page under any category; else None."""
    if counts.get("listings", 0):
        return None
    if fmt == "rdf":
        topics, structure = counts.get("topics", 0), counts.get("structure_links", 0)
        if structure:
            return (f"the directory file names {topics:,} categories and {structure:,} links between them but lists "
                    "no page: it is an Open Directory structure dump (structure.rdf.u8); use the content dump "
                    "(content.rdf.u8), which lists the pages of each category")
        return (f"the directory file lists no page ({topics:,} <Topic> elements, none with a <link>, and no "
                "<ExternalPage>); expected an Open Directory content dump (content.rdf.u8)")
    return "the directory file has no url<TAB>category line; expected lines of url<TAB>Top/category/path"


def iter_odp_rdf(stream: BinaryIO, counts: Counter | None = None) -> Iterator[Listing]:
    """Stream the listings of an Open Directory ``content.rdf.u8`` dump (or an excerpt of one).

    Reads ``Topic`` elements (their ``link`` and ``link1`` children give the URLs listed under
    ``r:id``) and ``ExternalPage`` elements (``about`` with its ``<topic>``). Real quirks are
    handled: the root topic has an empty ``r:id``; ``link1`` marks an editor's pick and lists a
    URL like ``link``; ``priority``, titles and descriptions are ignored. ``counts`` (if given)
    receives ``topics``, ``external_pages``, ``topic_links``, ``structure_links`` (the links
    between categories of a structure dump: ``narrow``, ``symbolic``, ``related`` …) and the
    skipped cases (``listing_without_url``, ``listing_without_topic``).

    A file that ends inside the document (a download cut short) gives the listings before the
    cut, and ``counts["file_cut_at_line"]`` says where it ends. Raises DirectoryFormatError for
    XML that is malformed before its end past what :func:`repaired_xml` repairs, or a file that
    declares entities.
    """
    counts = counts if counts is not None else Counter()
    root = None
    try:
        for event, elem in safe_et.iterparse(repaired_xml(stream, counts), events=("start", "end")):
            if event == "start":
                if root is None:
                    root = elem
                continue
            name = _local(elem.tag)
            if name == "Topic":
                counts["topics"] += 1
                topic = _attr(elem, "id") or ""
                for child in elem:
                    if _local(child.tag) in _STRUCTURE_LINKS:
                        counts["structure_links"] += 1
                    if _local(child.tag) in ("link", "link1"):
                        url = (_attr(child, "resource") or "").strip()
                        counts["topic_links"] += 1
                        if not url:
                            counts["listing_without_url"] += 1
                        elif not topic:
                            counts["listing_without_topic"] += 1
                        else:
                            yield Listing(url, topic)
            elif name == "ExternalPage":
                counts["external_pages"] += 1
                url = (elem.get("about") or _attr(elem, "about") or "").strip()
                topics = [(c.text or "").strip() for c in elem if _local(c.tag) == "topic"]
                topics = [t for t in topics if t]
                if not url:
                    counts["listing_without_url"] += 1
                elif not topics:
                    counts["listing_without_topic"] += 1
                for topic in topics if url else ():
                    yield Listing(url, topic)
            else:
                continue
            # Keep memory bounded: drop the finished element from the tree.
            elem.clear()
            if root is not None:
                root.clear()
    except ParseError as err:
        line, column = getattr(err, "position", (0, 0))
        if root is not None and _local(root.tag) == "RDF" and getattr(err, "code", None) in _ENDS_EARLY:
            counts["file_cut_at_line"] = line
            return
        raise DirectoryFormatError(
            f"the directory file is not well-formed XML (line {line}, column {column}): {err}; "
            "expected an Open Directory RDF dump (content.rdf.u8) — check that the file is complete "
            "and, if it is compressed, that it was decompressed"
        ) from None
    except DefusedXmlException as err:
        raise DirectoryRefused(
            f"refused to read the directory file: {err}; an Open Directory dump declares no XML "
            "entities — remove the DOCTYPE/ENTITY declarations or use the original dump"
        ) from None
    if root is None:
        raise DirectoryFormatError("the directory file is empty: expected an Open Directory RDF dump")
    if _local(root.tag) != "RDF":
        raise DirectoryFormatError(
            f"expected an Open Directory RDF dump whose root element is <RDF>, found <{_local(root.tag)}>"
        )


# What categories written as paths with another separator than "/" hold ("Arts > Music",
# "Arts::Music", "Arts|Music", "Arts\\Music"): counted, so that a directory read as one level
# deep can say why.
_OTHER_SEPARATOR = re.compile(r"\S\s*(?:>|::|\||\\)\s*\S")


def iter_tsv(stream: BinaryIO, counts: Counter | None = None) -> Iterator[Listing]:
    """Stream ``url<TAB>category/path`` lines (UTF-8, with or without a byte order mark; UTF-16
    with one). Blank lines and ``#`` comments are skipped.

    The directories people export often carry more: further columns (a title, a description)
    are ignored and the lines counted as ``tsv_extra_columns``; a line whose first field is the
    category and second the URL (``category<TAB>url``: the first field names no scheme, the
    second does — or, neither naming one, the second is a host and path such as
    ``www.example.org/page`` and the first is not) is read the other way round and counted as
    ``tsv_category_first``. A line
    with fewer than two fields, an empty one, or one that is not UTF-8 is skipped and counted
    as ``bad_tsv_line``; ``counts["tsv_lines"]`` counts the listings read. A file none of whose
    lines is UTF-8 raises DirectoryFormatError.
    """
    counts = counts if counts is not None else Counter()
    read = undecodable = 0
    for number, raw in enumerate(_as_utf8(stream)):
        try:
            line = raw.decode("utf-8-sig" if number == 0 else "utf-8").rstrip("\r\n")  # a byte order mark first
        except UnicodeDecodeError:
            counts["bad_tsv_line"] += 1
            undecodable += 1
            continue
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        fields = line.split("\t")
        if len(fields) < 2 or not fields[0].strip() or not fields[1].strip():
            counts["bad_tsv_line"] += 1
            continue
        if len(fields) > 2:
            counts["tsv_extra_columns"] += 1
        url, topic = fields[0].strip(), fields[1].strip()
        if "://" not in url and ("://" in topic or (_SCHEME_LESS.match(topic) and not _SCHEME_LESS.match(url))):
            url, topic = topic, url
            counts["tsv_category_first"] += 1
        counts["tsv_lines"] += 1
        read += 1
        if "/" not in topic and _OTHER_SEPARATOR.search(topic):
            counts["topics_not_slash_separated"] += 1
        yield Listing(url, topic)
    if undecodable and not read:
        raise DirectoryFormatError(
            f"the directory TSV is not UTF-8 text ({undecodable} line(s) could not be decoded, none could): "
            "expected lines of url<TAB>category; re-encode the file as UTF-8"
        )


def _host(url: str) -> str:
    rest = url.split("://", 1)[-1]
    return rest.split("/", 1)[0].split("@")[-1].split(":")[0].lower()


@dataclass(frozen=True, slots=True)
class Directory:
    """The ground truth: each kept URL (normalised) with its class at the collapse depth.

    ``directory_pages`` and ``directory_hosts`` name the directory's own pages; they are never
    classified and the evaluation drops them (and their outgoing links) from the crawl data.
    ``counts`` tells what was read, kept and dropped, and why.
    """

    classes: dict[str, Class]
    directory_pages: frozenset[str] = frozenset()
    directory_hosts: tuple[str, ...] = ()
    depth: int = CLASS_DEPTH
    counts: dict[str, int] = field(default_factory=dict)

    def is_directory_page(self, url: str) -> bool:
        """True for the directory's own pages: listed exclusions and pages on its hosts."""
        if url in self.directory_pages:
            return True
        if not self.directory_hosts:
            return False
        host = _host(url)
        return any(host == h or host.endswith("." + h) for h in self.directory_hosts)

    def class_of(self, url: str) -> Class | None:
        return self.classes.get(url)

    def __len__(self) -> int:
        return len(self.classes)


def build_directory(
    listings: Iterable[Listing],
    *,
    depth: int = CLASS_DEPTH,
    normalize: Callable[[str], str | None] = normalize_url,
    directory_pages: Iterable[str] = (),
    directory_hosts: Iterable[str] = (),
    keep: Container[str] | None = None,
    counts: Counter | None = None,
) -> Directory:
    """Classify each listed URL by its depth-``depth`` ancestor topic (paper Section 2.1).

    Rules, each counted in ``Directory.counts``:
    - ``soft_link``: a topic path through an ``@`` soft link is ignored (footnote 2).
    - ``above_depth``: a listing above the collapse depth is ignored; deeper ones are collapsed
      into their depth-``depth`` ancestor (footnote 7).
    - ``bad_url``: a URL ``normalize`` rejects is skipped. URLs are normalised exactly as the
      ingest stage normalises link targets, so directory URLs and crawl URLs meet.
    - ``url_without_scheme``: a URL written without its scheme (``www.example.org/page``, as
      lists people keep by hand often are) names the page over http and https alike: the one
      of the two in ``keep`` when given (http when both or neither are), else both.
    - ``directory_page``: the directory's own pages are never classified (footnote 8).
    - ``not_kept``: URLs outside ``keep`` (when given — e.g. the link targets of a crawl, to hold
      only what the evaluation can use while streaming a full dump) are not stored.
    - ``conflicting_class``: a URL listed in two different classes has no single familial
      distance; it is dropped rather than assigned to one of them arbitrarily.
    """
    counts = counts if counts is not None else Counter()
    pages = frozenset(u for u in (normalize(p) for p in directory_pages) if u)
    hosts = tuple(sorted({h.strip().lower().strip(".") for h in directory_hosts if h.strip()}))
    probe = Directory({}, pages, hosts, depth)
    classes: dict[str, Class] = {}
    conflicted: set[str] = set()
    for listing in listings:
        counts["listings"] += 1
        parts = topic_segments(listing.topic)
        if any(p.endswith(SOFT_LINK_SUFFIX) for p in parts):
            counts["soft_link"] += 1
            continue
        counts["deepest"] = max(counts["deepest"], len(parts))
        if len(parts) < depth:
            counts["above_depth"] += 1
            continue
        if len(parts) > depth:
            counts["collapsed"] += 1
        url = normalize(listing.url)
        if url is not None:
            urls = [url]
        else:
            urls = _either_scheme(listing.url, normalize)
            if not urls:
                counts["bad_url"] += 1
                continue
            counts["url_without_scheme"] += 1
            if keep is not None:  # the form the crawl has, when it has one
                urls = [u for u in urls if u in keep][:1] or urls[:1]
        cls = parts[:depth]
        for url in urls:
            if probe.is_directory_page(url):
                counts["directory_page"] += 1
                break
            if keep is not None and url not in keep:
                counts["not_kept"] += 1
                continue
            if url in conflicted:
                continue
            known = classes.get(url)
            if known is None:
                classes[url] = cls
            elif known != cls:
                conflicted.add(url)
                del classes[url]
    counts["conflicting_class"] = len(conflicted)
    for key in ("soft_link", "above_depth", "collapsed", "bad_url", "directory_page", "not_kept", "deepest"):
        counts.setdefault(key, 0)
    counts["urls"] = len(classes)
    counts["classes"] = len(set(classes.values()))
    return Directory(classes, pages, hosts, depth, dict(counts))


# A URL written without its scheme: a host name of two or more labels (or a protocol-relative
# "//host"), then a port, path, query or nothing.
_SCHEME_LESS = re.compile(r"^(?://)?((?:[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?\.)+[A-Za-z][A-Za-z0-9-]*(?::\d+)?(?:[/?#].*)?)$")


def _either_scheme(url: str, normalize: Callable[[str], str | None]) -> list[str]:
    """The http and https forms of ``url`` when it is written without its scheme (normalised,
    http first), else []."""
    found = _SCHEME_LESS.match(url.strip())
    if not found:
        return []
    return list(dict.fromkeys(u for u in (normalize(f"http://{found.group(1)}"), normalize(f"https://{found.group(1)}")) if u))


#: The shallowest collapse that still has sibling classes under a common parent.
MIN_DEPTH = 2


def collapse_depth(requested: int, deepest: int, other_separators: int = 0) -> int:
    """The depth to collapse a directory whose deepest listing is ``deepest`` levels below the root
    at, when ``requested`` was asked for (the paper's 3 by default, Section 2.1): the directory's
    own depth when it is shallower, so that a two-level directory is judged by its two levels.
    Raises DirectoryFormatError when the directory has fewer than two levels (no siblings),
    saying so when ``other_separators`` of its categories look like paths written with another
    separator than "/"."""
    if requested < MIN_DEPTH:
        raise DirectoryFormatError(f"depth: expected at least {MIN_DEPTH} levels (siblings need a parent), got {requested}")
    if deepest >= requested:
        return requested
    if deepest < MIN_DEPTH:
        hint = (f"; {other_separators:,} of them look like paths written with '>', '::', '|' or '\\' between "
                "their levels: write them with '/' (Arts > Music as Top/Arts/Music)") if other_separators else ""
        raise DirectoryFormatError(
            f"the directory's categories are {deepest} level(s) deep below Top; expected at least {MIN_DEPTH} "
            f"(e.g. url<TAB>Top/Science/Physics), so that classes have siblings{hint}")
    return deepest


def read_directory(
    stream: BinaryIO,
    *,
    fmt: str,
    depth: int = CLASS_DEPTH,
    normalize: Callable[[str], str | None] = normalize_url,
    directory_pages: Iterable[str] = (),
    directory_hosts: Iterable[str] | None = None,
    keep: Container[str] | None = None,
) -> Directory:
    """Parse a directory file (``fmt`` "rdf" or "tsv") and build the collapsed Directory.

    For an RDF dump the Open Directory's own hosts are excluded unless ``directory_hosts``
    says otherwise; a TSV names no hosts by default.
    """
    counts: Counter = Counter()
    if fmt == "rdf":
        listings = iter_odp_rdf(stream, counts)
        hosts = ODP_HOSTS if directory_hosts is None else tuple(directory_hosts)
    elif fmt == "tsv":
        listings = iter_tsv(stream, counts)
        hosts = () if directory_hosts is None else tuple(directory_hosts)
    else:
        raise ValueError(f"unknown directory format {fmt!r}: expected 'rdf' or 'tsv'")
    return build_directory(
        listings,
        depth=depth,
        normalize=normalize,
        directory_pages=directory_pages,
        directory_hosts=hosts,
        keep=keep,
        counts=counts,
    )


def sniff_format(head: bytes) -> str:
    """"rdf" when the first bytes look like XML (UTF-8, or UTF-16 after its byte order mark),
    else "tsv"."""
    if head[:2] in (codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE):
        text = head.decode("utf-16", errors="ignore").lstrip()
        return "rdf" if text.startswith("<") else "tsv"
    text = head.lstrip(codecs.BOM_UTF8).lstrip()
    return "rdf" if text.startswith(b"<") else "tsv"
