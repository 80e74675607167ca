"""`simweb evaluate`: judge similarity-search strategies against a topic directory (paper Section 5).

    simweb evaluate --crawl DIR --directory FILE --out REPORT [--grid paper|quick|links|hybrids|full] [--seed N]

DIR is the output of `simweb ingest` (or of `simweb build`, whose crawl is read); FILE an Open Directory RDF dump (content.rdf.u8, also
.gz/.bz2) or a url<TAB>Top/category/path file (further columns are ignored; category<TAB>url lines are read
the other way round). REPORT receives report.html (self-contained),
summary.md, measures.parquet (strategy, measure, value, low, high: the Γ measures, orthogonality,
coverage, and precision/recall/F/average precision and Δ of each query's top 10), differences.parquet
and figures/ (PNG and SVG of the paper's Figures 3–9 for this crawl, and the link measures'), and
summary.json with the recommended strategy — the indexable strategy of best sibling-Γ, its Γ
cross-validated over directory classes — that `simweb build --strategy-from REPORT` builds with.

Exit status: 0 the report was written from the whole directory; 1 the evaluation failed; 2 a usage
error or an input that cannot be read; 3 the report was written, but the directory file ends early
(a download cut short): only its listings before the cut were read, as the report's sample section says.
"""
from __future__ import annotations

import argparse
import math
import os
import sys
from typing import TextIO

from simweb.commands import EXIT_FILE_ERRORS
from simweb.commands.runmode import add_mode_options


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "evaluate",
        help="compare strategies against a topic directory with the paper's Γ measures; write a report",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--crawl", required=True, help="an ingested crawl folder (written by `simweb ingest`) or an index folder (`simweb build`)")
    parser.add_argument("--directory", required=True,
                        help="the topic directory: ODP RDF dump or url<TAB>category TSV (.gz/.bz2 fine)")
    parser.add_argument("--out", required=True, help="the report folder to write")
    parser.add_argument("--grid", choices=("paper", "quick", "links", "hybrids", "full"), default="hybrids",
                        help="paper: every sweep of Figures 3–9 plus Jaccard vs cosine; quick: window sizes, "
                        "contents, links and the metric; links: the link measures of the ENS paper (co-citation "
                        "to extended PageSim, PageRank as a baseline) beside Figure 3's anchor windows; hybrids: "
                        "paper plus each term source alone (out-link ids too), a search over their shares and "
                        "bags compared by overlap (coupling and co-citation as bags) (default); full: hybrids "
                        "plus links")
    parser.add_argument("--seed", type=int, default=0, help="seed of the sample and the bootstrap (default 0)")
    parser.add_argument("--pairs", type=int, default=300,
                        help="pairs of sibling third-level classes to sample (default 300, as the paper)")
    parser.add_argument("--min-pages", type=int, default=2,
                        help="linked-to URLs a class needs to be sampled (default 2)")
    parser.add_argument("--max-pages-per-class", type=int, default=None,
                        help="cap on URLs per sampled class, to bound the all-pairs cost (default: none)")
    parser.add_argument("--directory-pages", default=None,
                        help="the directory's own pages, one URL a line, kept out of the data "
                        "(default: directory_pages.txt beside FILE if there is one)")
    parser.add_argument("--depth", type=int, default=3, metavar="N",
                        help="collapse the directory's categories at this depth below Top (default 3, the "
                             "paper's); a shallower directory is taken at its own depth, and the summary says so")
    parser.add_argument("--format", dest="directory_format", choices=("auto", "rdf", "tsv"), default="auto",
                        help="directory file format (default: sniffed)")
    parser.add_argument("--work", default=None, help="stage cache folder (default REPORT/_work)")
    parser.add_argument("--resamples", type=int, default=1000, help="bootstrap resamples (default 1000)")
    parser.add_argument("--group-size", type=int, default=4, help="strategies per task (default 4)")
    parser.add_argument("--workers", type=int, default=None, help="local Dask workers (default: one per core)")
    parser.add_argument("--dask-address", default=None, help="an existing Dask scheduler to run on")
    add_mode_options(parser, "evaluate-strategies")
    parser.set_defaults(func=run)


def default_directory_pages(directory: str) -> str | None:
    """``directory_pages.txt`` beside a local directory file, the name `simweb corpus debdocs` writes."""
    if "://" in directory:
        return None
    candidate = os.path.join(os.path.dirname(os.path.abspath(directory)), "directory_pages.txt")
    return candidate if os.path.isfile(candidate) else None


