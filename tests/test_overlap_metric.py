"""The overlap metric (simweb.core.strategy, "Overlap"): Σ min of bags that are not normalised —
bibliographic coupling and co-citation as bag strategies — evaluated exactly, indexed by the
Jaccard of the same bags and ordered by overlap."""
from __future__ import annotations

import json
from collections import Counter

import numpy as np
import pytest
from test_evaluate import build_synthetic_crawl

import simweb
from simweb.core.bag_reference import LinkRow, PageRow, reference_bags
from simweb.core.bags import Corpus
from simweb.core.grids import figure_label, grid_strategies, overlap_strategies, strategy_grid
from simweb.core.linkgraph import LinkGraph, cocitation, coupling
from simweb.core.similarity import ExactRows, exact_pairs, overlap, similarity
from simweb.core.strategy import Frequency, Metric, Source, Strategy, StrategyError
from simweb.core.urls import url_id
from simweb.core.weighting import normalise_rows
from simweb.tasks.eval_recommend import indexable

COUPLING = Strategy.parse("outlinks,binary,overlap")
COCITATION = Strategy.parse("links,binary,overlap")


def U(name: str) -> str:
    return f"http://{name}.example/"


def _link(source: str, target: str) -> LinkRow:
    return LinkRow(U(source), url_id(U(source)), U(target), url_id(U(target)), (), (), ())


# Pages a–e link to targets t0…t5; a and b link to some twice (coupling counts a shared target once).
OUT = {"a": ["t0", "t1", "t1", "t2", "t3"], "b": ["t1", "t2", "t2", "t3", "t4", "t5", "t1"], "c": ["t0", "t5"],
       "d": ["t2"], "e": ["t0", "t1", "t2", "t3", "t4", "t5"]}
PAGES = [PageRow(U(p), url_id(U(p)), (p,), ("words", "of", p)) for p in [*OUT, *sorted({t for v in OUT.values() for t in v})]]
LINKS = [_link(s, t) for s, targets in OUT.items() for t in targets]


def test_overlap_is_a_metric_of_bags_that_are_not_normalised():
    assert COUPLING.metric is Metric.OVERLAP and not COUPLING.normalised and Strategy().normalised
    assert Strategy.parse(COUPLING.spec()) == COUPLING and "overlap" in COUPLING.label
    # Its bags are other bags than the Jaccard strategy's of the same sources (a cache never mixes them).
    jaccard = Strategy.parse("outlinks,binary,jaccard")
    assert COUPLING.bag_params()["normalise_to"] is None and COUPLING.bags_key() != jaccard.bags_key()
    # The constant sum cannot matter: one strategy whatever was given.
    assert Strategy.parse("outlinks,binary,norm=5,overlap") == COUPLING
    with pytest.raises(StrategyError, match="source shares normalise"):
        Strategy.parse("anchor:32@0.5+outlinks@0.5,overlap")
    data, sums = normalise_rows(np.array([0, 2, 3]), np.array([2.0, 3.0, 4.0]), None)
    assert data.tolist() == [2.0, 3.0, 4.0] and sums.tolist() == [5.0, 4.0]


def test_overlap_of_out_link_and_in_link_bags_is_coupling_and_cocitation():
    graph = LinkGraph.from_edges(np.array([l.source_id for l in LINKS], np.uint64),
                                 np.array([l.target_id for l in LINKS], np.uint64))
    for strategy, measure in ((COUPLING, coupling), (COCITATION, cocitation)):
        bags = Corpus.from_rows(PAGES, LINKS).bags(strategy)
        ids = [int(u) for u in bags.url_ids]
        exact = exact_pairs(bags, Metric.OVERLAP, ids=ids)
        expected = measure(graph, graph.indices(np.array(ids, np.uint64)), graph.indices(np.array(ids, np.uint64)))
        off = ~np.eye(len(ids), dtype=bool)
        assert np.array_equal(exact[off], expected[off]), strategy.label
        assert exact.max() > 1  # counts, not fractions: the bags were not scaled to 1
        # The block-by-block evaluation and the one-pair form give the same numbers.
        rows = ExactRows(bags, Metric.OVERLAP, ids=ids)
        assert np.allclose(rows[np.arange(len(ids))], exact)
        reference = reference_bags(PAGES, LINKS, strategy)
        assert set(reference) == set(ids) and all(set(bag.values()) == {1.0} for _, bag in reference.values())
        i, j = ids.index(url_id(U("a") if strategy is COUPLING else U("t2"))), ids.index(
            url_id(U("b") if strategy is COUPLING else U("t3")))
        assert overlap(reference[ids[i]][1], reference[ids[j]][1]) == exact[i, j] == \
            similarity(reference[ids[i]][1], reference[ids[j]][1], "overlap")
    assert exact_pairs(Corpus.from_rows(PAGES, LINKS).bags(COUPLING), Metric.OVERLAP).max() == 6  # e with itself
    # Counted with repeats (frequency none), a and b share t1 twice and t2 once more than as sets.
    multiset = Corpus.from_rows(PAGES, LINKS).bags(Strategy.parse("outlinks,none,overlap"))
    ids = [int(u) for u in multiset.url_ids]
    a, b = ids.index(url_id(U("a"))), ids.index(url_id(U("b")))
    assert exact_pairs(multiset, Metric.OVERLAP, ids=ids)[a, b] == 4.0  # min(2,2)+min(1,2)+min(1,1)
    assert exact_pairs(Corpus.from_rows(PAGES, LINKS).bags(COUPLING), Metric.OVERLAP, ids=ids)[a, b] == 3.0


