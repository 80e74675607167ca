"""The evaluation sample: sibling class pairs, seeded, linked-to URLs only, and its description."""
from __future__ import annotations

import numpy as np
import pytest

from simweb.core.gamma import class_codes, familial_distance, familial_distances
from simweb.core.sampling import describe, eligible_urls, sample_class_pairs


def directory(tops=4, subs=5, leaves=6, pages=5):
    """A synthetic collapsed directory: tops × subs × leaves classes, ``pages`` URLs each."""
    classes = {}
    for t in range(tops):
        for s in range(subs):
            for c in range(leaves):
                for p in range(pages):
                    classes[f"http://t{t}.example/s{s}/c{c}/p{p}"] = (f"T{t}", f"S{s}", f"C{c}")
    return classes


def test_same_seed_same_sample_and_another_seed_another():
    classes = directory()
    linked = set(classes)
    a = sample_class_pairs(classes, linked, n_pairs=20, seed=42)
    b = sample_class_pairs(dict(reversed(list(classes.items()))), set(reversed(list(linked))), n_pairs=20, seed=42)
    c = sample_class_pairs(classes, linked, n_pairs=20, seed=43)
    assert a == b  # independent of dict and set order
    assert a.class_pairs != c.class_pairs


def test_pairs_are_disjoint_sibling_classes():
    classes = directory()
    sample = sample_class_pairs(classes, set(classes), n_pairs=30, seed=1)
    assert len(sample.class_pairs) == 30
    used = [c for pair in sample.class_pairs for c in pair]
    assert len(used) == len(set(used)) == 60
    for a, b in sample.class_pairs:
        assert familial_distance(a, b) == 1
    # 4 × 5 parents with 6 children each: 3 disjoint pairs per parent.
    assert sample.pairs_available == 60
    assert sample.eligible_classes == 120
    assert len(sample) == 60 * 5
    assert list(sample.urls) == sorted(sample.urls, key=lambda u: (classes[u], u))
    assert all(classes[u] == c for u, c in zip(sample.urls, sample.classes))


def test_fewer_pairs_than_asked_takes_all_and_says_so():
    classes = directory(tops=1, subs=2, leaves=3)
    sample = sample_class_pairs(classes, set(classes), n_pairs=300, seed=0)
    assert sample.pairs_requested == 300
    assert sample.pairs_available == len(sample.class_pairs) == 2  # one pair per parent, one left over


def test_only_linked_urls_count_and_classes_need_min_pages():
    classes = directory(tops=1, subs=1, leaves=4, pages=3)
    linked = {u for u in classes if not u.endswith("/p2")}  # 2 linked per class
    linked -= {"http://t0.example/s0/c3/p1"}  # C3 keeps 1 linked URL: not eligible
    sample = sample_class_pairs(classes, linked, n_pairs=5, seed=0, min_pages=2)
    assert sample.eligible_urls == 7
    assert sample.eligible_classes == 3
    assert set(sample.urls) <= linked
    assert all(c != ("T0", "S0", "C3") for c in sample.classes)
    assert len(sample.class_pairs) == 1
    assert eligible_urls(classes, linked)[("T0", "S0", "C3")] == ["http://t0.example/s0/c3/p0"]


def test_max_pages_per_class_caps_every_class_deterministically():
    classes = directory(pages=20)
    a = sample_class_pairs(classes, set(classes), n_pairs=10, seed=5, max_pages_per_class=7)
    b = sample_class_pairs(classes, set(classes), n_pairs=10, seed=5, max_pages_per_class=7)
    assert a == b
    assert len(a) == 20 * 7
    with pytest.raises(ValueError, match="max_pages_per_class"):
        sample_class_pairs(classes, set(classes), max_pages_per_class=1, min_pages=2)
    with pytest.raises(ValueError, match="n_pairs"):
        sample_class_pairs(classes, set(classes), n_pairs=0)


def test_description_counts_documents_per_familial_distance():
    classes = directory(tops=3, subs=3, leaves=4, pages=3)
    sample = sample_class_pairs(classes, set(classes), n_pairs=8, seed=9)
    desc = describe(sample)
    codes = class_codes(list(sample.classes))
    n = len(sample)
    dist = familial_distances(codes, np.arange(n))
    want = [int((dist == k).sum()) - (n if k == 0 else 0) for k in range(4)]
    assert list(desc.documents_per_distance) == want
    assert sum(desc.documents_per_distance) == n * (n - 1)
    assert desc.documents_per_distance[0] == n * 2  # 3 pages per class: 2 same-class others each
    assert desc.documents_per_distance[1] >= n * 3  # every class has its pair sibling (3 pages)
    assert desc.urls == n == 48 and desc.classes == 16 and desc.class_pairs == 8
    assert (desc.pages_per_class_min, desc.pages_per_class_max) == (3, 3)
    assert len(desc.lines()) == 4
    assert "8 pairs of sibling" in desc.lines()[0]

