"""PageSim and extended PageSim (ENS Section 3.4, Table 1 parameters) on a link graph.

Pages' PageRank scores propagate along links up to a radius, decaying with each step; a page's
features are the scores that reach it from each node, and two pages are as similar as their
features (extended PageSim also propagates backwards and compares by a Jaccard-like ratio).
Propagation columns are held ``n × block`` floats at a time, in blocks bounded by ``max_bytes``.
"""
from __future__ import annotations


import numpy as np
import scipy.sparse as sp

from simweb.core.linkgraph import (
    Progress,
    ExtendedPageSimParams,
    LinkGraph,
    PageSimParams,
    check_radius,
    check_unit,
    node_array,
    pagerank,
    row_normalised,
)

_FLOAT = np.float64


def pagesim_features(
    graph: LinkGraph,
    nodes=None,
    *,
    radius: int = 3,
    decay: float = 0.5,
    scores: np.ndarray | None = None,
    direction: str = "out",
) -> np.ndarray:
    """Feature vectors FV(v) = (PG(v_i, v))_i of ``nodes`` as the columns of an n x |nodes| array
    (ENS Definitions 1–2).

    PG(u, v) = Σ_{p ∈ PATH(u, v), length(p) ≤ r} d·PR(u) / Π_{w∈p, w≠v} |O(w)| for v ≠ u and
    PR(u) for v = u: every simple path (distinct vertices, Section 3.1) of at most ``radius``
    links. ``direction="in"`` propagates along in-links instead, dividing by |I(w)|, as the
    in-link half of extended PageSim does. ``scores`` are PR (default: ``pagerank(graph)``).
    """
    check_radius(radius)
    check_unit("decay", decay, low_open=True, high_open=False)
    cols = node_array(graph, nodes, "nodes")
    pr = pagerank(graph) if scores is None else np.asarray(scores, dtype=_FLOAT)
    if pr.shape != (graph.n_nodes,):
        raise ValueError(f"expected one PageRank score per node ({graph.n_nodes}), got shape {pr.shape}")
    step = _propagation_step(graph, direction)
    return _features(step, _two_cycle_return(step) if radius >= 3 else None, pr, cols, radius, decay)


def _propagation_step(graph: LinkGraph, direction: str) -> sp.csr_matrix:
    if direction == "out":
        return row_normalised(graph.out_links)  # M[w, x] = 1/|O(w)| for w → x
    if direction == "in":
        return row_normalised(graph.in_links)  # M[w, x] = 1/|I(w)| for x → w
    raise ValueError(f"expected direction 'out' or 'in', got {direction!r}")


def _two_cycle_return(step: sp.csr_matrix) -> tuple[np.ndarray, sp.csr_matrix]:
    """c[u] = Σ_a M[u,a] M[a,u] (walks u→a→u) and M∘Mᵀ∘M (walks u→v→u→v)."""
    back = step.multiply(step.T).tocsr()
    return np.asarray(back.sum(axis=1)).ravel(), back.multiply(step).tocsr()


def _features(step, cycles, pr: np.ndarray, cols: np.ndarray, radius: int, decay: float) -> np.ndarray:
    """PG[:, cols] by sparse products: the walk sums of length 1..r are simple-path sums
    once the walks through a 2-cycle are removed (length 3: u→a→u→v and u→v→b→v, adding
    back u→v→u→v counted twice); no self-loops exist, so nothing else repeats a vertex."""
    one = step[:, cols].toarray()
    paths = one.copy()
    if radius >= 2:
        two = step @ one
        paths += two
    if radius >= 3:
        back, triple = cycles
        three = step @ two
        three -= back[:, None] * one
        three -= one * back[cols][None, :]
        three += triple[:, cols].toarray()
        paths += three
    features = (decay * pr)[:, None] * paths
    features[cols, np.arange(cols.size)] = pr[cols]
    return features


