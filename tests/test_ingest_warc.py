"""The ingest stage on real WARC files (../shared/fixtures/warc) and on WARCs written here.

Expected counts come from reading the files by other means, noted in each test: ``zcat FILE |
grep -a '^WARC-Type:' | sort | uniq -c`` for the record types, the HTTP status lines and
Content-Type headers of the responses, and hex dumps where a file is damaged.
"""
from __future__ import annotations

import gzip
import io
import json
import re
import shutil
import zlib
from pathlib import Path

import brotli
import pyarrow.parquet as pq
import pytest
import zstandard
from hypothesis import given, settings
from hypothesis import strategies as st
from warcio.archiveiterator import ArchiveIterator
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

import simweb.tasks.ingest.files as ingest_files_module
import simweb.tasks.ingest.parts as ingest_parts
import simweb.tasks.ingest.records as ingest_records
from simweb.core.urls import normalize_url, url_id
from simweb.cli import main as simweb_main
from simweb.tasks import schemas
from simweb.tasks.contexts import pages_part_of, with_context_words
from simweb.tasks.ingest.files import ingest_files, ingest_warc
from simweb.tasks.ingest.stats import FileError, IngestStats
from simweb.tasks.sources import list_archive_files
from simweb.tasks.storage import file_digest, read_parquet


def pages_of(out: Path):
    return read_parquet(str(out / "pages")).to_pylist()


def links_of(out: Path):
    """The links rows with their context words looked up in the pages part of the same name."""
    rows = []
    for part in sorted((out / "links").glob("part-*.parquet")):
        links = pq.read_table(part)
        rows += with_context_words(links, pq.read_table(pages_part_of(str(part))), where=str(part)).to_pylist()
    return rows


def counts(stats: IngestStats) -> tuple:
    return (stats.records_read, stats.pages_written, dict(stats.skipped), len(stats.file_errors))


# =============================================================================================
# Real files


def test_common_crawl_excerpt(warc_dir, tmp_path):
    """warcfile.warc.gz (CC-MAIN-2020-34): ``zcat | grep '^WARC-Type:'`` gives 50 records —
    1 warcinfo, 17 request, 16 response, 16 metadata (the file ends with a request whose
    response was not kept). All 16 responses are "HTTP/1.1 200 OK" with a text/html
    Content-Type, so all 16 are pages."""
    stats = ingest_warc(str(warc_dir / "warcfile.warc.gz"), str(tmp_path))
    assert counts(stats) == (50, 16, {"warcinfo record": 1, "request record": 17, "metadata record": 16}, 0)
    assert stats.files_read == 1 and stats.files_unchanged == 0
    pages = {p["url"]: p for p in pages_of(tmp_path)}
    assert len(pages) == 16
    assert stats.links_written == len(links_of(tmp_path)) > 0

    # Content-Type "text/html; charset=windows-1251": Cyrillic title.
    ru = pages["http://01spb.ru/company/"]
    assert ru["charset"] == "windows-1251"
    assert ru["title"] == "О компании - Стратегия пожарной безопасности"
    assert ru["title_words"] == ["о", "компании", "стратегия", "пожарной", "безопасности"]
    # Content-Type "text/html; charset=gb2312", decoded with the GB18030 superset.
    cn = pages["http://037426.cn/"]
    assert cn["charset"] == "gb18030"
    assert cn["title"] == "亚洲精品无码免费视频 亚洲精品无码免费视频 含羞草视频独家共享"
    # No charset in the header; <meta http-equiv content="text/html;charset=gbk">.
    assert pages["http://041696.com/15477/list_6_4.html"]["charset"] == "gb18030"
    # No charset in the header; <META ... charset=iso-8859-1>: windows-1252 as in browsers.
    assert pages["http://06.live-radsport.ch/tippspiel/stats_140_petzi.html"]["charset"] == "windows-1252"
    # A UTF-8 byte order mark starts http://05925.net/...; the BOM is not part of the text.
    assert pages["http://05925.net/index.php/vod/type/id/53.html"]["charset"] == "utf-8"

    for p in pages.values():
        assert p["status"] == 200 and p["content_type"] == "text/html"
        assert p["url_id"] == url_id(p["url"])
        assert p["source_file"] == str(warc_dir / "warcfile.warc.gz")


def test_clueweb_warc_0_18_with_bad_dates_gzip_payloads_and_euc_jp(warc_dir, tmp_path):
    """clueweb-quirk.warc.gz: WARC/0.18, every WARC-Date is "2008-10-294T05:21:46-0700"
    (malformed), 1 warcinfo + 29 responses, each "HTTP/1.1 200" with Content-Type
    "text/html; charset=EUC-JP" and Content-Encoding gzip: 29 pages."""
    stats = ingest_warc(str(warc_dir / "clueweb-quirk.warc.gz"), str(tmp_path))
    assert counts(stats) == (30, 29, {"warcinfo record": 1}, 0)
    pages = pages_of(tmp_path)
    assert {p["charset"] for p in pages} == {"euc-jp"}
    first = next(p for p in pages if p["url"] == "http://www.uraharajuku.st/shopdetail/001005000005/019/000/order/")
    assert first["title"].startswith("ブラウニー ブリーフケース【ヘッドポーター HEADPORTER 吉田かばん】")
    assert "ブラウニー" in first["title_words"] and "headporter" in first["title_words"]
    assert len(first["words"]) > 100


def test_response_and_revisit(warc_dir, tmp_path):
    """example.warc.gz: 2 warcinfo, 1 response (200, text/html, Content-Encoding gzip),
    2 request, 1 revisit: one page, "Example Domain", with its one link."""
    stats = ingest_warc(str(warc_dir / "example.warc.gz"), str(tmp_path))
    assert counts(stats) == (6, 1, {"warcinfo record": 2, "request record": 2, "revisit record": 1}, 0)
    (page,) = pages_of(tmp_path)
    assert page["url"] == "http://example.com/" and page["title"] == "Example Domain"
    assert page["charset"] == "utf-8"  # <meta charset="utf-8">
    assert "illustrative" in page["words"]
    (link,) = links_of(tmp_path)
    assert link["target_url"] == "http://www.iana.org/domains/example"
    assert link["anchor_words"] == ["more", "information"]
    assert link["source_id"] == page["url_id"] and link["target_id"] == url_id(link["target_url"])


