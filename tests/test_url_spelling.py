"""A URL is spelt one way wherever it is read (WHATWG URL standard): in a record's
WARC-Target-URI, in a page's links, in an HTTP Location. A page's links to itself reach it."""
from __future__ import annotations

import io

import pyarrow.parquet as pq
from hypothesis import given, settings
from hypothesis import strategies as st
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from simweb.core.urls import normalize_url, target_uri
from simweb.tasks.ingest.files import ingest_warc
from simweb.tasks.storage import read_parquet


def test_only_a_matching_pair_of_angle_brackets_is_removed():
    assert target_uri("<http://u.example/a>") == "http://u.example/a"  # WARC 1.0's form
    assert target_uri("  <http://u.example/a> \r") == "http://u.example/a"
    assert target_uri("http://u.example/a>") == "http://u.example/a>"
    assert target_uri("<http://u.example/a") == "<http://u.example/a"
    assert target_uri("<>") == "" and target_uri("") == "" and target_uri(" \t") == ""
    assert normalize_url(target_uri("http://u.example/a>")) == "http://u.example/a%3E"


def test_a_lone_surrogate_is_one_replacement_character():
    """What a JSON string can hold and no page can: read as U+FFFD, as a page's invalid byte is."""
    assert normalize_url("http://u.example/a\ud800b") == "http://u.example/a%EF%BF%BDb"
    assert normalize_url("http://u.example/a\ufffdb") == "http://u.example/a%EF%BF%BDb"


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=30))
def test_target_uri_is_what_is_inside_its_brackets(path):
    url = f"http://u.example/{path}"
    assert target_uri(f"<{url}>") == target_uri(url) or url.strip() != url


def warc_with_raw_bytes(path, records, raw: bytes):
    """An uncompressed WARC of (uri, body) responses; ``@RAW@`` in a URI or body becomes ``raw``
    (bytes the writer would not write: invalid UTF-8 in a header). Content-Length is kept right."""
    buf = io.BytesIO()
    writer = WARCWriter(buf, gzip=False)
    for uri, body in records:
        http = StatusAndHeaders("200 OK", [("Content-Type", "text/html; charset=utf-8")], protocol="HTTP/1.1")
        writer.write_record(writer.create_warc_record(uri, "response", payload=io.BytesIO(body), http_headers=http))
    data = buf.getvalue()
    out = io.BytesIO()  # each record again, its placeholders replaced and its Content-Length counted anew
    for record in data.split(b"WARC/1.0\r\n")[1:]:
        head, _, block = record.partition(b"\r\n\r\n")
        block = block[:-4].replace(b"@RAW@", raw)
        head = head.replace(b"@RAW@", raw)
        lines = [b"Content-Length: %d" % len(block) if line.lower().startswith(b"content-length:") else line
                 for line in head.split(b"\r\n")]
        out.write(b"WARC/1.0\r\n" + b"\r\n".join(lines) + b"\r\n\r\n" + block + b"\r\n\r\n")
    path.write_bytes(out.getvalue())
    return path


def links_of(out) -> list[tuple[str, str]]:
    rows = []
    for part in sorted((out / "links").glob("*.parquet")):
        table = pq.read_table(part, columns=["source_url", "target_url"])
        rows += list(zip(table.column("source_url").to_pylist(), table.column("target_url").to_pylist()))
    return rows


def test_a_target_uri_ending_in_a_bracket_keeps_it_and_links_reach_it(tmp_path):
    path = warc_with_raw_bytes(tmp_path / "b.warc", [
        ("http://u.example/a>", b"<html><title>a</title><body><p>the page a</p></body></html>"),
        ("<http://u.example/b>", b"<html><title>b</title><body><p>to <a href='/a>'>a</a></p></body></html>"),
    ], b"")
    stats = ingest_warc(str(path), str(tmp_path / "out"))
    assert stats.pages_written == 2 and not stats.file_errors
    pages = {row["url"] for row in read_parquet(str(tmp_path / "out" / "pages")).to_pylist()}
    assert pages == {"http://u.example/a%3E", "http://u.example/b"}
    assert links_of(tmp_path / "out") == [("http://u.example/b", "http://u.example/a%3E")]


def test_invalid_utf8_in_a_target_uri_and_in_a_link_is_one_url(tmp_path):
    """The byte 0xFF, not UTF-8, in the record's header and in the page's own link to itself
    (a UTF-8 page): both are read as U+FFFD, so the link reaches the page. (The header was read
    as Latin-1, %C3%BF; the link as %EF%BF%BD.)"""
    body = b"<html><title>self</title><body><p>me <a href='/caf@RAW@'>here</a></p></body></html>"
    path = warc_with_raw_bytes(tmp_path / "u.warc", [("http://u.example/caf@RAW@", body)], b"\xff")
    assert b"WARC-Target-URI: http://u.example/caf\xff\r\n" in path.read_bytes()
    stats = ingest_warc(str(path), str(tmp_path / "out"))
    assert stats.pages_written == 1 and not stats.file_errors
    (row,) = read_parquet(str(tmp_path / "out" / "pages")).to_pylist()
    assert row["url"] == "http://u.example/caf%EF%BF%BD"
    assert links_of(tmp_path / "out") == [(row["url"], row["url"])]
