"""Familial distance and the Kruskal–Goodman Γ of a similarity ordering (paper Section 2).

Given a source document s, the directory orders every other document d by its familial
distance d_f(s, d) (Definition 1: how far up from s's class the lowest common ancestor lies;
with the hierarchy collapsed at depth 3 it is 0 same, 1 sibling, 2 cousin, 3 unrelated). The
familial ordering (Definition 2) says d1 should rank above d2 when d_f(s, d1) < d_f(s, d2). A
similarity measure orders the same documents by sim(s, ·). Γ (Definition 3) is

    Γ = (C − D) / (C + D),

C (concordant) and D (discordant) counting the pairs both orderings order: pairs (d1, d2) with
d_f(s, d1) < d_f(s, d2) and sim(s, d1) ≠ sim(s, d2); a similarity tie is not a judgement and
is excluded (footnote 4: ties are nearly always two similarities of exactly 0). Section 2.3
aggregates over sources by summing C and D over every source document before dividing. The
partial Γs restrict d1 to the source's own class and d2 to a sibling, cousin or unrelated
class respectively.

Counting is exact and O(n log n) per source: each source row is sorted once (similarity,
then level), equal similarities get one dense rank, and for every pair of levels a binary
search of the nearer level's ranks among the farther level's gives how many documents lie
strictly below and strictly above — for a whole block of sources per numpy call.
``pair_counts_bruteforce`` is the O(n²)-per-source reference the tests compare against.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

SAME, SIBLING, COUSIN, UNRELATED = 0, 1, 2, 3
DISTANCE_NAMES = ("same", "sibling", "cousin", "unrelated")


def distance_names(depth: int) -> tuple[str, ...]:
    """The name of each familial distance 0..``depth`` in a directory collapsed at ``depth``: 0 is
    the same class, 1 a sibling, 2 a cousin, and ``depth`` unrelated (no common class below the
    root). At the paper's depth 3 these are :data:`DISTANCE_NAMES`; at depth 2 there are no
    cousins (distance 2 is unrelated); deeper, distances 3 .. depth−1 are "k levels apart"."""
    if depth < 1:
        raise ValueError(f"depth: expected at least 1 level, got {depth}")
    names = [{0: "same", 1: "sibling", 2: "cousin"}.get(k, f"{k} levels apart") for k in range(depth)]
    return (*names, "unrelated") if depth > 1 else ("same", "unrelated")


def partial_distance(level: int, depth: int) -> int | None:
    """The familial distance a partial Γ (SIBLING, COUSIN or UNRELATED) compares with the same
    class in a directory collapsed at ``depth``; None where the directory has no such pairs
    (cousins at depth 2). UNRELATED is always ``depth``."""
    if level == UNRELATED:
        return depth
    return level if level < depth else None

# Measure names as they appear in result tables.
GAMMA = "gamma"
PARTIAL_GAMMAS = {SIBLING: "sibling_gamma", COUSIN: "cousin_gamma", UNRELATED: "unrelated_gamma"}
SIBLING_GAMMA = PARTIAL_GAMMAS[SIBLING]  # the paper's headline measure (Section 5)
ORTHOGONALITY = "orthogonality"
GAMMA_MEASURES = (GAMMA, *PARTIAL_GAMMAS.values())
#: Every measure computed from :class:`PairCounts` (and bootstrapped by :func:`bootstrap`).
PAIR_COUNT_MEASURES = (*GAMMA_MEASURES, ORTHOGONALITY)

Class = tuple[str, ...]


def familial_distance(source: Class, other: Class) -> int:
    """d_f(s, d) of Definition 1 for classes at the same depth: levels from s's class up to the
    most specific class dominating both (0 same, 1 sibling, 2 cousin, depth = unrelated)."""
    if len(source) != len(other):
        raise ValueError(
            f"classes must lie at the same depth (the directory is collapsed to one depth): "
            f"got {len(source)} and {len(other)}"
        )
    common = 0
    for a, b in zip(source, other):
        if a != b:
            break
        common += 1
    return len(source) - common


def class_codes(classes: Sequence[Class]) -> np.ndarray:
    """Integer codes of every ancestor prefix: column k holds the id of ``cls[:k+1]``.

    Two documents share exactly ``c`` leading columns when their classes share a ``c``-level
    prefix, so familial distance is ``depth − (number of equal columns)``.
    """
    if not classes:
        return np.zeros((0, 0), dtype=np.int64)
    depth = len(classes[0])
    if any(len(c) != depth for c in classes):
        raise ValueError("all classes must have the same depth (collapse the directory first)")
    codes = np.empty((len(classes), depth), dtype=np.int64)
    for k in range(depth):
        ids: dict[Class, int] = {}
        for i, cls in enumerate(classes):
            codes[i, k] = ids.setdefault(cls[: k + 1], len(ids))
    return codes


def familial_distances(codes: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """d_f(s, d) for sources ``rows`` against every document: an int8 array (len(rows), n)."""
    depth = codes.shape[1]
    distance = np.full((len(rows), codes.shape[0]), depth, dtype=np.int8)
    for k in range(depth):
        distance -= codes[rows, k][:, None] == codes[None, :, k]
    return distance


@dataclass(frozen=True, slots=True)
class PairCounts:
    """Per-source pair counts from which every Γ of Section 2.3 and the bootstrap are built.

    ``concordant[i, t]`` / ``discordant[i, t]`` count, for source ``sources[i]``, the document
    pairs (d1, d2) with familial distances ``types[t] = (a, b)``, a < b, that the similarity
    ordering puts in the familial order (sim(s, d1) > sim(s, d2)) or against it. Ties are in
    neither. ``orthogonal[i]`` counts same-class documents with similarity exactly 0 and
    ``same_class[i]`` all same-class documents (Section 5.1, Figure 4).
    """

    sources: np.ndarray
    types: tuple[tuple[int, int], ...]
    concordant: np.ndarray
    discordant: np.ndarray
    orthogonal: np.ndarray
    same_class: np.ndarray

    def measure_columns(self, measure: str) -> list[int]:
        """The pair types a Γ measure sums: all of them for Γ, (0, b) for a partial Γ, with b the
        distance the partial Γ means at this depth (:func:`partial_distance`)."""
        if measure == GAMMA:
            return list(range(len(self.types)))
        depth = max((b for _, b in self.types), default=0)
        for level, name in PARTIAL_GAMMAS.items():
            if name == measure:
                target = partial_distance(level, depth)
                return [t for t, (a, b) in enumerate(self.types) if a == SAME and b == target]
        raise ValueError(f"unknown measure {measure!r}: expected one of {GAMMA_MEASURES}")

    @staticmethod
    def stack(parts: Sequence[PairCounts], depth: int) -> PairCounts:
        """The counts of the sources of ``parts`` (blocks of sources, in order) together."""
        if not parts:
            types = _pair_types(depth)
            empty = np.zeros((0, len(types)), dtype=np.int64)
            return PairCounts(np.zeros(0, np.int64), types, empty, empty, np.zeros(0, np.int64), np.zeros(0, np.int64))
        return PairCounts(np.concatenate([p.sources for p in parts]), parts[0].types,
                          np.concatenate([p.concordant for p in parts]), np.concatenate([p.discordant for p in parts]),
                          np.concatenate([p.orthogonal for p in parts]), np.concatenate([p.same_class for p in parts]))

    def per_source(self, measure: str) -> tuple[np.ndarray, np.ndarray]:
        """(C, D) per source for ``measure``."""
        cols = self.measure_columns(measure)
        return self.concordant[:, cols].sum(axis=1), self.discordant[:, cols].sum(axis=1)


def _pair_types(depth: int) -> tuple[tuple[int, int], ...]:
    return tuple((a, b) for b in range(1, depth + 1) for a in range(b))


# Similarities equal in all but their last TIE_BITS mantissa bits (a relative 2^-41, about
# 5e-13) are ties: the same two bags give a similarity whose last bits depend on the order its
# sums were taken in (e.g. how the crawl was split into files), and a judgement must not hang
# on that. Rounding the mantissa keeps zero at zero and tiny values apart from it.
TIE_BITS = 12


def _check_similarity_block(block: np.ndarray) -> np.ndarray:
    block = np.asarray(block, dtype=np.float64)
    if np.isnan(block).any():
        raise ValueError("similarities contain NaN: expected real numbers for every pair")
    return tie_round(block)


def tie_round(values: np.ndarray) -> np.ndarray:
    """Similarities as Γ compares them: the last ``TIE_BITS`` mantissa bits rounded off, so that
    values equal but for summation order are ties."""
    return _round_mantissa(values, TIE_BITS)


def _round_mantissa(values: np.ndarray, bits: int) -> np.ndarray:
    """``values`` with the last ``bits`` bits of each mantissa rounded off (to nearest); an
    order-preserving map that keeps signs, zeros and infinities."""
    raw = np.ascontiguousarray(values, dtype=np.float64).view(np.uint64)
    half, mask = np.uint64(1 << (bits - 1)), ~np.uint64((1 << bits) - 1)
    return ((raw + half) & mask).view(np.float64)


def _rows(similarity, start: int, stop: int) -> np.ndarray:
    block = similarity[start:stop]
    if hasattr(block, "toarray"):
        block = block.toarray()
    return _check_similarity_block(block)


def pair_counts(similarity, codes: np.ndarray, *, block_elements: int = 1 << 18) -> PairCounts:
    """Exact concordant/discordant counts for every document as a source (Section 2.3).

    ``similarity`` is an (n, n) array, or a scipy sparse matrix (absent entries are similarity
    0), or any object whose row slices are arrays, whose row s holds sim(s, ·); ``codes`` comes
    from :func:`class_codes` for the same n documents. The diagonal (a source against itself)
    is never counted. Rows are processed in blocks of about ``block_elements`` entries so memory
    stays bounded.
    """
    n = codes.shape[0]
    if similarity.shape != (n, n):
        raise ValueError(f"expected an ({n}, {n}) similarity matrix for {n} documents, got {similarity.shape}")
    step = max(1, block_elements // max(n, 1))
    return PairCounts.stack([pair_counts_rows(_rows(similarity, start, min(n, start + step)), codes,
                                              np.arange(start, min(n, start + step)), block_elements=block_elements)
                             for start in range(0, n, step)], codes.shape[1])


def pair_counts_rows(sims: np.ndarray, codes: np.ndarray, rows: np.ndarray, *,
                     block_elements: int = 1 << 18) -> PairCounts:
    """:func:`pair_counts` for the sources ``rows`` alone, from their similarity rows ``sims``
    (len(rows) × n, row i against every document): the per-source counts are independent, so
    a caller holding one block of rows of the similarity at a time (simweb.core.similarity.
    ExactRows) counts block by block and stacks the blocks (:meth:`PairCounts.stack`)."""
    n, depth = codes.shape
    rows = np.asarray(rows, dtype=np.int64)
    if np.shape(sims) != (rows.size, n):
        raise ValueError(f"expected the similarity rows of {rows.size} sources against {n} documents, got {np.shape(sims)}")
    types = _pair_types(depth)
    type_index = {t: i for i, t in enumerate(types)}
    concordant = np.zeros((rows.size, len(types)), dtype=np.int64)
    discordant = np.zeros((rows.size, len(types)), dtype=np.int64)
    orthogonal = np.zeros(rows.size, dtype=np.int64)
    same_class = np.zeros(rows.size, dtype=np.int64)
    step = max(1, block_elements // max(n, 1))
    for start in range(0, rows.size, step):
        stop = min(rows.size, start + step)
        block = rows[start:stop]
        local = np.arange(stop - start)
        block_sims = _check_similarity_block(sims[start:stop])
        levels = familial_distances(codes, block)

        same = levels == SAME
        same[local, block] = False  # a source is not compared with itself
        same_class[start:stop] = same.sum(axis=1)
        orthogonal[start:stop] = (same & (block_sims == 0.0)).sum(axis=1)

        below, above = _count_block(block_sims, levels, depth)
        # The source itself sits at distance 0 in its own row; take its pairs back out.
        own = block_sims[local, block][:, None]
        for b in range(1, depth + 1):
            at_b = levels == b
            t = type_index[(SAME, b)]
            below[t] -= (at_b & (block_sims < own)).sum(axis=1)
            above[t] -= (at_b & (block_sims > own)).sum(axis=1)
        for t in range(len(types)):
            concordant[start:stop, t] = below[t]
            discordant[start:stop, t] = above[t]
    return PairCounts(rows, types, concordant, discordant, orthogonal, same_class)


def _sort_keys(sims: np.ndarray, levels: np.ndarray, level_bits: int) -> np.ndarray:
    """Row-wise sortable uint64 keys: an order-preserving code of the similarity, then the level.

    Non-negative doubles below 2 (Jaccard and cosine lie in [0, 1]) keep their order as raw
    bit patterns, which leave the two top bits free; other values are replaced by their exact
    dense rank within the block. Either way equal similarities get equal codes, so ties stay ties.
    """
    if level_bits <= 2 and sims.size and sims.min() >= 0.0 and sims.max() < 2.0:
        code = (sims + 0.0).view(np.uint64)  # + 0.0 turns -0.0 into 0.0
    else:
        _, rank = np.unique(sims, return_inverse=True)
        code = rank.reshape(sims.shape).astype(np.uint64)
    return (code << np.uint64(level_bits)) | levels.astype(np.uint64)


def _count_block(sims: np.ndarray, levels: np.ndarray, depth: int) -> tuple[dict, dict]:
    """For each pair type (a, b), per row: Σ over documents d1 at level a of the number of
    documents at level b with a strictly lower similarity (``below``) / strictly higher
    (``above``).

    One row-wise sort of (similarity, level) keys; within each sorted row equal similarities
    share a dense rank, and ``row · (n + 1) + rank`` orders the whole block. Picking one
    level's entries out of the sorted block keeps them sorted, so every row's counts come
    from two ``np.searchsorted`` calls per level pair for the whole block: O(n log n) per row.
    """
    level_bits = max(1, int(depth).bit_length())
    keys = _sort_keys(sims, levels, level_bits)
    keys.sort(axis=1)
    rows, n = keys.shape
    level = (keys & np.uint64((1 << level_bits) - 1)).astype(np.int8)
    value = keys >> np.uint64(level_bits)
    new_value = np.empty((rows, n), dtype=bool)
    new_value[:, 0] = True
    np.not_equal(value[:, 1:], value[:, :-1], out=new_value[:, 1:])
    del keys, value
    stride = n + 1
    rank = np.cumsum(new_value, axis=1, dtype=np.int64)  # dense rank within the row, 1..n
    rank += (np.arange(rows, dtype=np.int64) * stride)[:, None]
    flat_rank, flat_level = rank.ravel(), level.ravel()
    by_level = [flat_rank[flat_level == g] for g in range(depth + 1)]  # each sorted
    row_bounds = np.arange(rows + 1, dtype=np.int64) * stride
    below: dict = {}
    above: dict = {}
    t = 0
    for b in range(1, depth + 1):
        lower = by_level[b]
        edges = np.searchsorted(lower, row_bounds)  # where each row's level-b entries start
        for a in range(b):
            upper = by_level[a]
            row = upper // stride
            strictly_below = np.searchsorted(lower, upper, side="left") - edges[row]
            strictly_above = edges[row + 1] - np.searchsorted(lower, upper, side="right")
            below[t] = np.bincount(row, weights=strictly_below, minlength=rows).astype(np.int64)
            above[t] = np.bincount(row, weights=strictly_above, minlength=rows).astype(np.int64)
            t += 1
    return below, above


@dataclass(frozen=True, slots=True)
class SiblingCounts:
    """The sibling-Γ's pairs split by the sibling class they compare with (Section 2.3): row r
    counts, for source ``sources[r]`` and one of its sibling classes ``classes[r]`` (a class code,
    ``class_codes(...)[:, -1]``), the pairs (d1, d2) with d1 in the source's class and d2 in that
    class, that the similarity orders in the familial order (``concordant``) or against it
    (``discordant``). Summed over a source's rows they are its sibling-Γ counts of
    :class:`PairCounts`; restricted to rows whose two classes lie in a set of classes, the
    sibling-Γ of that set alone (simweb.core.crossval)."""

    sources: np.ndarray
    classes: np.ndarray
    concordant: np.ndarray
    discordant: np.ndarray

    @staticmethod
    def stack(parts: Sequence[SiblingCounts]) -> SiblingCounts:
        """The rows of ``parts`` (blocks of sources, in order) together."""
        if not parts:
            empty = np.zeros(0, dtype=np.int64)
            return SiblingCounts(empty, empty.copy(), empty.copy(), empty.copy())
        return SiblingCounts(*(np.concatenate([getattr(p, k) for p in parts])
                               for k in ("sources", "classes", "concordant", "discordant")))


def sibling_counts(similarity, codes: np.ndarray, *, block_elements: int = 1 << 18) -> SiblingCounts:
    """:class:`SiblingCounts` of every source: for each document d2 of a sibling class, the
    same-class documents d1 (not the source) more and less similar to the source than d2, added
    up per sibling class. Ties as in :func:`pair_counts` (``tie_round``); rows ordered by source
    then class."""
    n = codes.shape[0]
    if similarity.shape != (n, n):
        raise ValueError(f"expected an ({n}, {n}) similarity matrix for {n} documents, got {similarity.shape}")
    step = max(1, block_elements // max(n, 1))
    return SiblingCounts.stack([sibling_counts_rows(_rows(similarity, start, min(n, start + step)), codes,
                                                    np.arange(start, min(n, start + step)))
                                for start in range(0, n, step)])


def sibling_counts_rows(sims: np.ndarray, codes: np.ndarray, rows: np.ndarray) -> SiblingCounts:
    """:func:`sibling_counts` for the sources ``rows`` alone, from their similarity rows ``sims``
    (len(rows) × n), as :func:`pair_counts_rows` counts a block of sources."""
    n = codes.shape[0]
    rows = np.asarray(rows, dtype=np.int64)
    if np.shape(sims) != (rows.size, n):
        raise ValueError(f"expected the similarity rows of {rows.size} sources against {n} documents, got {np.shape(sims)}")
    sims = _check_similarity_block(sims)
    levels = familial_distances(codes, rows)
    out_s, out_c, out_con, out_dis = [], [], [], []
    for i, s in enumerate(rows.tolist()):
        same = np.flatnonzero(levels[i] == SAME)
        same = np.sort(sims[i, same[same != s]])
        sibling = np.flatnonzero(levels[i] == SIBLING)
        if not same.size or not sibling.size:
            continue
        v = sims[i, sibling]
        above = same.size - np.searchsorted(same, v, side="right")  # d1 more similar than d2: concordant
        below = np.searchsorted(same, v, side="left")  # d1 less similar: discordant
        classes, at = np.unique(codes[sibling, -1], return_inverse=True)
        out_s.append(np.full(classes.size, s, dtype=np.int64))
        out_c.append(classes.astype(np.int64))
        out_con.append(np.bincount(at, weights=above, minlength=classes.size).astype(np.int64))
        out_dis.append(np.bincount(at, weights=below, minlength=classes.size).astype(np.int64))
    if not out_s:
        empty = np.zeros(0, dtype=np.int64)
        return SiblingCounts(empty, empty.copy(), empty.copy(), empty.copy())
    return SiblingCounts(*(np.concatenate(x) for x in (out_s, out_c, out_con, out_dis)))


def pair_counts_bruteforce(similarity, codes: np.ndarray) -> PairCounts:
    """The O(n²)-per-source reference for :func:`pair_counts`: every pair compared directly."""
    n, depth = codes.shape
    sims = _rows(similarity, 0, n)
    types = _pair_types(depth)
    type_index = {t: i for i, t in enumerate(types)}
    concordant = np.zeros((n, len(types)), dtype=np.int64)
    discordant = np.zeros((n, len(types)), dtype=np.int64)
    orthogonal = np.zeros(n, dtype=np.int64)
    same_class = np.zeros(n, dtype=np.int64)
    for s in range(n):
        dist = [depth - int((codes[s] == codes[d]).sum()) for d in range(n)]
        others = [d for d in range(n) if d != s]
        for d in others:
            if dist[d] == SAME:
                same_class[s] += 1
                orthogonal[s] += sims[s, d] == 0.0
        for d1 in others:
            for d2 in others:
                if dist[d1] < dist[d2]:
                    t = type_index[(dist[d1], dist[d2])]
                    if sims[s, d1] > sims[s, d2]:
                        concordant[s, t] += 1
                    elif sims[s, d1] < sims[s, d2]:
                        discordant[s, t] += 1
    return PairCounts(np.arange(n), types, concordant, discordant, orthogonal, same_class)


def gamma_from_counts(concordant: int | np.ndarray, discordant: int | np.ndarray) -> float:
    """Γ = (C − D) / (C + D) (Definition 3); NaN when no pair is ordered by both."""
    c, d = int(np.sum(concordant)), int(np.sum(discordant))
    return (c - d) / (c + d) if c + d else float("nan")


def gammas(counts: PairCounts) -> dict[str, float]:
    """Γ and the sibling, cousin and unrelated partial Γs, summed over all sources (Section 2.3)."""
    return {m: gamma_from_counts(*counts.per_source(m)) for m in GAMMA_MEASURES}


def orthogonality(counts: PairCounts) -> float:
    """Intra-cluster orthogonality (Section 5.1, Figure 4): the fraction of same-class document
    pairs with no common term, i.e. similarity exactly 0. NaN without same-class pairs."""
    total = int(counts.same_class.sum())
    return int(counts.orthogonal.sum()) / total if total else float("nan")


def source_gamma(counts: PairCounts, measure: str = GAMMA) -> np.ndarray:
    """Γ of each source on its own (the per-document Γ of Figure 2); NaN where undefined."""
    c, d = counts.per_source(measure)
    total = c + d
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(total > 0, (c - d) / np.where(total > 0, total, 1), np.nan)


@dataclass(frozen=True, slots=True)
class Estimate:
    """A measured value with a bootstrap percentile interval and standard error."""

    value: float
    low: float
    high: float
    se: float


def _group_sums(values: np.ndarray, groups: np.ndarray, n_groups: int) -> np.ndarray:
    return np.bincount(groups, weights=values.astype(np.float64), minlength=n_groups)


def _resample_weights(n_groups: int, n_resamples: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return rng.multinomial(n_groups, np.full(n_groups, 1.0 / n_groups), size=n_resamples).astype(np.float64)


def _statistics(counts: PairCounts) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Per-source (numerator, denominator) of every measure, so each is a ratio of sums."""
    stats = {}
    for m in GAMMA_MEASURES:
        c, d = counts.per_source(m)
        stats[m] = (c - d, c + d)
    stats[ORTHOGONALITY] = (counts.orthogonal, counts.same_class)
    return stats


