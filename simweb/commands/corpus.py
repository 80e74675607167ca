"""`simweb corpus debdocs | debian-docs | scale`: build a ready-made crawl and topic directory.

    simweb corpus debdocs --out debdocs
    simweb corpus debian-docs --packages openjdk-17-doc rust-doc --out docs
    simweb corpus scale --pages 100000 --out scale-100k
"""
from __future__ import annotations

import argparse
import os
import sys
import time

_CACHE_HELP = "folder for the downloaded .deb files, reused on later runs (default: ~/.cache/simweb/debs)"
_OUTPUTS = ("DIR/warc/*.warc.gz, DIR/directory.rdf, DIR/directory.tsv, DIR/directory_pages.txt, DIR/MANIFEST.json "
            "(exact package versions and digests) and DIR/SUMMARY.json")


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "corpus",
        help="build a ready-made crawl with a topic directory from Debian documentation packages",
        description=(
            "Build a ready-made crawl (WARC) and topic directory (Open Directory RDF + TSV) from Debian "
            "documentation packages, fetched with apt-get and cached: DebDocs (the demo's three sites), any "
            "packages you name, or a crawl of a given number of pages for benchmarks."
        ),
        epilog="examples:\n" + __doc__.split("\n", 2)[2],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    corpora = parser.add_subparsers(dest="corpus", metavar="CORPUS", required=True)

    debdocs = corpora.add_parser(
        "debdocs",
        help="the PostgreSQL 15, Python 3.11 and Django documentation sites from Debian packages",
        description=(
            "Download postgresql-doc-15, python3.11-doc and python-django-doc with apt-get (cached), write "
            "their HTML pages as a WARC under the sites' public URLs, and derive a topic directory from the "
            f"sites' own tables of contents. Writes {_OUTPUTS}."
        ),
    )
    debdocs.add_argument("--out", required=True, metavar="DIR", help="output folder")
    debdocs.add_argument("--cache", metavar="DIR", default=None, help=_CACHE_HELP)
    debdocs.add_argument(
        "--no-prefect",
        action="store_true",
        help="run the same stages as plain function calls, without a Prefect server",
    )
    debdocs.set_defaults(func=run_debdocs)

    docs = corpora.add_parser(
        "debian-docs",
        help="any Debian documentation packages with HTML pages, as one crawl",
        description=(
            "Download the named packages with apt-get (cached) and write their HTML pages as a WARC: under the "
            "project's public URL where simweb knows it (PostgreSQL, Python, Django, the Linux kernel, SciPy, "
            "pandas, statsmodels, Java SE, Rust, GHC), else under https://<package>.docs.example/; links between "
            "the pages rewritten to those URLs; a topic directory from each site's navigation where its layout "
            f"is known, else from its folders (Top/<package>/<folder>/…). Writes {_OUTPUTS}. Find packages with "
            "`apt-cache search -- -doc`."
        ),
    )
    docs.add_argument("--packages", required=True, nargs="+", metavar="PACKAGE", help="Debian package names")
    docs.add_argument("--out", required=True, metavar="DIR", help="output folder")
    docs.add_argument("--cache", metavar="DIR", default=None, help=_CACHE_HELP)
    docs.set_defaults(func=run_debian_docs)

    scale = corpora.add_parser(
        "scale",
        help="a crawl of exactly N pages (real pages, then perturbed copies under mirror hosts)",
        description=(
            "Take real pages from Debian documentation packages, in order, until the crawl holds N; when they run "
            "out, add copies under mirror hosts (mirror1.<host>, …) with a share of their words replaced by words "
            "of the corpus and a share of their links dropped or re-targeted, deterministic given the seed. Writes "
            f"WARC files of bounded size and a directory covering the copies (a tree per mirror round): {_OUTPUTS}."
        ),
    )
    scale.add_argument("--pages", required=True, type=_positive, metavar="N", help="pages in the crawl")
    scale.add_argument("--out", required=True, metavar="DIR", help="output folder")
    scale.add_argument("--packages", nargs="+", metavar="PACKAGE", default=None,
                       help="packages to take real pages from, in order (default: the 25 of simweb.corpora.scale)")
    scale.add_argument("--seed", type=int, default=0, help="seed of the copies' perturbation (default 0)")
    scale.add_argument("--words", type=float, default=0.2, metavar="F",
                       help="share of a copy's words replaced (default 0.2)")
    scale.add_argument("--drop-links", type=float, default=0.1, metavar="F",
                       help="share of a copy's links into its site dropped (default 0.1)")
    scale.add_argument("--retarget-links", type=float, default=0.1, metavar="F",
                       help="share of a copy's links into its site re-targeted (default 0.1)")
    scale.add_argument("--warc-mb", type=_positive, default=1000, metavar="MB",
                       help="uncompressed page megabytes per WARC file (default 1000)")
    scale.add_argument("--jobs", type=_positive, default=None, metavar="N",
                       help="copy rounds made at once, each in a process of its own (default: one per core)")
    scale.add_argument("--cache", metavar="DIR", default=None, help=_CACHE_HELP)
    scale.set_defaults(func=run_scale)


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number ≥ 1, got {text!r}")
    return value


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


def run_debian_docs(args: argparse.Namespace) -> int:
    from simweb.corpora import CorpusError
    from simweb.corpora.debian_docs import build_debian_docs
    from simweb.corpora.docsites import format_summary

    started = time.perf_counter()
    try:
        summary = build_debian_docs(args.packages, args.out, args.cache)
    except CorpusError as err:
        print(f"simweb corpus debian-docs: {err}", file=sys.stderr)
        return 2
    print(format_summary(summary))
    print(f"written to {args.out} in {time.perf_counter() - started:.1f} s")
    return 0


class _Printed:
    """A logger's ``info`` that prints: the progress lines of a command run without a terminal."""

    def info(self, message: str, *args: object) -> None:
        print(message % args, flush=True)


def run_scale(args: argparse.Namespace) -> int:
    from simweb.corpora import CorpusError
    from simweb.corpora.perturb import Perturbation
    from simweb.corpora.scale import SCALE_PACKAGES, build_scale, format_scale_summary
    from simweb.tasks.progress import steps_reporter

    started = time.perf_counter()
    try:
        # A bar per step on a terminal (the real pages, then the copies), else a line every tenth of the way.
        with steps_reporter("pages", _Printed()) as progress:
            perturbation = Perturbation(args.words, args.drop_links, args.retarget_links, args.seed)
            summary = build_scale(
                args.pages, args.out, packages=args.packages or SCALE_PACKAGES, cache=args.cache,
                perturbation=perturbation, warc_bytes=args.warc_mb * 1_000_000, jobs=args.jobs,
                log=lambda line: print(line, flush=True), progress=progress,
            )
    except (CorpusError, ValueError) as err:  # ValueError: a fraction out of range
        print(f"simweb corpus scale: {err}", file=sys.stderr)
        return 2
    print(format_scale_summary(summary))
    print(f"written to {args.out} in {time.perf_counter() - started:.1f} s")
    return 0
