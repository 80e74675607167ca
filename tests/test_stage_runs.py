"""Every stage a task run: the failed one red, the reused ones say so, a retry from the API as the
UI's Retry button does it resumes at the failed stage.

`simweb orchestrate up` serves build-index on a free port; a run is given a directory file that
is not text (a damaged download), which the signatures stage reads: the stages before it
complete and signatures fails. The file is then mended and the run retried the way the UI's
Retry button does it — ``POST /flow_runs/{id}/set_state`` with a Scheduled state named
AwaitingRetry, not forced — and the served process runs it again: the same flow run, its second
attempt, reusing every stage before signatures.
"""
from __future__ import annotations

import shutil

import pytest
from test_deployments import _api_post, _wait_for, up_environment
from test_scheduled_runs import _start

from simweb.deployments.server import free_port, is_healthy, stop_process_group

WARCS = ("warcfile.warc.gz", "example.warc.gz")
BEFORE = ("bag-fragments", "bag-merge", "bags")


def _finished(api: str, run_id: str):
    run = _api_post(api, "/flow_runs/filter", {"flow_runs": {"id": {"any_": [run_id]}}})[0]
    return run if run["state_type"] in ("COMPLETED", "FAILED", "CRASHED", "CANCELLED") else None


def _task_runs(api: str, run_id: str, attempt: int) -> dict[str, str]:
    """Task-run name -> state name, of one attempt (run count) of the flow run."""
    runs = _api_post(api, "/task_runs/filter", {"flow_runs": {"id": {"any_": [run_id]}}, "limit": 200})
    return {r["name"]: r["state_name"] for r in sorted(runs, key=lambda r: r["start_time"] or "")
            if r["flow_run_run_count"] == attempt}


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_a_failed_stage_is_the_red_task_run_and_the_uis_retry_resumes_there(tmp_path, warc_dir):
    data = tmp_path / "data"
    (data / "warc").mkdir(parents=True)
    for name in WARCS:
        shutil.copy(warc_dir / name, data / "warc" / name)
    directory = data / "directory.tsv"
    directory.write_bytes(b"\xff\xfe\x00 not a directory file")
    port = free_port()
    api = f"http://127.0.0.1:{port}/api"
    env = up_environment(tmp_path / "prefect-home")
    log = tmp_path / "up.log"
    proc = _start(["--port", str(port), "--data", str(data), "--only", "build-index"], env, tmp_path, log)
    try:
        _wait_for(lambda: is_healthy(api), 240, "the Prefect server", proc, log)
        deployment = _wait_for(lambda: _api_post(api, "/deployments/filter", {}), 120, "the deployment", proc, log)[0]
        run = _api_post(api, f"/deployments/{deployment['id']}/create_flow_run", {"parameters": {
            **deployment["parameters"], "directory": str(directory), "n_workers": 1, "min_in_degree": None}})
        failed = _wait_for(lambda: _finished(api, run["id"]), 400, "the run to fail", proc, log)
        assert failed["state_type"] == "FAILED", failed["state"]

        first = _task_runs(api, run["id"], 1)
        ingest = [name for name in first if name.startswith("ingest ")]
        assert ingest and all(first[name] == "Completed" for name in ingest), first
        assert [first[stage] for stage in BEFORE] == ["Completed"] * len(BEFORE), first
        assert first["signatures"] == "Failed", first  # the red one
        assert "invert" not in first and "publish" not in first, first
        # Each stage's figures are on its task run.
        figures = _api_post(api, "/artifacts/filter", {"artifacts": {"key": {"any_": ["stage-bag-fragments"]}},
                                                       "flow_runs": {"id": {"any_": [run["id"]]}}})
        assert figures and "| pages |" in figures[0]["data"] and figures[0]["task_run_id"], figures

        # The user mends the file and presses Retry (what the UI's button sends).
        directory.write_text("http://example.com/\tTop/Reference/Examples\n")
        answer = _api_post(api, f"/flow_runs/{run['id']}/set_state", {
            "state": {"type": "SCHEDULED", "name": "AwaitingRetry", "message": "Retry from the UI"}, "force": False})
        assert answer["status"] == "ACCEPT", answer
        done = _wait_for(lambda: (lambda r: r and r["run_count"] == 2 and r)(_finished(api, run["id"])), 400,
                         "the retried run to finish", proc, log)
        assert done["state_type"] == "COMPLETED", done["state"]
        # The second attempt of the same flow run: every stage before signatures reused, and said so.
        second = _task_runs(api, run["id"], 2)
        assert [second[stage] for stage in BEFORE] == ["Reused"] * len(BEFORE), second
        assert [second[stage] for stage in ("signatures", "invert", "publish", "related-table")] == ["Completed"] * 4, \
            second
    finally:
        stop_process_group(proc, timeout=60)
    assert (data / "index" / "CURRENT").exists()
