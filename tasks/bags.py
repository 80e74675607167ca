"""The `bags` stage: pages + links → one weighted bag per URL (paper Section 6.1, Figure 10).

Three cached sub-stages (simweb.tasks.stagecache: outputs keyed by inputs and parameters, published
whole with a manifest), so a second strategy reuses what it shares with the first:

    OUT/bag-fragments/<key>/part-*.parquet   (url_id, url, term, weight)       FRAGMENTS
        key: the content digests of the crawl's parts (those CRAWL.json selects, if it exists;
        simweb.tasks.crawl) + Strategy.fragment_params()
        One Dask task per pages part and per links part (which also reads the words of the
        pages part of the same name: anchors are word offsets into them, simweb.tasks.contexts):
        simweb.core.bags.Corpus builds the part's fragments (content + title per page; anchor
        window + link id per inlink)
        and adds up equal (URL, term) pairs within the part — fragments merge associatively,
        so combining early is exact and shrinks the shuffle.
    OUT/bag-merge/<key>/part-*.parquet       (url_id, url, term, tf)           MERGED
        key: the fragments (not P: partitioning changes how the work is cut, not the bags)
        A Dask DataFrame shuffle by URL id into P partitions (out of core: Dask's disk
        shuffle locally, p2p on a distributed cluster), then simweb.core.bags.merge_entries per
        partition: one row per (URL, term), sorted by URL id then term.
    OUT/bags/<key>/part-*.parquet            simweb.tasks.schemas.BAGS
    OUT/bags/<key>/_terms/df.parquet         (term, df) over the whole collection
        key: the merged bags + the frequency weighting and normalisation
        df = number of merged bags holding the term, a global reduction (value counts of the
        term column); NMDF's μ, σ are fitted to it when the strategy leaves them unset
        (recorded in the manifest's stats); then per partition: tf × factor(df), normalised
        to the strategy's constant sum (simweb.core.weighting).

The crawl is read by simweb.tasks.crawl, which also decides which copy of a page crawled in
two WARC files counts: the first by (source_file, record_offset); the other copies' pages and
the links read from them are skipped and counted, so a page crawled twice contributes one
content fragment and its anchors once.

``build_bags_stage`` is the plain function; ``bags_task`` its Prefect task. ``read_bags``
returns a :class:`simweb.core.bags.BagMatrix` of chosen URLs from a published bags folder.
"""
from __future__ import annotations

import math
import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pyarrow.parquet as pq
from prefect import task
from prefect.cache_policies import NO_CACHE

from simweb.core.bags import BagMatrix, CorpusStats, merge_entries
from simweb.core.strategy import Strategy
from simweb.core.weighting import Weighting, normalise_rows
from simweb.tasks import schemas
from simweb.tasks.crawl import (
    PAGE_COLUMNS,
    corpus_from_tables,
    crawl_identity,
    crawl_parts,
    duplicate_copies,
    flat_lists,
    part_of,
    read_links,
    read_pages,
)
from simweb.tasks.stagecache import MANIFEST, StageOutput, file_identities, published, read_manifest, run_stage
from simweb.tasks.storage import filesystem, join, parts, write_parquet_atomic

__all__ = [
    "DF_FILE",
    "FRAGMENTS",
    "MERGED",
    "DfSnapshot",
    "bags_task",
    "build_bags_stage",
    "find_bags",
    "fragments",
    "merge_partition",
    "read_bags",
    "weigh_part",
    "write_merged",
]

# Bumped when fragments, merged bags or weighted bags change meaning, so old outputs are not reused.
BAGS_FORMAT = 1
STAGE_FRAGMENTS, STAGE_MERGE, STAGE_BAGS = "bag-fragments", "bag-merge", "bags"
# Under "_" so that Parquet readers of the folder (which skip "_" and "." names) see only BAGS parts.
DF_FILE = "_terms/df.parquet"
SNAPSHOT_DF_FILE = "_terms/df-snapshot.parquet"  # the frozen df a bags folder was weighted with
# Auto partitioning: about this many bytes of fragment Parquet per merge partition.
PARTITION_BYTES = 64 << 20
#: Up to this many bytes of fragments the merge shuffles with plain Dask tasks, above with
#: Dask's default (the P2P shuffle on a distributed cluster).
TASK_SHUFFLE_BYTES = 256 << 20

