"""The `bags` stage for a strategy with source shares: each source's bags, then their share-weighted sum.

A strategy with source shares (simweb.core.strategy, "Source shares"; beyond the paper) weighs
each source on its own — its terms frequency-weighted by their document frequency among that
source's parts (Section 5.2) and normalised to the constant sum (Section 6.1) — and adds the
sources in their shares. Built from cached pieces:

    OUT/bag-sources/...                      the bags stage (simweb.tasks.bags) of each source
                                             alone: fragments → merge → weigh, reused by any
                                             strategy with the same source settings
    OUT/bags/<key>/part-*.parquet            simweb.tasks.schemas.BAGS: Σ_k share_k · B_k
    OUT/bags/<key>/_terms/df.parquet         (term, df): bags of the combined collection holding the term
        key: each source's bags output + the shares
        Partition i of P holds the URLs of the i-th of P equal ranges of URL ids (URL ids are
        hashes, spread evenly): it reads the rows of that range from every source's bags,
        multiplies each source's weights by its share and adds up equal (URL, term) pairs with
        simweb.core.bag_entries.merge_entries (the merge of Section 6.1, associative and commutative:
        the order of sources and parts does not matter). Nothing is normalised again: a page
        without a source has no part for it, and its bag's mass is the sum of the shares of
        the sources it has. The partitions run one after another in the stage's task (the
        sources' stages did the heavy work in parallel); each holds one range of every source,
        read by the row groups whose URL id statistics fall in it.

The combined output is the strategy's ``bags`` stage, so the signatures stage,
``bag_reader.read_bags`` and ``simweb bags`` read it like any other; its manifest's stats name each source's output and weighting.

The evaluation's bags of a sample (:func:`shared_sample_bags`) are made the same way from each
source's sample bags (simweb.tasks.bags.sample.sample_bags), df and weighting of each source over the
whole collection.
"""
from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import scipy.sparse as sp

from simweb.core.bag_entries import merge_entries
from simweb.core.bag_matrix import BagMatrix
from simweb.core.strategy import Strategy
from simweb.tasks import schemas
from simweb.tasks.bags import BAGS_FORMAT
from simweb.tasks.bags.df import DF, DfSnapshot
from simweb.tasks.bags.grid import url_ranges
from simweb.tasks.bags.sample import sample_bags
from simweb.tasks.bags.sizes import PART_MB
from simweb.tasks.crawl.corpus import flat_lists
from simweb.tasks.stagecache import StageOutput, run_stage
from simweb.tasks.stages import weighting
from simweb.tasks.stages.bags import build_bags_stage
from simweb.tasks.stages.fragments import LeftOut
from simweb.tasks.stages.weighting import DF_FILE
from simweb.tasks.storage import filesystem, join, parts, write_parquet_atomic

__all__ = ["SOURCES_FOLDER", "build_shared_bags_stage", "combine_range", "combine_sample_bags", "shared_sample_bags"]

#: Where the bags stage of each source alone is kept, under the stages folder.
SOURCES_FOLDER = "bag-sources"