def test_chunked_transfer_encoding(warc_dir, tmp_path):
    """example-iana.org-chunked.warc: warcinfo, a response with "Transfer-Encoding: chunked"
    whose payload is one chunk of 0x1c37 bytes ("001c37" on the line before "<!doctype
    html>") and the closing "0" chunk, request. De-chunked, the chunk sizes are not text."""
    path = warc_dir / "example-iana.org-chunked.warc"
    assert b"\r\n\r\n001c37\r\n<!doctype html>" in path.read_bytes()
    stats = ingest_warc(str(path), str(tmp_path))
    assert counts(stats) == (3, 1, {"warcinfo record": 1, "request record": 1}, 0)
    (page,) = pages_of(tmp_path)
    assert page["title"] == "Internet Assigned Numbers Authority"
    assert page["charset"] == "utf-8"
    assert stats.links_written > 10


def test_record_longer_than_its_content_length(warc_dir, tmp_path):
    """example-trunc.warc: 2 warcinfo, response (offset 1197), request. The response declares
    Content-Length 973, but its gzip payload runs 2 bytes further (``\\x00\\x00`` at 0xa00,
    the last bytes of the gzip trailer's length field, before the blank lines). Its deflate
    stream ends inside the 973 bytes, so the page was read in full and is kept; the 2 bytes
    are skipped and the request after them is read (recovered)."""
    path = warc_dir / "example-trunc.warc"
    assert path.read_bytes()[0xA00:0xA0B] == b"\x00\x00\r\n\r\nWARC/"
    stats = ingest_warc(str(path), str(tmp_path))
    assert counts(stats) == (4, 1, {"warcinfo record": 2, "request record": 1}, 1)
    assert (stats.records_recovered, stats.bytes_skipped) == (1, 2)
    (error,) = stats.file_errors
    assert error.damage == ((0xA00, 2),)
    assert "the record at offset 1197 is followed by bytes that do not start a record" in error.reason
    assert "reading resumed at offset 2566" in error.reason
    (page,) = pages_of(tmp_path)
    assert (page["url"], page["title"], page["record_offset"]) == ("http://example.com/", "Example Domain", 1197)


def test_clipped_gzip_member(warc_dir, tmp_path):
    """clipped.warc.gz: one response (Content-Length 88275) whose gzip member is cut: the
    file (18184 bytes) decompresses to about 75 KB. The record is skipped as truncated, the
    whole file is skipped bytes, and the file is reported as ending inside the member."""
    stats = ingest_warc(str(warc_dir / "clipped.warc.gz"), str(tmp_path))
    assert counts(stats) == (1, 0, {"truncated record": 1}, 1)
    assert (stats.records_recovered, stats.bytes_skipped) == (0, 18184)
    (error,) = stats.file_errors
    assert error.damage == ((0, 18184),)
    assert "the gzip member of the record at offset 0 is cut: the file ends inside it" in error.reason


def test_whole_file_gzip_gets_the_recompress_fix(warc_dir, tmp_path):
    """example-bad-non-chunked.warc.gz: one gzip stream for the whole file (``zcat`` shows 6
    records: warcinfo, request, response, warcinfo, request, revisit). warcio reads the first
    record and then refuses; here they are read in order, the page kept, each at the member's
    offset with a length of 0 (no byte range holds one alone). The message names the fix."""
    path = warc_dir / "example-bad-non-chunked.warc.gz"
    stats = ingest_warc(str(path), str(tmp_path))
    assert counts(stats) == (6, 1, {"warcinfo record": 2, "request record": 2, "revisit record": 1}, 1)
    assert (stats.records_recovered, stats.bytes_skipped) == (0, 0)
    (page,) = pages_of(tmp_path)
    assert (page["url"], page["record_offset"], page["record_length"]) == ("http://example.com/", 0, 0)
    reason = stats.file_errors[0].reason
    assert "gzipped as a whole" in reason and "its 6 records were read in order" in reason
    assert f"warcio recompress {path} {warc_dir / 'example-bad-non-chunked.recompressed.warc.gz'}" in reason


def test_wrong_chunk_boundaries(warc_dir, tmp_path):
    """example-wrong-chunks.warc.gz: three gzip members, at 0, 516 and 1130. The response's
    WARC and HTTP headers are in the first, its body ("<!doctype html>…") in the second, and the
    third starts with the blank lines after that body and then the request record. The response
    ends (0 of its body bytes) with its member, before its Content-Length: it is skipped as
    truncated, the split gets the recompress fix, and reading resumes at the third member: the
    request is recovered."""
    path = warc_dir / "example-wrong-chunks.warc.gz"
    stats = ingest_warc(str(path), str(tmp_path))
    assert counts(stats) == (2, 0, {"truncated record": 1, "request record": 1}, 1)
    assert (stats.records_recovered, stats.bytes_skipped) == (1, 1130)
    (error,) = stats.file_errors
    assert error.damage == ((0, 1130),)
    assert "ends at offset 516, before the record's Content-Length" in error.reason
    assert "gzip members split records" in error.reason and "reading resumed at offset 1130" in error.reason
    assert f"warcio recompress {path} " in error.reason


def test_every_shared_fixture_is_covered(warc_dir):
    names = {p.name for p in warc_dir.iterdir() if p.name.endswith((".warc", ".warc.gz", ".arc", ".arc.gz"))}
    assert names == {
        "warcfile.warc.gz", "clueweb-quirk.warc.gz", "example.warc.gz", "example-iana.org-chunked.warc",
        "example-trunc.warc", "clipped.warc.gz", "example-bad-non-chunked.warc.gz", "example-wrong-chunks.warc.gz",
    }