def bootstrap(
    counts: PairCounts,
    groups: np.ndarray,
    *,
    n_resamples: int = 1000,
    seed: int = 0,
    level: float = 0.95,
) -> dict[str, Estimate]:
    """Every measure with a cluster-bootstrap percentile interval.

    ``groups[i]`` labels source i's resampling unit. Resampling whole classes rather than single
    sources is the honest choice when sources of one class share their ground truth and are
    therefore correlated; pass ``np.arange(n)`` to resample sources. Each resample draws the
    units with replacement and recomputes each measure as a ratio of summed counts, exactly
    as the point estimate is computed.
    """
    return bootstrap_ratios(_statistics(counts), groups, n_resamples=n_resamples, seed=seed, level=level)


def bootstrap_ratios(
    statistics: dict[str, tuple[np.ndarray, np.ndarray]],
    groups: np.ndarray,
    *,
    n_resamples: int = 1000,
    seed: int = 0,
    level: float = 0.95,
) -> dict[str, Estimate]:
    """Ratios of sums Σ numerator / Σ denominator over sources, each with the cluster-bootstrap
    interval of :func:`bootstrap` (the same resampled units for every measure and seed).

    ``statistics[measure]`` holds one (numerator, denominator) per source; a source that does
    not count towards a measure has denominator 0. Γ is (C − D) / (C + D) summed this way; a
    mean of per-query values (e.g. precision at 10) is Σ value / number of queries.
    """
    groups = _dense_groups(groups)
    n_groups = int(groups.max()) + 1 if groups.size else 0
    weights = _resample_weights(n_groups, n_resamples, seed) if n_groups else np.zeros((0, 0))
    return {measure: _estimate(num, den, groups, n_groups, weights, level)
            for measure, (num, den) in statistics.items()}


