"""`simweb ingest WARC... --out DIR`: read WARC files into the pages and links data sets.

    simweb ingest crawl/*.warc.gz --out data
    simweb ingest crawl/ --out data --dask-address tcp://scheduler:8786
    simweb ingest one.warc.gz --out data --no-prefect

Writes DIR/pages/ (one row per HTML page) and DIR/links/ (one row per anchor with its
context words), one Parquet part per WARC file, and prints what was read, written and
skipped. A WARC file whose content was ingested into DIR before is skipped. By default the
files are ingested by the build-index flow's ingest stage: a Prefect task per shard of
files (about equal bytes, a few per worker) on a Dask cluster (a local one sized to this machine, or the scheduler at --dask-address);
--no-prefect ingests them one after another in this process.
"""
from __future__ import annotations

import argparse
import os
import sys


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "ingest",
        help="read WARC files into the pages and links data sets",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "warc", nargs="+", metavar="WARC",
        help="a WARC file (.warc or .warc.gz), a folder of them (searched recursively) or a glob",
    )
    parser.add_argument("--out", required=True, metavar="DIR", help="output folder (local path or fsspec URL)")
    parser.add_argument(
        "--dask-address", default=None, metavar="ADDR",
        help="address of an existing Dask scheduler (default: start a local cluster)",
    )
    parser.add_argument(
        "--workers", type=int, default=None, metavar="N",
        help="worker processes of the local Dask cluster (default: one per available core)",
    )
    parser.add_argument(
        "--no-prefect", action="store_true",
        help="ingest in this process, one file after another, without Prefect or Dask",
    )
    parser.add_argument(
        "--add", action="store_true",
        help="add these files to the crawl already in DIR (by default DIR's crawl becomes exactly these files; "
             "parts of other files stay on disk, unused, and are not read again if named later)",
    )
    parser.set_defaults(func=run)


def run(args) -> int:
    if args.dask_address and args.workers is not None:
        print("simweb ingest: --workers sizes a local cluster; it cannot be combined with --dask-address",
              file=sys.stderr)
        return 2
    if args.workers is not None and args.workers < 1:
        print(f"simweb ingest: --workers: expected at least 1, got {args.workers}", file=sys.stderr)
        return 2

    from simweb.commands.inputs import output_problem
    from simweb.tasks.ingest import ingest_files, list_warc_files

    problem = output_problem(args.out)
    if problem:
        print(f"simweb ingest: {problem}", file=sys.stderr)
        return 2

    try:
        files = list_warc_files(args.warc)
    except FileNotFoundError as exc:
        print(f"simweb ingest: {exc}", file=sys.stderr)
        return 2

    if args.no_prefect:
        from simweb.tasks.crawl import write_selection
        from simweb.tasks.layout import IndexLock, sweep_debris
        from simweb.tasks.ledger import crawl_selection

        with IndexLock(args.out, "simweb ingest", on_wait=lambda message: print(message, file=sys.stderr)):
            sweep_debris(args.out, args.out)
            stats = ingest_files(files, args.out)
            write_selection(args.out, crawl_selection(args.out, stats.parts, keep_earlier=args.add))
    else:
        # The temporary Prefect server can take a while to start on a busy machine.
        os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "120")
        from simweb.flows.build_index import build_index

        built = build_index(files, args.out, until="ingest", crawl_out=args.out,
                            dask_address=args.dask_address, n_workers=args.workers, keep_earlier=args.add)
        print(built.ingest.summary())
        return 0
    print(stats.summary())
    return 0
