"""The exact re-rank of PROCESSQUERY's candidates: Section 4's weighted Jaccard in place of the
min-hash estimate (Section 6.2), over bags stored as flat arrays.

The index stores every document's bag as three flat arrays (``tasks/index_store.py``), the
compressed-sparse-row layout of a term × document matrix read by rows:

    offsets  uint64, n_docs + 1 rising: document d's entries are offsets[d] .. offsets[d + 1] − 1
    terms    uint32 term ids (places in the index's vocabulary), strictly rising within a document
    weights  float32, one per entry: the weighted bag (Section 6.1)

so a candidate's bag is one contiguous slice of a memory-mapped file and the weighted Jaccard
Σmin/Σmax of the query's bag with a candidate's is one merge of two rising lists of ids: no
strings, no decoding, nothing copied. One query's candidates (hundreds, a few thousand at
most) cost about as much as reading their bags once: on the 100k-page scale crawl a few
hundred microseconds (benchmarks/query.py).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

try:
    from simweb.core._rerank import scores as _c_scores
except ImportError:  # pragma: no cover - depends on the build
    _c_scores = None

__all__ = ["BagArrays", "exact_scores"]


@dataclass(frozen=True, slots=True, eq=False)
class BagArrays:
    """Every document's bag as flat arrays (see the module docstring); they may be memory-mapped."""

    offsets: np.ndarray
    terms: np.ndarray
    weights: np.ndarray

    def __post_init__(self) -> None:
        if self.offsets.dtype != np.uint64 or self.terms.dtype != np.uint32 or self.weights.dtype != np.float32:
            raise ValueError(f"bag arrays: expected uint64 offsets, uint32 terms and float32 weights, got "
                             f"{self.offsets.dtype}, {self.terms.dtype}, {self.weights.dtype}")
        if self.offsets.ndim != 1 or self.offsets.size < 1 or self.terms.shape != self.weights.shape:
            raise ValueError(f"bag arrays: expected n + 1 offsets and one weight per term, got {self.offsets.shape} "
                             f"offsets, {self.terms.shape} terms, {self.weights.shape} weights")

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

    One merge of rising term ids per candidate, in C (simcore/_rerank.c) where it is built,
    else numpy (:func:`_scores_numpy`, the reference; the same sums up to their last bits)."""
    docs = np.ascontiguousarray(docs, dtype=np.int64)
    q_terms, q_weights = bags.bag(query)
    if docs.size and (docs.min() < 0 or docs.max() >= bags.n_docs):
        raise IndexError(f"candidates outside the documents 0 … {bags.n_docs - 1}")
    if _c_scores is None:
        return _scores_numpy(bags, q_terms, q_weights, docs)
    jaccard, overlap = np.empty(docs.size), np.empty(docs.size)
    _c_scores(np.ascontiguousarray(q_terms), np.ascontiguousarray(q_weights), bags.offsets, bags.terms,
              bags.weights, docs, jaccard, overlap)
    return jaccard, overlap


def _scores_numpy(bags: BagArrays, q_terms: np.ndarray, q_weights: np.ndarray,
                  docs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """:func:`exact_scores` in numpy: the candidates' entries gathered, each looked up among the
    query's terms by a binary search."""
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
    union = q.sum() + np.bincount(row, weights=weights, minlength=docs.size) - inter
    return np.divide(inter, union, out=np.zeros(docs.size), where=union > 0), inter
