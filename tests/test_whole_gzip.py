"""Archives gzipped as one whole member, read in order (warcio reads their first record only).

The files are made here with warcio's writer, in the shapes of gowarc's test files
``corrupted-trailing-bytes.warc.gz.open`` (a WARC gzipped as one whole member, then bytes that
are not gzip data) and ``corrupted-mid-record.warc.gz.open`` (the whole member, then a record's
gzip member cut in the middle of its payload): each holds a warcinfo record and two pages.
"""
from __future__ import annotations

import gzip
import io
import random
import subprocess
import sys
from pathlib import Path

import pytest
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from simweb.cli import main as simweb_main
from simweb.tasks.archives import ArchiveRecords
from simweb.tasks.ingest.files import ingest_warc
from simweb.tasks.storage import read_parquet

PAGES = ("http://go.example/", "http://go.example/about")


def warc(records) -> bytes:
    """Uncompressed WARC records written by warcio: (url, body) responses after a warcinfo record."""
    buf = io.BytesIO()
    writer = WARCWriter(buf, gzip=False)
    writer.write_record(writer.create_warcinfo_record("go.warc", {"software": "tests"}))
    for url, body in records:
        http = StatusAndHeaders("200 OK", [("Content-Type", "text/html")], protocol="HTTP/1.1")
        writer.write_record(writer.create_warc_record(url, "response", payload=io.BytesIO(body), http_headers=http))
    return buf.getvalue()


def page(i: int) -> bytes:
    return f"<html><title>page {i}</title><body><p>gowarc words {i} <a href='/about'>about</a></p></body></html>".encode()


WHOLE = gzip.compress(warc([(url, page(i)) for i, url in enumerate(PAGES)]), mtime=0)


def trailing_bytes(folder: Path) -> Path:
    path = folder / "corrupted-trailing-bytes.warc.gz.open"
    path.write_bytes(WHOLE + b"\x00\x00garbage written after the gzip member\n" * 3)
    return path