def bootstrap_difference(
    a: PairCounts,
    b: PairCounts,
    groups: np.ndarray,
    *,
    n_resamples: int = 1000,
    seed: int = 0,
    level: float = 0.95,
) -> dict[str, Estimate]:
    """measure(a) − measure(b) for two strategies on the same sample, with a paired bootstrap
    interval (the same resampled units for both), so two strategies can be told apart: an
    interval excluding 0 says the difference is not resampling noise."""
    if not np.array_equal(a.sources, b.sources):
        raise ValueError("both strategies must be counted on the same sample of sources")
    groups = _dense_groups(groups)
    n_groups = int(groups.max()) + 1 if groups.size else 0
    weights = _resample_weights(n_groups, n_resamples, seed)
    stats_a, stats_b = _statistics(a), _statistics(b)
    out = {}
    for measure in stats_a:
        na, da = (_group_sums(x, groups, n_groups) for x in stats_a[measure])
        nb, db = (_group_sums(x, groups, n_groups) for x in stats_b[measure])
        value = _ratio(na.sum(), da.sum()) - _ratio(nb.sum(), db.sum())
        with np.errstate(invalid="ignore", divide="ignore"):
            draws = (weights @ na) / (weights @ da) - (weights @ nb) / (weights @ db)
        out[measure] = _interval(value, draws, level)
    return out


def _dense_groups(groups: np.ndarray) -> np.ndarray:
    _, dense = np.unique(np.asarray(groups), return_inverse=True)
    return dense.ravel()


def _ratio(num: float, den: float) -> float:
    return float(num) / float(den) if den else float("nan")


def _estimate(num, den, groups, n_groups, weights, level) -> Estimate:
    gn, gd = _group_sums(num, groups, n_groups), _group_sums(den, groups, n_groups)
    value = _ratio(gn.sum(), gd.sum())
    if not n_groups:
        return Estimate(value, float("nan"), float("nan"), float("nan"))
    with np.errstate(invalid="ignore", divide="ignore"):
        draws = (weights @ gn) / (weights @ gd)
    return _interval(value, draws, level)


def _interval(value: float, draws: np.ndarray, level: float) -> Estimate:
    draws = draws[np.isfinite(draws)]
    if not np.isfinite(value) or draws.size < 2:
        return Estimate(value, float("nan"), float("nan"), float("nan"))
    tail = (1.0 - level) / 2.0
    low, high = np.quantile(draws, [tail, 1.0 - tail])
    return Estimate(value, float(low), float(high), float(draws.std(ddof=1)))
