"""Deployments: the definitions, `simweb orchestrate`, and a real served run triggered like the UI's Run.

The integration test starts `simweb orchestrate up` (a real `prefect server start` on a free
127.0.0.1 port with its own PREFECT_HOME, serving the deployments), triggers `build-index`
with `prefect deployment run` — the same API call as the UI's Run button — and
`ingest-new-crawl` with `simweb orchestrate run`, and checks what they wrote against the same
stages run in this process.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from simweb.deployments import definitions
from simweb.deployments.server import free_port, is_healthy, stop_process_group
from simweb.commands.orchestrate import merge_params, parse_params

FIXTURE_WARCS = ("warcfile.warc.gz", "example.warc.gz")


def test_parameters_on_the_command_line_read_json_and_reach_into_typed_parameters():
    assert parse_params(["m=16", "alpha=0.25", "out=/data/index", "strategy.window_size=8",
                         'strategy.sources=["anchor"]', "dask_address=null", "name=007"]) == {
        "m": 16, "alpha": 0.25, "out": "/data/index", "strategy": {"window_size": 8, "sources": ["anchor"]},
        "dask_address": None, "name": "007",  # not valid JSON: kept as text
    }
    with pytest.raises(SystemExit, match="expected KEY=VALUE"):
        parse_params(["m16"])
    defaults = {"crawl": "/w", "strategy": {"window_size": 32, "stemming": "stem"}}
    assert merge_params(defaults, {"strategy": {"window_size": 8}}) == {
        "crawl": "/w", "strategy": {"window_size": 8, "stemming": "stem"},
    }


def test_every_available_flow_is_deployed_with_defaults_it_accepts(tmp_path):
    ws = definitions.Workspace.at(tmp_path / "data")
    deployments = {d.name: d for d in definitions.build_deployments(ws)}
    missing = definitions.missing_flows()
    assert set(deployments) | set(missing) == {s.name for s in definitions.SPECS}
    assert {"build-index", "ingest-new-crawl"} <= set(deployments), missing

    build = deployments["build-index"]
    assert build.parameters == {"crawl": ws.warc, "out": ws.index}
    assert build.entrypoint == "simweb.flows.build_index.build_index"
    assert build.schedules in (None, [])
    schema = build._parameter_openapi_schema.model_dump()
    # The UI draws its form from this schema: every flow parameter with its type.
    assert {"crawl", "out", "dask_address"} <= set(schema["properties"])

    ingest = deployments["ingest-new-crawl"]
    assert ingest.parameters == {"inbox": ws.inbox, "out": ws.index}
    assert [s.schedule.cron for s in ingest.schedules] == [definitions.INGEST_CRON]
    assert ingest.concurrency_limit == 1
    hourly = {d.name: d for d in definitions.build_deployments(ws, ingest_cron="*/5 * * * *")}
    assert [s.schedule.cron for s in hourly["ingest-new-crawl"].schedules] == ["*/5 * * * *"]
    unscheduled = definitions.build_deployments(ws, names=["ingest-new-crawl"], ingest_cron=None)
    assert [d.name for d in unscheduled] == ["ingest-new-crawl"] and unscheduled[0].schedules in (None, [])


def test_the_strategy_parameter_takes_the_text_form_as_well_as_its_fields(tmp_path):
    """What the server validates a run's parameters against (the deployment's schema) and what
    the flow then receives: the text form of `simweb build --strategy`, or the fields."""
    import jsonschema

    from prefect.exceptions import ParameterTypeError

    from simweb.core.strategy import Strategy
    from simweb.flows.build_index import build_index

    ws = definitions.Workspace.at(tmp_path)
    for deployment in definitions.build_deployments(ws, names=["build-index", "ingest-new-crawl"]):
        schema = deployment._parameter_openapi_schema.model_dump_for_openapi()
        strategy = schema["properties"]["strategy"]
        assert {"$ref": "#/definitions/Strategy"} in strategy["anyOf"]  # the form's typed fields
        assert {"type": "string", "title": "text form"}.items() <= strategy["anyOf"][1].items()
        for value in ("anchor:32+content+links,stem,dist,nmdf", {"window_size": 8, "stemming": "nostem"}):
            jsonschema.validate({**deployment.parameters, "strategy": value}, schema)
    text = "anchor:32+content+links,nostem,dist,nmdf"
    given = build_index.validate_parameters({"crawl": "c", "out": "o", "strategy": text})["strategy"]
    assert given == Strategy.parse(text) and isinstance(given, Strategy)
    fields = build_index.validate_parameters({"crawl": "c", "out": "o", "strategy": {"window_size": 8}})["strategy"]
    assert fields == Strategy(window_size=8)
    with pytest.raises(ParameterTypeError, match="strategy: Value error, window_size: expected 0…32 words"):
        build_index.validate_parameters({"crawl": "c", "out": "o", "strategy": "anchor:99+content"})


def test_a_few_small_new_files_are_ingested_in_the_flows_process():
    from simweb.flows.runsize import SMALL_INPUT_BYTES, in_process

    assert in_process(597)
    assert not in_process(SMALL_INPUT_BYTES)  # a large update starts a cluster
    assert not in_process(597, dask_address="tcp://10.0.0.5:8786") and not in_process(597, n_workers=2)
    assert not in_process(None)  # sizes not known (remote files)


def test_up_refuses_two_schedules_at_once(capsys):
    from simweb.cli import main

    assert main(["orchestrate", "up", "--ingest-every", "60", "--no-schedule"]) == 2
    assert "give one of them" in capsys.readouterr().err
    assert main(["orchestrate", "up", "--ingest-every", "0"]) == 2
    assert "expected a positive number of seconds" in capsys.readouterr().err


def test_a_default_the_flow_does_not_take_is_refused(tmp_path):
    ws = definitions.Workspace.at(tmp_path)
    with pytest.raises(TypeError, match="defaults name shingle_size, which simweb.flows.build_index.build_index does not take"):
        definitions.build_deployments(ws, names=["build-index"], overrides={"build-index": {"shingle_size": 4}})


def test_a_missing_flow_module_is_reported_not_fatal():
    ghost = definitions.DeploymentSpec(
        name="ghost", flow_module="simweb.flows.no_such_flow", flow_function="ghost", description="", parameters=dict
    )
    with pytest.raises(definitions.FlowNotAvailable, match="module simweb.flows.no_such_flow is not in this installation"):
        definitions.load_flow(ghost)


# ---------------------------------------------------------------------------------------
# A real server, the deployments served, runs triggered as the UI does


def _api_get(api: str, path: str):
    return _api(urllib.request.Request(f"{api}{path}"))


def _api_post(api: str, path: str, body: dict):
    return _api(urllib.request.Request(f"{api}{path}", data=json.dumps(body).encode(),
                                       headers={"Content-Type": "application/json"}, method="POST"))


def _api(req: urllib.request.Request, attempts: int = 30):
    """The Prefect API's JSON answer; a 503 (the server busy, as on a loaded machine) is asked
    again a second later, as Prefect's own client does."""
    for attempt in range(attempts):
        try:
            with urllib.request.urlopen(req, timeout=10) as r:
                return json.loads(r.read())
        except urllib.error.HTTPError as err:
            if err.code != 503 or attempt == attempts - 1:
                raise
            time.sleep(1)


