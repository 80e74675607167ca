"""Link graph measures against hand computations, brute-force references and invariants."""
from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simweb.core.linkgraph import (
    PARAMS_BY_MEASURE,
    CocitationParams,
    CouplingParams,
    EcbcParams,
    ExtendedPageSimParams,
    ExtendedSimRankParams,
    LinkGraph,
    PageRankParams,
    PageSimParams,
    SimRankParams,
    cocitation,
    coupling,
    ecbc,
    measure_params,
    pagerank,
)
from simweb.core.linkmeasures import link_similarity, related_pages, top_related
from simweb.core.pagesim import extended_pagesim, pagesim, pagesim_features
from simweb.core.simrank import (
    _simrank_linear,  # the linear form, checked with an exact diagonal
    extended_simrank,
    simrank,
    simrank_diagonal,
    simrank_plan,
)


def graph(edges, nodes=None):
    return LinkGraph.from_edges([a for a, _ in edges], [b for _, b in edges], nodes=nodes)


# Small random graphs: (node count, edge list); self-links and repeats included on purpose.
edge_lists = st.integers(2, 7).flatmap(
    lambda n: st.tuples(st.just(n), st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)), max_size=25))
)


# ---------------------------------------------------------------- construction


def test_from_edges_counts_what_it_leaves_out():
    g = LinkGraph.from_edges([7, 7, 7, 9, 5], [9, 9, 7, 5, 11], nodes=[3])
    assert g.ids.tolist() == [3, 5, 7, 9, 11]
    assert g.n_edges == 3  # 7→9 (twice), 9→5, 5→11; 7→7 is a self-loop
    assert (g.stats.edges_read, g.stats.self_loops, g.stats.duplicate_edges) == (5, 1, 1)
    assert g.out_degree.tolist() == [0, 1, 1, 1, 0]
    assert g.in_degree.tolist() == [0, 1, 0, 1, 1]


def test_restricting_to_nodes_drops_and_counts_edges_that_leave_them():
    g = LinkGraph.from_edges([1, 1, 2], [2, 99, 1], nodes=[1, 2], restrict_to_nodes=True)
    assert g.ids.tolist() == [1, 2] and g.n_edges == 2 and g.stats.outside_edges == 1


def test_unknown_url_ids_are_reported_with_the_fix():
    g = graph([(1, 2)])
    assert g.contains([1, 3]).tolist() == [True, False]
    assert g.indices([2, 1]).tolist() == [1, 0]
    with pytest.raises(ValueError, match="1 of 2 are not .*LinkGraph.contains"):
        g.indices([1, 3])


def test_mismatched_columns_and_bad_ids_raise():
    with pytest.raises(ValueError, match="2 sources and 1 targets"):
        LinkGraph.from_edges([1, 2], [3])
    with pytest.raises(ValueError, match="non-negative"):
        LinkGraph.from_edges([-1], [3])
    with pytest.raises(ValueError, match="integer URL ids"):
        LinkGraph.from_edges(["a"], ["b"])


# ---------------------------------------------------------------- PageRank


def test_pagerank_of_a_three_node_graph_with_a_dead_end_matches_the_hand_solution():
    """A→B, A→C, B→C; C is a dead end; teleport 10%. Transition rows (lecture's Markov chain):
    A: (1/30, 29/60, 29/60), B: (1/30, 1/30, 28/30), C: (1/3, 1/3, 1/3). Solving a = aP with
    Σa = 1: 29a_A = a_B + 10a_C and 58a_B = 29a_A + 20a_C give a = (200, 290, 551) / 1041."""
    g = graph([(0, 1), (0, 2), (1, 2)])
    expected = [Fraction(200, 1041), Fraction(290, 1041), Fraction(551, 1041)]
    assert pagerank(g) == pytest.approx([float(x) for x in expected], abs=1e-9)


def test_pagerank_is_a_probability_vector_and_uniform_without_links():
    g = graph([], nodes=[1, 2, 3, 4])
    assert pagerank(g) == pytest.approx([0.25] * 4)
    g = graph([(0, 1), (1, 2), (2, 0), (3, 0)])
    pr = pagerank(g)
    assert pr.sum() == pytest.approx(1.0) and (pr > 0).all()
    assert pagerank(g, PageRankParams(teleport=1.0)) == pytest.approx([0.25] * 4)


