"""Bag building and exact all-pairs similarity: how fast, on a synthetic crawl built in this run.

    python -m benchmarks.bags [--pages 10000] [--links 100000] [--pairs 10000] [--seed 7]

Prints, for the fast columnar path (simweb.core.bags.Corpus) against the record-by-record
reference (simweb.core.bag_reference.reference_bags) measured in the same run:
  * fragments per second (page content/title fragments + anchor/link fragments),
  * merged bags per second (fragments → merged, weighted, normalised bags),
each "cold" (a new Corpus: interning words and stemming the vocabulary included) and "warm"
(a further strategy on the same Corpus, as in an evaluation sweep); then the same crawl as
Parquet through the bags stage (simweb.tasks.bags, Dask threads; there each link's words are also
in its source page's words, as LINKS stores offsets into them); and the time of exact all-pairs
weighted Jaccard (simweb.core.similarity.exact_pairs) for ``--pairs`` URLs against cosine and a
pair-by-pair baseline timed on a sample of pairs and extrapolated.

The crawl is generated, not downloaded: pages on topics, words drawn from a Zipf
vocabulary (each topic its own slice plus shared words and real stopwords), inlinks with a
Zipf in-degree, anchors of 1–4 words and 40 context words each side — shaped like a web
crawl's anchor windows, sized like the paper's evaluation sample.
"""
from __future__ import annotations

import argparse
import time

import numpy as np

from simweb.core.bag_reference import LinkRow, PageRow, link_fragments, page_fragments, reference_bags
from simweb.core.bags import Corpus
from simweb.core.similarity import exact_pairs, jaccard
from simweb.core.strategy import Strategy
from simweb.core.text import STOPWORDS


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