def _wait_for(predicate, timeout: float, what: str, proc: subprocess.Popen, log: Path):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"`simweb orchestrate up` exited with {proc.returncode} while waiting for {what}:\n"
                        f"{log.read_text(errors='replace')[-4000:]}")
        value = predicate()
        if value:
            return value
        time.sleep(1)
    pytest.fail(f"timed out after {timeout:.0f} s waiting for {what}:\n{log.read_text(errors='replace')[-4000:]}")


def up_environment(prefect_home: Path) -> dict[str, str]:
    """The environment `simweb orchestrate up` runs with in these tests: its own PREFECT_HOME, no
    server of anybody else's (PREFECT_API_URL and the UI's API address unset), analytics off."""
    env = dict(os.environ, PREFECT_HOME=str(prefect_home), PREFECT_SERVER_ANALYTICS_ENABLED="false",
               DO_NOT_TRACK="1", PREFECT_LOGGING_LEVEL="INFO")
    for name in ("PREFECT_API_URL", "PREFECT_UI_API_URL", "PREFECT_SERVER_UI_API_URL"):
        env.pop(name, None)
    return env


@pytest.fixture(scope="module")
def orchestrated(tmp_path_factory, warc_dir):
    """`simweb orchestrate up` on a free loopback port, with a data folder holding two WARC files."""
    base = tmp_path_factory.mktemp("orchestrate")
    data = base / "data"
    (data / "warc").mkdir(parents=True)
    for name in FIXTURE_WARCS:
        shutil.copy(warc_dir / name, data / "warc" / name)
    port = free_port()
    api = f"http://127.0.0.1:{port}/api"
    env = up_environment(base / "prefect-home")
    log = base / "orchestrate-up.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "simweb.cli", "orchestrate", "up", "--port", str(port), "--data", str(data)],
            stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env, cwd=base,
            start_new_session=True, preexec_fn=_interruptible,
        )
    try:
        _wait_for(lambda: is_healthy(api), 240, "the Prefect server", proc, log)
        _wait_for(
            lambda: {d["name"] for d in _api_post(api, "/deployments/filter", {})} >= {"build-index", "ingest-new-crawl"},
            120, "the served deployments", proc, log,
        )
        client_env = dict(env, PREFECT_API_URL=api)
        yield {"api": api, "port": port, "data": data, "env": client_env, "log": log, "proc": proc}
    finally:
        stop_process_group(proc, timeout=40)
    assert not is_healthy(api), "the Prefect server kept running after `simweb orchestrate up` stopped"


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_a_build_started_like_the_ui_run_button_completes_and_writes_the_index(orchestrated, tmp_path,
                                                                              build_in_process, index_diff):
    api, data, env = orchestrated["api"], orchestrated["data"], orchestrated["env"]
    by_name = {d["name"]: d for d in _api_post(api, "/deployments/filter", {})}
    # The form the UI shows: typed parameters with the defaults from deployments/.
    build = by_name["build-index"]
    assert build["parameters"] == {"crawl": str(data / "warc"), "out": str(data / "index")}
    assert {"crawl", "out", "dask_address", "n_workers"} <= set(build["parameter_openapi_schema"]["properties"])
    ingest = by_name["ingest-new-crawl"]
    assert [s["schedule"]["cron"] for s in ingest["schedules"]] == [definitions.INGEST_CRON]
    assert all(s["active"] for s in ingest["schedules"])

    flow_name = _api_get(api, f"/flows/{build['flow_id']}")["name"]
    run = subprocess.run(
        [sys.executable, "-m", "prefect", "deployment", "run", f"{flow_name}/build-index",
         "--param", "n_workers=1", "--param", "min_in_degree=null", "--watch", "--watch-timeout", "400"],
        env=env, capture_output=True, text=True, timeout=450,
    )
    assert run.returncode == 0, f"{run.stdout}\n{run.stderr}\n{orchestrated['log'].read_text()[-4000:]}"
    assert "Completed" in run.stdout

    # The index answers queries, and it is the index the stages make when called directly.
    from simweb.api import open_index

    index = open_index(data / "index")
    reference = open_index(build_in_process(data / "warc", tmp_path / "reference", min_in_degree=None))
    assert index_diff(_live(data / "index"), _live(tmp_path / "reference")) == []
    urls = _urls(data / "index")
    answered = {u: [r.url for r in index.related(u, top=5, alpha=0.05)] for u in urls}
    assert any(answered.values()), "no page of the crawl has a related page"
    assert answered == {u: [r.url for r in reference.related(u, top=5, alpha=0.05)] for u in urls}


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_a_rebuild_with_a_changed_strategy_from_the_cli_reruns_from_the_bags_stage(orchestrated):
    """After the build above (tests run in file order): a dotted --param changes one field of the
    typed strategy parameter; the served run reuses the ingest and computes new bags."""
    data, env, port = orchestrated["data"], orchestrated["env"], orchestrated["port"]
    from simweb.tasks import stagecache

    marks = lambda: {str(p): p.stat().st_mtime_ns for p in (data / "index").glob("crawl/stats/part-*.json")}
    ingested = marks()
    run = subprocess.run(
        [sys.executable, "-m", "simweb.cli", "orchestrate", "run", "build-index", "--port", str(port),
         "--param", "n_workers=1", "--param", "strategy.window_size=8", "--param", "until=bags", "--timeout", "400"],
        env=env, capture_output=True, text=True, timeout=450,
    )
    assert run.returncode == 0, f"{run.stdout}\n{run.stderr}\n{orchestrated['log'].read_text()[-4000:]}"
    assert "task runs:" in run.stdout and "finished: Completed" in run.stdout
    windows = [m["stats"]["strategy"]["window_size"] for m in stagecache.published(str(data / "index" / "stages"), "bags")]
    assert sorted(windows) == [8, 32]  # the default build's bags, and the new ones
    assert marks() == ingested and ingested, "the ingest ran again for a strategy change"


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_a_run_created_through_the_api_with_the_strategy_text_form_completes(orchestrated):
    """The README's strategy form, given to the API as the UI's form sends it: the run validates,
    completes, and builds the bags of that strategy (after the two runs above)."""
    from simweb.tasks import stagecache

    api, data = orchestrated["api"], orchestrated["data"]
    build = {d["name"]: d for d in _api_post(api, "/deployments/filter", {})}["build-index"]
    run = _api_post(api, f"/deployments/{build['id']}/create_flow_run", {"parameters": {
        **build["parameters"], "strategy": "anchor:16+content,stem,dist,nmdf", "until": "bags", "n_workers": 1}})
    state = _wait_for(lambda: (lambda r: r["state_type"] in ("COMPLETED", "FAILED", "CRASHED") and r)(
        _api_get(api, f"/flow_runs/{run['id']}")), 400, "the run", orchestrated["proc"], orchestrated["log"])
    assert state["state_type"] == "COMPLETED", state["state"]
    windows = [m["stats"]["strategy"]["window_size"] for m in stagecache.published(str(data / "index" / "stages"), "bags")]
    assert 16 in windows


