"""The Dask cluster the flows run their tasks on, and how a stage fans its tasks out on it.

Every flow runs on one Dask cluster: a temporary LocalCluster sized to this machine, or the
scheduler at ``dask_address`` — whose workers must be able to read the crawl, read and write the
build's work folder (the flow's ``work``: a shared file system or an fsspec URL such as ``s3://``)
and reach the Prefect API (``PREFECT_API_URL``). The unit of a task is a WARC file shard, a data part or a stage,
never a record: a Prefect task run costs a few hundred milliseconds on a worker (DESIGN.md).
"""
from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Callable, Iterator, Sequence
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from distributed import LocalCluster
from prefect.context import FlowRunContext
from prefect.futures import as_completed
from prefect_dask import DaskTaskRunner

from simweb.tasks.logs import run_logger
from simweb.tasks.options import Workers
from simweb.tasks.progress import progress

#: The module every worker of the flows' local Dask clusters imports as it starts.
WORKER_PRELOAD = "simweb.tasks.worker_preload"


def available_cores() -> int:
    """CPU cores this process may use (its affinity mask, not the machine's total)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def dask_task_runner(dask_address: str | None = None, n_workers: int | None = None) -> DaskTaskRunner:
    """A Dask task runner: the scheduler at ``dask_address``, or a temporary LocalCluster.

    The local cluster has ``n_workers`` single-threaded worker processes (default: one per
    available core), since parsing HTML is pure Python and holds the GIL; each imports
    the stage modules as it starts (``simweb.tasks.worker_preload``). A cluster of one worker is
    a worker thread in this process instead: the same parallelism, without the seconds a
    new process takes to start and import Prefect and the stage modules. Its workers are
    pointed at the Prefect API this flow reports to; without that, a flow run on Prefect's
    temporary local server would have each worker process start a server of its own. The
    workers of an existing cluster need ``PREFECT_API_URL`` set where they run.
    """
    quiet_dask_logging()
    if dask_address:
        if n_workers is not None:
            raise ValueError(
                "n_workers sizes a local Dask cluster, but dask_address names an existing one; "
                "give one or the other"
            )
        return DaskTaskRunner(address=dask_address)
    if n_workers is not None and n_workers < 1:
        raise ValueError(f"n_workers: expected at least 1 worker, got {n_workers}")
    workers = n_workers or available_cores()
    # The dashboard listens on this machine only, on a free port (8787 may be taken by another
    # run's cluster, and Dask would warn about it).
    dashboard = {"dashboard_address": "127.0.0.1:0"}
    if workers == 1:
        # One worker thread in this process: the same parallelism as a worker process, without
        # starting one and importing Prefect and the stage modules into it. (Its scheduler and
        # worker talk in memory: no socket to bind. The worker's own HTTP server, which would
        # listen on every interface, listens on this machine only too.)
        return DaskTaskRunner(cluster_kwargs={"n_workers": 1, "threads_per_worker": 1, "processes": False,
                                              "worker_dashboard_address": "127.0.0.1:0", **dashboard})
    cluster_kwargs = {
        **dashboard,
        "host": "127.0.0.1",  # the scheduler and the workers listen on this machine only
        "n_workers": workers,
        "threads_per_worker": 1,
        "processes": True,
        # Each worker imports the stage modules as it starts, not inside its first tasks.
        "preload": [WORKER_PRELOAD],
    }
    # The workers' task-run lines go to the Prefect API (the UI and the flow's log show them);
    # on the terminal they share with the flow, only their warnings: their INFO lines would be
    # printed through the flow's progress bar, which the workers cannot see.
    env = {"PREFECT_LOGGING_HANDLERS_CONSOLE_LEVEL": "WARNING"}
    api_url = _prefect_api_url()
    if api_url:
        env["PREFECT_API_URL"] = api_url
    cluster_kwargs["env"] = env
    return DaskTaskRunner(cluster_kwargs=cluster_kwargs)


class _DaskNoise(logging.Filter):
    """Drops Dask's log lines that tell a user nothing: a P2P shuffle's start and end (the
    bags stage shuffles on every build), a worker process killed as its cluster closes, and one
    restarted by :func:`fresh_workers` (whose own line says why)."""

    NOISE = ("Shuffle ", "Worker process still alive", "Restarting worker")

    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith(self.NOISE)


_NOISY_DASK_LOGGERS = ("distributed.shuffle._scheduler_plugin", "distributed.nanny")


def quiet_dask_logging() -> None:
    """Keep Dask's routine chatter out of a run's log (see :class:`_DaskNoise`); idempotent.
    prefect-dask's own lines (the cluster class, the dashboard address) say less than the
    flow's "Dask dashboard: …" line, and are dropped too."""
    logging.getLogger("prefect.task_runner.dask").setLevel(logging.WARNING)
    for name in _NOISY_DASK_LOGGERS:
        logger = logging.getLogger(name)
        if not any(isinstance(f, _DaskNoise) for f in logger.filters):
            logger.addFilter(_DaskNoise())


