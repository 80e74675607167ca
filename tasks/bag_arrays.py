"""The index's bags as flat arrays, for the exact re-rank of every query (simweb.core.rerank).

Written into an index version folder from its bags files (``bags-<first>.parquet``, the
layout of simweb.tasks.index_store) by the invert stage, for a build and an incremental
update alike, so the arrays always hold exactly the bags of the files beside them:

    terms.utf8, terms.offsets.u64   the vocabulary: every term of the bags once, in UTF-8 byte
                                    order; term id t is terms.utf8[offsets[t]:offsets[t + 1]]
    bags.offsets.u64                n_docs + 1 rising: document d's entries are
                                    offsets[d] .. offsets[d + 1] − 1 of the two arrays below
    bags.terms.u32                  the entries' term ids, rising within each document
    bags.weights.f32                their weights, as the bags files hold them
    bags.sums.f64                   each document's sum of weights (simweb.core.rerank.weight_sums)

Two passes over the bags files, a row group of documents at a time (memory: its entries and
the vocabulary): the first collects each batch's dictionary of terms into the vocabulary, the
second maps each batch's terms to their ids and appends its entries. The bags stage writes each
bag's terms in that order already; a bag that is not (an index written otherwise) is sorted.
"""
from __future__ import annotations

import os
from collections.abc import Iterator, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from simweb.core.rerank import weight_sums
from simweb.tasks import index_store as store

__all__ = ["write_bag_arrays"]


def _batches(path: str, columns: Sequence[str]) -> Iterator[pa.RecordBatch]:
    """A bags file's ``columns``, a row group (simweb.tasks.index_store.BAG_ROW_GROUP documents) at
    a time, the terms dictionary-encoded with the row group's own dictionary."""
    with pq.ParquetFile(path, read_dictionary=["terms.list.element"]) as f:
        for group in range(f.num_row_groups):
            yield from f.read_row_group(group, columns=list(columns), use_threads=False).combine_chunks().to_batches()


def _file_entries(path: str, vocabulary: pa.Array) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """One bags file's bags, a row group at a time: each group's bag lengths, its
    entries' term ids (into ``vocabulary``) and their weights."""
    for batch in _batches(path, ["terms", "weights"]):
        terms, weights = batch.column(0), batch.column(1)
        lengths = pc.list_value_length(terms).to_numpy(zero_copy_only=False).astype(np.int64)
        flat, flat_w = terms.flatten(), weights.flatten()
        if len(flat) != len(flat_w):
            raise store.IndexFormatError(f"{path}: expected one weight per term, found {len(flat)} terms and "
                                         f"{len(flat_w)} weights; rebuild the index")
        ids = pc.index_in(pc.cast(flat.dictionary, pa.string()), value_set=vocabulary) \
            .to_numpy(zero_copy_only=False).astype(np.int64)
        codes = flat.indices.to_numpy(zero_copy_only=False).astype(np.int64)
        yield lengths, ids[codes], flat_w.to_numpy(zero_copy_only=False).astype(np.float32)


def _vocabulary(paths: Sequence[str]) -> pa.Array:
    """Every term of the files once, in UTF-8 byte order."""
    found: list[pa.Array] = []
    for path in paths:
        for batch in _batches(path, ["terms"]):
            found.append(pc.cast(batch.column(0).flatten().dictionary, pa.string()))
        # One file's dictionaries at a time, folded into the vocabulary so far.
        found = [pc.unique(pa.concat_arrays(found))] if found else []
    if not found:
        return pa.array([], pa.string())
    vocabulary = found[0]
    return vocabulary.take(pc.array_sort_indices(vocabulary))


def write_bag_arrays(folder: str, files: Sequence[str], n_docs: int) -> dict[str, int]:
    """Write the arrays of the module docstring into ``folder`` from its bags ``files`` (names,
    in document order), which must hold the bags of ``n_docs`` documents; returns the counts
    written (vocabulary, entries)."""
    paths = [os.path.join(folder, f) for f in files]
    vocabulary = _vocabulary(paths)
    if len(vocabulary) >= 2**32:
        raise ValueError(f"{len(vocabulary)} distinct terms: the index holds at most 2^32 − 1 (term ids are uint32)")
    names = (store.BAG_OFFSETS_FILE, store.BAG_TERMS_FILE, store.BAG_WEIGHTS_FILE, store.BAG_SUMS_FILE)
    entries = docs = 0
    with store.appending(folder, names) as f:
        np.zeros(1, "<u8").tofile(f[store.BAG_OFFSETS_FILE])
        for path in paths:
            for lengths, terms, weights in _file_entries(path, vocabulary):
                terms, weights = _rising(terms, weights, lengths, path)
                (entries + np.cumsum(lengths)).astype("<u8").tofile(f[store.BAG_OFFSETS_FILE])
                terms.astype("<u4").tofile(f[store.BAG_TERMS_FILE])
                weights.astype("<f4").tofile(f[store.BAG_WEIGHTS_FILE])
                weight_sums(np.concatenate([[0], np.cumsum(lengths)]), weights).astype("<f8") \
                    .tofile(f[store.BAG_SUMS_FILE])
                entries += int(lengths.sum())
                docs += lengths.size
        if docs != n_docs:
            raise store.IndexFormatError(f"{folder}: expected the bags of {n_docs} documents, found {docs} in its "
                                         "bags files; rebuild the index")
    data = vocabulary.buffers()[2]
    offsets = np.frombuffer(vocabulary.buffers()[1], dtype="<i4", count=len(vocabulary) + 1) if len(vocabulary) \
        else np.zeros(1, np.int32)
    offsets = offsets.astype(np.uint64)
    store.write_array_atomic(offsets - offsets[0], os.path.join(folder, store.VOCAB_OFFSETS_FILE))
    text = np.frombuffer(data, dtype=np.uint8)[int(offsets[0]):int(offsets[-1])] if data is not None else \
        np.zeros(0, np.uint8)
    store.write_array_atomic(text, os.path.join(folder, store.VOCAB_FILE))
    return {"vocabulary": len(vocabulary), "entries": entries}


def _rising(terms: np.ndarray, weights: np.ndarray, lengths: np.ndarray, path: str) -> tuple[np.ndarray, np.ndarray]:
    """The entries with each bag's term ids rising (sorted where a bag's are not); a term
    twice in one bag is refused."""
    if terms.size < 2:
        return terms, weights
    starts = np.cumsum(lengths) - lengths
    step = np.diff(terms)
    inside = np.ones(terms.size - 1, dtype=bool)
    inside[starts[(starts > 0) & (starts < terms.size)] - 1] = False  # steps across two bags
    if np.all(step[inside] > 0):
        return terms, weights
    row = np.repeat(np.arange(lengths.size), lengths)
    order = np.lexsort((terms, row))
    terms, weights = terms[order], weights[order]
    step = np.diff(terms)
    if np.any(step[inside] == 0):
        raise store.IndexFormatError(f"{path}: a bag holds a term twice; rebuild the index")
    return terms, weights
