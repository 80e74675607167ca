"""Min-hash signatures of weighted bags (paper Section 6.2).

The paper needs a hash family with Pr[h(u) = h(v)] = sim_J(u, v), the bag Jaccard of Section 4
(Σ min / Σ max of the weights). Its bags are multisets with integer multiplicities, which
Broder's set min-hash covers after expanding each term into that many copies. Our bags carry
real weights (distance log2(32/(1+d)) times NMDF, normalised to a constant sum, Section 3.3),
so integer expansion would need a quantisation step that changes the measure. Choices:

* **ICWS** (Ioffe, "Improved Consistent Sampling, Weighted Minhash and L1 Sketching", ICDM
  2010) — for real weights, Pr[collision] = Σ min / Σ max *exactly*; every position is an
  independent sample, so the estimator's variance is exactly J(1−J)/m; O(n·m) work per bag
  (n terms) but every step is an array operation. Used here, ``algorithm="icws"``.
* 0-bit CWS (Li 2015) drops t from the output: cheaper to store but only approximately
  unbiased — rejected, the (k, t) pair is hashed to 32 bits instead (below).
* BagMinHash (Ertl 2018) and DartMinHash (Christiani 2020) are exact too and asymptotically
  faster (≈ n + m log m), but both are sequential per bag (priority queues, per-bag loops);
  in numpy their per-bag Python overhead costs more than ICWS's n·m array work at our sizes
  (m = 80, a few hundred terms).
* P-MinHash / ProbMinHash estimate the *probability* Jaccard Σ 1/Σ max(x_i/Σx, y_i/Σy), a
  different measure: rejected.

For bags that are sets (token lists, shingles), ``algorithm="oph"`` is one-permutation hashing
with optimal densification (Li, Owen, Zhang 2012; Shrivastava, ICML 2017): each term is hashed
once into one of m bins, the minimum per bin is kept, and an empty bin copies the first
non-empty bin along a probe sequence shared by all bags. Pr[collision] at every position is
exactly the set Jaccard |A∩B|/|A∪B| (the minimum of the union in the first union-non-empty
bin probed is uniform over A∪B), for O(n + m) work per bag; weights are ignored.

Randomness. A term's 64-bit hash comes from the hash family (``"mmh3"``: MurmurHash3 x64 of
its UTF-8 bytes; ``"identity"``: the term is a decimal integer and is its own hash, so tests
can compute exact values). Every random number a term needs at position j is drawn from a
splitmix64 stream seeded by ``term_hash XOR mix(seed)``: draw d of position j is output number
``j * 8 + d`` of that stream. Signatures carry (m, seed, algorithm, hash family); comparing
signatures that differ in any of these raises.

ICWS at position j, for term k of weight w > 0 (Ioffe 2010, Algorithm 2):
    r, c ~ Gamma(2, 1) as −ln(u1·u2), −ln(u3·u4);  β ~ U(0, 1) as u5
    t = ⌊ln w / r + β⌋;   ln a = ln c − r(t − β) − r
    the term with the smallest ln a wins (ties: the earlier term in the bag's order; bags
    store terms sorted, so ties break the same way in every bag); output (k, t).
The pair (k, t) is hashed to the 32-bit signature value ``fmix64(h_k XOR fmix64(t·φ + key)) >> 32``,
so two different pairs collide with probability 2^-32: the estimate is J + (1 − J)·2^-32.
"""
from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

__all__ = [
    "ALGORITHMS",
    "EMPTY",
    "HASH_FAMILIES",
    "MinHashParams",
    "Signatures",
    "SignatureMismatch",
    "encode_bags",
    "estimate",
    "sign",
    "sign_bags",
    "term_hashes",
]

ALGORITHMS = ("icws", "oph")
HASH_FAMILIES = ("mmh3", "identity")
# The signature row of a bag with no positive weight: such a bag is similar to nothing; the
# index keeps it out of I, so the value never takes part in a comparison.
EMPTY = np.uint32(0xFFFFFFFF)

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_DRAWS_PER_POSITION = 8
# Occurrence × position cells per ICWS block: bounds the temporaries (~8 arrays × 8 bytes each).
_ICWS_BLOCK_CELLS = 1 << 20


