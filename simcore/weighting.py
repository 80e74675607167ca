"""Term weighting: distance (anchor windows), frequency (df) and normalisation (paper Sections 3.3, 5.2, 6.1).

* Distance weighting (Section 5.2, Figure 6): an anchor-window word at distance d from its
  anchor counts log2(32 / (1 + d)); anchor words (and the target's title) have d = 0 and count
  5. The formula is negative for d ≥ 32 (d = 31 gives exactly 0), and a bag multiplicity cannot
  be negative, so it is clamped at 0: words 31 or more non-stopwords away contribute nothing.
* Frequency weighting (Section 5.2, Figure 7), tf the term's weight in the merged bag and df
  the number of merged bags in the collection containing the term:
  none ``tf``; log ``tf / (1 + log2 df)``; sqrt ``tf / sqrt(df)``;
  NMDF ``tf * exp(-1/2 ((ln df - mu) / sigma)^2)``; beyond the paper, binary ``1`` for every
  term of the bag (the bag as a set: set Jaccard, and with overlap the link measures' counts). The paper writes "log" in NMDF without a
  base; we use the natural logarithm (the conventional base of a log-normal curve), so μ and
  σ are in ln-df units — μ = ln 100 puts the peak at df = 100.
* Normalisation (Section 6.1): every bag is scaled to the same total weight (the strategy's
  ``normalise_to``, 1.0 by default). Bag Jaccard and cosine are unchanged when all bags are
  scaled by one constant, so the constant only sets the unit later stages see. Bags compared by
  overlap are not normalised (``normalise_to`` None; simweb.core.strategy, "Overlap").

Logarithms and exponentials are :mod:`simweb.core.fpmath`'s, so a crawl's weights are the same to
the last bit on every CPU, and so are the signatures and the index made from them.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from simweb.core import fpmath
from simweb.core.strategy import Frequency, Strategy

__all__ = [
    "ANCHOR_DISTANCE_WEIGHT",
    "Weighting",
    "distance_weight",
    "distance_weights",
    "fit_nmdf",
    "frequency_factors",
    "nmdf_factor",
    "normalise_rows",
]

#: The weight of an anchor word (d = 0) under distance weighting: log2(32).
ANCHOR_DISTANCE_WEIGHT = 5.0


def distance_weight(d: int) -> float:
    """log2(32 / (1 + d)) clamped at 0, the weight of an anchor-window word d words from its anchor (Section 5.2)."""
    if d < 0:
        raise ValueError(f"distance: expected 0 (anchor words) or a positive word count, got {d}")
    return max(0.0, 5.0 - fpmath.log2(1.0 + d))


def distance_weights(d: np.ndarray) -> np.ndarray:
    """:func:`distance_weight` of each distance in an integer array."""
    d = np.asarray(d, dtype=np.float64)
    return np.maximum(0.0, 5.0 - fpmath.log2(1.0 + d))


def nmdf_factor(df: np.ndarray, mu: float, sigma: float) -> np.ndarray:
    """exp(-1/2 ((ln df - mu) / sigma)^2), the NMDF log-scale Gaussian of Section 5.2 (Figure 8)."""
    z = (fpmath.log(np.asarray(df, dtype=np.float64)) - mu) / sigma
    return fpmath.exp(-0.5 * z * z)


def fit_nmdf(df: np.ndarray) -> tuple[float, float]:
    """μ and σ of NMDF fitted to a collection's document frequencies (natural-log units).

    The peak sits at the geometric middle of the observed df range and σ is a quarter of the
    range in ln df, so the rarest and the commonest terms are 2σ from the peak (weight
    e^-2 ≈ 0.14): both ends attenuated, mid-frequency terms favoured (Section 3.3). See the
    module docstring of :mod:`simweb.core.strategy` for why not the moments of ln df. A collection
    whose terms all share one df gets σ = 1 (every term then has the same factor anyway).
    """
    df = np.asarray(df)
    df = df[df > 0]
    if df.size == 0:
        raise ValueError("fit_nmdf: expected the document frequencies of at least one term, got none")
    lo, hi = fpmath.log(float(df.min())), fpmath.log(float(df.max()))
    sigma = (hi - lo) / 4.0
    return (lo + hi) / 2.0, sigma if sigma > 0 else 1.0


@dataclass(frozen=True, slots=True)
class Weighting:
    """The frequency weighting and normalisation of a strategy with NMDF's μ, σ resolved."""

    frequency: Frequency
    mu: float | None
    sigma: float | None
    normalise_to: float | None  # None: bags keep their weighted sums (metric overlap)

    @classmethod
    def resolve(cls, strategy: Strategy, df: np.ndarray) -> Weighting:
        """The weighting of ``strategy``; NMDF parameters left unset are fitted to ``df`` (:func:`fit_nmdf`)."""
        mu, sigma = strategy.nmdf_mu, strategy.nmdf_sigma
        if strategy.frequency is Frequency.NMDF and mu is None:
            # An empty collection has no df to fit and no weight to scale.
            mu, sigma = fit_nmdf(df) if np.any(np.asarray(df) > 0) else (None, None)
        elif strategy.frequency is not Frequency.NMDF:
            mu = sigma = None
        return cls(strategy.frequency, mu, sigma, strategy.normalise_to if strategy.normalised else None)

    def factors(self, df: np.ndarray) -> np.ndarray:
        return frequency_factors(df, self.frequency, self.mu, self.sigma)

    def counts(self, tf: np.ndarray) -> np.ndarray:
        """The bag weights the factors multiply: ``tf``, or 1 for every term present (binary)."""
        tf = np.asarray(tf, dtype=np.float64)
        return (tf > 0).astype(np.float64) if self.frequency is Frequency.BINARY else tf

    def to_dict(self) -> dict:
        return {"frequency": self.frequency.value, "nmdf_mu": self.mu, "nmdf_sigma": self.sigma,
                "normalise_to": self.normalise_to}

    @classmethod
    def from_dict(cls, data: dict) -> Weighting:
        """The weighting :meth:`to_dict` wrote."""
        total = data["normalise_to"]
        return cls(Frequency(data["frequency"]), data.get("nmdf_mu"), data.get("nmdf_sigma"),
                   None if total is None else float(total))


