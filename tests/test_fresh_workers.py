"""Worker processes that an ingest left holding more than a fresh one are restarted before the
bags stage (simweb.flows.cluster.fresh_workers); someone's own cluster, reached by its address,
and a worker thread in the flow's process are left as they are."""
from __future__ import annotations

import os

import pytest

from simweb.flows.cluster import fresh_workers


class _Runner:
    """What fresh_workers reads of a Prefect DaskTaskRunner: its Dask client."""

    def __init__(self, client) -> None:
        self._client = client


@pytest.mark.timeout(180)
def test_a_local_clusters_workers_above_the_limit_are_restarted_and_no_others():
    from distributed import Client, LocalCluster

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                      dashboard_address=None) as cluster, Client(cluster) as client:
        pids = set(client.run(os.getpid).values())
        assert fresh_workers(_Runner(client), limit=1 << 40) == []
        assert set(client.run(os.getpid).values()) == pids
        held = fresh_workers(_Runner(client), limit=0)
        assert len(held) == 2 and all(rss > 0 for rss in held) and held == sorted(held, reverse=True)
        client.wait_for_workers(2, timeout=60)
        after = set(client.run(os.getpid).values())
        assert len(after) == 2 and not after & pids  # two new processes
        with Client(cluster.scheduler_address) as by_address:  # someone's own cluster: not ours to restart
            assert fresh_workers(_Runner(by_address), limit=0) == []
        assert set(client.run(os.getpid).values()) == after


@pytest.mark.timeout(60)
def test_a_worker_thread_in_this_process_and_a_runner_without_a_client_are_left_alone():
    from distributed import Client, LocalCluster

    with LocalCluster(n_workers=1, threads_per_worker=1, processes=False, dashboard_address=None) as cluster, \
            Client(cluster) as client:
        assert fresh_workers(_Runner(client), limit=0) == []
    assert fresh_workers(_Runner(None), limit=0) == []