FRAGMENTS = pa.schema([
    pa.field("url_id", pa.uint64(), nullable=False),
    pa.field("url", pa.string(), nullable=False),
    pa.field("term", pa.string(), nullable=False),
    pa.field("weight", pa.float64(), nullable=False),
])
MERGED = pa.schema([
    pa.field("url_id", pa.uint64(), nullable=False),
    pa.field("url", pa.string(), nullable=False),
    pa.field("term", pa.string(), nullable=False),
    pa.field("tf", pa.float64(), nullable=False),
])
DF = pa.schema([pa.field("term", pa.string(), nullable=False), pa.field("df", pa.int64(), nullable=False)])



# ---------------------------------------------------------------------------------------------
# Sub-stage 1: fragments


def fragments(pages: pa.Table | None, links: pa.Table | None, strategy: Strategy) -> tuple[pa.Table, CorpusStats]:
    """The FRAGMENTS of PAGES and LINKS tables (simweb.tasks.crawl.read_pages / read_links) under
    ``strategy``, pre-merged per (URL, term), and the corpus's counts (duplicates, self-links)."""
    corpus = corpus_from_tables(pages, links)
    merged = corpus.merged(strategy)
    rows, cols, weights = merged.entries()
    vocab = merged.vocabulary
    used, inverse = np.unique(cols, return_inverse=True)
    terms = pa.array([vocab[c] for c in used.tolist()], pa.string())
    urls = pa.array(list(merged.urls), pa.string())
    table = pa.table({
        "url_id": pa.array(merged.url_ids[rows], pa.uint64()),
        "url": urls.take(pa.array(rows)) if rows.size else pa.array([], pa.string()),
        "term": terms.take(pa.array(inverse.astype(np.int64))) if cols.size else pa.array([], pa.string()),
        "weight": pa.array(weights, pa.float64()),
    }, schema=FRAGMENTS)
    return table, corpus.stats


def fragments_of_pages_part(url: str, strategy: Strategy, skip_ids: np.ndarray, out: str) -> dict[str, int]:
    """Content and title fragments of one pages part, pre-merged per (URL, term), written to ``out``."""
    table, skipped = read_pages(url, PAGE_COLUMNS, skip_ids)
    table_out, stats = fragments(table, None, strategy)
    write_parquet_atomic(table_out, out)
    return {"pages": table.num_rows + skipped, "duplicate_pages": stats.duplicate_pages + skipped,
            "fragment_rows": table_out.num_rows}


def fragments_of_links_part(url: str, strategy: Strategy, skip_sources: np.ndarray, out: str) -> dict[str, int]:
    """Anchor-window and link-id fragments of one links part, pre-merged per (URL, term), written to ``out``."""
    table, skipped = read_links(url, skip_sources)
    table_out, stats = fragments(None, table, strategy)
    write_parquet_atomic(table_out, out)
    return {"links": table.num_rows + skipped, "links_of_duplicate_pages": skipped,
            "self_links": stats.self_links, "fragment_rows": table_out.num_rows}


# ---------------------------------------------------------------------------------------------
# Sub-stage 2: merge (shuffle by URL id)


def merge_partition(frame: pd.DataFrame) -> pd.DataFrame:
    """Merge the fragment rows of one shuffle partition: one row per (URL, term), sorted (Section 6.1)."""
    if frame.empty:
        return pd.DataFrame({"url_id": pd.Series([], dtype="uint64"), "url": pd.Series([], dtype=object),
                             "term": pd.Series([], dtype=object), "tf": pd.Series([], dtype="float64")})
    codes, terms = pd.factorize(frame["term"].to_numpy(dtype=object), sort=True)
    url_ids = frame["url_id"].to_numpy(dtype=np.uint64)
    u, t, w = merge_entries(url_ids, codes, frame["weight"].to_numpy(dtype=np.float64))
    url_of = pd.Series(frame["url"].to_numpy(dtype=object), index=url_ids)
    url_of = url_of[~url_of.index.duplicated()]
    return pd.DataFrame({"url_id": u, "url": url_of.reindex(u).to_numpy(dtype=object),
                         "term": np.asarray(terms, dtype=object)[t], "tf": w})


