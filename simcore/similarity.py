"""Exact similarity of bags: weighted Jaccard, cosine and overlap, for one pair or all pairs (paper Section 4).

Bag Jaccard extends set Jaccard to multisets with min and max multiplicities (Section 4):

    J(A, B) = Σ_t min(A_t, B_t) / Σ_t max(A_t, B_t) = Σmin / (|A| + |B| − Σmin),

|A| the total weight of A. Cosine is the comparison metric. Overlap (beyond the paper,
simweb.core.strategy, "Overlap") is Σmin itself, on bags that were not normalised. An empty bag
is similar to nothing, itself included (similarity 0): it carries no evidence.

All pairs (:func:`exact_pairs`) follows the inversion algorithm of the lecture notes
(../shared/papers/lecture-similarity-queries-and-evaluation.txt: write (term, doc) records,
group by term, emit the pairs of each term's documents, add up per pair), with the per-pair
contribution min(A_t, B_t) instead of 1, done in blocks of rows with numpy:

* a term in few bags ("light"): its postings are expanded to (row, partner, min) triples —
  only partners after the row, the upper triangle — and added into a dense block of the
  result with ``np.bincount``; the work is Σ_t p_t (p_t − 1)/2 for p_t bags holding term t,
  the same as a sparse product A·Aᵀ;
* a term in many bags ("heavy", more than a quarter of them): the triple expansion would
  cost more than the dense outer minimum, so ``np.minimum(a_block[:, None], a[None, :])`` is
  added directly (a zero weight contributes zero, so absent terms need no masking).

Cosine is the product of the L2-normalised rows: heavy terms as a dense (BLAS) product, the
rest as sparse products by row blocks added into the dense result.
"""
from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from simweb.core.bag_matrix import BagMatrix
from simweb.core.strategy import Metric

__all__ = [
    "Blocks", "EmbeddedSimilarity", "ExactRows", "cosine", "exact_pairs", "jaccard", "jaccard_to_many", "overlap",
    "shared_terms", "similarity",
]

@dataclass(frozen=True, slots=True)
class Blocks:
    """How the all-pairs kernels cut their work: any values give the same similarities (up to
    the rounding of sums taken in another grouping); the defaults were measured fastest."""

    #: Triples expanded per block (≈ 50 bytes of temporaries each); 1M measured fastest (cache-sized blocks).
    triple_budget: int = 1_000_000
    #: Dense result cells per block (× 8 bytes).
    block_cells: int = 4_000_000
    #: A term in more than this fraction of the bags is handled by the dense outer minimum.
    heavy_fraction: float = 0.25
    #: For cosine a dense (BLAS) product is cheap per cell, so far more terms go dense (measured
    #: on 10,000 synthetic anchor bags: 2% halves the time of 25%).
    cosine_dense_fraction: float = 0.02


def jaccard(a: Mapping[str, float], b: Mapping[str, float]) -> float:
    """Σ min / Σ max of two bags given as {term: weight} (Section 4); 0 when both are empty."""
    inter = sum(min(w, b[t]) for t, w in a.items() if t in b)
    union = sum(a.values()) + sum(b.values()) - inter
    return inter / union if union > 0 else 0.0


def overlap(a: Mapping[str, float], b: Mapping[str, float]) -> float:
    """Σ min of two bags given as {term: weight} (simweb.core.strategy, "Overlap")."""
    return float(sum(min(w, b[t]) for t, w in a.items() if t in b))


def jaccard_to_many(query: np.ndarray, codes: np.ndarray, offsets: np.ndarray, weights: np.ndarray, *,
                    with_overlap: bool = False) -> np.ndarray | tuple[np.ndarray, np.ndarray]:
    """Σ min / Σ max (Section 4) of one bag against many, vectorised: the exact re-rank of an
    index's candidates (simweb.core.query.exact_order); with ``with_overlap``, (Jaccard, Σ min).

    ``query[c]`` is the query bag's weight of term c (0 for a term it lacks); bag i holds the
    terms ``codes[offsets[i]:offsets[i + 1]]`` (indices into ``query``, −1 for a term the query
    lacks) with ``weights`` — each term once per bag. A pair of empty bags has similarity 0.
    """
    query = np.asarray(query, dtype=np.float64)
    codes, weights = np.asarray(codes, dtype=np.int64), np.asarray(weights, dtype=np.float64)
    lengths = np.diff(np.asarray(offsets, dtype=np.int64))
    row = np.repeat(np.arange(lengths.size), lengths)
    shared = codes >= 0
    inter = np.bincount(row[shared], weights=np.minimum(weights[shared], query[codes[shared]]),
                        minlength=lengths.size)
    union = query.sum() + np.bincount(row, weights=weights, minlength=lengths.size) - inter
    exact = np.divide(inter, union, out=np.zeros(lengths.size), where=union > 0)
    return (exact, inter) if with_overlap else exact


