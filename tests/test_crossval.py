"""Cross-validated choice of a strategy over directory classes (simweb.core.crossval)."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simweb.core.crossval import CrossValidationParams, class_families, class_units, cross_validate, half_splits
from simweb.core.gamma import class_codes


def _rows(gamma: np.ndarray, units: np.ndarray, pairs: float = 10.0) -> tuple[np.ndarray, np.ndarray]:
    """(C − D, C + D) of candidates whose Γ on counting row r is gamma[c, r], with ``pairs`` pairs a row."""
    den = np.full(gamma.shape, pairs)
    return gamma * den, den


def test_units_keep_sampled_pairs_together_and_families_are_second_level_classes():
    classes = [("A", "x", "1"), ("A", "x", "2"), ("A", "y", "1"), ("B", "x", "1"), ("A", "x", "3")]
    codes = class_codes(classes)
    assert class_families(codes) == {0: 0, 1: 0, 2: 1, 3: 2, 4: 0}
    assert class_units([0, 1, 2, 3, 4], [(0, 1), (2, 3), (4, 1)]) == {0: 0, 1: 0, 4: 0, 2: 1, 3: 1}


def test_a_strategy_is_never_scored_on_the_classes_it_was_chosen_on():
    # Two units of classes. Candidate 0 is perfect on the pairs inside unit 0 and reversed inside
    # unit 1; candidate 1 the opposite. The pairs between the two units favour candidate 0 a
    # hundredfold, but they belong to neither half. Each fold chooses on one unit and scores on
    # the other, so the procedure's held-out Γ is −1, though each candidate is best somewhere and
    # candidate 0 best on the whole sample. Scoring on the classes chosen on would give +1.
    units = np.array([[0, 0]] * 4 + [[1, 1]] * 4 + [[0, 1], [1, 0]])
    gamma = np.array([[1.0] * 4 + [-1.0] * 4 + [1.0, 1.0], [-1.0] * 4 + [1.0] * 4 + [-1.0, -1.0]])
    num, den = _rows(gamma, units)
    den[:, 8:] *= 100
    num[:, 8:] *= 100
    cv = cross_validate(num, den, units, CrossValidationParams(splits=7, n_resamples=20), references=(0, 1))
    assert cv.chosen == 0
    assert cv.held_out.value == pytest.approx(-1.0) and set(cv.fold_value.tolist()) == {-1.0}
    assert cv.references == {0: pytest.approx(0.0), 1: pytest.approx(0.0)}  # ±1, half of the time each
    for chose_on, picked in zip(cv.fold_units, cv.fold_chosen):
        assert chose_on.sum() == 1 and picked == int(np.flatnonzero(chose_on)[0])  # candidate u wins unit u


@settings(max_examples=60, deadline=None)
@given(st.integers(2, 9), st.integers(1, 5), st.integers(0, 10_000))
def test_each_fold_chooses_on_pairs_of_one_half_and_scores_on_pairs_of_the_other(n_units, n_candidates, seed):
    rng = np.random.default_rng(seed)
    units = rng.integers(0, n_units, size=(50, 2))
    units[:n_units, 0] = units[:n_units, 1] = np.arange(n_units)  # every unit has rows
    den = rng.integers(0, 20, size=(n_candidates, 50)).astype(float)
    num = np.round(den * rng.uniform(-1, 1, size=den.shape))
    cv = cross_validate(num, den, units, CrossValidationParams(splits=5, seed=seed, n_resamples=10))
    for chose_on, picked, value in zip(cv.fold_units, cv.fold_chosen, cv.fold_value):
        on = chose_on[units[:, 0]] & chose_on[units[:, 1]]
        off = ~chose_on[units[:, 0]] & ~chose_on[units[:, 1]]
        gamma_on = [num[c, on].sum() / den[c, on].sum() if den[c, on].sum() else -np.inf for c in range(n_candidates)]
        assert picked == int(np.argmax(gamma_on))
        expected = num[picked, off].sum() / den[picked, off].sum() if den[picked, off].sum() else np.nan
        assert value == pytest.approx(expected, nan_ok=True)
    assert -1.0 <= cv.held_out.value <= 1.0 or np.isnan(cv.held_out.value)


def test_reproducible_with_a_seed_and_the_whole_sample_decides_the_choice():
    rng = np.random.default_rng(3)
    units = np.repeat(np.arange(8), 8)[:, None].repeat(2, axis=1)
    num, den = _rows(rng.uniform(-0.2, 0.9, size=(6, 8))[:, units[:, 0]], units)
    params = CrossValidationParams(splits=20, seed=5, n_resamples=50)
    a, b = cross_validate(num, den, units, params), cross_validate(num, den, units, params)
    assert a.held_out == b.held_out and np.array_equal(a.fold_chosen, b.fold_chosen)
    c = cross_validate(num, den, units, CrossValidationParams(splits=20, seed=6, n_resamples=50))
    assert not np.array_equal(a.fold_units, c.fold_units)
    assert a.chosen == int(np.argmax(num.sum(axis=1) / den.sum(axis=1)))
    assert a.held_out.low <= a.held_out.value <= a.held_out.high


def test_choosing_among_equal_candidates_is_not_inflated():
    # Ten candidates that are one noisy strategy: the best on the whole sample looks better
    # than it is; its held-out value falls back towards the truth (0.5 on average).
    rng = np.random.default_rng(0)
    units = np.repeat(np.arange(12), 10)[:, None].repeat(2, axis=1)
    den = np.full((10, units.shape[0]), 40.0)
    num = np.round(den * np.clip(0.5 + rng.normal(0, 0.3, size=den.shape), -1, 1))
    whole = num.sum(axis=1) / den.sum(axis=1)
    cv = cross_validate(num, den, units, CrossValidationParams(splits=40, n_resamples=50))
    assert whole.max() - whole.mean() > 0.01
    assert abs(cv.held_out.value - whole.mean()) < whole.max() - whole.mean()


def test_only_eligible_candidates_are_chosen_but_references_are_scored():
    units = np.repeat(np.arange(6), 4)[:, None].repeat(2, axis=1)
    num, den = _rows(np.array([[0.9] * 24, [0.5] * 24, [0.4] * 24]), units)
    cv = cross_validate(num, den, units, CrossValidationParams(splits=5, n_resamples=5),
                        references=(0,), eligible=np.array([False, True, True]))
    assert cv.chosen == 1 and set(cv.fold_chosen.tolist()) == {1}
    assert cv.held_out.value == pytest.approx(0.5) and cv.references[0] == pytest.approx(0.9)
    with pytest.raises(ValueError, match="at least one set"):
        cross_validate(num, den, units, eligible=np.zeros(3, bool))


def test_bad_inputs_are_refused():
    with pytest.raises(ValueError, match="at least 2 units"):
        half_splits(1, 3, 0)
    with pytest.raises(ValueError, match="splits"):
        CrossValidationParams(splits=0)
    with pytest.raises(ValueError, match="one \\(candidates, rows\\) shape"):
        cross_validate(np.zeros((2, 3)), np.zeros((2, 4)), np.zeros((3, 2), int))


def test_a_fold_that_cannot_choose_is_left_out():
    # The only eligible candidate (1) ties every pair of unit 2: a fold choosing on unit 2 alone
    # has nothing to choose by and gives no held-out value (rather than scoring a barred candidate).
    units = np.array([[0, 0]] * 2 + [[1, 1]] * 2 + [[2, 2]] * 2)
    num = np.array([[-5.0] * 6, [4.0, 4.0, 2.0, 2.0, 0.0, 0.0]])
    den = np.array([[5.0] * 6, [5.0, 5.0, 5.0, 5.0, 0.0, 0.0]])
    cv = cross_validate(num, den, units, CrossValidationParams(splits=6, n_resamples=5),
                        eligible=np.array([False, True]))
    assert set(cv.fold_chosen[~cv.fold_units[:, 2] | (cv.fold_units.sum(axis=1) > 1)].tolist()) == {1}
    alone_on_2 = cv.fold_units[:, 2] & (cv.fold_units.sum(axis=1) == 1)
    assert alone_on_2.any() and np.isnan(cv.fold_value[alone_on_2]).all()
    assert np.nanmin(cv.fold_value) > 0  # candidate 1's Γ on units 0 and 1; never the barred one's −1
    assert cv.held_out.value == pytest.approx(np.nanmean(cv.fold_value)) and cv.held_out.value > 0


def test_a_choice_that_scores_below_the_default_on_the_held_out_halves_loses_to_it():
    # Candidate 0, the default, has Γ 0.5 on every unit; twenty others are noise around 0.4 whose
    # best on the whole sample beats 0.5 by luck. Chosen on half of the units, the luckiest scores
    # about 0.4 on the other half: below the default on the same halves, so the choice loses to it.
    # A candidate truly better everywhere (0.8) does not lose.
    rng = np.random.default_rng(4)
    n_units = 12
    units = np.repeat(np.arange(n_units), 3)[:, None].repeat(2, axis=1)
    noise = np.repeat(rng.uniform(-0.2, 1.0, size=(20, n_units)), 3, axis=1)
    gamma = np.vstack([np.full((1, units.shape[0]), 0.5), noise])
    num, den = _rows(gamma, units)
    cv = cross_validate(num, den, units, CrossValidationParams(splits=10, n_resamples=20), references=(0,))
    assert cv.chosen != 0 and (num[cv.chosen].sum() / den[cv.chosen].sum()) > 0.5
    assert cv.held_out.value < cv.references[0] == pytest.approx(0.5)
    assert cv.loses_to(0) and not cv.loses_to(5)  # 5 was not passed as a reference
    better = np.vstack([gamma, np.full((1, units.shape[0]), 0.8)])
    num, den = _rows(better, units)
    cv = cross_validate(num, den, units, CrossValidationParams(splits=10, n_resamples=20), references=(0,))
    assert cv.chosen == 21 and not cv.loses_to(0)
