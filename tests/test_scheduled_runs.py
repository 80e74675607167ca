"""Left running: the server's own scheduler creates the runs, served runs ingest the inbox, the UI
answers on the port it was started on.

`simweb orchestrate up --port N --ingest-every 5` on a free port (never 4200) with its own
PREFECT_HOME: nothing here creates a run of ingest-new-crawl — every run is one the Prefect
server's scheduler service made, which the serving process then ran. The server's own log
(``$PREFECT_HOME/simweb-server-N.log``) is read for scheduler errors.
"""
from __future__ import annotations

import re
import shutil
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest
from test_deployments import _api_get, _api_post, _interruptible, _wait_for, up_environment

from simweb.deployments.server import DEFAULT_PORT, free_port, is_healthy, stop_process_group

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
#: Dropped into the inbox one after another (a page each, then a crawl of many): every update
#: grows the crawl past max_growth, so each re-weighs every bag, as a full build does.
SOAK_FILES = ("example.warc.gz", "example-iana.org-chunked.warc", "warcfile.warc.gz")
EVERY_SECONDS = 5


def _start(args: list[str], env: dict[str, str], cwd: Path, log: Path) -> subprocess.Popen:
    with open(log, "wb") as out:
        return subprocess.Popen([sys.executable, "-m", "simweb.cli", "orchestrate", "up", *args],
                                stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env, cwd=cwd,
                                start_new_session=True, preexec_fn=_interruptible)


@pytest.fixture(scope="module")
def scheduled(tmp_path_factory):
    """`simweb orchestrate up` serving ingest-new-crawl every few seconds, with an empty inbox."""
    base = tmp_path_factory.mktemp("scheduled")
    data, home = base / "data", base / "prefect-home"
    port = free_port()
    while port == DEFAULT_PORT:  # the point is a port other than the default
        port = free_port()
    api = f"http://127.0.0.1:{port}/api"
    env = up_environment(home)
    log = base / "orchestrate-up.log"
    proc = _start(["--port", str(port), "--data", str(data), "--only", "ingest-new-crawl",
                   "--ingest-every", str(EVERY_SECONDS)], env, base, log)
    try:
        _wait_for(lambda: is_healthy(api), 240, "the Prefect server", proc, log)
        deployment = _wait_for(lambda: _api_post(api, "/deployments/filter", {}), 120, "the deployment", proc, log)[0]
        yield {"api": api, "port": port, "data": data, "env": dict(env, PREFECT_API_URL=api), "log": log,
               "proc": proc, "deployment": deployment, "server_log": home / f"simweb-server-{port}.log"}
    finally:
        stop_process_group(proc, timeout=60)


def _runs(api: str, deployment_id: str) -> list[dict]:
    """The deployment's flow runs, oldest first by their expected start."""
    runs = _api_post(api, "/flow_runs/filter", {"deployments": {"id": {"any_": [deployment_id]}},
                                                "sort": "EXPECTED_START_TIME_ASC", "limit": 200})
    return runs


def _scheduler_errors(server_log: Path) -> list[str]:
    """Lines of the server's log that say its services failed (the scheduler's among them)."""
    text = server_log.read_text(errors="replace")
    return [line for line in text.splitlines() if "Traceback" in line or re.search(r"\|\s*ERROR\s*\|", line)
            or "bulk DML" in line]


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_the_servers_scheduler_creates_the_runs_and_a_served_one_completes(scheduled):
    api, deployment = scheduled["api"], scheduled["deployment"]
    assert deployment["schedules"][0]["schedule"]["interval"] == EVERY_SECONDS
    by_scheduler = lambda: [r for r in _runs(api, deployment["id"]) if r["auto_scheduled"]]
    runs = _wait_for(lambda: len(by_scheduler()) >= 2 and by_scheduler(), 180, "runs made by the scheduler",
                     scheduled["proc"], scheduled["log"])
    assert all(r["created_by"]["type"] == "SCHEDULE" for r in runs), runs[0]["created_by"]
    done = _wait_for(lambda: [r for r in by_scheduler() if r["state_type"] == "COMPLETED"], 300,
                     "a scheduled run to complete", scheduled["proc"], scheduled["log"])
    assert done[0]["parameters"]["inbox"] == str(scheduled["data"] / "inbox")
    assert _scheduler_errors(scheduled["server_log"]) == []


