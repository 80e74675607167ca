"""Link-based measures: time and memory of each, on DebDocs' link graph or a synthetic one.

    python -m benchmarks.linkgraph [--links DIR] [--nodes 2400 --edges 100000] [--large 50000
        --large-edges 1000000] [--sample 500] [--skip-large] [--skip-error]

For every measure of simweb.core.linkgraph (PageRank, co-citation, coupling, ECBC, SimRank,
extended SimRank, PageSim, extended PageSim, Table 1 parameters) it prints wall time and
peak traced memory (tracemalloc: numpy and scipy buffers) in two shapes:

  * evaluation: a sample of ``--sample`` pages against the same sample (what Γ needs);
  * related:    one page against every page (what `simweb related` answers; on the large
                graph only the measures that stay fast unless --large-related);

with each CPU time as a ratio to co-citation's measured in the same run. Then, on the
DebDocs-sized graph, the error against the exact scores of the memory-bounded forms used on
large graphs: SimRank's linear form with a sampled diagonal (100 to 3000 walk pairs per
page) and extended SimRank on row/column blocks cut to a fraction of the graph; and the
distance between S_10 (the default) and S_30.

``--links DIR`` reads ``DIR/links/*.parquet`` (source_id, target_id, as `simweb ingest`
writes them), restricted to the crawled pages of ``DIR/pages`` when present, and then also
counts the near-duplicate clusters and mirrored hosts among those pages (simweb.core.shingles). Without it the
graph is synthetic: power-law out-degrees and in-degrees (popular pages are linked from
everywhere, as navigation bars do), ``--nodes``/``--edges`` distinct links, built here, not
downloaded. The large graph is synthetic too.
"""
from __future__ import annotations

import argparse
import resource
import time
import tracemalloc
from pathlib import Path

import numpy as np

from simweb.core.linkgraph import (
    CocitationParams,
    CouplingParams,
    EcbcParams,
    ExtendedPageSimParams,
    ExtendedSimRankParams,
    LinkGraph,
    PageRankParams,
    PageSimParams,
    SimRankParams,
    pagerank,
)
from simweb.core.linkmeasures import link_similarity
from simweb.core.simrank import simrank_plan

TABLE1_PARAMS = [
    CocitationParams(),
    CouplingParams(),
    EcbcParams(),
    SimRankParams(),
    ExtendedSimRankParams(),
    PageSimParams(),
    ExtendedPageSimParams(),
]


