"""The ingest-new-crawl flow: WARC files dropped into an inbox join an existing index.

Scheduled every hour by the ``ingest-new-crawl`` deployment (deployments/definitions.py).
Each WARC file is ingested once, however often it is dropped, copied or renamed: the crawl
folder keeps a ledger of the files it holds by content digest (tasks/stagecache.py), and a
file still being copied into the inbox (modified within ``settle_seconds``) waits for the
next run. A file that cannot be read after its retries is recorded as failed and retried by
the next runs, up to three times while its bytes stay the same.

The index is then brought up to date over the grown crawl and published atomically (a query
sees the old or the new index, never a mix). Document frequencies follow the epoch policy of
simweb.tasks.incremental: within an epoch only the URLs the new files touch are re-weighted with
the epoch's frozen df and re-signed; when the crawl has grown by more than ``max_growth``
since the epoch began, every bag is re-weighted over the whole collection and a new epoch
begins (see :func:`refresh_index`). A file the ledger records as ingested but not yet indexed
(an update that failed) is indexed by the next run.
"""
from __future__ import annotations

from contextlib import ExitStack, nullcontext
from dataclasses import dataclass, field
from typing import Any

from prefect import flow

from simweb.core.markdown import md_block, md_code, md_text
from simweb.core.strategy import Strategy
from simweb.flows.chain import index_chain, ingest_sentence
from simweb.flows.cluster import fresh_workers_after_ingest, in_flow_run, publish_markdown, stage_runner, workers
from simweb.flows.parameters import StrategyParameter
from simweb.flows.runsize import SMALL_INPUT_BYTES, folder_size, human_size, in_process
from simweb.flows.stage_runs import stage_task_runs
from simweb.tasks import incremental
from simweb.tasks.bags.sizes import PART_MB
from simweb.tasks.crawl.selection import add_to_selection
from simweb.tasks.incremental import DEFAULT_MAX_GROWTH
from simweb.tasks.ingest.files import part_name
from simweb.tasks.ingest.stats import IngestStats
from simweb.tasks.layout import IndexLock, IndexLocked, crawl_folder, sweep_debris
from simweb.tasks.ledger import file_outcomes, mark_indexed, not_indexed, record_ingestion, scan_inbox
from simweb.tasks.logs import run_logger
from simweb.tasks.options import RunOptions
from simweb.tasks.signatures import IndexParams
from simweb.tasks.stages.ingest import ingest_stage
from simweb.tasks.stages.related_table import NAME as TABLE_STAGE
from simweb.tasks.stages.related_table import related_table_stage


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
    skipped: str | None = None  # why this run did nothing (another run held the index folder)

    def markdown(self, table: str) -> str:
        """The run's artifact: where the index is, the files this run ingested (and those it
        could not), then the ingest's table."""
        # File names and reasons are the inbox's and the crawl's: text, never markup (simweb.core.markdown).
        lines = ["# ingest-new-crawl", "",
                 f"The index is published at {md_code(self.index)}." if self.index else "No index was published.", "",
                 f"Files ingested by this run ({len(self.ingested)}):", ""]
        lines += [f"- {md_code(name)}" for name in self.ingested] or ["- none"]
        if self.failed:
            lines += ["", f"Files not ingested ({len(self.failed)}):", ""]
            lines += [f"- {md_code(name)}: {md_text(reason)}" for name, reason in self.failed.items()]
        return "\n".join(lines) + f"\n\n{md_block(table)}"


