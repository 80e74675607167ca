"""TF-IDF vectors of the contents of a sample's pages, read slice by slice (the evaluation's,
ENS Section 4.2)."""
from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import scipy.sparse as sp

from simweb.core.retrieval_metrics import tfidf_rows
from simweb.tasks import schemas
from simweb.tasks.crawl.copies import crawl_copies
from simweb.tasks.crawl.corpus import flat_lists
from simweb.tasks.crawl.parts import crawl_parts
from simweb.tasks.crawl.read import empty_table, keep_all
from simweb.tasks.crawl.slices import page_slices
from simweb.tasks.crawl.tables import add_counts, wanted_ids

__all__ = ["content_tfidf"]


def content_tfidf(crawl_dir: str, url_ids: np.ndarray,
                  exclude: Callable[[str], bool] = keep_all) -> tuple[sp.csr_matrix, np.ndarray]:
    """TF-IDF vectors of the contents of the pages of ``url_ids`` (ENS Section 4.2: the cosine of
    TF-IDF vectors judges a top-N list, Δ(A, N)) and the row of each of ``url_ids``; a URL that
    was not crawled gets the all-zero last row (cosine 0 with everything). Document frequencies
    are those of every page but the ones ``exclude`` names.

    One pass over the pages, slice by slice: each slice's words are dictionary-encoded by Arrow
    and counted once per page into the collection's df, and only the wanted pages' words are
    kept. Memory holds a slice, the vocabulary's df and the wanted pages, never the crawl's words
    as Python strings (before: every page's words as a list of str)."""
    found = crawl_parts(crawl_dir)
    copies = crawl_copies(found)
    wanted = wanted_ids(url_ids)
    df = pa.table({"term": pa.array([], pa.string()), "df": pa.array([], pa.int64())})
    kept, pending, documents = [], [], 0
    seen = np.zeros(0, np.uint64)
    for url in found.pages:
        for piece in page_slices(url, ["url", "url_id", "words"], copies.of(url), 4096,
                                 None if exclude is keep_all else exclude):
            pages = piece.pages
            ids = pages.column("url_id").to_numpy()
            first = ~np.isin(ids, seen)  # repeats within a part: the first row
            first[np.setdiff1d(np.arange(ids.size), np.unique(ids, return_index=True)[1])] = False
            pages, seen = pages.filter(pa.array(first)), np.concatenate([seen, ids[first]])
            documents += pages.num_rows
            values, offsets = flat_lists(pages.column("words"))
            encoded = pc.dictionary_encode(values)
            codes = encoded.indices.to_numpy(zero_copy_only=False).astype(np.int64)
            width = max(1, len(encoded.dictionary))
            page_of = np.repeat(np.arange(pages.num_rows), np.diff(offsets))
            in_pages = np.bincount(np.unique(page_of * width + codes) % width, minlength=len(encoded.dictionary))
            pending.append(pa.table({"term": encoded.dictionary, "df": pa.array(in_pages, pa.int64())}))
            if len(pending) >= 8:
                df, pending = add_counts([df, *pending], "term", "df"), []
            kept.append(pages.filter(pc.is_in(pages.column("url_id"), value_set=wanted)).select(["url_id", "words"]))
    df = add_counts([df, *pending], "term", "df")
    pages = pa.concat_tables(kept) if kept else empty_table(schemas.PAGES, ["url_id", "words"])
    ids = pages.column("url_id").to_numpy()
    values, offsets = flat_lists(pages.column("words"))
    encoded = pc.dictionary_encode(values)
    at = pc.index_in(encoded.dictionary, value_set=df.column("term"))
    vectors = tfidf_rows(encoded.indices.to_numpy(zero_copy_only=False).astype(np.int64), offsets,
                         pc.fill_null(df.column("df").take(at), 0).to_numpy(), documents)
    vectors = sp.vstack([vectors, sp.csr_matrix((1, vectors.shape[1]))]).tocsr()
    rows = np.full(url_ids.size, ids.size, dtype=np.int64)
    if ids.size:
        order = np.argsort(ids, kind="stable")
        pos = np.minimum(np.searchsorted(ids[order], url_ids), ids.size - 1)
        hit = ids[order][pos] == url_ids
        rows[hit] = order[pos[hit]]
    return vectors, rows
