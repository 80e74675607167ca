"""URL normalisation and url ids."""
from __future__ import annotations

import string

import mmh3
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simweb.core import urls
from simweb.core.memo import Memo
from simweb.core.urls import normalize_url, url_id

BASE = "http://a/b/c/d;p?q"


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        # case, default ports, empty path, fragments
        ("HTTP://Example.COM:80/a/./b/../c#top", "http://example.com/a/c"),
        ("https://example.com:443", "https://example.com/"),
        ("http://example.com:8080", "http://example.com:8080/"),
        ("http://example.com:0080/x", "http://example.com/x"),
        ("https://example.com:80/", "https://example.com:80/"),
        ("http://example.com/Path/CASE", "http://example.com/Path/CASE"),
        ("http://example.com/p#", "http://example.com/p"),
        ("http://example.com", "http://example.com/"),  # already normal but for the path
        ("http://example.com?q=1#f", "http://example.com/?q=1"),
        ("http://example.com/a/./b", "http://example.com/a/b"),
        ("http://example.com/.well-known/x", "http://example.com/.well-known/x"),
        ("http://example.com/p?", "http://example.com/p"),
        ("http://example.com:/p", "http://example.com/p"),
        # percent-encoding: unreserved decoded, others upper-cased, raw ones escaped
        ("http://example.com/%7euser/%2fx%e2%82%ac?q=a%2cb&x=%7E", "http://example.com/~user/%2Fx%E2%82%AC?q=a%2Cb&x=~"),
        ("http://example.com/%41%2D%5f%2e", "http://example.com/A-_."),
        ("http://example.com/a b\"<>`{}|^", "http://example.com/a%20b%22%3C%3E%60%7B%7D%7C%5E"),
        ("http://example.com/100%", "http://example.com/100%25"),
        ("http://example.com/%zz", "http://example.com/%25zz"),
        ("http://example.com/ä?ö=ü", "http://example.com/%C3%A4?%C3%B6=%C3%BC"),
        ("http://example.com/a/%2E%2E/b", "http://example.com/b"),
        # hosts: IDNA, IPv6, user info, percent-encoded host
        ("http://Bücher.DE/", "http://xn--bcher-kva.de/"),
        ("http://xn--bcher-kva.de/", "http://xn--bcher-kva.de/"),
        ("http://[::1]:80/", "http://[::1]/"),
        ("http://[2001:DB8:0:0:0:0:0:1]:8080/", "http://[2001:db8::1]:8080/"),
        ("http://user:Pa%73s@H.com/", "http://user:Pass@h.com/"),
        ("http://%65xample.com/", "http://example.com/"),
        # browsers' leniency that real pages rely on
        (" \thttp://x.com/a\n/b  ", "http://x.com/a/b"),
        ("http:\\\\x.com\\a\\b?q=\\", "http://x.com/a/b?q=%5C"),
        # not http(s), or not a URL
        ("mailto:someone@example.com", None),
        ("javascript:void(0)", None),
        ("data:text/html,hi", None),
        ("ftp://example.com/file", None),
        ("tel:+123", None),
        ("", None),
        ("not a url", None),
        ("http://", None),
        ("http:///path", None),
        ("http://exa mple.com/", None),
        ("http://example.com:99999/", None),
        ("http://example.com:8o/", None),
        ("http://[zz]/", None),
        ("http://a..b\u00e9/", None),
    ],
)
def test_normalize_url(url, expected):
    assert normalize_url(url) == expected


@pytest.mark.parametrize(
    ("ref", "expected"),
    [
        # RFC 3986 Section 5.4 (fragments dropped); "http:g" is relative, as browsers read it
        ("g:h", None), ("g", "http://a/b/c/g"), ("./g", "http://a/b/c/g"), ("g/", "http://a/b/c/g/"),
        ("/g", "http://a/g"), ("//g", "http://g/"), ("?y", "http://a/b/c/d;p?y"), ("g?y", "http://a/b/c/g?y"),
        ("#s", "http://a/b/c/d;p?q"), ("g#s", "http://a/b/c/g"), (";x", "http://a/b/c/;x"),
        ("g;x?y#s", "http://a/b/c/g;x?y"), ("", "http://a/b/c/d;p?q"), (".", "http://a/b/c/"),
        ("..", "http://a/b/"), ("../g", "http://a/b/g"), ("../..", "http://a/"), ("../../g", "http://a/g"),
        ("../../../g", "http://a/g"), ("/./g", "http://a/g"), ("/../g", "http://a/g"), ("g.", "http://a/b/c/g."),
        (".g", "http://a/b/c/.g"), ("g..", "http://a/b/c/g.."), ("./../g", "http://a/b/g"),
        ("g/./h", "http://a/b/c/g/h"), ("g/../h", "http://a/b/c/h"), ("http:g", "http://a/b/c/g"),
        ("https://other.org/x", "https://other.org/x"), ("..\\g", "http://a/b/g"),
    ],
)
def test_relative_references_resolve_against_base(ref, expected):
    assert normalize_url(ref, BASE) == expected


