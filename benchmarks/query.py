"""Query speed and recall: simweb's PROCESSQUERY vs datasketch MinHashLSH, against exact Jaccard.

    python -m benchmarks.query [--sizes 10000 100000] [--queries 2000] [--alpha 0.15] [--rounds 3] [--million]

Synthetic bags with a controlled similarity structure: clusters of 2–12 related pages. A
cluster has a base bag of 60 terms from its own Zipf-distributed topic vocabulary; each member
keeps every base term with a probability drawn per member (0.35–1.0), rescales it by log-normal
noise, and adds 10 terms from a Zipf background vocabulary shared by all pages that carry 8 %
of the bag's mass. Bags are normalised to sum 1. Pages of different clusters share background
terms only, so their Σmin ≤ 0.08 and J = Σmin/(2 − Σmin) ≤ 0.042 < α: the true α-similar
pairs are exactly the within-cluster pairs with exact weighted Jaccard ≥ α, computed here.

Both indexes use the same ICWS signatures (m = 80) — the index is built by the real
`signatures` and `invert` stages into a memory-mapped folder; datasketch MinHashLSH gets them
as LeanMinHash objects at threshold α. Every figure is measured in this run on one pinned core:
build time, queries/s (one query at a time, and simweb's batch mode), p50/p99 latency, recall
(true pairs found / true pairs of the query pages) and the candidates returned per query.
One-at-a-time timings run in ``--rounds`` interleaved rounds (simweb, LSH, simweb, LSH, …) and
each side's fastest round is shown, so load from other processes hits both sides alike.
simweb's in-memory key directory (simweb.core.query.prepare), built once per opened index like
the LSH tables, is timed and sized on its own line, outside the query timings.
``--million`` adds a 1,000,000-page index for memory (bytes per page of H and I) and latency.
``--index DIR`` (repeatable: DebDocs, the 100k and the 1M scale crawls built by `simweb build`)
times a published index through the Python API, as users query it: the default exact re-rank
of every candidate estimated ≥ α − 2σ, the min-hash estimate alone (``rerank=False``, the
paper's PROCESSQUERY) and datasketch MinHashLSH built on the index's own H (the same
signatures), in interleaved rounds; recall and precision against every indexed page's exact
Jaccard for ``--truth`` of the query pages; the bytes per page of the index's files.
"""
from __future__ import annotations

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")

import argparse  # noqa: E402
import shutil  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

BACKGROUND_MASS = 0.08


def synthetic_bags(n_docs: int, seed: int = 0) -> tuple[list[list[str]], list[np.ndarray], np.ndarray]:
    """(terms per page, weights per page, cluster of each page); see the module docstring."""
    rng = np.random.default_rng(seed)
    terms, weights, cluster = [], [], []
    c = 0
    while len(terms) < n_docs:
        size = int(min(rng.integers(2, 13), n_docs - len(terms)))
        topic_ids = np.unique(rng.zipf(1.3, size=400))[:60]
        base_terms = np.array([f"c{c}t{x}" for x in topic_ids])
        base_w = rng.lognormal(size=base_terms.size)
        for _ in range(size):
            keep = rng.random(base_terms.size) < rng.uniform(0.35, 1.0)
            if not keep.any():
                keep[0] = True
            t = base_terms[keep]
            w = base_w[keep] * rng.lognormal(0.0, 0.3, size=t.size)
            w = (1 - BACKGROUND_MASS) * w / w.sum()
            bg = np.unique(rng.zipf(1.2, size=10) % 20_000)
            bw = rng.random(bg.size) + 0.1
            bw = BACKGROUND_MASS * bw / bw.sum()
            all_t = np.concatenate([t, [f"bg{x}" for x in bg]])
            all_w = np.concatenate([w, bw]).astype(np.float32)
            order = np.argsort(all_t)
            terms.append(all_t[order].tolist())
            weights.append(all_w[order])
            cluster.append(c)
        c += 1
    return terms, weights, np.array(cluster)


