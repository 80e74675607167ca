"""Choosing a strategy by its sibling-Γ without inflating the Γ reported for the choice (beyond the paper).

The paper picks the strategy with the best Γ (Section 5) and reports that Γ. Picking the
maximum of many noisy estimates and reporting it overstates what the pick will do on classes
it has not seen. Here the choice is cross-validated over directory classes:

* **Units.** A source's sibling-Γ (Section 2.3) compares documents of its own class with
  documents of its *sibling* classes — the classes under the same second-level class. The
  unit of a split is therefore a *family*: a second-level class with all its sampled
  third-level classes. Every pair a source's sibling-Γ counts then lies inside the source's
  family, so a half of the families is scored by pairs of that half only.
* **Folds.** A split puts a random half of the families in A and the rest in B; the strategy
  with the best sibling-Γ summed over the sources of A (the rule used on the whole sample) is
  scored on the sources of B, and the other way round. Over ``splits`` random splits this
  gives 2 · splits held-out values; their mean is the held-out estimate of the *choosing
  procedure*. Fixed reference strategies (e.g. the paper's Section 7 choice) are scored on the
  same B halves, so they compare like with like.
* **Interval.** The whole procedure is repeated on cluster-bootstrap resamples of the families
  (drawn with replacement, the copies of a family staying on one side of every split), giving
  a percentile interval of the held-out estimate.

Γ of a set of sources is Σ (C − D) / Σ (C + D) over them (Section 2.3), so a half's Γ is a
ratio of per-family sums: everything here works on the (families × candidates) sums, in numpy.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from simweb.core.gamma import Estimate

__all__ = ["CrossValidation", "CrossValidationParams", "class_families", "cross_validate", "half_splits"]


@dataclass(frozen=True, slots=True)
class CrossValidationParams:
    """How the choice is cross-validated: ``splits`` random halvings of the families (each used
    both ways), ``n_resamples`` bootstrap resamples of the families for the interval at
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
    ``fold_units`` marks, per fold, the families it chose on (True) and scored on (False);
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


def class_families(codes: np.ndarray) -> np.ndarray:
    """The family (second-level class) of each source, from ``simweb.core.gamma.class_codes``
    of their classes: column depth − 2. A directory of depth 1 has no families: each class is its own."""
    codes = np.asarray(codes)
    if codes.ndim != 2 or codes.shape[1] == 0:
        raise ValueError(f"class codes: expected an (n, depth) array, got shape {codes.shape}")
    column = codes[:, -2] if codes.shape[1] >= 2 else codes[:, -1]
    return np.unique(column, return_inverse=True)[1].ravel()


def half_splits(n_units: int, splits: int, seed: int) -> np.ndarray:
    """``splits`` random halvings of ``n_units`` units: a boolean (splits, n_units) array, True
    for the ⌊n/2⌋ units of the first half. Reproducible from ``seed``."""
    if n_units < 2:
        raise ValueError(f"cross-validation: expected at least 2 families to split, got {n_units}")
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
    """Cross-validate choosing the candidate of best Γ (see the module docstring).

    ``numerators[c, s]`` / ``denominators[c, s]`` are candidate c's C − D and C + D for source s
    (``PairCounts.per_source``); ``units[s]`` the family of source s (:func:`class_families`).
    Only the ``eligible`` candidates (default: all) can be chosen; they are tried in their order,
    so the first of equal Γs is chosen. ``references`` are candidates (eligible or not) whose
    held-out Γ on the same halves is reported beside the procedure's.
    """
    numerators = np.asarray(numerators, dtype=np.float64)
    denominators = np.asarray(denominators, dtype=np.float64)
    if numerators.shape != denominators.shape or numerators.ndim != 2:
        raise ValueError(f"expected numerators and denominators of one (candidates, sources) shape, got "
                         f"{numerators.shape} and {denominators.shape}")
    barred = np.zeros(numerators.shape[0], dtype=bool) if eligible is None else ~np.asarray(eligible, dtype=bool)
    if barred.size != numerators.shape[0] or barred.all():
        raise ValueError(f"eligible: expected a flag for each of the {numerators.shape[0]} candidates, at least one set")
    units = np.unique(np.asarray(units), return_inverse=True)[1].ravel()
    if units.size != numerators.shape[1]:
        raise ValueError(f"expected a family for each of the {numerators.shape[1]} sources, got {units.size}")
    n_units = int(units.max()) + 1 if units.size else 0
    # Per-family sums: (families, candidates).
    num = np.stack([np.bincount(units, weights=row, minlength=n_units) for row in numerators], axis=1)
    den = np.stack([np.bincount(units, weights=row, minlength=n_units) for row in denominators], axis=1)
    chosen = int(_pick(_ratio(num.sum(axis=0), den.sum(axis=0)), barred))
    masks = half_splits(n_units, params.splits, params.seed)
    folds = np.concatenate([masks, ~masks])  # fold f chooses on folds[f], scores on the rest

    rng = np.random.default_rng(params.seed + 1)
    weights = np.vstack([np.ones(n_units), rng.multinomial(n_units, np.full(n_units, 1.0 / n_units),
                                                           size=params.n_resamples)])
    # (resamples, folds, families) weights of the choosing and the scoring halves.
    choose = weights[:, None, :] * folds[None, :, :]
    score = weights[:, None, :] * ~folds[None, :, :]
    picked = _pick(_ratio(choose @ num, choose @ den), barred)  # (resamples, folds)
    held = _ratio(np.take_along_axis(score @ num, picked[..., None], axis=2)[..., 0],
                  np.take_along_axis(score @ den, picked[..., None], axis=2)[..., 0])
    means = _mean_defined(held)  # a fold whose scoring half has no pair (a resample without it) is left out
    value, draws = float(means[0]), means[1:][np.isfinite(means[1:])]
    tail = (1.0 - params.level) / 2.0
    low, high = (np.quantile(draws, [tail, 1.0 - tail]) if draws.size >= 2 else (np.nan, np.nan))
    estimate = Estimate(value, float(low), float(high), float(draws.std(ddof=1)) if draws.size >= 2 else float("nan"))
    scored = ~folds
    ref_values = {}
    for c in references:
        ref = _ratio(scored.astype(np.float64) @ num[:, c], scored.astype(np.float64) @ den[:, c])
        ref_values[int(c)] = float(_mean_defined(ref[None, :])[0])
    return CrossValidation(chosen, estimate, picked[0], held[0], folds, ref_values, n_units)
