"""`simweb build CRAWL --out INDEX`: the whole build-index flow (paper Figure 10).

    simweb build crawl/ --out index
    simweb build crawl/*.warc.gz --out index --strategy "anchor:32+content,stem,dist,nmdf"
    simweb build crawl/ --out index --directory directory.tsv --min-in-degree 0
    simweb build crawl/ --out index --strategy-from report/     # the strategy `simweb evaluate` recommended

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
                   help="how pages are described, e.g. 'anchor:32+content,stem,dist,nmdf' (the default) or "
                        "'anchor:32@0.5+content@0.25+outlinks@0.25' (source shares)")
    p.add_argument("--strategy-from", default=None, metavar="REPORT",
                   help="the strategy an evaluation report recommends (`simweb evaluate --out REPORT`: "
                        "its summary.json's recommended spec)")
    p.add_argument("--m", type=int, default=80, help="min-hash signatures per page (default 80)")
    p.add_argument("--seed", type=int, default=1, help="min-hash seed (default 1)")
    p.add_argument("--min-in-degree", type=int, default=-1, metavar="N",
                   help="pages with at most N inlinks stay queryable but are not returned as results "
                        "(3 is the paper's filter, Section 7.1; default -1: every page can be a result)")
    p.add_argument("--directory", default=None, metavar="FILE",
                   help="topic directory (ODP RDF or url<TAB>category) whose categories results show")
    p.add_argument("--until", choices=("ingest", "bags", "index"), default="index", help="stop after this stage")
    p.add_argument("--dask-address", default=None, metavar="ADDR", help="an existing Dask scheduler")
    p.add_argument("--workers", type=int, default=None, metavar="N", help="local Dask worker processes")
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

    if args.strategy and args.strategy_from:
        print("simweb build: give --strategy or --strategy-from, not both", file=sys.stderr)
        return 2
    try:
        spec = recommended_spec(args.strategy_from) if args.strategy_from else args.strategy
        strategy = Strategy.parse(spec) if spec else Strategy()
    except (StrategyError, ValueError, FileNotFoundError) as e:
        print(f"simweb build: --{'strategy-from' if args.strategy_from else 'strategy'}: {e}", file=sys.stderr)
        return 2
    if args.strategy_from:
        print(f"strategy recommended by {args.strategy_from}: {strategy.spec()}")
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
            keep_earlier=args.add,
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


def recommended_spec(report: str) -> str:
    """The spec of the strategy the evaluation report at ``report`` (its folder, or its
    summary.json) recommends."""
    path = os.path.join(report, "summary.json") if os.path.isdir(report) else report
    try:
        with open(path, encoding="utf-8") as f:
            summary = json.load(f)
    except FileNotFoundError:
        raise FileNotFoundError(f"no evaluation report at {report}: expected the folder `simweb evaluate --out` "
                                "wrote (with summary.json)") from None
    except json.JSONDecodeError as e:
        raise ValueError(f"{path} is not valid JSON ({e}); run `simweb evaluate` again") from None
    recommended = summary.get("recommended") if isinstance(summary, dict) else None
    if not recommended or not recommended.get("spec"):
        raise ValueError(f"{path} recommends no strategy: the evaluation judged no strategy an index can be built "
                         "with (a bag strategy compared by Jaccard); evaluate with --grid hybrids")
    return recommended["spec"]
