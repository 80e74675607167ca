"""Link graph and link-based similarity measures.

The law is Lin, Lyu & King, "Extending Link-based Algorithms for Similar Web Pages with
Neighborhood Structure" (ENS, ``papers/lin2007-extended-neighborhood-structure.md``) for
co-citation, bibliographic coupling, ECBC, SimRank, extended SimRank, PageSim and extended
PageSim, and the CS276B lecture (``papers/lecture-web-size-duplicates-pagerank.md``, "Pagerank
scoring" / "Teleporting") for PageRank. Parameters default to the ENS paper's Table 1.

Every measure answers the same question: the similarity of each *query* node to each
*candidate* node (all nodes unless a sample is given), as a dense ``len(queries) x
len(candidates)`` float64 array. Nodes are dense indices ``0 .. n-1`` into ``LinkGraph.ids``;
``LinkGraph.indices`` maps URL ids to them.

Memory. Co-citation, coupling and ECBC are sparse products: O(edges + output). PageSim and
extended PageSim hold propagation columns, ``n x block`` floats, in blocks bounded by
``max_bytes``; their time grows with n x |queries| x |candidates|. SimRank and extended
SimRank are quadratic: when the dense n x n iteration fits in ``max_bytes`` (32 n² bytes for
SimRank, 48 n² for extended SimRank: n ≤ 8,192 and 6,689 at the 2 GiB default) the scores
are exact. Beyond it SimRank switches to its linear form, O(k n) memory per query, exact but
for a sampled diagonal correction; extended SimRank, which has no linear form, iterates on
row and column blocks of the nodes its walks visit most and returns lower bounds.
``simrank_plan`` says which, and ``benchmarks/linkgraph.py`` measures the errors.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np
import scipy.sparse as sp

_FLOAT = np.float64
_GIB = 1024**3


# --------------------------------------------------------------------------------------
# The graph
# --------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class GraphBuildStats:
    """What ``LinkGraph.from_edges`` read and what it left out (nothing is dropped silently).

    ``self_loops`` are links from a page to itself: the ENS paths have distinct vertices
    (Section 3.1), and a self-link says nothing about similarity, so they are not edges.
    ``duplicate_edges`` are repeated (source, target) pairs: E is a set. ``outside_edges``
    touch a node outside ``nodes`` when the graph is restricted to them.
    """

    edges_read: int
    self_loops: int
    duplicate_edges: int
    outside_edges: int


@dataclass(frozen=True, slots=True, eq=False)
class LinkGraph:
    """A directed web graph G = (V, E) (ENS Section 3.1) over dense node indices.

    ``ids[i]`` is the URL id of node ``i`` (sorted ascending). ``out_links`` is the n x n CSR
    adjacency matrix A with ``A[u, v] = 1`` iff u links to v, so row u lists O(u);
    ``in_links`` is its transpose in CSR form, so row v lists I(v).
    """

    ids: np.ndarray
    out_links: sp.csr_matrix
    in_links: sp.csr_matrix
    stats: GraphBuildStats

    @classmethod
    def from_edges(
        cls,
        sources: Sequence[int] | np.ndarray,
        targets: Sequence[int] | np.ndarray,
        *,
        nodes: Sequence[int] | np.ndarray | None = None,
        restrict_to_nodes: bool = False,
    ) -> LinkGraph:
        """Build the graph from parallel arrays of source and target URL ids.

        ``nodes`` adds URL ids that must be nodes even without links (e.g. every crawled
        page). With ``restrict_to_nodes=True`` the graph keeps only edges whose two ends are
        in ``nodes`` (e.g. links between crawled pages) and counts the others.
        """
        src = _as_id_array(sources, "sources")
        dst = _as_id_array(targets, "targets")
        if src.shape != dst.shape:
            raise ValueError(
                f"expected as many targets as sources, got {src.size} sources and {dst.size} "
                "targets; pass the two columns of the same link table"
            )
        extra = _as_id_array(nodes, "nodes") if nodes is not None else np.empty(0, np.uint64)
        if restrict_to_nodes and nodes is None:
            raise ValueError("restrict_to_nodes=True needs the node ids: pass nodes=...")
        edges_read = int(src.size)
        outside = 0
        if restrict_to_nodes:
            allowed = np.unique(extra)
            keep = _isin_sorted(src, allowed) & _isin_sorted(dst, allowed)
            outside = int(edges_read - keep.sum())
            src, dst = src[keep], dst[keep]
        loops = src == dst
        self_loops = int(loops.sum())
        src, dst = src[~loops], dst[~loops]
        ids = np.unique(np.concatenate([src, dst, extra]))
        n = int(ids.size)
        rows = np.searchsorted(ids, src).astype(np.int64)
        cols = np.searchsorted(ids, dst).astype(np.int64)
        pairs = np.unique(rows * max(n, 1) + cols)
        duplicates = int(rows.size - pairs.size)
        rows, cols = pairs // max(n, 1), pairs % max(n, 1)
        ones = np.ones(rows.size, dtype=_FLOAT)
        out_links = sp.csr_matrix((ones, (rows, cols)), shape=(n, n))
        in_links = out_links.T.tocsr()
        out_links.sort_indices()
        in_links.sort_indices()
        return cls(ids, out_links, in_links, GraphBuildStats(edges_read, self_loops, duplicates, outside))

    @property
    def n_nodes(self) -> int:
        return int(self.ids.size)

    @property
    def n_edges(self) -> int:
        return int(self.out_links.nnz)

    @property
    def out_degree(self) -> np.ndarray:
        """|O(v)| for every node."""
        return np.diff(self.out_links.indptr)

    @property
    def in_degree(self) -> np.ndarray:
        """|I(v)| for every node."""
        return np.diff(self.in_links.indptr)

    def contains(self, url_ids: Sequence[int] | np.ndarray) -> np.ndarray:
        """Boolean mask: which of ``url_ids`` are nodes of the graph."""
        return _isin_sorted(_as_id_array(url_ids, "url_ids"), self.ids)

    def indices(self, url_ids: Sequence[int] | np.ndarray) -> np.ndarray:
        """Dense node indices of ``url_ids``; raises if one is not a node."""
        wanted = _as_id_array(url_ids, "url_ids")
        found = _isin_sorted(wanted, self.ids)
        if not found.all():
            missing = wanted[~found]
            raise ValueError(
                f"expected URL ids of pages in the link graph, but {missing.size} of {wanted.size} "
                f"are not (first: {int(missing[0])}); filter them with LinkGraph.contains or build "
                "the graph with nodes=<all page ids>"
            )
        return np.searchsorted(self.ids, wanted).astype(np.int64)


def _as_id_array(values, name: str) -> np.ndarray:
    arr = np.asarray(values)
    if arr.ndim != 1:
        raise ValueError(f"expected a one-dimensional array of URL ids for {name}, got shape {arr.shape}")
    if arr.size and arr.dtype.kind not in "iu":
        raise ValueError(f"expected integer URL ids for {name}, got dtype {arr.dtype}; use simweb.core.urls.url_id")
    if arr.size and arr.dtype.kind == "i" and arr.min() < 0:
        raise ValueError(f"expected non-negative URL ids for {name}, found {int(arr.min())}")
    return arr.astype(np.uint64, copy=False)


def _isin_sorted(values: np.ndarray, sorted_ids: np.ndarray) -> np.ndarray:
    if sorted_ids.size == 0:
        return np.zeros(values.shape, dtype=bool)
    pos = np.minimum(np.searchsorted(sorted_ids, values), sorted_ids.size - 1)
    return sorted_ids[pos] == values


def _node_array(graph: LinkGraph, nodes, name: str) -> np.ndarray:
    """Validate query/candidate node indices; ``None`` means every node."""
    if nodes is None:
        return np.arange(graph.n_nodes, dtype=np.int64)
    arr = np.asarray(nodes)
    if arr.ndim != 1 or (arr.size and arr.dtype.kind not in "iu"):
        raise ValueError(
            f"expected {name} as a one-dimensional array of node indices, got shape {arr.shape} "
            f"dtype {arr.dtype}; map URL ids with LinkGraph.indices"
        )
    arr = arr.astype(np.int64)
    if arr.size and (arr.min() < 0 or arr.max() >= graph.n_nodes):
        raise ValueError(
            f"expected {name} in 0..{graph.n_nodes - 1}, found {int(arr.min())}..{int(arr.max())}; "
            "map URL ids with LinkGraph.indices"
        )
    return arr


def _row_normalised(matrix: sp.csr_matrix) -> sp.csr_matrix:
    """Divide each row by its number of entries (rows without entries stay empty)."""
    deg = np.diff(matrix.indptr).astype(_FLOAT)
    scale = np.divide(1.0, deg, out=np.zeros_like(deg), where=deg > 0)
    return sp.csr_matrix(sp.diags(scale) @ matrix)


# --------------------------------------------------------------------------------------
# Parameters (ENS Table 1 defaults)
# --------------------------------------------------------------------------------------


def _check_unit(name: str, value: float, low_open: bool, high_open: bool) -> None:
    low_ok = value > 0 if low_open else value >= 0
    high_ok = value < 1 if high_open else value <= 1
    if not (low_ok and high_ok):
        interval = ("(" if low_open else "[") + "0, 1" + (")" if high_open else "]")
        raise ValueError(f"expected {name} in {interval}, got {value}")


@dataclass(frozen=True, slots=True)
class PageRankParams:
    """PageRank with teleporting (lecture, "Teleporting"): at a dead end jump to a random
    page; elsewhere jump with probability ``teleport`` (the lecture's 10%), else follow a
    random out-link. Power iteration stops when the L1 change is below ``tolerance``."""

    name: ClassVar[str] = "pagerank"
    teleport: float = 0.10
    tolerance: float = 1e-10
    max_iterations: int = 1000

    def __post_init__(self) -> None:
        _check_unit("teleport", self.teleport, low_open=True, high_open=False)
        if not self.tolerance > 0:
            raise ValueError(f"expected a positive tolerance, got {self.tolerance}")
        if self.max_iterations < 1:
            raise ValueError(f"expected max_iterations >= 1, got {self.max_iterations}")


@dataclass(frozen=True, slots=True)
class CocitationParams:
    """Co-citation (ENS Section 3.2): Sim(a, b) = |I(a) ∩ I(b)|."""

    name: ClassVar[str] = "cocitation"


@dataclass(frozen=True, slots=True)
class CouplingParams:
    """Bibliographic coupling (ENS Section 3.2): Sim(a, b) = |O(a) ∩ O(b)|."""

    name: ClassVar[str] = "coupling"


@dataclass(frozen=True, slots=True)
class EcbcParams:
    """ECBC (ENS Section 3.2): α|I(a) ∩ I(b)| + (1 − α)|O(a) ∩ O(b)|; Table 1: α = 0.5."""

    name: ClassVar[str] = "ecbc"
    alpha: float = 0.5

    def __post_init__(self) -> None:
        _check_unit("alpha", self.alpha, low_open=False, high_open=False)


@dataclass(frozen=True, slots=True)
class SimRankParams:
    """SimRank (ENS Section 3.3); Table 1: γ = 0.8.

    ``iterations`` is k in S_k: S_0 = identity and each iteration applies the recursion once.
    S_k(u, v) = E[γ^τ; τ ≤ k] for the first meeting time τ of two reverse random walks, so
    0 ≤ S − S_k ≤ γ^(k+1) (0.086 for k = 10).

    ``method``: "exact" iterates the dense n x n matrix (needs ``max_bytes`` ≥ 32 n² bytes);
    "linear" computes the same S_k column by column from its linear form, with the diagonal
    correction estimated from ``walks`` pairs of random walks per node (seeded by ``seed``);
    "auto" takes "exact" when it fits. See ``simrank``.
    """

    name: ClassVar[str] = "simrank"
    gamma: float = 0.8
    iterations: int = 10
    method: str = "auto"
    walks: int = 1000
    seed: int = 0
    max_bytes: int = 2 * _GIB

    def __post_init__(self) -> None:
        _check_unit("gamma", self.gamma, low_open=True, high_open=True)
        if self.iterations < 0:
            raise ValueError(f"expected iterations >= 0, got {self.iterations}")
        if self.max_bytes <= 0:
            raise ValueError(f"expected a positive max_bytes, got {self.max_bytes}")
        if self.method not in ("auto", "exact", "linear"):
            raise ValueError(f"expected method 'auto', 'exact' or 'linear', got {self.method!r}")
        if self.walks < 1:
            raise ValueError(f"expected walks >= 1, got {self.walks}")


@dataclass(frozen=True, slots=True)
class ExtendedSimRankParams:
    """Extended SimRank (ENS Section 3.3): in- and out-neighbour pairs; Table 1: γ = 0.8."""

    name: ClassVar[str] = "extended_simrank"
    gamma: float = 0.8
    iterations: int = 10
    max_bytes: int = 2 * _GIB

    def __post_init__(self) -> None:
        _check_unit("gamma", self.gamma, low_open=True, high_open=True)
        if self.iterations < 0:
            raise ValueError(f"expected iterations >= 0, got {self.iterations}")
        if self.max_bytes <= 0:
            raise ValueError(f"expected a positive max_bytes, got {self.max_bytes}")


_MAX_RADIUS = 3


@dataclass(frozen=True, slots=True)
class PageSimParams:
    """PageSim (ENS Section 3.4, Equations 1–2); Table 1: r = 3, d = 0.5.

    ``radius`` r is the longest path along which PageRank propagates (1 to 3);
    ``decay`` d ∈ (0, 1] multiplies propagated score as Equation 1 writes it: once per path
    (the division by each page's out-degree is what weakens longer paths), not once per hop.
    """

    name: ClassVar[str] = "pagesim"
    radius: int = 3
    decay: float = 0.5
    pagerank: PageRankParams = field(default_factory=PageRankParams)
    max_bytes: int = _GIB // 2

    def __post_init__(self) -> None:
        _check_radius(self.radius)
        _check_unit("decay", self.decay, low_open=True, high_open=False)
        if self.max_bytes <= 0:
            raise ValueError(f"expected a positive max_bytes, got {self.max_bytes}")


@dataclass(frozen=True, slots=True)
class ExtendedPageSimParams:
    """Extended PageSim (ENS Section 3.4, Equation 3); Table 1: r = 3, d = 0.6.

    Out-link propagation decays by d, in-link propagation by 1 − d.
    """

    name: ClassVar[str] = "extended_pagesim"
    radius: int = 3
    decay: float = 0.6
    pagerank: PageRankParams = field(default_factory=PageRankParams)
    max_bytes: int = _GIB // 2

    def __post_init__(self) -> None:
        _check_radius(self.radius)
        _check_unit("decay", self.decay, low_open=True, high_open=False)
        if self.max_bytes <= 0:
            raise ValueError(f"expected a positive max_bytes, got {self.max_bytes}")


def _check_radius(radius: int) -> None:
    if not 1 <= radius <= _MAX_RADIUS:
        raise ValueError(
            f"expected a PageSim radius between 1 and {_MAX_RADIUS} (Table 1 uses 3), got {radius}; "
            "longer simple paths cannot be summed exactly with sparse products"
        )


MeasureParams = (
    CocitationParams
    | CouplingParams
    | EcbcParams
    | SimRankParams
    | ExtendedSimRankParams
    | PageSimParams
    | ExtendedPageSimParams
)

PARAMS_BY_MEASURE: dict[str, type] = {
    p.name: p
    for p in (
        CocitationParams,
        CouplingParams,
        EcbcParams,
        SimRankParams,
        ExtendedSimRankParams,
        PageSimParams,
        ExtendedPageSimParams,
    )
}


def measure_params(name: str, **overrides) -> MeasureParams:
    """The parameters of measure ``name`` (a key of ``PARAMS_BY_MEASURE``) with Table 1 defaults."""
    try:
        cls = PARAMS_BY_MEASURE[name]
    except KeyError:
        raise ValueError(f"expected a link measure among {sorted(PARAMS_BY_MEASURE)}, got {name!r}") from None
    return cls(**overrides)


# --------------------------------------------------------------------------------------
# PageRank
# --------------------------------------------------------------------------------------


def pagerank(graph: LinkGraph, params: PageRankParams = PageRankParams()) -> np.ndarray:
    """Steady-state visit rate of the teleporting random walk (lecture, "Teleporting").

    From a page with out-links the walk teleports with probability t and otherwise follows
    one of its links equiprobably; from a dead end it teleports. Power iteration ("multiply
    x by increasing powers of P until the product looks stable") from the uniform vector
    until ||x_{k+1} − x_k||_1 < tolerance. Returns a probability vector over the nodes.
    """
    n = graph.n_nodes
    if n == 0:
        raise ValueError("expected a link graph with at least one node, got an empty graph")
    out_deg = graph.out_degree.astype(_FLOAT)
    dead = out_deg == 0
    inv_out = np.divide(1.0, out_deg, out=np.zeros(n), where=~dead)
    t = params.teleport
    x = np.full(n, 1.0 / n)
    for _ in range(params.max_iterations):
        follow = graph.in_links @ (x * inv_out)
        jump = (t * x[~dead].sum() + x[dead].sum()) / n
        y = (1.0 - t) * follow + jump
        y /= y.sum()
        change = np.abs(y - x).sum()
        x = y
        if change < params.tolerance:
            return x
    raise ValueError(
        f"PageRank did not reach the tolerance {params.tolerance} in {params.max_iterations} "
        f"iterations (last L1 change {change:.3g}); raise max_iterations or the tolerance"
    )


# --------------------------------------------------------------------------------------
# Co-citation, bibliographic coupling, ECBC
# --------------------------------------------------------------------------------------


def cocitation(graph: LinkGraph, queries=None, candidates=None) -> np.ndarray:
    """|I(a) ∩ I(b)| for each query a and candidate b (ENS Section 3.2)."""
    q = _node_array(graph, queries, "queries")
    c = _node_array(graph, candidates, "candidates")
    return _common_neighbours(graph.in_links, q, c)


def coupling(graph: LinkGraph, queries=None, candidates=None) -> np.ndarray:
    """Bibliographic coupling |O(a) ∩ O(b)| (ENS Section 3.2)."""
    q = _node_array(graph, queries, "queries")
    c = _node_array(graph, candidates, "candidates")
    return _common_neighbours(graph.out_links, q, c)


def ecbc(graph: LinkGraph, queries=None, candidates=None, params: EcbcParams = EcbcParams()) -> np.ndarray:
    """Extended co-citation and bibliographic coupling (ENS Section 3.2):
    Sim(a, b) = α|I(a) ∩ I(b)| + (1 − α)|O(a) ∩ O(b)|."""
    q = _node_array(graph, queries, "queries")
    c = _node_array(graph, candidates, "candidates")
    scores = params.alpha * _common_neighbours(graph.in_links, q, c)
    scores += (1.0 - params.alpha) * _common_neighbours(graph.out_links, q, c)
    return scores


def _common_neighbours(rows_lists: sp.csr_matrix, q: np.ndarray, c: np.ndarray) -> np.ndarray:
    # Row x of rows_lists lists x's neighbours, so (R_q R_c^T)[a, b] counts shared ones.
    return (rows_lists[q] @ rows_lists[c].T).toarray()


# --------------------------------------------------------------------------------------
# SimRank and extended SimRank
# --------------------------------------------------------------------------------------


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
    q = _node_array(graph, queries, "queries")
    c = _node_array(graph, candidates, "candidates")
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
    it as ``diagonal``.
    """
    q = _node_array(graph, queries, "queries")
    c = _node_array(graph, candidates, "candidates")
    plan = simrank_plan(graph, q, None if candidates is None else c, params)
    if plan.method == "linear":
        if diagonal is None:
            diagonal = simrank_diagonal(graph, params)
        elif diagonal.shape != (params.iterations + 1, graph.n_nodes):
            raise ValueError(
                f"expected a diagonal of shape ({params.iterations + 1}, {graph.n_nodes}) from "
                f"simrank_diagonal(graph, params), got {diagonal.shape}"
            )
        return _simrank_linear(graph, q, c, params, diagonal)
    return _simrank_dense(graph, q, c, plan, params, extended=False)


def extended_simrank(
    graph: LinkGraph, queries=None, candidates=None, params: ExtendedSimRankParams = ExtendedSimRankParams()
) -> np.ndarray:
    """Extended SimRank (ENS Section 3.3): Sim(u, u) = 1 and
    Sim(u, v) = γ (Σ_{I(u)×I(v)} Sim + Σ_{O(u)×O(v)} Sim) / (|I(u)||I(v)| + |O(u)||O(v)|),
    0 when the denominator is 0; iterated from the identity like SimRank. The denominator
    does not factor, so there is no linear form: beyond ``max_bytes`` the dense iteration
    runs on a block and gives lower bounds (see ``SimRankPlan``)."""
    q = _node_array(graph, queries, "queries")
    c = _node_array(graph, candidates, "candidates")
    plan = simrank_plan(graph, q, None if candidates is None else c, params)
    return _simrank_dense(graph, q, c, plan, params, extended=True)


def _simrank_dense(graph, q: np.ndarray, c: np.ndarray, plan: SimRankPlan, params, extended: bool) -> np.ndarray:
    scores = _iterate_simrank(graph, plan.rows, plan.cols, params, extended)
    row_of = {int(x): i for i, x in enumerate(plan.rows)}
    col_of = {int(x): i for i, x in enumerate(plan.cols)}
    ri = np.fromiter((row_of[int(x)] for x in q), dtype=np.int64, count=q.size)
    ci = np.fromiter((col_of[int(x)] for x in c), dtype=np.int64, count=c.size)
    return scores[np.ix_(ri, ci)]


def _linear_block(n: int, params: SimRankParams) -> int:
    """Query columns per block: W^j e_u for j = 0..k plus two accumulators, n floats each."""
    return max(1, int(params.max_bytes // (8 * max(n, 1) * (params.iterations + 3))))


def _simrank_linear(graph: LinkGraph, q: np.ndarray, c: np.ndarray, params: SimRankParams, diagonal: np.ndarray):
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


def _iterate_simrank(graph: LinkGraph, rows: np.ndarray, cols: np.ndarray, params, extended: bool) -> np.ndarray:
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
    for _ in range(params.iterations):
        if extended:
            new = _sandwich(left_in, scores, right_in)
            new += _sandwich(left_out, scores, right_out)
            new *= scale
        else:
            new = _sandwich(left_in, scores, right_in)
            new *= params.gamma
        new[r_pos, c_pos] = 1.0
        scores = new
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


# --------------------------------------------------------------------------------------
# PageSim and extended PageSim
# --------------------------------------------------------------------------------------


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
    _check_radius(radius)
    _check_unit("decay", decay, low_open=True, high_open=False)
    cols = _node_array(graph, nodes, "nodes")
    pr = pagerank(graph) if scores is None else np.asarray(scores, dtype=_FLOAT)
    if pr.shape != (graph.n_nodes,):
        raise ValueError(f"expected one PageRank score per node ({graph.n_nodes}), got shape {pr.shape}")
    step = _propagation_step(graph, direction)
    return _features(step, _two_cycle_return(step) if radius >= 3 else None, pr, cols, radius, decay)


def _propagation_step(graph: LinkGraph, direction: str) -> sp.csr_matrix:
    if direction == "out":
        return _row_normalised(graph.out_links)  # M[w, x] = 1/|O(w)| for w → x
    if direction == "in":
        return _row_normalised(graph.in_links)  # M[w, x] = 1/|I(w)| for x → w
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


def pagesim(graph: LinkGraph, queries=None, candidates=None, params: PageSimParams = PageSimParams()) -> np.ndarray:
    """PageSim (ENS Equation 2): PS(u, v) = Σ_i min(PG_i(u), PG_i(v))² / max(PG_i(u), PG_i(v))
    over out-link propagation of PageRank (Equation 1)."""
    q = _node_array(graph, queries, "queries")
    c = _node_array(graph, candidates, "candidates")
    pr = pagerank(graph, params.pagerank)
    prop = _Propagation(_propagation_step(graph, "out"), pr, params.radius, params.decay)
    return _compare_features(graph.n_nodes, [prop], q, c, params.max_bytes, jaccard=False)


def extended_pagesim(
    graph: LinkGraph, queries=None, candidates=None, params: ExtendedPageSimParams = ExtendedPageSimParams()
) -> np.ndarray:
    """Extended PageSim (ENS Section 3.4): EPS(u, v) = PS_out(u, v) + PS_in(u, v), each the
    Jaccard form of Equation 3, Σ_i min / Σ_i max of the feature vectors; out-links propagate
    with decay d, in-links with 1 − d. Ranges over [0, 2]; EPS(u, u) = 2."""
    q = _node_array(graph, queries, "queries")
    c = _node_array(graph, candidates, "candidates")
    pr = pagerank(graph, params.pagerank)
    props = [
        _Propagation(_propagation_step(graph, "out"), pr, params.radius, params.decay),
        _Propagation(_propagation_step(graph, "in"), pr, params.radius, 1.0 - params.decay),
    ]
    return _compare_features(graph.n_nodes, props, q, c, params.max_bytes, jaccard=True)


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


def _compare_features(n: int, props: list[_Propagation], q: np.ndarray, c: np.ndarray, max_bytes: int, jaccard: bool):
    """Sum over directions of Equation 2 or 3 for every (query, candidate), in column blocks
    of at most ``max_bytes`` (query blocks per direction, a candidate block and three
    per-query temporaries of the same size)."""
    out = np.zeros((q.size, c.size))
    block = max(1, int(max_bytes // (8 * n * (len(props) + 4))))
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
    return out


# --------------------------------------------------------------------------------------
# One entry point for strategies
# --------------------------------------------------------------------------------------


def link_similarity(graph: LinkGraph, params: MeasureParams, queries=None, candidates=None) -> np.ndarray:
    """Similarity of each query node (rows) to each candidate node (columns) under the
    measure that ``params`` configures; ``None`` means every node."""
    if isinstance(params, CocitationParams):
        return cocitation(graph, queries, candidates)
    if isinstance(params, CouplingParams):
        return coupling(graph, queries, candidates)
    if isinstance(params, EcbcParams):
        return ecbc(graph, queries, candidates, params)
    if isinstance(params, SimRankParams):
        return simrank(graph, queries, candidates, params)
    if isinstance(params, ExtendedSimRankParams):
        return extended_simrank(graph, queries, candidates, params)
    if isinstance(params, PageSimParams):
        return pagesim(graph, queries, candidates, params)
    if isinstance(params, ExtendedPageSimParams):
        return extended_pagesim(graph, queries, candidates, params)
    raise ValueError(f"expected parameters of a link measure among {sorted(PARAMS_BY_MEASURE)}, got {type(params).__name__}")


def top_related(
    scores: np.ndarray, queries: np.ndarray, candidates: np.ndarray, n: int
) -> list[list[tuple[int, float]]]:
    """For each query row, the ``n`` best (candidate node, score) pairs with a positive score,
    best first, the query itself excluded (ENS Section 4.2, top_{A,N}(v)); ties go to the
    lower node index."""
    scores = np.asarray(scores)
    queries, candidates = np.asarray(queries), np.asarray(candidates)
    if scores.shape != (queries.size, candidates.size):
        raise ValueError(
            f"expected scores of shape ({queries.size}, {candidates.size}) for the given queries and "
            f"candidates, got {scores.shape}"
        )
    if n < 0:
        raise ValueError(f"expected n >= 0, got {n}")
    order_tiebreak = np.argsort(candidates, kind="stable")
    result = []
    for row, query in zip(scores, queries):
        ranked = order_tiebreak[np.argsort(-row[order_tiebreak], kind="stable")]
        picked = []
        for j in ranked:
            if len(picked) == n or row[j] <= 0:
                break
            if candidates[j] != query:
                picked.append((int(candidates[j]), float(row[j])))
        result.append(picked)
    return result


def related_pages(
    graph: LinkGraph,
    url_ids: Sequence[int] | np.ndarray,
    params: MeasureParams,
    n: int = 10,
    candidate_ids: Sequence[int] | np.ndarray | None = None,
) -> list[list[tuple[int, float]]]:
    """For each page of ``url_ids``, its ``n`` most similar pages under ``params`` as
    (URL id, score), best first, itself and zero scores excluded; candidates are every page
    unless ``candidate_ids`` is given. Raises if a URL id is not in the graph."""
    queries = graph.indices(url_ids)
    candidates = None if candidate_ids is None else graph.indices(candidate_ids)
    scores = link_similarity(graph, params, queries, candidates)
    columns = np.arange(graph.n_nodes) if candidates is None else candidates
    return [
        [(int(graph.ids[node]), score) for node, score in row]
        for row in top_related(scores, queries, columns, n)
    ]