def test_all_fixtures_together_and_the_summary(warc_dir, tmp_path):
    stats = ingest_files(list_archive_files(str(warc_dir)), str(tmp_path))
    # The sums of the per-file expectations above.
    assert stats.files_read == 8 and stats.files_by_format == {"warc": 8}
    assert stats.records_read == 50 + 30 + 6 + 3 + 4 + 1 + 6 + 2
    assert stats.pages_written == 16 + 29 + 1 + 1 + 1 + 1
    assert dict(stats.skipped) == {
        "warcinfo record": 1 + 1 + 2 + 1 + 2 + 2, "request record": 17 + 2 + 1 + 1 + 2 + 1,
        "metadata record": 16, "revisit record": 1 + 1, "truncated record": 1 + 1,
    }
    assert (stats.records_recovered, stats.bytes_skipped) == (1 + 1, 2 + 18184 + 1130)
    assert [Path(e.path).name for e in stats.file_errors] == [
        "clipped.warc.gz", "example-bad-non-chunked.warc.gz", "example-trunc.warc", "example-wrong-chunks.warc.gz",
    ]
    text = stats.summary()
    assert text.startswith("ingest: 8 files read; 8 WARC\n")
    for label, n in (("records read", "102"), ("pages written", "49"), ("file errors", "4"),
                     ("records recovered", "2"), ("bytes skipped", "19,316")):
        assert re.search(rf"^ +{label} +{n}$", text, re.M), label
    for line in ("links written", "records skipped", "metadata record", "warcio recompress", "offset 1197"):
        assert line in text
    assert len(stats.parts) == 8


def test_record_offsets_point_at_the_records(warc_dir, tmp_path):
    path = warc_dir / "warcfile.warc.gz"
    ingest_warc(str(path), str(tmp_path))
    with open(path, "rb") as f:
        for page in pages_of(tmp_path):
            f.seek(page["record_offset"])
            record = next(iter(ArchiveIterator(f)))
            assert record.rec_type == "response"
            assert normalize_url(record.rec_headers.get_header("WARC-Target-URI")) == page["url"]


def test_output_layout_schemas_and_stats_file(warc_dir, tmp_path):
    path = warc_dir / "example.warc.gz"
    stats = ingest_warc(str(path), str(tmp_path))
    part = f"part-{file_digest(str(path))[:16]}"
    assert stats.parts == (part,)
    assert pq.read_schema(tmp_path / "pages" / f"{part}.parquet").equals(schemas.PAGES)
    assert pq.read_schema(tmp_path / "links" / f"{part}.parquet").equals(schemas.LINKS)
    saved = json.loads((tmp_path / "stats" / f"{part}.json").read_text())
    assert saved["sha256"] == file_digest(str(path)) and saved["format"] == ingest_files_module.INGEST_FORMAT
    assert IngestStats.from_dict(saved["stats"]) == stats
    leftovers = [p for p in tmp_path.rglob("*") if p.name.startswith(".tmp-")]
    assert leftovers == []


# =============================================================================================
# WARC files written here


def http_response(uri: str, body: bytes, *, status: str = "200 OK", headers=(("Content-Type", "text/html"),)):
    def make(writer: WARCWriter):
        http = StatusAndHeaders(status, list(headers), protocol="HTTP/1.1")
        return writer.create_warc_record(uri, "response", payload=io.BytesIO(body), http_headers=http)
    return make


def resource(uri: str | None, body: bytes, content_type: str = "text/html"):
    def make(writer: WARCWriter):
        return writer.create_warc_record(uri, "resource", payload=io.BytesIO(body), warc_content_type=content_type)
    return make


def write_warc(path: Path, records, *, gzip_records: bool = True) -> Path:
    with open(path, "wb") as f:
        writer = WARCWriter(f, gzip=gzip_records)
        for make in records:
            writer.write_record(make(writer))
    return path


def html(title: str, body: str = "", charset_meta: str = "") -> str:
    return f"<html><head>{charset_meta}<title>{title}</title></head><body>{body}</body></html>"


PAGE = html("A page", '<p>Read <a href="/next">the next page</a> about cats.</p>').encode()


def test_meta_charset_only(tmp_path):
    body = html("Привет, мир", "<p>Текст</p>", '<meta charset="windows-1251">').encode("cp1251")
    path = write_warc(tmp_path / "meta.warc.gz", [http_response("http://ru.example/", body)])
    stats = ingest_warc(str(path), str(tmp_path / "out"))
    assert counts(stats) == (1, 1, {}, 0)
    (page,) = pages_of(tmp_path / "out")
    assert page["title"] == "Привет, мир" and page["charset"] == "windows-1251"
    assert page["words"] == ["текст"]


def test_resource_records_are_pages(tmp_path):
    path = write_warc(tmp_path / "res.warc.gz", [
        resource("http://res.example/a", PAGE),
        resource("http://res.example/img.png", b"\x89PNG\r\n\x1a\n", "image/png"),
    ])
    stats = ingest_warc(str(path), str(tmp_path / "out"))
    assert counts(stats) == (2, 1, {"not HTML": 1}, 0)
    (page,) = pages_of(tmp_path / "out")
    assert page["status"] == 200 and page["content_type"] == "text/html"
    (link,) = links_of(tmp_path / "out")
    assert link["target_url"] == "http://res.example/next"
    assert link["anchor_words"] == ["the", "next", "page"]


