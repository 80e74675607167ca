"""Familial distance, Γ against a brute-force reference, partial Γs, orthogonality, bootstrap."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from simweb.core.gamma import (
    COUSIN,
    GAMMA,
    GAMMA_MEASURES,
    ORTHOGONALITY,
    SAME,
    SIBLING,
    SIBLING_GAMMA,
    UNRELATED,
    bootstrap,
    bootstrap_difference,
    class_codes,
    familial_distance,
    familial_distances,
    gamma_from_counts,
    gammas,
    orthogonality,
    pair_counts,
    pair_counts_bruteforce,
    sibling_counts,
    source_gamma,
)

# The categories of the paper's Figure 2.
CLUBS = ("home", "gardens", "clubs_and_associations")
PLANTS = ("home", "gardens", "plants")
APARTMENT = ("home", "apartment_living", "gardening")
LIBRARIES = ("reference", "libraries", "independent_libraries")


def test_familial_distance_of_figure_2_categories():
    assert familial_distance(CLUBS, CLUBS) == SAME
    assert familial_distance(CLUBS, PLANTS) == SIBLING
    assert familial_distance(CLUBS, APARTMENT) == COUSIN
    assert familial_distance(CLUBS, LIBRARIES) == UNRELATED
    with pytest.raises(ValueError, match="same depth"):
        familial_distance(CLUBS, ("home", "gardens"))


def test_class_codes_give_the_same_distances():
    classes = [CLUBS, PLANTS, APARTMENT, LIBRARIES, CLUBS]
    codes = class_codes(classes)
    got = familial_distances(codes, np.arange(len(classes)))
    want = [[familial_distance(a, b) for b in classes] for a in classes]
    assert got.tolist() == want


def test_hand_computed_example():
    # Source 0 (CLUBS) against: 1 same class, 2 sibling, 3 cousin, 4 unrelated.
    classes = [CLUBS, CLUBS, PLANTS, APARTMENT, LIBRARIES]
    sims = np.zeros((5, 5))
    sims[0] = [1.0, 0.5, 0.6, 0.2, 0.2]
    counts = pair_counts(sims, class_codes(classes))
    c, d = counts.concordant[0], counts.discordant[0]
    t = {pair: i for i, pair in enumerate(counts.types)}
    # same 0.5 vs sibling 0.6: discordant; vs cousin 0.2 and unrelated 0.2: concordant.
    assert (c[t[(0, 1)]], d[t[(0, 1)]]) == (0, 1)
    assert (c[t[(0, 2)]], d[t[(0, 2)]]) == (1, 0)
    assert (c[t[(0, 3)]], d[t[(0, 3)]]) == (1, 0)
    # sibling 0.6 vs cousin 0.2 and unrelated 0.2: concordant; cousin vs unrelated: a tie, ignored.
    assert (c[t[(1, 2)]], c[t[(1, 3)]]) == (1, 1)
    assert (c[t[(2, 3)]], d[t[(2, 3)]]) == (0, 0)
    # The source's own similarity (1.0) is never compared.
    assert c.sum() == 4 and d.sum() == 1


def test_gamma_sums_pairs_over_sources_rather_than_averaging():
    classes = [CLUBS, CLUBS, PLANTS, PLANTS, PLANTS, PLANTS]
    sims = np.zeros((6, 6))
    sims[0] = [0, 0.9, 0.1, 0.1, 0.1, 0.1]  # 1 same × 4 siblings: 4 concordant
    sims[2] = [0.1, 0.1, 0, 0.5, 0.0, 0.0]  # source 2: 3 same × 2 siblings
    counts = pair_counts(sims, class_codes(classes))
    c, d = counts.per_source("sibling_gamma")
    assert c[0] == 4 and d[0] == 0
    # Source 2: same-class docs 3 (0.5), 4 (0.0), 5 (0.0) vs siblings 0, 1 (0.1): 2 concordant, 4 discordant.
    assert c[2] == 2 and d[2] == 4
    # Sources 1, 3, 4, 5 have all-zero rows: every pair is a tie.
    pooled = gammas(counts)["sibling_gamma"]
    assert pooled == pytest.approx((6 - 4) / 10)
    assert pooled != pytest.approx(np.nanmean(source_gamma(counts, "sibling_gamma")))


def test_perfect_and_reversed_rankings():
    classes = [CLUBS, CLUBS, PLANTS, PLANTS, APARTMENT, LIBRARIES, LIBRARIES]
    codes = class_codes(classes)
    dist = familial_distances(codes, np.arange(len(classes))).astype(float)
    perfect = 1.0 / (1.0 + dist)
    for value in gammas(pair_counts(perfect, codes)).values():
        assert value == 1.0
    for value in gammas(pair_counts(-perfect, codes)).values():
        assert value == -1.0


def test_all_ties_leave_gamma_undefined():
    codes = class_codes([CLUBS, CLUBS, PLANTS])
    counts = pair_counts(np.zeros((3, 3)), codes)
    assert np.isnan(gammas(counts)[GAMMA])
    assert np.isnan(gamma_from_counts(0, 0))
    assert orthogonality(counts) == 1.0


def test_orthogonality_counts_same_class_pairs_with_similarity_zero():
    classes = [CLUBS, CLUBS, CLUBS, PLANTS]
    sims = np.array(
        [
            [1.0, 0.0, 0.3, 0.0],
            [0.0, 1.0, 0.0, 0.2],
            [0.3, 0.0, 1.0, 0.0],
            [0.0, 0.2, 0.0, 1.0],
        ]
    )
    counts = pair_counts(sims, class_codes(classes))
    # Same-class pairs {0,1} {0,2} {1,2}: two of three have no common term (similarity 0).
    assert orthogonality(counts) == pytest.approx(2 / 3)
    assert counts.same_class.tolist() == [2, 2, 2, 0]


def test_sparse_input_equals_dense():
    rng = np.random.default_rng(3)
    classes = [tuple(str(x) for x in rng.integers(0, 2, 3)) for _ in range(40)]
    dense = rng.integers(0, 3, (40, 40)) / 2.0
    codes = class_codes(classes)
    a, b = pair_counts(dense, codes), pair_counts(sp.csr_matrix(dense), codes, block_elements=100)
    assert np.array_equal(a.concordant, b.concordant) and np.array_equal(a.discordant, b.discordant)


def test_bad_inputs_are_refused():
    codes = class_codes([CLUBS, PLANTS])
    with pytest.raises(ValueError, match="NaN"):
        pair_counts(np.array([[1.0, np.nan], [0.0, 1.0]]), codes)
    with pytest.raises(ValueError, match=r"\(2, 2\)"):
        pair_counts(np.zeros((3, 3)), codes)
    with pytest.raises(ValueError, match="unknown measure"):
        pair_counts(np.zeros((2, 2)), codes).per_source("kendall")


# --- properties against the O(n²) reference ------------------------------------------------------

@st.composite
def problems(draw):
    n = draw(st.integers(1, 18))
    labels = draw(st.lists(st.tuples(*[st.integers(0, 1)] * 3), min_size=n, max_size=n))
    classes = [tuple(f"L{k}_{v}" for k, v in enumerate(lab)) for lab in labels]
    # A few distinct values so that ties are common, as with real bags (many exact zeros).
    values = draw(st.lists(st.sampled_from([0.0, 0.0, 0.125, 0.25, 0.5, 1.0, 1e-300, 3.5, -2.0]),
                           min_size=n * n, max_size=n * n))
    sims = np.array(values, dtype=np.float64).reshape(n, n)
    block = draw(st.integers(1, 400))
    return classes, sims, block


@settings(max_examples=200, deadline=None)
@given(problems())
def test_fast_counts_equal_brute_force(problem):
    classes, sims, block = problem
    codes = class_codes(classes)
    fast, slow = pair_counts(sims, codes, block_elements=block), pair_counts_bruteforce(sims, codes)
    assert np.array_equal(fast.concordant, slow.concordant)
    assert np.array_equal(fast.discordant, slow.discordant)
    assert np.array_equal(fast.orthogonal, slow.orthogonal)
    assert np.array_equal(fast.same_class, slow.same_class)


@settings(max_examples=100, deadline=None)
@given(problems())
def test_gamma_lies_in_range_and_flips_sign_when_the_ranking_is_reversed(problem):
    classes, sims, _ = problem
    codes = class_codes(classes)
    forward, backward = gammas(pair_counts(sims, codes)), gammas(pair_counts(-sims, codes))
    for measure in GAMMA_MEASURES:
        g = forward[measure]
        assert np.isnan(g) or -1.0 <= g <= 1.0
        if np.isnan(g):
            assert np.isnan(backward[measure])
        else:
            assert backward[measure] == pytest.approx(-g)


@settings(max_examples=100, deadline=None)
@given(problems())
def test_ties_are_ignored(problem):
    """Every ordered pair is concordant, discordant or a tie: C + D is the number of pairs whose
    familial distances differ and whose similarities differ; merging all values into one tie
    removes every judgement."""
    classes, sims, _ = problem
    codes = class_codes(classes)
    counts = pair_counts(sims, codes)
    n = len(classes)
    dist = familial_distances(codes, np.arange(n))
    for s in range(n):
        others = [d for d in range(n) if d != s]
        judged = sum(
            1 for a in others for b in others if dist[s, a] < dist[s, b] and sims[s, a] != sims[s, b]
        )
        assert counts.concordant[s].sum() + counts.discordant[s].sum() == judged
    flat = pair_counts(np.full_like(sims, 0.25), codes)
    assert flat.concordant.sum() == flat.discordant.sum() == 0


def test_random_similarity_gives_gamma_near_zero_and_a_good_one_well_above():
    rng = np.random.default_rng(11)
    classes = [(f"t{i % 3}", f"s{i % 6}", f"c{i % 12}") for i in range(600)]
    codes = class_codes(classes)
    dist = familial_distances(codes, np.arange(600)).astype(float)
    noise = rng.random((600, 600))
    random_counts = pair_counts(noise, codes)
    good_counts = pair_counts(noise + 3.0 - dist, codes)
    groups = codes[:, 2]
    random_est = bootstrap(random_counts, groups, n_resamples=300, seed=1)
    good_est = bootstrap(good_counts, groups, n_resamples=300, seed=1)
    for measure in GAMMA_MEASURES:
        assert random_est[measure].low < 0.0 < random_est[measure].high
        assert abs(random_est[measure].value) < 0.05
        assert good_est[measure].value > 0.9
        assert good_est[measure].low > 0.8


# --- bootstrap ------------------------------------------------------------------------------------

def _example_counts(seed: int):
    rng = np.random.default_rng(seed)
    classes = [(f"t{i % 2}", f"s{i % 4}", f"c{i % 8}") for i in range(120)]
    codes = class_codes(classes)
    dist = familial_distances(codes, np.arange(120)).astype(float)
    return pair_counts(rng.random((120, 120)) - 0.1 * dist, codes), codes[:, 2]


def test_bootstrap_is_seeded_and_brackets_the_value():
    counts, groups = _example_counts(5)
    first = bootstrap(counts, groups, n_resamples=200, seed=7)
    again = bootstrap(counts, groups, n_resamples=200, seed=7)
    assert first == again
    point = gammas(counts)
    for measure in GAMMA_MEASURES:
        est = first[measure]
        assert est.value == pytest.approx(point[measure])
        assert est.low <= est.value <= est.high
        assert est.se > 0
    assert first[ORTHOGONALITY].value == pytest.approx(orthogonality(counts))


def test_paired_difference_of_a_strategy_with_itself_is_exactly_zero():
    counts, groups = _example_counts(5)
    diff = bootstrap_difference(counts, counts, groups, n_resamples=200, seed=3)
    for measure in GAMMA_MEASURES:
        assert diff[measure].value == 0.0
        assert diff[measure].low == diff[measure].high == 0.0


def test_paired_difference_separates_a_better_strategy():
    rng = np.random.default_rng(2)
    classes = [(f"t{i % 2}", f"s{i % 4}", f"c{i % 8}") for i in range(160)]
    codes = class_codes(classes)
    dist = familial_distances(codes, np.arange(160)).astype(float)
    noise = rng.random((160, 160))
    better, worse = pair_counts(noise - 0.3 * dist, codes), pair_counts(noise - 0.1 * dist, codes)
    diff = bootstrap_difference(better, worse, codes[:, 2], n_resamples=300, seed=3)
    assert diff["sibling_gamma"].low > 0.0


def test_similarities_equal_but_for_summation_order_are_ties():
    # 0.1 + 0.2 + 0.3 and 0.3 + 0.2 + 0.1 differ in the last bit: the same bag similarity summed
    # in another order must not turn a tie into a judgement.
    a, b = (0.1 + 0.2) + 0.3, (0.3 + 0.2) + 0.1
    assert a != b
    classes = [CLUBS, CLUBS, PLANTS, APARTMENT, LIBRARIES]
    sims = np.zeros((5, 5))
    sims[0] = [1.0, 0.5, 0.6, a, b]  # cousin vs unrelated: a tie
    counts = pair_counts(sims, class_codes(classes))
    t = {pair: i for i, pair in enumerate(counts.types)}
    assert (counts.concordant[0][t[(2, 3)]], counts.discordant[0][t[(2, 3)]]) == (0, 0)
    brute = pair_counts_bruteforce(sims, class_codes(classes))
    assert np.array_equal(brute.concordant, counts.concordant)


# --- the sibling-Γ's pairs per sibling class (for the cross-validated recommendation) -----------------

@settings(max_examples=60, deadline=None)
@given(st.integers(0, 10_000), st.integers(3, 14))
def test_sibling_counts_split_the_sibling_pairs_by_class(seed, n):
    rng = np.random.default_rng(seed)
    classes = [("A", "x", str(rng.integers(0, 3))) if rng.random() < 0.6 else ("A", "y", str(rng.integers(0, 2)))
               for _ in range(n)]
    codes = class_codes(classes)
    sims = np.round(rng.random((n, n)), 1)  # coarse: ties happen
    split = sibling_counts(sims, codes)
    whole = pair_counts(sims, codes)
    c, d = whole.per_source(SIBLING_GAMMA)
    assert np.array_equal(np.bincount(split.sources, weights=split.concordant, minlength=n), c)
    assert np.array_equal(np.bincount(split.sources, weights=split.discordant, minlength=n), d)
    for s, y, con, dis in zip(split.sources, split.classes, split.concordant, split.discordant):
        assert codes[s, 1] == codes[codes[:, 2] == y][0, 1] and codes[s, 2] != y  # a sibling class
        same = [j for j in range(n) if j != s and codes[j, 2] == codes[s, 2]]
        other = [j for j in range(n) if codes[j, 2] == y]
        assert con == sum(sims[s, a] > sims[s, b] for a in same for b in other)
        assert dis == sum(sims[s, a] < sims[s, b] for a in same for b in other)


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 10_000), st.integers(4, 16))
def test_sibling_counts_of_a_set_of_classes_are_its_own_sibling_gamma(seed, n):
    # The cross-validation scores a half of the classes by the rows whose two classes lie in it:
    # that must be the sibling-Γ of those classes' documents alone, no other document taking part.
    rng = np.random.default_rng(seed)
    classes = [("A", str(rng.integers(0, 2)), str(rng.integers(0, 3))) for _ in range(n)]
    codes = class_codes(classes)
    sims = np.round(rng.random((n, n)), 1)
    split = sibling_counts(sims, codes)
    assume(np.unique(codes[:, 2]).size >= 2)  # two classes to keep
    kept = set(rng.choice(np.unique(codes[:, 2]), size=2, replace=False).tolist())
    sub = np.flatnonzero(np.isin(codes[:, 2], list(kept)))
    rows = np.isin(codes[split.sources, 2], list(kept)) & np.isin(split.classes, list(kept))
    c, d = pair_counts(sims[np.ix_(sub, sub)], codes[sub]).per_source(SIBLING_GAMMA)
    assert split.concordant[rows].sum() == c.sum() and split.discordant[rows].sum() == d.sum()
