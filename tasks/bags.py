"""The `bags` stage: pages + links → one weighted bag per URL (paper Section 6.1, Figure 10).

Three cached sub-stages (simweb.tasks.stagecache: outputs keyed by inputs and parameters, published
whole with a manifest), so a second strategy reuses what it shares with the first:

    OUT/bag-fragments/<key>/part-{pages,links}-<part>.c<cell>.parquet   (url_id, url, term, weight)   FRAGMENTS
        key: the content digests of the crawl's parts (those CRAWL.json selects, if it exists;
        simweb.tasks.crawl) + Strategy.fragment_params()
        One Dask task per pages part and per links part, each reading its part slice by slice
        (simweb.tasks.crawl.slices.page_slices / link_slices; a links slice comes with the words of
        its source pages, into which its anchors are word offsets, simweb.tasks.contexts):
        simweb.core.bags.Corpus builds the slice's fragments (content + title per page; anchor
        window + link id per inlink; out-link id per outlink) and adds up equal (URL, term)
        pairs within the slice: fragments merge associatively, so combining early is exact.
        Each part's fragments go to one file per cell of a grid of 2^L equal ranges of URL ids
        (:class:`CellFiles`; 2^L the merge partitions the crawl's size suggests, recorded as
        the stats' "cells"), a cell's rows held back over slices and written in runs sorted by
        URL id, in row groups cut at a finer grid (:func:`write_fragments`), so that a merge
        partition opens only its own cells and reads few, long runs.
        Once the merge is published the fragments are consumed (stagecache.consume: files
        deleted, manifest and stats kept): the merge is a function of them alone, so they are
        made again only if the merge is lost.
    OUT/bag-merge/<key>/part-*.parquet       (url_id, url, term, tf)           MERGED
    OUT/bag-merge/<key>/_terms/counts-*.parquet   (term, df) per partition
        key: the fragments (not P: partitioning changes how the work is cut, not the bags)
        Partition i of P holds the URLs of the i-th of P equal ranges of URL ids
        (:func:`url_ranges`; P a power of two unless the user names it); its task reads from
        the fragment files of its cells the row groups of that range (their URL id statistics
        say which) and merges them (:func:`merge_fragments`):
        one row per (URL, term), sorted by URL id then term, and how many URLs each term
        occurs in. No shuffle of Python objects; the partitions in order are sorted by URL id.
    OUT/bags/<key>/part-*.parquet            simweb.tasks.schemas.BAGS
    OUT/bags/<key>/_terms/df.parquet         (term, df) over the whole collection
        key: the merged bags + the frequency weighting and normalisation
        df = number of merged bags holding the term: the partitions' term counts added up
        (:func:`sum_counts`); NMDF's μ, σ are fitted to it when the strategy leaves them unset
        (recorded in the manifest's stats); then per partition: tf × factor(df), normalised
        to the strategy's constant sum (simweb.core.weighting).

Memory is bounded by :class:`PartSize` (``part_mb``), never by the crawl: a task holds a slice
of a part, a merge partition, or a partition and the collection's DF table.

The crawl is read by simweb.tasks.crawl, which also decides which copy of a page crawled in
two WARC files counts: the first by (source_file, record_offset); the other copies' pages and
the links read from them are skipped and counted, so a page crawled twice contributes one
content fragment and its anchors once.

``build_bags_stage`` is the plain function; ``bags_task`` its Prefect task. Reading a
published bags folder back is simweb.tasks.bag_reader's.
"""
from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from contextlib import ExitStack
from dataclasses import dataclass
from itertools import pairwise
from typing import Any, Self

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pyarrow.parquet as pq
import scipy.sparse as sp
from prefect import task
from prefect.cache_policies import NO_CACHE

from simweb.core.aliases import AliasMap
from simweb.core.bags import BagMatrix, CorpusStats, merge_entries
from simweb.core.strategy import Strategy
from simweb.core.weighting import Weighting, normalise_rows
from simweb.tasks import schemas
from simweb.tasks.crawl.aliases import redirect_links
from simweb.tasks.crawl.copies import duplicate_copies
from simweb.tasks.crawl.corpus import corpus_from_tables, flat_lists
from simweb.tasks.crawl.parts import count_part_rows, crawl_identity, crawl_parts, file_stem
from simweb.tasks.crawl.slices import link_slices, page_slices
from simweb.tasks.stagecache import (
    StageOutput,
    announce_reused,
    consume,
    file_identities,
    find,
    recorded,
    run_stage,
    was_consumed,
)
from simweb.tasks.storage import filesystem, join, parquet_writer_atomic, parts, write_parquet_atomic

try:
    from simweb.core._gather import sum_pairs as _c_sum_pairs
except ImportError:  # pragma: no cover - depends on the build
    _c_sum_pairs = None
#: The most columns the C sum of pairs takes (it buckets their indices in 32 bits).
C_SUM_MAX_COLS = 1 << 32

__all__ = [
    "DF_FILE",
    "FRAGMENTS",
    "FRAGMENT_ROWS",
    "MERGED",
    "PART_MB",
    "CellFiles",
    "DfSnapshot",
    "PartSize",
    "bags_task",
    "build_bags_stage",
    "fragments",
    "fragments_of_links_part",
    "fragments_of_pages_part",
    "largest_first",
    "merge_fragments",
    "merge_partitions",
    "merge_range",
    "sum_counts",
    "url_ranges",
    "weigh_part",
    "write_fragments",
    "write_merged",
]

# Bumped when fragments, merged bags or weighted bags change meaning or layout, so old outputs
# are not reused (2: merge partitions by URL id range, with their term counts).
BAGS_FORMAT = 2
STAGE_FRAGMENTS, STAGE_MERGE, STAGE_BAGS = "bag-fragments", "bag-merge", "bags"
# Under "_" so that Parquet readers of the folder (which skip "_" and "." names) see only BAGS parts.
DF_FILE = "_terms/df.parquet"
SNAPSHOT_DF_FILE = "_terms/df-snapshot.parquet"  # the frozen df a bags folder was weighted with
COUNTS_FILE = "_terms/counts-{:05d}.parquet"  # a merge partition's (term, df)
#: Most rows per row group of a fragments file: the URL id statistics of a row group let a merge
#: partition skip what is not in its range, so row groups are kept small next to a partition.
FRAGMENT_ROW_GROUP = 16_384
#: Fewest rows a fragments row group holds on average: a slice's rows are cut at the cells of
#: the finest grid of 2^L equal URL id ranges that leaves this many rows a cell (write_fragments).
FRAGMENT_MIN_ROWS = 8_192
#: The finest grid a slice is cut at: 2^16 cells.
FRAGMENT_MAX_LEVEL = 16
#: Rows per row group of a merged part, its strings decoded for writing one row group at a time.
MERGED_ROW_GROUP = 262_144
#: Terms per row group of a BAGS part, for the same reason.
BAG_ROW_GROUP_ENTRIES = 1 << 20

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
MERGED = pa.schema([
    pa.field("url_id", pa.uint64(), nullable=False),
    pa.field("url", pa.string(), nullable=False),
    pa.field("term", pa.string(), nullable=False),
    pa.field("tf", pa.float64(), nullable=False),
])
DF = pa.schema([pa.field("term", pa.string(), nullable=False), pa.field("df", pa.int64(), nullable=False)])