def test_non_html_status_and_uri_skips(tmp_path):
    path = write_warc(tmp_path / "mixed.warc", [
        http_response("http://a.example/", PAGE),
        http_response("http://a.example/logo.png", b"\x89PNG\r\n\x1a\n", headers=[("Content-Type", "image/png")]),
        http_response("http://a.example/data.json", b'{"a": 1}', headers=[("Content-Type", "application/json")]),
        http_response("http://a.example/missing", PAGE, status="404 Not Found"),
        http_response("http://a.example/moved", b"", status="301 Moved Permanently",
                      headers=[("Location", "http://a.example/")]),
        http_response("http://a.example/error", PAGE, status="503 Service Unavailable"),
        http_response("http://a.example/empty", b"  \r\n"),
        http_response("http://a.example/no-type", PAGE, headers=[]),
        http_response("http://a.example/octets", PAGE, headers=[("Content-Type", "application/octet-stream")]),
        http_response("http://a.example/blob", b"\x00\x01binary", headers=[]),
        http_response("http://a.example/xhtml", PAGE, headers=[("Content-Type", "application/xhtml+xml")]),
        resource(None, PAGE),
        resource("mailto:someone@example.com", PAGE),
        resource("not a url at all", PAGE),
        resource("http://[broken", PAGE),
        resource("dns:a.example", b"20261128 a.example. 300 IN A 192.0.2.1"),  # a crawler's DNS capture
        resource("metadata://gnu.org/software/wget/warc/wget.log", PAGE),  # a crawler's own log
    ], gzip_records=False)
    stats = ingest_warc(str(path), str(tmp_path / "out"))
    assert counts(stats) == (17, 4, {
        "not HTML": 3, "HTTP 4xx": 1, "HTTP 3xx": 1, "HTTP 5xx": 1, "empty body": 1,
        "no target URI": 1, "invalid target URI": 2, "target URI not http(s)": 3,
    }, 0)
    by_url = {p["url"]: p for p in pages_of(tmp_path / "out")}
    assert set(by_url) == {"http://a.example/", "http://a.example/no-type", "http://a.example/octets",
                           "http://a.example/xhtml"}
    assert by_url["http://a.example/no-type"]["content_type"] == ""  # sniffed
    assert by_url["http://a.example/octets"]["content_type"] == "application/octet-stream"


def test_duplicate_urls_keep_the_latest_record(tmp_path):
    first = html("First", "<p>one</p>").encode()
    second = html("Second", "<p>two</p>").encode()
    path = write_warc(tmp_path / "dup.warc.gz", [
        http_response("http://dup.example/page", first),
        http_response("HTTP://DUP.example:80/page#section", second),  # the same URL, normalised
        http_response("http://dup.example/page", PAGE, status="404 Not Found"),  # not a page: not a duplicate
        http_response("http://dup.example/other", second),
    ])
    stats = ingest_warc(str(path), str(tmp_path / "out"))
    assert counts(stats) == (4, 2, {"duplicate URL": 1, "HTTP 4xx": 1}, 0)
    titles = {p["url"]: p["title"] for p in pages_of(tmp_path / "out")}
    # The same WARC-Date or a later one: the later record is the latest capture (the 404 after it
    # is kept beside, and the crawl reader finds it the latest of all: simweb.tasks.crawl.copies).
    assert titles == {"http://dup.example/page": "Second", "http://dup.example/other": "Second"}


def test_reingesting_the_same_content_is_skipped(tmp_path):
    path = write_warc(tmp_path / "a.warc.gz", [http_response("http://a.example/", PAGE)])
    out = tmp_path / "out"
    first = ingest_warc(str(path), str(out))
    assert first.pages_written == 1 and first.files_read == 1
    parquet_before = {p: p.stat().st_mtime_ns for p in out.rglob("*.parquet")}

    again = ingest_warc(str(path), str(out))
    renamed = tmp_path / "renamed.warc.gz"
    shutil.copy(path, renamed)
    moved = ingest_warc(str(renamed), str(out))
    for stats in (again, moved):
        assert stats == IngestStats(files_unchanged=1, files_by_format={"warc": 1}, pages_unchanged=1, parts=first.parts)
    assert {p: p.stat().st_mtime_ns for p in out.rglob("*.parquet")} == parquet_before
    assert len(pages_of(out)) == 1

    # Other content is a new part.
    other = write_warc(tmp_path / "b.warc.gz", [http_response("http://b.example/", PAGE)])
    assert ingest_warc(str(other), str(out)).pages_written == 1
    assert len(pages_of(out)) == 2


def test_a_part_without_its_stats_file_is_redone(tmp_path):
    path = write_warc(tmp_path / "a.warc.gz", [http_response("http://a.example/", PAGE)])
    out = tmp_path / "out"
    stats = ingest_warc(str(path), str(out))
    (out / "stats" / f"{stats.parts[0]}.json").unlink()  # as if the run died before the last step
    assert ingest_warc(str(path), str(out)).files_read == 1
    assert len(pages_of(out)) == 1


def gzipped(data: bytes) -> bytes:
    return gzip.compress(data)


