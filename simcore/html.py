"""From an HTML page to its title, cleaned words and outgoing anchors with their contexts (paper Section 3.1).

What is kept of a page is strategy-free: the cleaned word stream (comments, scripts, styles and
tags removed, ``alt`` text kept, non-alphabetic characters removed, lower-cased), and for every
outgoing link its normalised target, where its anchor words lie in that word stream and how far
its context reaches on each side — far enough for the widest BASIC window, W = 32 words that are
not stopwords under any stemming variant (footnote 5: stopwords do not count towards W) — and
how many of those context words lie inside the anchor's SYNTACTIC and TOPICAL regions. Anchors
hold word offsets (:class:`simweb.core.records.Anchor`), not copies: the contexts of a page's links
overlap, and copying them would multiply the page's words by the number of its links.

* SYNTACTIC cut-offs: paragraph boundaries, table-cell boundaries, list-item boundaries, and
  hard breaks (``<br>``) that follow a sentence end. Every TOPICAL cut-off is also a SYNTACTIC
  one, so a syntactic region never reaches past its topical region.
* TOPICAL cut-offs: heading beginnings, list ends, table ends.

The page edges bound every region. Elements mark the cut-offs: ``p`` at both ends; ``td``,
``th``, ``li``, ``dd`` and ``dt`` at their start (text cannot sit between two table cells and
seldom sits between list items, so the next cell or item, or the end of the table or list,
closes one); ``h1``–``h6`` at their start; ``ul``, ``ol``, ``dl``, ``menu`` and ``table`` at
their end. A cut-off at the same word position as an anchor with no words bounds both sides.

How it is fast: Lexbor (selectolax) parses the page; a walk of C over the head reads its
title and link elements (what the CSS queries "title" and "link[rel][href]" would find, and do
where the extension is not built); a ``<base>`` element is looked for only in a page whose text
has a ``<base`` tag; one walk of C over the body's tree
(simcore/_walk.c, calling the installed selectolax's Lexbor functions) reads the links' hrefs
in document order, leaving out scripts, styles and the other unwanted elements; a page's links
are normalised in one batch against the memo of their base directory
(:func:`simweb.core.urls.normalize_links`); a second walk writes the text the marked page gives
— the marker characters (Unicode noncharacters) around the kept links and at cut-offs, images
replaced by their ``alt`` text, a space between text nodes (so that ``<li>a</li><li>b</li>``
gives two words, as a browser shows them; an inline tag inside a word, ``<b>W</b>ord``, splits
it). Where that extension was not built, or does not mark a probe page as the Python path does
(another selectolax), the same is done with selectolax calls: the unwanted elements removed,
one walk over the elements finding links, images and region elements by tag id, C-level maps
(map, compress, attrgetter) reading their attributes and inserting the markers as text nodes,
and the text taken once, in C. Then one pass of C (simcore/_scan.c)
finds the words, the markers and every marker's word offset — or, where the extension was not
built, one regex pass, one map to small codes and numpy, with the same results — and numpy
finds every link's context edges and region lengths at once: Python takes a step of
its own only for a link it does not keep (and, on the selectolax path, an image-map link). The anchors come out
as columns (:class:`simweb.core.records.Anchors`).

Links that are not kept (not http/https, or unparseable) are counted in the optional
``skipped`` counter of :func:`parse_page` under LINK_NOT_HTTP and LINK_UNPARSEABLE, so that
the ingest stage can surface them in its summary.

Every page has a budget (:class:`PageLimits`). The tree builder of HTML looks through the open
elements for many tags, so a page of deeply nested elements costs Lexbor the square of its
depth (200,000 nested ``<div>``, 1.2 MB, took four minutes). So the parse goes in pieces
(simcore/_walk.c: parse, Lexbor's chunk parsing, the same tree) and stops when the tree's last
branch, where the open elements are, is deeper than the budget, or when it has taken more
than its seconds of CPU time; the walk then measures the depth of the whole tree. A page beyond
its budget raises :class:`PageOverBudget`, with the skip reason PAGE_TOO_DEEP or
PAGE_TOO_SLOW. (Where the extension was not built the parse is selectolax's, in one piece: its
depth is measured after it, and its time is not bounded.)
"""
from __future__ import annotations

import re
import threading
from array import array
from collections import Counter, deque
from collections.abc import Callable
from dataclasses import dataclass
from itertools import compress, repeat
from operator import and_, attrgetter, is_not, methodcaller, not_
from typing import NamedTuple

import numpy as np

from selectolax import lexbor as selectolax_lexbor
from selectolax.lexbor import LexborDocumentOptions, LexborHTMLParser, LexborNode

try:  # selectolax's CSS engine, which its trees make one of on first use
    from selectolax.lexbor import LexborCSSSelector
except ImportError:  # pragma: no cover - another selectolax version
    LexborCSSSelector = None

from simweb.core.records import Anchors, ParsedPage
from simweb.core.text import WORD_RE, _is_mark, clean_text, never_stop_flags, tokenize
from simweb.core.urls import normalize_links, normalize_url