# ---------------------------------------------------------------------------------------------
# How much a task holds at once


#: The default working memory of one task of the bags stage, in megabytes (:class:`PartSize`).
PART_MB = 768


@dataclass(frozen=True, slots=True)
class PartSize:
    """How much of the crawl one task of the bags stage holds at once: ``part_mb`` megabytes of
    working memory, turned into rows per slice or partition by what a row costs.

    The costs are the peak RSS of one task above its process's start, over its rows, measured
    on the largest part of the 50k scale corpus (W = 32, STEM, a fresh process each): a links
    slice 786 MiB for 134,217 links (6.0 KB a link: ~100 context words), a pages slice 704 MiB
    for 4,294 pages (168 KB a page), a merge partition 1,043 MiB for 5.6 million fragment rows
    (195 B a row); weighing (110 B a merged row) and signing (158 B a bag entry) a partition
    cost less than merging it. The constants below round these up. A fragments task also holds
    back up to ``buffer_rows`` (a quarter of a merge partition, ~90 B a row) to write them in
    longer runs (:class:`CellFiles`).

    The default, 768 MB, keeps every process of a build under 2 GiB: a Dask worker starts at
    about 0.3 GB (one that an ingest left holding more is restarted before this stage:
    simweb.flows.cluster.fresh_workers), and the flow's own process, which runs the tasks
    itself on a cluster of one worker thread, holds about 0.9 GB after the ingest — so four
    workers fit in 8 GB. A task
    never holds a whole part (a WARC file's pages or links), a whole merge shuffle or the whole
    crawl.
    """

    part_mb: int = PART_MB

    #: Bytes of working memory per link of a fragments slice: its source pages' words, its
    #: window positions and their terms, the summed fragment rows.
    LINK_BYTES = 8_000
    #: Bytes per page of a content fragments slice.
    PAGE_BYTES = 250_000
    #: Bytes per fragment row of a merge partition: the row read, its term encoded, sorted and summed.
    FRAGMENT_ROW_BYTES = 200

    def __post_init__(self) -> None:
        if isinstance(self.part_mb, bool) or not isinstance(self.part_mb, int) or self.part_mb < 16:
            raise ValueError(f"part_mb: expected megabytes of working memory per task, at least 16, got {self.part_mb!r}")

    @property
    def link_rows(self) -> int:
        return max(256, (self.part_mb << 20) // self.LINK_BYTES)

    @property
    def page_rows(self) -> int:
        return max(16, (self.part_mb << 20) // self.PAGE_BYTES)

    @property
    def fragment_rows(self) -> int:
        return max(4096, (self.part_mb << 20) // self.FRAGMENT_ROW_BYTES)

    @property
    def buffer_rows(self) -> int:
        """Fragment rows a fragments task holds back to write them in fewer, longer runs (CellFiles)."""
        return self.fragment_rows // 4


# ---------------------------------------------------------------------------------------------
# Sub-stage 1: fragments


def fragments(pages: pa.Table | None, links: pa.Table | None, strategy: Strategy, sources: pa.Table | None = None,
              where: str = "links") -> tuple[pa.Table, CorpusStats]:
    """The FRAGMENTS of PAGES and LINKS tables (one slice of a part, simweb.tasks.crawl) under
    ``strategy``, pre-merged per (URL, term) and sorted by URL id, and the corpus's counts
    (duplicates, self-links). ``sources`` holds the links' source pages (url_id, words) when
    they are not among ``pages``."""
    corpus = corpus_from_tables(pages, links, sources, where)
    rows, cols, weights, vocab = corpus.fragment_entries(strategy)
    rows, cols, weights = sum_pairs(rows, cols, weights, len(vocab))
    if rows.size == 0:
        return FRAGMENT_ROWS.empty_table(), corpus.stats
    used, inverse = _used_columns(cols, len(vocab))
    terms = pa.array(vocab.take(used), pa.string())
    table = pa.table({
        "url_id": pa.array(corpus.url_ids[rows], pa.uint64()),
        "url": pa.DictionaryArray.from_arrays(pa.array(rows.astype(np.int32)),
                                              _urls(corpus.url_ids, pages, links)),
        "term": pa.DictionaryArray.from_arrays(pa.array(inverse.astype(np.int32)), terms),
        "weight": pa.array(weights, pa.float64()),
    }, schema=FRAGMENT_ROWS)
    return table, corpus.stats


def _used_columns(cols: np.ndarray, n_cols: int) -> tuple[np.ndarray, np.ndarray]:
    """The columns ``cols`` uses, ascending, and each entry's place among them: ``np.unique(cols,
    return_inverse=True)`` by a mark per column instead of a sort of the entries (a slice's
    entries number in the millions, its columns in the hundred thousands; the sort was a
    twentieth of a 1M-page crawl's links part)."""
    marked = np.zeros(max(n_cols, 1), dtype=bool)
    marked[cols] = True
    used = np.flatnonzero(marked)
    place = np.cumsum(marked, dtype=np.int64)
    place -= 1
    return used, place[cols]


def sum_pairs(rows: np.ndarray, cols: np.ndarray, weights: np.ndarray, n_cols: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The weights of equal (row, column) pairs summed, pairs with a sum of zero left out, in
    row then column order.

    In C (simcore/_gather.c: sum_pairs) where it is built: a hash table of the pairs while it
    stays in a core's cache, else the entries bucketed by row and each row summed over an
    array of the columns; the pairs come out in order. Else Arrow's group-by and a sort of the
    pairs. Both add each pair's weights in input order, so they give the same sums to the bit.
    (On the 100k scale crawl's link slices Arrow's group-by was 3.4× faster than SciPy's CSR
    construction with its per-row sort, and a C hash table 3–4× faster again; see
    simcore/_gather.c for the slices of a 1M-page crawl.)"""
    if rows.size == 0:
        return rows, cols, weights
    n_cols = max(n_cols, 1)
    one_key = (int(rows.max()) + 1) * n_cols < 1 << 62  # each (row, column) as one int64 key
    if _c_sum_pairs is not None and one_key and n_cols <= C_SUM_MAX_COLS:
        summed = _c_sum_pairs(np.ascontiguousarray(rows, np.int64), np.ascontiguousarray(cols, np.int64),
                              np.ascontiguousarray(weights, np.float64), n_cols)
        rows, cols, total = (np.frombuffer(b, dtype) for b, dtype in zip(summed, (np.int64, np.int64, np.float64)))
    elif not one_key:
        summed = pa.table({"row": rows, "col": cols, "weight": weights}).group_by(
            ["row", "col"], use_threads=False).aggregate([("weight", "sum")])
        rows, cols = summed.column("row").to_numpy(), summed.column("col").to_numpy()
        total = summed.column("weight_sum").to_numpy()
        order = np.lexsort((cols, rows))
        rows, cols, total = rows[order], cols[order], total[order]
    else:
        summed = pa.table({"pair": rows * n_cols + cols, "weight": weights}).group_by(
            "pair", use_threads=False).aggregate([("weight", "sum")])
        pair, total = summed.column("pair").to_numpy(), summed.column("weight_sum").to_numpy()
        order = np.argsort(pair)
        pair, total = pair[order], total[order]
        rows, cols = np.divmod(pair, n_cols)
    kept = total != 0
    return rows[kept], cols[kept], total[kept]


def _urls(url_ids: np.ndarray, pages: pa.Table | None, links: pa.Table | None) -> pa.Array:
    """The URL of each of ``url_ids`` (a crawled page, a link's target or source), by a hash look-up."""
    named = ((pages, "url_id", "url"), (links, "target_id", "target_url"), (links, "source_id", "source_url"))
    ids = [t.column(c) for t, c, _ in named if t is not None]
    urls = [t.column(c) for t, _, c in named if t is not None]
    ids = pa.chunked_array([c for col in ids for c in col.chunks], pa.uint64())
    urls = pa.chunked_array([c for col in urls for c in col.chunks], pa.string())
    return urls.take(pc.index_in(pa.array(url_ids, pa.uint64()), value_set=ids)).combine_chunks()


def fragments_of_pages_part(url: str, strategy: Strategy, skip_ids: np.ndarray, out: str,
                            size: PartSize = PartSize(), exclude: Callable[[str], bool] | None = None,
                            level: int = 0) -> dict[str, int]:
    """Content and title fragments of one pages part, slice by slice (at most
    ``size.page_rows`` pages at once), pre-merged per (URL, term) within a slice, to the files
    ``out``.c<cell>.parquet of its cells of 2^``level`` (:class:`CellFiles`); the pages
    ``exclude`` names are left out."""
    columns = ["url", "url_id", "title_words", *(["words"] if strategy.uses_content else [])]
    stats = {"pages": 0, "duplicate_pages": 0, "excluded_pages": 0, "fragment_rows": 0, "slices": 0}
    seen = np.zeros(0, np.uint64)  # a URL repeated within the part keeps its first page
    with CellFiles(out, level, size.buffer_rows) as writer:
        for piece in page_slices(url, columns, skip_ids, size.page_rows, exclude):
            ids = piece.pages.column("url_id").to_numpy()
            again = np.isin(ids, seen)
            table = piece.pages.filter(pa.array(~again)) if again.any() else piece.pages
            seen = np.concatenate([seen, ids[~again]])
            frags, frag_stats = fragments(table, None, strategy)
            writer.write(frags)
            stats["pages"] += piece.pages.num_rows + piece.skipped + piece.excluded
            stats["duplicate_pages"] += frag_stats.duplicate_pages + piece.skipped + int(again.sum())
            stats["excluded_pages"] += piece.excluded
            stats["fragment_rows"] += frags.num_rows
            stats["slices"] += 1
    return stats


def fragments_of_links_part(url: str, strategy: Strategy, skip_sources: np.ndarray, out: str,
                            size: PartSize = PartSize(), exclude: Callable[[str], bool] | None = None,
                            aliases: AliasMap | None = None, level: int = 0) -> dict[str, int]:
    """Anchor-window and link-id fragments of one links part, slice by slice (at most
    ``size.link_rows`` links and the row groups of source pages they point into),
    pre-merged per (URL, term) within a slice, to the files ``out``.c<cell>.parquet of its
    cells of 2^``level`` (:class:`CellFiles`); the out-links of the pages
    ``exclude`` names are left out; links to an alias count for its document
    (simweb.tasks.crawl.aliases.redirect_links)."""
    stats = {"links": 0, "links_of_duplicate_pages": 0, "links_from_excluded_pages": 0, "self_links": 0,
             "fragment_rows": 0, "slices": 0, **({"links_redirected_to_aliases": 0} if aliases else {})}
    with CellFiles(out, level, size.buffer_rows) as writer:
        for piece in link_slices(url, skip_sources, size.link_rows, sources=strategy.uses_anchor,
                                 exclude=exclude):
            links, redirected = redirect_links(piece.links, aliases) if aliases else (piece.links, 0)
            if aliases:
                stats["links_redirected_to_aliases"] += redirected
            table, piece_stats = fragments(None, links, strategy, piece.sources, where=url)
            writer.write(table)
            stats["links"] += piece.links.num_rows + piece.skipped + piece.excluded
            stats["links_of_duplicate_pages"] += piece.skipped
            stats["links_from_excluded_pages"] += piece.excluded
            stats["self_links"] += piece_stats.self_links
            stats["fragment_rows"] += table.num_rows
            stats["slices"] += 1
    return stats


#: Seconds a fragments task takes per byte of its part, relative to a links part's, under a
#: strategy with anchor windows: measured on parts of the 1M scale crawl (one core), a links
#: part 0.48 s a MB, a pages part 0.11 s a MB (content) plus about a second.
PAGE_PART_COST = 0.25


def largest_first(tasks: Sequence[tuple[Callable, str, tuple]], strategy: Strategy) -> list[tuple[Callable, str, tuple]]:
    """Fragments ``tasks`` (function, part, arguments) in the order their work is handed out:
    the longest first by the bytes of their parts, so that the last to run are short and the
    workers end together. (Without an order Dask runs independent tasks in the order of their
    keys, hashes: on the 100k scale crawl a 181 MB file's links part could start last.)"""
    def cost(item: tuple[Callable, str, tuple]) -> float:
        function, part, _ = item
        try:
            fs, path = filesystem(part)
            size = float(fs.size(path) or 0)
        except (OSError, ValueError):
            size = 0.0
        pages = function is fragments_of_pages_part
        return size * (PAGE_PART_COST if pages and strategy.uses_anchor else 1.0)

    costs = [cost(t) for t in tasks]
    return [tasks[i] for i in sorted(range(len(tasks)), key=lambda i: (-costs[i], i))]


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
    runs = _runs(table.column("url_id").to_numpy(), level + finer) if finer else [(0, n)]
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


def _runs(ids: np.ndarray, level: int) -> list[tuple[int, int]]:
    """[start, stop) of each run of sorted URL ``ids`` that falls in one cell of 2^``level``."""
    if level == 0 or ids.size == 0:
        return [(0, int(ids.size))] if ids.size else []
    cells = ids >> np.uint64(64 - level)
    bounds = [0, *(np.flatnonzero(cells[1:] != cells[:-1]) + 1).tolist(), int(ids.size)]
    return list(pairwise(bounds))


def cell_of(url_id: int, level: int) -> int:
    """The cell of the grid of 2^``level`` equal URL id ranges that ``url_id`` falls in."""
    return url_id >> (64 - level) if level else 0


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
        _allow_open_files(1024 + (4 << level))
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
        for start, stop in _runs(ids, self.level):
            cell = cell_of(int(ids[start]), self.level)
            if cell not in self._writers:
                self._writers[cell] = self._stack.enter_context(
                    parquet_writer_atomic(f"{self.stem}.c{cell:05d}.parquet", FRAGMENT_ROWS, FRAGMENTS_WRITE))
            write_fragments(self._writers[cell], rows.slice(start, stop - start), self.level)


def _allow_open_files(wanted: int) -> None:
    """Raise this process's soft limit of open files to ``wanted`` (if it is lower), as far as
    the hard limit allows: a fragments task holds one open file per cell (up to 256), and a
    worker may run several such tasks at once beside its own sockets and files."""
    try:
        import resource

        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        target = wanted if hard == resource.RLIM_INFINITY else min(hard, wanted)
        if soft != resource.RLIM_INFINITY and soft < target:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
    except (ImportError, ValueError, OSError):  # no such limit here, or not ours to raise
        pass


def file_cell(url: str) -> int:
    """The cell a fragments file holds (its ``.c<cell>`` suffix); 0 for a file of the whole range."""
    name = url.rsplit("/", 1)[-1].split(".")
    return int(name[-2][1:]) if len(name) >= 3 and name[-2].startswith("c") and name[-2][1:].isdigit() else 0


def estimated_fragment_rows(crawl: Any, strategy: Strategy) -> int:
    """A guess of the fragment rows the crawl's parts make under ``strategy``, from their row
    counts (Parquet footers) alone: measured on DebDocs and the scale corpora, an anchor
    window of 32 words makes 4–9 rows a link (window terms of one target summed within a
    slice), link ids well under one, a page's content 100–200 rows. Only the number of cells
    the fragments are cut into depends on it (:func:`fragment_level`): a wrong guess costs
    files or reads, never memory or correctness."""
    links = count_part_rows(crawl.links) if (strategy.uses_anchor or strategy.uses_links or strategy.uses_outlinks) else 0
    per_link = (6 if strategy.uses_anchor else 0) + (1 if strategy.uses_links or strategy.uses_outlinks else 0)
    return links * per_link + count_part_rows(crawl.pages) * (200 if strategy.uses_content else 10)


#: The most cells a part's fragments are cut into: every fragments task holds one open file per cell.
FRAGMENT_MAX_CELLS = 256


def fragment_level(estimated_rows: int, size: PartSize) -> int:
    """log2 of the cells each part's fragments are cut into: as many as the merge partitions
    the estimated rows would take (:func:`merge_partitions`), at most FRAGMENT_MAX_CELLS."""
    cells = min(FRAGMENT_MAX_CELLS, merge_partitions(estimated_rows, size))
    return cells.bit_length() - 1


def merge_partitions(fragment_rows: int, size: PartSize) -> int:
    """How many merge partitions ``fragment_rows`` rows take at ``size``: the fewest that hold at
    most ``size.fragment_rows`` rows each on average, rounded up to a power of two so that each
    partition is a union of whole cells of the fragments (or a part of one cell)."""
    need = max(1, math.ceil(fragment_rows / size.fragment_rows))
    return 1 << (need - 1).bit_length()


def partition_files(files: Sequence[str], level: int, low: int, high: int) -> list[str]:
    """The fragments files (of cells of 2^``level``) that hold URL ids between ``low`` and ``high``."""
    first, last = cell_of(low, level), cell_of(high, level)
    return [f for f in files if first <= file_cell(f) <= last]


# ---------------------------------------------------------------------------------------------
# Sub-stage 2: merge (by URL id range)


def url_ranges(partitions: int) -> list[tuple[int, int]]:
    """``partitions`` ranges of URL ids, [low, high] inclusive, covering 0 … 2^64 − 1 in order.

    URL ids are hashes of URLs (simweb.core.urls.url_id), spread evenly over the 64-bit range,
    so equal ranges take equal shares of the URLs; and since the ranges are in order, the
    merged partitions, read one after the other, are sorted by URL id whatever their number.
    """
    cuts = [(i << 64) // partitions for i in range(partitions + 1)]
    return [(cuts[i], cuts[i + 1] - 1) for i in range(partitions)]


def merge_fragments(table: pa.Table) -> tuple[pa.Table, pa.Table]:
    """Merge fragment rows (FRAGMENTS, their ``url`` and ``term`` plain or dictionary-encoded):
    one row per (URL, term), sorted by URL id then term (Section 6.1); and how many URLs each
    term occurs in (term, df) — the partition's share of the document frequencies.

    Columnar: the terms and URLs are dictionary-encoded by Arrow (read so from Parquet, whose
    pages store them so), a term's rank is its place in the sorted dictionary and a URL's the
    place of its id among the dictionary's, and simweb.core.bags.merge_entries sums over those
    integers; no Python object per row, term or URL. (Before: pandas factorised the term and
    URL strings of every row as Python objects — 31 s for the 4.9 million fragment rows of the
    10k scale crawl; now 2.4 s, and 0.5 GB instead of 1.4 GB for one partition of them.)
    """
    if table.num_rows == 0:
        return MERGED.empty_table(), DF.empty_table()
    table = _dictionaries(table, ("url", "term"))
    terms, urls = table.column("term").chunk(0), table.column("url").chunk(0)
    term_order = pc.sort_indices(terms.dictionary).to_numpy().astype(np.int64)  # rank → dictionary entry
    term_rank = np.empty(term_order.size, dtype=np.int64)
    term_rank[term_order] = np.arange(term_order.size)
    # A URL's rank is that of its id: the id of each dictionary entry from one of its rows.
    url_index = urls.indices.to_numpy(zero_copy_only=False).astype(np.int64)
    row_ids = table.column("url_id").to_numpy().astype(np.uint64)
    entry_id = np.zeros(len(urls.dictionary), dtype=np.uint64)
    entry_id[url_index] = row_ids
    ids, url_rank = np.unique(entry_id, return_inverse=True)
    u, t, w = merge_entries(url_rank.ravel()[url_index].astype(np.uint64),
                            term_rank[terms.indices.to_numpy(zero_copy_only=False).astype(np.int64)],
                            table.column("weight").to_numpy().astype(np.float64))
    entry_of_rank = np.zeros(ids.size, dtype=np.int64)
    entry_of_rank[url_rank.ravel()[::-1]] = np.arange(url_rank.size)[::-1]  # the first entry of each id
    merged = pa.table({
        "url_id": pa.array(ids[u], pa.uint64()),
        "url": pa.DictionaryArray.from_arrays(pa.array(entry_of_rank[u].astype(np.int32)), urls.dictionary),
        "term": pa.DictionaryArray.from_arrays(pa.array(term_order[t].astype(np.int32)), terms.dictionary),
        "tf": pa.array(w, pa.float64()),
    })
    present, df = np.unique(t, return_counts=True)
    counts = pa.table({"term": terms.dictionary.take(pa.array(term_order[present])), "df": pa.array(df, pa.int64())},
                      schema=DF)
    return merged, counts


def _dictionaries(table: pa.Table, names: Sequence[str]) -> pa.Table:
    """``table`` in one chunk, its columns ``names`` dictionary-encoded over one dictionary each."""
    for name in names:
        i = table.schema.get_field_index(name)
        if not pa.types.is_dictionary(table.schema.field(i).type):
            table = table.set_column(i, name, pc.dictionary_encode(table.column(name)))
    return table.unify_dictionaries().combine_chunks()


def merge_range(fragment_files: Sequence[str], low: int, high: int, out: str, counts_out: str) -> int:
    """Merge the fragments of the URLs with ``low`` ≤ url_id ≤ ``high`` from every fragment file
    (read in name order; row groups outside the range are skipped by their statistics, and the
    URL and term strings read as Parquet stores them, dictionary-encoded) into a MERGED part at
    ``out``, written in row groups, and its term counts (DF) at ``counts_out``; returns the
    rows merged."""
    fs, _ = filesystem(fragment_files[0])
    dictionaries = ds.ParquetFileFormat(read_options=ds.ParquetReadOptions(dictionary_columns={"url", "term"}))
    dataset = ds.dataset([filesystem(f)[1] for f in fragment_files], format=dictionaries, filesystem=fs)
    in_range = (pc.field("url_id") >= pa.scalar(low, pa.uint64())) & (pc.field("url_id") <= pa.scalar(high, pa.uint64()))
    merged, counts = merge_fragments(dataset.to_table(filter=in_range, use_threads=False))
    write_merged(merged, out)
    write_parquet_atomic(counts, counts_out)
    return merged.num_rows


def _empty_partition(out: str, counts_out: str) -> int:
    """A merge partition no fragment falls in: an empty part and empty term counts."""
    write_merged(MERGED.empty_table(), out)
    write_parquet_atomic(DF.empty_table(), counts_out)
    return 0


def write_merged(table: pa.Table, out: str) -> int:
    """Write one merge partition (MERGED; its strings may be dictionary-encoded) to ``out``, the
    strings decoded MERGED_ROW_GROUP rows at a time; returns its rows."""
    with parquet_writer_atomic(out, MERGED) as writer:
        for start in range(0, table.num_rows, MERGED_ROW_GROUP):
            writer.write_table(table.slice(start, MERGED_ROW_GROUP).cast(MERGED))
    return table.num_rows


# ---------------------------------------------------------------------------------------------
# Sub-stage 3: weighting


@dataclass(frozen=True, slots=True)
class DfSnapshot:
    """Document frequencies and weighting frozen at the start of an epoch (tasks/incremental.py).

    ``df_path`` is a DF table; ``weighting`` the resolved weighting of that epoch (NMDF's μ, σ
    fitted then). A term the snapshot does not know (first crawled after the epoch began)
    counts df = 1 until the next full re-weight.
    """

    df_path: str
    weighting: Weighting

    def identity(self) -> dict[str, Any]:
        return {"df": file_identities([self.df_path]), "weighting": self.weighting.to_dict()}

    def covering(self, terms: pa.Table) -> pa.Table:
        """The snapshot's DF table extended with df = 1 for the terms of ``terms`` it lacks."""
        frozen = pq.read_table(self.df_path).cast(DF)
        unknown = pc.invert(pc.is_in(terms.column("term"), value_set=frozen.column("term")))
        new = terms.filter(unknown).column("term")
        extra = pa.table({"term": new, "df": pa.array(np.ones(len(new), np.int64))}, schema=DF)
        return pa.concat_tables([frozen, extra]).sort_by("term")


def sum_counts(count_files: Sequence[str], group: int = 8) -> pa.Table:
    """The DF table of the collection (sorted by term) from the merge partitions' term counts:
    each term's counts added, ``group`` files at a time into a running total, so memory holds
    the collection's vocabulary once and a few partitions' counts."""
    total = DF.empty_table()
    for i in range(0, len(count_files), group):
        tables = [total, *(pq.read_table(f).cast(DF) for f in count_files[i:i + group])]
        summed = pa.concat_tables(tables).group_by("term", use_threads=False).aggregate([("df", "sum")])
        total = pa.table({"term": summed.column("term"), "df": summed.column("df_sum")}, schema=DF)
    return total.sort_by("term")


#: A partition's weighted bags before storage: BAGS with double-precision weights.
_WEIGHED = pa.schema([*(f for f in schemas.BAGS if f.name != "weights"),
                      pa.field("weights", pa.list_(pa.float64()), nullable=False)])


@dataclass(frozen=True, slots=True, eq=False)
class _Weighed:
    """One merge partition frequency-weighted and normalised (Sections 5.2, 6.1): bag i is
    entries ``indptr[i]:indptr[i + 1]`` (terms ``term_index`` into ``terms``, weights ``data``)
    of URL ``url_ids[i]`` (``url_index`` into ``urls``); ``nonempty`` marks the bags that keep
    a positive sum."""

    url_ids: np.ndarray
    url_index: np.ndarray
    urls: pa.Array
    indptr: np.ndarray
    term_index: np.ndarray
    terms: pa.Array
    data: np.ndarray
    nonempty: np.ndarray

    def table(self, rows: np.ndarray, weights: pa.DataType) -> pa.Table:
        """The bags ``rows`` as a BAGS table with weights of type ``weights``."""
        lengths = self.indptr[rows + 1] - self.indptr[rows]
        ends = np.cumsum(lengths)
        entries = np.repeat(self.indptr[rows] - (ends - lengths), lengths) + np.arange(int(ends[-1]) if ends.size else 0)
        offsets = pa.array(np.concatenate(([0], ends)).astype(np.int32))
        return pa.table({
            "url_id": pa.array(self.url_ids[rows], pa.uint64()),
            "url": self.urls.take(pa.array(self.url_index[rows])),
            "terms": pa.ListArray.from_arrays(offsets, self.terms.take(pa.array(self.term_index[entries]))),
            "weights": pa.ListArray.from_arrays(offsets, pa.array(self.data[entries].astype(weights.to_pandas_dtype()),
                                                                  weights)),
        })

    def rows(self, wanted: pa.Array) -> pa.Table:
        """The non-empty bags of the URL ids ``wanted``, in double precision (_WEIGHED)."""
        chosen = self.nonempty & pc.is_in(pa.array(self.url_ids, pa.uint64()), value_set=wanted).to_numpy(zero_copy_only=False)
        return self.table(np.flatnonzero(chosen), pa.float64()).cast(_WEIGHED)


def _weigh(merged: pa.Table, df_table: pa.Table, weighting: Weighting, where: str) -> _Weighed:
    """Frequency-weight and normalise one merged partition (MERGED, its terms and URLs plain
    or dictionary-encoded) with the collection's DF table: tf × factor(df), entries whose weight
    fell to 0 dropped, each bag scaled to the weighting's constant sum (Sections 5.2, 6.1)."""
    table = _dictionaries(merged, ("url", "term"))
    terms, urls = table.column("term").chunk(0), table.column("url").chunk(0)
    # df of each distinct term, by a hash look-up of the term in the DF table.
    at = pc.index_in(terms.dictionary, value_set=df_table.column("term"))
    if at.null_count:
        raise ValueError(f"{where}: a term has no document frequency in the collection's DF table; "
                         "the bags stage output is damaged — delete it and re-run")
    factors = weighting.factors(df_table.column("df").take(at).to_numpy().astype(np.float64))
    term_index = terms.indices.to_numpy(zero_copy_only=False)
    url_ids = table.column("url_id").to_numpy()
    weights = weighting.counts(table.column("tf").to_numpy()) * factors[term_index]
    starts = np.flatnonzero(np.concatenate(([True], url_ids[1:] != url_ids[:-1]))) if url_ids.size else np.zeros(0, np.int64)
    keep_entry = weights > 0
    # Entries whose weight fell to 0 leave the bag; rebuild the row pointers over the rest.
    counts = np.add.reduceat(keep_entry.astype(np.int64), starts) if starts.size else np.zeros(0, np.int64)
    indptr = np.concatenate(([0], np.cumsum(counts))).astype(np.int64)
    data, sums = normalise_rows(indptr, weights[keep_entry], weighting.normalise_to)
    return _Weighed(url_ids[starts], urls.indices.to_numpy(zero_copy_only=False)[starts], urls.dictionary, indptr,
                    term_index[keep_entry], terms.dictionary, data, sums > 0)


def weigh_part(url: str, df_path: str, weighting: Weighting, out: str) -> dict[str, int]:
    """Frequency-weight and normalise the merged bags of one partition into a BAGS part (Sections 5.2, 6.1).

    The partition's terms and URLs are read dictionary-encoded, so a term's df is looked up once
    per distinct term, and the bags are written BAG_ROW_GROUP_ENTRIES terms at a time: a term
    string per entry is never held for the whole partition (1.2 GB before, 0.5 GB now, for the
    4.4 million entries of one partition of the 50k scale crawl).
    """
    weighed = _weigh(pq.read_table(url, read_dictionary=["url", "term"]), pq.read_table(df_path), weighting, url)
    with parquet_writer_atomic(out, schemas.BAGS, schemas.BAGS_WRITE) as writer:
        for lo, hi in _row_groups(weighed.indptr, BAG_ROW_GROUP_ENTRIES):
            rows = np.flatnonzero(weighed.nonempty[lo:hi]) + lo
            writer.write_table(weighed.table(rows, pa.float32()).cast(schemas.BAGS))
    nonempty = weighed.nonempty
    return {"bags": int(nonempty.sum()), "entries": int(np.diff(weighed.indptr)[nonempty].sum()),
            "empty_bags": int((~nonempty).sum())}


def _row_groups(indptr: np.ndarray, entries: int) -> list[tuple[int, int]]:
    """Consecutive ranges [lo, hi) of bags (rows of ``indptr``) of about ``entries`` entries each."""
    cuts = np.searchsorted(indptr, np.arange(0, indptr[-1], max(1, entries)), side="right") - 1
    bounds = np.unique(np.concatenate((cuts, [indptr.size - 1])))
    return [(int(a), int(b)) for a, b in zip(bounds[:-1], bounds[1:]) if b > a]


# ---------------------------------------------------------------------------------------------
# The stage


def _compute(collections: list, scheduler: Any) -> list:
    """dask.compute on ``scheduler``; inside a Dask worker, through the worker's client (seceding its slot)."""
    import dask

    if not collections:
        return []
    if scheduler is not None:
        return list(dask.compute(*collections, scheduler=scheduler))
    try:
        from distributed import get_worker, worker_client

        get_worker()
    except (ImportError, ValueError):
        return list(dask.compute(*collections))
    with worker_client() as client:
        return list(client.compute(list(collections), sync=True))


def _shared(value: Any, scheduler: Any) -> Any:
    """``value`` as an argument of many tasks: on a Dask cluster, sent to every worker once
    ahead of them (a future) rather than written into the graph beside each task — a crawl's
    alias map is megabytes (at a million pages 162,712 aliases with their target URLs: the
    graph was 14 MiB, and Dask warned of it); else ``value`` itself."""
    if value is None or scheduler is not None:
        return value
    try:
        from distributed import get_client

        client = get_client()
    except (ImportError, ValueError):  # no cluster: the tasks run here and share the object
        return value
    return client.scatter([value], broadcast=True, hash=False)[0]  # in a list: a dict would be scattered by key


@dataclass(frozen=True, slots=True)
class LeftOut:
    """Pages to leave out of the bags with their out-links (the evaluation leaves out a
    directory's own pages, Section 5, footnote 8): ``exclude`` names them by URL and
    ``identity`` (JSON-able) says which they are, for the cache keys."""

    exclude: Callable[[str], bool]
    identity: Any


@dataclass(frozen=True, slots=True)
class Merged:
    """The fragments and merge sub-stages' outputs of one crawl and strategy."""

    fragments: StageOutput
    merged: StageOutput

    def count_files(self) -> list[str]:
        return [join(self.merged.path, COUNTS_FILE.format(i)) for i in range(len(parts(self.merged.path)))]


def _strategy(strategy: Strategy | dict | str) -> Strategy:
    if isinstance(strategy, Strategy):
        return strategy
    return Strategy.from_dict(strategy) if isinstance(strategy, dict) else Strategy.parse(str(strategy))


def merge_stages(crawl_dir: str, strategy: Strategy, out_dir: str, partitions: int | None = None, *,
                 scheduler: Any = None, verify: bool = False, part_mb: int = PART_MB,
                 left_out: LeftOut | None = None) -> Merged:
    """The fragments and merge sub-stages (built or reused; see the module docstring) of the
    crawl in ``crawl_dir`` under ``strategy``, with the pages ``left_out`` names and their
    out-links left out. Parameters as for :func:`build_bags_stage`."""
    import dask

    if partitions is not None and (isinstance(partitions, bool) or not isinstance(partitions, int) or partitions < 1):
        raise ValueError(f"partitions: expected a positive number of merge partitions, got {partitions!r}")
    size = PartSize(part_mb)
    crawl = crawl_parts(crawl_dir)
    inputs = crawl_identity(crawl_dir)
    exclude = left_out.exclude if left_out is not None else None

    # 1. Fragments: one task per ingest part, each reading its part slice by slice.
    def fragments(tmp: str) -> dict[str, Any]:
        t0 = time.perf_counter()
        copies = duplicate_copies(crawl.pages, crawl.aliases)
        aliases = copies.aliases if len(copies.aliases) else None
        shared_aliases = _shared(aliases, scheduler)
        level = fragment_level(estimated_fragment_rows(crawl, strategy), size)
        tasks = [(fragments_of_pages_part, u, (strategy, copies.of(u), join(tmp, f"part-pages-{file_stem(u)}"),
                                               size, exclude, level)) for u in crawl.pages]
        tasks += [(fragments_of_links_part, u, (strategy, copies.of(u), join(tmp, f"part-links-{file_stem(u)}"),
                                                size, exclude, shared_aliases, level)) for u in crawl.links]
        work = []
        for rank, (function, u, args) in enumerate(largest_first(tasks, strategy)):
            with dask.annotate(priority=len(tasks) - rank):
                work.append(dask.delayed(function)(u, *args))
        stats: dict[str, Any] = {"cells": 1 << level, "pages": 0, "duplicate_pages": 0, "excluded_pages": 0, "links": 0,
                                 "links_of_duplicate_pages": 0, "links_from_excluded_pages": 0, "self_links": 0,
                                 "fragment_rows": 0, "slices": 0}
        for part_stats in _compute(work, scheduler):
            for k, v in part_stats.items():
                stats[k] = stats.get(k, 0) + v
        if aliases is not None:
            stats.update((k, v) for k, v in copies.aliases.counts.items() if k == "aliases" or k.startswith("aliases_"))
            stats["pages_merged_into_aliases"] = copies.aliases.counts.get("pages_merged", 0)
        fs, path = filesystem(tmp)
        stats["fragment_bytes"] = int(sum(fs.size(p) for p in fs.ls(path, detail=False) if p.endswith(".parquet")))
        stats["seconds"] = round(time.perf_counter() - t0, 3)
        return stats

    params: dict[str, Any] = {"format": BAGS_FORMAT, "strategy": strategy.fragment_params()}
    if left_out is not None:
        params["left_out"] = left_out.identity
    # The merge is a function of the fragments alone: once it is published the fragments are
    # consumed (their files deleted, their manifest kept), and a later run that finds the merge
    # whole needs neither them nor their work.
    frag = recorded(out_dir, STAGE_FRAGMENTS, inputs, params)
    merge_params = {"format": BAGS_FORMAT}
    if frag is not None:
        merged = find(out_dir, STAGE_MERGE, {"fragments": frag}, merge_params, verify=verify)
        if merged is not None:
            consume(frag)
            return Merged(announce_reused(STAGE_FRAGMENTS, frag), announce_reused(STAGE_MERGE, merged))
    frag = run_stage(out_dir, STAGE_FRAGMENTS, inputs, params, fragments, verify=verify)
    p = partitions or merge_partitions(int(frag.stats.get("fragment_rows", 0)), size)

    # 2. Merge: per range of URL ids, the fragments of its URLs from every file, equal (URL, term) pairs summed.
    def merge(tmp: str) -> dict[str, Any]:
        t0 = time.perf_counter()
        frag_parts = parts(frag.path)
        if frag.stats.get("fragment_rows", 0) == 0 or not frag_parts:
            written = [_empty_partition(join(tmp, "part-00000.parquet"), join(tmp, COUNTS_FILE.format(0)))]
        else:
            level = int(frag.stats.get("cells", 1)).bit_length() - 1
            writes = []
            for i, (low, high) in enumerate(url_ranges(p)):
                files = partition_files(frag_parts, level, low, high)
                out, counts = join(tmp, f"part-{i:05d}.parquet"), join(tmp, COUNTS_FILE.format(i))
                writes.append(dask.delayed(merge_range)(files, low, high, out, counts) if files
                              else dask.delayed(_empty_partition)(out, counts))
            written = _compute(writes, scheduler)
        return {"partitions": len(written), "rows": int(sum(written)), "seconds": round(time.perf_counter() - t0, 3)}

    # P only sets how the work is cut, not the result: it is not part of the key.
    merged = run_stage(out_dir, STAGE_MERGE, {"fragments": frag}, merge_params, merge, verify=verify)
    consume(frag)
    return Merged(frag, merged)


def build_bags_stage(crawl_dir: str, strategy: Strategy, out_dir: str, partitions: int | None = None, *,
                     scheduler: Any = None, df_snapshot: DfSnapshot | None = None,
                     verify: bool = False, part_mb: int = PART_MB, reuse_consumed: bool = False) -> StageOutput:
    """Build (or reuse) the weighted bags of the crawl in ``crawl_dir`` under ``strategy`` (Section 6.1).

    ``crawl_dir`` holds the ingest output (``pages/`` and ``links/`` parts). Results go under
    ``out_dir`` (see the module docstring); the returned :class:`StageOutput` names the BAGS
    folder, its stats (pages, links, duplicates and self-links skipped, bags, entries,
    vocabulary, fitted NMDF μ and σ, seconds per sub-stage) and whether it was reused.
    ``part_mb`` bounds the working memory of each task (:class:`PartSize`): parts are read in
    slices, and the merge is cut into as many partitions P as that takes, unless ``partitions``
    names P. ``scheduler`` is passed to ``dask.compute`` (a distributed Client, "threads",
    "processes", "sync"); by default the current Dask client or Dask's local scheduler.
    ``df_snapshot`` weighs with a frozen df and weighting (an incremental index's epoch, see
    tasks/incremental.py) instead of the collection's own: terms it does not know count df 1.
    ``verify`` checks reused sub-stage outputs by content, not only by size (stagecache.damage).
    Neither ``part_mb`` nor ``partitions`` is part of a sub-stage's key: they cut the work, the
    bags are the same. With ``reuse_consumed``, bags that an index build consumed once it had
    signed them (simweb.flows.chain) are returned as their manifest records them — key and
    stats, no files — for a caller that only needs to name them; otherwise they are weighed again.
    """
    import dask

    strategy = _strategy(strategy)
    if strategy.shares is not None:  # each source's bags, then their share-weighted sum
        from simweb.tasks.bag_shares import build_shared_bags_stage

        return build_shared_bags_stage(crawl_dir, strategy, out_dir, partitions, scheduler=scheduler, verify=verify,
                                       part_mb=part_mb, df_snapshot=df_snapshot)
    stages = merge_stages(crawl_dir, strategy, out_dir, partitions, scheduler=scheduler, verify=verify,
                          part_mb=part_mb)
    frag, merged_out = stages.fragments, stages.merged

    # 3. Weigh: df over the collection, then frequency weighting and normalisation per partition.
    def weigh(tmp: str) -> dict[str, Any]:
        t0 = time.perf_counter()
        merged_parts = parts(merged_out.path)
        df_table = sum_counts(stages.count_files())
        df_path = join(tmp, DF_FILE)
        write_parquet_atomic(df_table, df_path)
        df_values = df_table.column("df").to_numpy()
        weighting = Weighting.resolve(strategy, df_values)
        if df_snapshot is not None:
            df_path = join(tmp, SNAPSHOT_DF_FILE)
            write_parquet_atomic(df_snapshot.covering(df_table), df_path)
            weighting = df_snapshot.weighting
        work = [dask.delayed(weigh_part)(u, df_path, weighting, join(tmp, f"part-{i:05d}.parquet"))
                for i, u in enumerate(merged_parts)]
        totals = {"bags": 0, "entries": 0, "empty_bags": 0}
        for s in _compute(work, scheduler):
            for k, v in s.items():
                totals[k] += v
        return {
            **{k: frag.stats.get(k, 0) for k in ("pages", "duplicate_pages", "links", "links_of_duplicate_pages",
                                                  "self_links", "fragment_rows")},
            # Aliases (simweb.tasks.crawl): in the summary only for a crawl that has them.
            **{k: v for k, v in frag.stats.items() if k.startswith("aliases") or k.endswith("_aliases")},
            **totals,
            "vocabulary": int(df_values.size),
            "collection_size": totals["bags"],
            "weighting": weighting.to_dict(),
            "strategy": strategy.to_dict(),
            "label": strategy.label,
            "partitions": len(merged_parts),
            "seconds": {"fragments": frag.stats.get("seconds", 0.0), "merge": merged_out.stats.get("seconds", 0.0),
                        "weigh": round(time.perf_counter() - t0, 3)},
        }

    params: dict[str, Any] = {"format": BAGS_FORMAT, "weighting": strategy.bag_params()}
    if df_snapshot is not None:
        params["df_snapshot"] = df_snapshot.identity()
    if reuse_consumed:
        known = recorded(out_dir, STAGE_BAGS, {"merged": merged_out}, params)
        if known is not None and was_consumed(known):
            return announce_reused(STAGE_BAGS, known)
    return run_stage(out_dir, STAGE_BAGS, {"merged": merged_out}, params, weigh, verify=verify)


def sample_bags(crawl_dir: str, strategy: Strategy, out_dir: str, url_ids: np.ndarray, *,
                scheduler: Any = None, part_mb: int = PART_MB, left_out: LeftOut | None = None) -> BagMatrix:
    """The weighted bags of ``url_ids`` (those that have one) in double precision, df and NMDF
    fitted over the whole collection — what the evaluation compares (Sections 4–5).

    The fragments and merge sub-stages run (or are reused) under ``out_dir`` as for the index,
    with the pages ``left_out`` names and their out-links left out; then each merge partition
    is read once, partition by partition: its share of the bags that are not empty once
    weighted (the collection's size), and the rows of ``url_ids``, weighted exactly as
    :func:`weigh_part` weighs them before it stores float32. Memory holds a partition, the
    DF table and the sample's bags, never the collection's.
    """
    strategy = _strategy(strategy)
    stages = merge_stages(crawl_dir, strategy, out_dir, scheduler=scheduler, part_mb=part_mb, left_out=left_out)
    df_table = sum_counts(stages.count_files())
    weighting = Weighting.resolve(strategy, df_table.column("df").to_numpy())
    wanted = pa.array(np.unique(np.asarray(url_ids, dtype=np.uint64)), pa.uint64())
    pieces, collection_size = [], 0
    for url in parts(stages.merged.path):
        weighed = _weigh(pq.read_table(url, read_dictionary=["url", "term"]), df_table, weighting, url)
        collection_size += int(weighed.nonempty.sum())
        pieces.append(weighed.rows(wanted))
    bags = pa.concat_tables(pieces) if pieces else _WEIGHED.empty_table()
    terms_flat, offsets = flat_lists(bags.column("terms"))
    encoded = pc.dictionary_encode(terms_flat)
    vocabulary = tuple(encoded.dictionary.to_pylist())
    csr = sp.csr_matrix((pc.list_flatten(bags.column("weights")).to_numpy(zero_copy_only=False).astype(np.float64),
                         encoded.indices.to_numpy(zero_copy_only=False).astype(np.int64), offsets),
                        shape=(bags.num_rows, len(vocabulary)))
    csr.sort_indices()
    at = pc.index_in(encoded.dictionary, value_set=df_table.column("term"))
    df = df_table.column("df").take(at).to_numpy().astype(np.int64)
    return BagMatrix(bags.column("url_id").to_numpy().astype(np.uint64), tuple(bags.column("url").to_pylist()),
                     vocabulary, csr, df, collection_size, weighting)


@task(name="bags", cache_policy=NO_CACHE)
def bags_task(crawl_dir: str, strategy: Strategy, out_dir: str, partitions: int | None = None,
              in_task: bool = False, verify: bool = False, part_mb: int = PART_MB,
              reuse_consumed: bool = False) -> StageOutput:
    """Prefect task of :func:`build_bags_stage` (deterministic compute: no retries; its outputs are cached).

    Its parts run on the worker's cluster, or with ``in_task`` one after another in the task
    itself (a cluster of one worker thread gains nothing from scheduling them).
    """
    return build_bags_stage(crawl_dir, strategy, out_dir, partitions, scheduler="sync" if in_task else None,
                            verify=verify, part_mb=part_mb, reuse_consumed=reuse_consumed)
