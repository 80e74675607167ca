"""The evaluation: exact pair similarities and Γ on a 5,000-URL sample, directory parsing, the sweep.

    python -m benchmarks.evaluate [--urls 5000] [--crawl DIR --directory FILE] [--grid paper]
    python -m benchmarks.evaluate --blockwise 5000 20000 50000

1. A 5,000-URL sample of a synthetic crawl (benchmarks.bags.synthetic_crawl, shaped like a web
   crawl's anchor windows) with a three-level class per URL: seconds for its bags, its exact
   all-pairs weighted Jaccard (25 million pairs) and the Γ pair counts of every source
   (simweb.core.gamma.pair_counts: one sort per source, then linear passes), against two baselines
   measured in the same run — a per-source numpy loop (np.searchsorted per source and level
   pair, what one writes first) on the same matrix, and the O(n²)-per-source brute force
   (simweb.core.gamma.pair_counts_bruteforce) on a small slice, in pairs per second.
2. Directory parsing: MB/s of the streaming ODP RDF parser on a generated dump.
3. With ``--crawl`` (a `simweb ingest` output) and ``--directory``: the whole strategy sweep
   in this process — seconds per strategy (bags, similarity, Γ) and for the whole grid.
   ``--debdocs DIR`` takes the crawl and directory from a `simweb corpus debdocs` folder,
   ingesting its WARC files into DIR/crawl first if needed.
4. With ``--blockwise N …``: the evaluation's way at the paper's sample size (51,469 URLs) — the
   exact similarity a block of source rows at a time (simweb.core.similarity.ExactRows) and the
   Γ pair counts block by block (simweb.core.gamma.pair_counts_rows), never an n × n matrix —
   for samples of N URLs of the synthetic crawl, each in a fresh process: seconds for the bags,
   the similarity and the counts, and the process's peak RSS (a dense matrix of 50,000 URLs
   would need 20 GB). The sample's bags are made in a child process and handed over in a file,
   as the evaluation reads them from the bags stage: the synthetic crawl held in memory to make
   them is the benchmark's, not the evaluation's.
"""
from __future__ import annotations

import argparse
import io
import math
import os
import shutil
import tempfile
import time

import numpy as np

from simweb.core.bags import Corpus
from simweb.core.directory import iter_odp_rdf
from simweb.core.gamma import class_codes, familial_distances, pair_counts, pair_counts_bruteforce, tie_round
from simweb.core.similarity import exact_pairs
from simweb.core.strategy import Strategy


def per_source_baseline(similarity: np.ndarray, codes: np.ndarray) -> tuple[int, int]:
    """Γ pair counts the straightforward way: for each source, sort each level's similarities
    and count with np.searchsorted (concordant, discordant summed over every level pair), with
    the same tie rule (simweb.core.gamma.tie_round)."""
    n, depth = codes.shape
    concordant = discordant = 0
    for s in range(n):
        levels = familial_distances(codes, np.array([s]))[0]
        levels[s] = -1
        row = tie_round(similarity[s])
        groups = [np.sort(row[levels == k]) for k in range(depth + 1)]
        for b in range(1, depth + 1):
            lower = groups[b]
            for a in range(b):
                upper = groups[a]
                concordant += int(np.searchsorted(lower, upper, side="left").sum())
                discordant += int((lower.size - np.searchsorted(lower, upper, side="right")).sum())
    return concordant, discordant


def _best(run, repeat: int = 3) -> tuple[float, float]:
    """The least wall-clock and CPU seconds of ``repeat`` runs."""
    wall = cpu = math.inf
    for _ in range(repeat):
        w0, c0 = time.perf_counter(), time.process_time()
        run()
        wall, cpu = min(wall, time.perf_counter() - w0), min(cpu, time.process_time() - c0)
    return wall, cpu


def synthetic_sample(corpus: Corpus, n_urls: int, seed: int) -> tuple[Strategy, np.ndarray, np.ndarray]:
    """The Section 7 strategy, a sample of ``n_urls`` URL ids with a bag in ``corpus`` and a
    random three-level class code for each (16 × 8 × 6 classes), deterministic given ``seed``."""
    strategy = Strategy()
    rng = np.random.default_rng(seed)
    full = corpus.bags(strategy)
    ids = full.url_ids[np.sort(rng.choice(len(full), size=min(n_urls, len(full)), replace=False))]
    classes = [(f"t{rng.integers(16)}", f"s{rng.integers(8)}", f"c{rng.integers(6)}") for _ in range(ids.size)]
    return strategy, ids, class_codes([(a, a + b, a + b + c) for a, b, c in classes])