try:  # the word and marker scan and the anchors' windows in C; without a C compiler at install, the same in Python
    from simweb.core._scan import anchors as _c_anchors, scan as _c_scan, windows as _c_windows
except ImportError:  # pragma: no cover - depends on the build
    _c_scan = _c_windows = _c_anchors = None
try:  # the marking walk in C over Lexbor's tree; without it, the same with selectolax calls
    from simweb.core import _walk
except ImportError:  # pragma: no cover - depends on the build
    _walk = None

__all__ = [
    "CONTEXT_NONSTOP",
    "LINK_NOT_HTTP",
    "LINK_UNPARSEABLE",
    "PAGE_TOO_DEEP",
    "PAGE_TOO_SLOW",
    "PageLimits",
    "PageOverBudget",
    "parse_page",
]

#: Context words kept on each side of an anchor: the widest BASIC window W (Section 3.1).
CONTEXT_NONSTOP = 32

# Reasons an ``<a href>`` / ``<area href>`` is not kept (the keys parse_page adds to ``skipped``).
#: The target has a scheme other than http/https (mailto:, javascript:, ftp:, tel:, data:, ...).
LINK_NOT_HTTP = "link target not http(s)"
#: The target is not a usable URL (bad host or port, empty host, garbage).
LINK_UNPARSEABLE = "link target unparseable"

# Why a page is not parsed (PageOverBudget.reason): skip reasons of the ingest stage.
#: Its elements nest deeper than PageLimits.depth.
PAGE_TOO_DEEP = "page nested too deep"
#: Its parse took more than PageLimits.seconds of CPU time.
PAGE_TOO_SLOW = "page parse over its time"


@dataclass(frozen=True, slots=True)
class PageLimits:
    """How much one page may cost (DESIGN: every input has a budget).

    ``depth``: elements nested below the document (``<html>`` is 1, ``<body>`` 2). Browsers
    stop nesting far sooner (Chromium's parser puts elements past 512 levels beside their parent
    instead). ``seconds``: CPU seconds of parsing, a bound on how long a page can hold a worker
    whatever the cause (CPU time, so that a busy machine does not turn pages away).
    """

    depth: int = 4096
    seconds: float = 10.0


class PageOverBudget(ValueError):
    """A page beyond its :class:`PageLimits`; ``reason`` is the ingest's skip reason."""

    def __init__(self, reason: str, detail: str):
        super().__init__(detail)
        self.reason = reason


#: The budget of every page unless a caller names another.
PAGE_LIMITS = PageLimits()
# Bytes given to Lexbor at a time: between two pieces the parse checks its depth and time. A
# piece of 16 KB holds at most ~3,000 start tags, so a page too deep is stopped soon after it
# crosses the budget, and an ordinary page is parsed in a few pieces.
_PARSE_STEP = 16 << 10

# Markers are Unicode noncharacters, reserved for exactly this internal use: they are never
# letters, and a page that does contain them is cleaned and parsed again (_NONCHARACTERS).
_START = "\ufdd0"  # before the k-th kept link (k counts in document order)
_END = "\ufdd1"  # after a link
_SYNTACTIC = "\ufdd2"
_TOPICAL = "\ufdd3"  # also a SYNTACTIC cut-off
_BREAK = "\ufdd4"  # a <br>: a SYNTACTIC cut-off when it follows a sentence end
_NONCHARACTERS = re.compile("[\ufdd0-\ufdd4]")
_ALL_MARKERS = (_START, _END, _SYNTACTIC, _TOPICAL, _BREAK)
# Each marker is a text node of its own, so the text has a space on both sides of it and a
# marker can lead a "word" of WORD_RE's shape without ever joining a real word: one pattern
# with a single leading character class tokenizes words and markers at regex-engine speed.
_TOKEN_RE = re.compile(WORD_RE.pattern.replace("[", "[\ufdd0-\ufdd3", 1))
# A <br> after ".", "!", "?", "…" or their CJK forms, past closing quotes and brackets, white
# space and the ends of links, is a hard break after a sentence end: a SYNTACTIC cut-off.
_SENTENCE_ENDS = ".!?\u2026\u3002\uff01\uff1f"
_CLOSERS = "\"')]}\u201d\u2019\u00bb" + _END  # and white space
_SENTENCE_BREAK = re.compile(f"([{re.escape(_SENTENCE_ENDS)}][\\s{re.escape(_CLOSERS)}]*){_BREAK}")
# Token codes: the links' markers first, then the cut-offs (a TOPICAL one is also SYNTACTIC).
_START_CODE, _END_CODE, _SYNTACTIC_CODE, _TOPICAL_CODE, _WORD_CODE = range(5)
_CODES = {_START: _START_CODE, _END: _END_CODE, _SYNTACTIC: _SYNTACTIC_CODE, _TOPICAL: _TOPICAL_CODE}

