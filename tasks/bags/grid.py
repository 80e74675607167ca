"""The grid of URL id ranges the bags stage cuts its work at (paper Section 6.1).

URL ids are hashes spread evenly over 0 … 2^64 − 1: a part's fragments are written one file per
cell of 2^L equal ranges (simweb.tasks.bags.cells), and a merge partition, one of P equal ranges,
opens only the files of its own cells. How many cells and partitions a crawl takes follows from
the fragment rows it is expected to make and the memory of a task (simweb.tasks.bags.sizes).
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from itertools import pairwise
from typing import Any

import numpy as np

from simweb.core.strategy import Strategy
from simweb.tasks.bags.sizes import PartSize
from simweb.tasks.crawl.parts import count_part_rows


def cell_runs(ids: np.ndarray, level: int) -> list[tuple[int, int]]:
    """[start, stop) of each run of sorted URL ``ids`` that falls in one cell of 2^``level``."""
    if level == 0 or ids.size == 0:
        return [(0, int(ids.size))] if ids.size else []
    cells = ids >> np.uint64(64 - level)
    bounds = [0, *(np.flatnonzero(cells[1:] != cells[:-1]) + 1).tolist(), int(ids.size)]
    return list(pairwise(bounds))


def cell_of(url_id: int, level: int) -> int:
    """The cell of the grid of 2^``level`` equal URL id ranges that ``url_id`` falls in."""
    return url_id >> (64 - level) if level else 0


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


def url_ranges(partitions: int) -> list[tuple[int, int]]:
    """``partitions`` ranges of URL ids, [low, high] inclusive, covering 0 … 2^64 − 1 in order.

    URL ids are hashes of URLs (simweb.core.urls.url_id), spread evenly over the 64-bit range,
    so equal ranges take equal shares of the URLs; and since the ranges are in order, the
    merged partitions, read one after the other, are sorted by URL id whatever their number.
    """
    cuts = [(i << 64) // partitions for i in range(partitions + 1)]
    return [(cuts[i], cuts[i + 1] - 1) for i in range(partitions)]
