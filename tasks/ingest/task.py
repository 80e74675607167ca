"""The ingest's Prefect task: one shard of WARC files per task run (never one record: a task run
on a Dask worker costs a few hundred ms of submission, hand-off and state reporting)."""
from __future__ import annotations

import os
import time

from prefect import task
from prefect.cache_policies import NO_CACHE

from simweb.tasks.ingest.retries import RETRY_DELAY, ingest_with_retries
from simweb.tasks.ingest.stats import IngestStats
from simweb.tasks.logs import run_logger

__all__ = ["ingest_shard"]


def _shard_run_name() -> str:
    from prefect.runtime import task_run

    paths = task_run.parameters.get("paths") or []
    pieces = task_run.parameters.get("pieces") or []
    first = os.path.basename(str(paths[0]).rstrip("/")) if paths else "no files"
    if pieces and pieces[0][1] > 1:
        first += f" ({pieces[0][0] + 1}/{pieces[0][1]})"
    return f"ingest {first}" + (f" +{len(paths) - 1}" if len(paths) > 1 else "")


@task(
    name="ingest-files",
    task_run_name=_shard_run_name,
    # Transient I/O errors are retried per file inside the task (ingest_with_retries), so
    # that one flaky file does not re-run its whole shard; the task itself does not fail.
    retries=0,
    # Our own cache: a part named by the file's content hash is never computed twice.
    cache_policy=NO_CACHE,
    persist_result=False,
)
def ingest_shard(paths: list[str], out: str, io_retries: int = 3, retry_delay: float = RETRY_DELAY,
                 pieces: list[list[int]] | None = None) -> list[IngestStats]:
    """Ingest a shard of WARC files (or of pieces of them: ``pieces`` gives (k, n) per path, see
    :func:`ingest_warc`) into ``out`` one after another, each retried on transient I/O errors
    and reported on its own; the stats of each."""
    log = run_logger("simweb.ingest")
    results = []
    for path, (k, n) in zip(paths, pieces or [(0, 1)] * len(paths)):
        start = time.perf_counter()
        stats = ingest_with_retries(path, out, io_retries, retry_delay, log, (k, n))
        what = path if n == 1 else f"{path} (piece {k + 1} of {n})"
        if stats.files_unchanged or (stats.pages_unchanged and not stats.records_read):
            log.info("%s: unchanged since an earlier ingest; outputs kept", what)
        elif stats.files_read or stats.records_read:
            log.info("%s: %d records, %d pages, %d links, %d skipped in %.1f s", what, stats.records_read,
                     stats.pages_written, stats.links_written, stats.records_skipped, time.perf_counter() - start)
        for error in stats.file_errors:
            log.warning("%s: %s", what if n > 1 else error.path, error.reason)
        results.append(stats)
    return results
