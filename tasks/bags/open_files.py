"""This process's limit of open files, raised for a fragments task's files of cells (simweb.tasks.bags.cells)."""
from __future__ import annotations


def allow_open_files(wanted: int) -> None:
    """Raise this process's soft limit of open files to ``wanted`` (if it is lower), as far as
    the hard limit allows: a fragments task holds one open file per cell (up to 256), and a
    worker may run several such tasks at once beside its own sockets and files."""
    try:
        import resource

        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        target = wanted if hard == resource.RLIM_INFINITY else min(hard, wanted)
        if soft != resource.RLIM_INFINITY and soft < target:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
    except (ImportError, ValueError, OSError):  # no such limit here, or not ours to raise
        pass
