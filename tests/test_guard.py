"""A safe server (simweb.guard, simweb.http): its own Host names only, replay links to http(s)
only, HEAD wherever GET, a Content-Security-Policy on its pages."""
from __future__ import annotations

import http.client
import re
import shutil
import subprocess
import sys
import urllib.parse

import pytest
from fastapi.testclient import TestClient

from simweb.guard import DOCS_POLICY, PAGE_POLICY, host_names
from simweb.http import create_app
from test_http import start_server

LOCAL = "http://127.0.0.1"
QUERY = "http://music2.example.com/"
EVIL_PREFIX = "javascript:alert(document.domain)//"


@pytest.fixture(scope="module")
def app(small_index):
    return create_app(small_index, hosts=host_names("127.0.0.1", ["proxy.example"]))


def get(app, path, host, method="GET", **params):
    return TestClient(app, base_url=f"http://{host}").request(method, path, params=params or None, follow_redirects=False)


@pytest.mark.parametrize("host", ["evil.example", "evil.example:8080", "127.0.0.1.evil.example", "localhost.evil",
                                  "[::2]", "0.0.0.0"])
def test_a_foreign_host_gets_400_and_never_a_redirect_to_it(app, host):
    for path in ("/", "/api/info", "/api/info/", "/docs", "/api/related?url=x"):
        answer = get(app, path, host)
        assert answer.status_code == 400, (path, host)
        assert "location" not in answer.headers
        assert "--allow-host" in answer.json()["detail"]


@pytest.mark.parametrize("host", ["127.0.0.1", "127.0.0.1:8080", "localhost", "LOCALHOST:1", "[::1]", "[::1]:8080",
                                  "proxy.example", "proxy.example:443"])
def test_the_servers_own_names_are_answered(app, host):
    assert get(app, "/api/info", host).status_code == 200
    redirect = get(app, "/api/info/", host)  # to the path without its slash, on the name asked
    assert redirect.status_code == 307 and urllib.parse.urlsplit(redirect.headers["location"]).netloc == host.lower()


def test_host_names_of_a_bound_address():
    assert host_names() == {"127.0.0.1", "localhost", "[::1]"}
    assert host_names("0.0.0.0") == host_names("::") == host_names()  # a wildcard is no name
    assert host_names("10.1.2.3", ["Search.Example.org:443", " "]) == {
        "127.0.0.1", "localhost", "[::1]", "10.1.2.3", "search.example.org"}
    assert "[fe80::1]" in host_names("fe80::1")


def hrefs(page: str) -> list[str]:
    return re.findall(r'(?:href|action|value)="([^"]*)"', page)


def test_a_replay_prefix_that_is_no_http_url_is_refused_everywhere(app):
    answer = get(app, "/api/related", "127.0.0.1", url=QUERY, replay_prefix=EVIL_PREFIX)
    assert answer.status_code == 422 and "http(s) address" in answer.text
    batch = TestClient(app, base_url=LOCAL).post("/api/related", json={"urls": [QUERY], "replay_prefix": EVIL_PREFIX})
    assert batch.status_code == 422 and "http(s) address" in batch.text
    page = get(app, "/", "127.0.0.1", url=QUERY, replay_prefix=EVIL_PREFIX)
    assert page.status_code == 422 and 'id="error"' in page.text
    assert not [h for h in hrefs(page.text) if "javascript" in h.lower()]
    for prefix in ("data:text/html,x", "JavaScript:x", "http:/no-host", "//evil.example/", " http://x/"):
        assert get(app, "/api/related", "127.0.0.1", url=QUERY, replay_prefix=prefix).status_code == 422, prefix
    with pytest.raises(ValueError, match="http"):
        create_app(app.state.index, replay_prefix=EVIL_PREFIX)


def test_head_is_answered_wherever_get_is(app):
    for path in ("/", "/api/info", f"/api/related?url={urllib.parse.quote(QUERY)}", "/docs", "/openapi.json"):
        got, head = get(app, path, "127.0.0.1"), get(app, path, "127.0.0.1", method="HEAD")
        assert head.status_code == got.status_code == 200, path
        assert head.content == b"" and head.headers["content-type"] == got.headers["content-type"]
    assert get(app, "/nowhere", "127.0.0.1", method="HEAD").status_code == 404


def test_html_pages_carry_a_content_security_policy(app):
    page = get(app, "/", "127.0.0.1", url=QUERY)
    assert page.headers["content-security-policy"] == PAGE_POLICY and "script-src" not in PAGE_POLICY
    assert "default-src 'none'" in PAGE_POLICY and "frame-ancestors 'none'" in PAGE_POLICY
    assert get(app, "/docs", "127.0.0.1").headers["content-security-policy"] == DOCS_POLICY
    assert "content-security-policy" not in get(app, "/api/info", "127.0.0.1").headers


def raw(base: str, method: str, path: str, host: str) -> http.client.HTTPResponse:
    parts = urllib.parse.urlsplit(base)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
    conn.putrequest(method, path, skip_host=True)
    conn.putheader("Host", host)
    conn.endheaders()
    answer = conn.getresponse()
    answer.body = answer.read()
    conn.close()
    return answer


def test_the_real_server_refuses_foreign_hosts_and_answers_head(small_index, tmp_path):
    proc, base = start_server(small_index, "--allow-host", "search.example")
    try:
        assert raw(base, "GET", "/api/info", "evil.example").status == 400
        refused = raw(base, "GET", "/api/info/", "evil.example")
        assert refused.status == 400 and refused.getheader("location") is None
        assert raw(base, "GET", "/api/info", "search.example").status == 200
        head = raw(base, "HEAD", "/", "127.0.0.1")
        assert head.status == 200 and head.body == b"" and head.getheader("content-security-policy") == PAGE_POLICY
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_serve_refuses_a_replay_prefix_that_is_no_http_url(small_index):
    done = subprocess.run([sys.executable, "-m", "simweb.cli", "serve", "--index", small_index, "--port", "1",
                           "--replay-prefix", EVIL_PREFIX], capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and "http(s) address" in done.stderr


CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (Debian: apt-get install -y chromium)")
def test_the_pages_work_in_chromium_under_their_policy(small_index, tmp_path):
    """The page and the API documentation render, and the browser reports no resource refused by
    the Content-Security-Policy (its console lines go to standard error)."""
    proc, base = start_server(small_index)
    try:
        for path, expected in ((f"/?url={urllib.parse.quote(QUERY, safe='')}", '<table id="related">'),
                               ("/docs", 'class="swagger-ui')):
            out = subprocess.run(
                [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-sync",
                 "--disable-background-networking", "--disable-component-update", "--disable-dev-shm-usage",
                 "--enable-logging=stderr", "--v=0", "--virtual-time-budget=10000",
                 f"--user-data-dir={tmp_path / 'profile'}", "--dump-dom", base + path],
                capture_output=True, text=True, timeout=120)
            assert out.returncode == 0 and expected in out.stdout, out.stderr[-2000:]
            assert "Content Security Policy" not in out.stderr and "Content-Security-Policy" not in out.stderr
    finally:
        proc.terminate()
        proc.wait(timeout=10)