def in_flow_run() -> bool:
    """Whether the caller runs inside a Prefect flow run (not its function called as ``flow.fn``)."""
    return FlowRunContext.get() is not None


@contextlib.contextmanager
def stage_runner(dask_address: str | None = None, n_workers: int | None = None) -> Iterator[Any]:
    """The task runner a flow's stages run on: inside a Prefect flow run, a Dask task runner
    (:func:`dask_task_runner`, its dashboard address logged); when the flow's function is called
    as a plain function (``flow.fn(...)``: a small crawl built in this process), None — every
    stage then runs its work here, one part after another or on Dask's local scheduler, with
    the same outputs."""
    if not in_flow_run():
        if dask_address or n_workers is not None:
            raise ValueError("dask_address and n_workers choose a Dask cluster, but this run is in one process "
                             "without Prefect; run the flow through Prefect to use a cluster")
        yield None
        return
    with _worker_process_environment(), dask_task_runner(dask_address, n_workers) as runner:
        run_logger("simweb.cluster").info("Dask dashboard: %s", dashboard_link(runner) or "not served")
        yield runner


@contextlib.contextmanager
def _worker_process_environment() -> Iterator[None]:
    """The environment the local cluster's worker processes start with: Dask's, without its
    ``MALLOC_TRIM_THRESHOLD_``. Dask sets it so that a worker hands freed memory back to the
    system at once; but setting it also turns off glibc's adaptive mmap threshold, and then every
    large temporary array is a fresh mmap whose pages fault in anew. The stages' work is made of
    such arrays, and their memory is bounded by the part size (PartSize), not by trimming:
    measured on the 100,000-page crawl's bag fragments, the same tasks took 10% longer in
    processes started with Dask's setting (95.7 s against 86.6 s of task time) — the gap between
    one worker (a thread in the flow's process, which never had the setting) and two. The
    workers' threads share two malloc arenas (``MALLOC_ARENA_MAX=2``, unless the user set it),
    so that memory one thread's frees kept serves the next: at a million pages the largest
    worker peaked at 2.02 GiB without it, 1.93 GiB with it, at the same speed.

    The cluster's servers also look at their event loops less often (:data:`QUIET_DASK`, unless
    the user set those keys): a local cluster's scheduler and nannies live in the flow's process,
    and their ticks every 20 ms and system monitors every 500 ms kept it at 6% of a core all
    through an ingest of the 100,000-page crawl on two workers, 1.2% so."""
    import dask

    quiet = {key: value for key, value in QUIET_DASK.items() if dask.config.get(key) == _DASK_DEFAULTS[key]}
    environ = dict(dask.config.get("distributed.nanny.pre-spawn-environ", default={}) or {})
    environ.pop(_MALLOC_TRIM, None)
    if _USER_ARENA_MAX is None:  # a worker's threads share what their frees kept
        environ[_ARENA_MAX] = "2"
    # A worker's environment is this process's, updated with the pre-spawn settings; a cluster
    # started earlier in this process left Dask's value in it. A value the user set is kept.
    stale = os.environ.pop(_MALLOC_TRIM, None) if _USER_MALLOC_TRIM is None else None
    try:
        with dask.config.set({"distributed.nanny.pre-spawn-environ": environ, **quiet}):
            yield
    finally:
        if stale is not None:
            os.environ[_MALLOC_TRIM] = stale


