"""PROCESSQUERY over the signature index H and its inversion I (paper Section 6.2, Figure 11).

H is the n × m matrix of min-hash signatures, one row per document id. I maps each
(position j, signature value h) to the sorted ids of the documents u with H[u, j] = h. Here I
is three flat arrays, the compressed-sparse-row layout of the file format
(``tasks/index_store.py``):

    keys     uint64, rising: one per bucket, (j << 32) | h
    offsets  K + 1 rising integers: bucket b holds docs[offsets[b]:offsets[b + 1]]
    docs     uint32 document ids, rising within a bucket

A bucket whose value no other document shares can never report a collision, so inversion
drops it (lossless); documents left out of I (the paper's low in-degree filter, Section 7.1)
can still be queried from H but are never results.

Figure 11 counts, for each document, the positions where it shares the query's signature;
sim = count / m estimates the bag Jaccard, and the documents with sim ≥ α are returned ranked
(ties by document id). Here the m buckets of a query are found at once through an in-memory
radix directory over the keys (:class:`_Directory`, about 2 bytes per key, built once per
opened index; a binary search when the keys are too crowded for it) and one sort counts the
collisions; a batch of queries shares both. Given H, the count skips each query's largest
buckets by a pigeonhole bound and reads the candidates' counts from H (same result, see
:func:`process_queries`). A single query counts every one of its buckets' postings instead where
that reads at most EVERY_BUCKET_RATIOS times as many (:func:`full_count`): a posting is 4 bytes
next to the last, a row of H 320 bytes anywhere, and the postings are swept a block of documents
at a time so that their counts stay in cache (simcore/_rerank.c, counted).

A single query costs a few dozen array operations on arrays of a few hundred elements, so its
time is their fixed cost plus the cache misses of its m random look-ups; its path
(:func:`_process_one`) keeps every step one-dimensional and of one dtype.
"""
from __future__ import annotations

import math
import threading
from dataclasses import dataclass, field

import numpy as np

from simweb.core.minhash import EMPTY

try:
    from simweb.core._rerank import agreements as _c_agreements
    from simweb.core._rerank import candidates as _c_candidates
    from simweb.core._rerank import counted as _c_counted
except ImportError:  # pragma: no cover - depends on the build
    _c_agreements = _c_candidates = _c_counted = None

__all__ = [
    "RERANK_SIGMAS",
    "InvertedIndex",
    "Matches",
    "agreements",
    "all_pairs",
    "bucket_keys",
    "candidate_alpha",
    "count_candidates",
    "exact_order",
    "full_count",
    "gather",
    "invert",
    "min_count",
    "prepare",
    "process_queries",
    "process_query",
    "query_buckets",
]

# Postings gathered per batch step: small enough for the counting sort to stay in cache.
_POSTINGS_BUDGET = 262_144
# Query keys looked up at once in batch mode (each reads a window of a few keys).
_LOOKUP_CHUNK = 16_384


@dataclass(frozen=True, slots=True, eq=False)
class InvertedIndex:
    """I in CSR form (see the module docstring); the arrays may be memory-mapped."""

    keys: np.ndarray
    offsets: np.ndarray
    docs: np.ndarray
    m: int
    # The in-memory directory over the keys, built on the first single query (see _Directory).
    _directory: dict = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        if self.keys.dtype != np.uint64 or self.docs.dtype != np.uint32:
            raise ValueError(f"inverted index: expected uint64 keys and uint32 docs, got {self.keys.dtype}, {self.docs.dtype}")
        if self.offsets.shape != (self.keys.size + 1,):
            raise ValueError(
                f"inverted index: expected {self.keys.size + 1} offsets for {self.keys.size} buckets, "
                f"got {self.offsets.shape[0]}"
            )

    @property
    def n_buckets(self) -> int:
        return int(self.keys.size)

    @property
    def n_postings(self) -> int:
        return int(self.docs.size)


