"""Link measures in the evaluation: strategies, the link graph, top-N measures, the report.

The synthetic crawl of test_evaluate has hubs linking to targets at random, so link measures
(which only see who links to whom) must give a Γ near 0, while the report carries them beside
the anchor windows with the same intervals and the new top-10 columns.
"""
from __future__ import annotations

import numpy as np
import pyarrow.parquet as pq
import pytest
from test_evaluate import build_synthetic_crawl

from simweb.core.gamma import class_codes, gammas, pair_counts
from simweb.core.grids import (
    LINK_MEASURES,
    LinkStrategy,
    figure_label,
    grid_strategies,
    parse_strategy,
    strategy_from_dict,
    strategy_grid,
)
from simweb.core.linkgraph import cocitation
from simweb.core.retrieval_metrics import RETRIEVAL_MEASURES, retrieval_estimates, retrieval_values, tfidf_vectors
from simweb.core.strategy import Strategy
from simweb.tasks.crawl.graph import load_link_graph
from simweb.tasks.directory_file import read_lines
from simweb.tasks.evaluate import run_evaluation, strategy_groups
from simweb.tasks.stages.eval_sample import SampleParams, load_sample, prepare_sample
from simweb.tasks.stages.eval_strategies import evaluate_group, load_strategy_output


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory) -> dict:
    return build_synthetic_crawl(tmp_path_factory.mktemp("synthetic-links"))


def _listed(synthetic) -> list[str]:
    return read_lines(synthetic["directory_pages"])


@pytest.fixture(scope="module")
def report(synthetic, tmp_path_factory) -> dict:
    out = tmp_path_factory.mktemp("link-report")
    summary = run_evaluation(synthetic["crawl"], synthetic["tsv"], str(out), grid="links",
                             directory_pages=synthetic["directory_pages"], n_resamples=200,
                             sample_params=SampleParams(seed=3, n_pairs=6))
    return {"out": out, "summary": summary}


def test_link_strategies_round_trip_and_reject_unknown_measures():
    for measure in LINK_MEASURES:
        s = LinkStrategy(measure)
        assert strategy_from_dict(s.to_dict()) == s
        assert s.spec() == f"link:{measure}"
        assert parse_strategy(s.spec()) == s
    bag = Strategy()
    assert strategy_from_dict(bag.to_dict()) == bag
    assert parse_strategy(bag.spec()) == bag
    assert LinkStrategy("ecbc").params().alpha == 0.5  # ENS Table 1
    assert LinkStrategy("extended_pagesim").params().decay == 0.6
    with pytest.raises(ValueError, match="expected a link measure among cocitation"):
        LinkStrategy("hits")


def test_grids_keep_the_paper_and_add_the_links_figure():
    paper = strategy_grid("paper")
    assert not any(isinstance(s, LinkStrategy) for s in grid_strategies(paper))
    links = strategy_grid("links")
    assert list(links) == ["links"]
    assert [s.measure for s in links["links"] if isinstance(s, LinkStrategy)] == list(LINK_MEASURES)
    assert [figure_label("links", s) for s in links["links"]][:9] == [
        "w32", "w16", "w8", "w4", "w0", "topical", "syntactic", "contents", "link-id bags"]
    full = strategy_grid("full")
    assert {k: v for k, v in full.items() if k != "links"} == strategy_grid("hybrids")
    assert {k: v for k, v in full.items() if k not in ("links", "sources", "shares", "overlap")} == paper
    assert full["links"] == links["links"]
    # Link strategies get tasks of their own: they read the link graph, not the bag corpus.
    groups = strategy_groups(grid_strategies(links), 4)
    assert all(len({isinstance(s, LinkStrategy) for s in g}) == 1 for g in groups)
    assert sum(map(len, groups)) == 9 + len(LINK_MEASURES)


def test_link_graph_leaves_out_the_directory_pages_links(synthetic):
    listed = _listed(synthetic)
    assert len(listed) == 24
    loaded = load_link_graph(synthetic["crawl"], lambda url: url in listed)
    graph = loaded.graph
    assert loaded.counts["links_from_excluded_pages"] == synthetic["directory_links"]
    full = load_link_graph(synthetic["crawl"])
    assert full.counts["links_from_excluded_pages"] == 0
    assert full.graph.n_edges - graph.n_edges == synthetic["directory_links"]
    # 60 hubs with 20 distinct targets each (the hub order walks a permutation).
    assert graph.n_edges == 60 * 20


