"""ARC files, and archives damaged on purpose, through the ingest stage (simweb.tasks.archives).

Every file here is made in the test from a real one in ../shared/fixtures/warc: ARC files
from the HTML responses of the Common Crawl excerpt ``warcfile.warc.gz`` (50 records: 1
warcinfo, then request, response, metadata for each of 16 pages, and a last request — so
record ``3k + 2`` is the k-th response), and damaged files from that excerpt (gzipped per
record, or decompressed into a plain WARC) and from ``example.warc.gz``. Expected offsets and
lengths are read from the bytes by other means (a regular expression over the headers,
zlib over the gzip members), not by the code under test.
"""
from __future__ import annotations

import gzip
import io
import random
import re
import struct
import zlib
from pathlib import Path

import pytest
import zstandard
from hypothesis import given, settings
from hypothesis import strategies as st
from warcio.archiveiterator import ArchiveIterator
from warcio.warcwriter import WARCWriter

from simweb.tasks.archives import ArchiveRecords, RecordEnd
from simweb.tasks.ingest.files import ingest_files, ingest_warc
from simweb.tasks.sources import list_archive_files
from simweb.tasks.payloads import encoded_payload_ends
from simweb.tasks.storage import read_parquet

CC = "warcfile.warc.gz"
CC_TYPES = ["warcinfo"] + ["request", "response", "metadata"] * 16 + ["request"]
CC_SKIPPED = {"warcinfo record": 1, "request record": 17, "metadata record": 16}


def response_index(k: int) -> int:
    """The record index of the k-th response (k from 0) of the Common Crawl excerpt."""
    return 3 * k + 2


def counts(stats) -> tuple:
    return (stats.records_read, stats.pages_written, dict(stats.skipped), len(stats.file_errors),
            stats.records_recovered, stats.bytes_skipped)


def rows(folder: Path, dataset: str, drop=()) -> list[tuple]:
    table = read_parquet(str(folder / dataset))
    return sorted(tuple((k, v) for k, v in row.items() if k not in drop) for row in table.to_pylist())


def gzip_members(data: bytes) -> list[bytes]:
    """The gzip members of ``data``, as bytes, by zlib alone."""
    members, pos = [], 0
    while pos < len(data):
        d = zlib.decompressobj(16 + zlib.MAX_WBITS)
        d.decompress(data[pos:])
        end = len(data) - len(d.unused_data)
        members.append(data[pos:end])
        pos = end
    return members


def record_starts(plain: bytes) -> list[int]:
    """Offsets of the records of an uncompressed WARC file: its WARC/1.0 lines at line starts."""
    return [m.start() for m in re.finditer(rb"(?:^|(?<=\n))WARC/1\.0\r\n", plain)]


def block_end(plain: bytes, offset: int) -> int:
    """Where the block of the record at ``offset`` ends, by its header's Content-Length."""
    head_end = plain.index(b"\r\n\r\n", offset) + 4
    length = int(re.search(rb"\r\nContent-Length: *(\d+)\r\n", plain[offset:head_end]).group(1))
    return head_end + length


@pytest.fixture(scope="module")
def cc(warc_dir) -> bytes:
    return (warc_dir / CC).read_bytes()


@pytest.fixture(scope="module")
def cc_plain(cc) -> bytes:
    plain = gzip.decompress(cc)
    assert len(record_starts(plain)) == 50
    return plain


@pytest.fixture(scope="module")
def cc_reference(warc_dir, tmp_path_factory):
    """The excerpt ingested as it is: its stats and output folder."""
    out = tmp_path_factory.mktemp("cc")
    stats = ingest_warc(str(warc_dir / CC), str(out))
    assert (stats.records_read, stats.pages_written, dict(stats.skipped)) == (50, 16, CC_SKIPPED)
    return stats, out


def write(path: Path, data: bytes) -> str:
    path.write_bytes(data)
    return str(path)


# =============================================================================================
# ARC files


def responses_of(warc: Path) -> list[tuple[str, str, str, str, bytes]]:
    """(URL, IP address, 14-digit date, media type, HTTP response bytes) of each response of a
    WARC file: what an ARC v1 record holds."""
    found = []
    with open(warc, "rb") as f:
        for record in ArchiveIterator(f, no_record_parse=True):
            if record.rec_type != "response":
                continue
            http = record.raw_stream.read()
            media = re.search(rb"\r\nContent-Type: *([^;\r\n]+)", http, re.I).group(1).decode().strip()
            date = re.sub(r"\D", "", record.rec_headers.get_header("WARC-Date"))[:14]
            found.append((record.rec_headers.get_header("WARC-Target-URI"),
                          record.rec_headers.get_header("WARC-IP-Address") or "0.0.0.0", date, media, http))
    return found


def arc_blocks(name: str, responses) -> list[bytes]:
    """An ARC v1 file as its records: the version block, then one record per response, each
    ending with a newline (ARC File Format 1.0: ``URL IP-address Archive-date Content-type
    Archive-length``, the length counting the bytes after the header line, without the newline)."""
    version = b"1 0 simweb-tests\nURL IP-address Archive-date Content-type Archive-length\n"
    blocks = [f"filedesc://{name} 0.0.0.0 20200803000000 text/plain {len(version)}\n".encode() + version + b"\n"]
    for url, ip, date, media, http in responses:
        blocks.append(f"{url} {ip} {date} {media} {len(http)}\n".encode() + http + b"\n")
    return blocks


def warc_of(responses) -> bytes:
    """A WARC file (gzipped per record) of a warcinfo record and the same responses."""
    out = io.BytesIO()
    writer = WARCWriter(out, gzip=True)
    writer.write_record(writer.create_warcinfo_record("same.warc.gz", {"software": "simweb-tests"}))
    for url, ip, date, _, http in responses:
        iso = f"{date[:4]}-{date[4:6]}-{date[6:8]}T{date[8:10]}:{date[10:12]}:{date[12:14]}Z"
        writer.write_record(writer.create_warc_record(
            url, "response", payload=io.BytesIO(http),
            warc_headers_dict={"WARC-Date": iso, "WARC-IP-Address": ip}))
    return out.getvalue()


