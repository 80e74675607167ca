"""The local Dask clusters the flows start listen on 127.0.0.1 alone, and the dashboard link
the flow logs is one that answers — also for the cluster of one worker thread in the flow's
process, which Dask names by the machine's network address."""
from __future__ import annotations

import urllib.request
from urllib.parse import urlsplit

import psutil
import pytest

from simweb.flows.cluster import dashboard_link, dask_task_runner


def _listening(pid: int) -> set[tuple[str, int]]:
    return {(c.laddr.ip, c.laddr.port) for c in psutil.Process(pid).net_connections(kind="inet")
            if c.status == psutil.CONN_LISTEN}


@pytest.mark.timeout(120)
def test_a_one_worker_cluster_listens_on_this_machine_only_and_links_a_dashboard_that_answers():
    import os

    before = _listening(os.getpid())
    with dask_task_runner(n_workers=1) as runner:
        link = dashboard_link(runner)  # as the flow logs it, once its cluster has started
        opened = _listening(os.getpid()) - before
        assert opened, "the cluster serves its dashboard"
        assert {ip for ip, _ in opened} == {"127.0.0.1"}, opened
        assert link is not None and urlsplit(link).hostname == "127.0.0.1"
        assert (urlsplit(link).hostname, urlsplit(link).port) in opened
        with urllib.request.urlopen(link, timeout=30) as answer:
            assert answer.status == 200


def test_a_link_is_left_as_dask_gives_it_for_a_cluster_reached_by_its_address():
    class _Client:
        dashboard_link = "http://10.1.2.3:8787/status"
        cluster = None

    class _Runner:
        client = _Client()

    assert dashboard_link(_Runner()) == "http://10.1.2.3:8787/status"
