"""DartMinHash signatures (simweb.core.dartminhash, simcore/_dart.c): exact values against a
dart-by-dart reference of the module docstring, C against numpy bit for bit, the signature's
independence of the rank threshold, and the estimator's statistics against weighted Jaccard
and against ICWS."""
from __future__ import annotations

import math
from decimal import Decimal, localcontext

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simweb.core import dartminhash
from simweb.core.minhash import EMPTY, MinHashParams, SignatureMismatch, encode_bags, estimate, sign, sign_bags, term_hashes

needs_c = pytest.mark.skipif(dartminhash._c_sign is None,
                             reason="simweb.core._dart was not built (no C compiler at install)")
MASK = (1 << 64) - 1
PHI = 0x9E3779B97F4A7C15


def fmix(x: int) -> int:
    x ^= x >> 30
    x = (x * 0xBF58476D1CE4E5B9) & MASK
    x ^= x >> 27
    x = (x * 0x94D049BB133111EB) & MASK
    return x ^ (x >> 31)


def out(state: int, i: int) -> int:
    return fmix((state + (i + 1) * PHI) & MASK)


def top_band(v: float) -> int:
    b = 0
    while 2.0 ** (b + 1) - 1.0 < v:
        b += 1
    return b


def dart_reference(bag: dict[int, float], m: int, seed: int) -> list[int]:
    """The module docstring, dart by dart, in Python floats: T = 1 / total weight, doubled until
    every label has a dart (no sliver rule, no skipped rows: T must not matter)."""
    lam = dartminhash.darts_per_unit(m)
    key = fmix((seed + PHI) & MASK)
    thresholds = [int(v) for v in dartminhash.POISSON_THRESHOLDS]
    t = 1.0 / sum(bag.values())
    while True:
        best: dict[int, tuple[float, int]] = {}
        for h, x in bag.items():
            s = x * lam
            for nu in range(top_band(s) + 1):
                for rho in range(top_band(t) + 1):
                    s0, r0 = 2.0**nu - 1.0, 2.0**rho - 1.0
                    width, height = 2.0 ** (nu - rho), 2.0 ** (rho - nu)
                    for col in range(2**rho):
                        s_col = s0 + col * width
                        if not s_col < s:
                            break
                        for row in range(2**nu):
                            r_row = r0 + row * height
                            if not r_row < t:
                                break
                            cell = out(h ^ key, (((col << nu) + row) << 12) + (nu << 6) + rho)
                            for q in range(sum(cell >= v for v in thresholds)):
                                z = out(cell, 2 * q + 1)
                                sd = s_col + (z >> 32) * math.ldexp(width, -32)
                                rd = r_row + (z & 0xFFFFFFFF) * math.ldexp(height, -32)
                                if sd < s and rd < t:
                                    y = out(cell, 2 * q + 2)
                                    j = ((y >> 32) * m) >> 32
                                    best[j] = min(best.get(j, (math.inf, MASK)), (rd, y))
        if len(best) == m:
            return [best[j][1] & 0xFFFFFFFF for j in range(m)]
        t *= 2.0


def weighted_jaccard(a: dict, b: dict) -> float:
    keys = set(a) | set(b)
    return sum(min(a.get(k, 0), b.get(k, 0)) for k in keys) / sum(max(a.get(k, 0), b.get(k, 0)) for k in keys)


def identity(bags: list[dict[int, float]]) -> list[dict[str, float]]:
    return [{str(k): w for k, w in b.items()} for b in bags]


def encoded(bags):
    codes, offsets, terms = encode_bags(bags)
    weights = np.fromiter((w for b in bags for w in b.values()), np.float64, codes.size)
    return codes, offsets, term_hashes(terms), weights


def sign_numpy(bags, m: int, seed: int) -> np.ndarray:
    codes, offsets, hashes, weights = encoded(bags)
    values = np.full((len(bags), m), EMPTY, dtype=np.uint32)
    dartminhash.sign_darts_numpy(codes, offsets, hashes, weights, m, seed, values)
    return values


