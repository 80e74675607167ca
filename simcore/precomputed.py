"""Related pages computed ahead: every document's answer to the default query, kept as a table
so that a query is a look-up (the "Similar pages" of a search engine is served this way: the
paper's Section 6 index is built once, and its answers change only when the crawl does).

A table of width w holds, per document d (row d), the answer :func:`simweb.core.rerank.related_top`
gives d at threshold α for the w best: the ids of its related documents, the counts of min-hash
positions each shares with d (the estimate's numerator, Section 6.2), and their exact weighted
Jaccard (Section 4), best first, ties by id; past a row's answers its ids are −1.

Such a row answers every request for d's ``top`` ≤ w best at a threshold α′ ≥ α: its first
entries whose exact similarity is ≥ α′, at most ``top``. (The ``top`` best of the pages ≥ α′
are among the w best of those ≥ α, in the same order.)

When an index is updated in place — some documents' bags replaced, new ones appended, every
other document as it was — only some rows change (:func:`rows_to_update`): the updated
documents' own, those that name an updated document, and those an updated document now
enters: a page u enters row q only if its exact similarity to q reaches the row's last
(tenth) score, or α while the row is not full.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from simweb.core.query import InvertedIndex, Matches, agreements, candidate_alpha, min_count, process_queries
from simweb.core.rerank import BagArrays, exact_scores, related_top

#: Below the least similarity asked for by this much, an exact score still counts as reaching it
#: (as simweb.core.query.exact_order rounds).
_ROUNDING = 1e-12


@dataclass(frozen=True, slots=True, eq=False)
class AnswerTable:
    """The rows of a table of answers (see the module docstring): ``docs`` n × w int32 (−1 past a
    row's answers), ``counts`` n × w uint16, ``exact`` n × w float64; computed at ``alpha`` over an
    index of ``m`` min-hashes. The arrays may be memory-mapped."""

    docs: np.ndarray
    counts: np.ndarray
    exact: np.ndarray
    alpha: float
    m: int

    def __post_init__(self) -> None:
        shape = self.docs.shape
        if len(shape) != 2 or self.counts.shape != shape or self.exact.shape != shape:
            raise ValueError(f"answer table: expected three n × w arrays, got {self.docs.shape}, "
                             f"{self.counts.shape}, {self.exact.shape}")

    @property
    def width(self) -> int:
        return int(self.docs.shape[1])

    @property
    def n_docs(self) -> int:
        return int(self.docs.shape[0])

    def covers(self, alpha: float, top: int) -> bool:
        """Whether the table answers a request for the ``top`` best at ``alpha``."""
        return top <= self.width and alpha >= self.alpha - _ROUNDING

    def answer(self, query: int, alpha: float, top: int) -> tuple[Matches, np.ndarray] | None:
        """Document ``query``'s ``top`` best at ``alpha`` from its row, as ``related_top`` returns
        them: (ids and counts, exact similarities); None for a row that is not one (an id outside
        the table, counts above m: a damaged file). The request must be :meth:`covers`'s."""
        if not self.covers(alpha, top):
            raise ValueError(f"the table answers top ≤ {self.width} at alpha ≥ {self.alpha}, "
                             f"not top {top} at alpha {alpha}")
        docs, exact = self.docs[query], self.exact[query]
        k = int(np.count_nonzero((docs >= 0) & (exact >= alpha - _ROUNDING)))  # a row is a prefix, best first
        k = min(k, top)
        ids, counts = docs[:k].astype(np.int64), self.counts[query, :k].astype(np.int64)
        if k and (ids.min() < 0 or ids.max() >= self.n_docs or counts.max() > self.m):
            return None
        return Matches(query, ids, counts, self.m), np.array(exact[:k], dtype=np.float64)


def answer_rows(index: InvertedIndex, h: np.ndarray, bags: BagArrays, queries: Sequence[int], alpha: float, width: int, *,
                h2: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The rows of the documents ``queries`` of a table of ``width`` at ``alpha``: each one
    :func:`related_top`'s answer for the ``width`` best (with the index's fine signatures ``h2``,
    as the query of an index uses them). Returns (ids, counts, exact), each len(queries) × width."""
    n = len(queries)
    docs = np.full((n, width), -1, dtype=np.int32)
    counts = np.zeros((n, width), dtype=np.uint16)
    exact = np.zeros((n, width), dtype=np.float64)
    for row, query in enumerate(queries):
        match, scores = related_top(index, h, bags, query, alpha, width, h2=h2)
        k = len(match)
        docs[row, :k] = match.docs
        counts[row, :k] = match.counts
        exact[row, :k] = scores
    return docs, counts, exact


def rows_to_update(index: InvertedIndex, h: np.ndarray, bags: BagArrays, old: AnswerTable, updated: np.ndarray,
                   not_indexed: np.ndarray) -> np.ndarray:
    """The rows of an updated index whose answers may differ from ``old``'s (the table of the index
    it was updated from, at the same α, width and min-hash functions), rising: the ``updated``
    documents (replaced or appended; every document past old's is one), the rows of ``old`` that
    name one of them, and the rows an updated document may now enter — those of the documents it
    is estimated at least α − 2σ similar to (PROCESSQUERY over the index ``index``, and over the
    rows of H of the documents ``not_indexed`` in it, which can be asked about but are not in I)
    whose exact similarity to it reaches the row's last score, or α when the row is not full.
    (Found as the default query finds its candidates: a document estimated more than 2σ below α
    is missed by both.)"""
    updated = np.unique(np.asarray(updated, dtype=np.int64))
    n_old, alpha, m = old.n_docs, old.alpha, old.m
    rows = [updated, np.flatnonzero(np.isin(old.docs, updated).any(axis=1))]
    floor = np.where(old.docs[:, -1] >= 0, old.exact[:, -1], alpha)  # what a page must reach to enter a row
    low = candidate_alpha(alpha, m)
    need = min_count(low, m)
    not_indexed = np.asarray(not_indexed, dtype=np.int64)
    entering = updated[~np.isin(updated, not_indexed)]  # a page outside I is no page's answer
    matches = process_queries(index, h[entering], low, None, entering, h) if entering.size else []
    for u, match in zip(entering.tolist(), matches):
        near = match.docs
        if not_indexed.size:  # pages asked about but not in I: their rows of H, compared one by one
            counts = agreements(h, np.asarray(h[u]), not_indexed)
            near = np.concatenate((near, not_indexed[(counts >= need) & (not_indexed != u)]))
        near = near[near < n_old]
        if near.size:
            exact = exact_scores(bags, u, near)[0]
            rows.append(near[exact >= floor[near] - _ROUNDING])
    return np.unique(np.concatenate(rows))
