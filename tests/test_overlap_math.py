"""The capture–recapture arithmetic of `simweb overlap` (simweb.core.overlap) and the search for
each sampled page's near-duplicate in the other crawl (simweb.core.shingles.near_duplicates_in)."""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simweb.core.overlap import (
    contained_fraction,
    estimate_overlap,
    sample_rows,
    size_ratio,
    wilson_interval,
)
from simweb.core.shingles import SketchParams, near_duplicates_in, shingle_fingerprints, sketch

# ---------------------------------------------------------------- the intervals


def test_wilson_interval_matches_published_values():
    # Newcombe (1998), Table I: 0/10 → [0, 0.2775]; 1/10 → [0.0179, 0.4042]; 81/263 → [0.2553, 0.3662].
    assert wilson_interval(0, 10) == pytest.approx((0.0, 0.2775), abs=5e-5)
    assert wilson_interval(1, 10) == pytest.approx((0.0179, 0.4042), abs=5e-5)
    assert wilson_interval(81, 263) == pytest.approx((0.2553, 0.3662), abs=5e-5)
    assert wilson_interval(5, 10) == pytest.approx((0.2366, 0.7634), abs=5e-5)


def test_a_census_is_exact_and_a_larger_share_of_the_population_narrows_the_interval():
    assert wilson_interval(7, 20, population=20) == (0.35, 0.35)
    wide = wilson_interval(50, 100)
    narrower = wilson_interval(50, 100, population=10_000)
    narrowest = wilson_interval(50, 100, population=200)
    assert wide[1] - wide[0] > narrower[1] - narrower[0] > narrowest[1] - narrowest[0] > 0
    # A huge population is the binomial case.
    assert wilson_interval(50, 100, population=10**12) == pytest.approx(wide)