class SignatureMismatch(ValueError):
    """Signatures made with different (m, seed, algorithm, hash family) were compared."""


@dataclass(frozen=True, slots=True)
class MinHashParams:
    """How signatures are made (Section 6.2): m positions, the seed, the algorithm, the term hash."""

    m: int = 80
    seed: int = 1
    algorithm: str = "icws"
    hash_family: str = "mmh3"

    def __post_init__(self) -> None:
        if not isinstance(self.m, int) or not 1 <= self.m <= 4096:
            raise ValueError(f"m: expected an integer number of signatures in 1..4096, got {self.m!r}")
        if not isinstance(self.seed, int) or not 0 <= self.seed < 2**64:
            raise ValueError(f"seed: expected an integer in 0..2^64-1, got {self.seed!r}")
        if self.algorithm not in ALGORITHMS:
            raise ValueError(f"algorithm: expected one of {ALGORITHMS}, got {self.algorithm!r}")
        if self.hash_family not in HASH_FAMILIES:
            raise ValueError(f"hash_family: expected one of {HASH_FAMILIES}, got {self.hash_family!r}")

    def to_dict(self) -> dict[str, object]:
        return {"m": self.m, "seed": self.seed, "algorithm": self.algorithm, "hash_family": self.hash_family}

    @classmethod
    def from_dict(cls, d: dict[str, object]) -> MinHashParams:
        return cls(m=int(d["m"]), seed=int(d["seed"]), algorithm=str(d["algorithm"]),
                   hash_family=str(d["hash_family"]))


@dataclass(frozen=True, slots=True, eq=False)
class Signatures:
    """An n × m matrix of uint32 min-hash signatures and the parameters that made them."""

    values: np.ndarray
    params: MinHashParams

    def __post_init__(self) -> None:
        v = self.values
        if v.dtype != np.uint32 or v.ndim != 2 or v.shape[1] != self.params.m:
            raise ValueError(
                f"signatures: expected an n × {self.params.m} uint32 matrix, got {v.dtype} of shape {v.shape}"
            )

    def __len__(self) -> int:
        return self.values.shape[0]

    def check_compatible(self, other: Signatures) -> None:
        """Raise :class:`SignatureMismatch` unless ``other`` was made with the same parameters."""
        if self.params != other.params:
            raise SignatureMismatch(
                f"signatures made with {self.params.to_dict()} cannot be compared with signatures made "
                f"with {other.params.to_dict()}: sign both with the same m, seed, algorithm and hash family"
            )

    def similarity(self, other: Signatures) -> np.ndarray:
        """Estimated Jaccard, row by row (one row broadcasts): the fraction of equal positions."""
        self.check_compatible(other)
        a, b = self.values, other.values
        if a.shape[0] != b.shape[0] and 1 not in (a.shape[0], b.shape[0]):
            raise ValueError(f"similarity: expected equal row counts or one row, got {a.shape[0]} and {b.shape[0]}")
        return (a == b).mean(axis=1)


def estimate(a: Signatures, b: Signatures, i: int = 0, j: int = 0) -> float:
    """Estimated Jaccard of row ``i`` of ``a`` and row ``j`` of ``b`` (Section 6.2)."""
    a.check_compatible(b)
    return float(np.count_nonzero(a.values[i] == b.values[j])) / a.params.m


# --------------------------------------------------------------------------- hashing


def _fmix64(x: np.ndarray) -> np.ndarray:
    """The splitmix64 / Stafford 13 finaliser, element-wise on uint64 (wrapping)."""
    x = x ^ (x >> np.uint64(30))
    x = x * _M1
    x = x ^ (x >> np.uint64(27))
    x = x * _M2
    return x ^ (x >> np.uint64(31))


