"""The index-building stages after ingest, each cached by simweb.tasks.stagecache (paper Figure 10).

bags → signatures → invert → publish. Every stage is keyed by the identity of what it reads
and its parameters: a finished stage is reused, so a re-run of a finished build does no work,
a changed strategy re-runs from the bags stage, and a run that failed in a late stage resumes
there. The published index (``INDEX/versions/<name>`` and ``INDEX/CURRENT``) is switched
atomically, so a query sees the old or the new index, never a mix.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from simweb.core.minhash import MinHashParams
from simweb.core.strategy import Strategy
from simweb.tasks import index_store
from simweb.tasks.ingest import IngestStats
from simweb.tasks.bags import bags_task, build_bags_stage
from simweb.tasks.dedup import DedupParams, collapse_duplicates
from simweb.tasks.signatures import invert, signatures
from simweb.tasks.stagecache import StageOutput, file_identities, run_stage
from simweb.tasks.storage import join, parts

STAGE_DEDUP = "dedup"
STAGE_SIGNATURES = "signatures"
STAGE_INVERT = "invert"
#: The module every worker of the flows' local Dask clusters imports as it starts.
WORKER_PRELOAD = "simweb.tasks.worker_preload"


def available_cores() -> int:
    """CPU cores this process may use (its affinity mask, not the machine's total)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def worker_slots(runner) -> int:
    """How many tasks ``runner`` (a Prefect task runner) runs at once: its Dask cluster's
    worker threads, a thread pool's size, or this machine's cores."""
    client = getattr(runner, "_client", None)
    if client is not None:
        try:
            return max(1, sum(client.nthreads().values()))
        except Exception:  # noqa: BLE001 — a scheduler that does not answer: plan for this machine
            pass
    threads = getattr(runner, "_max_workers", None)  # a thread pool: unbounded by default
    return max(1, min(int(threads or available_cores()), available_cores()))


@dataclass(frozen=True, slots=True)
class IndexParams:
    """Knobs of the signatures and invert stages (Sections 6.2 and 7.1)."""

    m: int = 80
    seed: int = 1
    algorithm: str = "icws"
    min_in_degree: int | None = 3

    def minhash(self) -> MinHashParams:
        return MinHashParams(m=self.m, seed=self.seed, algorithm=self.algorithm)


@dataclass(frozen=True)
class BuildSummary:
    """What a build read, wrote, skipped and reused, stage by stage."""

    ingest: IngestStats
    stages: dict[str, dict[str, Any]] = field(default_factory=dict)
    index: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"ingest": self.ingest.to_dict(), "stages": self.stages, "index": self.index}

    def summary(self) -> str:
        lines = [self.ingest.summary()]
        for name, info in self.stages.items():
            how = "reused" if info.get("reused") else "computed"
            stats = info.get("stats", {})
            brief = ", ".join(f"{k} {v}" for k, v in stats.items() if isinstance(v, (int, float)) and not isinstance(v, bool))
            lines.append(f"stage {name}: {how}; {brief}")
        if self.index:
            lines.append(f"index published at {self.index}")
        return "\n".join(line for line in lines if line)


def crawl_folder(out: str) -> str:
    """Where a build keeps the ingest output (pages/, links/, stats/) of its crawl."""
    return join(out, "crawl")


def stages_folder(out: str) -> str:
    return join(out, "stages")


def dedup_stage(crawl: str, out: str, params: DedupParams = DedupParams()) -> StageOutput:
    """The optional dedup stage (strategy option ``dedup``): the crawl's pages and links with each
    near-duplicate cluster collapsed to one representative that gathers the copies' inlinks
    (simweb.tasks.dedup.collapse_duplicates). Its output folder is read like a crawl by the later stages."""
    inputs = {"pages": file_identities(parts(join(crawl, "pages"))),
              "links": file_identities(parts(join(crawl, "links")))}

    def compute(tmp: str) -> dict[str, Any]:
        return collapse_duplicates(crawl, tmp, params)

    return run_stage(stages_folder(out), STAGE_DEDUP, inputs, params, compute)


def bags_stage(runner, crawl: str, strategy: Strategy, out: str, partitions: int | None = None) -> StageOutput:
    """The bags stage (Section 6.1) as one task on the flow's cluster, or in-process without a runner.

    On a cluster of more than one worker thread the task hands its parts to the cluster; on a
    cluster of one it computes them itself, one after another, as the scheduler would have
    it do anyway, without a round trip through the scheduler for each part.
    """
    if runner is None:
        return build_bags_stage(crawl, strategy, stages_folder(out), partitions)
    in_task = worker_slots(runner) == 1
    return runner.submit(bags_task, parameters={"crawl_dir": crawl, "strategy": strategy,
                                                "out_dir": stages_folder(out), "partitions": partitions,
                                                "in_task": in_task}).result()


def signatures_stage(runner, bags: StageOutput, crawl: str, params: IndexParams, out: str,
                     directory: str | None = None) -> StageOutput:
    """m min-hash signatures per bag into H with the url ↔ doc map (Section 6.2)."""
    inputs: dict[str, Any] = {"bags": bags, "links": file_identities(parts(join(crawl, "links")))}
    if directory:
        inputs["directory"] = file_identities([directory])

    def compute(tmp: str) -> dict[str, Any]:
        return signatures(bags.path, tmp, params.minhash(), pages=join(crawl, "pages"),
                          links=join(crawl, "links"), directory=directory, runner=runner)

    return run_stage(stages_folder(out), STAGE_SIGNATURES, inputs, {"minhash": params.minhash().to_dict()}, compute)


def invert_stage(runner, signed: StageOutput, params: IndexParams, out: str) -> StageOutput:
    """I: for each position j, the documents sharing each signature value (Section 6.2)."""

    def compute(tmp: str) -> dict[str, Any]:
        return invert(signed.path, tmp, min_in_degree=params.min_in_degree, runner=runner)

    return run_stage(stages_folder(out), STAGE_INVERT, {"signed": signed},
                     {"min_in_degree": params.min_in_degree}, compute)


def publish_index(version: StageOutput, out: str) -> str:
    """Switch the index at ``out`` to ``version`` atomically; returns the live version folder.

    A version whose manifest equals the live one's is not published again, so re-running a
    finished build changes nothing.
    """
    try:
        current = index_store.resolve(out)
    except (FileNotFoundError, index_store.IndexFormatError):
        current = None
    if current is not None and index_store.read_manifest(current) == index_store.read_manifest(version.path):
        return current
    return index_store.publish(version.path, out)
