"""`simweb build CRAWL --out INDEX`: the whole build-index flow (paper Figure 10).

    simweb build crawl/ --out index
    simweb build crawl/*.warc.gz --out index --strategy "anchor:32+content,stem,dist,nmdf"
    simweb build crawl/ --out index --directory directory.tsv --min-in-degree 0

ingest → bags → signatures → invert → publish, as Prefect tasks on a Dask cluster (a local
one sized to this machine, or the scheduler at --dask-address). Finished stages are reused:
re-running a finished build does no work, a changed strategy re-runs from the bags stage, and
a build that failed resumes at the stage that failed. Query the result with `simweb related`.
"""
from __future__ import annotations

import argparse
import json
import os
import sys


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "build",
        help="build the related-pages index of a crawl (ingest, bags, signatures, invert)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("crawl", nargs="+", metavar="CRAWL", help="WARC files, folders of them, or globs")
    p.add_argument("--out", required=True, metavar="INDEX", help="the index folder")
    p.add_argument("--strategy", default=None, metavar="SPEC",
                   help="how pages are described, e.g. 'anchor:32+content,stem,dist,nmdf' (the default)")
    p.add_argument("--m", type=int, default=80, help="min-hash signatures per page (default 80)")
    p.add_argument("--seed", type=int, default=1, help="min-hash seed (default 1)")
    p.add_argument("--min-in-degree", type=int, default=3, metavar="N",
                   help="pages with at most N inlinks stay queryable but are not returned as results "
                        "(default 3, the paper's filter; -1 keeps every page)")
    p.add_argument("--directory", default=None, metavar="FILE",
                   help="topic directory (ODP RDF or url<TAB>category) whose categories results show")
    p.add_argument("--until", choices=("ingest", "bags", "index"), default="index", help="stop after this stage")
    p.add_argument("--dask-address", default=None, metavar="ADDR", help="an existing Dask scheduler")
    p.add_argument("--workers", type=int, default=None, metavar="N", help="local Dask worker processes")
    p.add_argument("--part-mb", type=int, default=None, metavar="MB",
                   help="working memory of each task of the bags stage, in megabytes (default 768: every "
                        "process stays under 2 GiB, four workers fit in 8 GB)")
    p.add_argument("--verify", action="store_true",
                   help="check every reused stage output and the live index by content (SHA-256), not only "
                        "by size, and compute again whatever is damaged")
    p.add_argument("--add", action="store_true",
                   help="keep the pages of the files earlier builds into INDEX named (by default the crawl is "
                        "exactly the files named here, with those an ingest-new-crawl inbox added)")
    p.add_argument("--json", action="store_true", help="print the build summary as JSON")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from simweb.core.strategy import Strategy, StrategyError

    try:
        strategy = Strategy.parse(args.strategy) if args.strategy else Strategy()
    except (StrategyError, ValueError) as e:
        print(f"simweb build: --strategy: {e}", file=sys.stderr)
        return 2
    if args.dask_address and args.workers is not None:
        print("simweb build: --workers sizes a local cluster; it cannot be combined with --dask-address",
              file=sys.stderr)
        return 2
    from simweb.commands.inputs import directory_problem, output_problem

    problem = output_problem(args.out) or (args.directory and directory_problem(args.directory))
    if problem:
        print(f"simweb build: {problem}", file=sys.stderr)
        return 2
    os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "120")
    from simweb.flows.build_index import build_index

    try:
        built = build_index(
            args.crawl, args.out, strategy=strategy, m=args.m, seed=args.seed,
            min_in_degree=None if args.min_in_degree < 0 else args.min_in_degree,
            directory=args.directory, until=args.until,
            dask_address=args.dask_address, n_workers=args.workers, verify=args.verify,
            keep_earlier=args.add, **({"part_mb": args.part_mb} if args.part_mb is not None else {}),
        )
    except FileNotFoundError as e:
        print(f"simweb build: {e}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(built.to_dict(), indent=1, default=str))
    else:
        print(built.summary())
        if built.index:
            print(f"query it: simweb related URL --index {args.out}")
    return 0
