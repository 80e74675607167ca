"""The stage chain of paper Figure 10, shared by the build-index and ingest-new-crawl flows.

    ingest → [dedup] → bags → signatures → invert → publish

Each stage is cached by simweb.tasks.stagecache: keyed by the identity of what it reads and
its parameters, a finished stage is reused, so a re-run of a finished build does no work, a
changed strategy re-runs from the bags stage, and a run that failed in a late stage resumes
there. The published index (``OUT/versions/<name>`` and ``OUT/CURRENT``) is switched
atomically, so a query sees the old or the new index, never a mix. Every stage takes the
flow's task runner (``runner``; None runs the same work in this process on Dask's local
scheduler, as tests and benchmarks do).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from prefect import unmapped

from simweb.core.markdown import md_block, md_code
from simweb.core.strategy import Metric, Strategy
from simweb.flows.cluster import call_task, cluster_as_default, fan_out, show_progress, worker_slots
from simweb.flows.stage_runs import as_task_run
from simweb.tasks import index_store
from simweb.tasks.bags.sizes import PART_MB
from simweb.tasks.bags.stage import build_bags_stage
from simweb.tasks.crawl.parts import crawl_identity
from simweb.tasks.dedup import DedupParams, collapse_duplicates
from simweb.tasks.full_disk import full_disk_error
from simweb.tasks.incremental import epoch_started, start_epoch
from simweb.tasks.ingest.files import finish_pieces
from simweb.tasks.ingest.shards import plan_shards
from simweb.tasks.ingest.stats import IngestStats, unreadable
from simweb.tasks.ingest.task import ingest_shard
from simweb.tasks.layout import stages_folder
from simweb.tasks.progress import track
from simweb.tasks.signatures import IndexParams, signatures, write_index_version
from simweb.tasks.stagecache import StageOutput, brief_stats, consume, file_identities, find, run_stage, was_consumed
from simweb.tasks.storage import join

STAGE_DEDUP = "dedup"
STAGE_SIGNATURES = "signatures"
STAGE_INVERT = "invert"
STAGE_PUBLISH = "publish"


@dataclass(frozen=True)
class BuildSummary:
    """What a build read, wrote, skipped and reused, stage by stage."""

    ingest: IngestStats
    stages: dict[str, dict[str, Any]] = field(default_factory=dict)
    index: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"ingest": self.ingest.to_dict(), "stages": self.stages, "index": self.index}

    def summary(self) -> str:
        """The table a person reads at the end of a build: the ingest's counts, each stage, the index."""
        lines = [self.ingest.summary()]
        for name, info in self.stages.items():
            how = "reused" if info.get("reused") else "computed"
            lines.append(f"stage {name}: {how}; {brief_stats(info.get('stats', {}))}")
            if isinstance(info.get("stats", {}).get("capture_dates"), str):
                lines.append(f"  the pages are the {info['stats']['capture_dates']}")
        if self.index:
            lines.append(f"index published at {self.index}")
        return "\n".join(line for line in lines if line)

    def markdown(self, out: str) -> str:
        """The summary as a markdown page (a flow run's artifact): where the index is, then the table."""
        where = (f"The index is published at {md_code(self.index)}; queries open it through {md_code(out)} "
                 f"({md_code(f'simweb related URL --index {out}')})." if self.index else "No index was published.")
        return f"# build-index\n\n{where}\n\n{md_block(self.summary())}"

    def sentence(self) -> str:
        """The build in one sentence, for a run's log (the table is :meth:`summary`)."""
        return f"build-index: {ingest_sentence(self.ingest)}; {stages_sentence(self.stages)}" + (
            f"; index published at {self.index}" if self.index else "; no index published")


def ingest_sentence(stats: IngestStats) -> str:
    """An ingest's counts in one phrase: files, pages, links, records skipped and file errors."""
    files = f"{stats.files_read:,} file{'s' if stats.files_read != 1 else ''} read"
    if stats.files_unchanged:
        files += f" ({stats.files_unchanged:,} unchanged since an earlier ingest)"
    errors = len(stats.file_errors)
    damage = ""
    if stats.records_recovered or stats.bytes_skipped:
        damage = (f", {stats.records_recovered:,} records recovered past damage "
                  f"({stats.bytes_skipped:,} bytes skipped)")
    return (f"{files}, {stats.pages_written:,} pages and {stats.links_written:,} links written, "
            f"{stats.records_skipped:,} records skipped{damage}, "
            f"{errors:,} file error{'s' if errors != 1 else ''}")


def stages_sentence(stages: dict[str, dict[str, Any]]) -> str:
    """Which stages were computed and which reused, in order."""
    if not stages:
        return "no stage after the ingest"
    return ", ".join(f"{name} {'reused' if info.get('reused') else 'computed'}" for name, info in stages.items())


