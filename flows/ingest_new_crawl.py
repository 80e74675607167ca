"""The ingest-new-crawl flow: WARC files dropped into an inbox join an existing index.

Scheduled every hour by the ``ingest-new-crawl`` deployment (deployments/definitions.py).
Each WARC file is ingested once, however often it is dropped, copied or renamed: the output
folder keeps a ledger of the files it holds by content digest (tasks/stagecache.py), and a
file still being copied into the inbox (modified within ``settle_seconds``) waits for the
next run. A file that cannot be read after its retries is recorded as failed and retried by
the next runs, up to three times while its bytes stay the same.

After ingestion the index is brought up to date through :func:`refresh_index`, the hook the
incremental index store plugs into (new segment for the touched URLs, tombstones for their
old doc ids; see the index issue).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from prefect import flow, get_run_logger

from flows.build_index import dask_task_runner, ingest_stage
from tasks.ingest import IngestStats, part_name
from tasks.stagecache import CrawlLock, InboxFile, record_ingestion, scan_inbox


@dataclass(frozen=True, slots=True)
class IncrementalIngest:
    """What one run did: the inbox scan, the ingestion, and the index update."""

    inbox: dict[str, int]
    ingested: list[str] = field(default_factory=list)  # names of files ingested by this run
    failed: dict[str, str] = field(default_factory=dict)  # file name -> reason
    new_parts: list[str] = field(default_factory=list)  # part-<h16> written by this run
    stats: dict[str, Any] = field(default_factory=dict)
    index: str = "unchanged"


@flow(name="ingest-new-crawl")
def ingest_new_crawl(
    inbox: str,
    out: str,
    settle_seconds: float = 60.0,
    dask_address: str | None = None,
    n_workers: int | None = None,
    io_retries: int = 3,
) -> IncrementalIngest:
    """Ingest the WARC files in ``inbox`` that ``out`` does not hold yet, then update its index.

    ``out`` is the folder a ``build-index`` run wrote (pages, links, index). ``dask_address``
    names an existing Dask scheduler; without it a local cluster of ``n_workers`` processes
    runs, and only when there is something to ingest.
    """
    log = get_run_logger()
    with CrawlLock(out):
        # 1. Scan the inbox: WARC files whose content the output folder's ledger does not hold.
        scan = scan_inbox(inbox, out, settle_seconds=settle_seconds)
        log.info("inbox %s: %s", inbox, scan.summary())
        if not scan.new:
            return IncrementalIngest(inbox=scan.summary())
        # 2. Ingest them (one task per file on Dask, retried on I/O errors).
        with dask_task_runner(dask_address, n_workers) as runner:
            stats = ingest_stage(runner, [f.url for f in scan.new], out, io_retries)
        # 3. Record each file in the ledger, ingested or failed (rewritten atomically).
        outcomes = file_outcomes(scan.new, stats)
        record_ingestion(out, outcomes)
        # 4. Bring the index up to date for the pages and links of the new parts.
        new_parts = sorted(part_name(f.digest) for f, _, error in outcomes if error is None)
        index = refresh_index(out, new_parts)
    report = IncrementalIngest(
        inbox=scan.summary(),
        ingested=[f.name for f, _, error in outcomes if error is None],
        failed={f.name: error for f, _, error in outcomes if error is not None},
        new_parts=new_parts,
        stats=stats.to_dict(),
        index=index,
    )
    log.info("%s\nindex: %s", stats.summary(), index)
    for name, reason in report.failed.items():
        log.warning("%s not ingested: %s", name, reason)
    return report


def file_outcomes(files: tuple[InboxFile, ...], stats: IngestStats) -> list[tuple[InboxFile, dict | None, str | None]]:
    """``(file, stats, error)`` per file: ingested when its part is among the stage's parts."""
    errors = {e.path: e.reason for e in stats.file_errors}
    outcomes = []
    for f in files:
        if part_name(f.digest) in stats.parts:
            outcomes.append((f, {"part": part_name(f.digest), "damage": _error_for(errors, f)}, None))
        else:
            outcomes.append((f, None, _error_for(errors, f) or "no output was written for this file"))
    return outcomes


def _error_for(errors: dict[str, str], f: InboxFile) -> str | None:
    for path, reason in errors.items():
        if path == f.url or path.endswith("/" + f.name):
            return reason
    return None


def refresh_index(out: str, new_parts: list[str]) -> str:
    """The hook that brings the index in ``out`` up to date after ``new_parts`` were ingested.

    The index store provides ``tasks.index_store.apply_ingested_parts(out, new_parts) -> str``
    (rebuild the bags of the URLs the new pages and links touch, sign them into a new
    segment, tombstone the replaced doc ids, switch queries to the new version atomically)
    and returns a one-line description of what changed. Until this installation has it,
    the new parts stay ingested and the next ``build-index`` run indexes them.
    """
    log = get_run_logger()
    if not new_parts:
        return "unchanged (nothing new was ingested)"
    try:
        from tasks.index_store import apply_ingested_parts
    except ImportError as err:
        missing = getattr(err, "name", None) in ("tasks.index_store", None) or "apply_ingested_parts" in str(err)
        if not missing:
            raise
        message = (
            f"not updated: this installation has no incremental index update; the {len(new_parts)} new "
            "part(s) are ingested and a build-index run over this folder will index them"
        )
        log.warning("index %s", message)
        return message
    return apply_ingested_parts(out, new_parts)
