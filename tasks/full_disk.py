"""A full disk, named: no space left (ENOSPC), a quota used up (EDQUOT), a read-only file system
(EROFS) where a run writes its output.

These are never a fault of an input file, and trying again does not help until someone frees
space: a stage that meets one stops at once (no retry), nothing of the run is published (every
output is written under a temporary name and renamed once whole, :mod:`simweb.tasks.storage`),
and the command says in one line which folder is full and what was left unpublished, exit 1.
The next run, once there is space, reuses every stage finished before (:mod:`simweb.tasks.stagecache`).

The error may come from Python (``OSError.errno``), from Arrow's writers (an ``OSError`` whose
message names ``[errno 28]``), wrapped as the cause or context of another, or carried by a
Prefect state: :func:`full_disk_error` finds it.
"""
from __future__ import annotations

import errno
import os
import re
from collections.abc import Iterable

__all__ = ["FULL_DISK_ERRNOS", "full_disk_error", "full_disk_message"]

FULL_DISK_ERRNOS = {errno.ENOSPC: "no space left on the device", errno.EROFS: "the file system is read-only"}
if hasattr(errno, "EDQUOT"):
    FULL_DISK_ERRNOS[errno.EDQUOT] = "the disk quota is used up"
_ARROW_ERRNO = re.compile(r"\[errno (\d+)\]", re.I)


def _errno_of(exc: BaseException) -> int | None:
    code = getattr(exc, "errno", None)
    if isinstance(code, int) and code in FULL_DISK_ERRNOS:
        return code
    if isinstance(exc, OSError):
        found = _ARROW_ERRNO.search(str(exc))
        if found and int(found.group(1)) in FULL_DISK_ERRNOS:
            return int(found.group(1))
    return None


def full_disk_error(exc: object) -> BaseException | None:
    """The ENOSPC, EDQUOT or EROFS error ``exc`` is, wraps or was raised while handling (its
    causes and contexts, a Prefect state's exception); None when there is none."""
    seen: set[int] = set()
    todo = [exc]
    while todo:
        item = todo.pop()
        if item is None or id(item) in seen:
            continue
        seen.add(id(item))
        if not isinstance(item, BaseException):  # a Prefect State holding the exception
            data = getattr(item, "data", None)
            todo.append(data if isinstance(data, BaseException) else None)
            continue
        if _errno_of(item) is not None:
            return item
        todo += [item.__cause__, item.__context__]
    return None


def _folder_of(exc: BaseException, folders: Iterable[str]) -> str | None:
    """The folder the error names (its file's), else the one of ``folders`` on the device with
    the least room left (a write that fills a disk leaves it at or near zero)."""
    named = getattr(exc, "filename", None)
    if isinstance(named, str) and named:
        return os.path.dirname(os.path.abspath(named)) or named
    best, room = None, None
    for folder in folders:
        probe = folder
        while probe and not os.path.exists(probe):
            probe = os.path.dirname(probe)
        try:
            stat = os.statvfs(probe or ".")
        except OSError:
            continue
        free = stat.f_bavail * stat.f_frsize
        if room is None or free < room:
            best, room = folder, free
    return best


def full_disk_message(exc: BaseException, folders: Iterable[str], unpublished: str) -> str:
    """One line: which folder is full and why, what was left unpublished, what to do."""
    code = _errno_of(exc)
    folders = [f for f in folders if f and "://" not in f]
    folder = _folder_of(exc, folders)
    where = f"writing into {folder}: " if folder else "writing the output: "
    name = errno.errorcode.get(code, "?")
    fix = ("make it writable" if code == errno.EROFS else "free space on it") + " (or name another output folder)"
    return (f"{where}{FULL_DISK_ERRNOS[code]} ({name}); {unpublished}; {fix} and run the same command again: "
            "what was finished before is reused")
