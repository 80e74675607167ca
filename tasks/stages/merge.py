"""The bag-merge sub-stage of the bags stage (paper Section 6.1; simweb.tasks.bags says what its
files hold): per range of URL ids, the fragments of its URLs from every file, equal (URL, term)
pairs summed (simweb.tasks.bags.merge), with each partition's term counts. Keyed by the fragments
alone — not by the number of partitions, which cuts the work, not the bags — so once it is
published the fragments are consumed (their files deleted, their manifest kept), and a later run
that finds the merge whole needs neither them nor their work. Read by the weighting
(:mod:`.weighting`) and by the evaluation's sample bags (simweb.tasks.bags.sample)."""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from simweb.core.strategy import Strategy
from simweb.tasks.bags import BAGS_FORMAT
from simweb.tasks.bags.grid import merge_partitions, partition_files, url_ranges
from simweb.tasks.bags.merge import empty_partition, merge_range
from simweb.tasks.bags.scheduling import compute
from simweb.tasks.bags.sizes import PART_MB, PartSize
from simweb.tasks.crawl.parts import crawl_parts
from simweb.tasks.stagecache import StageOutput, announce_reused, consume, find, recorded, run_stage
from simweb.tasks.stages import fragments
from simweb.tasks.storage import join, parts

NAME = "bag-merge"
COUNTS_FILE = "_terms/counts-{:05d}.parquet"  # a merge partition's (term, df)
_PARAMS = {"format": BAGS_FORMAT}


@dataclass(frozen=True, slots=True)
class Merged:
    """The fragments and merge sub-stages' outputs of one crawl and strategy."""

    fragments: StageOutput
    merged: StageOutput

    def count_files(self) -> list[str]:
        return [join(self.merged.path, COUNTS_FILE.format(i)) for i in range(len(parts(self.merged.path)))]


def merge_stages(crawl_dir: str, strategy: Strategy, out_dir: str, partitions: int | None = None, *,
                 scheduler: Any = None, verify: bool = False, part_mb: int = PART_MB,
                 left_out: fragments.LeftOut | None = None) -> Merged:
    """The fragments and merge sub-stages (built or reused) of the crawl in ``crawl_dir`` under
    ``strategy`` in ``out_dir``, with the pages ``left_out`` names and their out-links left out.
    Parameters as for simweb.tasks.stages.bags.build_bags_stage."""
    if partitions is not None and (isinstance(partitions, bool) or not isinstance(partitions, int) or partitions < 1):
        raise ValueError(f"partitions: expected a positive number of merge partitions, got {partitions!r}")
    size = PartSize(part_mb)
    crawl = crawl_parts(crawl_dir)
    inputs, params = fragments.key(crawl_dir, strategy, left_out)
    frag = recorded(out_dir, fragments.NAME, inputs, params)
    if frag is not None:
        merged = find(out_dir, NAME, {"fragments": frag}, _PARAMS, verify=verify)
        if merged is not None:
            consume(frag)
            return Merged(announce_reused(fragments.NAME, frag), announce_reused(NAME, merged))

    def fragments_of_crawl(tmp: str) -> dict[str, Any]:
        return fragments.fragment_parts(crawl, strategy, size, left_out, scheduler, tmp)

    frag = run_stage(out_dir, fragments.NAME, inputs, params, fragments_of_crawl, verify=verify)
    p = partitions or merge_partitions(int(frag.stats.get("fragment_rows", 0)), size)

    def merge(tmp: str) -> dict[str, Any]:
        return merge_ranges(frag, p, scheduler, tmp)

    merged = run_stage(out_dir, NAME, {"fragments": frag}, _PARAMS, merge, verify=verify)
    consume(frag)
    return Merged(frag, merged)


def merge_ranges(frag: StageOutput, p: int, scheduler: Any, tmp: str) -> dict[str, Any]:
    """The fragments ``frag`` merged into ``p`` partitions of URL id ranges in ``tmp``; the stats."""
    import dask

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
