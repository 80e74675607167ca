"""Sub-stage 1 of the bags stage: the bag fragments of one pages or links part (paper Section 6.1).

A part is read slice by slice (simweb.tasks.crawl.slices); simweb.core.bags.Corpus makes each
slice's fragments, whose equal (URL, term) pairs are summed within the slice (:func:`sum_pairs`),
and they go to the part's files of cells (simweb.tasks.bags.cells).
"""
from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from simweb.core.aliases import AliasMap
from simweb.core.bag_columns import CorpusStats
from simweb.core.strategy import Strategy
from simweb.tasks.bags.cells import FRAGMENT_ROWS, CellFiles
from simweb.tasks.bags.sizes import PartSize
from simweb.tasks.crawl.aliases import redirect_links
from simweb.tasks.crawl.corpus import corpus_from_tables
from simweb.tasks.crawl.slices import link_slices, page_slices
from simweb.tasks.storage import filesystem

try:
    from simweb.core._gather import sum_pairs as _c_sum_pairs
except ImportError:  # pragma: no cover - depends on the build
    _c_sum_pairs = None


#: The most columns the C sum of pairs takes (it buckets their indices in 32 bits).
C_SUM_MAX_COLS = 1 << 32


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
    if _c_sum_pairs is None or not one_key or n_cols > C_SUM_MAX_COLS:
        return sum_pairs_in_arrow(rows, cols, weights, n_cols)
    summed = _c_sum_pairs(np.ascontiguousarray(rows, np.int64), np.ascontiguousarray(cols, np.int64),
                          np.ascontiguousarray(weights, np.float64), n_cols)
    rows, cols, total = (np.frombuffer(b, dtype) for b, dtype in zip(summed, (np.int64, np.int64, np.float64)))
    kept = total != 0
    return rows[kept], cols[kept], total[kept]


def sum_pairs_in_arrow(rows: np.ndarray, cols: np.ndarray, weights: np.ndarray,
                       n_cols: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`sum_pairs` by Arrow's group-by and a sort of the pairs (where the C sum is not
    built, or its keys would not fit): the same pairs and sums, to the bit."""
    if rows.size == 0:
        return rows, cols, weights
    n_cols = max(n_cols, 1)
    one_key = (int(rows.max()) + 1) * n_cols < 1 << 62
    if not one_key:
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


def without_gone(table: pa.Table, gone: np.ndarray) -> tuple[pa.Table, int]:
    """The FRAGMENTS ``table`` without the rows of the URL ids ``gone`` (their latest capture a
    404 or 410: no bag, though the pages linking to them keep their own fragments of the links),
    and how many rows that left out. The bags stage and an incremental update both drop them so."""
    of_gone = pc.is_in(table.column("url_id"), value_set=pa.array(gone, pa.uint64()))
    dropped = pc.sum(of_gone).as_py() or 0
    return (table.filter(pc.invert(of_gone)) if dropped else table), dropped


def fragments_of_links_part(url: str, strategy: Strategy, skip_sources: np.ndarray, out: str,
                            size: PartSize = PartSize(), exclude: Callable[[str], bool] | None = None,
                            aliases: AliasMap | None = None, level: int = 0,
                            gone: np.ndarray | None = None) -> dict[str, int]:
    """Anchor-window and link-id fragments of one links part, slice by slice (at most
    ``size.link_rows`` links and the row groups of source pages they point into),
    pre-merged per (URL, term) within a slice, to the files ``out``.c<cell>.parquet of its
    cells of 2^``level`` (:class:`CellFiles`); the out-links of the pages
    ``exclude`` names are left out; links to an alias count for its document
    (simweb.tasks.crawl.aliases.redirect_links); the URLs of ``gone`` (their latest capture a
    404 or 410) get no fragment of their own — the link ids in their sources' bags stay."""
    stats = {"links": 0, "links_of_duplicate_pages": 0, "links_from_excluded_pages": 0, "self_links": 0,
             "fragment_rows": 0, "slices": 0, **({"links_redirected_to_aliases": 0} if aliases else {}),
             **({"fragment_rows_of_gone_urls": 0} if gone is not None and gone.size else {})}
    with CellFiles(out, level, size.buffer_rows) as writer:
        for piece in link_slices(url, skip_sources, size.link_rows, sources=strategy.uses_anchor,
                                 exclude=exclude):
            links, redirected = redirect_links(piece.links, aliases) if aliases else (piece.links, 0)
            if aliases:
                stats["links_redirected_to_aliases"] += redirected
            table, piece_stats = fragments(None, links, strategy, piece.sources, where=url)
            if gone is not None and gone.size:
                table, dropped = without_gone(table, gone)
                stats["fragment_rows_of_gone_urls"] += dropped
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
