"""WACZ packages (Webrecorder's format, as Browsertrix and ArchiveWeb.page write a crawl): the
WARC files of a package's archive/ folder are read from inside it, as if named one by one."""
from __future__ import annotations

import json
import re
import zipfile
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from simweb.cli import main as simweb_main
from simweb.tasks.cdxj import write_cdxj
from simweb.tasks.ingest.files import ingest_files
from simweb.tasks.sources import list_archive_files

MEMBERS = ("example.warc.gz", "example-iana.org-chunked.warc")


def write_wacz(path: Path, warc_dir: Path) -> Path:
    """A WACZ as the format describes it: the WARC files stored (not deflated) under archive/, beside
    a datapackage.json, pages and indexes."""
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_STORED) as z:
        z.writestr("datapackage.json", json.dumps({"profile": "data-package", "wacz_version": "1.1.1"}))
        z.writestr("pages/pages.jsonl", '{"format": "json-pages-1.0"}\n')
        for name in MEMBERS:
            z.write(warc_dir / name, f"archive/{name}")
        z.writestr("indexes/index.cdx", "")
    return path


def urls(crawl: Path) -> set[str]:
    return {u for p in sorted((crawl / "pages").glob("*.parquet")) for u in pq.read_table(p).column("url").to_pylist()}


def test_a_wacz_is_read_as_the_warc_files_it_holds(warc_dir, tmp_path, caplog):
    wacz = write_wacz(tmp_path / "site.wacz", warc_dir)
    members = [f"zip://archive/{name}::{wacz}" for name in sorted(MEMBERS)]
    assert list_archive_files(str(wacz)) == members
    folder = tmp_path / "crawls"
    folder.mkdir()
    (folder / ".partial.wacz").write_bytes(wacz.read_bytes())  # hidden: a download in progress
    moved = folder / "site.wacz"
    moved.write_bytes(wacz.read_bytes())
    with caplog.at_level("WARNING", logger="simweb.tasks.sources"):
        assert list_archive_files(str(folder)) == [f"zip://archive/{name}::{moved}" for name in sorted(MEMBERS)]
    assert "skipped 1 hidden archive file(s)" in caplog.text
    assert list_archive_files(members) == members  # listed again by the flow, as they are

    from_package = ingest_files(members, str(tmp_path / "a"))
    loose = ingest_files([str(warc_dir / name) for name in MEMBERS], str(tmp_path / "b"))
    assert from_package.files_read == 2 and not from_package.file_errors
    assert from_package.pages_written == loose.pages_written > 0
    assert sorted(from_package.parts) == sorted(loose.parts)  # a part is named by the file's content
    assert urls(tmp_path / "a") == urls(tmp_path / "b")
    # The CDXJ names each WARC file as the package does, with offsets within it, for pywb.
    write_cdxj(str(tmp_path / "a"), str(tmp_path / "a.cdxj"))
    write_cdxj(str(tmp_path / "b"), str(tmp_path / "b.cdxj"))
    assert (tmp_path / "a.cdxj").read_text() == (tmp_path / "b.cdxj").read_text()


def test_simweb_build_reads_a_wacz(warc_dir, tmp_path, capsys):
    wacz = write_wacz(tmp_path / "site.wacz", warc_dir)
    assert simweb_main(["build", str(wacz), "--out", str(tmp_path / "index"), "--min-in-degree", "0"]) == 0
    out = capsys.readouterr().out
    assert re.search(r"ingest: 2 files read; 2 WARC", out), out
    assert simweb_main(["related", "http://www.iana.org/", "--index", str(tmp_path / "index")]) == 0


def test_a_damaged_wacz_is_a_file_the_ingest_could_not_read(tmp_path, capsys):
    bad = tmp_path / "cut.wacz"
    bad.write_bytes(b"PK\x03\x04 cut short")
    assert list_archive_files(str(bad)) == [str(bad)]
    assert simweb_main(["ingest", str(bad), "--out", str(tmp_path / "out"), "--no-prefect"]) == 4
    captured = capsys.readouterr()
    assert re.search(r"^ +file errors +1$", captured.out, re.M) and "Traceback" not in captured.err


@pytest.mark.parametrize("content", [b"", b"not a zip"])
def test_a_wacz_without_warc_files_is_reported_not_skipped(tmp_path, content):
    empty = tmp_path / "empty.wacz"
    with zipfile.ZipFile(empty, "w") as z:
        z.writestr("datapackage.json", content)
    assert list_archive_files(str(empty)) == [str(empty)]  # the ingest then says it holds no record


@pytest.mark.parametrize("make, expected", [
    (lambda p: p.write_bytes(b"PK\x03\x04 cut short"), "not a readable ZIP file"),
    (lambda p: zipfile.ZipFile(p, "w").writestr("datapackage.json", "{}"), "it has no archive/ folder"),
    (lambda p: zipfile.ZipFile(p, "w").writestr("archive/notes.txt", "x"),
     "its archive/ folder holds no WARC or ARC file (archive/notes.txt)"),
])
def test_what_is_wrong_with_a_package_is_said(tmp_path, capsys, make, expected):
    """Not "not a WARC or ARC file … b'PK\\x03\\x04'": what is wrong with the package."""
    package = tmp_path / "site.wacz"
    make(package)
    assert simweb_main(["ingest", str(package), "--out", str(tmp_path / "out"), "--no-prefect"]) == 4
    out = capsys.readouterr().out
    assert expected in out and "WACZ package" in out and "PK" not in out.split("site.wacz:", 1)[1][:40]
