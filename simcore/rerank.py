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
than 2σ. :func:`related_top` is the default query of an index: a first guess of τ from the
query's rarest min-hash values, its candidates counted at that guess, then the same rule, past
a few hundred candidates with the finer estimate of the index's fine signatures
(simweb.core.fine), and a bounded number of candidates and of their bag entries scored.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from simweb.core.fine import agreements as fine_agreements
from simweb.core.fine import spread
from simweb.core.query import (
    RERANK_SIGMAS,
    InvertedIndex,
    Matches,
    agreements,
    candidate_alpha,
    exact_order,
    full_count,
    gather,
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


#: Candidates scored in the first round of :func:`top_exact` (at least FIRST_PER_ANSWER per
#: result asked for): on the 1M-page scale crawl 128 answered the same top ten as 256, 0.3 ms
#: sooner at the median.
FIRST_ROUND = 128
FIRST_PER_ANSWER = 8


def _first_round(top: int) -> int:
    return max(FIRST_ROUND, FIRST_PER_ANSWER * top)


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
    end = n if top is None or by_overlap else min(n, _first_round(top))
    jaccard, overlap = np.empty(n), np.empty(n)
    done = 0
    while True:
        jaccard[done:end], overlap[done:end] = exact_scores(bags, query, docs[done:end])
        done = end
        if done >= n:
            break
        # The top-th best exact Jaccard so far (≥ α): the rest can only matter if their
        # estimates reach within 2σ of it.
        tau = _tau(jaccard[:done], alpha, top)
        if tau is not None and counts[done] / m < candidate_alpha(tau, m, sigmas):
            break
        end = min(n, 2 * done)
    scored = docs[:done]
    if by_overlap:
        order = exact_order(scored, overlap[:done], -np.inf)
        order = order[jaccard[order] >= alpha - 1e-12][:top]
        return order, overlap[order]
    order = exact_order(scored, jaccard[:done], alpha, top)
    return order, jaccard[order]


#: Candidates :func:`related_top` scores by H's estimate before it reads the fine one (H2) for
#: the rest: a query whose rule stops within them never reads H2.
FINE_AFTER = 256
#: ... where more candidates than this are left: fewer are scored by H's estimate sooner than the
#: fine estimate's steps take (on DebDocs a query of 286 candidates took 103 µs scoring them all,
#: 156 µs reading H2 for the last 30; 256 measured as fast as 1,024 at 100k, 0.3 ms sooner at 1M).
FINE_REST = 256
#: Candidates :func:`related_top` scores at most for one answer (the best by the fine estimate),
#: and bag entries per candidate of that budget: a page's entries are the cost of its score, and
#: on the 1M-page scale crawl the slowest answers were those of pages of 3,000 words or more
#: whose candidates are as long (2,000 candidates, 6 M entries, 50 ms).
FINE_BUDGET = 4096
ENTRIES_PER_SCORE = 512
#: Postings of a query's smallest buckets :func:`related_top` reads for its first guess of τ.
FIRST_POSTINGS = 4096
#: Postings of all a query's buckets past which :func:`related_top` makes that guess (fewer are
#: counted in less time than the guess takes, about 0.2 ms).
GUESS_PAST = 262_144


def related_top(index: InvertedIndex, h: np.ndarray, bags: BagArrays, query: int, alpha: float, top: int, *,
                h2: np.ndarray | None = None, sigmas: float = RERANK_SIGMAS, fine_after: int = FINE_AFTER,
                budget: int = FINE_BUDGET) -> tuple[Matches, np.ndarray]:
    """The ``top`` pages most like document ``query`` by exact weighted Jaccard (≥ α): returns them
    (ids and counts of agreeing min-hash positions, of H's m) and their exact similarities.

    First a guess: the documents of the query's smallest buckets (FIRST_POSTINGS postings), the
    best of them by their counts (:func:`_first_guess`), scored; if ``top`` of them reach α, the
    top-th best, τ₀, is a floor of the answer's τ, and the candidates are PROCESSQUERY's at
    τ₀ − 2σ(τ₀), else at α − 2σ(α) (simweb.core.query.full_count): on the 1M-page scale crawl a
    median query has a hundred times fewer candidates at its τ than at α.
    Without ``h2`` the rule is :func:`top_exact`'s: every candidate is scored, best estimate
    first, until ``top`` reach an exact τ and every candidate left is estimated below τ − 2σ(τ).

    With ``h2`` (the index's fine signatures, simweb.core.fine), past ``fine_after`` candidates
    scored so the rest go by the fine estimate: best first, until each one left lies below
    τ′ − 2σ₂(τ′) (σ₂ its own, from the labels the pair has; τ′ = τ, or α while fewer than ``top``
    reach α) — the same rule with an estimate of 0.6 times the spread — and at most ``budget``
    candidates scored in all (32 per answer asked for, where that is more: a request for every
    page ≥ α is not cut). On the 1M-page scale crawl, whose four mirror rounds give a page up
    to 200,000 candidates and thousands of them within 2σ of its tenth answer, the cut and the
    budget took the slowest hundredth of queries from 400 ms to 75 ms (47 ms with the fine counts
    in C a byte at a time and only the candidates near τ′ sorted; 40 ms, and 4.4 ms at the median,
    with the first guess, the searched buckets and the bound on bag entries), and the answers held
    0.993 of the exact top ten."""
    m = index.m
    need = min_count(candidate_alpha(alpha, m, sigmas), m)
    sig = np.asarray(h[query])
    buckets, sizes = query_buckets(index, sig)
    if buckets.size < need:
        return Matches(query, np.zeros(0, np.int64), np.zeros(0, np.int64), m), np.zeros(0)
    first_exact = None
    if int(sizes.sum()) > GUESS_PAST:
        first, first_counts = _first_guess(index, h, sig, buckets, sizes, need, query, _first_round(top))
        first_exact = exact_scores(bags, query, first)[0]
        tau = _tau(first_exact, alpha, top)
        if tau is not None:
            need = max(need, min_count(candidate_alpha(tau, m, sigmas), m))
    found = full_count(index, buckets, sizes, sig, need, None, query, h)
    docs, counts = found.docs, found.counts
    if first_exact is not None:  # the guess's documents first (scored), then the others by count descending
        rest = ~np.isin(docs, first, assume_unique=True)
        docs, counts = np.concatenate((first, docs[rest])), np.concatenate((first_counts, counts[rest]))
    fine = (h2, np.asarray(h2[query]), fine_after, max(budget, 32 * top)) if h2 is not None else None
    docs, counts, exact = _score_until(bags, query, docs, counts, m, alpha, top, sigmas, fine, first_exact)
    order = exact_order(docs, exact, alpha, top)
    return Matches(query, docs[order], counts[order], m), exact[order]


def _first_guess(index: InvertedIndex, h: np.ndarray, sig: np.ndarray, buckets: np.ndarray, sizes: np.ndarray,
                 need: int, query: int, want: int) -> tuple[np.ndarray, np.ndarray]:
    """The documents of the query's smallest buckets (FIRST_POSTINGS postings, at least four
    buckets but at most 16 times as many postings; none where even the smallest holds more) that
    agree with it in ``need`` positions or more, the ``want`` best by their count
    of agreeing positions (read from H; ids rising within a count): the rarest values a page has
    are the ones its near-copies share. Returns their ids and counts."""
    cum = sizes.cumsum()
    reach = max(int(np.searchsorted(cum, FIRST_POSTINGS, side="right")), min(4, buckets.size))
    reach = min(reach, int(np.searchsorted(cum, 16 * FIRST_POSTINGS, side="right")))  # no bucket of millions
    if not reach:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    starts = index.offsets.take(buckets[:reach]).astype(np.int64)
    docs, shared = np.unique(gather(index, starts, sizes[:reach]), return_counts=True)
    other = docs != query
    docs, shared = docs[other].astype(np.int64), shared[other]
    if docs.size > 2 * want:  # the most shared among the buckets read, then their counts from H
        docs = np.sort(docs[np.argpartition(-shared, 2 * want)[:2 * want]])
    counts = agreements(h, sig, docs)
    order = np.lexsort((docs, -counts))
    order = order[counts[order] >= need][:want]
    return docs[order], counts[order]


def _score_until(bags: BagArrays, query: int, docs: np.ndarray, counts: np.ndarray, m: int, alpha: float, top: int,
                 sigmas: float, fine: tuple[np.ndarray, np.ndarray, int, int] | None = None,
                 known: np.ndarray | None = None):
    """Score the candidates ``docs`` (by count descending after the first len(``known``), whose
    exact Jaccard ``known`` holds) in rounds, as :func:`top_exact`, until ``top`` reach τ and the
    next one is estimated below τ − 2σ(τ), or none is left; with ``fine`` (H2, the query's row, a
    number of candidates and a budget) past that number, by :func:`_score_by_fine`. Returns the
    candidates scored, their counts and exact Jaccard."""
    n = docs.size
    exact = np.empty(n)
    done = 0
    if known is not None:
        done, exact[:known.size] = known.size, known
    first = _first_round(top) if fine is None else min(fine[2], _first_round(top))
    end, stopped = max(done, min(n, first)), False
    while True:
        if end > done:
            exact[done:end] = exact_scores(bags, query, docs[done:end])[0]
            done = end
        if done >= n:
            break
        tau = _tau(exact[:done], alpha, top)
        if tau is not None and counts[done] < m * candidate_alpha(tau, m, sigmas) - 1e-9:
            stopped = True
            break
        if fine is not None and done >= fine[2] and n - done > FINE_REST:
            break
        end = min(n, max(2 * done, _first_round(top)))
    scored = np.zeros(n, bool)
    scored[:done] = True
    if fine is not None and not stopped and done < n:
        _score_by_fine(bags, query, docs, counts, m, exact, scored, fine, alpha, top, sigmas)
    return docs[scored], counts[scored], exact[scored]


def _score_by_fine(bags: BagArrays, query: int, docs: np.ndarray, counts: np.ndarray, m: int, exact: np.ndarray,
                   scored: np.ndarray, fine: tuple[np.ndarray, np.ndarray, int, int], alpha: float, top: int,
                   sigmas: float) -> None:
    """Score the candidates not yet ``scored`` best fine estimate first, in rounds, until none left
    is estimated within ``sigmas`` of its own spread below τ (α while fewer than ``top`` reach
    α), or the budget is scored; fills ``exact`` and ``scored`` in place. Where τ is known, the
    fine estimate is read only for the candidates whose ``counts`` (of H's m) are those of
    PROCESSQUERY at τ − 2σ(τ), as :func:`related_top` chooses candidates at its first guess of τ."""
    h2, row, _, budget = fine
    rest = np.flatnonzero(~scored)
    tau = _tau(exact[scored], alpha, top)
    if tau is not None:
        rest = rest[counts[rest] >= m * candidate_alpha(tau, m, sigmas) - 1e-9]
    same, defined = fine_agreements(h2, row, docs[rest])
    estimate = same / np.maximum(defined, 1)
    # τ′ only rises as candidates are scored, so no threshold below will be under τ′₀ − sigmas·σ
    # at the widest spread from τ′₀ up: only the candidates above that are sorted (the same order).
    at = alpha if tau is None else tau
    widest = np.sqrt((0.25 if at <= 0.5 else at * (1.0 - at)) / np.maximum(defined, 1))
    near = np.flatnonzero(estimate >= at - sigmas * widest - 1e-12)
    order = near[np.argsort(-estimate[near], kind="stable")]
    by_estimate, estimate, defined = rest[order], estimate[order], defined[order]
    step, left = 64, budget - int(scored.sum())
    entries = budget * ENTRIES_PER_SCORE - int(_entries(bags, docs[scored]).sum())
    while left > 0 and entries > 0:
        at = _tau_or_alpha(exact[scored], alpha, top)
        wanted = ~scored[by_estimate] & (estimate >= at - sigmas * spread(at, defined) - 1e-12)
        pick = by_estimate[wanted][:min(step, left)]
        if not pick.size:
            return
        cost = _entries(bags, docs[pick]).cumsum()
        within = int(np.searchsorted(cost, entries, side="right"))
        if not within:
            return
        pick, cost = pick[:within], int(cost[within - 1])
        exact[pick] = exact_scores(bags, query, docs[pick])[0]
        scored[pick] = True
        step, left, entries = 2 * step, left - pick.size, entries - cost


def _entries(bags: BagArrays, docs: np.ndarray) -> np.ndarray:
    """The number of bag entries of each of ``docs``."""
    return np.subtract(bags.offsets.take(docs + 1), bags.offsets.take(docs), dtype=np.int64)


def _tau(exact: np.ndarray, alpha: float, top: int) -> float | None:
    """τ: the ``top``-th best of the ``exact`` similarities ≥ α; None while fewer reach α."""
    found = exact[exact >= alpha - 1e-12]
    return float(np.partition(found, found.size - top)[found.size - top]) if found.size >= top else None


def _tau_or_alpha(exact: np.ndarray, alpha: float, top: int) -> float:
    """τ′ of the fine rule: τ, or α while fewer than ``top`` reach α."""
    tau = _tau(exact, alpha, top)
    return alpha if tau is None else tau


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
