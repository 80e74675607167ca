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

import math
from dataclasses import dataclass

import numpy as np

from simweb.core.fine import agreements as fine_agreements
from simweb.core.fine import spread
from simweb.core.query import (
    RERANK_SIGMAS,
    InvertedIndex,
    Matches,
    candidate_alpha,
    count_candidates,
    exact_order,
    full_count,
    min_count,
    query_buckets,
)

try:
    from simweb.core._rerank import scores as _c_scores
except ImportError:  # pragma: no cover - depends on the build
    _c_scores = None

__all__ = ["BagArrays", "exact_scores", "related_top", "top_exact", "weight_sums"]


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


#: Postings the first stage of :func:`related_top` reads, from the query's smallest buckets.
FIRST_POSTINGS = 4096
#: Candidates :func:`related_top` scores by H's estimate before it reads the fine one (H2) for
#: the rest: a query whose rule stops within them never reads H2.
FINE_AFTER = 1024


def related_top(index: InvertedIndex, h: np.ndarray, bags: BagArrays, query: int, alpha: float, top: int, *,
                h2: np.ndarray | None = None, sigmas: float = RERANK_SIGMAS, first_postings: int = FIRST_POSTINGS,
                fine_after: int = FINE_AFTER) -> tuple[Matches, np.ndarray]:
    """The ``top`` pages most like document ``query`` by exact weighted Jaccard (≥ α), found by
    reading the query's buckets of I smallest first, only as many as its answer needs; returns
    them (ids and counts of agreeing min-hash positions) and their exact similarities.

    The rule is :func:`top_exact`'s over the candidates estimated ≥ α − 2σ(α): every candidate
    is scored, best estimate first, until ``top`` reach an exact τ and every candidate left is
    estimated below τ − 2σ(τ). Such a candidate agrees with the query in at least
    c = ⌈m·(τ − 2σ(τ))⌉ positions, so it lies in at least one of any k − c + 1 of the query's k
    buckets (pigeonhole): the smallest of them give every candidate that can still matter. A page
    with near-copies (τ near 1) is answered from its few smallest buckets, where the full count
    reads all but α − 2σ(α)·m of them — at a million pages thousands of postings against a
    hundred thousand. Stages: the smallest buckets up to ``first_postings`` postings; then, with τ
    known, the k − c + 1 smallest; without ``top`` answers yet, all but the need − 1 largest
    (the full count). Each stage counts its buckets' documents anew (the first is small); a
    document scored once is not scored again. A query whose full count reads at most four times
    ``first_postings`` is counted in one stage.

    With ``h2`` (the index's fine signatures, simweb.core.fine), a query of every candidate whose
    scoring goes on past ``fine_after`` candidates goes on by the fine estimate instead: the rest are
    scored best fine estimate first until each one left lies below τ − 2σ₂(τ) (σ₂ its own, from
    the labels the pair has; τ is α while fewer than ``top`` reach α) — the same rule with a
    finer estimate, which leaves a tenth as many to score on crawls of many loosely similar pages."""
    m = index.m
    need = min_count(candidate_alpha(alpha, m, sigmas), m)
    sig = np.asarray(h[query])
    buckets, sizes = query_buckets(index, sig)
    k = int(buckets.size)
    full = k - need + 1
    if full < 1:
        return Matches(query, np.zeros(0, np.int64), np.zeros(0, np.int64), m), np.zeros(0)
    cumulative = sizes.cumsum()
    # A query whose full count is small is counted at once (a stage costs its fixed steps too).
    read = full if cumulative[full - 1] <= 4 * first_postings else \
        max(1, int(np.searchsorted(cumulative, first_postings, side="right")))
    known_docs, known_exact = np.zeros(0, np.int64), np.zeros(0)
    while True:
        found = (full_count(index, buckets, sizes, sig, need, None, query, h) if read == full else
                 count_candidates(index, buckets[:read], sig, need, None, query, h))
        fine = (h2, np.asarray(h2[query]), fine_after) if h2 is not None and read == full else None
        docs, counts, exact, tau = _score_until(bags, query, found.docs, found.counts, m, alpha, top, sigmas,
                                                known_docs, known_exact, fine)
        # A document in none of the buckets read agrees in at most the k − read others.
        beyond = k - read
        if read < full and tau is None:
            read = full
        elif read < full and beyond >= m * candidate_alpha(tau, m, sigmas) - 1e-9:
            # Documents not met yet might be estimated ≥ τ − 2σ(τ): read down to that count.
            c = math.ceil(m * candidate_alpha(tau, m, sigmas) - 1e-9)
            read = min(full, max(read + 1, k - c + 1))
        else:
            order = exact_order(docs, exact, alpha, top)
            return Matches(query, docs[order], counts[order], m), exact[order]
        known_docs, known_exact = docs, exact


