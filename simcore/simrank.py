"""SimRank and extended SimRank (ENS Sections 3.3–3.4, Table 1 parameters) on a link graph.

SimRank is quadratic: when the dense n × n iteration fits in ``max_bytes`` (32 n² bytes for
SimRank, 48 n² for extended SimRank) the scores are exact; beyond it SimRank switches to its
linear form, O(k n) memory per query, exact but for a sampled diagonal correction; extended
SimRank, which has no linear form, iterates on row and column blocks of the nodes its walks
visit most and returns lower bounds. :func:`simrank_plan` says which.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from simweb.core.linkgraph import (
    Progress,
    ExtendedSimRankParams,
    LinkGraph,
    SimRankParams,
    node_array,
)

_FLOAT = np.float64
_GIB = 1024**3


@dataclass(frozen=True, slots=True, eq=False)
class SimRankPlan:
    """How (extended) SimRank will be computed for a set of queries and candidates.

    ``method`` "exact": the dense matrix over the whole graph. "linear" (SimRank only): S_k
    columns of the queries from the linear form, exact but for the sampled diagonal
    correction. "block" (extended SimRank only): a dense matrix over ``rows x cols`` (node
    indices; ``rows`` starts with the queries, ``cols`` with the candidates) where neighbours
    outside the sets contribute 0 while the denominators keep the true degrees, so every
    score is a lower bound of the exact S_k; ``exact`` is then True when the sets hold every
    node within k walk steps of the queries and candidates, which makes the scores equal S_k.
    """

    method: str
    rows: np.ndarray
    cols: np.ndarray
    exact: bool
    bytes_estimate: int


# Dense arrays alive at once during an iteration (score matrix, products, transposed copies,
# reciprocal denominators); measured peaks are in benchmarks/linkgraph.py.
_SIMRANK_ARRAYS = 4
_EXTENDED_SIMRANK_ARRAYS = 6


def simrank_plan(
    graph: LinkGraph,
    queries=None,
    candidates=None,
    params: SimRankParams | ExtendedSimRankParams = SimRankParams(),
) -> SimRankPlan:
    """Choose how to compute (extended) SimRank within ``params.max_bytes``.

    The dense whole-graph iteration when ``n^2`` scores fit (and SimRank's method allows it).
    Otherwise SimRank goes "linear" in blocks of queries, and extended SimRank goes "block":
    the queries (rows) and the candidates (columns) each keep the nodes with the most walk
    mass Σ_j γ^j P[a walk from the set is at x after j steps], j ≤ k, walking along in- and
    out-links, because those carry the terms of S_k. When every candidate is wanted the
    columns are the whole graph and only the rows are cut.
    """
    q = node_array(graph, queries, "queries")
    c = node_array(graph, candidates, "candidates")
    extended = isinstance(params, ExtendedSimRankParams)
    arrays = _EXTENDED_SIMRANK_ARRAYS if extended else _SIMRANK_ARRAYS
    budget = params.max_bytes // (arrays * np.dtype(_FLOAT).itemsize)
    n = graph.n_nodes
    everything = np.arange(n, dtype=np.int64)
    fits = n * n <= budget
    if not extended:
        if params.method == "exact" and not fits:
            raise ValueError(
                f"exact SimRank of {n:,} nodes needs {n * n * arrays * 8 / _GIB:.1f} GiB, more than "
                f"max_bytes={params.max_bytes}; use method='linear' or 'auto', or raise max_bytes"
            )
        if params.method == "exact" or (params.method == "auto" and fits):
            return SimRankPlan("exact", everything, everything, True, n * n * arrays * 8)
        block = _linear_block(n, params)
        return SimRankPlan("linear", np.unique(q), everything, False, block * n * (params.iterations + 3) * 8)
    if fits:
        return SimRankPlan("exact", everything, everything, True, n * n * arrays * 8)
    step = _walk_matrix(graph)
    if candidates is None:
        cols = everything
        row_size = budget // n
        col_exact = True
    else:
        row_size = col_size = int(np.sqrt(budget))
        cols, col_exact = _walk_neighbourhood(step, np.unique(c), col_size, params)
    if np.unique(q).size > row_size:
        raise ValueError(
            f"{np.unique(q).size} queries against {cols.size} candidate columns need more than "
            f"max_bytes={params.max_bytes}; pass fewer queries per call, a candidate sample, or a "
            "larger max_bytes"
        )
    rows, row_exact = _walk_neighbourhood(step, np.unique(q), row_size, params)
    return SimRankPlan("block", rows, cols, row_exact and col_exact, rows.size * cols.size * arrays * 8)


def _walk_matrix(graph: LinkGraph) -> sp.csr_matrix:
    """Row-stochastic step along in- and out-links: the walks whose visits make up the
    extended SimRank terms."""
    both = (graph.in_links + graph.out_links).tocsr()
    deg = np.asarray(both.sum(axis=1)).ravel()
    scale = np.divide(1.0, deg, out=np.zeros_like(deg), where=deg > 0)
    return sp.csr_matrix(sp.diags(scale) @ both)


def _walk_neighbourhood(step: sp.csr_matrix, seeds: np.ndarray, size: int, params) -> tuple[np.ndarray, bool]:
    if seeds.size > size:
        raise ValueError(
            f"{seeds.size} nodes do not fit the dense SimRank block of {size} nodes allowed by "
            f"max_bytes={params.max_bytes}; pass a smaller sample or a larger max_bytes"
        )
    n = step.shape[0]
    mass = np.zeros(n)
    mass[seeds] = 1.0 / max(seeds.size, 1)
    score = np.zeros(n)
    weight = 1.0
    for _ in range(params.iterations):
        mass = step.T @ mass
        weight *= params.gamma
        score += weight * mass
    score[seeds] = 0.0
    reached = np.flatnonzero(score > 0)
    room = size - seeds.size
    if reached.size <= room:
        return np.concatenate([seeds, reached]), True
    best = reached[np.argsort(-score[reached], kind="stable")[:room]]
    return np.concatenate([seeds, np.sort(best)]), False


def simrank(
    graph: LinkGraph,
    queries=None,
    candidates=None,
    params: SimRankParams = SimRankParams(),
    diagonal: np.ndarray | None = None,
    progress: Progress | None = None,
) -> np.ndarray:
    """SimRank S_k (ENS Section 3.3, after Jeh & Widom): Sim(u, u) = 1 and
    Sim(u, v) = γ Σ_{a∈I(u)} Σ_{b∈I(v)} Sim(a, b) / (|I(u)||I(v)|), 0 if I(u) or I(v) is
    empty; iterated ``params.iterations`` times from the identity.

    "exact": the recursion on the dense matrix. "linear": writing the overwrite of the
    diagonal as adding a diagonal matrix D_k, S_k = γ Wᵀ S_{k−1} W + D_k with W the in-link
    matrix normalised by |I(v)|, so S_k = Σ_{j=0..k} γ^j (Wᵀ)^j D_{k−j} W^j (D_0 = I), and a
    column S_k e_u costs 2k sparse products (Horner's scheme) and O(k n) memory. D_k(x) =
    1 − E[γ^τ; τ ≤ k] for the first meeting time τ ≥ 1 of two independent reverse walks from
    x; it is estimated by sampling ``params.walks`` pairs per node, which is unbiased, so the
    scores are unbiased estimates of S_k (clipped to [0, 1]); benchmarks/linkgraph.py measures
    their error against the exact scores. The estimate depends only on the graph and
    ``params``: a server answering many queries computes ``simrank_diagonal`` once and passes
    it as ``diagonal``. ``progress(done, total)`` is called after each iteration (each block of
    query columns in the linear form).
    """
    q = node_array(graph, queries, "queries")
    c = node_array(graph, candidates, "candidates")
    plan = simrank_plan(graph, q, None if candidates is None else c, params)
    if plan.method == "linear":
        if diagonal is None:
            diagonal = simrank_diagonal(graph, params)
        elif diagonal.shape != (params.iterations + 1, graph.n_nodes):
            raise ValueError(
                f"expected a diagonal of shape ({params.iterations + 1}, {graph.n_nodes}) from "
                f"simrank_diagonal(graph, params), got {diagonal.shape}"
            )
        return _simrank_linear(graph, q, c, params, diagonal, progress)
    return _simrank_dense(graph, q, c, plan, params, extended=False, progress=progress)


def extended_simrank(
    graph: LinkGraph, queries=None, candidates=None, params: ExtendedSimRankParams = ExtendedSimRankParams(),
    progress: Progress | None = None,
) -> np.ndarray:
    """Extended SimRank (ENS Section 3.3): Sim(u, u) = 1 and
    Sim(u, v) = γ (Σ_{I(u)×I(v)} Sim + Σ_{O(u)×O(v)} Sim) / (|I(u)||I(v)| + |O(u)||O(v)|),
    0 when the denominator is 0; iterated from the identity like SimRank. The denominator
    does not factor, so there is no linear form: beyond ``max_bytes`` the dense iteration
    runs on a block and gives lower bounds (see ``SimRankPlan``)."""
    q = node_array(graph, queries, "queries")
    c = node_array(graph, candidates, "candidates")
    plan = simrank_plan(graph, q, None if candidates is None else c, params)
    return _simrank_dense(graph, q, c, plan, params, extended=True, progress=progress)


def _simrank_dense(graph, q: np.ndarray, c: np.ndarray, plan: SimRankPlan, params, extended: bool,
                   progress: Progress | None = None) -> np.ndarray:
    scores = _iterate_simrank(graph, plan.rows, plan.cols, params, extended, progress)
    row_of = {int(x): i for i, x in enumerate(plan.rows)}
    col_of = {int(x): i for i, x in enumerate(plan.cols)}
    ri = np.fromiter((row_of[int(x)] for x in q), dtype=np.int64, count=q.size)
    ci = np.fromiter((col_of[int(x)] for x in c), dtype=np.int64, count=c.size)
    return scores[np.ix_(ri, ci)]


def _linear_block(n: int, params: SimRankParams) -> int:
    """Query columns per block: W^j e_u for j = 0..k plus two accumulators, n floats each."""
    return max(1, int(params.max_bytes // (8 * max(n, 1) * (params.iterations + 3))))


def _simrank_linear(graph: LinkGraph, q: np.ndarray, c: np.ndarray, params: SimRankParams, diagonal: np.ndarray,
                    progress: Progress | None = None):
    """S_k[q, c] = Σ_j γ^j (Wᵀ)^j D_{k−j} W^j, evaluated for blocks of query columns.

    ``diagonal[j]`` is D_j (``diagonal[0]`` all ones). Horner: Y_k = D_0 X_k,
    Y_j = D_{k−j} X_j + γ Wᵀ Y_{j+1}, with X_j = W^j e_u; then S_k e_u = Y_0.
    """
    k = params.iterations
    n = graph.n_nodes
    in_deg = graph.in_degree.astype(_FLOAT)
    inv_in = np.divide(1.0, in_deg, out=np.zeros_like(in_deg), where=in_deg > 0)
    walk = sp.csr_matrix(graph.out_links @ sp.diags(inv_in))  # W[a, u] = 1/|I(u)| for a → u
    walk_t = walk.T.tocsr()
    out = np.empty((q.size, c.size))
    block = _linear_block(n, params)
    blocks = -(-q.size // block)
    for start in range(0, q.size, block):
        qb = q[start : start + block]
        xs = [np.zeros((n, qb.size))]
        xs[0][qb, np.arange(qb.size)] = 1.0
        for _ in range(k):
            xs.append(walk @ xs[-1])
        acc = diagonal[0][:, None] * xs[k]
        for j in range(k - 1, -1, -1):
            acc = walk_t @ acc
            acc *= params.gamma
            acc += diagonal[k - j][:, None] * xs[j]
            xs[j + 1] = None  # no longer needed
        out[start : start + qb.size] = acc[c].T
        if progress is not None:
            progress(start // block + 1, blocks)
    np.clip(out, 0.0, 1.0, out=out)
    out[np.equal.outer(q, c)] = 1.0
    return out


def simrank_diagonal(graph: LinkGraph, params: SimRankParams = SimRankParams()) -> np.ndarray:
    """The diagonal corrections D_0..D_k of SimRank's linear form, shape (k + 1, n):
    D_j(x) = 1 − mean over ``params.walks`` pairs of independent reverse walks from x of γ^τ
    for first meetings at τ ≤ j; row 0 is all ones (S_0 = I). Seeded by ``params.seed``."""
    k, pairs, gamma = params.iterations, params.walks, params.gamma
    n = graph.n_nodes
    indptr, indices = graph.in_links.indptr, graph.in_links.indices
    deg = graph.in_degree
    rng = np.random.default_rng(params.seed)
    met = np.zeros((k + 1, n))  # met[t, x]: Σ over walk pairs from x of γ^t for a first meeting at t
    chunk = max(1, 2_000_000 // pairs)
    for start in range(0, n, chunk):
        origin = np.repeat(np.arange(start, min(n, start + chunk)), pairs)
        a, b = origin.copy(), origin.copy()
        live = np.arange(origin.size)
        for t in range(1, k + 1):
            movable = (deg[a[live]] > 0) & (deg[b[live]] > 0)
            live = live[movable]  # a walk at a page without in-links stops: the pair never meets
            if live.size == 0:
                break
            for pos in (a, b):
                here = pos[live]
                pos[live] = indices[indptr[here] + (rng.random(live.size) * deg[here]).astype(np.int64)]
            meet = a[live] == b[live]
            met[t] += np.bincount(origin[live[meet]], minlength=n) * gamma**t
            live = live[~meet]
    diagonal = 1.0 - np.cumsum(met, axis=0) / pairs
    diagonal[0] = 1.0
    return diagonal


def _iterate_simrank(graph: LinkGraph, rows: np.ndarray, cols: np.ndarray, params, extended: bool,
                     progress: Progress | None = None) -> np.ndarray:
    """Dense iteration of S on rows x cols with true degrees in every denominator."""
    a_rows = graph.out_links[rows][:, rows].tocsr()  # A restricted to the row set
    a_cols = graph.out_links[cols][:, cols].tocsr()
    in_r, in_c = graph.in_degree[rows].astype(_FLOAT), graph.in_degree[cols].astype(_FLOAT)
    # The nodes in both sets: S(x, x) = 1 is enforced there.
    common, r_pos, c_pos = np.intersect1d(rows, cols, assume_unique=True, return_indices=True)
    scores = np.zeros((rows.size, cols.size))
    scores[r_pos, c_pos] = 1.0
    if extended:
        out_r, out_c = graph.out_degree[rows].astype(_FLOAT), graph.out_degree[cols].astype(_FLOAT)
        denominator = np.multiply.outer(in_r, in_c)
        denominator += np.multiply.outer(out_r, out_c)
        np.divide(params.gamma, denominator, out=denominator, where=denominator > 0)
        scale = denominator  # γ / (|I(u)||I(v)| + |O(u)||O(v)|), 0 where undefined
        left_in, right_in = a_rows.T.tocsr(), a_cols.T.tocsr()  # Σ_{a∈I(u)}: rows of A^T
        left_out, right_out = a_rows, a_cols  # Σ_{a∈O(u)}: rows of A
    else:
        inv_r = np.divide(1.0, in_r, out=np.zeros_like(in_r), where=in_r > 0)
        inv_c = np.divide(1.0, in_c, out=np.zeros_like(in_c), where=in_c > 0)
        left_in = sp.csr_matrix(sp.diags(inv_r) @ a_rows.T)  # W^T, W column-normalised by |I|
        right_in = sp.csr_matrix(sp.diags(inv_c) @ a_cols.T)
    for iteration in range(params.iterations):
        if extended:
            new = _sandwich(left_in, scores, right_in)
            new += _sandwich(left_out, scores, right_out)
            new *= scale
        else:
            new = _sandwich(left_in, scores, right_in)
            new *= params.gamma
        new[r_pos, c_pos] = 1.0
        scores = new
        if progress is not None:
            progress(iteration + 1, params.iterations)
    return scores


def _sandwich(left: sp.csr_matrix, scores: np.ndarray, right: sp.csr_matrix) -> np.ndarray:
    """left @ scores @ right.T as a C-ordered dense array (left, right: CSR).

    scipy's sparse x dense product wants a C-ordered dense operand, hence the transposed
    copies; each temporary is dropped as soon as the next one exists.
    """
    half = left @ scores
    half_t = np.ascontiguousarray(half.T)
    del half
    full_t = right @ half_t
    del half_t
    return np.ascontiguousarray(full_t.T)
