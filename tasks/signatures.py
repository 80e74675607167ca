"""The `signatures` and `invert` stages of build-index (paper Section 6.2, Figure 10).

signatures: BAGS parts → per part, m min-hash signatures per bag (simweb.core.minhash), one task
per part; then dense document ids 0..N−1 in part order, H (N × m uint32), the url ↔ doc map
with title, in-degree and category, and the bags in id order (layout: tasks/index_store.py).

invert: H → I, a shuffle by (j, value): map tasks read blocks of H rows and write, for each
reduce task, the (key, doc) pairs of the positions j it owns; reduce tasks sort their pairs and
drop the buckets no two documents share; the last step concatenates the reducers' buckets (they own
rising ranges of j, so the result is sorted) and writes the manifest. Documents with in-degree
≤ ``min_in_degree`` are left out of I but stay in H (Section 7.1).

Each unit has a plain function (tested directly) and a Prefect task wrapper; the stage
functions fan the units out with a flow's fan-out (simweb.flows.cluster.fan_out), or on Dask's
local scheduler when called without one.
"""
from __future__ import annotations

import math
import os
import shutil
from collections import Counter
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from prefect import task

from simweb.core import fine
from simweb.core.aliases import AliasMap
from simweb.core.minhash import EMPTY, INDEX_ALGORITHM, MinHashParams, sign, term_hashes
from simweb.core.query import buckets_from_pairs
from simweb.tasks import index_store as store
from simweb.tasks.bag_arrays import write_bag_arrays
from simweb.tasks.crawl.copies import crawl_copies
from simweb.tasks.crawl.degrees import in_degrees
from simweb.tasks.crawl.parts import crawl_of, crawl_parts
from simweb.tasks.crawl.tables import page_titles
from simweb.tasks.directory_file import url_categories
from simweb.tasks.options import run_calls
from simweb.tasks.storage import (
    download,
    exists,
    is_remote,
    join,
    local_path,
    local_stand_in,
    read_parquet,
    read_parquet_file,
    read_range,
    read_text,
    remove,
)
from simweb.tasks.storage import parts as dataset_parts

SIG_DIR = "_sig"
SHUFFLE_DIR = "_shuffle"
# Rows of H per map task of the inversion (× m × 12 bytes of pairs).
BLOCK_DOCS = 131_072
REDUCERS = 8
#: (document, position) entries per reducer the invert stage aims at: at most ``REDUCERS``.
ENTRIES_PER_REDUCER = 4_000_000


@dataclass(frozen=True, slots=True)
class IndexParams:
    """Knobs of the signatures and invert stages (Sections 6.2 and 7.1).

    ``algorithm`` is the weighted min-hash sampler: DartMinHash (``"dart"``, simweb.core.dartminhash)
    by default, ICWS (``"icws"``) as before; both estimate the bag Jaccard of Section 4 with the
    same distribution, DartMinHash about seven times faster.

    ``min_in_degree`` is the paper's filter of I (Section 7.1: documents with in-degree ≤ 3 can
    be queried but are never results), off by default: on documentation crawls whole classes of
    pages have few inlinks (DebDocs: the 244 sampled release-notes pages, in-degree 3 each), and
    the filter left out 60 % of the sampled page pairs with exact Jaccard ≥ α, for 286 bytes per
    page of I saved (tasks/stages/eval_index.py measures it for a crawl; README, "Results").
    """

    m: int = 80
    seed: int = 1
    algorithm: str = INDEX_ALGORITHM
    min_in_degree: int | None = None

    def minhash(self) -> MinHashParams:
        return MinHashParams(m=self.m, seed=self.seed, algorithm=self.algorithm)


@dataclass(frozen=True, slots=True)
class SignatureStats:
    """What the signatures stage read, signed and skipped (STYLE habit 8)."""

    parts: int
    bags: int
    empty_bags: int
    bad_rows: int
    duplicate_urls: int

    def to_dict(self) -> dict[str, int]:
        return {"parts": self.parts, "bags": self.bags, "empty_bags": self.empty_bags,
                "bad_rows": self.bad_rows, "duplicate_urls": self.duplicate_urls}


# --------------------------------------------------------------------------- signatures


def _part_name(i: int) -> str:
    return f"part-{i:05d}"


