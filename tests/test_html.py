"""parse_page: title, cleaned words, anchors, contexts and SYNTACTIC/TOPICAL regions (paper Section 3.1)."""
from __future__ import annotations

import re
from array import array
from collections import Counter
from dataclasses import dataclass
from unittest import mock

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from simweb.core import html
from simweb.core.html import CONTEXT_NONSTOP, LINK_NOT_HTTP, LINK_UNPARSEABLE, parse_page
from simweb.core.records import Anchor, Anchors, ParsedPage
from simweb.core.text import WORD_RE, clean_text, never_stop, never_stop_flags, tokenize

PAGE = "http://example.com/start.html"


@dataclass(frozen=True)
class Context:
    """An anchor with its words looked up in its page's words (an Anchor holds word offsets)."""

    target_url: str
    anchor_words: tuple[str, ...]
    left_words: tuple[str, ...]
    right_words: tuple[str, ...]
    syntactic_left: int
    syntactic_right: int
    topical_left: int
    topical_right: int


def contexts(page) -> tuple[Context, ...]:
    words = page.words
    return tuple(Context(a.target_url, a.anchor_words(words), a.left_words(words), a.right_words(words), *regions(a))
                 for a in page.anchors)


def anchor(page, target):
    (found,) = [a for a in contexts(page) if a.target_url == target]
    return found


def regions(a: Anchor | Context) -> tuple[int, int, int, int]:
    return a.syntactic_left, a.syntactic_right, a.topical_left, a.topical_right


def test_anchor_offsets_name_runs_of_the_page_words():
    page = parse_page("<p>one two <a href='/a'>three four</a> five six</p><p>seven</p>", PAGE)
    (a,) = page.anchors
    assert page.words == ("one", "two", "three", "four", "five", "six", "seven")
    assert (a.context_start, a.anchor_start, a.anchor_end, a.context_end) == (0, 2, 4, 7)
    assert a.anchor_words(page.words) == ("three", "four")
    assert a.left_words(page.words) == ("two", "one")  # nearest first
    assert a.right_words(page.words) == ("five", "six", "seven")
    assert regions(a) == (2, 2, 2, 3)


# --- cleaning (Section 3.1) ----------------------------------------------------------------------

def test_comments_scripts_styles_and_tags_are_removed_alt_text_kept():
    page = parse_page(
        """<!DOCTYPE html><html><head><title>  The   Title &amp; More </title>
        <style>body { color: red }</style><script>var inHead = 1;</script></head>
        <body><!-- a comment with words --><script type="text/javascript">var hidden = "nope";</script>
        <noscript>enable scripting</noscript><template><p>templated</p></template><style>.x{}</style>
        <iframe>framed</iframe>
        <p>Visible <b>bold</b> text, 42 times!</p><img src="a.png" alt="Alt Words"><img src="b.png">
        <p>caf&eacute; &lt;tag&gt; AT&amp;T na&#xEF;ve</p></body></html>""",
        PAGE,
    )
    assert page.title == "The Title & More"
    assert page.title_words == ("the", "title", "more")
    assert page.words == ("visible", "bold", "text", "times", "alt", "words", "café", "tag", "at", "t", "naïve")
    assert contexts(page) == ()


def test_block_elements_without_white_space_still_separate_words():
    page = parse_page("<ul><li>one</li><li>two</li></ul><div>three</div><div>four</div>", PAGE)
    assert page.words == ("one", "two", "three", "four")


def test_title_is_not_part_of_the_words_and_missing_title_is_empty():
    assert parse_page("<title>Only Title</title><p>body</p>", PAGE).words == ("body",)
    page = parse_page("<p>no title here</p>", PAGE)
    assert (page.title, page.title_words) == ("", ())


def test_empty_and_bodiless_pages():
    assert parse_page("", PAGE).words == ()
    frameset = parse_page("<html><head><title>Frames</title></head><frameset><frame src=a.html></frameset>", PAGE)
    assert (frameset.title_words, frameset.words, tuple(frameset.anchors)) == (("frames",), (), ())


# --- links -----------------------------------------------------------------------------------------

LINKS = """<html><head><base href="http://Base.org/dir/"></head><body>
<p>Go <a href="page.html#frag">to <b>the</b> <i>next</i> page</a> now.</p>
<a href="/abs?q=1&amp;r=2">abs</a>
<a href="https://Other.ORG:443/x/../y">other</a>
<a href="mailto:x@y.z">mail</a><a href="javascript:void(0)">js</a><a href="http://[bad">bad</a>
<a href=" JavaScript:alert(1)">js2</a><a href="http://exa mple.com/">space</a>
<a>no href</a><a href="">self</a><a href="#top">frag</a>
<a href="x.html"><img src="i.png" alt="Logo Image"></a>
<map name="m"><area href="/area" alt="Area Alt"><area nohref alt="ignored"></map>
</body></html>"""