# ---------------------------------------------------------------------------------------------
# The stages


def ingest_stage(runner, files: list[str], out: str, io_retries: int = 3) -> IngestStats:
    """Ingest every WARC or ARC file into ``out``: one ``ingest_shard`` task per shard of files
    or of pieces of a large file (simweb.tasks.ingest.shards.plan_shards), the largest first; summed
    stats. A file read in pieces is finished here, once all its pieces are in.

    A file that cannot be read (after ``io_retries`` retries of transient I/O errors) is
    reported in the stats' ``file_errors`` and skipped; the other files are not affected.
    Without a runner the files are ingested here, one after another (in a flow run, each file a
    task run of its own).
    """
    if runner is None:  # inside a flow run, each file a task run
        return IngestStats.total(stats for path in track(files, "ingest", "files")
                                 for stats in call_task(ingest_shard, paths=[path], out=out, io_retries=io_retries))
    shards = plan_shards(files, worker_slots(runner))
    futures = runner.map(ingest_shard, {"paths": [[item.path for item in shard] for shard in shards],
                                        "pieces": [[[item.k, item.n] for item in shard] for shard in shards],
                                        "out": unmapped(out), "io_retries": unmapped(io_retries)})
    pieces = [item for shard in shards for item in shard if item.n > 1]
    show_progress(futures, "ingest", f"shards of {len(files)} WARC file(s)" + (
        f" ({len(pieces)} pieces of {_files(len({item.path for item in pieces}))})" if pieces else ""))
    results: list[IngestStats] = []
    cut: dict[str, list[IngestStats]] = {}
    for shard, future in zip(shards, futures):
        outcome = future.result(raise_on_failure=False)
        if full_disk_error(outcome) is not None:  # the output's disk, not the files: the stage stops
            raise full_disk_error(outcome)
        if not isinstance(outcome, list):  # the worker running the shard was lost: say so for each of its files
            outcome = [unreadable(item.path, f"not ingested: its task failed: {_reason(outcome)}") for item in shard]
        for item, stats in zip(shard, outcome):
            if item.n == 1:
                results.append(stats)
            else:
                cut.setdefault(item.path, []).append(stats)
    for path, pieces_read in cut.items():
        results.append(_finish_pieces(path, out, pieces_read))
    return IngestStats.total(results)


def _files(n: int) -> str:
    return f"{n} large file{'s' if n != 1 else ''}"


def _finish_pieces(path: str, out: str, pieces: list[IngestStats]) -> IngestStats:
    """The stats of a file read in pieces: the file's, once every piece is in; else the file
    is unreadable, for the reasons its pieces gave."""
    unchanged = [stats for stats in pieces if stats.files_unchanged]
    if unchanged:  # ingested whole before: its first piece says so, the others read nothing
        return unchanged[0]
    failed = [error.reason for stats in pieces if not stats.parts for error in stats.file_errors]
    part = next((name for stats in pieces for name in stats.parts), None)
    try:
        done = None if failed or part is None else finish_pieces(path, out, len(pieces), part)
    except OSError as exc:
        if full_disk_error(exc) is not None:
            raise
        return unreadable(path, f"could not be read: {type(exc).__name__}: {exc}")
    if done is None:
        return unreadable(path, f"not ingested: a piece of it could not be read: {failed[0] if failed else 'missing'}")
    return done


def _reason(outcome: object) -> str:
    if isinstance(outcome, BaseException):
        return f"{type(outcome).__name__}: {outcome}"
    return str(outcome)


def dedup_stage(crawl: str, out: str, params: DedupParams = DedupParams(), verify: bool = False) -> StageOutput:
    """The optional dedup stage (strategy option ``dedup``): the crawl's pages and links with each
    near-duplicate cluster collapsed to one representative that gathers the copies' inlinks
    (simweb.tasks.dedup.collapse_duplicates). Its output folder is read like a crawl by the later stages."""
    inputs = crawl_identity(crawl)

    def compute(tmp: str) -> dict[str, Any]:
        return collapse_duplicates(crawl, tmp, params)

    return run_stage(stages_folder(out), STAGE_DEDUP, inputs, params, compute, verify=verify)