def cosine(a: Mapping[str, float], b: Mapping[str, float]) -> float:
    """The cosine of two bags as term vectors; 0 when either is empty."""
    dot = sum(w * b[t] for t, w in a.items() if t in b)
    na = math.sqrt(sum(w * w for w in a.values()))
    nb = math.sqrt(sum(w * w for w in b.values()))
    return dot / (na * nb) if na > 0 and nb > 0 else 0.0


def similarity(a: Mapping[str, float], b: Mapping[str, float], metric: Metric | str = Metric.JACCARD) -> float:
    """The similarity of two bags under ``metric``."""
    metric = Metric(metric)
    if metric is Metric.OVERLAP:
        return overlap(a, b)
    return jaccard(a, b) if metric is Metric.JACCARD else cosine(a, b)


def shared_terms(a: Mapping[str, float], b: Mapping[str, float], k: int = 10) -> list[tuple[str, float, float]]:
    """The ``k`` shared terms contributing most to Σmin: (term, weight in a, weight in b), largest min first."""
    common = [(t, w, b[t]) for t, w in a.items() if t in b]
    common.sort(key=lambda x: (-min(x[1], x[2]), x[0]))
    return common[:k]


def exact_pairs(bags: BagMatrix, metric: Metric | str = Metric.JACCARD, ids: Iterable[int] | None = None, *,
                dense: bool = True, blocks: Blocks = Blocks()) -> np.ndarray | sp.csr_matrix:
    """The exact similarity of every pair of bags (Section 4) as an n × n matrix.

    ``ids`` are URL ids (rows of the result in that order; each must have a bag), or None for
    every bag in ``bags``. ``dense=False`` returns a CSR matrix holding the non-zero
    similarities only (useful when most pairs are orthogonal, as with link-id bags).
    The diagonal is 1 for every non-empty bag (overlap: the bag's total weight). ``blocks``
    cuts the work (:class:`Blocks`).
    """
    metric = Metric(metric)
    csr = _weights(bags, ids)
    if metric is Metric.OVERLAP:
        result = _min_sums(csr, blocks)
        return result if dense else sp.csr_matrix(result)
    result = _cosine(csr, blocks) if metric is Metric.COSINE else _jaccard(csr, blocks)
    # A bag is identical to itself: exactly 1, not 1 up to rounding (empty bags stay 0).
    result[np.diag_indices(result.shape[0])] = (np.diff(csr.indptr) > 0).astype(np.float64)
    return result if dense else sp.csr_matrix(result)


def _weights(bags: BagMatrix, ids: Iterable[int] | None) -> sp.csr_matrix:
    """The bags' rows (those of ``ids``, or all) as float64 CSR without duplicates or zeros,
    checked to be non-negative."""
    csr = sp.csr_matrix(bags.csr if ids is None else bags.csr[bags.indices(ids)], dtype=np.float64)
    csr.sum_duplicates()
    csr.eliminate_zeros()
    if csr.data.size and csr.data.min() < 0:
        raise ValueError(
            f"bag weights: expected non-negative multiplicities, found {csr.data.min():g}; "
            "bags from simweb.core.bags are never negative — check how this matrix was built"
        )
    return csr


