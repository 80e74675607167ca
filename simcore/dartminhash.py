"""DartMinHash: weighted min-hash signatures in O(n + m log m) expected work (paper Section 6.2).

The index needs, for each of m positions, a hash with Pr[h(x) = h(y)] = Σ min(x_i, y_i) / Σ
max(x_i, y_i), the bag Jaccard of Section 4 on real weights. ICWS (:mod:`simweb.core.minhash`)
draws every position from every term: n·m work per bag. DartMinHash (Christiani, "DartMinHash:
Fast Sketching for Weighted Sets", arXiv:2005.11547, 2020) draws points of one Poisson process
instead, and its work is the points it looks at, about m ln m per bag, plus a few cells per term.

The process (Christiani, Sections 1–2). Points ("darts") fall on term × weight × rank space as a
Poisson process of rate λ per unit of weight × rank for every term; each carries a label j
uniform in 0..m−1 and a 64-bit identity. A bag x covers the darts (i, w, r) with w < x_i. The
signature at position j is the identity of the covered dart labelled j of smallest rank. Two
bags agree at j exactly when the lowest dart labelled j in the union of their regions lies in
the intersection; the darts of one label are a Poisson process of their own, uniform over the
union, so that happens with probability area(x ∧ y) / area(x ∨ y) = Σ min / Σ max. Labels thin
one process into m independent ones: the positions are independent, and the estimate has
variance exactly J(1 − J)/m, as ICWS's. Only darts of rank below a threshold T are needed while
every label has one. A first pass takes T = 1/Σx, where λ darts are expected, λ the integer
nearest m(ln m + 2): all m labels are then present with probability ≈ 1 − e^−2 (coupon
collecting); a bag with a label still empty (≈ 11 % of 100-term bags at m = 80) goes round again
with T doubled. **The signature does not depend on T**: a label with a dart below T has there
the lowest dart of the whole region. So the signature is a pure function of the bag's (term,
weight) pairs, m and the seed; how T is chosen and how a pass is organised change only the work
(tested by signing with first thresholds from 10^-4 to 40).

Drawing the darts consistently (the DartHash grid of Christiani, Section 3; our hashing). With
weights scaled to s = λw, a cell of area 1 in (s, r) holds Poisson(1) darts. The (s, r) quadrant
is cut into regions (ν, ρ), ν, ρ ≥ 0: the weight band s ∈ [2^ν − 1, 2^(ν+1) − 1) times the rank
band r ∈ [2^ρ − 1, 2^(ρ+1) − 1); a region is 2^ρ columns of width 2^(ν−ρ) by 2^ν rows of height
2^(ρ−ν). A term of scaled weight s visits the weight bands with 2^ν − 1 < s and, in each, the
columns starting below s and the rows starting below T: its own darts, plus one partly covered
column per band. The shape keeps that waste bounded at every scale (the log(Σx + 1/Σx) term of
Christiani's bound); the bags stage normalises bags to 1.0, where T = 1 is a band edge. Measured
on 100-term distance × NMDF bags, m = 80: ~900 cells and ~900 darts drawn per bag, ~600 counted.
A first T just above a rank band's top (up to 1/16 above) is lowered to it: a sliver of a band
costs a row of cells per column and, by the above, changes nothing.

Randomness, all splitmix64 (:mod:`simweb.core.splitmix`): φ its golden constant, key =
seed_key(seed), h_i the term's 64-bit hash, out(s, i) = fmix64(s + (i + 1)·φ):
    cell key    c = out(h_i XOR key, ((col·2^ν + row)·2^12 + 64ν + ρ)
    dart count  the number of entries of :data:`POISSON_THRESHOLDS` ≤ c: Poisson(1) to 2^-64
    dart q      z = out(c, 2q + 1): s = (2^ν − 1 + col·2^(ν−ρ)) + (z >> 32)·2^(ν−ρ−32)
                                    r = (2^ρ − 1 + row·2^(ρ−ν)) + (z mod 2^32)·2^(ρ−ν−32)
                y = out(c, 2q + 2): label ⌊(y >> 32)·m / 2^32⌋, identity y
A dart counts when s < λ·x_i (one rounded product) and r < T; label j keeps its dart of smallest
(r, y), and y mod 2^32 is the signature value. Two different darts share a value with probability
2^-32, so, as for ICWS, the estimate is J + (1 − J)·2^-32. A dart's weight inside its cell has 32
bits: the region of a weight is resolved to 2^-32 of a cell, finer than the float32 weights the
bags stage stores.

Floating point. Band, column and row edges are dyadic rationals of few bits, so ``2^ν − 1 +
col·2^(ν−ρ)`` and the column and row counts (ceilings of exact differences scaled by powers of
two) are exact, and each dart coordinate is one rounded addition of two exact terms. IEEE 754
rounds a single operation the same way on every CPU (a fused multiply-add of these terms gives
the same result too, the product being exact), so the C extension (simcore/_dart.c) and the
numpy code below give the same bits, tested. λ comes from :func:`simweb.core.fpmath.log`, the
same on every CPU. The grid needs scaled weights and thresholds below 2^52 and ν + ρ ≤ 52: with
m = 80, weights below 8.8·10^12 and total weights above about 2^-50; a bag outside raises, saying
to rescale it or to use ICWS.

Why DartMinHash. Measured on this machine (``python -m benchmarks.signatures --crawl …``, one
pinned core, CPU time, m = 80, 4 runs of 3–5 rounds): on 100-term bags weighted as the bags stage
weighs them (distance × NMDF, normalised), ICWS signs 15,400–17,000 bags/s, this sampler in C
77,000–86,000 (4.8–5.2× ICWS in the same rounds; 1.7× the same C looping over each cell's 0–3
darts, whose loop exits mispredict), its numpy twin 7,800–9,100; on the 10,064 real DebDocs bags
(131 terms on average) 13,000–14,400, 73,000–84,000 (5.5–6.0×) and 7,300–8,800. Against exact
similarity (``python -m benchmarks.index_agreement``, α = 0.15, 40 seeds each) the index agrees
as well as with ICWS: DebDocs recall 0.943 vs 0.943, precision 0.821 vs 0.828 (difference
−0.007 ± 0.011), mean absolute error 0.0156 vs 0.0156; the WARC fixtures 0.934 / 0.890 / 0.0024
for both. BagMinHash (Ertl, KDD 2018) is exact too, with O(n + m log² m) work, but when it draws
a point depends on the running maximum over the m positions that every earlier point updates, so
it is one sequential loop per bag: a bit-identical numpy reference (and fallback where no
compiler is at hand) would take one Python step per point, hundreds per bag, far slower than
ICWS. A dart depends only on (term, weight, T), so the twin below is whole-array numpy at about
half ICWS's speed, and the C code is a plain loop. Christiani also measures DartMinHash faster
than BagMinHash, most at small bags and large m. ProbMinHash (Ertl 2020) estimates the
*probability* Jaccard, another measure: not an option.

Scale. The measure is not scale-invariant and neither is the sampler: a bag against the same bag
with every weight doubled has weighted Jaccard 1/2 and is estimated so; two bags both doubled keep
their Jaccard and its estimate's distribution, with other signatures. The bags stage normalises
every bag to the same total (Section 6.1), so bags are always compared at one scale.
"""
from __future__ import annotations