@pytest.mark.parametrize("gzipped", [False, True], ids=["arc", "arc.gz"])
def test_an_arc_file_gives_the_pages_and_links_of_the_same_responses_in_warc(gzipped, warc_dir, cc_reference,
                                                                             tmp_path):
    """The 16 responses of the excerpt written as an ARC file: the version block (read as a
    warcinfo record) and 16 records. Its pages and links tables equal those of the WARC file
    (apart from where the pages were found), and its counts those of a WARC file holding the
    same responses and a warcinfo record."""
    reference, reference_out = cc_reference
    responses = responses_of(warc_dir / CC)
    assert len(responses) == 16
    blocks = arc_blocks("cc.arc", responses)
    arc = write(tmp_path / ("cc.arc.gz" if gzipped else "cc.arc"),
                b"".join(map(gzip.compress, blocks)) if gzipped else b"".join(blocks))
    stats = ingest_warc(arc, str(tmp_path / "arc"))
    assert counts(stats) == (17, 16, {"warcinfo record": 1}, 0, 0, 0)
    assert stats.files_by_format == {"arc": 1} and stats.links_written == reference.links_written == 1383

    place = ("source_file", "record_offset", "record_length")  # where the record lies
    assert rows(tmp_path / "arc", "pages", place) == rows(reference_out, "pages", place)
    assert rows(tmp_path / "arc", "links") == rows(reference_out, "links")

    same = ingest_warc(write(tmp_path / "same.warc.gz", warc_of(responses)), str(tmp_path / "same"))
    for name in ("records_read", "pages_written", "links_written", "skipped", "links_skipped", "file_errors"):
        assert getattr(stats, name) == getattr(same, name), name
    assert rows(tmp_path / "arc", "links") == rows(tmp_path / "same", "links")

    # Each page's offset is where its ARC record starts: seeking there reads it again.
    with open(arc, "rb") as f:
        for page in read_parquet(str(tmp_path / "arc" / "pages")).to_pylist():
            f.seek(page["record_offset"])
            record = next(iter(ArchiveIterator(f, arc2warc=True)))
            assert record.rec_headers.get_header("WARC-Target-URI") == page["url"]


def arc_v2_blocks(name: str, responses) -> list[bytes]:
    """The same records in an ARC version 2 file: header lines ``URL IP-address Archive-date
    Content-type Result-code Checksum Location Offset Filename Archive-length``."""
    version = (b"2 0 simweb-tests\nURL IP-address Archive-date Content-type Result-code Checksum Location "
               b"Offset Filename Archive-length\n")
    blocks = [f"filedesc://{name} 0.0.0.0 20200803000000 text/plain 200 - - 0 {name} {len(version)}\n".encode()
              + version + b"\n"]
    for url, ip, date, media, http in responses:
        offset = sum(map(len, blocks))
        blocks.append(f"{url} {ip} {date} {media} 200 3I42H3S6NNFQ2MSVX7XZKYAYSCX5QBYJ - {offset} {name} "
                      f"{len(http)}\n".encode() + http + b"\n")
    return blocks


@pytest.mark.parametrize("gzipped", [False, True], ids=["arc", "arc.gz"])
def test_an_arc_version_2_file_reads_like_version_1(gzipped, warc_dir, tmp_path):
    """Version 2 header lines carry five more fields (result code, checksum, location, offset,
    file name): the same pages, links and skips as the version 1 file of the same responses."""
    responses = responses_of(warc_dir / CC)
    out = {}
    for version, blocks in (("v1", arc_blocks("same.arc", responses)), ("v2", arc_v2_blocks("same.arc", responses))):
        data = b"".join(map(gzip.compress, blocks)) if gzipped else b"".join(blocks)
        stats = ingest_warc(write(tmp_path / f"{version}.arc{'.gz' if gzipped else ''}", data), str(tmp_path / version))
        assert counts(stats) == (17, 16, {"warcinfo record": 1}, 0, 0, 0), version
        out[version] = tmp_path / version
    assert rows(out["v2"], "links") == rows(out["v1"], "links")
    drop = ("source_file", "record_offset", "record_length")
    assert rows(out["v2"], "pages", drop=drop) == rows(out["v1"], "pages", drop=drop)


def test_a_folder_of_arc_and_warc_files_reads_both(warc_dir, tmp_path):
    crawl = tmp_path / "crawl"
    crawl.mkdir()
    responses = responses_of(warc_dir / CC)
    write(crawl / "first.arc.gz", b"".join(map(gzip.compress, arc_blocks("first.arc.gz", responses[:6]))))
    write(crawl / "second.arc", b"".join(arc_blocks("second.arc", responses[6:10])))
    write(crawl / "example.warc.gz", (warc_dir / "example.warc.gz").read_bytes())
    files = list_archive_files(str(crawl))
    assert [Path(f).name for f in files] == ["example.warc.gz", "first.arc.gz", "second.arc"]
    stats = ingest_files(files, str(tmp_path / "out"))
    assert stats.files_by_format == {"arc": 2, "warc": 1}
    assert (stats.records_read, stats.pages_written) == (7 + 5 + 6, 6 + 4 + 1)
    assert stats.summary().startswith("ingest: 3 files read; 2 ARC, 1 WARC\n")


def test_the_inbox_of_ingest_new_crawl_takes_arc_files(warc_dir, tmp_path):
    from simweb.tasks.ledger import scan_inbox

    inbox = tmp_path / "inbox"
    inbox.mkdir()
    responses = responses_of(warc_dir / CC)
    write(inbox / "old.arc.gz", b"".join(map(gzip.compress, arc_blocks("old.arc.gz", responses[:2]))))
    write(inbox / "new.warc.gz", (warc_dir / "example.warc.gz").read_bytes())
    write(inbox / "notes.txt", b"not an archive")
    scan = scan_inbox(str(inbox), str(tmp_path / "crawl"), settle_seconds=0)
    assert [f.name for f in scan.new] == ["new.warc.gz", "old.arc.gz"]
    assert [Path(p).name for p in scan.ignored] == ["notes.txt"]


