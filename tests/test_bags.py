"""Bag fragments, merging and weighting, checked by hand against the paper (Sections 3, 5.2, 6.1)."""
from __future__ import annotations

import dataclasses
import math
import random
from unittest import mock

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simweb.core import bag_entries as bags_module
from simweb.core.bag_columns import WordLists
from simweb.core.bag_entries import gather_runs, merge_entries
from simweb.core.bag_matrix import BagMatrix
from simweb.core.bag_reference import (
    LINK_PREFIX,
    Fragment,
    FragmentKind,
    LinkRow,
    PageRow,
    anchor_fragment,
    content_fragment,
    document_frequencies,
    link_fragment,
    link_fragments,
    merge_bags,
    merge_fragments,
    outlink_fragment,
    page_fragments,
    reference_bags,
    title_fragment,
    weigh_bags,
    window_terms,
)
from simweb.core.bags import Corpus, build_bags, term_map
from simweb.core.strategy import Frequency, Source, Strategy, Window
from simweb.core.text import STOPWORDS, Stemming, term

A, B, C, D = (f"http://{x}.example/" for x in "abcd")
IA, IB, IC, ID = 11, 22, 33, 44


def link(src=A, sid=IA, dst=B, did=IB, anchor=("linux",), left=(), right=(), syn=(0, 0), top=(0, 0)) -> LinkRow:
    return LinkRow(src, sid, dst, did, tuple(anchor), tuple(left), tuple(right), *syn, *top)


def anchor_only(**kw) -> Strategy:
    return Strategy(sources=["anchor"], stemming=kw.pop("stemming", "nostem"), frequency="none", **kw)


def test_the_words_these_tests_rely_on_are_or_are_not_stopwords():
    assert {"the", "of", "and", "a", "see", "also"} <= STOPWORDS
    assert not {"linux", "debian", "kernel", "modules", "packages", "works", "hacking", "beings"} & STOPWORDS


# --- anchor windows (Section 3.1) ------------------------------------------------------------------

def test_stopwords_do_not_count_towards_the_window():
    left = ("the", "debian", "of", "kernel", "and", "modules")
    f = anchor_fragment(link(left=left), anchor_only(window_size=2))
    # distances among non-stopwords: debian 1, kernel 2 (modules 3 is outside W = 2)
    assert f.bag() == pytest.approx({"linux": 5.0, "debian": math.log2(32 / 2), "kernel": math.log2(32 / 3)})
    assert f.kind is FragmentKind.ANCHOR and (f.url_id, f.url) == (IB, B)
    f3 = anchor_fragment(link(left=left), anchor_only(window_size=3))
    assert f3.bag()["modules"] == pytest.approx(math.log2(32 / 4))
    assert window_terms(left, Stemming.NOSTEM, window_size=2) == [("debian", 1), ("kernel", 2)]


def test_both_sides_count_their_own_distances_and_w0_keeps_the_anchor_only():
    l = link(anchor=("linux", "kernel"), left=("debian",), right=("the", "modules", "packages"))
    assert anchor_fragment(l, anchor_only(window_size=1)).bag() == pytest.approx(
        {"linux": 5.0, "kernel": 5.0, "debian": 4.0, "modules": 4.0})
    assert anchor_fragment(l, anchor_only(window_size=0)).bag() == {"linux": 5.0, "kernel": 5.0}


def test_without_distance_weighting_each_occurrence_counts_one():
    l = link(anchor=("linux", "linux"), left=("kernel", "the", "linux"))
    assert anchor_fragment(l, anchor_only(distance_weighting=False)).bag() == {"linux": 3.0, "kernel": 1.0}
    assert anchor_fragment(l, anchor_only()).bag() == pytest.approx({"linux": 10.0 + math.log2(32 / 3), "kernel": 4.0})


