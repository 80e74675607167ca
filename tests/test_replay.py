"""SURT keys, timestamps, CDXJ lines and replay URLs (simweb.core.replay)."""
from __future__ import annotations

import json

import pytest
from hypothesis import given, settings, strategies as st
from urllib.parse import quote

from simweb.core import replay
from simweb.core.replay import cdxj_line, payload_digest, replay_url, surt, timestamp14

# Expected keys as the reference `surt` package (pywb's) computes them with its defaults.
SURTS = [
    ("http://www.archive.org/goo/?a=2&b&a=1", "org,archive)/goo?a=1&a=2&b"),
    ("https://Example.com:443/A/B/", "com,example)/a/b"),
    ("http://example.com:8080/x?jsessionid=0123456789abcdef0123456789abcdef&q=1", "com,example:8080)/x?q=1"),
    ("http://www2.foo.com/%7Euser/", "com,foo)/~user"),
    ("http://3279880203/x", "11,0,127,195)/x"),
    ("http://a.b.c/ü?x=é", "c,b,a)/%c3%bc?x=%c3%a9"),
    ("http://example.com/", "com,example)/"),
    ("http://example.com", "com,example)/"),
    ("http://debian.org/doc/index.html", "org,debian)/doc/index.html"),
    ("http://h/a//b/./../c/", "h)/a/c"),
    ("http://h/a%2Fb", "h)/a/b"),
    ("http://h/?", "h)/"),
    ("http://h/path;jsessionid=abc", "h)/path;jsessionid=abc"),
    ("http://user:pw@host.com/x#frag", "com,host)/x"),
    ("http://host.com/a b", "com,host)/a%20b"),
]


@pytest.mark.parametrize("url, key", SURTS)
def test_surt_keys_are_those_pywb_computes(url, key):
    assert surt(url) == key


# Paths and hosts drawn from the characters that decide the steps: separators, dots, escapes,
# characters escaping once must change, and a few letters.
_URL_TEXT = st.text(st.sampled_from("/./%2Fa#B~ é\x7f\t:@?&=1"), max_size=16)


@settings(max_examples=400, deadline=None)
@given(_URL_TEXT)
def test_escaping_once_changes_a_text_only_where_quoting_does(text):
    assert replay._escape_once(text) == quote(text.encode("utf-8"), safe=replay._SAFE)


@settings(max_examples=400, deadline=None)
@given(_URL_TEXT)
def test_a_path_kept_as_it_is_by_the_short_way_is_what_the_full_steps_give(path):
    segments = replay._unescape_repeatedly(path).split("/")[1:] if path else []
    kept: list[str] = []
    for segment in segments:
        if segment == "..":
            kept.pop() if kept else kept.append(segment)
        elif segment != ".":
            kept.append(segment)
    full = "/" + "".join(f"{s}/" for s in kept[:-1] if s) + (kept[-1] if kept else "")
    assert replay._canonical_path(path) == quote(full.encode("utf-8"), safe=replay._SAFE)


@pytest.mark.parametrize("date, expected", [
    ("2017-03-06T04:02:06Z", "20170306040206"),
    ("2017-03-06T04:02:06.123456Z", "20170306040206"),
    ("2017-03-06T04:02Z", "20170306040200"),
    ("2017-03-06T01:02:06-03:00", "20170306040206"),
    ("2017-03-06T06:02:06+0200", "20170306040206"),
    ("1999-12-31T23:30:00-01:00", "20000101003000"),
    ("2024-02-29T00:00:09+00:30", "20240228233009"),
    ("2008-10-294T05:21:46-0700", None),
    ("", None),
    (None, None),
])
def test_timestamps_are_14_digits_in_utc(date, expected):
    assert timestamp14(date) == expected


def test_cdxj_lines_and_replay_urls():
    assert payload_digest("sha1:G7HRM7BGOKSKMSXZAHMUQTTV53QOFSMK") == "G7HRM7BGOKSKMSXZAHMUQTTV53QOFSMK"
    assert payload_digest(None) == "-"
    line = cdxj_line("com,example)/a", "20170306040206", "http://example.com/a", "text/html", 200, "ABC", 512, 1024,
                     "crawl.warc.gz")
    key, stamp, data = line.split(" ", 2)
    assert (key, stamp) == ("com,example)/a", "20170306040206")
    assert list(json.loads(data).items()) == [
        ("url", "http://example.com/a"), ("mime", "text/html"), ("status", "200"), ("digest", "ABC"),
        ("length", "512"), ("offset", "1024"), ("filename", "crawl.warc.gz")]
    assert replay_url("http://localhost:8080/my-coll", "20170306040206", "http://example.com/a") == \
        "http://localhost:8080/my-coll/20170306040206/http://example.com/a"
    assert replay_url("https://web.archive.org/web/", "20170306040206", "http://example.com/a") == \
        "https://web.archive.org/web/20170306040206/http://example.com/a"
    assert replay_url("http://p/{timestamp}id_/{url}", "2017", "http://e/") == "http://p/2017id_/http://e/"
    assert replay_url("http://p/", None, "http://e/") is None