def _seed_key(seed: int) -> np.uint64:
    return np.uint64(_fmix64(np.array([seed], dtype=np.uint64) + _GOLDEN)[0])


def term_hashes(terms: Iterable[str | int], hash_family: str = "mmh3") -> np.ndarray:
    """64-bit hashes of distinct terms under ``hash_family`` (see the module docstring)."""
    if hash_family == "mmh3":
        import mmh3

        terms = list(terms)
        return np.fromiter((mmh3.hash64(t, 0, signed=False)[0] for t in terms), np.uint64, len(terms))
    if hash_family == "identity":
        out = []
        for t in terms:
            try:
                v = int(t)
            except (TypeError, ValueError):
                raise ValueError(
                    f"identity hash family: expected terms that are decimal integers, got {t!r}; "
                    "use hash_family='mmh3' for words"
                ) from None
            if not 0 <= v < 2**64:
                raise ValueError(f"identity hash family: expected integers in 0..2^64-1, got {v}")
            out.append(v)
        return np.array(out, dtype=np.uint64)
    raise ValueError(f"hash_family: expected one of {HASH_FAMILIES}, got {hash_family!r}")


def _uniforms(state: np.ndarray, counters: np.ndarray) -> np.ndarray:
    """Uniform (0, 1) doubles: output ``counters`` of the splitmix64 streams seeded by ``state``.

    ``state`` has shape (V, 1), ``counters`` shape (m,); the result is V × m.
    """
    z = _fmix64(state + (counters.astype(np.uint64) + np.uint64(1)) * _GOLDEN)
    # 53 random bits: exact as int64, whose conversion to float is much faster than uint64's.
    return ((z >> np.uint64(11)).view(np.int64).astype(np.float64) + 0.5) * (1.0 / 9007199254740992.0)


def _icws_tables(hashes: np.ndarray, params: MinHashParams) -> np.ndarray:
    """Per (term, position) ICWS randomness as one float32 array V × 4 × m: 1/r, β, r, ln c + rβ − r."""
    state = (hashes ^ _seed_key(params.seed))[:, None]
    base = np.arange(params.m, dtype=np.int64) * _DRAWS_PER_POSITION
    u = [_uniforms(state, base + d) for d in range(5)]
    r = -np.log(u[0] * u[1])
    ln_c = np.log(-np.log(u[2] * u[3]))
    beta = u[4]
    out = np.empty((hashes.size, 4, params.m), dtype=np.float32)
    np.divide(1.0, r, out=out[:, 0], casting="same_kind")
    out[:, 1] = beta
    out[:, 2] = r
    np.subtract(ln_c + r * beta, r, out=out[:, 3], casting="same_kind")
    return out


def _pair_hash(k_hash: np.ndarray, t: np.ndarray, key: np.uint64) -> np.ndarray:
    """The 32-bit signature value of ICWS samples (k, t): see the module docstring."""
    inner = _fmix64(t.astype(np.int64).view(np.uint64) * _GOLDEN + key)
    return (_fmix64(k_hash ^ inner) >> np.uint64(32)).astype(np.uint32)


# --------------------------------------------------------------------------- signing


def _check_layout(codes: np.ndarray, offsets: np.ndarray, n_terms: int) -> tuple[np.ndarray, np.ndarray]:
    offsets = np.asarray(offsets, dtype=np.int64)
    codes = np.asarray(codes)
    if offsets.ndim != 1 or offsets.size < 1 or offsets[0] != 0 or offsets[-1] != codes.size:
        raise ValueError(
            f"offsets: expected a rising array from 0 to the number of term occurrences ({codes.size}), "
            f"got {offsets.size} offsets ending at {offsets[-1] if offsets.size else 'nothing'}"
        )
    if offsets.size > 1 and np.any(np.diff(offsets) < 0):
        raise ValueError("offsets: expected a non-decreasing array (row i holds codes[offsets[i]:offsets[i+1]])")
    if codes.size and (codes.min() < 0 or codes.max() >= n_terms):
        raise ValueError(f"codes: expected indices into the {n_terms} term hashes, found {codes.min()}..{codes.max()}")
    return codes.astype(np.int64, copy=False), offsets


