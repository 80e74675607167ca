"""The inbox ledger of a crawl folder: files by content, retries, what the index covers."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from simweb.tasks import ledger


def _drop(folder: Path, name: str, data: bytes, age_seconds: float = 3600) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_bytes(data)
    old = path.stat().st_mtime - age_seconds
    os.utime(path, (old, old))
    return path


def test_the_inbox_scan_sorts_files_against_the_ledger(tmp_path):
    inbox, crawl = tmp_path / "inbox", str(tmp_path / "crawl")
    _drop(inbox, "a.warc.gz", b"A")
    _drop(inbox, "b.warc", b"B")
    _drop(inbox, "copy-of-a.warc.gz", b"A")
    _drop(inbox, "notes.txt", b"not a crawl file")
    _drop(inbox, ".hidden.warc.gz", b"H")
    _drop(inbox, "arriving.warc.gz", b"C", age_seconds=0)

    scan = ledger.scan_inbox(str(inbox), crawl, settle_seconds=60)
    assert [f.name for f in scan.new] == ["a.warc.gz", "b.warc"]
    assert [f.name for f in scan.duplicates] == ["copy-of-a.warc.gz"]
    assert scan.unsettled == (f"{inbox}/arriving.warc.gz",)
    assert scan.summary() == {"new": 2, "already_ingested": 0, "duplicate_in_inbox": 1, "given_up": 0,
                              "still_being_written": 1, "not_warc": 1, "symbolic_links": 0, "folders": 0,
                              "special_files": 0}
    assert scan.ignored == (f"{inbox}/notes.txt",)

    a, b = scan.new
    ledger.record_ingestion(crawl, [(a, {"pages_written": 3}, None), (b, None, "OSError: I/O error")])
    entries = ledger.read_ledger(crawl)
    assert entries[a.digest]["status"] == "ingested" and entries[a.digest]["stats"] == {"pages_written": 3}
    assert ledger.not_indexed(crawl) == [a.digest]
    ledger.mark_indexed(crawl, [a.digest])
    assert ledger.not_indexed(crawl) == [] and ledger.read_ledger(crawl)[a.digest]["indexed"] is True
    with pytest.raises(KeyError, match="not in the ledger"):
        ledger.mark_indexed(crawl, ["0" * 64])
    assert entries[b.digest] | {"at": None} == {
        "name": "b.warc", "url": f"{inbox}/b.warc", "size": 1, "at": None,
        "status": "failed", "reason": "OSError: I/O error", "attempts": 1,
    }
    assert ledger.ingested_digests(crawl) == [a.digest]

    # A renamed copy of an ingested file is recognised by content; a failed file is retried.
    _drop(inbox, "a-renamed.warc.gz", b"A")
    again = ledger.scan_inbox(str(inbox), crawl, settle_seconds=60)
    assert [f.name for f in again.already] == ["a-renamed.warc.gz", "a.warc.gz", "copy-of-a.warc.gz"]
    assert [f.name for f in again.new] == ["b.warc"] and again.duplicates == ()

    # After MAX_ATTEMPTS failures it is given up until its bytes change.
    for _ in range(ledger.MAX_ATTEMPTS - 1):
        ledger.record_ingestion(crawl, [(b, None, "OSError: I/O error")])
    assert [f.name for f in ledger.scan_inbox(str(inbox), crawl).given_up] == ["b.warc"]
    _drop(inbox, "b.warc", b"B, complete")
    assert [f.name for f in ledger.scan_inbox(str(inbox), crawl).new] == ["b.warc"]


def test_a_damaged_ledger_is_refused_with_the_fix(tmp_path):
    (tmp_path / ledger.LEDGER).write_text("{not json")
    with pytest.raises(ValueError, match="delete it to re-ingest every file"):
        ledger.read_ledger(str(tmp_path))
    (tmp_path / ledger.LEDGER).write_text('{"files": []}')
    with pytest.raises(ValueError, match="expected a ledger with format 1"):
        ledger.read_ledger(str(tmp_path))


def test_a_missing_inbox_is_reported_with_the_fix(tmp_path):
    with pytest.raises(FileNotFoundError, match="create it and drop"):
        ledger.scan_inbox(str(tmp_path / "nowhere"), str(tmp_path / "crawl"))


def test_a_wacz_in_the_inbox_is_the_warc_files_it_holds(tmp_path):
    import zipfile

    inbox, crawl = tmp_path / "inbox", str(tmp_path / "crawl")
    inbox.mkdir()
    package = inbox / "site.wacz"
    with zipfile.ZipFile(package, "w") as z:
        z.writestr("datapackage.json", "{}")
        z.writestr("archive/one.warc.gz", b"A")
        z.writestr("archive/two.warc", b"B")
    old = package.stat().st_mtime - 3600
    os.utime(package, (old, old))
    _drop(inbox, "a.warc.gz", b"A")  # the same bytes as the package's first WARC file

    scan = ledger.scan_inbox(str(inbox), crawl, settle_seconds=60)
    assert [f.name for f in scan.new] == ["a.warc.gz", "site.wacz/two.warc"]
    assert [(f.name, f.size, f.url) for f in scan.duplicates] == [
        ("site.wacz/one.warc.gz", 1, f"zip://archive/one.warc.gz::{package}")]
    assert scan.ignored == ()