@flow(name="ingest-new-crawl")
def ingest_new_crawl(
    inbox: str,
    out: str,
    follow_index: bool = True,
    strategy: StrategyParameter = Strategy(),
    m: int = 80,
    seed: int = 1,
    min_in_degree: int | None = None,
    directory: str | None = None,
    crawl_out: str | None = None,
    settle_seconds: float = 60.0,
    dask_address: str | None = None,
    n_workers: int | None = None,
    partitions: int | None = None,
    part_mb: int = PART_MB,
    io_retries: int = 3,
    max_growth: float = DEFAULT_MAX_GROWTH,
    lock_wait_seconds: float | None = 0.0,
    related_table: bool = True,
) -> IncrementalIngest:
    """Ingest the WARC files in ``inbox`` that the build in ``out`` does not hold yet, then
    update its index (incrementally within a df epoch; see the module's docstring).

    Called as ``ingest_new_crawl.fn(...)`` the same body runs in this process without Prefect or Dask.

    Args:
        inbox: The folder new WARC files are dropped into; each file's content is ingested once, whatever its name.
        out: A build-index output folder (its index and crawl are brought up to date).
        follow_index: Keep the strategy, m, seed and min_in_degree the live index was built with, whatever the parameters below say.
        strategy: How pages are described, as fields or in the text form of simweb build --strategy (anchor:32+content,stem,dist,nmdf), when there is no index yet or follow_index is off.
        m: Min-hash signatures per page, when there is no index yet or follow_index is off.
        seed: Min-hash seed, when there is no index yet or follow_index is off.
        min_in_degree: In-degree filter of I (Section 7.1), when there is no index yet or follow_index is off; empty keeps every page.
        directory: A topic directory (ODP RDF or url<TAB>category) whose categories results show.
        crawl_out: The crawl folder of the build (default: OUT/crawl).
        settle_seconds: Files modified this recently are left for the next run (they may still be being copied).
        dask_address: The address of an existing Dask scheduler; empty starts a local cluster when there is work.
        n_workers: Worker processes of the local Dask cluster (default: one per core).
        partitions: Partitions of the bags stage's merge (default: from the crawl's size).
        part_mb: The working memory, in megabytes, each task of a re-weighing of every bag holds at most (default 768: every process stays under 2 GiB, four workers fit in 8 GB); partitions fixes the merge partitions instead.
        io_retries: How often a file that could not be read (a transient I/O error) is tried again.
        max_growth: Growth of the crawl since the df epoch began (a fraction of its pages) beyond which every bag is re-weighed.
        lock_wait_seconds: How long to wait for a build writing into OUT (empty: as long as it takes; 0: do nothing and leave the inbox to the next run).
        related_table: Once the index is published, compute every page's related pages ahead (the default query), so that such a query is a look-up; the index answers by live queries until it is done.
    """
    log = run_logger("simweb.ingest_new_crawl")
    crawl_dir = crawl_out or crawl_folder(out)
    options = RunOptions(part_mb=part_mb, partitions=partitions, io_retries=io_retries)
    with ExitStack() as held:
        try:
            held.enter_context(IndexLock(out, "ingest-new-crawl", wait=lock_wait_seconds, on_wait=log.info))
        except IndexLocked as busy:
            log.warning("ingest-new-crawl: nothing done this time: %s", busy)
            return IncrementalIngest(inbox={}, skipped=str(busy))
        for path in sweep_debris(out, crawl_dir):
            log.info("removed %s, left by a run that was killed", path)
        # 1. Scan the inbox: WARC files whose content the crawl folder's ledger does not hold.
        scan = scan_inbox(inbox, crawl_dir, settle_seconds=settle_seconds)
        log.info("inbox %s: %s", inbox, scan.summary())
        if scan.not_taken:
            log.warning("inbox %s: %s", inbox, scan.not_taken_text())
        if not scan.new and not not_indexed(crawl_dir):
            return IncrementalIngest(inbox=scan.summary(), index=incremental.live_index(out))
        # 2. Keep the live index's strategy and min-hash parameters (unless told otherwise).
        strategy, params = incremental.index_parameters(
            out, follow_index, strategy, IndexParams(m=m, seed=seed, min_in_degree=min_in_degree), log)
        # A few small files are ingested in this process, as small builds are; more on a Dask cluster.
        new_bytes = sum(f.size for f in scan.new)
        small = in_process(new_bytes, dask_address, n_workers)
        if small and scan.new:
            log.info("ingest-new-crawl: %d new file(s) of %s in all, ingested in this process (no Dask cluster "
                     "for under %d MB)", len(scan.new), human_size(new_bytes), SMALL_INPUT_BYTES >> 20)
        with nullcontext(None) if small else stage_runner(dask_address, n_workers) as runner, stage_task_runs():
            # 3. Ingest the new files into the crawl folder (shards of files, each file retried on I/O errors).
            new = [f.url for f in scan.new]
            ingested = ingest_stage(new, crawl_dir, options, on=workers(runner)) if new else IngestStats()
            # 4. Record each file in the ledger, ingested or failed (rewritten atomically).
            outcomes = file_outcomes(scan.new, ingested)
            record_ingestion(crawl_dir, outcomes)
            add_to_selection(crawl_dir, [part_name(f.digest) for f, _, error in outcomes if error is None])
            # 5. Update the index over the grown crawl and switch queries to it atomically:
            #    the touched URLs only within a df epoch, every bag when a new epoch begins.
            new_parts = [part_name(d) for d in not_indexed(crawl_dir)]
            index, stages = refresh_index(runner, out, crawl_dir, strategy, params, directory, new_parts, max_growth,
                                          options=options, files_read=ingested.files_read,
                                          cluster=(dask_address, n_workers))
            # 6. Mark every ingested file as covered by the index.
            mark_indexed(crawl_dir, not_indexed(crawl_dir))
            # 7. Every page's related pages computed ahead, so that the default query is a look-up.
            if index is not None and related_table:
                stages[TABLE_STAGE] = bool(related_table_stage(index, options, on=workers(runner)).get("reused"))
    report = IncrementalIngest(
        inbox=scan.summary(),
        ingested=[f.name for f, _, error in outcomes if error is None],
        failed={f.name: error for f, _, error in outcomes if error is not None},
        new_parts=sorted(part_name(f.digest) for f, _, error in outcomes if error is None),
        stats=ingested.to_dict(),
        index=index,
        stages=stages,
    )
    log.info("ingest-new-crawl: %s; %s; index published at %s", ingest_sentence(ingested),
             ", ".join(f"{s} {'reused' if r else 'computed'}" for s, r in stages.items()), index)
    for name, reason in report.failed.items():
        log.warning("%s not ingested: %s", name, reason)
    publish_markdown("ingest-new-crawl-summary", report.markdown(ingested.summary()),
                     f"ingest-new-crawl from {inbox} into {out}")
    return report