#: How often a local cluster's servers tick (a check that their event loop is not blocked) and
#: sample their process's CPU and memory (the dashboard's system view): Dask's defaults are
#: 20 ms and 500 ms.
QUIET_DASK = {"distributed.admin.tick.interval": "1s", "distributed.admin.system-monitor.interval": "2s"}
_DASK_DEFAULTS = {"distributed.admin.tick.interval": "20ms", "distributed.admin.system-monitor.interval": "500ms"}

_MALLOC_TRIM, _ARENA_MAX = "MALLOC_TRIM_THRESHOLD_", "MALLOC_ARENA_MAX"
#: The user's own settings, read before any Dask nanny of this process could set them (a nanny
#: writes its pre-spawn settings into this process's environment).
_USER_MALLOC_TRIM = os.environ.get(_MALLOC_TRIM)
_USER_ARENA_MAX = os.environ.get(_ARENA_MAX)


class _Done:
    """The result of a task function called in this process, shaped like a Prefect future."""

    def __init__(self, value: Any):
        self._value = value

    def result(self, raise_on_failure: bool = True) -> Any:
        return self._value


def run_task(runner, task, parameters: dict[str, Any]):
    """Submit the Prefect ``task`` with ``parameters`` to ``runner``; without a runner (a flow's
    body called in one process), call its function here at once. Either way ``.result()``
    gives its return value."""
    if runner is None:
        return _Done(task.fn(**parameters))
    return runner.submit(task, parameters=parameters)


def call_task(task, **parameters: Any) -> Any:
    """Call the Prefect ``task``: as a task run inside a flow run, as its plain function outside
    one (a flow's body called in this process must not start Prefect's temporary server)."""
    return task(**parameters) if in_flow_run() else task.fn(**parameters)


def publish_markdown(key: str, markdown: str, description: str) -> None:
    """A markdown artifact of the current flow run (the run page's Artifacts tab), when there is
    one; a flow body called in this process has no run to attach it to, and publishes nothing."""
    if not in_flow_run():
        return
    from prefect.artifacts import create_markdown_artifact

    create_markdown_artifact(markdown=markdown, key=key, description=description)


def _prefect_api_url() -> str | None:
    """The URL of the Prefect API the current flow run reports to, if any."""
    context = FlowRunContext.get()
    if context is None or context.client is None:
        return os.environ.get("PREFECT_API_URL") or None
    return str(context.client.api_url).rstrip("/")


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


#: A local worker process holding more than this after the ingest is restarted before the bags
#: stage (:func:`fresh_workers`): a fresh worker holds about 0.3 GB, and a bags task at the
#: default part size (simweb.tasks.bags.sizes.PartSize) up to 1.1 GB more, within 2 GiB.
WORKER_RESTART_BYTES = 640 << 20


def _rss() -> int:
    """This process's resident set, in bytes (run on each worker by :func:`fresh_workers`)."""
    import psutil

    return psutil.Process().memory_info().rss


def fresh_workers(runner, limit: int = WORKER_RESTART_BYTES) -> list[int]:
    """Restart the worker processes of the runner's local cluster that hold more than ``limit``
    bytes, and return what each restarted one held. A worker keeps what an ingest left in it
    (its word and URL memos, up to a few hundred MB; freed memory its allocators keep): at a
    million pages, in one build, the largest worker then peaked at 2.30 GiB in the bag
    fragments against 1.85 GiB on fresh workers. A restart takes about 5 s. A cluster at
    ``dask_address`` (someone's own) and a worker thread in this process are left as they are."""
    client = getattr(runner, "_client", None)
    if client is None or not isinstance(getattr(client, "cluster", None), LocalCluster) \
            or not client.cluster.processes:
        return []
    held = client.run(_rss)
    large = {address: rss for address, rss in held.items() if rss > limit}
    if large:
        client.restart_workers(list(large))
    return sorted(large.values(), reverse=True)


