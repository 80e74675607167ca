"""`simweb demo`: the whole product on the embedded default crawl, DebDocs.

    simweb demo                    # into ./out/demo
    simweb demo --out /tmp/demo --skip-evaluation

1. builds the DebDocs crawl and topic directory from three Debian documentation packages
   (PostgreSQL 15, Python 3.11, Django 3.2; fetched once with apt-get, then cached),
2. runs the build-index flow on it (ingest → bags → signatures → invert, Prefect + Dask),
3. answers related-pages queries for a few pages (paper Figures 13–14),
4. runs the evaluate-strategies flow and prints the sibling-Γ of each strategy with the path
   of the report (paper Figures 3–9 for this crawl).

Every stage is cached: running the demo again reuses what is finished.
"""
from __future__ import annotations

import argparse
import glob
import os
import sys

# Pages whose related pages the demo shows: one per site of the DebDocs crawl.
DEMO_QUERIES = (
    "https://www.postgresql.org/docs/15/sql-select.html",
    "https://docs.python.org/3.11/library/json.html",
    "https://docs.djangoproject.com/en/3.2/topics/db/queries/",
)


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "demo",
        help="build, query and evaluate the embedded default crawl (DebDocs)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--out", default=os.path.join("out", "demo"), metavar="DIR",
                   help="where the crawl, index and report go (default ./out/demo)")
    p.add_argument("--cache", default=None, metavar="DIR",
                   help="where downloaded packages are kept (default ~/.cache/simweb/debs)")
    p.add_argument("--grid", choices=("paper", "quick"), default="paper",
                   help="strategies the evaluation sweeps (default: the paper's Figures 3–9)")
    p.add_argument("--skip-evaluation", action="store_true", help="stop after the queries")
    p.add_argument("--workers", type=int, default=None, metavar="N", help="local Dask worker processes")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "120")
    from simweb.flows.build_index import build_index
    from simweb.flows.debdocs_corpus import debdocs_corpus
    from simweb.api import UnknownURL, open_index
    from simweb.corpora import CorpusError

    corpus = os.path.join(args.out, "debdocs")
    index_dir = os.path.join(args.out, "index")

    _step("1/4", "DebDocs crawl and topic directory")
    try:
        summary = debdocs_corpus(corpus, args.cache)
    except CorpusError as e:
        print(f"simweb demo: {e}", file=sys.stderr)
        return 2
    del summary  # the flow's log shows it

    _step("2/4", "build-index flow: ingest → bags → signatures → invert")
    warcs = sorted(glob.glob(os.path.join(corpus, "warc", "*.warc.gz")))
    built = build_index(warcs, index_dir, directory=os.path.join(corpus, "directory.tsv"), n_workers=args.workers)
    if built.index is None:
        print('simweb demo: the build published no index', file=sys.stderr)
        return 1

    _step("3/4", "related pages (paper Figures 13–14)")
    index = open_index(index_dir)
    for url in DEMO_QUERIES:
        try:
            results = index.related(url, top=8)
            terms = index.top_terms(url, k=10)
        except UnknownURL as e:
            print(f"{url}: {e}")
            continue
        doc = index.document(url)
        print(f"\n{url}\n  {doc.get('title') or ''}  [{doc.get('category') or 'no category'}]")
        print("  top terms: " + ", ".join(t for t, _ in terms))
        if not results:
            print("  no page reaches the similarity threshold")
        for r in results:
            print(f"  {r.rank:>2}  {r.similarity:.2f}  {r.url}  {r.title or ''}")

    if args.skip_evaluation:
        return 0
    _step("4/4", "evaluate-strategies flow: Γ against the DebDocs directory (paper Figures 3–9)")
    from simweb.flows.evaluate_strategies import evaluate_strategies
    from simweb.commands.evaluate import print_summary

    report = evaluate_strategies(
        crawl=os.path.join(index_dir, "crawl"),
        directory=os.path.join(corpus, "directory.tsv"),
        directory_pages=os.path.join(corpus, "directory_pages.txt"),
        out=os.path.join(args.out, "report"),
        grid=args.grid,
        n_workers=args.workers,
        # Each task loads the crawl once, so two big groups (one per core) beat many small ones.
        group_size=11,
        title="DebDocs",
    )
    print_summary(report)
    return 0


def _step(number: str, what: str) -> None:
    print(f"\n== {number} {what}", flush=True)
