"""Near-duplicate pages and mirrored hosts from word shingles and min-hash sketches.

The law is the lecture notes: ``papers/lecture-similarity-queries-and-evaluation.txt``
("Detection of identical or near-identical pages": shingles of K = 10 words, sketches,
pairs above a resemblance threshold, connected components — Broder et al.) and
``papers/lecture-web-size-duplicates-pagerank.md`` ("Duplicates and mirrors": sketch[i] =
MIN π_i(f(s)) over the shingles s of a document; a sketch of 200; "Documents which share more
than t (say 80%) corresponding vector elements are similar"; mirror candidates from shared
paths and sketches, validated by checking 20 sampled paths).

Hash functions and seeds are parameters (STYLE.md habit 6): ``shingle_fingerprints`` takes
``hash_fn`` and ``seed``; sketches carry their ``SketchParams`` and comparing sketches made
with different parameters raises.
"""
from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from urllib.parse import urlsplit

import mmh3
import numpy as np

HashFn = Callable[[str, int], int]

_EMPTY = np.uint32(0xFFFFFFFF)  # sketch value of a document without shingles
_MASK64 = (1 << 64) - 1


def mmh3_fingerprint(text: str, seed: int) -> int:
    """64-bit unsigned MurmurHash3 of ``text`` (the default shingle fingerprint f)."""
    return mmh3.hash64(text, seed, signed=False)[0]


def shingle_fingerprints(
    words: Sequence[str], k: int = 10, *, seed: int = 0, hash_fn: HashFn = mmh3_fingerprint
) -> np.ndarray:
    """The set S(D) of K-word shingles of a document, as sorted unique uint64 fingerprints.

    Lecture: "Shingle: K consecutive words ... (Rather than save actual shingle, you can use a
    fingerprint of the shingle.)" with K = 10; words are lower-cased first ("Normalize by
    removing HTML and converting to lower-case"). A document shorter than K words has one
    shingle, its whole text, so short identical pages still match; no words, no shingles.
    """
    if k < 1:
        raise ValueError(f"expected a shingle size k >= 1, got {k}")
    lowered = [w.lower() for w in words]
    if not lowered:
        return np.empty(0, dtype=np.uint64)
    span = min(k, len(lowered))
    prints = []
    for start in range(len(lowered) - span + 1):
        value = hash_fn(" ".join(lowered[start : start + span]), seed)
        if not 0 <= value <= _MASK64:
            raise ValueError(f"expected hash_fn to return an unsigned 64-bit integer, got {value}")
        prints.append(value)
    return np.unique(np.array(prints, dtype=np.uint64))


def resemblance(a: np.ndarray, b: np.ndarray) -> float:
    """Exact resemblance |S(A) ∩ S(B)| / |S(A) ∪ S(B)| of two fingerprint sets (Jaccard
    coefficient). Two empty sets share nothing: 0."""
    a, b = np.unique(a), np.unique(b)
    union = np.union1d(a, b).size
    if union == 0:
        return 0.0
    return np.intersect1d(a, b, assume_unique=True).size / union


