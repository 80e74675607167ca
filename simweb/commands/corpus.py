"""`simweb corpus debdocs --out DIR [--cache DIR]`: build a ready-made crawl and topic directory."""
from __future__ import annotations

import argparse
import os
import sys
import time


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "corpus",
        help="build a ready-made crawl with a topic directory (DebDocs)",
        description="Build a ready-made crawl (WARC) and topic directory (Open Directory RDF + TSV).",
    )
    corpora = parser.add_subparsers(dest="corpus", metavar="CORPUS", required=True)
    debdocs = corpora.add_parser(
        "debdocs",
        help="the PostgreSQL 15, Python 3.11 and Django documentation sites from Debian packages",
        description=(
            "Download postgresql-doc-15, python3.11-doc and python-django-doc with apt-get (cached), write "
            "their HTML pages as a WARC under the sites' public URLs, and derive a topic directory from the "
            "sites' own tables of contents. Writes DIR/warc/*.warc.gz, DIR/directory.rdf, DIR/directory.tsv, "
            "DIR/directory_pages.txt, DIR/MANIFEST.json and DIR/SUMMARY.json."
        ),
    )
    debdocs.add_argument("--out", required=True, metavar="DIR", help="output folder")
    debdocs.add_argument(
        "--cache",
        metavar="DIR",
        default=None,
        help="folder for the downloaded .deb files, reused on later runs (default: ~/.cache/simweb/debs)",
    )
    debdocs.add_argument(
        "--no-prefect",
        action="store_true",
        help="run the same stages as plain function calls, without a Prefect server",
    )
    debdocs.set_defaults(func=run_debdocs)


def run_debdocs(args: argparse.Namespace) -> int:
    # The temporary Prefect server can take a minute to start on a busy machine; the setting
    # must be in place before prefect is first imported.
    os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "180")
    from simweb.corpora import CorpusError
    from simweb.corpora.debdocs import build_debdocs
    from simweb.corpora.docsites import format_summary

    started = time.perf_counter()
    try:
        if args.no_prefect:
            summary = build_debdocs(args.out, args.cache)
        else:
            from simweb.flows.debdocs_corpus import debdocs_corpus

            summary = debdocs_corpus(out=args.out, cache=args.cache)
    except CorpusError as err:
        print(f"simweb corpus debdocs: {err}", file=sys.stderr)
        return 2
    print(format_summary(summary))
    print(f"written to {args.out} in {time.perf_counter() - started:.1f} s")
    return 0
