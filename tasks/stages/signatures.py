"""The signatures stage (paper Section 6.2): m min-hash signatures per bag into H, with the
url ↔ doc map (simweb.tasks.signatures, which also says what its folder holds). Keyed by the
bags, the crawl's parts (titles and in-degrees), the directory file if one is given, the
min-hash parameters, the index format and the strategy's metric."""
from __future__ import annotations

from typing import Any

from simweb.core import fine
from simweb.core.strategy import Metric
from simweb.tasks import index_store
from simweb.tasks.crawl.parts import crawl_identity
from simweb.tasks.layout import stages_folder
from simweb.tasks.options import HERE, RunOptions, Workers
from simweb.tasks.signatures import IndexParams, signatures
from simweb.tasks.stagecache import StageOutput, file_identities, find, run_stage
from simweb.tasks.storage import join

NAME = "signatures"


def key(bags: StageOutput, crawl: str, params: IndexParams, directory: str | None,
        metric: Metric) -> tuple[dict[str, Any], dict[str, Any]]:
    """The inputs and parameters the signatures stage's output is keyed on."""
    inputs: dict[str, Any] = {"bags": bags, "crawl": crawl_identity(crawl)}
    if directory:
        inputs["directory"] = file_identities([directory])
    # The index format its files are written in (a signed folder of another format is not reused).
    stage_params: dict[str, Any] = {"minhash": params.minhash().to_dict(), "index_format": index_store.FORMAT_VERSION}
    if metric is not Metric.JACCARD:
        stage_params["metric"] = metric.value
    if metric is not Metric.OVERLAP:  # with the fine signatures (simweb.core.fine)
        stage_params["fine"] = {"m": fine.M, "darts": fine.DARTS}
    return inputs, stage_params


def signed(bags: StageOutput, crawl: str, params: IndexParams, out: str, directory: str | None = None,
           metric: Metric = Metric.JACCARD, options: RunOptions = RunOptions()) -> bool:
    """Whether the signatures of ``bags`` under these parameters are published whole in ``out``'s
    stages (checked as ``options`` say)."""
    return find(stages_folder(out), NAME, *key(bags, crawl, params, directory, metric),
                verify=options.verify) is not None


def signatures_stage(bags: StageOutput, crawl: str, params: IndexParams, out: str, directory: str | None = None,
                     metric: Metric = Metric.JACCARD, options: RunOptions = RunOptions(), *,
                     on: Workers = HERE) -> StageOutput:
    """m min-hash signatures per bag into H with the url ↔ doc map (Section 6.2), a reused one
    checked as ``options`` say; ``metric`` (the strategy's) is how the index's queries order what
    the signatures find. On a cluster
    (``on``), two signing tasks a worker thread, each a shard of the parts: a task run per part
    cost about as much orchestration as signing the part (~0.3 s at 100k pages); see
    simweb.tasks.signatures.signatures."""
    inputs, stage_params = key(bags, crawl, params, directory, metric)
    tasks = None if on.slots is None else 2 * on.slots

    def compute(tmp: str) -> dict[str, Any]:
        return signatures(bags.path, tmp, params.minhash(), pages=join(crawl, "pages"), links=join(crawl, "links"),
                          directory=directory, fan_out=on.fan_out, metric=metric.value, tasks=tasks)

    return run_stage(stages_folder(out), NAME, inputs, stage_params, compute, verify=options.verify)