def synthetic_graph(nodes: int, edges: int, seed: int) -> LinkGraph:
    """``edges`` distinct links among ``nodes`` pages with Zipf-like out- and in-degrees."""
    rng = np.random.default_rng(seed)
    out_weight = 1.0 / np.arange(1, nodes + 1) ** 0.6
    in_weight = 1.0 / np.arange(1, nodes + 1) ** 0.9
    out_p = rng.permutation(out_weight / out_weight.sum())
    in_p = rng.permutation(in_weight / in_weight.sum())
    ids = np.arange(1, nodes + 1, dtype=np.uint64) * np.uint64(0x9E3779B97F4A7C15)
    codes = np.empty(0, dtype=np.int64)
    while codes.size < edges:
        draw = int((edges - codes.size) * 1.3) + 1000
        src = rng.choice(nodes, draw, p=out_p)
        dst = rng.choice(nodes, draw, p=in_p)
        keep = src != dst
        codes = np.unique(np.concatenate([codes, src[keep] * nodes + dst[keep]]))
    codes = rng.permutation(codes)[:edges]
    return LinkGraph.from_edges(ids[codes // nodes], ids[codes % nodes], nodes=ids)


def debdocs_graph(directory: Path) -> LinkGraph:
    import pyarrow.dataset as ds  # benchmarks may read Parquet; simcore never does

    links = ds.dataset(directory / "links", format="parquet").to_table(columns=["source_id", "target_id"])
    sources = links.column("source_id").to_numpy()
    targets = links.column("target_id").to_numpy()
    pages_dir = directory / "pages"
    if pages_dir.is_dir():
        pages = ds.dataset(pages_dir, format="parquet").to_table(columns=["url_id"]).column("url_id").to_numpy()
        return LinkGraph.from_edges(sources, targets, nodes=pages, restrict_to_nodes=True)
    return LinkGraph.from_edges(sources, targets)


def crawl_duplicates(directory: Path, threshold: float) -> None:
    """Near-duplicate clusters and mirrored hosts among the crawled pages of ``directory``."""
    import pyarrow.dataset as ds

    from simweb.core.shingles import duplicate_clusters, find_mirrors, shingle_fingerprints, sketch

    pages = ds.dataset(directory / "pages", format="parquet").to_table(columns=["url", "title_words", "words"])
    urls = pages.column("url").to_pylist()
    texts = [t + w for t, w in zip(pages.column("title_words").to_pylist(), pages.column("words").to_pylist())]
    t0 = time.perf_counter()
    fingerprints = [shingle_fingerprints(words) for words in texts]
    t1 = time.perf_counter()
    sketches = sketch(fingerprints)
    t2 = time.perf_counter()
    clusters = duplicate_clusters(sketches, threshold)
    t3 = time.perf_counter()
    report = find_mirrors(urls, sketches)
    t4 = time.perf_counter()
    sizes = sorted((len(c) for c in clusters.clusters()), reverse=True)
    print(
        f"\n== near-duplicates of {len(urls):,} crawled pages (10-word shingles, 200 min-hashes, "
        f"resemblance ≥ {threshold}): {clusters.n_clusters:,} clusters holding {clusters.n_duplicates:,} "
        f"duplicates (largest {sizes[:5]}); {clusters.skipped_empty:,} pages without words skipped\n"
        f"   mirror candidates {len(report.pairs):,}, validated mirrors {len(report.mirrors):,} "
        f"{[(m.host_a, m.host_b, f'{m.matched}/{m.sampled}') for m in report.mirrors[:5]]}; "
        f"paths too common to count {report.common_paths_ignored:,}, repeated URLs {report.repeated_urls:,}\n"
        f"   shingling {t1 - t0:.2f} s, sketches {t2 - t1:.2f} s, clusters {t3 - t2:.2f} s, mirrors {t4 - t3:.2f} s"
    )


class Timing(float):
    """Wall seconds that also carry the process CPU seconds (the machine's cores are shared,
    so wall time varies with the neighbours' load; CPU time much less)."""

    cpu: float

    def __format__(self, spec: str) -> str:
        return f"{format(float(self), spec)} s ({self.cpu:.2f} cpu)"


def measured(fn, *args):
    """(result, Timing, peak traced MiB) of fn(*args)."""
    tracemalloc.start()
    tracemalloc.reset_peak()
    t0, c0 = time.perf_counter(), time.process_time()
    result = fn(*args)
    seconds = Timing(time.perf_counter() - t0)
    seconds.cpu = time.process_time() - c0
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return result, seconds, peak / 2**20


def describe(graph: LinkGraph, label: str) -> None:
    s = graph.stats
    print(
        f"\n== {label}: {graph.n_nodes:,} nodes, {graph.n_edges:,} edges "
        f"(read {s.edges_read:,}; self-links {s.self_loops:,}, repeats {s.duplicate_edges:,}, "
        f"outside the pages {s.outside_edges:,}); max in-degree {graph.in_degree.max():,}, "
        f"dead ends {(graph.out_degree == 0).sum():,}"
    )


CHEAP = (CocitationParams, CouplingParams, EcbcParams, SimRankParams)


def bench_graph(graph: LinkGraph, label: str, sample_size: int, seed: int, related: str) -> None:
    """``related``: "all" measures, "cheap" ones (no extended SimRank / PageSim) or "none"."""
    describe(graph, label)
    rng = np.random.default_rng(seed)
    sample = np.sort(rng.choice(graph.n_nodes, min(sample_size, graph.n_nodes), replace=False))
    query = sample[:1]
    pr, secs, mib = measured(pagerank, graph, PageRankParams())
    print(f"{'pagerank':<18} {'':>26} {secs:8.3f} {mib:9.1f} MiB  (sum {pr.sum():.6f})")
    shapes = [("evaluation", sample, sample, TABLE1_PARAMS)]
    if related != "none":
        chosen = TABLE1_PARAMS if related == "all" else [p for p in TABLE1_PARAMS if isinstance(p, CHEAP)]
        shapes.append(("related", query, None, chosen))
    for shape, queries, candidates, measures in shapes:
        desc = f"{queries.size} x {graph.n_nodes if candidates is None else candidates.size}"
        print(f"-- {shape} shape: {desc}")
        baseline = None
        for params in measures:
            plan_note = ""
            if isinstance(params, (SimRankParams, ExtendedSimRankParams)):
                plan = simrank_plan(graph, queries, candidates, params)
                plan_note = f"  {plan.method}"
                if plan.method == "block":
                    plan_note += f" {plan.rows.size}x{plan.cols.size} {'exact' if plan.exact else 'lower bound'}"
            scores, secs, mib = measured(link_similarity, graph, params, queries, candidates)
            baseline = secs if baseline is None else baseline
            print(
                f"{params.name:<18} {desc:>26} {secs:8.3f} {mib:9.1f} MiB  "
                f"x{secs.cpu / max(baseline.cpu, 1e-3):8.1f} co-citation (cpu){plan_note}"
            )


def error_line(name: str, exact: np.ndarray, approx: np.ndarray, sample: np.ndarray, secs: float, mib: float,
               what: str) -> str:
    off = ~np.equal.outer(sample, sample)
    err = (approx - exact)[off]
    big = exact[off] >= 0.01
    return (
        f"{name:<18} {what:<22} {secs:7.2f} {mib:8.1f} MiB  |error| max {np.abs(err).max():.4f} "
        f"mean {np.abs(err).mean():.5f}; relative on scores ≥ 0.01: mean "
        f"{np.mean(np.abs(err[big]) / exact[off][big]) if big.any() else float('nan'):.3f}; "
        f"top-10 overlap {top10_overlap(exact, approx, sample):.3f}"
    )


def bench_error(graph: LinkGraph, sample_size: int, seed: int) -> None:
    """Memory-bounded SimRank (linear form, sampled diagonal) and extended SimRank (blocks)
    against the exact dense scores on the same graph and sample."""
    rng = np.random.default_rng(seed)
    sample = np.sort(rng.choice(graph.n_nodes, min(sample_size, graph.n_nodes), replace=False))
    off = ~np.equal.outer(sample, sample)
    print(f"\n-- bounded SimRank error, {sample.size} x {sample.size} sample of {graph.n_nodes:,} nodes")
    exact, secs, mib = measured(link_similarity, graph, SimRankParams(method="exact"), sample, sample)
    print(f"{'simrank':<18} {'exact':<22} {secs:7.2f} {mib:8.1f} MiB  mean score {exact[off].mean():.5f}")
    for walks in (100, 300, 1000, 3000):
        params = SimRankParams(method="linear", walks=walks)
        approx, secs, mib = measured(link_similarity, graph, params, sample, sample)
        print(error_line("simrank", exact, approx, sample, secs, mib, f"linear, {walks} walks"))
    longer = link_similarity(graph, SimRankParams(method="exact", iterations=30), sample, sample)
    gap = (longer - exact)[off]
    print(f"{'simrank':<18} S_30 − S_10: max {gap.max():.4f}, mean {gap.mean():.5f} (bound γ^11 = {0.8**11:.4f})")

    exact, secs, mib = measured(link_similarity, graph, ExtendedSimRankParams(), sample, sample)
    print(f"{'extended_simrank':<18} {'exact':<22} {secs:7.2f} {mib:8.1f} MiB  mean score {exact[off].mean():.5f}")
    for fraction in (0.5, 0.35, 0.25):
        block = int(graph.n_nodes * fraction)
        if block < sample.size:
            continue
        params = ExtendedSimRankParams(max_bytes=6 * 8 * block * block)
        plan = simrank_plan(graph, sample, sample, params)
        approx, secs, mib = measured(link_similarity, graph, params, sample, sample)
        holds = bool((approx <= exact + 1e-12).all())
        print(error_line("extended_simrank", exact, approx, sample, secs, mib,
                         f"block {plan.rows.size}x{plan.cols.size}") + f"; lower bound holds: {holds}")


def top10_overlap(exact: np.ndarray, approx: np.ndarray, sample: np.ndarray) -> float:
    """Mean fraction of each query's exact top 10 (itself excluded) that the approximation keeps."""
    keep = []
    for i in range(sample.size):
        e, a = exact[i].copy(), approx[i].copy()
        e[i] = a[i] = -np.inf
        top_e = set(np.argsort(-e, kind="stable")[:10].tolist())
        top_a = set(np.argsort(-a, kind="stable")[:10].tolist())
        keep.append(len(top_e & top_a) / 10)
    return float(np.mean(keep))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.linkgraph", description=__doc__.splitlines()[0])
    parser.add_argument("--links", type=Path, help="an ingest output directory holding links/ (and pages/)")
    parser.add_argument("--nodes", type=int, default=2_400)
    parser.add_argument("--edges", type=int, default=100_000)
    parser.add_argument("--large", type=int, default=50_000, help="nodes of the large synthetic graph")
    parser.add_argument("--large-edges", type=int, default=1_000_000)
    parser.add_argument("--sample", type=int, default=500, help="pages in the evaluation shape")
    parser.add_argument("--skip-large", action="store_true")
    parser.add_argument("--skip-error", action="store_true")
    parser.add_argument("--large-related", action="store_true",
                        help="time extended SimRank and PageSim for one page against all pages of the large graph too (slow)")
    parser.add_argument("--threshold", type=float, default=0.8, help="near-duplicate resemblance (with --links)")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args(argv)

    if args.links:
        graph, secs, mib = measured(debdocs_graph, args.links)
        label = f"link graph of {args.links}"
    else:
        graph, secs, mib = measured(synthetic_graph, args.nodes, args.edges, args.seed)
        label = "synthetic DebDocs-sized graph"
    print(f"graph built in {secs:.2f}, {mib:.1f} MiB peak")
    bench_graph(graph, label, args.sample, args.seed, related="all")
    if args.links and (args.links / "pages").is_dir():
        crawl_duplicates(args.links, args.threshold)
    if not args.skip_error:
        bench_error(graph, args.sample, args.seed)
    if not args.skip_large:
        large, secs, mib = measured(synthetic_graph, args.large, args.large_edges, args.seed)
        print(f"\nlarge graph built in {secs:.2f}, {mib:.1f} MiB peak")
        bench_graph(large, "synthetic large graph", args.sample, args.seed,
                    related="all" if args.large_related else "cheap")
    print(f"\nmax resident set size of this run: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB")


if __name__ == "__main__":
    main()