def exact_true_pairs(terms, weights, cluster, alpha: float) -> dict[int, set[int]]:
    """Each page's α-similar pages (exact Σmin/Σmax, within its cluster; see the module docstring)."""
    from simweb.core.similarity import jaccard

    bags = [dict(zip(t, w.tolist())) for t, w in zip(terms, weights)]
    truth: dict[int, set[int]] = {i: set() for i in range(len(bags))}
    starts = np.flatnonzero(np.concatenate([[True], cluster[1:] != cluster[:-1]]))
    ends = np.concatenate([starts[1:], [len(bags)]])
    for s, e in zip(starts, ends):
        for i in range(s, e):
            for j in range(i + 1, e):
                if jaccard(bags[i], bags[j]) >= alpha:
                    truth[i].add(j)
                    truth[j].add(i)
    return truth


def build_index(terms, weights, folder: str) -> tuple[str, float]:
    import pyarrow as pa

    from simweb.tasks.schemas import BAGS
    from simweb.tasks.signatures import signatures, write_index_version
    from simweb.tasks.storage import write_parquet_atomic

    n = len(terms)
    step = 50_000
    for k, s in enumerate(range(0, n, step)):
        rows = pa.table({
            "url_id": pa.array(np.arange(s, min(n, s + step), dtype=np.uint64) + 1),
            "url": pa.array([f"http://p{i}.example/" for i in range(s, min(n, s + step))]),
            "terms": pa.array(terms[s:s + step], pa.list_(pa.string())),
            "weights": pa.array([w for w in weights[s:s + step]], pa.list_(pa.float32())),
        }, schema=BAGS)
        write_parquet_atomic(rows, f"{folder}/bags/part-{k:05d}.parquet")
    t = time.perf_counter()
    signatures(f"{folder}/bags", f"{folder}/signed")
    write_index_version(f"{folder}/signed", f"{folder}/index", min_in_degree=None)
    return f"{folder}/index", time.perf_counter() - t


def percentile_ms(samples: list[float], p: float) -> float:
    return float(np.percentile(np.array(samples) * 1e3, p))


