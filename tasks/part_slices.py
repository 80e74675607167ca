"""A crawl's pages and links parts read slice by slice: the bags stage's tasks, the
incremental update and the evaluation's TF-IDF of a sample's contents (:func:`content_tfidf`)
hold a slice of a part (and the row groups of its source pages), never the whole part, so their
memory does not grow with the part (simweb.tasks.bags.PartSize). The crawl's rules (which parts,
which copy of a page) are simweb.tasks.crawl's."""
from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import scipy.sparse as sp

from simweb.core.retrieval_metrics import tfidf_rows
from simweb.tasks import schemas
from simweb.tasks.contexts import pages_part_of
from simweb.tasks.crawl import (
    LINK_COLUMNS,
    DamagedPart,
    _add_counts,
    _batches,
    _empty,
    _excluded,
    _keep_all,
    _parquet_file,
    _wanted,
    _without,
    crawl_parts,
    duplicate_copies,
    flat_lists,
    read_part,
)

__all__ = ["LinkSlice", "PageSlice", "content_tfidf", "link_slices", "page_slices"]


def _left_out(table: pa.Table, id_column: str, skip_ids: np.ndarray | None, url_column: str,
              exclude: Callable[[str], bool] | None) -> tuple[pa.Table, int, int]:
    """``table`` without the rows whose ``id_column`` is in ``skip_ids`` (duplicate copies) nor
    those whose ``url_column`` ``exclude`` names; and how many of each were left out."""
    skipped = 0
    if skip_ids is not None and skip_ids.size:
        table, skipped = _without(table, id_column, skip_ids)
    dropped = _excluded(table.column(url_column), exclude) if exclude is not None else np.zeros(0, bool)
    if dropped.any():
        table = table.filter(pa.array(~dropped))
    return table, skipped, int(dropped.sum())


@dataclass(frozen=True, slots=True, eq=False)
class PageSlice:
    """Up to a slice's worth of a pages part's rows, and how many rows of the slice were left
    out: ``skipped`` as duplicate copies, ``excluded`` as pages ``exclude`` names."""

    pages: pa.Table
    skipped: int
    excluded: int


def page_slices(url: str, columns: Sequence[str], skip_ids: np.ndarray | None, rows: int,
                exclude: Callable[[str], bool] | None = None) -> Iterator[PageSlice]:
    """A pages part in slices of at most ``rows`` pages, without the pages of ``skip_ids`` nor
    those ``exclude`` names. The part is never read whole."""
    columns = list(dict.fromkeys(columns))
    read = list(dict.fromkeys([*columns, "url_id", *(["url"] if exclude is not None else [])]))
    for table in _batches(_parquet_file(url, schemas.PAGES, read), url, read, rows):
        table, skipped, excluded = _left_out(table, "url_id", skip_ids, "url", exclude)
        yield PageSlice(table.select(columns), skipped, excluded)


@dataclass(frozen=True, slots=True, eq=False)
class LinkSlice:
    """Up to a slice's worth of a links part's rows, the (url_id, words) of their source pages
    (None when not asked for) and how many rows of the slice were left out: ``skipped`` as
    links of duplicate copies, ``excluded`` as out-links of pages ``exclude`` names."""

    links: pa.Table
    sources: pa.Table | None
    skipped: int
    excluded: int = 0


def link_slices(url: str, skip_sources: np.ndarray | None, rows: int, *,
                columns: Sequence[str] = tuple(LINK_COLUMNS), sources: bool = True,
                exclude: Callable[[str], bool] | None = None) -> Iterator[LinkSlice]:
    """A links part in slices of at most ``rows`` links, without the links of the pages of
    ``skip_sources`` nor the out-links of the pages ``exclude`` names, each with the words of
    its links' source pages when ``sources``.

    The source pages are read from the pages part of the same name by row group, as a slice
    needs them (the ingest writes a page's links in the order of its pages, so consecutive
    slices share a row group or two): memory holds a slice and the row groups it points into,
    never the part.
    """
    columns = list(dict.fromkeys([*columns, "source_id", *(["source_url"] if exclude is not None else [])]))
    pages: _SourcePages | None = _SourcePages(pages_part_of(url), url) if sources else None
    for table in _batches(_parquet_file(url, schemas.LINKS, columns), url, columns, rows):
        table, skipped, excluded = _left_out(table, "source_id", skip_sources, "source_url", exclude)
        yield LinkSlice(table, pages.of(table.column("source_id")) if pages is not None else None, skipped, excluded)


