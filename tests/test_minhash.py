"""Min-hash signatures (paper Section 6.2): exact values, the estimator's statistics, parameter checks."""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simweb.core.minhash import (
    EMPTY,
    MinHashParams,
    SignatureMismatch,
    Signatures,
    encode_bags,
    estimate,
    sign,
    sign_bags,
    term_hashes,
)

# ------------------------------------------------------------- a scalar reference of the docstring

MASK = (1 << 64) - 1
GOLDEN = 0x9E3779B97F4A7C15


def fmix(x: int) -> int:
    x ^= x >> 30
    x = (x * 0xBF58476D1CE4E5B9) & MASK
    x ^= x >> 27
    x = (x * 0x94D049BB133111EB) & MASK
    return x ^ (x >> 31)


def key(seed: int) -> int:
    return fmix((seed + GOLDEN) & MASK)


def uniform(h: int, seed: int, counter: int) -> float:
    z = fmix(((h ^ key(seed)) + (counter + 1) * GOLDEN) & MASK)
    return ((z >> 11) + 0.5) / 2**53


def icws_reference(bag: dict[int, float], m: int, seed: int) -> list[int]:
    """ICWS (Ioffe 2010) term by term, in float64, with the documented (k, t) → uint32 hash."""
    out = []
    for j in range(m):
        best = None
        for k in sorted(bag):
            w = bag[k]
            u = [uniform(k, seed, j * 8 + d) for d in range(5)]
            r = -math.log(u[0] * u[1])
            c = -math.log(u[2] * u[3])
            beta = u[4]
            t = math.floor(math.log(w) / r + beta)
            ln_a = math.log(c) - r * (t - beta) - r
            if best is None or ln_a < best[0]:
                best = (ln_a, k, t)
        _, k, t = best
        inner = fmix(((t & MASK) * GOLDEN + key(seed)) & MASK)
        out.append(fmix(k ^ inner) >> 32)
    return out


def weighted_jaccard(a: dict, b: dict) -> float:
    keys = set(a) | set(b)
    return sum(min(a.get(k, 0), b.get(k, 0)) for k in keys) / sum(max(a.get(k, 0), b.get(k, 0)) for k in keys)


# ------------------------------------------------------------------------------ exact values


def test_identity_hash_gives_the_reference_icws_values():
    params = MinHashParams(m=16, seed=5, hash_family="identity")
    bags = [{3: 0.5, 17: 0.25, 99: 0.25}, {3: 0.1, 1000: 2.0}, {42: 1.0}]
    sig = sign_bags([{str(k): w for k, w in b.items()} for b in bags], params)
    for row, bag in zip(sig.values, bags):
        # float32 rounding may pick another winner only on near-ties; none occur in these bags.
        assert row.tolist() == icws_reference(bag, 16, 5)


def test_identity_hash_family_takes_the_integer_itself():
    assert term_hashes(["0", "7", str(2**64 - 1)], "identity").tolist() == [0, 7, 2**64 - 1]
    with pytest.raises(ValueError, match="decimal integers"):
        term_hashes(["java"], "identity")


def test_a_single_term_bag_outputs_that_term_everywhere():
    params = MinHashParams(m=8, hash_family="identity")
    a = sign_bags([{"5": 1.0}], params).values[0]
    b = sign_bags([{"5": 1.0}, {"6": 1.0}], params).values
    assert (a == b[0]).all() and not (a == b[1]).any()


def test_a_bag_against_itself_estimates_exactly_one():
    sig = sign_bags([{"java": 0.3, "applet": 0.7}, {"java": 0.3, "applet": 0.7}])
    assert estimate(sig, sig, 0, 1) == 1.0


@settings(max_examples=25, deadline=None)
@given(st.dictionaries(st.text(min_size=1, max_size=6), st.floats(1e-6, 1e3), min_size=1, max_size=30),
       st.sampled_from(["icws", "oph", "dart"]))
def test_signing_is_deterministic_and_order_free_across_batches(bag, algorithm):
    params = MinHashParams(m=32, algorithm=algorithm)
    alone = sign_bags([bag], params).values[0]
    other = {"zz-other": 1.0}
    in_batch = sign_bags([other, bag], params).values[1]
    assert (alone == in_batch).all()
    assert estimate(sign_bags([bag], params), sign_bags([bag], params)) == 1.0


@pytest.mark.parametrize("algorithm", ["icws", "dart"])
def test_zero_weights_mean_absent_and_empty_bags_get_the_empty_row(algorithm):
    params = MinHashParams(m=16, algorithm=algorithm)
    sig = sign_bags([{"a": 1.0, "b": 0.0}, {"a": 1.0}, {"b": 0.0}], params).values
    assert (sig[0] == sig[1]).all()
    assert (sig[2] == EMPTY).all()


