"""Fragments files: a part's fragments written one file per cell of URL ids, in short row groups
(FRAGMENTS, :class:`CellFiles`), so that a merge partition reads few, long runs of its own rows."""
from __future__ import annotations

from contextlib import ExitStack
from typing import Self

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from simweb.tasks.bags.grid import cell_of, cell_runs
from simweb.tasks.bags.open_files import allow_open_files
from simweb.tasks.storage import parquet_writer_atomic

#: Most rows per row group of a fragments file: the URL id statistics of a row group let a merge
#: partition skip what is not in its range, so row groups are kept small next to a partition.
FRAGMENT_ROW_GROUP = 16_384
#: Fewest rows a fragments row group holds on average: a slice's rows are cut at the cells of
#: the finest grid of 2^L equal URL id ranges that leaves this many rows a cell (write_fragments).
FRAGMENT_MIN_ROWS = 8_192
#: The finest grid a slice is cut at: 2^16 cells.
FRAGMENT_MAX_LEVEL = 16
FRAGMENTS = pa.schema([
    pa.field("url_id", pa.uint64(), nullable=False),
    pa.field("url", pa.string(), nullable=False),
    pa.field("term", pa.string(), nullable=False),
    pa.field("weight", pa.float64(), nullable=False),
])
_STRINGS = pa.dictionary(pa.int32(), pa.string())
#: Fragments as a fragments task makes, buffers, sorts and writes them: the URLs and terms
#: dictionary-encoded (a slice's once each), so that what moves is indices, not strings, and
#: each row group's dictionary is written as it is rather than hashed again string by string.
#: Read back, the files hold FRAGMENTS (no Arrow schema is stored with them).
FRAGMENT_ROWS = pa.schema([
    pa.field("url_id", pa.uint64(), nullable=False),
    pa.field("url", _STRINGS, nullable=False),
    pa.field("term", _STRINGS, nullable=False),
    pa.field("weight", pa.float64(), nullable=False),
])
#: How fragments files are written: read once by the merge, which skips row groups by their URL
#: ids' statistics alone — so no statistics of the strings, and dictionaries only for the
#: strings. A links part of the 100k scale crawl's fragments (4.6 million rows, row groups of
#: 8,192) written in 0.31–0.39 s against 0.45–0.54 s with every column's statistics and
#: dictionary, read back in the same time, 13.8 MB against 14.3 MB.
FRAGMENTS_WRITE = {"write_statistics": ["url_id"], "use_dictionary": ["url", "term"], "store_schema": False,
                   # A row group's URLs come in runs (its rows are sorted by URL id): their dictionary page is a
                   # few hundred strings and their indices run-length encoded, which zstd shrinks by 3% of
                   # the file for 7% of its write time (four 1M-page crawl slices into 256 cells: 1.79 s
                   # against 1.92 s, 39.6 MB against 38.3 MB).
                   "compression": {"url_id": "zstd", "url": "none", "term": "zstd", "weight": "zstd"}}


