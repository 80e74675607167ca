"""A flow's body runs in this process (``flow.fn``) or through Prefect on Dask, with the same
outputs; `simweb build` picks in this process for small crawls and says so; what a build prints
is one sentence per stage, its summary once, and no Dask chatter."""
from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from simweb.commands import EXIT_FILE_ERRORS
from simweb.commands.runmode import SMALL_INPUT_BYTES, choose_mode
from simweb.tasks import index_store

REPO = Path(__file__).resolve().parents[1]
SIMWEB = [sys.executable, "-m", "simweb"]


def _args(**given) -> argparse.Namespace:
    values = {"prefect": False, "no_prefect": False, "dask_address": None, "workers": None}
    values.update(given)
    return argparse.Namespace(**values)


@pytest.mark.parametrize("given, size, in_process, says", [
    ({}, 400_000, True, "small"),
    ({}, SMALL_INPUT_BYTES - 1, True, "run in this process"),
    ({}, SMALL_INPUT_BYTES, False, "Prefect flow on a local Dask cluster"),
    ({}, None, False, "size is not known"),
    ({"prefect": True}, 400_000, False, "--prefect"),
    ({"no_prefect": True}, 10 * SMALL_INPUT_BYTES, True, "--no-prefect"),
    ({"workers": 2}, 400_000, False, "2 local Dask worker"),
    ({"dask_address": "tcp://127.0.0.1:8786"}, 400_000, False, "tcp://127.0.0.1:8786"),
])
def test_the_mode_follows_the_input_size_and_the_options(given, size, in_process, says):
    chosen, why = choose_mode(_args(**given), size, "build-index")
    assert chosen is in_process and says in why


def test_in_process_and_prefect_builds_give_the_same_index(prefect_harness, warc_dir, tmp_path, index_diff):
    """The flow body called as a function (no Prefect, no Dask) and the flow run on a Dask
    cluster write the same index files."""
    from simweb.flows.build_index import build_index

    files = [str(p) for p in sorted(warc_dir.glob("*.warc*"))]
    plain = build_index.fn(files, str(tmp_path / "plain"), min_in_degree=0)
    flowed = build_index(files, str(tmp_path / "flowed"), min_in_degree=0, n_workers=1)
    assert plain.index and flowed.index
    assert plain.ingest == flowed.ingest
    assert index_diff(index_store.resolve(str(tmp_path / "plain")), index_store.resolve(str(tmp_path / "flowed"))) == []
    assert [s["reused"] for s in plain.stages.values()] == [False] * 4
    assert list(plain.stages)[-1] == "related-table" and flowed.stages["related-table"]["stats"]["documents"] > 40
    # The Prefect run published its summary as a markdown artifact, saying where the index is.
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterKey

    # (other tests' runs on the same server publish artifacts of the same key: find this run's)
    with get_client(sync_client=True) as client:
        artifacts = client.read_artifacts(artifact_filter=ArtifactFilter(key=ArtifactFilterKey(any_=["build-index-summary"])))
    ours = [a for a in artifacts if f"published at `{flowed.index}`" in a.data]
    assert len(ours) == 1 and "records read" in ours[0].data


def test_every_flow_parameter_has_a_description_in_the_ui_form():
    """Prefect 3 draws the Run form's help from the flow docstring's Args section."""
    from prefect.utilities.callables import parameter_schema

    from simweb.deployments import definitions

    for spec in definitions.SPECS:
        flow = definitions.load_flow(spec)
        properties = parameter_schema(flow).model_dump()["properties"]
        missing = [name for name, field in properties.items() if not (field.get("description") or "").strip()]
        assert not missing, f"{spec.name}: no description for {missing}"


def test_a_flow_body_called_as_a_function_refuses_a_cluster(tmp_path, warc_dir):
    from simweb.flows.build_index import build_index

    with pytest.raises(ValueError, match="run the flow through Prefect to use a cluster"):
        build_index.fn([str(warc_dir / "example.warc.gz")], str(tmp_path / "i"), n_workers=2)


def test_evaluation_flow_body_in_process_equals_the_reference(tmp_path):
    """evaluate-strategies called as a function (no Prefect, no Dask; every strategy in one
    group) gives the sibling-Γ of :func:`run_evaluation`, strategy by strategy (and
    tests/test_evaluate.py checks the flow run on Dask against the same reference)."""
    from test_evaluate import build_synthetic_crawl

    from simweb.flows.evaluate_strategies import evaluate_strategies
    from simweb.tasks.evaluate import run_evaluation
    from simweb.tasks.stages.eval_sample import SampleParams

    made = build_synthetic_crawl(tmp_path / "crawl")
    plain = evaluate_strategies.fn(crawl=made["crawl"], directory=made["tsv"], out=str(tmp_path / "plain"),
                                   grid="quick", seed=3, directory_pages=made["directory_pages"], n_resamples=100)
    reference = run_evaluation(made["crawl"], made["tsv"], str(tmp_path / "reference"), grid="quick",
                               directory_pages=made["directory_pages"], n_resamples=100,
                               sample_params=SampleParams(seed=3))
    gamma = lambda s: {r["strategy"]: r["value"] for r in s["sibling_gamma"]}  # noqa: E731
    assert gamma(plain) == pytest.approx(gamma(reference)) and len(gamma(plain)) > 3


def _build(argv: list[str], env_extra: dict[str, str] | None = None, timeout: float = 600) -> subprocess.CompletedProcess:
    env = {**os.environ, "SIMWEB_PROGRESS": "log", **(env_extra or {})}
    return subprocess.run(SIMWEB + argv, capture_output=True, text=True, cwd=REPO, env=env, timeout=timeout)


