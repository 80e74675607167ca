"""Serving the index: an unknown URL costs what an answer costs (the index resolves aliases
itself, nothing of the crawl is read), every listing is in rank order with the score it is
ranked by first, page counts are of crawled pages, and `simweb serve` answers from several
worker processes that map one copy of the index, each dealt its share of the connections."""
from __future__ import annotations

import http.client
import json
import os
import shutil
import socket
import subprocess
import time
import urllib.request

import anyio
import psutil
import pytest
from fastapi.testclient import TestClient
from test_http import LOCAL, start_server

import simweb
from simweb.cli import main as cli
from simweb.http import REQUEST_THREADS, _bounded_threads, create_app

JAVA1 = "http://java1.example.com/"


@pytest.fixture(scope="module")
def fixtures_index(build_in_process, warc_dir, tmp_path_factory) -> str:
    """The shared WARC fixtures built as `simweb build` builds them: crawled pages, pages only
    linked to, and aliases (slash and index variants, redirects)."""
    return build_in_process(warc_dir, tmp_path_factory.mktemp("fixtures") / "index", min_in_degree=None)


def test_an_unknown_url_and_an_alias_are_answered_without_reading_the_crawl(fixtures_index, tmp_path, monkeypatch):
    from simweb.core.urls import normalize_url, url_id
    from simweb.tasks import index_store
    from simweb.tasks.crawl import parts

    index = simweb.open_index(fixtures_index)
    version = index_store.open_version(fixtures_index)
    aliases = set(version.alias_ids.tolist())
    assert aliases  # the fixtures' slash and index variants, resolved at the build
    urls = version.docs.column("url").to_pylist()
    alias_url, target = next((v, u) for u in urls for v in _variants(u)
                             if normalize_url(v) and url_id(normalize_url(v)) in aliases)
    expected = [r.url for r in index.related(target, alpha=0.0)]

    def no_crawl(*args, **kwargs):
        raise AssertionError("a query read the crawl")

    for name in ("crawl_identity", "crawl_parts"):
        monkeypatch.setattr(parts, name, no_crawl)
    moved = simweb.open_index(fixtures_index, crawl=str(tmp_path / "no-crawl-here"))
    with pytest.raises(simweb.UnknownURL, match="not among the 47 crawled pages"):
        moved.related("http://nowhere.example.com/")
    assert moved.document(alias_url)["url"] == target
    assert [r.url for r in moved.related(alias_url, alpha=0.0)] == expected


def _variants(url: str) -> list[str]:
    """The slash and index forms under which a page's URL may be an alias."""
    base = url.removesuffix("/")
    return [base, base + "/", base + "/index.html", base + "/index.htm"]


def test_page_counts_are_crawled_pages_and_pages_only_linked_to(fixtures_index):
    index = simweb.open_index(fixtures_index)
    info = index.info()
    assert info["crawled_documents"] == 47 and info["documents"] == 47 + info["linked_only_documents"] > 47
    about = TestClient(create_app(index), base_url=LOCAL).get("/").text
    assert (f"47 crawled pages and {info['linked_only_documents']:,} pages only linked to, "
            f"{info['indexed_documents']:,} indexed") in about
    assert f"{info['documents']:,} pages" not in about


@pytest.mark.parametrize("rerank", [True, False])
def test_every_listing_is_in_rank_order_with_the_score_it_is_ranked_by_first(fixtures_index, rerank, capsys):
    index = simweb.open_index(fixtures_index)
    url = next(u for u in index._v.docs.column("url").to_pylist() if len(index.related(u, top=8)) >= 5)
    found = index.related(url, top=8, rerank=rerank)
    scores = [r.score for r in found]
    assert scores == sorted(scores, reverse=True) and [r.rank for r in found] == list(range(1, len(found) + 1))
    assert scores == [r.exact if rerank else r.similarity for r in found]
    assert [f.name for f in simweb.Related.__dataclass_fields__.values()][:2] == ["rank", "score"]
    client = TestClient(create_app(index), base_url=LOCAL)
    answer = client.get("/api/related", params={"url": url, "top": 8, "rerank": rerank}).json()
    assert [list(r)[:3] for r in answer["results"]] == [["rank", "score", "url"]] * len(found)
    assert [r["score"] for r in answer["results"]] == scores
    page = client.get("/", params={"url": url, "top": 8, **({} if rerank else {"estimate": "true"})}).text
    head = page[page.index('<table id="related">'):page.index("</thead>")]
    assert head.index("<th>#</th>") < (head.index("<th>exact</th>") if rerank else head.index("<th>estimate</th>"))
    if rerank:
        assert head.index("<th>exact</th>") < head.index("<th>estimate</th>")
    first_row = page[page.index('<tr class="result">'):]
    assert first_row.index(f"{found[0].score:.3f}") < first_row.index(f"{found[0].similarity:.3f}") or \
        f"{found[0].score:.3f}" == f"{found[0].similarity:.3f}"
    assert cli(["related", url, "--index", fixtures_index, "--top", "8"] + ([] if rerank else ["--no-rerank"])) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split()[:2] == ["rank", "exact" if rerank else "est."]
    printed = [float(line.split()[1]) for line in lines[1:] if line.strip() and line.split()[0].isdigit()]
    assert printed == pytest.approx([round(s, 3) for s in scores], abs=5e-4)