def test_words_31_or_more_away_weigh_nothing_under_distance_weighting():
    left = tuple(f"zq{chr(97 + i // 26)}{chr(97 + i % 26)}" for i in range(32))
    assert not set(left) & STOPWORDS
    weighted = anchor_fragment(link(left=left), anchor_only()).bag()
    assert left[29] in weighted and left[30] not in weighted and left[31] not in weighted  # d = 30, 31, 32
    assert len(anchor_fragment(link(left=left), anchor_only(distance_weighting=False)).bag()) == 33


def test_syntactic_and_topical_windows_use_the_stored_region_lengths():
    l = link(left=("the", "debian", "of", "kernel"), right=("modules", "packages"), syn=(2, 0), top=(4, 1))
    assert anchor_fragment(l, anchor_only(window="syntactic")).bag() == pytest.approx(
        {"linux": 5.0, "debian": 4.0})
    assert anchor_fragment(l, anchor_only(window="topical")).bag() == pytest.approx(
        {"linux": 5.0, "debian": 4.0, "kernel": math.log2(32 / 3), "modules": 4.0})


# --- stemming (Section 3.2) -------------------------------------------------------------------------

@pytest.mark.parametrize("stemming, expected", [
    ("nostem", {"beings": 1.0, "works": 1.0, "packages": 1.0}),
    ("stopstem", {"works": 1.0, "packages": 1.0}),  # "beings" stems to "be", a stopword
    ("stem", {"work": 1.0, "packag": 1.0}),
])
def test_stemming_variants(stemming, expected):
    page = PageRow(A, IA, (), ("beings", "works", "packages", "the"))
    assert content_fragment(page, Strategy(sources=["content"], stemming=stemming)).bag() == expected


# --- content, title and link fragments --------------------------------------------------------------

def test_content_fragment_is_title_and_page_words_one_per_occurrence():
    page = PageRow(A, IA, ("Debian", "kernel"), ("the", "kernel", "modules", "kernel"))
    f = content_fragment(page, Strategy(sources=["content"], stemming="nostem"))
    assert f.bag() == {"Debian": 1.0, "kernel": 3.0, "modules": 1.0} and f.kind is FragmentKind.CONTENT
    assert content_fragment(page, anchor_only()) is None
    assert content_fragment(PageRow(A, IA, ("the",), ("of",)), Strategy(sources=["content"])) is None


def test_title_is_in_the_anchor_bag_once_at_distance_zero():
    page = PageRow(B, IB, ("kernel", "hacking"), ("ignored",))
    assert title_fragment(page, anchor_only()).bag() == {"kernel": 5.0, "hacking": 5.0}
    assert title_fragment(page, anchor_only(distance_weighting=False)).bag() == {"kernel": 1.0, "hacking": 1.0}
    assert title_fragment(page, Strategy(sources=["content"])) is None
    links = [link(anchor=("linux",)), link(src=C, sid=IC, anchor=("linux",))]
    bags = merge_fragments([*page_fragments(page, anchor_only())] +
                           [f for l in links for f in link_fragments(l, anchor_only())])
    assert bags[IB][1] == {"kernel": 5.0, "hacking": 5.0, "linux": 10.0}  # title once, not per inlink


def test_an_uncrawled_target_has_no_title_and_an_unlinked_page_only_its_title():
    pages = [PageRow(D, ID, ("lonely",), ("words",))]
    links = [link(dst=C, did=IC, anchor=("linux",))]
    bags = reference_bags(pages, links, anchor_only())
    assert bags == {IC: (C, {"linux": 1.0}), ID: (D, {"lonely": 1.0})}


def test_link_fragment_is_the_inlinking_url_once_per_inlink():
    s = Strategy(sources=["links"], frequency="none")
    assert link_fragment(link(), s).bag() == {LINK_PREFIX + A: 1.0}
    bags = merge_fragments(f for l in [link(), link(anchor=("other",)), link(src=C, sid=IC)] for f in link_fragments(l, s))
    assert bags[IB][1] == {LINK_PREFIX + A: 2.0, LINK_PREFIX + C: 1.0}


