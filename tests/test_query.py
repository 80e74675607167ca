"""PROCESSQUERY (paper Figure 11) against a brute-force count over H, batch mode, all pairs."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simweb.core.minhash import EMPTY, MinHashParams, sign_bags
from simweb.core.query import all_pairs, invert, min_count, prepare, process_queries, process_query


def brute_force(h: np.ndarray, q: int, alpha: float, indexed: np.ndarray | None = None) -> list[tuple[int, int]]:
    m = h.shape[1]
    counts = (h == h[q]).sum(axis=1)
    ok = counts >= min_count(alpha, m)
    ok[q] = False
    if indexed is not None:
        ok &= indexed
    ok &= ~(h == EMPTY).all(axis=1)
    docs = np.flatnonzero(ok)
    return sorted(((int(d), int(counts[d])) for d in docs), key=lambda x: (-x[1], x[0]))


@settings(max_examples=40, deadline=None)
@given(st.integers(2, 60), st.integers(1, 12), st.integers(1, 5), st.floats(0.0, 1.0), st.integers(0, 2**32))
def test_process_query_equals_brute_force(n, m, distinct, alpha, seed):
    rng = np.random.default_rng(seed)
    h = rng.integers(0, distinct, size=(n, m)).astype(np.uint32)
    indexed = rng.random(n) < 0.8
    index = invert(h, indexed)
    for q in range(n):
        got = process_query(index, h, q, alpha)
        assert list(zip(got.docs.tolist(), got.counts.tolist())) == brute_force(h, q, alpha, indexed)


def test_batch_mode_equals_one_at_a_time_and_respects_top():
    rng = np.random.default_rng(3)
    h = rng.integers(0, 4, size=(200, 20)).astype(np.uint32)
    index = invert(h)
    queries = np.arange(0, 200, 7)
    batch = process_queries(index, h[queries], 0.2, top=5, exclude=queries)
    for q, res in zip(queries, batch):
        one = process_query(index, h, int(q), 0.2, top=5)
        assert res.docs.tolist() == one.docs.tolist() and res.counts.tolist() == one.counts.tolist()
        assert len(res) <= 5 and int(q) not in res.docs.tolist()


def test_single_document_buckets_are_dropped_without_losing_results():
    h = np.array([[1, 2, 3], [1, 5, 6], [7, 8, 9]], dtype=np.uint32)
    index = invert(h)
    assert index.n_buckets == 1 and index.docs.tolist() == [0, 1]
    assert process_query(index, h, 0, 0.0).docs.tolist() == [1]
    assert process_query(index, h, 2, 0.0).docs.tolist() == []


def test_filtered_documents_can_be_queried_but_are_never_results():
    h = np.array([[1, 1], [1, 1], [1, 2]], dtype=np.uint32)
    index = invert(h, indexed=np.array([True, False, True]))
    assert process_query(index, h, 1, 0.5).docs.tolist() == [0, 2]
    assert 1 not in process_query(index, h, 0, 0.0).docs.tolist()


def test_empty_bags_find_nothing_and_are_found_by_nothing():
    h = np.array([[EMPTY] * 4, [EMPTY] * 4, [1, 2, 3, 4]], dtype=np.uint32)
    index = invert(h)
    assert len(process_query(index, h, 0, 0.0)) == 0
    assert len(process_query(index, h, 2, 0.0)) == 0


def test_ties_rank_by_document_id_and_threshold_is_inclusive():
    h = np.array([[1, 2, 3, 4], [9, 2, 3, 4], [1, 2, 3, 9], [1, 9, 9, 9]], dtype=np.uint32)
    got = process_query(invert(h), h, 0, alpha=0.25)
    assert got.docs.tolist() == [1, 2, 3] and got.counts.tolist() == [3, 3, 1]
    assert process_query(invert(h), h, 0, alpha=0.26).docs.tolist() == [1, 2]


def test_all_pairs_reports_each_pair_once_with_its_count():
    rng = np.random.default_rng(11)
    h = rng.integers(0, 3, size=(40, 10)).astype(np.uint32)
    a, b, c = all_pairs(invert(h), h, 0.5, chunk=7)
    got = set(zip(a.tolist(), b.tolist(), c.tolist()))
    want = {(i, j, int((h[i] == h[j]).sum())) for i in range(40) for j in range(i + 1, 40)
            if (h[i] == h[j]).sum() >= 5}
    assert got == want and all(x < y for x, y in zip(a, b))
    assert list(c) == sorted(c, reverse=True)


def test_bad_queries_raise():
    h = np.zeros((2, 4), np.uint32)
    index = invert(h)
    with pytest.raises(ValueError, match="alpha"):
        process_query(index, h, 0, alpha=1.5)
    with pytest.raises(ValueError, match="top"):
        process_query(index, h, 0, top=0)
    with pytest.raises(ValueError, match="positions"):
        process_queries(index, np.zeros((1, 5), np.uint32))


def test_similar_bags_are_found_and_dissimilar_ones_are_not():
    """End to end on signatures: near-duplicates (J ≈ 0.8) found, unrelated bags (J = 0) not."""
    rng = np.random.default_rng(5)
    bags = []
    for c in range(20):
        base = {f"c{c}w{i}": float(rng.random() + 0.1) for i in range(50)}
        for _ in range(3):
            bags.append({t: w * float(rng.uniform(0.8, 1.0)) for t, w in base.items()})
    h = sign_bags(bags, MinHashParams()).values
    index = invert(h)
    for q in range(0, 60, 3):
        got = set(process_query(index, h, q, 0.15).docs.tolist())
        cluster = set(range(q - q % 3, q - q % 3 + 3)) - {q}
        assert got == cluster


def _families(n: int, m: int, seed: int) -> np.ndarray:
    """Signature rows with uniform 32-bit values where each document copies a random share of
    an earlier document's positions: buckets of every size, keys spread over all of I."""
    rng = np.random.default_rng(seed)
    h = rng.integers(0, 2**32, size=(n, m), dtype=np.uint64).astype(np.uint32)
    for d in range(1, n):
        parent = int(rng.integers(0, d))
        copy = rng.random(m) < rng.uniform(0.0, 0.9)
        h[d, copy] = h[parent, copy]
    h[rng.random(n) < 0.02] = EMPTY
    return h