def sign(
    codes: np.ndarray,
    offsets: np.ndarray,
    hashes: np.ndarray,
    weights: np.ndarray | None,
    params: MinHashParams = MinHashParams(),
) -> Signatures:
    """Min-hash signatures of bags given as a dictionary-encoded ragged array (Section 6.2).

    Bag ``i`` holds the terms ``codes[offsets[i]:offsets[i+1]]`` (indices into ``hashes``,
    the 64-bit hashes of the distinct terms, see :func:`term_hashes`) with ``weights`` at the
    same positions (None: every weight 1). A term should appear once per bag; a zero weight
    means absent. Negative or non-finite weights raise. A bag with no positive weight gets
    the row ``EMPTY``.
    """
    hashes = np.asarray(hashes, dtype=np.uint64)
    codes, offsets = _check_layout(codes, offsets, hashes.size)
    n = offsets.size - 1
    if weights is None:
        weights = np.ones(codes.size, dtype=np.float64)
    else:
        weights = np.asarray(weights, dtype=np.float64)
        if weights.shape != codes.shape:
            raise ValueError(f"weights: expected one weight per term occurrence ({codes.size}), got {weights.shape}")
        bad = ~np.isfinite(weights) | (weights < 0)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise ValueError(
                f"weights: expected finite weights ≥ 0, found {weights[i]!r} (bag "
                f"{int(np.searchsorted(offsets, i, side='right')) - 1}); weighted bags are never negative"
            )
    # Zero weights are absent terms: drop them so they can never win a position.
    keep = weights > 0
    if not keep.all():
        row = np.repeat(np.arange(n), np.diff(offsets))
        codes, weights = codes[keep], weights[keep]
        offsets = np.concatenate([[0], np.cumsum(np.bincount(row[keep], minlength=n))]).astype(np.int64)
    out = np.full((n, params.m), EMPTY, dtype=np.uint32)
    if codes.size:
        if params.algorithm == "icws":
            _sign_icws(codes, offsets, hashes, weights, params, out)
        else:
            _sign_oph(codes, offsets, hashes, params, out)
    return Signatures(out, params)


