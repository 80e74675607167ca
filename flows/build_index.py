"""The build-index flow: a crawl's WARC files in, the related-pages index out (paper Figure 10).

The flow body is the stage sequence, one line per stage; the stage functions below do the
fan-out (one Prefect task per shard of WARC files or of data, run on Dask) and are reusable by other
flows. All stages share one Dask cluster: a temporary LocalCluster sized to this machine,
or the scheduler at ``dask_address`` — whose workers must be able to read the crawl and
write ``out`` (a shared file system or an fsspec URL such as ``s3://``) and reach the
Prefect API (``PREFECT_API_URL``).

Run it from the command line (``simweb ingest WARC... --out DIR``), from Python, or from a
Prefect deployment; every script that calls it needs the ``if __name__ == "__main__":`` guard,
because the Dask workers start new Python processes that import the caller's main module.
"""
from __future__ import annotations

import os
import sys
from typing import Literal

from prefect import flow, get_run_logger, unmapped
from prefect.futures import as_completed
from prefect.context import FlowRunContext
from prefect.task_runners import TaskRunner
from prefect_dask import DaskTaskRunner

from simweb.core.strategy import Strategy
from simweb.tasks.ingest import IngestStats, ingest_shard, list_archive_files, nothing_ingested, plan_shards, unreadable
from simweb.tasks.pipeline import (
    WORKER_PRELOAD,
    BuildSummary,
    IndexParams,
    available_cores,
    bags_stage,
    crawl_folder,
    dedup_stage,
    invert_stage,
    publish_index,
    signatures_stage,
    worker_slots,
)
from simweb.tasks.incremental import start_epoch
from simweb.tasks.stagecache import StageOutput


def dask_task_runner(dask_address: str | None = None, n_workers: int | None = None) -> DaskTaskRunner:
    """A Dask task runner: the scheduler at ``dask_address``, or a temporary LocalCluster.

    The local cluster has ``n_workers`` single-threaded worker processes (default: one per
    available core), since parsing HTML is pure Python and holds the GIL; each imports
    the stage modules as it starts (``simweb.tasks.worker_preload``). A cluster of one worker is
    a worker thread in this process instead: the same parallelism, without the seconds a
    new process takes to start and import Prefect and the stage modules. Its workers are
    pointed at the Prefect API this flow reports to; without that, a flow run on Prefect's
    temporary local server would have each worker process start a server of its own. The
    workers of an existing cluster need ``PREFECT_API_URL`` set where they run.
    """
    if dask_address:
        if n_workers is not None:
            raise ValueError(
                "n_workers sizes a local Dask cluster, but dask_address names an existing one; "
                "give one or the other"
            )
        return DaskTaskRunner(address=dask_address)
    if n_workers is not None and n_workers < 1:
        raise ValueError(f"n_workers: expected at least 1 worker, got {n_workers}")
    workers = n_workers or available_cores()
    if workers == 1:
        # One worker thread in this process: the same parallelism as a worker process, without
        # starting one and importing Prefect and the stage modules into it.
        return DaskTaskRunner(cluster_kwargs={"n_workers": 1, "threads_per_worker": 1, "processes": False})
    cluster_kwargs = {
        "n_workers": workers,
        "threads_per_worker": 1,
        "processes": True,
        # Each worker imports the stage modules as it starts, not inside its first tasks.
        "preload": [WORKER_PRELOAD],
    }
    api_url = _prefect_api_url()
    if api_url:
        cluster_kwargs["env"] = {"PREFECT_API_URL": api_url}
    return DaskTaskRunner(cluster_kwargs=cluster_kwargs)


def _prefect_api_url() -> str | None:
    """The URL of the Prefect API the current flow run reports to, if any."""
    context = FlowRunContext.get()
    if context is None or context.client is None:
        return os.environ.get("PREFECT_API_URL") or None
    return str(context.client.api_url).rstrip("/")


#: Shards per worker slot in the ingest stage: few enough that the per-task cost (a few hundred
#: ms on a Dask worker, much of it in the Prefect server, which shares the machine's cores with
#: the workers) stays small next to the parsing; two, so that a slot that finishes early takes
#: over part of the work (on DebDocs, 1→2 workers: 1.6× with one or four shards per slot, 1.8× with two).
SHARDS_PER_SLOT = 2


def ingest_stage(runner: TaskRunner, files: list[str], out: str, io_retries: int = 3) -> IngestStats:
    """Ingest every WARC file into ``out``: the files in shards of about equal bytes
    (``SHARDS_PER_SLOT`` per worker thread), one ``ingest_shard`` task per shard; summed stats.

    A file that cannot be read (after ``io_retries`` retries of transient I/O errors) is
    reported in the stats' ``file_errors`` and skipped; the other files are not affected.
    """
    shards = plan_shards(files, SHARDS_PER_SLOT * worker_slots(runner))
    futures = runner.map(ingest_shard, {"paths": shards, "out": unmapped(out), "io_retries": unmapped(io_retries)})
    _show_progress(futures, "ingest", f"shards of {len(files)} WARC file(s)")
    results = []
    for shard, future in zip(shards, futures):
        outcome = future.result(raise_on_failure=False)
        if isinstance(outcome, IngestStats):
            results.append(outcome)
        else:  # the worker running the shard was lost: say so for each of its files
            results.extend(unreadable(path, f"not ingested: its task failed: {_reason(outcome)}") for path in shard)
    return IngestStats.total(results)


