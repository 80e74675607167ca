"""Which copy of a page crawled more than once counts (see simweb.tasks.crawl, "Duplicate
copies"), and the pages merged into another as its aliases."""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from simweb.core.aliases import AliasMap
from simweb.tasks import schemas
from simweb.tasks.crawl.aliases import crawl_aliases
from simweb.tasks.crawl.parts import file_stem
from simweb.tasks.crawl.read import open_part, read_part

__all__ = ["DuplicateCopies", "duplicate_copies"]


@dataclass(frozen=True, slots=True, eq=False)
class DuplicateCopies:
    """Per part file (:func:`file_stem`), the URL ids whose kept copy lies in another; the ids of the pages
    merged into another crawled page as its aliases (left out of every part); and the crawl's
    resolved aliases (see the module docstring)."""

    by_part: dict[str, np.ndarray]
    merged: np.ndarray = field(default_factory=lambda: np.zeros(0, np.uint64))
    aliases: AliasMap = field(default_factory=AliasMap)

    def of(self, url: str) -> np.ndarray:
        """The URL ids a pages part, or the source ids a links part, loses to other parts or pages."""
        own = self.by_part.get(file_stem(url))
        if own is None:
            return self.merged
        return np.concatenate([own, self.merged]) if self.merged.size else own


def duplicate_copies(page_parts: Sequence[str], alias_parts: Sequence[str] = ()) -> DuplicateCopies:
    """Which copies of a URL crawled in several parts are dropped: all but the first by
    (source_file, record_offset), then by part. Repeats within the winning part are left to the
    Corpus (first row wins); the ingest writes none. With ``alias_parts`` (:attr:`CrawlParts.aliases`)
    the crawl's aliases are resolved too, and the pages merged by them are dropped.

    Columnar and light: the URL ids of every part (8 bytes a page) find the URLs crawled more
    than once, and only those rows' source files and offsets are read and compared. (Before: a
    pandas frame of url_id, source_file and offset of every page, ~150 bytes a page.)
    """
    ids, part = [], []
    for i, url in enumerate(page_parts):
        open_part(url, schemas.PAGES, ["url_id", "source_file", "record_offset"])  # the footer's schema
        column = read_part(url, schemas.PAGES, ["url_id"]).column("url_id").to_numpy()
        ids.append(column.astype(np.uint64))
        part.append(np.full(column.size, i, dtype=np.int32))
    if not ids:
        return DuplicateCopies({})
    every = np.concatenate(ids)
    aliases, merged = crawl_aliases(alias_parts, every)
    order = np.argsort(every, kind="stable")
    same = every[order][1:] == every[order][:-1]
    repeated = np.zeros(every.size, dtype=bool)
    repeated[1:] |= same
    repeated[:-1] |= same
    if not repeated.any():
        return DuplicateCopies({}, merged, aliases)
    rows = np.sort(order[repeated])  # rows of the URLs crawled more than once, in part order
    starts = np.concatenate(([0], np.cumsum([a.size for a in ids])))
    row_part = np.concatenate(part)[rows]
    files, offsets = [], []
    for i in np.unique(row_part).tolist():
        local = rows[row_part == i] - starts[i]
        table = read_part(page_parts[i], schemas.PAGES, ["source_file", "record_offset"]).take(pa.array(local))
        files.append(table.column("source_file"))
        offsets.append(table.column("record_offset").to_numpy())
    file_rank = pc.rank(pa.chunked_array(files, pa.string()), sort_keys="ascending", tiebreaker="dense").to_numpy()
    offset = np.concatenate(offsets)
    url = every[rows]
    best = np.lexsort((row_part, offset, file_rank, url))
    first = np.concatenate(([True], url[best][1:] != url[best][:-1]))
    losers = best[~first]
    loser_part, loser_url = row_part[losers], url[losers]
    return DuplicateCopies({file_stem(page_parts[int(i)]): np.unique(loser_url[loser_part == i])
                            for i in np.unique(loser_part).tolist()}, merged, aliases)