def sign_c(bags, m: int, seed: int, theta: float = 1.0) -> np.ndarray:
    codes, offsets, hashes, weights = encoded(bags)
    values = np.full((len(bags), m), EMPTY, dtype=np.uint32)
    failed = dartminhash._c_sign(codes, offsets, hashes, weights, m, int(dartminhash.seed_key(seed)),
                                 dartminhash.darts_per_unit(m), theta, dartminhash.POISSON_THRESHOLDS, values)
    assert failed == -1
    return values


# ------------------------------------------------------------------------------ exact values


def test_the_poisson_table_is_the_poisson_1_distribution_function():
    table = [int(v) for v in dartminhash.POISSON_THRESHOLDS]
    with localcontext() as ctx:
        ctx.prec = 50
        e = Decimal(1).exp()
        for p in range(len(table) - 1):
            cdf = sum(1 / (e * math.factorial(i)) for i in range(p + 1))
            assert abs(table[p] - int(cdf * 2**64)) <= 1
    assert table == sorted(table) and 2**64 - table[-1] < 2 and len(table) <= 32


def test_darts_per_unit_is_near_m_ln_m_plus_2m():
    assert dartminhash.darts_per_unit(80) == 511.0
    for m in (1, 2, 7, 80, 1000, 4096):
        assert abs(dartminhash.darts_per_unit(m) - m * (math.log(m) + 2)) <= 0.5


@pytest.mark.parametrize("m", [1, 5, 16])
def test_identity_hash_gives_the_dart_by_dart_reference_values(m):
    rng = np.random.default_rng(m)
    bags = [{3: 0.5, 17: 0.25, 99: 0.25}, {3: 0.1, 1000: 2.0}, {42: 1.0}, {7: 1e-3, 8: 40.0},
            {int(k): float(w) for k, w in zip(rng.integers(0, 2**63, 30), rng.lognormal(0, 2, 30))}]
    params = MinHashParams(m=m, seed=5, algorithm="dart", hash_family="identity")
    for row, bag in zip(sign_bags(identity(bags), params).values, bags):
        assert row.tolist() == dart_reference(bag, m, 5)


def test_a_single_term_bag_outputs_its_own_darts_and_another_term_none_of_them():
    params = MinHashParams(m=8, algorithm="dart", hash_family="identity")
    sig = sign_bags([{"5": 1.0}, {"5": 1.0}, {"6": 1.0}], params).values
    assert (sig[0] == sig[1]).all() and not (sig[0] == sig[2]).any()


@needs_c
@pytest.mark.parametrize("m", [1, 7, 80, 300])
def test_c_and_numpy_give_the_same_bits_on_bags_of_every_scale(m):
    """Sizes 1..300, weights spread over twelve orders of magnitude, totals from 1e-6 to 1e6 (many
    bags need a second pass at m = 300), and a bag with > 256 cells (the C buffer flushes)."""
    rng = np.random.default_rng(m)
    bags = []
    for i in range(400):
        n = int(rng.integers(1, 300))
        w = rng.lognormal(0.0, float(rng.choice([0.0, 1.0, 3.0])), n)
        w *= 10.0 ** rng.uniform(-6, 6) / w.sum()
        bags.append({f"t{x}": float(v) for x, v in zip(rng.choice(3000, n, replace=False), w)})
    assert (sign_c(bags, m, 11) == sign_numpy(bags, m, 11)).all()


@needs_c
@settings(max_examples=60, deadline=None)
@given(st.lists(st.dictionaries(st.integers(0, 2**64 - 1), st.floats(1e-9, 1e6), min_size=0, max_size=40),
                min_size=1, max_size=6),
       st.integers(1, 200), st.integers(0, 2**64 - 1))
