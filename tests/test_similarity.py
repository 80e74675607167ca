"""Exact bag similarity (paper Section 4): hand values, and the fast all-pairs against brute force."""
from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from simweb.core.bag_matrix import BagMatrix
from simweb.core.similarity import Blocks, cosine, exact_pairs, jaccard, shared_terms, similarity


def test_bag_jaccard_is_sum_of_min_over_sum_of_max():
    a, b = {"x": 2.0, "y": 1.0}, {"x": 1.0, "z": 3.0}
    # min: x 1; max: x 2, y 1, z 3
    assert jaccard(a, b) == pytest.approx(1 / 6)
    assert jaccard(a, a) == 1.0 and jaccard({}, {}) == 0.0 and jaccard(a, {}) == 0.0
    # sets are bags with multiplicity 1: |A ∩ B| / |A ∪ B|
    assert jaccard(dict.fromkeys("abc", 1.0), dict.fromkeys("bcd", 1.0)) == pytest.approx(2 / 4)


def test_cosine_and_metric_choice():
    a, b = {"x": 2.0, "y": 1.0}, {"x": 1.0, "z": 3.0}
    assert cosine(a, b) == pytest.approx(2 / (math.sqrt(5) * math.sqrt(10)))
    assert similarity(a, b, "cosine") == cosine(a, b) and similarity(a, b) == jaccard(a, b)
    assert cosine(a, {}) == 0.0


def test_shared_terms_by_min_weight():
    a, b = {"x": 2.0, "y": 1.0, "w": 0.5}, {"x": 1.0, "y": 4.0, "w": 0.5, "z": 3.0}
    assert shared_terms(a, b) == [("x", 2.0, 1.0), ("y", 1.0, 4.0), ("w", 0.5, 0.5)]
    assert shared_terms(a, b, k=1) == [("x", 2.0, 1.0)]


def brute_force(bags: dict[int, tuple[str, dict[str, float]]], ids: list[int], metric: str) -> np.ndarray:
    out = np.zeros((len(ids), len(ids)))
    for i, u in enumerate(ids):
        for j, v in enumerate(ids):
            a, b = bags[u][1], bags[v][1]
            out[i, j] = 1.0 if u == v and sum(a.values()) > 0 else similarity(a, b, metric)
    return out


bag_sets = st.dictionaries(
    st.integers(1, 10_000),
    st.dictionaries(st.sampled_from([f"t{i}" for i in range(12)]),
                    st.floats(0.001, 100, allow_nan=False), max_size=8),
    min_size=1, max_size=14,
).map(lambda d: {u: (f"http://{u}.example/", bag) for u, bag in d.items()})


@pytest.fixture(params=["default", "all light, tiny blocks", "all heavy"])
def kernel_paths(request):
    """The blocks that take the all-pairs tests through each code path of the inversion kernel."""
    if request.param == "all light, tiny blocks":
        return Blocks(triple_budget=3, block_cells=7, heavy_fraction=2.0, cosine_dense_fraction=2.0)
    if request.param == "all heavy":
        return Blocks(heavy_fraction=0.0, cosine_dense_fraction=0.0)
    return Blocks()


# The fixture only chooses the blocks, the same for every generated input.
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(bags=bag_sets, data=st.data())
def test_all_pairs_equals_brute_force(kernel_paths, bags, data):
    matrix = BagMatrix.from_dicts(bags)
    ids = data.draw(st.permutations(sorted(bags)))
    for metric in ("jaccard", "cosine"):
        fast = exact_pairs(matrix, metric, ids=ids, blocks=kernel_paths)
        expected = brute_force(bags, ids, metric)
        np.testing.assert_allclose(fast, expected, rtol=1e-9, atol=1e-12)
        assert np.all((fast >= 0) & (fast <= 1))
        np.testing.assert_array_equal(fast, fast.T)
        nonempty = np.array([sum(bags[u][1].values()) > 0 for u in ids])
        assert np.all(np.diag(fast)[nonempty] == 1.0) and np.all(np.diag(fast)[~nonempty] == 0.0)


def test_all_pairs_orders_rows_by_ids_and_can_return_sparse():
    bags = {1: ("a", {"x": 1.0, "y": 1.0}), 2: ("b", {"x": 1.0}), 3: ("c", {"z": 2.0})}
    matrix = BagMatrix.from_dicts(bags)
    full = exact_pairs(matrix)
    np.testing.assert_allclose(full, [[1, 0.5, 0], [0.5, 1, 0], [0, 0, 1]])
    np.testing.assert_allclose(exact_pairs(matrix, ids=[3, 1]), [[1, 0], [0, 1]])
    sparse = exact_pairs(matrix, dense=False)
    assert sp.issparse(sparse) and sparse.nnz == 5
    np.testing.assert_allclose(sparse.toarray(), full)
    with pytest.raises(KeyError, match="no bag"):
        exact_pairs(matrix, ids=[1, 99])


def test_negative_weights_are_refused():
    matrix = BagMatrix.from_dicts({1: ("a", {"x": -1.0}), 2: ("b", {"x": 1.0})})
    with pytest.raises(ValueError, match="non-negative"):
        exact_pairs(matrix)


def test_all_pairs_on_a_thousand_bags_matches_pairwise_on_a_sample():
    rng = np.random.default_rng(5)
    n, v = 1000, 300
    # Zipf-like: a few terms in most bags (the dense path), many in few (the inversion path).
    p = 1.0 / np.arange(1, v + 1) ** 0.8
    bags = {}
    for u in range(1, n + 1):
        terms = np.unique(rng.choice(v, size=rng.integers(5, 60), p=p / p.sum()))
        bags[u] = (str(u), {f"t{t}": float(w) for t, w in zip(terms, rng.random(terms.size) + 0.01)})
    matrix = BagMatrix.from_dicts(bags)
    heavy = (np.diff(matrix.csr.tocsc().indptr) > Blocks().heavy_fraction * n).sum()
    assert heavy > 0
    fast = exact_pairs(matrix)
    for i, j in rng.integers(0, n, size=(300, 2)).tolist():
        a, b = bags[i + 1][1], bags[j + 1][1]
        expected = 1.0 if i == j else jaccard(a, b)
        assert fast[i, j] == pytest.approx(expected, rel=1e-9, abs=1e-12)