def test_single_queries_through_the_key_directory_equal_brute_force():
    from simweb.core.query import _directory

    h = _families(3000, 16, seed=1)
    indexed = np.random.default_rng(2).random(3000) < 0.9
    index = invert(h, indexed)
    assert prepare(index) > 0
    d = _directory(index)
    assert d is not None and d.first.size > 16  # several bins per position
    last = int(index.docs[-1])  # holds the largest key: its window reaches the end of I
    for q in [last, *range(0, 3000, 37)]:
        for alpha in (0.0, 0.2, 0.5):
            got = process_query(index, h, q, alpha)
            assert list(zip(got.docs.tolist(), got.counts.tolist())) == brute_force(h, q, alpha, indexed)
            top = process_query(index, h, q, alpha, top=2)
            assert top.docs.tolist() == got.docs.tolist()[:2]


def test_single_queries_with_crowded_keys_use_binary_search_and_equal_brute_force():
    from simweb.core.query import _directory

    rng = np.random.default_rng(4)
    h = rng.integers(0, 100, size=(400, 6)).astype(np.uint32)  # 100 values per position, one bin
    index = invert(h)
    assert prepare(index) == 0 and _directory(index) is None
    for q in range(0, 400, 9):
        got = process_query(index, h, q, 0.3)
        assert list(zip(got.docs.tolist(), got.counts.tolist())) == brute_force(h, q, 0.3)


def test_a_signature_that_is_no_document_is_answered_like_one():
    h = _families(500, 12, seed=5)
    index = invert(h)
    probe = h[17].copy()
    probe[:4] = 7  # a row H does not hold
    one = process_queries(index, probe[None, :], 0.25, h=h)[0]
    counted = process_queries(index, probe[None, :], 0.25)[0]  # no H: counts from the postings
    want = sorted(((d, int(c)) for d, c in enumerate((h == probe).sum(axis=1)) if c >= 3 and not (h[d] == EMPTY).all()),
                  key=lambda x: (-x[1], x[0]))
    assert list(zip(one.docs.tolist(), one.counts.tolist())) == want
    assert list(zip(counted.docs.tolist(), counted.counts.tolist())) == want


def test_batches_through_the_key_directory_equal_single_queries(monkeypatch):
    from simweb.core import query

    h = _families(2000, 16, seed=6)
    index = invert(h)
    queries = np.arange(0, 2000, 3)
    single = [process_query(index, h, int(q), 0.2) for q in queries]
    monkeypatch.setattr(query, "_LOOKUP_CHUNK", 100)  # several look-up chunks per batch
    for with_h in (h, None):
        batch = process_queries(index, h[queries], 0.2, exclude=queries, h=with_h)
        for one, many in zip(single, batch):
            assert many.docs.tolist() == one.docs.tolist() and many.counts.tolist() == one.counts.tolist()