def bags_stage(runner, crawl: str, strategy: Strategy, out: str, partitions: int | None = None,
               verify: bool = False, part_mb: int = PART_MB, reuse_consumed: bool = False) -> StageOutput:
    """The bags stage (Section 6.1): its sub-stages (fragments, merge, weighting) run from this
    process, each a task run of its own in a flow run (simweb.flows.stage_runs), their parts on
    the flow's cluster — or, without a runner, on Dask's local scheduler.

    On a cluster of one worker thread the parts are computed here, one after another, as the
    scheduler would have it do anyway, without a round trip through the scheduler for each
    part. ``part_mb`` bounds each of its tasks' working memory (simweb.tasks.bags.sizes.PartSize).
    ``reuse_consumed``: see simweb.tasks.bags.stage.build_bags_stage.
    """
    if runner is not None and worker_slots(runner) == 1:
        return build_bags_stage(crawl, strategy, stages_folder(out), partitions, scheduler="sync", verify=verify,
                                part_mb=part_mb, reuse_consumed=reuse_consumed)
    with cluster_as_default(runner):  # the parts go to the flow's workers
        return build_bags_stage(crawl, strategy, stages_folder(out), partitions, verify=verify, part_mb=part_mb,
                                reuse_consumed=reuse_consumed)


def _signatures_key(bags: StageOutput, crawl: str, params: IndexParams, directory: str | None,
                    metric: Metric) -> tuple[dict[str, Any], dict[str, Any]]:
    """The inputs and parameters the signatures stage's output is keyed on."""
    inputs: dict[str, Any] = {"bags": bags, "crawl": crawl_identity(crawl)}
    if directory:
        inputs["directory"] = file_identities([directory])
    # The index format its files are written in (a signed folder of another format is not reused).
    stage_params: dict[str, Any] = {"minhash": params.minhash().to_dict(), "index_format": index_store.FORMAT_VERSION}
    if metric is not Metric.JACCARD:
        stage_params["metric"] = metric.value
    return inputs, stage_params


def signatures_stage(runner, bags: StageOutput, crawl: str, params: IndexParams, out: str,
                     directory: str | None = None, verify: bool = False, metric: Metric = Metric.JACCARD) -> StageOutput:
    """m min-hash signatures per bag into H with the url ↔ doc map (Section 6.2); ``metric``
    (the strategy's) is how the index's queries order what the signatures find."""
    inputs, stage_params = _signatures_key(bags, crawl, params, directory, metric)

    def compute(tmp: str) -> dict[str, Any]:
        # On a cluster, two signing tasks a worker thread, each a shard of the parts: a task run
        # per part cost about as much orchestration as signing the part (~0.3 s at 100k pages).
        return signatures(bags.path, tmp, params.minhash(), pages=join(crawl, "pages"), links=join(crawl, "links"),
                          directory=directory, fan_out=None if runner is None else fan_out(runner),
                          metric=metric.value, tasks=None if runner is None else 2 * worker_slots(runner))

    return run_stage(stages_folder(out), STAGE_SIGNATURES, inputs, stage_params, compute, verify=verify)


def invert_stage(runner, signed: StageOutput, params: IndexParams, out: str, verify: bool = False) -> StageOutput:
    """I: for each position j, the documents sharing each signature value (Section 6.2)."""

    def compute(tmp: str) -> dict[str, Any]:
        return write_index_version(signed.path, tmp, min_in_degree=params.min_in_degree,
                      fan_out=None if runner is None else fan_out(runner))

    return run_stage(stages_folder(out), STAGE_INVERT, {"signed": signed},
                     {"min_in_degree": params.min_in_degree}, compute, verify=verify)


def publish_stage(version: StageOutput, out: str, verify: bool = False) -> str:
    """:func:`publish_index` as the stage ``publish`` (a task run of its own in a flow run,
    *Reused* when the version was live already); the live version folder."""
    before = _live(out)

    def describe(live: str) -> tuple[bool, dict[str, Any]]:
        return live == before, {"version": live, "index": out}

    return as_task_run(STAGE_PUBLISH, lambda: publish_index(version, out, verify), describe=describe)


def _live(out: str) -> str | None:
    try:
        return index_store.resolve(out)
    except (FileNotFoundError, index_store.IndexFormatError):
        return None


def publish_index(version: StageOutput, out: str, verify: bool = False) -> str:
    """Switch the index at ``out`` to ``version`` atomically; returns the live version folder.

    A version whose manifest equals the live one's is not published again, so re-running a
    finished build changes nothing — unless the live copy is damaged (its files' sizes, and
    with ``verify`` their SHA-256, against its manifest): then it is published anew.
    """
    current = _live(out)
    try:
        live = index_store.read_manifest(current) if current is not None else None
    except index_store.IndexFormatError:  # of an earlier format: the new version replaces it
        live = None
    if live is not None and live == index_store.read_manifest(version.path) \
            and not index_store.damage(current, digests=verify):
        return current
    return index_store.publish(version.path, out)


# ---------------------------------------------------------------------------------------------
# The chain