_REMOVED = "script, style, noscript, template, title, iframe, noembed, noframes"
# The elements that get markers or are replaced; found in one walk over the tree and picked
# out by tag id, which costs less than matching a selector list against every element.
_MARKED = ("a", "area", "img", "p", "td", "th", "li", "dd", "dt", "h1", "h2", "h3", "h4", "h5", "h6",
           "ul", "ol", "dl", "menu", "table", "br")
_BEFORE = {
    "p": _SYNTACTIC, "td": _SYNTACTIC, "th": _SYNTACTIC, "li": _SYNTACTIC, "dd": _SYNTACTIC, "dt": _SYNTACTIC,
    "h1": _TOPICAL, "h2": _TOPICAL, "h3": _TOPICAL, "h4": _TOPICAL, "h5": _TOPICAL, "h6": _TOPICAL,
}
# Text cannot sit between two table cells and seldom between list items, so the start of the
# next one (or the end of the list or table) closes a cell or item; a paragraph needs both ends.
_AFTER = {"p": _SYNTACTIC, "ul": _TOPICAL, "ol": _TOPICAL, "dl": _TOPICAL, "menu": _TOPICAL, "table": _TOPICAL, "br": _BREAK}
_NO_ANCHORS = Anchors()
# Lexbor's mutation events serve scripts' view of a live document (a <selectedcontent> mirroring
# its option, for one); the text of the page as written needs none, and parsing and marking
# go a little faster without them (the same output on every page of DebDocs and the fixtures).
_WITHOUT_EVENTS = LexborDocumentOptions.WO_EVENTS
_SCHEME = re.compile(r"\s*([A-Za-z][A-Za-z0-9+.\-]*):")


def parse_page(html: str | bytes, url: str, skipped: Counter[str] | None = None,
               limits: PageLimits = PAGE_LIMITS) -> ParsedPage:
    """Title, cleaned words, outgoing anchors and canonical links of one HTML page (paper Section 3.1).

    ``html`` is the page's text, or bytes that are its text in UTF-8 (as
    :func:`simweb.core.charset.html_for_parser` gives them: the parser reads them as they are).

    ``url`` is the page's own (normalised) URL; relative links resolve against it, or against
    ``<base href>`` when the page has one. Link targets are normalised with
    :func:`simweb.core.urls.normalize_url`; self-links are kept. Links that are not kept are
    counted in ``skipped`` (when given) under LINK_NOT_HTTP or LINK_UNPARSEABLE. The title is
    in ``title``/``title_words`` only, not in ``words``. Raises :class:`PageOverBudget` for a
    page beyond ``limits``, and nothing else on any text.
    """
    counted: Counter[str] = Counter()
    page = _parse(html, url, counted, limits)
    if page is None:  # the page's own text holds our marker characters: drop them, parse again
        counted.clear()
        page = _parse(html, url, counted, limits, drop_marker_characters=True)
    if skipped is not None and counted:
        skipped.update(counted)
    return page


def _parse(html: str | bytes, url: str, skipped: Counter[str], limits: PageLimits,
           drop_marker_characters: bool = False) -> ParsedPage | None:
    """The page, or None when the text does not hold exactly the markers that were inserted."""
    tree = WALK.tree(html, limits)
    head = tree.head
    title_in_head, head_links = WALK.head(head) if head is not None else (None, ())
    title = _title(tree, title_in_head)
    title_words = tuple(tokenize(title))
    base = _base_url(tree, url, html)
    canonical = _canonical_links(head_links, base)
    refresh = _refresh(head, base)
    body = tree.body
    if body is None:  # a frameset page has no body and no anchors
        return ParsedPage(url, title, title_words, (), _NO_ANCHORS, canonical, refresh)
    if drop_marker_characters:
        targets, text, inserted = _marked_text_python(body, base, skipped, limits.depth, drop_marker_characters=True)
    else:
        targets, text, inserted = WALK.marked_text(body, base, skipped, limits.depth)
    words, kinds, before, markers = _scan_text(clean_text(text))
    if markers != inserted:
        return None
    if not targets:
        return ParsedPage(url, title, title_words, tuple(words), _NO_ANCHORS, canonical, refresh)
    return ParsedPage(url, title, title_words, tuple(words), _anchors_of(words, kinds, before, targets), canonical,
                      refresh)


def _tree_python(html: str | bytes, limits: PageLimits) -> LexborHTMLParser:
    """The page parsed by selectolax, in one piece (its depth is measured by the marking)."""
    return LexborHTMLParser(html, options=_WITHOUT_EVENTS)