# --------------------------------------------------------------------------------------
# Min-hash sketches
# --------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SketchParams:
    """Sketch length (lecture: "a sketch vector (e.g., of size 200)") and the seed of the
    permutations π_i.

    Each π_i is a strongly universal multiply-add-shift hash of the 64-bit fingerprint x =
    (hi, lo): π_i(x) = ((a_i·lo + c_i·hi + b_i) mod 2^64) >> 32, with a_i, c_i, b_i drawn
    from ``seed``; ``benchmarks``/tests check that its estimates track exact resemblance.
    """

    num_perm: int = 200
    seed: int = 1

    def __post_init__(self) -> None:
        if self.num_perm < 1:
            raise ValueError(f"expected num_perm >= 1, got {self.num_perm}")

    def coefficients(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        rng = np.random.default_rng(self.seed)
        a, c, b = (rng.integers(0, 2**64, self.num_perm, dtype=np.uint64, endpoint=False) for _ in range(3))
        return a | np.uint64(1), c | np.uint64(1), b


@dataclass(frozen=True, slots=True, eq=False)
class Sketches:
    """Min-hash sketches of D documents: ``values`` is D x num_perm uint32, row i the sketch
    of document i; ``empty[i]`` marks documents without shingles (never similar to anything)."""

    values: np.ndarray
    empty: np.ndarray
    params: SketchParams

    def __len__(self) -> int:
        return int(self.values.shape[0])

    def take(self, rows: np.ndarray) -> Sketches:
        """The sketches of documents ``rows``, in that order."""
        rows = np.asarray(rows, dtype=np.int64)
        return Sketches(self.values[rows], self.empty[rows], self.params)

    def check_comparable(self, other: Sketches) -> None:
        """Raise unless ``other`` was made with the same SketchParams."""
        if other.params != self.params:
            raise ValueError(
                f"cannot compare sketches made with {self.params} and {other.params}; sketch both "
                "sets of documents with the same SketchParams"
            )

    def estimate(self, i: int, j: int, other: Sketches | None = None) -> float:
        """Estimated resemblance of document i (here) and j (in ``other``, default here): the
        fraction of equal sketch positions, whose expectation is |S∩S'|/|S∪S'| (lecture)."""
        other = self if other is None else other
        self.check_comparable(other)
        if self.empty[i] or other.empty[j]:
            return 0.0
        return float(np.mean(self.values[i] == other.values[j]))


def sketch(fingerprint_sets: Sequence[np.ndarray], params: SketchParams = SketchParams()) -> Sketches:
    """sketch[i] = MIN over shingles s of π_i(f(s)) for each document (lecture, "Computing
    Sketch[i]"). ``fingerprint_sets`` are the outputs of ``shingle_fingerprints``."""
    sets = [np.unique(np.asarray(s, dtype=np.uint64)) for s in fingerprint_sets]
    sizes = np.array([s.size for s in sets], dtype=np.int64)
    empty = sizes == 0
    values = np.full((len(sets), params.num_perm), _EMPTY, dtype=np.uint32)
    filled = np.flatnonzero(~empty)
    if filled.size:
        everything = np.concatenate([sets[i] for i in filled])
        starts = np.concatenate([[0], np.cumsum(sizes[filled])[:-1]])
        lo = everything & np.uint64(0xFFFFFFFF)
        hi = everything >> np.uint64(32)
        a, c, b = params.coefficients()
        shift = np.uint64(32)
        for i in range(params.num_perm):
            hashed = (a[i] * lo + c[i] * hi + b[i]) >> shift
            values[filled, i] = np.minimum.reduceat(hashed, starts).astype(np.uint32)
    return Sketches(values, empty, params)


# --------------------------------------------------------------------------------------
# Pairs above a threshold and duplicate clusters
# --------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, eq=False)
class SimilarPairs:
    """Document pairs (first < second) whose estimated resemblance is at least the threshold."""

    first: np.ndarray
    second: np.ndarray
    estimate: np.ndarray

    def __len__(self) -> int:
        return int(self.first.size)


_MISS_TARGET = 1e-6


def band_rows(num_perm: int, threshold: float) -> int:
    """Rows per band for finding candidate pairs: the most rows (fewest false candidates)
    for which a pair at exactly ``threshold`` shares no band with probability ≤ 1e-6,
    (1 − t^r)^⌊m/r⌋ ≤ 1e-6; more similar pairs are missed even less often."""
    if not 0 < threshold <= 1:
        raise ValueError(f"expected a resemblance threshold in (0, 1], got {threshold}")
    best = 1
    for rows in range(1, num_perm + 1):
        bands = num_perm // rows
        if (1.0 - threshold**rows) ** bands <= _MISS_TARGET:
            best = rows
    return best


def similar_pairs(sketches: Sketches, threshold: float = 0.8) -> SimilarPairs:
    """All pairs of documents whose sketches agree on at least ``threshold`` of their positions
    (lecture Step 3, "compare sketches to see if they exceed resemblance threshold").

    Candidates are pairs that agree on a whole band of ``band_rows`` positions; each is then
    checked on the full sketch, so no pair below the threshold is returned. Documents without
    shingles are never paired.
    """
    rows = band_rows(sketches.params.num_perm, threshold)
    candidates = _band_candidates(sketches, rows)
    return _verified(sketches, candidates, threshold)


def _band_candidates(sketches: Sketches, rows: int) -> np.ndarray:
    """Unique candidate pairs encoded as first * D + second (first < second)."""
    values, d = sketches.values, len(sketches)
    live = np.flatnonzero(~sketches.empty)
    rng = np.random.default_rng(0)  # only mixes band values into bucket keys; collisions are re-checked
    found = []
    for start in range(0, sketches.params.num_perm - rows + 1, rows):
        keys = _band_keys(values[live, start : start + rows], _band_mix(rng, rows))
        order = np.argsort(keys, kind="stable")
        sorted_keys = keys[order]
        starts = np.concatenate([[0], np.flatnonzero(np.diff(sorted_keys)) + 1])
        ends = np.concatenate([starts[1:], [keys.size]])
        shared = ends - starts > 1
        for lo, hi in zip(starts[shared].tolist(), ends[shared].tolist()):
            members = np.sort(live[order[lo:hi]])
            i, j = np.triu_indices(members.size, 1)
            found.append(members[i] * d + members[j])
    if not found:
        return np.empty(0, dtype=np.int64)
    return np.unique(np.concatenate(found))


def _band_mix(rng: np.random.Generator, rows: int) -> np.ndarray:
    """Odd multipliers that mix one band's values into a bucket key."""
    return rng.integers(1, 2**63, rows, dtype=np.uint64) | np.uint64(1)


def _band_keys(band: np.ndarray, mix: np.ndarray) -> np.ndarray:
    """One bucket key per row of ``band`` (documents x rows of one band): equal bands give equal
    keys; unequal bands rarely do, and every candidate is checked on the full sketch anyway."""
    return (band.astype(np.uint64) * mix).sum(axis=1, dtype=np.uint64)


def _verified(sketches: Sketches, encoded: np.ndarray, threshold: float) -> SimilarPairs:
    d = len(sketches)
    first, second = encoded // max(d, 1), encoded % max(d, 1)
    estimate = np.empty(first.size)
    for lo in range(0, first.size, 65536):  # bounded temporaries for many candidates
        hi = lo + 65536
        estimate[lo:hi] = np.mean(sketches.values[first[lo:hi]] == sketches.values[second[lo:hi]], axis=1)
    keep = estimate >= threshold
    return SimilarPairs(first[keep], second[keep], estimate[keep])


@dataclass(frozen=True, slots=True, eq=False)
class Containment:
    """For each query document, its most resembling near-duplicate among the target documents:
    ``match[i]`` is the target's row (-1: none at or above the threshold) and ``estimate[i]``
    its estimated resemblance (0.0 when none); among equally resembling targets the first."""

    match: np.ndarray
    estimate: np.ndarray

    @property
    def found(self) -> np.ndarray:
        return self.match >= 0


def near_duplicates_in(queries: Sketches, targets: Sketches, threshold: float = 0.8) -> Containment:
    """Whether each query document has a near-duplicate among the targets: Bharat and Broder's
    "test if present in other engines" (lecture notes, "Random queries") with the lecture's
    resemblance test in place of a URL match, so a copy under another address counts.

    Candidates share a whole band of ``band_rows`` sketch positions with the query (the bands
    of the targets sorted once, each query looked up by binary search), then each candidate is
    checked on the full sketch: no target below ``threshold`` is returned, and one at exactly
    the threshold is missed with probability at most 1e-6. Targets with identical sketches are
    searched once. Documents without shingles have no near-duplicates.
    """
    queries.check_comparable(targets)
    rows = band_rows(queries.params.num_perm, threshold)
    match = np.full(len(queries), -1, dtype=np.int64)
    estimate = np.zeros(len(queries), dtype=np.float64)
    query_rows = np.flatnonzero(~queries.empty)
    target_rows = np.flatnonzero(~targets.empty)
    if not query_rows.size or not target_rows.size:
        return Containment(match, estimate)
    _, first = np.unique(targets.values[target_rows], axis=0, return_index=True)
    target_rows = target_rows[np.sort(first)]  # the first of each group of identical sketches
    rng = np.random.default_rng(0)  # only mixes band values into bucket keys; collisions are re-checked
    n_targets = len(targets)
    found = []
    for start in range(0, queries.params.num_perm - rows + 1, rows):
        mix = _band_mix(rng, rows)
        target_keys = _band_keys(targets.values[target_rows, start : start + rows], mix)
        order = np.argsort(target_keys, kind="stable")
        sorted_keys = target_keys[order]
        query_keys = _band_keys(queries.values[query_rows, start : start + rows], mix)
        lo = np.searchsorted(sorted_keys, query_keys, side="left")
        counts = np.searchsorted(sorted_keys, query_keys, side="right") - lo
        hit = np.flatnonzero(counts)
        if not hit.size:
            continue
        sizes = counts[hit]
        within = np.arange(sizes.sum()) - np.repeat(np.cumsum(sizes) - sizes, sizes)
        candidates = target_rows[order[np.repeat(lo[hit], sizes) + within]]
        found.append(np.repeat(query_rows[hit], sizes) * n_targets + candidates)
    if not found:
        return Containment(match, estimate)
    encoded = np.unique(np.concatenate(found))  # sorted by query, then target
    query, target = encoded // n_targets, encoded % n_targets
    agree = np.empty(encoded.size)
    for lo in range(0, encoded.size, 65536):  # bounded temporaries for many candidates
        hi = lo + 65536
        agree[lo:hi] = np.mean(queries.values[query[lo:hi]] == targets.values[target[lo:hi]], axis=1)
    keep = agree >= threshold
    query, target, agree = query[keep], target[keep], agree[keep]
    best = np.lexsort((target, -agree, query))  # per query: most resembling, then first
    query, target, agree = query[best], target[best], agree[best]
    head = np.concatenate([[True], query[1:] != query[:-1]]) if query.size else np.empty(0, dtype=bool)
    match[query[head]] = target[head]
    estimate[query[head]] = agree[head]
    return Containment(match, estimate)


class UnionFind:
    """Disjoint sets over 0..n-1 whose representative is the smallest member."""

    def __init__(self, n: int) -> None:
        self.parent = list(range(n))

    def find(self, x: int) -> int:
        parent = self.parent
        while parent[x] != x:
            parent[x] = parent[parent[x]]  # path halving
            x = parent[x]
        return x

    def union(self, x: int, y: int) -> None:
        rx, ry = self.find(x), self.find(y)
        if rx != ry:
            lo, hi = (rx, ry) if rx < ry else (ry, rx)
            self.parent[hi] = lo

    def labels(self) -> np.ndarray:
        return np.array([self.find(x) for x in range(len(self.parent))], dtype=np.int64)


@dataclass(frozen=True, slots=True, eq=False)
class DuplicateClusters:
    """Connected components of the near-duplicate graph (lecture Step 4).

    ``labels[i]`` is the representative of document i's cluster: the cluster member that comes
    first in the input, so callers put preferred pages first. ``pairs`` are the edges found.
    """

    labels: np.ndarray
    pairs: SimilarPairs
    skipped_empty: int

    @property
    def n_clusters(self) -> int:
        """Clusters with more than one document."""
        reps, counts = np.unique(self.labels, return_counts=True)
        return int((counts > 1).sum())

    @property
    def n_duplicates(self) -> int:
        """Documents that are not their cluster's representative (what collapsing removes)."""
        return int((self.labels != np.arange(self.labels.size)).sum())

    def clusters(self) -> list[np.ndarray]:
        """Members of each cluster with more than one document, representative first."""
        order = np.argsort(self.labels, kind="stable")
        groups = np.split(order, np.flatnonzero(np.diff(self.labels[order])) + 1)
        return [g for g in groups if g.size > 1]


def duplicate_clusters(sketches: Sketches, threshold: float = 0.8) -> DuplicateClusters:
    """Near-duplicate clusters: pairs above ``threshold`` joined transitively (union-find).

    Documents with identical sketches are joined first and only one of each such group enters
    the pairwise search, so a page copied a thousand times costs one comparison, not half a
    million; ``pairs`` then holds the star edges to that member instead of every pair.
    """
    d = len(sketches)
    uf = UnionFind(d)
    live = np.flatnonzero(~sketches.empty)
    firsts, seconds, estimates = [], [], []
    if live.size:
        _, first_of_group, group = np.unique(sketches.values[live], axis=0, return_index=True, return_inverse=True)
        group = group.ravel()
        head = live[first_of_group]  # earliest document with each distinct sketch
        for doc, g in zip(live, group):
            if doc != head[g]:
                uf.union(int(doc), int(head[g]))
                firsts.append(min(doc, head[g]))
                seconds.append(max(doc, head[g]))
                estimates.append(1.0)
        heads = np.zeros(d, dtype=bool)
        heads[head] = True
        reduced = Sketches(sketches.values, sketches.empty | ~heads, sketches.params)
        pairs = similar_pairs(reduced, threshold)
        for i, j in zip(pairs.first.tolist(), pairs.second.tolist()):
            uf.union(i, j)
        firsts.extend(pairs.first.tolist())
        seconds.extend(pairs.second.tolist())
        estimates.extend(pairs.estimate.tolist())
    edges = SimilarPairs(
        np.array(firsts, dtype=np.int64), np.array(seconds, dtype=np.int64), np.array(estimates, dtype=np.float64)
    )
    return DuplicateClusters(uf.labels(), edges, int(sketches.empty.sum()))


# --------------------------------------------------------------------------------------
# Mirrors
# --------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class MirrorParams:
    """Top-down mirror detection (lecture, "Implementation": Phase I candidate pairs from
    shared features, Phase II validation by checking "20 paths sampled from Host1").

    Candidates: host pairs sharing at least ``min_shared_paths`` paths (paths held by more
    than ``max_hosts_per_path`` hosts, such as ``/``, are too common to be evidence and are
    counted, not used), or holding at least ``min_duplicate_pages`` near-duplicate page pairs
    (sketch overlap). Validation samples up to ``sample_paths`` of the paths crawled on both
    hosts and asks each pair of pages to resemble at least ``threshold``; a mirror needs at
    least ``min_shared_paths`` sampled and a ``min_fraction`` of them matching ("for all (or
    most) paths").
    """

    min_shared_paths: int = 2
    min_duplicate_pages: int = 2
    max_hosts_per_path: int = 50
    sample_paths: int = 20
    threshold: float = 0.8
    min_fraction: float = 0.8
    seed: int = 0

    def __post_init__(self) -> None:
        for name in ("min_shared_paths", "min_duplicate_pages", "max_hosts_per_path", "sample_paths"):
            if getattr(self, name) < 1:
                raise ValueError(f"expected {name} >= 1, got {getattr(self, name)}")
        for name in ("threshold", "min_fraction"):
            if not 0 < getattr(self, name) <= 1:
                raise ValueError(f"expected {name} in (0, 1], got {getattr(self, name)}")


@dataclass(frozen=True, slots=True)
class MirrorPair:
    """A candidate host pair and the outcome of its validation."""

    host_a: str
    host_b: str
    shared_paths: int
    duplicate_pages: int
    sampled: int
    matched: int
    is_mirror: bool


@dataclass(frozen=True, slots=True, eq=False)
class MirrorReport:
    """Candidates in order (mirrors first, then by evidence) and what was left out."""

    pairs: list[MirrorPair]
    common_paths_ignored: int
    repeated_urls: int

    @property
    def mirrors(self) -> list[MirrorPair]:
        return [p for p in self.pairs if p.is_mirror]


def host_and_path(url: str) -> tuple[str, str]:
    """(host, path) of a URL: the lower-cased network location, and the path with its query
    (``/`` when empty). The scheme is ignored: http and https copies are the same page."""
    parts = urlsplit(url)
    path = parts.path or "/"
    if parts.query:
        path = f"{path}?{parts.query}"
    return parts.netloc.lower(), path


def find_mirrors(
    urls: Sequence[str],
    sketches: Sketches,
    params: MirrorParams = MirrorParams(),
    duplicates: SimilarPairs | None = None,
) -> MirrorReport:
    """Mirrored host pairs among the pages ``urls`` (row i of ``sketches`` is ``urls[i]``).

    ``duplicates`` are near-duplicate page pairs (default: ``similar_pairs(sketches,
    params.threshold)``) for the sketch-overlap candidates. Mirrors are host-level: the lecture's
    Host1/α ↔ Host2/β prefixes are taken at the host root.
    """
    if len(urls) != len(sketches):
        raise ValueError(f"expected one sketch per URL, got {len(urls)} URLs and {len(sketches)} sketches")
    page_of: dict[str, dict[str, int]] = defaultdict(dict)
    repeated = 0
    for i, url in enumerate(urls):
        host, path = host_and_path(url)
        if path in page_of[host]:
            repeated += 1  # e.g. the http and https copy of a page: the first one stands for both
            continue
        page_of[host][path] = i
    hosts_of_path: dict[str, list[str]] = defaultdict(list)
    for host, pages in page_of.items():
        for path in pages:
            hosts_of_path[path].append(host)

    shared: dict[tuple[str, str], int] = defaultdict(int)
    ignored = 0
    for hosts in hosts_of_path.values():
        if len(hosts) < 2:
            continue
        if len(hosts) > params.max_hosts_per_path:
            ignored += 1
            continue
        hosts = sorted(hosts)
        for x in range(len(hosts)):
            for y in range(x + 1, len(hosts)):
                shared[(hosts[x], hosts[y])] += 1

    if duplicates is None:
        duplicates = similar_pairs(sketches, params.threshold)
    host_of = [host_and_path(u)[0] for u in urls]
    dup_pages: dict[tuple[str, str], int] = defaultdict(int)
    for i, j in zip(duplicates.first.tolist(), duplicates.second.tolist()):
        a, b = host_of[i], host_of[j]
        if a != b:
            dup_pages[(min(a, b), max(a, b))] += 1

    candidates = {p for p, k in shared.items() if k >= params.min_shared_paths}
    candidates |= {p for p, k in dup_pages.items() if k >= params.min_duplicate_pages}
    rng = np.random.default_rng(params.seed)
    result = []
    for a, b in sorted(candidates):
        common = sorted(set(page_of[a]) & set(page_of[b]))
        if len(common) > params.sample_paths:
            picks = rng.choice(len(common), params.sample_paths, replace=False)
            common = [common[k] for k in sorted(picks)]
        matched = sum(
            sketches.estimate(page_of[a][path], page_of[b][path]) >= params.threshold for path in common
        )
        is_mirror = len(common) >= params.min_shared_paths and matched >= params.min_fraction * len(common)
        result.append(MirrorPair(a, b, shared.get((a, b), 0), dup_pages.get((a, b), 0), len(common), matched, is_mirror))
    result.sort(key=lambda p: (not p.is_mirror, -p.matched, -p.shared_paths, -p.duplicate_pages, p.host_a, p.host_b))
    return MirrorReport(result, ignored, repeated)