def frequency_factors(df: np.ndarray, frequency: Frequency, mu: float | None = None,
                      sigma: float | None = None) -> np.ndarray:
    """The factor each term's tf is multiplied by, given its document frequency (Section 5.2).

    none and binary 1; log 1 / (1 + log2 df); sqrt 1 / sqrt(df); NMDF exp(-1/2 ((ln df - mu)/sigma)^2).
    Every df must be at least 1 (a term in no bag has no weight to scale).
    """
    df = np.asarray(df, dtype=np.float64)
    if df.size and df.min() < 1:
        raise ValueError(
            f"document frequencies: expected every df ≥ 1, found {df.min():g}; "
            "count df over the merged bags that contain the term"
        )
    frequency = Frequency(frequency)
    if frequency in (Frequency.NONE, Frequency.BINARY) or df.size == 0:
        return np.ones_like(df)
    if frequency is Frequency.LOG:
        return 1.0 / (1.0 + fpmath.log2(df))
    if frequency is Frequency.SQRT:
        return 1.0 / np.sqrt(df)
    if mu is None or sigma is None:
        raise ValueError("NMDF weighting: expected mu and sigma (fit them with fit_nmdf(df)), got None")
    return nmdf_factor(df, mu, sigma)


def normalise_rows(indptr: np.ndarray, data: np.ndarray, total: float | None) -> tuple[np.ndarray, np.ndarray]:
    """Scale each CSR row of ``data`` to sum to ``total`` (Section 6.1); returns (data, row sums before).
    ``total`` None leaves the weights as they are (bags compared by overlap).

    A row whose weights sum to 0 is left at 0; the caller drops it (an empty bag).
    """
    lengths = np.diff(indptr)
    rows = np.repeat(np.arange(len(lengths)), lengths)
    sums = np.bincount(rows, weights=data, minlength=len(lengths)).astype(np.float64)
    if total is None:
        return data, sums
    scale = np.divide(total, sums, out=np.zeros_like(sums, dtype=np.float64), where=sums > 0)
    return data * np.repeat(scale, lengths), sums
