"""The evaluation's recommendation: the strategy to build the index with, chosen by cross-validation.

From every strategy's Γ pair counts (stage ``eval-strategy``) the recommendation is the
strategy with the best sibling-Γ (the paper's headline measure, Section 5) among those an index
can be built with — bag strategies compared by Jaccard (Section 4: the min-hash index estimates
Jaccard, Section 6) or by overlap (candidates found by Jaccard) — the paper's grid, the weighted
hybrids and the overlap strategies alike. The sibling-Γ reported
for it is cross-validated over directory classes (simweb.core.crossval): chosen on half of the
classes (the sampled pairs of sibling classes kept together), scored on the pairs of documents
of the other half's classes only, over many random halvings, with a bootstrap interval; so the
choice does not inflate it. Beside it, on the same held-out halves, the paper's Section 7
strategy and the best single strategy evaluated (any strategy but a weighted hybrid, link
measures included, taken as if it had been known in advance). The same is done with whole
families of classes (second-level classes) held out: how the choice carries over to other
parts of the directory, a stricter question.

When the choice scores below the Section 7 strategy (the index's default) on the same held-out
halves, choosing gained nothing on this crawl: the recommendation is then to keep the default,
with both figures (``kept_default``: the strategy the choice picked and its held-out Γ).

Also: the fraction of same-class/sibling-class pairs each of them orders (Γ leaves ties out,
paper footnote 4, so a coarse measure that ties many pairs is judged on the pairs it does order).
"""
from __future__ import annotations

import dataclasses
from collections.abc import Mapping

import numpy as np

from simweb.core.crossval import CrossValidationParams, class_families, class_units, cross_validate
from simweb.core.gamma import SAME, SIBLING, SIBLING_GAMMA, Estimate, PairCounts, bootstrap, familial_distances
from simweb.core.grids import AnyStrategy
from simweb.core.index_agreement import INDEX_STRATEGY
from simweb.core.strategy import Metric, Strategy
from simweb.tasks.stagecache import StageOutput
from simweb.tasks.stages.eval_sample import load_sample
from simweb.tasks.stages.eval_strategies import load_strategy_output

__all__ = ["indexable", "recommend"]


def indexable(strategy: AnyStrategy) -> bool:
    """Whether an index can be built with ``strategy``: a bag strategy compared by Jaccard or by
    overlap (found by Jaccard, ordered by overlap: simweb.core.strategy, "Overlap"), without dedup
    (the evaluation judges every sampled page; dedup removes pages before indexing)."""
    return isinstance(strategy, Strategy) and strategy.metric is not Metric.COSINE and not strategy.dedup


def _estimate(est: Estimate) -> dict:
    return {k: (None if v is None or np.isnan(v) else float(v)) for k, v in dataclasses.asdict(est).items()}


def _ordered(counts: PairCounts, sibling_pairs: int) -> float | None:
    """The fraction of (same-class, sibling-class) document pairs the strategy orders (not tied)."""
    c, d = counts.per_source(SIBLING_GAMMA)
    return float((c + d).sum() / sibling_pairs) if sibling_pairs else None


