"""The bags stage as a Prefect task (deterministic compute: no retries; its outputs are cached)."""
from __future__ import annotations

from prefect import task
from prefect.cache_policies import NO_CACHE

from simweb.core.strategy import Strategy
from simweb.tasks.bags.sizes import PART_MB
from simweb.tasks.stagecache import StageOutput
from simweb.tasks.stages.bags import build_bags_stage


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