def mid_record(folder: Path) -> Path:
    rng = random.Random(7)
    text = " ".join("".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(6)) for _ in range(2000))
    buf = io.BytesIO()
    writer = WARCWriter(buf, gzip=True)
    http = StatusAndHeaders("200 OK", [("Content-Type", "text/html")], protocol="HTTP/1.1")
    writer.write_record(writer.create_warc_record("http://go.example/cut", "response",
                                                  payload=io.BytesIO(f"<html><body>{text}".encode()), http_headers=http))
    member = buf.getvalue()
    path = folder / "corrupted-mid-record.warc.gz.open"
    path.write_bytes(WHOLE + member[:len(member) * 2 // 3])
    return path


def pages_of(out: Path) -> list[dict]:
    return read_parquet(str(out / "pages")).to_pylist()


def test_a_file_gzipped_whole_is_read_in_order(tmp_path):
    path = tmp_path / "whole.warc.gz"
    path.write_bytes(WHOLE)
    stats = ingest_warc(str(path), str(tmp_path / "out"))
    assert (stats.records_read, stats.pages_written, stats.bytes_skipped) == (3, 2, 0)
    rows = pages_of(tmp_path / "out")
    assert sorted((r["url"], r["record_offset"], r["record_length"]) for r in rows) == [(u, 0, 0) for u in PAGES]
    (error,) = stats.file_errors
    assert "gzipped as a whole" in error.reason and "not replayable until the file is recompressed" in error.reason
    assert f"warcio recompress {path} {tmp_path / 'whole.recompressed.warc.gz'}" in error.reason


def test_bytes_after_the_member_are_damage_and_every_page_before_is_kept(tmp_path):
    path = trailing_bytes(tmp_path)
    stats = ingest_warc(str(path), str(tmp_path / "out"))
    assert (stats.records_read, stats.pages_written, dict(stats.skipped)) == (3, 2, {"warcinfo record": 1})
    assert {r["url"] for r in pages_of(tmp_path / "out")} == set(PAGES)
    (error,) = stats.file_errors
    assert error.damage == ((len(WHOLE), path.stat().st_size - len(WHOLE)),)
    assert f"ends at offset {len(WHOLE)}, and the bytes after it are not a record" in error.reason
    # warcio recompress cannot read bytes that are not gzip data: the advice cuts them first.
    assert f"warcio recompress {path} " not in error.reason
    assert f"head -c {len(WHOLE)} {path} > {tmp_path / 'corrupted-trailing-bytes.trimmed.warc.gz'}" in error.reason


def test_a_member_cut_after_the_whole_one(tmp_path):
    path = mid_record(tmp_path)
    stats = ingest_warc(str(path), str(tmp_path / "out"))
    assert (stats.records_read, stats.pages_written, dict(stats.skipped)) == (
        4, 2, {"warcinfo record": 1, "truncated record": 1})
    assert {r["url"] for r in pages_of(tmp_path / "out")} == set(PAGES)
    (error,) = stats.file_errors
    assert f"the gzip member of the record at offset {len(WHOLE)} is cut" in error.reason
    assert f"warcio recompress {path} " in error.reason


def recompress(source: Path, out: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "warcio.cli", "recompress", str(source), str(out)],
                          capture_output=True, text=True, timeout=120)


def test_the_advice_given_works_and_the_one_withheld_would_not(tmp_path):
    """What the messages say to run, run: on the file with bytes after its member warcio recompress
    fails, or reads those bytes as records of their own (so it is not advised), and the cut it
    advises first makes it work."""
    path = trailing_bytes(tmp_path)
    direct = recompress(path, tmp_path / "direct.warc.gz").stdout
    assert "Recompress Failed" in direct or "5 records read" in direct  # 2 records made of the garbage
    alone = tmp_path / "alone.warc.gz"
    alone.write_bytes(WHOLE + b"\x00garbage after the member\n" * 4)
    assert "Recompress Failed" in recompress(alone, tmp_path / "alone-fixed.warc.gz").stdout
    trimmed = tmp_path / "trimmed.warc.gz"
    trimmed.write_bytes(path.read_bytes()[:len(WHOLE)])  # head -c
    fixed = tmp_path / "fixed.warc.gz"
    assert "3 records read and recompressed" in recompress(trimmed, fixed).stdout
    # The file with a cut member after the whole one: recompressed as it is (the cut record stays cut).
    assert "4 records read and recompressed" in recompress(mid_record(tmp_path), tmp_path / "mid.warc.gz").stdout
    for source, errors in ((fixed, 0), (tmp_path / "mid.warc.gz", 1)):
        stats = ingest_warc(str(source), str(tmp_path / f"out-{source.name}"))
        assert (stats.pages_written, len(stats.file_errors)) == (2, errors)
        assert all(r["record_length"] > 0 for r in pages_of(tmp_path / f"out-{source.name}"))  # replayable


@pytest.mark.parametrize("make", [trailing_bytes, mid_record])
def test_offsets_are_never_negative(make, tmp_path):
    with open(make(tmp_path), "rb") as raw:
        records = ArchiveRecords(raw)
        offsets = []
        for offset, _ in records:
            offsets.append(offset)
            records.finish()
            assert records.length is None or records.length >= 0
    assert offsets[:3] == [0, 0, 0] and min(offsets) >= 0


def test_cdxj_leaves_out_records_without_a_byte_range_and_says_so(tmp_path, capsys):
    folder = tmp_path / "warc"
    folder.mkdir()
    trailing_bytes(folder)
    ok = folder / "ok.warc.gz"
    with open(ok, "wb") as f:
        writer = WARCWriter(f, gzip=True)
        http = StatusAndHeaders("200 OK", [("Content-Type", "text/html")], protocol="HTTP/1.1")
        writer.write_record(writer.create_warc_record("http://ok.example/", "response",
                                                      payload=io.BytesIO(page(9)), http_headers=http))
    crawl = tmp_path / "crawl"
    assert simweb_main(["ingest", str(folder / "corrupted-trailing-bytes.warc.gz.open"), str(ok),
                        "--out", str(crawl), "--no-prefect"]) == 3
    capsys.readouterr()
    assert simweb_main(["cdxj", str(crawl), "-o", str(tmp_path / "x.cdxj")]) == 0
    lines = (tmp_path / "x.cdxj").read_text().splitlines()
    assert len(lines) == 1 and '"url": "http://ok.example/"' in lines[0]
    err = capsys.readouterr().err
    assert "2 record(s) left out, not replayable: corrupted-trailing-bytes.warc.gz.open is compressed as a whole" in err