def _check_quiet(output: str) -> None:
    """No dumped dict, the summary table once, no Dask chatter, no traceback."""
    assert not re.search(r"\{'\w+': ", output), "a dict dumped into the log"
    assert output.count("records read") == 1, "the summary printed more than once"
    for noise in ("Shuffle ", "deactivated due to", "Worker process still alive", "Port 8787", "Traceback",
                  "UserWarning", "| distributed.", "prefect.task_runner.dask"):
        assert noise not in output, noise
    for line in output.splitlines():
        # file paths count as their names: how deep a checkout lies is not how long a sentence is
        sentence = re.sub(r"(/[^\s/:]+)+/([^\s/:]+)", r"\2", line)
        assert len(sentence) < 600, f"a log line of {len(sentence)} characters: {sentence[:120]}…"


def test_a_small_build_runs_in_process_says_so_and_prints_each_thing_once(warc_dir, tmp_path):
    done = _build(["build", str(warc_dir), "--out", str(tmp_path / "index")])
    # the fixtures hold damaged files: read past the damage, listed, the index built (status 3)
    assert done.returncode == EXIT_FILE_ERRORS, done.stderr
    first = done.stderr.splitlines()[:2]
    assert first[0].startswith("simweb build: ") and "small (under" in first[1] and "in this process" in first[1]
    assert "Starting temporary server" not in done.stderr and "Dask dashboard" not in done.stderr
    _check_quiet(done.stdout + done.stderr)
    # one sentence per stage that was computed, one for the ingest and one for the build
    for stage in ("bag-fragments", "bag-merge", "bags", "signatures", "invert"):
        assert len(re.findall(rf"stage {stage}: computed \w+ in [\d.]+ s: \d", done.stderr)) == 1, stage
    assert len(re.findall(r"stage related-table: computed in [\d.]+ s: 1,190 documents, 10 answers a page", done.stderr)) == 1
    assert len(re.findall(r"^\S+ ingest: 8 files read, 49 pages", done.stderr, re.M)) == 1
    assert index_store.resolve(str(tmp_path / "index"))


@pytest.mark.slow
def test_a_prefect_build_is_quiet_and_listens_on_loopback_only(warc_dir, tmp_path):
    """`simweb build --prefect --workers 2`: a temporary Prefect server and a Dask cluster of two
    worker processes. Every socket the command's processes listen on is on 127.0.0.1 (or ::1),
    the Dask dashboard included; its output has no Dask chatter and the summary once."""
    import psutil

    env = {**os.environ, "SIMWEB_PROGRESS": "log", "PREFECT_HOME": str(tmp_path / "prefect-home"),
           "PREFECT_LOGGING_LEVEL": "INFO"}  # the tests' default is WARNING: see every line a user sees
    proc = subprocess.Popen(SIMWEB + ["build", str(warc_dir), "--out", str(tmp_path / "index"), "--prefect",
                                      "--workers", "2"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, cwd=REPO, env=env)
    listening: set[tuple[str, int]] = set()
    root = psutil.Process(proc.pid)
    deadline = time.monotonic() + 600
    while proc.poll() is None and time.monotonic() < deadline:
        try:
            family = [root] + root.children(recursive=True)
        except psutil.NoSuchProcess:
            break
        for p in family:
            try:
                listening |= {(c.laddr.ip, c.laddr.port) for c in p.net_connections(kind="inet")
                              if c.status == psutil.CONN_LISTEN}
            except (psutil.NoSuchProcess, psutil.AccessDenied):
                pass
        time.sleep(0.2)
    output = proc.communicate(timeout=60)[0]
    assert proc.returncode == EXIT_FILE_ERRORS, output
    assert listening, "no listening socket seen: the check saw nothing"
    assert {ip for ip, _ in listening} <= {"127.0.0.1", "::1"}, listening
    assert "Dask dashboard: http://127.0.0.1:" in output
    _check_quiet(output)


def test_a_small_evaluation_starts_no_prefect_server(tmp_path):
    """`simweb evaluate` on a small crawl runs the flow's body in this process, every task
    called as a function: Prefect's temporary server is never started."""
    from test_evaluate import build_synthetic_crawl

    made = build_synthetic_crawl(tmp_path / "crawl")
    env = {**os.environ, "SIMWEB_PROGRESS": "log", "PREFECT_LOGGING_LEVEL": "INFO"}
    done = subprocess.run(SIMWEB + ["evaluate", "--crawl", made["crawl"], "--directory", made["tsv"],
                                    "--out", str(tmp_path / "report"), "--grid", "quick", "--resamples", "50"],
                          capture_output=True, text=True, cwd=REPO, env=env, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "small (under" in done.stderr and "Starting temporary server" not in done.stderr + done.stdout
    assert (tmp_path / "report" / "report.html").is_file()


def test_ingest_new_crawl_runs_in_process_as_a_function(warc_dir, tmp_path):
    """ingest-new-crawl's body called as a function: a file dropped into the inbox joins the
    index built in this process, with no Prefect run and no Dask cluster."""
    import shutil

    from simweb.api import open_index
    from simweb.flows.build_index import build_index
    from simweb.flows.ingest_new_crawl import ingest_new_crawl

    out = tmp_path / "index"
    build_index.fn([str(warc_dir / "warcfile.warc.gz")], str(out), min_in_degree=0)
    assert "http://www.iana.org/" not in open_index(str(out))
    (tmp_path / "inbox").mkdir()
    shutil.copy(warc_dir / "example-iana.org-chunked.warc", tmp_path / "inbox" / "iana.warc")
    report = ingest_new_crawl.fn(str(tmp_path / "inbox"), str(out), settle_seconds=0)
    assert report.ingested == ["iana.warc"] and report.index
    assert "http://www.iana.org/" in open_index(str(out))