def _interruptible() -> None:
    """In the child, before it runs: Ctrl-C (SIGINT) back to its default. A shell starts a
    background job with SIGINT ignored, the child inherits that, and a Python started so never
    turns Ctrl-C into KeyboardInterrupt — the test would then stop a command that cannot hear it."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _live(out: Path) -> str:
    from simweb.tasks import index_store

    return index_store.resolve(str(out))


def _urls(out: Path) -> list[str]:
    import pyarrow.parquet as pq

    from simweb.tasks import index_store

    return sorted(pq.read_table(Path(_live(out)) / index_store.DOCMAP_FILE).column("url").to_pylist())


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_a_file_dropped_into_the_inbox_is_ingested_once_by_simweb_orchestrate_run(orchestrated, warc_dir):
    data, env, port = orchestrated["data"], orchestrated["env"], orchestrated["port"]
    (data / "inbox").mkdir(exist_ok=True)
    shutil.copy(warc_dir / "example-iana.org-chunked.warc", data / "inbox" / "iana.warc")
    command = [sys.executable, "-m", "simweb.cli", "orchestrate", "run", "ingest-new-crawl", "--port", str(port),
               "--param", "settle_seconds=0", "--param", "n_workers=1", "--timeout", "400"]
    first = subprocess.run(command, env=env, capture_output=True, text=True, timeout=450)
    assert first.returncode == 0, f"{first.stdout}\n{first.stderr}\n{orchestrated['log'].read_text()[-4000:]}"
    assert "finished: Completed" in first.stdout

    from simweb.api import open_index
    from simweb.tasks.ledger import read_ledger
    from simweb.tasks.storage import file_digest, read_parquet

    crawl = data / "index" / "crawl"
    ledger = read_ledger(str(crawl))
    digest = file_digest(str(data / "inbox" / "iana.warc"))
    assert ledger[digest]["status"] == "ingested" and ledger[digest]["name"] == "iana.warc"
    assert ledger[digest]["indexed"] is True
    pages = read_parquet(str(crawl / "pages" / f"part-{digest[:16]}.parquet"))
    assert pages.column("url").to_pylist() == ["http://www.iana.org/"]
    assert "http://www.iana.org/" in open_index(data / "index")

    # The same bytes under another name: recognised, not ingested or counted again.
    shutil.copy(data / "inbox" / "iana.warc", data / "inbox" / "iana-again.warc")
    second = subprocess.run(command, env=env, capture_output=True, text=True, timeout=450)
    assert second.returncode == 0, second.stdout + second.stderr
    ledger_after = read_ledger(str(crawl))
    assert ledger_after == ledger


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_ctrl_c_marks_the_running_build_crashed_and_the_database_lives_in_the_data_folder(tmp_path, warc_dir):
    """`simweb orchestrate up` without PREFECT_HOME keeps its database in DATA/.prefect (not
    ~/.prefect); Ctrl-C while a build-index run is running (it waits for the index folder's
    lock, held here) leaves that run Crashed with a message, not "Running" for ever."""
    from simweb.deployments.server import LocalPrefectServer
    from simweb.tasks.layout import IndexLock

    data = tmp_path / "data"
    (data / "warc").mkdir(parents=True)
    shutil.copy(warc_dir / "example.warc.gz", data / "warc")
    port = free_port()
    api = f"http://127.0.0.1:{port}/api"
    env = dict(os.environ, PREFECT_SERVER_ANALYTICS_ENABLED="false", DO_NOT_TRACK="1", PREFECT_LOGGING_LEVEL="INFO",
               HOME=str(tmp_path / "home"))
    env.pop("PREFECT_API_URL", None)
    env.pop("PREFECT_HOME", None)
    log = tmp_path / "up.log"
    with IndexLock(str(data / "index"), "the test, so that the build waits"), open(log, "wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "simweb.cli", "orchestrate", "up", "--port", str(port), "--data", str(data),
             "--only", "build-index"],
            stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env, cwd=tmp_path,
            start_new_session=True, preexec_fn=_interruptible)
        try:
            _wait_for(lambda: is_healthy(api), 240, "the Prefect server", proc, log)
            deployment = _wait_for(lambda: _api_post(api, "/deployments/filter", {}), 120, "the deployment", proc, log)[0]
            run = _api_post(api, f"/deployments/{deployment['id']}/create_flow_run", {"parameters": {"n_workers": 1}})
            _wait_for(lambda: _api_get(api, f"/flow_runs/{run['id']}")["state_type"] == "RUNNING", 240,
                      "the run to start", proc, log)
            assert (data / ".prefect").is_dir() and not (tmp_path / "home" / ".prefect").exists()
        finally:
            stop_process_group(proc, timeout=60)  # SIGINT to the group: Ctrl-C in its terminal
    output = log.read_text(errors="replace")
    assert "Failed to create the Prefect home directory" not in output  # DATA/.prefect made before Prefect looks
    # Ctrl-C reaches the whole process group: either the run's own engine records the crash
    # first (Prefect's "aborted by an interrupt signal") or, when its process went before it
    # could, `orchestrate up` marks it on the way out. Which one comes first is a race; either
    # way the run ends Crashed with a message, never Running.
    by_us = "marked 1 interrupted run(s) as crashed" in output
    assert by_us or "Finished in state Crashed" in output, output[-3000:]
    with LocalPrefectServer(prefect_home=data / ".prefect", log_path=tmp_path / "again.log") as again:
        state = _api_get(again.api_url, f"/flow_runs/{run['id']}")["state"]
    assert state["type"] == "CRASHED", state
    assert ("orchestrate up" if by_us else "interrupt") in state["message"], state