def sample_benchmark(n_urls: int, seed: int) -> None:
    from benchmarks.bags import synthetic_crawl

    t0 = time.perf_counter()
    pages, links = synthetic_crawl(max(n_urls, 6000), 12 * max(n_urls, 6000), seed=seed)
    corpus = Corpus.from_rows(pages, links)
    print(f"synthetic crawl: {len(pages):,} pages, {len(links):,} links ({time.perf_counter() - t0:.1f} s to generate)")
    strategy, ids, codes = synthetic_sample(corpus, n_urls, seed)
    n = ids.size

    t0 = time.perf_counter()
    bags = corpus.bags(strategy, targets=ids.tolist())
    bags_s = time.perf_counter() - t0
    sim_s, sim_cpu = _best(lambda: exact_pairs(bags, strategy.metric, ids=ids.tolist()), repeat=1)
    sims = exact_pairs(bags, strategy.metric, ids=ids.tolist())
    # Best of three runs each for pair_counts and its baseline, in wall-clock and in CPU time
    # of this process: the machine is shared, and CPU time is what other work cannot inflate.
    gamma_s, gamma_cpu = _best(lambda: pair_counts(sims, codes))
    counts = pair_counts(sims, codes)
    pairs = n * (n - 1)
    judged = int(counts.concordant.sum() + counts.discordant.sum())
    print(f"sample of {n:,} URLs ({strategy.label}):")
    print(f"  bags                 {bags_s:8.2f} s   ({bags.csr.nnz:,} bag entries)")
    print(f"  exact all pairs      {sim_s:8.2f} s   ({sim_cpu:.2f} s CPU; {pairs // 2:,} pairs, "
          f"{pairs / 2 / sim_s:,.0f} pairs/s)")
    print(f"  Γ pair counts        {gamma_s:8.2f} s   ({gamma_cpu:.2f} s CPU; {judged:,} ordered document pairs "
          f"judged over {n:,} sources)")

    base_s, base_cpu = _best(lambda: per_source_baseline(sims, codes))
    if per_source_baseline(sims, codes) != (int(counts.concordant.sum()), int(counts.discordant.sum())):
        raise SystemExit("the per-source baseline disagrees with pair_counts: a bug")
    print(f"  Γ pair counts, best of 3: {gamma_s:.2f} s wall, {gamma_cpu:.2f} s CPU;  baseline per-source numpy "
          f"loop: {base_s:.2f} s wall, {base_cpu:.2f} s CPU  → ratio {base_s / gamma_s:.2f}x wall, "
          f"{base_cpu / gamma_cpu:.2f}x CPU")

    m = 120
    t0 = time.perf_counter()
    pair_counts_bruteforce(sims[:m, :m], codes[:m])
    brute_s = time.perf_counter() - t0
    brute_rate = m * (m - 1) * (m - 2) / brute_s  # (source, d1, d2) triples examined
    fast_rate = n * (n - 1) * (n - 2) / gamma_s
    print(f"  baseline: brute force on {m} URLs {brute_rate:,.0f} triples/s vs pair_counts {fast_rate:,.0f} "
          f"triples/s ({fast_rate / brute_rate:,.0f}x)")