def run_size(n: int, n_queries: int, alpha: float, work: str, rounds: int = 3) -> None:
    from datasketch import LeanMinHash, MinHashLSH

    from simweb.core.query import prepare, process_queries, process_query
    from simweb.tasks import index_store

    print(f"\n== {n:,} pages, α = {alpha}, {n_queries} query pages ==")
    t = time.perf_counter()
    terms, weights, cluster = synthetic_bags(n)
    truth = exact_true_pairs(terms, weights, cluster, alpha)
    n_true = sum(len(v) for v in truth.values()) // 2
    print(f"  data + exact truth: {time.perf_counter() - t:.1f} s; {n_true:,} true pairs "
          f"(mean {np.mean([len(x) for x in terms]):.0f} terms/page)")
    folder = tempfile.mkdtemp(dir=work)
    path, build_s = build_index(terms, weights, folder)
    v = index_store.open_version(path)
    h = np.asarray(v.h)
    print(f"  simweb build (signatures + invert stages): {build_s:.1f} s = {n / build_s:,.0f} pages/s")
    rng = np.random.default_rng(1)
    queries = rng.choice(n, size=min(n_queries, n), replace=False)
    wanted = sum(len(truth[int(q)]) for q in queries)

    def recall(found: dict[int, set[int]]) -> float:
        return sum(len(found[int(q)] & truth[int(q)]) for q in queries) / max(wanted, 1)

    # datasketch MinHashLSH on the same signatures.
    t = time.perf_counter()
    lsh = MinHashLSH(threshold=alpha, num_perm=80)
    lean = [LeanMinHash(seed=1, hashvalues=h[i].astype(np.uint64), scheme="affine32") for i in range(n)]
    with lsh.insertion_session() as session:
        for i in range(n):
            session.insert(i, lean[i])
    lsh_build = time.perf_counter() - t
    # The key directory of simweb's single queries is built once per opened index, like the
    # LSH tables: timed and shown apart.
    t = time.perf_counter()
    dir_bytes = prepare(v.inverted)
    dir_ms = (time.perf_counter() - t) * 1e3

    def simweb_round() -> tuple[list[float], dict[int, set[int]]]:
        lat, found = [], {}
        for q in queries:
            t = time.perf_counter()
            res = process_query(v.inverted, h, int(q), alpha)
            lat.append(time.perf_counter() - t)
            found[int(q)] = set(res.docs.tolist())
        return lat, found

    def lsh_round() -> tuple[list[float], dict[int, set[int]]]:
        lat, found = [], {}
        for q in queries:
            t = time.perf_counter()
            got = lsh.query(lean[int(q)])
            lat.append(time.perf_counter() - t)
            found[int(q)] = set(got) - {int(q)}
        return lat, found

    # One query at a time: interleaved rounds, each side's fastest round kept, so a burst of
    # load from other processes on the machine does not land on one side only.
    sw, ls = [], []
    for _ in range(rounds):
        sw.append(simweb_round())
        ls.append(lsh_round())
    lat, found = min(sw, key=lambda r: sum(r[0]))
    lsh_lat, lsh_found = min(ls, key=lambda r: sum(r[0]))
    single_qps = len(queries) / sum(lat)
    cand = np.mean([len(found[int(q)]) for q in queries])
    r_single = recall(found)
    lsh_qps = len(queries) / sum(lsh_lat)
    lsh_cand = np.mean([len(lsh_found[int(q)]) for q in queries])
    # simweb batch mode (best of the same number of rounds).
    batch_s = float("inf")
    for _ in range(rounds):
        t = time.perf_counter()
        batch = process_queries(v.inverted, h[queries], alpha, None, queries, h)
        batch_s = min(batch_s, time.perf_counter() - t)
    batch_qps = len(queries) / batch_s
    assert all(set(b.docs.tolist()) == found[int(q)] for q, b in zip(queries, batch))
    # simweb, candidates at α − 2σ then exact re-rank: report recall (precision is 1 by construction).
    from simweb.core.query import candidate_alpha
    from simweb.core.similarity import jaccard

    low = candidate_alpha(alpha, 80)
    t = time.perf_counter()
    low_res = process_queries(v.inverted, h[queries], low, None, queries, h)
    bags = {}

    def bag(i):
        if i not in bags:
            bags[i] = dict(zip(terms[i], weights[i].tolist()))
        return bags[i]

    reranked = {int(q): {int(d) for d in r.docs if jaccard(bag(int(q)), bag(int(d))) >= alpha}
                for q, r in zip(queries, low_res)}
    rerank_qps = len(queries) / (time.perf_counter() - t)
    print(f"  simweb key directory (built once per opened index): {dir_ms:.1f} ms, "
          f"{dir_bytes / n:.1f} B/page in memory")
    print(f"  datasketch MinHashLSH build (b={lsh.b}, r={lsh.r}, signatures given): {lsh_build:.1f} s")
    print(f"  {'':<44}{'queries/s':>11}{'p50 ms':>9}{'p99 ms':>9}{'recall':>8}{'cand/q':>8}")
    print(f"  {'simweb PROCESSQUERY, one at a time':<44}{single_qps:>11,.0f}{percentile_ms(lat, 50):>9.3f}"
          f"{percentile_ms(lat, 99):>9.3f}{r_single:>8.3f}{cand:>8.1f}")
    print(f"  {'simweb PROCESSQUERY, batch mode':<44}{batch_qps:>11,.0f}{'':>9}{'':>9}{r_single:>8.3f}{cand:>8.1f}")
    print(f"  {f'simweb α−2σ={low:.3f} + exact re-rank':<44}{rerank_qps:>11,.0f}{'':>9}{'':>9}"
          f"{recall(reranked):>8.3f}{np.mean([len(reranked[int(q)]) for q in queries]):>8.1f}")
    print(f"  {'datasketch MinHashLSH.query':<44}{lsh_qps:>11,.0f}{percentile_ms(lsh_lat, 50):>9.3f}"
          f"{percentile_ms(lsh_lat, 99):>9.3f}{recall(lsh_found):>8.3f}{lsh_cand:>8.1f}")
    print(f"  ratios: simweb one-at-a-time {single_qps / lsh_qps:.2f}× LSH, batch {batch_qps / lsh_qps:.2f}× LSH "
          f"(one at a time: best of {rounds} interleaved rounds each)")
    info = v.manifest["files"]
    hb = info[index_store.H_FILE]["bytes"] / n
    ib = sum(m["bytes"] for k, m in info.items() if k.startswith("I.")) / n
    print(f"  index size: H {hb:.0f} B/page, I {ib:.0f} B/page, H + I {hb + ib:.0f} B/page")
    shutil.rmtree(folder, ignore_errors=True)


