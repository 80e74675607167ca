"""`simweb related URL --index INDEX`: the pages related to a URL (paper Figure 13).

Prints rank, the exact similarity each result is ranked by (with --no-rerank: the estimate it is
ranked by), the min-hash estimate, URL, title and category (when the index was built with a directory),
or with --json the same JSON document as the HTTP API's GET /api/related: schema
"simweb.related/1", documented in simweb/answers.py, JSON Schema in simweb/schemas/related-1.json.
--dedup leaves out results that nearly duplicate the query page or an earlier result (mirrored copies).
--replay-prefix adds, under each result the crawl captured, the address where a web-archive player
(pywb, a Wayback Machine) replays that capture; `simweb cdxj CRAWL` writes the index pywb needs for it.

With --measure M the answer comes from a link measure of the crawl's link graph instead of the
index (co-citation, bibliographic coupling, ECBC, SimRank, extended SimRank, PageSim, extended
PageSim; ENS paper Table 1 parameters): it needs the ingested crawl (INDEX/crawl, or --crawl);
titles and categories come from the index when --index is given.
"""
from __future__ import annotations

import argparse
import json
import sys


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "related",
        help="the pages related to a URL, from an index built by `simweb build`",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("url", metavar="URL", help="the page's URL")
    p.add_argument("--index", metavar="INDEX", help="the index folder (simweb build --out)")
    p.add_argument("--crawl", metavar="DIR",
                   help="the ingested crawl the index was built from (default INDEX/crawl); "
                        "with --measure it may replace --index")
    p.add_argument("--top", type=int, default=10, metavar="K", help="at most K results (default 10)")
    p.add_argument("--alpha", type=float, default=0.15, metavar="A",
                   help="least similarity, 0..1 (default 0.15, the paper's α)")
    p.add_argument("--rerank", action=argparse.BooleanOptionalAction, default=None,
                   help="re-rank the candidates (estimated ≥ α − 2σ) by exact weighted Jaccard and keep those ≥ α "
                        "(default); --no-rerank answers with the min-hash estimate alone (the paper's PROCESSQUERY)")
    p.add_argument("--dedup", action="store_true",
                   help="leave out near-duplicates of the query page and of earlier results")
    p.add_argument("--measure", choices=RELATED_MEASURES, metavar="M",
                   help=f"answer by a link measure instead of the index: {', '.join(RELATED_MEASURES)}")
    p.add_argument("--replay-prefix", metavar="PREFIX",
                   help="show where a web-archive player replays each crawled result: PREFIX + 14-digit timestamp "
                        "+ / + URL (pywb: http://localhost:8080/COLL/; Wayback Machine: https://web.archive.org/web/)")
    p.add_argument("--json", action="store_true", help="print JSON (schema simweb.related/1, as the HTTP API)")
    p.set_defaults(func=run)


# The names of simweb.tasks.link_related.RELATED_MEASURES, written out so that `simweb --help` stays fast.
RELATED_MEASURES = ("cocitation", "coupling", "ecbc", "simrank", "extended_simrank", "pagesim", "extended_pagesim")


def run(args: argparse.Namespace) -> int:
    from simweb.api import UnknownURL, open_index

    if args.index is None and (args.measure is None or args.crawl is None):
        print("simweb related: give --index INDEX (or, with --measure, --crawl DIR)", file=sys.stderr)
        return 2
    if args.measure is not None:
        if args.rerank is not None or args.dedup:
            print("simweb related: --rerank/--no-rerank and --dedup apply to the index's answers, not to --measure; "
                  "leave them out or leave out --measure", file=sys.stderr)
            return 2
        return _by_link_measure(args)
    args.rerank = args.rerank is not False  # re-ranked unless --no-rerank
    try:
        index = open_index(args.index, crawl=args.crawl)
        results = index.related(args.url, top=args.top, alpha=args.alpha, rerank=args.rerank, dedup=args.dedup,
                                replay_prefix=args.replay_prefix)
    except UnknownURL as e:
        print(f"simweb related: {e}", file=sys.stderr)
        return 2
    except (ValueError, FileNotFoundError) as e:
        print(f"simweb related: {e}", file=sys.stderr)
        return 2
    if args.json:
        from simweb.answers import index_answer

        doc = index_answer(args.url, results, version=index.version, top=args.top, alpha=args.alpha,
                           rerank=args.rerank, dedup=args.dedup)
        print(json.dumps(doc, indent=1, ensure_ascii=False))
        return 0
    if not results:
        print(f"no page in the index is {args.alpha}-similar to {args.url}")
        return 0
    # The score each result is ranked by comes first: the exact similarity when re-ranked, else the estimate.
    exact = args.rerank
    head = f"{'rank':>4}  " + (f"{'exact':>5}  " if exact else "") + f"{'est.':>5}  url / title / category"
    print(head)
    for r in results:
        _print_row(f"{r.rank:>4}  " + (f"{r.score:5.3f}  " if exact else "") + f"{r.similarity:5.3f}  ", r.url,
                   r.title, r.category, r.replay)
    return 0


def _print_row(head: str, url: str, title: str | None, category: str | None, replay: str | None = None) -> None:
    """One result: its numbers and URL, then its title and [category] under the URL, and its replay address."""
    print(head + url)
    extra = "  ".join(x for x in (title, f"[{category}]" if category else None) if x)
    if extra:
        print(" " * len(head) + extra)
    if replay:
        print(" " * len(head) + f"replay: {replay}")


def _by_link_measure(args: argparse.Namespace) -> int:
    import os

    from simweb.api import open_index
    from simweb.tasks.link_related import related_by_link

    crawl = args.crawl or os.path.join(args.index, "crawl")
    if not os.path.isdir(os.path.join(crawl, "links")):
        print(f"simweb related: no ingested links at {crawl}/links: --measure needs the crawl the index was "
              "built from (give --crawl DIR, the folder written by `simweb ingest`)", file=sys.stderr)
        return 2
    try:
        index = open_index(args.index, crawl=crawl) if args.index is not None else None  # titles, categories
        results = related_by_link(crawl, args.url, args.measure, top=args.top)
    except (ValueError, FileNotFoundError) as e:
        print(f"simweb related: {e}", file=sys.stderr)
        return 2
    if args.json:
        from simweb.answers import measure_answer

        doc = measure_answer(args.url, results, measure=args.measure, top=args.top, index=index)
        print(json.dumps(doc, indent=1, ensure_ascii=False))
        return 0
    if not results:
        print(f"no page shares links with {args.url} under {args.measure}")
        return 0
    print(f"{'rank':>4}  {'score':>8}  url   ({args.measure})")
    for r in results:
        row = index.document(r.url) if index is not None and r.url in index else {}
        _print_row(f"{r.rank:>4}  {r.score:8.4f}  ", r.url, row.get("title"), row.get("category"))
    return 0
