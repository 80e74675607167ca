"""The ingest-new-crawl flow: WARC files dropped into an inbox join an existing index.

Scheduled every hour by the ``ingest-new-crawl`` deployment (deployments/definitions.py).
Each WARC file is ingested once, however often it is dropped, copied or renamed: the crawl
folder keeps a ledger of the files it holds by content digest (tasks/stagecache.py), and a
file still being copied into the inbox (modified within ``settle_seconds``) waits for the
next run. A file that cannot be read after its retries is recorded as failed and retried by
the next runs, up to three times while its bytes stay the same.

The index is then brought up to date over the grown crawl and published atomically (a query
sees the old or the new index, never a mix). Document frequencies follow the epoch policy of
tasks/incremental.py: within an epoch only the URLs the new files touch are re-weighted with
the epoch's frozen df and re-signed; when the crawl has grown by more than ``max_growth``
since the epoch began, every bag is re-weighted over the whole collection and a new epoch
begins (see :func:`refresh_index`). A file the ledger records as ingested but not yet indexed
(an update that failed) is indexed by the next run.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from prefect import flow, get_run_logger

from simweb.flows.build_index import dashboard_link, dask_task_runner, ingest_stage
from simweb.core.minhash import MinHashParams
from simweb.core.strategy import Strategy
from simweb.tasks import incremental, index_store
from simweb.tasks.incremental import DEFAULT_MAX_GROWTH
from simweb.tasks.ingest import IngestStats, part_name
from simweb.tasks.pipeline import (
    IndexParams,
    bags_stage,
    crawl_folder,
    dedup_stage,
    invert_stage,
    publish_index,
    signatures_stage,
    stages_folder,
)
from simweb.tasks.stagecache import (
    CrawlLock,
    InboxFile,
    lineage,
    mark_indexed,
    not_indexed,
    output_path,
    published,
    record_ingestion,
    scan_inbox,
)


@dataclass(frozen=True, slots=True)
class IncrementalIngest:
    """What one run did: the inbox scan, the ingestion, and the index update."""

    inbox: dict[str, int]
    ingested: list[str] = field(default_factory=list)  # names of the files ingested by this run
    failed: dict[str, str] = field(default_factory=dict)  # file name -> reason
    new_parts: list[str] = field(default_factory=list)  # part-<h16> written by this run
    stats: dict[str, Any] = field(default_factory=dict)
    index: str | None = None  # the live index version after the run
    stages: dict[str, bool] = field(default_factory=dict)  # stage -> reused


@flow(name="ingest-new-crawl")
def ingest_new_crawl(
    inbox: str,
    out: str,
    follow_index: bool = True,
    strategy: Strategy = Strategy(),
    m: int = 80,
    seed: int = 1,
    min_in_degree: int | None = 3,
    directory: str | None = None,
    crawl_out: str | None = None,
    settle_seconds: float = 60.0,
    dask_address: str | None = None,
    n_workers: int | None = None,
    partitions: int | None = None,
    io_retries: int = 3,
    max_growth: float = DEFAULT_MAX_GROWTH,
) -> IncrementalIngest:
    """Ingest the WARC files in ``inbox`` that the build in ``out`` does not hold yet, then
    update its index.

    ``out`` is a ``build-index`` output folder (its crawl folder is ``crawl_out``, default
    ``out/crawl``). With ``follow_index`` the index keeps the strategy, ``m``, ``seed`` and
    ``min_in_degree`` it was built with, whatever the parameters say; without it, or when
    ``out`` has no index yet, the parameters apply (as in ``build-index``). ``directory``
    adds categories as in ``build-index``. ``dask_address`` names an existing Dask scheduler;
    without it a local cluster of ``n_workers`` processes runs, only when there is work.
    ``max_growth`` is the growth of the crawl (fraction of its pages when the df epoch began)
    beyond which an update re-weighs every bag instead of only the touched ones.
    """
    log = get_run_logger()
    crawl_dir = crawl_out or crawl_folder(out)
    with CrawlLock(crawl_dir):
        # 1. Scan the inbox: WARC files whose content the crawl folder's ledger does not hold.
        scan = scan_inbox(inbox, crawl_dir, settle_seconds=settle_seconds)
        log.info("inbox %s: %s", inbox, scan.summary())
        if not scan.new and not not_indexed(crawl_dir):
            return IncrementalIngest(inbox=scan.summary(), index=_live_index(out))
        # 2. Keep the live index's strategy and min-hash parameters (unless told otherwise).
        strategy, params = index_parameters(out, follow_index, strategy, IndexParams(m=m, seed=seed, min_in_degree=min_in_degree))
        with dask_task_runner(dask_address, n_workers) as runner:
            log.info("Dask dashboard: %s", dashboard_link(runner) or "not served")
            # 3. Ingest the new files into the crawl folder (shards of files, each file retried on I/O errors).
            ingested = ingest_stage(runner, [f.url for f in scan.new], crawl_dir, io_retries) if scan.new else IngestStats()
            # 4. Record each file in the ledger, ingested or failed (rewritten atomically).
            outcomes = file_outcomes(scan.new, ingested)
            record_ingestion(crawl_dir, outcomes)
            # 5. Update the index over the grown crawl and switch queries to it atomically:
            #    the touched URLs only within a df epoch, every bag when a new epoch begins.
            new_parts = [part_name(d) for d in not_indexed(crawl_dir)]
            index, stages = refresh_index(runner, out, crawl_dir, strategy, params, directory, partitions,
                                          new_parts, max_growth)
        # 6. Mark every ingested file as covered by the index.
        mark_indexed(crawl_dir, not_indexed(crawl_dir))
    report = IncrementalIngest(
        inbox=scan.summary(),
        ingested=[f.name for f, _, error in outcomes if error is None],
        failed={f.name: error for f, _, error in outcomes if error is not None},
        new_parts=sorted(part_name(f.digest) for f, _, error in outcomes if error is None),
        stats=ingested.to_dict(),
        index=index,
        stages=stages,
    )
    log.info("%s\nstages: %s\nindex published at %s", ingested.summary(),
             ", ".join(f"{s} {'reused' if r else 'computed'}" for s, r in stages.items()), index)
    for name, reason in report.failed.items():
        log.warning("%s not ingested: %s", name, reason)
    return report


def refresh_index(runner, out: str, crawl_dir: str, strategy: Strategy, params: IndexParams,
                  directory: str | None, partitions: int | None, new_parts: list[str] | None = None,
                  max_growth: float = DEFAULT_MAX_GROWTH) -> tuple[str, dict[str, bool]]:
    """Bring the index in ``out`` up to date with the crawl folder; the live version and, per
    stage, whether it was reused.

    ``new_parts`` names the ingest parts the live index does not cover yet. When the epoch
    policy allows (tasks/incremental.py), only the URLs they touch are rebuilt: their bags from
    the whole crawl with the epoch's frozen df, their signatures, and a new version with their
    rows replaced — the same bags and signatures a full build weighted with that df gives.
    Otherwise (``new_parts`` unknown, no epoch yet, the crawl grew by more than ``max_growth``,
    other parameters) every bag is re-weighted over the whole grown collection, exactly as a
    full build over the same files does, and a new epoch begins.
    """
    log = _logger()
    live = _live_index(out)
    epoch = incremental.read_epoch(out)
    reason = ("the new parts are not known" if new_parts is None
              else incremental.full_rebuild_reason(epoch, live, strategy, params, crawl_dir, max_growth))
    if reason is None:
        index, stages, stats = incremental.update(out, crawl_dir, new_parts, epoch, strategy, params, directory, live)
        log.info("incremental update in epoch %s: %d touched URL(s), %d updated and %d new document(s)",
                 epoch.id, stats["touched"], stats.get("updated_docs", 0), stats.get("new_docs", 0))
        return index, stages
    log.info("re-weighting every bag (a new df epoch): %s", reason)
    bag_crawl = crawl_dir
    stages: dict[str, bool] = {}
    if strategy.dedup:
        # Dedup (strategy option): one page per near-duplicate cluster, as build-index does.
        deduped = dedup_stage(crawl_dir, out)
        bag_crawl, stages["dedup"] = deduped.path, deduped.reused
    # Bags over the whole crawl: fragments, merge by URL, df and weighting (Section 6.1).
    bags = bags_stage(runner, bag_crawl, strategy, out, partitions)
    # Signatures: m min-hashes per bag (Section 6.2).
    signed = signatures_stage(runner, bags, bag_crawl, params, out, directory)
    # Invert: I, leaving low in-degree URLs out (Sections 6.2, 7.1).
    inverted = invert_stage(runner, signed, params, out)
    # Publish: queries switch to the new version atomically; the df of these bags is the new epoch.
    live = publish_index(inverted, out)
    incremental.start_epoch(out, bags, params)
    return live, {**stages, "bags": bags.reused, "signatures": signed.reused, "invert": inverted.reused}


def _logger():
    try:
        return get_run_logger()
    except Exception:  # called outside a flow run (tests, scripts)
        import logging

        return logging.getLogger("simweb.ingest_new_crawl")


def index_parameters(out: str, follow_index: bool, strategy: Strategy,
                     params: IndexParams) -> tuple[Strategy, IndexParams]:
    """The strategy and index parameters the live index of ``out`` was built with, if it
    should be followed and its build is recorded in ``out``'s stage outputs; else the given ones."""
    log = get_run_logger()
    if not follow_index:
        return strategy, params
    chain = _live_lineage(out)
    if chain is None:
        log.info("no index built in %s yet: using the given strategy %s, m=%d", out, strategy.label, params.m)
        return strategy, params
    built = Strategy.from_dict(chain["bags"]["stats"]["strategy"])
    minhash = MinHashParams.from_dict(chain["signatures"]["params"]["minhash"])
    followed = IndexParams(m=minhash.m, seed=minhash.seed, algorithm=minhash.algorithm,
                           min_in_degree=chain["invert"]["params"]["min_in_degree"])
    if (built, followed) != (strategy, params):
        log.info("following the live index: strategy %s, m=%d, seed=%d, min_in_degree=%s",
                 built.label, followed.m, followed.seed, followed.min_in_degree)
    return built, followed


