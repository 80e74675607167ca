"""The exact re-rank of PROCESSQUERY's candidates: Section 4's weighted Jaccard in place of the
min-hash estimate (Section 6.2), over bags stored as flat arrays.

The index stores every document's bag as three flat arrays (``tasks/index_store.py``), the
compressed-sparse-row layout of a term × document matrix read by rows:

    offsets  uint64, n_docs + 1 rising: document d's entries are offsets[d] .. offsets[d + 1] − 1
    terms    uint32 term ids (places in the index's vocabulary), strictly rising within a document
    weights  float32, one per entry: the weighted bag (Section 6.1)
    sums     float64, one per document: the sum of its weights, added in term order

so a candidate's bag is one contiguous slice of a memory-mapped file, and as Σmax = Σq + Σc −
Σmin the weighted Jaccard Σmin/Σmax of the query's bag with a candidate's needs only their
shared terms: one merge of two rising lists of ids, or, when one is much the longer, a
galloping search of it for each term of the other. No strings, no decoding, nothing copied.

:func:`top_exact` is the re-rank of one query's candidates for its ``top`` best: the candidates,
best estimate first, are scored in rounds, and once ``top`` of them reach an exact similarity
of τ or more the rest are left when even the best of their estimates lies below τ − 2σ(τ) —
the rule by which the candidates are chosen at α (simweb.core.query.candidate_alpha), applied
at τ ≥ α. A page with many near-copies (τ near 1) is then answered from a few dozen of its
candidates rather than thousands, with the same answer but where an estimate strays by more
than 2σ.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from simweb.core.query import RERANK_SIGMAS, candidate_alpha, exact_order

try:
    from simweb.core._rerank import scores as _c_scores
except ImportError:  # pragma: no cover - depends on the build
    _c_scores = None

__all__ = ["BagArrays", "exact_scores", "top_exact", "weight_sums"]


@dataclass(frozen=True, slots=True, eq=False)
class BagArrays:
    """Every document's bag as flat arrays (see the module docstring); they may be memory-mapped."""

    offsets: np.ndarray
    terms: np.ndarray
    weights: np.ndarray
    sums: np.ndarray

    def __post_init__(self) -> None:
        if self.offsets.dtype != np.uint64 or self.terms.dtype != np.uint32 or self.weights.dtype != np.float32 \
                or self.sums.dtype != np.float64:
            raise ValueError(f"bag arrays: expected uint64 offsets, uint32 terms, float32 weights and float64 sums, "
                             f"got {self.offsets.dtype}, {self.terms.dtype}, {self.weights.dtype}, {self.sums.dtype}")
        if self.offsets.ndim != 1 or self.offsets.size < 1 or self.terms.shape != self.weights.shape \
                or self.sums.shape != (self.offsets.size - 1,):
            raise ValueError(f"bag arrays: expected n + 1 offsets, one weight per term and n sums, got "
                             f"{self.offsets.shape} offsets, {self.terms.shape} terms, {self.weights.shape} weights, "
                             f"{self.sums.shape} sums")

    @classmethod
    def of(cls, offsets: np.ndarray, terms: np.ndarray, weights: np.ndarray) -> BagArrays:
        """The arrays with each document's sum of weights computed (in term order, in float64)."""
        return cls(offsets, terms, weights, weight_sums(offsets, weights))

    @property
    def n_docs(self) -> int:
        return int(self.offsets.size - 1)

    def bag(self, doc: int) -> tuple[np.ndarray, np.ndarray]:
        """Document ``doc``'s term ids (rising) and weights: views of the arrays."""
        if not 0 <= doc < self.n_docs:
            raise IndexError(f"document {doc} is not in these bags (they hold 0 … {self.n_docs - 1})")
        lo, hi = int(self.offsets[doc]), int(self.offsets[doc + 1])
        return self.terms[lo:hi], self.weights[lo:hi]