def test_content_encodings(tmp_path):
    raw_deflate = zlib.compressobj(wbits=-zlib.MAX_WBITS)
    deflated = raw_deflate.compress(PAGE) + raw_deflate.flush()
    path = write_warc(tmp_path / "enc.warc.gz", [
        http_response("http://e.example/gzip", gzipped(PAGE), headers=[("Content-Type", "text/html"), ("Content-Encoding", "gzip")]),
        http_response("http://e.example/xgzip", gzipped(PAGE), headers=[("Content-Type", "text/html"), ("Content-Encoding", "x-gzip")]),
        http_response("http://e.example/zlib", zlib.compress(PAGE), headers=[("Content-Type", "text/html"), ("Content-Encoding", "deflate")]),
        http_response("http://e.example/raw-deflate", deflated, headers=[("Content-Type", "text/html"), ("Content-Encoding", "deflate")]),
        http_response("http://e.example/twice", gzipped(gzipped(PAGE)), headers=[("Content-Type", "text/html"), ("Content-Encoding", "gzip, gzip")]),
        # The header says gzip but the crawler stored the decoded page: taken as it is.
        http_response("http://e.example/stored-decoded", PAGE, headers=[("Content-Type", "text/html"), ("Content-Encoding", "gzip")]),
        http_response("http://e.example/zstd", zstandard.compress(PAGE), headers=[("Content-Type", "text/html"), ("Content-Encoding", "zstd")]),
        http_response("http://e.example/br", brotli.compress(PAGE), headers=[("Content-Type", "text/html"), ("Content-Encoding", "br")]),
        http_response("http://e.example/br-gzip", gzipped(brotli.compress(PAGE)), headers=[("Content-Type", "text/html"), ("Content-Encoding", "br, gzip")]),
        http_response("http://e.example/lzw", b"\x1f\x9d\x90<html>", headers=[("Content-Type", "text/html"), ("Content-Encoding", "compress")]),
        http_response("http://e.example/corrupt", gzipped(PAGE)[:12] + b"\xff" * 40, headers=[("Content-Type", "text/html"), ("Content-Encoding", "gzip")]),
        http_response("http://e.example/corrupt-br", b"\x1b\x03\x00\xf8\xa5", headers=[("Content-Type", "text/html"), ("Content-Encoding", "br")]),
        http_response("http://e.example/corrupt-zstd", b"(\xb5/\xfd\xff" + b"\x00" * 20, headers=[("Content-Type", "text/html"), ("Content-Encoding", "zstd")]),
    ])
    stats = ingest_warc(str(path), str(tmp_path / "out"))
    expected_skips = {"unsupported content-encoding": 1, "content-encoding error": 3}
    assert counts(stats) == (13, 9, expected_skips, 0)
    assert {p["title"] for p in pages_of(tmp_path / "out")} == {"A page"}
    assert len(pages_of(tmp_path / "out")) == 9


def test_binary_payloads_labelled_html_are_not_pages(tmp_path):
    """Images and downloads a misconfigured server labels text/html: skipped as not HTML, not
    parsed into pages of junk words; a page that merely mentions a signature is kept."""
    png = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 4
    pdf = b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n1 0 obj<<>>endobj\n" + b"\x00\xff" * 200
    mp4 = b"\x00\x00\x00\x18ftypmp42" + bytes(300)
    path = write_warc(tmp_path / "bin.warc.gz", [
        http_response("http://b.example/logo", png), http_response("http://b.example/paper", pdf),
        http_response("http://b.example/clip", mp4),
        http_response("http://b.example/page", html("About PNG", "<p>%PDF- and \x89PNG are signatures</p>").encode()),
    ])
    stats = ingest_warc(str(path), str(tmp_path / "out"))
    assert counts(stats) == (4, 1, {"not HTML": 3}, 0)
    assert [p["url"] for p in pages_of(tmp_path / "out")] == ["http://b.example/page"]


def test_payloads_over_the_limit_are_skipped(tmp_path, monkeypatch):
    monkeypatch.setattr(ingest_records, "MAX_PAYLOAD_BYTES", 1000)
    big = html("Big", "<p>" + "word " * 400 + "</p>").encode()
    path = write_warc(tmp_path / "big.warc.gz", [
        http_response("http://big.example/plain", big),
        http_response("http://big.example/bomb", gzipped(big), headers=[("Content-Type", "text/html"), ("Content-Encoding", "gzip")]),
        http_response("http://big.example/br-bomb", brotli.compress(big), headers=[("Content-Type", "text/html"), ("Content-Encoding", "br")]),
        http_response("http://big.example/zstd-bomb", zstandard.compress(big), headers=[("Content-Type", "text/html"), ("Content-Encoding", "zstd")]),
        http_response("http://big.example/small", PAGE),
    ])
    stats = ingest_warc(str(path), str(tmp_path / "out"))
    assert counts(stats) == (5, 1, {"payload too large": 4}, 0)


def test_a_page_the_parser_fails_on_is_skipped_and_the_file_goes_on(tmp_path, monkeypatch):
    real = ingest_records.parse_page

    def flaky(text, url, skipped=None):
        if "boom" in url:
            raise RuntimeError("parser bug")
        return real(text, url, skipped)

    monkeypatch.setattr(ingest_records, "parse_page", flaky)
    path = write_warc(tmp_path / "p.warc.gz", [
        http_response("http://p.example/boom", PAGE), http_response("http://p.example/fine", PAGE),
    ])
    stats = ingest_warc(str(path), str(tmp_path / "out"))
    assert counts(stats) == (2, 1, {"parse error": 1}, 0)
    assert [p["url"] for p in pages_of(tmp_path / "out")] == ["http://p.example/fine"]


def test_records_before_a_cut_are_kept(tmp_path):
    whole = write_warc(tmp_path / "whole.warc.gz", [
        http_response(f"http://cut.example/{i}", PAGE) for i in range(4)
    ])
    data = whole.read_bytes()
    cut = tmp_path / "cut.warc.gz"
    cut.write_bytes(data[: len(data) - 60])  # inside the last record's gzip member
    stats = ingest_warc(str(cut), str(tmp_path / "out"))
    assert counts(stats) == (4, 3, {"truncated record": 1}, 1)
    assert sorted(p["url"] for p in pages_of(tmp_path / "out")) == [f"http://cut.example/{i}" for i in range(3)]


def test_garbage_and_empty_files(tmp_path):
    garbage = tmp_path / "garbage.warc"
    garbage.write_bytes(b"this is not a WARC file\r\n\r\n")
    stats = ingest_warc(str(garbage), str(tmp_path / "out"))
    assert counts(stats) == (0, 0, {}, 1)
    assert (stats.bytes_skipped, stats.files_by_format) == (27, {"unknown": 1})
    assert stats.file_errors[0].reason.startswith("not a WARC or ARC file (no record was found in it): expected "
                                                  "a WARC record ('WARC/1.0') or an ARC file's 'filedesc://' line "
                                                  "at offset 0, found b'this is not a WARC file")
    binary = tmp_path / "binary.warc.gz"
    binary.write_bytes(bytes(range(256)) * 4)
    stats = ingest_warc(str(binary), str(tmp_path / "out1"))
    assert counts(stats) == (0, 0, {}, 1)
    assert stats.bytes_skipped == 1024 and "offset 0" in stats.file_errors[0].reason
    gz = tmp_path / "text.warc.gz"
    gz.write_bytes(gzip.compress(b"just text, gzipped\n"))
    stats = ingest_warc(str(gz), str(tmp_path / "out3"))
    assert counts(stats) == (0, 0, {}, 1)
    assert "found a gzip member that does not start with one" in stats.file_errors[0].reason
    empty = tmp_path / "empty.warc.gz"
    empty.write_bytes(b"")
    assert counts(ingest_warc(str(empty), str(tmp_path / "out2"))) == (0, 0, {}, 0)


