"""Fuzzing the readers of hostile input: the record reader (simweb.tasks.archives), the payload
decoders (simweb.tasks.payloads) and the HTML walk (simweb.core.html), on bytes Hypothesis
makes, most of them mutations of real records and pages (cut, flipped, inserted, repeated,
compressed whole). Each reader ends, never raises but what it documents, and keeps its promises
(offsets inside the file and in order; a decoded payload within its cap; anchors inside the
words). Bounded: a few hundred small inputs in all, so the whole file takes seconds; the slow
hostile files are measured by ``python -m benchmarks.hostile``.
"""
from __future__ import annotations

import base64
import gzip
import io
import zlib

import brotli
import zstandard
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from simweb.core.html import PageLimits, PageOverBudget, parse_page
from simweb.tasks.archives import ArchiveRecords, RecordEnd
from simweb.tasks.payloads import EncodingError, decode_content_encoding, encoded_payload_ends

FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                        HealthCheck.data_too_large])


def _records(gzip_each: bool) -> bytes:
    buf = io.BytesIO()
    writer = WARCWriter(buf, gzip=gzip_each)
    writer.write_record(writer.create_warcinfo_record("f.warc", {"software": "fuzz"}))
    for i in range(3):
        http = StatusAndHeaders("200 OK", [("Content-Type", "text/html")], protocol="HTTP/1.1")
        body = f"<html><title>t{i}</title><body><p>words {i} <a href='/p{i + 1}'>next</a></p></body></html>".encode()
        writer.write_record(writer.create_warc_record(f"http://f.example/p{i}", "response",
                                                      payload=io.BytesIO(body), http_headers=http))
    return buf.getvalue()


PLAIN, PER_RECORD = _records(False), _records(True)
SEEDS = [PLAIN, PER_RECORD, gzip.compress(PLAIN), zstandard.ZstdCompressor().compress(PLAIN)]


@st.composite
def mutated(draw, seeds=SEEDS):
    """A seed file with a few edits: cut, bytes flipped, bytes inserted, a stretch repeated."""
    data = bytearray(draw(st.sampled_from(seeds)))
    for _ in range(draw(st.integers(0, 4))):
        if not data:
            break
        at = draw(st.integers(0, len(data) - 1))
        edit = draw(st.sampled_from(["cut", "flip", "insert", "repeat"]))
        if edit == "cut":
            del data[at:]
        elif edit == "flip":
            data[at] ^= draw(st.integers(1, 255))
        elif edit == "insert":
            data[at:at] = draw(st.binary(max_size=40) | st.sampled_from([b"WARC/1.0\r\n", b"\r\n\r\n", b"\x1f\x8b\x08"]))
        else:
            end = min(len(data), at + draw(st.integers(1, 200)))
            data[at:at] = data[at:end] * draw(st.integers(1, 3))
    return bytes(data)


def read_all(data: bytes) -> tuple[int, list[int]]:
    records = ArchiveRecords(io.BytesIO(data))
    offsets = []
    for offset, record in records:
        offsets.append(offset)
        record.raw_stream.read(1 << 16)
        assert isinstance(records.finish(), RecordEnd)
        assert records.length is None or 0 <= records.length <= len(data)
        assert len(offsets) <= len(data) + 1  # the reader moves forward
    damage = records.damage_note("fuzzed.warc.gz")
    assert damage is None or (isinstance(damage, str) and "\n" not in damage)
    for gap in records.gaps:
        assert 0 <= gap.offset <= len(data) and gap.skipped >= 0
    return len(offsets), offsets


# A mutated record the fuzz test once found: its gzip member is cut short, and warcio then
# counted the record's length back to -10 (and the next record's offset before the first).
MEMBER_CUT_SHORT = base64.b64decode(
    "H4sIAGiKD2sC/82UXW+iQBSG7038D9z1agozwFBZSgKIfAiKiojcDTKoWQUimH78+oWtm3a3sduk2WQTSCaHk3fmPE+GlTY3"
    "WHjL9XurdgXCp4rKzAM5bfZFXl6Kc7opTxlwhjKjnE+FfD7vM5kORCTmdAAynFMgpFwO7iQeA0nCOUJkkKX8QL0EjPYHWpBj"
    "m5zfdtmX8pA0bQlxCAOIAIdCjpe7R0guDfqh3HwHw/2W1o3M1DsC5algjY2FpCdRvEwCQVoHdjBB5tyMbX+BTKffM8qioUVz"
    "GYVU1WG/Ic2+LNhua5Dv6SGrX9s8WmybncxA3O/1Xl6Kc7opTxlwhjKjnE+FfD7vM5kORCTmdAAynFMgpFwO7iQeA0nCOUJk"
    "kKX8QL0EjPYHWpBjm5zfdtmX8pA0bQlxCAOIAIdCjpe7R0guDfqh3HwHw/2W1o3M1DsC5algjY2FpCdRvEwCQVoHdjBB5tyM"
    "bX+BTKffM8qioUVzGYVU1WG/Ic2+LNhua5Dv6SGrX9s8WmybncxA3O/1e3WZN21bd9Lz83NXeTnKO0QnWldlUdOPEGHKU0oJ"
    "BphwBAgibhFlfApSboAgFUhK07tfiEJy2tIGLOeOzOyappJZNr+lj+RYHShbcZ8lFpCnQ0my35mth7btLieaF0QT1zekZaJL"
    "eOKLK3e4tifz0XXauuGPpaFmuXpsx5ZtmVrsSG6EIjzDHh5HH9HupvjGHOtt0366f+X1DjwSOsp2GAYtZdhOxzHT8Z/J"
)