def write_fragments(writer: pq.ParquetWriter, table: pa.Table, level: int = 0) -> None:
    """Write fragments (FRAGMENT_ROWS, sorted by URL id, all in one cell of the grid of
    2^``level`` equal URL id ranges) with ``writer``, in row groups cut at the cells of a finer
    grid — as fine as leaves FRAGMENT_MIN_ROWS rows a cell on average, at most
    2^FRAGMENT_MAX_LEVEL cells a file — and of at most FRAGMENT_ROW_GROUP rows: a merge
    partition narrower than the file's cell reads from it, by the row groups' URL id
    statistics, little more than its own rows. Each row group's dictionaries hold its own
    strings alone."""
    n = table.num_rows
    finer = min(FRAGMENT_MAX_LEVEL, max(0, (n // FRAGMENT_MIN_ROWS).bit_length() - 1))
    runs = cell_runs(table.column("url_id").to_numpy(), level + finer) if finer else [(0, n)]
    for start, stop in runs:
        for at in range(start, stop, FRAGMENT_ROW_GROUP):
            writer.write_table(_own_strings(table.slice(at, min(stop - at, FRAGMENT_ROW_GROUP))))


def _own_strings(table: pa.Table) -> pa.Table:
    """``table`` (FRAGMENT_ROWS, sorted by URL id) with dictionaries of the strings its rows
    use, no others: the URLs one a run of equal ids (no hashing), the terms by a hash of their
    indices."""
    if table.num_rows == 0:
        return table
    ids = table.column("url_id").to_numpy()
    fresh = np.empty(ids.size, dtype=bool)
    fresh[0] = True
    np.not_equal(ids[1:], ids[:-1], out=fresh[1:])
    urls, terms = (_one_chunk(table.column(name)) for name in ("url", "term"))
    url_of_run = urls.indices.take(pa.array(np.flatnonzero(fresh)))
    used = pc.dictionary_encode(terms.indices)  # the indices used, in order of first use
    columns = {
        "url": pa.DictionaryArray.from_arrays(pa.array(np.cumsum(fresh, dtype=np.int32) - 1),
                                              urls.dictionary.take(url_of_run)),
        "term": pa.DictionaryArray.from_arrays(used.indices, terms.dictionary.take(used.dictionary)),
    }
    for name, column in columns.items():
        i = table.schema.get_field_index(name)
        table = table.set_column(i, table.schema.field(i), column)
    return table


def _one_chunk(column: pa.ChunkedArray) -> pa.Array:
    """``column`` as one array: its one chunk as it is (a slice shares its dictionary, not a
    copy of it), or its chunks combined."""
    return column.chunk(0) if column.num_chunks == 1 else column.combine_chunks()


class CellFiles:
    """A part's fragments written as one file per cell of a grid of 2^``level`` equal ranges of
    URL ids (``<stem>.c<cell>.parquet``, opened when the cell's first rows arrive), so that a
    merge partition opens only the files of its own cells: their footers describe its rows and
    no others'. (Cut into row groups alone, every partition read the footers and straddling
    row groups of every slice of the crawl — at a million pages 26 million rows to merge 4
    million, the merge growing with the square of the crawl.) Each file appears whole when the
    block ends without error, and none of them otherwise.

    The slices' rows are held until ``buffer_rows`` of them wait, then each cell's are written
    as one run (sorted by URL id): every row group costs a merge partition a read of its own,
    and a slice's share of one of 256 cells is only a few thousand rows.
    """

    def __init__(self, stem: str, level: int, buffer_rows: int = 0):
        self.stem, self.level, self.buffer_rows = stem, level, buffer_rows
        allow_open_files(1024 + (4 << level))
        self._writers: dict[int, pq.ParquetWriter] = {}
        self._waiting: list[pa.Table] = []
        self._waiting_rows = 0
        self._stack = ExitStack()

    def __enter__(self) -> Self:
        self._stack.__enter__()
        return self

    def __exit__(self, kind: type[BaseException] | None, *rest: object) -> bool | None:
        if kind is None:
            try:
                self.flush()
            except BaseException as e:
                if not self._stack.__exit__(type(e), e, e.__traceback__):
                    raise
                return None
        return self._stack.__exit__(kind, *rest)

    def write(self, table: pa.Table) -> None:
        """Add ``table`` (FRAGMENT_ROWS or FRAGMENTS, sorted by URL id) to the files of its cells."""
        if table.schema.names == FRAGMENT_ROWS.names and not table.schema.equals(FRAGMENT_ROWS):
            table = table.cast(FRAGMENT_ROWS)
        if not table.schema.equals(FRAGMENT_ROWS):
            raise pa.ArrowInvalid(f"fragments: expected the columns {FRAGMENT_ROWS.names}, got {table.schema}")
        self._waiting.append(table)
        self._waiting_rows += table.num_rows
        if self._waiting_rows >= self.buffer_rows:
            self.flush()

    def flush(self) -> None:
        """Write every cell's waiting rows: the slices held back as one table sorted by URL id
        (its dictionaries the slices' together), cut at the cells; each row group keeps the
        strings of its own rows alone (:func:`write_fragments`). (Cut slice by slice, each
        slice's share of each cell given its own strings on arrival and again when written,
        a slice cost ~0.25 ms a cell twice: at 256 cells, as at a million pages, more than
        its pairs took to sum — a 100k crawl's links part of 3.5 million links took 13.1–14.0 s
        that way against 8.0–9.2 s.)"""
        if not self._waiting:
            return
        rows = pa.concat_tables(self._waiting).combine_chunks()
        if len(self._waiting) > 1:
            rows = rows.take(pc.sort_indices(rows.column("url_id")))  # stable: slice order within a URL
        self._waiting, self._waiting_rows = [], 0
        ids = rows.column("url_id").to_numpy()
        for start, stop in cell_runs(ids, self.level):
            cell = cell_of(int(ids[start]), self.level)
            if cell not in self._writers:
                self._writers[cell] = self._stack.enter_context(
                    parquet_writer_atomic(f"{self.stem}.c{cell:05d}.parquet", FRAGMENT_ROWS, FRAGMENTS_WRITE))
            write_fragments(self._writers[cell], rows.slice(start, stop - start), self.level)
