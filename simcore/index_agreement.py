"""How well the min-hash index reproduces exact similarity on an evaluation sample (paper Section 6.2).

The index answers with the fraction of m min-hash signatures two bags share, an estimate of
their weighted Jaccard, and PROCESSQUERY returns the pairs whose estimate reaches α. On the
sample's bags this module measures both against the exact similarity: Γ computed from the
estimates instead of exact Jaccard, and the recall and precision of the index's pairs at α
against the pairs whose exact Jaccard reaches α.
"""
from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from simweb.core.bags import BagMatrix
from simweb.core.findings import as_optional
from simweb.core.gamma import PairCounts, gammas, pair_counts
from simweb.core.minhash import INDEX_ALGORITHM, MinHashParams, sign, term_hashes
from simweb.core.query import all_pairs, invert
from simweb.core.similarity import EmbeddedSimilarity
from simweb.core.strategy import Strategy

__all__ = ["INDEX_ALPHA", "INDEX_M", "INDEX_STRATEGY", "IndexAgreement", "index_agreement"]

# Measured for the strategy the index is built with by default (the paper's Section 7 choice)
# at the paper's m and α (Section 6.2).
INDEX_STRATEGY = Strategy()
INDEX_M = 80
INDEX_ALPHA = 0.15

# Signature comparisons per block of the estimate matrix (rows × k × m booleans).
_BLOCK_CELLS = 1 << 22


@dataclass(frozen=True, slots=True, eq=False)
class IndexAgreement:
    """The agreement's record (JSON-able: strategy, m, α, pairs, recall, precision, mean absolute
    error, Γ of the estimates) and the Γ pair counts of the estimates."""

    stats: dict
    counts: PairCounts


class _Estimates:
    """The estimated similarity of every two signed bags, the share of their m signatures that
    agree (Section 6.2), a block of rows at a time (``estimates[rows]``)."""

    def __init__(self, signatures: np.ndarray) -> None:
        self._signatures = signatures
        k, m = signatures.shape
        self.shape = (k, k)
        self._step = max(1, _BLOCK_CELLS // max(1, k * m))

    def __getitem__(self, rows) -> np.ndarray:
        rows = np.arange(self.shape[0])[rows] if isinstance(rows, slice) else np.asarray(rows, dtype=np.int64)
        out = np.empty((rows.size, self.shape[1]))
        for r0 in range(0, rows.size, self._step):
            chosen = self._signatures[rows[r0:r0 + self._step]]
            out[r0:r0 + self._step] = (chosen[:, None, :] == self._signatures[None, :, :]).mean(axis=2)
        return out


def index_agreement(bags: BagMatrix, ids: np.ndarray, exact, present: np.ndarray, codes: np.ndarray,
                    n: int, *, m: int = INDEX_M, alpha: float = INDEX_ALPHA,
                    algorithm: str = INDEX_ALGORITHM) -> IndexAgreement:
    """Signatures of the bags of ``ids`` (the sample's documents with a bag, rows ``present`` of
    the n-document sample whose classes are ``codes``), their estimated similarities against
    ``exact`` (the exact similarity of the same bags: an array, or any object whose rows
    ``exact[rows]`` are arrays, such as simweb.core.similarity.ExactRows), and the index's pairs
    at ``alpha``; signed with the index's sampler (``algorithm``) at the index's m.

    Estimates and exact similarities are compared a block of rows at a time, and pairs are
    integer keys, so memory holds the signatures and one block, never k × k."""
    t0 = time.perf_counter()
    rows = bags.indices(ids.tolist())
    csr = bags.csr[rows]
    csr.sort_indices()
    signatures = sign(csr.indices.astype(np.int64), csr.indptr.astype(np.int64), term_hashes(bags.vocabulary),
                      csr.data, MinHashParams(m=m, algorithm=algorithm)).values
    k = signatures.shape[0]
    estimates = _Estimates(signatures)
    counts = pair_counts(EmbeddedSimilarity(n, present, estimates), codes)
    a, b, _ = all_pairs(invert(signatures), signatures, alpha)
    retrieved = np.unique(np.minimum(a, b).astype(np.int64) * k + np.maximum(a, b))
    relevant = hits = 0
    abs_error = 0.0
    step = max(1, _BLOCK_CELLS // max(1, k * 8))
    for r0 in range(0, k, step):
        block = np.arange(r0, min(k, r0 + step))
        exact_rows, estimate_rows = np.asarray(exact[block]), estimates[block]
        i, j = np.nonzero((exact_rows >= alpha - 1e-12) & (np.arange(k)[None, :] > block[:, None]))
        keys = block[i] * k + j
        relevant += keys.size
        hits += int(np.isin(keys, retrieved, assume_unique=True).sum())
        error = np.abs(estimate_rows - exact_rows)
        error[np.arange(block.size), block] = 0.0
        abs_error += float(error.sum())
    stats = {
        "strategy": INDEX_STRATEGY.label, "m": m, "alpha": alpha, "algorithm": algorithm,
        "relevant_pairs": relevant, "retrieved_pairs": int(retrieved.size), "hits": hits,
        "recall": hits / relevant if relevant else None,
        "precision": hits / retrieved.size if retrieved.size else None,
        "mean_abs_error": abs_error / (k * (k - 1)) if k > 1 else None,
        "gamma_estimate": {key: as_optional(v) for key, v in gammas(counts).items()},
        "seconds": round(time.perf_counter() - t0, 3),
    }
    return IndexAgreement(stats, counts)
