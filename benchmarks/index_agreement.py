"""How well the min-hash index agrees with exact similarity, ICWS against DartMinHash (Section 6.2).

    python -m benchmarks.index_agreement [--crawl DIR] [--directory FILE] [--seeds 10] [--m 80] [--alpha 0.15]

The measures of ``simweb evaluate``'s index agreement (simweb.core.index_agreement, which signs
with ICWS), computed here for both samplers on the same bags: every pair of
bags of the default strategy (Section 7's) is scored exactly (weighted Jaccard) and by the
fraction of equal signature positions; PROCESSQUERY at threshold α over the inverted index
retrieves pairs, judged against the pairs whose exact Jaccard is ≥ α (recall, precision); MAE
and RMSE of the estimate over all pairs, and over the pairs with exact Jaccard ≥ α. Each sampler
runs with ``--seeds`` seeds; the table gives mean ± standard deviation over seeds, and the
difference DartMinHash − ICWS with its standard error.

``--crawl`` is an ingested crawl (``simweb ingest … --out DIR``); without it the shared WARC
fixtures (../shared/fixtures/warc) are ingested into a temporary folder. ``--directory`` (an ODP
RDF dump or url<TAB>category file) restricts the pairs to the URLs it lists, as the evaluation
does (DebDocs: its ``directory.tsv``); without it every bag takes part.
"""
from __future__ import annotations

import argparse
import math
import tempfile
from pathlib import Path

import numpy as np

ALGORITHMS = ("icws", "dart")
MEASURES = ("recall", "precision", "mae", "rmse", "mae_relevant")


def load_bags(crawl: str | None, directory: str | None):
    """The default strategy's bags of the crawl (ingesting the shared fixtures when None), and
    the rows of the URLs the directory lists (all rows without one)."""
    from simweb.core.strategy import Strategy
    from simweb.core.urls import url_id
    from simweb.tasks.crawl.corpus import load_corpus

    if crawl is None:
        from simweb.tasks.ingest.files import ingest_files

        warcs = sorted((Path(__file__).resolve().parents[2] / "shared" / "fixtures" / "warc").glob("*.warc*"))
        crawl = tempfile.mkdtemp(prefix="agreement-crawl-")
        ingest_files([str(p) for p in warcs], crawl)
    matrix = load_corpus(crawl).bags(Strategy())
    rows = np.arange(len(matrix.url_ids))
    if directory:
        from simweb.tasks.directory_file import read_directory_file

        listed = np.array(sorted({url_id(u) for u in read_directory_file(directory).classes}), dtype=np.uint64)
        rows = rows[np.isin(matrix.url_ids, listed)]
    return matrix, rows


def agreement(signatures: np.ndarray, exact: np.ndarray, alpha: float) -> dict[str, float]:
    from simweb.core.query import all_pairs as index_pairs
    from simweb.core.query import invert

    k = signatures.shape[0]
    estimate = np.empty((k, k))
    step = max(1, (1 << 22) // max(1, k * signatures.shape[1]))
    for r0 in range(0, k, step):
        estimate[r0:r0 + step] = (signatures[r0:r0 + step, None, :] == signatures[None, :, :]).mean(axis=2)
    a, b, _ = index_pairs(invert(signatures), signatures, alpha)
    retrieved = set(zip(a.tolist(), b.tolist()))
    upper = np.triu(np.ones((k, k), dtype=bool), k=1)
    relevant = set(zip(*(x.tolist() for x in np.nonzero(upper & (exact >= alpha - 1e-12)))))
    hits = len(retrieved & relevant)
    err = (estimate - exact)[upper]
    rel = (exact >= alpha - 1e-12)[upper]
    return {"recall": hits / len(relevant), "precision": hits / len(retrieved) if retrieved else math.nan,
            "mae": float(np.abs(err).mean()), "rmse": float(np.sqrt((err**2).mean())),
            "mae_relevant": float(np.abs(err[rel]).mean()), "relevant": len(relevant)}


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--crawl")
    ap.add_argument("--directory")
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--m", type=int, default=80)
    ap.add_argument("--alpha", type=float, default=0.15)
    args = ap.parse_args(argv)

    from simweb.core.minhash import MinHashParams, sign, term_hashes
    from simweb.core.similarity import exact_pairs

    matrix, rows = load_bags(args.crawl, args.directory)
    exact = exact_pairs(matrix, "jaccard", matrix.url_ids[rows])
    csr = matrix.csr[rows]
    csr.sort_indices()
    layout = (csr.indices.astype(np.int64), csr.indptr.astype(np.int64), term_hashes(matrix.vocabulary), csr.data)
    results = {alg: [agreement(sign(*layout, MinHashParams(m=args.m, seed=seed, algorithm=alg)).values, exact, args.alpha)
                     for seed in range(1, args.seeds + 1)] for alg in ALGORITHMS}
    k = len(rows)
    print(f"index agreement: {k:,} bags ({args.crawl or 'the shared WARC fixtures'}"
          f"{', listed in ' + args.directory if args.directory else ''}), {k * (k - 1) // 2:,} pairs, "
          f"{results['icws'][0]['relevant']:,} with exact Jaccard ≥ α = {args.alpha}; m = {args.m}, "
          f"seeds 1..{args.seeds}")
    print(f"  {'measure':<14}" + "".join(f"{alg:>20}" for alg in ALGORITHMS) + f"{'dart − icws':>24}")
    for measure in MEASURES:
        cells, stats = [], {}
        for alg in ALGORITHMS:
            v = np.array([r[measure] for r in results[alg]])
            stats[alg] = (v.mean(), v.std(ddof=1) if v.size > 1 else 0.0, v.size)
            cells.append(f"{v.mean():.4f} ± {stats[alg][1]:.4f}")
        diff = stats["dart"][0] - stats["icws"][0]
        se = math.sqrt(sum(s**2 / n for _, s, n in stats.values()))
        print(f"  {measure:<14}" + "".join(f"{c:>20}" for c in cells) + f"{diff:>+15.4f} ± {se:.4f}")


if __name__ == "__main__":
    main()
