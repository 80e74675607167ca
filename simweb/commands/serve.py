"""`simweb serve --index INDEX`: the HTTP JSON API and the related-pages page (Figures 13–14).

Binds 127.0.0.1 by default (this machine only); pass --host 0.0.0.0 to serve a network. The
page is at http://HOST:PORT/, the OpenAPI documentation at /docs.
"""
from __future__ import annotations

import argparse
import sys


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "serve",
        help="serve an index over HTTP: JSON API, OpenAPI docs and a small page",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--index", required=True, metavar="INDEX", help="the index folder (simweb build --out)")
    p.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=8080, help="port (default 8080)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    import uvicorn

    from simweb.http import create_app

    if not 0 < args.port < 65536:
        print(f"simweb serve: --port: expected 1..65535, got {args.port}", file=sys.stderr)
        return 2
    try:
        app = create_app(args.index)
    except (ValueError, FileNotFoundError) as e:
        print(f"simweb serve: {e}", file=sys.stderr)
        return 2
    print(f"simweb: serving {args.index} on http://{args.host}:{args.port}/ (API docs at /docs)", file=sys.stderr)
    uvicorn.run(app, host=args.host, port=args.port, log_level="warning")
    return 0
