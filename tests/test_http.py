"""The HTTP API and page: FastAPI's TestClient, and one real server on a free 127.0.0.1 port."""
from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request

import pytest
from fastapi.testclient import TestClient

import simweb
from simweb.http import create_app

JAVA1 = "http://java1.example.com/"


@pytest.fixture(scope="module")
def client(small_index) -> TestClient:
    return TestClient(create_app(small_index))


def test_json_related_equals_the_python_api(client, small_index):
    r = client.get("/api/related", params={"url": JAVA1, "top": 6})
    assert r.status_code == 200
    body = r.json()
    want = simweb.open_index(small_index).related(JAVA1, top=6)
    assert [(x["url"], x["similarity"], x["rank"]) for x in body["results"]] == \
        [(x.url, x.similarity, x.rank) for x in want]
    assert body["query"] == JAVA1 and body["alpha"] == 0.15


def test_rerank_and_batch(client, small_index):
    idx = simweb.open_index(small_index)
    r = client.get("/api/related", params={"url": JAVA1, "rerank": "true"}).json()
    assert [x["exact"] for x in r["results"]] == [x.exact for x in idx.related(JAVA1, rerank=True)]
    urls = [JAVA1, "http://music1.example.com/"]
    b = client.post("/api/related", json={"urls": urls, "top": 3})
    assert b.status_code == 200
    got = {a["query"]: [x["url"] for x in a["results"]] for a in b.json()["answers"]}
    assert got == {u: [x.url for x in idx.related(u, top=3)] for u in urls}


def test_terms_and_info(client):
    t = client.get("/api/terms", params={"url": JAVA1, "k": 4}).json()
    assert len(t["terms"]) == 4 and t["terms"][0]["weight"] >= t["terms"][-1]["weight"]
    assert client.get("/api/info").json()["documents"] == 48


def test_unknown_urls_and_bad_parameters_are_4xx_with_a_message(client):
    r = client.get("/api/related", params={"url": "http://nowhere.example.com/"})
    assert r.status_code == 404 and "not among the 48 pages" in r.json()["detail"]
    assert client.get("/api/terms", params={"url": "mailto:x@y"}).status_code == 404
    for params in ({"url": JAVA1, "top": 0}, {"url": JAVA1, "alpha": 1.5}, {"url": JAVA1, "top": "many"}, {}):
        r = client.get("/api/related", params=params)
        assert r.status_code == 422 and r.json()["detail"]
    assert client.post("/api/related", json={"urls": []}).status_code == 422
    page = client.get("/", params={"url": "http://nowhere.example.com/"})
    assert page.status_code == 404 and "unknown URL" in page.text


def test_page_shows_related_pages_terms_and_links(client, small_index):
    page = client.get("/", params={"url": JAVA1})
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    first = simweb.open_index(small_index).related(JAVA1)[0]
    assert first.url in page.text and 'id="terms"' in page.text and "Java page" in page.text
    assert "/?url=http%3A%2F%2Fjava" in page.text  # results are links to their own related pages
    assert "<form" in client.get("/").text


def test_openapi_docs_are_served(client):
    spec = client.get("/openapi.json").json()
    assert "/api/related" in spec["paths"] and "/api/terms" in spec["paths"]
    assert client.get("/docs").status_code == 200


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(index: str):
    port = free_port()
    env = {**os.environ, "PREFECT_SERVER_ANALYTICS_ENABLED": "false"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "simweb.cli", "serve", "--index", index, "--port", str(port)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
    )
    base = f"http://127.0.0.1:{port}"
    deadline = time.time() + 60
    while time.time() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"simweb serve exited: {proc.stderr.read().decode()}")
        try:
            urllib.request.urlopen(base + "/api/info", timeout=2).read()
            return proc, base
        except (urllib.error.URLError, ConnectionError):
            time.sleep(0.2)
    proc.kill()
    raise RuntimeError("simweb serve did not answer within 60 s")


@pytest.fixture(scope="module")
def server(small_index):
    proc, base = start_server(small_index)
    yield base
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()


def test_real_server_answers_like_the_api_and_the_cli(server, small_index, capsys):
    from simweb.cli import main as cli

    body = json.loads(urllib.request.urlopen(f"{server}/api/related?url={JAVA1}&top=5").read())
    api = simweb.open_index(small_index).related(JAVA1, top=5)
    assert cli(["related", JAVA1, "--index", small_index, "--top", "5", "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    ranking = [(r.url, r.similarity) for r in api]
    assert [(x["url"], x["similarity"]) for x in body["results"]] == ranking
    assert [(x["url"], x["similarity"]) for x in printed["results"]] == ranking
    with pytest.raises(urllib.error.HTTPError) as err:
        urllib.request.urlopen(f"{server}/api/related?url=http://nowhere.example.com/")
    assert err.value.code == 404
