"""The build-index flow's ingest stage through Prefect: a task per shard of WARC files on a Dask cluster."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from prefect import flow
from prefect.task_runners import ThreadPoolTaskRunner

from simweb.flows.build_index import build_index

from simweb.flows.cluster import dask_task_runner, worker_slots, workers
from simweb.tasks.ingest import files as ingest_files_module
from simweb.tasks.ingest import retries as ingest_retries
from simweb.tasks.ingest import shards as ingest_shards
from simweb.tasks.ingest.files import ingest_files
from simweb.tasks.ingest.retries import ingest_with_retries, is_transient_io_error
from simweb.tasks.ingest.shards import plan_shards
from simweb.tasks.ingest.stats import IngestStats
from simweb.tasks.options import RunOptions
from simweb.tasks.stages.ingest import ingest_stage
from simweb.tasks.storage import read_parquet


@pytest.mark.parametrize("n_workers", [1, 2], ids=["worker-thread", "worker-processes"])
def test_build_index_ingests_two_warc_files_on_dask(n_workers, prefect_harness, warc_dir, tmp_path):
    """Two real files through Prefect and a Dask LocalCluster — one worker thread in the flow's
    process, or two worker processes that preload the stage modules; the result equals
    ingesting the same files in-process (re-runs are covered in test_ingest_warc.py)."""
    crawl = [str(warc_dir / "example.warc.gz"), str(warc_dir / "example-iana.org-chunked.warc")]
    out = tmp_path / "index"
    built = build_index(crawl, str(out), until="ingest", crawl_out=str(out), n_workers=n_workers)
    stats = built.ingest
    assert isinstance(stats, IngestStats)
    assert built.stages == {} and built.index is None
    # example.warc.gz: 6 records, 1 page; example-iana.org-chunked.warc: 3 records, 1 page.
    assert (stats.files_read, stats.records_read, stats.pages_written) == (2, 9, 2)
    assert dict(stats.skipped) == {"warcinfo record": 3, "request record": 3, "revisit record": 1}
    assert stats.file_errors == ()
    urls = sorted(read_parquet(str(out / "pages"), ["url"]).column("url").to_pylist())
    assert urls == ["http://example.com/", "http://www.iana.org/"]
    assert read_parquet(str(out / "links")).num_rows == stats.links_written

    reference = ingest_files(crawl, str(tmp_path / "in-process"))
    assert reference == stats


def test_a_file_that_cannot_be_read_is_reported_and_the_others_are_ingested(prefect_harness, warc_dir, tmp_path):
    files = [str(tmp_path / "vanished.warc.gz"), str(warc_dir / "example.warc.gz")]

    @flow
    def stage() -> IngestStats:
        with ThreadPoolTaskRunner(max_workers=1) as runner:
            return ingest_stage(files, str(tmp_path / "out"), RunOptions(io_retries=2), on=workers(runner))

    stats = stage()
    assert stats.files_read == 1 and stats.pages_written == 1
    (error,) = stats.file_errors
    assert error.path == files[0] and "FileNotFoundError" in error.reason


@pytest.mark.parametrize(
    "exc, retry",
    [
        (OSError(5, "Input/output error"), True),
        (TimeoutError("read timed out"), True),  # an OSError
        (ConnectionResetError("reset by peer"), True),
        (FileNotFoundError("gone"), False),
        (PermissionError("denied"), False),
        (ValueError("deterministic"), False),
        (RuntimeError("a bug"), False),
    ],
)
def test_only_transient_io_errors_are_retried(exc, retry, warc_dir, tmp_path, monkeypatch):
    assert is_transient_io_error(exc) is retry
    calls = []
    real = ingest_retries.ingest_warc

    def flaky(path, out, piece=(0, 1)):  # fails the first time with exc, then reads the file
        calls.append(path)
        if len(calls) == 1:
            raise exc
        return real(path, out)

    monkeypatch.setattr(ingest_retries, "ingest_warc", flaky)
    stats = ingest_with_retries(str(warc_dir / "example.warc.gz"), str(tmp_path), io_retries=2, retry_delay=0.0)
    if retry:
        assert len(calls) == 2 and stats.pages_written == 1 and stats.file_errors == ()
    else:
        assert len(calls) == 1 and stats.pages_written == 0
        (error,) = stats.file_errors
        assert type(exc).__name__ in error.reason


def test_a_file_failing_every_retry_is_reported_with_the_attempts(tmp_path, monkeypatch):
    def broken(path, out, piece=(0, 1)):
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(ingest_retries, "ingest_warc", broken)
    stats = ingest_with_retries(str(tmp_path / "x.warc.gz"), str(tmp_path), io_retries=2, retry_delay=0.0)
    (error,) = stats.file_errors
    assert "after 3 attempts" in error.reason and "Input/output error" in error.reason


def _files_of_sizes(tmp_path, sizes, name="f"):
    files = []
    for i, size in enumerate(sizes):
        path = tmp_path / f"{name}{i}.warc.gz"
        with open(path, "wb") as f:
            f.truncate(size)  # sparse: only the size is read
        files.append(str(path))
    return files


def _paths(shards):
    assert all(item.n == 1 for shard in shards for item in shard)  # no file cut
    return [[item.path for item in shard] for shard in shards]


def _makespan(shards, slots):
    """When the last slot ends, each shard handed in order to the first slot that is free."""
    ends = [0] * slots
    for shard in _paths(shards):
        first = min(range(slots), key=lambda s: (ends[s], s))
        ends[first] += sum(os.path.getsize(f) if os.path.exists(f) else 0 for f in shard)
    return max(ends)


def test_shards_keep_every_file_once_largest_first_and_pack_only_small_files(tmp_path):
    files = _files_of_sizes(tmp_path, [900, 100, 500, 500, 400, 300, 200, 100, 50])
    files.append(str(tmp_path / "missing.warc.gz"))  # counted as the median size (300)
    shards = _paths(plan_shards(files, 3))
    assert sorted(f for shard in shards for f in shard) == sorted(files)
    loads = [sum(os.path.getsize(f) if os.path.exists(f) else 300 for f in shard) for shard in shards]
    assert loads == sorted(loads, reverse=True)
    # 3,350 bytes for 3 slots: shards of at most 3,350 // 12 = 279 bytes, unless of one file.
    assert all(len(shard) == 1 or load <= 279 for shard, load in zip(shards, loads))
    assert sorted(loads, reverse=True) == [900, 500, 500, 400, 300, 300, 250, 200]
    assert all(shard == sorted(shard) for shard in shards)  # files keep their order within a shard
    assert _paths(plan_shards(files[:2], 8)) == [[files[0]], [files[1]]]
    assert plan_shards([], 4) == []


def test_shards_of_a_few_uneven_files_let_two_slots_end_together(tmp_path):
    # The 100k scale crawl's five WARC files (MB): one shard each, largest first, so that the
    # slot done first takes the next — 276 at most, where two even shards a slot made 306.
    files = _files_of_sizes(tmp_path, [181, 107, 118, 95, 30])
    shards = plan_shards(files, 2)
    assert _paths(shards) == [[files[0]], [files[2]], [files[1]], [files[3]], [files[4]]]
    assert _makespan(shards, 2) == 276


def test_many_small_files_are_packed_into_few_shards(tmp_path):
    files = _files_of_sizes(tmp_path, [1000 + i for i in range(400)])
    shards = plan_shards(files, 2)
    assert sorted(f for shard in _paths(shards) for f in shard) == sorted(files)
    total = sum(os.path.getsize(f) for f in files)
    assert 8 <= len(shards) <= 10  # about four a slot, each near total / 8
    assert _makespan(shards, 2) <= total / 2 + max(os.path.getsize(f) for f in files) * 2


def test_the_stage_runs_a_few_shards_per_worker(prefect_harness, warc_dir, tmp_path):
    files = sorted(str(p) for p in warc_dir.iterdir() if p.name.endswith((".warc", ".warc.gz")))
    assert len(files) > 4

    @flow
    def stage() -> tuple[IngestStats, int]:
        with ThreadPoolTaskRunner(max_workers=1) as runner:
            return ingest_stage(files, str(tmp_path / "out"), on=workers(runner)), worker_slots(runner)

    stats, slots = stage()
    assert slots == 1
    assert stats == ingest_files(files, str(tmp_path / "in-process"))


def test_dask_task_runner_options():
    remote = dask_task_runner("tcp://scheduler:8786")
    assert remote.address == "tcp://scheduler:8786" and remote.cluster_kwargs == {}
    local = dask_task_runner(None, 3)
    assert local.address is None
    assert local.cluster_kwargs["n_workers"] == 3 and local.cluster_kwargs["threads_per_worker"] == 1
    assert local.cluster_kwargs["preload"] == ["simweb.tasks.worker_preload"] and local.cluster_kwargs["processes"]
    single = dask_task_runner(None, 1)  # one worker: a thread in the flow's own process
    assert single.cluster_kwargs == {"n_workers": 1, "threads_per_worker": 1, "processes": False,
                                     "dashboard_address": "127.0.0.1:0", "worker_dashboard_address": "127.0.0.1:0"}
    assert dask_task_runner().cluster_kwargs["n_workers"] >= 1
    with pytest.raises(ValueError, match="one or the other"):
        dask_task_runner("tcp://scheduler:8786", 2)
    with pytest.raises(ValueError, match="at least 1"):
        dask_task_runner(None, 0)



def test_the_worker_preload_imports_the_stage_modules():
    # A fresh interpreter, as a worker process is: the preload module imports cleanly and
    # leaves Prefect's task engine and every stage module imported.
    code = ("import sys, simweb.tasks.worker_preload; "
            "missing = [m for m in ('prefect.task_engine', 'simweb.tasks.ingest.task', 'simweb.tasks.bags.task', "
            "'simweb.tasks.signatures', 'simweb.tasks.dedup') if m not in sys.modules]; print(missing)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                         cwd=str(Path(__file__).resolve().parents[1]))
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def test_local_cluster_workers_start_without_dasks_malloc_trim_threshold():
    """Dask starts worker processes with MALLOC_TRIM_THRESHOLD_ set, which turns off glibc's
    adaptive mmap threshold (every large temporary array faults its pages in anew); the flows'
    clusters start theirs with Dask's other settings only."""
    import dask
    from distributed import Client, LocalCluster

    from simweb.flows import cluster as cluster_module
    from simweb.flows.cluster import _worker_process_environment

    key = "distributed.nanny.pre-spawn-environ"
    before = dict(dask.config.get(key))
    with _worker_process_environment():
        environ = dask.config.get(key)
        assert "MALLOC_TRIM_THRESHOLD_" not in environ
        expected = {k: v for k, v in before.items() if k != "MALLOC_TRIM_THRESHOLD_"}
        if cluster_module._USER_ARENA_MAX is None:  # the user's own setting is kept
            expected["MALLOC_ARENA_MAX"] = "2"
        assert environ == expected
        with LocalCluster(n_workers=1, threads_per_worker=1, processes=True, host="127.0.0.1",
                          dashboard_address=None) as cluster, Client(cluster) as client:
            seen = client.run(lambda: (os.environ.get("MALLOC_TRIM_THRESHOLD_"), os.environ.get("OMP_NUM_THREADS"),
                                       os.environ.get("MALLOC_ARENA_MAX")))
    arenas = expected.get("MALLOC_ARENA_MAX", cluster_module._USER_ARENA_MAX)
    assert list(seen.values()) == [(cluster_module._USER_MALLOC_TRIM, str(before.get("OMP_NUM_THREADS", 1)), arenas)]
    assert dict(dask.config.get(key)) == before


