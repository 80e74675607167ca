"""`simweb build CRAWL --out INDEX`: the whole build-index flow (paper Figure 10).

    simweb build crawl/ --out index
    simweb build crawl/*.warc.gz --out index --strategy "anchor:32+content,stem,dist,nmdf"
    simweb build crawl/ --out index --directory directory.tsv --min-in-degree 0
    simweb build crawl/ --out index --strategy-from report/     # the strategy `simweb evaluate` recommended
    simweb build --paths-list warc.paths.gz --paths-prefix https://data.commoncrawl.org/ --out index

ingest → bags → signatures → invert → publish. The crawl is WARC and ARC files, plain or
gzipped, and WACZ packages (their WARC files read from inside them); damaged files are read on past the damage and listed in the summary. A small crawl
(archive files of under 64 MB in all) is built in this process, without a Prefect server or a
Dask cluster, which take longer to start than such a crawl takes to build; a larger one runs as
the build-index Prefect flow on a Dask cluster (a local one sized to this machine, or the
scheduler at --dask-address). --prefect and --no-prefect force the choice; both give the same
index. Finished stages are reused: re-running a finished build does no work, a changed strategy
re-runs from the bags stage, and a build that failed resumes at the stage that failed. Query the
result with `simweb related`.
"""
from __future__ import annotations

import argparse
import json
import os
import sys

