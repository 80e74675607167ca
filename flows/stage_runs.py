"""Each stage of a flow run is a Prefect task run of its own: the run page is the map.

Inside a flow run (``with stage_task_runs():`` around its stages), every stage the stage cache
runs or finds — bag-fragments, bag-merge, bags (the weighting), signatures, invert, dedup, the
incremental update's delta stages — and the publish step appear in the run graph as a task run
named after the stage, run in the flow's process: its state (*Completed*; *Reused* when its
output was found whole and nothing was computed; *Failed*, the red one, when it raised), its
duration, and an artifact (key ``stage-<name>``) with its figures — what it read, wrote and
skipped, and its folder. The stage's own parts still run on the flow's Dask cluster (task runs
of their own, under it). Stages are deterministic compute, so a task run is not retried
(STYLE.md habit 10): the flow run is retried whole — the UI's Retry — and its finished stages
are reused. Outside a flow run (``flow.fn``) a stage is a plain call.
"""
from __future__ import annotations

import contextlib
import uuid
from collections.abc import Callable, Iterator
from typing import Any

from prefect import task
from prefect.cache_policies import NO_CACHE
from prefect.states import Completed, State

from simweb.core.markdown import md_text
from simweb.flows.cluster import in_flow_run
from simweb.tasks.stagecache import STAGE_RUN, StageOutput, brief_stats

#: The state name of a task run whose stage was found whole (a state of type COMPLETED).
REUSED = "Reused"


#: The work of the stage task runs in progress, by a key of this process. A task run's parameters
#: travel with every task it submits to the cluster (Prefect's task-run context is serialised into
#: each), so the stage's closures — which hold the flow's runner, its client and context
#: variables, nothing a worker can unpickle or needs — are found here by the key alone.
_WORK: dict[str, tuple[Callable[[], Any], Callable[[Any], tuple[bool, dict[str, Any]]]]] = {}


def stage_work(stage: str, work: str) -> State:
    """The body of a stage's task run: the work ``_WORK[work]`` registered, its figures published."""
    run, describe = _WORK[work]
    token = STAGE_RUN.set(None)  # what the stage runs inside itself is part of it
    try:
        value = run()
    finally:
        STAGE_RUN.reset(token)
    reused, figures = describe(value)
    _publish_figures(stage, reused, figures)
    what = "reused: its output was found whole" if reused else "computed"
    return Completed(name=REUSED if reused else "Completed", message=f"{stage} {what}; {brief_stats(figures)}",
                     data=value)


# The task's function is a module attribute of its own name, so that a worker (and every task a
# stage submits to the cluster, whose context names the stage's task) unpickles it by reference.
_stage = task(name="stage", retries=0, cache_policy=NO_CACHE, persist_result=False)(stage_work)


def _describe_output(output: StageOutput) -> tuple[bool, dict[str, Any]]:
    return output.reused, {**output.stats, "folder": output.path}


def as_task_run(stage: str, run: Callable[[], Any], label: str | None = None,
                describe: Callable[[Any], tuple[bool, dict[str, Any]]] = _describe_output) -> Any:
    """``run()`` as the task run ``stage`` (``stage (label)`` when a label says what it is about)
    inside a flow run, else as a plain call; its value. ``describe(value)`` gives (reused?, figures)."""
    if not in_flow_run():
        return run()
    name = f"{stage} ({label})" if label else stage
    work = f"{stage}-{uuid.uuid4().hex}"
    _WORK[work] = (run, describe)
    try:
        state = _stage.with_options(name=stage, task_run_name=name)(stage, work)
    finally:
        del _WORK[work]
    return state.result() if isinstance(state, State) else state


@contextlib.contextmanager
def stage_task_runs() -> Iterator[None]:
    """Within it, inside a flow run, every stage the stage cache runs is a task run of its own."""
    if not in_flow_run():
        yield
        return
    token = STAGE_RUN.set(lambda stage, label, run, describe=_describe_output: as_task_run(stage, run, label, describe))
    try:
        yield
    finally:
        STAGE_RUN.reset(token)


def _publish_figures(stage: str, reused: bool, figures: dict[str, Any]) -> None:
    """The stage's figures as a markdown table on its task run (the run page's Artifacts tab)."""
    from prefect.artifacts import create_markdown_artifact

    rows = [("state", REUSED.lower() if reused else "computed")]
    for name, value in figures.items():
        if isinstance(value, dict):
            value = ", ".join(f"{k} {v}" for k, v in value.items() if not isinstance(v, (dict, list)))
        elif isinstance(value, list):
            value = ", ".join(map(str, value))
        rows.append((name.replace("_", " "), f"{value:,}" if isinstance(value, int) and not isinstance(value, bool)
                     else str(value)))
    # Values are the crawl's and the run's (paths, labels): text, never markup.
    table = "\n".join(f"| {md_text(name)} | {md_text(value)} |" for name, value in rows)
    create_markdown_artifact(markdown=f"# {md_text(stage)}\n\n| figure | value |\n|---|---|\n{table}\n",
                             key=f"stage-{stage}", description=f"the {stage} stage's figures")