def _ingested_by(api: str, run_id: str) -> list[str] | None:
    """The files a run's artifact says it ingested (None: the run found nothing new)."""
    found = _api_post(api, "/artifacts/filter", {"artifacts": {"flow_run_id": {"any_": [run_id]},
                                                               "key": {"any_": ["ingest-new-crawl-summary"]}}})
    if not found:
        return None
    return re.findall(r"^- `([^`]+)`$", found[0]["data"], flags=re.MULTILINE)


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_three_scheduled_runs_each_ingest_the_files_dropped_before_them(scheduled, warc_dir, tmp_path,
                                                                       build_in_process, index_diff):
    """The soak: a file dropped into the inbox, the next scheduled run ingests exactly it and
    publishes; three times in a row; then the index is the one a build of the three files makes."""
    from simweb.tasks.ledger import read_ledger
    from simweb.tasks.storage import file_digest

    api, data, deployment = scheduled["api"], scheduled["data"], scheduled["deployment"]
    inbox, crawl = data / "inbox", data / "index" / "crawl"
    ingested: list[list[str]] = []
    for name in SOAK_FILES:
        # copy2 keeps the file's time: it is settled (not still being copied) when the next run looks.
        shutil.copy2(warc_dir / name, inbox / name)
        digest = file_digest(str(inbox / name))
        _wait_for(lambda: read_ledger(str(crawl)).get(digest, {}).get("indexed"), 300, f"{name} to be indexed",
                  scheduled["proc"], scheduled["log"])
        # The run that indexed it: the one whose artifact names files (the others found nothing new).
        # The ledger says "indexed" before that run is Completed: wait for the run, not for any run.
        def indexing_runs(before: int = len(ingested)) -> list | None:
            done = [r for r in _runs(api, deployment["id"]) if r["state_type"] == "COMPLETED"
                    and _ingested_by(api, r["id"]) is not None]
            return done if len(done) > before else None

        runs = _wait_for(indexing_runs, 60, "the run's artifact", scheduled["proc"], scheduled["log"])
        runs.sort(key=lambda r: r["start_time"])  # a backlog of due runs is not started by its order
        assert len(runs) == len(ingested) + 1, [r["name"] for r in runs]
        assert runs[-1]["auto_scheduled"] and runs[-1]["created_by"]["type"] == "SCHEDULE"
        ingested.append(_ingested_by(api, runs[-1]["id"]))
    assert ingested == [[name] for name in SOAK_FILES]
    failed = [r["name"] for r in _runs(api, deployment["id"]) if r["state_type"] in ("FAILED", "CRASHED")]
    assert failed == []
    assert _scheduler_errors(scheduled["server_log"]) == []

    live = Path(data / "index" / "live").resolve()
    reference = build_in_process([str(warc_dir / name) for name in SOAK_FILES], tmp_path / "reference",
                                 min_in_degree=None)  # the flow's default
    assert index_diff(str(live), reference) == []


# ---------------------------------------------------------------------------------------
# The UI on the port it was started on


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_the_ui_is_told_the_api_of_the_port_it_was_started_on(scheduled):
    import json

    with urllib.request.urlopen(f"http://127.0.0.1:{scheduled['port']}/ui-settings", timeout=30) as answer:
        settings = json.loads(answer.read())
    assert settings["api_url"] == scheduled["api"]


@pytest.mark.slow
@pytest.mark.timeout(600)
@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (Debian: apt-get install -y chromium)")
def test_a_run_page_renders_in_chromium_on_a_port_other_than_4200(scheduled, tmp_path):
    api, deployment = scheduled["api"], scheduled["deployment"]
    run = _wait_for(lambda: [r for r in _runs(api, deployment["id"]) if r["state_type"] == "COMPLETED"], 300,
                    "a completed run", scheduled["proc"], scheduled["log"])[0]
    page = f"http://127.0.0.1:{scheduled['port']}/runs/flow-run/{run['id']}"
    out = subprocess.run(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-dev-shm-usage", "--virtual-time-budget=20000", f"--user-data-dir={tmp_path / 'profile'}",
         "--dump-dom", page],
        capture_output=True, text=True, timeout=240,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    dom = out.stdout
    assert "Can't connect to Server API" not in dom
    # The page shows what only the API knows: the run's name, its flow and its state.
    assert run["name"] in dom and "ingest-new-crawl" in dom and "Completed" in dom, dom[-3000:]


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_up_serves_to_the_server_prefect_api_url_names(scheduled, tmp_path):
    """With PREFECT_API_URL naming a user's own server (here the one above) and no --port, `up`
    starts no server of its own: it serves its deployments to that one."""
    env = dict(scheduled["env"], PREFECT_HOME=str(tmp_path / "home"))
    log = tmp_path / "up.log"
    proc = _start(["--data", str(tmp_path / "data"), "--only", "debdocs-corpus", "--no-schedule"], env, tmp_path, log)
    try:
        api = scheduled["api"]
        _wait_for(lambda: "debdocs-corpus" in {d["name"] for d in _api_post(api, "/deployments/filter", {})}, 180,
                  "the deployment on the user's server", proc, log)
        assert f"Using the Prefect server at PREFECT_API_URL={api}" in log.read_text()
        assert not list((tmp_path / "home").glob("simweb-server-*.log")), "it started a server of its own"
    finally:
        stop_process_group(proc, timeout=60)
    flows = {f["id"]: f["name"] for f in _api_post(api, "/flows/filter", {})}
    assert "debdocs-corpus" in flows.values()
    assert _api_get(api, "/health") is True