def test_pagerank_that_does_not_converge_says_so():
    with pytest.raises(ValueError, match="did not reach the tolerance"):
        pagerank(graph([(0, 1), (1, 2), (2, 0), (0, 2)]), PageRankParams(max_iterations=2))
    with pytest.raises(ValueError, match="empty graph"):
        pagerank(graph([]))


# ---------------------------------------------------------------- co-citation family


def test_cocitation_coupling_and_ecbc_counts_on_a_small_graph():
    """p→a, p→b, q→a, q→b, r→a, a→x, b→x, b→y:
    I(a) = {p, q, r}, I(b) = {p, q}: co-citation(a, b) = 2; O(a) = {x}, O(b) = {x, y}:
    coupling(a, b) = 1; ECBC(α = 0.5) = 1.5, ECBC(α = 0.25) = 0.5 + 0.75 = 1.25."""
    p, q, r, a, b, x, y = range(7)
    g = graph([(p, a), (p, b), (q, a), (q, b), (r, a), (a, x), (b, x), (b, y)])
    assert cocitation(g, [a], [b, a, x]).tolist() == [[2, 3, 0]]
    assert coupling(g, [a], [b, a, p]).tolist() == [[1, 1, 0]]
    assert coupling(g, [p], [q, r]).tolist() == [[2, 1]]
    assert ecbc(g, [a], [b]).tolist() == [[1.5]]
    assert ecbc(g, [a], [b], EcbcParams(alpha=0.25)).tolist() == [[1.25]]
    assert ecbc(g, params=EcbcParams(alpha=1.0)) == pytest.approx(cocitation(g))


# ---------------------------------------------------------------- SimRank


def test_simrank_of_the_university_graph_matches_jeh_and_widom_figure_1():
    """Univ→ProfA, Univ→ProfB, ProfA→StudentA, ProfB→StudentB, StudentA→Univ, StudentB→ProfB,
    C = 0.8: the SimRank paper (ENS reference [2]) reports these scores to 3 decimals."""
    univ, prof_a, prof_b, stud_a, stud_b = range(5)
    g = graph([(univ, prof_a), (univ, prof_b), (prof_a, stud_a), (prof_b, stud_b), (stud_a, univ), (stud_b, prof_b)])
    s = simrank(g, params=SimRankParams(iterations=100))
    assert np.round(s[prof_a, prof_b], 3) == 0.414
    assert np.round(s[stud_a, stud_b], 3) == 0.331
    assert np.round(s[univ, prof_b], 3) == 0.132
    assert np.round(s[prof_a, stud_b], 3) == 0.106
    assert np.round(s[prof_b, stud_b], 3) == 0.088
    assert np.round(s[prof_b, stud_a], 3) == 0.042
    assert np.round(s[univ, stud_b], 3) == 0.034
    assert s[univ, prof_a] == 0 and s[prof_a, stud_a] == 0


def test_simrank_iterates_towards_the_hand_computed_fixed_point():
    """x→y, y→x, z→x, z→y. I(x) = {y, z}, I(y) = {x, z}, I(z) = ∅ so Sim(·, z) = 0 and
    s = Sim(x, y) = γ/4 (Sim(y, x) + Sim(y, z) + Sim(z, x) + Sim(z, z)) = γ(1 + s)/4.
    From s_0 = 0: s_k = γ/(4 − γ) · (1 − (γ/4)^k); the fixed point is 0.8/3.2 = 0.25."""
    x, y, z = range(3)
    g = graph([(x, y), (y, x), (z, x), (z, y)])
    for k in (0, 1, 2, 5):
        s = simrank(g, params=SimRankParams(iterations=k))
        assert s[x, y] == pytest.approx(0.8 / 3.2 * (1 - 0.2**k))
        assert s[x, z] == 0 and s[y, z] == 0
    assert simrank(g, params=SimRankParams(iterations=60))[x, y] == pytest.approx(0.25)


