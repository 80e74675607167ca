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

# The server answers its own host names only (simweb.guard); TestClient's default Host is 'testserver'.
LOCAL = "http://127.0.0.1"

JAVA1 = "http://java1.example.com/"


@pytest.fixture(scope="module")
def client(small_index) -> TestClient:
    return TestClient(create_app(small_index), base_url=LOCAL)


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
    assert r.status_code == 404 and "not among the 48 crawled pages" in r.json()["detail"]
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


def start_server(index: str, *args: str, log=None):
    """``simweb serve`` on a free 127.0.0.1 port, with ``args`` added; its standard error goes
    to the file ``log`` when given. Returns (process, base URL) once it answers."""
    port = free_port()
    env = {**os.environ, "PREFECT_SERVER_ANALYTICS_ENABLED": "false"}
    stderr = open(log, "wb") if log is not None else subprocess.PIPE
    proc = subprocess.Popen(
        [sys.executable, "-m", "simweb.cli", "serve", "--index", index, "--port", str(port), *args],
        stdout=subprocess.PIPE, stderr=stderr, env=env,
    )
    if log is not None:
        stderr.close()  # the server holds its own copy
    base = f"http://127.0.0.1:{port}"
    deadline = time.time() + 60
    while time.time() < deadline:
        if proc.poll() is not None:
            said = open(log, "rb").read() if log is not None else proc.stderr.read()
            raise RuntimeError(f"simweb serve exited: {said.decode()}")
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


def raw_request(base: str, head: bytes, body_parts=(), timeout: float = 10.0) -> bytes:
    """Send a request head and body parts on one socket (stopping early if the server closes),
    then read what the server answers within ``timeout`` seconds; b"" if nothing came."""
    host, port = base.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=timeout) as s:
        s.sendall(head)
        for part in body_parts:
            try:
                s.sendall(part)
            except (BrokenPipeError, ConnectionResetError):
                break
        answer = b""
        try:
            while chunk := s.recv(65536):
                answer += chunk
        except (TimeoutError, ConnectionResetError):
            pass
        return answer


MAX_BODY = 64 * 1024  # the documented limits (simweb/http.py)
MAX_TARGET = 8 * 1024


