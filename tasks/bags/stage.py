"""The bags stage: pages + links → one weighted bag per URL, in three cached sub-stages
(fragments, merge, weighting; the package docstring of simweb.tasks.bags says what each writes
and what its key is). :func:`build_bags_stage` builds or reuses them."""
from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from simweb.core.strategy import Strategy
from simweb.core.weighting import Weighting
from simweb.tasks.bags.df import DfSnapshot, sum_counts
from simweb.tasks.bags.fragments import fragments_of_links_part, fragments_of_pages_part, largest_first
from simweb.tasks.bags.grid import (
    estimated_fragment_rows,
    fragment_level,
    merge_partitions,
    partition_files,
    url_ranges,
)
from simweb.tasks.bags.merge import empty_partition, merge_range
from simweb.tasks.bags.scheduling import compute, shared
from simweb.tasks.bags.sizes import PART_MB, PartSize
from simweb.tasks.bags.weigh import weigh_part
from simweb.tasks.crawl.copies import capture_dates, crawl_copies
from simweb.tasks.crawl.parts import crawl_identity, crawl_parts, file_stem
from simweb.tasks.stagecache import (
    StageOutput,
    announce_reused,
    consume,
    find,
    recorded,
    run_stage,
    was_consumed,
)
from simweb.tasks.storage import filesystem, join, parts, write_parquet_atomic

# Bumped when fragments, merged bags or weighted bags change meaning or layout, so old outputs
# are not reused (2: merge partitions by URL id range, with their term counts).
BAGS_FORMAT = 2
STAGE_FRAGMENTS, STAGE_MERGE, STAGE_BAGS = "bag-fragments", "bag-merge", "bags"
# Under "_" so that Parquet readers of the folder (which skip "_" and "." names) see only BAGS parts.
DF_FILE = "_terms/df.parquet"
SNAPSHOT_DF_FILE = "_terms/df-snapshot.parquet"  # the frozen df a bags folder was weighted with
COUNTS_FILE = "_terms/counts-{:05d}.parquet"  # a merge partition's (term, df)


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


def as_strategy(strategy: Strategy | dict | str) -> Strategy:
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
        copies = crawl_copies(crawl)
        aliases = copies.aliases if len(copies.aliases) else None
        shared_aliases = shared(aliases, scheduler)
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
            written = [empty_partition(join(tmp, "part-00000.parquet"), join(tmp, COUNTS_FILE.format(0)))]
        else:
            level = int(frag.stats.get("cells", 1)).bit_length() - 1
            writes = []
            for i, (low, high) in enumerate(url_ranges(p)):
                files = partition_files(frag_parts, level, low, high)
                out, counts = join(tmp, f"part-{i:05d}.parquet"), join(tmp, COUNTS_FILE.format(i))
                writes.append(dask.delayed(merge_range)(files, low, high, out, counts) if files
                              else dask.delayed(empty_partition)(out, counts))
            written = compute(writes, scheduler)
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
    ``verify`` checks reused sub-stage outputs by content, not only by size (stagecache.output_damage).
    Neither ``part_mb`` nor ``partitions`` is part of a sub-stage's key: they cut the work, the
    bags are the same. With ``reuse_consumed``, bags that an index build consumed once it had
    signed them (simweb.flows.chain) are returned as their manifest records them — key and
    stats, no files — for a caller that only needs to name them; otherwise they are weighed again.
    """
    import dask

    strategy = as_strategy(strategy)
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
        for s in compute(work, scheduler):
            for k, v in s.items():
                totals[k] += v
        return {
            **{k: frag.stats.get(k, 0) for k in ("pages", "duplicate_pages", "links", "links_of_duplicate_pages",
                                                  "self_links", "fragment_rows")},
            # Aliases (simweb.tasks.crawl): in the summary only for a crawl that has them.
            **{k: v for k, v in frag.stats.items() if k.startswith("aliases") or k.endswith("_aliases")},
            # Captures (simweb.tasks.crawl.copies): those set aside, the dates of a crawl read as of a date.
            **{k: v for k, v in frag.stats.items() if k.startswith(("captures_", "pages_gone", "pages_redirected",
                                                                     "pages_of_revisits", "capture_dates")) and v},
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
