"""A crawl's pages and links as the in-memory :class:`simweb.core.bags.Corpus` the bags are made
from: a slice of a part (:func:`corpus_from_tables`) or the whole crawl (:func:`load_corpus`)."""
from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from simweb.core.bag_columns import LinkColumns, PageColumns, WordLists
from simweb.core.bags import Corpus
from simweb.tasks import schemas
from simweb.tasks.contexts import source_rows
from simweb.tasks.crawl.read import LINK_COLUMNS, PAGE_COLUMNS, empty_table, keep_all
from simweb.tasks.crawl.tables import read_crawl

__all__ = ["corpus_from_tables", "flat_lists", "load_corpus"]


def flat_lists(column: pa.ChunkedArray | pa.Array) -> tuple[pa.Array, np.ndarray]:
    """A list<string> column as (its values, their offsets from 0)."""
    array = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    if len(array) == 0:
        return pa.array([], pa.string()), np.zeros(1, dtype=np.int64)
    lengths = pc.fill_null(pc.list_value_length(array), 0).to_numpy(zero_copy_only=False).astype(np.int64)
    offsets = np.zeros(len(array) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    return pc.list_flatten(array).cast(pa.string()), offsets


class _Strings(Sequence[str]):
    """An Arrow string column as a sequence of str, converted item by item when read (a corpus
    reads the URLs of its bags, not those of its every link)."""

    def __init__(self, column: pa.ChunkedArray | pa.Array) -> None:
        self._column = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column

    def __len__(self) -> int:
        return len(self._column)

    def __getitem__(self, i):  # type: ignore[override]
        if isinstance(i, slice):
            return self._column[i].to_pylist()
        return self._column[i].as_py()

    def __iter__(self) -> Iterator[str]:
        return iter(self._column.to_pylist())


def corpus_from_tables(pages: pa.Table | None, links: pa.Table | None, sources: pa.Table | None = None,
                       where: str = "links") -> Corpus:
    """A :class:`Corpus` of PAGES and LINKS tables (either may be None); words interned by Arrow
    in order of first appearance. Pages without a ``words`` column count as pages of no words
    (a strategy without contents reads titles only).

    The links' anchors and contexts are offsets into the words of their source pages:
    ``sources`` (url_id, words; default ``pages``) must hold every link's source page, or a
    ValueError naming ``where`` says the parts do not belong together. With neither (a strategy
    without anchor windows reads no words), every anchor and context is empty.
    """
    if sources is None and pages is not None and "words" in pages.column_names and links is not None:
        sources = pages
    pages = pages if pages is not None else empty_table(schemas.PAGES, PAGE_COLUMNS)
    links = links if links is not None else empty_table(schemas.LINKS, LINK_COLUMNS)
    flats = [flat_lists(pages.column(c) if c in pages.column_names else pa.array([[]] * pages.num_rows, schemas.WORDS))
             for c in ("title_words", "words")]
    if sources is not None and sources is not pages:
        flats.append(flat_lists(sources.column("words")))
    encoded = pc.dictionary_encode(pa.concat_arrays([values for values, _ in flats]))
    codes = encoded.indices.to_numpy(zero_copy_only=False).astype(np.int64)
    lists, start = [], 0
    for values, offsets in flats:
        lists.append(WordLists(codes[start:start + len(values)], offsets))
        start += len(values)

    def ints(table: pa.Table, name: str, dtype) -> np.ndarray:
        return table.column(name).to_numpy().astype(dtype)

    page_columns = PageColumns(
        url=_Strings(pages.column("url")), url_id=ints(pages, "url_id", np.uint64),
        title_words=lists[0], words=lists[1],
    )
    n = links.num_rows
    if sources is None:
        texts, text = WordLists(np.zeros(0, np.int64), np.zeros(2, np.int64)), np.zeros(n, np.int64)
        offsets = [np.zeros(n, np.int64)] * 4
    else:
        texts = lists[-1]
        text = source_rows(links, sources.column("url_id"), texts.lengths, where)
        offsets = [ints(links, name, np.int64) for name in ("anchor_start", "anchor_end", "context_start", "context_end")]
    link_columns = LinkColumns(
        source_url=_Strings(links.column("source_url")), source_id=ints(links, "source_id", np.uint64),
        target_url=_Strings(links.column("target_url")), target_id=ints(links, "target_id", np.uint64),
        texts=texts, text=text, anchor_start=offsets[0], anchor_end=offsets[1], context_start=offsets[2],
        context_end=offsets[3],
        syntactic_left=ints(links, "syntactic_left", np.int64), syntactic_right=ints(links, "syntactic_right", np.int64),
        topical_left=ints(links, "topical_left", np.int64), topical_right=ints(links, "topical_right", np.int64),
    )
    return Corpus(encoded.dictionary.to_pylist(), page_columns, link_columns)


def load_corpus(crawl_dir: str, exclude: Callable[[str], bool] = keep_all) -> Corpus:
    """The whole crawl in memory as a :class:`Corpus`, for sweeping strategies (Section 5):
    duplicate copies dropped, and the pages ``exclude`` names with their out-links."""
    tables = read_crawl(crawl_dir, PAGE_COLUMNS, LINK_COLUMNS, exclude=exclude)
    return corpus_from_tables(tables.pages, tables.links, where=crawl_dir)
