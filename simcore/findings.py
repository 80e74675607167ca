"""What a grid's results say: strategies compared by a paired bootstrap, and the paper's findings
checked one by one on this crawl (paper Section 5, Figures 3–9; the metric remark of Section 4).

A difference between two strategies on the same sample is judged by the paired cluster
bootstrap of simweb.core.gamma (:func:`simweb.core.gamma.bootstrap_difference`: the same
resampled classes for both): an interval that excludes 0 says the difference is not resampling
noise. :func:`figure_differences` compares each strategy of a figure with the figure's best;
:func:`paper_findings` judges each claim of :data:`PAPER_CLAIMS` ("holds", "does not hold",
"within noise").
"""
from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from simweb.core.gamma import ORTHOGONALITY, SIBLING_GAMMA, Estimate, PairCounts, bootstrap_difference
from simweb.core.grids import FIGURE_MEASURE, AnyStrategy, figure_label

__all__ = [
    "PAPER_CLAIMS",
    "Claim",
    "Difference",
    "Finding",
    "StrategyResult",
    "as_optional",
    "best_first",
    "figure_differences",
    "measure_value",
    "paper_findings",
]


@dataclass(frozen=True, slots=True, eq=False)
class StrategyResult:
    """One strategy's evaluation on the sample: its Γ pair counts, the bootstrap estimates of
    every measure, the strategy stage's stats, and its similarity rows of the showcase sources
    (the Figure 2 listing)."""

    strategy: AnyStrategy
    counts: PairCounts
    estimates: dict[str, Estimate]
    stats: dict
    showcase: np.ndarray
    showcase_rows: np.ndarray


def as_optional(value: float | None) -> float | None:
    """``value`` as a float, or None when it is missing or NaN (tables and JSON say "no value")."""
    return None if value is None or (isinstance(value, float) and math.isnan(value)) else float(value)


def measure_value(result: StrategyResult, measure: str) -> float:
    """The point estimate of ``measure``, −∞ when undefined (so it ranks last)."""
    v = result.estimates[measure].value
    return -math.inf if math.isnan(v) else v


def best_first(results: Mapping[AnyStrategy, StrategyResult], measure: str = SIBLING_GAMMA) -> list[StrategyResult]:
    """The results ranked by ``measure``, best first (stable for ties)."""
    return sorted(results.values(), key=lambda r: measure_value(r, measure), reverse=True)


@dataclass(frozen=True, slots=True)
class Difference:
    """measure(strategy) − measure(baseline) in one figure, with its paired bootstrap interval."""

    figure: str
    strategy: str  # labels as in the figure (simweb.core.grids.figure_label)
    baseline: str
    measure: str
    value: float | None
    low: float | None
    high: float | None


def figure_differences(figures: Mapping[str, tuple[AnyStrategy, ...]], results: Mapping[AnyStrategy, StrategyResult],
                       groups: np.ndarray, *, n_resamples: int = 1000, seed: int = 0) -> list[Difference]:
    """Per figure: each strategy minus the figure's best one (lowest orthogonality in Figure 4,
    highest sibling-Γ elsewhere), with a paired bootstrap interval over ``groups``."""
    rows = []
    for figure, strategies in figures.items():
        measure = FIGURE_MEASURE.get(figure, SIBLING_GAMMA)
        present = [results[s] for s in dict.fromkeys(strategies) if s in results]
        if len(present) < 2:
            continue
        lower_is_better = measure == ORTHOGONALITY
        sign = 1.0 if lower_is_better else -1.0
        top = sorted(present, key=lambda r: sign * measure_value(r, measure))[0]
        for other in present:
            if other is top:
                continue
            diff = bootstrap_difference(other.counts, top.counts, groups, n_resamples=n_resamples, seed=seed)[measure]
            rows.append(Difference(figure, figure_label(figure, other.strategy), figure_label(figure, top.strategy),
                                   measure, as_optional(diff.value), as_optional(diff.low), as_optional(diff.high)))
    return rows


@dataclass(frozen=True, slots=True)
class Claim:
    """A finding of the paper: in ``figure``, the strategy labelled ``better`` beats ``worse`` on
    ``measure`` (where a lower value is better when ``lower_is_better``)."""

    text: str
    figure: str
    better: str
    worse: str
    measure: str = SIBLING_GAMMA
    lower_is_better: bool = False