from decimal import Decimal, localcontext

import numpy as np

from simweb.core import fpmath
from simweb.core.splitmix import GOLDEN, fmix64, seed_key

try:  # the sampler in C; without a C compiler at install, the same signatures from numpy
    from simweb.core._dart import sign as _c_sign
except ImportError:  # pragma: no cover - depends on the build
    _c_sign = None

__all__ = ["POISSON_THRESHOLDS", "darts_per_unit", "sign_darts", "sign_darts_numpy", "sign_darts_once"]

_MASK32 = np.uint64(0xFFFFFFFF)
# First-pass darts: m (ln m + _SPARE); all m labels are then present with probability ≈ 1 − e^−_SPARE.
_SPARE = 2.0
# A first threshold at most this factor above a rank band's top is lowered to it.
_SNAP = 1.0625
# Grid limits: scaled weights and thresholds below 2^52 (2^b − 1 exact in a double), ν + ρ ≤ 52
# (cell numbers ((col·2^ν + row)·2^12 + 64ν + ρ below 2^64).
_LIMIT = 2.0**52
_MAX_BANDS_SUM = 52
# Darts and cells per numpy block: keeps the block's temporaries at a few tens of MB.
_BLOCK_CELLS = 1 << 18


def _poisson_thresholds() -> np.ndarray:
    """⌊2^64 · P(N ≤ p)⌋ for N ~ Poisson(1), p = 0, 1, … until P(N > p) < 2^-64 (exact decimal arithmetic)."""
    with localcontext() as ctx:
        ctx.prec = 60
        term = 1 / Decimal(1).exp()
        cdf = Decimal(0)
        out = []
        p = 0
        while (1 - cdf) * (1 << 64) >= 1:
            cdf += term
            out.append(min(int(cdf * (1 << 64)), (1 << 64) - 1))
            p += 1
            term /= p
        return np.array(out, dtype=np.uint64)