def _sign_icws(codes, offsets, hashes, weights, params, out) -> None:
    # The per-occurrence pass runs in float32: t and ln a are functions of (term, position,
    # weight) only, computed by the same operations in every bag, so rounding cannot make two
    # bags disagree about a shared (k, t); it only perturbs probabilities by ~1e-7.
    used, local = np.unique(codes, return_inverse=True)
    tab = _icws_tables(hashes[used], params)
    key = _seed_key(params.seed)
    ln_w = np.log(weights).astype(np.float32)
    lengths = np.diff(offsets)
    nonempty = np.flatnonzero(lengths > 0)
    m = params.m
    col = np.arange(m)
    # Blocks of whole bags, about _ICWS_BLOCK_CELLS occurrence × position cells each.
    per_block = max(1, _ICWS_BLOCK_CELLS // m)
    cuts = np.searchsorted(offsets[nonempty], np.arange(0, offsets[-1], per_block), side="left")
    cuts = np.unique(np.concatenate([cuts, [nonempty.size]]))
    for b0, b1 in zip(cuts[:-1], cuts[1:]):
        rows = nonempty[b0:b1]
        s, e = offsets[rows[0]], offsets[rows[-1] + 1]
        k = local[s:e]
        g = tab[k]  # (occurrences, 4, m)
        t = np.floor(ln_w[s:e, None] * g[:, 0] + g[:, 1])
        ln_a = g[:, 3] - g[:, 2] * t
        # Smallest ln a per bag and position, ties to the earlier occurrence: pack the float's
        # order-preserving bits above the occurrence index and take one minimum.
        bits = ln_a.view(np.int32)
        order = (bits ^ ((bits >> 31) & 0x7FFFFFFF)).view(np.uint32) ^ np.uint32(0x80000000)
        packed = (order.T.astype(np.uint64) << np.uint64(32)) | np.arange(e - s, dtype=np.uint64)
        best = np.minimum.reduceat(packed, offsets[rows] - s, axis=1)  # (m, bags)
        win = (best & np.uint64(0xFFFFFFFF)).astype(np.int64).T  # (bags, m) occurrence in block
        wk = k[win]
        wt = np.floor(ln_w[s + win] * tab[wk, 0, col] + tab[wk, 1, col])
        out[rows] = _pair_hash(hashes[used[wk]], wt, key)


def _sign_oph(codes, offsets, hashes, params, out) -> None:
    m = params.m
    z = _fmix64(hashes ^ _seed_key(params.seed))
    bins = (((z >> np.uint64(32)) * np.uint64(m)) >> np.uint64(32)).astype(np.int64)
    vals = z & np.uint64(0xFFFFFFFF)
    n = offsets.size - 1
    lengths = np.diff(offsets)
    cell = np.repeat(np.arange(n, dtype=np.int64) * m, lengths) + bins[codes]
    full = np.full(n * m, 1 << 32, dtype=np.uint64)  # 2^32: empty (no uint32 value reaches it)
    np.minimum.at(full, cell, vals[codes])
    full = full.reshape(n, m)
    _densify(full, params)
    ok = lengths > 0
    out[ok] = full[ok].astype(np.uint32)


def _densify(full: np.ndarray, params: MinHashParams) -> None:
    """Optimal densification (Shrivastava 2017): an empty bin copies the first non-empty bin of
    its probe sequence, the same sequence in every bag, so two bags copy from the same bin."""
    m = params.m
    flat = full.reshape(-1)
    empty = flat == (1 << 32)
    nonempty_rows = ~empty.reshape(full.shape).all(axis=1)
    cells = np.flatnonzero(empty & np.repeat(nonempty_rows, m))
    row_base = cells - cells % m
    bins = (cells % m).astype(np.uint64)
    key = _seed_key(params.seed ^ 0x5EED_DE75)
    attempt = 0
    while cells.size:
        attempt += 1
        probe = _fmix64((bins << np.uint64(32)) + np.uint64(attempt) + key)
        src = row_base + (((probe >> np.uint64(32)) * np.uint64(m)) >> np.uint64(32)).astype(np.int64)
        got = ~empty[src]
        flat[cells[got]] = flat[src[got]]
        miss = ~got
        cells, row_base, bins = cells[miss], row_base[miss], bins[miss]


def encode_bags(bags: Iterable[Sequence[str]]) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """Dictionary-encode token lists: (codes, offsets, distinct terms in first-seen order)."""
    index: dict[str, int] = {}
    codes: list[int] = []
    offsets = [0]
    for bag in bags:
        for t in bag:
            c = index.get(t)
            if c is None:
                c = index[t] = len(index)
            codes.append(c)
        offsets.append(len(codes))
    return np.array(codes, dtype=np.int64), np.array(offsets, dtype=np.int64), list(index)


def sign_bags(
    bags: Sequence[Sequence[str]] | Sequence[dict[str, float]],
    params: MinHashParams = MinHashParams(),
) -> Signatures:
    """Signatures of bags given as ``{term: weight}`` dicts or as token lists (weights 1).

    A token list is a set: a repeated token counts once.
    """
    if bags and isinstance(bags[0], dict):
        codes, offsets, terms = encode_bags([list(b) for b in bags])
        weights = np.fromiter((w for b in bags for w in b.values()), np.float64, codes.size)
    else:
        codes, offsets, terms = encode_bags([list(dict.fromkeys(b)) for b in bags])
        weights = None
    return sign(codes, offsets, term_hashes(terms, params.hash_family), weights, params)


def jaccard_stddev(j: float, m: int) -> float:
    """Standard deviation of the m-position estimate of a Jaccard value ``j`` (independent positions)."""
    return math.sqrt(max(j * (1.0 - j), 0.0) / m)
