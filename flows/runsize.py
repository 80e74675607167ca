"""When a flow's work is small enough to run in the flow's own process, without a Dask cluster.

Starting a local Dask cluster costs 5–40 s on a small machine, more than a small crawl takes to
build or a few new files take to ingest. So work under :data:`SMALL_INPUT_BYTES` of input runs
in the process that runs the flow (the same stages, the same outputs): `simweb build`,
`simweb ingest` and `simweb evaluate` on a small crawl (simweb.commands.runmode), and a run of
ingest-new-crawl whose new files are small. This module imports nothing heavy, so the command
line can read the rule without importing Prefect or Dask.
"""
from __future__ import annotations

import os

#: Input smaller than this (the WARC files' bytes; an ingested crawl folder's bytes for an
#: evaluation) runs in this process by default. Measured on 2 shared cores
#: (``python -m benchmarks.first_build``): 47 pages (0.4 MB) build in 6–10 s in one process
#: against 42–50 s through Prefect; DebDocs (16 MB) in 29–40 s against 35–65 s. In one process a
#: build costs about 2 s per MB; through Prefect 30–40 s of start-up plus, with two workers, about
#: two thirds of that per MB: the two meet between 50 and 100 MB.
SMALL_INPUT_BYTES = 64 * 2**20


def in_process(input_bytes: int | None, dask_address: str | None = None, n_workers: int | None = None) -> bool:
    """Whether work reading ``input_bytes`` (None: not known) runs in the flow's process: it is
    small, and no Dask cluster was asked for (``dask_address`` or ``n_workers``)."""
    return (not dask_address and n_workers is None and input_bytes is not None
            and input_bytes < SMALL_INPUT_BYTES)


def folder_size(path: str) -> int | None:
    """The bytes of the files under a local folder, else None (a remote or missing folder)."""
    if "://" in path or not os.path.isdir(path):
        return None
    return sum(os.path.getsize(os.path.join(base, name)) for base, _, names in os.walk(path) for name in names)


def human_size(n: int) -> str:
    return f"{n / 2**20:.1f} MB" if n >= 2**20 else f"{n / 2**10:.0f} kB"
