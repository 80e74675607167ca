"""The logger of the code running now: Prefect's run logger inside a flow or task run, so the
Prefect UI shows the line with its run; a plain ``logging`` logger elsewhere (the command line
without Prefect, tests, scripts)."""
from __future__ import annotations

import logging


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
