"""Sub-stage 3 of the bags stage: a merge partition frequency-weighted and normalised into BAGS
(paper Sections 5.2, 6.1; simweb.core.weighting)."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from simweb.core.weighting import Weighting, normalise_rows
from simweb.tasks import schemas
from simweb.tasks.bags.merge import dictionary_columns
from simweb.tasks.storage import parquet_writer_atomic

#: Terms per row group of a BAGS part, for the same reason.
BAG_ROW_GROUP_ENTRIES = 1 << 20
#: A partition's weighted bags before storage: BAGS with double-precision weights.
WEIGHED = pa.schema([*(f for f in schemas.BAGS if f.name != "weights"),
                      pa.field("weights", pa.list_(pa.float64()), nullable=False)])


@dataclass(frozen=True, slots=True, eq=False)
class Weighed:
    """One merge partition frequency-weighted and normalised (Sections 5.2, 6.1): bag i is
    entries ``indptr[i]:indptr[i + 1]`` (terms ``term_index`` into ``terms``, weights ``data``)
    of URL ``url_ids[i]`` (``url_index`` into ``urls``); ``nonempty`` marks the bags that keep
    a positive sum."""

    url_ids: np.ndarray
    url_index: np.ndarray
    urls: pa.Array
    indptr: np.ndarray
    term_index: np.ndarray
    terms: pa.Array
    data: np.ndarray
    nonempty: np.ndarray

    def table(self, rows: np.ndarray, weights: pa.DataType) -> pa.Table:
        """The bags ``rows`` as a BAGS table with weights of type ``weights``."""
        lengths = self.indptr[rows + 1] - self.indptr[rows]
        ends = np.cumsum(lengths)
        entries = np.repeat(self.indptr[rows] - (ends - lengths), lengths) + np.arange(int(ends[-1]) if ends.size else 0)
        offsets = pa.array(np.concatenate(([0], ends)).astype(np.int32))
        return pa.table({
            "url_id": pa.array(self.url_ids[rows], pa.uint64()),
            "url": self.urls.take(pa.array(self.url_index[rows])),
            "terms": pa.ListArray.from_arrays(offsets, self.terms.take(pa.array(self.term_index[entries]))),
            "weights": pa.ListArray.from_arrays(offsets, pa.array(self.data[entries].astype(weights.to_pandas_dtype()),
                                                                  weights)),
        })

    def rows(self, wanted: pa.Array) -> pa.Table:
        """The non-empty bags of the URL ids ``wanted``, in double precision (WEIGHED)."""
        chosen = self.nonempty & pc.is_in(pa.array(self.url_ids, pa.uint64()), value_set=wanted).to_numpy(zero_copy_only=False)
        return self.table(np.flatnonzero(chosen), pa.float64()).cast(WEIGHED)


def weigh_partition(merged: pa.Table, df_table: pa.Table, weighting: Weighting, where: str) -> Weighed:
    """Frequency-weight and normalise one merged partition (MERGED, its terms and URLs plain
    or dictionary-encoded) with the collection's DF table: tf × factor(df), entries whose weight
    fell to 0 dropped, each bag scaled to the weighting's constant sum (Sections 5.2, 6.1)."""
    table = dictionary_columns(merged, ("url", "term"))
    terms, urls = table.column("term").chunk(0), table.column("url").chunk(0)
    # df of each distinct term, by a hash look-up of the term in the DF table.
    at = pc.index_in(terms.dictionary, value_set=df_table.column("term"))
    if at.null_count:
        raise ValueError(f"{where}: a term has no document frequency in the collection's DF table; "
                         "the bags stage output is damaged — delete it and re-run")
    factors = weighting.factors(df_table.column("df").take(at).to_numpy().astype(np.float64))
    term_index = terms.indices.to_numpy(zero_copy_only=False)
    url_ids = table.column("url_id").to_numpy()
    weights = weighting.counts(table.column("tf").to_numpy()) * factors[term_index]
    starts = np.flatnonzero(np.concatenate(([True], url_ids[1:] != url_ids[:-1]))) if url_ids.size else np.zeros(0, np.int64)
    keep_entry = weights > 0
    # Entries whose weight fell to 0 leave the bag; rebuild the row pointers over the rest.
    counts = np.add.reduceat(keep_entry.astype(np.int64), starts) if starts.size else np.zeros(0, np.int64)
    indptr = np.concatenate(([0], np.cumsum(counts))).astype(np.int64)
    data, sums = normalise_rows(indptr, weights[keep_entry], weighting.normalise_to)
    return Weighed(url_ids[starts], urls.indices.to_numpy(zero_copy_only=False)[starts], urls.dictionary, indptr,
                    term_index[keep_entry], terms.dictionary, data, sums > 0)


def weigh_part(url: str, df_path: str, weighting: Weighting, out: str) -> dict[str, int]:
    """Frequency-weight and normalise the merged bags of one partition into a BAGS part (Sections 5.2, 6.1).

    The partition's terms and URLs are read dictionary-encoded, so a term's df is looked up once
    per distinct term, and the bags are written BAG_ROW_GROUP_ENTRIES terms at a time: a term
    string per entry is never held for the whole partition (1.2 GB before, 0.5 GB now, for the
    4.4 million entries of one partition of the 50k scale crawl).
    """
    merged = pq.read_table(url, read_dictionary=["url", "term"])
    weighed = weigh_partition(merged, pq.read_table(df_path), weighting, url)
    with parquet_writer_atomic(out, schemas.BAGS, schemas.BAGS_WRITE) as writer:
        for lo, hi in _row_groups(weighed.indptr, BAG_ROW_GROUP_ENTRIES):
            rows = np.flatnonzero(weighed.nonempty[lo:hi]) + lo
            writer.write_table(weighed.table(rows, pa.float32()).cast(schemas.BAGS))
    nonempty = weighed.nonempty
    return {"bags": int(nonempty.sum()), "entries": int(np.diff(weighed.indptr)[nonempty].sum()),
            "empty_bags": int((~nonempty).sum())}


def _row_groups(indptr: np.ndarray, entries: int) -> list[tuple[int, int]]:
    """Consecutive ranges [lo, hi) of bags (rows of ``indptr``) of about ``entries`` entries each."""
    cuts = np.searchsorted(indptr, np.arange(0, indptr[-1], max(1, entries)), side="right") - 1
    bounds = np.unique(np.concatenate((cuts, [indptr.size - 1])))
    return [(int(a), int(b)) for a, b in zip(bounds[:-1], bounds[1:]) if b > a]