def test_bad_weights_and_layouts_raise_with_a_clear_message():
    h = term_hashes(["a", "b"])
    with pytest.raises(ValueError, match="finite weights"):
        sign(np.array([0, 1]), np.array([0, 2]), h, np.array([1.0, -1.0]))
    with pytest.raises(ValueError, match="finite weights"):
        sign(np.array([0]), np.array([0, 1]), h, np.array([np.nan]))
    with pytest.raises(ValueError, match="offsets"):
        sign(np.array([0, 1]), np.array([0, 3]), h, None)
    with pytest.raises(ValueError, match="codes"):
        sign(np.array([0, 5]), np.array([0, 2]), h, None)


def test_parameters_are_checked_and_mismatched_signatures_refuse_to_compare():
    with pytest.raises(ValueError, match="algorithm"):
        MinHashParams(algorithm="p-minhash")
    with pytest.raises(ValueError, match="m:"):
        MinHashParams(m=0)
    bag = [{"java": 1.0}]
    a = sign_bags(bag, MinHashParams(seed=1))
    for other in (MinHashParams(seed=2), MinHashParams(m=64), MinHashParams(algorithm="oph")):
        with pytest.raises(SignatureMismatch, match="same m, seed"):
            a.similarity(sign_bags(bag, other))
    with pytest.raises(ValueError, match="uint32"):
        Signatures(np.zeros((1, 80), np.int64), MinHashParams())


def test_params_round_trip_through_a_dict():
    p = MinHashParams(m=40, seed=9, algorithm="oph", hash_family="identity")
    assert MinHashParams.from_dict(p.to_dict()) == p


# ------------------------------------------------------------------------------ statistics


def _pairs(rng, n_pairs: int, weighted: bool):
    pairs = []
    for _ in range(n_pairs):
        n = int(rng.integers(10, 120))
        terms = [f"t{x}" for x in rng.choice(20_000, n, replace=False)]
        a = {t: float(rng.lognormal()) if weighted else 1.0 for t in terms}
        b = {}
        keep = rng.random()
        spread = rng.uniform(0.0, 0.8)
        for t, w in a.items():
            if rng.random() < keep:
                b[t] = w * float(np.exp(rng.normal(0.0, spread))) if weighted else 1.0
        for x in rng.choice(20_000, int(rng.integers(0, n) * rng.random()), replace=False):
            b.setdefault(f"u{x}", float(rng.lognormal()) if weighted else 1.0)
        if not b:
            b = {"only": 1.0}
        pairs.append((a, b))
    return pairs


@pytest.mark.parametrize("algorithm", ["icws", "oph", "dart"])
def test_estimates_are_unbiased_with_the_spread_m_allows(algorithm):
    """Mean error ~0 and RMSE ≈ √(J(1−J)/m) over many pairs of known weighted Jaccard (m = 80)."""
    rng = np.random.default_rng(2024)
    pairs = _pairs(rng, 400, weighted=algorithm != "oph")
    params = MinHashParams(m=80, algorithm=algorithm)
    flat = [bag for pair in pairs for bag in pair]
    sig = sign_bags(flat, params).values
    est = (sig[0::2] == sig[1::2]).mean(axis=1)
    exact = np.array([weighted_jaccard(a, b) for a, b in pairs])
    err = est - exact
    expected_rmse = math.sqrt(np.mean(exact * (1 - exact) / 80))
    # Mean error within 4 standard errors of 0.
    assert abs(err.mean()) < 4 * expected_rmse / math.sqrt(len(pairs)), err.mean()
    rmse = math.sqrt(np.mean(err**2))
    # OPH positions are slightly dependent (densification): allow more slack above.
    upper = 1.5 if algorithm == "oph" else 1.25
    assert 0.75 * expected_rmse < rmse < upper * expected_rmse, (rmse, expected_rmse)
    assert exact.min() < 0.2 and exact.max() > 0.8  # the pairs span the range


def test_icws_collision_rate_per_position_matches_weighted_jaccard():
    """One pair, many seeds: each position collides with probability Σmin/Σmax."""
    a = {"x": 3.0, "y": 1.0, "z": 0.5}
    b = {"x": 1.0, "y": 2.0, "w": 0.5}
    j = weighted_jaccard(a, b)  # (1 + 1) / (3 + 2 + 0.5 + 0.5) = 1/3
    hits = []
    for seed in range(60):
        s = sign_bags([a, b], MinHashParams(m=80, seed=seed)).values
        hits.append((s[0] == s[1]).mean())
    mean = float(np.mean(hits))
    assert abs(mean - j) < 4 * math.sqrt(j * (1 - j) / (80 * 60))


# ------------------------------------------------------------------------- fast paths vs references

M1, M2 = 0xBF58476D1CE4E5B9, 0x94D049BB133111EB


