"""The related-pages page in a real headless browser (Debian's chromium; CI: apt-get install -y chromium)."""
from __future__ import annotations

import shutil
import subprocess
import urllib.parse

import pytest

import simweb
from test_http import start_server

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = pytest.mark.skipif(
    CHROMIUM is None, reason="chromium is not installed (Debian: apt-get install -y chromium)"
)


def test_page_shows_related_pages_in_chromium(small_index, tmp_path):
    proc, base = start_server(small_index)
    try:
        query = "http://music2.example.com/"
        url = f"{base}/?url={urllib.parse.quote(query, safe='')}&top=5"
        out = subprocess.run(
            [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             "--disable-dev-shm-usage", f"--user-data-dir={tmp_path / 'profile'}", "--dump-dom", url],
            capture_output=True, text=True, timeout=120,
        )
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    dom = out.stdout
    assert out.returncode == 0, out.stderr[-2000:]
    expected = simweb.open_index(small_index).related(query, top=5)
    assert expected, "the synthetic index must have related pages for this URL"
    assert '<table id="related">' in dom and dom.count('class="result"') == len(expected)
    for r in expected:
        assert r.url in dom and r.title in dom
    assert '<ol id="terms">' in dom
    assert dom.index(expected[0].url) < dom.index(expected[-1].url)  # in rank order


def test_the_api_documentation_renders_without_a_network(small_index, tmp_path):
    # Chromium's proxy points at a closed port: any file the page wanted from elsewhere fails.
    proc, base = start_server(small_index)
    try:
        out = subprocess.run(
            [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             "--disable-dev-shm-usage", "--proxy-server=http://127.0.0.1:9",
             "--virtual-time-budget=10000", f"--user-data-dir={tmp_path / 'profile'}", "--dump-dom", f"{base}/docs"],
            capture_output=True, text=True, timeout=120,
        )
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    assert out.returncode == 0, out.stderr[-2000:]
    assert 'class="swagger-ui' in out.stdout and "/api/related" in out.stdout  # the operations are listed


def test_a_page_is_found_by_words_of_its_title_in_chromium(small_index, tmp_path):
    """Typing words of a title (not an address) lists the pages that have them, each a link to
    its related pages."""
    proc, base = start_server(small_index)
    try:
        url = f"{base}/?url={urllib.parse.quote('weather page 3')}"
        out = subprocess.run(
            [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             "--disable-dev-shm-usage", f"--user-data-dir={tmp_path / 'profile'}", "--dump-dom", url],
            capture_output=True, text=True, timeout=120,
        )
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    dom = out.stdout
    assert out.returncode == 0, out.stderr[-2000:]
    assert '<ol id="found">' in dom and dom.count('class="found"') == 1
    assert "Weather page 3" in dom and 'href="/?url=http%3A%2F%2Fweather3.example.com%2F' in dom