def exact_scores(bags: BagArrays, query: int, docs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The weighted Jaccard Σmin/Σmax (Section 4) of document ``query``'s bag with each of
    ``docs``' and their overlap Σmin, in float64 (0 for a pair of empty bags).

    The shared terms of each candidate, in C (simcore/_rerank.c) where it is built, else numpy
    (:func:`_scores_numpy`, the reference; the same sums up to their last bits)."""
    docs = np.ascontiguousarray(docs, dtype=np.int64)
    q_terms, q_weights = bags.bag(query)
    if docs.size and (docs.min() < 0 or docs.max() >= bags.n_docs):
        raise IndexError(f"candidates outside the documents 0 … {bags.n_docs - 1}")
    if _c_scores is None:
        return _scores_numpy(bags, query, docs)
    jaccard, overlap = np.empty(docs.size), np.empty(docs.size)
    _c_scores(np.ascontiguousarray(q_terms), np.ascontiguousarray(q_weights), float(bags.sums[query]), bags.offsets,
              bags.terms, bags.weights, bags.sums, docs, jaccard, overlap)
    return jaccard, overlap


#: Candidates scored in the first round of :func:`top_exact` (at least, per result asked for: 8).
FIRST_ROUND = 256


def top_exact(bags: BagArrays, query: int, docs: np.ndarray, counts: np.ndarray, m: int, alpha: float,
              top: int | None, *, by_overlap: bool = False,
              sigmas: float = RERANK_SIGMAS) -> tuple[np.ndarray, np.ndarray]:
    """The re-ranked answer to one query (see the module docstring): positions in ``docs`` of the
    candidates whose exact Jaccard with ``query`` is ≥ α, by exact similarity descending (ties by
    document id), at most ``top``, and that similarity of each — the overlap Σmin with
    ``by_overlap`` (an index of a strategy compared by overlap: ordered by overlap, found by Jaccard).

    ``docs`` and ``counts`` are PROCESSQUERY's candidates and their collision counts (of m), by
    count descending. Without ``top``, or with ``by_overlap`` (an overlap is not bounded by the
    estimate), every candidate is scored."""
    docs, counts = np.asarray(docs, dtype=np.int64), np.asarray(counts)
    n = docs.size
    end = n if top is None or by_overlap else min(n, max(FIRST_ROUND, 8 * top))
    jaccard, overlap = np.empty(n), np.empty(n)
    done = 0
    while True:
        jaccard[done:end], overlap[done:end] = exact_scores(bags, query, docs[done:end])
        done = end
        if done >= n:
            break
        # The top-th best exact Jaccard so far (≥ α): the rest can only matter if their
        # estimates reach within 2σ of it.
        found = jaccard[:done][jaccard[:done] >= alpha - 1e-12]
        if found.size >= top:
            tau = float(np.partition(found, found.size - top)[found.size - top])
            if counts[done] / m < candidate_alpha(tau, m, sigmas):
                break
        end = min(n, 2 * done)
    scored = docs[:done]
    if by_overlap:
        order = exact_order(scored, overlap[:done], -np.inf)
        order = order[jaccard[order] >= alpha - 1e-12][:top]
        return order, overlap[order]
    order = exact_order(scored, jaccard[:done], alpha, top)
    return order, jaccard[order]


def weight_sums(offsets: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Each document's sum of weights (float64, added in entry order): the ``sums`` of BagArrays."""
    offsets = np.asarray(offsets, dtype=np.int64)
    lengths = np.diff(offsets)
    row = np.repeat(np.arange(lengths.size), lengths)
    return np.bincount(row, weights=np.asarray(weights[offsets[0]:offsets[-1]], dtype=np.float64),
                       minlength=lengths.size).astype(np.float64, copy=False)  # (an empty bincount is int64)


def _scores_numpy(bags: BagArrays, query: int, docs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """:func:`exact_scores` in numpy: the candidates' entries gathered, each looked up among the
    query's terms by a binary search."""
    q_terms, q_weights = bags.bag(query)
    lo = bags.offsets[docs].astype(np.int64)
    lengths = bags.offsets[docs + 1].astype(np.int64) - lo
    total = int(lengths.sum())
    firsts = np.cumsum(lengths) - lengths
    at = np.arange(total, dtype=np.int64) + np.repeat(lo - firsts, lengths)
    terms, weights = bags.terms[at], bags.weights[at].astype(np.float64)
    row = np.repeat(np.arange(docs.size), lengths)
    where = np.minimum(np.searchsorted(q_terms, terms), max(q_terms.size - 1, 0))
    shared = (q_terms[where] == terms) if q_terms.size else np.zeros(total, bool)
    q = q_weights.astype(np.float64)
    inter = np.bincount(row[shared], weights=np.minimum(weights[shared], q[where[shared]]), minlength=docs.size)
    union = bags.sums[query] + bags.sums[docs] - inter
    return np.divide(inter, union, out=np.zeros(docs.size), where=union > 0), inter
