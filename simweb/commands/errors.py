"""What the commands do with a user's mistake found inside a run, and with simweb's log lines.

A mistake in what the user gave (a missing file, a directory file of the wrong shape, an output
folder that cannot be written, a strategy that does not parse) is found by the code that reads
it, sometimes inside a Prefect task. The command prints it as one line and exits 2; Prefect
would log it first with a full traceback, once per retry, for the task and again for the flow:
:func:`install_one_line_user_errors` (simweb.tasks.logs; the flows install it as they are
imported, so deployment runs have it too) keeps those log lines to their first line.
"""
from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator

from simweb.tasks.logs import OneLineUserErrors, install_one_line_user_errors, user_input_errors

__all__ = ["OneLineUserErrors", "install_one_line_user_errors", "show_simweb_logs", "user_input_errors"]


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
