"""The build-index flow's ingest stage through Prefect: a task per WARC file on a Dask cluster."""
from __future__ import annotations

import pytest
from prefect import flow
from prefect.states import Completed, Failed
from prefect.task_runners import ThreadPoolTaskRunner

from flows.build_index import build_index, dask_task_runner, ingest_stage
from tasks.ingest import IngestStats, ingest_files, retry_on_io_error
from tasks.storage import read_parquet


def test_build_index_ingests_two_warc_files_on_dask(prefect_harness, warc_dir, tmp_path):
    """Two real files through Prefect and a one-worker Dask LocalCluster; the result equals
    ingesting the same files in-process (re-runs are covered in test_ingest_warc.py)."""
    crawl = [str(warc_dir / "example.warc.gz"), str(warc_dir / "example-iana.org-chunked.warc")]
    out = tmp_path / "index"
    built = build_index(crawl, str(out), until="ingest", crawl_out=str(out), n_workers=1)
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
            return ingest_stage(runner, files, str(tmp_path / "out"), io_retries=2)

    stats = stage()
    assert stats.files_read == 1 and stats.pages_written == 1
    (error,) = stats.file_errors
    assert error.path == files[0] and "FileNotFoundError" in error.reason


def failed_with(exc: BaseException):
    return Failed(data=exc, message=repr(exc))


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
def test_only_transient_io_errors_are_retried(exc, retry):
    assert retry_on_io_error(None, None, failed_with(exc)) is retry


def test_a_completed_state_is_not_retried():
    assert retry_on_io_error(None, None, Completed(data=1)) is False


def test_dask_task_runner_options():
    remote = dask_task_runner("tcp://scheduler:8786")
    assert remote.address == "tcp://scheduler:8786" and remote.cluster_kwargs == {}
    local = dask_task_runner(None, 3)
    assert local.address is None
    assert local.cluster_kwargs["n_workers"] == 3 and local.cluster_kwargs["threads_per_worker"] == 1
    assert dask_task_runner().cluster_kwargs["n_workers"] >= 1
    with pytest.raises(ValueError, match="one or the other"):
        dask_task_runner("tcp://scheduler:8786", 2)
    with pytest.raises(ValueError, match="at least 1"):
        dask_task_runner(None, 0)

