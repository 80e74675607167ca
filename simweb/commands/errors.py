"""What the commands do with a user's mistake found inside a run, and with simweb's log lines.

A mistake in what the user gave (a missing file, a directory file of the wrong shape, an output
folder that cannot be written, a strategy that does not parse) is found by the code that reads
it, sometimes inside a Prefect task. The command prints it as one line and exits 2; Prefect
would log it first with a full traceback, once per retry, for the task and again for the flow:
:func:`install_one_line_user_errors` keeps those log lines to their first line.
"""
from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator


def user_input_errors() -> tuple[type[BaseException], ...]:
    """simweb's exception classes that mean "what you gave is not what was expected"."""
    from simweb.core.directory import DirectoryFormatError
    from simweb.core.strategy import StrategyError
    from simweb.tasks.eval_sample import EmptySample
    from simweb.tasks.index_store import IndexFormatError
    from simweb.tasks.layout import OutputNotWritable

    return (FileNotFoundError, NotADirectoryError, OutputNotWritable, DirectoryFormatError, StrategyError,
            IndexFormatError, EmptySample)


class OneLineUserErrors(logging.Filter):
    """On Prefect's run loggers: a log line carrying one of simweb's user-input errors loses its
    traceback (the message already names the error), so the run's log and the Prefect UI show
    one line for it, not a screenful per retry."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        if exc is not None and isinstance(exc, user_input_errors()):
            record.exc_info = None
            record.exc_text = None
            record.stack_info = None
        return True


#: The loggers Prefect's engines report a failed task or flow run on.
PREFECT_RUN_LOGGERS = ("prefect.task_runs", "prefect.flow_runs", "prefect.flow_engine", "prefect.task_engine")


def install_one_line_user_errors() -> None:
    """Add :class:`OneLineUserErrors` to Prefect's run loggers (idempotent)."""
    for name in PREFECT_RUN_LOGGERS:
        logger = logging.getLogger(name)
        if not any(isinstance(f, OneLineUserErrors) for f in logger.filters):
            logger.addFilter(OneLineUserErrors())


@contextlib.contextmanager
def show_simweb_logs(level: int = logging.INFO) -> Iterator[None]:
    """While a flow's body runs in this process (no Prefect run logger): simweb's log lines on
    standard error, one sentence each, above any progress bar."""
    from simweb.tasks.progress import TerminalHandler

    logger = logging.getLogger("simweb")
    handler = TerminalHandler()
    old_level, old_propagate = logger.level, logger.propagate
    logger.addHandler(handler)
    logger.setLevel(level)
    logger.propagate = False
    try:
        yield
    finally:
        logger.removeHandler(handler)
        logger.setLevel(old_level)
        logger.propagate = old_propagate
