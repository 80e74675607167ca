"""The related-table stage: every page's answer to the default query computed ahead, after the
index version is published, so that a query of the default kind is a look-up of its row
(simweb.tasks.precomputed writes and reads the table; simweb.core.precomputed is what a row
holds). The version answers by live queries until its table is whole. Not cached by the stage
cache: the table is in the version's folder, and a version that has a whole one is *Reused*."""
from __future__ import annotations

from typing import Any

from prefect import task

from simweb.tasks.logs import run_logger
from simweb.tasks.options import HERE, RunOptions, Workers
from simweb.tasks.precomputed import compute_shard, compute_table
from simweb.tasks.stagecache import STAGE_RUN, brief_stats

NAME = "related-table"

# A module attribute of its own name, so that a worker unpickles it by reference.
related_table_shard = task(name="related-table-shard")(compute_shard)


def related_table_stage(live: str, options: RunOptions = RunOptions(), *, on: Workers = HERE) -> dict[str, Any]:
    """The table of the published version folder ``live`` (a whole one found is kept, checked as
    ``options`` say), its shards fanned out on the cluster ``on`` names; its figures."""

    def run() -> dict[str, Any]:
        log = run_logger("simweb.stagecache")
        figures = compute_table(live, related_table_shard, fan_out=on.fan_out, verify=options.verify)
        if figures.get("not_needed"):
            log.info("stage %s: not needed: the index orders its answers by overlap, every query is live", NAME)
        elif figures.get("superseded"):
            log.info("stage %s: left: a newer version of the index replaced %s meanwhile", NAME, live)
        elif figures["reused"]:
            log.info("stage %s: reused the whole table of %s", NAME, live)
        else:
            log.info("stage %s: computed in %.1f s: %s", NAME, figures["seconds"], brief_stats(figures))
        return figures

    def describe(figures: dict[str, Any]) -> tuple[bool, dict[str, Any]]:
        return bool(figures.get("reused")), figures

    wrap = STAGE_RUN.get()  # a task run of its own where stage runs are (simweb.flows.stage_runs)
    return run() if wrap is None else wrap(NAME, None, run, describe)


def table_record(live: str, figures: dict[str, Any]) -> dict[str, Any]:
    """The stage as a build's summary lists its stages: folder, whether it was reused, its figures."""
    return {"path": live, "reused": bool(figures.get("reused")), "stats": figures}
