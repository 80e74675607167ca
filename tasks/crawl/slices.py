"""A crawl's pages and links parts read slice by slice: the bags stage's tasks, the incremental
update and the evaluation's TF-IDF of a sample's contents (simweb.tasks.crawl.tfidf) hold a
slice of a part (and the row groups of its source pages), never the whole part, so their memory
does not grow with the part (simweb.tasks.bags.sizes.PartSize). Which parts and which copy of a page
count is decided by the callers, with simweb.tasks.crawl.parts and .copies."""
from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from simweb.tasks import schemas
from simweb.tasks.contexts import pages_part_of
from simweb.tasks.crawl.read import (LINK_COLUMNS, DamagedPart, empty_table, excluded, open_part, part_batches,
                                     read_part, without)

__all__ = ["LinkSlice", "PageSlice", "link_slices", "page_slices"]


def _left_out(table: pa.Table, id_column: str, skip_ids: np.ndarray | None, url_column: str,
              exclude: Callable[[str], bool] | None) -> tuple[pa.Table, int, int]:
    """``table`` without the rows whose ``id_column`` is in ``skip_ids`` (duplicate copies) nor
    those whose ``url_column`` ``exclude`` names; and how many of each were left out."""
    skipped = 0
    if skip_ids is not None and skip_ids.size:
        table, skipped = without(table, id_column, skip_ids)
    dropped = excluded(table.column(url_column), exclude) if exclude is not None else np.zeros(0, bool)
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
    for table in part_batches(open_part(url, schemas.PAGES, read), url, read, rows):
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
    for table in part_batches(open_part(url, schemas.LINKS, columns), url, columns, rows):
        table, skipped, excluded = _left_out(table, "source_id", skip_sources, "source_url", exclude)
        yield LinkSlice(table, pages.of(table.column("source_id")) if pages is not None else None, skipped, excluded)


class _SourcePages:
    """The (url_id, words) of the pages of one pages part, read by row group on demand."""

    def __init__(self, url: str, links_url: str) -> None:
        self._url = url
        self._links_url = links_url
        self._file = open_part(url, schemas.PAGES, ["url_id", "words"])
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
        return pa.concat_tables(tables) if tables else empty_table(schemas.PAGES, ["url_id", "words"])
