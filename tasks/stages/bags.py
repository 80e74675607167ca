"""The bags stage as an index build runs it (paper Section 6.1). Its three sub-stages — fragments,
merge, weighting — are simweb.tasks.bags.stage's (their names, keys and compute), and
simweb.tasks.bag_reader reads what they publish; here: where a build keeps them (the index
folder's stages) and the bags an earlier build consumed.

Once an index has signed them the bags are consumed (the index keeps its own copy, in document
order; simweb.tasks.stagecache.consume): a later build that finds its signatures needs only their
key, and one that must sign again (another m, seed or directory), or start a df epoch from them
(simweb.tasks.incremental), weighs them again from the merge.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from simweb.core.strategy import Strategy
from simweb.tasks.bags.stage import build_bags_stage
from simweb.tasks.incremental import epoch_started, start_epoch
from simweb.tasks.layout import stages_folder
from simweb.tasks.options import HERE, RunOptions, Workers
from simweb.tasks.signatures import IndexParams
from simweb.tasks.stagecache import StageOutput, consume, was_consumed


def bags_stage(crawl: str, strategy: Strategy, out: str, options: RunOptions = RunOptions(), *,
               scheduler: Any = None, reuse_consumed: bool = False) -> StageOutput:
    """The weighted bags of ``crawl`` under ``strategy`` (built or reused) in the index folder
    ``out``'s stages, cut and checked as ``options`` say; ``scheduler`` as for
    simweb.tasks.bags.stage.build_bags_stage, which says what the other parameters do."""
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