def _live_lineage(out: str) -> dict[str, dict[str, Any]] | None:
    """The stage manifests behind the live index of ``out`` (the invert output it was published from)."""
    live = _live_index(out)
    if live is None:
        return None
    live_manifest = index_store.read_manifest(live)
    stages = stages_folder(out)
    for manifest in reversed(published(stages, "invert")):
        candidate = output_path(stages, "invert", manifest["key"])
        try:
            same = index_store.read_manifest(candidate) == live_manifest
        except index_store.IndexFormatError:
            continue
        if same:
            return lineage(stages, f"invert:{manifest['key']}")
    return None


def _live_index(out: str) -> str | None:
    try:
        return index_store.resolve(out)
    except (FileNotFoundError, index_store.IndexFormatError):
        return None


def file_outcomes(files: tuple[InboxFile, ...], stats: IngestStats) -> list[tuple[InboxFile, dict | None, str | None]]:
    """``(file, stats, error)`` per file: ingested when its part is among the stage's parts."""
    errors = {e.path: e.reason for e in stats.file_errors}
    outcomes = []
    for f in files:
        damage = _error_for(errors, f)
        if part_name(f.digest) in stats.parts:
            outcomes.append((f, {"part": part_name(f.digest), "damage": damage}, None))
        else:
            outcomes.append((f, None, damage or "no output was written for this file"))
    return outcomes


def _error_for(errors: dict[str, str], f: InboxFile) -> str | None:
    for path, reason in errors.items():
        if path == f.url or path.endswith("/" + f.name):
            return reason
    return None