def test_simrank_on_a_two_level_dag():
    """r→a, r→b, a→c, b→c, a→d: Sim(a, b) = γ·Sim(r, r) = 0.8;
    Sim(c, d) = γ/(2·1) (Sim(a, a) + Sim(b, a)) = 0.4 · 1.8 = 0.72."""
    r, a, b, c, d = range(5)
    s = simrank(graph([(r, a), (r, b), (a, c), (b, c), (a, d)]), params=SimRankParams(iterations=5))
    assert s[a, b] == pytest.approx(0.8) and s[c, d] == pytest.approx(0.72)


def test_extended_simrank_reaches_the_hand_computed_fixed_point():
    """Same graph x→y, y→x, z→x, z→y. Now O(x) = {y}, O(y) = {x}, O(z) = {x, y}.
    t = Sim(y, z) = γ (Sim(x, x) + Sim(x, y)) / (0 + 1·2) = γ(1 + s)/2 (I(z) is empty), Sim(x, z) = t,
    s = Sim(x, y) = γ ((s + t + t + 1) + s) / (2·2 + 1·1) = γ(1 + 2s + 2t)/5.
    With γ = 0.8: s = 0.288 + 0.448 s, so s = 12/23 and t = 0.4 · 35/23 = 14/23."""
    x, y, z = range(3)
    s = extended_simrank(graph([(x, y), (y, x), (z, x), (z, y)]), params=ExtendedSimRankParams(iterations=200))
    assert s[x, y] == pytest.approx(12 / 23) and s[x, z] == pytest.approx(14 / 23) and s[y, z] == pytest.approx(14 / 23)


def random_graph(seed: int, n: int, m: int) -> LinkGraph:
    rng = np.random.default_rng(seed)
    src = rng.integers(0, n, m)
    dst = (rng.pareto(1.2, m) * 3).astype(np.int64) % n  # a few popular targets
    return LinkGraph.from_edges(src, dst, nodes=np.arange(n))


def test_block_extended_simrank_is_a_lower_bound_and_exact_when_the_neighbourhood_fits():
    g = random_graph(3, 200, 1500)
    queries, candidates = np.arange(10), np.arange(5, 45)
    exact = extended_simrank(g, queries, candidates, ExtendedSimRankParams(iterations=4))
    per_entry = 8 * 6
    small = ExtendedSimRankParams(iterations=4, max_bytes=per_entry * 120 * 120)
    plan = simrank_plan(g, queries, candidates, small)
    assert plan.method == "block" and not plan.exact and plan.rows.size <= 120 and plan.cols.size <= 120
    approx = extended_simrank(g, queries, candidates, small)
    assert (approx <= exact + 1e-12).all() and approx.max() > 0
    assert np.abs(approx - exact).max() < 0.2
    rows_only = ExtendedSimRankParams(iterations=4, max_bytes=per_entry * 200 * 60)
    full = extended_simrank(g, queries, None, ExtendedSimRankParams(iterations=4))
    assert (extended_simrank(g, queries, None, rows_only) <= full + 1e-12).all()
    # A chain: the k-hop neighbourhood is tiny, so even a small block is exact.
    chain = graph([(i, i + 1) for i in range(300)])
    tight = ExtendedSimRankParams(iterations=3, max_bytes=per_entry * 100 * 100)
    assert simrank_plan(chain, [150], [160, 170], tight).exact
    expected = extended_simrank(chain, [150], [160, 170], ExtendedSimRankParams(iterations=3))
    assert extended_simrank(chain, [150], [160, 170], tight) == pytest.approx(expected)


def test_block_extended_simrank_refuses_more_queries_than_its_memory_allows():
    g = random_graph(1, 100, 400)
    with pytest.raises(ValueError, match="max_bytes"):
        extended_simrank(g, np.arange(50), None, ExtendedSimRankParams(max_bytes=6 * 8 * 100 * 10))