def pagesim(graph: LinkGraph, queries=None, candidates=None, params: PageSimParams = PageSimParams(),
            progress: Progress | None = None) -> np.ndarray:
    """PageSim (ENS Equation 2): PS(u, v) = Σ_i min(PG_i(u), PG_i(v))² / max(PG_i(u), PG_i(v))
    over out-link propagation of PageRank (Equation 1). ``progress(done, total)`` is called
    after each block of query columns."""
    q = node_array(graph, queries, "queries")
    c = node_array(graph, candidates, "candidates")
    pr = pagerank(graph, params.pagerank)
    prop = _Propagation(_propagation_step(graph, "out"), pr, params.radius, params.decay)
    return _compare_features(graph.n_nodes, [prop], q, c, params.max_bytes, jaccard=False, progress=progress)


def extended_pagesim(
    graph: LinkGraph, queries=None, candidates=None, params: ExtendedPageSimParams = ExtendedPageSimParams(),
    progress: Progress | None = None,
) -> np.ndarray:
    """Extended PageSim (ENS Section 3.4): EPS(u, v) = PS_out(u, v) + PS_in(u, v), each the
    Jaccard form of Equation 3, Σ_i min / Σ_i max of the feature vectors; out-links propagate
    with decay d, in-links with 1 − d. Ranges over [0, 2]; EPS(u, u) = 2."""
    q = node_array(graph, queries, "queries")
    c = node_array(graph, candidates, "candidates")
    pr = pagerank(graph, params.pagerank)
    props = [
        _Propagation(_propagation_step(graph, "out"), pr, params.radius, params.decay),
        _Propagation(_propagation_step(graph, "in"), pr, params.radius, 1.0 - params.decay),
    ]
    return _compare_features(graph.n_nodes, props, q, c, params.max_bytes, jaccard=True, progress=progress)


class _Propagation:
    """One direction of PageRank propagation, producing feature columns on demand."""

    def __init__(self, step: sp.csr_matrix, pr: np.ndarray, radius: int, decay: float) -> None:
        self.step, self.pr, self.radius, self.decay = step, pr, radius, decay
        self.cycles = _two_cycle_return(step) if radius >= 3 else None

    def columns(self, cols: np.ndarray) -> np.ndarray:
        if self.decay == 0.0:  # extended PageSim with d = 1: nothing propagates along in-links
            features = np.zeros((self.pr.size, cols.size))
            features[cols, np.arange(cols.size)] = self.pr[cols]
            return features
        return _features(self.step, self.cycles, self.pr, cols, self.radius, self.decay)


def _compare_features(n: int, props: list[_Propagation], q: np.ndarray, c: np.ndarray, max_bytes: int, jaccard: bool,
                      progress: Progress | None = None):
    """Sum over directions of Equation 2 or 3 for every (query, candidate), in column blocks
    of at most ``max_bytes`` (query blocks per direction, a candidate block and three
    per-query temporaries of the same size)."""
    out = np.zeros((q.size, c.size))
    block = max(1, int(max_bytes // (8 * n * (len(props) + 4))))
    blocks = -(-q.size // block)
    for q0 in range(0, q.size, block):
        qb = q[q0 : q0 + block]
        q_feats = [p.columns(qb) for p in props]
        for c0 in range(0, c.size, block):
            cb = c[c0 : c0 + block]
            for p, fq in zip(props, q_feats):
                fc = fq if np.array_equal(cb, qb) else p.columns(cb)  # a sample against itself
                col_sums = fc.sum(axis=0)
                for j in range(qb.size):
                    x = fq[:, j]
                    support = np.flatnonzero(x)
                    xs = x[support][:, None]
                    ys = fc[support]
                    smaller = np.minimum(xs, ys)
                    if jaccard:
                        common = smaller.sum(axis=0)
                        union = x.sum() + col_sums - common
                        out[q0 + j, c0 : c0 + cb.size] += common / union
                    else:
                        larger = np.maximum(xs, ys)
                        out[q0 + j, c0 : c0 + cb.size] += (smaller * smaller / larger).sum(axis=0)
        if progress is not None:
            progress(q0 // block + 1, blocks)
    return out