def test_local_cluster_servers_tick_and_sample_less_often_unless_the_user_said_otherwise():
    """The scheduler and nannies of a local cluster live in the flow's process: their event-loop
    ticks and system samples are made rarer for the cluster's life, in its worker processes
    too; a value the user chose is kept, and Dask's own come back afterwards."""
    import dask
    from distributed import Client, LocalCluster

    from simweb.flows.cluster import QUIET_DASK, _worker_process_environment

    tick, monitor = "distributed.admin.tick.interval", "distributed.admin.system-monitor.interval"
    defaults = (dask.config.get(tick), dask.config.get(monitor))
    assert defaults == ("20ms", "500ms")  # the values QUIET_DASK replaces (a new Dask may change them)
    with _worker_process_environment():
        assert (dask.config.get(tick), dask.config.get(monitor)) == (QUIET_DASK[tick], QUIET_DASK[monitor])
        with LocalCluster(n_workers=1, threads_per_worker=1, processes=True, host="127.0.0.1",
                          dashboard_address=None) as cluster, Client(cluster) as client:
            seen = client.run(lambda: (dask.config.get(tick), dask.config.get(monitor)))
    assert list(seen.values()) == [(QUIET_DASK[tick], QUIET_DASK[monitor])]
    assert (dask.config.get(tick), dask.config.get(monitor)) == defaults
    with dask.config.set({tick: "50ms"}), _worker_process_environment():
        assert (dask.config.get(tick), dask.config.get(monitor)) == ("50ms", QUIET_DASK[monitor])