PAPER_CLAIMS = (
    Claim("Larger anchor windows give a higher sibling-Γ (w32 > w0)", "figure3", "w32", "w0"),
    Claim("Anchor windows beat page contents (w32 > contents)", "figure3", "w32", "contents"),
    Claim("Anchor windows beat pure links (w32 > links)", "figure3", "w32", "links"),
    Claim("Topical windows beat the narrow syntactic ones", "figure3", "topical", "syntactic"),
    Claim("Small windows leave more same-class pairs orthogonal (w0 > w32)", "figure4", "w32", "w0",
          ORTHOGONALITY, True),
    Claim("Pure links leave more same-class pairs orthogonal than anchor windows (links > w32)", "figure4", "w32",
          "links", ORTHOGONALITY, True),
    Claim("Adding page contents to anchor windows helps", "figure5", "Anchor Window, Content", "Anchor Window"),
    Claim("Adding link ids to anchor windows and contents lowers Γ", "figure5", "Anchor Window, Content",
          "Anchor Window, Content, Links"),
    Claim("Distance weighting helps", "figure6", "Distance", "None"),
    Claim("Frequency weighting helps", "figure6", "Frequency", "None"),
    Claim("Distance and frequency weighting together beat distance alone", "figure6", "Distance and Frequency",
          "Distance"),
    Claim("sqrt is the better monotonic frequency weighting (sqrt > log)", "figure7", "sqrt", "log"),
    Claim("NMDF does (slightly) better than sqrt", "figure7", "NMDF", "sqrt"),
    Claim("StopStem beats NoStem", "figure9", "StopStem", "NoStem"),
    Claim("Stem beats StopStem (slightly)", "figure9", "Stem", "StopStem"),
)


@dataclass(frozen=True, slots=True)
class Finding:
    """A claim judged on this crawl: the verdict, the two values, and the advantage of the
    claimed winner with its paired bootstrap interval (None where undefined)."""

    claim: str
    figure: str
    measure: str
    verdict: str
    detail: str
    advantage: float | None
    low: float | None
    high: float | None

    def to_dict(self) -> dict:
        return {name: getattr(self, name) for name in self.__dataclass_fields__}


def _verdict(value: float, low: float, high: float) -> str:
    """How an advantage and its interval read: "holds" when the interval excludes 0 in the
    claimed direction, "does not hold" the other way, "within noise" otherwise."""
    if math.isnan(value):
        return "undecided (no comparable pairs)"
    if value == 0.0:
        return "no difference"
    if not math.isnan(low) and low > 0:
        return "holds"
    if not math.isnan(high) and high < 0:
        return "does not hold"
    return "within noise" + (" (same direction)" if value > 0 else " (other direction)")


def paper_findings(figures: Mapping[str, tuple[AnyStrategy, ...]], results: Mapping[AnyStrategy, StrategyResult],
                   groups: np.ndarray, *, n_resamples: int = 1000, seed: int = 0) -> list[Finding]:
    """The paper's Section 5 claims whose two strategies the grid evaluated, each judged with a
    paired bootstrap of the difference it rests on; then Section 4's "the Jaccard coefficient and
    the cosine measure yield comparable results" when the grid compares the metrics."""

    def find(figure: str, label: str) -> StrategyResult | None:
        for s in figures.get(figure, ()):
            if figure_label(figure, s) == label and s in results:
                return results[s]
        return None

    findings = []
    for claim in PAPER_CLAIMS:
        a, b = find(claim.figure, claim.better), find(claim.figure, claim.worse)
        if a is None or b is None:
            continue
        diff = bootstrap_difference(a.counts, b.counts, groups, n_resamples=n_resamples, seed=seed)[claim.measure]
        sign = -1.0 if claim.lower_is_better else 1.0
        value, low, high = sign * diff.value, *sorted((sign * diff.low, sign * diff.high))
        va, vb = a.estimates[claim.measure].value, b.estimates[claim.measure].value
        findings.append(Finding(claim.text, claim.figure, claim.measure, _verdict(value, low, high),
                                f"{claim.better} {va:.3f} vs {claim.worse} {vb:.3f}",
                                as_optional(value), as_optional(low), as_optional(high)))
    pair = [s for s in figures.get("metric", ()) if s in results][:2]
    if len(pair) == 2:
        a, b = results[pair[0]], results[pair[1]]
        diff = bootstrap_difference(a.counts, b.counts, groups, n_resamples=n_resamples, seed=seed)[SIBLING_GAMMA]
        comparable = not math.isnan(diff.low) and diff.low <= 0 <= diff.high
        findings.append(Finding(
            "Jaccard and cosine give comparable results (Section 4)", "metric", SIBLING_GAMMA,
            "holds" if comparable else f"does not hold ({'Jaccard' if diff.value > 0 else 'cosine'} better)",
            f"jaccard {a.estimates[SIBLING_GAMMA].value:.3f} vs cosine {b.estimates[SIBLING_GAMMA].value:.3f}",
            as_optional(diff.value), as_optional(diff.low), as_optional(diff.high),
        ))
    return findings
