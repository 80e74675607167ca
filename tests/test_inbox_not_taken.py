"""The inbox reports what it does not take — symbolic links (never followed), folders, special
files — by kind, with their names; it took none of them, and said nothing of them before."""
from __future__ import annotations

import io
import logging
import os
import time

from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from simweb.tasks import ledger


def warc(path) -> None:
    with open(path, "wb") as f:
        writer = WARCWriter(f, gzip=True)
        http = StatusAndHeaders("200 OK", [("Content-Type", "text/html")], protocol="HTTP/1.1")
        body = b"<html><title>a page</title><body><p>words about cats</p></body></html>"
        writer.write_record(writer.create_warc_record("http://in.example/", "response", payload=io.BytesIO(body),
                                                      http_headers=http))
    old = time.time() - 3600
    os.utime(path, (old, old))


def test_links_folders_and_special_files_are_reported_and_not_taken(tmp_path):
    inbox, outside = tmp_path / "inbox", tmp_path / "outside"
    inbox.mkdir()
    outside.mkdir()
    warc(inbox / "real.warc.gz")
    warc(outside / "elsewhere.warc.gz")
    (inbox / "to-elsewhere.warc.gz").symlink_to(outside / "elsewhere.warc.gz")  # a WARC outside the inbox
    (inbox / "passwd.warc").symlink_to("/etc/passwd")
    (inbox / "to-folder.warc.gz").symlink_to(outside)
    (inbox / "dangling.warc.gz").symlink_to(tmp_path / "nothing-here")
    (inbox / "loop.warc.gz").symlink_to(inbox / "loop.warc.gz")
    (inbox / "sub").mkdir()
    warc(inbox / "sub" / "inner.warc.gz")
    os.mkfifo(inbox / "pipe.warc.gz")

    scan = ledger.scan_inbox(str(inbox), str(tmp_path / "crawl"), settle_seconds=60)
    assert [f.name for f in scan.new] == ["real.warc.gz"]
    kinds = {os.path.basename(url): kind for kind, url in scan.not_taken}
    assert kinds == {"to-elsewhere.warc.gz": "symbolic link", "passwd.warc": "symbolic link",
                     "to-folder.warc.gz": "symbolic link", "dangling.warc.gz": "symbolic link",
                     "loop.warc.gz": "symbolic link", "sub": "folder", "pipe.warc.gz": "special file"}
    summary = scan.summary()
    assert (summary["new"], summary["symbolic_links"], summary["folders"], summary["special_files"]) == (1, 5, 1, 1)
    text = scan.not_taken_text()
    assert text.startswith("not taken: 5 symbolic links (never followed")
    for name in ("passwd.warc", "loop.warc.gz", "dangling.warc.gz", "1 folder", "sub", "1 special file", "pipe.warc.gz"):
        assert name in text


def test_nothing_not_taken_says_nothing(tmp_path):
    inbox = tmp_path / "inbox"
    inbox.mkdir()
    warc(inbox / "real.warc.gz")
    scan = ledger.scan_inbox(str(inbox), str(tmp_path / "crawl"), settle_seconds=60)
    assert scan.not_taken == () and scan.not_taken_text() is None


def test_the_inbox_run_says_what_it_did_not_take(tmp_path, caplog):
    from simweb.flows.ingest_new_crawl import ingest_new_crawl

    inbox = tmp_path / "inbox"
    inbox.mkdir()
    (inbox / "passwd.warc").symlink_to("/etc/passwd")
    (inbox / "sub").mkdir()
    logger = logging.getLogger("simweb.ingest_new_crawl")
    logger.addHandler(caplog.handler)  # Prefect's logging set-up may keep simweb's lines from the root logger
    try:
        report = ingest_new_crawl.fn(str(inbox), str(tmp_path / "index"), settle_seconds=0)
    finally:
        logger.removeHandler(caplog.handler)
    assert (report.inbox["symbolic_links"], report.inbox["folders"], report.inbox["new"]) == (1, 1, 0)
    said = sorted({r.getMessage() for r in caplog.records if "not taken" in r.getMessage()})  # however often it was captured
    assert len(said) == 1 and "passwd.warc" in said[0] and "sub" in said[0]
