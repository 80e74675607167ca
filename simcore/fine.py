"""The fine estimate: a second, longer signature of every bag, read only for a query's candidates.

H's m = 80 positions find the candidates (Section 6.2); their estimate of a pair's Jaccard J has
a spread σ = √(J(1 − J)/80), 0.040 at J = 0.15. The exact re-rank must score every candidate
estimated within 2σ below the answer's threshold, and on a crawl of many loosely similar pages
(generated API references, mirrors) that is tens of thousands of candidates a query, at a few
microseconds of bag merging each. A finer estimate orders and cuts them better: its spread at
J = 0.15 is 0.024, and the candidates it leaves to score are ten times fewer on such crawls.

**H2** holds, per document, ``M`` (256) one-byte codes drawn by DartMinHash
(simweb.core.dartminhash.sign_darts_once) in one pass at rank threshold 1, ``DARTS`` darts per
label per unit of bag weight, with no coupon collecting: a label the bag has no dart for is
code 0, any other its dart's identity folded into 1..255. For two bags, a label either has a
dart for holds the lowest dart of that label in the union of their regions, which lies in both
with probability Σmin/Σmax (the positions independent): so among the D labels not 0 in both,
the A equal codes estimate J as A / D, D being about (1 − e^−Σmax)·M (≈ 210 at J = 0.15 for the
bags stage's bags of weight 1). Two different darts share a code with probability 1/255: the
estimate is J + (1 − J)/255 on average, never lower, so a cut made by it errs towards scoring.
The signing costs about half of H's (M darts a bag against 80(ln 80 + 2)), and H2 M bytes a
document beside H's 320.
"""
from __future__ import annotations

import numpy as np

from simweb.core.dartminhash import sign_darts_once
from simweb.core.minhash import EMPTY, positive

try:
    from simweb.core._rerank import fine_agreements as _c_fine_agreements
except ImportError:  # pragma: no cover - depends on the build
    _c_fine_agreements = None

__all__ = ["DARTS", "M", "agreements", "codes", "sign", "spread"]

#: Labels of H2 (one byte each).
M = 256
#: Darts per label per unit of a bag's weight (the bags stage's bags weigh 1).
DARTS = 1.0
#: H2's darts are drawn with this offset to H's seed: independent of H's.
SEED_OFFSET = 0x5EC0D


def sign(codes_: np.ndarray, offsets: np.ndarray, hashes: np.ndarray, weights: np.ndarray | None, seed: int,
         m: int = M) -> np.ndarray:
    """The H2 rows (n × m uint8) of the bags ``codes_[offsets[b]:offsets[b + 1]]`` (the layout and
    checks of simweb.core.minhash.sign): see the module docstring. An empty bag's row is 0."""
    hashes = np.asarray(hashes, dtype=np.uint64)
    codes_, offsets, weights = positive(codes_, offsets, weights, hashes.size)
    values = np.full((offsets.size - 1, m), EMPTY, np.uint32)
    if codes_.size:
        sign_darts_once(codes_, offsets, hashes, weights, m, (seed + SEED_OFFSET) % 2**64, DARTS * m, 1.0, values)
    return codes(values)


def codes(values: np.ndarray) -> np.ndarray:
    """Dart identities (uint32; EMPTY: no dart) as H2's one-byte codes: 0, or 1 + identity mod 255."""
    values = np.asarray(values, dtype=np.uint32)
    out = (values % np.uint32(255)).astype(np.uint8) + np.uint8(1)
    out[values == EMPTY] = 0
    return out


def agreements(h2: np.ndarray, row: np.ndarray, docs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For each of ``docs``: the codes of its row of H2 equal to the query's ``row`` and not 0 (A),
    and the labels not 0 in both (D); int64 each. In C where it is built (simcore/_rerank.c)."""
    docs = np.ascontiguousarray(docs, dtype=np.int64)
    if _c_fine_agreements is not None and h2.dtype == np.uint8 and h2.flags.c_contiguous:
        same, defined = np.empty(docs.size, np.int64), np.empty(docs.size, np.int64)
        _c_fine_agreements(h2, np.ascontiguousarray(row, dtype=np.uint8), docs, same, defined)
        return same, defined
    rows = np.asarray(h2[docs])
    return (((rows == row) & (row != 0)).sum(axis=1).astype(np.int64),
            ((rows != 0) | (row != 0)).sum(axis=1).astype(np.int64))


def spread(tau: float, defined: np.ndarray) -> np.ndarray:
    """σ of the fine estimate of a pair at Jaccard τ from ``defined`` labels: √(τ(1 − τ)/D)."""
    return np.sqrt(tau * (1.0 - tau) / np.maximum(defined, 1))