def _tree_c(html: str | bytes, limits: PageLimits) -> LexborHTMLParser:
    """The page parsed in pieces within ``limits`` (simcore/_walk.c: parse) into the document of
    a parser made for it; raises PageOverBudget when the parse stopped."""
    # A parser of a standards-mode page: a document parsed keeps its quirks mode in the next parse,
    # and a page without a doctype would leave every page after it in quirks mode.
    tree = LexborHTMLParser("<!doctype html>", options=_WITHOUT_EVENTS)
    data = html if type(html) is bytes else html.encode("utf-8", "ignore")  # as selectolax feeds text
    stopped = _walk.parse(tree.root.mem_id, data, limits.depth, limits.seconds, _PARSE_STEP)
    if stopped == _STOPPED_DEEP:
        raise PageOverBudget(PAGE_TOO_DEEP, f"elements nested deeper than {limits.depth:,}")
    if stopped == _STOPPED_SLOW:
        raise PageOverBudget(PAGE_TOO_SLOW, f"the parse took more than {limits.seconds:g} s of CPU time")
    return tree


# What simcore/_walk.c's parse returns when it stopped: too deep, too slow.
_STOPPED_DEEP, _STOPPED_SLOW = 1, 2


def _too_deep(depth: int, limit: int) -> None:
    """Raise PageOverBudget when elements nest ``depth`` levels below the body: deeper than
    ``limit`` below the document."""
    if depth + 2 > limit:
        raise PageOverBudget(PAGE_TOO_DEEP, f"elements nested deeper than {limit:,}")


def _anchors_of(words: list[str], kinds: np.ndarray, before: np.ndarray, targets: list[str]) -> Anchors:
    """The anchors from the scan's markers: in one call of C (simcore/_scan.c: anchors) where it
    is built and links do not nest, else links' spans and the cuts picked out by numpy."""
    if _c_anchors is not None:
        block = _c_anchors(never_stop_flags(words), kinds, before, CONTEXT_NONSTOP)
        if block is not None:
            columns = _int32_columns(block)
            return Anchors(tuple(map(targets.__getitem__, range(len(columns[0])))), *columns)
    is_link = kinds <= _END_CODE
    spans = _spans(kinds[is_link], before[is_link])
    syntactic_cuts, topical_cuts = before[kinds >= _SYNTACTIC_CODE], before[kinds == _TOPICAL_CODE]
    return _anchors(words, spans, targets, syntactic_cuts, topical_cuts)


def _scan_text_python(text: str) -> tuple[list[str], np.ndarray, np.ndarray, int]:
    """Words, marker kinds (token codes), words ahead of each marker, and marker characters.

    One C-level tokenization of words and markers together; the markers are then told from
    words by one C-level map to small codes, and numpy finds every marker's word offset: no
    Python step per word or marker. The reference for the C scan of simcore/_scan.c.
    """
    markers = sum(map(text.count, _ALL_MARKERS))
    if _BREAK in text:
        text = _SENTENCE_BREAK.sub("\\1" + _SYNTACTIC, text)
    tokens = _TOKEN_RE.findall(text)
    codes = np.fromiter(map(_CODES.get, tokens, repeat(_WORD_CODE)), np.int8, len(tokens))
    is_word = codes == _WORD_CODE
    at = np.flatnonzero(~is_word)
    return list(compress(tokens, is_word.tolist())), codes[at], at - np.arange(len(at)), markers


def _scan_classes() -> bytes:
    """The class byte of every BMP code point, for simcore/_scan.c: its kind in the low three
    bits (0 separator, 1 letter, 2 mark, 3–7 the markers in _ALL_MARKERS order), 8 for a
    sentence end and 16 for a closing character or white space (_SENTENCE_BREAK)."""
    chars = list(map(chr, range(0x10000)))
    classes = np.zeros(0x10000, np.uint8)
    classes[np.fromiter(map(_is_mark, chars), bool, 0x10000)] = 2
    classes[np.fromiter(map(str.isalpha, chars), bool, 0x10000)] = 1  # as WORD_RE: letters start words
    for kind, marker in enumerate(_ALL_MARKERS, start=3):
        classes[ord(marker)] = kind
    classes[np.fromiter(map(str.isspace, chars), bool, 0x10000)] |= 16
    classes[[ord(c) for c in _CLOSERS]] |= 16
    classes[[ord(c) for c in _SENTENCE_ENDS]] |= 8
    return classes.tobytes()


if _c_scan is None:
    _scan_text = _scan_text_python
else:
    _SCAN_CLASSES = _scan_classes()

    def _scan_text(text: str) -> tuple[list[str], np.ndarray, np.ndarray, int]:
        """:func:`_scan_text_python` in one pass of C (simcore/_scan.c)."""
        words, kinds, before, markers = _c_scan(text, _SCAN_CLASSES)
        return words, np.frombuffer(kinds, np.int8), np.frombuffer(before, np.int64), markers


# A parsed tree makes a CSS engine of its own on its first query, which costs a small page more
# than the queries it asks: one engine per thread serves every page instead. It answers as the
# tree's own would (selectolax's node.css_first and node.css ask it the same way).
_engines = threading.local()


def _select(node: LexborNode, query: str, first: bool = False) -> list[LexborNode]:
    if LexborCSSSelector is None:
        if not first:
            return node.css(query)
        found = node.css_first(query)
        return [] if found is None else [found]
    try:
        engine = _engines.engine
    except AttributeError:
        engine = _engines.engine = LexborCSSSelector()
    return engine.find_first(query, node) if first else engine.find(query, node)


