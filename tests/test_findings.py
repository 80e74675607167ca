"""The judging of results (simweb.core.findings) and the retrieval estimates' bootstrap, on in-memory counts."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simweb.core.findings import (
    PAPER_CLAIMS,
    StrategyResult,
    figure_differences,
    paper_findings,
)
from simweb.core.gamma import ORTHOGONALITY, SIBLING_GAMMA, PairCounts, bootstrap
from simweb.core.grids import figure_label, strategy_grid
from simweb.core.retrieval_metrics import retrieval_estimates

TYPES = ((0, 1), (0, 2), (1, 2), (0, 3), (1, 3), (2, 3))  # (a, b) familial distances, a < b, depth 3
SIBLING_COLUMN = TYPES.index((0, 1))


def counts(concordant: np.ndarray, discordant: np.ndarray, orthogonal: np.ndarray | None = None) -> PairCounts:
    """Pair counts with every judged pair a (same, sibling) pair: per-source Γ = (C − D) / (C + D)."""
    n = concordant.size
    c = np.zeros((n, len(TYPES)), np.int64)
    d = np.zeros((n, len(TYPES)), np.int64)
    c[:, SIBLING_COLUMN], d[:, SIBLING_COLUMN] = concordant, discordant
    orth = np.zeros(n, np.int64) if orthogonal is None else orthogonal
    return PairCounts(np.arange(n), TYPES, c, d, orth, np.full(n, 4, np.int64))


def result(strategy, pair_counts: PairCounts, groups: np.ndarray) -> StrategyResult:
    return StrategyResult(strategy, pair_counts, bootstrap(pair_counts, groups, n_resamples=200, seed=1), {},
                          np.zeros(0, np.int64), np.zeros((0, 0)))


GROUPS = np.repeat(np.arange(10), 3)  # 30 sources in 10 classes


def test_every_claim_names_strategies_of_the_paper_grid():
    paper = strategy_grid("paper")
    for claim in PAPER_CLAIMS:
        labels = {figure_label(claim.figure, s) for s in paper[claim.figure]}
        assert {claim.better, claim.worse} <= labels, claim.text


def test_findings_hold_fail_or_tie_as_the_counts_say():
    fig3 = {figure_label("figure3", s): s for s in strategy_grid("paper")["figure3"]}
    good = counts(np.full(30, 9), np.full(30, 1))
    bad = counts(np.full(30, 1), np.full(30, 9))
    figures = {"figure3": tuple(fig3.values())}

    def verdicts(by_label: dict[str, PairCounts]) -> dict[str, str]:
        results = {fig3[label]: result(fig3[label], c, GROUPS) for label, c in by_label.items()}
        return {f.claim: f.verdict for f in paper_findings(figures, results, GROUPS, n_resamples=200, seed=1)}

    wider = "Larger anchor windows give a higher sibling-Γ (w32 > w0)"
    assert verdicts({"w32": good, "w0": bad})[wider] == "holds"
    assert verdicts({"w32": bad, "w0": good})[wider] == "does not hold"
    assert verdicts({"w32": good, "w0": good})[wider] == "no difference"
    # Only the claims whose two strategies were evaluated are judged.
    assert set(verdicts({"w32": good, "w0": bad})) == {wider}


def test_figure_differences_are_taken_from_the_best_strategy():
    fig4 = strategy_grid("paper")["figure4"][:3]
    orth = [np.full(30, k) for k in (3, 1, 2)]  # the second leaves fewest same-class pairs orthogonal
    results = {s: result(s, counts(np.full(30, 5), np.full(30, 5), o), GROUPS) for s, o in zip(fig4, orth)}
    rows = figure_differences({"figure4": fig4}, results, GROUPS, n_resamples=200, seed=1)
    assert {r.baseline for r in rows} == {figure_label("figure4", fig4[1])}
    assert [r.measure for r in rows] == [ORTHOGONALITY] * 2
    assert all(r.value > 0 for r in rows)  # the others are worse: more orthogonal pairs


@settings(max_examples=40, deadline=None)
@given(signs=st.lists(st.booleans(), min_size=2, max_size=40), classes=st.integers(1, 8), seed=st.integers(0, 3))
def test_retrieval_estimates_share_the_bootstrap_of_gamma(signs, classes, seed):
    """A per-query value of ±1 is the Γ of a source with one judged pair: its mean and interval
    must be Γ's, resample for resample (the same classes drawn, the same seed)."""
    concordant = np.array(signs, np.int64)
    groups = np.arange(concordant.size) % classes
    gamma = bootstrap(counts(concordant, 1 - concordant), groups, n_resamples=100, seed=seed)[SIBLING_GAMMA]
    values = {key: (2.0 * concordant - 1.0) for key in ("precision", "recall", "f", "average_precision", "delta")}
    values["scored"] = np.arange(concordant.size)
    estimate = retrieval_estimates(values, groups, n_resamples=100, seed=seed)["precision_at_10"]
    for a, b in ((gamma.value, estimate.value), (gamma.low, estimate.low), (gamma.high, estimate.high)):
        assert a == pytest.approx(b, abs=1e-12) or (np.isnan(a) and np.isnan(b))


def test_retrieval_estimates_count_only_scored_queries_for_the_class_measures():
    values = {key: np.array([1.0, 0.0]) for key in ("precision", "recall", "f", "average_precision")}
    values["delta"] = np.array([0.2, 0.4, 0.6])
    values["scored"] = np.array([0, 2])
    got = retrieval_estimates(values, np.array([0, 1, 2]), n_resamples=50)
    assert got["precision_at_10"].value == pytest.approx(0.5)
    assert got["delta_at_10"].value == pytest.approx(0.4)
