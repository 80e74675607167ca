"""Shingles, min-hash sketches, duplicate clusters and mirrors on constructed documents."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simweb.core.shingles import (
    MirrorParams,
    SketchParams,
    UnionFind,
    band_rows,
    duplicate_clusters,
    find_mirrors,
    host_and_path,
    resemblance,
    shingle_fingerprints,
    similar_pairs,
    sketch,
)

VOCABULARY = [f"w{i}" for i in range(5000)]


def text(seed: int, length: int) -> list[str]:
    rng = np.random.default_rng(seed)
    return [VOCABULARY[i] for i in rng.integers(0, len(VOCABULARY), length)]


def changed(words: list[str], positions: list[int]) -> list[str]:
    out = list(words)
    for p in positions:
        out[p] = f"changed{p}"
    return out


# ---------------------------------------------------------------- shingles


def test_shingles_with_an_identity_like_hash_are_exact():
    """'a rose is a rose is a rose' with K = 4 has the lecture's three distinct shingles."""
    words = "a rose is a rose is a rose".split()
    seen = []

    def record(shingle: str, seed: int) -> int:
        seen.append(shingle)
        return len(shingle) * 100 + seed

    fps = shingle_fingerprints(words, k=4, seed=3, hash_fn=record)
    assert sorted(set(seen)) == ["a rose is a", "is a rose is", "rose is a rose"]
    assert fps.tolist() == [1103, 1203, 1403]


def test_shingles_lower_case_and_short_documents_make_one_shingle():
    assert shingle_fingerprints(["A", "Rose"]).tolist() == shingle_fingerprints(["a", "rose"]).tolist()
    assert shingle_fingerprints(["a", "rose"], k=10).size == 1
    assert shingle_fingerprints([], k=10).size == 0
    assert shingle_fingerprints(text(1, 100)).size == 91


def test_seed_changes_fingerprints_and_bad_hashes_raise():
    words = text(2, 30)
    assert shingle_fingerprints(words, seed=1).tolist() != shingle_fingerprints(words, seed=2).tolist()
    with pytest.raises(ValueError, match="unsigned 64-bit"):
        shingle_fingerprints(words, hash_fn=lambda s, seed: -1)
    with pytest.raises(ValueError, match="k >= 1"):
        shingle_fingerprints(words, k=0)


def test_resemblance_of_identical_disjoint_and_overlapping_documents():
    a = shingle_fingerprints(text(1, 200))
    b = shingle_fingerprints(text(2, 200))
    assert resemblance(a, a) == 1.0
    assert resemblance(a, b) == 0.0
    one_change = shingle_fingerprints(changed(text(1, 200), [100]))
    assert resemblance(a, one_change) == pytest.approx(181 / 201)  # 10 of 191 shingles replaced
    assert resemblance(np.array([], np.uint64), np.array([], np.uint64)) == 0.0


# ---------------------------------------------------------------- sketches


def test_sketch_estimates_of_identical_and_disjoint_documents():
    a, b = shingle_fingerprints(text(1, 300)), shingle_fingerprints(text(2, 300))
    sk = sketch([a, a, b])
    assert sk.values.shape == (3, 200) and sk.values.dtype == np.uint32
    assert sk.estimate(0, 1) == 1.0
    assert sk.estimate(0, 2) <= 0.02  # only 32-bit hash collisions can agree


@pytest.mark.parametrize("overlap", [0, 100, 300, 500, 800, 1000])
def test_sketch_estimate_is_close_to_the_exact_resemblance(overlap):
    rng = np.random.default_rng(overlap)
    pool = np.unique(rng.integers(0, 2**64, 3000, dtype=np.uint64, endpoint=False))[:2000]
    a, b = pool[:1000], pool[1000 - overlap : 2000 - overlap]
    exact = resemblance(a, b)
    sk = sketch([a, b], SketchParams(num_perm=400))
    std = np.sqrt(exact * (1 - exact) / 400)
    assert abs(sk.estimate(0, 1) - exact) <= max(4 * std, 0.01)


def test_sketches_with_different_parameters_cannot_be_compared():
    a = shingle_fingerprints(text(1, 50))
    with pytest.raises(ValueError, match="same SketchParams"):
        sketch([a]).estimate(0, 0, sketch([a], SketchParams(seed=2)))
    with pytest.raises(ValueError, match="num_perm"):
        SketchParams(num_perm=0)


@settings(max_examples=30, deadline=None)
@given(st.lists(st.integers(0, 2**64 - 1), min_size=1, max_size=50), st.integers(0, 2**31))
def test_a_set_against_itself_is_estimated_as_1(values, seed):
    fps = np.array(values, dtype=np.uint64)
    sk = sketch([fps, fps[::-1].copy()], SketchParams(num_perm=32, seed=seed))
    assert sk.estimate(0, 1) == 1.0


@settings(max_examples=30, deadline=None)
@given(st.lists(st.lists(st.integers(0, 2**64 - 1), max_size=20), min_size=1, max_size=6))
def test_batched_sketches_equal_one_document_at_a_time(sets):
    arrays = [np.array(s, dtype=np.uint64) for s in sets]
    together = sketch(arrays, SketchParams(num_perm=16))
    for i, arr in enumerate(arrays):
        alone = sketch([arr], SketchParams(num_perm=16))
        assert together.values[i].tolist() == alone.values[0].tolist()
        assert together.empty[i] == alone.empty[0] == (arr.size == 0)


def test_empty_documents_are_never_similar():
    sk = sketch([np.array([], np.uint64), np.array([], np.uint64)])
    assert sk.estimate(0, 1) == 0.0 and len(similar_pairs(sk, 0.5)) == 0


# ---------------------------------------------------------------- pairs and clusters


