"""The written rules that make several URLs one document (simweb.core.aliases)."""
from __future__ import annotations

import numpy as np
import pytest

from simweb.core.aliases import (CANONICAL, CANONICAL_DISAGREE, CANONICAL_OTHER_HOST, CANONICAL_TO_ITSELF, INDEX,
                                 KINDS, LOCATION_NOT_HTTP, NO_LOCATION, NOSLASH, REDIRECT, REDIRECT_TO_ITSELF, SLASH,
                                 build_alias_map, canonical_target, redirect_target, resolve_chains, variant_names)
from simweb.core.urls import url_id


def test_redirect_targets_resolve_against_the_record_url():
    assert redirect_target("http://h/dir", "/dir/") == ("http://h/dir/", None)
    assert redirect_target("http://h/a", "https://other.example/b") == ("https://other.example/b", None)
    assert redirect_target("http://h/a", None) == (None, NO_LOCATION)
    assert redirect_target("http://h/a", "mailto:x@h") == (None, LOCATION_NOT_HTTP)
    assert redirect_target("http://h/a", "http://H:80/a#top") == (None, REDIRECT_TO_ITSELF)


def test_canonical_links_count_only_within_the_page_origin():
    assert canonical_target("http://h/a?x=1", ("http://h/a",)) == ("http://h/a", None)
    assert canonical_target("http://h/a", ()) == (None, None)
    assert canonical_target("http://h/a", ("http://h/a",)) == (None, CANONICAL_TO_ITSELF)
    assert canonical_target("http://h/a", ("http://other/a",)) == (None, CANONICAL_OTHER_HOST)
    assert canonical_target("http://h/a", ("https://h/a",)) == (None, CANONICAL_OTHER_HOST)
    assert canonical_target("http://h/a", ("http://h:8080/a",)) == (None, CANONICAL_OTHER_HOST)
    assert canonical_target("http://h/a", ("http://h/b", "http://h/c")) == (None, CANONICAL_DISAGREE)


def test_variant_names():
    assert variant_names("http://h/doc/") == [("http://h/doc", SLASH)] + [
        (f"http://h/doc/{name}", INDEX)
        for name in ("index.html", "index.htm", "index.php", "default.htm", "default.asp", "default.aspx")]
    assert [n for n, _ in variant_names("http://h/")][:1] == ["http://h/index.html"]
    assert variant_names("http://h/doc/index.html") == [("http://h/doc/", INDEX), ("http://h/doc", INDEX)]
    assert variant_names("http://h/Default.ASPX") == [("http://h/", INDEX)]
    assert variant_names("http://h/page") == [("http://h/page/", NOSLASH)]
    assert variant_names("http://h/page.html") == []
    assert variant_names("http://h/doc/?q=1") == []


def evidence(rows):
    """Arrays for build_alias_map from (alias, target, kind) rows, ranked in order."""
    alias_ids = np.array([url_id(a) for a, _, _ in rows], np.uint64)
    target_ids = np.array([url_id(t) for _, t, _ in rows], np.uint64)
    return alias_ids, target_ids, [t for _, t, _ in rows], np.array([KINDS.index(k) for *_, k in rows], np.int8), \
        np.arange(len(rows))


def mapping(rows, pages):
    aliases = build_alias_map(*evidence(rows), np.array([url_id(p) for p in pages], np.uint64))
    by_id = {url_id(u): u for row in rows for u in row[:2]}
    return {by_id[int(a)]: url for a, url in zip(aliases.ids.tolist(), aliases.target_urls)}, aliases.counts


def variants_of(*pages):
    return [(name, page, kind) for page in pages for name, kind in variant_names(page)]


def test_a_slashless_link_reaches_the_crawled_directory_page():
    found, counts = mapping(variants_of("http://h/doc/"), ["http://h/doc/"])
    assert found["http://h/doc"] == "http://h/doc/" and found["http://h/doc/index.html"] == "http://h/doc/"
    assert counts["aliases"] == 7 and counts["aliases_slash"] == 1 and counts["aliases_index"] == 6