def test_c_equals_numpy_on_random_bags(bags, m, seed):
    params = MinHashParams(m=m, seed=seed, algorithm="dart", hash_family="identity")
    codes, offsets, terms = encode_bags(identity(bags))
    hashes = term_hashes(terms, "identity")
    weights = np.fromiter((w for b in bags for w in b.values()), np.float64, codes.size)
    fast = sign(codes, offsets, hashes, weights, params).values
    ref = np.full_like(fast, EMPTY)
    dartminhash.sign_darts_numpy(codes, offsets, hashes, weights, m, seed, ref)
    assert (fast == ref).all()
    assert ((fast == EMPTY).all(axis=1) == (np.diff(offsets) == 0)).all()


@needs_c
def test_the_signature_does_not_depend_on_the_rank_threshold():
    """The module's claim: a label with a dart below T has its lowest dart of the whole region,
    so first thresholds from far too low (many passes) to far too high give the same bits."""
    rng = np.random.default_rng(3)
    bags = [{f"t{x}": float(v) for x, v in zip(rng.choice(900, n, replace=False), rng.lognormal(0, 1.5, n))}
            for n in rng.integers(1, 120, 60)]
    first = sign_c(bags, 40, 2)
    for theta in (1e-4, 0.3, 0.999, 1.7, 40.0):
        assert (sign_c(bags, 40, 2, theta) == first).all()


def test_numpy_blocks_do_not_change_signatures(monkeypatch):
    rng = np.random.default_rng(8)
    bags = [{f"t{x}": float(rng.lognormal()) for x in rng.choice(500, int(rng.integers(0, 40)), replace=False)}
            for _ in range(50)]
    whole = sign_numpy(bags, 24, 4)
    monkeypatch.setattr(dartminhash, "_BLOCK_CELLS", 100)
    assert (sign_numpy(bags, 24, 4) == whole).all()


# ------------------------------------------------------------------------- properties and errors


@settings(max_examples=25, deadline=None)
@given(st.dictionaries(st.text(min_size=1, max_size=6), st.floats(1e-6, 1e3), min_size=1, max_size=30))
def test_a_bag_against_itself_estimates_one_alone_or_in_a_batch(bag):
    params = MinHashParams(m=32, algorithm="dart")
    alone = sign_bags([bag], params)
    in_batch = sign_bags([{"zz-other": 1.0}, bag], params).values[1]
    assert (alone.values[0] == in_batch).all()
    assert estimate(alone, sign_bags([dict(reversed(list(bag.items())))], params)) == 1.0


def test_zero_weights_are_absent_and_an_empty_bag_gets_the_empty_row():
    params = MinHashParams(m=16, algorithm="dart")
    sig = sign_bags([{"a": 1.0, "b": 0.0}, {"a": 1.0}, {"b": 0.0}, {}], params).values
    assert (sig[0] == sig[1]).all()
    assert (sig[2] == EMPTY).all() and (sig[3] == EMPTY).all()


def test_signatures_of_other_algorithms_or_parameters_refuse_to_compare():
    bag = [{"java": 1.0, "applet": 0.5}]
    dart = sign_bags(bag, MinHashParams(algorithm="dart"))
    for other in (MinHashParams(algorithm="icws"), MinHashParams(algorithm="dart", seed=2),
                  MinHashParams(algorithm="dart", m=64)):
        with pytest.raises(SignatureMismatch, match="same m, seed, algorithm"):
            dart.similarity(sign_bags(bag, other))


@pytest.mark.parametrize("total", [1e-17, 1e14])
def test_a_bag_beyond_the_grid_raises_saying_how_to_fix_it(total):
    bags = [{"a": 0.5, "b": 0.5}, {"a": total / 2, "b": total / 2}]
    with pytest.raises(ValueError, match=r"bag 1 has total weight .*normalises them to 1\.0.*icws"):
        sign_bags(bags, MinHashParams(algorithm="dart"))
    codes, offsets, hashes, weights = encoded(bags)
    with pytest.raises(ValueError, match="bag 1 has total weight"):
        dartminhash.sign_darts_numpy(codes, offsets, hashes, weights, 80, 1, np.zeros((2, 80), np.uint32))