class NothingToIndex(Exception):
    """Every page's bag is empty under the build's strategy: there is nothing to sign, and an
    index of no document would answer nothing. Nothing is published (exit 4)."""

    def __init__(self, strategy: Strategy, stats: dict[str, Any]):
        self.strategy, self.stats = strategy, stats
        pages, links = int(stats.get("pages") or 0), int(stats.get("links") or 0)
        sources = {source.value for source in strategy.sources}
        why = []
        if sources & {"content", "anchor"}:
            why.append(f"every word of the pages{' and of their anchors' if 'anchor' in sources and links else ''} "
                       "is in the stoplist (simweb.core.text), which every strategy leaves out")
        if sources & {"anchor", "links", "outlinks"} and not links:
            why.append("no page links to another")
        if links and not sources & {"links", "outlinks"}:
            fix = "a strategy of the pages' links would index them (--strategy links)"
        elif not sources & {"content", "anchor"}:
            fix = "a strategy of the pages' words would index them (--strategy content)"
        else:
            fix = "no strategy can index these pages: check that the crawl holds the pages meant"
        super().__init__(
            f"nothing to index: under the strategy {strategy.spec()!r} the bag of every one of the {pages:,} pages "
            f"is empty ({'; '.join(why) or 'no term is left'}); no index was published; {fix}")


@dataclass(frozen=True)
class ChainResult:
    """The stage outputs of one run of the chain, and the live index version it published."""

    stages: dict[str, StageOutput]
    index: str | None

    def records(self) -> dict[str, dict[str, Any]]:
        """Per stage: its folder, whether it was reused, its stats (for a build's summary)."""
        return {name: {"path": s.path, "reused": s.reused, "stats": s.stats} for name, s in self.stages.items()}


def index_chain(runner, crawl: str, out: str, strategy: Strategy, params: IndexParams,
                directory: str | None = None, partitions: int | None = None,
                until: Literal["bags", "index"] = "index", verify: bool = False,
                part_mb: int = PART_MB) -> ChainResult:
    """The stages after ingest over the whole crawl folder ``crawl`` into the index folder ``out``.

    The caller holds the index folder's lock (simweb.tasks.layout.IndexLock). With ``verify``
    every reused output is checked by content (SHA-256), not only by size, and recomputed
    when damaged. ``part_mb`` bounds the working memory of each task of the bags stage.
    """
    stages: dict[str, StageOutput] = {}
    bag_crawl = crawl
    if strategy.dedup:
        # Dedup (beyond the paper, strategy option): one page per near-duplicate cluster.
        stages["dedup"] = dedup_stage(crawl, out, verify=verify)
        bag_crawl = stages["dedup"].path
    # Bags (Section 6.1): fragments -> merge by URL -> df, NMDF weighting, normalise. Once an
    # index has signed them the bags are consumed (the index keeps its own copy, in document
    # order): a later build that finds its signatures needs only their key, and one that must
    # sign again (another m, seed or directory) weighs them again from the merge.
    consumable = until == "index" and strategy.shares is None
    bags = stages["bags"] = bags_stage(runner, bag_crawl, strategy, out, partitions, verify, part_mb,
                                       reuse_consumed=consumable)
    if until == "bags":
        return ChainResult(stages, None)
    if not bags.stats.get("entries"):  # every bag empty: an index of nothing is not published
        raise NothingToIndex(strategy, bags.stats)
    if was_consumed(bags) and find(stages_folder(out), STAGE_SIGNATURES,
                                   *_signatures_key(bags, bag_crawl, params, directory, strategy.metric),
                                   verify=verify) is None:
        bags = stages["bags"] = bags_stage(runner, bag_crawl, strategy, out, partitions, verify, part_mb)
    # Signatures (Section 6.2): m min-hashes per bag -> H and the url <-> doc map.
    signed = stages["signatures"] = signatures_stage(runner, bags, bag_crawl, params, out, directory, verify,
                                                     metric=strategy.metric)
    # Invert (Section 6.2): H -> I, leaving low in-degree URLs out (Section 7.1).
    inverted = stages["invert"] = invert_stage(runner, signed, params, out, verify)
    # Publish: queries switch to the new index atomically; its df starts an epoch for
    # incremental updates (simweb.tasks.incremental).
    live = publish_stage(inverted, out, verify)
    if strategy.shares is None:  # shared bags have one df per source: they are rebuilt in full
        if was_consumed(bags) and not epoch_started(out, bags):  # the epoch's df comes from the bags
            bags = stages["bags"] = bags_stage(runner, bag_crawl, strategy, out, partitions, verify, part_mb)
        start_epoch(out, bags, params)
    if consumable:
        consume(bags)
    return ChainResult(stages, live)
