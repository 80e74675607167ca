"""`simweb related URL --index INDEX`: the pages related to a URL (paper Figure 13).

Prints rank, similarity, URL, title and category (when the index was built with a directory),
or with --json the same JSON document as the HTTP API's GET /api/related.
"""
from __future__ import annotations

import argparse
import json
import sys


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "related",
        help="the pages related to a URL, from an index built by `simweb build`",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("url", metavar="URL", help="the page's URL")
    p.add_argument("--index", required=True, metavar="INDEX", help="the index folder (simweb build --out)")
    p.add_argument("--top", type=int, default=10, metavar="K", help="at most K results (default 10)")
    p.add_argument("--alpha", type=float, default=0.15, metavar="A",
                   help="least estimated similarity, 0..1 (default 0.15, the paper's α)")
    p.add_argument("--rerank", action="store_true", help="re-rank the best candidates by exact weighted Jaccard")
    p.add_argument("--json", action="store_true", help="print JSON (the HTTP API's format)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from simweb.api import UnknownURL, open_index

    try:
        index = open_index(args.index)
        results = index.related(args.url, top=args.top, alpha=args.alpha, rerank=args.rerank)
    except UnknownURL as e:
        print(f"simweb related: {e}", file=sys.stderr)
        return 2
    except (ValueError, FileNotFoundError) as e:
        print(f"simweb related: {e}", file=sys.stderr)
        return 2
    if args.json:
        doc = {"query": args.url, "top": args.top, "alpha": args.alpha, "rerank": args.rerank,
               "results": [r.to_dict() for r in results]}
        print(json.dumps(doc, indent=1, ensure_ascii=False))
        return 0
    if not results:
        print(f"no page in the index is {args.alpha}-similar to {args.url}")
        return 0
    exact = args.rerank
    head = f"{'rank':>4}  {'sim':>5}  " + (f"{'exact':>5}  " if exact else "") + "url / title / category"
    print(head)
    for r in results:
        line = f"{r.rank:>4}  {r.similarity:5.3f}  " + (f"{r.exact:5.3f}  " if exact else "") + r.url
        print(line)
        extra = "  ".join(x for x in (r.title, f"[{r.category}]" if r.category else None) if x)
        if extra:
            print(" " * (len(line) - len(r.url)) + extra)
    return 0
