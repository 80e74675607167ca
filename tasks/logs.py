"""The logger of the code running now: Prefect's run logger inside a flow or task run, so the
Prefect UI shows the line with its run; a plain ``logging`` logger elsewhere (the command line
without Prefect, tests, scripts)."""
from __future__ import annotations

import logging

from simweb.core.errors import USER_INPUT_ERRORS


def run_logger(name: str = "simweb") -> logging.Logger | logging.LoggerAdapter:
    """Prefect's run logger when called inside a flow or task run, else ``logging.getLogger(name)``."""
    try:
        from prefect.exceptions import MissingContextError
        from prefect.logging import get_run_logger
    except ImportError:  # Prefect is not installed where this runs (a bare Dask worker)
        return logging.getLogger(name)
    try:
        return get_run_logger()
    except MissingContextError:
        return logging.getLogger(name)


class OneLineUserErrors(logging.Filter):
    """On Prefect's run loggers: a log line carrying one of simweb's user-input errors, or a full
    disk (simweb.tasks.full_disk), loses its traceback (the message already names the error), so
    the run's log and the Prefect UI show one line for it, not a screenful per retry."""

    def filter(self, record: logging.LogRecord) -> bool:
        from simweb.tasks.full_disk import full_disk_error

        exc = record.exc_info[1] if record.exc_info else None
        if exc is not None and (isinstance(exc, USER_INPUT_ERRORS) or full_disk_error(exc) is not None):
            record.exc_info = None
            record.exc_text = None
            record.stack_info = None
        return True


class OneLineFullDisk(logging.Filter):
    """On a Dask worker's logger: its "Compute Failed" line for a task that met a full disk
    (simweb.tasks.full_disk) loses the traceback it quotes; the command names the folder."""

    def filter(self, record: logging.LogRecord) -> bool:
        import re

        from simweb.tasks.full_disk import FULL_DISK_ERRNOS

        if str(record.msg).startswith("Compute Failed") and isinstance(record.args, tuple) and len(record.args) >= 4:
            code = re.match(r"\w*Error\((\d+),", str(record.args[3]))
            if code and int(code.group(1)) in FULL_DISK_ERRNOS:
                record.msg, record.args = "Compute Failed: %s: %s", (record.args[0], record.args[3])
        return True


def install_one_line_full_disk() -> None:
    """Add :class:`OneLineFullDisk` to Dask's worker logger (idempotent)."""
    logger = logging.getLogger("distributed.worker")
    if not any(isinstance(f, OneLineFullDisk) for f in logger.filters):
        logger.addFilter(OneLineFullDisk())


#: The loggers Prefect's engines report a failed task or flow run on.
PREFECT_RUN_LOGGERS = ("prefect.task_runs", "prefect.flow_runs", "prefect.flow_engine", "prefect.task_engine")


def install_one_line_user_errors() -> None:
    """Add :class:`OneLineUserErrors` to Prefect's run loggers (idempotent)."""
    for name in PREFECT_RUN_LOGGERS:
        logger = logging.getLogger(name)
        if not any(isinstance(f, OneLineUserErrors) for f in logger.filters):
            logger.addFilter(OneLineUserErrors())