def test_base_with_empty_path_and_non_http_base():
    assert normalize_url("x.html", "http://h.com") == "http://h.com/x.html"
    assert normalize_url("x.html", "mailto:a@b") is None


def test_garbage_types_give_none():
    assert normalize_url(None) is None  # type: ignore[arg-type]
    assert normalize_url("x", b"http://h.com/") is None  # type: ignore[arg-type]
    assert normalize_url(b"http://x.com/") is None  # type: ignore[arg-type]
    assert normalize_url(["http://x.com/"]) is None  # type: ignore[arg-type]


def test_url_id_is_unsigned_64_bit_murmur3_of_the_normalised_url():
    assert url_id("http://example.com/") == 11571728257177965048
    assert url_id("HTTP://EXAMPLE.com:80#frag") == 11571728257177965048
    assert url_id("https://example.com/") == 13045409861407093919
    assert url_id("http://example.com/a/./b/../b?x=1") == 12725674544839235263
    assert url_id("http://Bücher.de") == 4908871797442694511
    normalised = "http://example.com/a/b?x=1"
    assert url_id(normalised) == mmh3.hash64(normalised.encode("utf-8"), 0, signed=False)[0]


def test_url_id_refuses_what_is_not_an_http_url():
    with pytest.raises(ValueError, match="expected an absolute http or https URL, got 'mailto:x@y'"):
        url_id("mailto:x@y")


def test_cache_is_bounded(monkeypatch):
    monkeypatch.setattr(urls, "URL_MEMO", Memo(4))
    for i in range(20):
        assert normalize_url(f"http://h.com/{i}") == f"http://h.com/{i}"
    assert len(urls.URL_MEMO) <= 5


url_parts = st.lists(
    st.sampled_from(
        list(string.printable)
        + ["ä", "€", "%", "%2e", "%2E", "%7e", "%41", "%zz", "%", "\\", "/", ".", "..", ":", "@",
           "[", "]", "#", "?", ";", "//", "ß", "İ", "\u200b", "\ud800", "xn--", "a.b", "B", ":80", ":443"]
    ),
    max_size=30,
).map("".join)
prefixes = st.sampled_from(
    ["http://", "HTTPS://", "http:", "//", "", "../", "http://[::1]", "http://a.b:80", "http://x.y/", "mailto:"]
)


@settings(max_examples=500, deadline=None)
@given(prefixes, url_parts, st.one_of(st.none(), st.just("http://h.com/a/b"), url_parts))
def test_normalize_url_is_idempotent_and_never_raises(prefix, body, base):
    result = normalize_url(prefix + body, base)
    if result is not None:
        assert normalize_url(result) == result
        assert normalize_url(result, "http://other.org/x") == result  # absolute stays absolute
        assert result.startswith(("http://", "https://"))
        assert result.isascii() and "#" not in result and " " not in result
        assert url_id(result) == url_id(prefix + body) if base is None else True


def _uncached(url, base):
    try:
        return urls._normalise(url, base)
    except (ValueError, TypeError, UnicodeError):
        return None


refs = st.tuples(st.sampled_from(["", "?", "#", "/", "//", "http:", "HTTP:", "https:", "\t", " ", "ht\ttp:", "a", ".",
                                  "http://h.com/", "HTTPS://h.com", "ftp://h.com/", "http://h.com/#", "x#"]),
                 url_parts).map("".join)
bases = st.tuples(st.sampled_from(["http://h.com", "http://h.com/", "HTTP://H.com:80/d/", "https://h.com/d/",
                                   "http://[", "http://h.com/d\\e/", " http://h.com/d/\t"]),
                  st.sampled_from(["", "p", "p?q=1", "p#f", "?x", "x/y", "./"])).map("".join)


@settings(max_examples=1000, deadline=None)
@given(refs, bases, bases)
def test_memo_per_base_directory_gives_what_resolving_anew_gives(ref, base, other_base):
    # The memo is shared by bases of one directory: whichever base asks first, every base
    # gets what resolving against itself gives.
    for first, second in ((base, other_base), (other_base, base)):
        urls.URL_MEMO.clear()
        urls.BASE_MEMO.clear()
        assert normalize_url(ref, first) == _uncached(ref, first)
        assert normalize_url(ref, second) == _uncached(ref, second)


def test_relative_links_are_memoised_per_base_directory(monkeypatch):
    monkeypatch.setattr(urls, "URL_MEMO", Memo(urls.URL_MEMO.limit))
    assert normalize_url("next.html", "http://h.com/d/a.html") == "http://h.com/d/next.html"
    assert normalize_url("next.html", "http://h.com/d/b.html?x=1") == "http://h.com/d/next.html"
    assert normalize_url("?page=2", "http://h.com/d/a.html") == "http://h.com/d/a.html?page=2"
    assert normalize_url("?page=2", "http://h.com/d/b.html") == "http://h.com/d/b.html?page=2"
    assert normalize_url("#top", "http://h.com/d/b.html?x=1") == "http://h.com/d/b.html?x=1"
    assert normalize_url("\t?page=2", "http://h.com/d/c.html") == "http://h.com/d/c.html?page=2"
    assert normalize_url("http:?page=2", "http://h.com/d/c.html") == "http://h.com/d/c.html?page=2"
    assert normalize_url("http:\x0b", "http://h.com/d/c.html") == "http://h.com/d/c.html"  # trimmed to "http:"
    assert normalize_url("http:\x0b", "http://h.com/d/e.html") == "http://h.com/d/e.html"
    relative = [key for key in urls.URL_MEMO if key[0] == "next.html"]
    assert relative == [("next.html", ("http", "h.com", "/d/"))]  # one entry for both pages