def combine_range(sources: Sequence[tuple[float, Sequence[str]]], low: int, high: int, out: str) -> tuple[int, pa.Table]:
    """Σ share · weight over the BAGS rows with ``low`` ≤ url_id ≤ ``high`` of each source's parts
    (``sources``: pairs of a share and that source's BAGS files), written as one BAGS part at
    ``out``, terms sorted within each row; returns its rows and its (term, df) counts."""
    in_range = (pc.field("url_id") >= pa.scalar(low, pa.uint64())) & (pc.field("url_id") <= pa.scalar(high, pa.uint64()))
    ids, urls, terms, weights = [], [], [], []
    for share, files in sources:
        if not files:
            continue
        fs, _ = filesystem(files[0])
        table = ds.dataset([filesystem(f)[1] for f in files], format="parquet", filesystem=fs,
                           schema=schemas.BAGS).to_table(filter=in_range, use_threads=False)
        flat, offsets = flat_lists(table.column("terms"))
        rows = np.repeat(np.arange(table.num_rows), np.diff(offsets))
        ids.append(table.column("url_id").to_numpy().astype(np.uint64)[rows])
        urls.append(table.column("url").take(pa.array(rows)).combine_chunks())
        terms.append(flat)
        w = pc.list_flatten(table.column("weights").combine_chunks()).to_numpy(zero_copy_only=False)
        weights.append(share * w.astype(np.float64))
    url_ids = np.concatenate(ids) if ids else np.zeros(0, np.uint64)
    if url_ids.size == 0:
        write_parquet_atomic(schemas.BAGS.empty_table(), out)
        return 0, DF.empty_table()
    encoded = pc.dictionary_encode(pa.concat_arrays(terms))
    dictionary = encoded.dictionary
    order = pc.sort_indices(dictionary).to_numpy().astype(np.int64)  # term rank -> dictionary index
    rank = np.empty(order.size, dtype=np.int64)
    rank[order] = np.arange(order.size)
    u, t, w = merge_entries(url_ids, rank[encoded.indices.to_numpy(zero_copy_only=False).astype(np.int64)],
                            np.concatenate(weights))
    all_urls = pa.concat_arrays(urls)
    known, first = np.unique(url_ids, return_index=True)  # each URL's URL string from its first row
    starts = np.flatnonzero(np.concatenate(([True], u[1:] != u[:-1])))
    offsets = pa.array(np.append(starts, u.size).astype(np.int32))
    table = pa.table({
        "url_id": pa.array(u[starts], pa.uint64()),
        "url": all_urls.take(pa.array(first[np.searchsorted(known, u[starts])])),
        "terms": pa.ListArray.from_arrays(offsets, dictionary.take(pa.array(order[t]))),
        "weights": pa.ListArray.from_arrays(offsets, pa.array(w.astype(np.float32), pa.float32())),
    }, schema=schemas.BAGS)
    write_parquet_atomic(table, out)
    present, df = np.unique(t, return_counts=True)
    return table.num_rows, pa.table({"term": dictionary.take(pa.array(order[present])),
                                     "df": pa.array(df, pa.int64())}, schema=DF)


def build_shared_bags_stage(crawl_dir: str, strategy: Strategy, out_dir: str, partitions: int | None = None, *,
                            scheduler: Any = None, verify: bool = False, part_mb: int = PART_MB,
                            df_snapshot: DfSnapshot | None = None) -> StageOutput:
    """The bags of a strategy with source shares (see the module docstring), reused when unchanged.

    ``partitions``, ``scheduler``, ``verify`` and ``part_mb`` mean what they mean for
    :func:`simweb.tasks.stages.bags.build_bags_stage`, which builds each source's bags. A frozen df
    (``df_snapshot``) is refused: each source has a df of its own.
    """
    if strategy.shares is None:
        raise ValueError(f"{strategy.label}: expected a strategy with source shares; build it with build_bags_stage")
    if df_snapshot is not None:
        raise ValueError(f"{strategy.label}: a strategy with source shares has one df per source; "
                         "it is weighted in full, not with a frozen df snapshot")
    share_of = strategy.share_of()
    # 1. Each source alone: its own fragments, merge, df and weighting (Sections 5.2, 6.1).
    sources = {source.value: build_bags_stage(crawl_dir, strategy.source_strategy(source), join(out_dir, SOURCES_FOLDER),
                                              partitions, scheduler=scheduler, verify=verify, part_mb=part_mb)
               for source in strategy.sources}

    # 2. Σ share_k · B_k, one range of URL ids at a time.
    def combine(tmp: str) -> dict[str, Any]:
        t0 = time.perf_counter()
        inputs = [(share_of[source], parts(sources[source.value].path)) for source in strategy.sources]
        p = partitions or max(1, max(len(files) for _, files in inputs))
        written, counts = [], []
        for i, (low, high) in enumerate(url_ranges(p)):
            rows, df_part = combine_range(inputs, low, high, join(tmp, f"part-{i:05d}.parquet"))
            written.append(rows)
            counts.append(df_part)
        summed = pa.concat_tables(counts).group_by("term", use_threads=False).aggregate([("df", "sum")])
        df = pa.table({"term": summed.column("term"), "df": summed.column("df_sum")}, schema=DF).sort_by("term")
        write_parquet_atomic(df, join(tmp, DF_FILE))
        first = next(iter(sources.values())).stats
        bags = int(sum(written))
        return {
            **{k: first.get(k, 0) for k in ("pages", "duplicate_pages", "links", "links_of_duplicate_pages",
                                             "self_links")},
            "bags": bags,
            "entries": int(pc.sum(df.column("df")).as_py() or 0),
            "vocabulary": df.num_rows,
            "collection_size": bags,
            "sources": {name: {"path": output.path, "share": share_of[strategy.sources[i]],
                               "bags": output.stats.get("bags"), "weighting": output.stats.get("weighting")}
                        for i, (name, output) in enumerate(sources.items())},
            "strategy": strategy.to_dict(),
            "label": strategy.label,
            "partitions": p,
            "seconds": {"combine": round(time.perf_counter() - t0, 3)},
        }

    return run_stage(out_dir, weighting.NAME, sources, {"format": BAGS_FORMAT, "shares": strategy.bag_params()},
                     combine, verify=verify)