def _score_until(bags: BagArrays, query: int, docs: np.ndarray, counts: np.ndarray, m: int, alpha: float, top: int,
                 sigmas: float, known_docs: np.ndarray, known_exact: np.ndarray,
                 fine: tuple[np.ndarray, np.ndarray, int] | None = None):
    """Score the candidates ``docs`` (by count descending) in rounds, as :func:`top_exact`, until
    ``top`` reach τ and the next one is estimated below τ − 2σ(τ), or none is left; with ``fine``
    (H2, the query's row and a number of candidates) past that number, by :func:`_score_by_fine`. Returns the candidates
    scored (by id), their counts and exact Jaccard, and τ (None: fewer than ``top`` reach α).
    The exact values of ``known_docs`` (rising) are taken, not computed again."""
    n = docs.size
    exact = np.empty(n)
    first = max(FIRST_ROUND, 8 * top) if fine is None else min(fine[2], max(FIRST_ROUND, 8 * top))
    done, end, tau, stopped = 0, min(n, first), None, False
    while done < n:
        exact[done:end] = _scores(bags, query, docs[done:end], known_docs, known_exact)
        done = end
        found = exact[:done][exact[:done] >= alpha - 1e-12]
        if found.size >= top:
            tau = float(np.partition(found, found.size - top)[found.size - top])
            if done >= n or counts[done] < m * candidate_alpha(tau, m, sigmas) - 1e-9:
                stopped = True
                break
        if fine is not None and done >= fine[2]:
            break
        end = min(n, 2 * done)
    scored = np.zeros(n, bool)
    scored[:done] = True
    if fine is not None and not stopped and done < n:
        tau = _score_by_fine(bags, query, docs, exact, scored, fine, alpha, top, sigmas, known_docs, known_exact)
    order = np.flatnonzero(scored)
    order = order[np.argsort(docs[order], kind="stable")]
    return docs[order], counts[order], exact[order], tau


def _score_by_fine(bags: BagArrays, query: int, docs: np.ndarray, exact: np.ndarray, scored: np.ndarray,
                   fine: tuple[np.ndarray, np.ndarray, int], alpha: float, top: int, sigmas: float,
                   known_docs: np.ndarray, known_exact: np.ndarray) -> float | None:
    """Score the candidates not yet ``scored`` best fine estimate first, in rounds, until none left
    is estimated within ``sigmas`` of its own spread below τ (α while fewer than ``top`` reach
    α); fills ``exact`` and ``scored`` in place and returns τ (None: fewer than ``top`` reach α)."""
    h2, row, _ = fine
    rest = np.flatnonzero(~scored)
    same, defined = fine_agreements(h2, row, docs[rest])
    estimate = same / np.maximum(defined, 1)
    order = np.argsort(-estimate, kind="stable")
    by_estimate, estimate, defined = rest[order], estimate[order], defined[order]
    step = 64
    while True:
        found = exact[scored][exact[scored] >= alpha - 1e-12]
        tau = float(np.partition(found, found.size - top)[found.size - top]) if found.size >= top else None
        at = max(alpha, tau or alpha)
        wanted = ~scored[by_estimate] & (estimate >= at - sigmas * spread(at, defined) - 1e-12)
        pick = by_estimate[wanted][:step]
        if not pick.size:
            return tau
        exact[pick] = _scores(bags, query, docs[pick], known_docs, known_exact)
        scored[pick] = True
        step *= 2


def _scores(bags: BagArrays, query: int, docs: np.ndarray, known_docs: np.ndarray,
            known_exact: np.ndarray) -> np.ndarray:
    """The exact Jaccard of ``docs`` with ``query``: those of ``known_docs`` (rising) as known."""
    if not known_docs.size:
        return exact_scores(bags, query, docs)[0]
    at = np.searchsorted(known_docs, docs).clip(max=known_docs.size - 1)
    old = known_docs[at] == docs
    values = np.empty(docs.size)
    values[old] = known_exact[at[old]]
    if not old.all():
        values[~old] = exact_scores(bags, query, docs[~old])[0]
    return values


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
