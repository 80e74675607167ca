"""Relative size and overlap of two crawls by capture–recapture.

The law is the lecture notes (``papers/lecture-web-size-duplicates-pagerank.md``, "Random
queries [Bhar98a]" and "Size of the Web Estimation"): sample pages of each collection, test
whether each sampled page is present in the other, and

    Intersection = x% of E1 = y% of E2,    E1/E2 = y/x,

where x is the fraction of E1's sample found in E2 and y the fraction of E2's sample found in
E1. Here the collections are two crawls and "present" means a near-duplicate in the other crawl
(:func:`simweb.core.shingles.near_duplicates_in`); this module is the arithmetic: the seeded
samples, each fraction with its interval, and the size ratio y/x with its interval.

Intervals. A fraction is the **Wilson score interval** (Wilson 1927) of found/sampled. Pages
are drawn without replacement from a crawl of N pages, so the binomial variance is shrunk by
the finite-population correction (N − n)/(N − 1), applied as an effective sample size
n' = n (N − 1)/(N − n); a census (n = N) gives the exact fraction, an interval of width zero.
The size ratio's interval combines the two fractions' intervals, each taken at confidence
1 − (1 − c)/2 so that both hold together with probability at least c (Bonferroni):
[y_low / x_high, y_high / x_low], unbounded above when x_low is 0. It is conservative: its
coverage is at least c, usually more.

What the estimate assumes (the lecture's "Issues"): near-duplicate presence is symmetric and
counts pages, not clusters — a crawl holding two copies of a page the other holds once counts
both — and the pages compared are those with text (a page without words can match nothing).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np

__all__ = ["Fraction", "OverlapEstimate", "SizeRatio", "contained_fraction", "estimate_overlap",
           "sample_rows", "size_ratio", "wilson_interval"]


def sample_rows(population: int, size: int, seed: int, stream: int = 0) -> np.ndarray:
    """A simple random sample of ``min(size, population)`` of the rows 0..population-1, without
    replacement, sorted. ``stream`` tells apart samples drawn with one seed (one per crawl)."""
    if population < 0 or size < 1:
        raise ValueError(f"expected a population >= 0 and a sample size >= 1, got {population} and {size}")
    rng = np.random.default_rng([seed, stream])
    if size >= population:
        return np.arange(population, dtype=np.int64)
    return np.sort(rng.choice(population, size, replace=False)).astype(np.int64)


def _check_confidence(confidence: float) -> None:
    if not 0 < confidence < 1:
        raise ValueError(f"expected a confidence level in (0, 1), such as 0.95, got {confidence}")


def wilson_interval(found: int, sampled: int, confidence: float = 0.95,
                    population: int | None = None) -> tuple[float, float]:
    """The Wilson score interval of the fraction ``found / sampled`` at ``confidence``, with the
    finite-population correction when the sample was drawn without replacement from
    ``population`` items (see the module docstring); a census gives (p, p)."""
    _check_confidence(confidence)
    if sampled < 1 or not 0 <= found <= sampled:
        raise ValueError(f"expected 0 <= found <= sampled and sampled >= 1, got found {found} of {sampled}")
    if population is not None and population < sampled:
        raise ValueError(f"expected a sample no larger than its population, got {sampled} of {population}")
    p = found / sampled
    if population is not None and population == sampled:
        return p, p
    n = sampled if population is None else sampled * (population - 1) / (population - sampled)
    z = NormalDist().inv_cdf(0.5 + confidence / 2)
    z2 = z * z
    denominator = 1 + z2 / n
    centre = (p + z2 / (2 * n)) / denominator
    half = z * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / denominator
    return max(0.0, min(p, centre - half)), min(1.0, max(p, centre + half))


@dataclass(frozen=True, slots=True)
class Fraction:
    """The fraction of one crawl found in the other: ``found`` of ``sampled`` pages sampled from
    ``population``, the point ``estimate`` and its interval [``low``, ``high``] at ``confidence``."""

    found: int
    sampled: int
    population: int
    confidence: float
    estimate: float
    low: float
    high: float

    def pages(self) -> tuple[float, float, float]:
        """The estimated number of the crawl's pages found in the other, with its interval."""
        return self.estimate * self.population, self.low * self.population, self.high * self.population


def contained_fraction(found: int, sampled: int, population: int, confidence: float = 0.95) -> Fraction:
    """x (or y) of the lecture's "Intersection = x% of E1": the share of a crawl's sample found
    in the other crawl, with its Wilson interval."""
    low, high = wilson_interval(found, sampled, confidence, population)
    return Fraction(found, sampled, population, confidence, found / sampled, low, high)


@dataclass(frozen=True, slots=True)
class SizeRatio:
    """|A|/|B| implied by the two fractions, with its interval at ``confidence``. ``estimate``
    is ``math.inf`` when no page of A's sample was found in B, ``math.nan`` when neither sample
    was found in the other crawl (no overlap: the method cannot tell the sizes apart)."""

    estimate: float
    low: float
    high: float
    confidence: float

    @property
    def defined(self) -> bool:
        return not math.isnan(self.estimate)


def _divide(num: float, den: float) -> float:
    if den > 0:
        return num / den
    return math.nan if num == 0 else math.inf


def size_ratio(a_in_b: Fraction, b_in_a: Fraction, confidence: float = 0.95) -> SizeRatio:
    """E1/E2 = y/x (lecture, "Random queries"): ``b_in_a.estimate / a_in_b.estimate``, and the
    Bonferroni interval [y_low / x_high, y_high / x_low] of the two fractions' Wilson intervals
    at 1 − (1 − confidence)/2 each (module docstring)."""
    _check_confidence(confidence)
    each = 1 - (1 - confidence) / 2
    x_low, x_high = wilson_interval(a_in_b.found, a_in_b.sampled, each, a_in_b.population)
    y_low, y_high = wilson_interval(b_in_a.found, b_in_a.sampled, each, b_in_a.population)
    estimate = _divide(b_in_a.estimate, a_in_b.estimate)
    if math.isnan(estimate):
        return SizeRatio(math.nan, math.nan, math.nan, confidence)
    low = _divide(y_low, x_high)
    high = _divide(y_high, x_low)
    low = 0.0 if math.isnan(low) else low
    high = math.inf if math.isnan(high) else high
    return SizeRatio(estimate, min(low, estimate), max(high, estimate), confidence)


@dataclass(frozen=True, slots=True)
class OverlapEstimate:
    """The capture–recapture estimate of two crawls A and B: the fraction of A found in B (x),
    of B found in A (y), and the size ratio |A|/|B| = y/x they imply."""

    a_in_b: Fraction
    b_in_a: Fraction
    size_ratio: SizeRatio
    confidence: float


def estimate_overlap(found_a: int, sampled_a: int, pages_a: int, found_b: int, sampled_b: int, pages_b: int,
                     confidence: float = 0.95) -> OverlapEstimate:
    """The estimate from ``found_a`` of ``sampled_a`` pages sampled from A's ``pages_a`` found in B,
    and ``found_b`` of ``sampled_b`` pages of B's ``pages_b`` found in A."""
    a_in_b = contained_fraction(found_a, sampled_a, pages_a, confidence)
    b_in_a = contained_fraction(found_b, sampled_b, pages_b, confidence)
    return OverlapEstimate(a_in_b, b_in_a, size_ratio(a_in_b, b_in_a, confidence), confidence)