def _resolved_anew(monkeypatch) -> list[str]:
    """Empty memos, and the list every reference resolved anew (not found in a memo) goes to."""
    monkeypatch.setattr(urls, "URL_MEMO", Memo(urls.URL_MEMO.limit))
    monkeypatch.setattr(urls, "BASE_MEMO", Memo(urls.BASE_MEMO.limit))
    calls = []
    resolve = urls._normalise
    monkeypatch.setattr(urls, "_normalise", lambda url, base: calls.append(url) or resolve(url, base))
    return calls


def test_links_to_places_in_a_page_and_absolute_links_share_memo_entries(monkeypatch):
    # The fragment is dropped before the memo is asked, and a link naming its authority reads
    # nothing of the base: "#l1" and "#l2" of one page, and one absolute link from pages of
    # other directories, are resolved once each.
    calls = _resolved_anew(monkeypatch)
    page = "http://h.com/d/a.html?x=1"
    assert urls.normalize_links(["#l1", "#l2", "b.html#top", "b.html#end"], page) == [page, page, "http://h.com/d/b.html", "http://h.com/d/b.html"]
    absolute = "HTTP://H.com/e/f.html#s"
    assert [normalize_url(absolute, base) for base in ("http://h.com/d/a.html", "https://x.org/g/", page)] == ["http://h.com/e/f.html"] * 3
    assert normalize_url(absolute) == "http://h.com/e/f.html"
    assert calls == ["", "b.html", "HTTP://H.com/e/f.html"]


def test_a_batch_memoises_an_absolute_link_once_for_every_directory(monkeypatch):
    # Pages of many directories (a mirror's, a CMS's) link absolutely to the same pages: each
    # such link is resolved once and held in one memo entry, not one per directory.
    calls = _resolved_anew(monkeypatch)
    links = ["HTTPS://H.com/x.html#a", "https://h.com/y.html", "z.html", None]
    for page in ("http://h.com/d/a.html", "http://h.com/e/b.html", "https://o.org/f/g/c.html", "http://h.com/d/b.html"):
        assert urls.normalize_links(links, page) == [
            "https://h.com/x.html", "https://h.com/y.html", normalize_url("z.html", page), None]
    assert calls.count("HTTPS://H.com/x.html") == 1 and calls.count("https://h.com/y.html") == 1
    assert [key for key in urls.URL_MEMO if "x.html" in str(key)] == ["HTTPS://H.com/x.html#a"]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(refs, st.none()), max_size=8), bases, bases)
def test_a_batch_of_links_gives_what_each_link_gives(hrefs, base, other_base):
    # A page's links in one batch: hits from another page of the directory, misses and
    # references that read the whole base all give what normalize_url gives link by link.
    for first, second in ((base, other_base), (other_base, base)):
        urls.URL_MEMO.clear()
        urls.BASE_MEMO.clear()
        assert urls.normalize_links(hrefs, first) == [_uncached(h, first) if h is not None else None for h in hrefs]
        assert urls.normalize_links(hrefs, second) == [_uncached(h, second) if h is not None else None for h in hrefs]


def test_a_batch_answers_links_seen_in_the_directory_from_the_memo(monkeypatch):
    monkeypatch.setattr(urls, "URL_MEMO", Memo(urls.URL_MEMO.limit))
    monkeypatch.setattr(urls, "BASE_MEMO", Memo(urls.BASE_MEMO.limit))
    first = urls.normalize_links(["next.html", "?page=2", None, "mailto:x@y.z"], "http://h.com/d/a.html")
    assert first == ["http://h.com/d/next.html", "http://h.com/d/a.html?page=2", None, None]
    calls = []
    monkeypatch.setattr(urls, "_normalise", lambda url, base: calls.append(url))
    again = urls.normalize_links(["next.html", "?page=2"], "http://h.com/d/b.html")
    assert again[0] == "http://h.com/d/next.html"  # from the memo: the same directory
    assert calls == ["?page=2"]  # reads the whole base: resolved anew

@settings(max_examples=500, deadline=None)
@given(prefixes, url_parts)
def test_links_already_normal_take_a_short_cut_to_the_same_result(prefix, body):
    url = (prefix + body).partition("#")[0]
    if urls._ALREADY_NORMAL.fullmatch(url):
        assert urls._normalise(url, None) == urls._normalise_in_full(url)


@settings(max_examples=500, deadline=None)
@given(st.text(max_size=40), st.one_of(st.none(), st.text(max_size=40)))
def test_normalize_url_never_raises_on_any_text(url, base):
    result = normalize_url(url, base)
    assert result is None or normalize_url(result) == result