def test_retrieval_values_by_hand():
    # Four pages, classes A A B B; page 0's best match is page 2 (wrong class), then page 1.
    codes = class_codes([("t", "s", "A"), ("t", "s", "A"), ("t", "s", "B"), ("t", "s", "B")])
    sims = np.array([[1.0, 0.2, 0.5, 0.0],
                     [0.2, 1.0, 0.0, 0.0],
                     [0.5, 0.0, 1.0, 0.9],
                     [0.0, 0.0, 0.9, 1.0]])
    vectors = tfidf_vectors([["apple", "pie"], ["apple", "tart"], ["car", "pie"], ["car", "bus"], []])
    rows = np.array([0, 1, 2, 4])  # page 3 was not crawled: the zero row
    got = retrieval_values(sims, codes, vectors, rows, n=2)
    # P@2: page 0 retrieves 2, 1 → 1/2; page 1 retrieves 0 → 1/2; page 2 retrieves 3, 0 → 1/2; page 3 → 2 → 1/2.
    assert got["precision"].tolist() == [0.5, 0.5, 0.5, 0.5]
    assert got["recall"].tolist() == [1.0, 1.0, 1.0, 1.0]
    # AP: page 0 finds its relevant page at rank 2 (precision 1/2 at every recall level); the others at rank 1.
    assert got["average_precision"].tolist() == pytest.approx([0.5, 1.0, 1.0, 1.0])
    dense = (vectors @ vectors.T).toarray()
    expected_delta = [(dense[2, 0] + dense[1, 0]) / 2, dense[0, 1] / 2, (dense[4, 2] + dense[0, 2]) / 2, 0.0]
    assert got["delta"] == pytest.approx(expected_delta)
    assert got["scored"].tolist() == [0, 1, 2, 3]
    estimates = retrieval_estimates(got, codes[:, -1], n_resamples=200, seed=0)
    assert estimates["precision_at_10"].value == pytest.approx(0.5)
    assert estimates["average_precision_at_10"].value == pytest.approx(0.875)
    est = estimates["average_precision_at_10"]
    assert est.low <= est.value <= est.high


def test_link_strategy_counts_equal_a_direct_computation(synthetic, report):
    work = str(report["out"] / "_work")
    sample = prepare_sample(synthetic["crawl"], synthetic["tsv"], work, SampleParams(seed=3, n_pairs=6),
                            synthetic["directory_pages"])
    assert sample.reused
    loaded = load_sample(sample.path)
    [output] = evaluate_group(synthetic["crawl"], sample, [LinkStrategy("cocitation")], work)
    assert output.reused
    listed = _listed(synthetic)
    graph = load_link_graph(synthetic["crawl"], lambda url: url in listed).graph
    nodes = graph.indices(loaded.url_ids)  # every sampled target is linked to by some hub
    direct = gammas(pair_counts(cocitation(graph, nodes, nodes), class_codes(loaded.classes)))
    assert output.stats["values"]["sibling_gamma"] == pytest.approx(direct["sibling_gamma"])
    assert output.stats["with_bag"] == len(loaded.urls)
    # The directory's pages co-cite each class's members: kept in, they would leak the classes.
    leaky = load_link_graph(synthetic["crawl"]).graph
    nodes = leaky.indices(loaded.url_ids)
    leaked = gammas(pair_counts(cocitation(leaky, nodes, nodes), class_codes(loaded.classes)))
    assert leaked["sibling_gamma"] > direct["sibling_gamma"] + 0.3