# An element named base comes only from a start tag "<base" (tag names are ASCII-lower-cased
# by the tokenizer, never built from character references): a page without one has none, and
# searching its text costs less than searching its tree.
_BASE_TAG = re.compile("<base", re.IGNORECASE)
_BASE_TAG_BYTES = re.compile(b"<base", re.IGNORECASE)


def _head_python(head: LexborNode) -> tuple[str | None, list[tuple[str, str]]]:
    """The text of the head's first title element (None when it has none), and the (rel, href)
    of its link elements that have both, in document order ("" for a bare attribute)."""
    title = _select(head, "title", first=True)
    links = [(node.attrs.get("rel") or "", node.attrs.get("href") or "") for node in _select(head, "link[rel][href]")]
    return (title[0].text() if title else None), links


def _head_c(head: LexborNode) -> tuple[str | None, list[tuple[str, str]]]:
    """:func:`_head_python` in one walk of C over the head (simcore/_walk.c)."""
    return _walk.head(head.mem_id, _TITLE_TAG, _LINK_TAG)


def _title(tree: LexborHTMLParser, in_head: str | None) -> str:
    """The head's title, else the document's first; white space collapsed."""
    if in_head is None:
        found = _select(tree.root, "title", first=True) if tree.root is not None else []
        in_head = found[0].text() if found else ""
    return " ".join(in_head.split())


def _base_url(tree: LexborHTMLParser, url: str, html: str | bytes) -> str:
    """The URL relative links resolve against: the first ``<base href>``, else the page's own URL."""
    if (_BASE_TAG_BYTES if type(html) is bytes else _BASE_TAG).search(html) is None or tree.root is None:
        return url
    found = _select(tree.root, "base[href]", first=True)
    if found:
        base = normalize_url(found[0].attrs.get("href") or "", url)
        if base is not None:
            return base
    return url


def _canonical_links(head_links: list[tuple[str, str]], base: str) -> tuple[str | None, ...]:
    """The targets of the ``<link rel="canonical" href>`` elements of the head (RFC 6596; ``rel``
    is a list of keywords, compared without regard to case), resolved against ``base``."""
    return tuple(normalize_url(href, base) for rel, href in head_links if "canonical" in rel.lower().split())


# A refresh's content (HTML's shared declarative refresh steps): a delay, then optionally ";" or
# ",", "url=" and the URL, in quotes or not.
_REFRESH_CONTENT = re.compile(r"\s*([0-9]*)[0-9.]*\s*(?:[;,]\s*)?(?:url\s*=\s*)?(.*)", re.I | re.S)


def _refresh(head: LexborNode | None, base: str) -> tuple[str | None, ...]:
    """The target of the page's instant refresh — the first ``<meta http-equiv="refresh">`` of its
    head, if its delay is 0 and it names a URL — resolved against ``base`` and normalised (None:
    not an http(s) URL); empty when there is none. (One query of the head: about 8 µs a page,
    where looking for "refresh" in a page's text took 110 µs.)"""
    if head is None:
        return ()
    for meta in _select(head, "meta[http-equiv]"):
        if (meta.attrs.get("http-equiv") or "").strip().lower() != "refresh":
            continue
        found = _REFRESH_CONTENT.match(meta.attrs.get("content") or "")
        delay, target = found.group(1), found.group(2).strip()
        if target[:1] in ("'", '"'):
            target = target[1:].split(target[0], 1)[0]
        if delay != "" and int(delay) == 0 and target:
            return (normalize_url(target, base),)
        return ()  # the first refresh is the one a browser follows: after a delay, or to the page itself
    return ()


def _tag_ids(names) -> dict[str, int]:
    """Lexbor's numeric tag ids (comparing ints is cheaper than decoding each node's tag name)."""
    tree = LexborHTMLParser("")
    return {name: tree.create_node(name).tag_id for name in names}


def _text_specialisation(method):
    """The str version of a selectolax node method that also takes bytes or nodes.

    Cython's run-time dispatch between a fused function's versions costs about twice the
    insertion itself, and parse_page inserts a marker for every link and region element.
    """
    try:
        return method["str"]
    except (TypeError, KeyError):  # not a fused function in this selectolax version
        return method


_insert_before = _text_specialisation(LexborNode.insert_before)
_insert_after = _text_specialisation(LexborNode.insert_after)
_replace_with = _text_specialisation(LexborNode.replace_with)

_IDS = _tag_ids(_MARKED)
_A = _IDS["a"]
_MARKED_IDS = frozenset(_IDS.values())
_LINK_IDS = frozenset((_A, _IDS["area"]))
_IMG = _IDS["img"]
_AREA = _IDS["area"]
# The region marker each tag gets before / after it (None: none). One map over the marked
# elements picks them; the markers' order never depends on the order of insertion, since each
# goes right before or right after its own element and no element gets two on one side.
_MARKER_BEFORE = {_IDS[name]: marker for name, marker in _BEFORE.items()}.get
_MARKER_AFTER = {_IDS[name]: marker for name, marker in _AFTER.items()}.get
_TAG_ID = attrgetter("tag_id")
_ABSENT = False  # what attrs.get gives for an attribute the element does not have (a bare one gives None)