def sign_part(part: str, out: str, index: int, params: MinHashParams = MinHashParams(),
              fine_m: int = 0) -> dict[str, int]:
    """Sign the bags of one BAGS part into ``out/_sig/part-<index>.{u32,parquet}`` (``out`` a
    local folder or one on an object store): the signatures, and per signed row its url id,
    URL, number of terms and row in the part (the bags themselves are read from the part
    again where they are needed: writing a copy of them here was a third of the signing); with
    ``fine_m``, also the rows of H2 (simweb.core.fine) in ``part-<index>.u8``.

    A row whose terms and weights differ in length, or whose weights are negative or not
    finite, is skipped and counted.
    """
    # The terms as the part stores them, dictionary-encoded: a term's code is its place in the
    # part's dictionary, whose strings alone are hashed (decoded and hashed again term by term
    # they were a fifth of the signing: 0.145 s against 0.061 s a part of 10,000 bags).
    table = read_parquet_file(part, columns=["url_id", "url", "terms", "weights"],
                              read_dictionary=["terms.list.element"]).unify_dictionaries()
    terms = table.column("terms").combine_chunks()
    weights = table.column("weights").combine_chunks()
    t_len = pc.list_value_length(terms).to_numpy(zero_copy_only=False)
    w_len = pc.list_value_length(weights).to_numpy(zero_copy_only=False)
    flat_w = pc.list_flatten(weights).to_numpy(zero_copy_only=False).astype(np.float64)
    w_bad = ~np.isfinite(flat_w) | (flat_w < 0)
    bad = t_len != w_len
    if w_bad.any():
        w_row = np.repeat(np.arange(len(w_len)), w_len)
        bad |= np.bincount(w_row[w_bad], minlength=len(w_len)) > 0
    rows = np.flatnonzero(~bad)
    if bad.any():
        keep = pa.array(~bad)
        table = table.filter(keep)
        terms = table.column("terms").combine_chunks()
        weights = table.column("weights").combine_chunks()
        t_len = t_len[~bad]
        flat_w = pc.list_flatten(weights).to_numpy(zero_copy_only=False).astype(np.float64)
    encoded = pc.list_flatten(terms)
    if not pa.types.is_dictionary(encoded.type):  # not stored dictionary-encoded
        encoded = pc.dictionary_encode(encoded)
    codes = encoded.indices.to_numpy(zero_copy_only=False).astype(np.int64)
    vocabulary = encoded.dictionary.to_pylist()
    offsets = np.concatenate([[0], np.cumsum(t_len)]).astype(np.int64)
    hashes = term_hashes(vocabulary, params.hash_family)
    sigs = sign(codes, offsets, hashes, flat_w, params)
    fine_rows = fine.sign(codes, offsets, hashes, flat_w, params.seed, fine_m) if fine_m else None
    meta = pa.table(
        {
            "url_id": table.column("url_id"),
            "url": table.column("url"),
            "n_terms": pa.array(t_len.astype(np.int32)),
            "row": pa.array(rows.astype(np.int64)),
        }
    )
    with local_stand_in(out) as local:
        os.makedirs(os.path.join(local, SIG_DIR), exist_ok=True)
        base = os.path.join(local, SIG_DIR, _part_name(index))
        store.write_array_atomic(sigs.values, base + ".u32")
        if fine_rows is not None:
            store.write_array_atomic(fine_rows, base + ".u8")
        tmp = base + ".tmp.parquet"
        pq.write_table(meta, tmp)
        os.replace(tmp, base + ".parquet")
    return {"bags": table.num_rows, "empty_bags": int(np.count_nonzero(t_len == 0)), "bad_rows": int(bad.sum())}


def sign_parts(calls: Sequence[dict[str, Any]]) -> list[dict[str, int]]:
    """Sign several BAGS parts one after another (:func:`sign_part`'s keyword dicts): one task
    on a worker for a shard of the parts, whose orchestration costs as much as one part's."""
    return [sign_part(**call) for call in calls]