@pytest.mark.parametrize("gzipped", [False, True], ids=["arc", "arc.gz"])
def test_a_damaged_arc_file_is_read_on_at_the_next_arc_record(gzipped, warc_dir, tmp_path):
    """Bytes inserted before the 5th record of an ARC file (in a plain one they end with a
    line break: an ARC header line is found at the start of a line): the 16 pages are kept,
    the records after the damage recovered and the inserted bytes skipped — in a plain file
    but for their last line break, the blank line before the record where reading resumed."""
    blocks = arc_blocks("damaged.arc", responses_of(warc_dir / CC))
    garbage = b"\x00not an ARC record 1.2.3.4 20200803000000 text/html 99x\xff" * 3 + b"\n"
    if gzipped:
        blocks = [gzip.compress(b) for b in blocks]
    data = b"".join(blocks[:5]) + garbage + b"".join(blocks[5:])
    stats = ingest_warc(write(tmp_path / ("damaged.arc.gz" if gzipped else "damaged.arc"), data), str(tmp_path / "out"))
    skipped = len(garbage) if gzipped else len(garbage) - 1
    assert counts(stats) == (17, 16, {"warcinfo record": 1}, 1, 12, skipped)
    assert stats.file_errors[0].damage == ((len(b"".join(blocks[:5])), skipped),)


# =============================================================================================
# Damaged WARC files, uncompressed


def test_the_plain_excerpt_reads_like_the_gzipped_one(cc_plain, cc_reference, tmp_path):
    reference, reference_out = cc_reference
    stats = ingest_warc(write(tmp_path / "cc.warc", cc_plain), str(tmp_path / "out"))
    assert counts(stats) == (50, 16, CC_SKIPPED, 0, 0, 0)
    assert rows(tmp_path / "out", "links") == rows(reference_out, "links")


def test_a_missing_separator_loses_nothing(cc_plain, tmp_path):
    """The blank lines after the 2nd response (record 5) dropped: that record was read in full
    and is kept; the next one starts right where its block ends, so no byte is skipped, and
    the 44 records after it are recovered."""
    starts = record_starts(cc_plain)
    end = block_end(cc_plain, starts[5])
    assert cc_plain[end:starts[6]] == b"\r\n\r\n"
    damaged = cc_plain[:end] + cc_plain[starts[6]:]
    stats = ingest_warc(write(tmp_path / "d.warc", damaged), str(tmp_path / "out"))
    assert counts(stats) == (50, 16, CC_SKIPPED, 1, 44, 0)
    (error,) = stats.file_errors
    assert error.damage == ((end, 0),)
    assert f"the record at offset {starts[5]} is not followed by the blank lines that end a record" in error.reason


def test_a_short_content_length_cuts_a_plain_payload(cc_plain, tmp_path):
    """The 1st response's Content-Length 10 bytes short: its block ends before ``>\\r\\n</html>``,
    the rest of its payload — nothing tells whether a plain payload was read in full, so the
    record is skipped as truncated; the 10 bytes are skipped, the 47 records after recovered."""
    starts = record_starts(cc_plain)
    at = starts[response_index(0)]
    end = block_end(cc_plain, at)
    assert cc_plain[end - 10:end] == b">\r\n</html>"
    header = re.search(rb"\r\nContent-Length: (\d+)\r\n", cc_plain[at:])
    length = int(header.group(1))
    damaged = (cc_plain[:at + header.start(1)] + str(length - 10).encode() + cc_plain[at + header.end(1):])
    # One digit fewer: the record (and every offset after the header) moves one byte back.
    shift = len(str(length)) - len(str(length - 10))
    stats = ingest_warc(write(tmp_path / "d.warc", damaged), str(tmp_path / "out"))
    assert counts(stats) == (50, 15, {**CC_SKIPPED, "truncated record": 1}, 1, 47, 10)
    assert stats.file_errors[0].damage == ((end - 10 - shift, 10),)


@pytest.mark.parametrize("short, kept", [(4, 1), (8, 1), (9, 0)])
def test_a_short_content_length_keeps_a_gzip_body_that_decodes_completely(short, kept, warc_dir, tmp_path):
    """example.warc.gz decompressed: its response has a gzip Content-Encoding. With its
    Content-Length 4 or 8 bytes short, only the gzip trailer (CRC-32 and length) is cut: the
    deflate stream ends inside the block, the page was read in full and is kept. 9 bytes short
    cut the deflate stream itself: the record is skipped as truncated."""
    plain = gzip.decompress((warc_dir / "example.warc.gz").read_bytes())
    starts = record_starts(plain)
    at = starts[2]
    assert b"Content-Encoding: gzip" in plain[at:starts[3]]
    header = re.search(rb"\r\nContent-Length: (\d+)\r\n", plain[at:])
    length = int(header.group(1))
    assert len(str(length)) == len(str(length - short))
    damaged = plain[:at + header.start(1)] + str(length - short).encode() + plain[at + header.end(1):]
    stats = ingest_warc(write(tmp_path / "d.warc", damaged), str(tmp_path / "out"))
    skipped = {"warcinfo record": 2, "request record": 2, "revisit record": 1}
    assert counts(stats) == (6, kept, {**skipped, **({} if kept else {"truncated record": 1})}, 1, 3, short)


def test_a_long_content_length_runs_into_the_next_record(cc_plain, tmp_path):
    """The 1st response's Content-Length 100 bytes too long: its block swallows the start of
    the metadata record after it. That record's WARC/1.0 line is found inside the block, so the
    response is skipped as truncated (gap from its start) and the metadata record and the 46
    after it are recovered."""
    starts = record_starts(cc_plain)
    at = starts[response_index(0)]
    header = re.search(rb"\r\nContent-Length: (\d+)\r\n", cc_plain[at:])
    length = int(header.group(1))
    assert len(str(length)) == len(str(length + 100))
    damaged = cc_plain[:at + header.start(1)] + str(length + 100).encode() + cc_plain[at + header.end(1):]
    stats = ingest_warc(write(tmp_path / "d.warc", damaged), str(tmp_path / "out"))
    gap = starts[3] - at - 4  # the record and its block; the blank lines before the next are not skipped
    assert counts(stats) == (50, 15, {**CC_SKIPPED, "truncated record": 1}, 1, 47, gap)
    assert stats.file_errors[0].damage == ((at, gap),)
    assert f"runs past the start of the next record at offset {starts[3]}" in stats.file_errors[0].reason


