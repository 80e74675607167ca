"""Anchor words and contexts of the LINKS data set, from its word offsets into the pages' words.

The ingest stage stores each anchor as offsets into its source page's ``words`` (schema
``simweb.tasks.schemas.LINKS``): the words are kept once, in the PAGES row, however many anchors'
contexts they fall in. The stages that build anchor windows (paper Section 3.1) read them
back here as the three word-list columns a bag needs:

* ``anchor_words`` — ``words[anchor_start:anchor_end]``;
* ``left_words``   — ``words[context_start:anchor_start]``, nearest first;
* ``right_words``  — ``words[anchor_end:context_end]``, nearest first.

A links part's source pages are in the pages part of the same name (both are written from
one WARC file), so a part can be read on its own.
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from simweb.tasks.schemas import WORDS
from simweb.tasks.storage import join

__all__ = ["CONTEXT_COLUMNS", "OFFSET_COLUMNS", "pages_part_of", "with_context_words"]

#: The LINKS columns that locate an anchor and its context in the source page's words.
OFFSET_COLUMNS = ("source_id", "anchor_start", "anchor_end", "context_start", "context_end")
#: The word-list columns :func:`with_context_words` adds.
CONTEXT_COLUMNS = ("anchor_words", "left_words", "right_words")

# Links turned into word lists per chunk, so that no string array outgrows Arrow's 2 GiB offsets.
_CHUNK_LINKS = 1 << 20


def pages_part_of(links_part: str) -> str:
    """The pages part holding the source pages of a links part: ``DIR/pages/<same name>``."""
    folder, name = links_part.rstrip("/").rsplit("/", 1)
    return join(folder.rsplit("/", 1)[0] if "/" in folder else ".", "pages", name)


def with_context_words(links: pa.Table, pages: pa.Table, where: str = "links") -> pa.Table:
    """``links`` with ``anchor_words``, ``left_words`` and ``right_words`` added (see the module docstring).

    ``pages`` holds at least ``url_id`` and ``words`` of the pages part the links were written
    with. Raises ValueError, naming ``where``, when a link's source page is not in ``pages`` or
    its offsets do not fit that page's words: the parts do not belong together.
    """
    words = pages.column("words").combine_chunks() if pages.num_rows else pa.array([], WORDS)
    page_ids = pages.column("url_id").combine_chunks() if pages.num_rows else pa.array([], pa.uint64())
    if links.num_rows == 0:
        empty = pa.array([], WORDS)
        return _append(links, [pa.chunked_array([empty])] * len(CONTEXT_COLUMNS))
    row = pc.index_in(links.column("source_id"), value_set=page_ids)
    if row.null_count:
        raise ValueError(
            f"{where}: {row.null_count} link(s) name a source page that is not in its pages part; "
            "expected the pages and links parts written together by one `simweb ingest` — re-run it"
        )
    row = row.to_numpy(zero_copy_only=False).astype(np.int64)
    offsets = np.asarray(words.offsets, dtype=np.int64)
    base = offsets[row]
    n_words = offsets[row + 1] - base
    a0, a1, c0, c1 = (links.column(name).to_numpy().astype(np.int64) for name in OFFSET_COLUMNS[1:])
    bad = (c0 < 0) | (c0 > a0) | (a0 > a1) | (a1 > c1) | (c1 > n_words)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise ValueError(
            f"{where}: expected 0 <= context_start <= anchor_start <= anchor_end <= context_end <= "
            f"len(words) for every link, found {c0[i]}, {a0[i]}, {a1[i]}, {c1[i]} with {n_words[i]} words "
            f"in link {i} ({int(bad.sum())} such links); the parts do not belong together — re-run `simweb ingest`"
        )
    values = words.values
    columns: list[list[pa.Array]] = [[], [], []]
    for lo in range(0, links.num_rows, _CHUNK_LINKS):
        s = slice(lo, lo + _CHUNK_LINKS)
        b = base[s]
        columns[0].append(_runs(values, b + a0[s], a1[s] - a0[s], 1))
        columns[1].append(_runs(values, b + a0[s] - 1, a0[s] - c0[s], -1))
        columns[2].append(_runs(values, b + a1[s], c1[s] - a1[s], 1))
    return _append(links, [pa.chunked_array(chunks, WORDS) for chunks in columns])


def _runs(values: pa.Array, starts: np.ndarray, lengths: np.ndarray, step: int) -> pa.Array:
    """A list<string> array whose row r is ``values[starts[r] + j * step]`` for ``j < lengths[r]``."""
    offsets = np.zeros(len(lengths) + 1, np.int64)
    np.cumsum(lengths, out=offsets[1:])
    indices = np.repeat(starts - step * offsets[:-1], lengths) + step * np.arange(offsets[-1])
    return pa.ListArray.from_arrays(pa.array(offsets.astype(np.int32)), values.take(pa.array(indices)))


def _append(links: pa.Table, columns: list[pa.ChunkedArray]) -> pa.Table:
    for name, column in zip(CONTEXT_COLUMNS, columns):
        links = links.append_column(pa.field(name, WORDS, nullable=False), column)
    return links