def test_a_route_and_its_slashed_form_are_one_document_when_one_of_them_was_crawled():
    found, _ = mapping(variants_of("http://h/about"), ["http://h/about"])
    assert found == {"http://h/about/": "http://h/about"}
    found, counts = mapping(variants_of("http://h/about", "http://h/about/"), ["http://h/about", "http://h/about/"])
    assert found == {f"http://h/about/{n}": "http://h/about/" for n in
                     ("index.html", "index.htm", "index.php", "default.htm", "default.asp", "default.aspx")}
    assert counts["variants_crawled"] == 2


def test_the_noslash_rule_is_the_weakest():
    """/a and /a/index.html crawled: /a/ is the index page's (index rule), not /a's."""
    found, _ = mapping(variants_of("http://h/a", "http://h/a/index.html"), ["http://h/a", "http://h/a/index.html"])
    assert found == {"http://h/a/": "http://h/a/index.html"}


def test_a_crawled_variant_keeps_its_own_document():
    found, counts = mapping(variants_of("http://h/doc/"), ["http://h/doc/", "http://h/doc"])
    assert "http://h/doc" not in found and counts["variants_crawled"] == 1


def test_the_slash_rule_goes_before_the_index_rule_and_two_index_pages_are_ambiguous():
    found, counts = mapping(variants_of("http://h/doc/", "http://h/doc/index.html", "http://h/doc/index.php"),
                            ["http://h/doc/", "http://h/doc/index.html", "http://h/doc/index.php"])
    assert found == {"http://h/doc": "http://h/doc/", **{f"http://h/doc/{n}": "http://h/doc/" for n in
                                                          ("index.htm", "default.htm", "default.asp", "default.aspx")}}
    found, counts = mapping(variants_of("http://h/doc/index.html", "http://h/doc/index.php"),
                            ["http://h/doc/index.html", "http://h/doc/index.php"])
    assert found == {} and counts["variants_ambiguous"] == 2


def test_redirects_win_over_canonical_links_and_variants_and_chains_are_followed():
    rows = [("http://h/a", "http://h/b", CANONICAL), ("http://h/a", "http://h/c", REDIRECT),
            ("http://h/c", "https://h/c", REDIRECT), ("http://h/c", "http://h/d", REDIRECT),
            *variants_of("http://h/doc/"), ("http://h/doc", "http://h/elsewhere", REDIRECT)]
    found, counts = mapping(rows, ["http://h/doc/", "https://h/c"])
    assert found["http://h/a"] == "https://h/c" and found["http://h/c"] == "https://h/c"
    assert found["http://h/doc"] == "http://h/elsewhere"
    assert counts["conflicting_aliases"] == 2 and counts["aliases_chained"] == 1 and counts["aliases_redirect"] == 3


def test_loops_and_over_long_chains_are_not_resolved():
    rows = [("http://h/a", "http://h/b", REDIRECT), ("http://h/b", "http://h/a", REDIRECT),
            ("http://h/x", "http://h/a", REDIRECT)]
    found, counts = mapping(rows, [])
    assert found == {} and counts["aliases_in_loops"] == 3
    chain = [(f"http://h/{i}", f"http://h/{i + 1}", REDIRECT) for i in range(25)]
    found, counts = mapping(chain, [])
    assert counts["aliases_too_long"] == 5 and found["http://h/5"] == "http://h/25"


@pytest.mark.parametrize("seed", range(5))
def test_resolve_chains_equals_walking_the_map(seed):
    rng = np.random.default_rng(seed)
    ids = rng.permutation(40)[:20].astype(np.uint64)
    targets = rng.integers(0, 40, 20).astype(np.uint64)
    targets[targets == ids] += np.uint64(41)
    final, hops, resolved = resolve_chains(ids, targets, max_hops=6)
    step = dict(zip(ids.tolist(), targets.tolist()))
    for i, start in enumerate(ids.tolist()):
        at, n = step[start], 1
        while at in step and n <= 6:
            at, n = step[at], n + 1
        assert resolved[i] == (at not in step) and (not resolved[i] or (final[i] == at and hops[i] == n))