def write_merged(frame: pd.DataFrame, out: str) -> int:
    """Write one merge partition (MERGED) to ``out``; returns its rows."""
    table = pa.Table.from_pandas(frame, schema=MERGED, preserve_index=False)
    write_parquet_atomic(table, out)
    return table.num_rows


# ---------------------------------------------------------------------------------------------
# Sub-stage 3: weighting


@dataclass(frozen=True, slots=True)
class DfSnapshot:
    """Document frequencies and weighting frozen at the start of an epoch (tasks/incremental.py).

    ``df_path`` is a DF table; ``weighting`` the resolved weighting of that epoch (NMDF's μ, σ
    fitted then). A term the snapshot does not know (first crawled after the epoch began)
    counts df = 1 until the next full re-weight.
    """

    df_path: str
    weighting: Weighting

    def identity(self) -> dict[str, Any]:
        return {"df": file_identities([self.df_path]), "weighting": self.weighting.to_dict()}

    def covering(self, terms: pa.Table) -> pa.Table:
        """The snapshot's DF table extended with df = 1 for the terms of ``terms`` it lacks."""
        frozen = pq.read_table(self.df_path).cast(DF)
        unknown = pc.invert(pc.is_in(terms.column("term"), value_set=frozen.column("term")))
        new = terms.filter(unknown).column("term")
        extra = pa.table({"term": new, "df": pa.array(np.ones(len(new), np.int64))}, schema=DF)
        return pa.concat_tables([frozen, extra]).sort_by("term")


def _count_terms(url: str) -> pd.Series:
    return pq.read_table(url, columns=["term"]).column("term").to_pandas().value_counts()


def weigh_part(url: str, df_path: str, weighting: Weighting, out: str) -> dict[str, int]:
    """Frequency-weight and normalise the merged bags of one partition into a BAGS part (Sections 5.2, 6.1)."""
    merged = pq.read_table(url)
    df_table = pq.read_table(df_path)
    if merged.num_rows == 0:
        write_parquet_atomic(schemas.BAGS.empty_table(), out)
        return {"bags": 0, "entries": 0, "empty_bags": 0}
    # df of each row's term, by a hash join on the term.
    df_of = pd.Series(df_table.column("df").to_numpy(), index=df_table.column("term").to_pandas())
    terms = merged.column("term").to_pandas()
    df = df_of.reindex(terms.to_numpy()).to_numpy()
    if np.isnan(df.astype(np.float64)).any():
        raise ValueError(f"{url}: a term has no document frequency in {df_path}; the bags stage output is damaged — delete it and re-run")
    url_ids = merged.column("url_id").to_numpy()
    tf = merged.column("tf").to_numpy()
    weights = tf * weighting.factors(df.astype(np.float64))
    starts = np.flatnonzero(np.concatenate(([True], url_ids[1:] != url_ids[:-1])))
    keep_entry = weights > 0
    # Entries whose weight fell to 0 leave the bag; rebuild the row pointers over the rest.
    counts = np.add.reduceat(keep_entry.astype(np.int64), starts)
    indptr = np.concatenate(([0], np.cumsum(counts)))
    data, sums = normalise_rows(indptr, weights[keep_entry], weighting.normalise_to)
    nonempty = sums > 0
    lengths = np.diff(indptr)
    term_arr = merged.column("term").filter(pa.array(keep_entry))
    list_offsets = pa.array(indptr.astype(np.int32))
    terms_list = pa.ListArray.from_arrays(list_offsets, term_arr.combine_chunks() if isinstance(term_arr, pa.ChunkedArray) else term_arr)
    weights_list = pa.ListArray.from_arrays(list_offsets, pa.array(data.astype(np.float32), pa.float32()))
    table = pa.table({
        "url_id": pa.array(url_ids[starts], pa.uint64()),
        "url": merged.column("url").take(pa.array(starts)),
        "terms": terms_list,
        "weights": weights_list,
    }, schema=schemas.BAGS).filter(pa.array(nonempty))
    write_parquet_atomic(table, out)
    return {"bags": table.num_rows, "entries": int(lengths[nonempty].sum()), "empty_bags": int((~nonempty).sum())}


# ---------------------------------------------------------------------------------------------
# The stage