def test_links_resolve_against_base_and_are_normalised():
    skipped: Counter[str] = Counter()
    page = parse_page(LINKS, PAGE, skipped)
    assert [(a.target_url, a.anchor_words) for a in contexts(page)] == [
        ("http://base.org/dir/page.html", ("to", "the", "next", "page")),
        ("http://base.org/abs?q=1&r=2", ("abs",)),
        ("https://other.org/y", ("other",)),
        ("http://base.org/dir/", ("self",)),  # an empty href is the base itself: kept
        ("http://base.org/dir/", ("frag",)),
        ("http://base.org/dir/x.html", ("logo", "image")),  # alt text of an image inside the anchor
        ("http://base.org/area", ("area", "alt")),  # an image-map link: its alt text
    ]
    assert skipped == {LINK_NOT_HTTP: 3, LINK_UNPARSEABLE: 2}
    assert page.words == (
        "go", "to", "the", "next", "page", "now", "abs", "other", "mail", "js", "bad", "js", "space",
        "no", "href", "self", "frag", "logo", "image", "area", "alt",
    )


def test_relative_links_without_base_resolve_against_the_page_and_self_links_are_kept():
    page = parse_page('<a href="../up.html">up</a><a href="start.html#x">me</a><a href="//cdn.org">cdn</a>',
                      "http://example.com/a/b/start.html")
    assert [a.target_url for a in contexts(page)] == [
        "http://example.com/a/up.html", "http://example.com/a/b/start.html", "http://cdn.org/",
    ]


def test_links_keep_document_order_across_element_kinds():
    page = parse_page('<a href=/1>one</a><map><area href=/m alt=M></map><p><a href=/a>A</a></p>'
                      '<img alt=I><area href=/n alt=N>', "http://h.com/")
    assert [(a.target_url, a.anchor_words, a.left_words) for a in contexts(page)] == [
        ("http://h.com/1", ("one",), ()),
        ("http://h.com/m", ("m",), ("one",)),
        ("http://h.com/a", ("a",), ("m", "one")),
        ("http://h.com/n", ("n",), ("i", "a", "m", "one")),
    ]


def test_unusable_base_href_falls_back_to_the_page_url():
    page = parse_page('<base href="mailto:x@y"><a href="p.html">p</a>', PAGE)
    assert contexts(page)[0].target_url == "http://example.com/p.html"


def test_a_base_element_is_found_whatever_the_case_of_its_tag_and_wherever_it_stands():
    page = parse_page('<p>x</p><BaSe HrEf="http://Other.org/d/"><a href="p.html">p</a>', PAGE)
    assert contexts(page)[0].target_url == "http://other.org/d/p.html"
    page = parse_page('<p>&lt;base href="http://other.org/"&gt;</p><a href="p.html">p</a>', PAGE)
    assert contexts(page)[0].target_url == "http://example.com/p.html"


@pytest.mark.parametrize("html", [
    '<p>x</p><BaSe HrEf="http://Other.org/d/"><a href="p.html">p</a>',
    "<title>Über Straße</title><p>naïve café 中文 <a href='/x'>résumé</a> end</p>",
    LINKS,
])
def test_a_page_given_as_its_utf8_bytes_parses_as_its_text(html):
    skipped_text, skipped_bytes = Counter(), Counter()
    assert parse_page(html.encode("utf-8"), PAGE, skipped_bytes) == parse_page(html, PAGE, skipped_text)
    assert skipped_bytes == skipped_text


def test_skipped_counter_is_optional():
    assert len(parse_page(LINKS, PAGE).anchors) == 7


# --- contexts and regions ----------------------------------------------------------------------------

REGIONS = """<body>
<h2>Fruit Sites</h2>
<ul>
<li><a href="/apple">Apple</a> crisp red fruit</li>
<li>Banana <a href="/banana">yellow</a> curved</li>
</ul>
<p>Cherries grow. Sweet ones<br>are <a href="/cherry">cherry</a> trees.<br>Sour kinds<br>more</p>
<table><tr><td>left cell</td><td>in <a href="/cell">cell</a> text</td></tr></table>
after table
</body>"""
# word positions: fruit0 sites1 | apple2 crisp3 red4 fruit5 | banana6 yellow7 curved8 | cherries9
# grow10 sweet11 ones12 are13 cherry14 trees15 | sour16 kinds17 more18 | left19 cell20 | in21 cell22
# text23 | after24 table25.  SYNTACTIC cut-offs: 0 (heading), 2 and 6 (list items), 9 (list end,
# paragraph start), 16 (<br> after "trees."; not the ones after "ones" or "kinds"), 19 (paragraph
# end, cell), 21 (cell), 24 (table end).  TOPICAL cut-offs: 0 (heading start), 9 (list end), 24 (table end).


def test_contexts_reach_the_page_edges_nearest_first():
    page = parse_page(REGIONS, PAGE)
    words = page.words
    assert len(words) == 26
    apple = anchor(page, "http://example.com/apple")
    assert apple.anchor_words == ("apple",)
    assert apple.left_words == ("sites", "fruit")
    assert apple.right_words == words[3:]
    cell = anchor(page, "http://example.com/cell")
    assert cell.left_words == tuple(reversed(words[:22]))
    assert cell.right_words == ("text", "after", "table")


@pytest.mark.parametrize(
    ("target", "expected"),
    [
        # (syntactic left, syntactic right, topical left, topical right)
        ("/apple", (0, 3, 2, 6)),
        ("/banana", (1, 1, 7, 1)),
        ("/cherry", (5, 1, 5, 9)),
        ("/cell", (1, 1, 13, 1)),
    ],
)
def test_syntactic_and_topical_regions(target, expected):
    assert regions(anchor(parse_page(REGIONS, PAGE), "http://example.com" + target)) == expected