@pytest.mark.parametrize("value", [b"37x60", b"", b"-5"])
def test_a_content_length_that_is_not_a_number_skips_its_record(value, cc_plain, tmp_path):
    """The 1st response's Content-Length replaced by something that says nothing about where
    it ends: the record cannot be read (it is not counted as read) and reading resumes at the
    next WARC/1.0 line: 49 records, 15 pages, 47 recovered."""
    starts = record_starts(cc_plain)
    at = starts[response_index(0)]
    header = re.search(rb"\r\nContent-Length: (\d+)\r\n", cc_plain[at:])
    damaged = cc_plain[:at + header.start(1)] + value + cc_plain[at + header.end(1):]
    shift = len(header.group(1)) - len(value)
    stats = ingest_warc(write(tmp_path / "d.warc", damaged), str(tmp_path / "out"))
    gap = starts[3] - shift - at - 4
    assert counts(stats) == (49, 15, CC_SKIPPED, 1, 47, gap)
    assert f"the record at offset {at} has no usable Content-Length (found {value.decode()!r})" in \
        stats.file_errors[0].reason


def test_a_truncated_plain_file_keeps_what_came_before(cc_plain, tmp_path):
    """The file cut in the middle of the 3rd response's block: 9 records read, the cut one
    skipped as truncated, the bytes from its start to the end of the file skipped."""
    starts = record_starts(cc_plain)
    at = starts[response_index(2)]
    cut = (at + block_end(cc_plain, at)) // 2
    stats = ingest_warc(write(tmp_path / "d.warc", cc_plain[:cut]), str(tmp_path / "out"))
    assert counts(stats) == (9, 2, {"warcinfo record": 1, "request record": 3, "metadata record": 2,
                                    "truncated record": 1}, 1, 0, cut - at)
    assert f"the file ends inside the record at offset {at} (truncated)" in stats.file_errors[0].reason


def test_bytes_inserted_between_records_are_skipped(cc_plain, tmp_path):
    """Binary bytes, a version line that is not one warcio reads and a WARC/1.0 that starts
    no record, inserted before record 3 (no line break before the real version line): exactly
    the inserted bytes are skipped, every page kept."""
    starts = record_starts(cc_plain)
    garbage = b"\x00\xffWARC/2.0\r\nnot a record " + bytes(range(14, 256)) + b" WARC/1.0\r\nWARC-Type: x\r\n\r\nend"
    damaged = cc_plain[:starts[3]] + garbage + cc_plain[starts[3]:]
    stats = ingest_warc(write(tmp_path / "d.warc", damaged), str(tmp_path / "out"))
    assert counts(stats) == (50, 16, CC_SKIPPED, 1, 47, len(garbage))
    assert stats.file_errors[0].damage == ((starts[3], len(garbage)),)


def test_bytes_before_the_first_record(cc_plain, tmp_path):
    """Lines before the first record: skipped but for the line break before the record."""
    garbage = b"HTTP/1.1 200 OK\r\n\r\n<html>not an archive</html>\n" * 2
    stats = ingest_warc(write(tmp_path / "d.warc", garbage + cc_plain), str(tmp_path / "out"))
    assert counts(stats) == (50, 16, CC_SKIPPED, 1, 50, len(garbage) - 1)
    assert stats.files_by_format == {"warc": 1}
    assert stats.file_errors[0].reason.startswith("expected a WARC record ('WARC/1.0') or an ARC file's "
                                                  "'filedesc://' line at offset 0, found b'HTTP/1.1 200 OK")


def test_several_kinds_of_damage_in_one_file(cc_plain, tmp_path):
    """A missing separator after record 5, 333 bytes inserted before record 20 and the file
    cut 200 bytes before the end of the block of record 41 (the 14th response): three gaps,
    each counted."""
    starts = record_starts(cc_plain)
    end5 = block_end(cc_plain, starts[5])
    garbage = bytes(random.Random(1).randrange(32, 127) for _ in range(333)).replace(b"WARC/", b"warc/")
    cut = block_end(cc_plain, starts[41]) - 200
    damaged = cc_plain[:end5] + cc_plain[starts[6]:starts[20]] + garbage + cc_plain[starts[20]:cut]
    shift = starts[6] - end5
    stats = ingest_warc(write(tmp_path / "d.warc", damaged), str(tmp_path / "out"))
    pages = 13  # responses at 2, 5, ..., 38; the one at 41 is cut
    assert counts(stats) == (42, pages, {"warcinfo record": 1, "request record": 14, "metadata record": 13,
                                         "truncated record": 1}, 1, 36, 0 + 333 + (cut - starts[41]))
    assert stats.file_errors[0].damage == (
        (end5, 0), (starts[20] - shift, 333), (starts[41] - shift + 333, cut - starts[41]))
    assert stats.file_errors[0].reason.startswith(f"damaged at 3 places, {333 + cut - starts[41]} bytes "
                                                  "skipped in all: ")


# Bytes holding no version line, that neither start with white space (warcio takes a line of
# white space after a record for one of the blank lines that end it) nor end with a line break
# (the blank lines before the next record are not skipped bytes).
NO_RECORD = st.binary(min_size=1, max_size=300).filter(
    lambda b: b"WARC/" not in b and not b[:1].isspace() and b[-1:] not in (b"\r", b"\n"))


@settings(max_examples=40, deadline=None)
@given(where=st.integers(1, 49), garbage=NO_RECORD)
def test_inserted_bytes_lose_no_record(where, garbage, cc_plain):
    """Bytes that hold no version line, inserted before any record: every record is read and
    exactly the inserted bytes are skipped (warcio's own reader by itself stops there)."""
    starts = record_starts(cc_plain)
    damaged = cc_plain[:starts[where]] + garbage + cc_plain[starts[where]:]
    records = ArchiveRecords(io.BytesIO(damaged))
    types = [record.rec_type for _, record in records]
    assert types == CC_TYPES
    assert [(g.offset, g.skipped, g.resumed) for g in records.gaps] == [
        (starts[where], len(garbage), starts[where] + len(garbage))]
    assert records.recovered == 50 - where