def directory_benchmark(pages: int = 60_000) -> None:
    chunks = [b'<?xml version="1.0" encoding="UTF-8"?>\n<RDF xmlns:r="http://www.w3.org/TR/RDF/" '
              b'xmlns:d="http://purl.org/dc/elements/1.0/" xmlns="http://dmoz.org/rdf/">\n']
    for i in range(pages):
        topic = f"Top/Arts{i % 17}/Sub{i % 29}/Leaf{i % 31}/Deeper"
        chunks.append(
            f'<Topic r:id="{topic}"><catid>{i}</catid><link r:resource="http://site{i}.example/page.html"/></Topic>\n'
            f'<ExternalPage about="http://site{i}.example/page.html"><d:Title>Site {i}</d:Title>'
            f"<d:Description>{'A description of a listed site, as editors wrote them. ' * 3}</d:Description>"
            f"<topic>{topic}</topic></ExternalPage>\n".encode()
        )
    chunks.append(b"</RDF>\n")
    data = b"".join(chunks)
    t0 = time.perf_counter()
    listings = sum(1 for _ in iter_odp_rdf(io.BytesIO(data)))
    seconds = time.perf_counter() - t0
    print(f"directory parse: {len(data) / 2**20:.1f} MiB, {listings:,} listings in {seconds:.2f} s "
          f"= {len(data) / 2**20 / seconds:.1f} MiB/s (a 2 GB content.rdf.u8 ≈ {2048 / (len(data) / 2**20 / seconds) / 60:.1f} min)")


def sweep_benchmark(crawl: str, directory: str, grid: str, directory_pages: str | None, max_pages: int | None) -> None:
    from simweb.tasks.evaluate import run_evaluation
    from simweb.tasks.stages.eval_sample import SampleParams

    out = tempfile.mkdtemp(prefix="simweb-bench-eval-")
    try:
        t0 = time.perf_counter()
        summary = run_evaluation(crawl, directory, out, grid=grid, directory_pages=directory_pages,
                                 sample_params=SampleParams(max_pages_per_class=max_pages))
        total = time.perf_counter() - t0
        for line in summary["sample"]:
            print(f"  {line}")
        rows = summary["sibling_gamma"]
        for r in rows:
            print(f"  {r['strategy']:<42} sibling-Γ {r['value']:.3f}  {r['seconds']:6.2f} s")
        per = [r["seconds"] for r in rows if r["seconds"] is not None]
        print(f"sweep ({grid} grid): {len(rows)} strategies, {sum(per):.1f} s in strategies "
              f"(median {np.median(per):.2f} s, max {max(per):.2f} s), {total:.1f} s in all "
              "(sample, corpus, strategies, bootstrap, figures, report)")
    finally:
        shutil.rmtree(out, ignore_errors=True)