def shards(calls: Sequence[dict[str, Any]], n: int) -> list[list[dict[str, Any]]]:
    """``calls`` in ``n`` (at most one per call) runs of consecutive calls, of sizes differing
    by one at most."""
    if not calls:
        return []
    n = max(1, min(n, len(calls)))
    cuts = [len(calls) * i // n for i in range(n + 1)]
    return [list(calls[a:b]) for a, b in zip(cuts[:-1], cuts[1:])]


def _left_join(base: pa.Table, other: pa.Table | None, column: str, dtype: pa.DataType) -> pa.Array:
    if other is None:
        return pa.nulls(base.num_rows, dtype)
    joined = base.select(["url_id", "doc_id"]).join(other, "url_id", join_type="left outer")
    joined = joined.sort_by("doc_id")
    return pc.cast(joined.column(column), dtype).combine_chunks()


@dataclass(frozen=True, slots=True)
class PageFacts:
    """What the doc map says of each page besides its bag: in-degree, title (every crawled
    page has a row) and directory category, each a (url_id, value) table or None when its
    source was not given; and the crawl's aliases (simweb.core.aliases.AliasMap) or None."""

    in_degree: pa.Table | None
    title: pa.Table | None
    category: pa.Table | None
    aliases: AliasMap | None = None

    @classmethod
    def read(cls, pages: str | None = None, links: str | None = None, directory: str | None = None) -> PageFacts:
        """The facts from the PAGES and LINKS data sets (read as their crawl's: its selection,
        one copy of a page) and a directory file. Of one crawl, its duplicate copies are found
        once for both."""
        pages, links = (crawl_of(pages) if pages else None), (crawl_of(links) if links else None)
        copies = None
        if pages and pages == links:
            found = crawl_parts(pages)
            copies = crawl_copies(found)
        return cls(in_degrees(links, copies=copies) if links else None,
                   page_titles(pages, copies=copies) if pages else None,
                   url_categories(directory) if directory else None,
                   copies.aliases if copies is not None else None)


def assemble_signatures(
    bags: Sequence[str],
    out: str,
    params: MinHashParams = MinHashParams(),
    *,
    facts: PageFacts | None = None,
) -> dict[str, int]:
    """Number the signed parts 0..N−1 in part order and write H, the url map and the doc map
    (the bags are written by :func:`write_index_bags`, from what this returns: per part, the
    documents it gave and the positions of the signed rows it did not).

    A URL seen in an earlier part wins; later rows of the same url id are skipped and counted.
    The doc map's in-degrees, titles and categories are ``facts`` (None: none known).
    """
    signed = [os.path.join(out, SIG_DIR, _part_name(i) + ".parquet") for i in range(len(bags))]
    metas = [pq.read_table(p, columns=["url_id", "url", "n_terms", "row"]) for p in signed]
    url_ids = np.concatenate([m.column("url_id").to_numpy() for m in metas]) if metas else np.zeros(0, np.uint64)
    _, first = np.unique(url_ids, return_index=True)
    keep = np.zeros(url_ids.size, dtype=bool)
    keep[first] = True
    n = int(keep.sum())
    if n >= 2**32 - 1:
        raise ValueError(f"{n} documents: the index holds at most 2^32 − 2 (document ids are uint32)")
    # H: the signed parts' rows in order, duplicates left out.
    h_path = os.path.join(out, store.H_FILE)
    tmp = h_path + ".tmp"
    at = 0
    with open(tmp, "wb") as f:
        for i, meta in enumerate(metas):
            rows = meta.num_rows
            sig = np.fromfile(os.path.join(out, SIG_DIR, _part_name(i) + ".u32"), dtype="<u4").reshape(rows, params.m)
            sig[keep[at:at + rows]].tofile(f)
            at += rows
    os.replace(tmp, h_path)
    # H2 (the fine signatures) the same way, where the parts were signed with them.
    fine_parts = [os.path.join(out, SIG_DIR, _part_name(i) + ".u8") for i in range(len(metas))]
    if metas and all(os.path.exists(f) for f in fine_parts):
        at = 0
        with store.appending(out, (store.H2_FILE,)) as files:
            for path, meta in zip(fine_parts, metas):
                if meta.num_rows:
                    rows = np.fromfile(path, dtype=np.uint8).reshape(meta.num_rows, -1)
                    rows[keep[at:at + meta.num_rows]].tofile(files[store.H2_FILE])
                at += meta.num_rows
    docmap = pa.concat_tables(metas).filter(pa.array(keep)) if metas else pa.table(
        {"url_id": pa.array([], pa.uint64()), "url": pa.array([], pa.string()), "n_terms": pa.array([], pa.int32())})
    docmap = docmap.append_column("doc_id", pa.array(np.arange(n, dtype=np.uint32)))
    facts = facts or PageFacts(None, None, None)
    degree, titles, cats = facts.in_degree, facts.title, facts.category
    table = pa.table(
        {
            "doc_id": docmap.column("doc_id"),
            "url_id": docmap.column("url_id"),
            "url": docmap.column("url"),
            "title": _left_join(docmap, titles, "title", pa.string()),
            "in_degree": (pc.fill_null(_left_join(docmap, degree, "in_degree", pa.int32()), 0)
                          if degree is not None else pa.nulls(n, pa.int32())),
            "category": _left_join(docmap, cats, "category", pa.string()),
            "n_terms": docmap.column("n_terms"),
            "indexed": pa.array(np.ones(n, dtype=bool)),
            "crawled": (pc.is_in(docmap.column("url_id"), value_set=titles.column("url_id"))
                        if titles is not None else pa.nulls(n, pa.bool_())),
        },
        schema=store.DOCMAP,
    )
    pq.write_table(table, os.path.join(out, store.DOCMAP_FILE))
    ids = docmap.column("url_id").to_numpy()
    order = np.argsort(ids, kind="stable")
    store.write_array_atomic(ids[order].astype(np.uint64), os.path.join(out, store.URLS_FILE))
    store.write_array_atomic(order.astype(np.uint32), os.path.join(out, store.URL_DOCS_FILE))
    store.write_aliases(out, facts.aliases, ids[order], order)
    # Per signed part, its rows that became documents: their count, and the positions (among the
    # part's signed rows) of the duplicates left out.
    cuts = np.cumsum([0] + [m.num_rows for m in metas])
    kept = [int(keep[a:b].sum()) for a, b in zip(cuts[:-1], cuts[1:])]
    dropped = [np.flatnonzero(~keep[a:b]).tolist() for a, b in zip(cuts[:-1], cuts[1:])]
    return {"bags": int(url_ids.size), "docs": n, "duplicate_urls": int(url_ids.size - n), "kept": kept,
            "dropped": dropped}


def signed_bags(part: str, rows: np.ndarray) -> pa.Table:
    """The terms and weights of the ``rows`` of a BAGS part (those :func:`sign_part` signed)."""
    table = read_parquet(part, columns=["terms", "weights"])
    if rows.size == table.num_rows:  # every row signed (rows are increasing)
        return table
    return table.take(pa.array(rows))


def write_index_bags(parts: Sequence[str], indices: Sequence[int], out: str, first_doc: int,
                     dropped: Sequence[Sequence[int]], spans: Sequence[Sequence[int]]) -> list[dict[str, Any]]:
    """The index's bags files from ``first_doc`` on (a multiple of store.BAG_FILE_DOCS): the bags
    of the BAGS ``parts``, signed as parts ``indices`` into ``out`` — of each, its signed rows but
    the ``dropped`` positions (duplicate URLs), and of those the span [a, b) — in that order
    (store.BagsWriter). Returns the files written (BagFile dicts).

    A task on a worker for a run of whole files: at a million pages this copy was most of the
    signatures stage when the flow's process wrote every bag alone. The files depend on the
    number of documents only, not on how many workers wrote them."""
    kept = []
    for i, gone, (a, b) in zip(indices, dropped, spans):
        rows = read_parquet(join(out, SIG_DIR, _part_name(i) + ".parquet"), columns=["row"]).column("row").to_numpy()
        kept.append((np.delete(rows, np.asarray(gone, dtype=np.int64)) if len(gone) else rows)[a:b])
    with local_stand_in(out) as local:
        writer = store.BagsWriter(local, first_doc)
        try:
            # The next part is read (Arrow decodes without the GIL) while this one is encoded and
            # written: on the 100k crawl's bags in one process the copy took 2.4-2.5 s so against
            # 2.8-3.5 s one part after the other.
            with ThreadPoolExecutor(1, thread_name_prefix="simweb-bags-reader") as reader:
                upcoming = reader.submit(signed_bags, parts[0], kept[0]) if parts else None
                for k in range(len(parts)):
                    table = upcoming.result()
                    upcoming = reader.submit(signed_bags, parts[k + 1], kept[k + 1]) if k + 1 < len(parts) else None
                    writer.write(table)
            files = writer.close()
        except BaseException:
            writer.abort()
            raise
    return [f.to_dict() for f in files]


def index_bags_calls(parts: Sequence[str], out: str, kept: Sequence[int], dropped: Sequence[Sequence[int]],
                     tasks: int) -> list[dict[str, Any]]:
    """:func:`write_index_bags`'s keyword dicts: the bags files (a file each store.BAG_FILE_DOCS
    documents) in at most ``tasks`` runs of consecutive files; each call names the parts
    whose documents its files hold, and which of their documents (a part split between two
    runs is read by both)."""
    file_docs = store.BAG_FILE_DOCS
    firsts = np.concatenate([[0], np.cumsum(kept, dtype=np.int64)])
    n = int(firsts[-1])
    n_files = -(-n // file_docs)
    calls = []
    for run in shards(list(range(n_files)), tasks):
        lo, hi = run[0] * file_docs, min(n, (run[-1] + 1) * file_docs)
        # The parts with documents in [lo, hi), and the span of each part's documents inside it.
        inside = [i for i in range(len(parts)) if firsts[i] < hi and firsts[i + 1] > max(lo, firsts[i])]
        calls.append({"parts": [parts[i] for i in inside], "indices": inside, "out": out, "first_doc": lo,
                      "dropped": [dropped[i] for i in inside],
                      "spans": [[int(max(lo, firsts[i]) - firsts[i]), int(min(hi, firsts[i + 1]) - firsts[i])]
                                for i in inside]})
    return calls


# --------------------------------------------------------------------------- inversion


def _ranges(n: int, parts: int) -> list[tuple[int, int]]:
    cuts = np.linspace(0, n, parts + 1).round().astype(int)
    return [(int(a), int(b)) for a, b in zip(cuts[:-1], cuts[1:])]


def _indexed_mask(signed: str, min_in_degree: int | None) -> np.ndarray:
    t = read_parquet(join(signed, store.DOCMAP_FILE), columns=["in_degree", "n_terms"])
    mask = t.column("n_terms").to_numpy() > 0
    degree = t.column("in_degree")
    if min_in_degree is not None and degree.null_count < len(degree):
        mask &= pc.fill_null(degree, 0).to_numpy() > min_in_degree
    return mask


def invert_map(signed: str, out: str, block: int, n_blocks: int, n_reducers: int,
               min_in_degree: int | None) -> dict[str, int]:
    """Map task: the (key, doc) pairs of one block of H rows, one file per reduce task."""
    manifest = _signed_info(signed)
    n, m = manifest["n_docs"], manifest["minhash"]["m"]
    d0, d1 = _ranges(n, n_blocks)[block]
    h = np.frombuffer(read_range(join(signed, store.H_FILE), d0 * m * 4, (d1 - d0) * m * 4),
                      dtype="<u4").reshape(d1 - d0, m)
    present = ~(h == EMPTY).all(axis=1)
    indexed = _indexed_mask(signed, min_in_degree)[d0:d1][present]
    ids = (np.flatnonzero(present) + d0).astype(np.uint32)
    rows = h[present]
    with local_stand_in(out) as local:
        shuffle = os.path.join(local, SHUFFLE_DIR)
        os.makedirs(shuffle, exist_ok=True)
        for r, (j0, j1) in enumerate(_ranges(m, n_reducers)):
            # Position-major: for one key, the block's docs come out rising.
            cols = rows[:, j0:j1].T.astype(np.uint64)
            keys = (np.arange(j0, j1, dtype=np.uint64)[:, None] << np.uint64(32)) | cols
            docs = np.broadcast_to(ids, cols.shape)
            flags = np.broadcast_to(indexed, cols.shape)
            path = os.path.join(shuffle, _map_file(block, r))
            np.savez(path + ".tmp.npz", keys=keys.ravel(), docs=docs.ravel(), indexed=flags.ravel())
            os.replace(path + ".tmp.npz", path)
    return {"docs": int(d1 - d0), "indexed": int(indexed.sum())}


def invert_reduce(out: str, reducer: int, n_blocks: int, m: int) -> dict[str, int]:
    """Reduce task: group one range of positions j into buckets (simweb.core.query.buckets_from_pairs)."""
    maps = [f"{SHUFFLE_DIR}/{_map_file(b, reducer)}" for b in range(n_blocks)]
    with local_stand_in(out, fetch=maps if is_remote(out) else ()) as local:
        keys, docs, flags = [], [], []
        for name in maps:
            with np.load(os.path.join(local, name)) as z:
                keys.append(z["keys"])
                docs.append(z["docs"])
                flags.append(z["indexed"])
        # Blocks are in doc order and the sort is stable, so docs stay rising within a bucket.
        inv = buckets_from_pairs(np.concatenate(keys), np.concatenate(docs), m, np.concatenate(flags))
        path = os.path.join(local, SHUFFLE_DIR, _reduce_file(reducer))
        np.savez(path + ".tmp.npz", keys=inv.keys, sizes=np.diff(inv.offsets), docs=inv.docs)
        os.replace(path + ".tmp.npz", path)
    return {"buckets": inv.n_buckets, "postings": inv.n_postings}


def _map_file(block: int, reducer: int) -> str:
    return f"map-{block:05d}-red-{reducer:03d}.npz"


def _reduce_file(reducer: int) -> str:
    return f"red-{reducer:03d}.npz"


def invert_finish(signed: str, out: str, n_reducers: int, min_in_degree: int | None) -> dict[str, int]:
    """Concatenate the reducers' buckets into I, bring H and the maps along, write the manifest.

    ``out`` on an object store: the reducers' files are fetched, and I, H, the maps and the bags
    uploaded (the manifest's digests are of the files as written here)."""
    if not is_remote(out):
        return _invert_finish(signed, out, n_reducers, min_in_degree)
    reduced = [f"{SHUFFLE_DIR}/{_reduce_file(r)}" for r in range(n_reducers)]
    with local_stand_in(out, fetch=reduced) as local:
        for name in (*_SHARED_FILES, *_bag_names(signed)):
            if name not in _OPTIONAL_FILES or exists(join(signed, name)):
                download(join(signed, name), os.path.join(local, name))
        stats = _invert_finish(signed, local, n_reducers, min_in_degree)
    remove(join(out, SHUFFLE_DIR))
    return stats


def _invert_finish(signed: str, out: str, n_reducers: int, min_in_degree: int | None) -> dict[str, int]:
    shuffle = os.path.join(out, SHUFFLE_DIR)
    reduced = [os.path.join(shuffle, _reduce_file(r)) for r in range(n_reducers)]
    # I is written a reducer's buckets at a time (memory: one reducer's, not the whole of I); the
    # offsets' width is known first from the bucket sizes alone.
    n_postings = 0
    for path in reduced:
        with np.load(path) as z:
            n_postings += int(z["sizes"].sum())
    off_dtype = np.dtype(np.uint32 if n_postings < 2**32 else np.uint64).newbyteorder("<")
    n_keys = at = 0
    offsets_name = store.offsets_file(off_dtype)
    with store.appending(out, (store.KEYS_FILE, offsets_name, store.DOCS_FILE)) as files:
        np.zeros(1, off_dtype).tofile(files[offsets_name])
        for path in reduced:
            with np.load(path) as z:
                keys, sizes, docs = z["keys"], z["sizes"], z["docs"]
            keys.astype("<u8").tofile(files[store.KEYS_FILE])
            (at + np.cumsum(sizes, dtype=np.uint64)).astype(off_dtype).tofile(files[offsets_name])
            docs.astype("<u4").tofile(files[store.DOCS_FILE])
            n_keys, at = n_keys + int(keys.size), at + int(sizes.sum())
            del keys, sizes, docs
    shutil.rmtree(shuffle, ignore_errors=True)
    info = _signed_info(signed)
    mask = _indexed_mask(signed, min_in_degree)
    # H, the maps and the bags are the signatures stage's, unchanged: both stages are cache, so
    # they share the files (a hard link; a copy where the file system has none). Publishing
    # copies them out of the cache, checked against their digests (index_store.publish).
    for name in (*_SHARED_FILES, *_bag_names(signed)):
        if name in _OPTIONAL_FILES and not os.path.exists(os.path.join(signed, name)):
            continue
        if not is_remote(signed) and os.path.abspath(signed) != os.path.abspath(out):
            _link_or_copy(os.path.join(signed, name), os.path.join(out, name))
    docmap = read_parquet(join(signed, store.DOCMAP_FILE))
    docmap = docmap.set_column(docmap.schema.get_field_index("indexed"), "indexed", pa.array(mask))
    store.write_docmap(docmap, out)
    degrees_known = docmap.column("in_degree").null_count < docmap.num_rows or docmap.num_rows == 0
    crawled = docmap.column("crawled")
    n_crawled = int(pc.sum(crawled).as_py() or 0) if crawled.null_count == 0 else None
    arrays = write_bag_arrays(out, _bag_names(signed), info["n_docs"])  # the bags as the re-rank reads them
    counts = {"n_docs": info["n_docs"], "n_indexed": int(mask.sum()), "n_buckets": n_keys, "n_postings": at}
    store.write_manifest(out, {
        **counts,
        "n_crawled": n_crawled,
        "n_terms": arrays["vocabulary"],
        "n_entries": arrays["entries"],
        "minhash": info["minhash"],
        "metric": info.get("metric", "jaccard"),
        "min_in_degree": min_in_degree if degrees_known else None,
        "offsets_dtype": np.dtype(off_dtype).name,
        "signature_stats": info.get("stats", {}),
        "bags": info["bags"],
        **({"updated_from": info["updated_from"]} if "updated_from" in info else {}),
    })
    # The stage's counts as a build's summary shows them: the documents are crawled pages and
    # pages only linked to (each has a bag and can be asked about).
    pages = ({"crawled_pages": n_crawled, "pages_only_linked_to": info["n_docs"] - n_crawled}
             if n_crawled is not None else {"pages": info["n_docs"]})
    return {"documents": info["n_docs"], **pages, "indexed": counts["n_indexed"], "buckets": counts["n_buckets"],
            "postings": counts["n_postings"]}


#: The files of a version the invert stage takes from the signatures stage as they are.
_SHARED_FILES = (store.H_FILE, store.H2_FILE, store.URLS_FILE, store.URL_DOCS_FILE, store.ALIASES_FILE,
                 store.ALIAS_DOCS_FILE, store.UPDATED_DOCS_FILE)
#: Those of them a signed folder may not have (H2: signed for an index ordered by overlap; the
#: updated documents: signed by a build, not by an incremental update).
_OPTIONAL_FILES = (store.H2_FILE, store.UPDATED_DOCS_FILE)


def _link_or_copy(src: str, dst: str) -> None:
    try:
        os.link(src, dst)
    except OSError:  # another file system, or one without hard links
        store.copy_file(src, dst)


def _bag_names(signed: str) -> list[str]:
    return [f["file"] for f in _signed_info(signed)["bags"]]


def _signed_info(signed: str) -> dict[str, Any]:
    import json

    return json.loads(read_text(join(signed, "signatures.json")))


# --------------------------------------------------------------------------- stages


def signatures(
    bags: str,
    out: str,
    params: MinHashParams = MinHashParams(),
    *,
    pages: str | None = None,
    links: str | None = None,
    directory: str | None = None,
    fan_out=None,
    metric: str = "jaccard",
    tasks: int | None = None,
) -> dict[str, int]:
    """The signatures stage (Section 6.2): sign every BAGS part into the folder ``out``.

    ``pages`` (PAGES data set) gives titles, ``links`` (LINKS data set) in-degrees, and
    ``directory`` (ODP RDF or url<TAB>category file) categories; each is optional. ``metric`` is
    how queries order the candidates the signatures find (the strategy's: ``jaccard``, or
    ``overlap`` for bags compared by overlap), recorded for the index's manifest.
    Returns the stage's stats (bags read, empty, bad rows skipped, duplicate urls skipped).
    ``fan_out`` runs the signing tasks (see simweb.tasks.options.run_calls): ``tasks`` of them, each signing a
    shard of consecutive parts (None: one a part). Each task run costs its orchestration — a
    Prefect task run's records on the server, its hand-off to a worker — which on a small
    cluster takes the cores the signing needs: the flow's cluster asks for two a worker thread.
    """
    import json

    out = local_path(out) or out
    parts = dataset_parts(bags)
    if not parts:
        raise FileNotFoundError(f"no BAGS parts in {bags}: expected the bags stage's Parquet folder")
    # The fine signatures (H2) of bags normalised to one total; an index ordered by overlap has none.
    fine_m = fine.M if metric != "overlap" else 0
    calls = [{"part": p, "out": out, "index": i, "params": params, "fine_m": fine_m} for i, p in enumerate(parts)]
    # The crawl's in-degrees and titles are read here while the workers sign (at 100,000 pages
    # 1.5–2.3 s, which the stage spent after the signing while the workers idled).
    with ThreadPoolExecutor(1, thread_name_prefix="simweb-page-facts") as reader:
        facts = reader.submit(PageFacts.read, pages, links, directory)
        if tasks is None:
            per_part = run_calls(fan_out, sign_part_task, calls)
        else:
            per_part = [r for shard in run_calls(fan_out, sign_parts_task, [{"calls": c} for c in shards(calls, tasks)])
                        for r in shard]
        # On an object store the signed parts are fetched, and H, the maps and the bags uploaded.
        exts = ("u32", "parquet", "u8") if fine_m else ("u32", "parquet")
        signed = [f"{SIG_DIR}/{_part_name(i)}.{ext}" for i in range(len(parts)) for ext in exts]
        with local_stand_in(out, fetch=signed if is_remote(out) else ()) as local:
            assembled = assemble_signatures(parts, local, params, facts=facts.result())
            # The bags in document order, a file a run of parts, written on the workers.
            bag_calls = index_bags_calls(parts, out, assembled["kept"], assembled["dropped"], tasks or 1)
            bag_files = [f for files in run_calls(fan_out, write_index_bags_task, bag_calls) for f in files]
            shutil.rmtree(os.path.join(local, SIG_DIR), ignore_errors=True)
    remove(join(out, SIG_DIR))
    total = Counter()
    for s in per_part:
        total.update(s)
    stats = SignatureStats(
        parts=len(parts), bags=assembled["docs"], empty_bags=int(total["empty_bags"]),
        bad_rows=int(total["bad_rows"]), duplicate_urls=assembled["duplicate_urls"],
    ).to_dict()
    with local_stand_in(out) as local, open(os.path.join(local, "signatures.json"), "w") as f:
        json.dump({"n_docs": assembled["docs"], "minhash": params.to_dict(), "metric": metric, "stats": stats,
                   "bags": bag_files}, f, indent=1)
    return stats


def write_index_version(
    signed: str,
    out: str,
    *,
    min_in_degree: int | None = None,
    block_docs: int = BLOCK_DOCS,
    reducers: int = REDUCERS,
    fan_out=None,
) -> dict[str, int]:
    """The invert stage (Section 6.2): a complete index version in ``out`` from the signed folder
    (I inverted from its H, and H, the maps and the bags brought along as links to the signed
    folder's files).

    Documents with in-degree ≤ ``min_in_degree`` (None: no filter; also none when the
    signatures stage had no links) stay in H but are left out of I (Section 7.1).
    """
    signed, out = local_path(signed) or signed, local_path(out) or out
    info = _signed_info(signed)
    n, m = info["n_docs"], info["minhash"]["m"]
    if min_in_degree is not None and min_in_degree < 0:
        raise ValueError(f"min_in_degree: expected None or a count ≥ 0, got {min_in_degree}")
    n_blocks = max(1, math.ceil(n / block_docs))
    # As many reducers as the volume needs (each task run costs more than a small reduce).
    n_red = max(1, min(reducers, m, math.ceil(n * m / ENTRIES_PER_REDUCER)))
    run_calls(fan_out, invert_map_task, [
        {"signed": signed, "out": out, "block": b, "n_blocks": n_blocks, "n_reducers": n_red,
         "min_in_degree": min_in_degree} for b in range(n_blocks)])
    run_calls(fan_out, invert_reduce_task, [
        {"out": out, "reducer": r, "n_blocks": n_blocks, "m": m} for r in range(n_red)])
    return invert_finish(signed, out, n_red, min_in_degree)


# --------------------------------------------------------------------------- Prefect tasks

sign_part_task = task(name="sign-bags-part")(sign_part)
sign_parts_task = task(name="sign-bags-parts")(sign_parts)
write_index_bags_task = task(name="write-index-bags")(write_index_bags)
invert_map_task = task(name="invert-map")(invert_map)
invert_reduce_task = task(name="invert-reduce")(invert_reduce)