def run_million(n: int, alpha: float, work: str) -> None:
    """Memory and latency of a large index (no exact truth; signatures from synthetic bags)."""
    import resource

    from simweb.core.query import prepare, process_query
    from simweb.tasks import index_store

    print(f"\n== {n:,}-page index: memory and latency ==")
    t = time.perf_counter()
    terms, weights, _ = synthetic_bags(n, seed=3)
    print(f"  data: {time.perf_counter() - t:.1f} s")
    folder = tempfile.mkdtemp(dir=work)
    path, build_s = build_index(terms, weights, folder)
    del terms, weights
    print(f"  build (signatures + invert): {build_s:.1f} s = {n / build_s:,.0f} pages/s")
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    v = index_store.open_version(path)
    h = np.asarray(v.h)
    t = time.perf_counter()
    dir_bytes = prepare(v.inverted)
    print(f"  key directory: {(time.perf_counter() - t) * 1e3:.0f} ms, {dir_bytes / n:.1f} B/page in memory")
    rng = np.random.default_rng(2)
    lat = []
    for q in rng.choice(n, size=2000, replace=False):
        t = time.perf_counter()
        process_query(v.inverted, h, int(q), alpha)
        lat.append(time.perf_counter() - t)
    info = v.manifest["files"]
    hb = info[index_store.H_FILE]["bytes"] / n
    ib = sum(m["bytes"] for k, m in info.items() if k.startswith("I.")) / n
    print(f"  H {hb:.0f} B/page, I {ib:.0f} B/page, H + I {hb + ib:.0f} B/page (target H = 320, H + I ≤ 1024)")
    print(f"  latency p50 {percentile_ms(lat, 50):.3f} ms, p99 {percentile_ms(lat, 99):.3f} ms, "
          f"{len(lat) / sum(lat):,.0f} queries/s; peak RSS grew {(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024:.0f} MiB while querying")
    shutil.rmtree(folder, ignore_errors=True)


