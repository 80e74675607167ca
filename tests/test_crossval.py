"""Cross-validated choice of a strategy over directory families (simweb.core.crossval)."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simweb.core.crossval import CrossValidationParams, class_families, cross_validate, half_splits
from simweb.core.gamma import class_codes


def _counts(gamma_by_unit: np.ndarray, units: np.ndarray, pairs: int = 10) -> tuple[np.ndarray, np.ndarray]:
    """Per-source (C − D, C + D) of candidates whose Γ on every source of family u is gamma_by_unit[c, u]."""
    den = np.full((gamma_by_unit.shape[0], units.size), float(pairs))
    return gamma_by_unit[:, units] * den, den


def test_families_are_second_level_classes():
    classes = [("A", "x", "1"), ("A", "x", "2"), ("A", "y", "1"), ("B", "x", "1")]
    assert class_families(class_codes(classes)).tolist() == [0, 0, 1, 2]


def test_a_strategy_is_never_scored_on_the_families_it_was_chosen_on():
    # Two families. Candidate 0 is perfect on family 0 and reversed on family 1; candidate 1 the
    # opposite. Each fold chooses on one family and scores on the other, so the held-out Γ of the
    # procedure is −1, though every candidate looks best somewhere. Scoring on the choosing
    # families (the leak) would give +1.
    units = np.repeat([0, 1], 5)
    num, den = _counts(np.array([[1.0, -1.0], [-1.0, 1.0]]), units)
    cv = cross_validate(num, den, units, CrossValidationParams(splits=7, n_resamples=20), references=(0, 1))
    assert cv.held_out.value == pytest.approx(-1.0)
    assert set(cv.fold_value.tolist()) == {-1.0}
    assert cv.references == {0: pytest.approx(0.0), 1: pytest.approx(0.0)}  # each half of the time ±1
    for chose_on, picked in zip(cv.fold_units, cv.fold_chosen):
        assert chose_on.sum() == 1 and picked == int(np.flatnonzero(chose_on)[0])  # candidate u wins family u


@settings(max_examples=60, deadline=None)
@given(st.integers(2, 9), st.integers(1, 5), st.integers(0, 10_000))
def test_each_fold_chooses_on_one_half_and_scores_on_the_other(n_units, n_candidates, seed):
    rng = np.random.default_rng(seed)
    units = rng.integers(0, n_units, size=40)
    units[:n_units] = np.arange(n_units)  # every family has a source
    den = rng.integers(0, 20, size=(n_candidates, units.size)).astype(float)
    num = np.round(den * rng.uniform(-1, 1, size=den.shape))
    cv = cross_validate(num, den, units, CrossValidationParams(splits=5, seed=seed, n_resamples=10))
    for chose_on, picked, value in zip(cv.fold_units, cv.fold_chosen, cv.fold_value):
        on, off = chose_on[units], ~chose_on[units]
        gamma_on = [num[c, on].sum() / den[c, on].sum() if den[c, on].sum() else -np.inf for c in range(n_candidates)]
        assert picked == int(np.argmax(gamma_on))
        expected = num[picked, off].sum() / den[picked, off].sum() if den[picked, off].sum() else np.nan
        assert value == pytest.approx(expected, nan_ok=True)
    assert -1.0 <= cv.held_out.value <= 1.0 or np.isnan(cv.held_out.value)


def test_reproducible_with_a_seed_and_the_whole_sample_decides_the_choice():
    rng = np.random.default_rng(3)
    units = rng.integers(0, 8, size=60)
    num, den = _counts(rng.uniform(-0.2, 0.9, size=(6, 8)), units)
    params = CrossValidationParams(splits=20, seed=5, n_resamples=50)
    a, b = cross_validate(num, den, units, params), cross_validate(num, den, units, params)
    assert a.held_out == b.held_out and np.array_equal(a.fold_chosen, b.fold_chosen)
    c = cross_validate(num, den, units, CrossValidationParams(splits=20, seed=6, n_resamples=50))
    assert not np.array_equal(a.fold_units, c.fold_units)
    assert a.chosen == int(np.argmax(num.sum(axis=1) / den.sum(axis=1)))
    assert a.held_out.low <= a.held_out.value <= a.held_out.high


def test_choosing_among_equal_candidates_is_not_inflated():
    # Ten candidates that are the same noisy strategy: the best on the whole sample looks better
    # than it is; its held-out value falls back to the truth (0.5 on average).
    rng = np.random.default_rng(0)
    units = np.repeat(np.arange(12), 10)
    den = np.full((10, units.size), 40.0)
    num = np.round(den * np.clip(0.5 + rng.normal(0, 0.3, size=den.shape), -1, 1))
    whole = num.sum(axis=1) / den.sum(axis=1)
    cv = cross_validate(num, den, units, CrossValidationParams(splits=40, n_resamples=50))
    assert whole.max() - whole.mean() > 0.01
    assert abs(cv.held_out.value - whole.mean()) < whole.max() - whole.mean()


def test_bad_inputs_are_refused():
    with pytest.raises(ValueError, match="at least 2 families"):
        half_splits(1, 3, 0)
    with pytest.raises(ValueError, match="splits"):
        CrossValidationParams(splits=0)
    with pytest.raises(ValueError, match="one \\(candidates, sources\\) shape"):
        cross_validate(np.zeros((2, 3)), np.zeros((2, 4)), np.zeros(3, int))


def test_only_eligible_candidates_are_chosen_but_references_are_scored():
    units = np.repeat(np.arange(6), 4)
    num, den = _counts(np.array([[0.9] * 6, [0.5] * 6, [0.4] * 6]), units)
    cv = cross_validate(num, den, units, CrossValidationParams(splits=5, n_resamples=5),
                        references=(0,), eligible=np.array([False, True, True]))
    assert cv.chosen == 1 and set(cv.fold_chosen.tolist()) == {1}
    assert cv.held_out.value == pytest.approx(0.5) and cv.references[0] == pytest.approx(0.9)
    with pytest.raises(ValueError, match="at least one set"):
        cross_validate(num, den, units, eligible=np.zeros(3, bool))