#: The darts in a cell: the number of these thresholds ≤ a uniform 64-bit value is Poisson(1)
#: to within 2^-64 per value (the C extension takes the same table as an argument).
POISSON_THRESHOLDS = _poisson_thresholds()


def darts_per_unit(m: int) -> float:
    """λ, the darts per unit of weight × rank: the integer nearest m(ln m + 2) (ln from
    :mod:`simweb.core.fpmath`, so λ, and with it every dart, is the same on every CPU)."""
    return float(round(m * (fpmath.log(float(m)) + _SPARE)))


def _first_thresholds(totals: np.ndarray) -> np.ndarray:
    """T of the first pass, 1 / total weight (λ darts expected), lowered to the top of the rank
    band below when it lies just above it: a sliver of a band costs a row of cells per column."""
    t = 1.0 / totals
    top = np.ldexp(1.0, _top_band(t)) - 1.0
    return np.where((top > 0) & (t <= top * _SNAP), top, t)


def _top_band(v: np.ndarray) -> np.ndarray:
    """The largest b ≥ 0 with 2^b − 1 < v, element-wise (v > 0), exactly."""
    _, e = np.frexp(v)  # v in [2^(e−1), 2^e): bands up to e − 1 certainly, band e if 2^e − 1 < v
    e = e.astype(np.int64)
    with np.errstate(over="ignore"):  # 2^1024 is inf, as in C: no band 1024
        top = np.where(np.ldexp(1.0, e) - 1.0 < v, e, e - 1)
    return np.maximum(top, 0)


def _out(state: np.ndarray, i: np.ndarray | int) -> np.ndarray:
    """Output number ``i`` of the splitmix64 streams seeded by ``state``."""
    return fmix64(state + (np.asarray(i, dtype=np.uint64) + np.uint64(1)) * GOLDEN)


