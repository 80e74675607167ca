"""The `simweb` command line: one subcommand per module in ``simweb.commands``.

Each command module defines ``register(subparsers)``, which adds its parser and sets
``func`` to a callable taking the parsed arguments and returning an exit code.
"""
from __future__ import annotations

import argparse
import importlib
import os
import sys

# Command modules, in the order `simweb --help` lists them.
COMMAND_MODULES = (
    "simweb.commands.demo",
    "simweb.commands.ingest",
    "simweb.commands.build",
    "simweb.commands.bags",
    "simweb.commands.orchestrate",
    "simweb.commands.related",
    "simweb.commands.serve",
    "simweb.commands.corpus",
    "simweb.commands.evaluate",
    "simweb.commands.dedup",
    "simweb.commands.verify",
)


EXAMPLES = """examples:
  simweb corpus debdocs --out debdocs                 a ready-made crawl and topic directory
  simweb build debdocs/warc --out index               build the related-pages index of a crawl
  simweb related https://docs.python.org/3.11/library/json.html --index index
  simweb serve --index index                          HTTP API and search page on 127.0.0.1:8080
  simweb evaluate --crawl index/crawl --directory debdocs/directory.rdf --out report
  simweb demo                                         all of the above on the embedded crawl

`simweb COMMAND --help` tells more about each command."""


def build_parser() -> argparse.ArgumentParser:
    from simweb import __version__

    parser = argparse.ArgumentParser(
        prog="simweb",
        description="Related-pages search over web crawls (Haveliwala et al., WWW 2002).",
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"simweb {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
    os.environ.setdefault("DO_NOT_TRACK", "1")
    # Progress comes from the flows' logs; Dask's own start-up chatter stays out of the way.
    os.environ.setdefault("DASK_DISTRIBUTED__LOGGING__DISTRIBUTED", "warning")
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