def _attribute(name: str):
    """``nodes -> [node.attrs.get(name, _ABSENT) for node in nodes]`` by two C-level maps
    (cheaper than building each node's attribute dict, or a Python step per node)."""
    get = methodcaller("get", name, _ABSENT)
    attrs = attrgetter("attrs")

    def of(nodes):
        return list(map(get, map(attrs, nodes)))
    return of


_HREFS = _attribute("href")
_ALTS = _attribute("alt")


def _marked_text_python(body, base: str, skipped: Counter[str], depth: int = PAGE_LIMITS.depth,
                        drop_marker_characters: bool = False) -> tuple[list[str], str, int]:
    """The kept links' targets in document order, the body's text with the markers, and the
    number of markers inserted: the tree is marked (:func:`_mark`), then its text read. Raises
    PageOverBudget when what is read nests deeper than ``depth`` below the document."""
    for node in body.css(_REMOVED):  # only the body's text is read
        node.decompose()
    _too_deep(_depth_python(body), depth)
    if drop_marker_characters:
        dirty = [node for node in body.traverse(include_text=True)
                 if node.is_text_node and _NONCHARACTERS.search(node.text_content or "")]
        for node in dirty:  # replaced after the walk: the walk must not see a changing tree
            _replace_with(node, _NONCHARACTERS.sub(" ", node.text_content))
        for node in body.css("img[alt], area[alt]"):
            if _NONCHARACTERS.search(node.attributes.get("alt") or ""):
                node.attrs["alt"] = _NONCHARACTERS.sub(" ", node.attributes["alt"])
    targets, inserted = _mark(body, base, skipped)
    return targets, body.text(separator=" "), inserted


def _depth_python(body) -> int:
    """How deep the elements of ``body`` nest below it (1: its children only; 0: none)."""
    levels = {body.mem_id: 0}
    deepest = 0
    for node in body.traverse():  # elements in document order, each after its parent
        parent = node.parent
        if parent is not None and parent.mem_id in levels and node.mem_id not in levels:
            level = levels[node.mem_id] = levels[parent.mem_id] + 1
            deepest = max(deepest, level)
    return deepest


def _kept_links(hrefs: list, base: str, skipped: Counter[str]) -> tuple[list[str], list[bool]]:
    """The normalised targets of the links that are kept, and which are; the others counted."""
    found = normalize_links(hrefs, base)
    kept = list(map(is_not, found, repeat(None)))
    targets = list(compress(found, kept))
    if len(targets) < len(found):
        for href in compress(hrefs, map(not_, kept)):
            if href is not _ABSENT:
                _count_skipped(href, skipped)
    return targets, kept


def _mark(body, base: str, skipped: Counter[str]) -> tuple[list[str], int]:
    """Insert the markers and replace images by their alt text.

    Returns the kept links' targets in document order and the number of markers inserted.
    """
    nodes = list(body.traverse())  # elements in document order
    tags = list(map(_TAG_ID, nodes))
    marked = list(map(_MARKED_IDS.__contains__, tags))
    nodes = list(compress(nodes, marked))
    tags = list(compress(tags, marked))
    targets: list[str] = []
    is_link = list(map(_LINK_IDS.__contains__, tags))
    links = list(compress(nodes, is_link))
    if links:
        hrefs = _HREFS(links)  # _ABSENT for <a name=...>, not a link; None for a bare <a href>
        targets, kept = _kept_links(hrefs, base, skipped)
        link_tags = list(compress(tags, is_link))
        if _AREA in link_tags:  # image-map links: the alt text is the anchor text
            areas = [_AREA == tag for tag in link_tags]
            kept_areas = list(compress(links, map(and_, kept, areas)))
            for node, alt in zip(kept_areas, _ALTS(kept_areas)):
                _insert_after(node, f"{_START} {alt or ''} {_END}")
            kept = list(map(and_, kept, map(not_, areas)))
        anchors = list(compress(links, kept))
        deque(map(_insert_before, anchors, repeat(_START)), maxlen=0)
        deque(map(_insert_after, anchors, repeat(_END)), maxlen=0)
    images = list(compress(nodes, map(_IMG.__eq__, tags)))
    if images:
        alts = _ALTS(images)
        has_alt = list(map(is_not, alts, repeat(_ABSENT)))
        texts = [alt or "" for alt in compress(alts, has_alt)]  # a bare alt is empty text
        deque(map(_replace_with, compress(images, has_alt), texts), maxlen=0)
    before = list(map(_MARKER_BEFORE, tags))
    after = list(map(_MARKER_AFTER, tags))
    deque(map(_insert_before, compress(nodes, before), filter(None, before)), maxlen=0)
    deque(map(_insert_after, compress(nodes, after), filter(None, after)), maxlen=0)
    inserted = 2 * len(targets) + len(before) - before.count(None) + len(after) - after.count(None)
    return targets, inserted