ANCHOR_FIELDS = ("anchor_start", "anchor_end", "context_start", "context_end", "syntactic_left",
                 "syntactic_right", "topical_left", "topical_right")


def assert_rows_match(parsed_pages, pages, links):
    """Page and link rows equal the parser's records, field by field, in order."""
    by_url = {p["url"]: p for p in pages}
    assert len(by_url) == len(parsed_pages)
    rows = iter(links)
    for parsed in parsed_pages:
        page = by_url[parsed.url]
        assert page["words"] == list(parsed.words) and page["title_words"] == list(parsed.title_words)
        assert page["title"] == parsed.title
        for anchor in parsed.anchors:
            row = next(rows)
            assert row["source_url"] == parsed.url and row["target_url"] == anchor.target_url
            for name in ANCHOR_FIELDS:
                assert row[name] == getattr(anchor, name), name
            assert row["anchor_words"] == list(anchor.anchor_words(parsed.words))
            assert row["left_words"] == list(anchor.left_words(parsed.words))
            assert row["right_words"] == list(anchor.right_words(parsed.words))
    assert next(rows, None) is None


def test_rows_are_what_the_parser_returned(warc_dir, tmp_path):
    """The Parquet rows hold exactly the parser's output (the columnar writer loses nothing):
    pages written here, and the 16 real pages of the Common Crawl excerpt."""
    from simweb.core.charset import charset_from_content_type, decode_html
    from simweb.core.html import parse_page

    bodies = [html(f"Page {i}", "".join(f'<p>text {j} <a href="/t{j}">anchor {j}</a> more</p>' for j in range(i))
                   + '<a href="/img"><img src=x.png></a> <a href="/a">a</a> <a href="/a">a</a>')
              for i in range(6)]
    path = write_warc(tmp_path / "rows.warc.gz", [http_response(f"http://r.example/{i}", b.encode())
                                                   for i, b in enumerate(bodies)])
    ingest_warc(str(path), str(tmp_path / "out"))
    expected = [parse_page(body, f"http://r.example/{i}") for i, body in enumerate(bodies)]
    assert_rows_match(expected, pages_of(tmp_path / "out"), links_of(tmp_path / "out"))

    real = warc_dir / "warcfile.warc.gz"
    ingest_warc(str(real), str(tmp_path / "real"))
    expected = []
    with open(real, "rb") as f:
        for record in ArchiveIterator(f):
            if record.rec_type == "response":
                http_charset = charset_from_content_type(record.http_headers.get_header("Content-Type"))
                text, _ = decode_html(record.content_stream().read(), http_charset)
                expected.append(parse_page(text, normalize_url(record.rec_headers.get_header("WARC-Target-URI"))))
    assert sum(len(p.anchors) for p in expected) > 1000
    assert_rows_match(expected, pages_of(tmp_path / "real"), links_of(tmp_path / "real"))


def test_links_read_back_need_their_own_pages_part(tmp_path, monkeypatch):
    """Context words are offsets into the source page's words: a links part read with pages
    that are not its own, or offsets past the page's words, are refused, naming the part."""
    from simweb.core.records import Anchor, ParsedPage

    def fake_parse(text, url, skipped=None):
        words = ("alpha", "beta", "gamma")
        anchors = (
            Anchor("http://f.example/1", 1, 2, 0, 3, 1, 1, 1, 1),
            Anchor("http://f.example/2", 3, 3, 3, 3, 0, 0, 0, 0),  # an empty anchor at the page's end
        )
        if url.endswith("bad"):
            anchors += (Anchor("http://f.example/3", 2, 4, 0, 4, 0, 0, 0, 0),)
        return ParsedPage(url, "T", ("t",), words, anchors)

    monkeypatch.setattr(ingest_records, "parse_page", fake_parse)
    good = write_warc(tmp_path / "good.warc.gz", [http_response(f"http://f.example/p{i}", PAGE) for i in range(2)])
    ingest_warc(str(good), str(tmp_path / "out"))
    rows = links_of(tmp_path / "out")
    assert [(r["anchor_words"], r["left_words"], r["right_words"]) for r in rows] == [
        (["beta"], ["alpha"], ["gamma"]), ([], [], []),
    ] * 2

    bad = write_warc(tmp_path / "bad.warc.gz", [http_response("http://f.example/bad", PAGE)])
    ingest_warc(str(bad), str(tmp_path / "bad"))
    (part,) = (tmp_path / "bad" / "links").glob("*.parquet")
    with pytest.raises(ValueError, match=r"anchor_end <= context_end <= len\(words\).*found 0, 2, 4, 4 with 3 words"):
        with_context_words(pq.read_table(part), pq.read_table(pages_part_of(str(part))), where=str(part))
    (good_pages,) = (tmp_path / "out" / "pages").glob("*.parquet")
    with pytest.raises(ValueError, match="1 link.* name a source page that is not in its pages part"):
        with_context_words(pq.read_table(part).slice(0, 1), pq.read_table(good_pages), where=str(part))


def test_row_groups_are_written_as_pages_accumulate(tmp_path, monkeypatch):
    monkeypatch.setattr(ingest_parts, "PAGES_PER_ROW_GROUP", 2)
    path = write_warc(tmp_path / "g.warc.gz", [http_response(f"http://g.example/{i}", PAGE) for i in range(5)])
    stats = ingest_warc(str(path), str(tmp_path / "out"))
    part = tmp_path / "out" / "pages" / f"{stats.parts[0]}.parquet"
    assert pq.ParquetFile(part).metadata.num_row_groups == 3
    assert [p["url"] for p in pages_of(tmp_path / "out")] == [f"http://g.example/{i}" for i in range(5)]
    assert [row["source_url"] for row in links_of(tmp_path / "out")] == [f"http://g.example/{i}" for i in range(5)]
    assert {tuple(row["left_words"]) for row in links_of(tmp_path / "out")} == {("read",)}