def test_a_large_file_is_cut_into_pieces_that_share_the_slots(tmp_path, warc_dir, monkeypatch):
    """A file well above its slot's share whose records are gzipped one by one is cut into
    pieces of about that share; a plain WARC file (whose payloads may hold lines that read as
    records), a small file, and any file on a single slot are not."""
    big = str(warc_dir / "warcfile.warc.gz")  # 135,896 bytes, 50 records
    plain = str(warc_dir / "example-iana.org-chunked.warc")
    small = str(warc_dir / "example.warc.gz")
    monkeypatch.setattr(ingest_shards, "PIECE_BYTES", 10_000)
    shards = plan_shards([big, plain, small], 2)
    items = [item for shard in shards for item in shard]
    cut = [item for item in items if item.path == big]
    # 148,542 bytes in all: a share of 148,542 // 8 = 18,567 bytes a shard, so 8 pieces of the big file.
    assert [(item.k, item.n) for item in sorted(cut, key=lambda i: i.k)] == [(k, 8) for k in range(8)]
    assert [(item.k, item.n) for item in items if item.path != big] == [(0, 1), (0, 1)]
    assert all(item.n == 1 for shard in plan_shards([big, plain, small], 1) for item in shard)
    monkeypatch.setattr(ingest_shards, "PIECE_BYTES", 1 << 20)
    assert all(item.n == 1 for shard in plan_shards([big, plain, small], 2) for item in shard)