def _ragged(counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For counts c_k: (owner k of each of the Σ c_k items, the item's index 0..c_k − 1)."""
    owner = np.repeat(np.arange(counts.size), counts)
    starts = np.cumsum(counts) - counts
    return owner, np.arange(owner.size) - starts[owner]


def _grid_error(bag: int, total: float, m: int) -> ValueError:
    return ValueError(
        f"dart: bag {bag} has total weight {total!r}, beyond the dart sampler's grid (with m = {m}: "
        f"weights below {_LIMIT / darts_per_unit(m):.3g}, total weights above about 2^-50 = 8.9e-16); "
        "scale the bag's weights (the bags stage normalises them to 1.0) or sign with algorithm='icws'"
    )


def _pass(elem, s, occ_bag, thresholds, m):
    """One pass over bags with rank thresholds T (per bag): (values, filled), both bags × m.

    ``elem``, ``s`` and ``occ_bag`` give each term occurrence's stream state (h XOR key), scaled
    weight λx and bag (0..len(thresholds) − 1).
    """
    n_bags = thresholds.size
    nu_top = _top_band(s)
    rho_top = _top_band(thresholds)[occ_bag]
    # Regions (ν, ρ) of each occurrence.
    n_rho = rho_top + 1
    reg_occ, k = _ragged((nu_top + 1) * n_rho)
    nu, rho = k // n_rho[reg_occ], k % n_rho[reg_occ]
    s0 = np.ldexp(1.0, nu) - 1.0
    r0 = np.ldexp(1.0, rho) - 1.0
    t_reg = thresholds[occ_bag[reg_occ]]
    n_cols = np.minimum(np.ldexp(1.0, rho), np.ceil(np.ldexp(s[reg_occ] - s0, rho - nu))).astype(np.int64)
    n_rows = np.minimum(np.ldexp(1.0, nu), np.ceil(np.ldexp(t_reg - r0, nu - rho))).astype(np.int64)
    # Cells of each region, and the darts of each cell.
    cell_reg, k = _ragged(n_cols * n_rows)
    col, row = k // n_rows[cell_reg], k % n_rows[cell_reg]
    number = (((col << nu[cell_reg]) + row) << 12) + (nu[cell_reg] << 6) + rho[cell_reg]
    cell_key = _out(elem[reg_occ[cell_reg]], number)
    n_darts = np.searchsorted(POISSON_THRESHOLDS, cell_key, side="right")
    dart_cell, q = _ragged(n_darts)
    dart_reg = cell_reg[dart_cell]
    z = _out(cell_key[dart_cell], 2 * q + 1)
    width = np.ldexp(1.0, nu - rho)[dart_reg]
    height = np.ldexp(1.0, rho - nu)[dart_reg]
    sd = s0[dart_reg] + col[dart_cell] * width
    sd += (z >> np.uint64(32)).astype(np.float64) * np.ldexp(width, -32)
    rd = r0[dart_reg] + row[dart_cell] * height
    rd += (z & _MASK32).astype(np.float64) * np.ldexp(height, -32)
    occ = reg_occ[dart_reg]
    keep = np.flatnonzero((sd < s[occ]) & (rd < t_reg[dart_reg]))
    y = _out(cell_key[dart_cell[keep]], 2 * q[keep] + 2)
    label = (((y >> np.uint64(32)) * np.uint64(m)) >> np.uint64(32)).astype(np.int64)
    group = occ_bag[occ[keep]] * m + label
    # The smallest (r, y) per (bag, label): the smallest r, then the smallest y among its darts.
    rank = rd[keep]
    best_rank = np.full(n_bags * m, np.inf)
    np.minimum.at(best_rank, group, rank)
    first = rank == best_rank[group]
    best_y = np.full(n_bags * m, np.iinfo(np.uint64).max, dtype=np.uint64)
    np.minimum.at(best_y, group[first], y[first])
    values = (best_y & _MASK32).astype(np.uint32)
    filled = best_rank < np.inf
    return values.reshape(n_bags, m), filled.reshape(n_bags, m)


def _check_grid(s, occ_bag, thresholds, totals, bag_ids, m) -> None:
    """Raise unless every region of this pass fits the grid (module docstring)."""
    big = np.zeros(thresholds.size, dtype=bool)
    np.logical_or.at(big, occ_bag, ~(s < _LIMIT))
    bad = big | ~(thresholds < _LIMIT)
    if not bad.any():
        nu_top = np.zeros(thresholds.size, dtype=np.int64)
        np.maximum.at(nu_top, occ_bag, _top_band(s))
        bad = nu_top + _top_band(thresholds) > _MAX_BANDS_SUM
    if bad.any():
        b = int(np.flatnonzero(bad)[0])
        raise _grid_error(int(bag_ids[b]), float(totals[b]), m)


def sign_darts(codes: np.ndarray, offsets: np.ndarray, hashes: np.ndarray, weights: np.ndarray | None,
               m: int, seed: int, out: np.ndarray) -> None:
    """DartMinHash signatures of the bags ``codes[offsets[b]:offsets[b+1]]`` into ``out`` (n × m uint32).

    ``hashes`` are the distinct terms' 64-bit hashes and ``codes`` (int64) index them; ``weights``
    (None: all 1) are > 0 and finite, one per code. Empty bags are left as they are in ``out``. A
    bag whose total weight lies beyond the grid raises ValueError (module docstring). Runs in C
    (simcore/_dart.c) where it was built, else :func:`sign_darts_numpy`: the same bits.
    """
    if _c_sign is None:
        sign_darts_numpy(codes, offsets, hashes, weights, m, seed, out)
        return
    codes = np.ascontiguousarray(codes, dtype=np.int64)
    offsets = np.ascontiguousarray(offsets, dtype=np.int64)
    x = None if weights is None else np.ascontiguousarray(weights, dtype=np.float64)
    failed = _c_sign(codes, offsets, np.ascontiguousarray(hashes, dtype=np.uint64), x, m, int(seed_key(seed)),
                     darts_per_unit(m), 1.0, POISSON_THRESHOLDS, out)
    if failed >= 0:
        s, e = offsets[failed], offsets[failed + 1]
        raise _grid_error(failed, float(e - s) if x is None else float(x[s:e].sum()), m)


def sign_darts_once(codes: np.ndarray, offsets: np.ndarray, hashes: np.ndarray, weights: np.ndarray | None,
                    m: int, seed: int, lam: float, threshold: float, out: np.ndarray) -> None:
    """One pass of the darts of every bag below the same rank ``threshold``, ``lam`` darts per unit
    of weight × rank, into ``out`` (n × m uint32): at label j the identity of the bag's lowest dart
    labelled j, or EMPTY where it has none below the threshold. Arguments as :func:`sign_darts`.

    With one threshold for every bag, two bags agree at a label that either has (not EMPTY in
    both) exactly when the lowest dart of that label in the union of their regions lies in both:
    with probability Σmin/Σmax, the positions independent. So agreements / labels not EMPTY in
    both estimate the weighted Jaccard as the signatures of :func:`sign_darts` do, from a number
    of labels that varies by pair, at the cost of λ·Σx·threshold darts a bag with no coupon
    collecting (m(ln m + 2) darts for :func:`sign_darts`'s m labels). In C where it was built,
    else numpy: the same bits."""
    if _c_sign is None:
        sign_darts_numpy(codes, offsets, hashes, weights, m, seed, out, once=(lam, threshold))
        return
    codes = np.ascontiguousarray(codes, dtype=np.int64)
    offsets = np.ascontiguousarray(offsets, dtype=np.int64)
    x = None if weights is None else np.ascontiguousarray(weights, dtype=np.float64)
    failed = _c_sign(codes, offsets, np.ascontiguousarray(hashes, dtype=np.uint64), x, m, int(seed_key(seed)),
                     float(lam), float(threshold), POISSON_THRESHOLDS, out, True)
    if failed >= 0:
        s, e = offsets[failed], offsets[failed + 1]
        raise _grid_error(failed, float(e - s) if x is None else float(x[s:e].sum()), m)


def sign_darts_numpy(codes: np.ndarray, offsets: np.ndarray, hashes: np.ndarray, weights: np.ndarray | None,
                     m: int, seed: int, out: np.ndarray, *, once: tuple[float, float] | None = None) -> None:
    """:func:`sign_darts` in numpy: the reference of simcore/_dart.c, and its stand-in where it was not built.

    Bags are signed in blocks; a pass draws the darts of every bag of the block below its rank
    threshold at once, and the bags with a label still missing go round again with T doubled.
    ``once`` = (λ, T): :func:`sign_darts_once`'s one pass at the absolute threshold T instead.
    """
    lam = darts_per_unit(m) if once is None else float(once[0])
    key = seed_key(seed)
    lengths = np.diff(offsets)
    x = np.ones(codes.size) if weights is None else np.asarray(weights, dtype=np.float64)
    # Bags in blocks of about _BLOCK_CELLS expected cells: the darts of a bag, and a few cells per term.
    per_bag = lengths * 4 + 2 * lam
    cuts = np.searchsorted(np.cumsum(per_bag), np.arange(0, per_bag.sum(), _BLOCK_CELLS), side="right")
    cuts = np.unique(np.concatenate([[0], cuts, [lengths.size]]))
    for b0, b1 in zip(cuts[:-1], cuts[1:]):
        bags = np.arange(b0, b1)[lengths[b0:b1] > 0]
        if not bags.size:
            continue
        s_, e_ = offsets[bags[0]], offsets[bags[-1] + 1]
        local_len = lengths[bags]
        occ_bag = np.repeat(np.arange(bags.size), local_len)
        elem = hashes[codes[s_:e_]] ^ key
        s = x[s_:e_] * lam
        totals = np.add.reduceat(x[s_:e_], offsets[bags] - s_)
        thresholds = _first_thresholds(totals) if once is None else np.full(bags.size, float(once[1]))
        pending = np.arange(bags.size)
        while pending.size:
            sel = np.isin(occ_bag, pending)
            local = np.searchsorted(pending, occ_bag[sel])
            _check_grid(s[sel], local, thresholds[pending], totals[pending], bags[pending], m)
            values, filled = _pass(elem[sel], s[sel], local, thresholds[pending], m)
            if once is not None:
                out[bags[pending]] = np.where(filled, values, np.uint32(0xFFFFFFFF))
                break
            done = filled.all(axis=1)
            out[bags[pending[done]]] = values[done]
            pending = pending[~done]
            thresholds[pending] *= 2.0