def shared_sample_bags(crawl_dir: str, strategy: Strategy, out_dir: str, url_ids: np.ndarray, *,
                       scheduler: Any = None, part_mb: int = PART_MB, left_out: LeftOut | None = None) -> BagMatrix:
    """The evaluation's bags of ``url_ids`` under a strategy with source shares: each source's
    sample bags (simweb.tasks.bags.sample.sample_bags, with the same arguments), added in their shares
    (:func:`combine_sample_bags`)."""
    if strategy.shares is None:
        raise ValueError(f"{strategy.label}: expected a strategy with source shares; use sample_bags")
    return combine_sample_bags([
        (share, sample_bags(crawl_dir, strategy.source_strategy(source), out_dir, url_ids, scheduler=scheduler,
                            part_mb=part_mb, left_out=left_out))
        for source, share in strategy.share_of().items()
    ])


def combine_sample_bags(parts: Sequence[tuple[float, BagMatrix]]) -> BagMatrix:
    """Σ share_k · B_k over bags of (some of) the same URLs with vocabularies of their own: the
    rows of every URL that has a bag in some part, the union of the parts' terms.

    As simweb.core.bag_matrix.weigh_shared for a whole corpus, but over the rows given: its ``df``
    counts the combined rows holding each term, its ``collection_size`` is the largest of the
    parts' (a bound from below: the collection's URLs with a bag of any source are not read),
    its ``weighting`` is None (each source has its own).
    """
    if not parts:
        raise ValueError("source shares: expected the bags of at least one source, got none")
    ids = np.unique(np.concatenate([bags.url_ids for _, bags in parts]).astype(np.uint64))
    columns: dict[str, int] = {}
    urls: list[str] = [""] * ids.size
    rows, cols, vals = [], [], []
    for share, bags in parts:
        at = np.searchsorted(ids, bags.url_ids)
        col_of = np.array([columns.setdefault(term, len(columns)) for term in bags.vocabulary], dtype=np.int64)
        coo = bags.csr.tocoo()
        rows.append(at[coo.row])
        cols.append(col_of[coo.col] if col_of.size else np.zeros(0, np.int64))
        vals.append(share * coo.data.astype(np.float64))
        for i, url in zip(at.tolist(), bags.urls):
            urls[i] = url
    csr = sp.csr_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))),
                        shape=(ids.size, len(columns)))
    csr.sum_duplicates()
    csr.eliminate_zeros()
    csr.sort_indices()
    keep = np.flatnonzero(np.diff(csr.indptr) > 0)
    csr = csr[keep]
    df = np.bincount(csr.indices, minlength=csr.shape[1]).astype(np.int64)
    return BagMatrix(ids[keep], tuple(urls[i] for i in keep.tolist()), tuple(columns), csr, df,
                     max(bags.collection_size for _, bags in parts), None)