def _walk_classes() -> bytes | None:
    """The class byte of every tag id below 256 for simcore/_walk.c: DROPPED 1, LINK 2, AREA 4,
    IMAGE 8, the region marker before the element in bits 4–5 and after it in bits 6–7 (1
    SYNTACTIC, 2 TOPICAL, 3 break). None when one of these tags has an id of 256 or more."""
    codes = {_SYNTACTIC: 1, _TOPICAL: 2, _BREAK: 3}
    removed = _tag_ids(_REMOVED.split(", "))
    if max([*removed.values(), *_IDS.values()]) >= 256:
        return None
    classes = bytearray(256)
    for tag in removed.values():
        classes[tag] |= 1
    for tag in _LINK_IDS:
        classes[tag] |= 2
    classes[_AREA] |= 4
    classes[_IMG] |= 8
    for name, marker in _BEFORE.items():
        classes[_IDS[name]] |= codes[marker] << 4
    for name, marker in _AFTER.items():
        classes[_IDS[name]] |= codes[marker] << 6
    return bytes(classes)


def _marked_text_c(body, base: str, skipped: Counter[str], depth: int = PAGE_LIMITS.depth
                   ) -> tuple[list[str], str, int]:
    """:func:`_marked_text_python` in two walks of C over the tree (simcore/_walk.c), which is
    left as it is: one reads the links' hrefs and measures the depth, and once they are
    normalised, the other writes the text the marked tree would give."""
    address = body.mem_id
    hrefs, levels = _walk.links(address, _WALK_CLASSES)
    _too_deep(levels, depth)
    targets, kept = _kept_links(hrefs, base, skipped)
    text, inserted = _walk.text(address, _WALK_CLASSES, bytes(kept), _TEXT_TAG)
    return targets, text, inserted


# A page with every kind of element the walk treats, for the check that binding it works (and a
# <selectedcontent>, which the parse would fill were the document's options lost, and a table in
# a paragraph, which ends it in a standards-mode page only: given with a doctype and without).
_PROBE = (
    "<html><head><title>t <b>i</title><link rel='Canonical x' href=c.html><link rel=stylesheet><link href rel>"
    "</head><body><p>One. <a href=a.html>two <b>three</b></a><br>"
    "<img alt='four'><img src=x><script>no</script><ul><li>five<li><a href='mailto:x'>six</a>"
    "<li><a name=n>seven</a></ul><map><area href=b.html alt=eight><area href=c.html></map>"
    "<table><tr><td>nine<td><h2>ten</h2></table><svg><title>no</title><a href=d.html>x</a></svg>"
    "<noscript>no</noscript><dl><dt>eleven<dd>twelve</dl>"
    "<select><selectedcontent></selectedcontent><option>thirteen</select><p>fourteen<table><td>fifteen</table>"
    "</body></html>"
)


def _bind_walk() -> bool:
    """Whether the C walk is bound to the selectolax in use and marks the probe page, and reads
    its head, as the Python path does (when not, the Python path is used)."""
    if _walk is None or _WALK_CLASSES is None or not _walk.bind(selectolax_lexbor.__file__):
        return False
    # Each way of parsing and each way of marking (the Python path marks the tree it is given).
    ways = ((_tree_python, _marked_text_python, _head_python), (_tree_python, _marked_text_c, _head_c),
            (_tree_c, _marked_text_c, _head_c))
    try:
        for probe in (_PROBE, "<!doctype html>" + _PROBE, "<!DOCTYPE html PUBLIC '-//W3C//DTD HTML 4.01//EN'>" + _PROBE):
            made = [marked(tree(probe, PAGE_LIMITS).body, "http://x.test/", Counter()) for tree, marked, _ in ways]
            heads = [head(tree(probe, PAGE_LIMITS).head) for tree, _, head in ways]
            if not made[0] == made[1] == made[2] or not heads[0] == heads[1] == heads[2]:
                return False
    except (ValueError, RuntimeError, AttributeError, TypeError):
        return False
    return True


def _count_skipped(href: str | None, skipped: Counter[str]) -> None:
    scheme = _SCHEME.match(href or "")
    if scheme is not None and scheme.group(1).lower() not in ("http", "https"):
        skipped[LINK_NOT_HTTP] += 1
    else:
        skipped[LINK_UNPARSEABLE] += 1