@pytest.mark.parametrize(
    ("before_br", "syntactic_left"),
    [
        ('He said "stop."', 1),  # sentence end, closing quote: the <br> is a cut-off
        ("Really?", 1),
        ("Wow!)", 1),
        ("終わり。", 1),
        ("He said stop", 4),  # no sentence end: the <br> is not a cut-off
        ("e.g. this one", 5),
        ("U.S", 3),
    ],
)
def test_hard_break_is_a_cut_off_only_after_a_sentence_end(before_br, syntactic_left):
    page = parse_page(f"<p>{before_br}<br>next <a href='/x'>x</a></p>", PAGE)
    assert contexts(page)[0].syntactic_left == syntactic_left
    assert contexts(page)[0].topical_left == len(contexts(page)[0].left_words)


def test_sentence_end_inside_the_anchor_before_a_break():
    page = parse_page('<p>See <a href="/a">this.</a><br>More text</p>', PAGE)
    assert regions(contexts(page)[0]) == (1, 0, 1, 2)


def test_heading_starts_list_ends_and_table_ends_are_topical_list_starts_are_not():
    page = parse_page(
        '<p>intro <a href="/a">a</a> tail</p><h3>Head</h3> more'
        '<div>text <a href="/b">b</a><ul><li>item</li></ul> after</div>'
        '<table><tr><td>t <a href="/c">c</a></td></tr></table> end',
        PAGE,
    )
    a, b, c = contexts(page)
    assert (a.topical_left, a.topical_right) == (1, 1)  # the heading starts after "tail"
    assert (b.topical_left, b.topical_right) == (3, 1)  # "head more text" | "item" then the list ends
    assert (b.syntactic_left, b.syntactic_right) == (3, 0)  # the list item starts right after b
    assert (c.topical_left, c.topical_right) == (2, 0)  # "t after" (a table start is no cut-off) | table ends
    assert (c.syntactic_left, c.syntactic_right) == (1, 0)


def test_every_kind_of_cut_off():
    page = parse_page(
        "<dl><dt>term <a href='/dt'>dt</a></dt><dd>def</dd></dl>"
        "<table><tr><th>head <a href='/th'>th</a></th><td>cell</td></tr></table>"
        "<ol><li>one</li></ol><menu><li>m <a href='/m'>m</a></li></menu>x"
        "<h1>h</h1><h4>four</h4><h6>six <a href='/h6'>h6</a></h6>",
        PAGE,
    )
    assert [regions(a) for a in contexts(page)] == [
        (1, 0, 1, 1),  # dt: "term" | dd starts; the definition list ends after "def"
        (1, 0, 1, 1),  # th: "head" | td starts; table ends after "cell"
        (1, 0, 1, 0),  # menu item: the ordered list ends before "m" | the menu ends before "x"
        (1, 0, 1, 0),  # h6 starts a topical region
    ]


def test_empty_anchor_between_cells_is_bounded_on_both_sides():
    page = parse_page("<table><tr><td>x</td><td><a href='/e'><img src=i.png></a></td><td>y</td></tr></table>", PAGE)
    assert contexts(page)[0].anchor_words == ()
    assert regions(contexts(page)[0]) == (0, 0, 1, 1)


def test_context_stops_at_32_never_stop_words_and_stopwords_do_not_count():
    # "the" is a stopword under every variant; "news" only under STOPSTEM and STEM (its stem is
    # that of the stopword "new"): neither counts towards the 32 words.
    left = [f"kw{a}{b}" for a in "abcdefgh" for b in "abcde"][:40]
    right = [f"kv{a}{b}" for a in "abcdefgh" for b in "abcde"][:40]
    fillers = ["the", "news"] * 20
    left_text = " ".join(f"{w} {f}" for w, f in zip(left, fillers))
    right_text = " ".join(f"{w} {f}" for w, f in zip(right, fillers))
    page = parse_page(f"<p>{left_text} <a href='/x'>anchor</a> {right_text}</p>", PAGE)
    (a,) = contexts(page)
    assert CONTEXT_NONSTOP == 32
    # nearest first: "news" (after left[39]), left[39], ..., left[8]; stops at the 32nd counted word
    assert a.left_words[:3] == ("news", "kwhe", "the")
    assert len(a.left_words) == 64 and a.left_words[-1] == left[8]
    assert sum(map(never_stop, a.left_words)) == 32
    assert a.right_words[:3] == ("kvaa", "the", "kvab")
    assert len(a.right_words) == 63 and a.right_words[-1] == right[31]
    assert regions(a) == (64, 63, 64, 63)  # regions are capped at the stored context


def test_page_text_holding_the_marker_characters_is_cleaned():
    page = parse_page("<p>x \ufdd0 y \ufdd1\ufdd4</p><a href='/a'>z</a> w \ufdd2", PAGE)
    assert page.words == ("x", "y", "z", "w")
    assert [(a.target_url, a.anchor_words, a.left_words, a.right_words) for a in contexts(page)] == [
        ("http://example.com/a", ("z",), ("y", "x"), ("w",)),
    ]
    assert regions(contexts(page)[0]) == (0, 1, 2, 1)


