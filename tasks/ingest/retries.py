"""Retries on I/O, not on deterministic compute (STYLE.md habit 10): a file that fails with a
transient I/O error is read again after a back-off; every other failure is reported for that
file alone."""
from __future__ import annotations

import errno
import logging
import random
import time

from simweb.tasks.full_disk import full_disk_error
from simweb.tasks.ingest.files import ingest_warc
from simweb.tasks.ingest.stats import IngestStats, unreadable

__all__ = ["RETRY_DELAY", "ingest_with_retries", "is_transient_io_error"]

logger = logging.getLogger("simweb.ingest")


# OSErrors that retrying cannot cure: the file is not there or not ours to read; and by their
# errno, a bad argument (a seek to a negative offset: the same bytes give it again).
_PERMANENT_OS_ERRORS = (FileNotFoundError, IsADirectoryError, NotADirectoryError, PermissionError)
_PERMANENT_ERRNOS = frozenset({errno.EINVAL, errno.EBADF, errno.ENAMETOOLONG, errno.ELOOP})

#: Seconds before the first retry of a file that failed with a transient I/O error; doubled
#: for each further attempt (2 s, 4 s, 8 s), each delay jittered by up to ±50 %.
RETRY_DELAY = 2.0


def is_transient_io_error(exc: BaseException) -> bool:
    """Whether ``exc`` is worth another attempt: an ``OSError`` such as a dropped network mount
    or an object-store hiccup — not a missing or forbidden file — or a web server's dropped
    connection, cut transfer or answer 5xx / 429 (aiohttp's errors, which are not all OSErrors).
    A damaged WARC file does not raise (it is reported in the stats), and parsing the same bytes
    again gives the same answer. A full disk (simweb.tasks.full_disk) is not transient either:
    it waits for someone to free space."""
    if full_disk_error(exc) is not None:
        return False
    if isinstance(exc, OSError):
        return not isinstance(exc, _PERMANENT_OS_ERRORS) and exc.errno not in _PERMANENT_ERRNOS
    if type(exc).__module__.split(".", 1)[0] == "aiohttp":
        status = getattr(exc, "status", None)
        return status is None or status >= 500 or status == 429
    return False


def ingest_with_retries(path: str, out_dir: str, io_retries: int = 3, retry_delay: float = RETRY_DELAY,
                        log: logging.Logger | logging.LoggerAdapter | None = None,
                        piece: tuple[int, int] = (0, 1)) -> IngestStats:
    """:func:`ingest_warc` of one file, retried up to ``io_retries`` times on transient I/O errors
    with exponential back-off. A file that still cannot be read — or fails with any other
    error — is reported in ``file_errors`` with the reason and skipped: it never stops the
    other files. Retrying is safe: a file's outputs are published only when it is complete. A
    full disk where the output goes (simweb.tasks.full_disk) is no fault of the file: it is
    raised, not retried, and stops the stage."""
    log = log or logger
    for attempt in range(io_retries + 1):
        try:
            return ingest_warc(path, out_dir, piece)
        except Exception as exc:  # noqa: BLE001 — every failure is reported, per file
            if full_disk_error(exc) is not None:
                raise
            if not is_transient_io_error(exc) or attempt == io_retries:
                tries = f" after {attempt + 1} attempts" if attempt else ""
                return unreadable(path, f"could not be read{tries}: {type(exc).__name__}: {exc}")
            delay = retry_delay * 2 ** attempt * random.uniform(0.5, 1.5)
            log.warning("%s: %s: %s; retry %d of %d in %.1f s", path, type(exc).__name__, exc,
                        attempt + 1, io_retries, delay)
            time.sleep(delay)
    raise AssertionError("unreachable")