@FUZZ
@given(mutated() | st.binary(max_size=600))
@example(MEMBER_CUT_SHORT)
def test_the_record_reader_reads_any_bytes_to_their_end(data):
    _, offsets = read_all(data)
    assert all(0 <= o < max(len(data), 1) for o in offsets)
    assert offsets == sorted(offsets)


def test_the_seeds_read_whole():
    for seed in SEEDS:
        assert read_all(seed)[0] == 4


def _encoded(coding: str, data: bytes) -> bytes:
    return {"gzip": gzip.compress, "deflate": zlib.compress, "br": brotli.compress,
            "zstd": zstandard.ZstdCompressor().compress}[coding](data)


PAGE = b"<html><body><p>" + b"hello world " * 200 + b"</p></body></html>"
ENCODED = {coding: _encoded(coding, PAGE) for coding in ("gzip", "deflate", "br", "zstd")}


@st.composite
def payloads(draw):
    coding = draw(st.sampled_from(sorted(ENCODED) + ["gzip, gzip", "br, gzip", "identity", "x-gzip"]))
    base = ENCODED.get(coding.split(",")[-1].strip(), PAGE)
    if coding == "gzip, gzip":
        base = gzip.compress(ENCODED["gzip"])
    if coding == "br, gzip":
        base = gzip.compress(ENCODED["br"])
    data = draw(mutated(seeds=[base]) | st.binary(max_size=300)
                | st.builds(lambda n: gzip.compress(PAGE) + gzip.compress(b"") * n, st.integers(0, 3000)))
    return coding, data


@FUZZ
@given(payloads(), st.sampled_from([1 << 10, 1 << 16, 1 << 20]))
def test_the_payload_decoders_stay_within_their_cap(payload, limit):
    coding, data = payload
    try:
        out = decode_content_encoding(data, coding, limit)
    except EncodingError as exc:
        assert exc.reason in ("payload too large", "content-encoding error", "unsupported content-encoding")
    else:
        assert isinstance(out, bytes) and (len(out) <= limit or out is data)
    assert encoded_payload_ends(data, coding, limit) in (True, False)


SOUP = st.lists(st.sampled_from([
    "<div>", "</div>", "<p>", "</p>", "<a href='/x'>", "<a href='javascript:x'>", "</a>", "<table>", "<td>",
    "<b class=c>", "</b>", "<li>", "<ul>", "</ul>", "<br>", "<img alt='alt'>", "<script>", "</script>",
    "<svg>", "</svg>", "<template>", "<!--", "-->", "<title>", "</title>", "<base href='http://b.example/'>",
    "<meta http-equiv=refresh content='0;url=/r'>", "words", " and ", "\ufdd0", "&amp;", "&#0;", "\x00", "<",
    ">", "\ud800", "é", "<select><option>", "<frameset>",
]), max_size=120).map("".join)


@FUZZ
@given(SOUP, st.booleans())
def test_the_html_walk_parses_any_soup_within_its_budget(soup, as_bytes):
    page = soup.encode("utf-8", "surrogatepass").decode("utf-8", "replace").encode() if as_bytes else soup
    try:
        parsed = parse_page(page, "http://f.example/dir/page.html", limits=PageLimits(depth=40, seconds=5.0))
    except PageOverBudget as exc:
        assert exc.reason in ("page nested too deep", "page parse over its time")
        return
    anchors = parsed.anchors
    n = len(parsed.words)
    assert len(anchors.target_url) == len(anchors.anchor_start)
    for start, end, left, right in zip(anchors.anchor_start, anchors.anchor_end, anchors.context_start,
                                       anchors.context_end):
        assert 0 <= left <= start <= end <= right <= n
    assert all(t.startswith(("http://", "https://")) for t in anchors.target_url)


def test_deep_soup_is_refused_not_parsed():
    with_tables = "<table><td>" * 30 + "<div>" * 60
    for page in ("<div>" * 100, "<b class=x>" * 100, with_tables):
        try:
            parse_page(page, "http://f.example/", limits=PageLimits(depth=40))
        except PageOverBudget as exc:
            assert exc.reason == "page nested too deep"
        else:
            raise AssertionError(f"parsed a page nested past its budget: {page[:40]}")