def _compute(collections: list, scheduler: Any) -> list:
    """dask.compute on ``scheduler``; inside a Dask worker, through the worker's client (seceding its slot)."""
    import dask

    if not collections:
        return []
    if scheduler is not None:
        return list(dask.compute(*collections, scheduler=scheduler))
    try:
        from distributed import get_worker, worker_client

        get_worker()
    except (ImportError, ValueError):
        return list(dask.compute(*collections))
    with worker_client() as client:
        return list(client.compute(list(collections), sync=True))


def build_bags_stage(crawl_dir: str, strategy: Strategy, out_dir: str, partitions: int | None = None, *,
                     scheduler: Any = None, df_snapshot: DfSnapshot | None = None,
                     verify: bool = False) -> StageOutput:
    """Build (or reuse) the weighted bags of the crawl in ``crawl_dir`` under ``strategy`` (Section 6.1).

    ``crawl_dir`` holds the ingest output (``pages/`` and ``links/`` parts). Results go under
    ``out_dir`` (see the module docstring); the returned :class:`StageOutput` names the BAGS
    folder, its stats (pages, links, duplicates and self-links skipped, bags, entries,
    vocabulary, fitted NMDF μ and σ, seconds per sub-stage) and whether it was reused.
    ``partitions`` is the number of merge partitions P (default: about one per 64 MiB of
    fragments). ``scheduler`` is passed to ``dask.compute`` (a distributed Client, "threads",
    "processes", "sync"); by default the current Dask client or Dask's local scheduler.
    ``df_snapshot`` weighs with a frozen df and weighting (an incremental index's epoch, see
    tasks/incremental.py) instead of the collection's own: terms it does not know count df 1.
    ``verify`` checks reused sub-stage outputs by content, not only by size (stagecache.damage).
    """
    import dask
    import dask.dataframe as dd

    if not isinstance(strategy, Strategy):
        strategy = Strategy.from_dict(strategy) if isinstance(strategy, dict) else Strategy.parse(str(strategy))
    if strategy.shares is not None:
        if df_snapshot is not None:
            raise ValueError(f"{strategy.label}: a strategy with source shares has one df per source; "
                             "it is weighted in full, not with a frozen df snapshot")
        from simweb.tasks.bag_shares import build_shared_bags_stage  # it builds each source with this function

        return build_shared_bags_stage(crawl_dir, strategy, out_dir, partitions, scheduler=scheduler, verify=verify)
    if partitions is not None and (isinstance(partitions, bool) or not isinstance(partitions, int) or partitions < 1):
        raise ValueError(f"partitions: expected a positive number of merge partitions, got {partitions!r}")
    crawl = crawl_parts(crawl_dir)
    inputs = crawl_identity(crawl_dir)

    # 1. Fragments: one task per ingest part.
    def fragments(tmp: str) -> dict[str, Any]:
        t0 = time.perf_counter()
        copies = duplicate_copies(crawl.pages)
        work = [dask.delayed(fragments_of_pages_part)(u, strategy, copies.of(u), join(tmp, f"part-pages-{part_of(u)}.parquet"))
                for u in crawl.pages]
        work += [dask.delayed(fragments_of_links_part)(u, strategy, copies.of(u), join(tmp, f"part-links-{part_of(u)}.parquet"))
                 for u in crawl.links]
        stats: dict[str, Any] = {"pages": 0, "duplicate_pages": 0, "links": 0, "links_of_duplicate_pages": 0,
                                 "self_links": 0, "fragment_rows": 0}
        for part_stats in _compute(work, scheduler):
            for k, v in part_stats.items():
                stats[k] += v
        fs, path = filesystem(tmp)
        stats["fragment_bytes"] = int(sum(fs.size(p) for p in fs.ls(path, detail=False) if p.endswith(".parquet")))
        stats["seconds"] = round(time.perf_counter() - t0, 3)
        return stats

    frag = run_stage(out_dir, STAGE_FRAGMENTS, inputs,
                     {"format": BAGS_FORMAT, "strategy": strategy.fragment_params()}, fragments, verify=verify)
    p = partitions or max(1, math.ceil(int(frag.stats.get("fragment_bytes", 0)) / PARTITION_BYTES))

    # 2. Merge: shuffle the fragments by URL id into P partitions, sum equal (URL, term) pairs.
    def merge(tmp: str) -> dict[str, Any]:
        t0 = time.perf_counter()
        frag_parts = parts(frag.path)
        meta = pd.DataFrame({"url_id": pd.Series([], dtype="uint64"), "url": pd.Series([], dtype=object),
                             "term": pd.Series([], dtype=object), "tf": pd.Series([], dtype="float64")})
        if frag.stats.get("fragment_rows", 0) == 0 or not frag_parts:
            written = [write_merged(meta, join(tmp, "part-00000.parquet"))]
        else:
            ddf = dd.read_parquet(frag_parts, columns=["url_id", "url", "term", "weight"])
            # A small crawl's fragments are shuffled as plain tasks: the distributed P2P shuffle
            # costs seconds of set-up that only pay off for large volumes.
            small = int(frag.stats.get("fragment_bytes", 0)) <= TASK_SHUFFLE_BYTES
            shuffled = ddf.shuffle(on="url_id", npartitions=p, method="tasks" if small else None)
            merged = shuffled.map_partitions(merge_partition, meta=meta)
            writes = [dask.delayed(write_merged)(part, join(tmp, f"part-{i:05d}.parquet"))
                      for i, part in enumerate(merged.to_delayed())]
            written = _compute(writes, scheduler)
        return {"partitions": len(written), "rows": int(sum(written)), "seconds": round(time.perf_counter() - t0, 3)}

    # P only sets how the work is cut, not the result: it is not part of the key.
    merged_out = run_stage(out_dir, STAGE_MERGE, {"fragments": frag}, {"format": BAGS_FORMAT}, merge, verify=verify)

    # 3. Weigh: df over the collection, then frequency weighting and normalisation per partition.
    def weigh(tmp: str) -> dict[str, Any]:
        t0 = time.perf_counter()
        merged_parts = parts(merged_out.path)
        counts = _compute([dask.delayed(_count_terms)(u) for u in merged_parts], scheduler)
        df = pd.concat(counts).groupby(level=0).sum() if counts else pd.Series([], dtype="int64")
        df = df[df > 0].sort_index()
        df_table = pa.table({"term": pa.array(df.index.to_numpy(dtype=object), pa.string()),
                             "df": pa.array(df.to_numpy(np.int64), pa.int64())}, schema=DF)
        df_path = join(tmp, DF_FILE)
        write_parquet_atomic(df_table, df_path)
        df_values = df.to_numpy(np.int64)
        weighting = Weighting.resolve(strategy, df_values)
        if df_snapshot is not None:
            df_path = join(tmp, SNAPSHOT_DF_FILE)
            write_parquet_atomic(df_snapshot.covering(df_table), df_path)
            weighting = df_snapshot.weighting
        work = [dask.delayed(weigh_part)(u, df_path, weighting, join(tmp, f"part-{i:05d}.parquet"))
                for i, u in enumerate(merged_parts)]
        totals = {"bags": 0, "entries": 0, "empty_bags": 0}
        for s in _compute(work, scheduler):
            for k, v in s.items():
                totals[k] += v
        return {
            **{k: frag.stats.get(k, 0) for k in ("pages", "duplicate_pages", "links", "links_of_duplicate_pages",
                                                  "self_links", "fragment_rows")},
            **totals,
            "vocabulary": int(df_values.size),
            "collection_size": totals["bags"],
            "weighting": weighting.to_dict(),
            "strategy": strategy.to_dict(),
            "label": strategy.label,
            "partitions": len(merged_parts),
            "seconds": {"fragments": frag.stats.get("seconds", 0.0), "merge": merged_out.stats.get("seconds", 0.0),
                        "weigh": round(time.perf_counter() - t0, 3)},
        }

    params: dict[str, Any] = {"format": BAGS_FORMAT, "weighting": strategy.bag_params()}
    if df_snapshot is not None:
        params["df_snapshot"] = df_snapshot.identity()
    return run_stage(out_dir, STAGE_BAGS, {"merged": merged_out}, params, weigh, verify=verify)