def exact_diagonal(g: LinkGraph, k: int, gamma: float = 0.8) -> np.ndarray:
    """D_j = 1 − γ diag(Wᵀ S_{j−1} W) from the exact dense iterates."""
    adj = g.out_links.toarray()
    in_deg = adj.sum(axis=0)
    w = adj / np.where(in_deg > 0, in_deg, 1)
    rows = [np.ones(g.n_nodes)]
    for j in range(1, k + 1):
        s = simrank(g, params=SimRankParams(iterations=j - 1, method="exact"))
        rows.append(1 - gamma * np.diag(w.T @ s @ w))
    return np.array(rows)


@settings(max_examples=25, deadline=None)
@given(edge_lists, st.integers(0, 5))
def test_linear_simrank_with_the_exact_diagonal_equals_the_dense_iteration(graph_spec, k):
    """S_k = Σ_j γ^j (Wᵀ)^j D_{k−j} W^j: the linear form is an identity, not an approximation."""
    n, edges = graph_spec
    g = graph(edges, nodes=range(n))
    params = SimRankParams(iterations=k)
    dense = simrank(g, params=SimRankParams(iterations=k, method="exact"))
    everyone = np.arange(n)
    assert _simrank_linear(g, everyone, everyone, params, exact_diagonal(g, k)) == pytest.approx(dense, abs=1e-12)


def test_linear_simrank_with_a_sampled_diagonal_is_close_to_exact():
    g = random_graph(5, 80, 500)
    exact = simrank(g, params=SimRankParams(iterations=6, method="exact"))
    sampled = simrank(g, params=SimRankParams(iterations=6, method="linear", walks=2000, seed=4))
    assert np.abs(sampled - exact).max() < 0.01
    assert np.diag(sampled) == pytest.approx(np.ones(80)) and (sampled >= 0).all() and (sampled <= 1).all()
    queries = np.array([4, 9])
    params = SimRankParams(iterations=6, method="linear", walks=2000, seed=4)
    assert simrank(g, queries, None, params) == pytest.approx(sampled[queries])
    diagonal = simrank_diagonal(g, params)
    assert diagonal.shape == (7, 80) and (diagonal[0] == 1).all() and (diagonal >= 0).all()
    assert simrank(g, queries, None, params, diagonal=diagonal) == pytest.approx(sampled[queries])
    with pytest.raises(ValueError, match="simrank_diagonal"):
        simrank(g, queries, None, params, diagonal=diagonal[:3])


def test_simrank_chooses_exact_when_it_fits_and_linear_otherwise():
    g = random_graph(2, 100, 400)
    assert simrank_plan(g, [1], None, SimRankParams()).method == "exact"
    small = SimRankParams(max_bytes=4 * 8 * 50 * 50)
    assert simrank_plan(g, [1], None, small).method == "linear"
    with pytest.raises(ValueError, match="method='linear'"):
        simrank(g, [1], None, SimRankParams(method="exact", max_bytes=4 * 8 * 50 * 50))
    with pytest.raises(ValueError, match="method 'auto', 'exact' or 'linear'"):
        SimRankParams(method="fast")


# ---------------------------------------------------------------- PageSim


def brute_force_features(g: LinkGraph, radius: int, decay: float, pr: np.ndarray, direction: str) -> np.ndarray:
    """Equation 1 by enumerating every simple path of at most ``radius`` links."""
    adj = g.out_links.toarray() if direction == "out" else g.in_links.toarray()
    deg = adj.sum(axis=1)
    pg = np.zeros((g.n_nodes, g.n_nodes))

    def walk(u, path, weight):
        if len(path) > 1:
            pg[u, path[-1]] += decay * pr[u] * weight
        if len(path) - 1 == radius:
            return
        here = path[-1]
        for nxt in np.flatnonzero(adj[here]):
            if nxt not in path:
                walk(u, [*path, nxt], weight / deg[here])

    for u in range(g.n_nodes):
        walk(u, [u], 1.0)
        pg[u, u] = pr[u]
    return pg


