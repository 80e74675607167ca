"""`simweb orchestrate`: run simweb through Prefect on this machine.

    simweb orchestrate up  [--port 4200] [--data simweb-data]
        Start a Prefect server on 127.0.0.1 (UI included, analytics off), serve the simweb
        deployments from this process, and stop both on Ctrl-C.

    simweb orchestrate run build-index [--param m=16 --param strategy.window_size=8 ...]
        Start a run of a deployment with changed parameters — what the UI's "Run" button
        does — and wait for it to finish.

See deployments/README.md for the whole walk-through.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any
from urllib.parse import urlsplit


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "orchestrate",
        help="run simweb through Prefect: a local server with its UI, scheduled ingestion, runs with parameters",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = parser.add_subparsers(dest="orchestrate_command", metavar="ACTION", required=True)

    up = sub.add_parser("up", help="start the Prefect server and serve the deployments until Ctrl-C")
    up.add_argument(
        "--port",
        type=int,
        default=None,
        help="port of the Prefect server on 127.0.0.1 (default 4200; with PREFECT_API_URL set and no --port, "
        "the server it names is used)",
    )
    up.add_argument(
        "--data",
        default=None,
        help="the data folder the deployments default to (default ./simweb-data): "
        "warc/ for full builds, inbox/ for new crawl files, index/ for the build output, evaluation/",
    )
    up.add_argument(
        "--ingest-cron",
        default=None,
        help='schedule of ingest-new-crawl as a cron expression (default "0 * * * *", every hour)',
    )
    up.add_argument(
        "--ingest-every",
        type=float,
        default=None,
        metavar="SECONDS",
        help="schedule ingest-new-crawl every SECONDS seconds instead of on a cron",
    )
    up.add_argument("--no-schedule", action="store_true", help="serve ingest-new-crawl without a schedule")
    up.add_argument(
        "--only", nargs="+", metavar="DEPLOYMENT", default=None, help="serve only these deployments"
    )
    up.set_defaults(func=_up)

    run = sub.add_parser("run", help="start a run of a served deployment (the UI's Run button) and wait for it")
    run.add_argument("deployment", help="build-index, ingest-new-crawl, evaluate-strategies or debdocs-corpus")
    run.add_argument(
        "--param",
        "-p",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a flow parameter; VALUE is read as JSON, else as text; KEY may reach into a typed "
        "parameter with dots (strategy.window_size=8). Repeat for more.",
    )
    run.add_argument("--port", type=int, default=None, help="port of the local Prefect server (default 4200)")
    run.add_argument("--api-url", default=None, help="Prefect API URL (default $PREFECT_API_URL or the local port)")
    run.add_argument("--timeout", type=float, default=None, help="stop waiting after this many seconds")
    run.add_argument("--no-wait", action="store_true", help="return once the run is created")
    run.set_defaults(func=_run)


# ---------------------------------------------------------------------------------------
# up


def _up(args) -> int:
    from simweb.deployments import definitions

    data = args.data or definitions.DEFAULT_DATA_DIR
    if not os.environ.get("PREFECT_HOME"):
        # The server's database beside the data it orchestrates, not in ~/.prefect, where every
        # temporary server of a `simweb build --prefect` keeps its own.
        os.environ["PREFECT_HOME"] = os.path.abspath(os.path.join(data, PREFECT_HOME_IN_DATA))
        # Made before Prefect is imported: it makes only the last folder, and warns when it cannot.
        os.makedirs(os.environ["PREFECT_HOME"], exist_ok=True)
    from simweb.deployments.server import DEFAULT_PORT, LocalPrefectServer, ServerFailed, api_url, is_healthy

    own_api = None if args.port else os.environ.get("PREFECT_API_URL")
    port = args.port or DEFAULT_PORT
    api = own_api.rstrip("/") if own_api else api_url(port)
    workspace = definitions.Workspace.at(data)
    unknown = sorted(set(args.only or ()) - {s.name for s in definitions.SPECS})
    if unknown:
        print(f"unknown deployment {', '.join(unknown)}; expected some of "
              f"{', '.join(s.name for s in definitions.SPECS)}", file=sys.stderr)
        return 2
    if sum((args.no_schedule, args.ingest_cron is not None, args.ingest_every is not None)) > 1:
        print("--no-schedule, --ingest-cron and --ingest-every each set the ingestion's schedule; give one of them",
              file=sys.stderr)
        return 2
    if args.ingest_every is not None and not args.ingest_every > 0:
        print(f"--ingest-every: expected a positive number of seconds, got {args.ingest_every:g}", file=sys.stderr)
        return 2
    every = args.ingest_every
    cron = None if args.no_schedule or every else (args.ingest_cron or definitions.INGEST_CRON)
    if cron is not None:
        _check_cron(cron)

    os.environ["PREFECT_SERVER_ANALYTICS_ENABLED"] = "false"
    os.environ["DO_NOT_TRACK"] = "1"
    server = None
    if own_api:
        if not is_healthy(api):
            print(f"no Prefect server answers at PREFECT_API_URL={own_api}; start it, or unset PREFECT_API_URL "
                  "(or pass --port) to start one on this machine", file=sys.stderr)
            return 1
        print(f"Using the Prefect server at PREFECT_API_URL={api}")
    elif is_healthy(api):
        print(f"Using the Prefect server already running at http://127.0.0.1:{port}")
    else:
        server = LocalPrefectServer(port)
        print(f"Starting the Prefect server on 127.0.0.1:{port} (output: {server.log_path}) ...", flush=True)
        try:
            server.start()
        except ServerFailed as err:
            print(str(err), file=sys.stderr)
            return 1
    try:
        os.environ["PREFECT_API_URL"] = api  # for the flow-run processes serve starts
        from prefect import serve
        from prefect.settings import PREFECT_API_URL, temporary_settings

        with temporary_settings({PREFECT_API_URL: api}):
            workspace.create()
            missing = definitions.missing_flows(args.only)
            for name, reason in missing.items():
                print(f"not serving {name}: {reason}", file=sys.stderr)
            deployments = definitions.build_deployments(workspace, names=args.only, ingest_cron=cron,
                                                        ingest_every=every)
            if not deployments:
                print("no deployment to serve: none of their flows is installed", file=sys.stderr)
                return 1
            when = f"every {every:g} s" if every else (f'on cron "{cron}"' if cron else "on demand only (no schedule)")
            _print_welcome(api, workspace, deployments, when, named_by_env=bool(own_api))
            try:
                # Poll for runs every 2 s (Prefect's default is 10 s): the UI's Run starts promptly.
                serve(*deployments, print_starting_message=False, query_seconds=2)
            finally:
                # Ctrl-C stops the runs this process started with it; the server would show them
                # "Running" for ever. Say what happened to them.
                _mark_stopped_runs([d.name for d in deployments])
    finally:
        if server is not None:
            print("Stopping the Prefect server ...", flush=True)
            server.stop()
    return 0


#: Where `orchestrate up` keeps the Prefect server's database inside the data folder, unless
#: PREFECT_HOME is set (the Makefile sets ./.prefect).
PREFECT_HOME_IN_DATA = ".prefect"


def _mark_stopped_runs(deployment_names: list[str]) -> list[str]:
    """Mark the runs of these deployments that are still Running or Pending as Crashed, with a
    message saying they stopped with `simweb orchestrate up` (their processes went with it).
    Returns their names. A server that does not answer is left as it is."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import (
        DeploymentFilter,
        DeploymentFilterName,
        FlowRunFilter,
        FlowRunFilterState,
        FlowRunFilterStateType,
    )
    from prefect.client.schemas.objects import StateType
    from prefect.states import Crashed

    marked = []
    try:
        with get_client(sync_client=True) as client:
            runs = client.read_flow_runs(
                flow_run_filter=FlowRunFilter(state=FlowRunFilterState(
                    type=FlowRunFilterStateType(any_=[StateType.RUNNING, StateType.PENDING]))),
                deployment_filter=DeploymentFilter(name=DeploymentFilterName(any_=list(deployment_names))),
            )
            for run in runs:
                client.set_flow_run_state(run.id, Crashed(
                    message="stopped with `simweb orchestrate up` (Ctrl-C) while running; run it again: "
                            "finished stages are reused"), force=True)
                marked.append(run.name)
    except Exception as err:  # noqa: BLE001 — the server may already be gone; nothing to mark then
        print(f"could not mark the interrupted runs ({type(err).__name__}: {err})", file=sys.stderr)
        return marked
    if marked:
        print(f"marked {len(marked)} interrupted run(s) as crashed: {', '.join(marked)}", flush=True)
    return marked