def test_a_warc_file_converted_as_text_is_told_so(cc_plain, tmp_path):
    """Every line ending turned into '\\r\\r\\n' (a text-mode copy): no record is read, and the
    message says why rather than what was expected."""
    stats = ingest_warc(write(tmp_path / "c.warc", cc_plain.replace(b"\r\n", b"\r\r\n")), str(tmp_path / "out"))
    assert (stats.records_read, stats.pages_written) == (0, 0)
    (error,) = stats.file_errors
    assert "its lines end in '\\r\\r\\n', not '\\r\\n': the file was converted as text" in error.reason


def test_an_arc_header_line_whose_length_is_not_a_number(warc_dir, tmp_path):
    """The version block's length written as -1: that block is skipped with a message naming
    the length, and the three records after it are read."""
    blocks = arc_blocks("bad.arc", responses_of(warc_dir / CC)[:3])
    blocks[0] = re.sub(rb" \d+\n", b" -1\n", blocks[0], count=1)
    stats = ingest_warc(write(tmp_path / "bad.arc", b"".join(blocks)), str(tmp_path / "out"))
    assert (stats.records_read, stats.pages_written, stats.records_recovered) == (3, 3, 3)
    (error,) = stats.file_errors
    assert error.reason.startswith("the ARC header line at offset 0 gives a length that is not a number (b'-1')")


# =============================================================================================
# Damaged WARC files, gzipped record by record


def test_a_gzip_member_split_in_two_gets_the_recompress_fix(cc, tmp_path):
    """The 2nd response's gzip member re-compressed as two members, split inside its payload:
    the record ends with its first member, before its Content-Length, and is skipped as
    truncated; the second member decodes but starts no record; reading resumes at the next
    member (the metadata record): both members' bytes skipped, 44 records recovered."""
    members = gzip_members(cc)
    assert len(members) == 50
    body = gzip.decompress(members[5])
    part1, part2 = gzip.compress(body[:3000]), gzip.compress(body[3000:])
    damaged = b"".join(members[:5]) + part1 + part2 + b"".join(members[6:])
    at = len(b"".join(members[:5]))
    path = write(tmp_path / "split.warc.gz", damaged)
    stats = ingest_warc(path, str(tmp_path / "out"))
    assert counts(stats) == (50, 15, {**CC_SKIPPED, "truncated record": 1}, 1, 44, len(part1) + len(part2))
    (error,) = stats.file_errors
    assert error.damage == ((at, len(part1) + len(part2)),)
    assert f"ends at offset {at + len(part1)}, before the record's Content-Length" in error.reason
    assert f"warcio recompress {path} {tmp_path / 'split.recompressed.warc.gz'}" in error.reason


def test_bytes_between_gzip_members_are_skipped(cc, tmp_path):
    members = gzip_members(cc)
    garbage = bytes(random.Random(2).randrange(256) for _ in range(1000))
    damaged = b"".join(members[:10]) + garbage + b"".join(members[10:])
    stats = ingest_warc(write(tmp_path / "d.warc.gz", damaged), str(tmp_path / "out"))
    assert counts(stats) == (50, 16, CC_SKIPPED, 1, 40, 1000)
    assert stats.file_errors[0].damage == ((len(b"".join(members[:10])), 1000),)


@pytest.mark.parametrize("index, at, read", [(8, 2000, 49), (5, 17500, 50)], ids=["header-lost", "payload-cut"])
def test_a_corrupt_gzip_member_is_skipped_whole(index, at, read, cc, tmp_path, capfd):
    """64 bytes of a response's gzip member overwritten. Near its start (the 3rd response's
    member, 5306 bytes, in the first block warcio reads of it) nothing of the member decodes
    and warcio would stop there without a word: the record is not read. 17500 bytes into the
    2nd response's member (18808 bytes, past that first block) its header is read and its
    payload ends at the damage: skipped as truncated. Either way the member's bytes are
    skipped, the records after it recovered, and warcio's decoder prints nothing on stderr."""
    members = gzip_members(cc)
    member = bytearray(members[index])
    member[at:at + 64] = b"\xff" * 64
    damaged = b"".join(members[:index]) + bytes(member) + b"".join(members[index + 1:])
    stats = ingest_warc(write(tmp_path / "d.warc.gz", damaged), str(tmp_path / "out"))
    truncated = {"truncated record": 1} if read == 50 else {}
    assert counts(stats) == (read, 15, {**CC_SKIPPED, **truncated}, 1, 49 - index, len(member))
    assert stats.file_errors[0].damage == ((len(b"".join(members[:index])), len(member)),)
    assert "does not decode" in stats.file_errors[0].reason
    assert capfd.readouterr().err == ""


def test_a_short_content_length_inside_a_gzip_member(cc, tmp_path):
    """The 1st response's member re-compressed with its Content-Length 10 bytes short: the
    rest of the payload is inside the same member, so no byte of the file is skipped, but the
    plain payload was cut: skipped as truncated; reading resumes at the next member."""
    members = gzip_members(cc)
    record = gzip.decompress(members[2])
    header = re.search(rb"\r\nContent-Length: (\d+)\r\n", record)
    length = int(header.group(1))
    record = record[:header.start(1)] + str(length - 10).encode() + record[header.end(1):]
    damaged = b"".join(members[:2]) + gzip.compress(record) + b"".join(members[3:])
    stats = ingest_warc(write(tmp_path / "d.warc.gz", damaged), str(tmp_path / "out"))
    assert counts(stats) == (50, 15, {**CC_SKIPPED, "truncated record": 1}, 1, 47, 0)
    next_member = len(b"".join(members[:2])) + len(gzip.compress(record))
    assert stats.file_errors[0].damage == ((next_member, 0),)


