"""Min-hash signatures of weighted bags (paper Section 6.2).

The paper needs a hash family with Pr[h(u) = h(v)] = sim_J(u, v), the bag Jaccard of Section 4
(Σ min / Σ max of the weights). Its bags are multisets with integer multiplicities, which
Broder's set min-hash covers after expanding each term into that many copies. Our bags carry
real weights (distance log2(32/(1+d)) times NMDF, normalised to a constant sum, Section 3.3),
so integer expansion would need a quantisation step that changes the measure. Choices:

* **ICWS** (Ioffe, "Improved Consistent Sampling, Weighted Minhash and L1 Sketching", ICDM
  2010) — for real weights, Pr[collision] = Σ min / Σ max *exactly*; every position is an
  independent sample, so the estimator's variance is exactly J(1−J)/m; O(n·m) work per bag
  (n terms) but every step is an array operation. ``algorithm="icws"``.
* 0-bit CWS (Li 2015) drops t from the output: cheaper to store but only approximately
  unbiased — rejected, the (k, t) pair is hashed to 32 bits instead (below).
* **DartMinHash** (Christiani 2020), ``algorithm="dart"``, the index's default
  (simweb.tasks.signatures.IndexParams): exact too, with independent positions, in expected
  O(n + m log m) work per bag — a C extension with a numpy twin giving the same bits, about
  five times ICWS's speed (:mod:`simweb.core.dartminhash`, which also says why not BagMinHash,
  Ertl 2018). ICWS stays as the reference its estimates are tested against.
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
can compute exact values). Every random number ICWS needs for a term at position j is drawn
from a splitmix64 stream (:mod:`simweb.core.splitmix`) seeded by ``term_hash XOR mix(seed)``:
draw d of position j is output number ``j * 8 + d`` of that stream (DartMinHash's streams:
:mod:`simweb.core.dartminhash`). Signatures carry (m, seed, algorithm, hash family); comparing
signatures that differ in any of these raises.

ICWS at position j, for term k of weight w > 0 (Ioffe 2010, Algorithm 2):
    r, c ~ Gamma(2, 1) as −ln(u1·u2), −ln(u3·u4);  β ~ U(0, 1) as u5
    t = ⌊ln w / r + β⌋;   ln a = ln c − r(t − β) − r
    the term with the smallest ln a wins (ties: the earlier term in the bag's order; bags
    store terms sorted, so ties break the same way in every bag); output (k, t).
Logarithms are :mod:`simweb.core.fpmath`'s, so the signatures of a bag are the same on every CPU.
The pair (k, t) is hashed to the 32-bit signature value ``fmix64(h_k XOR fmix64(t·φ + key)) >> 32``,
so two different pairs collide with probability 2^-32: the estimate is J + (1 − J)·2^-32.
"""
from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import chain

import numpy as np

from simweb.core import dartminhash, fpmath
from simweb.core.splitmix import GOLDEN, fmix64, fmix64_inplace, seed_key

__all__ = [
    "ALGORITHMS",
    "INDEX_ALGORITHM",
    "EMPTY",
    "HASH_FAMILIES",
    "MinHashParams",
    "Signatures",
    "SignatureMismatch",
    "encode_bags",
    "estimate",
    "positive",
    "sign",
    "sign_bags",
    "term_hashes",
]

ALGORITHMS = ("icws", "oph", "dart")
#: The weighted sampler an index is signed with unless told otherwise (simweb.core.dartminhash).
INDEX_ALGORITHM = "dart"
HASH_FAMILIES = ("mmh3", "identity")
# The signature row of a bag with no positive weight: such a bag is similar to nothing; the
# index keeps it out of I, so the value never takes part in a comparison.
EMPTY = np.uint32(0xFFFFFFFF)

_DRAWS_PER_POSITION = 8
# Occurrence × position cells per ICWS block: small enough for the block's temporaries (a few
# arrays of 4–8 bytes per cell) to stay in the CPU cache; measured best among 2^14..2^20.
_ICWS_BLOCK_CELLS = 1 << 16
# Bag × position cells per OPH block (4 bytes each), for the same reason.
_OPH_BLOCK_CELLS = 1 << 17