def _check_cron(cron: str) -> None:
    from prefect.client.schemas.schedules import CronSchedule

    try:
        CronSchedule(cron=cron)
    except ValueError as err:
        raise SystemExit(f'--ingest-cron {cron!r}: expected a cron expression such as "0 * * * *" ({err})') from None


def _print_welcome(api: str, workspace, deployments, when: str, named_by_env: bool = False) -> None:
    ui = api.removesuffix("/api")
    names = [d.name for d in deployments]
    print()
    print(f"Prefect UI:        {ui}   (deployments: {ui}/deployments)")
    print(f"Data folder:       {workspace.root}")
    print(f"Prefect database:  {os.environ.get('PREFECT_HOME', '~/.prefect')} (PREFECT_HOME)")
    print(f"  full builds read {workspace.warc}/*.warc.gz")
    if "ingest-new-crawl" in names:
        print(f"  new crawl files: drop them into {workspace.inbox} — ingested {when}")
    print(f"Serving:           {', '.join(names)}")
    print()
    print("Start a run: open a deployment in the UI and press Run (Custom run to change parameters), or")
    example = "build-index" if "build-index" in names else names[0]
    # `orchestrate run` finds the server by PREFECT_API_URL as `up` did, or by the local port.
    port = urlsplit(api).port
    port_arg = "" if named_by_env or port == 4200 else f" --port {port}"
    print(f"  simweb orchestrate run {example}{port_arg} --param key=value")
    print("Press Ctrl-C to stop the server and the deployments.")
    print(flush=True)


