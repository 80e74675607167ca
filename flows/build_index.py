"""The build-index flow: a crawl's WARC files in, the related-pages index out (paper Figure 10).

The flow body is the stage sequence, one line per stage; the stage functions below do the
fan-out (one Prefect task per WARC file or shard, run on Dask) and are reusable by other
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

from prefect import flow, get_run_logger, unmapped
from prefect.context import FlowRunContext
from prefect.task_runners import TaskRunner
from prefect_dask import DaskTaskRunner

from tasks.ingest import IngestStats, ingest_file, list_warc_files, unreadable


def available_cores() -> int:
    """CPU cores this process may use (its affinity mask, not the machine's total)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def dask_task_runner(dask_address: str | None = None, n_workers: int | None = None) -> DaskTaskRunner:
    """A Dask task runner: the scheduler at ``dask_address``, or a temporary LocalCluster.

    The local cluster has ``n_workers`` single-threaded worker processes (default: one per
    available core), since parsing HTML is pure Python and holds the GIL. Its workers are
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
    cluster_kwargs = {
        "n_workers": n_workers or available_cores(),
        "threads_per_worker": 1,
        "processes": True,
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


def ingest_stage(runner: TaskRunner, files: list[str], out: str, io_retries: int = 3) -> IngestStats:
    """Ingest every WARC file into ``out`` with one ``ingest_file`` task per file; summed stats.

    A file whose task fails every retry (it cannot be read) is reported in the stats'
    ``file_errors`` and skipped; the other files are not affected.
    """
    task = ingest_file.with_options(retries=io_retries)
    futures = runner.map(task, {"path": files, "out": unmapped(out)})
    results = []
    for path, future in zip(files, futures):
        outcome = future.result(raise_on_failure=False)
        if isinstance(outcome, IngestStats):
            results.append(outcome)
        else:
            results.append(unreadable(path, f"could not be read (transient I/O errors are retried "
                                            f"{io_retries} time(s)): {_reason(outcome)}"))
    return IngestStats.total(results)


def _reason(outcome: object) -> str:
    if isinstance(outcome, BaseException):
        return f"{type(outcome).__name__}: {outcome}"
    return str(outcome)


@flow(name="build-index")
def build_index(
    crawl: str | list[str],
    out: str,
    dask_address: str | None = None,
    n_workers: int | None = None,
    io_retries: int = 3,
) -> IngestStats:
    """Build the related-pages index of a crawl (paper Section 6, Figure 10) into ``out``.

    ``crawl`` is a WARC file, a folder of them, a glob, or a list of those (WARC only, not
    ARC). ``dask_address`` names an existing Dask scheduler; without it a local cluster of
    ``n_workers`` processes (default: one per core) runs for the flow. ``io_retries`` is how
    often a task retries a file it could not read.
    """
    log = get_run_logger()
    files = list_warc_files(crawl)
    log.info("build-index: %d WARC file(s) from %s into %s", len(files), crawl, out)
    with dask_task_runner(dask_address, n_workers) as runner:
        # 1. Ingest (Section 6.1 scans the repository): WARC files -> pages + link contexts.
        ingested = ingest_stage(runner, files, out, io_retries)
    log.info("%s", ingested.summary())
    return ingested