def test_serve_answers_from_worker_processes_that_share_the_mapped_index(small_index):
    proc, base = start_server(small_index, "--workers", "2")
    try:
        # The server answers once one worker is up; the other may still be opening the index.
        deadline, workers = time.monotonic() + 60, []
        while len(workers) < 2 and time.monotonic() < deadline:
            with open(f"/proc/{proc.pid}/task/{proc.pid}/children") as f:
                children = [int(p) for p in f.read().split()]
            workers = [p for p in children if _maps(p, "H.u32")]
            if len(workers) < 2:
                time.sleep(0.2)
        assert len(workers) == 2  # both map the index's files; neither holds a copy of them
        expected = simweb.open_index(small_index).related(JAVA1, top=5)
        for _ in range(6):  # whichever worker answers, the same answer
            with urllib.request.urlopen(f"{base}/api/related?url={JAVA1}&top=5", timeout=10) as r:
                got = json.loads(r.read())["results"]
            assert [(g["url"], g["score"]) for g in got] == [(e.url, e.score) for e in expected]
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
    assert proc.returncode is not None


def test_serve_deals_connections_kept_open_out_to_every_worker(small_index):
    # 64 connections opened at once: on one shared socket the first worker awake takes most of
    # them; on a socket each, the system deals them out by a hash of the client's port (fewer
    # than 16 to either of two workers: a chance of 1 in 15,000).
    proc, base = start_server(small_index, "--workers", "2")
    port = int(base.rsplit(":", 1)[1])
    connections = []
    try:
        deadline, workers = time.monotonic() + 60, []
        while len(workers) < 2 and time.monotonic() < deadline:
            workers = [p for p in psutil.Process(proc.pid).children()
                       if any(c.status == psutil.CONN_LISTEN and c.laddr.port == port for c in _tcp(p))]
            if len(workers) < 2:
                time.sleep(0.2)
        assert len(workers) == 2
        for _ in range(64):
            connections.append(http.client.HTTPConnection("127.0.0.1", port, timeout=10))
            connections[-1].connect()
        for c in connections:
            c.request("GET", "/api/info")
            response = c.getresponse()
            assert response.status == 200 and json.loads(response.read())["current"]["served"]
        held = [sum(c.status == psutil.CONN_ESTABLISHED and c.laddr.port == port for c in _tcp(w)) for w in workers]
        assert sum(held) == 64 and min(held) >= 16, held
        # Each answer is sent at once: on a connection that waits for the client's delayed
        # acknowledgement of the headers before it sends the body (Nagle's rule, no TCP_NODELAY)
        # nearly every request takes 40 ms or more; here /api/info takes about one.
        took = []
        for _ in range(40):
            started = time.perf_counter()
            connections[0].request("GET", "/api/info")
            connections[0].getresponse().read()
            took.append(time.perf_counter() - started)
        assert sorted(took)[20] < 0.030, took
    finally:
        for c in connections:
            c.close()
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
    assert proc.returncode == 0  # SIGTERM: the workers finish and the server exits cleanly


def _tcp(process: psutil.Process) -> list:
    try:
        return process.net_connections("tcp")
    except psutil.Error:
        return []


def test_serve_refuses_a_port_another_server_listens_on(small_index, capfd):
    with socket.socket() as other:
        other.bind(("127.0.0.1", 0))
        other.listen()
        port = other.getsockname()[1]
        assert cli(["serve", "--index", small_index, "--workers", "2", "--port", str(port)]) == 1
    assert f"simweb serve: cannot bind 127.0.0.1:{port}: Address already in use" in capfd.readouterr().err


def test_a_worker_answers_as_many_requests_at_once_as_the_machine_has_use_for():
    async def tokens():
        async with _bounded_threads(None):
            return anyio.to_thread.current_default_thread_limiter().total_tokens

    assert anyio.run(tokens) == REQUEST_THREADS == 2


def _maps(pid: int, name: str) -> bool:
    try:
        with open(f"/proc/{pid}/maps") as f:
            return any(line.rstrip().endswith(os.sep + name) for line in f)
    except OSError:
        return False


def test_serve_refuses_a_bad_number_of_workers(small_index, capsys):
    assert cli(["serve", "--index", small_index, "--workers", "0"]) == 2
    assert "--workers: expected a number of processes ≥ 1, got 0" in capsys.readouterr().err


def test_an_index_of_an_earlier_format_is_refused_in_one_line(small_index, tmp_path, capsys):
    from simweb.tasks import index_store

    copy = shutil.copytree(index_store.resolve(small_index), tmp_path / "v")
    manifest = json.loads((copy / index_store.MANIFEST).read_text())
    manifest["format_version"] = 2
    (copy / index_store.MANIFEST).write_text(json.dumps(manifest))
    assert cli(["related", JAVA1, "--index", str(copy)]) == 2
    err = capsys.readouterr().err
    assert "version 2; rebuild the index with this simweb" in err and len(err.strip().splitlines()) == 1


def test_a_build_over_an_index_of_an_earlier_format_publishes_a_new_version(build_in_process, warc_dir, tmp_path):
    from simweb.tasks import index_store

    out = tmp_path / "index"
    build_in_process(warc_dir, out, min_in_degree=None)
    live = index_store.resolve(str(out))
    with open(os.path.join(live, index_store.MANIFEST)) as f:
        manifest = json.load(f)
    manifest["format_version"] = 2  # as an earlier simweb wrote it
    with open(os.path.join(live, index_store.MANIFEST), "w") as f:
        json.dump(manifest, f)
    build_in_process(warc_dir, out, min_in_degree=None)
    assert index_store.resolve(str(out)) != live
    assert simweb.open_index(str(out)).info()["crawled_documents"] == 47
