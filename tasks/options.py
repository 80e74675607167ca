"""What a flow hands the stages, built from its parameters and its task runner and passed down as
two records (STYLE.md habit 19): :class:`RunOptions`, how the work is cut and how much of what is
reused is checked — none of them changes the index a build publishes — and :class:`Workers`, where
the stages' tasks run."""
from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from typing import Any

from simweb.tasks.bags.sizes import PART_MB


@dataclass(frozen=True, slots=True)
class RunOptions:
    """``verify``: every reused stage output and the live index checked by content (SHA-256), not
    only by size, and recomputed when damaged. ``part_mb``: the working memory of each task of the
    bags stage (simweb.tasks.bags.sizes.PartSize). ``partitions``: the bags stage's merge
    partitions (None: as many as ``part_mb`` takes). ``io_retries``: how often an archive file that
    could not be read (a transient I/O error) is tried again by the ingest."""

    verify: bool = False
    part_mb: int = PART_MB
    partitions: int | None = None
    io_retries: int = 3


def _plain_call(task: Any, **parameters: Any) -> Any:
    return task.fn(**parameters)


@dataclass(frozen=True, slots=True)
class Workers:
    """Where the stages' tasks run: the flow's Dask cluster, as simweb.flows.cluster.workers builds
    it from the flow's task runner, or — the default, :data:`HERE` — this process, on Dask's local
    scheduler.

    ``slots``: how many tasks the cluster runs at once (None: there is no cluster).
    ``fan_out(task, calls)``: the Prefect ``task`` once per keyword dict of ``calls`` on the
    cluster, the results in order (a failure raises).
    ``map(task, calls, stage, what)``: the same, each call a task on the cluster, its progress shown
    as ``stage``'s ``what``, and each call's outcome — its result, or what its failure left.
    ``call(task, **parameters)``: the ``task`` here (a task run of its own inside a flow run).
    ``as_default()``: a context within which ``dask.compute`` in this thread runs on the cluster.
    """

    slots: int | None = None
    fan_out: Callable[[Any, Sequence[dict[str, Any]]], list[Any]] | None = None
    map: Callable[[Any, Sequence[dict[str, Any]], str, str], list[Any]] | None = None
    call: Callable[..., Any] = _plain_call
    as_default: Callable[[], AbstractContextManager] = nullcontext


#: No cluster: every stage runs its work in this process.
HERE = Workers()


def run_calls(fan_out: Callable[[Any, Sequence[dict[str, Any]]], list[Any]] | None, task: Any,
              calls: Sequence[dict[str, Any]]) -> list[Any]:
    """Run the Prefect ``task``'s function once per keyword dict of ``calls``: through
    ``fan_out(task, calls)`` (a flow's fan-out over its Dask cluster, simweb.flows.cluster), or
    without one on Dask's local scheduler (one call: here, in this process)."""
    if fan_out is not None:
        return fan_out(task, calls)
    if len(calls) <= 1:
        return [task.fn(**c) for c in calls]
    import dask

    return list(dask.compute(*[dask.delayed(task.fn, pure=False)(**c) for c in calls]))
