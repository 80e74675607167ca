"""The bag-fragments sub-stage of the bags stage (paper Section 6.1; simweb.tasks.bags says what
its files hold): one task per ingest part, each reading its part slice by slice
(simweb.tasks.bags.fragments), the largest first. Keyed by the content of the crawl's parts, the
strategy's fragment parameters and the pages left out; read by the merge (:mod:`.merge`) alone,
which consumes it once it is published."""
from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from simweb.core.strategy import Strategy
from simweb.tasks.bags import BAGS_FORMAT
from simweb.tasks.bags.fragments import fragments_of_links_part, fragments_of_pages_part, largest_first
from simweb.tasks.bags.grid import estimated_fragment_rows, fragment_level
from simweb.tasks.bags.scheduling import compute, shared
from simweb.tasks.bags.sizes import PartSize
from simweb.tasks.crawl.copies import capture_dates, crawl_copies
from simweb.tasks.crawl.parts import CrawlParts, crawl_identity, file_stem
from simweb.tasks.storage import filesystem, join

NAME = "bag-fragments"


@dataclass(frozen=True, slots=True)
class LeftOut:
    """Pages to leave out of the bags with their out-links (the evaluation leaves out a
    directory's own pages, Section 5, footnote 8): ``exclude`` names them by URL and
    ``identity`` (JSON-able) says which they are, for the cache keys."""

    exclude: Callable[[str], bool]
    identity: Any


def key(crawl_dir: str, strategy: Strategy, left_out: LeftOut | None) -> tuple[dict[str, Any], dict[str, Any]]:
    """The inputs and parameters the fragments of ``crawl_dir`` under ``strategy`` are keyed on."""
    params: dict[str, Any] = {"format": BAGS_FORMAT, "strategy": strategy.fragment_params()}
    if left_out is not None:
        params["left_out"] = left_out.identity
    return crawl_identity(crawl_dir), params


def fragment_parts(crawl: CrawlParts, strategy: Strategy, size: PartSize, left_out: LeftOut | None,
                    scheduler: Any, tmp: str) -> dict[str, Any]:
    """The fragments of every part of ``crawl`` into ``tmp``, one Dask task a part; the stats."""
    import dask

    t0 = time.perf_counter()
    exclude = left_out.exclude if left_out is not None else None
    copies = crawl_copies(crawl)
    aliases = copies.aliases if len(copies.aliases) else None
    shared_aliases = shared(aliases, scheduler)
    shared_gone = shared(copies.gone if copies.gone.size else None, scheduler)
    level = fragment_level(estimated_fragment_rows(crawl, strategy), size)
    tasks = [(fragments_of_pages_part, u, (strategy, copies.of(u), join(tmp, f"part-pages-{file_stem(u)}"),
                                           size, exclude, level)) for u in crawl.pages]
    tasks += [(fragments_of_links_part, u, (strategy, copies.of(u), join(tmp, f"part-links-{file_stem(u)}"),
                                            size, exclude, shared_aliases, level, shared_gone)) for u in crawl.links]
    work = []
    for rank, (function, u, args) in enumerate(largest_first(tasks, strategy)):
        with dask.annotate(priority=len(tasks) - rank):
            work.append(dask.delayed(function)(u, *args))
    stats: dict[str, Any] = {"cells": 1 << level, "pages": 0, "duplicate_pages": 0, "excluded_pages": 0, "links": 0,
                             "links_of_duplicate_pages": 0, "links_from_excluded_pages": 0, "self_links": 0,
                             "fragment_rows": 0, "slices": 0}
    for part_stats in compute(work, scheduler):
        for k, v in part_stats.items():
            stats[k] = stats.get(k, 0) + v
    stats.update(copies.counts)
    if copies.dates:
        stats["capture_dates"] = capture_dates(copies.dates, crawl.as_of)
    if aliases is not None:
        stats.update((k, v) for k, v in copies.aliases.counts.items() if k == "aliases" or k.startswith("aliases_"))
        stats["pages_merged_into_aliases"] = copies.aliases.counts.get("pages_merged", 0)
    fs, path = filesystem(tmp)
    stats["fragment_bytes"] = int(sum(fs.size(p) for p in fs.ls(path, detail=False) if p.endswith(".parquet")))
    stats["seconds"] = round(time.perf_counter() - t0, 3)
    return stats