@pytest.mark.parametrize("args, message", [
    ((11, 10), "found <= sampled"), ((-1, 10), "found <= sampled"), ((0, 0), "sampled >= 1"),
    ((3, 10, 1.0), "confidence level in (0, 1)"), ((3, 10, 0.95, 9), "no larger than its population"),
])
def test_bad_counts_raise_and_say_what_was_expected(args, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        wilson_interval(*args)


@given(found=st.integers(0, 300), extra=st.integers(0, 300), spare=st.integers(0, 10_000),
       confidence=st.floats(0.5, 0.999))
def test_the_interval_holds_the_point_estimate_within_zero_and_one(found, extra, spare, confidence):
    sampled = max(1, found + extra)
    found = min(found, sampled)
    f = contained_fraction(found, sampled, sampled + spare, confidence)
    assert 0.0 <= f.low <= f.estimate <= f.high <= 1.0
    assert f.estimate == found / sampled
    assert f.pages()[0] == pytest.approx(f.estimate * f.population)


def test_coverage_of_the_fraction_and_of_the_ratio_under_repeated_sampling():
    """Draw many samples without replacement from two crawls of known overlap: the 95% intervals
    hold the truth about 95% of the time (the ratio's Bonferroni interval at least that often)."""
    rng = np.random.default_rng(5)
    in_b = np.zeros(600, dtype=bool)
    in_b[300:] = True          # x = 0.5
    in_a = np.zeros(700, dtype=bool)
    in_a[:300] = True          # y = 3/7
    truth_ratio = (300 / 700) / 0.5
    x_held = ratio_held = 0
    runs = 2000
    for _ in range(runs):
        sa = rng.choice(600, 80, replace=False)
        sb = rng.choice(700, 80, replace=False)
        e = estimate_overlap(int(in_b[sa].sum()), 80, 600, int(in_a[sb].sum()), 80, 700)
        x_held += e.a_in_b.low <= 0.5 <= e.a_in_b.high
        ratio_held += e.size_ratio.low <= truth_ratio <= e.size_ratio.high
    assert 0.93 <= x_held / runs <= 0.975
    assert ratio_held / runs >= 0.95


def test_the_size_ratio_is_y_over_x():
    e = estimate_overlap(50, 100, 600, 40, 100, 700)
    assert e.size_ratio.estimate == pytest.approx(0.4 / 0.5)
    assert e.size_ratio.low < 0.8 < e.size_ratio.high
    # A census on both sides: the ratio is exact.
    exact = estimate_overlap(300, 600, 600, 300, 700, 700)
    assert (exact.size_ratio.low, exact.size_ratio.estimate, exact.size_ratio.high) == pytest.approx((6 / 7,) * 3)


def test_no_overlap_leaves_the_ratio_undefined_and_one_sided_overlap_unbounded():
    none = estimate_overlap(0, 50, 100, 0, 50, 100)
    assert not none.size_ratio.defined and math.isnan(none.size_ratio.low)
    one_sided = estimate_overlap(0, 50, 100, 5, 50, 100)
    assert one_sided.size_ratio.estimate == math.inf and one_sided.size_ratio.high == math.inf
    assert one_sided.size_ratio.low > 0
    assert size_ratio(one_sided.b_in_a, one_sided.a_in_b).estimate == 0.0


@given(n=st.integers(1, 500), k=st.integers(1, 600))
@settings(max_examples=50)
def test_a_crawl_against_itself_is_contained_in_full_with_ratio_one(n, k):
    rows = sample_rows(n, k, seed=3)
    e = estimate_overlap(rows.size, rows.size, n, rows.size, rows.size, n)
    assert e.a_in_b.estimate == e.b_in_a.estimate == 1.0 == e.size_ratio.estimate
    assert e.size_ratio.low <= 1.0 <= e.size_ratio.high


def test_samples_are_seeded_sorted_and_distinct():
    a = sample_rows(1000, 100, seed=7)
    assert np.array_equal(a, sample_rows(1000, 100, seed=7))
    assert not np.array_equal(a, sample_rows(1000, 100, seed=8))
    assert not np.array_equal(a, sample_rows(1000, 100, seed=7, stream=1))
    assert np.all(np.diff(a) > 0) and a.size == 100 and a.max() < 1000
    assert np.array_equal(sample_rows(5, 100, seed=7), np.arange(5))
    with pytest.raises(ValueError, match="sample size >= 1"):
        sample_rows(10, 0, seed=1)


# ---------------------------------------------------------------- the containment search

VOCABULARY = [f"w{i}" for i in range(3000)]


def _docs(seed: int, n: int, length: int = 80) -> list[list[str]]:
    rng = np.random.default_rng(seed)
    return [[VOCABULARY[i] for i in rng.integers(0, len(VOCABULARY), length)] for _ in range(n)]


def _brute_force(queries, targets, threshold):
    match, best = [], []
    for i in range(len(queries)):
        scores = [targets.estimate(j, i, queries) for j in range(len(targets))]
        top = max(scores, default=0.0)
        ok = top >= threshold and top > 0
        match.append(scores.index(top) if ok else -1)
        best.append(top if ok else 0.0)
    return np.array(match), np.array(best)


@given(seed=st.integers(0, 10_000), changes=st.lists(st.integers(0, 30), min_size=1, max_size=12),
       threshold=st.sampled_from([0.5, 0.8, 0.9]))
@settings(max_examples=40, deadline=None)
def test_the_banded_search_equals_brute_force(seed, changes, threshold):
    """Targets: random pages; queries: copies of some of them with a few words changed, and
    unrelated pages. The fast path finds exactly the brute-force best matches."""
    params = SketchParams(num_perm=64, seed=seed)
    base = _docs(seed, 10)
    queries = []
    for q, n_changed in enumerate(changes):
        words = list(base[q % len(base)])
        for p in range(n_changed):
            words[(p * 7) % len(words)] = f"changed{p}"
        queries.append(words)
    queries += _docs(seed + 1, 3) + [[]]
    targets = sketch([shingle_fingerprints(d, 5) for d in base + [base[0], []]], params)
    qs = sketch([shingle_fingerprints(d, 5) for d in queries], params)
    got = near_duplicates_in(qs, targets, threshold)
    match, best = _brute_force(qs, targets, threshold)
    assert np.array_equal(got.match, match)
    assert np.allclose(got.estimate, best)
    assert not got.found[-1]  # the empty page has no near-duplicate


def test_a_set_against_itself_finds_every_page_with_words():
    params = SketchParams(num_perm=100)
    docs = _docs(1, 30) + [[]]
    s = sketch([shingle_fingerprints(d) for d in docs], params)
    found = near_duplicates_in(s, s, 0.8)
    assert np.array_equal(found.match[:-1], np.arange(30)) and found.match[-1] == -1
    assert np.all(found.estimate[:-1] == 1.0)


def test_sketches_of_different_parameters_are_not_compared():
    docs = _docs(2, 3)
    a = sketch([shingle_fingerprints(d) for d in docs], SketchParams(num_perm=50, seed=1))
    b = sketch([shingle_fingerprints(d) for d in docs], SketchParams(num_perm=50, seed=2))
    with pytest.raises(ValueError, match="same SketchParams"):
        near_duplicates_in(a, b)