def _stage(pages: list[PageRow], links: list[LinkRow], strategy: Strategy, n_bags: int) -> None:
    """The production path: the crawl as Parquet parts, the bags stage on Dask's threaded scheduler."""
    import tempfile

    import pyarrow as pa

    from simweb.tasks import schemas
    from simweb.tasks.stages.bags import build_bags_stage
    from simweb.tasks.storage import write_parquet_atomic

    # LINKS stores an anchor and its context as word offsets into the source page's words, so
    # each link's words (left context nearest last, anchor, right context) are appended to its
    # source page's words, and a page's links go to the part holding the page.
    index = {p.url_id: i for i, p in enumerate(pages)}
    words = [list(p.words) for p in pages]
    rows: list[list[dict]] = [[] for _ in range(4)]
    for link in links:
        i = index[link.source_id]
        page_words = words[i]
        c0 = len(page_words)
        page_words += (*reversed(link.left_words), *link.anchor_words, *link.right_words)
        a0 = c0 + len(link.left_words)
        a1 = a0 + len(link.anchor_words)
        rows[i % 4].append({
            "source_url": link.source_url, "source_id": link.source_id, "target_url": link.target_url,
            "target_id": link.target_id, "anchor_start": a0, "anchor_end": a1, "context_start": c0,
            "context_end": a1 + len(link.right_words), "syntactic_left": link.syntactic_left,
            "syntactic_right": link.syntactic_right, "topical_left": link.topical_left, "topical_right": link.topical_right,
        })
    with tempfile.TemporaryDirectory(prefix="simweb-bench-bags-") as tmp:
        for k in range(4):  # four "WARC files"
            ps = pages[k::4]
            write_parquet_atomic(pa.table({
                "url": [p.url for p in ps], "url_id": pa.array([p.url_id for p in ps], pa.uint64()),
                "title": [" ".join(p.title_words) for p in ps], "title_words": [list(p.title_words) for p in ps],
                "words": words[k::4], "status": pa.array([200] * len(ps), pa.int16()),
                "content_type": ["text/html"] * len(ps), "charset": ["utf-8"] * len(ps),
                "source_file": [f"file{k}.warc.gz"] * len(ps), "record_offset": pa.array(range(len(ps)), pa.int64()),
                "record_length": pa.array([0] * len(ps), pa.int64()), "surt": [""] * len(ps),
                "timestamp": [""] * len(ps), "digest": ["-"] * len(ps),
            }, schema=schemas.PAGES), f"{tmp}/crawl/pages/part-{k}.parquet")
            write_parquet_atomic(pa.Table.from_pylist(rows[k], schema=schemas.LINKS),
                                 f"{tmp}/crawl/links/part-{k}.parquet")
        t0 = time.perf_counter()
        out = build_bags_stage(f"{tmp}/crawl", strategy, f"{tmp}/work", partitions=4, scheduler="threads")
        total = time.perf_counter() - t0
        sec = out.stats["seconds"]
        fragments = (out.stats["pages"] - out.stats["duplicate_pages"]) * 2 + out.stats["links"] - out.stats["self_links"]
        print(f"bags stage (Parquet, Dask threads, 4 parts, P=4): {total:.1f} s — fragments {sec['fragments']:.1f} s "
              f"({fragments / sec['fragments']:,.0f} fragments/s), merge {sec['merge']:.1f} s, weigh {sec['weigh']:.1f} s "
              f"({out.stats['bags'] / (sec['merge'] + sec['weigh']):,.0f} merged bags/s); {out.stats['bags']} bags "
              f"(in-memory: {n_bags})")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.bags", description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=10_000)
    parser.add_argument("--links", type=int, default=100_000)
    parser.add_argument("--pairs", type=int, default=10_000, help="URLs in the all-pairs measurement")
    parser.add_argument("--reference-links", type=int, default=10_000,
                        help="links (and pages in proportion) the slow reference is timed on")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--no-stage", dest="stage", action="store_false",
                        help="skip the Parquet + Dask bags stage measurement")
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

    # Fast path on the whole crawl: interning and stemming once (cold), then per strategy (warm).
    t0 = time.perf_counter()
    corpus = Corpus.from_rows(pages, links)
    intern_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    bags = corpus.bags(strategy)
    cold_s = time.perf_counter() - t0
    warm = Strategy(window_size=16)  # new fragments and merge, caches of the stemming reused
    t0 = time.perf_counter()
    corpus.merged(warm)
    warm_merge_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    warm_bags = corpus.bags(warm)
    warm_s = warm_merge_s + time.perf_counter() - t0
    t0 = time.perf_counter()
    corpus.bags(Strategy(window_size=16, frequency="sqrt"))
    reweigh_s = time.perf_counter() - t0
    n_fast_fragments = (corpus.stats.pages - corpus.stats.duplicate_pages) * 2 + (corpus.stats.links - corpus.stats.self_links)
    cold_total = intern_s + cold_s
    print(f"fragments/s   reference {ref_frag_rate:>10,.0f}   fast cold {n_fast_fragments / cold_total:>10,.0f} "
          f"({n_fast_fragments / cold_total / ref_frag_rate:.1f}x; incl. interning {intern_s:.1f} s and stemming)   "
          f"fast warm {n_fast_fragments / warm_merge_s:>10,.0f} ({n_fast_fragments / warm_merge_s / ref_frag_rate:.0f}x)")
    print(f"merged bags/s reference {ref_bag_rate:>10,.0f}   fast cold {len(bags) / cold_total:>10,.0f} "
          f"({len(bags) / cold_total / ref_bag_rate:.1f}x)   fast warm {len(warm_bags) / warm_s:>10,.0f} "
          f"({len(warm_bags) / warm_s / ref_bag_rate:.0f}x)   [{len(bags)} bags, {bags.csr.nnz:,} entries]")
    print(f"a further strategy on the same corpus: new window {warm_s:.2f} s, re-weighting only {reweigh_s:.2f} s")

    if args.stage:
        _stage(pages, links, strategy, len(bags))

    # All pairs on --pairs URLs with the most terms (the evaluation's sample is of linked pages).
    n = min(args.pairs, len(bags))
    sample = bags.url_ids[np.argsort(-np.diff(bags.csr.indptr), kind="stable")[:n]]
    sub = bags.select(sample.tolist())
    t0 = time.perf_counter()
    sims = exact_pairs(sub, "jaccard")
    jac_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    exact_pairs(sub, "cosine")
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