def test_a_gzip_member_that_goes_on_after_its_record(cc, tmp_path):
    """The 5th metadata record's member re-compressed with bytes after the record and its blank
    lines (a tool that appended to a member): the record was read whole and counts; warcio's
    offsets inside such a member mean nothing, so the member, from its start, is the damage,
    and reading resumes at the next member."""
    members = gzip_members(cc)
    assert gzip.decompress(members[15]).startswith(b"WARC/1.0\r\nWARC-Type: metadata")
    member = gzip.compress(gzip.decompress(members[15]) + b"</table>leftover bytes\r\nmore of them\r\n")
    damaged = b"".join(members[:15]) + member + b"".join(members[16:])
    stats = ingest_warc(write(tmp_path / "d.warc.gz", damaged), str(tmp_path / "out"))
    assert counts(stats) == (50, 16, CC_SKIPPED, 1, 34, len(member))
    at = len(b"".join(members[:15]))
    assert stats.file_errors[0].damage == ((at, len(member)),)
    assert f"the gzip member at offset {at} goes on after its record with bytes that are not a record" in \
        stats.file_errors[0].reason


# =============================================================================================
# Zstandard-compressed WARC files (.warc.zst): made here, record by record, with the zstandard
# library, as the IIPC's WARC-Zstandard specification lays them out; frame boundaries are known
# from the writing, not from the code under test.


def skippable(data: bytes, magic: int = 0x184D2A50) -> bytes:
    return struct.pack("<II", magic, len(data)) + data


def warc_zst(records: list[bytes], dictionary: str = "", extension_frames: bool = False) -> tuple[bytes, list[int]]:
    """A .warc.zst file of ``records`` (each one uncompressed WARC record) and where each
    record's frames start (with the extension frame before it, if any). ``dictionary``: ""
    none, "plain" or "compressed" (a dictionary frame at the start); ``extension_frames``: a
    skippable frame before every other record."""
    head, options = b"", {}
    if dictionary:
        stored = dictionary_of(records).as_bytes()
        if dictionary == "compressed":
            stored = zstandard.ZstdCompressor(write_checksum=True).compress(stored)
        head, options = skippable(stored, 0x184D2A5D), {"dict_data": dictionary_of(records)}
    compressor = zstandard.ZstdCompressor(write_checksum=True, **options)
    out, starts = [head], []
    for i, record in enumerate(records):
        starts.append(len(b"".join(out)))
        if extension_frames and i % 2:
            out.append(skippable(b"extension %d" % i))
        out.append(compressor.compress(record))
    return b"".join(out), starts


def dictionary_of(records: list[bytes]) -> zstandard.ZstdCompressionDict:
    return zstandard.train_dictionary(8192, records * 4)


@pytest.fixture(scope="module")
def cc_records(cc) -> list[bytes]:
    return [gzip.decompress(member) for member in gzip_members(cc)]


@pytest.mark.parametrize("dictionary, extension_frames", [("", False), ("plain", True), ("compressed", False)],
                         ids=["frames", "dictionary+extension-frames", "compressed-dictionary"])
def test_a_warc_zst_file_reads_like_the_gzipped_one(dictionary, extension_frames, cc_records, cc_reference,
                                                    tmp_path):
    """The same 50 records as zstd frames give the same pages, links and skips, and every page's
    offset and length in the file hold its record: decoded (with the file's dictionary) by the
    zstandard library alone, they give the record's bytes."""
    reference, reference_out = cc_reference
    data, starts = warc_zst(cc_records, dictionary, extension_frames)
    path = write(tmp_path / "cc.warc.zst", data)
    stats = ingest_warc(path, str(tmp_path / "out"))
    assert counts(stats) == (50, 16, CC_SKIPPED, 0, 0, 0)
    assert rows(tmp_path / "out", "links") == rows(reference_out, "links")
    assert (rows(tmp_path / "out", "pages", drop=("record_offset", "record_length", "source_file"))
            == rows(reference_out, "pages", drop=("record_offset", "record_length", "source_file")))
    frames = zstandard.ZstdDecompressor(dict_data=dictionary_of(cc_records) if dictionary else None)
    pages = read_parquet(str(tmp_path / "out" / "pages")).to_pylist()
    for page in pages:
        offset, length = page["record_offset"], page["record_length"]
        index = starts.index(offset)
        assert offset + length == (starts + [len(data)])[index + 1]
        decoded = frames.stream_reader(io.BytesIO(data[offset:offset + length]), read_across_frames=True).read()
        assert decoded == cc_records[index]
    assert len(pages) == 16


def test_a_folder_and_an_inbox_take_warc_zst_files(cc_records, tmp_path):
    from simweb.tasks.ledger import scan_inbox

    crawl = tmp_path / "crawl"
    crawl.mkdir()
    write(crawl / "a.warc.zst", warc_zst(cc_records)[0])
    write(crawl / "notes.zst", b"not listed")
    assert [Path(f).name for f in list_archive_files(str(crawl))] == ["a.warc.zst"]
    scan = scan_inbox(str(crawl), str(tmp_path / "ingested"), settle_seconds=0)
    assert [f.name for f in scan.new] == ["a.warc.zst"] and [Path(p).name for p in scan.ignored] == ["notes.zst"]


def test_the_ingest_command_reads_warc_zst_files(cc_records, tmp_path, capsys):
    """A folder holding a .warc.zst file, and one named otherwise that starts with a zstd frame
    (looked into, as any file named without an archive suffix is): both read, exit 0."""
    from simweb.cli import main

    crawl = tmp_path / "crawl"
    crawl.mkdir()
    write(crawl / "a.warc.zst", warc_zst(cc_records, "plain")[0])
    named = write(tmp_path / "download.bin", warc_zst(cc_records[:20])[0])
    assert main(["ingest", str(crawl), named, "--out", str(tmp_path / "out"), "--no-prefect"]) == 0
    told = capsys.readouterr()
    assert "ingest: 2 files read; 2 WARC" in told.out + told.err
    assert re.search(r"records read +70\n +pages written +22\n", told.out + told.err)


def test_a_truncated_warc_zst_file_keeps_what_came_before(cc_records, tmp_path):
    data, starts = warc_zst(cc_records, "plain")
    cut = starts[response_index(10)] + 100  # inside the 11th response's frame
    stats = ingest_warc(write(tmp_path / "cut.warc.zst", data[:cut]), str(tmp_path / "out"))
    assert stats.pages_written == 10
    (error,) = stats.file_errors
    assert error.damage == ((starts[response_index(10)], 100),)
    assert f"the zstd frame at offset {starts[response_index(10)]} is cut: the file ends inside it" in error.reason