class ExactRows:
    """The exact similarity of bags against each other, a block of rows at a time (Section 4):
    ``similarity[rows]`` (an index array or a slice) is the dense block of those bags against
    every bag, computed when asked for, so the n × n matrix is never held — the evaluation's
    sample of 50,000 URLs would need 20 GB for it.

    Rows and columns follow ``ids`` (URL ids, each with a bag) or the bags' order. Each row
    equals that row of :func:`exact_pairs` (the same inversion over terms, see the module
    docstring, the same split into light and heavy terms, the shared terms added in the same
    order; a row sees each pair from its own side, so the work is twice that of the upper
    triangle exact_pairs fills and mirrors, in exchange for memory of one block).
    """

    def __init__(self, bags: BagMatrix, metric: Metric | str = Metric.JACCARD, ids: Iterable[int] | None = None,
                 blocks: Blocks = Blocks()) -> None:
        self.metric = Metric(metric)
        self._triple_budget = blocks.triple_budget
        csr = _weights(bags, ids)
        n = csr.shape[0]
        self.shape = (n, n)
        self._nonempty = np.diff(csr.indptr) > 0
        if self.metric is Metric.COSINE:
            norms = np.sqrt(np.asarray(csr.multiply(csr).sum(axis=1)).ravel())
            scale = np.divide(1.0, norms, out=np.zeros_like(norms), where=norms > 0)
            csr = sp.csr_matrix(sp.diags(scale) @ csr)
            heavy = np.diff(csr.tocsc().indptr) > max(2, blocks.cosine_dense_fraction * n)
        else:
            csr.sort_indices()
            self._sums = np.asarray(csr.sum(axis=1)).ravel()
            heavy = np.diff(csr.tocsc().indptr) > max(2, blocks.heavy_fraction * n)
        self._heavy = csr[:, np.flatnonzero(heavy)].toarray() if heavy.any() else np.zeros((n, 0))
        self._light = csr[:, np.flatnonzero(~heavy)].tocsr() if heavy.any() else csr
        self._light.sort_indices()
        if self.metric is Metric.COSINE:
            self._transposed = self._light.T.tocsc()
        else:
            self._postings = self._light.tocsc()
            self._postings.sort_indices()
            self._columns = np.ascontiguousarray(self._heavy.T)

    def __getitem__(self, rows) -> np.ndarray:
        rows = np.arange(self.shape[0])[rows] if isinstance(rows, slice) else np.asarray(rows, dtype=np.int64)
        if self.metric is Metric.COSINE:
            out = self._cosine(rows)
        else:
            out = self._min_sums(rows)
            if self.metric is Metric.OVERLAP:
                return out
            union = self._sums[rows, None] + self._sums[None, :] - out
            np.divide(out, union, out=out, where=union > 0)
            out[union <= 0] = 0.0
            np.clip(out, 0.0, 1.0, out=out)
        # A bag is identical to itself: exactly 1, not 1 up to rounding (empty bags stay 0).
        out[np.arange(rows.size), rows] = self._nonempty[rows].astype(np.float64)
        return out

    def _cosine(self, rows: np.ndarray) -> np.ndarray:
        out = self._heavy[rows] @ self._heavy.T if self._heavy.shape[1] else np.zeros((rows.size, self.shape[1]))
        out += (self._light[rows] @ self._transposed).toarray()
        np.clip(out, 0.0, 1.0, out=out)
        return out

    def _min_sums(self, rows: np.ndarray) -> np.ndarray:
        """Σ_t min(A_rt, A_jt) of each of ``rows`` against every bag j (the diagonal: the row's total)."""
        n = self.shape[1]
        inter = np.zeros((rows.size, n))
        light = self._light[rows]
        col_ptr = self._postings.indptr.astype(np.int64)
        col_rows = self._postings.indices.astype(np.int64)
        col_vals = self._postings.data
        local = np.repeat(np.arange(rows.size, dtype=np.int64), np.diff(light.indptr))
        cols = light.indices.astype(np.int64)
        count = col_ptr[cols + 1] - col_ptr[cols]
        # Batches of entries whose postings fit the triple budget, each summed with np.bincount.
        cum = np.cumsum(count)
        e0 = 0
        while e0 < cols.size:
            base = cum[e0 - 1] if e0 else 0
            e1 = max(e0 + 1, int(np.searchsorted(cum, base + self._triple_budget, side="right")))
            c = count[e0:e1]
            total = int(c.sum())
            if total:
                ends = np.cumsum(c)
                src = np.repeat(col_ptr[cols[e0:e1]] - (ends - c), c) + np.arange(total, dtype=np.int64)
                mins = np.minimum(np.repeat(light.data[e0:e1], c), col_vals[src])
                cell = np.repeat(local[e0:e1] * n, c) + col_rows[src]
                inter += np.bincount(cell, weights=mins, minlength=rows.size * n).reshape(rows.size, n)
            e0 = e1
        scratch = np.empty((rows.size, n))
        for column in self._columns:
            a = column[rows]
            if a.any():
                np.minimum(a[:, None], column[None, :], out=scratch)
                inter += scratch
        inter[np.arange(rows.size), rows] = self._sums[rows]
        return inter