def test_report_shows_link_measures_beside_anchor_windows(report):
    out = report["out"]
    rows = pq.read_table(out / "measures.parquet").to_pylist()
    by = {(r["strategy"], r["measure"]): r for r in rows}
    # The targets link nowhere: bibliographic coupling is 0 everywhere, every pair a tie, Γ undefined.
    coupling = by[("link coupling", "sibling_gamma")]
    assert coupling["value"] is None and coupling["concordant"] == coupling["discordant"] == 0
    assert by[("link coupling", "precision_at_10")]["value"] == 0.0
    for measure in set(LINK_MEASURES) - {"coupling"}:
        sibling = by[(f"link {measure}", "sibling_gamma")]
        assert sibling["spec"] == f"link:{measure}"
        assert sibling["low"] <= sibling["value"] <= sibling["high"]
        # Hubs link at random: no link measure can see the classes.
        assert abs(sibling["value"]) < 0.25, measure
    anchor = by[("anchor-W32 none stem", "sibling_gamma")]
    assert anchor["value"] > 0.3
    for (strategy, measure), r in by.items():
        if measure in RETRIEVAL_MEASURES:
            assert 0.0 <= r["low"] <= r["value"] <= r["high"] <= 1.0, (strategy, measure)
    strategies = {s for s, _ in by}
    assert all((s, m) in by for s in strategies for m in RETRIEVAL_MEASURES)
    # Anchor windows retrieve class-mates; random links do not.
    assert by[("anchor-W32 none stem", "precision_at_10")]["value"] > by[("link cocitation", "precision_at_10")]["value"]
    assert (out / "figures" / "links.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    summary = (out / "summary.md").read_text()
    assert "Link-based measures (ENS paper) beside anchor windows" in summary
    assert "| extended PageSim |" in summary and "| link-id bags |" in summary
    assert "P@10" in summary and "Top-10 results against the directory classes" in summary
    assert "PageRank is a query-independent baseline" in summary
    data = report["summary"]["sibling_gamma"]
    assert all(set(RETRIEVAL_MEASURES) <= set(r["retrieval"]) for r in data)


def test_pagerank_baseline_ranks_every_query_alike(synthetic, report):
    work = str(report["out"] / "_work")
    sample = prepare_sample(synthetic["crawl"], synthetic["tsv"], work, SampleParams(seed=3, n_pairs=6),
                            synthetic["directory_pages"])
    [output] = evaluate_group(synthetic["crawl"], sample, [LinkStrategy("pagerank")], work)
    saved = load_strategy_output(output.path)
    showcase, rows = saved.showcase, saved.showcase_rows
    assert len(showcase) == 3
    assert np.array_equal(rows[0], rows[1]) and np.array_equal(rows[0], rows[2])
    assert rows[0].sum() > 0 and np.ptp(rows[0]) > 0  # PageRank differs between pages


def test_command_line_links_grid(synthetic, report, tmp_path, capsys):
    from simweb.cli import main

    code = main(["evaluate", "--crawl", synthetic["crawl"], "--directory", synthetic["tsv"], "--out", str(tmp_path),
                 "--grid", "links", "--no-prefect", "--pairs", "6", "--seed", "3", "--resamples", "50",
                 "--work", str(report["out"] / "_work"), "--directory-pages", synthetic["directory_pages"]])
    assert code == 0
    printed = capsys.readouterr().out
    assert "P@10" in printed and "link extended_simrank" in printed
    assert (tmp_path / "report.html").exists()


# -- related pages by a link measure (simweb.tasks.link_related) -------------------------------------------


@pytest.fixture(scope="module")
def small_crawl(tmp_path_factory) -> str:
    """Three hubs: hub1 → a, b, c; hub2 → a, b; hub3 → a, c, d (and a self-link and a repeat)."""
    import io

    from warcio.statusandheaders import StatusAndHeaders
    from warcio.warcwriter import WARCWriter

    from simweb.tasks.ingest.files import ingest_files

    root = tmp_path_factory.mktemp("small-links")
    pages = {
        "http://hub1.example/": ["a", "b", "c"],
        "http://hub2.example/": ["a", "b", "b"],
        "http://hub3.example/": ["a", "c", "d", "../hub3"],
    }
    with open(root / "links.warc.gz", "wb") as f:
        writer = WARCWriter(f, gzip=True)
        for url, targets in pages.items():
            links = "".join(f'<a href="http://{t}.example/">{t}</a> ' if not t.startswith("..")
                            else f'<a href="{url}">me</a>' for t in targets)
            body = f"<html><head><title>hub</title></head><body><p>{links}</p></body></html>".encode()
            headers = StatusAndHeaders("200 OK", [("Content-Type", "text/html")], protocol="HTTP/1.1")
            writer.write_record(writer.create_warc_record(url, "response", payload=io.BytesIO(body),
                                                          http_headers=headers))
    ingest_files([str(root / "links.warc.gz")], str(root / "crawl"))
    return str(root / "crawl")


def test_related_by_cocitation_counts_shared_citing_pages(small_crawl):
    from simweb.tasks.link_related import related_by_link

    loaded = load_link_graph(small_crawl)
    assert loaded.graph.n_nodes == 7 and loaded.graph.n_edges == 8
    got = {r.url: r.score for r in related_by_link(loaded, "http://a.example/", "cocitation")}
    assert got == {"http://b.example/": 2.0, "http://c.example/": 2.0, "http://d.example/": 1.0}
    ranked = related_by_link(small_crawl, "http://d.example/", "cocitation", top=1)
    assert [(r.rank, r.url, r.score) for r in ranked] in ([(1, "http://a.example/", 1.0)],
                                                          [(1, "http://c.example/", 1.0)])
    # hub1 and hub2 share two targets: bibliographic coupling.
    coupled = {r.url: r.score for r in related_by_link(loaded, "http://hub1.example/", "coupling")}
    assert coupled == {"http://hub2.example/": 2.0, "http://hub3.example/": 2.0}
    simrank = related_by_link(loaded, "http://b.example/", "simrank")
    assert simrank[0].url in ("http://a.example/", "http://c.example/") and 0 < simrank[0].score < 1


def test_related_by_link_says_what_is_wrong(small_crawl):
    from simweb.tasks.link_related import related_by_link

    with pytest.raises(ValueError, match="no link of the crawl touches http://nowhere.example/"):
        related_by_link(small_crawl, "http://nowhere.example/", "cocitation")
    with pytest.raises(ValueError, match="expected a link measure among cocitation"):
        related_by_link(small_crawl, "http://a.example/", "pagerank")
    with pytest.raises(ValueError, match="expected an absolute http"):
        related_by_link(small_crawl, "not a url", "cocitation")