@dataclass(frozen=True, slots=True, eq=False)
class Matches:
    """The documents similar to one query, best first: ids and collision counts (sim = count / m)."""

    query: int
    docs: np.ndarray
    counts: np.ndarray
    m: int

    @property
    def similarities(self) -> np.ndarray:
        return self.counts / self.m

    def __len__(self) -> int:
        return int(self.docs.size)


def min_count(alpha: float, m: int) -> int:
    """The least collision count c with c / m ≥ α (at least 1: a document sharing nothing is not similar)."""
    if not 0.0 <= alpha <= 1.0 or math.isnan(alpha):
        raise ValueError(f"alpha: expected a similarity threshold in [0, 1], got {alpha!r}")
    return max(1, math.ceil(alpha * m - 1e-9))


#: How many standard deviations of the estimate below α the candidates of an exact re-rank reach.
RERANK_SIGMAS = 2.0


def candidate_alpha(alpha: float, m: int, sigmas: float = RERANK_SIGMAS) -> float:
    """The threshold of the candidates an exact re-rank at α looks at: α − ``sigmas``·σ, with
    σ = √(α(1−α)/m) the spread of the m-position estimate of a Jaccard value α (Section 6.2;
    the positions of an exact weighted min-hash are independent samples).

    The estimate of a pair whose exact Jaccard J ≥ α falls below α − 2σ(α) with probability
    under 2.5 % (less the further J lies above α), where PROCESSQUERY at α itself misses about
    half of the pairs with J just above α; the exact similarity of the candidates then keeps
    exactly the pairs ≥ α.
    """
    if sigmas < 0 or math.isnan(sigmas):
        raise ValueError(f"sigmas: expected a number of standard deviations ≥ 0, got {sigmas!r}")
    min_count(alpha, m)  # checks α
    return max(0.0, alpha - sigmas * math.sqrt(alpha * (1.0 - alpha) / m))


def exact_order(docs: np.ndarray, exact: np.ndarray, alpha: float, top: int | None = None) -> np.ndarray:
    """The re-ranked answer (Section 4's exact similarity in place of the estimate): positions of
    the candidates ``docs`` whose ``exact`` similarity is ≥ α, by exact similarity descending,
    ties by document id, at most ``top``."""
    docs, exact = np.asarray(docs), np.asarray(exact, dtype=np.float64)
    order = np.lexsort((docs, -exact))
    order = order[exact[order] >= alpha - 1e-12]
    return order if top is None else order[:top]


def bucket_keys(values: np.ndarray) -> np.ndarray:
    """The I keys (j << 32) | h of signature rows ``values`` (n × m or m), same shape."""
    v = np.asarray(values)
    m = v.shape[-1]
    return (np.arange(m, dtype=np.uint64) << np.uint64(32)) | v.astype(np.uint64)


def invert(h: np.ndarray, indexed: np.ndarray | None = None) -> InvertedIndex:
    """Invert H in memory (Section 6.2): the reference for the sharded inversion of the index stage.

    ``indexed`` is a boolean mask of the documents to put in I (None: all); rows equal to
    EMPTY everywhere (bags with no terms) are always left out.
    """
    h = np.asarray(h, dtype=np.uint32)
    n, m = h.shape
    present = ~(h == EMPTY).all(axis=1)
    ids = np.flatnonzero(present).astype(np.uint32)
    keys = bucket_keys(h[ids]).T.ravel()  # position-major, so equal keys keep rising doc ids
    docs = np.tile(ids, m)
    flags = None
    if indexed is not None:
        flags = np.tile(np.asarray(indexed, dtype=bool)[ids], m)
    return buckets_from_pairs(keys, docs, m, flags)


