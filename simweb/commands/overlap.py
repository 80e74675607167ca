"""`simweb overlap CRAWL_A CRAWL_B`: how much of each crawl the other holds, and their relative size.

    simweb overlap A B [--sample 1000] [--seed 0] [--threshold 0.8] [--k 10] [--confidence 0.95] [--json]

A and B are ingested crawl folders (the output of `simweb ingest`) or index folders (`simweb
build`), whose crawl is read.
The lecture notes' capture–recapture estimate (Bharat and Broder's sizes of search engines):
--sample pages are drawn at random from each crawl (seeded by --seed), and each is looked
for in the other crawl as a near-duplicate — the same K-word shingles and sketches of 200
min-hashes as `simweb dedup`, resemblance at least --threshold — so a copy under another address
or with small edits counts. Reported: x, the fraction of A's pages found in B; y, the fraction
of B's pages found in A; each with its Wilson score interval (finite-population corrected: a
sample of every page is exact); and the ratio |A|/|B| = y/x they imply, whose interval takes
both fractions at 1 − (1 − confidence)/2 (Bonferroni), next to the ratio of the counts of pages
with words (page_count_ratio in --json). Pages without words are not compared (counted).
--json prints the report, with every sampled page and the URL of its near-duplicate, as one
JSON object.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import sys
from typing import TextIO

#: Defaults shown in --help; the near-duplicate test's are those of `simweb dedup`.
DEFAULT_SAMPLE = 1000


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "overlap",
        help="estimate how much two crawls overlap and their relative size (capture–recapture, near-duplicates)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("crawl_a", metavar="CRAWL_A", help="an ingested crawl folder (`simweb ingest … --out DIR`)")
    parser.add_argument("crawl_b", metavar="CRAWL_B", help="another ingested crawl folder")
    parser.add_argument("--sample", type=int, default=DEFAULT_SAMPLE,
                        help=f"pages sampled from each crawl (default {DEFAULT_SAMPLE}; all when a crawl has fewer)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the samples (default 0)")
    parser.add_argument("--threshold", type=float, default=None,
                        help="resemblance at or above which a page counts as present (default: dedup's, 0.8)")
    parser.add_argument("--k", type=int, default=None, help="words per shingle (default: dedup's, 10)")
    parser.add_argument("--confidence", type=float, default=0.95, help="confidence level of the intervals (default 0.95)")
    parser.add_argument("--json", action="store_true", help="print the report as one JSON object")
    parser.set_defaults(func=run)


def _fail(message: str) -> int:
    print(f"simweb overlap: {message}", file=sys.stderr)
    return 2


def crawl_folder_problem(path: str, name: str) -> str | None:
    """Why ``path`` cannot be a crawl folder, found before reading it, or None."""
    if "://" in path:
        return None  # a remote folder is checked when it is read
    if not os.path.isdir(path):
        what = "is a file" if os.path.exists(path) else "does not exist"
        return f"{name} {path} {what}; expected an ingested crawl folder (the --out folder of `simweb ingest`)"
    return None


def run(args: argparse.Namespace) -> int:
    for path, name in ((args.crawl_a, "CRAWL_A"), (args.crawl_b, "CRAWL_B")):
        problem = crawl_folder_problem(path, name)
        if problem:
            return _fail(problem)
    from simweb.tasks.layout import crawl_folder_of

    # An index folder (`simweb build --out`) is read through the crawl it keeps.
    args.crawl_a, args.crawl_b = map(crawl_folder_of, (args.crawl_a, args.crawl_b))
    from simweb.tasks.dedup import DedupParams
    from simweb.tasks.overlap import OverlapParams, estimate_crawl_overlap

    try:
        defaults = DedupParams()
        dedup = DedupParams(k=defaults.k if args.k is None else args.k,
                            threshold=defaults.threshold if args.threshold is None else args.threshold)
        params = OverlapParams(sample=args.sample, seed=args.seed, confidence=args.confidence, dedup=dedup)
    except ValueError as err:
        return _fail(str(err))
    try:
        report = estimate_crawl_overlap(args.crawl_a, args.crawl_b, params)
    except (FileNotFoundError, ValueError) as err:
        return _fail(str(err).splitlines()[0] if str(err) else type(err).__name__)
    if args.json:
        json.dump(report.to_json(), sys.stdout, indent=1)
        print()
    else:
        print_report(report)
    return 0


def _number(value: float) -> str:
    return "∞" if value == math.inf else f"{value:.3f}"


def print_report(report, out: TextIO | None = None) -> None:
    """The two crawls side by side, then x, y and |A|/|B| with their intervals."""
    out = out or sys.stdout
    e, p = report.estimate, report.params
    d = p.dedup
    print(f"crawl overlap (k = {d.k} word shingles, {d.sketch.num_perm} min-hashes, resemblance >= {d.threshold}; "
          f"{p.confidence:.0%} Wilson intervals; sample seed {p.seed}) in {report.seconds:.1f} s", file=out)
    rows = [
        ("pages with words", f"{len(report.a.crawl.urls):,}", f"{len(report.b.crawl.urls):,}"),
        ("  pages without words (not compared)", f"{report.a.crawl.without_words:,}", f"{report.b.crawl.without_words:,}"),
        ("  URLs crawled more than once (counted once)", f"{report.a.crawl.repeated_urls:,}",
         f"{report.b.crawl.repeated_urls:,}"),
        ("pages sampled", f"{len(report.a.urls):,}", f"{len(report.b.urls):,}"),
        ("  with a near-duplicate in the other crawl", f"{report.a.found:,}", f"{report.b.found:,}"),
    ]
    width = max(len(r[0]) for r in rows)
    print(f"  {'':<{width}}  {'A':>12}  {'B':>12}", file=out)
    for name, a, b in rows:
        print(f"  {name:<{width}}  {a:>12}  {b:>12}", file=out)
    print(f"  A = {report.a.crawl.crawl}\n  B = {report.b.crawl.crawl}\n", file=out)
    for label, f in (("A in B (x)", e.a_in_b), ("B in A (y)", e.b_in_a)):
        pages, low, high = f.pages()
        print(f"  {label}  {f.estimate:.3f} [{f.low:.3f}, {f.high:.3f}]   about {pages:,.0f} [{low:,.0f}, {high:,.0f}] "
              f"of {f.population:,} pages", file=out)
    r = e.size_ratio
    counted = len(report.a.crawl.urls) / len(report.b.crawl.urls)
    if r.defined:
        print(f"  |A|/|B| = y/x  {_number(r.estimate)} [{_number(r.low)}, {_number(r.high)}]   "
              f"(the counts of pages with words give {counted:.3f})", file=out)
    else:
        print(f"  |A|/|B| = y/x  undefined: no sampled page of either crawl has a near-duplicate in the other "
              f"(the counts of pages with words give {counted:.3f})", file=out)