from simweb.commands import EXIT_STATUS_HELP, ingest_exit_status
from simweb.commands.inputs import add_paths_list_options
from simweb.commands.runmode import add_mode_options


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "build",
        help="build the related-pages index of a crawl (ingest, bags, signatures, invert)",
        description=__doc__,
        epilog=EXIT_STATUS_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("crawl", nargs="*", metavar="CRAWL",
                   help="WARC or ARC files, WACZ packages, folders of them, globs, or URLs (s3://bucket/prefix/, "
                        "s3://bucket/**/*.warc.gz, https://host/file.warc.gz)")
    p.add_argument("--out", required=True, metavar="INDEX", help="the index folder")
    p.add_argument("--work", default=None, metavar="FOLDER",
                   help="where the ingested crawl and the stage outputs are kept (default: inside INDEX): a local "
                        "folder, or an object store (s3://bucket/prefix) that a cluster's workers share; INDEX "
                        "remembers it for later builds and updates")
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
    p.add_argument("--dask-address", default=None, metavar="ADDR", help="an existing Dask scheduler (implies --prefect)")
    p.add_argument("--workers", type=int, default=None, metavar="N",
                   help="local Dask worker processes (implies --prefect)")
    add_paths_list_options(p)
    p.add_argument("--part-mb", type=int, default=None, metavar="MB",
                   help="working memory of each task of the bags stage, in megabytes (default 768: every "
                        "process stays under 2 GiB, four workers fit in 8 GB)")
    add_mode_options(p, "build-index")
    p.add_argument("--verify", action="store_true",
                   help="check every reused stage output and the live index by content (SHA-256), not only "
                        "by size, and compute again whatever is damaged")
    p.add_argument("--add", action="store_true",
                   help="keep the pages of the files earlier builds into INDEX named (by default the crawl is "
                        "exactly the files named here, with those an ingest-new-crawl inbox added)")
    p.add_argument("--as-of", default=None, metavar="DATE",
                   help="the web as of DATE (2021-01-01: the end of that day; or 2021-01-01T12:00:00Z; UTC): each "
                        "URL's page is its latest capture at or before DATE (default: its latest capture)")
    p.add_argument("--no-related-table", dest="related_table", action="store_false",
                   help="do not compute every page's related pages ahead once the index is published "
                        "(default queries then run live: milliseconds each instead of microseconds)")
    p.add_argument("--json", action="store_true", help="print the build summary as JSON")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    def say(message: str) -> None:
        print(message, file=sys.stderr, flush=True)

    from simweb.commands.runmode import choose_mode, crawl_size, human_size, mode_conflict

    if mode_conflict(args):
        say(f"simweb build: {mode_conflict(args)}")
        return 2
    from simweb.core.strategy import Strategy, StrategyError

    if args.strategy and args.strategy_from:
        say("simweb build: give --strategy or --strategy-from, not both")
        return 2
    try:
        spec = recommended_spec(args.strategy_from) if args.strategy_from else args.strategy
        strategy = Strategy.parse(spec) if spec else Strategy()
    except (StrategyError, ValueError, FileNotFoundError) as e:
        print(f"simweb build: --{'strategy-from' if args.strategy_from else 'strategy'}: {e}", file=sys.stderr)
        return 2
    if args.strategy_from:
        say(f"simweb build: strategy recommended by {args.strategy_from}: {strategy.spec()}")
    if args.as_of:
        from simweb.tasks.crawl.selection import as_of_stamp

        try:
            as_of_stamp(args.as_of)
        except ValueError as e:
            say(f"simweb build: --{e}")
            return 2
    if args.dask_address and args.workers is not None:
        print("simweb build: --workers sizes a local cluster; it cannot be combined with --dask-address",
              file=sys.stderr)
        return 2
    from simweb.commands.inputs import (crawl_paths_problem, crawl_problem, directory_problem, local_index_problem,
                                        output_problem, paths_list_problem, work_problem)

    problem = (local_index_problem(args.out) or output_problem(args.out)
               or (args.work and work_problem(args.work))
               or (args.directory and directory_problem(args.directory))
               or crawl_paths_problem(args.crawl) or paths_list_problem(args.paths_list, args.paths_prefix))
    if problem:
        print(f"simweb build: {problem}", file=sys.stderr)
        return 2
    say(f"simweb build: {' '.join(args.crawl + ([args.paths_list] if args.paths_list else []))} → {args.out}")
    files, problem = crawl_problem(args.crawl, args.paths_list, args.paths_prefix)
    if problem:
        print(f"simweb build: {problem}", file=sys.stderr)
        return 2
    size = crawl_size(files)
    in_process, why = choose_mode(args, size, "build-index")
    say(f"{len(files)} archive file{'s' if len(files) != 1 else ''}"
        + (f", {human_size(size)}" if size is not None else "") + f": {why}")
    params = dict(strategy=strategy, m=args.m, seed=args.seed,
                  min_in_degree=None if args.min_in_degree < 0 else args.min_in_degree,
                  directory=args.directory, until=args.until, work=args.work, verify=args.verify, keep_earlier=args.add,
                  as_of=args.as_of, related_table=args.related_table)
    if args.part_mb is not None:
        params["part_mb"] = args.part_mb
    if not in_process:
        params.update(dask_address=args.dask_address, n_workers=args.workers)
    from simweb.core.errors import USER_INPUT_ERRORS
    from simweb.commands.runmode import run_flow
    from simweb.flows.build_index import build_index
    from simweb.commands import EXIT_NOTHING_READ
    from simweb.flows.chain import BuildSummary, NothingToIndex
    from simweb.tasks.ingest.stats import NothingIngested

    try:
        built = run_flow(build_index, in_process, files, args.out, **params)
    except USER_INPUT_ERRORS as e:
        print(f"simweb build: {e}", file=sys.stderr)
        return 2
    except NothingIngested as e:
        nothing = BuildSummary(ingest=e.stats)
        print(json.dumps(nothing.to_dict(), indent=1) if args.json else nothing.summary())
        print(f"simweb build: {e}", file=sys.stderr)
        return ingest_exit_status(e.stats, keep_earlier=args.add)
    except NothingToIndex as e:
        print(f"simweb build: {e}", file=sys.stderr)
        return EXIT_NOTHING_READ
    if args.json:
        print(json.dumps(built.to_dict(), indent=1, default=str))
    else:
        print(built.summary())
        if built.index:
            print(f"query it: simweb related URL --index {args.out}")
    return ingest_exit_status(built.ingest, keep_earlier=args.add)


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
