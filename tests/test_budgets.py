"""Budgets, not stalls: decoding is linear in a payload's bytes, and a page beyond its depth or
time is skipped and counted with its reason (simweb.core.html.PageLimits).

The work is counted, not timed: the bytes zlib is given across a payload's gzip members, the
depth at which a parse stops. The whole-command times of the hostile files are measured by
``python -m benchmarks.hostile``.
"""
from __future__ import annotations

import gzip
import io
import zlib
from collections import Counter

import pytest
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from simweb.core import html
from simweb.core.html import PAGE_TOO_DEEP, PAGE_TOO_SLOW, PageLimits, PageOverBudget, parse_page
from simweb.tasks import payloads
from simweb.tasks.ingest.files import ingest_warc

needs_c_walk = pytest.mark.skipif(html.WALK is not html.C_WALK, reason="the C walk (simcore/_walk.c) is not built")


class CountingDecompressor:
    """zlib's decompressor, counting the bytes of input it is given."""

    given = 0
    make = staticmethod(zlib.decompressobj)

    def __init__(self, wbits: int):
        self._d = CountingDecompressor.make(wbits)

    def decompress(self, data, max_length=0):
        CountingDecompressor.given += len(data)
        return self._d.decompress(data, max_length)

    def __getattr__(self, name):
        return getattr(self._d, name)


def test_many_gzip_members_cost_their_bytes_not_their_square(monkeypatch):
    """20,000 empty gzip members after a page: zlib is given each byte a small number of times
    (it was given the whole rest of the payload at every member: 20,000 × 200 KB)."""
    page = b"<html><title>members</title><body><p>hello</p></body></html>"
    body = gzip.compress(page, mtime=0) + gzip.compress(b"", mtime=0) * 20_000
    monkeypatch.setattr(payloads.zlib, "decompressobj", CountingDecompressor)
    CountingDecompressor.given = 0
    assert payloads.decode_content_encoding(body, "gzip", 1 << 20) == page
    assert CountingDecompressor.given <= 40 * len(body)


def test_a_large_member_is_given_in_steps_and_decodes_whole(monkeypatch):
    data = bytes(range(256)) * 40_000  # 10 MB of low entropy, a few KB compressed
    body = gzip.compress(data, mtime=0)
    assert payloads.decode_content_encoding(body, "gzip", 16 << 20) == data
    assert payloads.decode_content_encoding(body[:-8], "gzip", 16 << 20) == data  # the trailer cut
    with pytest.raises(payloads.EncodingError, match="more than"):
        payloads.decode_content_encoding(body, "gzip", 1 << 20)
    with pytest.raises(payloads.EncodingError):  # a member followed by bytes that are none
        payloads.decode_content_encoding(body + b"\x00" * 30, "gzip", 16 << 20)


def nested(depth: int, tag: str = "div", before: str = "") -> str:
    return f"<html><title>deep</title><body>{before}" + f"<{tag}>" * depth + "word" + f"</{tag}>" * depth + "</body></html>"


@pytest.mark.parametrize("way", ["c", "python"])
def test_a_page_nested_deeper_than_its_budget_is_refused(way, monkeypatch):
    if way == "c" and html.WALK is not html.C_WALK:
        pytest.skip("the C walk (simcore/_walk.c) is not built")
    if way == "python":
        monkeypatch.setattr(html, "WALK", html.PYTHON_WALK)
    limits = PageLimits(depth=300)
    assert parse_page(nested(298), "http://deep.example/", limits=limits).words == ("word",)  # html, body, 298 divs
    for page in (nested(299), nested(5_000), nested(2_000, before="<table>")):  # the last: divs moved before the table
        with pytest.raises(PageOverBudget, match="nested deeper than 300") as refused:
            parse_page(page, "http://deep.example/", limits=limits)
        assert refused.value.reason == PAGE_TOO_DEEP


@needs_c_walk
def test_the_parse_stops_soon_after_the_depth_is_crossed(monkeypatch):
    """200,000 nested divs: the parse stops at the first piece past the budget, not at the end
    of the page (which took four minutes)."""
    steps = []
    parse = html._walk.parse

    def counted(*args):
        steps.append(args)
        return parse(*args)

    monkeypatch.setattr(html._walk, "parse", counted)
    with pytest.raises(PageOverBudget) as refused:
        parse_page(nested(200_000), "http://deep.example/")
    assert refused.value.reason == PAGE_TOO_DEEP and len(steps) == 1
    assert html.PAGE_LIMITS.depth == 4096


@needs_c_walk
def test_a_parse_over_its_time_is_refused():
    page = nested(10, before="<p>words and more words</p>" * 5_000)  # 135 KB: pieces, each checked
    assert parse_page(page, "http://slow.example/").words[:3] == ("words", "and", "more")
    with pytest.raises(PageOverBudget, match="CPU time") as refused:
        parse_page(page, "http://slow.example/", limits=PageLimits(seconds=0.0))
    assert refused.value.reason == PAGE_TOO_SLOW


def test_parsing_in_pieces_gives_the_tree_of_one_parse():
    """Pieces cut inside tags, character references and UTF-8 sequences, in quirks and in
    standards mode (a table ends a paragraph in the second only)."""
    if html.WALK is not html.C_WALK:
        pytest.skip("the C walk (simcore/_walk.c) is not built")
    body = "<p>Ünïcödé &amp; &eacute;t&eacute; <a href='/x'>link</a><table><td>cell</table>" * 400
    for doctype in ("", "<!DOCTYPE html>"):
        page = f"{doctype}<html><body>{body}</body></html>"
        whole = html._tree_python(page, html.PAGE_LIMITS).html
        for step in (1, 7, 16 << 10):
            tree = html.LexborHTMLParser("<!doctype html>", options=html._WITHOUT_EVENTS)
            assert html._walk.parse(tree.root.mem_id, page.encode(), 4096, 10.0, step) == 0
            assert tree.html == whole


def write_warc(path, pages):
    with open(path, "wb") as f:
        writer = WARCWriter(f, gzip=True)
        for url, body, headers in pages:
            http = StatusAndHeaders("200 OK", [("Content-Type", "text/html"), *headers], protocol="HTTP/1.1")
            writer.write_record(writer.create_warc_record(url, "response", payload=io.BytesIO(body), http_headers=http))
    return path


def test_the_ingest_skips_and_counts_a_page_too_deep(tmp_path):
    ok = b"<html><title>ok</title><body><p>ordinary words <a href='/next'>next</a></p></body></html>"
    path = write_warc(tmp_path / "deep.warc.gz", [
        ("http://deep.example/", nested(20_000).encode(), ()),
        ("http://ok.example/", ok, ()),
        ("http://members.example/", gzip.compress(ok) + gzip.compress(b"") * 5_000, [("Content-Encoding", "gzip")]),
    ])
    stats = ingest_warc(str(path), str(tmp_path / "out"))
    assert (stats.records_read, stats.pages_written, dict(stats.skipped)) == (3, 2, {PAGE_TOO_DEEP: 1})
    assert not stats.file_errors


def test_link_skips_of_a_refused_page_are_not_counted():
    skipped: Counter[str] = Counter()
    with pytest.raises(PageOverBudget):
        parse_page(nested(50, before="<a href='mailto:x'>m</a>"), "http://deep.example/", skipped, PageLimits(depth=10))
    assert not skipped
