"""The evaluation's report: bootstrap intervals, tables, figures and the pages (paper Sections 2–5).

From the sample stage's output and each strategy's counts (tasks/stages/eval_sample.py,
tasks/stages/eval_strategies.py) :func:`write_report` computes every measure's cluster-bootstrap
interval (simweb.core.gamma, simweb.core.retrieval_metrics), compares strategies and checks the
paper's findings (simweb.core.findings), draws the figures (tasks/report_figures.py) and writes
into the report folder:

    measures.parquet      strategy, measure, value, bootstrap interval, pair counts (MEASURES_SCHEMA)
    differences.parquet   per figure, each strategy minus the figure's best (DIFFERENCES_SCHEMA)
    figures/              the paper's Figures 3–9 for this crawl, PNG and SVG
    summary.md            the report in Markdown
    report.html           the same, self-contained (figures embedded)
    summary.json          the sibling-Γ of every strategy, the findings, the recommended strategy
                          (tasks/eval_recommend.py) and the index's agreement (tasks/stages/eval_index.py)

The pages are rendered from one :class:`~simweb.tasks.report_pages.ReportContext` (tasks/report_pages.py).
"""
from __future__ import annotations

import dataclasses
import datetime as _dt
import json
import math
from collections.abc import Mapping

import numpy as np
import pyarrow as pa

from simweb.core.directory import cut_note
from simweb.core.findings import (
    StrategyResult,
    as_optional,
    best_first,
    figure_differences,
    paper_findings,
)
from simweb.core.gamma import (
    GAMMA_MEASURES,
    PAIR_COUNT_MEASURES,
    SIBLING_GAMMA,
    bootstrap,
    distance_names,
    source_gamma,
)
from simweb.core.grids import AnyStrategy
from simweb.core.index_agreement import INDEX_STRATEGY
from simweb.core.retrieval_metrics import RETRIEVAL_MEASURES, retrieval_estimates
from simweb.core.strategy import Metric, Strategy
from simweb.tasks.report_figures import draw_figures
from simweb.tasks.report_pages import (
    LISTING_RANKS,
    Listing,
    Ranked,
    ReportContext,
    SourceListings,
    html_page,
    markdown_page,
)
from simweb.tasks.stagecache import StageOutput
from simweb.tasks.stages.eval_sample import LoadedSample, load_sample
from simweb.tasks.stages.eval_strategies import load_strategy_output
from simweb.tasks.storage import filesystem, join, write_bytes_atomic, write_parquet_atomic

__all__ = ["DIFFERENCES_TABLE", "MEASURES_TABLE", "write_report"]

COVERAGE = "coverage"  # fraction of the sample with a non-empty bag under the strategy
# Names of the data sets a report folder holds.
MEASURES_TABLE = "measures.parquet"
DIFFERENCES_TABLE = "differences.parquet"
MEASURES_SCHEMA = pa.schema(
    [
        pa.field("strategy", pa.string(), nullable=False),  # Strategy.label
        pa.field("spec", pa.string(), nullable=False),  # .spec(), readable by simweb.core.grids.parse_strategy
        pa.field("measure", pa.string(), nullable=False),
        pa.field("value", pa.float64()),
        pa.field("low", pa.float64()),  # bootstrap percentile interval
        pa.field("high", pa.float64()),
        pa.field("se", pa.float64()),  # bootstrap standard error
        pa.field("concordant", pa.int64()),  # pairs behind a Γ (null for other measures)
        pa.field("discordant", pa.int64()),
        pa.field("seconds", pa.float64()),  # bags + similarity + counting for this strategy
    ]
)
DIFFERENCES_SCHEMA = pa.schema(
    [
        pa.field("figure", pa.string(), nullable=False),
        pa.field("strategy", pa.string(), nullable=False),
        pa.field("baseline", pa.string(), nullable=False),
        pa.field("measure", pa.string(), nullable=False),
        pa.field("value", pa.float64()),  # measure(strategy) − measure(baseline)
        pa.field("low", pa.float64()),  # paired bootstrap interval
        pa.field("high", pa.float64()),
    ]
)


