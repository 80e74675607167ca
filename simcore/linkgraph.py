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

This module holds the graph, every measure's parameters (ENS Table 1), PageRank and the
neighbour-counting measures (co-citation, coupling, ECBC); SimRank is in simweb.core.simrank,
PageSim in simweb.core.pagesim, and one entry point over all of them in simweb.core.linkmeasures.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np
import scipy.sparse as sp

#: ``progress(done, total)``: called by the iterative measures after each step, so that a
#: caller can show how far they are (simweb.tasks.progress); None: no calls.
Progress = Callable[[int, int], None]

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


def node_array(graph: LinkGraph, nodes, name: str) -> np.ndarray:
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


def row_normalised(matrix: sp.csr_matrix) -> sp.csr_matrix:
    """Divide each row by its number of entries (rows without entries stay empty)."""
    deg = np.diff(matrix.indptr).astype(_FLOAT)
    scale = np.divide(1.0, deg, out=np.zeros_like(deg), where=deg > 0)
    return sp.csr_matrix(sp.diags(scale) @ matrix)


# --------------------------------------------------------------------------------------
# Parameters (ENS Table 1 defaults)
# --------------------------------------------------------------------------------------


def check_unit(name: str, value: float, low_open: bool, high_open: bool) -> None:
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
        check_unit("teleport", self.teleport, low_open=True, high_open=False)
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
        check_unit("alpha", self.alpha, low_open=False, high_open=False)


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
        check_unit("gamma", self.gamma, low_open=True, high_open=True)
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
        check_unit("gamma", self.gamma, low_open=True, high_open=True)
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
        check_radius(self.radius)
        check_unit("decay", self.decay, low_open=True, high_open=False)
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
        check_radius(self.radius)
        check_unit("decay", self.decay, low_open=True, high_open=False)
        if self.max_bytes <= 0:
            raise ValueError(f"expected a positive max_bytes, got {self.max_bytes}")


def check_radius(radius: int) -> None:
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
    q = node_array(graph, queries, "queries")
    c = node_array(graph, candidates, "candidates")
    return _common_neighbours(graph.in_links, q, c)


def coupling(graph: LinkGraph, queries=None, candidates=None) -> np.ndarray:
    """Bibliographic coupling |O(a) ∩ O(b)| (ENS Section 3.2)."""
    q = node_array(graph, queries, "queries")
    c = node_array(graph, candidates, "candidates")
    return _common_neighbours(graph.out_links, q, c)


def ecbc(graph: LinkGraph, queries=None, candidates=None, params: EcbcParams = EcbcParams()) -> np.ndarray:
    """Extended co-citation and bibliographic coupling (ENS Section 3.2):
    Sim(a, b) = α|I(a) ∩ I(b)| + (1 − α)|O(a) ∩ O(b)|."""
    q = node_array(graph, queries, "queries")
    c = node_array(graph, candidates, "candidates")
    scores = params.alpha * _common_neighbours(graph.in_links, q, c)
    scores += (1.0 - params.alpha) * _common_neighbours(graph.out_links, q, c)
    return scores


def _common_neighbours(rows_lists: sp.csr_matrix, q: np.ndarray, c: np.ndarray) -> np.ndarray:
    # Row x of rows_lists lists x's neighbours, so (R_q R_c^T)[a, b] counts shared ones.
    return (rows_lists[q] @ rows_lists[c].T).toarray()
