"""Bag building and exact all-pairs similarity: how fast, on a synthetic crawl built in this run.

    python -m benchmarks.bags [--pages 10000] [--links 100000] [--pairs 10000] [--seed 7]

Prints, for the fast columnar path (simcore.bags.Corpus) against the record-by-record
reference (simcore.bags.reference_bags) measured in the same run:
  * fragments per second (page content/title fragments + anchor/link fragments),
  * merged bags per second (fragments → merged, weighted, normalised bags),
and the time of exact all-pairs weighted Jaccard (simcore.similarity.all_pairs) for
``--pairs`` URLs against the cosine sparse product and a pair-by-pair baseline on a sample.

The crawl is generated, not downloaded: pages on topics, words drawn from a Zipf
vocabulary (each topic its own slice plus shared words and real stopwords), inlinks with a
Zipf in-degree, anchors of 1–4 words and 40 context words each side — shaped like a web
crawl's anchor windows, sized like the paper's evaluation sample.
"""
from __future__ import annotations

import argparse
import time

import numpy as np

from simcore.bags import Corpus, LinkRow, PageRow, link_fragments, page_fragments, reference_bags
from simcore.similarity import all_pairs, jaccard
from simcore.strategy import Strategy
from simcore.text import STOPWORDS


def synthetic_crawl(n_pages: int, n_links: int, *, seed: int = 7, topics: int = 50,
                    vocabulary: int = 40_000) -> tuple[list[PageRow], list[LinkRow]]:
    """A reproducible crawl: ``n_pages`` pages and ``n_links`` links among them (see module doc)."""
    rng = np.random.default_rng(seed)
    letters = np.array(list("abcdefghijklmnopqrstuvwxyz"))
    lengths = rng.integers(3, 10, size=vocabulary)
    chars = rng.choice(letters, size=int(lengths.sum()))
    text = "".join(chars.tolist())
    ends = np.cumsum(lengths).tolist()
    words = sorted({text[a:b] for a, b in zip([0, *ends[:-1]], ends)} - STOPWORDS)
    words_arr = np.array(words, dtype=object)
    stop_arr = np.array(sorted(STOPWORDS), dtype=object)
    zipf_cdf = np.cumsum(1.0 / np.arange(1, len(words) + 1))
    zipf_cdf /= zipf_cdf[-1]
    topic_of = rng.integers(0, topics, size=n_pages)
    slice_len = len(words) // topics

    def texts(topic: np.ndarray, counts: np.ndarray) -> list[tuple[str, ...]]:
        """One word sequence per (topic, count): half topic words, half shared, 35% stopwords."""
        k = int(counts.sum())
        shared = np.minimum(np.searchsorted(zipf_cdf, rng.random(k)), len(words) - 1)
        local = np.repeat(topic, counts) * slice_len + (rng.zipf(1.3, size=k) % slice_len)
        out = words_arr[np.where(rng.random(k) < 0.5, local, shared)]
        stops = rng.random(k) < 0.35
        out[stops] = stop_arr[rng.integers(0, len(stop_arr), size=int(stops.sum()))]
        flat = out.tolist()
        ends = np.cumsum(counts).tolist()
        return [tuple(flat[a:b]) for a, b in zip([0, *ends[:-1]], ends)]

    urls = [f"http://site{i % 997}.example/page{i}" for i in range(n_pages)]
    ids = (np.arange(1, n_pages + 1, dtype=np.uint64) * np.uint64(0x9E3779B97F4A7C15)).tolist()
    titles = texts(topic_of, np.full(n_pages, 4))
    bodies = texts(topic_of, rng.integers(50, 400, size=n_pages))
    pages = [PageRow(urls[i], ids[i], titles[i], bodies[i]) for i in range(n_pages)]
    targets = rng.permutation(n_pages)[rng.zipf(1.6, size=n_links) % n_pages]
    sources = rng.integers(0, n_pages, size=n_links)
    link_topics = topic_of[targets]
    anchors = texts(link_topics, rng.integers(1, 5, size=n_links))
    lefts = texts(link_topics, np.full(n_links, 40))
    rights = texts(link_topics, np.full(n_links, 40))
    regions = rng.integers(0, 6, size=(n_links, 2)).tolist(), rng.integers(5, 35, size=(n_links, 2)).tolist()
    links = [
        LinkRow(urls[s], ids[s], urls[t], ids[t], anchors[i], lefts[i], rights[i],
                regions[0][i][0], regions[0][i][1], regions[1][i][0], regions[1][i][1])
        for i, (s, t) in enumerate(zip(sources.tolist(), targets.tolist()))
    ]
    return pages, links


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.bags", description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=10_000)
    parser.add_argument("--links", type=int, default=100_000)
    parser.add_argument("--pairs", type=int, default=10_000, help="URLs in the all-pairs measurement")
    parser.add_argument("--reference-links", type=int, default=10_000,
                        help="links (and pages in proportion) the slow reference is timed on")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args(argv)
    strategy = Strategy()  # anchor W=32 + content, STEM, distance, NMDF: the paper's Section 7 choice

    t0 = time.perf_counter()
    pages, links = synthetic_crawl(args.pages, args.links, seed=args.seed)
    print(f"synthetic crawl: {len(pages)} pages, {len(links)} links ({time.perf_counter() - t0:.1f} s to generate)")
    print(f"strategy: {strategy.label}")

    # Reference: record by record, on a slice (it is slow), rates extrapolate linearly.
    n_ref = min(args.reference_links, len(links))
    ref_pages = pages[: max(1, len(pages) * n_ref // max(1, len(links)))]
    ref_links = links[:n_ref]
    t0 = time.perf_counter()
    n_fragments = sum(len(page_fragments(p, strategy)) for p in ref_pages) + sum(
        len(link_fragments(l, strategy)) for l in ref_links)
    ref_frag_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    ref = reference_bags(ref_pages, ref_links, strategy)
    ref_bags_s = time.perf_counter() - t0
    ref_frag_rate = n_fragments / ref_frag_s
    ref_bag_rate = len(ref) / ref_bags_s

    # Fast path on the whole crawl: interning once, then per strategy.
    t0 = time.perf_counter()
    corpus = Corpus.from_rows(pages, links)
    intern_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    bags = corpus.bags(strategy)
    first_s = time.perf_counter() - t0
    reweigh = Strategy(frequency="sqrt")
    t0 = time.perf_counter()
    corpus.bags(reweigh)
    reweigh_s = time.perf_counter() - t0
    other = Strategy(window_size=8)
    t0 = time.perf_counter()
    corpus.bags(other)
    other_s = time.perf_counter() - t0
    n_fast_fragments = corpus.stats.pages - corpus.stats.duplicate_pages + (corpus.stats.links - corpus.stats.self_links)
    fast_frag_rate = n_fast_fragments / (first_s + intern_s)
    fast_bag_rate = len(bags) / (first_s + intern_s)
    print(f"fragments/s   reference {ref_frag_rate:>12,.0f}   fast {fast_frag_rate:>12,.0f}   "
          f"ratio {fast_frag_rate / ref_frag_rate:.1f}x   (fast includes interning {intern_s:.1f} s)")
    print(f"merged bags/s reference {ref_bag_rate:>12,.0f}   fast {fast_bag_rate:>12,.0f}   "
          f"ratio {fast_bag_rate / ref_bag_rate:.1f}x   ({len(bags)} bags, {bags.csr.nnz:,} entries)")
    print(f"per further strategy on the same corpus: W=8 {other_s:.2f} s, sqrt re-weighting only {reweigh_s:.2f} s")

    # All pairs on --pairs URLs with the most terms (the evaluation's sample is of linked pages).
    n = min(args.pairs, len(bags))
    sample = bags.url_ids[np.argsort(-np.diff(bags.csr.indptr), kind="stable")[:n]]
    sub = bags.select(sample.tolist())
    t0 = time.perf_counter()
    sims = all_pairs(sub, "jaccard")
    jac_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    all_pairs(sub, "cosine")
    cos_s = time.perf_counter() - t0
    # Baseline: pair by pair with dict bags on a random sample of pairs, extrapolated.
    rng = np.random.default_rng(args.seed)
    dicts = [sub.row(int(u)) for u in sub.url_ids]
    pairs = rng.integers(0, n, size=(2000, 2))
    t0 = time.perf_counter()
    for i, j in pairs.tolist():
        jaccard(dicts[i], dicts[j])
    per_pair = (time.perf_counter() - t0) / len(pairs)
    brute_s = per_pair * n * (n - 1) / 2
    orthogonal = float((sims == 0).mean())
    print(f"all pairs, {n} URLs ({n * (n - 1) // 2:,} pairs, {sub.csr.nnz / n:.0f} terms per bag, "
          f"{orthogonal:.1%} orthogonal): jaccard {jac_s:.1f} s, cosine {cos_s:.1f} s, "
          f"pair-by-pair baseline ≈ {brute_s:.0f} s (extrapolated), ratio {brute_s / jac_s:.0f}x")


if __name__ == "__main__":
    main()
