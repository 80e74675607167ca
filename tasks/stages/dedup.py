"""The optional dedup stage (strategy option ``dedup``, beyond the paper): the crawl's pages and
links with each near-duplicate cluster collapsed to one representative that gathers the copies'
inlinks (simweb.tasks.dedup.collapse_duplicates). Its output folder is a crawl folder: the later
stages read it as they read the crawl (simweb.tasks.crawl)."""
from __future__ import annotations

from typing import Any

from simweb.tasks.crawl.parts import crawl_identity
from simweb.tasks.dedup import DedupParams, collapse_duplicates
from simweb.tasks.layout import stages_folder
from simweb.tasks.options import RunOptions
from simweb.tasks.stagecache import StageOutput, run_stage

NAME = "dedup"


def dedup_stage(crawl: str, out: str, params: DedupParams = DedupParams(),
                options: RunOptions = RunOptions()) -> StageOutput:
    """The crawl ``crawl`` deduplicated (built or reused) under the index folder ``out``'s stages,
    a reused one checked as ``options`` say; keyed by the crawl's parts and ``params``."""
    inputs = crawl_identity(crawl)

    def compute(tmp: str) -> dict[str, Any]:
        return collapse_duplicates(crawl, tmp, params)

    return run_stage(stages_folder(out), NAME, inputs, params, compute, verify=options.verify)
