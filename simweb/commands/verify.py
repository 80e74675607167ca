"""`simweb verify INDEX [--repair]`: check every file of an index folder by content.

    simweb verify index
    simweb verify index --repair

Reads every file simweb keeps in the index folder — the published index versions, the cached
stage outputs and the ingest parts of its crawl — and compares each with the size and SHA-256
recorded when it was written. Prints one line per damaged item. With --repair, removes what
is damaged so that the next `simweb build` computes it again, and publishes the live version
anew from its cached copy when that is intact.

Exit codes: 0 nothing damaged (or everything repaired), 1 damage found (and not all of it
repaired), 2 the folder is not an index folder.
"""
from __future__ import annotations

import argparse
import os
import sys


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "verify",
        help="check every file of an index folder against its recorded SHA-256 (and repair)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("index", metavar="INDEX", help="the index folder (simweb build --out INDEX)")
    p.add_argument("--repair", action="store_true",
                   help="remove damaged cached outputs and re-publish a damaged live version from its cached copy")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from simweb.tasks.verify import audit, repair

    if not os.path.isdir(args.index):
        print(f"simweb verify: {args.index}: no such folder; expected an index folder (simweb build --out INDEX)",
              file=sys.stderr)
        return 2
    damaged, checked = audit(args.index)
    if checked == 0:
        print(f"simweb verify: {args.index} holds no index versions, stage outputs or ingest parts; "
              "expected an index folder (simweb build --out INDEX)", file=sys.stderr)
        return 2
    for item in damaged:
        print(f"damaged: {item.describe()}")
    print(f"{checked} item(s) checked, {len(damaged)} damaged")
    if not damaged:
        return 0
    if not args.repair:
        print("run `simweb verify --repair` to remove them, then the build again to compute them anew")
        return 1
    for line in repair(args.index, damaged):
        print(line)
    still, _ = audit(args.index)
    return 0 if not still else 1
