"""build-index on a real distributed Dask cluster: a `dask scheduler` and two `dask worker`
processes on 127.0.0.1, reached through the flow's ``dask_address`` parameter.

The flow runs against a real Prefect server (its own PREFECT_HOME, a free loopback port);
the workers report their task runs to it. The output must equal the same stages run in this
process, and both workers must have done part of the work. As a Common Crawl user runs it, the
crawl is also read from an S3-compatible store on 127.0.0.1 and every stage output written
there (the workers are given the store's endpoint and keys in their environment).
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from conftest import drain_prefect_queues, s3_store

from simweb.deployments.server import LocalPrefectServer, free_port, stop_process_group

DASK = str(Path(sys.executable).with_name("dask"))
CRAWLS, WORK = "cluster-crawls", "cluster-work"


def _rows(folder: str) -> list[str]:
    from simweb.tasks.storage import read_parquet

    return sorted(json.dumps(r, sort_keys=True, default=str) for r in read_parquet(folder).to_pylist())


@pytest.fixture(scope="module")
def prefect_server(tmp_path_factory):
    with LocalPrefectServer(prefect_home=tmp_path_factory.mktemp("prefect-home")) as server:
        yield server
        drain_prefect_queues()


@pytest.fixture(scope="module")
def object_store(warc_dir):
    """An S3-compatible store on 127.0.0.1: the fixtures' WARC files under s3://cluster-crawls/cc/,
    and an empty bucket s3://cluster-work for builds; yields the environment that reaches it."""
    from simweb.tasks.sources import list_archive_files

    with s3_store(CRAWLS, WORK) as (client, env):
        for f in map(Path, list_archive_files(str(warc_dir))):
            client.put_object(Bucket=CRAWLS, Key=f"cc/{f.name}", Body=f.read_bytes())
        yield env


