"""`simweb ingest WARC... --out DIR`: read WARC files into the pages and links data sets.

    simweb ingest crawl/*.warc.gz --out data
    simweb ingest crawl/ --out data --dask-address tcp://scheduler:8786
    simweb ingest one.arc.gz --out data --no-prefect
    simweb ingest s3://bucket/crawl/ https://example.org/extra.warc.gz --out data
    simweb ingest --paths-list warc.paths.gz --paths-prefix https://data.commoncrawl.org/ --out data

Writes DIR/pages/ (one row per HTML page) and DIR/links/ (one row per anchor with its
context words), one Parquet part per archive file (WARC or ARC, plain or gzipped, or .warc.zst), and
prints what was read, written and skipped. A damaged file is read on past the damage; the
summary lists where, the bytes skipped and the records recovered. A file whose content was
ingested into DIR before is skipped. The files are ingested by the build-index flow's ingest
stage: for a small crawl (under 64 MB) one after another in this process, otherwise as a
Prefect task per shard of files (about equal bytes, a few per worker) on a Dask cluster (a
local one sized to this machine, or the scheduler at --dask-address); --prefect and
--no-prefect force either way.

A URL captured more than once (a recrawl next week, next year) has one page: its latest
capture by WARC-Date (then the file, then the offset), whatever the files are named or the
order they arrive in. A latest capture that answered 404 or 410 takes the URL out: it is no
longer answered or returned as related, though pages still link to it (those links stay theirs:
their out-link ids, the link graph). One that redirects makes the URL an alias of its target;
the other captures and their links are counted and left out; a revisit record is a capture at
its date with the revisited capture's content. `simweb build --as-of DATE` builds from the latest
capture at or before DATE.
"""
from __future__ import annotations

import argparse
import sys

from simweb.commands import EXIT_NOTHING_READ, EXIT_STATUS_HELP, ingest_exit_status
from simweb.commands.inputs import add_paths_list_options
from simweb.commands.runmode import add_mode_options


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "ingest",
        help="read WARC and ARC files into the pages and links data sets",
        description=__doc__,
        epilog=EXIT_STATUS_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "warc", nargs="*", metavar="ARCHIVE",
        help="a WARC or ARC file (.warc, .warc.gz, .warc.zst, .arc, .arc.gz) or a WACZ package (.wacz), a folder of them (searched "
             "recursively), a glob, or a URL: s3://bucket/prefix/ (every archive file under it), "
             "s3://bucket/**/*.warc.gz, https://host/file.warc.gz",
    )
    parser.add_argument("--out", required=True, metavar="DIR",
                        help="output folder: a local path, or an object-store URL (s3://bucket/data)")
    parser.add_argument(
        "--dask-address", default=None, metavar="ADDR",
        help="address of an existing Dask scheduler (default: start a local cluster)",
    )
    parser.add_argument(
        "--workers", type=int, default=None, metavar="N",
        help="worker processes of the local Dask cluster (default: one per available core)",
    )
    add_paths_list_options(parser)
    add_mode_options(parser, "build-index")
    parser.add_argument(
        "--add", action="store_true",
        help="add these files to the crawl already in DIR (by default DIR's crawl becomes exactly these files; "
             "parts of other files stay on disk, unused, and are not read again if named later)",
    )
    parser.set_defaults(func=run)


def run(args) -> int:
    from simweb.commands.runmode import choose_mode, crawl_size, human_size, mode_conflict, run_flow

    if mode_conflict(args):
        print(f"simweb ingest: {mode_conflict(args)}", file=sys.stderr)
        return 2
    if args.dask_address and args.workers is not None:
        print("simweb ingest: --workers sizes a local cluster; it cannot be combined with --dask-address",
              file=sys.stderr)
        return 2
    if args.workers is not None and args.workers < 1:
        print(f"simweb ingest: --workers: expected at least 1, got {args.workers}", file=sys.stderr)
        return 2

    from simweb.commands.inputs import (crawl_paths_problem, crawl_problem, output_problem, paths_list_problem,
                                        remote_problem)

    problem = (remote_problem(args.out) or output_problem(args.out) or crawl_paths_problem(args.warc)
               or paths_list_problem(args.paths_list, args.paths_prefix))
    if problem:
        print(f"simweb ingest: {problem}", file=sys.stderr)
        return 2
    print(f"simweb ingest: {' '.join(args.warc + ([args.paths_list] if args.paths_list else []))} → {args.out}", file=sys.stderr, flush=True)
    files, problem = crawl_problem(args.warc, args.paths_list, args.paths_prefix)
    if problem:
        print(f"simweb ingest: {problem}", file=sys.stderr)
        return 2
    size = crawl_size(files)
    in_process, why = choose_mode(args, size, "build-index")
    print(f"{len(files)} archive file{'s' if len(files) != 1 else ''}"
          + (f", {human_size(size)}" if size is not None else "") + f": {why}", file=sys.stderr, flush=True)
    params = {} if in_process else {"dask_address": args.dask_address, "n_workers": args.workers}
    from simweb.flows.build_index import build_index

    # The build-index flow's ingest stage alone, into DIR itself (no index folder around it).
    from simweb.tasks.ingest.stats import NothingIngested

    try:
        stats = run_flow(build_index, in_process, files, args.out, until="ingest", crawl_out=args.out,
                         keep_earlier=args.add, **params).ingest
    except NothingIngested as exc:
        stats = exc.stats
    print(stats.summary())
    if stats.usable:
        from simweb.tasks.crawl.tables import alias_report

        print("\n".join(alias_lines(alias_report(args.out))))
    status = ingest_exit_status(stats, keep_earlier=args.add)
    if status == EXIT_NOTHING_READ:
        from simweb.tasks.ingest.stats import no_page_hint

        print(f"simweb ingest: nothing usable was read: no file gave a page ({len(stats.file_errors)} "
              f"damaged or unreadable, listed above){no_page_hint(stats)}", file=sys.stderr)
    return status


def alias_lines(report: dict[str, int]) -> list[str]:
    """A few lines for people from simweb.tasks.crawl.tables.alias_report: aliases found by rule, links
    redirected, pages merged, and the evidence left aside."""
    from simweb.core.aliases import KINDS

    kinds = ", ".join(f"{report.get(f'aliases_{kind}', 0):,} {kind}" for kind in KINDS)
    lines = [f"aliases: {report.get('aliases', 0):,} URLs name another URL's document ({kinds})",
             f"  links redirected to an alias's document {report.get('links_redirected_to_aliases', 0):>10,}",
             f"  pages merged into another page         {report.get('pages_merged', 0):>10,}"]
    aside = {"conflicting redirects or canonical links": report.get("conflicting_aliases", 0),
             "variant names crawled themselves": report.get("variants_crawled", 0),
             "variant names of two pages (ambiguous)": report.get("variants_ambiguous", 0),
             "aliases in a loop": report.get("aliases_in_loops", 0),
             "aliases on an over-long chain": report.get("aliases_too_long", 0),
             "aliased pages kept (target not crawled)": report.get("aliased_pages_kept", 0)}
    lines += [f"  {label:<39}{n:>10,}" for label, n in aside.items() if n]
    return lines