def test_self_links_give_no_anchor_or_link_fragment():
    self_link = link(dst=A, did=IA, anchor=("top",))
    s = Strategy(sources=["anchor", "links"])
    assert link_fragments(self_link, s) == []
    corpus = Corpus.from_rows([], [self_link, link()])
    assert corpus.stats.self_links == 1 and corpus.stats.links == 2


# --- merging (Section 6.1) ----------------------------------------------------------------------------

def test_merge_adds_weights_term_by_term():
    assert merge_bags({"x": 1.0, "y": 2.0}, {"y": 0.5, "z": 1.0}) == {"x": 1.0, "y": 2.5, "z": 1.0}


fragment_lists = st.lists(
    st.builds(
        lambda u, terms: Fragment(u, f"http://{u}.example/", FragmentKind.ANCHOR, tuple(sorted(terms.items()))),
        st.integers(1, 4),
        st.dictionaries(st.sampled_from("abcdefg"), st.integers(1, 20).map(float), min_size=1, max_size=4),
    ),
    max_size=12,
)


@settings(max_examples=150, deadline=None)
@given(fragment_lists, st.randoms(use_true_random=False))
def test_merging_fragments_is_associative_and_commutative(fragments, rnd):
    whole = merge_fragments(fragments)
    shuffled = list(fragments)
    rnd.shuffle(shuffled)
    cut = rnd.randint(0, len(shuffled))
    left, right = merge_fragments(shuffled[:cut]), merge_fragments(shuffled[cut:])
    regrouped = {u: (url, merge_bags(left.get(u, (url, {}))[1], right.get(u, (url, {}))[1]))
                 for u, (url, _) in {**left, **right}.items()}
    assert regrouped == whole  # integer weights: exact in any order


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 5), st.integers(0, 6), st.integers(1, 9)), max_size=40),
       st.randoms(use_true_random=False))
def test_merge_entries_sums_equal_pairs_in_any_order(rows, rnd):
    expected: dict[tuple[int, int], float] = {}
    for u, t, w in rows:
        expected[(u, t)] = expected.get((u, t), 0.0) + w
    rnd.shuffle(rows)
    arr = np.array(rows, dtype=np.int64).reshape(-1, 3)
    u, t, w = merge_entries(arr[:, 0].astype(np.uint64), arr[:, 1], arr[:, 2].astype(float))
    assert list(zip(u.tolist(), t.tolist())) == sorted(expected)
    assert dict(zip(zip(u.tolist(), t.tolist()), w.tolist())) == expected


# --- document frequencies, weighting, normalisation (Sections 5.2, 6.1) ------------------------------------

MERGED = {1: ("u1", {"x": 2.0, "y": 1.0}), 2: ("u2", {"x": 1.0, "z": 1.0}), 3: ("u3", {"x": 1.0})}


def test_document_frequency_counts_bags_containing_the_term():
    assert document_frequencies(b for _, b in MERGED.values()) == {"x": 3, "y": 1, "z": 1}


@pytest.mark.parametrize("frequency, fx, fy, fz", [
    # factor for df(x) = 3, df(y) = df(z) = 1
    ("none", 1.0, 1.0, 1.0),
    ("log", 1 / (1 + math.log2(3)), 1.0, 1.0),
    ("sqrt", 1 / math.sqrt(3), 1.0, 1.0),
])
def test_monotonic_weightings_then_normalisation(frequency, fx, fy, fz):
    weighted, _ = weigh_bags(MERGED, Strategy(sources=["content"], frequency=frequency, normalise_to=2.0))
    a = {"x": 2 * fx, "y": 1 * fy}
    b = {"x": 1 * fx, "z": 1 * fz}
    assert weighted[1][1] == pytest.approx({t: 2.0 * w / sum(a.values()) for t, w in a.items()})
    assert weighted[2][1] == pytest.approx({t: 2.0 * w / sum(b.values()) for t, w in b.items()})
    assert weighted[3][1] == pytest.approx({"x": 2.0})