def buckets_from_pairs(keys: np.ndarray, docs: np.ndarray, m: int, indexed: np.ndarray | None = None) -> InvertedIndex:
    """Group (key, doc) pairs into buckets (docs stay rising for equal keys: the sort is stable).

    ``indexed`` flags the pairs whose document goes into I (None: all). A bucket whose value
    no other document of H shares can never report a collision and is dropped; so is a bucket
    left with no indexed document. A value shared by a filtered document and one indexed
    document is kept, so queries from filtered documents lose nothing either.
    """
    order = np.argsort(keys, kind="stable")
    keys, docs = keys[order], docs[order].astype(np.uint32)
    flags = np.ones(keys.size, dtype=bool) if indexed is None else np.asarray(indexed, dtype=bool)[order]
    if keys.size == 0:
        return InvertedIndex(np.zeros(0, np.uint64), np.zeros(1, np.uint64), np.zeros(0, np.uint32), m)
    starts = np.flatnonzero(np.concatenate([[True], keys[1:] != keys[:-1]]))
    sizes = np.diff(np.concatenate([starts, [keys.size]]))
    member = np.repeat(sizes >= 2, sizes) & flags
    bucket = np.repeat(np.arange(starts.size), sizes)
    kept = np.bincount(bucket[member], minlength=starts.size)
    live = kept > 0
    offsets = np.concatenate([[0], np.cumsum(kept[live])]).astype(np.uint64)
    return InvertedIndex(keys[starts[live]], offsets, docs[member], m)


