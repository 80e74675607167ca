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
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from simweb.core.query import InvertedIndex, Matches
from simweb.core.rerank import BagArrays, related_top

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

    def answer(self, query: int, alpha: float, top: int) -> tuple[Matches, np.ndarray]:
        """Document ``query``'s ``top`` best at ``alpha`` from its row, as ``related_top`` returns
        them: (ids and counts, exact similarities). The request must be :meth:`covers`'s."""
        if not self.covers(alpha, top):
            raise ValueError(f"the table answers top ≤ {self.width} at alpha ≥ {self.alpha}, "
                             f"not top {top} at alpha {alpha}")
        docs, exact = self.docs[query], self.exact[query]
        k = int(np.count_nonzero((docs >= 0) & (exact >= alpha - _ROUNDING)))  # a row is a prefix, best first
        k = min(k, top)
        return (Matches(query, docs[:k].astype(np.int64), self.counts[query, :k].astype(np.int64), self.m),
                np.array(exact[:k], dtype=np.float64))


def answer_rows(index: InvertedIndex, h: np.ndarray, bags: BagArrays, queries: range, alpha: float, width: int, *,
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