def test_nmdf_weighting_with_given_and_fitted_parameters():
    mu, sigma = math.log(3), 0.5
    weighted, w = weigh_bags(MERGED, Strategy(sources=["content"], nmdf_mu=mu, nmdf_sigma=sigma))
    fy = math.exp(-0.5 * ((math.log(1) - mu) / sigma) ** 2)  # x sits at the peak: factor 1
    assert weighted[1][1] == pytest.approx({"x": 2 / (2 + fy), "y": fy / (2 + fy)})
    assert (w.mu, w.sigma) == (mu, sigma)
    _, fitted = weigh_bags(MERGED, Strategy(sources=["content"]))
    assert (fitted.mu, fitted.sigma) == (pytest.approx(math.log(3) / 2), pytest.approx(math.log(3) / 4))


# --- the fast columnar path -------------------------------------------------------------------------

PAGES = [
    PageRow(A, IA, ("debian", "packages"), ("the", "packages", "are", "installed", "installing")),
    PageRow(B, IB, ("kernel",), ("the", "kernel", "modules", "beings")),
    PageRow(A, IA, ("second", "copy"), ("ignored",)),  # a URL crawled twice keeps its first page
]
LINKS = [
    link(anchor=("linux", "kernel"), left=("the", "great", "big", "modules"), right=("see", "packages"),
         syn=(1, 2), top=(3, 2)),
    link(src=B, sid=IB, dst=C, did=IC, anchor=("gamma",), left=("kernel",)),
    link(src=B, sid=IB, dst=B, did=IB, anchor=("self",)),
    link(src=C, sid=IC, dst=B, did=IB, anchor=("works",), right=("a", "works", "beings")),
]


@pytest.mark.parametrize("strategy", [
    Strategy(),
    Strategy(sources=["anchor", "content", "links"], window_size=2, frequency="sqrt"),
    Strategy(sources=["anchor"], window="syntactic", stemming="stopstem", frequency="log", distance_weighting=False),
    Strategy(sources=["anchor"], window="topical", stemming="nostem", frequency="none"),
    Strategy(sources=["links"], frequency="none", normalise_to=10.0),
    Strategy(sources=["content"], nmdf_mu=0.5, nmdf_sigma=2.0),
])
def test_corpus_matches_the_record_by_record_reference(strategy):
    corpus = Corpus.from_rows(PAGES, LINKS)
    assert corpus.stats.to_dict() == {"pages": 3, "duplicate_pages": 1, "links": 4, "self_links": 1, "urls": 3}
    _assert_same(corpus.bags(strategy), reference_bags(PAGES, LINKS, strategy))


def test_an_outlink_id_goes_to_the_linking_page_and_self_links_give_none():
    f = outlink_fragment(link(), Strategy(sources=["outlinks"]))
    assert (f.url_id, f.url, f.kind) == (IA, A, FragmentKind.OUTLINK) and f.bag() == {"outlink:" + B: 1.0}
    assert outlink_fragment(link(dst=A, did=IA), Strategy(sources=["outlinks"])) is None
    assert outlink_fragment(link(), Strategy(sources=["links"])) is None
    bags = Corpus.from_rows(PAGES, LINKS).bags(Strategy(sources=["outlinks"], frequency="none")).to_dicts()
    # A links to B; B to C (and to itself: left out); C to B. A target nobody crawled links out from has no bag.
    assert bags == {IA: (A, {"outlink:" + B: 1.0}), IB: (B, {"outlink:" + C: 1.0}), IC: (C, {"outlink:" + B: 1.0})}
    assert [f.kind for f in link_fragments(link(), Strategy(sources=["anchor", "links", "outlinks"]))] == [
        FragmentKind.ANCHOR, FragmentKind.LINK, FragmentKind.OUTLINK]


def _assert_same(matrix: BagMatrix, reference: dict) -> None:
    got = matrix.to_dicts()
    assert set(got) == set(reference)
    for u, (url, bag) in reference.items():
        assert got[u][0] == url
        assert got[u][1] == pytest.approx(bag, rel=1e-9, abs=1e-12)