def test_band_rows_keep_misses_below_one_in_a_million():
    for m, t in [(200, 0.8), (200, 0.5), (100, 0.9), (64, 0.7)]:
        r = band_rows(m, t)
        assert (1 - t**r) ** (m // r) <= 1e-6
        assert all((1 - t**longer) ** (m // longer) > 1e-6 for longer in range(r + 1, m + 1))


def test_similar_pairs_equal_the_all_pairs_comparison():
    base = [text(s, 120) for s in range(8)]
    docs = base + [changed(base[0], [60]), changed(base[1], [10, 100]), changed(base[2], [5, 40, 80, 110]), base[3]]
    sk = sketch([shingle_fingerprints(d) for d in docs])
    for threshold in (0.5, 0.8, 0.95):
        got = similar_pairs(sk, threshold)
        expected = {
            (i, j) for i in range(len(docs)) for j in range(i + 1, len(docs)) if sk.estimate(i, j) >= threshold
        }
        assert set(zip(got.first.tolist(), got.second.tolist())) == expected
        assert (got.estimate >= threshold).all()


def test_duplicate_clusters_from_a_constructed_collection():
    """A, an exact copy, a one-word edit; B and a one-word edit; C alone; an empty page; and a
    chain X–X'–X'' in which each step changes one word of 100 (resemblance 81/101 = 0.80) while
    X and X'' differ by two words (71/111 = 0.64): with threshold 0.7 the pairs are X–X' and
    X'–X'' only, and the connected component still joins all three."""
    a, b, c, x = text(1, 300), text(2, 300), text(3, 300), text(4, 100)
    x1 = changed(x, [30])
    x2 = changed(x1, [70])
    docs = [a, b, c, a, changed(a, [150]), changed(b, [20]), [], x, x1, x2]
    fps = [shingle_fingerprints(d) for d in docs]
    assert resemblance(fps[7], fps[8]) == pytest.approx(81 / 101)
    assert resemblance(fps[7], fps[9]) == pytest.approx(71 / 111)
    result = duplicate_clusters(sketch(fps, SketchParams(num_perm=1000)), threshold=0.7)
    assert result.labels.tolist() == [0, 1, 2, 0, 0, 1, 6, 7, 7, 7]
    assert [g.tolist() for g in result.clusters()] == [[0, 3, 4], [1, 5], [7, 8, 9]]
    assert (result.n_clusters, result.n_duplicates, result.skipped_empty) == (3, 5, 1)
    pairs = set(zip(result.pairs.first.tolist(), result.pairs.second.tolist()))
    assert (7, 9) not in pairs and {(7, 8), (8, 9), (0, 3)} <= pairs


def test_a_thousand_copies_make_one_cluster_without_a_million_pairs():
    page = shingle_fingerprints(text(9, 50))
    result = duplicate_clusters(sketch([page] * 1000 + [shingle_fingerprints(text(10, 50))]))
    assert result.n_clusters == 1 and result.n_duplicates == 999 and len(result.pairs) == 999


def test_union_find_keeps_the_smallest_member_as_representative():
    uf = UnionFind(6)
    uf.union(4, 5)
    uf.union(5, 2)
    uf.union(1, 0)
    assert uf.labels().tolist() == [0, 0, 2, 3, 2, 2]


# ---------------------------------------------------------------- mirrors


def test_host_and_path_ignore_the_scheme_and_keep_the_query():
    assert host_and_path("https://Docs.Example.org/a/b.html?x=1") == ("docs.example.org", "/a/b.html?x=1")
    assert host_and_path("http://example.org") == ("example.org", "/")


def test_mirrors_are_validated_by_sampled_paths():
    """a.example and b.example serve the same 30 pages (one slightly edited); c.example shares
    three paths with a but different content; d.example copies two pages of a under other
    paths (a sketch-overlap candidate that has no shared path to validate)."""
    pages = {f"/doc/{i}.html": text(100 + i, 80) for i in range(30)}
    urls, docs = [], []
    for path, words in pages.items():
        urls.append(f"http://a.example{path}")
        docs.append(words)
        urls.append(f"https://b.example{path}")
        docs.append(changed(words, [40]) if path == "/doc/0.html" else words)
    for i, path in enumerate(list(pages)[:3]):
        urls.append(f"http://c.example{path}")
        docs.append(text(500 + i, 80))
    urls += ["http://d.example/copy1", "http://d.example/copy2", "http://a.example/doc/1.html"]
    docs += [pages["/doc/5.html"], pages["/doc/6.html"], pages["/doc/1.html"]]
    sk = sketch([shingle_fingerprints(d) for d in docs])
    report = find_mirrors(urls, sk, MirrorParams(sample_paths=20))
    assert report.repeated_urls == 1
    by_hosts = {(p.host_a, p.host_b): p for p in report.pairs}
    ab = by_hosts[("a.example", "b.example")]
    assert ab.is_mirror and ab.shared_paths == 30 and ab.sampled == 20 and ab.matched >= 19
    ac = by_hosts[("a.example", "c.example")]
    assert not ac.is_mirror and ac.shared_paths == 3 and ac.matched == 0
    ad = by_hosts[("a.example", "d.example")]
    assert not ad.is_mirror and ad.shared_paths == 0 and ad.duplicate_pages == 2 and ad.sampled == 0
    assert [(p.host_a, p.host_b) for p in report.mirrors] == [("a.example", "b.example")]


def test_mirror_inputs_must_line_up():
    with pytest.raises(ValueError, match="one sketch per URL"):
        find_mirrors(["http://a/"], sketch([]))
    with pytest.raises(ValueError, match="min_fraction"):
        MirrorParams(min_fraction=0)