@needs_c
def test_the_c_extension_checks_its_inputs():
    codes, offsets, hashes, weights = encoded([{"a": 1.0}])
    key, lam, table = 1, 511.0, dartminhash.POISSON_THRESHOLDS
    with pytest.raises(ValueError, match="n x m uint32 output"):
        dartminhash._c_sign(codes, offsets, hashes, weights, 80, key, lam, 1.0, table, np.zeros((1, 79), np.uint32))
    with pytest.raises(ValueError, match="codes in 0..0"):
        dartminhash._c_sign(codes + 1, offsets, hashes, weights, 80, key, lam, 1.0, table, np.zeros((1, 80), np.uint32))
    with pytest.raises(ValueError, match="finite weights > 0"):
        dartminhash._c_sign(codes, offsets, hashes, weights * 0, 80, key, lam, 1.0, table, np.zeros((1, 80), np.uint32))
    with pytest.raises(ValueError, match="offsets from 0 to 1"):
        dartminhash._c_sign(codes, offsets * 2, hashes, weights, 80, key, lam, 1.0, table, np.zeros((1, 80), np.uint32))


# ------------------------------------------------------------------------------ statistics


def pair_with_jaccard(rng, j: float, n: int, skew: float) -> tuple[dict, dict]:
    """Two bags of weighted Jaccard exactly ``j`` (to rounding): ``b`` drops terms of ``a`` holding
    up to (1 − j)/4 of its weight, reweights the others by factors in [0.95, 1.05], and holds new
    terms whose total weight brings Σ min / Σ max down to j. ``skew``: the σ of the log-normal
    weights (0: all equal)."""
    tag = int(rng.integers(2**62))
    a = {f"a{tag}-{i}": float(w) for i, w in enumerate(rng.lognormal(0.0, skew, n))}
    budget = (1 - j) / 4 * sum(a.values())
    b = {}
    for t in rng.permutation(list(a)):
        if a[t] <= budget and len(b) < n - 1:
            budget -= a[t]
        else:
            b[t] = a[t] * float(rng.uniform(0.95, 1.05))
    lo = sum(min(a[t], b.get(t, 0.0)) for t in a)
    hi = sum(max(a[t], b.get(t, 0.0)) for t in a)
    extra = lo / j - hi
    assert extra > 0, "the shared part must be more similar than j"
    new = rng.lognormal(0.0, skew, max(1, n // 3))
    b.update({f"b{tag}-{i}": float(w) for i, w in enumerate(new * (extra / new.sum()))})
    return a, b


JACCARDS = (0.1, 0.3, 0.5, 0.7, 0.9)
SHAPES = ((5, 0.0), (40, 1.0), (150, 2.5))  # (terms, weight skew)


def estimates_over_seeds(pairs, algorithm: str, m: int, seeds: range) -> np.ndarray:
    """pairs × seeds: the fraction of the m positions where the two bags of a pair agree."""
    flat = [bag for pair in pairs for bag in pair]
    out = np.empty((len(pairs), len(seeds)))
    for k, seed in enumerate(seeds):
        sig = sign_bags(flat, MinHashParams(m=m, seed=seed, algorithm=algorithm)).values
        out[:, k] = (sig[0::2] == sig[1::2]).mean(axis=1)
    return out


def check_collision_rate_is_weighted_jaccard(est: np.ndarray, j: np.ndarray, m: int) -> None:
    """Per pair, the mean over seeds within 4.5 standard errors of J; over all pairs, the sum of
    squared standardised errors within χ²'s 0.999 quantile, and the spread over seeds J(1 − J)/m."""
    from scipy import stats

    seeds = est.shape[1]
    se = np.sqrt(j * (1 - j) / (m * seeds))
    z = (est.mean(axis=1) - j) / se
    assert np.abs(z).max() < 4.5, f"collision rate off weighted Jaccard: z = {np.round(z, 2)}"
    assert (z**2).sum() < stats.chi2.ppf(0.999, len(j)), f"χ² {(z**2).sum():.1f} over {len(j)} pairs"
    ratio = ((est - j[:, None]) ** 2).sum() / (seeds * (j * (1 - j) / m)).sum()
    assert 0.9 < ratio < 1.1, f"variance {ratio:.3f} × J(1−J)/m: positions are not independent samples"


@pytest.fixture(scope="module")
def known_pairs():
    rng = np.random.default_rng(2002)
    pairs = [pair_with_jaccard(rng, j, n, skew) for j in JACCARDS for n, skew in SHAPES]
    exact = np.array([weighted_jaccard(a, b) for a, b in pairs])
    assert np.allclose(exact, np.repeat(JACCARDS, len(SHAPES)), atol=1e-12)
    return pairs, exact


@pytest.mark.parametrize("m", [16, 80])
def test_the_collision_rate_is_weighted_jaccard_with_the_variance_of_independent_positions(known_pairs, m):
    pairs, exact = known_pairs
    check_collision_rate_is_weighted_jaccard(estimates_over_seeds(pairs, "dart", m, range(300)), exact, m)


def test_the_check_rejects_a_sampler_of_another_measure(known_pairs):
    """The same check on OPH (set Jaccard: weights ignored) fails: the statistics can fail."""
    pairs, exact = known_pairs
    with pytest.raises(AssertionError, match="collision rate off weighted Jaccard"):
        check_collision_rate_is_weighted_jaccard(estimates_over_seeds(pairs, "oph", 80, range(100)), exact, 80)


def test_dart_and_icws_estimates_have_the_same_distribution(known_pairs):
    """Two-sample tests on the same pairs (fixed seeds: deterministic): pooled standardised errors
    by Kolmogorov–Smirnov, and the per-pair means by a Welch t-test, Bonferroni over the pairs."""
    from scipy import stats

    pairs, exact = known_pairs
    m, seeds = 80, range(200)
    dart = estimates_over_seeds(pairs, "dart", m, seeds)
    icws = estimates_over_seeds(pairs, "icws", m, seeds)
    sd = np.sqrt(exact * (1 - exact) / m)[:, None]
    ks = stats.ks_2samp(((dart - exact[:, None]) / sd).ravel(), ((icws - exact[:, None]) / sd).ravel())
    assert ks.pvalue > 0.001, ks
    welch = stats.ttest_ind(dart, icws, axis=1, equal_var=False)
    assert welch.pvalue.min() > 0.001 / len(pairs), welch.pvalue
    # Both spread as independent positions do.
    for est in (dart, icws):
        ratio = est.var(axis=1, ddof=1).sum() / (exact * (1 - exact) / m).sum()
        assert 0.85 < ratio < 1.15, ratio


def test_scaling_a_bag_is_a_different_bag_and_scaling_both_keeps_the_estimate(known_pairs):
    """Weighted Jaccard is not scale-invariant and neither is the sampler: x against 2x is J = 1/2,
    and 2x against 2y is J(x, y); the signatures of 2x are not those of x."""
    pairs, exact = known_pairs
    m, seeds = 80, range(150)
    doubled = [({t: 2 * w for t, w in a.items()}, {t: 2 * w for t, w in b.items()}) for a, b in pairs]
    halves = [(a, {t: 2 * w for t, w in a.items()}) for a, _ in pairs]
    check_collision_rate_is_weighted_jaccard(estimates_over_seeds(doubled, "dart", m, seeds), exact, m)
    check_collision_rate_is_weighted_jaccard(estimates_over_seeds(halves, "dart", m, seeds),
                                             np.full(len(pairs), 0.5), m)