def test_bag_matrix_rows_sum_to_the_constant_and_targets_keep_collection_df():
    strategy = Strategy(sources=["anchor", "content"], frequency="sqrt")
    corpus = Corpus.from_rows(PAGES, LINKS)
    full = corpus.bags(strategy)
    assert np.asarray(full.csr.sum(axis=1)).ravel() == pytest.approx([1.0] * len(full))
    assert full.collection_size == 3 and list(full.url_ids) == sorted(full.url_ids)
    sample = corpus.bags(strategy, targets=[IB, 999])
    assert list(sample.url_ids) == [IB] and IB in sample and 999 not in sample
    assert sample.row(IB) == pytest.approx(full.row(IB))  # df from the whole collection, not the sample
    assert sample.collection_size == 3
    # "kernel": B's title and content, C's anchor window — 2 bags of the collection, though the sample has 1
    assert sample.df[list(sample.vocabulary).index("kernel")] == 2
    top = full.top_terms(IB, 3)
    assert [w for _, w in top] == sorted((w for _, w in top), reverse=True) and len(top) == 3
    with pytest.raises(KeyError, match="no bag"):
        full.row(999)
    assert full.select([IC, IA]).to_dicts() == {u: v for u, v in full.to_dicts().items() if u in (IA, IC)}
    assert build_bags(PAGES, LINKS, strategy).to_dicts() == full.to_dicts()


def test_bag_matrix_round_trips_through_dicts_and_validates_its_shape():
    bags = {5: ("u5", {"b": 1.0, "a": 2.0}), 3: ("u3", {"c": 0.5})}
    m = BagMatrix.from_dicts(bags)
    assert list(m.url_ids) == [3, 5] and m.to_dicts() == bags
    with pytest.raises(ValueError, match="URLs × vocabulary"):
        BagMatrix(m.url_ids, m.urls, m.vocabulary[:1], m.csr)


def test_word_lists_refuse_offsets_that_do_not_fit():
    with pytest.raises(ValueError, match="offsets starting at 0"):
        WordLists(np.array([0, 1, 2]), np.array([1, 3]))
    wl = WordLists.from_lists([("a", "b"), (), ("a",)], {})
    assert wl.codes.tolist() == [0, 1, 0] and wl.offsets.tolist() == [0, 2, 2, 3]
    assert wl.take(np.array([2, 0])).codes.tolist() == [0, 0, 1]


# --- property: the fast path equals the reference on random crawls ----------------------------------------

WORDS = ["the", "of", "a", "beings", "works", "work", "packages", "package", "linux", "kernel", "debian", "modules"]
word_seq = st.lists(st.sampled_from(WORDS), max_size=8).map(tuple)
ids = st.sampled_from([IA, IB, IC, ID])
URL = {IA: A, IB: B, IC: C, ID: D}
random_pages = st.lists(st.builds(lambda i, t, w: PageRow(URL[i], i, t, w), ids, word_seq, word_seq), max_size=5)
random_links = st.lists(
    st.builds(lambda s, t, a, l, r, n: LinkRow(URL[s], s, URL[t], t, a, l, r, *n), ids, ids, word_seq, word_seq,
              word_seq, st.tuples(*[st.integers(0, 9)] * 4)),
    max_size=8,
)
random_strategies = st.builds(
    Strategy,
    sources=st.sets(st.sampled_from(list(Source)), min_size=1).map(tuple),
    window=st.sampled_from(list(Window)),
    window_size=st.integers(0, 8),
    stemming=st.sampled_from(list(Stemming)),
    distance_weighting=st.booleans(),
    frequency=st.sampled_from(list(Frequency)),
)


@st.composite
def shared_strategies(draw) -> Strategy:
    """A strategy of two or more sources with random shares (summing to 1 by construction)."""
    base = draw(random_strategies)
    sources = draw(st.sets(st.sampled_from(list(Source)), min_size=2).map(sorted))
    raw = [draw(st.integers(1, 9)) for _ in sources]
    shares = [r / sum(raw) for r in raw]
    shares[-1] = 1.0 - math.fsum(shares[:-1])
    return dataclasses.replace(base, sources=tuple(sources), shares=tuple(shares))