# =============================================================================================
# Stats, listing, the in-process runner and the command line


COUNTS = st.dictionaries(st.sampled_from(["request record", "not HTML", "truncated record"]), st.integers(0, 50), max_size=3)
STATS = st.builds(
    IngestStats,
    files_read=st.integers(0, 5), files_unchanged=st.integers(0, 5),
    files_by_format=st.dictionaries(st.sampled_from(["warc", "arc", "unknown"]), st.integers(1, 5), max_size=3),
    records_read=st.integers(0, 1000), records_recovered=st.integers(0, 100), bytes_skipped=st.integers(0, 10**9),
    pages_written=st.integers(0, 1000), pages_unchanged=st.integers(0, 1000), links_written=st.integers(0, 10**6),
    skipped=COUNTS, links_skipped=COUNTS,
    alias_evidence=st.dictionaries(st.sampled_from(["redirect", "canonical", "slash", "index"]), st.integers(0, 50),
                                   max_size=4),
    aliases_skipped=st.dictionaries(st.sampled_from(["redirect without Location", "canonical link to another host"]),
                                    st.integers(0, 50), max_size=2),
    file_errors=st.lists(st.builds(FileError, st.sampled_from(["a.warc", "b.arc"]), st.sampled_from(["x", "y"]),
                                   st.lists(st.tuples(st.integers(0, 10**6), st.integers(0, 10**4)),
                                            max_size=3).map(tuple)),
                         max_size=2).map(tuple),
    parts=st.lists(st.sampled_from(["part-1", "part-2", "part-3"]), max_size=2, unique=True).map(lambda p: tuple(sorted(p))),
)


@settings(max_examples=100, deadline=None)
@given(a=STATS, b=STATS, c=STATS)
def test_stats_sum_is_associative_and_commutative(a, b, c):
    assert (a + b) + c == a + (b + c)
    assert a + b == b + a
    total = IngestStats.total([a, b, c])
    assert total.records_skipped == a.records_skipped + b.records_skipped + c.records_skipped
    assert IngestStats.from_dict(json.loads(json.dumps(total.to_dict()))) == total


def test_list_archive_files(tmp_path):
    (tmp_path / "crawl" / "sub").mkdir(parents=True)
    for name in ("a.warc.gz", "b.warc", "sub/c.warc.gz", "notes.txt", "old.arc.gz", "sub/OLDER.ARC", "x.gz"):
        (tmp_path / "crawl" / name).write_bytes(b"")
    crawl = tmp_path / "crawl"
    assert list_archive_files(str(crawl)) == [
        str(crawl / n) for n in ("a.warc.gz", "b.warc", "old.arc.gz", "sub/OLDER.ARC", "sub/c.warc.gz")]
    assert list_archive_files(str(crawl / "*.warc.gz")) == [str(crawl / "a.warc.gz")]
    assert list_archive_files(str(crawl / "*.arc.gz")) == [str(crawl / "old.arc.gz")]
    assert list_archive_files([str(crawl / "b.warc"), str(crawl / "notes.txt"), str(crawl / "b.warc")]) == [
        str(crawl / "b.warc"), str(crawl / "notes.txt")]  # named files are taken as they are, once
    with pytest.raises(FileNotFoundError, match=r"no WARC or ARC files \(\*\.warc, \*\.warc\.gz, \*\.warc\.zst, \*\.arc, \*\.arc\.gz\)"):
        list_archive_files(str(crawl / "*.txt.gz"))
    with pytest.raises(FileNotFoundError, match="no such file or folder; expected a WARC or ARC file"):
        list_archive_files(str(tmp_path / "nowhere"))


def test_a_folder_of_zip_files_alone_says_to_unzip_them(tmp_path):
    (tmp_path / "crawl").mkdir()
    (tmp_path / "crawl" / "site.zip").write_bytes(b"PK\x03\x04")
    with pytest.raises(FileNotFoundError, match=r"no WARC or ARC files .* 1 ZIP file\(s\) there "
                                                 r"\(e\.g\. .*site\.zip\): unzip them and name the WARC files"):
        list_archive_files(str(tmp_path / "crawl"))


def test_list_archive_files_skips_hidden_files_and_says_so(tmp_path, caplog):
    crawl = tmp_path / "crawl"
    (crawl / ".partial").mkdir(parents=True)
    (crawl / "sub").mkdir()
    for name in ("a.warc.gz", ".tmp-1234-a.warc.gz", ".partial/b.warc.gz", "sub/.c.warc", "sub/d.warc"):
        (crawl / name).write_bytes(b"")
    expected = [str(crawl / "a.warc.gz"), str(crawl / "sub/d.warc")]
    with caplog.at_level("WARNING", logger="simweb.tasks.sources"):
        assert list_archive_files(str(crawl)) == expected
    assert "skipped 3 hidden archive file(s)" in caplog.text
    caplog.clear()
    assert list_archive_files(str(crawl / "**" / "*.warc*")) == expected
    assert "skipped 3 hidden archive file(s)" in caplog.text
    # A hidden folder or file named, or a pattern for hidden names, is read.
    hidden_root = tmp_path / ".crawl"
    hidden_root.mkdir()
    (hidden_root / "e.warc.gz").write_bytes(b"")
    assert list_archive_files(str(hidden_root)) == [str(hidden_root / "e.warc.gz")]
    assert list_archive_files(str(crawl / ".tmp-1234-a.warc.gz")) == [str(crawl / ".tmp-1234-a.warc.gz")]
    assert list_archive_files(str(crawl / ".*.warc.gz")) == [str(crawl / ".tmp-1234-a.warc.gz")]


