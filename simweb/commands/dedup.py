"""`simweb dedup --crawl DIR`: near-duplicate pages and mirrored hosts of an ingested crawl.

    simweb dedup --crawl data [--threshold 0.8] [--k 10] [--show 10] [--out REPORT]

Each page's text (title and words) becomes K-word shingles, then a min-hash sketch of 200;
pages whose sketches agree on at least the threshold are near-duplicates, joined into
clusters; host pairs sharing paths or near-duplicate pages are mirror candidates, validated
on up to 20 sampled paths (lecture notes, "Duplicates and mirrors"). Prints the counts, the
largest clusters and the mirror pairs; --out writes REPORT/duplicates.parquet (url, url_id,
representative_url, representative_id, cluster_size).
"""
from __future__ import annotations

import argparse
import os
import sys
from typing import TextIO


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "dedup",
        help="find near-duplicate pages (shingles, min-hash sketches) and mirrored hosts in a crawl",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--crawl", required=True, metavar="DIR", help="an ingested crawl folder (`simweb ingest`) or an index folder (`simweb build`)")
    parser.add_argument("--threshold", type=float, default=0.8,
                        help="resemblance at or above which two pages are near-duplicates (default 0.8)")
    parser.add_argument("--k", type=int, default=10, help="words per shingle (default 10)")
    parser.add_argument("--show", type=int, default=10, help="clusters and mirror pairs to list (default 10)")
    parser.add_argument("--out", default=None, metavar="REPORT",
                        help="also write REPORT/duplicates.parquet, one row per page of a cluster")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if "://" not in args.crawl and not os.path.isdir(args.crawl):
        print(f"simweb dedup: --crawl {args.crawl} is not a folder; pass the output folder of `simweb ingest`",
              file=sys.stderr)
        return 2
    if args.show < 0:
        print(f"simweb dedup: --show: expected 0 or more, got {args.show}", file=sys.stderr)
        return 2
    from simweb.tasks.dedup import DedupParams, find_duplicates, write_clusters
    from simweb.tasks.layout import crawl_folder_of

    args.crawl = crawl_folder_of(args.crawl)  # an index folder (`simweb build --out`): the crawl it keeps

    try:
        report = find_duplicates(args.crawl, DedupParams(k=args.k, threshold=args.threshold))
    except (FileNotFoundError, ValueError) as err:
        print(f"simweb dedup: {err}", file=sys.stderr)
        return 1
    print_report(report, args.show)
    if args.out:
        print(f"\nclusters table: {write_clusters(report, args.out)}")
    return 0


def print_report(report, show: int, out: TextIO | None = None) -> None:
    """Counts first, then the largest clusters and the mirror pairs (validated ones first)."""
    out = out or sys.stdout  # looked up per call: the standard output may have been replaced since import
    c, p = report.counts, report.params
    print(f"near-duplicates (k = {p.k} word shingles, {p.sketch.num_perm} min-hashes, resemblance >= "
          f"{p.threshold}) in {report.seconds:.1f} s", file=out)
    rows = [
        ("pages", c["pages"]),
        ("  URLs crawled more than once (counted once)", c["repeated_urls"]),
        ("  pages without words (not compared)", c["pages_without_shingles"]),
        ("near-duplicate pairs found", c["duplicate_pairs"]),
        ("duplicate clusters", c["clusters"]),
        ("pages in clusters", c["pages_in_clusters"]),
        ("duplicates (pages beyond one per cluster)", c["duplicates"]),
        ("mirror candidates (host pairs)", c["mirror_candidates"]),
        ("mirrors (validated host pairs)", c["mirrors"]),
        ("  paths too common to be evidence", c["common_paths_ignored"]),
    ]
    width = max(len(name) for name, _ in rows)
    for name, value in rows:
        print(f"  {name:<{width}}  {value:>9,}", file=out)
    clusters = report.cluster_urls()
    if clusters and show:
        print(f"\nlargest clusters ({min(show, len(clusters))} of {len(clusters)}), representative first:", file=out)
        for group in clusters[:show]:
            print(f"  {len(group):>5} pages  {group[0]}", file=out)
            for url in group[1:4]:
                print(f"               {url}", file=out)
            if len(group) > 4:
                print(f"               ... and {len(group) - 4} more", file=out)
    pairs = report.mirrors.pairs
    if pairs and show:
        print(f"\nmirror candidates ({min(show, len(pairs))} of {len(pairs)}):", file=out)
        for m in pairs[:show]:
            verdict = "mirror" if m.is_mirror else "not a mirror"
            print(f"  {verdict:<12}  {m.host_a}  {m.host_b}  shared paths {m.shared_paths}, near-duplicate pages "
                  f"{m.duplicate_pages}, sampled paths matching {m.matched}/{m.sampled}", file=out)
