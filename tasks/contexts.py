"""Where the anchors and contexts of the LINKS data set lie in the pages' words.

The ingest stage stores each anchor as offsets into its source page's ``words`` (schema
``simweb.tasks.schemas.LINKS``): the words are kept once, in the PAGES row, however many anchors'
contexts they fall in. The stages that build anchor windows (paper Section 3.1) never copy them
back into per-link lists: they hand the source pages' words and each link's row among them to
:class:`simweb.core.bag_columns.LinkColumns`, which gathers the window positions directly:

* the anchor is ``words[anchor_start:anchor_end]``;
* the left context ``words[context_start:anchor_start]``, read backwards (nearest first);
* the right context ``words[anchor_end:context_end]``, nearest first.

A links part's source pages are in the pages part of the same name (both are written from
one WARC file), so a part can be read on its own. :func:`with_context_words` copies the words
out for a reader that wants to look at them (tests, a person inspecting a part).
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from simweb.tasks.schemas import WORDS
from simweb.tasks.storage import join

__all__ = ["CONTEXT_COLUMNS", "OFFSET_COLUMNS", "pages_part_of", "source_rows", "with_context_words"]

#: The LINKS columns that locate an anchor and its context in the source page's words.
OFFSET_COLUMNS = ("source_id", "anchor_start", "anchor_end", "context_start", "context_end")
#: The word-list columns :func:`with_context_words` adds.
CONTEXT_COLUMNS = ("anchor_words", "left_words", "right_words")


def pages_part_of(links_part: str) -> str:
    """The pages part holding the source pages of a links part: ``DIR/pages/<same name>``."""
    folder, name = links_part.rstrip("/").rsplit("/", 1)
    return join(folder.rsplit("/", 1)[0] if "/" in folder else ".", "pages", name)


def source_rows(links: pa.Table, page_ids: pa.Array | pa.ChunkedArray, word_counts: np.ndarray,
                where: str = "links") -> np.ndarray:
    """The row of each link's source page among ``page_ids`` (whose pages hold ``word_counts``
    words each), checking that every anchor and context fits that page's words.

    Raises ValueError, naming ``where``, when a link's source page is not among them or its
    offsets do not fit: the parts do not belong together.
    """
    if links.num_rows == 0:
        return np.zeros(0, dtype=np.int64)
    row = pc.index_in(links.column("source_id"), value_set=page_ids)
    if row.null_count:
        raise ValueError(
            f"{where}: {row.null_count} link(s) name a source page that is not in its pages part; "
            "expected the pages and links parts written together by one `simweb ingest` — re-run it"
        )
    row = row.to_numpy(zero_copy_only=False).astype(np.int64)
    n_words = np.asarray(word_counts, dtype=np.int64)[row]
    a0, a1, c0, c1 = (links.column(name).to_numpy().astype(np.int64) for name in OFFSET_COLUMNS[1:])
    bad = (c0 < 0) | (c0 > a0) | (a0 > a1) | (a1 > c1) | (c1 > n_words)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise ValueError(
            f"{where}: expected 0 <= context_start <= anchor_start <= anchor_end <= context_end <= "
            f"len(words) for every link, found {c0[i]}, {a0[i]}, {a1[i]}, {c1[i]} with {n_words[i]} words "
            f"in link {i} ({int(bad.sum())} such links); the parts do not belong together — re-run `simweb ingest`"
        )
    return row


def with_context_words(links: pa.Table, pages: pa.Table, where: str = "links") -> pa.Table:
    """``links`` with ``anchor_words``, ``left_words`` and ``right_words`` (nearest first) copied
    out of the words of ``pages`` (at least ``url_id`` and ``words`` of the links' pages part).

    Raises ValueError as :func:`source_rows` does.
    """
    words = pages.column("words").combine_chunks() if pages.num_rows else pa.array([], WORDS)
    offsets = np.asarray(words.offsets, dtype=np.int64)
    row = source_rows(links, pages.column("url_id"), np.diff(offsets), where)
    base = offsets[row]
    a0, a1, c0, c1 = (links.column(name).to_numpy().astype(np.int64) if links.num_rows else np.zeros(0, np.int64)
                      for name in OFFSET_COLUMNS[1:])
    runs = ((base + a0, a1 - a0, 1), (base + a0 - 1, a0 - c0, -1), (base + a1, c1 - a1, 1))
    for name, (starts, lengths, step) in zip(CONTEXT_COLUMNS, runs):
        list_offsets = np.zeros(lengths.size + 1, np.int64)
        np.cumsum(lengths, out=list_offsets[1:])
        index = np.repeat(starts - step * list_offsets[:-1], lengths) + step * np.arange(list_offsets[-1])
        column = pa.LargeListArray.from_arrays(list_offsets, words.values.take(pa.array(index))).cast(WORDS)
        links = links.append_column(pa.field(name, WORDS, nullable=False), column)
    return links