# ---------------------------------------------------------------------------------------
# run


def parse_params(pairs: list[str]) -> dict[str, Any]:
    """``["m=16", "strategy.window_size=8"]`` → ``{"m": 16, "strategy": {"window_size": 8}}``."""
    out: dict[str, Any] = {}
    for pair in pairs:
        key, sep, text = pair.partition("=")
        if not sep or not key:
            raise SystemExit(f"--param {pair!r}: expected KEY=VALUE, e.g. --param m=16")
        try:
            value = json.loads(text)
        except json.JSONDecodeError:
            value = text
        *path, last = key.split(".")
        node = out
        for part in path:
            node = node.setdefault(part, {})
            if not isinstance(node, dict):
                raise SystemExit(f"--param {pair!r}: {part} was given a value and fields at once")
        node[last] = value
    return out


def merge_params(defaults: dict[str, Any], overrides: dict[str, Any]) -> dict[str, Any]:
    """Overrides on top of the deployment's defaults, merged inside typed (dict) parameters."""
    merged = dict(defaults)
    for key, value in overrides.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = merge_params(merged[key], value)
        else:
            merged[key] = value
    return merged


def _run(args) -> int:
    from simweb.deployments.server import DEFAULT_PORT, api_url

    overrides = parse_params(args.param)
    api = args.api_url or (api_url(args.port) if args.port else os.environ.get("PREFECT_API_URL") or api_url(DEFAULT_PORT))

    from prefect.settings import PREFECT_API_URL, temporary_settings

    with temporary_settings({PREFECT_API_URL: api}):
        return _create_and_watch(args.deployment, overrides, args.timeout, args.no_wait, api)