class SignatureMismatch(ValueError):
    """Signatures made with different (m, seed, algorithm, hash family) were compared."""


@dataclass(frozen=True, slots=True)
class MinHashParams:
    """How signatures are made (Section 6.2): m positions, the seed, the algorithm (``"icws"``,
    ``"dart"`` or ``"oph"``, module docstring), the term hash."""

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


def term_hashes(terms: Iterable[str | int], hash_family: str = "mmh3") -> np.ndarray:
    """64-bit hashes of distinct terms under ``hash_family`` (see the module docstring)."""
    if hash_family == "mmh3":
        import mmh3

        # hash_bytes is the 128-bit x64 digest of the UTF-8 bytes (of str or bytes terms); its
        # first 8 bytes, little-endian, are hash64's first half. Joining the digests keeps the
        # per-term work inside C calls.
        digests = b"".join(map(mmh3.hash_bytes, terms))
        return np.frombuffer(digests, dtype="<u8")[0::2].astype(np.uint64)
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
    z = state + (counters.astype(np.uint64) + np.uint64(1)) * GOLDEN
    fmix64_inplace(z, np.empty_like(z))
    # 53 random bits: exact as int64, whose conversion to float is much faster than uint64's.
    z >>= np.uint64(11)
    u = z.view(np.int64).astype(np.float64)
    u += 0.5
    u *= 1.0 / 9007199254740992.0
    return u


# Terms per block of the ICWS tables: keeps each block's V × m temporaries in cache.
_TABLE_BLOCK_TERMS = 1024