@task(name="bags", cache_policy=NO_CACHE)
def bags_task(crawl_dir: str, strategy: Strategy, out_dir: str, partitions: int | None = None,
              in_task: bool = False, verify: bool = False) -> StageOutput:
    """Prefect task of :func:`build_bags_stage` (deterministic compute: no retries; its outputs are cached).

    Its parts run on the worker's cluster, or with ``in_task`` one after another in the task
    itself (a cluster of one worker thread gains nothing from scheduling them).
    """
    return build_bags_stage(crawl_dir, strategy, out_dir, partitions, scheduler="sync" if in_task else None,
                            verify=verify)


# ---------------------------------------------------------------------------------------------
# Reading bags and crawls


def find_bags(path: str) -> str:
    """The BAGS folder at ``path``: a published bags folder itself, or the only one under ``path/bags``.

    Raises FileNotFoundError naming the folders (and strategies) to choose from when there
    are none or several.
    """
    manifest = read_manifest(path)
    if manifest is not None and manifest.get("stage") == STAGE_BAGS:
        return path
    if parts(path) and manifest is None:
        return path  # a plain folder of BAGS parts
    found = published(path, STAGE_BAGS)
    if len(found) == 1:
        return join(path, STAGE_BAGS, found[0]["key"])
    if not found:
        raise FileNotFoundError(
            f"no bags under {path}: expected a folder written by `simweb bags --out {path}` "
            f"(with {STAGE_BAGS}/<key>/{MANIFEST}) or a bags folder itself"
        )
    choices = "\n".join(f"  {join(path, STAGE_BAGS, m['key'])}   {m.get('stats', {}).get('label', '?')}" for m in found)
    raise FileNotFoundError(f"{len(found)} bag sets under {path}; pass one of them:\n{choices}")