@settings(max_examples=60, deadline=None)
@given(edge_lists, st.integers(1, 3), st.sampled_from(["out", "in"]))
def test_pagesim_features_equal_the_simple_path_enumeration(graph_spec, radius, direction):
    n, edges = graph_spec
    g = graph(edges, nodes=range(n))
    pr = pagerank(g)
    features = pagesim_features(g, radius=radius, decay=0.7, scores=pr, direction=direction)
    assert features == pytest.approx(brute_force_features(g, radius, 0.7, pr, direction), abs=1e-12)


def test_pagesim_counts_paths_not_walks_and_matches_equation_2_by_hand():
    """a⇄b, b→c. Out-link feature vectors (columns; rows are the sources a, b, c):
    FV(a) = (PR_a, d·PR_b/2, 0), FV(b) = (d·PR_a, PR_b, 0), FV(c) = (d·PR_a/2, d·PR_b/2, PR_c).
    PG(a, b) = d·PR_a only: the walk a→b→a→b repeats vertices and is not a path.
    Equation 2: PS(a, c) = (d·PR_a/2)²/PR_a + d·PR_b/2 = d²PR_a/4 + d·PR_b/2."""
    a, b, c = range(3)
    g = graph([(a, b), (b, a), (b, c)])
    pr, d = pagerank(g), 0.5
    fv = pagesim_features(g, radius=3, decay=d, scores=pr)
    assert fv[:, a] == pytest.approx([pr[a], d * pr[b] / 2, 0])
    assert fv[:, b] == pytest.approx([d * pr[a], pr[b], 0])
    assert fv[:, c] == pytest.approx([d * pr[a] / 2, d * pr[b] / 2, pr[c]])
    ps = pagesim(g, [a], [c], PageSimParams(decay=d))
    assert ps[0, 0] == pytest.approx(d * d * pr[a] / 4 + d * pr[b] / 2)


def test_extended_pagesim_adds_the_jaccard_of_both_directions_by_hand():
    """Same graph, d = 0.6. Out (decay d): Σmin(FV(a), FV(c)) = d·PR_a/2 + d·PR_b/2 and
    Σmax = PR_a + d·PR_b/2 + PR_c. In (decay 1 − d, dividing by |I(w)|; I(a) = {b},
    I(b) = {a}, I(c) = {b}): FV_in(a) = (PR_a, (1−d)PR_b, (1−d)PR_c), FV_in(c) = (0, 0, PR_c),
    so the in-link Jaccard is (1−d)PR_c / (PR_a + (1−d)PR_b + PR_c)."""
    a, b, c = range(3)
    g = graph([(a, b), (b, a), (b, c)])
    pr, d = pagerank(g), 0.6
    out = (d * pr[a] / 2 + d * pr[b] / 2) / (pr[a] + d * pr[b] / 2 + pr[c])
    inn = (1 - d) * pr[c] / (pr[a] + (1 - d) * pr[b] + pr[c])
    assert extended_pagesim(g, [a], [c])[0, 0] == pytest.approx(out + inn)


# ---------------------------------------------------------------- properties of every measure

ALL_PARAMS = [
    CocitationParams(),
    CouplingParams(),
    EcbcParams(),
    SimRankParams(iterations=6),
    ExtendedSimRankParams(iterations=6),
    PageSimParams(),
    ExtendedPageSimParams(),
]


@settings(max_examples=40, deadline=None)
@given(edge_lists)
def test_every_measure_is_symmetric_and_non_negative(graph_spec):
    n, edges = graph_spec
    g = graph(edges, nodes=range(n))
    for params in ALL_PARAMS:
        s = link_similarity(g, params)
        assert s.shape == (n, n)
        assert s == pytest.approx(s.T, abs=1e-12), params
        assert (s >= 0).all(), params


@settings(max_examples=40, deadline=None)
@given(edge_lists)
def test_self_similarity_and_range_where_the_paper_fixes_them(graph_spec):
    n, edges = graph_spec
    g = graph(edges, nodes=range(n))
    for params in (SimRankParams(iterations=6), ExtendedSimRankParams(iterations=6)):
        s = link_similarity(g, params)
        assert np.diag(s) == pytest.approx(np.ones(n))  # Sim(u, u) = 1 by definition
        assert (s <= 1 + 1e-12).all()
        off = s[~np.eye(n, dtype=bool)]
        assert (off <= params.gamma + 1e-12).all()  # γ times an average of scores in [0, 1]
    eps = extended_pagesim(g)
    assert np.diag(eps) == pytest.approx(np.full(n, 2.0))  # two Jaccard terms, each 1
    assert (eps <= 2 + 1e-12).all()
    cc = cocitation(g)
    assert np.diag(cc) == pytest.approx(g.in_degree)  # |I(a) ∩ I(a)| = |I(a)|


