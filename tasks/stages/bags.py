"""The bags stage (paper Section 6.1): pages + links → one weighted bag per URL, its three cached
sub-stages in order — :mod:`.fragments`, :mod:`.merge`, :mod:`.weighting`, one module each (their
names, keys and compute; simweb.tasks.bags says what their files hold) — built or reused; and the
bags an earlier build consumed. simweb.tasks.bag_reader reads what the stage publishes.

Once an index has signed them the bags are consumed (the index keeps its own copy, in document
order; simweb.tasks.stagecache.consume): a later build that finds its signatures needs only their
key, and one that must sign again (another m, seed or directory), or start a df epoch from them
(simweb.tasks.incremental), weighs them again from the merge.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from simweb.core.strategy import Strategy
from simweb.tasks.bags.df import DfSnapshot
from simweb.tasks.bags.sizes import PART_MB
from simweb.tasks.incremental import epoch_started, start_epoch
from simweb.tasks.layout import stages_folder
from simweb.tasks.options import HERE, RunOptions, Workers
from simweb.tasks.signatures import IndexParams
from simweb.tasks.stagecache import StageOutput, announce_reused, consume, recorded, run_stage, was_consumed
from simweb.tasks.stages import weighting
from simweb.tasks.stages.merge import merge_stages


def as_strategy(strategy: Strategy | dict | str) -> Strategy:
    if isinstance(strategy, Strategy):
        return strategy
    return Strategy.from_dict(strategy) if isinstance(strategy, dict) else Strategy.parse(str(strategy))


def build_bags_stage(crawl_dir: str, strategy: Strategy, out_dir: str, partitions: int | None = None, *,
                     scheduler: Any = None, df_snapshot: DfSnapshot | None = None,
                     verify: bool = False, part_mb: int = PART_MB, reuse_consumed: bool = False) -> StageOutput:
    """Build (or reuse) the weighted bags of the crawl in ``crawl_dir`` under ``strategy`` (Section 6.1).

    ``crawl_dir`` holds the ingest output (``pages/`` and ``links/`` parts). Results go under
    ``out_dir`` (simweb.tasks.bags says where); the returned :class:`StageOutput` names the BAGS
    folder, its stats (pages, links, duplicates and self-links skipped, bags, entries,
    vocabulary, fitted NMDF μ and σ, seconds per sub-stage) and whether it was reused.
    ``part_mb`` bounds the working memory of each task (simweb.tasks.bags.sizes.PartSize): parts
    are read in slices, and the merge is cut into as many partitions P as that takes, unless
    ``partitions`` names P. ``scheduler`` is passed to ``dask.compute`` (a distributed Client,
    "threads", "processes", "sync"); by default the current Dask client or Dask's local scheduler.
    ``df_snapshot`` weighs with a frozen df and weighting (an incremental index's epoch, see
    tasks/incremental.py) instead of the collection's own: terms it does not know count df 1.
    ``verify`` checks reused sub-stage outputs by content, not only by size (stagecache.output_damage).
    Neither ``part_mb`` nor ``partitions`` is part of a sub-stage's key: they cut the work, the
    bags are the same. With ``reuse_consumed``, bags that an index build consumed once it had
    signed them (:class:`IndexBags`) are returned as their manifest records them — key and
    stats, no files — for a caller that only needs to name them; otherwise they are weighed again.
    """
    strategy = as_strategy(strategy)
    if strategy.shares is not None:  # each source's bags, then their share-weighted sum
        from simweb.tasks.bag_shares import build_shared_bags_stage

        return build_shared_bags_stage(crawl_dir, strategy, out_dir, partitions, scheduler=scheduler, verify=verify,
                                       part_mb=part_mb, df_snapshot=df_snapshot)
    stages = merge_stages(crawl_dir, strategy, out_dir, partitions, scheduler=scheduler, verify=verify,
                          part_mb=part_mb)
    inputs, params = weighting.key(stages.merged, strategy, df_snapshot)
    if reuse_consumed:
        known = recorded(out_dir, weighting.NAME, inputs, params)
        if known is not None and was_consumed(known):
            return announce_reused(weighting.NAME, known)

    def weigh(tmp: str) -> dict[str, Any]:
        return weighting.weigh_merged_parts(stages, strategy, df_snapshot, scheduler, tmp)

    return run_stage(out_dir, weighting.NAME, inputs, params, weigh, verify=verify)


def bags_stage(crawl: str, strategy: Strategy, out: str, options: RunOptions = RunOptions(), *,
               scheduler: Any = None, reuse_consumed: bool = False) -> StageOutput:
    """The weighted bags of ``crawl`` under ``strategy`` (built or reused) in the index folder
    ``out``'s stages, cut and checked as ``options`` say; ``scheduler`` and ``reuse_consumed`` as
    for :func:`build_bags_stage`."""
    return build_bags_stage(crawl, strategy, stages_folder(out), options.partitions, scheduler=scheduler,
                            verify=options.verify, part_mb=options.part_mb, reuse_consumed=reuse_consumed)


class IndexBags:
    """The bags of one index build of ``crawl`` under ``strategy`` into the index folder ``out``,
    built on the workers ``on``: its sub-stages run from this process, each a task run of its own in
    a flow run (simweb.tasks.stagecache.STAGE_RUN), their parts on the flow's cluster — or, without
    one, on Dask's local scheduler. On a cluster of one worker thread the parts are computed here,
    one after another, as the scheduler would have it do anyway, without a round trip through the
    scheduler for each part.

    With ``consumable`` (a build through to the index of bags without source shares) bags consumed
    by an earlier build are taken by their record alone, weighed again only where their files are
    read, and consumed again once the index is published (:meth:`release`)."""

    def __init__(self, crawl: str, strategy: Strategy, out: str, options: RunOptions = RunOptions(), *,
                 on: Workers = HERE, consumable: bool = False):
        self._crawl, self._strategy, self._out, self._options, self._on = crawl, strategy, out, options, on
        self._consumable = consumable
        self.output = self._run(consumable)

    def _run(self, reuse_consumed: bool) -> StageOutput:
        if self._on.slots == 1:
            return bags_stage(self._crawl, self._strategy, self._out, self._options, scheduler="sync",
                              reuse_consumed=reuse_consumed)
        with self._on.as_default():  # the parts go to the flow's workers
            return bags_stage(self._crawl, self._strategy, self._out, self._options, reuse_consumed=reuse_consumed)

    def to_sign(self, signed: Callable[[StageOutput], bool]) -> StageOutput:
        """The bags the signatures stage reads: weighed again if they were consumed and
        ``signed(bags)`` finds no signatures of them to reuse."""
        if was_consumed(self.output) and not signed(self.output):
            self.output = self._run(False)
        return self.output

    def start_epoch(self, out: str, params: IndexParams) -> StageOutput:
        """Start a df epoch of the index at ``out`` from the bags (simweb.tasks.incremental), weighed
        again if they were consumed and the epoch is not started yet. Bags of source shares have
        one df per source: they start none (an update rebuilds them in full)."""
        if self._strategy.shares is None:
            if was_consumed(self.output) and not epoch_started(out, self.output):
                self.output = self._run(False)
            start_epoch(out, self.output, params)
        return self.output

    def release(self) -> None:
        """Consume the bags once the index holds its own copy of them."""
        if self._consumable:
            consume(self.output)