@settings(max_examples=150, deadline=None)
@given(random_pages, random_links, random_strategies)
def test_corpus_equals_reference_on_random_crawls(pages, links, strategy):
    _assert_same(Corpus.from_rows(pages, links).bags(strategy), reference_bags(pages, links, strategy))


@settings(max_examples=100, deadline=None)
@given(random_pages, random_links, shared_strategies())
def test_corpus_equals_reference_with_source_shares_on_random_crawls(pages, links, strategy):
    _assert_same(Corpus.from_rows(pages, links).bags(strategy), reference_bags(pages, links, strategy))


@settings(max_examples=100, deadline=None)
@given(random_pages, random_links, shared_strategies())
def test_a_shared_bag_is_its_sources_bags_in_their_shares_and_its_mass_the_shares_present(pages, links, strategy):
    corpus = Corpus.from_rows(pages, links)
    shared = corpus.bags(strategy).to_dicts()
    singles = {source: corpus.bags(strategy.source_strategy(source)).to_dicts() for source in strategy.sources}
    assert set(shared) == set().union(*singles.values())
    for u, (_, bag) in shared.items():
        present = [source for source in strategy.sources if u in singles[source]]
        share = strategy.share_of()
        # Shares sum to the bag's mass: each source present gives share × the constant sum.
        assert sum(bag.values()) == pytest.approx(strategy.normalise_to * sum(share[k] for k in present))
        expected: dict[str, float] = {}
        for k in present:
            for t, w in singles[k][u][1].items():
                expected[t] = expected.get(t, 0.0) + share[k] * w
        assert bag == pytest.approx(expected, rel=1e-9, abs=1e-12)
        if len(present) == 1:  # one source of the hybrid: that source's bag up to scale
            assert {t: w / share[present[0]] for t, w in bag.items()} == pytest.approx(singles[present[0]][u][1])


def test_a_single_source_with_share_1_is_that_source_alone():
    corpus = Corpus.from_rows(PAGES, LINKS)
    for source in Source:
        whole = Strategy(sources=[source], shares=[1.0])
        assert whole == Strategy(sources=[source]) and whole.shares is None
        assert corpus.bags(whole).to_dicts() == corpus.bags(Strategy(sources=[source])).to_dicts()


def test_shares_weigh_each_source_by_its_own_document_frequencies():
    # With shares, a term's weight in B's content part uses its df among content parts, in B's
    # anchor part its df among anchor parts: the bag is the two single-source bags, halved.
    corpus = Corpus.from_rows(PAGES, LINKS)
    shared = Strategy(sources=["anchor", "content"], shares=[0.5, 0.5], frequency="sqrt")
    anchor = corpus.bags(Strategy(sources=["anchor"], frequency="sqrt")).row(IB)
    content = corpus.bags(Strategy(sources=["content"], frequency="sqrt")).row(IB)
    expected = {t: 0.5 * anchor.get(t, 0.0) + 0.5 * content.get(t, 0.0) for t in {*anchor, *content}}
    assert corpus.bags(shared).row(IB) == pytest.approx(expected)
    # On an equal footing (no shares) the same two sources give another bag: one df over both.
    assert corpus.bags(dataclasses.replace(shared, shares=None)).row(IB) != pytest.approx(expected)


def test_one_corpus_serves_many_strategies():
    rng = random.Random(3)
    pages = [PageRow(URL[i], i, tuple(rng.choices(WORDS, k=3)), tuple(rng.choices(WORDS, k=20))) for i in URL]
    links = [LinkRow(URL[s], s, URL[t], t, tuple(rng.choices(WORDS, k=2)), tuple(rng.choices(WORDS, k=10)),
                     tuple(rng.choices(WORDS, k=10)), 2, 3, 5, 6)
             for s in URL for t in URL for _ in range(2)]
    corpus = Corpus.from_rows(pages, links)
    from simweb.core.strategy import paper_strategies

    for strategy in paper_strategies():
        _assert_same(corpus.bags(strategy), reference_bags(pages, links, strategy))