def test_marker_characters_spelled_as_entities_or_in_alt_text_are_cleaned():
    page = parse_page("<p>x &#xFDD0; y</p><a href='/a'>z<img alt='q&#xfdd1;r'></a><area href='/b' alt='s&#xFDD3;'>", PAGE)
    assert page.words == ("x", "y", "z", "q", "r", "s")
    assert [(a.anchor_words, a.left_words, a.right_words) for a in contexts(page)] == [
        (("z", "q", "r"), ("y", "x"), ("s",)),
        (("s",), ("r", "q", "z", "y", "x"), ()),
    ]


def test_a_link_inside_an_svg_link_ends_the_outer_one():
    page = parse_page('<a href="/outer">x<svg><a href="/inner">y</a>z</svg>w</a>q', PAGE)
    assert page.words == ("x", "y", "z", "w", "q")
    assert [(a.target_url, a.anchor_words) for a in contexts(page)] == [
        ("http://example.com/outer", ("x",)),
        ("http://example.com/inner", ("y",)),
    ]


# --- a brute-force reference on generated pages (STYLE.md habit 12) -------------------------------

VOCABULARY = ["apple", "river", "stone", "the", "of", "news", "generalizations", "running", "page", "über", "日本"]


@dataclass
class Reference:
    words: list
    syntactic: list  # word positions of SYNTACTIC cut-offs
    topical: list
    links: list  # (target, start, end)
    sentence_end: bool = False

    def text(self, ws: list[str], end: str) -> str:
        self.words.extend(ws)
        self.sentence_end = end == "." or (self.sentence_end and not ws)
        return " ".join(ws) + end

    def cut(self, topical: bool = False) -> None:
        self.syntactic.append(len(self.words))
        if topical:
            self.topical.append(len(self.words))
        self.sentence_end = False


texts = st.tuples(st.lists(st.sampled_from(VOCABULARY), min_size=1, max_size=5), st.sampled_from(["", ".", ","]))


@st.composite
def inline(draw, reference: Reference, in_link: bool = False) -> str:
    kind = draw(st.sampled_from(["text", "text", "br", "img", "b"] + ([] if in_link else ["a", "a"])))
    if kind == "text":
        ws, end = draw(texts)
        return " " + reference.text(ws, end) + " "
    if kind == "br":
        if reference.sentence_end:
            reference.cut()
        reference.sentence_end = False
        return "<br>"
    if kind == "img":
        ws, _ = draw(texts)
        reference.sentence_end = False
        reference.words.extend(ws)
        return f'<img src="i.png" alt="{" ".join(ws)}">'
    if kind == "b":
        ws, end = draw(texts)
        return "<b>" + reference.text(ws, end) + "</b>"
    target = f"http://example.com/{draw(st.sampled_from(['a', 'b', 'c']))}"
    start = len(reference.words)
    reference.sentence_end = False
    content = "".join(draw(st.lists(inline(reference, in_link=True), max_size=3)))
    reference.links.append((target, start, len(reference.words)))
    return f'<a href="{target}">{content}</a>'


@st.composite
def block(draw, reference: Reference) -> str:
    kind = draw(st.sampled_from(["p", "ul", "table", "h2", "loose"]))
    inlines = lambda: "".join(draw(st.lists(inline(reference), min_size=1, max_size=4)))  # noqa: E731
    if kind == "loose":
        return inlines()
    if kind == "p":
        reference.cut()
        html = "<p>" + inlines() + "</p>"
        reference.cut()
        return html
    if kind == "h2":
        reference.cut(topical=True)
        return "<h2>" + inlines() + "</h2>"
    if kind == "ul":
        items = []
        for _ in range(draw(st.integers(1, 3))):
            reference.cut()
            items.append("<li>" + inlines() + "</li>")
        reference.cut(topical=True)
        return "<ul>" + "".join(items) + "</ul>"
    rows = []
    for _ in range(draw(st.integers(1, 2))):
        cells = []
        for _ in range(draw(st.integers(1, 2))):
            reference.cut()
            cells.append("<td>" + inlines() + "</td>")
        rows.append("<tr>" + "".join(cells) + "</tr>")
    reference.cut(topical=True)
    return "<table>" + "".join(rows) + "</table>"


@st.composite
def pages(draw):
    reference = Reference([], [], [], [])
    body = "".join(draw(st.lists(block(reference), min_size=1, max_size=6)))
    return f"<html><head><title>t</title></head><body>{body}</body></html>", reference


def brute_force_anchor(words: list[str], target: str, start: int, end: int, syntactic, topical) -> Anchor:
    left: list[str] = []
    counted = 0
    for i in range(start - 1, -1, -1):
        if counted == CONTEXT_NONSTOP:
            break
        left.append(words[i])
        counted += never_stop(words[i])
    right: list[str] = []
    counted = 0
    for i in range(end, len(words)):
        if counted == CONTEXT_NONSTOP:
            break
        right.append(words[i])
        counted += never_stop(words[i])

    def left_region(cuts):
        n = 0
        for i in range(start - 1, start - 1 - len(left), -1):
            if any(i < c <= start for c in cuts):
                break
            n += 1
        return n

    def right_region(cuts):
        n = 0
        for i in range(end, end + len(right)):
            if any(end <= c <= i for c in cuts):
                break
            n += 1
        return n

    return Anchor(target, start, end, start - len(left), end + len(right),
                  left_region(syntactic), right_region(syntactic), left_region(topical), right_region(topical))


