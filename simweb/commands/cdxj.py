"""`simweb cdxj CRAWL [-o FILE]`: a CDXJ index of the crawl's captures, for pywb.

    simweb cdxj index -o index.cdxj
    wb-manager init my-coll && cp crawl/*.warc.gz collections/my-coll/archive/
    cp index.cdxj collections/my-coll/indexes/ && wayback
    simweb related URL --index index --replay-prefix http://localhost:8080/my-coll/

CRAWL is the folder `simweb ingest --out` wrote, or an index folder (its crawl, INDEX/crawl).
One line per page and per redirect record: SURT key, 14-digit timestamp, then JSON with url,
mime, status, digest, length, offset and filename, sorted as pywb expects. Filenames are the
archive files' names (pywb looks them up in the collection's archive folder); --full-paths
keeps the paths the crawl was read from. Without -o the index goes to standard output.
"""
from __future__ import annotations

import argparse
import os
import sys


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "cdxj",
        help="write a CDXJ index of a crawl's captures, so that pywb can replay the pages",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("crawl", metavar="CRAWL", help="the ingested crawl (simweb ingest --out DIR) or an index folder")
    p.add_argument("-o", "--out", metavar="FILE", help="write the index to FILE (default: standard output)")
    p.add_argument("--full-paths", action="store_true",
                   help="give each archive file's path as read, not its name alone")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from simweb.tasks.cdxj import write_cdxj
    from simweb.tasks.layout import crawl_folder_of

    crawl = crawl_folder_of(args.crawl)
    if not os.path.isdir(crawl):
        print(f"simweb cdxj: {args.crawl}: no such folder; expected the folder `simweb ingest --out` wrote, "
              "or an index folder", file=sys.stderr)
        return 2
    try:
        counts = write_cdxj(crawl, args.out, full_paths=args.full_paths)
    except (FileNotFoundError, ValueError) as e:
        print(f"simweb cdxj: {e}", file=sys.stderr)
        return 2
    left_out = f"; {counts['without_timestamp']} record(s) without a valid WARC-Date left out" \
        if counts["without_timestamp"] else ""
    listed = [f"{counts['pages']} page(s)", f"{counts['redirects']} redirect(s)"] + [
        f"{counts[key]} {name}" for key, name in (("revisits", "revisit(s)"), ("gone", "404/410 capture(s)")) if counts[key]]
    print(f"simweb cdxj: {', '.join(listed[:-1])} and {listed[-1]} indexed"
          + (f" in {args.out}" if args.out not in (None, "-") else "") + left_out, file=sys.stderr)
    if counts["not_replayable"]:
        files = counts["not_replayable_files"]
        named = ", ".join(files[:5]) + (f" and {len(files) - 5} more" if len(files) > 5 else "")
        print(f"simweb cdxj: {counts['not_replayable']} record(s) left out, not replayable: {named} "
              f"{'is' if len(files) == 1 else 'are'} compressed as a whole, one gzip member (or zstd frame) holding "
              "many records, which a player cannot seek into; rewrite each record by record (`warcio recompress "
              "FILE NEW.warc.gz`, or `zstd -d` for a .warc.zst; the ingest's file errors say how for each) and ingest "
              "it again to replay them", file=sys.stderr)
    return 0