# --- the gather of runs: C (simcore/_gather.c) and numpy write the same entries ----------------------------------

needs_c_gather = pytest.mark.skipif(bags_module._c_runs is None, reason="simweb.core._gather is not built (no C compiler at install)")


def _gather_both(values, starts, lengths, step, run_rows, weights, mapping, capacity, at=0):
    """The outputs and returned index of the C gather and of the numpy one, from the same start."""
    results = []
    for gather in (bags_module._c_runs, bags_module._gather_runs_numpy):
        rows, cols, out = np.full(capacity, -7, np.int64), np.full(capacity, -7, np.int64), np.full(capacity, -7.0)
        end = gather(values, starts, lengths, step, run_rows, weights, mapping, rows, cols, out, at)
        results.append((end, rows, cols, out))
    return results


@st.composite
def gather_inputs(draw):
    n_values = draw(st.integers(1, 30))
    mapped = draw(st.booleans())
    values = np.array(draw(st.lists(st.integers(0, 9 if mapped else 50), min_size=n_values, max_size=n_values)), np.int64)
    mapping = np.array(draw(st.lists(st.integers(-1, 20), min_size=10, max_size=10)), np.int64) if mapped else None
    step = draw(st.sampled_from([1, -1]))
    table = np.array(draw(st.sampled_from([[2.5], [0.0, 5.0, 4.0, 3.5, 3.0, 2.0, 1.5, 1.0, 0.5, 0.25, 0.0]])))
    starts, lengths = [], []
    for _ in range(draw(st.integers(0, 6))):
        start = draw(st.integers(0, n_values - 1))
        room = n_values - start if step == 1 else start + 1
        if table.size > 1:
            room = min(room, table.size - 1)
        starts.append(start)
        lengths.append(draw(st.integers(-2, room)))
    run_rows = np.array(draw(st.lists(st.integers(0, 99), min_size=len(starts), max_size=len(starts))), np.int64)
    return values, np.array(starts, np.int64), np.array(lengths, np.int64), step, run_rows, table, mapping


@needs_c_gather
@settings(max_examples=300, deadline=None)
@given(gather_inputs(), st.integers(0, 3))
def test_the_c_gather_writes_the_entries_numpy_writes(inputs, at):
    capacity = at + int(np.maximum(inputs[2], 0).sum())
    (end_c, *out_c), (end_np, *out_np) = _gather_both(*inputs, capacity, at)
    assert end_c == end_np
    for c, n in zip(out_c, out_np):
        assert c.tolist() == n.tolist()


def test_a_gather_reads_runs_backwards_weighs_by_position_and_leaves_out_stopwords():
    values = np.array([3, 1, 4, 1, 5], np.int64)
    mapping = np.array([-1, 10, -1, 30, -1, 50], np.int64)  # 4 is a stopword
    table = np.array([0.0, 9.0, 8.0, 7.0, 6.0])  # the j-th word of a run weighs table[j + 1]
    for gather in (gather_runs, bags_module._gather_runs_numpy):
        rows, cols, out = np.zeros(6, np.int64), np.zeros(6, np.int64), np.zeros(6)
        end = gather(values, np.array([4, 1]), np.array([4, 2]), -1, np.array([7, 8]), table, mapping, rows, cols, out, 1)
        # Run 0 reads positions 4, 3, 2, 1 (5, 1, 4, 1), run 1 positions 1, 0 (1, 3).
        assert end == 6
        assert list(zip(rows[1:].tolist(), cols[1:].tolist(), out[1:].tolist())) == [
            (7, 50, 9.0), (7, 10, 8.0), (7, 10, 6.0), (8, 10, 9.0), (8, 30, 8.0)]