def test_the_stage_reads_large_files_in_pieces_and_counts_each_file_once(prefect_harness, warc_dir, tmp_path,
                                                                        monkeypatch):
    files = [str(warc_dir / "warcfile.warc.gz"), str(warc_dir / "clueweb-quirk.warc.gz"),
             str(warc_dir / "example.warc.gz")]
    monkeypatch.setattr(ingest_shards, "PIECE_BYTES", 10_000)
    out = tmp_path / "out"

    @flow
    def stage() -> IngestStats:
        with ThreadPoolTaskRunner(max_workers=2) as runner:
            return ingest_stage(files, str(out), on=workers(runner))

    assert sum(item.n > 1 for shard in plan_shards(files, 2) for item in shard) > 4
    stats = stage()
    whole = ingest_files(files, str(tmp_path / "whole"))
    assert (stats.files_read, stats.files_by_format, stats.records_read, stats.parts, stats.file_errors) == (
        whole.files_read, whole.files_by_format, whole.records_read, whole.parts, whole.file_errors)
    assert stats.links_written >= whole.links_written and stats.pages_written >= whole.pages_written
    assert len(list((out / "pages").glob("*of*.parquet"))) > 4 and not list((out / "pieces").glob("*"))
    # Run again: every file unchanged, counted once, its pieces not read again.
    again = stage()
    assert (again.files_read, again.files_unchanged, again.records_read, again.pages_unchanged) == (
        0, 3, 0, stats.pages_written)
    # Read whole into the same folder (as `simweb ingest` does): still unchanged, nothing rewritten.
    assert ingest_files(files, str(out)).files_unchanged == 3


