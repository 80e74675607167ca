"""What an index folder holds, and the one lock that serialises every run publishing into it.

An index folder ``OUT`` (``simweb build … --out OUT``, the deployments' ``index/``)::

    OUT/LOCK                 held (an exclusive file lock) by the run that writes into OUT
    OUT/CURRENT              the name of the live version (switched by an atomic rename)
    OUT/live                 a symbolic link to the live version (switched by an atomic rename)
    OUT/versions/<name>/     published index versions (layout: simweb.tasks.index_store)
    OUT/crawl/               the ingest output: pages/, links/, stats/ parts, the crawl's
                             selection CRAWL.json and the inbox ledger _ingested.json
    OUT/stages/<stage>/<key>/  cached stage outputs (simweb.tasks.stagecache); the bag
                             fragments keep only their manifest once merged, and the bags
                             theirs once an index has signed them (consumed), and
                             the invert stage shares H, the maps and the bags with the
                             signatures stage by hard links
    OUT/EPOCH.json, OUT/epochs/  the df epoch of incremental updates (simweb.tasks.incremental)
    OUT/WORK                 present when the crawl and the stages live elsewhere (``simweb build
                             --work URL``, e.g. an object store that a cluster's workers share):
                             the folder holding crawl/ and stages/ in their place

``build-index`` and ``ingest-new-crawl`` both write the crawl folder, the stages, the ledger,
the epoch and CURRENT; two of them at once on one folder could publish a version that lacks
the other's pages, or an index of one df epoch while EPOCH.json names another. So each run
holds :class:`IndexLock` on OUT from its first write to its last.
"""
from __future__ import annotations

import fcntl
import logging
import os
import shutil
import socket
import time
from typing import Callable

from simweb.core.errors import OutputNotWritable
from simweb.tasks.storage import TMP_PREFIX, filesystem, join, local_path

LOCK = "LOCK"
WORK = "WORK"


def work_folder(out: str) -> str:
    """The folder that holds the crawl and the stage outputs of the index folder ``out``: the one
    its WORK file names, else ``out`` itself."""
    root = local_path(out)
    if root is not None:
        try:
            with open(os.path.join(root, WORK), encoding="utf-8") as f:
                named = f.read().strip()
        except (FileNotFoundError, NotADirectoryError):
            named = ""
        if named:
            return named
    return out


def set_work_folder(out: str, work: str) -> None:
    """Keep the crawl and the stage outputs of the index folder ``out`` in ``work`` from now on
    (``out`` itself: in the index folder, as by default). Written by an atomic rename."""
    root = local_path(out)
    if root is None:
        raise ValueError(f"{out}: an index is a local folder")
    os.makedirs(root, exist_ok=True)
    path = os.path.join(root, WORK)
    here = local_path(work)
    if here is not None and os.path.abspath(here) == os.path.abspath(root):
        if os.path.exists(path):
            os.remove(path)
        return
    tmp = os.path.join(root, f"{TMP_PREFIX}{os.getpid()}-{WORK}")
    with open(tmp, "w", encoding="utf-8") as f:
        f.write((here or work) + "\n")
    os.replace(tmp, path)


def crawl_folder(out: str) -> str:
    """Where a build keeps the ingest output (pages/, links/, stats/) of its crawl."""
    return join(work_folder(out), "crawl")


def crawl_folder_of(path: str) -> str:
    """The ingested crawl at ``path``: the folder itself (``simweb ingest --out DIR``), or the
    crawl an index folder keeps (:func:`crawl_folder`: ``INDEX/crawl``, or in the work folder
    ``simweb build --work`` named); ``path`` as it is when it is neither (the reader says why)."""
    if local_path(path) is None or os.path.isdir(os.path.join(path, "pages")):
        return path
    kept = crawl_folder(path)
    fs, pages = filesystem(join(kept, "pages"))
    return kept if fs.isdir(pages) else path


def stages_folder(out: str) -> str:
    """Where a build caches its stage outputs."""
    return join(work_folder(out), "stages")