def run_index(path: str, n_queries: int, alpha: float, rounds: int, truth: int, peer: bool) -> None:
    """A published index as users query it (simweb.api), beside the peer on its signatures: the
    default query (candidates estimated ≥ α − 2σ, exact re-rank), the estimate alone
    (``rerank=False``, the paper's PROCESSQUERY) and datasketch MinHashLSH built on the index's
    H (the same signatures), in interleaved rounds; then, for ``truth`` of the query pages, every
    indexed page's exact weighted Jaccard (all of them, by the index's own re-rank kernel): the
    recall and precision of each path's pairs ≥ α, and of the default's top 10."""
    import resource

    import simweb
    from simweb.core.query import candidate_alpha
    from simweb.core.rerank import exact_scores
    from simweb.tasks import index_store

    t = time.perf_counter()
    index = simweb.open_index(path, precomputed=False)
    directory = index.prepare()
    opened_s = time.perf_counter() - t
    ahead = simweb.open_index(path)  # the default query from the related pages computed ahead
    has_table = ahead.info()["related_table"] is not None
    v = index_store.open_version(path)
    n, m = v.n_docs, v.params.m
    urls = v.docs.column("url").to_pylist()
    rng = np.random.default_rng(1)
    chosen = rng.choice(n, size=min(n_queries, n), replace=False)
    queries = [urls[i] for i in chosen]
    crawled = v.n_crawled
    print(f"\n== published index {path}: {n:,} documents"
          + (f" ({crawled:,} crawled pages)" if crawled is not None else "")
          + f", {v.manifest['n_indexed']:,} in I; {len(queries):,} random documents asked about ==")
    print(f"  opened and key directory built in {opened_s * 1e3:.0f} ms ({directory / n:.1f} B/page in memory)")
    indexed = np.flatnonzero(np.asarray(v.docs.column("indexed").to_numpy(zero_copy_only=False), dtype=bool))
    lsh = lean = None
    if peer:
        from datasketch import LeanMinHash, MinHashLSH

        t = time.perf_counter()
        h = np.asarray(v.h)
        lsh = MinHashLSH(threshold=alpha, num_perm=m)
        lean = {}
        with lsh.insertion_session() as session:
            for i in indexed.tolist():
                lean[i] = LeanMinHash(seed=1, hashvalues=h[i].astype(np.uint64), scheme="affine32")
                session.insert(i, lean[i])
        for i in chosen.tolist():
            if i not in lean:
                lean[i] = LeanMinHash(seed=1, hashvalues=h[i].astype(np.uint64), scheme="affine32")
        print(f"  datasketch MinHashLSH (b={lsh.b}, r={lsh.r}) built on H's {indexed.size:,} indexed rows in "
              f"{time.perf_counter() - t:.1f} s; peak RSS of this process now "
              f"{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:,.0f} MiB")

    def simweb_round(rerank: bool, index=index) -> list[float]:
        lat = []
        for q in queries:
            t = time.perf_counter()
            index.related(q, top=10, alpha=alpha, rerank=rerank)
            lat.append(time.perf_counter() - t)
        return lat

    def lsh_round() -> list[float]:
        lat = []
        for i in chosen.tolist():
            t = time.perf_counter()
            lsh.query(lean[i])
            lat.append(time.perf_counter() - t)
        return lat

    paths = {"default": lambda: simweb_round(True), "estimate": lambda: simweb_round(False)}
    if has_table:
        paths["table"] = lambda: simweb_round(True, ahead)
    if peer:
        paths["lsh"] = lsh_round
    best: dict[str, list[float]] = {}
    for _ in range(rounds):
        for name, run in paths.items():
            lat = run()
            if name not in best or sum(lat) < sum(best[name]):
                best[name] = lat

    # Exact similarity of the first `truth` query pages with every indexed page: the truth.
    t = time.perf_counter()
    low = candidate_alpha(alpha, m)
    judged = chosen[:truth]
    found = {k: [0, 0, 0] for k in paths if k != "table"}  # hits, retrieved, relevant
    top_hits = top_want = table_hits = table_same = 0
    for q in judged.tolist():
        exact = exact_scores(v.bag_arrays, q, indexed)[0]
        true = set(indexed[(exact >= alpha - 1e-12) & (indexed != q)].tolist())
        got = {"default": {r.doc_id for r in index.related(urls[q], top=n, alpha=alpha)},
               "estimate": {r.doc_id for r in index.related(urls[q], top=n, alpha=alpha, rerank=False)}}
        if peer:
            got["lsh"] = set(lsh.query(lean[q])) - {q}
        for k, g in got.items():
            found[k][0] += len(g & true)
            found[k][1] += len(g)
            found[k][2] += len(true)
        order = np.lexsort((indexed, -exact))
        want10 = indexed[order[(exact[order] >= alpha - 1e-12) & (indexed[order] != q)][:10]].tolist()
        top = [r.doc_id for r in index.related(urls[q], top=10, alpha=alpha)]
        top_hits += len(set(top) & set(want10))
        top_want += len(want10)
        if has_table:
            looked_up = ahead.related(urls[q], top=10, alpha=alpha)
            table_hits += len({r.doc_id for r in looked_up} & set(want10))
            table_same += looked_up == index.related(urls[q], top=10, alpha=alpha)
    truth_s = time.perf_counter() - t
    names = {"default": "related(): candidates ≥ α − 2σ, exact re-rank (default)",
             "estimate": "related(rerank=False): estimate ≥ α",
             "lsh": "datasketch MinHashLSH.query (same signatures)",
             "table": "related(), from the related pages computed ahead"}
    print(f"  {'':<58}{'queries/s':>10}{'p50 ms':>9}{'p99 ms':>9}{'recall':>8}{'precision':>10}")
    for k, lat in best.items():
        if k == "table":  # its recall and precision are of the top ten, below
            print(f"  {names[k]:<58}{len(lat) / sum(lat):>10,.0f}{percentile_ms(lat, 50):>9.3f}"
                  f"{percentile_ms(lat, 99):>9.3f}")
            continue
        hits, retrieved, relevant = found[k]
        print(f"  {names[k]:<58}{len(lat) / sum(lat):>10,.0f}{percentile_ms(lat, 50):>9.3f}{percentile_ms(lat, 99):>9.3f}"
              f"{hits / max(relevant, 1):>8.3f}{hits / retrieved if retrieved else float('nan'):>10.3f}")
    lsh_note = ""
    if peer:
        ratio = percentile_ms(best["default"], 50) / percentile_ms(best["lsh"], 50)
        lsh_note = (f"; the default's p50 is {ratio:.2f}× the peer's (whose answer is its unranked candidates, "
                    "before any re-rank)")
    print(f"  recall and precision: the pairs ≥ α = {alpha} (candidates for the peer) of {judged.size} query pages "
          f"against every indexed page's exact Jaccard ({sum(f[2] for f in found.values()) // len(found):,} true pairs; "
          f"{truth_s:.0f} s); the default's top 10 hold {top_hits / max(top_want, 1):.3f} of the exact top 10 "
          f"(candidates from α − 2σ = {low:.3f}){lsh_note}")
    if has_table:
        print(f"  from the related pages computed ahead: the top 10 hold {table_hits / max(top_want, 1):.3f} of the "
              f"exact top 10, the same answer as the live query for {table_same} of {judged.size} pages; p50 "
              f"{percentile_ms(best['default'], 50) / percentile_ms(best['table'], 50):.0f}× as fast as the live query")
    files = v.manifest["files"]
    size = {name: meta["bytes"] / n for name, meta in files.items()}
    i_bytes = sum(b for name, b in size.items() if name.startswith("I."))
    arrays = sum(size.get(name, 0) for name in (index_store.BAG_OFFSETS_FILE, index_store.BAG_TERMS_FILE,
                                                 index_store.BAG_WEIGHTS_FILE))
    fine = f", H2 {size[index_store.H2_FILE]:.0f} (the fine estimate)" if index_store.H2_FILE in size else ""
    print(f"  bytes per page: H {size[index_store.H_FILE]:.0f}{fine}, I {i_bytes:.0f}, bag arrays {arrays:.0f} (read by "
          f"the re-rank), all files {sum(size.values()):.0f} (best of {rounds} interleaved rounds each; the peer's "
          f"tables are in this process's memory)")


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    ap.add_argument("--queries", type=int, default=2000)
    ap.add_argument("--alpha", type=float, default=0.15)
    ap.add_argument("--rounds", type=int, default=3, help="interleaved timing rounds; each side's best is shown")
    ap.add_argument("--million", action="store_true", help="also build a 1,000,000-page index (takes long)")
    ap.add_argument("--work", default=None, help="scratch folder (default: the system's temporary folder)")
    ap.add_argument("--index", default=None, action="append", metavar="DIR",
                    help="time this published index (repeatable) instead of synthetic ones: the default "
                         "query, the estimate alone and the peer on the same signatures")
    ap.add_argument("--truth", type=int, default=200,
                    help="query pages of --index judged against every page's exact similarity (default 200)")
    ap.add_argument("--no-peer", action="store_true", help="with --index, leave datasketch out (its tables "
                                                           "take memory and minutes at a million pages)")
    args = ap.parse_args(argv)
    try:
        cpu = min(os.sched_getaffinity(0))
        os.sched_setaffinity(0, {cpu})
        where = f"pinned to CPU {cpu}"
    except (AttributeError, OSError):
        where = "not pinned"
    print(f"query benchmark ({where}); Dask runs the stages on its local threads inside this process")
    if args.index:
        for path in args.index:
            run_index(path, args.queries, args.alpha, max(1, args.rounds), args.truth, not args.no_peer)
        return
    work = args.work or tempfile.gettempdir()
    for n in args.sizes:
        run_size(n, args.queries, args.alpha, work, max(1, args.rounds))
    if args.million:
        run_million(1_000_000, args.alpha, work)


if __name__ == "__main__":
    main()