def test_a_gather_through_a_mapping_needs_room_for_the_entries_it_keeps_only():
    values, mapping = np.array([0, 1, 0, 1], np.int64), np.array([-1, 5], np.int64)  # 0 is a stopword
    for gather in (gather_runs, bags_module._gather_runs_numpy):
        rows, cols, out = np.zeros(2, np.int64), np.zeros(2, np.int64), np.zeros(2)
        assert gather(values, np.array([0]), np.array([4]), 1, np.array([3]), np.ones(1), mapping, rows, cols, out, 0) == 2
        assert cols.tolist() == [5, 5]
        with pytest.raises(ValueError, match="more entries than the outputs hold"):
            gather(values, np.array([0]), np.array([4]), 1, np.array([3]), np.ones(1), mapping, rows, cols, out, 1)


@pytest.mark.parametrize("gather", ["c", "numpy"])
@pytest.mark.parametrize("starts, lengths, table, capacity, mapping, why", [
    ([3], [2], [1.0], 9, None, "outside values"),        # positions 3, 4 of four values
    ([-1], [1], [1.0], 9, None, "outside values"),
    ([0], [3], [0.0, 5.0, 4.0], 9, None, "longer than the weight table"),
    ([0], [4], [1.0], 3, None, "more entries than the outputs hold"),
    ([0], [1], [1.0], 9, [0, 1], "outside mapping"),      # value 2 is beyond a mapping of two
])
def test_a_gather_refuses_runs_it_cannot_write(gather, starts, lengths, table, capacity, mapping, why):
    if gather == "c" and bags_module._c_runs is None:
        pytest.skip("simweb.core._gather is not built (no C compiler at install)")
    run = bags_module._c_runs if gather == "c" else bags_module._gather_runs_numpy
    values = np.array([2, 0, 1, 1], np.int64)
    rows, cols, out = np.zeros(capacity, np.int64), np.zeros(capacity, np.int64), np.zeros(capacity)
    with pytest.raises(ValueError, match=why):
        run(values, np.array(starts, np.int64), np.array(lengths, np.int64), 1, np.zeros(len(starts), np.int64),
            np.array(table), None if mapping is None else np.array(mapping, np.int64), rows, cols, out, 0)


@settings(max_examples=100, deadline=None)
@given(random_pages, random_links, random_strategies, st.randoms(use_true_random=False))
def test_vocabulary_take_gives_the_terms_item_by_item_access_gives(pages, links, strategy, rng):
    vocab = Corpus.from_rows(pages, links).fragment_entries(strategy)[3]
    columns = np.array(sorted(rng.sample(range(len(vocab)), min(len(vocab), rng.randint(0, 12)))), np.int64)
    assert vocab.take(columns) == [vocab[c] for c in columns.tolist()]
    assert vocab.take(np.arange(len(vocab))) == list(vocab)


@settings(max_examples=150, deadline=None)
@given(random_pages, random_links, random_strategies)
def test_fragment_entries_are_the_same_with_the_c_gather_switched_off(pages, links, strategy):
    with_c = Corpus.from_rows(pages, links).fragment_entries(strategy)[:3]
    with mock.patch.object(bags_module, "_c_runs", None):
        without = Corpus.from_rows(pages, links).fragment_entries(strategy)[:3]
    for a, b in zip(with_c, without):
        assert a.tolist() == b.tolist()



@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(sorted(STOPWORDS)[:40] + ["running", "runs", "run", "queries", "query", "zebra",
                                                          "the", "thé", "naïve", "abilities", "caresses", "x"]),
                max_size=40),
       st.sampled_from(list(Stemming)))
def test_term_map_numbers_terms_as_a_word_by_word_loop_would(words, stemming):
    index: dict[str, int] = {}
    expected = [-1 if (t := term(w, stemming)) is None else index.setdefault(t, len(index)) for w in words]
    mapping, vocab = term_map(words, stemming)
    assert mapping.dtype == np.int64 and mapping.tolist() == expected and vocab == list(index)