def test_a_corrupt_zstd_frame_is_skipped_whole(cc_records, tmp_path):
    data, starts = warc_zst(cc_records, "plain")
    index = response_index(3)
    damaged = bytearray(data)
    damaged[starts[index] + 200:starts[index] + 264] = b"\xff" * 64
    stats = ingest_warc(write(tmp_path / "d.warc.zst", bytes(damaged)), str(tmp_path / "out"))
    assert stats.pages_written == 15
    assert stats.records_recovered == 49 - index
    (error,) = stats.file_errors
    assert error.damage == ((starts[index], starts[index + 1] - starts[index]),)
    assert "does not decode" in error.reason


def test_a_warc_zst_file_compressed_as_one_frame_says_how_to_read_it(cc_records, tmp_path):
    """What ``zstd crawl.warc`` makes: one frame for the whole file. Its records are read in
    order, every page kept; the message says the file is compressed as a whole, that its records
    are not replayable, and how to get the .warc file."""
    data = zstandard.ZstdCompressor().compress(b"".join(cc_records))
    stats = ingest_warc(write(tmp_path / "whole.warc.zst", data), str(tmp_path / "out"))
    assert (stats.records_read, stats.pages_written, stats.bytes_skipped) == (50, 16, 0)
    (error,) = stats.file_errors
    assert "the file is compressed as a whole instead of record by record" in error.reason
    assert "its 50 records were read in order" in error.reason and "not replayable" in error.reason
    assert error.damage == ()
    assert f"'zstd -d {tmp_path / 'whole.warc.zst'}' writes the uncompressed WARC file" in error.reason
    assert "warcio recompress" not in error.reason


def warc_zst_split(records: list[bytes], split: dict[int, list[int]], extension_frames: bool = False
                   ) -> tuple[bytes, list[int]]:
    """A .warc.zst file of ``records`` where record i is compressed as several frames, cut at
    the byte positions ``split[i]`` (each frame its own, as an encoder that starts a new frame
    every so many bytes writes them), with a skippable frame between two of its frames when
    ``extension_frames``; and where each record's first frame starts."""
    compressor = zstandard.ZstdCompressor(write_checksum=True)
    out, starts, at = [], [], 0
    for i, record in enumerate(records):
        starts.append(at)
        cuts = [0, *split.get(i, []), len(record)]
        for k, (a, b) in enumerate(zip(cuts, cuts[1:])):
            frame = compressor.compress(record[a:b])
            if extension_frames and k == 1:
                frame = skippable(b"seek table") + frame
            out.append(frame)
            at += len(frame)
    return b"".join(out), starts


@pytest.mark.parametrize("cuts, extension_frames", [
    ([3000], False),  # two frames, the cut inside the payload
    ([20, 700, 5000], True),  # four frames: the first inside the header's first lines, one after a skippable frame
    ([-4], False),  # the record's last frame is its closing blank lines alone
], ids=["two-frames", "four-frames-and-a-skippable-one", "closing-lines-alone"])
def test_a_record_in_several_zstd_frames_is_read_whole(cuts, extension_frames, cc_records, cc_reference, tmp_path):
    """The specification lets a record span several frames ("Each WARC record must correspond
    to one or more Zstandard frames"): such a file reads like the gzipped one — every page,
    link and skip — and a split record's offset and length cover all its frames."""
    _, reference_out = cc_reference
    split = {response_index(k): [c if c > 0 else len(cc_records[response_index(k)]) + c for c in cuts]
             for k in (0, 1, 5)}
    split[1] = [c if c > 0 else len(cc_records[1]) + c for c in cuts if abs(c) < len(cc_records[1])]  # a request
    data, starts = warc_zst_split(cc_records, split, extension_frames)
    stats = ingest_warc(write(tmp_path / "split.warc.zst", data), str(tmp_path / "out"))
    assert counts(stats) == (50, 16, CC_SKIPPED, 0, 0, 0)
    assert rows(tmp_path / "out", "links") == rows(reference_out, "links")
    drop = ("record_offset", "record_length", "source_file")
    assert rows(tmp_path / "out", "pages", drop=drop) == rows(reference_out, "pages", drop=drop)
    for page in read_parquet(str(tmp_path / "out" / "pages")).to_pylist():
        index = starts.index(page["record_offset"])
        assert page["record_offset"] + page["record_length"] == (starts + [len(data)])[index + 1]


def test_a_zstd_frame_that_starts_a_record_ends_the_one_before_it_even_when_its_length_says_more(
        cc_records, tmp_path):
    """A record whose Content-Length is larger than its frames hold is cut where the next
    record's frame starts — found by that frame's first bytes, not read as part of it — and
    reported; every record after it is read."""
    index = response_index(1)
    record = cc_records[index]
    length = re.search(rb"Content-Length: (\d+)", record)
    longer = record.replace(length.group(0), b"Content-Length: %d" % (int(length.group(1)) + 5000), 1)
    data, starts = warc_zst(cc_records[:index] + [longer] + cc_records[index + 1:])
    stats = ingest_warc(write(tmp_path / "long.warc.zst", data), str(tmp_path / "out"))
    assert (stats.records_read, stats.pages_written) == (50, 15)
    (error,) = stats.file_errors
    assert error.damage[0][0] == starts[index]
    assert stats.records_recovered == 50 - index - 1


@pytest.mark.parametrize("how, told", [
    ("damaged", "the zstd dictionary frame at offset 0 holds no zstd dictionary"),
    ("cut", "the file ends inside the zstd dictionary frame at offset 0"),
])
def test_a_damaged_zstd_dictionary_is_a_file_error(how, told, cc_records, tmp_path):
    data, starts = warc_zst(cc_records, "plain")
    if how == "damaged":
        data = data[:8] + b"\0" * 8 + data[16:]
    else:
        data = data[:100]
    stats = ingest_warc(write(tmp_path / "d.warc.zst", data), str(tmp_path / "out"))
    assert (stats.records_read, stats.pages_written) == (0, 0)
    (error,) = stats.file_errors
    assert told in error.reason and "no record decodes without it" in error.reason


