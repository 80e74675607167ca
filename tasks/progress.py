"""Progress of a long step: a bar on a terminal, a log line every tenth of the way elsewhere.

Every long step of simweb (the ingest's files, a stage's Dask graph, the strategies of an
evaluation, the iterations of SimRank and PageSim, through :func:`reporter`; the pages of
``simweb corpus scale``) reports through :func:`progress`. Where standard error is a terminal
(the command line) it draws a tqdm bar there — the count, the time taken and the time left at
the pace so far — and log lines printed meanwhile are written above the bar instead of through
it; elsewhere (a deployment run followed in the Prefect UI, a test, a pipe) it logs
``"<step>: 3/10 <units> done, about 1 min 20 s left"`` every tenth of the way, through the run
logger, so the Prefect UI shows it with its run (steps over within two seconds log nothing).

Steps computed on Dask's local schedulers (the bags, signatures and invert stages run in this
process) report their graph's tasks through :func:`dask_progress`, which a stage opens around
its computation with its name (simweb.tasks.stagecache does for every stage).

``SIMWEB_PROGRESS=bar|log|off`` forces the choice (``auto``, the default, picks by terminal).
"""
from __future__ import annotations

import contextlib
import contextvars
import functools
import logging
import os
import shutil
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any, TypeVar

from simweb.tasks.logs import run_logger

T = TypeVar("T")

#: A step of one unit has no way to go: its own log line says when it is done.
MIN_LOGGED_TOTAL = 2
#: Nor are steps that have not yet taken this many seconds: a log line per tenth of a step that
#: is over in a blink would only bury the stage's own line.
LOG_AFTER_SECONDS = 2.0

_BAR_FORMAT = "  {desc:<16} {bar:28} {n_fmt:>5}/{total_fmt:<5} {unit}  {elapsed}<{remaining}"


def duration(seconds: float) -> str:
    """``42 s``, ``3 min 10 s``, ``2 h 05 min``: a time left, as a person reads it."""
    seconds = max(0, round(seconds))
    if seconds < 60:
        return f"{seconds} s"
    if seconds < 3600:
        return f"{seconds // 60} min {seconds % 60:02d} s"
    return f"{seconds // 3600} h {seconds % 3600 // 60:02d} min"



def mode() -> str:
    """"bar" on a terminal, "log" elsewhere, or what ``SIMWEB_PROGRESS`` says ("off" too)."""
    chosen = os.environ.get("SIMWEB_PROGRESS", "auto").strip().lower()
    if chosen in ("bar", "log", "off"):
        return chosen
    try:
        return "bar" if sys.stderr.isatty() else "log"
    except (AttributeError, ValueError):  # a closed or replaced stream
        return "log"


class Steps:
    """One long step's count of units done; :meth:`advance` as each unit finishes."""

    def __init__(self, step: str, total: int, unit: str, log: Any = None):
        self.step, self.total, self.unit = step, max(0, int(total)), unit
        self.done = 0
        self._mode = mode() if self.total else "off"
        self._log = log
        self._bar = None
        self._redirect = contextlib.ExitStack()
        self._logged_tenths = 0
        self._started = time.monotonic()
        if self._mode == "bar":
            from tqdm import tqdm
            from tqdm.contrib.logging import logging_redirect_tqdm

            self._redirect.enter_context(logging_redirect_tqdm(_console_loggers()))
            width, height = shutil.get_terminal_size((100, 24))  # a pty of no size yet: 100 × 24
            self._bar = tqdm(total=self.total, desc=step, unit=unit, file=sys.stderr, leave=False,
                             ncols=min(width, 100) if width >= 40 else 100, nrows=max(height, 24),
                             bar_format=_BAR_FORMAT, mininterval=0.2)

    def advance(self, n: int = 1) -> None:
        self.done = min(self.total, self.done + n)
        if self._bar is not None:
            self._bar.update(n)
        elif self._mode == "log" and self.total >= MIN_LOGGED_TOTAL:
            tenths = self.done * 10 // self.total
            elapsed = time.monotonic() - self._started
            if tenths > self._logged_tenths and elapsed >= LOG_AFTER_SECONDS:
                self._logged_tenths = tenths
                left = ""
                if self.done < self.total:  # at the pace so far
                    left = f", about {duration(elapsed / self.done * (self.total - self.done))} left"
                (self._log or run_logger("simweb.progress")).info(
                    "%s: %d/%d %s done%s", self.step, self.done, self.total, self.unit, left)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None
        self._redirect.close()


