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


def index_agreement(bags: BagMatrix, ids: np.ndarray, exact: np.ndarray, present: np.ndarray, codes: np.ndarray,
                    n: int, *, m: int = INDEX_M, alpha: float = INDEX_ALPHA,
                    algorithm: str = INDEX_ALGORITHM) -> IndexAgreement:
    """Signatures of the bags of ``ids`` (the sample's documents with a bag, rows ``present`` of
    the n-document sample whose classes are ``codes``), their estimated similarities against
    ``exact`` (the exact similarity of the same bags), and the index's pairs at ``alpha``; signed
    with the index's sampler (``algorithm``) at the index's m."""
    t0 = time.perf_counter()
    rows = bags.indices(ids.tolist())
    csr = bags.csr[rows]
    csr.sort_indices()
    signatures = sign(csr.indices.astype(np.int64), csr.indptr.astype(np.int64), term_hashes(bags.vocabulary),
                      csr.data, MinHashParams(m=m, algorithm=algorithm)).values
    k = signatures.shape[0]
    estimate = np.empty((k, k))
    step = max(1, _BLOCK_CELLS // max(1, k * m))
    for r0 in range(0, k, step):
        estimate[r0:r0 + step] = (signatures[r0:r0 + step, None, :] == signatures[None, :, :]).mean(axis=2)
    counts = pair_counts(EmbeddedSimilarity(n, present, estimate), codes)
    a, b, _ = all_pairs(invert(signatures), signatures, alpha)
    retrieved = set(zip(np.minimum(a, b).tolist(), np.maximum(a, b).tolist()))
    upper = np.triu(exact >= alpha - 1e-12, k=1)
    relevant = set(zip(*(x.tolist() for x in np.nonzero(upper))))
    hits = len(retrieved & relevant)
    off = ~np.eye(k, dtype=bool)
    stats = {
        "strategy": INDEX_STRATEGY.label, "m": m, "alpha": alpha, "algorithm": algorithm,
        "relevant_pairs": len(relevant), "retrieved_pairs": len(retrieved), "hits": hits,
        "recall": hits / len(relevant) if relevant else None,
        "precision": hits / len(retrieved) if retrieved else None,
        "mean_abs_error": float(np.abs(estimate - exact)[off].mean()) if k > 1 else None,
        "gamma_estimate": {key: as_optional(v) for key, v in gammas(counts).items()},
        "seconds": round(time.perf_counter() - t0, 3),
    }
    return IndexAgreement(stats, counts)