def run(args: argparse.Namespace) -> int:
    from simweb.commands.inputs import directory_problem, output_problem
    from simweb.commands.runmode import choose_mode, folder_size, mode_conflict, run_flow

    if mode_conflict(args):
        print(f"simweb evaluate: {mode_conflict(args)}", file=sys.stderr)
        return 2
    if args.depth < 2:
        print(f"simweb evaluate: --depth: expected at least 2 levels (sibling classes need a parent), got "
              f"{args.depth}", file=sys.stderr)
        return 2

    from simweb.tasks.layout import crawl_folder_of

    args.crawl = crawl_folder_of(args.crawl)  # an index folder (`simweb build --out`): the crawl it keeps
    problem = ((f"--crawl {args.crawl} does not exist" if "://" not in args.crawl and not os.path.exists(args.crawl)
                else None) or directory_problem(args.directory) or output_problem(args.out))
    if problem:
        print(f"simweb evaluate: {problem}", file=sys.stderr)
        return 2
    directory_pages = args.directory_pages or default_directory_pages(args.directory)
    if directory_pages:
        print(f"directory's own pages (kept out of the data): {directory_pages}")
    in_process, why = choose_mode(args, folder_size(args.crawl), "evaluate-strategies")
    print(f"simweb evaluate: {args.crawl} against {args.directory}: {why}", file=sys.stderr, flush=True)
    params = {} if in_process else {"dask_address": args.dask_address, "n_workers": args.workers}
    from simweb.core.errors import USER_INPUT_ERRORS
    from simweb.flows.evaluate_strategies import evaluate_strategies

    try:
        summary = run_flow(
            evaluate_strategies, in_process,
            crawl=args.crawl, directory=args.directory, out=args.out, grid=args.grid, seed=args.seed,
            n_pairs=args.pairs, min_pages=args.min_pages, max_pages_per_class=args.max_pages_per_class,
            directory_pages=directory_pages, directory_format=args.directory_format, depth=args.depth, work=args.work,
            n_resamples=args.resamples, group_size=args.group_size, **params,
        )
    except USER_INPUT_ERRORS as err:
        print(f"simweb evaluate: {err}", file=sys.stderr)
        return 2
    except ValueError as err:
        print(f"simweb evaluate: {err}", file=sys.stderr)
        return 1
    print_summary(summary)
    if summary.get("directory_cut"):
        print(f"simweb evaluate: {args.directory}: {summary['directory_cut']} (exit status {EXIT_FILE_ERRORS})",
              file=sys.stderr)
        return EXIT_FILE_ERRORS
    return 0


def print_summary(summary: dict, out: TextIO | None = None) -> None:
    """The sample, the sibling-Γ of every strategy (best first) and the paper's findings."""
    out = out or sys.stdout  # looked up at call time: the caller may have redirected it
    print("sample:", file=out)
    for line in summary.get("sample", []):
        print(f"  {line}", file=out)
    rows = summary.get("sibling_gamma", [])
    width = max([len(r["strategy"]) for r in rows] + [8])
    print(f"\n{'strategy':<{width}}  sibling-Γ  95% interval       seconds   P@10  AP@10   Δ@10", file=out)
    for r in rows:
        retrieval = r.get("retrieval") or {}
        extra = "".join(
            f"  {_number(retrieval.get(m, {}).get('value')):>5}"
            for m in ("precision_at_10", "average_precision_at_10", "delta_at_10"))
        value, low, high = (r.get(k) for k in ("value", "low", "high"))
        shown = "n/a" if value is None or (isinstance(value, float) and math.isnan(value)) else f"{value:.3f}"
        interval = ("" if low is None or (isinstance(low, float) and math.isnan(low))
                    else f"[{low:.3f}, {high:.3f}]")
        seconds = "" if r.get("seconds") is None else f"{r['seconds']:.2f}"
        print(f"{r['strategy']:<{width}}  {shown:>9}  {interval:<17}  {seconds:>7}{extra}",
              file=out)
    recommended = summary.get("recommended")
    if recommended:
        held = recommended.get("held_out") or {}
        section7 = recommended.get("section7") or {}
        kept = recommended.get("kept_default")
        if kept:
            print(f"\nrecommended: keep the default, {recommended['strategy']}  ({recommended['spec']})", file=out)
            print(f"  sibling-Γ on the held-out halves: {_number(kept['default_held_out'])} for the default; "
                  f"{_number(kept['held_out']['value'])} [{_number(kept['held_out']['low'])}, "
                  f"{_number(kept['held_out']['high'])}] for the best the cross-validation chooses, "
                  f"{kept['strategy']} ({kept['spec']}), which does not beat it", file=out)
        else:
            print(f"\nrecommended: {recommended['strategy']}  ({recommended['spec']})", file=out)
            print(f"  sibling-Γ held out (cross-validated over directory classes): {_number(held.get('value'))} "
                  f"[{_number(held.get('low'))}, {_number(held.get('high'))}]; whole sample "
                  f"{_number(recommended['sibling_gamma']['value'])}", file=out)
        if section7 and not kept:
            print(f"  the paper's Section 7 strategy on the same held-out halves: {_number(section7.get('held_out'))}",
                  file=out)
        index = recommended.get("index") or {}
        if index:
            print(f"  its index (m = {index['m']}, α = {index['alpha']}): recall {_number(index['recall'])}, precision "
                  f"{_number(index['precision'])}", file=out)
        print("  build with it: simweb build CRAWL --out INDEX --strategy-from REPORT", file=out)
    findings = summary.get("findings", [])
    if findings:
        print("\nthe paper's findings on this crawl:", file=out)
        for f in findings:
            print(f"  {f['verdict']:<32} {f['claim']} ({f['detail']})", file=out)
    print(f"\nreport: {summary.get('report')}", file=out)


def _number(value) -> str:
    return "n/a" if value is None or (isinstance(value, float) and math.isnan(value)) else f"{value:.3f}"