class _SourcePages:
    """The (url_id, words) of the pages of one pages part, read by row group on demand."""

    def __init__(self, url: str, links_url: str) -> None:
        self._url = url
        self._links_url = links_url
        self._file = _parquet_file(url, schemas.PAGES, ["url_id", "words"])
        self._ids = read_part(url, schemas.PAGES, ["url_id"]).column("url_id")
        meta = self._file.metadata
        self._starts = np.cumsum([0] + [meta.row_group(g).num_rows for g in range(meta.num_row_groups)])
        self._groups: dict[int, pa.Table] = {}

    def of(self, source_ids: pa.ChunkedArray) -> pa.Table:
        """(url_id, words) of the pages ``source_ids`` name, each once, in part order."""
        found = pc.index_in(source_ids, value_set=self._ids)
        if found.null_count:
            raise ValueError(
                f"{self._links_url}: {found.null_count} link(s) name a source page that is not in its pages part; "
                "expected the pages and links parts written together by one `simweb ingest` — re-run it"
            )
        rows = np.unique(found.to_numpy(zero_copy_only=False)).astype(np.int64)
        group = np.searchsorted(self._starts, rows, side="right") - 1
        needed = np.unique(group).tolist()
        for g in [g for g in self._groups if g not in needed]:
            del self._groups[g]
        tables = []
        for g in needed:
            if g not in self._groups:
                try:
                    self._groups[g] = self._file.read_row_group(g, columns=["url_id", "words"])
                except pa.ArrowInvalid as err:
                    raise DamagedPart(self._url, err) from None
            local = rows[group == g] - self._starts[g]
            tables.append(self._groups[g].take(pa.array(local)))
        return pa.concat_tables(tables) if tables else _empty(schemas.PAGES, ["url_id", "words"])


def content_tfidf(crawl_dir: str, url_ids: np.ndarray,
                  exclude: Callable[[str], bool] = _keep_all) -> tuple[sp.csr_matrix, np.ndarray]:
    """TF-IDF vectors of the contents of the pages of ``url_ids`` (ENS Section 4.2: the cosine of
    TF-IDF vectors judges a top-N list, Δ(A, N)) and the row of each of ``url_ids``; a URL that
    was not crawled gets the all-zero last row (cosine 0 with everything). Document frequencies
    are those of every page but the ones ``exclude`` names.

    One pass over the pages, slice by slice: each slice's words are dictionary-encoded by Arrow
    and counted once per page into the collection's df, and only the wanted pages' words are
    kept. Memory holds a slice, the vocabulary's df and the wanted pages, never the crawl's words
    as Python strings (before: every page's words as a list of str)."""
    found = crawl_parts(crawl_dir)
    copies = duplicate_copies(found.pages)
    wanted = _wanted(url_ids)
    df = pa.table({"term": pa.array([], pa.string()), "df": pa.array([], pa.int64())})
    kept, pending, documents = [], [], 0
    seen = np.zeros(0, np.uint64)
    for url in found.pages:
        for piece in page_slices(url, ["url", "url_id", "words"], copies.of(url), 4096,
                                 None if exclude is _keep_all else exclude):
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
                df, pending = _add_counts([df, *pending], "term", "df"), []
            kept.append(pages.filter(pc.is_in(pages.column("url_id"), value_set=wanted)).select(["url_id", "words"]))
    df = _add_counts([df, *pending], "term", "df")
    pages = pa.concat_tables(kept) if kept else _empty(schemas.PAGES, ["url_id", "words"])
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
