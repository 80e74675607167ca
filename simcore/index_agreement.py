"""How well the min-hash index reproduces exact similarity on an evaluation sample (paper Section 6.2).

The index answers with the fraction of m min-hash signatures two bags share, an estimate of
their weighted Jaccard (Section 6.2); PROCESSQUERY (Figure 11) returns the documents whose
estimate reaches α, and only documents in I (in-degree above the filter, Section 7.1) can be
returned. On the sample's bags this module measures the index's two query paths against the
pairs whose exact Jaccard reaches α:

* ``estimate`` — the paper's: the pairs whose estimate reaches α;
* ``rerank`` — the default of the index's queries (simweb.api): candidates whose estimate
  reaches α − kσ (simweb.core.query.candidate_alpha), kept when their exact Jaccard, computed
  from the bags the index stores, reaches α (simweb.core.query.exact_order).

Both go through the same inverted index with the same in-degree filter as a build, so the
numbers are those of the index's query path. A pair counts as found when a query from either
of its documents returns the other. Beside recall and precision: the Γ of the estimates, the
work of the re-rank (candidates per query), and why the ``estimate`` path misses pairs — their
exact Jaccard near α (within σ of it: the estimate's noise), or both documents out of I.
"""
from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from simweb.core.bag_matrix import BagMatrix
from simweb.core.findings import as_optional
from simweb.core.gamma import PairCounts, gammas, pair_counts
from simweb.core.minhash import INDEX_ALGORITHM, MinHashParams, jaccard_stddev, sign, term_hashes
from simweb.core.query import RERANK_SIGMAS, all_pairs, candidate_alpha, invert
from simweb.core.similarity import EmbeddedSimilarity
from simweb.core.strategy import Strategy

__all__ = ["INDEX_ALPHA", "INDEX_M", "INDEX_STRATEGY", "AgreementParams", "IndexAgreement", "index_agreement"]

# The paper's Section 7 strategy and its m and α (Section 6.2): the index's defaults.
INDEX_STRATEGY = Strategy()
INDEX_M = 80
INDEX_ALPHA = 0.15

# Signature comparisons per block of the estimate matrix (rows × k × m booleans).
_BLOCK_CELLS = 1 << 22


@dataclass(frozen=True, slots=True)
class AgreementParams:
    """The index the agreement is measured for: its min-hash parameters (m, seed, sampler), the
    in-degree filter of I (None: every document in I), α and the re-rank's reach in σ."""

    m: int = INDEX_M
    seed: int = 1
    algorithm: str = INDEX_ALGORITHM
    min_in_degree: int | None = None
    alpha: float = INDEX_ALPHA
    rerank_sigmas: float = RERANK_SIGMAS

    def minhash(self) -> MinHashParams:
        return MinHashParams(m=self.m, seed=self.seed, algorithm=self.algorithm)


@dataclass(frozen=True, slots=True, eq=False)
class IndexAgreement:
    """The agreement's record (JSON-able, see :func:`index_agreement`) and the Γ pair counts of
    the estimates."""

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


def _pairs(a: np.ndarray, b: np.ndarray, k: int) -> np.ndarray:
    """The pairs (a, b) as sorted unique integer keys min · k + max."""
    return np.unique(np.minimum(a, b).astype(np.int64) * k + np.maximum(a, b))