def fresh_workers_after_ingest(runner, files_read: int, log: logging.Logger | logging.LoggerAdapter) -> None:
    """Before the bags stage: if the ingest read files, restart the workers it left holding too
    much (:func:`fresh_workers`), and say so in the run's log."""
    restarted = fresh_workers(runner) if files_read else []
    if restarted:
        log.info("%d worker process(es) restarted before the bags stage; they held %s after the ingest",
                 len(restarted), ", ".join(f"{rss / (1 << 30):.2f} GiB" for rss in restarted))


@contextlib.contextmanager
def cluster_as_default(runner) -> Iterator[None]:
    """Within it, ``dask.compute`` in this thread runs on the runner's Dask cluster (its client
    as the current one; prefect-dask does not make it the default). Without a runner, or one
    whose client is not started, nothing changes: Dask's local scheduler runs the work here."""
    from distributed import Client

    client = getattr(runner, "_client", None)
    if client is None:
        yield
        return
    with Client.as_current(client):
        yield


def dashboard_link(runner) -> str | None:
    """The Dask dashboard address of the runner's cluster, if it serves one. A local cluster's
    dashboard listens on 127.0.0.1 alone (:func:`dask_task_runner`); Dask names an in-process
    cluster's by the machine's network address, where nothing answers, so its link is given
    on 127.0.0.1."""
    try:
        link = runner.client.dashboard_link
        cluster = getattr(runner.client, "cluster", None)
    except Exception:  # noqa: BLE001 — no client (not started) or no dashboard
        return None
    if link and isinstance(cluster, LocalCluster):
        parts = urlsplit(link)
        if parts.hostname not in (None, "127.0.0.1", "localhost") and parts.port:
            link = urlunsplit(parts._replace(netloc=f"127.0.0.1:{parts.port}"))
    return link


def fan_out(runner) -> Callable[[Any, Sequence[dict[str, Any]]], list[Any]]:
    """A fan-out for the stages of simweb.tasks: ``fan(task, calls)`` runs the Prefect ``task``
    once per keyword dict of ``calls`` on ``runner`` and returns the results in order.

    A single call runs here, in the calling process: a task would add its hand-off to a
    worker and run nothing in parallel.
    """

    def fan(task, calls: Sequence[dict[str, Any]]) -> list[Any]:
        if not calls:
            return []
        if len(calls) == 1:
            return [task.fn(**calls[0])]
        futures = _submitted(runner, task, calls)
        show_progress(futures, task.name, "tasks")
        return [f.result() for f in futures]

    return fan


def map_tasks(runner) -> Callable[[Any, Sequence[dict[str, Any]], str, str], list[Any]]:
    """``map(task, calls, stage, what)``: the Prefect ``task`` once per keyword dict of ``calls``
    on ``runner``, each a task of its own (even a single one), its progress shown as ``stage``'s
    ``what``; each call's outcome in order — its result, or what its failure left (not raised)."""

    def run(task, calls: Sequence[dict[str, Any]], stage: str, what: str) -> list[Any]:
        futures = _submitted(runner, task, calls) if calls else []
        show_progress(futures, stage, what)
        return [future.result(raise_on_failure=False) for future in futures]

    return run


def _submitted(runner, task, calls: Sequence[dict[str, Any]]) -> list:
    keys = list(calls[0])
    return runner.map(task, {k: [c[k] for c in calls] for k in keys})


def workers(runner) -> Workers:
    """The stages' view of ``runner`` (simweb.tasks.options.Workers): its worker slots, its
    fan-outs, a task here as a task run of its own, and its cluster as Dask's default. Without a
    runner, no cluster: the stages' work runs in this process (a task here still a task run of its
    own inside a flow run)."""
    if runner is None:
        return Workers(call=call_task)
    return Workers(slots=worker_slots(runner), fan_out=fan_out(runner), map=map_tasks(runner), call=call_task,
                   as_default=lambda: cluster_as_default(runner))


def show_progress(futures, stage: str, what: str) -> None:
    """Wait for ``futures``, showing how many are done (simweb.tasks.progress: a bar on a
    terminal, a log line every tenth of the way in a deployment's run)."""
    with progress(stage, len(futures), what) as steps:
        for _ in as_completed(futures):
            steps.advance()
