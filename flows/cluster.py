"""The Dask cluster the flows run their tasks on, and how a stage fans its tasks out on it.

Every flow runs on one Dask cluster: a temporary LocalCluster sized to this machine, or the
scheduler at ``dask_address`` — whose workers must be able to read the crawl and write the
output folder (a shared file system or an fsspec URL such as ``s3://``) and reach the Prefect
API (``PREFECT_API_URL``). The unit of a task is a WARC file shard, a data part or a stage,
never a record: a Prefect task run costs a few hundred milliseconds on a worker (DESIGN.md).
"""
from __future__ import annotations

import os
import sys
from collections.abc import Callable, Sequence
from typing import Any

from prefect import get_run_logger
from prefect.context import FlowRunContext
from prefect.futures import as_completed
from prefect_dask import DaskTaskRunner

#: The module every worker of the flows' local Dask clusters imports as it starts.
WORKER_PRELOAD = "simweb.tasks.worker_preload"


def available_cores() -> int:
    """CPU cores this process may use (its affinity mask, not the machine's total)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


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


def worker_slots(runner) -> int:
    """How many tasks ``runner`` (a Prefect task runner) runs at once: its Dask cluster's
    worker threads, a thread pool's size, or this machine's cores."""
    client = getattr(runner, "_client", None)
    if client is not None:
        try:
            return max(1, sum(client.nthreads().values()))
        except Exception:  # noqa: BLE001 — a scheduler that does not answer: plan for this machine
            pass
    threads = getattr(runner, "_max_workers", None)  # a thread pool: unbounded by default
    return max(1, min(int(threads or available_cores()), available_cores()))


def dashboard_link(runner) -> str | None:
    """The Dask dashboard address of the runner's cluster, if it serves one."""
    try:
        return runner.client.dashboard_link
    except Exception:  # noqa: BLE001 — no client (not started) or no dashboard
        return None


def fan_out(runner) -> Callable[[Any, Sequence[dict[str, Any]]], list[Any]]:
    """A fan-out for the stages of simweb.tasks: ``fan(task, calls)`` runs the Prefect ``task``
    once per keyword dict of ``calls`` on ``runner`` and returns the results in order.

    A single call runs here, in the calling process: a task would add its hand-off to a
    worker and run nothing in parallel.
    """

    def fan(task, calls: Sequence[dict[str, Any]]) -> list[Any]:
        if not calls:
            return []
        if len(calls) == 1:
            return [task.fn(**calls[0])]
        keys = list(calls[0])
        futures = runner.map(task, {k: [c[k] for c in calls] for k in keys})
        return [f.result() for f in futures]

    return fan


def show_progress(futures, stage: str, what: str) -> None:
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