SCANS = {"installed": html._scan_text, "python": html._scan_text_python}
ANCHORS = {"installed": html._anchors, "python": html._anchors_numpy}


@pytest.mark.parametrize("scan", SCANS)
@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pages())
def test_parse_page_equals_a_brute_force_reference(scan, page_and_reference):
    source, reference = page_and_reference
    with mock.patch.object(html, "_scan_text", SCANS[scan]), mock.patch.object(html, "_anchors", ANCHORS[scan]), \
            mock.patch.object(html, "_c_anchors", html._c_anchors if scan == "installed" else None):
        page = parse_page(source, PAGE)
    assert list(page.words) == reference.words
    expected = tuple(
        brute_force_anchor(reference.words, target, start, end, reference.syntactic, reference.topical)
        for target, start, end in reference.links
    )
    assert tuple(page.anchors) == expected


# --- the word and marker scan: in C (simcore/_scan.c) as in Python ---------------------------------

needs_c_scan = pytest.mark.skipif(html._c_scan is None, reason="simweb.core._scan was not built (no C compiler at install)")
# Text the way parse_page makes it: every marker a text node of its own, spaces around it.
scan_pieces = st.sampled_from([
    "apple", "über", "日本", "x\u0301", "\u0301", "ǅ", "𝒜", "😀", "42", "a1b", "_", "-", ".", "!", "?", "\u2026",
    "\u3002", "\uff01", '"', "'", ")", "]", "}", "\u201d", "\u2019", "\u00bb", "(", " ", "  ", "\t", "\n",
    "\u00a0", "\u3000", " \ufdd0 ", " \ufdd1 ", " \ufdd2 ", " \ufdd3 ", " \ufdd4 ",
])


def scans(text: str):
    c_words, c_kinds, c_before, c_markers = html._scan_text(text)
    words, kinds, before, markers = html._scan_text_python(text)
    return (c_words, c_kinds.tolist(), c_before.tolist(), c_markers), (words, kinds.tolist(), before.tolist(), markers)


@needs_c_scan
@settings(max_examples=600, deadline=None)
@given(st.lists(scan_pieces, max_size=40).map("".join))
def test_the_scan_in_c_equals_the_scan_in_python(text):
    in_c, in_python = scans(clean_text(text))
    assert in_c == in_python


@needs_c_scan
@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.characters(codec="utf-8"), max_size=60))
def test_the_scans_count_the_same_markers_in_any_text(text):
    # A page whose own text holds marker characters is told by this count and parsed again
    # without them; text without them scans the same in C and in Python.
    in_c, in_python = scans(clean_text(text))
    assert in_c[3] == in_python[3]
    if in_c[3] == 0:
        assert in_c == in_python


@needs_c_scan
def test_the_c_scans_character_classes_are_those_of_the_patterns():
    classes = html._SCAN_CLASSES
    closing = re.compile(f"[\\s{re.escape(html._CLOSERS)}]")
    for point in range(0x10000):
        c, cls = chr(point), classes[point]
        kind = cls & 7
        assert (kind == 1) == bool(WORD_RE.fullmatch(c)), hex(point)  # starts a word
        assert (kind in (1, 2)) == bool(WORD_RE.fullmatch("a" + c)), hex(point)  # goes on with one
        assert (kind >= 3) == (c in html._ALL_MARKERS), hex(point)
        assert kind < 3 or html._ALL_MARKERS[kind - 3] == c, hex(point)
        assert bool(cls & 8) == (c in html._SENTENCE_ENDS), hex(point)
        assert bool(cls & 16) == bool(closing.fullmatch(c)), hex(point)


# --- the anchors' windows: in C (simcore/_scan.c) as with numpy -------------------------------------

needs_c_windows = pytest.mark.skipif(html._c_windows is None, reason="simweb.core._scan was not built")


@st.composite
def link_spans(draw):
    """A page's words (never-stop or not), its links' spans — in document order, or nested
    as an SVG link makes them (a start before the last one) — and its cut-offs."""
    n = draw(st.integers(0, 120))
    words = draw(st.lists(st.sampled_from(["apple", "the", "of", "über", "running", "a"]), min_size=n, max_size=n))
    offsets = st.integers(0, n)
    spans = draw(st.lists(st.tuples(offsets, offsets).map(sorted), max_size=30))
    if draw(st.booleans()):
        spans.sort()
    first = np.array([a for a, _ in spans], np.int64)
    last = np.array([b for _, b in spans], np.int64)
    syntactic = np.array(sorted(draw(st.lists(offsets, max_size=20))), np.int64)
    topical = np.array(sorted(draw(st.lists(offsets, max_size=10))), np.int64)
    return words, (range(len(spans)), first, last), [f"http://h.com/{i}" for i in range(len(spans))], syntactic, topical


@needs_c_windows
@settings(max_examples=800, deadline=None)
@given(link_spans())
def test_the_anchors_windows_in_c_equal_those_numpy_computes(case):
    # Strided spans (every other marker, as _spans returns them) and repeated cut-offs too.
    words, (links, first, last), targets, syntactic, topical = case
    in_c = html._anchors(words, (links, first, last), targets, syntactic, topical)
    assert in_c == html._anchors_numpy(words, (links, first, last), targets, syntactic, topical)
    strided = np.repeat(first, 2)[::2], np.repeat(last, 2)[::2]
    assert html._anchors(words, (links, *strided), targets, syntactic, topical) == in_c
    assert all(type(v) is int for column in in_c.columns()[1:] for v in column)