def write_report(
    out: str,
    sample: StageOutput,
    figures: dict[str, tuple[AnyStrategy, ...]],
    results: dict[AnyStrategy, StageOutput],
    *,
    seed: int = 0,
    n_resamples: int = 1000,
    title: str = "",
    recommendation: dict | None = None,
    index: list[StageOutput] = (),
) -> dict:
    """Bootstrap intervals, tables, figures and the HTML/Markdown report in ``out``.

    ``recommendation`` is tasks/eval_recommend.py's record, ``index`` the ``eval-index`` outputs
    (tasks/stages/eval_index.py) of the Section 7 strategy and the recommended one. Returns a summary:
    paths of the report files, each strategy's sibling-Γ with its interval, the recommendation.
    """
    loaded = load_sample(sample.path)
    groups = loaded.codes[:, -1]  # resample whole classes: their sources share the ground truth
    by_strategy: dict[AnyStrategy, StrategyResult] = {}
    for strategy, output in results.items():
        saved = load_strategy_output(output.path)
        estimates = bootstrap(saved.counts, groups, n_resamples=n_resamples, seed=seed)
        estimates.update(retrieval_estimates(saved.retrieval, groups, n_resamples=n_resamples, seed=seed))
        by_strategy[strategy] = StrategyResult(strategy, saved.counts, estimates, output.stats, saved.showcase,
                                               saved.showcase_rows)

    fs, out_path = filesystem(out)
    fs.makedirs(out_path, exist_ok=True)
    write_parquet_atomic(_measures_table(by_strategy), join(out, MEASURES_TABLE))
    differences = figure_differences(figures, by_strategy, groups, n_resamples=n_resamples, seed=seed)
    write_parquet_atomic(pa.Table.from_pylist([dataclasses.asdict(d) for d in differences], schema=DIFFERENCES_SCHEMA),
                         join(out, DIFFERENCES_TABLE))

    figure_files = draw_figures(out, figures, by_strategy)
    jaccard = [r for r in by_strategy.values()
               if isinstance(r.strategy, Strategy) and r.strategy.metric is Metric.JACCARD]
    ranked = best_first({r.strategy: r for r in jaccard})
    best, worst = (ranked[0], ranked[-1]) if ranked else (None, None)
    findings = paper_findings(figures, by_strategy, groups, n_resamples=n_resamples, seed=seed)
    agreements = {o.stats.get("spec"): o.stats.get("agreement") for o in index}
    section7 = agreements.get(INDEX_STRATEGY.spec())
    if recommendation is not None:
        recommendation = {**recommendation, "index": agreements.get(recommendation["spec"])}
    context = ReportContext(
        title=title or "simweb evaluation report",
        generated=_dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        sample=loaded.info,
        figures=figures,
        results=by_strategy,
        figure_files=figure_files,
        listings=_listings(loaded, best, worst) if best is not None else [],
        findings=findings,
        index=section7,
        n_resamples=n_resamples,
        seed=seed,
        recommendation=recommendation,
    )
    write_bytes_atomic(markdown_page(context).encode(), join(out, "summary.md"))
    write_bytes_atomic(html_page(context).encode(), join(out, "report.html"))
    summary = {
        "report": join(out, "report.html"),
        "summary": join(out, "summary.md"),
        "measures": join(out, MEASURES_TABLE),
        "sample": loaded.info.get("description_lines", []),
        # What to say of a directory file cut short (its listings before the cut were read), or None.
        "directory_cut": cut_note(loaded.info.get("directory_counts", {})),
        "sibling_gamma": [
            {"strategy": r.strategy.label, **dataclasses.asdict(r.estimates[SIBLING_GAMMA]),
             "seconds": r.stats.get("seconds"),
             "retrieval": {m: dataclasses.asdict(r.estimates[m]) for m in RETRIEVAL_MEASURES if m in r.estimates}}
            for r in best_first(by_strategy)
        ],
        "best": best.strategy.label if best else None,
        "worst": worst.strategy.label if worst else None,
        "findings": [f.to_dict() for f in findings],
        "recommended": recommendation,
        "index": section7,
    }
    write_bytes_atomic(json.dumps(summary, indent=1, default=_json_default).encode(), join(out, "summary.json"))
    return summary


def _json_default(value):
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, (np.integer,)):
        return int(value)
    if isinstance(value, (np.floating,)):
        return float(value)
    raise TypeError(f"cannot write {type(value).__name__} to JSON")


def _measures_table(results: Mapping[AnyStrategy, StrategyResult]) -> pa.Table:
    rows = []
    for strategy, result in results.items():
        seconds = result.stats.get("seconds")
        for measure in (*PAIR_COUNT_MEASURES, *RETRIEVAL_MEASURES):
            if measure not in result.estimates:
                continue
            est = result.estimates[measure]
            if measure in GAMMA_MEASURES:
                c, d = result.counts.per_source(measure)
                c, d = int(c.sum()), int(d.sum())
            else:
                c = d = None
            rows.append({"strategy": strategy.label, "spec": strategy.spec(), "measure": measure,
                         "value": as_optional(est.value), "low": as_optional(est.low),
                         "high": as_optional(est.high), "se": as_optional(est.se),
                         "concordant": c, "discordant": d, "seconds": seconds})
        n = result.stats.get("sample") or 0
        coverage = (result.stats.get("with_bag", 0) / n) if n else None
        rows.append({"strategy": strategy.label, "spec": strategy.spec(), "measure": COVERAGE,
                     "value": coverage, "low": None, "high": None, "se": None,
                     "concordant": None, "discordant": None, "seconds": seconds})
    return pa.Table.from_pylist(rows, schema=MEASURES_SCHEMA)


def _listings(sample: LoadedSample, best: StrategyResult, worst: StrategyResult) -> list[SourceListings]:
    """For each showcase source, the documents at ranks 1, 2, 5, … under the best and the worst
    strategy with their similarity and category (paper Figure 2)."""
    out = []
    codes = sample.codes
    for position, source in enumerate(best.showcase.tolist()):
        listings = []
        for result in (best, worst):
            row = result.showcase_rows[position].copy()
            order = [i for i in np.argsort(-row, kind="stable").tolist() if i != source]
            ranks = []
            for rank in LISTING_RANKS:
                if rank <= len(order):
                    doc = order[rank - 1]
                    distance = int(codes.shape[1] - (codes[doc] == codes[source]).sum())
                    ranks.append(Ranked(rank, float(row[doc]), sample.urls[doc], "/" + "/".join(sample.classes[doc]),
                                        distance_names(codes.shape[1])[distance]))
            gamma = as_optional(float(source_gamma(result.counts)[source]))
            listings.append(Listing(result.strategy.label, gamma, tuple(ranks)))
        out.append(SourceListings(sample.urls[source], "/" + "/".join(sample.classes[source]), tuple(listings)))
    return out