@pytest.mark.parametrize("params", ALL_PARAMS, ids=lambda p: p.name)
def test_query_and_candidate_blocks_equal_the_full_matrix(params):
    g = random_graph(7, 60, 400)
    full = link_similarity(g, params)
    queries, candidates = np.array([3, 0, 17, 3]), np.array([59, 1, 2, 30, 0])
    assert link_similarity(g, params, queries, candidates) == pytest.approx(full[np.ix_(queries, candidates)])


@pytest.mark.parametrize("cls", [PageSimParams, ExtendedPageSimParams])
def test_pagesim_in_small_memory_blocks_gives_the_same_scores(cls):
    g = random_graph(11, 80, 500)
    tiny = cls(max_bytes=8 * 80 * 6 * 3)  # three columns per block
    assert link_similarity(g, tiny) == pytest.approx(link_similarity(g, cls()))


# ---------------------------------------------------------------- entry points


def test_measure_params_by_name_with_table_1_defaults():
    assert sorted(PARAMS_BY_MEASURE) == [
        "cocitation", "coupling", "ecbc", "extended_pagesim", "extended_simrank", "pagesim", "simrank",
    ]
    assert measure_params("ecbc").alpha == 0.5
    assert measure_params("simrank").gamma == 0.8 and measure_params("extended_simrank").gamma == 0.8
    assert (measure_params("pagesim").radius, measure_params("pagesim").decay) == (3, 0.5)
    assert (measure_params("extended_pagesim").radius, measure_params("extended_pagesim").decay) == (3, 0.6)
    assert measure_params("simrank", gamma=0.6).gamma == 0.6
    with pytest.raises(ValueError, match="among"):
        measure_params("hits")
    with pytest.raises(ValueError, match="gamma in \\(0, 1\\)"):
        SimRankParams(gamma=1.0)
    with pytest.raises(ValueError, match="radius between 1 and 3"):
        PageSimParams(radius=4)
    with pytest.raises(ValueError, match="alpha in \\[0, 1\\]"):
        EcbcParams(alpha=1.5)


def test_node_indices_out_of_range_are_refused():
    g = graph([(0, 1)])
    with pytest.raises(ValueError, match="expected queries in 0..1"):
        cocitation(g, [2])


def test_top_related_ranks_best_first_without_the_query_or_zero_scores():
    scores = np.array([[0.5, 0.9, 0.0, 0.9], [1.0, 0.2, 0.3, 0.0]])
    related = top_related(scores, np.array([7, 4]), np.array([4, 9, 8, 7]), n=3)
    assert related[0] == [(9, 0.9), (4, 0.5)]  # 7 is the query itself; 8 scores 0
    assert related[1] == [(8, 0.3), (9, 0.2)]  # 4 is the query itself
    tied = top_related(np.array([[0.5, 0.5, 0.5]]), np.array([0]), np.array([9, 2, 5]), n=2)
    assert tied[0] == [(2, 0.5), (5, 0.5)]


def test_related_pages_speak_url_ids():
    """p→a, p→b, q→a, q→b, q→c: by co-citation a's related pages are b (2 shared) then c (1)."""
    g = graph([(10, 20), (10, 30), (11, 20), (11, 30), (11, 40)])
    assert related_pages(g, [20], CocitationParams(), n=5) == [[(30, 2.0), (40, 1.0)]]
    assert related_pages(g, [20], CocitationParams(), n=5, candidate_ids=[40]) == [[(40, 1.0)]]
    with pytest.raises(ValueError, match="not .*LinkGraph.contains"):
        related_pages(g, [99], CocitationParams())