def _per_query(keys: np.ndarray, indexed: np.ndarray) -> float | None:
    """How many answers per query the pairs (integer keys) make: a pair is an answer to each of
    its two documents' queries where the other document is in I."""
    if not indexed.size:
        return None
    k = indexed.size
    return float(indexed[keys // k].sum() + indexed[keys % k].sum()) / k


def _path(found: np.ndarray, hits: int, relevant: int, indexed: np.ndarray) -> dict:
    return {"retrieved_pairs": int(found.size), "hits": hits,
            "recall": hits / relevant if relevant else None,
            "precision": hits / found.size if found.size else None,
            "results_per_query": _per_query(found, indexed)}


def index_agreement(bags: BagMatrix, ids: np.ndarray, exact, present: np.ndarray, codes: np.ndarray,
                    n: int, in_degree: np.ndarray | None = None, params: AgreementParams = AgreementParams(), *,
                    strategy: str = INDEX_STRATEGY.label) -> IndexAgreement:
    """The agreement of the index built from ``bags`` with their exact similarity ``exact``.

    ``ids`` are the sample's documents with a bag (rows ``present`` of the n-document sample
    whose classes are ``codes``), ``exact`` their exact similarity (an array, or any object whose
    rows ``exact[rows]`` are arrays, such as simweb.core.similarity.ExactRows), ``in_degree`` each
    one's in-degree as the index counts it (distinct other pages linking to it; None: unknown,
    no filter). The record holds, per query path (``estimate``, ``rerank``; see the module
    docstring): pairs retrieved, hits, recall, precision; ``recall``/``precision`` at the top
    level are the ``rerank`` path's, the one the index's queries take.

    Estimates and exact similarities are compared a block of rows at a time, and pairs are
    integer keys, so memory holds the signatures, the pairs and one block, never k × k.
    """
    t0 = time.perf_counter()
    rows = bags.indices(ids.tolist())
    csr = bags.csr[rows]
    csr.sort_indices()
    signatures = sign(csr.indices.astype(np.int64), csr.indptr.astype(np.int64), term_hashes(bags.vocabulary),
                      csr.data, params.minhash()).values
    k, m = signatures.shape[0], params.m
    estimates = _Estimates(signatures)
    counts = pair_counts(EmbeddedSimilarity(n, present, estimates), codes)

    indexed = np.ones(k, dtype=bool)
    if in_degree is not None and params.min_in_degree is not None:
        indexed = np.asarray(in_degree) > params.min_in_degree
    inverted = invert(signatures, indexed)
    alpha = params.alpha
    sigma = jaccard_stddev(alpha, m)
    a, b, _ = all_pairs(inverted, signatures, alpha)
    by_estimate = _pairs(a, b, k)
    low = candidate_alpha(alpha, m, params.rerank_sigmas)
    a, b, _ = all_pairs(inverted, signatures, low)
    candidates = _pairs(a, b, k)
    candidate_rows = candidates // k

    relevant = estimate_hits = near_alpha = out_of_i = 0
    reranked, missed_exact = [], []
    abs_error = 0.0
    step = max(1, _BLOCK_CELLS // max(1, k * 8))
    for r0 in range(0, k, step):
        block = np.arange(r0, min(k, r0 + step))
        exact_rows, estimate_rows = np.asarray(exact[block]), estimates[block]
        i, j = np.nonzero((exact_rows >= alpha - 1e-12) & (np.arange(k)[None, :] > block[:, None]))
        keys = block[i] * k + j
        values = exact_rows[i, j]
        relevant += keys.size
        near_alpha += int(np.sum(values < alpha + sigma))
        found = np.isin(keys, by_estimate, assume_unique=True)
        estimate_hits += int(found.sum())
        missed = ~found
        missed_exact.append(values[missed])
        out_of_i += int(np.sum(~indexed[block[i][missed]] & ~indexed[j[missed]]))
        lo, hi = np.searchsorted(candidate_rows, [r0, r0 + block.size])
        mine = candidates[lo:hi]
        kept = exact_rows[mine // k - r0, mine % k] >= alpha - 1e-12
        reranked.append(mine[kept])
        error = np.abs(estimate_rows - exact_rows)
        error[np.arange(block.size), block] = 0.0
        abs_error += float(error.sum())
    reranked = np.concatenate(reranked) if reranked else np.zeros(0, np.int64)
    missed_exact = np.concatenate(missed_exact) if missed_exact else np.zeros(0)

    estimate_path = _path(by_estimate, estimate_hits, relevant, indexed)
    rerank_path = _path(reranked, int(reranked.size), relevant, indexed)
    rerank_path.update(candidate_alpha=low, candidate_pairs=int(candidates.size),
                       candidates_per_query=_per_query(candidates, indexed))
    stats = {
        "strategy": strategy, "m": m, "alpha": alpha, "algorithm": params.algorithm, "seed": params.seed,
        "min_in_degree": params.min_in_degree, "rerank_sigmas": params.rerank_sigmas,
        "documents": k, "indexed_documents": int(indexed.sum()),
        "relevant_pairs": relevant,
        "estimate": estimate_path, "rerank": rerank_path,
        "recall": rerank_path["recall"], "precision": rerank_path["precision"],
        "misses": {
            "pairs": int(missed_exact.size),
            "both_out_of_i": out_of_i,
            "within_sigma_of_alpha": int(np.sum(missed_exact < alpha + sigma)),
            "median_exact": as_optional(float(np.median(missed_exact))) if missed_exact.size else None,
            "sigma": sigma,
        },
        "relevant_within_sigma_of_alpha": near_alpha,
        "mean_abs_error": abs_error / (k * (k - 1)) if k > 1 else None,
        "gamma_estimate": {key: as_optional(v) for key, v in gammas(counts).items()},
        "seconds": round(time.perf_counter() - t0, 3),
    }
    return IndexAgreement(stats, counts)
