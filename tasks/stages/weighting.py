"""The weighting sub-stage of the bags stage, whose output is the bags (paper Section 6.1;
simweb.tasks.bags says what its files hold): df over the collection — the merge partitions'
term counts added up — then per partition frequency weighting and normalisation
(simweb.tasks.bags.weigh), or the weighting of a frozen df (an incremental index's epoch,
simweb.tasks.incremental). Keyed by the merge, the strategy's weighting and the frozen df if
any; read by simweb.tasks.bag_reader."""
from __future__ import annotations

import time
from typing import Any

from simweb.core.strategy import Strategy
from simweb.core.weighting import Weighting
from simweb.tasks.bags import BAGS_FORMAT
from simweb.tasks.bags.df import DfSnapshot, sum_counts
from simweb.tasks.bags.scheduling import compute
from simweb.tasks.bags.weigh import weigh_part
from simweb.tasks.stagecache import StageOutput
from simweb.tasks.stages.merge import Merged
from simweb.tasks.storage import join, parts, write_parquet_atomic

NAME = "bags"
# Under "_" so that Parquet readers of the folder (which skip "_" and "." names) see only BAGS parts.
DF_FILE = "_terms/df.parquet"
SNAPSHOT_DF_FILE = "_terms/df-snapshot.parquet"  # the frozen df a bags folder was weighted with


def key(merged: StageOutput, strategy: Strategy,
        df_snapshot: DfSnapshot | None) -> tuple[dict[str, Any], dict[str, Any]]:
    """The inputs and parameters the bags weighed from ``merged`` under ``strategy`` are keyed on."""
    params: dict[str, Any] = {"format": BAGS_FORMAT, "weighting": strategy.bag_params()}
    if df_snapshot is not None:
        params["df_snapshot"] = df_snapshot.identity()
    return {"merged": merged}, params


def weigh_merged_parts(stages: Merged, strategy: Strategy, df_snapshot: DfSnapshot | None, scheduler: Any,
                       tmp: str) -> dict[str, Any]:
    """The merged bags of ``stages`` weighed into ``tmp``, one Dask task a partition; the stats of
    the whole bags stage (what the fragments counted, the bags, the weighting, seconds per sub-stage)."""
    import dask

    frag, merged_out = stages.fragments, stages.merged
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