def _lookup(index: InvertedIndex, qkeys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Bucket start and length in I for each query key (length 0: no bucket)."""
    flat = qkeys.ravel()
    starts = np.zeros(flat.size, np.int64)
    lengths = np.zeros(flat.size, np.int64)
    for c in range(0, flat.size, _LOOKUP_CHUNK):  # bounded window temporaries
        i, at = _find(index, flat[c:c + _LOOKUP_CHUNK])
        i += c
        starts[i] = index.offsets.take(at)
        lengths[i] = np.subtract(index.offsets.take(at + 1), starts[i], dtype=np.int64)
    return starts.reshape(qkeys.shape), lengths.reshape(qkeys.shape)


def gather(index: InvertedIndex, starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """The doc ids of the given buckets, concatenated, without a Python loop."""
    total = int(lengths.sum())
    if total == 0:
        return np.zeros(0, np.uint32)
    firsts = np.cumsum(lengths) - lengths
    pos = np.arange(total, dtype=np.int64) + np.repeat(starts - firsts, lengths)
    return np.asarray(index.docs[pos])


# ------------------------------------------------------------------------ one query at a time

# Keys per directory bin on average (at least this, less than twice this), and the widest bin
# the window search accepts: wider bins (signature values far from uniform, e.g. hand-made
# small integers) use a binary search. 4 measured as fast as 2, in half the memory.
_KEYS_PER_BIN = 4
_WINDOW_MAX = 48


@dataclass(frozen=True, slots=True, eq=False)
class _Directory:
    """Where each key of I can be: the keys sharing their top bits form one bin (radix directory).

    A key (j << 32) | h falls in bin ``key >> shift`` = j · 2^b + (the top b bits of h);
    ``first[p]`` is the index of the first key of bin p and ``width`` the size of the largest
    bin, so a key sits in ``keys[first[p] : first[p] + width]`` if it is in I at all.
    Signature values are hash outputs, uniform over 32 bits, so the bins hold a few keys each
    (_KEYS_PER_BIN on average): one query's m look-ups are m independent reads of a few
    adjacent keys, instead of m binary searches whose deepest steps each miss the cache.
    """

    shift: np.uint64
    first: np.ndarray
    width: int
    base: np.ndarray  # (j << 32) for j = 0..m−1: a query's keys are base | its signature row
    ramp: np.ndarray  # 0..width−1 repeated m times: the offsets inside each query key's bin


def _directory(index: InvertedIndex) -> _Directory | None:
    """The index's directory, built on first use (one pass over the keys); None if unsuited."""
    d = index._directory.get("dir", False)
    if d is not False:
        return d
    m, k = index.m, index.keys.size
    bits = 0
    while bits < 32 and (m << (bits + 1)) * _KEYS_PER_BIN <= k:
        bits += 1
    shift = np.uint64(32 - bits)
    # first[p + 1] counts the keys of bin p, then the running sum makes it the start of bin p + 1.
    first = np.zeros((m << bits) + 1, np.int64)
    for s in range(0, k, 1 << 22):  # bounded temporaries on large indexes
        b = index.keys[s:s + (1 << 22)] >> shift  # rising, like the keys
        starts = np.flatnonzero(np.concatenate([[True], b[1:] != b[:-1]]))
        first[b[starts].astype(np.intp) + 1] += np.diff(np.append(starts, b.size))
    width = int(first.max())
    d = None
    if 0 < width <= _WINDOW_MAX:
        np.cumsum(first, out=first)
        base = np.arange(m, dtype=np.uint64) << np.uint64(32)
        ramp = np.tile(np.arange(width, dtype=np.int64), m)
        d = _Directory(shift, first, width, base, ramp)
    index._directory["dir"] = d
    return d


def prepare(index: InvertedIndex) -> int:
    """Build the in-memory key directory single queries use (else built by the first one).

    One pass over the keys; returns the bytes the directory holds in memory (0 when the
    keys are not spread enough for it and single queries use a binary search instead).
    """
    d = _directory(index)
    return 0 if d is None else int(d.first.nbytes + d.base.nbytes + d.ramp.nbytes)


def _find(index: InvertedIndex, q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(i, b): the query keys q[i] that I holds and their bucket numbers b (q: 1-D uint64)."""
    d = _directory(index)
    keys = index.keys
    if d is None:
        if keys.size == 0:
            return np.zeros(0, np.int64), np.zeros(0, np.int64)
        at = np.minimum(keys.searchsorted(q), keys.size - 1)
        i = (keys[at] == q).nonzero()[0]
        return i, at[i]
    where = d.first.take((q >> d.shift).view(np.int64)).repeat(d.width)
    where += _window_ramp(d.width, q.size)
    # Past the last key the window wraps to the first keys, which are smaller than any key
    # whose bin reaches the end (width ≤ number of keys): a query key matches at most once.
    hits = (keys.take(where, mode="wrap") == q.repeat(d.width)).nonzero()[0]
    return hits // d.width, where[hits]


_WINDOW_RAMPS: dict[int, np.ndarray] = {}


def _window_ramp(width: int, count: int) -> np.ndarray:
    """0..width−1 repeated ``count`` times (shared, grown on demand)."""
    r = _WINDOW_RAMPS.get(width)
    if r is None or r.size < width * count:
        r = np.tile(np.arange(width, dtype=np.int64), max(count, _LOOKUP_CHUNK))
        if len(_WINDOW_RAMPS) >= 8:
            _WINDOW_RAMPS.clear()
        _WINDOW_RAMPS[width] = r
    return r[: width * count]


def _buckets_of(index: InvertedIndex, sig: np.ndarray) -> np.ndarray:
    """The bucket numbers in I of the query's m keys (j << 32) | sig[j] that I holds: the
    steps of :func:`_find` for one query, with its ramp kept in the directory."""
    d = _directory(index)
    if d is None:
        return _find(index, bucket_keys(sig))[1]
    # Every step is a one-dimensional operation on arrays of one dtype: broadcasting or mixing
    # dtypes costs several times more on arrays this small.
    keys = index.keys
    q = d.base | sig
    where = d.first.take((q >> d.shift).view(np.int64)).repeat(d.width)
    where += d.ramp
    return where[(keys.take(where, mode="wrap") == q.repeat(d.width)).nonzero()[0]]


def _process_one(index: InvertedIndex, sig: np.ndarray, need: int, top: int | None, exclude: int,
                 h: np.ndarray) -> Matches:
    """PROCESSQUERY for one signature row with H at hand: the path of :func:`process_queries`
    for a single query, in as few array operations as possible (their fixed cost dominates).

    Same result as the batch path: the buckets of the query's keys minus the need − 1 largest
    give every candidate (pigeonhole), whose counts are read from H.
    """
    buckets, sizes = query_buckets(index, sig)
    if buckets.size < need:
        return _no_match(exclude, index.m)  # fewer than `need` positions collide with anything
    return full_count(index, buckets, sizes, sig, need, top, exclude, h)


#: Postings a count from every bucket may read, per posting of the buckets a count from H reads,
#: and still beat reading each of their candidates' rows of H (a row is far from the last, a
#: posting next to it), by the size of H: a row costs more the less of H the caches hold. On the
#: 1M-page scale crawl's index (H 330 MB) counting every bucket took 4.9 ms at the median against
#: 30 ms for the pigeonhole's buckets from H; since the sweep judges eight counts at once and
#: searches the largest buckets, the default query's p50 was 4.2 ms with 256, 4.5 ms with 64 and
#: 5.4 ms with 16 there, 0.65 ms with 64 against 0.69 ms with 16 or 256 on the 100k index (H 51
#: MB), and 0.18 ms with 16 against 0.20 ms with 256 on DebDocs (H 3 MB; 2,000 queries, one core).
EVERY_BUCKET_RATIOS = ((16 << 20, 16), (128 << 20, 64), (None, 256))


def _every_bucket(sizes: np.ndarray, read: int, h_bytes: int) -> bool:
    """Whether counting every one of a query's buckets (``sizes``, smallest first) from their
    postings costs less than counting the ``read`` smallest from H (of ``h_bytes``)."""
    for most, ratio in EVERY_BUCKET_RATIOS:
        if most is None or h_bytes <= most:
            break
    return int(sizes.sum()) <= ratio * int(sizes[:read].sum())


#: A query's buckets of this many postings or more are not swept where need allows leaving
#: them out (:func:`_left_out`): on a crawl of mirrored pages a query's five largest buckets
#: hold about half its postings, and only the documents within their number of need after the
#: others are counted are looked for in them (simcore/_rerank.c, counted).
BIG_BUCKET = 65_536


def full_count(index: InvertedIndex, buckets: np.ndarray, sizes: np.ndarray, sig: np.ndarray, need: int,
               top: int | None, exclude: int, h: np.ndarray) -> Matches:
    """PROCESSQUERY's answer from the query's ``buckets`` (smallest first, ``sizes`` their sizes):
    counted from their postings where that costs less (:func:`_every_bucket`; the largest
    searched for the documents within reach of need, :func:`_left_out`), else from all but the
    need − 1 largest, each candidate's count read from H."""
    kept = buckets.size - need + 1
    if not _every_bucket(sizes, kept, h.nbytes):
        return count_candidates(index, buckets[:kept], sig, need, top, exclude, h)
    return count_candidates(index, buckets, sig, need, top, exclude, h, every=True, left_out=_left_out(sizes, need))


def _left_out(sizes: np.ndarray, need: int) -> int:
    """How many of a query's largest buckets (``sizes``, smallest first) the count from postings
    searches rather than sweeps: those of BIG_BUCKET postings or more, fewer than ``need`` (so
    that a document searched for must agree in one of the rest at least)."""
    if need < 2 or sizes[-1] < BIG_BUCKET:
        return 0
    return int((sizes[max(0, sizes.size - need + 1):] >= BIG_BUCKET).sum())


def query_buckets(index: InvertedIndex, sig: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The buckets of I that the query's keys (j << 32) | sig[j] fall in, smallest first (ties:
    any order), and their sizes; a key I does not hold has none (no other document shares it)."""
    if sig[0] == EMPTY and (sig == EMPTY).all():
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    at = _buckets_of(index, sig)
    length = np.subtract(index.offsets.take(at + 1), index.offsets.take(at), dtype=np.int64)
    order = length.argsort()
    return at[order], length[order]


def count_candidates(index: InvertedIndex, buckets: np.ndarray, sig: np.ndarray, need: int, top: int | None,
                     exclude: int, h: np.ndarray, *, every: bool = False, left_out: int = 0) -> Matches:
    """The documents of the given buckets other than ``exclude`` that agree with ``sig`` in at
    least ``need`` positions of H, by count descending (ids rising within a count), at most ``top``.

    Read from all the query's buckets but the need − 1 largest, they are PROCESSQUERY's answer
    (pigeonhole); each count is read from the document's row of H. With ``every`` (``buckets``
    are all the query's buckets in I) the counts come from the postings instead, as Figure 11
    counts, the last ``left_out`` buckets (the largest, fewer than need) searched for each
    document within their number of need rather than read: the same counts."""
    m = index.m
    if buckets.size == 0:
        return _no_match(exclude, m)
    end = index.offsets.take(buckets + 1)
    length = np.subtract(end, index.offsets.take(buckets), dtype=np.int64)
    ends = length.cumsum()
    total = int(ends[-1])
    if total == 0:
        return _no_match(exclude, m)
    ranked = (_counted_in_c(index, buckets, total, need, top, exclude, h.shape[0], left_out) if every else
              _ranked_in_c(index, buckets, total, sig, need, top, exclude, h))
    if ranked is not None:
        return ranked
    # Posting i of the gathered array: its bucket's end − (ends − i), bucket by bucket.
    pos = np.subtract(end, ends, dtype=np.int64).repeat(length)
    pos += _ramp(total)
    cand = index.docs.take(pos)
    cand.sort()
    first = np.empty(total, bool)
    first[0] = True
    np.not_equal(cand[1:], cand[:-1], out=first[1:])
    cand = cand[first]
    counts = agreements(h, sig, cand)
    ok = (counts >= need) & (cand != exclude)
    cand, counts = cand[ok].astype(np.int64), counts[ok]
    order = (-counts).argsort(kind="stable")  # count descending; ids rise within a count
    if top is not None:
        order = order[:top]
    return Matches(exclude, cand[order], counts[order], m)


def _ranked_in_c(index: InvertedIndex, buckets: np.ndarray, total: int, sig: np.ndarray, need: int,
                 top: int | None, exclude: int, h: np.ndarray) -> Matches | None:
    """The rest of :func:`_process_one` in one pass in C (simcore/_rerank.c, candidates): the
    candidates of the given buckets counted, then ranked by one sort of (m − count, id) keys;
    None where that is not built or the arrays do not suit it (the numpy steps then)."""
    m = index.m
    if (_c_candidates is None or h.dtype != np.uint32 or sig.dtype != np.uint32 or not h.flags.c_contiguous
            or index.offsets.dtype.itemsize not in (4, 8) or h.shape[1] != m):
        return None
    # One mark per document, the calling thread's own (the C pass runs without the GIL and leaves
    # it zero again): a server answers queries on the same index from several threads.
    marks = index._directory.get("marks") or index._directory.setdefault("marks", threading.local())
    seen = getattr(marks, "seen", None)
    if seen is None or seen.size != h.shape[0]:
        seen = marks.seen = np.zeros(h.shape[0], np.uint8)
    docs, counts = np.empty(total, np.int64), np.empty(total, np.int64)
    n = _c_candidates(index.offsets, index.offsets.dtype.itemsize, index.docs, buckets.astype(np.int64, copy=False),
                      h, np.ascontiguousarray(sig), need, exclude, seen, docs, counts)
    return _ranked(docs[:n], counts[:n], top, exclude, m)


def _counted_in_c(index: InvertedIndex, buckets: np.ndarray, total: int, need: int, top: int | None, exclude: int,
                  n_docs: int, left_out: int = 0) -> Matches | None:
    """The candidates of every one of the query's ``buckets`` counted from their postings in one
    sweep in C (simcore/_rerank.c, counted), which ranks them as :func:`_ranked_in_c` does; None
    where that is not built or the arrays do not suit it."""
    if _c_counted is None or index.offsets.dtype.itemsize not in (4, 8) or buckets.size > 255:
        return None
    local = index._directory.get("marks") or index._directory.setdefault("marks", threading.local())
    counts = getattr(local, "counts", None)
    if counts is None or counts.size != n_docs:
        counts = local.counts = np.zeros(n_docs, np.uint8)
    docs, found = np.empty(total, np.int64), np.empty(total, np.int64)
    n = _c_counted(index.offsets, index.offsets.dtype.itemsize, index.docs, buckets.astype(np.int64, copy=False),
                   need, left_out, exclude, counts, docs, found)  # ranked: count descending, ids rising
    n = n if top is None else min(n, top)
    return Matches(exclude, docs[:n], found[:n], index.m)


def _ranked(docs: np.ndarray, counts: np.ndarray, top: int | None, exclude: int, m: int) -> Matches:
    """Candidates (int64 arrays, written over) ranked by one sort of (m − count, id) keys: count
    descending, ids rising within a count; at most ``top``."""
    key = np.subtract(m, counts, out=counts)
    key <<= 32
    key |= docs
    key.sort()
    if top is not None:
        key = key[:top]
    return Matches(exclude, key & 0xFFFFFFFF, m - (key >> 32), m)


def agreements(h: np.ndarray, sig: np.ndarray, docs: np.ndarray) -> np.ndarray:
    """How many of the m positions of each document's row of H equal ``sig`` (int64, one per
    document): in C where that is built (simcore/_rerank.c, each row read where it lies), else
    by gathering the rows."""
    if (_c_agreements is not None and h.dtype == np.uint32 and sig.dtype == np.uint32 and h.flags.c_contiguous
            and docs.dtype in (np.uint32, np.int64) and docs.flags.c_contiguous):
        counts = np.empty(docs.size, np.int64)
        _c_agreements(h, np.ascontiguousarray(sig), docs, docs.itemsize, counts)
        return counts
    return (h.take(docs, axis=0) == sig).sum(axis=1)


def _no_match(query: int, m: int) -> Matches:
    return Matches(query, np.zeros(0, np.int64), np.zeros(0, np.int64), m)


_RAMPS: list[np.ndarray] = [np.arange(1 << 12, dtype=np.int64)]


def _ramp(n: int) -> np.ndarray:
    """0..n−1 from a shared array (grown on demand), saving one allocation per query."""
    r = _RAMPS[-1]
    if r.size < n:
        r = np.arange(max(n, 2 * r.size), dtype=np.int64)
        _RAMPS.append(r)
        del _RAMPS[:-1]
    return r[:n]


def process_queries(
    index: InvertedIndex,
    signatures: np.ndarray,
    alpha: float = 0.15,
    top: int | None = None,
    exclude: np.ndarray | None = None,
    h: np.ndarray | None = None,
) -> list[Matches]:
    """PROCESSQUERY (Figure 11) for each row of ``signatures`` (q × m, the queries' rows of H).

    ``exclude[i]`` is the query's own document id (never its own result), or −1. Each result
    holds the documents with count / m ≥ ``alpha``, by count descending then id, at most ``top``.

    With ``h`` (the matrix H), the counting skips each query's c − 1 largest buckets, where c is
    the least count that reaches α: a document sharing ≥ c positions with the query lies in at
    least one of the other buckets (pigeonhole), so those give every candidate, and each
    candidate's count is then taken exactly from its row of H. The result is the same as
    counting every posting; it only avoids the huge buckets of terms that most pages share.
    One query with ``h`` takes the single-query path (:func:`_process_one`), same result.
    """
    sig = np.atleast_2d(np.asarray(signatures, dtype=np.uint32))
    q, m = sig.shape
    if m != index.m:
        raise ValueError(f"query signatures have {m} positions but the index has m = {index.m}")
    if top is not None and top < 1:
        raise ValueError(f"top: expected at least 1 result, got {top}")
    need = min_count(alpha, m)
    exclude = np.full(q, -1, np.int64) if exclude is None else np.asarray(exclude, dtype=np.int64)
    if q == 1 and h is not None:
        return [_process_one(index, sig[0], need, top, int(exclude[0]), h)]
    empty = (sig == EMPTY).all(axis=1)
    results: list[Matches] = []
    starts, lengths = _lookup(index, bucket_keys(sig))  # (q, m)
    if h is not None and need > 1:
        # Drop the need − 1 largest buckets of each query (ties: any of them, the bound holds).
        big = np.argsort(lengths, axis=1, kind="stable")[:, m - (need - 1):]
        lengths = lengths.copy()
        np.put_along_axis(lengths, big, 0, axis=1)
    per_query = lengths.sum(axis=1)
    q0 = 0
    while q0 < q:
        # Batches of queries gathering about _POSTINGS_BUDGET postings.
        q1 = q0 + 1 + int(np.searchsorted(np.cumsum(per_query[q0 + 1:]), _POSTINGS_BUDGET))
        q1 = min(q, q1)
        ln = lengths[q0:q1].ravel()
        docs = gather(index, starts[q0:q1].ravel(), ln)
        qi = np.repeat(np.arange(q1 - q0, dtype=np.int64), lengths[q0:q1].sum(axis=1))
        if q1 - q0 == 1 and docs.size and docs.size * 8 > int(docs.max()) and h is None:
            # One query gathering many postings: a dense count beats sorting them.
            dense = np.bincount(docs)
            hit = np.flatnonzero(dense)
            counts, uniq = dense[hit], hit.astype(np.uint64)
        else:
            # Count collisions per (query, doc) with one sort of packed pairs.
            pairs = np.sort((qi.astype(np.uint64) << np.uint64(32)) | docs.astype(np.uint64))
            first = np.flatnonzero(np.concatenate([[True], pairs[1:] != pairs[:-1]])) if pairs.size else pairs
            counts = np.diff(np.concatenate([first, [pairs.size]])).astype(np.int64)
            uniq = pairs[first]
        uq = (uniq >> np.uint64(32)).astype(np.int64)
        ud = (uniq & np.uint64(0xFFFFFFFF)).astype(np.int64)
        keep = (ud != exclude[q0 + uq]) & ~empty[q0 + uq]
        uq, ud, counts = uq[keep], ud[keep], counts[keep]
        if h is not None:
            counts = (np.asarray(h[ud]) == sig[q0 + uq]).sum(axis=1)
        ok = counts >= need
        uq, ud, counts = uq[ok], ud[ok], counts[ok]
        order = np.lexsort((ud, -counts, uq))
        uq, ud, counts = uq[order], ud[order], counts[order]
        bounds = np.searchsorted(uq, np.arange(q1 - q0 + 1))
        for i in range(q1 - q0):
            s, e = bounds[i], bounds[i + 1]
            if top is not None:
                e = min(e, s + top)
            results.append(Matches(int(exclude[q0 + i]), ud[s:e], counts[s:e], m))
        q0 = q1
    return results


def process_query(index: InvertedIndex, h: np.ndarray, doc: int, alpha: float = 0.15,
                  top: int | None = None) -> Matches:
    """PROCESSQUERY (Figure 11) for document ``doc`` of H: its α-similar documents, best first."""
    if top is not None and top < 1:
        raise ValueError(f"top: expected at least 1 result, got {top}")
    if h.shape[1] != index.m:
        raise ValueError(f"H has {h.shape[1]} positions but the index has m = {index.m}")
    return _process_one(index, h[doc], min_count(alpha, index.m), top, int(doc), h)


def all_pairs(index: InvertedIndex, h: np.ndarray, alpha: float = 0.15, *, chunk: int = 4096) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every pair (a < b) that PROCESSQUERY reports at threshold α, for every document of H.

    Returns (a, b, count) arrays sorted by count descending, then a, then b. A pair of two
    indexed documents is found from both sides and reported once.
    """
    n = h.shape[0]
    out_a, out_b, out_c = [], [], []
    for d0 in range(0, n, chunk):
        d1 = min(n, d0 + chunk)
        for res in process_queries(index, np.asarray(h[d0:d1]), alpha, None, np.arange(d0, d1), h):
            if len(res):
                out_a.append(np.full(len(res), res.query, np.int64))
                out_b.append(res.docs)
                out_c.append(res.counts)
    if not out_a:
        z = np.zeros(0, np.int64)
        return z, z.copy(), z.copy()
    a, b, c = np.concatenate(out_a), np.concatenate(out_b), np.concatenate(out_c)
    lo, hi = np.minimum(a, b), np.maximum(a, b)
    packed = (lo.astype(np.uint64) << np.uint64(32)) | hi.astype(np.uint64)
    _, first = np.unique(packed, return_index=True)
    lo, hi, c = lo[first], hi[first], c[first]
    order = np.lexsort((hi, lo, -c))
    return lo[order], hi[order], c[order]
