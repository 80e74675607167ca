"""Choosing a strategy by its sibling-Γ without inflating the Γ reported for the choice (beyond the paper).

The paper picks the strategy with the best Γ (Section 5) and reports that Γ. Picking the
maximum of many noisy estimates and reporting it overstates what the pick will do on classes
it has not seen. Here the choice is cross-validated over directory classes:

* **Counts.** A source's sibling-Γ (Section 2.3) counts pairs (d1, d2), d1 in the source's
  class, d2 in a sibling class; :class:`simweb.core.gamma.SiblingCounts` splits them by the
  sibling class. The sibling-Γ of a set of classes alone is then the ratio of the sums over the
  rows whose two classes (the source's and the sibling's) both lie in the set: no document of
  another class takes part, as source, d1 or d2.
* **Units.** Classes are split in units: the sampled pairs of sibling classes (Section 5 draws
  the sample as such pairs; a unit keeps a pair together, so each class keeps a sibling on its
  side), or the *families* — all sampled classes under one second-level class — for the
  stricter question of how a choice carries over to other parts of the directory.
* **Folds.** A split puts a random half of the units in A and the rest in B; the strategy
  with the best sibling-Γ on A (the rule used on the whole sample) is scored on B, and the
  other way round. Over ``splits`` random splits this gives 2 · splits held-out values; their
  mean is the held-out estimate of the *choosing procedure*. Fixed reference strategies (e.g.
  the paper's Section 7 choice) are scored on the same B halves, so they compare like with like.
* **Interval.** The whole procedure is repeated on cluster-bootstrap resamples of the units
  (drawn with replacement; the copies of a unit stay on one side of every split; a row between
  two units counts once per pair of their copies), giving a percentile interval.

Γ of a set of pairs is Σ (C − D) / Σ (C + D) (Section 2.3), so everything works on per
unit-pair sums (unit pairs × candidates), in numpy.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from simweb.core.gamma import Estimate

__all__ = ["CrossValidation", "CrossValidationParams", "class_families", "class_units", "cross_validate",
           "half_splits"]


@dataclass(frozen=True, slots=True)
class CrossValidationParams:
    """How the choice is cross-validated: ``splits`` random halvings of the units of classes (each
    used both ways), ``n_resamples`` bootstrap resamples of the units for the interval at
    ``level``, all drawn from ``seed``."""

    splits: int = 50
    seed: int = 0
    n_resamples: int = 200
    level: float = 0.95

    def __post_init__(self) -> None:
        for name in ("splits", "n_resamples"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name}: expected a positive number, got {value!r}")
        if not 0 < self.level < 1:
            raise ValueError(f"level: expected a coverage in (0, 1), got {self.level!r}")


@dataclass(frozen=True, slots=True, eq=False)
class CrossValidation:
    """The outcome of :func:`cross_validate`.

    ``chosen`` is the candidate the rule picks on the whole sample; ``held_out`` the held-out
    estimate of the procedure (mean over folds) with its bootstrap interval; ``fold_chosen`` /
    ``fold_value`` the candidate chosen on each fold's choosing half and its Γ on the other;
    ``fold_units`` marks, per fold, the units it chose on (True) and scored on (False);
    ``references`` each reference candidate's mean Γ over the same scoring halves.
    """

    chosen: int
    held_out: Estimate
    fold_chosen: np.ndarray
    fold_value: np.ndarray
    fold_units: np.ndarray
    references: dict[int, float]
    n_units: int

    def choice_counts(self) -> dict[int, int]:
        """How many folds chose each candidate."""
        values, counts = np.unique(self.fold_chosen, return_counts=True)
        return {int(v): int(c) for v, c in zip(values, counts)}

    def loses_to(self, reference: int) -> bool:
        """Whether choosing by sibling-Γ scores below the reference candidate ``reference`` on the
        same held-out halves (the choice then gains nothing over keeping the reference); False
        when either value is undefined or ``reference`` was not passed as a reference."""
        ref = self.references.get(int(reference))
        if ref is None or np.isnan(ref) or np.isnan(self.held_out.value):
            return False
        return self.held_out.value < ref


def class_families(codes: np.ndarray) -> dict[int, int]:
    """The family (second-level class) of each class, from ``simweb.core.gamma.class_codes``
    of the documents' classes: class code (column depth − 1) → family (column depth − 2). A
    directory of depth 1 has no families: each class is its own."""
    codes = np.asarray(codes)
    if codes.ndim != 2 or codes.shape[1] == 0:
        raise ValueError(f"class codes: expected an (n, depth) array, got shape {codes.shape}")
    family = codes[:, -2] if codes.shape[1] >= 2 else codes[:, -1]
    return {int(c): int(f) for c, f in zip(codes[:, -1], family)}


def class_units(classes: list[int], pairs: list[tuple[int, int]]) -> dict[int, int]:
    """Units of classes that keep each of ``pairs`` together (connected classes share a unit): the
    sampled pairs of sibling classes. ``classes`` are class codes; units are numbered 0, 1, …"""
    parent = {c: c for c in classes}

    def root(c: int) -> int:
        while parent[c] != c:
            parent[c] = parent[parent[c]]
            c = parent[c]
        return c

    for a, b in pairs:
        parent[root(a)] = root(b)
    roots = sorted({root(c) for c in classes})
    number = {r: i for i, r in enumerate(roots)}
    return {c: number[root(c)] for c in classes}


def half_splits(n_units: int, splits: int, seed: int) -> np.ndarray:
    """``splits`` random halvings of ``n_units`` units: a boolean (splits, n_units) array, True
    for the ⌊n/2⌋ units of the first half. Reproducible from ``seed``."""
    if n_units < 2:
        raise ValueError(f"cross-validation: expected at least 2 units of classes to split, got {n_units}")
    rng = np.random.default_rng(seed)
    masks = np.zeros((splits, n_units), dtype=bool)
    for r in range(splits):
        masks[r, rng.permutation(n_units)[: n_units // 2]] = True
    return masks


def _ratio(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, num / np.where(den > 0, den, 1), np.nan)


def _mean_defined(values: np.ndarray) -> np.ndarray:
    """The mean of each row's defined (non-NaN) values; NaN for a row without any."""
    defined = ~np.isnan(values)
    count = defined.sum(axis=-1)
    total = np.where(defined, values, 0.0).sum(axis=-1)
    return np.where(count > 0, total / np.maximum(count, 1), np.nan)