class EmbeddedSimilarity:
    """The n × n similarity of an evaluation sample from that of its documents with a bag (an
    ``inner`` matrix over the rows ``present``): rows and columns of documents without one are
    0, as an empty bag is similar to nothing (Section 5: such a document's same-class pairs
    count as orthogonal, its comparisons as ties). Read by row slices, so the n × n matrix is
    never held whole."""

    def __init__(self, n: int, present: np.ndarray, inner: np.ndarray) -> None:
        self.shape = (n, n)
        self._present = present
        self._inner = inner
        self._row_of = np.full(n, -1, dtype=np.int64)
        self._row_of[present] = np.arange(present.size)

    def __getitem__(self, rows: slice) -> np.ndarray:
        return self.take(np.arange(self.shape[0])[rows])

    def take(self, idx: np.ndarray) -> np.ndarray:
        """The dense rows ``idx``."""
        idx = np.asarray(idx, dtype=np.int64)
        out = np.zeros((idx.size, self.shape[1]))
        inner_rows = self._row_of[idx]
        have = inner_rows >= 0
        if have.any():
            out[np.ix_(np.flatnonzero(have), self._present)] = self._inner[inner_rows[have]]
        return out


def _cosine(csr: sp.csr_matrix, blocks: Blocks) -> np.ndarray:
    """Dot products of the L2-normalised rows: heavy terms by a dense product, the rest sparse, by row blocks."""
    n = csr.shape[0]
    norms = np.sqrt(np.asarray(csr.multiply(csr).sum(axis=1)).ravel())
    scale = np.divide(1.0, norms, out=np.zeros_like(norms), where=norms > 0)
    unit = sp.csr_matrix(sp.diags(scale) @ csr)
    heavy = np.diff(unit.tocsc().indptr) > max(2, blocks.cosine_dense_fraction * n)
    if heavy.any():
        dense = unit[:, np.flatnonzero(heavy)].toarray()
        out = dense @ dense.T
        unit = unit[:, np.flatnonzero(~heavy)].tocsr()
    else:
        out = np.zeros((n, n))
    step = max(1, blocks.block_cells // max(n, 1))
    transposed = unit.T.tocsc()
    for r0 in range(0, n, step):
        r1 = min(n, r0 + step)
        out[r0:r1] += (unit[r0:r1] @ transposed).toarray()
    np.clip(out, 0.0, 1.0, out=out)
    return out


def _jaccard(csr: sp.csr_matrix, blocks: Blocks) -> np.ndarray:
    n = csr.shape[0]
    sums = np.asarray(csr.sum(axis=1)).ravel()
    inter = _min_sums(csr, blocks)
    # Jaccard in place, block by block: Σmin / (|A| + |B| − Σmin).
    step = max(1, blocks.block_cells // max(n, 1))
    for r0 in range(0, n, step):
        r1 = min(n, r0 + step)
        block = inter[r0:r1]
        union = sums[r0:r1, None] + sums[None, :] - block
        np.divide(block, union, out=block, where=union > 0)
        block[union <= 0] = 0.0
    np.clip(inter, 0.0, 1.0, out=inter)
    return inter


def _min_sums(csr: sp.csr_matrix, blocks: Blocks) -> np.ndarray:
    """S[i, j] = Σ_t min(A_it, A_jt) for every pair, by inversion over the terms' postings."""
    n, v = csr.shape
    out = np.zeros((n, n), dtype=np.float64)
    if n == 0:
        return out
    csr.sort_indices()
    postings = np.diff(csr.tocsc().indptr)
    heavy = postings > max(2, blocks.heavy_fraction * n)
    light_cols = np.flatnonzero(~heavy)
    heavy_cols = np.flatnonzero(heavy)

    light = csr[:, light_cols].tocsr() if heavy_cols.size else csr
    _add_light(light, out, blocks)
    if heavy_cols.size:
        dense_heavy = csr[:, heavy_cols].toarray()  # n × h
        _add_heavy(dense_heavy, out, blocks)
    # Only the upper triangle (with the diagonal from the heavy terms) was filled: mirror it.
    _mirror_upper(out)
    diag = np.asarray(csr.sum(axis=1)).ravel()
    out[np.diag_indices(n)] = diag
    return out


def _add_light(csr: sp.csr_matrix, out: np.ndarray, blocks: Blocks) -> None:
    """Add min(A_it, A_jt) for i < j over the columns of ``csr`` into ``out`` (upper triangle)."""
    n = csr.shape[0]
    if csr.nnz == 0:
        return
    csc = csr.tocsc()
    csc.sort_indices()
    col_ptr = csc.indptr.astype(np.int64)
    col_rows = csc.indices.astype(np.int64)
    col_vals = csc.data
    # For each CSR entry (i, t): where it sits in column t's posting list (sorted by row).
    rows = np.repeat(np.arange(n, dtype=np.int64), np.diff(csr.indptr))
    cols = csr.indices.astype(np.int64)
    csc_cols = np.repeat(np.arange(csc.shape[1], dtype=np.int64), np.diff(col_ptr))
    csc_keys = csc_cols * n + col_rows
    pos = np.searchsorted(csc_keys, cols * n + rows)
    # Partners after the entry in its posting list: j > i.
    first = pos + 1
    count = col_ptr[cols + 1] - first
    vals = csr.data
    # Blocks of rows whose expansion fits the budget, summed with np.bincount into a dense
    # block small enough to stay in cache (measured: np.add.at straight into ``out`` is
    # several times slower, and so are 4M-triple blocks).
    row_cost = np.bincount(rows, weights=count, minlength=n)
    cum = np.cumsum(row_cost)
    entry_ptr = csr.indptr.astype(np.int64)
    max_rows = max(1, blocks.block_cells // n)
    r0 = 0
    while r0 < n:
        base = cum[r0 - 1] if r0 else 0.0
        r1 = int(np.searchsorted(cum, base + blocks.triple_budget, side="right"))
        r1 = min(n, r0 + max_rows, max(r0 + 1, r1))
        e0, e1 = entry_ptr[r0], entry_ptr[r1]
        c = count[e0:e1]
        total = int(c.sum())
        if total:
            ends = np.cumsum(c)
            src = np.repeat(first[e0:e1] - (ends - c), c) + np.arange(total, dtype=np.int64)
            mins = np.minimum(np.repeat(vals[e0:e1], c), col_vals[src])
            cell = np.repeat((rows[e0:e1] - r0) * n, c)
            cell += col_rows[src]
            block = np.bincount(cell, weights=mins, minlength=(r1 - r0) * n)
            out[r0:r1] += block.reshape(r1 - r0, n)
        r0 = r1


def _add_heavy(dense: np.ndarray, out: np.ndarray, blocks: Blocks) -> None:
    """Add min(A_it, A_jt) for j ≥ i over the dense columns of ``dense`` into ``out``."""
    n, h = dense.shape
    step = max(1, blocks.block_cells // max(n, 1))
    columns = np.ascontiguousarray(dense.T)  # h × n
    tmp = np.empty(step * n)
    for r0 in range(0, n, step):
        r1 = min(n, r0 + step)
        target = out[r0:r1, r0:]
        scratch = tmp[: (r1 - r0) * (n - r0)].reshape(r1 - r0, n - r0)
        for col in columns:
            a = col[r0:r1]
            if not a.any():
                continue
            np.minimum(a[:, None], col[None, r0:], out=scratch)
            target += scratch


def _mirror_upper(out: np.ndarray, tile: int = 512) -> None:
    """Copy the strict upper triangle onto the lower one, tile by tile."""
    n = out.shape[0]
    for i0 in range(0, n, tile):
        i1 = min(n, i0 + tile)
        square = out[i0:i1, i0:i1]
        square[...] = np.triu(square) + np.triu(square, 1).T
        for j0 in range(i1, n, tile):
            j1 = min(n, j0 + tile)
            out[j0:j1, i0:i1] = out[i0:i1, j0:j1].T