@st.composite
def scanned_markers(draw):
    """A page's words and the markers a scan finds in it: kinds (link start and end, SYNTACTIC,
    TOPICAL) in text order, usually links that alternate start and end, sometimes any order
    (nested links, a start left open), with the words ahead of each."""
    n = draw(st.integers(0, 80))
    words = draw(st.lists(st.sampled_from(["apple", "the", "of", "über", "running", "a"]), min_size=n, max_size=n))
    if draw(st.booleans()):
        kinds = draw(st.lists(st.sampled_from([0, 1, 2, 3]), max_size=40))
    else:
        kinds = []
        for k in draw(st.lists(st.sampled_from(["link", 2, 3]), max_size=30)):
            kinds += [0, *draw(st.lists(st.sampled_from([2, 3]), max_size=2)), 1] if k == "link" else [k]
    before = sorted(draw(st.lists(st.integers(0, n), min_size=len(kinds), max_size=len(kinds))))
    targets = [f"http://h.com/{i}" for i in range(kinds.count(0))]
    return words, np.array(kinds, np.int8), np.array(before, np.int64), targets


@needs_c_windows
@settings(max_examples=800, deadline=None)
@given(scanned_markers())
def test_the_anchors_from_markers_in_one_call_of_c_equal_the_general_path(case):
    words, kinds, before, targets = case
    try:
        expected = html._anchors_numpy(words, html._spans(kinds[kinds <= 1], before[kinds <= 1]), targets,
                                       before[kinds >= 2], before[kinds == 3])
    except (IndexError, ValueError) as exc:  # markers no page gives (an end before any start)
        expected = type(exc)
    try:
        found = html._anchors_of(words, kinds, before, targets)
    except (IndexError, ValueError) as exc:
        found = type(exc)
    assert found == expected
    simple = len(kinds[kinds <= 1]) % 2 == 0 and (kinds[kinds <= 1] == np.resize([0, 1], (kinds <= 1).sum())).all()
    assert (html._c_anchors(never_stop_flags(words), kinds, before, 32) is None) == (not simple)


@needs_c_windows
def test_the_anchors_windows_refuse_what_is_not_a_page_of_links():
    flags, one, none = b"\x01\x00\x01", np.array([1], np.int64), np.array([], np.int64)
    with pytest.raises(ValueError, match="outside the page"):
        html._c_windows(flags, np.array([4], np.int64), np.array([4], np.int64), none, none, 32)
    with pytest.raises(ValueError, match="outside the page"):
        html._c_windows(flags, np.array([-1], np.int64), one, none, none, 32)
    with pytest.raises(ValueError, match="one value per link"):
        html._c_windows(flags, one, none, none, none, 32)
    with pytest.raises(ValueError, match="int64"):
        html._c_windows(flags, b"\x00" * 7, b"\x00" * 7, none, none, 32)
    assert html._c_windows(flags, none, none, none, none, 32) == b""
    assert html._int32_columns(html._c_windows(flags, one, one, none, none, 32)) == [array("i", [v]) for v in (1, 1, 0, 3, 1, 2, 1, 2)]
    with pytest.raises(ValueError, match="one native int64 per marker"):
        html._c_anchors(flags, b"\x00\x01", one, 32)
    assert html._c_anchors(flags, b"", b"", 32) == b""


# --- robustness ----------------------------------------------------------------------------------------

@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=400), st.sampled_from(["utf-8", "latin-1", "utf-16-le"]))
def test_parse_page_never_raises_on_random_bytes(raw, encoding):
    page = parse_page(raw.decode(encoding, "replace"), PAGE)
    for a in contexts(page):
        assert 0 <= a.syntactic_left <= a.topical_left <= len(a.left_words)
        assert 0 <= a.syntactic_right <= a.topical_right <= len(a.right_words)


tag_soup = st.lists(
    st.sampled_from(["<a href='/x'>", "</a>", "<a href=mailto:q>", "<p>", "</p>", "<li>", "<ul>", "</ul>",
                     "<table>", "<td>", "<h1>", "<br>", "<img alt='pic'>", "<!--", "-->", "<script>", "</script>",
                     "<svg>", "</svg>", "<area href=/m alt=map>", "word", " the ", "End. ", "&amp;", "\ufdd0",
                     "\ufdd4", "<base href='/b/'>", "<title>", "</title>", "<", ">", "\"", "x\u0301", "😀"]),
    max_size=40,
).map("".join)


@settings(max_examples=400, deadline=None)
@given(tag_soup)
def test_parse_page_invariants_on_tag_soup(html):
    page = parse_page(html, PAGE)
    words = page.words
    assert all(tokenize(w) == [w] for w in words)
    for a in contexts(page):
        assert 0 <= a.syntactic_left <= a.topical_left <= len(a.left_words)
        assert 0 <= a.syntactic_right <= a.topical_right <= len(a.right_words)
        span = (*reversed(a.left_words), *a.anchor_words, *a.right_words)
        assert any(words[i : i + len(span)] == span for i in range(len(words) - len(span) + 1)) or not span
        for side in (a.left_words, a.right_words):
            assert sum(map(never_stop, side)) <= CONTEXT_NONSTOP
            assert not side or sum(map(never_stop, side)) < CONTEXT_NONSTOP or never_stop(side[-1])