def _pick(gamma: np.ndarray, barred: np.ndarray) -> np.ndarray:
    """The best candidate along the last axis (first on ties; a barred candidate or an undefined Γ never wins)."""
    return np.argmax(np.where(np.isnan(gamma) | barred, -np.inf, gamma), axis=-1)


def cross_validate(numerators: np.ndarray, denominators: np.ndarray, units: np.ndarray,
                   params: CrossValidationParams = CrossValidationParams(),
                   references: tuple[int, ...] = (), eligible: np.ndarray | None = None) -> CrossValidation:
    """Cross-validate choosing the candidate of best sibling-Γ (see the module docstring).

    ``numerators[c, r]`` / ``denominators[c, r]`` are candidate c's C − D and C + D of counting
    row r (:class:`simweb.core.gamma.SiblingCounts`, the same rows for every candidate);
    ``units[r]`` the units of row r's two classes (an (rows, 2) array: the source's class's and
    the sibling class's). Only the ``eligible`` candidates (default: all) can be chosen; they
    are tried in their order, so the first of equal Γs is chosen. ``references`` are
    candidates (eligible or not) whose held-out Γ on the same halves is reported beside.
    """
    numerators = np.asarray(numerators, dtype=np.float64)
    denominators = np.asarray(denominators, dtype=np.float64)
    if numerators.shape != denominators.shape or numerators.ndim != 2:
        raise ValueError(f"expected numerators and denominators of one (candidates, rows) shape, got "
                         f"{numerators.shape} and {denominators.shape}")
    barred = np.zeros(numerators.shape[0], dtype=bool) if eligible is None else ~np.asarray(eligible, dtype=bool)
    if barred.size != numerators.shape[0] or barred.all():
        raise ValueError(f"eligible: expected a flag for each of the {numerators.shape[0]} candidates, at least one set")
    units = np.asarray(units, dtype=np.int64).reshape(-1, 2)
    if units.shape[0] != numerators.shape[1]:
        raise ValueError(f"expected the two units of each of the {numerators.shape[1]} rows, got {units.shape[0]}")
    names, dense = np.unique(units, return_inverse=True)
    units = dense.reshape(-1, 2)
    n_units = names.size
    # Sums per unit pair: (pairs, candidates).
    pairs, row_pair = np.unique(units, axis=0, return_inverse=True)
    row_pair = row_pair.ravel()
    num = np.stack([np.bincount(row_pair, weights=row, minlength=len(pairs)) for row in numerators], axis=1)
    den = np.stack([np.bincount(row_pair, weights=row, minlength=len(pairs)) for row in denominators], axis=1)
    chosen = int(_pick(_ratio(num.sum(axis=0), den.sum(axis=0)), barred))
    masks = half_splits(n_units, params.splits, params.seed)
    folds = np.concatenate([masks, ~masks])  # fold f chooses on folds[f], scores on the rest

    rng = np.random.default_rng(params.seed + 1)
    unit_weights = np.vstack([np.ones(n_units), rng.multinomial(n_units, np.full(n_units, 1.0 / n_units),
                                                                size=params.n_resamples)])
    a, b = pairs[:, 0], pairs[:, 1]
    pair_weights = np.where(a == b, unit_weights[:, a], unit_weights[:, a] * unit_weights[:, b])  # (resamples, pairs)
    # A unit pair counts in a half when both its units are in it.
    choose_in = folds[:, a] & folds[:, b]
    score_in = ~folds[:, a] & ~folds[:, b]
    choose = pair_weights[:, None, :] * choose_in[None, :, :]
    score = pair_weights[:, None, :] * score_in[None, :, :]
    on_choosing = _ratio(choose @ num, choose @ den)  # (resamples, folds, candidates)
    picked = _pick(on_choosing, barred)  # (resamples, folds)
    held = _ratio(np.take_along_axis(score @ num, picked[..., None], axis=2)[..., 0],
                  np.take_along_axis(score @ den, picked[..., None], axis=2)[..., 0])
    # A fold whose choosing half orders no pair for any eligible candidate chooses nothing.
    held = np.where((~np.isnan(on_choosing) & ~barred).any(axis=2), held, np.nan)
    means = _mean_defined(held)  # a fold whose scoring half has no pair (a resample without it) is left out
    value, draws = float(means[0]), means[1:][np.isfinite(means[1:])]
    tail = (1.0 - params.level) / 2.0
    low, high = (np.quantile(draws, [tail, 1.0 - tail]) if draws.size >= 2 else (np.nan, np.nan))
    estimate = Estimate(value, float(low), float(high), float(draws.std(ddof=1)) if draws.size >= 2 else float("nan"))
    ref_values = {}
    for c in references:
        ref = _ratio(score_in.astype(np.float64) @ num[:, c], score_in.astype(np.float64) @ den[:, c])
        ref_values[int(c)] = float(_mean_defined(ref[None, :])[0])
    return CrossValidation(chosen, estimate, picked[0], held[0], folds, ref_values, n_units)
