"""How the bags stage hands its tasks to Dask: computed on the scheduler it was given, or through a
worker's client when it runs inside a Dask worker, and large shared arguments sent once."""
from __future__ import annotations

from typing import Any


def compute(collections: list, scheduler: Any) -> list:
    """dask.compute on ``scheduler``; inside a Dask worker, through the worker's client (seceding its slot)."""
    import dask

    if not collections:
        return []
    if scheduler is not None:
        return list(dask.compute(*collections, scheduler=scheduler))
    try:
        from distributed import get_worker, worker_client

        get_worker()
    except (ImportError, ValueError):
        return list(dask.compute(*collections))
    with worker_client() as client:
        return list(client.compute(list(collections), sync=True))


def shared(value: Any, scheduler: Any) -> Any:
    """``value`` as an argument of many tasks: on a Dask cluster, sent to every worker once
    ahead of them (a future) rather than written into the graph beside each task — a crawl's
    alias map is megabytes (at a million pages 162,712 aliases with their target URLs: the
    graph was 14 MiB, and Dask warned of it); else ``value`` itself."""
    if value is None or scheduler is not None:
        return value
    try:
        from distributed import get_client

        client = get_client()
    except (ImportError, ValueError):  # no cluster: the tasks run here and share the object
        return value
    return client.scatter([value], broadcast=True, hash=False)[0]  # in a list: a dict would be scattered by key