def test_a_body_over_64_kib_is_refused_with_413_before_it_is_read_whole(server):
    # Content-Length says 10 MiB and 1 KiB follows: refused at once, not after waiting for the rest.
    head = (b"POST /api/related HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            b"Content-Length: 10485760\r\n\r\n")
    t0 = time.monotonic()
    answer = raw_request(server, head, [b" " * 1024])
    assert answer.startswith(b"HTTP/1.1 413 ") and b"at most 65536 bytes" in answer
    assert time.monotonic() - t0 < 5
    # Chunked, no Content-Length: 80 KiB sent and the body left unfinished; a server reading it
    # whole would wait for the last chunk and never answer.
    chunk = b"%x\r\n%s\r\n" % (8192, b" " * 8192)
    head = (b"POST /api/related HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            b"Transfer-Encoding: chunked\r\n\r\n")
    answer = raw_request(server, head, [chunk] * 10)
    assert answer.startswith(b"HTTP/1.1 413 ") and b"at most 65536 bytes" in answer
    # Just under the limit, chunked or not, the body is read and answered.
    body = json.dumps({"urls": [JAVA1], "top": 3}).encode()
    body += b" " * (MAX_BODY - len(body))
    req = urllib.request.Request(f"{server}/api/related", data=body, headers={"Content-Type": "application/json"})
    assert urllib.request.urlopen(req, timeout=10).status == 200
    answer = raw_request(server, head, [b"%x\r\n%s\r\n0\r\n\r\n" % (len(body), body)])
    assert answer.startswith(b"HTTP/1.1 200 ")


LONG_URL = "http://java1.example.com/" + "a" * MAX_TARGET


def test_a_request_target_over_8_kib_is_refused_with_414_on_every_endpoint(client):
    for path in ("/api/related", "/api/terms", "/", "/api/info", "/no-such-endpoint"):
        r = client.get(path, params={"url": LONG_URL})
        assert r.status_code == 414 and f"at most {MAX_TARGET} bytes" in r.json()["detail"]
        assert len(r.content) < 300
    assert client.get("/api/terms", params={"url": LONG_URL[:6000]}).status_code == 404  # under it: answered


def test_an_unknown_url_is_quoted_as_its_first_200_characters(client):
    long = LONG_URL
    # An unknown URL under the target limit, or of 60 KB in a batch.
    for r in (client.get("/api/related", params={"url": long[:6000]}),
              client.get("/api/terms", params={"url": long[:6000]}),
              client.post("/api/related", json={"urls": ["http://java1.example.com/" + "b" * 60_000]})):
        assert r.status_code == 404 and len(r.content) < 500, r.content[:300]
        assert r.json()["detail"].startswith("unknown URL 'http://java1.example.com/aaaa"[:34])
        assert "…': not among" in r.json()["detail"]
    page = client.get("/", params={"url": long[:6000]})  # the form keeps the URL typed, the message cuts it
    error = page.text[page.text.index('id="error"'):]
    assert page.status_code == 404 and "a" * 200 not in error[:error.index("</p>")]
    # A bad parameter is quoted no longer either.
    r = client.get("/api/related", params={"url": JAVA1, "top": "9" * 6000})
    assert r.status_code == 422 and len(r.content) < 1000


def test_info_shows_the_index_folder_by_name_not_its_path(client, small_index):
    info = client.get("/api/info").json()
    assert info["path"] == os.path.basename(small_index)
    assert os.path.dirname(os.path.abspath(small_index)) not in json.dumps(info)
    assert info["current"] == {"version": info["version"], "served": True, "problem": None}


def serve_once(*args: str) -> subprocess.CompletedProcess:
    """`simweb serve` that is expected to refuse (bounded: killed after 60 s if it serves instead)."""
    return subprocess.run([sys.executable, "-m", "simweb.cli", "serve", "--port", str(free_port()), *args],
                          capture_output=True, text=True, timeout=60)


def test_serve_verify_refuses_a_damaged_index_in_one_line_and_serves_a_whole_one(small_index, tmp_path):
    import shutil

    from simweb.tasks import index_store

    root = str(tmp_path / "idx")
    copy = shutil.copytree(index_store.resolve(small_index), tmp_path / "copy")  # files of its own
    index_store.publish(str(copy), root, name="v-1")
    h = os.path.join(root, "versions", "v-1", "H.u32")
    with open(h, "r+b") as f:
        f.write(bytes(4 * 80))  # the same size: only --verify tells
    done = serve_once("--index", root, "--verify")
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert done.stderr.startswith(f"simweb serve: {os.path.dirname(h)} is damaged: H.u32: expected SHA-256 ")
    assert ", found " in done.stderr and "rebuild the index" in done.stderr
    with open(h, "r+b") as f:
        f.truncate(100)  # a size the manifest does not record: refused with or without --verify
    for verify in ((), ("--verify",)):
        done = serve_once("--index", root, *verify)
        assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
        assert f"{h}: missing or not 15360 bytes as the manifest says; rebuild the index" in done.stderr
    proc, base = start_server(small_index, "--verify")
    try:
        assert json.loads(urllib.request.urlopen(f"{base}/api/info", timeout=10).read())["documents"] == 48
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_the_documentation_pages_use_no_file_from_elsewhere(client):
    import re

    for page in ("/docs", "/redoc"):
        r = client.get(page)
        assert r.status_code == 200
        refs = re.findall(r"""(?:src|href|url)\s*[=:]\s*["']([^"']+)["']""", r.text)
        assert refs and not [u for u in refs if "//" in u], refs  # neither http(s):// nor //host
        for ref in refs:
            asset = client.get(ref)
            assert asset.status_code == 200 and len(asset.content) > 100, ref
    assert '"validatorUrl": null' in client.get("/docs").text  # the spec is not sent to a validator


def test_requests_answer_from_the_open_version_while_another_request_opens_a_new_one(small_index, tmp_path,
                                                                                  monkeypatch):
    import shutil
    import threading

    from simweb.api import Index
    from simweb.tasks import index_store

    root = str(tmp_path / "idx")
    copy = shutil.copytree(index_store.resolve(small_index), tmp_path / "copy")
    index_store.publish(str(copy), root, name="v-1")
    opening, release = threading.Event(), threading.Event()
    open_version = Index._open

    def slow_open(self, path):  # stands for reading a large version whole under --verify
        if path.endswith("v-2"):
            opening.set()
            release.wait(30)
        return open_version(self, path)

    monkeypatch.setattr(Index, "_open", slow_open)
    with TestClient(create_app(root), base_url=LOCAL) as client:
        index_store.publish(str(copy), root, name="v-2")
        first = threading.Thread(target=client.get, args=("/api/info",))
        first.start()
        try:
            assert opening.wait(10)
            t0 = time.monotonic()
            r = client.get("/api/related", params={"url": JAVA1})
            assert r.status_code == 200 and r.json()["version"] == "v-1" and time.monotonic() - t0 < 5
        finally:
            release.set()
            first.join(30)
        assert client.get("/api/info").json()["version"] == "v-2"


def test_the_page_finds_pages_by_words_of_their_title_or_url(client):
    page = client.get("/", params={"url": "Music page 2"})
    assert page.status_code == 200
    assert page.text.count('class="found"') == 1 and "/?url=http%3A%2F%2Fmusic2.example.com%2F" in page.text
    many = client.get("/", params={"url": "music"}).text
    assert many.count('class="found"') == 12  # every page of the topic, by title and URL
    none = client.get("/", params={"url": "nothing-like-this"}).text
    assert 'id="found"' in none and "No page of this index has all of" in none


def test_the_page_explains_pages_and_indexed(client, small_index):
    import simweb

    info = simweb.open_index(small_index).info()
    about = client.get("/").text
    assert info["crawled_documents"] == info["documents"] == 48 and info["linked_only_documents"] == 0
    assert f"{info['crawled_documents']:,} crawled pages, {info['indexed_documents']:,} indexed" in about
    assert f"linked to by more than {info['min_in_degree']} pages" in about and "can be asked about" in about


def test_top_terms_show_the_pages_own_words(build_in_process, warc_dir, tmp_path):
    """Under STEM the bag's terms are stems; the page shows, for each, the page's most frequent
    word with that stem, read from the index's crawl."""
    from simweb.core.text import porter_stem

    index = build_in_process(warc_dir, tmp_path / "index", min_in_degree=0)
    del index
    import simweb

    opened = simweb.open_index(str(tmp_path / "index"))
    url = "http://example.com/"
    readable = opened.readable_terms(url, 10)
    assert [t for t, _, _ in readable] == [t for t, _ in opened.top_terms(url, 10)]
    assert all(porter_stem(word) == term for term, word, _ in readable)
    changed = [(t, w) for t, w, _ in readable if t != w]
    assert changed, readable  # some stem reads differently as a word
    page = TestClient(create_app(str(tmp_path / "index")), base_url=LOCAL).get("/", params={"url": url}).text
    term, word = changed[0]
    assert f"<li>{word} " in page and f"(term {term})" in page
