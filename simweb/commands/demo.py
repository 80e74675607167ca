"""`simweb demo`: the whole product on the embedded default crawl, DebDocs.

    simweb demo                    # into ./out/demo
    simweb demo --out /tmp/demo --skip-evaluation

1. builds the DebDocs crawl and topic directory from three Debian documentation packages
   (PostgreSQL 15, Python 3.11, Django 3.2; fetched once with apt-get, then cached),
2. runs the build-index flow on it (ingest → bags → signatures → invert; in this process, as
   DebDocs is a small crawl, or through Prefect on Dask with --prefect or --workers),
3. answers related-pages queries for a few pages (paper Figures 13–14),
4. runs the evaluate-strategies flow and prints the sibling-Γ of each strategy with the path
   of the report (paper Figures 3–9 for this crawl).

Every stage is cached: running the demo again reuses what is finished.
"""
from __future__ import annotations

import argparse
import glob
import json
import os
import sys

from simweb.commands.runmode import add_mode_options

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
    p.add_argument("--workers", type=int, default=None, metavar="N",
                   help="local Dask worker processes (implies --prefect)")
    add_mode_options(p, "build-index and evaluate-strategies")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from simweb.commands.runmode import choose_mode, crawl_size, folder_size, mode_conflict, run_flow

    if mode_conflict(args):
        print(f"simweb demo: {mode_conflict(args)}", file=sys.stderr)
        return 2
    from simweb.api import UnknownURL, open_index
    from simweb.corpora import CorpusError
    from simweb.corpora.debdocs import build_debdocs
    from simweb.corpora.docsites import format_summary
    from simweb.flows.build_index import build_index

    corpus = os.path.join(args.out, "debdocs")
    index_dir = os.path.join(args.out, "index")

    _step("1/4", "DebDocs crawl and topic directory")
    try:
        summary = build_debdocs(corpus, args.cache)
    except CorpusError as e:
        print(f"simweb demo: {e}", file=sys.stderr)
        return 2
    print(format_summary(summary))
    print("packages: " + ", ".join(f"{p['package']} {p['version']}" for p in _manifest_packages(corpus)))

    warcs = sorted(glob.glob(os.path.join(corpus, "warc", "*.warc.gz")))
    in_process, why = choose_mode(args, crawl_size(warcs), "build-index")
    _step("2/4", f"build-index flow: ingest → bags → signatures → invert ({why})")
    cluster = {} if in_process else {"n_workers": args.workers}
    built = run_flow(build_index, in_process, warcs, index_dir, directory=os.path.join(corpus, "directory.tsv"),
                     **cluster)
    print(built.summary())
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
            print(f"  {r.rank:>2}  {r.score:.2f}  {r.url}  {r.title or ''}")

    if args.skip_evaluation:
        return 0
    in_process, why = choose_mode(args, folder_size(os.path.join(index_dir, "crawl")), "evaluate-strategies")
    _step("4/4", f"evaluate-strategies flow: Γ against the DebDocs directory, paper Figures 3–9 ({why})")
    from simweb.commands.evaluate import print_summary
    from simweb.flows.evaluate_strategies import evaluate_strategies

    cluster = {} if in_process else {"n_workers": args.workers}
    report = run_flow(
        evaluate_strategies, in_process,
        crawl=os.path.join(index_dir, "crawl"),
        directory=os.path.join(corpus, "directory.tsv"),
        directory_pages=os.path.join(corpus, "directory_pages.txt"),
        out=os.path.join(args.out, "report"),
        grid=args.grid,
        **cluster,
        # Each task loads the crawl once, so two big groups (one per core) beat many small ones.
        group_size=11,
        title="DebDocs",
    )
    print_summary(report)
    return 0


def _manifest_packages(corpus: str) -> list[dict]:
    """The Debian packages (name, version) the crawl was made from, as its MANIFEST.json records them."""
    try:
        with open(os.path.join(corpus, "MANIFEST.json")) as f:
            return list(json.load(f).get("packages", []))
    except (OSError, ValueError):
        return []


def _step(number: str, what: str) -> None:
    print(f"\n== {number} {what}", flush=True)
