"""No index of nothing: a build whose every bag is empty under its strategy publishes nothing,
exits 4 and says why (a crawl of pages whose words are all stopwords had been published as an
index of 0 documents, exit 0)."""
from __future__ import annotations

import io
import subprocess
import sys

import pytest
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from simweb.cli import main as simweb_main
from simweb.commands import EXIT_NOTHING_READ

STOPWORDS = "the and of to in it is was"


def crawl(path, pages: int = 20, links: bool = False):
    with open(path, "wb") as f:
        writer = WARCWriter(f, gzip=True)
        for i in range(pages):
            link = f" <a href='http://stop{(i + 1) % pages}.example/'>the</a>" if links else ""
            body = f"<html><title>the of</title><body><p>{STOPWORDS}{link}</p></body></html>".encode()
            http = StatusAndHeaders("200 OK", [("Content-Type", "text/html")], protocol="HTTP/1.1")
            writer.write_record(writer.create_warc_record(f"http://stop{i}.example/", "response",
                                                          payload=io.BytesIO(body), http_headers=http))
    return path


def test_a_crawl_of_stopwords_publishes_nothing_and_exits_4(tmp_path, capsys):
    out = tmp_path / "index"
    assert simweb_main(["build", str(crawl(tmp_path / "stop.warc.gz")), "--out", str(out), "--no-prefect"]) == 4
    err = capsys.readouterr().err
    last = err.strip().splitlines()[-1]
    assert last.startswith("simweb build: nothing to index: under the strategy 'anchor:32+content")
    assert "every one of the 20 pages is empty" in last and "stoplist" in last and "no page links to another" in last
    assert "no index was published" in last and "Traceback" not in err
    assert not (out / "CURRENT").exists() and not (out / "versions").exists()


def test_pages_that_link_are_indexed_by_their_links(tmp_path, capsys):
    path = crawl(tmp_path / "linked.warc.gz", links=True)
    assert simweb_main(["build", str(path), "--out", str(tmp_path / "a"), "--no-prefect",
                        "--strategy", "content,stem"]) == EXIT_NOTHING_READ
    assert "(--strategy links)" in capsys.readouterr().err.strip().splitlines()[-1]
    assert simweb_main(["build", str(path), "--out", str(tmp_path / "b"), "--no-prefect", "--strategy", "links"]) == 0
    assert (tmp_path / "b" / "CURRENT").exists()


def test_an_index_already_published_stays_when_the_next_build_has_nothing(tmp_path, warc_dir, capsys):
    out = tmp_path / "index"
    assert simweb_main(["build", str(warc_dir / "example.warc.gz"), "--out", str(out), "--no-prefect"]) == 0
    live = (out / "CURRENT").read_text()
    assert simweb_main(["build", str(crawl(tmp_path / "stop.warc.gz")), "--out", str(out), "--no-prefect"]) == 4
    assert (out / "CURRENT").read_text() == live


@pytest.mark.slow
def test_through_prefect_too(tmp_path):
    out = tmp_path / "index"
    done = subprocess.run([sys.executable, "-m", "simweb.cli", "build", str(crawl(tmp_path / "stop.warc.gz")),
                           "--out", str(out), "--prefect"], capture_output=True, text=True, timeout=900)
    assert done.returncode == EXIT_NOTHING_READ, done.stderr[-3000:]
    assert done.stderr.strip().splitlines()[-1].startswith("simweb build: nothing to index") or \
        "simweb build: nothing to index" in done.stderr
    assert not (out / "CURRENT").exists()