def test_a_file_read_whole_after_its_pieces_replaces_them(warc_dir, tmp_path):
    """Pieces of an unfinished reading of a file (a run stopped before all were in) are removed
    when the file is then read whole, so that the crawl holds each page once; and pieces that
    are all in replace a whole part that no stats record names."""
    from simweb.tasks.ingest.files import finish_pieces, ingest_warc

    path, out = str(warc_dir / "warcfile.warc.gz"), tmp_path / "out"
    first = ingest_warc(path, str(out), (0, 3))
    ingest_warc(path, str(out), (1, 3))  # the third piece never ran
    assert finish_pieces(path, str(out), 3, first.parts[0]) is None
    whole = ingest_warc(path, str(out))
    assert whole.files_read == 1
    assert sorted(p.name for p in (out / "pages").iterdir()) == [f"{first.parts[0]}.parquet"]

    out2 = tmp_path / "out2"
    ingest_warc(path, str(out2))
    (out2 / "stats" / f"{first.parts[0]}.json").unlink()  # as if killed before its stats were written
    for k in range(3):
        ingest_warc(path, str(out2), (k, 3))
    done = finish_pieces(path, str(out2), 3, first.parts[0])
    assert (done.records_read, done.pages_written) == (whole.records_read, whole.pages_written)
    assert sorted(p.name for p in (out2 / "pages").iterdir()) == [f"{first.parts[0]}.{k}of3.parquet"
                                                                    for k in (1, 2, 3)]


def test_pieces_read_by_a_run_stopped_before_their_file_was_finished_are_not_read_again(
        prefect_harness, warc_dir, tmp_path, monkeypatch):
    from simweb.tasks.ingest.task import ingest_shard

    files = [str(warc_dir / "warcfile.warc.gz")]
    monkeypatch.setattr(ingest_shards, "PIECE_BYTES", 10_000)
    out = tmp_path / "out"
    (shard, *rest) = plan_shards(files, 2)
    assert rest  # eight pieces, a shard each
    first = ingest_shard.fn([i.path for i in shard], str(out), pieces=[[i.k, i.n] for i in shard])
    assert first[0].records_read and not (out / "stats").exists()  # stopped here: no file finished
    calls = []
    real = ingest_files_module.read_archive
    monkeypatch.setattr(ingest_files_module, "read_archive", lambda *a: calls.append(a[3]) or real(*a))

    @flow
    def stage() -> IngestStats:
        with ThreadPoolTaskRunner(max_workers=2) as runner:
            return ingest_stage(files, str(out), on=workers(runner))

    stats = stage()
    assert sorted(calls) == sorted(piece_start(i) for s in rest for i in s)  # the other pieces only
    whole = ingest_files(files, str(tmp_path / "whole"))
    assert (stats.files_read, stats.records_read, stats.parts) == (1, whole.records_read, whole.parts)


def piece_start(item):
    from simweb.tasks.ingest.files import piece_range

    return piece_range(os.path.getsize(item.path), item.k, item.n)[0]


def test_verify_finds_a_damaged_piece_and_repair_removes_the_whole_file(warc_dir, tmp_path):
    from simweb.tasks.ingest.files import finish_pieces, ingest_warc
    from simweb.tasks.layout import crawl_folder
    from simweb.tasks.verify import audit, repair

    out = tmp_path / "index"
    crawl = Path(crawl_folder(str(out)))
    path = str(warc_dir / "warcfile.warc.gz")
    pieces = [ingest_warc(path, str(crawl), (k, 3)) for k in range(3)]
    part = pieces[0].parts[0]
    assert finish_pieces(path, str(crawl), 3, part) is not None
    assert audit(str(out)) == ([], 1)
    damaged = crawl / "links" / f"{part}.2of3.parquet"
    data = bytearray(damaged.read_bytes())
    data[100] ^= 0xFF
    damaged.write_bytes(bytes(data))
    (found,), _ = audit(str(out))
    assert found.problems == (f"links/{part}.2of3.parquet: its content differs from the SHA-256 in stats/{part}.json",)
    repair(str(out), [found])
    assert [p for folder in ("pages", "links", "aliases", "stats") for p in (crawl / folder).iterdir()] == []
