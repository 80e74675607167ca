"""`simweb build CRAWL --out INDEX`: the whole build-index flow (paper Figure 10).

    simweb build crawl/ --out index
    simweb build crawl/*.warc.gz --out index --strategy "anchor:32+content,stem,dist,nmdf"
    simweb build crawl/ --out index --directory directory.tsv --min-in-degree 0

ingest → bags → signatures → invert → publish. A small crawl (WARC files of under 64 MB in
all) is built in this process, without a Prefect server or a Dask cluster, which take longer
to start than such a crawl takes to build; a larger one runs as the build-index Prefect flow
on a Dask cluster (a local one sized to this machine, or the scheduler at --dask-address).
--prefect and --no-prefect force the choice; both give the same index. Finished stages are reused:
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
    p.add_argument("--dask-address", default=None, metavar="ADDR", help="an existing Dask scheduler (implies --prefect)")
    p.add_argument("--workers", type=int, default=None, metavar="N",
                   help="local Dask worker processes (implies --prefect)")
    how = p.add_mutually_exclusive_group()
    how.add_argument("--prefect", action="store_true",
                     help="run the build-index flow through Prefect on a Dask cluster, whatever the crawl's size")
    how.add_argument("--no-prefect", action="store_true",
                     help="build in this process without Prefect or Dask, whatever the crawl's size")
    p.add_argument("--verify", action="store_true",
                   help="check every reused stage output and the live index by content (SHA-256), not only "
                        "by size, and compute again whatever is damaged")
    p.add_argument("--add", action="store_true",
                   help="keep the pages of the files earlier builds into INDEX named (by default the crawl is "
                        "exactly the files named here, with those an ingest-new-crawl inbox added)")
    p.add_argument("--json", action="store_true", help="print the build summary as JSON")
    p.set_defaults(func=run)


#: A crawl whose WARC files hold fewer bytes than this is built in this process by default.
#: Starting Prefect's temporary server and a local Dask cluster costs 10–40 s on a small
#: machine; below this size the whole build takes less in one process (benchmarks/first_build.py).
SMALL_CRAWL_BYTES = 64 * 2**20


def choose_mode(args: argparse.Namespace, crawl_bytes: int | None) -> tuple[bool, str]:
    """(in this process?, why) for a build of WARC files holding ``crawl_bytes`` (None: unknown,
    e.g. remote files)."""
    if args.no_prefect:
        return True, "in this process, without Prefect or Dask (--no-prefect)"
    if args.prefect:
        return False, "as the build-index Prefect flow (--prefect)"
    if args.dask_address:
        return False, f"as the build-index Prefect flow on the Dask cluster at {args.dask_address}"
    if args.workers is not None:
        return False, f"as the build-index Prefect flow on {args.workers} local Dask worker(s) (--workers)"
    if crawl_bytes is None:
        return False, "as the build-index Prefect flow on a local Dask cluster (the files' size is not known)"
    if crawl_bytes < SMALL_CRAWL_BYTES:
        return True, (f"a small crawl (under {SMALL_CRAWL_BYTES // 2**20} MB), built in this process without "
                      "Prefect or Dask (--prefect runs it as a Prefect flow)")
    return False, (f"built as the build-index Prefect flow on a local Dask cluster "
                   f"(--no-prefect builds it in this process)")


def crawl_size(files: list[str]) -> int | None:
    """The bytes of ``files`` when all are local, else None."""
    total = 0
    for path in files:
        if "://" in path and not path.startswith("file://"):
            return None
        try:
            total += os.path.getsize(path.removeprefix("file://"))
        except OSError:
            return None
    return total


def _size(n: int) -> str:
    return f"{n / 2**20:.1f} MB" if n >= 2**20 else f"{n / 2**10:.0f} kB"


def run(args: argparse.Namespace) -> int:
    def say(message: str) -> None:
        print(message, file=sys.stderr, flush=True)

    if args.no_prefect and (args.dask_address or args.workers is not None):
        say("simweb build: --no-prefect builds in this process; it cannot be combined with "
            f"{'--dask-address' if args.dask_address else '--workers'}, which choose a Dask cluster")
        return 2
    say(f"simweb build: {' '.join(args.crawl)} → {args.out}")
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
    from simweb.commands.inputs import crawl_problem, directory_problem, output_problem

    problem = output_problem(args.out) or (args.directory and directory_problem(args.directory))
    if problem:
        print(f"simweb build: {problem}", file=sys.stderr)
        return 2
    files, problem = crawl_problem(args.crawl)
    if problem:
        print(f"simweb build: {problem}", file=sys.stderr)
        return 2
    size = crawl_size(files)
    in_process, why = choose_mode(args, size)
    say(f"{len(files)} WARC file{'s' if len(files) != 1 else ''}"
        + (f", {_size(size)}" if size is not None else "") + f": {why}")
    params = dict(strategy=strategy, m=args.m, seed=args.seed,
                  min_in_degree=None if args.min_in_degree < 0 else args.min_in_degree,
                  directory=args.directory, until=args.until, verify=args.verify, keep_earlier=args.add)
    from simweb.commands.errors import show_simweb_logs, user_input_errors

    try:
        if in_process:
            from simweb.flows.build_index import build_index

            with show_simweb_logs():
                built = build_index.fn(files, args.out, **params)
        else:
            os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "120")
            from simweb.cli import tie_temporary_server_to_this_process
            from simweb.flows.build_index import build_index

            tie_temporary_server_to_this_process()
            built = build_index(files, args.out, dask_address=args.dask_address, n_workers=args.workers, **params)
    except user_input_errors() as e:
        print(f"simweb build: {e}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(built.to_dict(), indent=1, default=str))
    else:
        print(built.summary())
        if built.index:
            print(f"query it: simweb related URL --index {args.out}")
    return 0