def _find_deployment(client, name: str):
    """The served deployment called ``name`` ("build-index" or "<flow>/build-index")."""
    from prefect.client.schemas.filters import DeploymentFilter, DeploymentFilterName

    if "/" in name:
        return [client.read_deployment_by_name(name)]
    return client.read_deployments(deployment_filter=DeploymentFilter(name=DeploymentFilterName(any_=[name])))


def _create_and_watch(name: str, overrides: dict[str, Any], timeout: float | None, no_wait: bool, api: str) -> int:
    from prefect.client.orchestration import get_client
    from prefect.deployments import run_deployment
    from prefect.exceptions import ObjectNotFound

    from simweb.deployments.server import is_healthy

    if not is_healthy(api):
        print(f"no Prefect server answers at {api}; start one with `simweb orchestrate up` "
              "(or pass --port / --api-url)", file=sys.stderr)
        return 1
    with get_client(sync_client=True) as client:
        try:
            found = _find_deployment(client, name)
        except ObjectNotFound:
            found = []
        if len(found) != 1:
            served = sorted(d.name for d in client.read_deployments())
            what = "is not served" if not found else f"names {len(found)} deployments; give <flow>/{name}"
            print(f"deployment {name} {what} at {api}; served: {', '.join(served) or 'none'} "
                  "(start them with `simweb orchestrate up`)", file=sys.stderr)
            return 1
        deployment = found[0]
    parameters = merge_params(deployment.parameters or {}, overrides)
    run = run_deployment(deployment.id, parameters=parameters, timeout=0, as_subflow=False)
    ui = api.rstrip("/").removesuffix("/api")
    print(f"Created run {run.name} of {deployment.name}: {ui}/runs/flow-run/{run.id}", flush=True)
    if no_wait:
        return 0
    final = _wait(run.id, timeout)
    if final is None:
        print(f"run {run.name} still running after {timeout:.0f} s; follow it in the UI", file=sys.stderr)
        return 1
    print(f"Run {run.name} finished: {final.name}" + (f" — {final.message}" if final.message else ""))
    return 0 if final.is_completed() else 1


def _wait(flow_run_id, timeout: float | None):
    """Poll the run until it ends, printing its state and its task runs' progress as they change."""
    import time

    from prefect.client.orchestration import get_client

    deadline = None if timeout is None else time.monotonic() + timeout
    last = None
    with get_client(sync_client=True) as client:
        while deadline is None or time.monotonic() < deadline:
            state = client.read_flow_run(flow_run_id).state
            line = f"{state.name if state else 'Pending'}{_task_progress(client, flow_run_id)}"
            if line != last:
                print(f"  {line}", flush=True)
                last = line
            if state is not None and state.is_final():
                return state
            time.sleep(1.0)
    return None


def _task_progress(client, flow_run_id) -> str:
    """", task runs: 5/8 completed, 1 retrying" — from the task runs the server knows of."""
    from collections import Counter

    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterId

    flow_runs = FlowRunFilter(id=FlowRunFilterId(any_=[flow_run_id]))
    runs, page = [], 200
    while True:
        batch = client.read_task_runs(flow_run_filter=flow_runs, limit=page, offset=len(runs))
        runs += batch
        if len(batch) < page:
            break
    if not runs:
        return ""
    states = Counter((r.state.name if r.state else "Pending") for r in runs)
    done = states.pop("Completed", 0) + states.pop("Cached", 0)
    others = ", ".join(f"{n} {name.lower()}" for name, n in sorted(states.items()))
    return f", task runs: {done}/{len(runs)} completed" + (f", {others}" if others else "")
