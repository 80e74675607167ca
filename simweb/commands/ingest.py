"""`simweb ingest ARCHIVE... --out DIR`: read WARC and ARC files into the pages and links data sets.

    simweb ingest crawl/*.warc.gz --out data
    simweb ingest crawl/ --out data --dask-address tcp://scheduler:8786
    simweb ingest one.arc.gz --out data --no-prefect

Writes DIR/pages/ (one row per HTML page) and DIR/links/ (one row per anchor with its
context words), one Parquet part per archive file (WARC or ARC, plain or gzipped), and
prints what was read, written and skipped. A damaged file is read on past the damage; the
summary lists where, the bytes skipped and the records recovered. A file whose content was
ingested into DIR before is skipped. By default the files are ingested by the build-index
flow's ingest stage: a Prefect task per shard of files (about equal bytes, a few per worker)
on a Dask cluster (a local one sized to this machine, or the scheduler at --dask-address);
--no-prefect ingests them one after another in this process.
"""
from __future__ import annotations

import argparse
import os
import sys

from simweb.commands import EXIT_NOTHING_READ, EXIT_STATUS_HELP, ingest_exit_status


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "ingest",
        help="read WARC and ARC files into the pages and links data sets",
        description=__doc__,
        epilog=EXIT_STATUS_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "warc", nargs="+", metavar="ARCHIVE",
        help="a WARC or ARC file (.warc, .warc.gz, .arc, .arc.gz), a folder of them (searched "
             "recursively) or a glob",
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
    from simweb.tasks.ingest import NothingIngested, ingest_files, list_archive_files

    problem = output_problem(args.out)
    if problem:
        print(f"simweb ingest: {problem}", file=sys.stderr)
        return 2

    try:
        files = list_archive_files(args.warc)
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
            if stats.usable or args.add:  # as the flow: a crawl that gave nothing changes nothing
                write_selection(args.out, crawl_selection(args.out, stats.parts, keep_earlier=args.add))
    else:
        # The temporary Prefect server can take a while to start on a busy machine.
        os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "120")
        from simweb.flows.build_index import build_index

        try:
            stats = build_index(files, args.out, until="ingest", crawl_out=args.out, dask_address=args.dask_address,
                                n_workers=args.workers, keep_earlier=args.add).ingest
        except NothingIngested as exc:
            stats = exc.stats
    print(stats.summary())
    if stats.usable:
        from simweb.tasks.crawl import alias_lines, alias_report

        print("\n".join(alias_lines(alias_report(args.out))))
    status = ingest_exit_status(stats, keep_earlier=args.add)
    if status == EXIT_NOTHING_READ:
        print(f"simweb ingest: nothing usable was read: no file gave a page ({len(stats.file_errors)} "
              "damaged or unreadable, listed above)", file=sys.stderr)
    return status
