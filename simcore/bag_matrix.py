"""Bags of many URLs as a sparse matrix: merged (unweighted) and weighted, frequency weighting and
normalisation of merged bags, and the share-weighted sum of several sources' bags (paper Sections 3, 5.2, 6.1)."""
from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

from simweb.core.strategy import Strategy
from simweb.core.weighting import Weighting, normalise_rows


@dataclass(frozen=True, eq=False)
class MergedBags:
    """Merged, unweighted bags (Section 6.1 before NMDF): row i is the bag of ``url_ids[i]``.

    ``csr`` may hold empty rows (URLs whose fragments had no terms).
    """

    url_ids: np.ndarray  # uint64, sorted
    urls: Sequence[str]
    vocabulary: Sequence[str]  # column -> term
    csr: sp.csr_matrix

    def entries(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(row, column, weight) of every non-zero, row-major."""
        rows = np.repeat(np.arange(self.csr.shape[0]), np.diff(self.csr.indptr))
        return rows, self.csr.indices.astype(np.int64), self.csr.data


@dataclass(frozen=True, eq=False)
class BagMatrix:
    """Weighted bags of many URLs as a CSR matrix: row i is the bag of ``url_ids[i]`` over ``vocabulary``.

    ``df`` is each column's document frequency in the whole collection the weights were
    computed over (``collection_size`` bags), which may be larger than this matrix.
    Rows are sorted by URL id and every row sums to the strategy's normalisation constant.
    """

    url_ids: np.ndarray  # uint64, sorted ascending
    urls: tuple[str, ...]
    vocabulary: tuple[str, ...]
    csr: sp.csr_matrix  # float64, shape (len(url_ids), len(vocabulary))
    df: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    collection_size: int = 0
    weighting: Weighting | None = None

    def __post_init__(self) -> None:
        n, v = len(self.url_ids), len(self.vocabulary)
        if self.csr.shape != (n, v):
            raise ValueError(f"bag matrix: expected a {n} × {v} matrix (URLs × vocabulary), got {self.csr.shape}")
        if len(self.urls) != n:
            raise ValueError(f"bag matrix: expected {n} URLs, got {len(self.urls)}")
        if n > 1 and np.any(np.diff(self.url_ids.astype(np.uint64)) == 0):
            raise ValueError("bag matrix: expected unique URL ids, found a repeated one")

    def __len__(self) -> int:
        return len(self.url_ids)

    def __contains__(self, url_id: object) -> bool:
        try:
            self.index(int(url_id))  # type: ignore[arg-type]
        except (KeyError, TypeError, ValueError):
            return False
        return True

    def index(self, url_id: int) -> int:
        """The row of ``url_id``; KeyError when it has no bag."""
        key = np.uint64(url_id)
        i = int(np.searchsorted(self.url_ids, key))
        if i >= len(self.url_ids) or self.url_ids[i] != key:
            raise KeyError(f"URL id {url_id} has no bag here")
        return i

    def indices(self, url_ids: Iterable[int]) -> np.ndarray:
        """The rows of several URL ids, in their order; KeyError names the ones without a bag."""
        keys = np.fromiter((int(u) for u in url_ids), dtype=np.uint64)
        rows = np.searchsorted(self.url_ids, keys)
        found = (rows < len(self.url_ids)) & (self.url_ids[np.minimum(rows, len(self.url_ids) - 1)] == keys) \
            if len(self.url_ids) else np.zeros(len(keys), dtype=bool)
        if not np.all(found):
            missing = keys[~found][:5].tolist()
            raise KeyError(f"{int((~found).sum())} URL id(s) have no bag here, e.g. {missing}")
        return rows.astype(np.int64)

    def row(self, url_id: int) -> dict[str, float]:
        """The bag of ``url_id`` as {term: weight}."""
        i = self.index(url_id)
        lo, hi = self.csr.indptr[i], self.csr.indptr[i + 1]
        return {self.vocabulary[c]: float(w) for c, w in zip(self.csr.indices[lo:hi], self.csr.data[lo:hi])}

    def top_terms(self, url_id: int, k: int = 10) -> list[tuple[str, float]]:
        """The ``k`` heaviest terms of a bag, heaviest first (ties by term), as in the paper's Figure 14."""
        return sorted(self.row(url_id).items(), key=lambda tw: (-tw[1], tw[0]))[:k]

    def select(self, url_ids: Iterable[int]) -> BagMatrix:
        """The bags of ``url_ids`` (each must have one), columns unused by them dropped."""
        rows = np.unique(self.indices(url_ids))
        return self._subset(rows)

    def _subset(self, rows: np.ndarray) -> BagMatrix:
        sub = self.csr[rows]
        used = np.unique(sub.indices)
        remap = np.full(len(self.vocabulary), -1, dtype=np.int64)
        remap[used] = np.arange(used.size)
        csr = sp.csr_matrix((sub.data, remap[sub.indices], sub.indptr), shape=(rows.size, used.size))
        vocab = tuple(self.vocabulary[c] for c in used.tolist())
        df = self.df[used] if self.df.size else self.df
        return BagMatrix(self.url_ids[rows], tuple(self.urls[i] for i in rows.tolist()), vocab, csr, df,
                         self.collection_size, self.weighting)

    def to_dicts(self) -> dict[int, tuple[str, dict[str, float]]]:
        """``{url_id: (url, bag)}``, the form of :func:`reference_bags`."""
        return {int(u): (self.urls[i], self.row(int(u))) for i, u in enumerate(self.url_ids)}

    @classmethod
    def from_dicts(cls, bags: dict[int, tuple[str, dict[str, float]]]) -> BagMatrix:
        """A bag matrix of ``{url_id: (url, bag)}`` as given (no weighting or normalisation applied)."""
        ids = np.array(sorted(bags), dtype=np.uint64)
        vocab_index: dict[str, int] = {}
        indptr, indices, data = [0], [], []
        for u in ids.tolist():
            for t, w in sorted(bags[u][1].items()):
                if w != 0:
                    indices.append(vocab_index.setdefault(t, len(vocab_index)))
                    data.append(float(w))
            indptr.append(len(indices))
        vocab = tuple(vocab_index)
        csr = sp.csr_matrix((np.asarray(data, dtype=np.float64), np.asarray(indices, dtype=np.int64),
                             np.asarray(indptr, dtype=np.int64)), shape=(ids.size, len(vocab)))
        csr.sort_indices()
        return cls(ids, tuple(bags[u][0] for u in ids.tolist()), vocab, csr)


def weigh_merged(merged: MergedBags, strategy: Strategy, targets: Collection[int] | None = None, *,
                 keep_empty: bool = False) -> BagMatrix:
    """Frequency-weight and normalise merged bags (Sections 5.2, 6.1); keep the rows of ``targets``.

    ``keep_empty`` keeps every row of ``merged``, empty bags included, so that the bags of several
    sources line up row by row (:func:`weigh_shared`); ``targets`` must then be None.
    """
    csr = merged.csr
    df = np.bincount(csr.indices, minlength=csr.shape[1]).astype(np.int64)
    weighting = Weighting.resolve(strategy, df[df > 0])
    factors = np.ones(df.size)
    present = df > 0
    factors[present] = weighting.factors(df[present])
    weighted = sp.csr_matrix((weighting.counts(csr.data) * factors[csr.indices], csr.indices, csr.indptr),
                             shape=csr.shape)
    weighted.eliminate_zeros()
    data, sums = normalise_rows(weighted.indptr, weighted.data, weighting.normalise_to)
    weighted = sp.csr_matrix((data, weighted.indices, weighted.indptr), shape=csr.shape)
    keep = sums > 0
    collection_size = int(keep.sum())
    if targets is not None:
        wanted = np.fromiter((int(t) for t in targets), dtype=np.uint64)
        keep &= np.isin(merged.url_ids, wanted)
    full = BagMatrix(merged.url_ids, merged.urls, merged.vocabulary, weighted, df, collection_size, weighting)
    if keep_empty:
        if targets is not None:
            raise ValueError("weigh_merged: keep_empty keeps every row; select targets afterwards")
        return full
    return full._subset(np.flatnonzero(keep))


def weigh_shared(parts: Sequence[tuple[float, BagMatrix]], targets: Collection[int] | None = None) -> BagMatrix:
    """Σ_k share_k · B_k: the bags of a strategy with source shares (simweb.core.strategy, "Source
    shares"), from each source's weighted bags B_k over the same URLs and term columns, every
    row kept (``weigh_merged(..., keep_empty=True)`` for that source alone); the rows of
    ``targets`` kept.

    The result's ``df`` counts the bags of the combined collection holding each term; its
    ``weighting`` is None (each source has its own).
    """
    if not parts:
        raise ValueError("source shares: expected the weighted bags of at least one source, got none")
    first = parts[0][1]
    for _, part in parts[1:]:
        if part.csr.shape != first.csr.shape or not np.array_equal(part.url_ids, first.url_ids):
            raise ValueError(
                f"source shares: expected every source's bags over the same URLs and term columns, got "
                f"{part.csr.shape} and {first.csr.shape}; build them from one Corpus"
            )
    combined = sum((share * part.csr for share, part in parts[1:]), parts[0][0] * first.csr).tocsr()
    combined.sum_duplicates()
    combined.eliminate_zeros()
    combined.sort_indices()
    df = np.bincount(combined.indices, minlength=combined.shape[1]).astype(np.int64)
    keep = np.diff(combined.indptr) > 0
    collection_size = int(keep.sum())
    if targets is not None:
        wanted = np.fromiter((int(t) for t in targets), dtype=np.uint64)
        keep &= np.isin(first.url_ids, wanted)
    full = BagMatrix(first.url_ids, first.urls, first.vocabulary, combined, df, collection_size, None)
    return full._subset(np.flatnonzero(keep))
