"""The fine signatures (simweb.core.fine; H2): one pass of darts at a fixed rank threshold, C
against numpy bit for bit, their codes, the counts a query reads, and the estimate A / D against
the weighted Jaccard over many seeds."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_dartminhash import pair_with_jaccard, weighted_jaccard

from simweb.core import dartminhash, fine
from simweb.core.minhash import EMPTY, term_hashes

needs_c = pytest.mark.skipif(dartminhash._c_sign is None,
                             reason="simweb.core._dart was not built (no C compiler at install)")


def _encoded(bags: list[dict[str, float]]):
    """(codes, offsets, term hashes, weights) of weighted bags, the layout the samplers take."""
    vocabulary = sorted({t for bag in bags for t in bag})
    code = {t: i for i, t in enumerate(vocabulary)}
    codes = np.array([code[t] for bag in bags for t in bag], np.int64)
    offsets = np.concatenate([[0], np.cumsum([len(bag) for bag in bags])]).astype(np.int64)
    weights = np.array([w for bag in bags for w in bag.values()], np.float64)
    return codes, offsets, term_hashes(vocabulary, "mmh3"), weights


@needs_c
@settings(max_examples=60, deadline=None)
@given(st.lists(st.dictionaries(st.text("abcdefgh", min_size=1, max_size=3), st.floats(0.001, 5.0), max_size=40),
                min_size=1, max_size=12), st.integers(1, 300), st.integers(0, 2**63), st.floats(0.2, 3.0))
def test_one_pass_in_c_equals_numpy(bags, m, seed, threshold):
    codes, offsets, hashes, weights = _encoded(bags)
    c, py = (np.full((len(bags), m), EMPTY, np.uint32) for _ in range(2))
    dartminhash.sign_darts_once(codes, offsets, hashes, weights, m, seed, float(m), threshold, c)
    dartminhash.sign_darts_numpy(codes, offsets, hashes, weights, m, seed, py, once=(float(m), threshold))
    assert np.array_equal(c, py)


def test_a_label_without_a_dart_below_the_threshold_is_empty_and_more_darts_fill_more():
    rng = np.random.default_rng(5)
    bag = {f"t{i}": float(w) for i, w in enumerate(rng.random(200) + 0.1)}
    total = sum(bag.values())
    bags = [{t: w / total for t, w in bag.items()}, {}]
    codes, offsets, hashes, weights = _encoded(bags)
    filled = []
    for darts in (0.5, 1.0, 4.0):
        out = np.full((2, 512), EMPTY, np.uint32)
        dartminhash.sign_darts_once(codes, offsets, hashes, weights, 512, 3, darts * 512, 1.0, out)
        assert (out[1] == EMPTY).all()  # the empty bag has no dart
        filled.append(float((out[0] != EMPTY).mean()))
    # λ·Σx·T = darts × 512 darts over 512 labels: a label is filled with probability 1 − e^−darts.
    assert filled == pytest.approx([1 - np.exp(-0.5), 1 - np.exp(-1.0), 1 - np.exp(-4.0)], abs=0.06)


def test_codes_fold_identities_into_1_to_255_and_keep_0_for_no_dart():
    values = np.array([EMPTY, 0, 254, 255, 2**32 - 2], np.uint32)
    assert fine.codes(values).tolist() == [0, 1, 255, 1, (2**32 - 2) % 255 + 1]


@settings(max_examples=100, deadline=None)
@given(st.integers(1, 30), st.integers(1, 400), st.integers(0, 2**32 - 1))
def test_the_counts_a_query_reads_in_c_equal_numpys(n, m, seed):
    rng = np.random.default_rng(seed)
    h2 = rng.integers(0, 4, (n, m)).astype(np.uint8)  # few codes: agreements and zeros both frequent
    row = h2[rng.integers(n)].copy()
    docs = rng.integers(0, n, rng.integers(0, 3 * n)).astype(np.int64)
    same, defined = fine.agreements(h2, row, docs)
    rows = h2[docs]
    assert same.tolist() == ((rows == row) & (row != 0)).sum(axis=1).tolist()
    assert defined.tolist() == ((rows != 0) | (row != 0)).sum(axis=1).tolist()
    if fine._c_fine_agreements is not None:
        with pytest.raises(ValueError, match="not a row of H2"):
            fine.agreements(h2, row, np.array([n], np.int64))


@pytest.mark.parametrize("m", [1, 127, 128, 256, 389])
def test_rows_that_agree_everywhere_count_every_code(m):
    # The C sums runs of codes in single bytes: a run that agrees throughout must not wrap.
    h2 = np.full((3, m), 7, np.uint8)
    h2[2, ::2] = 0
    same, defined = fine.agreements(h2, h2[0].copy(), np.array([1, 2, 0], np.int64))
    assert same.tolist() == [m, m // 2, m]
    assert defined.tolist() == [m, m, m]


def test_the_fine_estimate_is_the_weighted_jaccard_from_the_labels_either_bag_has():
    # Pairs of known weighted Jaccard, normalised to a total weight of 1 as the bags stage leaves
    # them: over 200 seeds, A / D (pooled) lies within 4.5 standard errors of J, plus at most the
    # 1/255 a pair of different darts shares a code; D is about (1 − e^−Σmax)·M.
    rng = np.random.default_rng(2002)
    pairs, exact = [], []
    for j in (0.1, 0.3, 0.6, 0.9):
        for n, skew in ((8, 0.0), (60, 1.0)):
            a, b = pair_with_jaccard(rng, j, n, skew)
            a = {t: w / sum(a.values()) for t, w in a.items()}
            b = {t: w / sum(b.values()) for t, w in b.items()}
            pairs.append((a, b))
            exact.append(weighted_jaccard(a, b))
    codes, offsets, hashes, weights = _encoded([bag for pair in pairs for bag in pair])
    same = np.zeros(len(pairs))
    defined = np.zeros(len(pairs))
    for seed in range(200):
        rows = fine.sign(codes, offsets, hashes, weights, seed)
        assert rows.shape == (2 * len(pairs), fine.M)
        for k in range(len(pairs)):
            a, d = fine.agreements(rows, rows[2 * k], np.array([2 * k + 1]))
            same[k] += a[0]
            defined[k] += d[0]
    exact = np.array(exact)
    estimate = same / defined
    se = np.sqrt(exact * (1 - exact) / defined)
    assert (estimate - exact > -4.5 * se).all() and (estimate - exact < 4.5 * se + (1 - exact) / 255).all(), \
        np.round((estimate - exact) / se, 2)
    sigma_max = 2 / (1 + exact)  # Σmax of two bags of weight 1 at Jaccard J: Σmin + Σmax = 2
    assert defined / (200 * fine.M) == pytest.approx(1 - np.exp(-fine.DARTS * sigma_max), abs=0.02)


def test_an_empty_bag_has_the_row_of_no_dart():
    codes, offsets, hashes, weights = _encoded([{}, {"a": 1.0}])
    rows = fine.sign(codes, offsets, hashes, weights, 1)
    assert not rows[0].any() and rows[1].any()