def unfmix(z: int) -> int:
    """The inverse of fmix: builds a term hash whose OPH value is chosen by the test."""
    def unshift(x: int, s: int) -> int:
        y = x
        for _ in range(64 // s + 1):
            y = x ^ (y >> s)
        return y

    z = unshift(z, 31)
    z = (z * pow(M2, -1, 2**64)) & MASK
    z = unshift(z, 27)
    z = (z * pow(M1, -1, 2**64)) & MASK
    return unshift(z, 30)


def oph_reference(hashes: list[int], m: int, seed: int) -> list[int]:
    """One-permutation hashing with optimal densification, term by term (module docstring)."""
    bins: dict[int, int] = {}
    for h in hashes:
        z = fmix(h ^ key(seed))
        b = ((z >> 32) * m) >> 32
        bins[b] = min(bins.get(b, 1 << 32), z & 0xFFFFFFFF)
    if not bins:
        return [int(EMPTY)] * m
    out = []
    probe_key = key(seed ^ 0x5EED_DE75)
    for b in range(m):
        attempt, src = 0, b
        while src not in bins:
            attempt += 1
            src = ((fmix(((b << 32) + attempt + probe_key) & MASK) >> 32) * m) >> 32
        out.append(bins[src])
    return out


def test_fmix_inverse_round_trips():
    for x in (0, 1, 2**63 + 12345, MASK):
        assert fmix(unfmix(x)) == x


@pytest.mark.parametrize("m", [1, 5, 80])
def test_oph_equals_the_term_by_term_reference(m):
    """Bags from 1 to 300 terms: mostly-empty rows (column-wise densification) and full ones."""
    rng = np.random.default_rng(m)
    vocab = [int(x) for x in rng.integers(0, 2**63, 2000)]
    bags = [list(rng.choice(2000, int(rng.integers(0, 300)), replace=False)) for _ in range(120)]
    codes = np.array([c for b in bags for c in b], dtype=np.int64)
    offsets = np.concatenate([[0], np.cumsum([len(b) for b in bags])])
    params = MinHashParams(m=m, seed=7, algorithm="oph")
    sig = sign(codes, offsets, np.array(vocab, dtype=np.uint64), None, params).values
    for row, bag in zip(sig, bags):
        assert row.tolist() == oph_reference([vocab[c] for c in bag], m, 7)


def test_an_oph_value_equal_to_the_empty_marker_still_fills_its_bin():
    seed, m = 3, 16
    special = unfmix((5 << 32) | 0xFFFFFFFF) ^ key(seed)  # bin ⌊(5 · 16) / 2^32⌋ = 0, value 0xFFFFFFFF
    hashes = np.array([special, 12345, 987654321], dtype=np.uint64)
    params = MinHashParams(m=m, seed=seed, algorithm="oph")
    sig = sign(np.array([0, 1, 0, 2]), np.array([0, 2, 4]), hashes, None, params).values
    assert sig[0].tolist() == oph_reference([special, 12345], m, seed)
    assert sig[1].tolist() == oph_reference([special, 987654321], m, seed)
    assert (sig[0] == EMPTY).any() and not (sig[0] == EMPTY).all()


def test_icws_blocks_do_not_change_signatures(monkeypatch):
    from simweb.core import minhash

    rng = np.random.default_rng(8)
    bags = [{f"t{x}": float(rng.lognormal()) for x in rng.choice(500, int(rng.integers(1, 40)), replace=False)}
            for _ in range(60)]
    params = MinHashParams(m=24, seed=4)
    whole = sign_bags(bags, params).values
    monkeypatch.setattr(minhash, "_ICWS_BLOCK_CELLS", 50)
    monkeypatch.setattr(minhash, "_TABLE_BLOCK_TERMS", 7)
    assert (sign_bags(bags, params).values == whole).all()
    small = [{str(k): w for k, w in b.items()} for b in ({3: 0.5, 17: 0.25}, {99: 2.0, 3: 0.125, 40: 1.0})]
    ident = MinHashParams(m=24, seed=4, hash_family="identity")
    for row, bag in zip(sign_bags(small, ident).values, small):
        assert row.tolist() == icws_reference({int(k): w for k, w in bag.items()}, 24, 4)


def test_mmh3_term_hashes_equal_hash64_for_any_text_and_bytes():
    import mmh3

    words = ["java", "straße", "日本語", "🙂", "", "a" * 100]
    assert term_hashes(words).tolist() == [mmh3.hash64(w, 0, signed=False)[0] for w in words]
    assert term_hashes([b"java", b"\xff"]).tolist() == [mmh3.hash64(b, 0, signed=False)[0] for b in (b"java", b"\xff")]


def test_encode_bags_and_repeated_tokens():
    codes, offsets, terms = encode_bags(iter([["b", "a", "b"], [], ["c", "a"]]))
    assert codes.tolist() == [0, 1, 0, 2, 1] and offsets.tolist() == [0, 3, 3, 5] and terms == ["b", "a", "c"]
    lists = [["x", "y", "x", "z", "y"], ["z", "z"], []]
    for algorithm in ("icws", "oph", "dart"):
        params = MinHashParams(m=32, algorithm=algorithm)
        once = sign_bags([list(dict.fromkeys(b)) for b in lists], params).values
        assert (sign_bags(lists, params).values == once).all()