def test_list_archive_files_leaves_out_files_a_crawler_is_still_writing(tmp_path, caplog):
    """Heritrix and warcprox write ``NAME.warc.gz.open`` and rename it when done: left out, and
    said, so that a crawl read while it runs is not silently short."""
    crawl = tmp_path / "crawl"
    crawl.mkdir()
    for name in ("a.warc.gz", "b.warc.gz.open", "c.warc.open", "d.txt.open"):
        (crawl / name).write_bytes(b"")
    with caplog.at_level("WARNING", logger="simweb.tasks.sources"):
        assert list_archive_files(str(crawl)) == [str(crawl / "a.warc.gz")]
    assert "left out 2 archive file(s) still being written by the crawler" in caplog.text
    assert "b.warc.gz.open" in caplog.text


def wet_record(uri: str, text: bytes):
    """A conversion record, as Common Crawl's WET files hold: a page's text, no HTML."""
    def make(writer: WARCWriter):
        return writer.create_warc_record(uri, "conversion", payload=io.BytesIO(text),
                                         warc_headers_dict={"Content-Type": "text/plain"})
    return make


def test_archive_files_compressed_whole_with_bzip2_xz_or_lz4_are_left_out_and_said(tmp_path, caplog):
    crawl = tmp_path / "crawl"
    crawl.mkdir()
    for name in ("a.warc.bz2", "b.warc.xz", "c.arc.lz4"):
        (crawl / name).write_bytes(b"")
    with pytest.raises(FileNotFoundError, match=r"; found 3 archive file\(s\) compressed with bzip2, xz or lz4"):
        list_archive_files(str(crawl))
    (crawl / "d.warc").write_bytes(b"")
    with caplog.at_level("WARNING", logger="simweb.tasks.sources"):
        assert list_archive_files(str(crawl)) == [str(crawl / "d.warc")]
    assert "left out 3 archive file(s) compressed with bzip2, xz or lz4" in caplog.text


def test_wet_and_wat_files_are_left_out_of_a_folder_and_said(warc_dir, tmp_path, caplog):
    crawl = tmp_path / "crawl"
    crawl.mkdir()
    write_warc(crawl / "CC-MAIN-1.warc.wet.gz", [wet_record("http://a.example/", b"the text")])
    (crawl / "CC-MAIN-1.warc.wat.gz").write_bytes(b"")
    with pytest.raises(FileNotFoundError, match=r"; found 2 WET or WAT file\(s\) .* name the crawl's WARC files"):
        list_archive_files(str(crawl))
    shutil.copy(warc_dir / "example.warc.gz", crawl / "CC-MAIN-1.warc.gz")
    with caplog.at_level("WARNING", logger="simweb.tasks.sources"):
        assert list_archive_files(str(crawl)) == [str(crawl / "CC-MAIN-1.warc.gz")]
    assert "left out 2 WET or WAT file(s)" in caplog.text


def test_a_wet_file_named_gives_no_page_and_the_message_says_why(tmp_path):
    from simweb.tasks.ingest.stats import NothingIngested, no_page_hint

    wet = write_warc(tmp_path / "text.warc.wet.gz", [wet_record(f"http://a.example/{i}", b"text") for i in range(3)])
    stats = ingest_files([str(wet)], str(tmp_path / "out"))
    assert stats.pages_written == 0 and stats.skipped == {"conversion record": 3}
    assert "conversion records: the pages' text without their HTML and links, as in a WET file" in no_page_hint(stats)
    assert no_page_hint(stats) in str(NothingIngested(stats))
    assert no_page_hint(IngestStats(skipped={"request record": 3, "conversion record": 1})) == ""


def test_ingest_files_reports_an_unreadable_file_and_goes_on(warc_dir, tmp_path):
    stats = ingest_files([str(tmp_path / "gone.warc.gz"), str(warc_dir / "example.warc.gz")], str(tmp_path / "out"))
    assert stats.files_read == 1 and stats.pages_written == 1
    (error,) = stats.file_errors
    assert error.path.endswith("gone.warc.gz") and "FileNotFoundError" in error.reason


def test_command_line_without_prefect(warc_dir, tmp_path, capsys):
    code = simweb_main(["ingest", str(warc_dir / "example.warc.gz"), str(warc_dir / "clipped.warc.gz"),
                        "--out", str(tmp_path / "out"), "--no-prefect"])
    assert code == 3  # a file was damaged; the other was read
    out = capsys.readouterr().out
    assert "ingest: 2 files read; 2 WARC" in out
    for label, n in (("records read", "7"), ("pages written", "1"), ("truncated record", "1"), ("file errors", "1"),
                     ("bytes skipped", "18,184")):
        assert re.search(rf"^ +{label} +{n}$", out, re.M), label
    assert simweb_main(["ingest", str(tmp_path / "nothing-here"), "--out", str(tmp_path / "o"), "--no-prefect"]) == 2
    assert "no such file or folder" in capsys.readouterr().err


def test_a_broken_link_in_a_crawl_folder_is_a_file_error_not_a_crash(warc_dir, tmp_path, capsys):
    crawl = tmp_path / "crawl"
    crawl.mkdir()
    (crawl / "example.warc.gz").symlink_to(warc_dir / "example.warc.gz")
    (crawl / "moved.warc.gz").symlink_to(tmp_path / "moved-away.warc.gz")  # its target is gone
    assert list_archive_files(str(crawl)) == [str(crawl / "example.warc.gz"), str(crawl / "moved.warc.gz")]
    code = simweb_main(["ingest", str(crawl), "--out", str(tmp_path / "out"), "--no-prefect"])
    captured = capsys.readouterr()
    assert code == 3 and "Traceback" not in captured.err  # one file unread, the other read
    assert re.search(r"^ +file errors +1$", captured.out, re.M) and "moved.warc.gz" in captured.out
    assert re.search(r"^ +pages written +1$", captured.out, re.M)