def refresh_index(runner, out: str, crawl_dir: str, strategy: Strategy, params: IndexParams,
                  directory: str | None, new_parts: list[str] | None = None,
                  max_growth: float = DEFAULT_MAX_GROWTH, *, options: RunOptions = RunOptions(),
                  files_read: int = 0, cluster: tuple[str | None, int | None] = (None, None)
                  ) -> tuple[str, dict[str, bool]]:
    """Bring the index in ``out`` up to date with the crawl folder; the live version and, per
    stage, whether it was reused.

    ``new_parts`` names the ingest parts the live index does not cover yet. The epoch policy
    (simweb.tasks.incremental.plan_update) decides: only the URLs they touch are rebuilt — their
    bags from the whole crawl with the epoch's frozen df, their signatures, and a new version
    with their rows replaced, the same bags and signatures a full build weighted with that df
    gives — or every bag is re-weighted over the whole grown collection by the stage chain,
    exactly as a full build over the same files does, and a new epoch begins. Before that
    chain, the cluster's workers that an ingest of ``files_read`` files left holding too much
    are restarted (simweb.flows.cluster.fresh_workers); the incremental update runs in this
    process and needs no fresh workers. Without a runner (the new files were few and small), a
    re-weighting of a crawl folder of :data:`~simweb.flows.runsize.SMALL_INPUT_BYTES` or more
    starts the Dask cluster ``cluster`` (its address, its workers) for the chain, whose work is
    cut as ``options`` say.
    """
    log = run_logger("simweb.ingest_new_crawl")
    plan = incremental.plan_update(out, crawl_dir, strategy, params, new_parts, max_growth)
    reason = plan.full_reason
    if plan.incremental:
        try:
            index, stages, stats = incremental.update(out, crawl_dir, new_parts, plan.epoch, strategy, params,
                                                      directory, plan.live)
        except incremental.NotIncremental as exc:
            reason = str(exc)
        else:
            log.info("incremental update in epoch %s: %d touched URL(s), %d updated and %d new document(s)",
                     plan.epoch.id, stats["touched"], stats.get("updated_docs", 0), stats.get("new_docs", 0))
            return index, stages
    log.info("re-weighting every bag (a new df epoch): %s", reason)
    large = runner is None and in_flow_run() and not in_process(folder_size(crawl_dir), *cluster)
    with stage_runner(*cluster) if large else nullcontext(runner) as runner:
        fresh_workers_after_ingest(runner, files_read, log)
        chain = index_chain(runner, crawl_dir, out, strategy, params, directory, options=options)
    return chain.index, {name: output.reused for name, output in chain.stages.items()}