def _console_loggers() -> list[logging.Logger]:
    """The loggers with a handler writing to the terminal (Prefect's console handler on the root
    logger, for one): while a bar is drawn, their lines are written above it."""
    consoles = (sys.stdout, sys.stderr)
    loggers = [logging.getLogger()] + [
        logger for logger in list(logging.Logger.manager.loggerDict.values()) if isinstance(logger, logging.Logger)]
    return [logger for logger in loggers
            if any(isinstance(h, logging.StreamHandler) and getattr(h, "stream", None) in consoles
                   for h in logger.handlers)]


@contextlib.contextmanager
def progress(step: str, total: int, unit: str, log: Any = None) -> Iterator[Steps]:
    """``with progress("ingest", 8, "files") as steps: ... steps.advance()``."""
    steps = Steps(step, total, unit, log)
    try:
        yield steps
    finally:
        steps.close()


def track(items: Iterable[T], step: str, unit: str, total: int | None = None, log: Any = None) -> Iterator[T]:
    """Yield ``items``, advancing a :func:`progress` of ``step`` as each one has been handled."""
    if total is None:
        items = list(items)
        total = len(items)
    with progress(step, total, unit, log) as steps:
        for item in items:
            yield item
            steps.advance()


@contextlib.contextmanager
def reporter(step: str, unit: str, log: Any = None) -> Iterator[Callable[[int, int], None]]:
    """``report(done, total)`` for code that counts its own steps (simweb.core's iterative
    measures take it as ``progress``): the first call opens a :func:`progress` of ``total``."""
    with steps_reporter(unit, log) as report:
        yield lambda done, total: report(step, done, total)


@contextlib.contextmanager
def steps_reporter(unit: str, log: Any = None) -> Iterator[Callable[[str, int, int], None]]:
    """``report(step, done, total)`` for code that goes through several long steps one after
    another and counts its own units (``simweb corpus scale``: its real pages, then its copies):
    a call naming another step, or another total, closes the step before and opens a
    :func:`progress` of the new one."""
    state: dict[str, Steps] = {}

    def report(step: str, done: int, total: int) -> None:
        steps = state.get("steps")
        if steps is None or steps.step != step or steps.total != total:
            if steps is not None:
                steps.close()
            steps = state["steps"] = Steps(step, total, unit, log)
        if done > steps.done:
            steps.advance(done - steps.done)

    try:
        yield report
    finally:
        if "steps" in state:
            state["steps"].close()


# ------------------------------------------------------------------ Dask's local schedulers

_stage: contextvars.ContextVar[str | None] = contextvars.ContextVar("simweb_progress_stage", default=None)


@contextlib.contextmanager
def dask_progress(stage: str) -> Iterator[None]:
    """Report, as the progress of ``stage``, every graph of more than one task that Dask's local
    schedulers (synchronous, threads, processes) compute in this process meanwhile. A graph
    computed on a distributed cluster is not seen here (its stage logs its start and end)."""
    token = _stage.set(stage)
    callback = _dask_callback_class()()
    try:
        with callback:
            yield
    finally:
        _stage.reset(token)


@functools.cache
def _dask_callback_class():
    from dask.callbacks import Callback

    class DaskSteps(Callback):
        """Counts the finished tasks of each graph a local scheduler computes."""

        def __init__(self):
            super().__init__()
            self._steps: Steps | None = None
            self._stage = _stage.get()

        def _start_state(self, dsk, state):
            total = sum(len(state[k]) for k in ("ready", "waiting", "running", "finished"))
            if total > 1:
                self._steps = Steps(self._stage or "dask", total, "tasks")

        def _posttask(self, key, result, dsk, state, worker_id):
            if self._steps is not None:
                self._steps.advance()

        def _finish(self, dsk, state, errored):
            if self._steps is not None:
                self._steps.close()
                self._steps = None

    return DaskSteps


# ------------------------------------------------------------------ log lines on a terminal


class TerminalHandler(logging.Handler):
    """simweb's log lines on a terminal, one readable sentence each (``HH:MM:SS message``),
    written above a progress bar when one is drawn."""

    def __init__(self, stream=None):
        super().__init__()
        self.stream = stream
        self.setFormatter(logging.Formatter("%(asctime)s %(message)s", datefmt="%H:%M:%S"))

    def emit(self, record: logging.LogRecord) -> None:
        try:
            message = self.format(record)
            if record.levelno >= logging.WARNING:
                message = message.replace(" ", f" {record.levelname.lower()}: ", 1)
            from tqdm import tqdm

            tqdm.write(message, file=self.stream or sys.stderr)
        except Exception:  # noqa: BLE001 — as logging.StreamHandler: never raise from a log call
            self.handleError(record)