def sweep_debris(out: str, crawl: str | None = None) -> list[str]:
    """Remove what killed runs left in the index folder ``out``: temporary files of ingest parts
    (``crawl/{pages,links,aliases,stats,pieces}/.tmp-*``), of a version being published (``versions/.tmp-*``),
    of the CURRENT pointer and the live link (``.tmp-*-CURRENT``, ``.tmp-*-live``) and of stage
    outputs (``stages/*/.tmp-*``).

    Only the holder of the folder's :class:`IndexLock` may call it: every temporary name there
    then belongs to a run that is gone. Returns the paths removed.
    """
    root = local_path(out)
    if root is None:
        return []
    crawl_root = local_path(crawl or crawl_folder(out))
    folders = [root, os.path.join(root, "versions")]
    folders += [os.path.join(crawl_root, name) for name in ("pages", "links", "aliases", "stats", "pieces")] if crawl_root else []
    # Stages kept elsewhere (WORK) may be another index's too: stagecache.clean_stale's, by owner.
    stages = os.path.join(root, "stages") if work_folder(out) == out else None
    if stages and os.path.isdir(stages):
        folders += [os.path.join(stages, name) for name in sorted(os.listdir(stages))]
    removed = []
    for folder in folders:
        try:
            names = sorted(os.listdir(folder))
        except (FileNotFoundError, NotADirectoryError):
            continue
        for name in names:
            if name.startswith(TMP_PREFIX):
                path = os.path.join(folder, name)
                if os.path.isdir(path) and not os.path.islink(path):
                    shutil.rmtree(path, ignore_errors=True)
                else:
                    os.remove(path)
                removed.append(path)
    return removed



def check_writable(out: str) -> None:
    """Raise :class:`OutputNotWritable` with the fix unless ``out`` is (or can be made) a folder
    this process can write into — checked before anything starts, so that a wrong ``--out`` is
    not mistaken for unreadable inputs. A remote folder (an fsspec URL) is not checked here."""
    folder = local_path(out)
    if folder is None:
        return
    if os.path.exists(folder) and not os.path.isdir(folder):
        raise OutputNotWritable(f"{out} is a file: expected a folder to write into; choose another path")
    probe = os.path.join(folder, f"{TMP_PREFIX}probe-{os.getpid()}")
    try:
        os.makedirs(folder, exist_ok=True)
        with open(probe, "wb") as f:
            f.write(b"simweb")
        os.remove(probe)
    except OSError as err:
        raise OutputNotWritable(
            f"cannot write into {out} ({err.strerror or type(err).__name__}); expected a folder this user "
            "can write to — choose another path or change its permissions"
        ) from None


class IndexLocked(RuntimeError):
    """Another run holds the lock of the index folder."""


class IndexLock:
    """An exclusive lock on an index folder (``OUT/LOCK``), released when the holder exits or dies.

    The lock is the kernel's (``flock``) on ``OUT/LOCK``: it goes with the process, so a
    killed run never leaves a stale lock behind. The file names the holder (host, process,
    what it runs) for the message another run shows. ``wait`` is how many seconds to wait
    for a holder to finish (None: as long as it takes; 0: refuse at once). A folder that is
    not on the local file system is not locked (the index itself must be local; a remote
    ingest-only folder relies on the deployment's concurrency limit of one run).
    """

    def __init__(self, out: str, what: str, *, wait: float | None = None,
                 on_wait: Callable[[str], None] | None = None, poll: float = 0.5) -> None:
        self.out = out
        self.what = what
        self.wait = wait
        self.poll = poll
        self._on_wait = on_wait or logging.getLogger("simweb.lock").info
        self._fd: int | None = None

    @property
    def path(self) -> str | None:
        folder = local_path(self.out)
        return None if folder is None else os.path.join(folder, LOCK)

    def __enter__(self) -> IndexLock:
        path = self.path
        if path is None:
            return self
        os.makedirs(os.path.dirname(path), exist_ok=True)
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        deadline = None if self.wait is None else time.monotonic() + self.wait
        told = False
        try:
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    holder = _holder(path)
                    if deadline is not None and time.monotonic() >= deadline:
                        raise IndexLocked(
                            f"index folder {self.out} is in use by {holder}; expected no other build or "
                            f"ingestion writing into it — try again when that run has finished"
                        ) from None
                    if not told:
                        self._on_wait(f"waiting for {holder} to finish with {self.out} ...")
                        told = True
                    time.sleep(self.poll)
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"{socket.gethostname()} {os.getpid()} {self.what}\n".encode(), 0)
        except BaseException:
            os.close(fd)
            raise
        self._fd = fd
        return self

    def __exit__(self, *exc) -> None:
        if self._fd is not None:
            os.close(self._fd)  # releases the lock
            self._fd = None


def _holder(path: str) -> str:
    try:
        with open(path) as f:
            host, pid, *what = f.read().split()
        return f"{' '.join(what) or 'a run'} (host {host}, process {pid})"
    except (OSError, ValueError):
        return "another run"