def _spans(kinds: np.ndarray, at: np.ndarray) -> tuple[range | list[int], np.ndarray, np.ndarray]:
    """Link index, first word and end word of every link, from its start and end markers in order."""
    n = len(kinds) // 2
    opening, closing = kinds[0::2], kinds[1::2]
    if len(kinds) == 2 * n and (opening == _START_CODE).all() and (closing == _END_CODE).all():
        return range(n), at[0::2], at[1::2]  # the usual case: links do not nest
    # an <a> inside an SVG <a>: the outer link ends where the inner one starts
    links, starts, ends = [], [], []
    k = -1
    open_at = -1
    for kind, position in zip(kinds.tolist(), at.tolist()):
        if kind == _START_CODE:
            k += 1
            if open_at >= 0:
                links.append(k - 1), starts.append(open_at), ends.append(position)
            open_at = position
        elif open_at >= 0:
            links.append(k), starts.append(open_at), ends.append(position)
            open_at = -1
    return links, np.array(starts, np.int64), np.array(ends, np.int64)


def _anchors(words: list[str], spans, targets: list[str], syntactic: np.ndarray,
             topical: np.ndarray) -> Anchors:
    """Anchors as word offsets, contexts of CONTEXT_NONSTOP never-stop words each side, region
    lengths: :func:`_anchors_numpy` in one pass of C (simcore/_scan.c) where it is built. A page's
    few hundred links made the numpy version's forty calls cost more than their work."""
    if _c_windows is None:
        return _anchors_numpy(words, spans, targets, syntactic, topical)
    links, first, last = spans
    int64 = np.int64
    return Anchors(tuple(map(targets.__getitem__, links)), *_int32_columns(_c_windows(
        never_stop_flags(words), np.ascontiguousarray(first, int64), np.ascontiguousarray(last, int64),
        np.ascontiguousarray(syntactic, int64), np.ascontiguousarray(topical, int64), CONTEXT_NONSTOP)))


def _int32_columns(block: bytes) -> list[array]:
    """The eight int32 columns the C windows give in one block, each an array('i'): a page's
    links cost no Python int each, and the ingest writes the columns' bytes as they are."""
    values = array("i", block)
    n = len(values) // 8
    return [values[k * n:(k + 1) * n] for k in range(8)]


def _anchors_numpy(words: list[str], spans, targets: list[str], syntactic: np.ndarray,
                   topical: np.ndarray) -> Anchors:
    """:func:`_anchors` with numpy: every step one operation over all the page's links, not a
    Python loop; no word is copied. The reference for the C version."""
    links, first, last = spans
    n = len(words)
    # nonstop[i] = words in words[:i] that are no stopword under any variant; a context side
    # ends at the word that brings its count to CONTEXT_NONSTOP, or at the page edge.
    nonstop = np.zeros(n + 1, np.int64)
    np.cumsum(np.frombuffer(never_stop_flags(words), np.uint8), dtype=np.int64, out=nonstop[1:])
    left_edges = np.maximum(nonstop.searchsorted(nonstop[first] - CONTEXT_NONSTOP, "right") - 1, 0)
    right_edges = np.minimum(nonstop.searchsorted(nonstop[last] + CONTEXT_NONSTOP, "left"), n)
    return Anchors(
        tuple(map(targets.__getitem__, links)),
        tuple(first.tolist()),
        tuple(last.tolist()),
        tuple(left_edges.tolist()),
        tuple(right_edges.tolist()),
        _left_lengths(syntactic, first, left_edges),
        _right_lengths(syntactic, last, right_edges),
        _left_lengths(topical, first, left_edges),
        _right_lengths(topical, last, right_edges),
    )


def _left_lengths(cuts: np.ndarray, starts: np.ndarray, edges: np.ndarray) -> tuple[int, ...]:
    """Context words from the nearest cut-off at or before each start (0, the page edge, if none)."""
    region_starts = np.concatenate(([0], cuts))[cuts.searchsorted(starts, "right")]
    return tuple((starts - np.maximum(region_starts, edges)).tolist())


def _right_lengths(cuts: np.ndarray, ends: np.ndarray, edges: np.ndarray) -> tuple[int, ...]:
    """Context words up to the nearest cut-off at or after each end (the context's end if none)."""
    region_ends = np.concatenate((cuts, [1 << 62]))[cuts.searchsorted(ends, "left")]
    return tuple((np.minimum(region_ends, edges) - ends).tolist())


_WALK_CLASSES = _walk_classes()
_TEXT_TAG = LexborHTMLParser("<p>x</p>").css_first("p").child.tag_id
_TITLE_TAG, _LINK_TAG = _tag_ids(("title", "link")).values()


class Walk(NamedTuple):
    """One way of reading a page (:func:`parse_page`): its tree, its head, and its text marked
    with its links; every way gives the same page."""

    tree: Callable[[str | bytes, PageLimits], LexborHTMLParser]
    head: Callable[[LexborNode], tuple[str | None, list[tuple[str, str]]]]
    marked_text: Callable[..., tuple]


PYTHON_WALK = Walk(_tree_python, _head_python, _marked_text_python)
C_WALK = Walk(_tree_c, _head_c, _marked_text_c)
#: The way parse_page reads pages: in C where simcore/_walk.c is built and bound to the selectolax
#: in use (:func:`_bind_walk`), else in Python.
WALK = C_WALK if _bind_walk() else PYTHON_WALK