def _show_progress(futures, stage: str, what: str) -> None:
    """Wait for ``futures``, drawing a progress bar on a terminal's standard error (the CLI), or
    else logging every tenth of the way (a deployment's run, followed in the Prefect UI)."""
    total = len(futures)
    if total == 0:
        return
    bar = sys.stderr.isatty()
    log = get_run_logger()
    step = max(1, total // 10)
    for done, _ in enumerate(as_completed(futures), 1):
        if bar:
            filled = 30 * done // total
            print(f"\r  {stage} [{'#' * filled}{'.' * (30 - filled)}] {done}/{total} {what}", end="",
                  file=sys.stderr, flush=True)
        elif done % step == 0 or done == total:
            log.info("%s: %d/%d %s done", stage, done, total, what)
    if bar:
        print(file=sys.stderr)


def dashboard_link(runner) -> str | None:
    """The Dask dashboard address of the runner's cluster, if it serves one."""
    try:
        return runner.client.dashboard_link
    except Exception:  # no client (not started) or no dashboard
        return None


def _reason(outcome: object) -> str:
    if isinstance(outcome, BaseException):
        return f"{type(outcome).__name__}: {outcome}"
    return str(outcome)


@flow(name="build-index")
def build_index(
    crawl: str | list[str],
    out: str,
    strategy: Strategy = Strategy(),
    m: int = 80,
    seed: int = 1,
    min_in_degree: int | None = 3,
    directory: str | None = None,
    until: Literal["ingest", "bags", "index"] = "index",
    crawl_out: str | None = None,
    dask_address: str | None = None,
    n_workers: int | None = None,
    partitions: int | None = None,
    io_retries: int = 3,
) -> BuildSummary:
    """Build the related-pages index of a crawl (paper Section 6, Figure 10) into ``out``.

    ``crawl`` is a WARC or ARC file, a folder of them, a glob, or a list of those.
    ``strategy`` is how pages are described (Sections 3–4; the default is the paper's
    Section 7 choice); ``m`` and ``seed`` make the min-hash signatures; documents with
    in-degree ≤ ``min_in_degree`` stay out of I (Section 7.1; None keeps all). ``directory``
    (ODP RDF or url<TAB>category) adds categories to results. ``until`` stops after a stage.
    The ingest output goes to ``crawl_out`` (default ``out/crawl``). ``dask_address`` names an
    existing Dask scheduler; without it a local cluster of ``n_workers`` processes (default:
    one per core) runs for the flow. ``io_retries`` is how often a task retries a file it
    could not read. Finished stages are reused; a failed run resumes at the failed stage.
    """
    log = get_run_logger()
    files = list_archive_files(crawl)
    crawl_dir = crawl_out or crawl_folder(out)
    params = IndexParams(m=m, seed=seed, min_in_degree=min_in_degree)
    log.info("build-index: %d WARC file(s) from %s into %s, strategy %s", len(files), crawl, out, strategy.label)
    stages: dict[str, dict] = {}
    index = None
    with dask_task_runner(dask_address, n_workers) as runner:
        log.info("Dask dashboard: %s", dashboard_link(runner) or "not served")
        # 1. Ingest (Section 6.1 scans the repository): WARC files -> pages + link contexts.
        ingested = ingest_stage(runner, files, crawl_dir, io_retries)
        log.info("%s", ingested.summary())
        if not ingested.usable:  # no file gave a page: stop here, publish nothing
            return nothing_ingested(ingested)
        bag_crawl = crawl_dir
        if until != "ingest" and strategy.dedup:
            # 1b. Dedup (beyond the paper, strategy option): one page per near-duplicate cluster.
            bag_crawl = _record(stages, "dedup", dedup_stage(crawl_dir, out)).path
        if until != "ingest":
            # 2. Bags (Section 6.1): fragments -> merge by URL -> df, NMDF weighting, normalise.
            bags = _record(stages, "bags", bags_stage(runner, bag_crawl, strategy, out, partitions))
        if until == "index":
            # 3. Signatures (Section 6.2): m min-hashes per bag -> H and the url <-> doc map.
            signed = _record(stages, "signatures", signatures_stage(runner, bags, bag_crawl, params, out, directory))
            # 4. Invert (Section 6.2): H -> I, leaving low in-degree URLs out (Section 7.1).
            inverted = _record(stages, "invert", invert_stage(runner, signed, params, out))
            # 5. Publish: switch queries to the new index atomically; its df starts an epoch
            #    for incremental updates (tasks/incremental.py).
            index = publish_index(inverted, out)
            start_epoch(out, bags, params)
    summary = BuildSummary(ingest=ingested, stages=stages, index=index)
    log.info("%s", summary.summary())
    return summary


def _record(stages: dict[str, dict], name: str, output: StageOutput) -> StageOutput:
    stages[name] = {"path": output.path, "reused": output.reused, "stats": output.stats}
    return output