# --- real pages ----------------------------------------------------------------------------------------

def real_pages(warc_dir):
    from warcio.archiveiterator import ArchiveIterator

    for name in ("warcfile.warc.gz", "clueweb-quirk.warc.gz"):
        with open(warc_dir / name, "rb") as f:
            for record in ArchiveIterator(f):
                if record.rec_type != "response" or record.http_headers is None:
                    continue
                if "html" not in (record.http_headers.get_header("Content-Type") or "").lower():
                    continue
                body = record.content_stream().read()
                yield record.rec_headers.get_header("WARC-Target-URI"), body.decode("utf-8", "replace")


def test_real_pages_from_the_shared_warc_files(warc_dir):
    from selectolax.lexbor import LexborHTMLParser

    from simweb.core.urls import normalize_url

    n_pages = 0
    for url, markup in real_pages(warc_dir):
        skipped: Counter[str] = Counter()
        page = parse_page(markup, normalize_url(url), skipped)
        n_pages += 1
        # every <a href> / <area href> is either kept or counted as skipped
        tree = LexborHTMLParser(markup)
        for node in tree.css("script, style, noscript, template, title, iframe, noembed, noframes"):
            node.decompose()
        assert len(contexts(page)) + sum(skipped.values()) == len(tree.body.css("a[href], area[href]"))
        assert page.words and all(tokenize(w) == [w] for w in page.words[:200])
        for a in contexts(page):
            assert 0 <= a.syntactic_left <= a.topical_left <= len(a.left_words)
            assert 0 <= a.syntactic_right <= a.topical_right <= len(a.right_words)
    assert n_pages == 45


def test_entities_in_text_are_decoded():
    assert parse_page("<p>r&eacute;sum&eacute; &#x4E2D;&#25991;</p>", PAGE).words == ("résumé", "中文")


def test_the_page_is_read_as_written_not_as_a_live_document_would_mirror_it():
    # A browser's <selectedcontent> mirrors the selected option; the words of the page as
    # written hold the option's text once.
    page = parse_page("<select><selectedcontent></selectedcontent><option>only once</option></select>", PAGE)
    assert page.words == ("only", "once")


def test_anchors_are_columns_that_read_as_records():
    page = parse_page("<p>a <a href='/x'>b</a> c <a href='/y'>d e</a></p>", PAGE)
    anchors = page.anchors
    assert len(anchors) == 2 and anchors.target_url == ("http://example.com/x", "http://example.com/y")
    assert anchors[1] == Anchor("http://example.com/y", 3, 5, 0, 5, 3, 0, 3, 0)
    assert tuple(anchors) == (anchors[0], anchors[1]) and anchors[:1] == (anchors[0],)
    assert Anchors.of(anchors) == anchors
    rebuilt = ParsedPage(page.url, page.title, page.title_words, page.words, tuple(anchors))
    assert rebuilt == page and isinstance(rebuilt.anchors, Anchors)
    with pytest.raises(ValueError, match="expected columns of one length"):
        Anchors(("http://example.com/x",), (0,))


def test_only_elements_with_the_attribute_count_as_links_and_alt_images():
    skipped: Counter[str] = Counter()
    page = parse_page("<p>x <a name=top>named</a> <a href>bare</a> <A HREF='/up'>Up</A> <img alt>i<img src=q>j"
                      "<img alt='pic'> <area alt=z></p>", PAGE, skipped)
    assert page.words == ("x", "named", "bare", "up", "i", "j", "pic")
    assert [(a.target_url, a.anchor_words) for a in contexts(page)] == [("http://example.com/up", ("up",))]
    assert skipped == Counter({LINK_UNPARSEABLE: 1})  # the bare href; <a name> is no link at all


@pytest.mark.parametrize("markup, expected", [
    ('<meta http-equiv="refresh" content="0; url=http://b.example/new.html">', ("http://b.example/new.html",)),
    ("<META HTTP-EQUIV=\"Refresh\" CONTENT=\"0;URL='../new/'\">", ("http://a.example/new/",)),
    ('<base href="http://c.example/base/"><meta http-equiv="refresh" content="0.5; URL = next.html">',
     ("http://c.example/base/next.html",)),  # resolved against the base; the delay's fraction ignored
    ('<meta http-equiv="refresh" content="0,javascript:go()">', (None,)),
    ('<meta http-equiv="refresh" content="5; url=/later">', ()),  # after a delay: a page of its own
    ('<meta http-equiv="refresh" content="0">', ()),  # reloads itself
    ('<meta http-equiv="refresh" content="7; url=/a"><meta http-equiv="refresh" content="0; url=/b">', ()),  # the first
    ('<meta http-equiv="content-type" content="text/html; charset=utf-8">', ()),
    ("", ()),
])
def test_an_instant_refresh_gives_its_target(markup, expected):
    html = f"<html><head>{markup}</head><body>text</body></html>"
    assert parse_page(html, "http://a.example/dir/page.html").refresh == expected
    assert parse_page(html.encode(), "http://a.example/dir/page.html").refresh == expected  # as the ingest gives it


