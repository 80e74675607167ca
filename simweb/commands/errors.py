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

from simweb.tasks.logs import OneLineUserErrors, install_one_line_user_errors

__all__ = ["OneLineUserErrors", "full_disk_line", "install_one_line_user_errors", "show_simweb_logs"]


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


def _unpublished(args) -> str:
    """What a run stopped by a full disk left unpublished, by command."""
    out = getattr(args, "out", None)
    if args.command == "build" and out:
        from simweb.tasks.index_store import current_name

        try:
            return f"no index was published: {out} still serves version {current_name(out)}"
        except (OSError, ValueError):
            return f"no index was published into {out}"
    if args.command == "ingest" and out:
        return f"the files ingested whole before it stay in {out}, the one being written and those after it were not added"
    return f"nothing of this run was published into {out}" if out else "nothing of this run was published"


def full_disk_line(args, exc: BaseException) -> str:
    """The one line a command prints when its run met a full disk (simweb.tasks.full_disk)."""
    from simweb.tasks.full_disk import full_disk_message

    out = getattr(args, "out", None)
    folders = [f for f in (getattr(args, "work", None), out, getattr(args, "index", None)) if isinstance(f, str)]
    if isinstance(out, str) and args.command == "build" and not getattr(args, "work", None):
        folders.insert(0, out)
    return full_disk_message(exc, folders, _unpublished(args))