def _icws_tables(hashes: np.ndarray, params: MinHashParams) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per (term, position) ICWS randomness as four float32 arrays V × m: 1/r, β, r, ln c + rβ − r."""
    m = params.m
    key = seed_key(params.seed)
    base = np.arange(m, dtype=np.int64) * _DRAWS_PER_POSITION
    out = tuple(np.empty((hashes.size, m), dtype=np.float32) for _ in range(4))
    for s in range(0, hashes.size, _TABLE_BLOCK_TERMS):
        state = (hashes[s:s + _TABLE_BLOCK_TERMS] ^ key)[:, None]
        u = [_uniforms(state, base + d) for d in range(5)]
        r = u[0]
        r *= u[1]
        r = fpmath.log(r)
        np.negative(r, out=r)
        ln_c = u[2]
        ln_c *= u[3]
        ln_c = fpmath.log(ln_c)
        np.negative(ln_c, out=ln_c)
        ln_c = fpmath.log(ln_c)
        beta = u[4]
        block = slice(s, s + _TABLE_BLOCK_TERMS)
        np.divide(1.0, r, out=out[0][block], casting="same_kind")
        out[1][block] = beta
        out[2][block] = r
        beta *= r
        beta += ln_c
        np.subtract(beta, r, out=out[3][block], casting="same_kind")
    return out


def _pair_hash(k_hash: np.ndarray, t: np.ndarray, key: np.uint64) -> np.ndarray:
    """The 32-bit signature value of ICWS samples (k, t): see the module docstring."""
    inner = fmix64(t.astype(np.int64).view(np.uint64) * GOLDEN + key)
    return (fmix64(k_hash ^ inner) >> np.uint64(32)).astype(np.uint32)


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
    codes, offsets, weights = positive(codes, offsets, weights, hashes.size)
    n = offsets.size - 1
    out = np.full((n, params.m), EMPTY, dtype=np.uint32)
    if codes.size:
        if params.algorithm == "icws":
            _sign_icws(codes, offsets, hashes, weights, params, out)
        elif params.algorithm == "dart":
            dartminhash.sign_darts(codes, offsets, hashes, weights, params.m, params.seed, out)
        else:
            _sign_oph(codes, offsets, hashes, params, out)
    return Signatures(out, params)


def positive(codes: np.ndarray, offsets: np.ndarray, weights: np.ndarray | None,
             n_terms: int) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """The bags of :func:`sign`'s layout checked (codes into ``n_terms`` hashes, rising offsets,
    finite weights ≥ 0, one per code) and without their zero weights, which are absent terms."""
    codes, offsets = _check_layout(codes, offsets, n_terms)
    n = offsets.size - 1
    if weights is not None:
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
    return codes, offsets, weights


def _sign_icws(codes, offsets, hashes, weights, params, out) -> None:
    # The per-occurrence pass runs in float32: t and ln a are functions of (term, position,
    # weight) only, computed by the same operations in every bag, so rounding cannot make two
    # bags disagree about a shared (k, t); it only perturbs probabilities by ~1e-7.
    used, local = np.unique(codes, return_inverse=True)
    inv_r, beta, r, base = _icws_tables(hashes[used], params)
    key = seed_key(params.seed)
    ln_w = np.zeros(codes.size, np.float32) if weights is None else fpmath.log(weights).astype(np.float32)
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
        # t = ⌊ln w / r + β⌋ and ln a = (ln c + rβ − r) − r·t, occurrence × position.
        t = inv_r.take(k, axis=0)
        t *= ln_w[s:e, None]
        t += beta.take(k, axis=0)
        np.floor(t, out=t)
        ln_a = r.take(k, axis=0)
        ln_a *= t
        np.subtract(base.take(k, axis=0), ln_a, out=ln_a)
        # Smallest ln a per bag and position, ties to the earlier occurrence: the float's
        # order-preserving bits (as a signed int) above the occurrence index, one minimum.
        bits = ln_a.view(np.int32)
        flip = bits >> 31
        flip &= 0x7FFFFFFF
        bits ^= flip
        packed = bits.astype(np.int64)
        packed <<= 32
        packed |= np.arange(e - s, dtype=np.int64)[:, None]
        best = np.minimum.reduceat(packed, offsets[rows] - s, axis=0)  # (bags, m)
        best &= 0xFFFFFFFF  # the winning occurrence in the block
        out[rows] = _pair_hash(hashes[used[k[best]]], t[best, col], key)


def _sign_oph(codes, offsets, hashes, params, out) -> None:
    m = params.m
    z = fmix64(hashes ^ seed_key(params.seed))
    bins = (((z >> np.uint64(32)) * np.uint64(m)) >> np.uint64(32)).astype(np.int64)
    vals = (z & np.uint64(0xFFFFFFFF)).astype(np.uint32)
    special = bool((vals == EMPTY).any())  # a term whose value is EMPTY itself (p = 2^-32 per term)
    n = offsets.size - 1
    lengths = np.diff(offsets)
    step = max(1, _OPH_BLOCK_CELLS // m)
    ramp = np.arange(0, step * m, m, dtype=np.int64)
    # Blocks of bags small enough for their n × m cells to stay in the CPU cache.
    for r0 in range(0, n, step):
        r1 = min(n, r0 + step)
        s, e = offsets[r0], offsets[r1]
        k = codes[s:e]
        cell = ramp[: r1 - r0].repeat(lengths[r0:r1])
        cell += bins.take(k)
        # Bag by bag (row-major), the minimum per bin; EMPTY where a bag has no term at all.
        v = np.full((r1 - r0) * m, EMPTY, dtype=np.uint32)
        np.minimum.at(v, cell, vals.take(k))
        # Densify bin by bin (position-major): every bag probes the same bins in the same order.
        vt = np.ascontiguousarray(v.reshape(r1 - r0, m).T)
        has = vt != EMPTY
        if special:
            c = cell[vals.take(k) == EMPTY]
            has[c % m, c // m] = True
        _densify(vt, has, lengths[r0:r1] > 0, params)
        out[r0:r1] = vt.T


_PROBES: dict[tuple[int, int], np.ndarray] = {}
# Densification runs whole-row attempts while more than 1/_DENSE_SHARE of the bins wait.
_DENSE_SHARE = 16


def _probe_bins(m: int, seed: int, attempts: int) -> np.ndarray:
    """attempts × m: row a − 1 holds, for every bin b, the bin that densification probes at
    attempt a, ``⌊(fmix64((b << 32) + a + key) >> 32) · m / 2^32⌋`` (cached, grown on demand)."""
    table = _PROBES.get((m, seed))
    if table is None or table.shape[0] < attempts:
        rows = max(attempts, 16 if table is None else 2 * table.shape[0])
        key = seed_key(seed ^ 0x5EED_DE75)
        b = np.arange(m, dtype=np.uint64) << np.uint64(32)
        a = np.arange(1, rows + 1, dtype=np.uint64)[:, None]
        probe = fmix64(b + a + key)
        table = (((probe >> np.uint64(32)) * np.uint64(m)) >> np.uint64(32)).astype(np.int64)
        if len(_PROBES) >= 64:
            _PROBES.clear()
        _PROBES[(m, seed)] = table
    return table


def _densify(vt: np.ndarray, has: np.ndarray, rows: np.ndarray, params: MinHashParams) -> None:
    """Optimal densification (Shrivastava 2017): an empty bin copies the first non-empty bin of
    its probe sequence, the same sequence in every bag, so two bags copy from the same bin.

    ``vt`` is m × n (bin-major), EMPTY in its empty bins, with ``has`` marking its non-empty
    bins (a bin can hold the value EMPTY itself); only the bags flagged
    in ``rows`` (those with a term) are densified. Sources are always bins that were non-empty
    before densification. While many bins wait, an attempt is a few operations on whole rows
    of ``vt`` (all bags probe bin table[a, b] for bin b); the few left then go cell by cell.
    """
    m, n = vt.shape
    wait = ~has
    wait &= rows
    left = int(np.count_nonzero(wait))
    attempt = 0
    while left * _DENSE_SHARE > vt.size:
        src = _probe_bins(m, params.seed, attempt + 1)[attempt]
        attempt += 1
        fill = has.take(src, axis=0)
        fill &= wait
        # Waiting bins hold EMPTY (all ones), so AND-ing with the source value fills them;
        # the others are AND-ed with all ones.
        keep = np.subtract(fill.view(np.uint8), 1, dtype=np.uint32)
        keep |= vt.take(src, axis=0)
        vt &= keep
        wait ^= fill
        left = int(np.count_nonzero(wait))
    if not left:
        return
    flat = vt.reshape(-1)
    has = has.reshape(-1)
    cells = np.flatnonzero(wait)
    bins = cells // n
    while cells.size:
        src = _probe_bins(m, params.seed, attempt + 1)[attempt].take(bins)
        attempt += 1
        src -= bins
        src *= n
        src += cells
        got = has.take(src)
        flat[cells[got]] = flat[src[got]]
        miss = ~got
        cells, bins = cells[miss], bins[miss]


def encode_bags(bags: Iterable[Iterable[str]]) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """Dictionary-encode token lists: (codes, offsets, distinct terms in first-seen order)."""
    bags = bags if isinstance(bags, Sequence) else list(bags)
    lengths = np.fromiter(map(len, bags), np.int64, len(bags))
    flat = list(chain.from_iterable(bags))
    if len(flat) != int(lengths.sum()):
        raise ValueError(
            f"bags: expected {int(lengths.sum())} terms in total from the bag lengths, iterated {len(flat)}; "
            "give each bag as a list or tuple of terms"
        )
    # Loops over the tokens stay inside C: dict.fromkeys, zip, map.
    terms = list(dict.fromkeys(flat))
    code = dict(zip(terms, range(len(terms))))
    codes = np.fromiter(map(code.__getitem__, flat), np.int64, len(flat))
    offsets = np.zeros(len(bags) + 1, np.int64)
    np.cumsum(lengths, out=offsets[1:])
    return codes, offsets, terms


def sign_bags(
    bags: Sequence[Sequence[str]] | Sequence[dict[str, float]],
    params: MinHashParams = MinHashParams(),
) -> Signatures:
    """Signatures of bags given as ``{term: weight}`` dicts or as token lists (weights 1).

    A token list is a set: a repeated token counts once. (It is signed as it is: with weight
    1 every copy of a token draws the same values and the earliest copy wins ties, so the
    signature equals that of the list without repeats.)
    """
    codes, offsets, terms = encode_bags(bags)
    weights = None
    if bags and isinstance(bags[0], dict):
        weights = np.fromiter(chain.from_iterable(map(dict.values, bags)), np.float64, codes.size)
    return sign(codes, offsets, term_hashes(terms, params.hash_family), weights, params)


def jaccard_stddev(j: float, m: int) -> float:
    """Standard deviation of the m-position estimate of a Jaccard value ``j`` (independent positions)."""
    return math.sqrt(max(j * (1.0 - j), 0.0) / m)
