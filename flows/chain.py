"""The stage chain of paper Figure 10, shared by the build-index and ingest-new-crawl flows.

    ingest → [dedup] → bags → signatures → invert → publish

Each stage is cached by simweb.tasks.stagecache: keyed by the identity of what it reads and
its parameters, a finished stage is reused, so a re-run of a finished build does no work, a
changed strategy re-runs from the bags stage, and a run that failed in a late stage resumes
there. The published index (``OUT/versions/<name>`` and ``OUT/CURRENT``) is switched
atomically, so a query sees the old or the new index, never a mix. Every stage takes the
flow's task runner (``runner``; None runs the same work in this process on Dask's local
scheduler, as tests and benchmarks do). The stages after the ingest are simweb.tasks.stages',
one module each; here they are only ordered, and given the runner's cluster.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from prefect import unmapped

from simweb.core.markdown import md_block, md_code
from simweb.core.strategy import Strategy
from simweb.flows.cluster import call_task, cluster_as_default, fan_out, show_progress, worker_slots
from simweb.tasks.ingest.shards import plan_shards
from simweb.tasks.ingest.stats import IngestStats
from simweb.tasks.ingest.task import ingest_shard
from simweb.tasks.options import RunOptions
from simweb.tasks.progress import track
from simweb.tasks.signatures import IndexParams
from simweb.tasks.stagecache import StageOutput, brief_stats
from simweb.tasks.stages.bags import IndexBags, bags_stage
from simweb.tasks.stages.dedup import dedup_stage
from simweb.tasks.stages.ingest import ingested, large_files
from simweb.tasks.stages.invert import invert_stage
from simweb.tasks.stages.publish import publish_stage
from simweb.tasks.stages.signatures import signatures_stage, signed


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
        f" ({len(pieces)} pieces of {large_files(len({item.path for item in pieces}))})" if pieces else ""))
    return ingested(shards, [future.result(raise_on_failure=False) for future in futures], out)


def bags_on(runner, crawl: str, strategy: Strategy, out: str,
            options: RunOptions = RunOptions()) -> Callable[[bool], StageOutput]:
    """``run(reuse_consumed)`` of the bags stage (simweb.tasks.stages.bags) on the flow's runner:
    its sub-stages run from this process, each a task run of its own in a flow run
    (simweb.flows.stage_runs), their parts on the flow's cluster — or, without a runner, on
    Dask's local scheduler. On a cluster of one worker thread the parts are computed here, one
    after another, as the scheduler would have it do anyway, without a round trip through the
    scheduler for each part."""

    def run(reuse_consumed: bool = False) -> StageOutput:
        knobs = {"verify": options.verify, "part_mb": options.part_mb, "reuse_consumed": reuse_consumed}
        if runner is not None and worker_slots(runner) == 1:
            return bags_stage(crawl, strategy, out, options.partitions, scheduler="sync", **knobs)
        with cluster_as_default(runner):  # the parts go to the flow's workers
            return bags_stage(crawl, strategy, out, options.partitions, **knobs)

    return run


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
                directory: str | None = None, until: Literal["bags", "index"] = "index", *,
                options: RunOptions = RunOptions()) -> ChainResult:
    """The stages after ingest over the whole crawl folder ``crawl`` into the index folder ``out``,
    cut and checked as ``options`` say (simweb.tasks.options.RunOptions).

    The caller holds the index folder's lock (simweb.tasks.layout.IndexLock).
    """
    verify = options.verify
    stages: dict[str, StageOutput] = {}
    bag_crawl = crawl
    if strategy.dedup:
        # Dedup (beyond the paper, strategy option): one page per near-duplicate cluster.
        stages["dedup"] = dedup_stage(crawl, out, verify=verify)
        bag_crawl = stages["dedup"].path
    # Bags (Section 6.1): fragments -> merge by URL -> df, NMDF weighting, normalise; bags an
    # earlier build consumed once it had signed them are weighed again only where they are read.
    bags = IndexBags(bags_on(runner, bag_crawl, strategy, out, options), strategy,
                     consumable=until == "index" and strategy.shares is None)
    stages["bags"] = bags.output
    if until == "bags":
        return ChainResult(stages, None)
    if not bags.output.stats.get("entries"):  # every bag empty: an index of nothing is not published
        raise NothingToIndex(strategy, bags.output.stats)
    stages["bags"] = bags.to_sign(lambda b: signed(b, bag_crawl, params, out, directory, strategy.metric, verify))
    # Signatures (Section 6.2): m min-hashes per bag -> H and the url <-> doc map. On a cluster, two
    # signing tasks a worker thread, each a shard of the parts: a task run per part cost about as
    # much orchestration as signing the part (~0.3 s at 100k pages).
    signed_bags = stages["signatures"] = signatures_stage(
        stages["bags"], bag_crawl, params, out, directory, verify, strategy.metric,
        fan_out=None if runner is None else fan_out(runner), tasks=None if runner is None else 2 * worker_slots(runner))
    # Invert (Section 6.2): H -> I, leaving low in-degree URLs out (Section 7.1).
    inverted = stages["invert"] = invert_stage(signed_bags, params, out, verify,
                                               fan_out=None if runner is None else fan_out(runner))
    # Publish: queries switch to the new index atomically; its df starts an epoch for
    # incremental updates (simweb.tasks.incremental).
    live = publish_stage(inverted, out, verify)
    stages["bags"] = bags.start_epoch(out, params)
    bags.release()
    return ChainResult(stages, live)