@pytest.fixture(scope="module")
def dask_cluster(tmp_path_factory, prefect_server, object_store):
    """A scheduler and two single-threaded workers, each its own process, on 127.0.0.1."""
    from distributed import Client

    base = tmp_path_factory.mktemp("dask")
    port = free_port()
    address = f"tcp://127.0.0.1:{port}"
    env = dict(os.environ, **prefect_server.environment(), **object_store)
    procs = []
    logs = []

    def start(args, name):
        log = open(base / f"{name}.log", "wb")
        logs.append(log)
        procs.append(subprocess.Popen([DASK, *args], stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                      env=env, cwd=base, start_new_session=True))

    try:
        start(["scheduler", "--host", "127.0.0.1", "--port", str(port), "--no-dashboard"], "scheduler")
        for i in (1, 2):
            start(["worker", address, "--host", "127.0.0.1", "--nthreads", "1", "--no-dashboard",
                   "--name", f"worker-{i}", "--local-directory", str(base / f"w{i}"), "--death-timeout", "60",
                   "--preload", "simweb.tasks.worker_preload"],
                  f"worker-{i}")
        deadline = time.monotonic() + 120
        client = None
        while client is None:
            try:
                client = Client(address, timeout=10)
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(1)
        with client:
            client.wait_for_workers(2, timeout=120)
            yield address, client
    finally:
        for p in reversed(procs):
            stop_process_group(p, signal.SIGTERM, timeout=20)
        for log in logs:
            log.close()


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_build_index_on_a_distributed_cluster_equals_the_local_build(dask_cluster, prefect_server, warc_dir, tmp_path,
                                                                     build_in_process, index_diff, monkeypatch):
    from prefect.settings import PREFECT_API_URL, temporary_settings

    from simweb.api import open_index
    from simweb.flows.build_index import build_index
    from simweb.tasks import index_store
    from simweb.tasks.layout import crawl_folder
    from simweb.tasks.sources import list_archive_files

    address, client = dask_cluster
    crawl = tmp_path / "warc"
    crawl.mkdir()
    for f in sorted(warc_dir.glob("*.warc*")):
        shutil.copy(f, crawl / f.name)
    files = list_archive_files(str(crawl))
    before = client.run(lambda dask_worker: dask_worker.state.executed_count)

    from simweb.tasks import precomputed
    from simweb.tasks.stages.related_table import related_table_shard

    monkeypatch.setattr(precomputed, "SHARD_DOCS", 300)  # the related pages computed ahead in four shards
    with temporary_settings({PREFECT_API_URL: prefect_server.api_url}):
        # Two bags parts: the signatures and invert stages, each a task run of its own, hand their
        # parts to the workers as task runs of their own.
        summary = build_index(crawl=str(crawl), out=str(tmp_path / "distributed"), dask_address=address,
                              min_in_degree=None, partitions=2)

    executed = client.run(lambda dask_worker: dask_worker.state.executed_count)
    done = {w: executed[w] - before.get(w, 0) for w in executed}
    assert len(done) == 2 and all(n > 0 for n in done.values()), f"tasks per worker: {done}"
    assert sum(done.values()) >= len(files)

    local = build_in_process(str(crawl), tmp_path / "local", min_in_degree=None)
    assert summary.ingest.pages_written > 0 and summary.ingest.files_read == len(files)
    for dataset in ("pages", "links"):
        assert _rows(crawl_folder(str(tmp_path / "distributed")) + f"/{dataset}") == \
            _rows(crawl_folder(str(tmp_path / "local")) + f"/{dataset}")
    # The same index, byte for byte; its manifest says the bags came in two parts, not one.
    assert index_diff(summary.index, local) in ([], [index_store.MANIFEST])
    manifests = [dict(index_store.read_manifest(v)) for v in (summary.index, local)]
    for manifest in manifests:
        manifest.pop("created"), manifest["signature_stats"].pop("parts")
    assert manifests[0] == manifests[1]
    index = open_index(tmp_path / "distributed")
    assert len(index) == len(open_index(local)) > 0
    # The related pages computed ahead, their shards on the workers: the table computed here, in one go.
    figures = summary.stages["related-table"]["stats"]
    assert (figures["shards"], figures["shards_computed"]) == (4, 4)
    precomputed.compute_table(local, related_table_shard, shard_docs=2000)
    tables = [precomputed.open_table(index_store.open_version(v)) for v in (summary.index, local)]
    for name in ("docs", "counts", "exact"):
        assert np.array_equal(getattr(tables[0], name), getattr(tables[1], name)), name


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_a_crawl_on_an_object_store_builds_on_the_cluster_with_every_stage_output_there(
        dask_cluster, prefect_server, warc_dir, tmp_path, build_in_process, index_diff):
    """`simweb build s3://cluster-crawls/cc/ --work s3://cluster-work/build --dask-address …`: the workers read
    the WARC files from the store and write the ingested crawl and every stage output to it;
    only the index (memory-mapped by queries) is on this machine's disk, equal to a local build's.
    Built again, every stage is reused from the store."""
    from prefect.settings import PREFECT_API_URL, temporary_settings

    from simweb.flows.build_index import build_index
    from simweb.tasks import stagecache
    from simweb.tasks.layout import crawl_folder, stages_folder, work_folder
    from simweb.tasks.sources import list_archive_files
    from simweb.tasks.storage import filesystem

    address, client = dask_cluster
    out, work = tmp_path / "index", f"s3://{WORK}/build"
    before = client.run(lambda dask_worker: dask_worker.state.executed_count)
    with temporary_settings({PREFECT_API_URL: prefect_server.api_url}):
        summary = build_index(crawl=f"s3://{CRAWLS}/cc/", out=str(out), work=work, dask_address=address,
                              min_in_degree=None)
    executed = client.run(lambda dask_worker: dask_worker.state.executed_count)
    assert all(executed[w] > before.get(w, 0) for w in executed) and len(executed) == 2

    files = list_archive_files(str(warc_dir))
    assert summary.ingest.files_read == len(files) and summary.ingest.pages_written > 0
    assert index_diff(summary.index, build_in_process(str(warc_dir), tmp_path / "local", min_in_degree=None)) == []
    # The crawl and every stage output are on the store, whole; none of it on the local disk.
    assert work_folder(str(out)) == work and crawl_folder(str(out)) == f"{work}/crawl"
    assert {"bags", "signatures", "invert"} <= set(summary.stages)
    for name, stage in summary.stages.items():
        if name == "related-table":  # kept in the published version, which is local
            assert stage["path"] == summary.index
            continue
        assert stage["path"].startswith(f"{stages_folder(str(out))}/"), (name, stage["path"])
        manifest = stagecache.stage_manifest(stage["path"])
        assert manifest is not None and stagecache.output_damage(stage["path"], manifest) == [], name
    fs, _ = filesystem(work)
    assert fs.find(f"{WORK}/build/crawl/pages") and fs.find(f"{WORK}/build/crawl/links")
    assert not [p for p in fs.find(f"{WORK}/build") if "/.tmp-" in p]  # no temporaries left behind
    assert sorted(p.name for p in out.iterdir()) == ["CURRENT", "EPOCH.json", "LOCK", "WORK", "epochs", "live",
                                                    "versions"]
    # Again, without naming the work folder: the index remembers it; nothing is computed again.
    with temporary_settings({PREFECT_API_URL: prefect_server.api_url}):
        again = build_index(crawl=f"s3://{CRAWLS}/cc/", out=str(out), dask_address=address, min_in_degree=None)
    assert again.ingest.files_read == 0 and again.ingest.files_unchanged == len(files)
    assert all(stage["reused"] for stage in again.stages.values()) and again.index == summary.index
