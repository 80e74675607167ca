"""What a build's inputs are: the files named (with those an inbox added), never what earlier
builds into the same folder read — unless ``--add`` / ``keep_earlier`` asks to keep it."""
from __future__ import annotations

import logging
import shutil
from pathlib import Path

import pytest

from simweb.api import open_index
from simweb.tasks.crawl.selection import left_out_of_selection, read_selection
from simweb.tasks.ingest.files import part_name
from simweb.tasks.storage import file_digest
from simweb.tasks.layout import crawl_folder

FILES = ("warcfile.warc.gz", "example.warc.gz", "example-iana.org-chunked.warc")
IANA = "http://www.iana.org/"  # only in example-iana.org-chunked.warc


@pytest.fixture
def warcs(warc_dir, tmp_path) -> list[str]:
    folder = tmp_path / "warc"
    folder.mkdir()
    for name in FILES:
        shutil.copy(warc_dir / name, folder / name)
    return [str(folder / name) for name in FILES]


def test_a_rebuild_with_fewer_files_drops_the_pages_of_the_others(prefect_harness, warcs, tmp_path):
    from simweb.flows.build_index import build_index

    out = tmp_path / "index"
    build_index(warcs, str(out), n_workers=1, min_in_degree=None)
    assert IANA in open_index(out)
    assert left_out_of_selection(crawl_folder(str(out)), read_selection(crawl_folder(str(out)))) == []
    assert left_out_of_selection(crawl_folder(str(out)), []) == [
        (w, n) for w, n in sorted(zip(warcs, (16, 1, 1)), key=lambda wn: part_name(file_digest(wn[0])))]
    said: list[logging.LogRecord] = []
    heard = logging.Handler(logging.INFO)
    heard.emit = said.append  # the flow's run logger (prefect.flow_runs) does not reach the root logger
    runs = logging.getLogger("prefect.flow_runs")
    level = runs.level
    runs.addHandler(heard)
    runs.setLevel(logging.INFO)
    try:
        fewer = build_index(warcs[:2], str(out), n_workers=1, min_in_degree=None)
    finally:
        runs.removeHandler(heard)
        runs.setLevel(level)
    # The build says what it left out, and how to keep it.
    assert (f"build-index: 1 file(s) of the last build not named this time left out of the crawl, with their 1 "
            f"pages (e.g. {warcs[2]}); --add keeps them") in [r.getMessage() for r in said]
    assert fewer.ingest.files_unchanged == 2 and fewer.ingest.files_read == 0
    assert IANA not in open_index(out)
    assert read_selection(crawl_folder(str(out))) == tuple(sorted(part_name(file_digest(w)) for w in warcs[:2]))
    # The third file's part stays on disk: named again, it is not read again.
    again = build_index(warcs[2:], str(out), n_workers=1, min_in_degree=None, keep_earlier=True)
    assert again.ingest.files_unchanged == 1 and again.ingest.files_read == 0
    assert IANA in open_index(out) and len(read_selection(crawl_folder(str(out)))) == 3


def test_a_file_the_build_named_is_already_ingested_when_dropped_into_the_inbox(warcs, tmp_path):
    from simweb.tasks.crawl.selection import write_selection
    from simweb.tasks.ledger import scan_inbox

    crawl = tmp_path / "crawl"
    write_selection(str(crawl), [part_name(file_digest(warcs[0]))])
    inbox = tmp_path / "inbox"
    inbox.mkdir()
    shutil.copy(warcs[0], inbox / "renamed.warc.gz")
    shutil.copy(warcs[1], inbox / Path(warcs[1]).name)
    scan = scan_inbox(str(inbox), str(crawl), settle_seconds=0)
    assert [f.name for f in scan.already] == ["renamed.warc.gz"]
    assert [f.name for f in scan.new] == [Path(warcs[1]).name]