def test_canonical_links_of_the_head_resolve_against_the_base():
    html = ('<html><head><base href="http://h/docs/"><LINK REL="Canonical" href="page.html#x">'
            '<link rel="alternate canonical" href="mailto:a@h"><link rel="stylesheet" href="s.css"></head>'
            '<body><link rel="canonical" href="/ignored">text</body></html>')
    assert parse_page(html, "http://h/docs/page.html?utm=1").canonical == ("http://h/docs/page.html", None)
    assert parse_page("<html><body>x</body></html>", "http://h/").canonical == ()


# --- the marking walk: in C over Lexbor's tree (simcore/_walk.c) as with selectolax calls ----------------

needs_c_walk = pytest.mark.skipif(html._walk is None, reason="simweb.core._walk was not built (no C compiler at install)")
walk_soup = st.lists(
    st.sampled_from(["<a href='/x'>", "<a href=''>", "<a href>", "<A HREF='/Y'>", "<a name=n>", "</a>",
                     "<a href=mailto:q>", "<a href='http://[bad'>", "<a xlink:href='/z'>", "<p>", "</p>", "<li>",
                     "<ul>", "</ul>", "<ol>", "<dl><dt>", "<dd>", "</dl>", "<menu>", "</menu>", "<table>", "<td>",
                     "<th>", "</table>", "<h1>", "<h6>", "</h6>", "<br>", "<img alt='pic'>", "<img alt>",
                     "<img src=i>", "<map><area href=/m alt=map>", "<area href=/n>", "<area alt=o>", "<!--", "-->",
                     "<script>", "</script>", "<style>", "</style>", "<noscript>", "</noscript>", "<template>",
                     "</template>", "<iframe>", "</iframe>", "<svg>", "</svg>", "<svg><title>", "<math>", "</math>",
                     "<my-widget>", "</my-widget>", "<selectedcontent>", "<select><option>", "<frameset>",
                     "word", " the ", "End. ", "!", "\u201d", "&amp;", "&lt;a&gt;", "<base href='/b/'>", "<title>",
                     "</title>", "<", ">", "\"", "x\u0301", "😀", "日本", "<b>", "</b>", "<div>", "</div>", "<body>",
                     "<head>", "</head>", "<link rel=canonical href=c.html>", "<LINK REL='a Canonical' HREF>",
                     "<link href=x rel>", "<template>", "<svg>", "</svg>"]),
    max_size=50,
).map("".join)


def both_walks(source: str, url: str = PAGE):
    """What the C parse and walk and the Python path make of one page (each on a tree of its
    own: the Python path changes the tree it marks)."""
    made = []
    for parse, walk, head in ((html._tree_c, html._marked_text_c, html._head_c),
                              (html._tree_python, html._marked_text_python, html._head_python)):
        tree = parse(source, html.PAGE_LIMITS)
        read_head = head(tree.head) if tree.head is not None else None
        skipped: Counter[str] = Counter()
        made.append((*walk(tree.body, url, skipped), skipped, read_head) if tree.body is not None else read_head)
    return made


@needs_c_walk
def test_the_c_walk_is_bound_to_the_installed_selectolax():
    assert html.WALK is html.C_WALK


@needs_c_walk
@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(walk_soup)
def test_the_walk_in_c_marks_a_page_as_the_python_path(source):
    in_c, in_python = both_walks(source)
    assert in_c == in_python


@needs_c_walk
@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pages())
def test_the_walk_in_c_marks_generated_pages_as_the_python_path(page_and_reference):
    in_c, in_python = both_walks(page_and_reference[0])
    assert in_c == in_python


@needs_c_walk
def test_the_walk_in_c_marks_real_pages_as_the_python_path(warc_dir):
    from simweb.core.urls import normalize_url

    n_pages = n_links = 0
    for url, source in real_pages(warc_dir):
        in_c, in_python = both_walks(source, normalize_url(url))
        assert in_c == in_python
        n_pages, n_links = n_pages + 1, n_links + len(in_c[0])
    assert n_pages == 45 and n_links > 1000


@needs_c_walk
def test_the_c_walk_refuses_a_kept_mask_of_the_wrong_length():
    from selectolax.lexbor import LexborHTMLParser

    body = LexborHTMLParser("<p><a href=/a>a</a> <a href=/b>b</a></p>").body
    assert html._walk.links(body.mem_id, html._WALK_CLASSES) == (["/a", "/b"], 2)
    for kept in (b"\x01", b"\x01\x01\x01"):
        with pytest.raises(ValueError, match="kept"):
            html._walk.text(body.mem_id, html._WALK_CLASSES, kept, html._TEXT_TAG)
    with pytest.raises(ValueError, match="256"):
        html._walk.links(body.mem_id, b"\x00")


def test_without_the_c_walk_pages_parse_the_same(warc_dir):
    from simweb.core.urls import normalize_url

    pages_read = [(normalize_url(url), source) for url, source in real_pages(warc_dir)]
    expected = [parse_page(source, url) for url, source in pages_read]
    with mock.patch.object(html, "WALK", html.PYTHON_WALK):
        assert [parse_page(source, url) for url, source in pages_read] == expected