def test_overlap_strategies_are_searched_and_indexable():
    found = overlap_strategies()
    assert found[:2] == (COCITATION, COUPLING)
    assert all(s.metric is Metric.OVERLAP and indexable(s) for s in found)
    assert {s.sources for s in found[2:]} == {(s,) for s in Source}
    assert all(s.frequency is Frequency.NMDF for s in found[2:]) and found[0].frequency is Frequency.BINARY
    full = grid_strategies(strategy_grid("full"))
    assert set(found) <= set(full) and set(found) <= set(grid_strategies(strategy_grid("hybrids")))
    assert not set(found) & set(grid_strategies(strategy_grid("paper")))
    assert [figure_label("overlap", s) for s in found[:3]] == ["co-citation bag", "coupling bag", "anchor w32, overlap"]
    assert not indexable(Strategy(metric=Metric.COSINE))


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory) -> dict:
    return build_synthetic_crawl(tmp_path_factory.mktemp("synthetic-overlap"))


def test_an_overlap_index_finds_by_jaccard_and_orders_by_exact_overlap(synthetic, build_in_process, tmp_path):
    warc = str(synthetic["root"] / "synthetic.warc.gz")
    live = build_in_process(warc, tmp_path / "index", strategy=COCITATION, min_in_degree=None)
    from simweb.tasks.stages.related_table import related_table_stage

    assert related_table_stage(live) == {"documents": len(simweb.open_index(live)), "reused": False, "not_needed": True}
    index = simweb.open_index(live)
    assert index.info()["metric"] == "overlap" and index.info()["related_table"] is None
    with open(f"{live}/index.json") as f:
        assert json.load(f)["metric"] == "overlap"
    docs = index._v.docs.column("url").to_pylist()
    alpha = 0.15
    answered = 0
    for url in docs:
        bag = index.bag(url)
        # Not normalised: each in-link counts 1.
        assert all(w == 1.0 for w in bag.values())
        results = index.related(url, top=10, alpha=alpha)
        exact = [r.exact for r in results]
        for r in results:
            other = index.bag(r.url)
            assert r.exact == pytest.approx(overlap(bag, other))
            inter = overlap(bag, other)
            assert inter / (sum(bag.values()) + sum(other.values()) - inter) >= alpha - 1e-9
        assert exact == sorted(exact, reverse=True)
        answered += bool(results)
    assert answered >= len(docs) // 2
    # The Jaccard index of the same crawl orders the same candidates by Jaccard.
    plain = simweb.open_index(build_in_process(warc, tmp_path / "jaccard", strategy=Strategy.parse("links,binary"),
                                               min_in_degree=None))
    assert plain.info()["metric"] == "jaccard"
    counts = Counter(len(plain.related(u, top=10, alpha=alpha)) > 0 for u in docs)
    assert counts[True] >= len(docs) // 2


def test_the_bags_stage_builds_set_bags_not_normalised(tmp_path):
    """The Parquet bags stage gives the reference bags for a binary overlap strategy: every term
    counts 1 whatever its tf, and the bags keep their sums."""
    from test_bags_stage import LINKS_1, PAGES_1, assert_bags_equal, links_table, pages_table

    from simweb.tasks.bag_reader import read_bags
    from simweb.tasks.stages.bags import build_bags_stage
    from simweb.tasks.storage import write_parquet_atomic

    crawl = str(tmp_path / "crawl")
    write_parquet_atomic(pages_table(PAGES_1, "a.warc.gz"), f"{crawl}/pages/part-1111.parquet")
    write_parquet_atomic(links_table(LINKS_1, PAGES_1), f"{crawl}/links/part-1111.parquet")
    strategy = Strategy.parse("anchor:32+content+outlinks,binary,overlap")
    out = build_bags_stage(crawl, strategy, str(tmp_path / "work"))
    bags = read_bags(out.path)
    reference = reference_bags(PAGES_1, LINKS_1, strategy)
    assert_bags_equal(bags, reference)
    assert all(set(bag.values()) == {1.0} for _, bag in reference.values())
    assert max(sum(bag.values()) for _, bag in reference.values()) > 1