def recommend(sample: StageOutput, results: Mapping[AnyStrategy, StageOutput], *,
              params: CrossValidationParams = CrossValidationParams(), n_resamples: int = 1000,
              seed: int = 0) -> dict | None:
    """The recommendation (see the module docstring) as a JSON-able record, or None when no
    evaluated strategy can be indexed. ``n_resamples`` and ``seed`` are the report's bootstrap
    over classes, for the whole-sample intervals; ``params`` the cross-validation's."""
    strategies = list(results)
    if not any(indexable(s) for s in strategies):
        return None
    loaded = load_sample(sample.path)
    saved = {s: load_strategy_output(results[s].path) for s in strategies}
    counts = {s: saved[s].counts for s in strategies}
    rows = saved[strategies[0]].sibling  # the counting rows depend on the sample only
    for s in strategies:
        other = saved[s].sibling
        if not (np.array_equal(other.sources, rows.sources) and np.array_equal(other.classes, rows.classes)):
            raise ValueError(f"{s.label}: expected the sibling-Γ counts of the sample's {rows.sources.size} "
                             f"(source, sibling class) rows, found {other.sources.size} other rows; the stage "
                             "outputs come from different samples: rerun `simweb evaluate` with a fresh --out")
    numerators = np.array([saved[s].sibling.concordant - saved[s].sibling.discordant for s in strategies],
                          dtype=np.float64)
    denominators = np.array([saved[s].sibling.concordant + saved[s].sibling.discordant for s in strategies],
                            dtype=np.float64)
    whole = numerators.sum(axis=1) / np.where(denominators.sum(axis=1) > 0, denominators.sum(axis=1), np.nan)
    eligible = np.array([indexable(s) for s in strategies])
    singles = [i for i, s in enumerate(strategies) if not (isinstance(s, Strategy) and s.shares is not None)]
    best_single = max(singles, key=lambda i: -np.inf if np.isnan(whole[i]) else whole[i]) if singles else None
    best_indexable_single = max((i for i in singles if eligible[i]),
                                key=lambda i: -np.inf if np.isnan(whole[i]) else whole[i], default=None)
    section7 = strategies.index(INDEX_STRATEGY) if INDEX_STRATEGY in strategies else None
    references = tuple(i for i in dict.fromkeys((section7, best_single, best_indexable_single)) if i is not None)
    # The units of classes: the sampled sibling pairs kept together, or whole families.
    code_of = {cls: int(code) for cls, code in zip(loaded.classes, loaded.codes[:, -1])}
    sampled = [(code_of[tuple(a.split("/"))], code_of[tuple(b.split("/"))])
               for a, b in loaded.info.get("class_pairs", []) if tuple(a.split("/")) in code_of
               and tuple(b.split("/")) in code_of]
    by_pairs = class_units(sorted(set(code_of.values())), sampled)
    by_family = class_families(loaded.codes)
    source_class = loaded.codes[rows.sources, -1]

    def units(unit_of: dict[int, int]) -> np.ndarray:
        return np.stack([[unit_of[int(c)] for c in source_class], [unit_of[int(c)] for c in rows.classes]], axis=1) \
            if rows.sources.size else np.zeros((0, 2), dtype=np.int64)

    levels = familial_distances(loaded.codes, np.arange(len(loaded.urls)))
    sibling_pairs = int((((levels == SAME).sum(axis=1) - 1) * (levels == SIBLING).sum(axis=1)).sum())
    groups = loaded.codes[:, -1]

    def described(i: int, held_out: float | None = None) -> dict:
        s = strategies[i]
        est = bootstrap(counts[s], groups, n_resamples=n_resamples, seed=seed)[SIBLING_GAMMA]
        return {"strategy": s.label, "spec": s.spec(), "indexable": bool(eligible[i]),
                "sibling_gamma": _estimate(est), "held_out": held_out,
                "ordered_pairs": _ordered(counts[s], sibling_pairs)}

    if rows.sources.size == 0 or len(set(by_pairs.values())) < 2:
        chosen = int(np.nanargmax(np.where(eligible, whole, np.nan)))
        out = described(chosen)
        out.update(held_out=None, cross_validation={"reason": (
            "fewer than 2 pairs of sibling classes in the sample: nothing to hold out")})
        return out
    cv = cross_validate(numerators, denominators, units(by_pairs), params, references=references, eligible=eligible)
    if section7 is not None and cv.chosen != section7 and cv.loses_to(section7):
        # The choice loses to the default on the held-out halves: keep the default.
        value = cv.references[section7]
        out = described(section7, {"value": value, "low": None, "high": None, "se": None})
        out["kept_default"] = {**described(cv.chosen, _estimate(cv.held_out)), "default_held_out": value}
    else:
        out = described(cv.chosen, _estimate(cv.held_out))
        out["kept_default"] = None
    choices = sorted(cv.choice_counts().items(), key=lambda kv: -kv[1])
    out["cross_validation"] = {
        "units": cv.n_units, "splits": params.splits, "folds": int(cv.fold_chosen.size), "seed": params.seed,
        "n_resamples": params.n_resamples, "level": params.level, "candidates": int(eligible.sum()),
        "chosen_in_folds": [{"strategy": strategies[i].label, "folds": n} for i, n in choices[:5]],
    }
    for key, i in (("section7", section7), ("best_single", best_single), ("best_indexable_single", best_indexable_single)):
        out[key] = None if i is None else described(i, cv.references.get(i))
    if len(set(by_family.values())) >= 2:
        families = cross_validate(numerators, denominators, units(by_family), params, references=references,
                                  eligible=eligible)
        out["held_out_families"] = {
            **_estimate(families.held_out), "units": families.n_units,
            "references": {strategies[i].label: v for i, v in families.references.items()},
            "chosen_in_folds": [{"strategy": strategies[i].label, "folds": n}
                                for i, n in sorted(families.choice_counts().items(), key=lambda kv: -kv[1])[:5]],
        }
    return out