def blockwise_sample(n_urls: int, seed: int, path: str) -> None:
    """Write a sample of ``n_urls`` URLs of the synthetic crawl — their bags and class codes — to
    ``path`` (.npz), as the evaluation reads a sample's bags from the bags stage: the crawl
    itself is never in the process that measures."""
    from benchmarks.bags import synthetic_crawl

    t0 = time.perf_counter()
    pages, links = synthetic_crawl(n_urls + n_urls // 5, 12 * (n_urls + n_urls // 5), seed=seed)
    corpus = Corpus.from_rows(pages, links)
    strategy, ids, codes = synthetic_sample(corpus, n_urls, seed)
    bags = corpus.bags(strategy, targets=ids.tolist())
    csr = bags.csr.tocsr()
    np.savez(path, url_ids=bags.url_ids, urls=np.array(bags.urls), vocabulary=np.array(bags.vocabulary),
             data=csr.data, indices=csr.indices, indptr=csr.indptr, shape=np.array(csr.shape), ids=ids, codes=codes,
             seconds=np.array(time.perf_counter() - t0))


def blockwise_benchmark(n_urls: int, seed: int) -> None:
    """One sample size of the block-by-block evaluation, in this process (see the docstring);
    the sample is made in a child process, so the peak RSS is the evaluation's own."""
    import resource
    import subprocess
    import sys

    import scipy.sparse as sp

    from simweb.core.bag_matrix import BagMatrix
    from simweb.core.gamma import SIBLING_GAMMA, PairCounts, gammas, pair_counts_rows
    from simweb.core.similarity import ExactRows
    from simweb.tasks.stages.eval_strategies import BLOCK_CELLS  # the blocks the evaluation cuts

    with tempfile.TemporaryDirectory(prefix="simweb-bench-eval-") as tmp:
        path = os.path.join(tmp, "sample.npz")
        subprocess.run([sys.executable, "-m", "benchmarks.evaluate", "--blockwise-sample", str(n_urls),
                        "--seed", str(seed), "--sample-file", path], check=True)
        with np.load(path) as saved:
            csr = sp.csr_matrix((saved["data"], saved["indices"], saved["indptr"]), shape=tuple(saved["shape"]))
            bags = BagMatrix(saved["url_ids"], tuple(saved["urls"].tolist()), tuple(saved["vocabulary"].tolist()), csr)
            ids, codes, bags_s = saved["ids"], saved["codes"], float(saved["seconds"])
    strategy = Strategy()
    n = ids.size
    loaded = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / (1 << 20)  # KiB → GiB
    similarity = ExactRows(bags, strategy.metric, ids=ids.tolist())
    sim_s = count_s = 0.0
    counted = []
    step = max(1, BLOCK_CELLS // n)
    for start in range(0, n, step):
        rows = np.arange(start, min(n, start + step))
        t1 = time.perf_counter()
        dense = similarity[rows]
        t2 = time.perf_counter()
        counted.append(pair_counts_rows(dense, codes, rows))
        sim_s += t2 - t1
        count_s += time.perf_counter() - t2
    counts = PairCounts.stack(counted, codes.shape[1])
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / (1 << 20)
    sibling = gammas(counts)[SIBLING_GAMMA]
    print(f"  {n:>7,} URLs  sample's bags {bags_s:7.1f} s (a child process)   exact similarity {sim_s:8.1f} s   "
          f"Γ counts {count_s:8.1f} s   peak RSS {peak:5.2f} GiB ({loaded:.2f} GiB with the sample's bags loaded)   "
          f"(sibling-Γ {sibling:.3f}; a dense matrix: {n * n * 8 / (1 << 30):.1f} GiB)", flush=True)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.evaluate", description=__doc__.splitlines()[0])
    parser.add_argument("--urls", type=int, default=5000, help="URLs in the exact-similarity sample")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--crawl", default=None, help="an ingested crawl for the sweep")
    parser.add_argument("--directory", default=None, help="the topic directory for the sweep")
    parser.add_argument("--directory-pages", default=None)
    parser.add_argument("--debdocs", default=None, help="a `simweb corpus debdocs` folder for the sweep")
    parser.add_argument("--grid", default="paper", choices=("paper", "quick"))
    parser.add_argument("--max-pages-per-class", type=int, default=None)
    parser.add_argument("--blockwise", type=int, nargs="+", default=None, metavar="N",
                        help="only the block-by-block evaluation, for samples of these sizes (each in a fresh process)")
    parser.add_argument("--blockwise-one", type=int, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--blockwise-sample", type=int, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--sample-file", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.blockwise_sample:
        blockwise_sample(args.blockwise_sample, args.seed, args.sample_file)
        return
    if args.blockwise_one:
        blockwise_benchmark(args.blockwise_one, args.seed)
        return
    if args.blockwise:
        import subprocess
        import sys

        print("the evaluation block by block (ExactRows, pair_counts_rows), a fresh process per sample size:")
        for n in args.blockwise:
            subprocess.run([sys.executable, "-m", "benchmarks.evaluate", "--blockwise-one", str(n),
                            "--seed", str(args.seed)], check=True)
        return

    sample_benchmark(args.urls, args.seed)
    directory_benchmark()
    crawl, directory, pages = args.crawl, args.directory, args.directory_pages
    if args.debdocs:
        crawl = os.path.join(args.debdocs, "crawl")
        directory = os.path.join(args.debdocs, "directory.rdf")
        pages = os.path.join(args.debdocs, "directory_pages.txt")
        if not os.path.isdir(os.path.join(crawl, "pages")):
            from simweb.tasks.ingest.files import ingest_files
            from simweb.tasks.sources import list_archive_files

            t0 = time.perf_counter()
            stats = ingest_files(list_archive_files(os.path.join(args.debdocs, "warc")), crawl)
            print(f"ingested DebDocs in {time.perf_counter() - t0:.1f} s: {stats.pages_written:,} pages, "
                  f"{stats.links_written:,} links")
    if crawl and directory:
        sweep_benchmark(crawl, directory, args.grid, pages, args.max_pages_per_class)
    else:
        print("sweep: skipped (give --debdocs DIR from `simweb corpus debdocs --out DIR`, or --crawl and --directory)")


if __name__ == "__main__":
    main()