def test_a_warc_zst_file_without_its_dictionary_frame_is_a_file_error(cc_records, tmp_path):
    data, starts = warc_zst(cc_records, "plain")
    stats = ingest_warc(write(tmp_path / "d.warc.zst", data[starts[0]:]), str(tmp_path / "out"))
    assert (stats.records_read, stats.pages_written) == (0, 0)
    (error,) = stats.file_errors
    assert f"the zstd frame at offset 0 needs a dictionary (id {dictionary_of(cc_records).dict_id()})" in error.reason


# =============================================================================================
# The reader on its own


def test_how_records_end(cc_plain):
    starts = record_starts(cc_plain)
    end5 = block_end(cc_plain, starts[5])
    damaged = cc_plain[:end5] + cc_plain[starts[6]:starts[9]] + b"junk" + cc_plain[starts[9]:]
    records = ArchiveRecords(io.BytesIO(damaged))
    ends = []
    for offset, record in records:
        ends.append(records.finish())
        assert records.finish() is ends[-1]  # asked again: the same answer, nothing read
    assert ends.count(RecordEnd.WHOLE) == 50 and records.format == "warc" and records.compression is None
    assert [(g.offset, g.skipped) for g in records.gaps] == [(end5, 0), (starts[9] - (starts[6] - end5), 4)]


def test_encoded_payload_ends():
    page = b"<html><title>t</title>" + b"word " * 500 + b"</html>"
    named = io.BytesIO()
    with gzip.GzipFile(fileobj=named, mode="wb", filename="page.html", mtime=0) as f:
        f.write(page)
    zlibbed, raw = zlib.compress(page), zlib.compressobj(wbits=-zlib.MAX_WBITS)
    raw = raw.compress(page) + raw.flush()
    for body, coding in ((gzip.compress(page), "gzip"), (named.getvalue(), "x-gzip"), (zlibbed, "deflate"),
                         (raw, "deflate"), (gzip.compress(gzip.compress(page)), "gzip, gzip")):
        assert encoded_payload_ends(body, coding, 1 << 20)
        trailer = 8 if "gzip" in coding else 4 if body is zlibbed else 0
        assert encoded_payload_ends(body[:len(body) - trailer], coding, 1 << 20)  # the trailer cut: all data there
        assert not encoded_payload_ends(body[:len(body) - trailer - 1], coding, 1 << 20)
    assert not encoded_payload_ends(page, "identity", 1 << 20) and not encoded_payload_ends(page, "", 1 << 20)
    assert not encoded_payload_ends(page, "gzip", 1 << 20)
    assert not encoded_payload_ends(b"(\xb5/\xfd\x00", "zstd", 1 << 20)
    assert not encoded_payload_ends(gzip.compress(page), "gzip", len(page) - 1)  # ends past the limit


# =============================================================================================
# Files read in pieces (simweb.tasks.ingest: a large file on several workers at once)


def _read_in(path: str, start: int = 0, stop: int | None = None, piece: bool = True):
    with open(path, "rb") as raw:
        records = ArchiveRecords(raw, start, stop) if piece else ArchiveRecords(raw)
        offsets = [offset for offset, _ in records]
        return offsets, [(g.offset, g.skipped, g.resumed) for g in records.gaps], records.recovered, records.cuttable


def _damaged_variants(cc: bytes, cc_records: list[bytes]) -> dict[str, bytes]:
    members = gzip_members(cc)
    rng = random.Random(5)
    corrupt = bytearray(members[8])
    corrupt[2000:2064] = b"\xff" * 64
    body = gzip.decompress(members[5])
    goes_on = gzip.compress(gzip.decompress(members[15]) + b"leftover bytes\r\n")
    zst, _ = warc_zst(cc_records, dictionary="compressed")
    return {
        "gzip": cc,
        "bytes between members": b"".join(members[:10]) + rng.randbytes(1000) + b"".join(members[10:]),
        "corrupt member": b"".join(members[:8]) + bytes(corrupt) + b"".join(members[9:]),
        "member split in two": (b"".join(members[:5]) + gzip.compress(body[:3000]) + gzip.compress(body[3000:])
                                + b"".join(members[6:])),
        "member goes on": b"".join(members[:15]) + goes_on + b"".join(members[16:]),
        "truncated": cc[: len(cc) * 2 // 3],
        "zstd with a dictionary": zst,
        "plain (read whole)": gzip.decompress(cc),
    }


@pytest.mark.parametrize("name", ["gzip", "bytes between members", "corrupt member", "member split in two",
                                  "member goes on", "truncated", "zstd with a dictionary", "plain (read whole)"])
def test_pieces_at_any_cuts_read_every_record_once_and_the_damage_once(name, cc, cc_records, tmp_path):
    """The pieces of a file cut at any offsets read, one after another, exactly the records of
    the whole file at the same offsets, and the same damage; a file that cannot be cut (plain)
    is read whole by its first piece."""
    data = _damaged_variants(cc, cc_records)[name]
    path = write(tmp_path / ("f.warc.zst" if name.startswith("zstd") else "f.warc.gz"), data)
    whole, gaps, recovered, cuttable = _read_in(path, piece=False)
    assert cuttable == (name != "plain (read whole)") and len(whole) > 10
    rng = random.Random(len(data))
    for n in (2, 3, 7, 19):
        cuts = [0, *sorted(rng.sample(range(1, len(data)), n - 1)), None]
        offsets, damage, pieces_recovered, damaged = [], [], 0, False
        for k in range(n):
            got, got_gaps, got_recovered, _ = _read_in(path, cuts[k], cuts[k + 1])
            # Recovered: read after the file's first damage — in its piece, and every record after that piece.
            pieces_recovered += len(got) if damaged else got_recovered
            damaged = damaged or bool(got_gaps)
            offsets += got
            damage += got_gaps
        assert offsets == whole, n
        assert damage == gaps, n
        assert pieces_recovered == recovered, n