def read_bags(bags_dir: str, url_ids: Iterable[int] | None = None) -> BagMatrix:
    """The bags of ``url_ids`` (all when None) from a BAGS folder, as a :class:`BagMatrix`.

    URL ids without a bag are left out (check with ``url_id in matrix``). ``df`` and
    ``collection_size`` come from the stage's df table and manifest when present.
    """
    bags_dir = find_bags(bags_dir)
    files = parts(bags_dir)
    if not files:
        raise FileNotFoundError(f"no BAGS parts in {bags_dir}")
    fs, _ = filesystem(bags_dir)
    dataset = ds.dataset([filesystem(f)[1] for f in files], format="parquet", filesystem=fs, schema=schemas.BAGS)
    if url_ids is None:
        table = dataset.to_table()
    else:
        wanted = pa.array(sorted({int(u) for u in url_ids}), pa.uint64())
        table = dataset.to_table(filter=pc.field("url_id").isin(wanted))
    table = table.sort_by("url_id")
    ids = table.column("url_id").to_numpy()
    if ids.size > 1 and np.any(ids[1:] == ids[:-1]):
        keep = np.concatenate(([True], ids[1:] != ids[:-1]))
        table, ids = table.filter(pa.array(keep)), ids[keep]
    terms_flat, offsets = flat_lists(table.column("terms"))
    weights = pc.list_flatten(table.column("weights").combine_chunks()).to_numpy(zero_copy_only=False).astype(np.float64)
    encoded = pc.dictionary_encode(terms_flat)
    vocabulary = tuple(encoded.dictionary.to_pylist())
    import scipy.sparse as sp

    csr = sp.csr_matrix((weights, encoded.indices.to_numpy(zero_copy_only=False).astype(np.int64), offsets),
                        shape=(ids.size, len(vocabulary)))
    csr.sort_indices()
    manifest = read_manifest(bags_dir) or {}
    stats = manifest.get("stats", {})
    df = np.zeros(len(vocabulary), dtype=np.int64)
    df_path = join(bags_dir, DF_FILE)
    fs_df, p_df = filesystem(df_path)
    if fs_df.exists(p_df) and vocabulary:
        df_table = pq.read_table(p_df, filesystem=fs_df)
        lookup = pd.Series(df_table.column("df").to_numpy(), index=df_table.column("term").to_pandas())
        df = lookup.reindex(list(vocabulary)).fillna(0).to_numpy(np.int64)
    weighting = None
    if "weighting" in stats:
        w = stats["weighting"]
        weighting = Weighting(Strategy(frequency=w["frequency"]).frequency, w.get("nmdf_mu"), w.get("nmdf_sigma"),
                              float(w.get("normalise_to", 1.0)))
    return BagMatrix(ids.astype(np.uint64), tuple(table.column("url").to_pylist()), vocabulary, csr, df,
                     int(stats.get("collection_size", ids.size)), weighting)
