"""The stage chain of paper Figure 10, shared by the build-index and ingest-new-crawl flows.

    ingest → [dedup] → bags → signatures → invert → publish

(then the flows compute the related pages ahead: simweb.tasks.stages.related_table)

Each stage is cached by simweb.tasks.stagecache: keyed by the identity of what it reads and
its parameters, a finished stage is reused, so a re-run of a finished build does no work, a
changed strategy re-runs from the bags stage, and a run that failed in a late stage resumes
there. The published index (``OUT/versions/<name>`` and ``OUT/CURRENT``) is switched
atomically, so a query sees the old or the new index, never a mix. The chain takes the
flow's task runner (``runner``; None runs the same work in this process on Dask's local
scheduler, as tests and benchmarks do). The stages are simweb.tasks.stages', one module each;
here they are only ordered, and given the runner's cluster (simweb.flows.cluster.workers).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from simweb.core.markdown import md_block, md_code
from simweb.core.strategy import Strategy
from simweb.flows.cluster import workers
from simweb.tasks.ingest.stats import IngestStats
from simweb.tasks.options import RunOptions
from simweb.tasks.signatures import IndexParams
from simweb.tasks.stagecache import StageOutput, brief_stats
from simweb.tasks.stages.bags import IndexBags
from simweb.tasks.stages.dedup import dedup_stage
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
    on = workers(runner)
    stages: dict[str, StageOutput] = {}
    bag_crawl = crawl
    if strategy.dedup:
        # Dedup (beyond the paper, strategy option): one page per near-duplicate cluster.
        stages["dedup"] = dedup_stage(crawl, out, options=options)
        bag_crawl = stages["dedup"].path
    # Bags (Section 6.1): fragments -> merge by URL -> df, NMDF weighting, normalise; bags an
    # earlier build consumed once it had signed them are weighed again only where they are read.
    bags = IndexBags(bag_crawl, strategy, out, options, on=on, consumable=until == "index" and strategy.shares is None)
    stages["bags"] = bags.output
    if until == "bags":
        return ChainResult(stages, None)
    if not bags.output.stats.get("entries"):  # every bag empty: an index of nothing is not published
        raise NothingToIndex(strategy, bags.output.stats)
    stages["bags"] = bags.to_sign(lambda b: signed(b, bag_crawl, params, out, directory, strategy.metric, options))
    # Signatures (Section 6.2): m min-hashes per bag -> H and the url <-> doc map.
    signed_bags = stages["signatures"] = signatures_stage(
        stages["bags"], bag_crawl, params, out, directory, strategy.metric, options, on=on)
    # Invert (Section 6.2): H -> I, leaving low in-degree URLs out (Section 7.1).
    inverted = stages["invert"] = invert_stage(signed_bags, params, out, options, on=on)
    # Publish: queries switch to the new index atomically; its df starts an epoch for
    # incremental updates (simweb.tasks.incremental).
    live = publish_stage(inverted, out, options)
    stages["bags"] = bags.start_epoch(out, params)
    bags.release()
    return ChainResult(stages, live)
