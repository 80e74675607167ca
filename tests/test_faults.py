"""Faults on real processes and real files: kills at every stage boundary and inside each stage,
every kind of cached and published file truncated or overwritten.

A build killed with SIGKILL (tests/fault_build.py kills its own process, so no clean-up runs)
and then run again must end with the same index as a build never interrupted, leave no
temporary file behind, and hold nothing damaged. A damaged file is found — by its size on the
next build, by its SHA-256 with ``simweb verify`` or ``build --verify`` — and repaired.
"""
from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from simweb.tasks import index_store
from simweb.tasks.verify import audit

REPO = Path(__file__).resolve().parents[1]
SCRIPT = REPO / "tests" / "fault_build.py"
STAGES = ("bag-fragments", "bag-merge", "bags", "signatures", "invert")
KILL_POINTS = ("ingest", *(f"{s}:{w}" for s in STAGES for w in ("inside", "after")), "publish")


def run_build(out: Path, kill: str | None = None) -> subprocess.CompletedProcess:
    argv = [sys.executable, str(SCRIPT), str(out)] + ([kill] if kill else [])
    return subprocess.run(argv, cwd=REPO, capture_output=True, text=True, timeout=600)


def debris(out: Path) -> list[str]:
    return sorted(str(p.relative_to(out)) for p in out.rglob(".tmp-*"))


@pytest.fixture(scope="module")
def reference(tmp_path_factory) -> str:
    out = tmp_path_factory.mktemp("reference")
    done = run_build(out)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout.strip().splitlines()[-1]


@pytest.mark.slow
@pytest.mark.timeout(1200)
@pytest.mark.parametrize("kill", KILL_POINTS)
def test_a_build_killed_anywhere_resumes_to_the_same_index(kill, reference, tmp_path, index_diff):
    out = tmp_path / "index"
    killed = run_build(out, kill)
    assert killed.returncode == -9, f"the build was not killed at {kill}: {killed.stderr[-2000:]}"
    assert not (out / "CURRENT").exists(), "a killed build published an index"
    resumed = run_build(out)
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    assert index_diff(resumed.stdout.strip().splitlines()[-1], reference) == []
    assert debris(out) == []
    damaged, checked = audit(str(out))
    assert damaged == [] and checked >= len(STAGES) + 1


# ---------------------------------------------------------------------------------------------
# Damaged files


def _built(tmp_path: Path) -> Path:
    out = tmp_path / "index"
    done = run_build(out)
    assert done.returncode == 0, done.stderr[-2000:]
    return out


def _target(out: Path, kind: str) -> Path:
    live = Path(index_store.resolve(str(out)))
    found = {
        "ingest part": sorted((out / "crawl" / "pages").glob("part-*.parquet")),
        "merge stage part": sorted((out / "stages" / "bag-merge").glob("*/part-*.parquet")),
        "signatures stage H": sorted((out / "stages" / "signatures").glob("*/H.u32")),
        "invert stage I": sorted((out / "stages" / "invert").glob("*/I.docs.u32")),
        "published H": [live / "H.u32"],
        "published docs": [live / "docs.parquet"],
        "published related table": [live / "answers.exact.f64"],
    }[kind]
    assert found, kind
    return max(found, key=lambda p: p.stat().st_size)


def _damage(path: Path, how: str) -> None:
    data = path.read_bytes()
    if how == "truncated":
        path.write_bytes(data[: len(data) // 2])
    else:  # the same size, other bytes
        path.write_bytes(bytes(b ^ 0x5A for b in data[:4096]) + data[4096:])


def _verify(out: Path, *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "simweb", "verify", str(out), *extra], cwd=REPO,
                          capture_output=True, text=True, timeout=600)


KINDS = ("ingest part", "merge stage part", "signatures stage H", "invert stage I", "published H", "published docs",
         "published related table")


@pytest.mark.slow
@pytest.mark.timeout(900)
@pytest.mark.parametrize("kind", KINDS)
def test_a_truncated_file_is_found_and_repaired_by_the_next_build(kind, reference, tmp_path, index_diff):
    out = _built(tmp_path)
    target = _target(out, kind)
    _damage(target, "truncated")
    assert _verify(out).returncode == 1
    again = run_build(out)
    assert again.returncode == 0, again.stderr[-2000:]
    assert index_diff(again.stdout.strip().splitlines()[-1], reference) == []
    assert audit(str(out))[0] == [] or kind.startswith("published")  # the damaged old version may remain
    assert _verify(out, "--repair").returncode == 0 and _verify(out).returncode == 0


@pytest.mark.slow
@pytest.mark.timeout(900)
@pytest.mark.parametrize("kind", KINDS)
def test_a_file_overwritten_in_place_is_found_by_its_digest_and_repaired(kind, reference, tmp_path, index_diff):
    out = _built(tmp_path)
    target = _target(out, kind)
    _damage(target, "overwritten")
    found = _verify(out)
    assert found.returncode == 1 and target.name in found.stdout, found.stdout
    repaired = _verify(out, "--repair")
    assert repaired.returncode == 0, repaired.stdout + repaired.stderr
    again = run_build(out)
    assert again.returncode == 0, again.stderr[-2000:]
    assert index_diff(again.stdout.strip().splitlines()[-1], reference) == []
    assert _verify(out).returncode == 0


def test_a_published_version_shares_no_file_with_the_cache(tmp_path):
    out = _built(tmp_path)
    live = Path(index_store.resolve(str(out)))
    cached = {p.stat().st_ino for p in (out / "stages").rglob("*") if p.is_file()}
    for f in live.iterdir():
        assert f.stat().st_nlink == 1 and f.stat().st_ino not in cached, f.name


def test_a_same_size_overwrite_is_caught_by_build_verify_and_recomputed(tmp_path, index_diff):
    from simweb.core.strategy import Strategy
    from simweb.flows.chain import index_chain
    from simweb.tasks.layout import crawl_folder
    from simweb.tasks.options import RunOptions
    from simweb.tasks.signatures import IndexParams

    out = _built(tmp_path)
    first = index_store.resolve(str(out))
    target = _target(out, "merge stage part")
    merge_manifest = target.parent / "_SUCCESS.json"
    merged_at = json.loads(merge_manifest.read_text())["finished"]
    _damage(target, "overwritten")
    params = IndexParams(m=16, min_in_degree=0)
    # By size, the damage goes unnoticed; by content, the merged bags are computed again (the
    # index's bags, consumed once signed, are named by their key: nothing after them changes).
    cheap = index_chain(None, crawl_folder(str(out)), str(out), Strategy(), params)
    assert cheap.stages["bags"].reused and json.loads(merge_manifest.read_text())["finished"] == merged_at
    checked = index_chain(None, crawl_folder(str(out)), str(out), Strategy(), params, options=RunOptions(verify=True))
    assert json.loads(merge_manifest.read_text())["finished"] != merged_at
    assert checked.stages["signatures"].reused
    assert index_diff(checked.index, first) == []
    assert audit(str(out))[0] == []


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_killing_the_command_stops_prefects_temporary_server(warc_dir, tmp_path):
    import signal
    import time

    import psutil

    command = subprocess.Popen([sys.executable, "-m", "simweb", "build", str(warc_dir / "warcfile.warc.gz"),
                                "--out", str(tmp_path / "index"), "--workers", "1"],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=REPO)
    try:
        server = None
        deadline = time.monotonic() + 180
        while server is None and time.monotonic() < deadline and command.poll() is None:
            children = psutil.Process(command.pid).children(recursive=True)
            server = next((c for c in children if "uvicorn" in " ".join(c.cmdline())), None)
            time.sleep(0.2)
        assert server is not None, "the build started no temporary Prefect server"
        command.send_signal(signal.SIGKILL)
        command.wait(timeout=30)
        gone, _ = psutil.wait_procs([server], timeout=30)
        assert gone, "Prefect's temporary server outlived the killed command"
    finally:
        command.kill()


# ---------------------------------------------------------------------------------------------
# A build and an ingestion of new crawl files on one index folder at once


def _held_by(out: Path, what: str, process: subprocess.Popen | None = None, timeout: float = 300,
             poll: float = 0.1) -> None:
    import time

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        lock = out / "LOCK"
        holder = lock.read_text().split() if lock.exists() else []
        # The file keeps the last holder's line after it is released: check whose it is.
        if holder[2:] == what.split() and (process is None or holder[1:2] == [str(process.pid)]):
            return
        if process is not None and process.poll() is not None:
            raise AssertionError(f"the {what} ended before taking the lock: {process.stderr.read()[-2000:]}")
        time.sleep(poll)
    raise AssertionError(f"no {what} took the lock of {out}")


def _paused_holding_the_lock(out: Path, command: list[str], tries: int = 5) -> subprocess.Popen:
    """Start ``command`` (a build) and stop it (SIGSTOP) while it holds the index's lock.

    Seen holding it by the lock file's holder line, then checked after the pause by asking the
    kernel for the lock: a build that had already let it go is waited for and started again.
    """
    import fcntl

    for _ in range(tries):
        process = subprocess.Popen(command, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        _held_by(out, "build-index", process, poll=0.01)
        process.send_signal(signal.SIGSTOP)
        with open(out / "LOCK", "rb") as lock:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return process
            fcntl.flock(lock, fcntl.LOCK_UN)
        process.send_signal(signal.SIGCONT)
        assert process.wait(timeout=600) == 0, process.stderr.read()[-2000:]
    raise AssertionError(f"the build never held the lock of {out} long enough to be paused in {tries} tries")


def _consistent(out: Path) -> None:
    """The live index is the one the epoch and the ledger speak of: published by a full build
    whose df is the epoch's, or by an update weighted with the epoch's frozen df."""
    from simweb.tasks import incremental, stagecache
    from simweb.tasks.ledger import not_indexed, read_ledger

    live = index_store.read_manifest(index_store.resolve(str(out)))
    epoch = incremental.read_epoch(str(out))
    stages = str(out / "stages")
    found = None
    for stage, sub in (("invert", ""), ("delta-index", "version")):
        for manifest in stagecache.published(stages, stage):
            folder = Path(stagecache.output_path(stages, stage, manifest["key"])) / sub
            if (folder / index_store.MANIFEST).exists() and index_store.read_manifest(str(folder)) == live:
                found = stagecache.lineage(stages, f"{stage}:{manifest['key']}")
    assert found is not None, "the live index is not the output of a recorded stage"
    if "delta-bags" in found:
        assert found["delta-bags"]["params"]["df_snapshot"] == epoch.snapshot().identity()
    else:
        assert epoch.id == found["bags"]["key"][:16]
    crawl = str(out / "crawl")
    assert not_indexed(crawl) == [] and all(e["status"] == "ingested" for e in read_ledger(crawl).values())


@pytest.mark.slow
@pytest.mark.timeout(1200)
@pytest.mark.parametrize("first", ["build", "ingest"])
def test_a_build_and_an_ingestion_at_once_lose_nothing(first, prefect_api, warc_dir, tmp_path):
    import shutil
    import threading

    from simweb.api import open_index
    from simweb.flows.build_index import build_index
    from simweb.flows.ingest_new_crawl import ingest_new_crawl

    warcs = [str(warc_dir / n) for n in ("warcfile.warc.gz", "example.warc.gz")]
    out, inbox = tmp_path / "index", tmp_path / "inbox"
    inbox.mkdir()
    build_index(warcs, str(out), n_workers=1, min_in_degree=None)
    shutil.copy(warc_dir / "example-iana.org-chunked.warc", inbox / "iana.warc")
    new_page = "http://www.iana.org/"
    build_command = [sys.executable, "-m", "simweb", "build", *warcs, "--out", str(out), "--workers", "1",
                     "--min-in-degree", "-1"]

    if first == "build":
        # The build runs from its cached stages and may hold the lock for less time than an
        # ingestion takes to ask for it: it is paused while it holds the lock, so that the
        # ingestion meets a held lock whatever the machine's speed, and let go on after.
        build = _paused_holding_the_lock(out, build_command)
        try:
            refused = ingest_new_crawl(inbox=str(inbox), out=str(out), settle_seconds=0, n_workers=1)
        finally:
            build.send_signal(signal.SIGCONT)
        assert refused.skipped and "in use by build-index" in refused.skipped and refused.ingested == []
        waited = ingest_new_crawl(inbox=str(inbox), out=str(out), settle_seconds=0, n_workers=1,
                                  lock_wait_seconds=None)
        assert build.wait(timeout=600) == 0, build.stderr.read()[-2000:]
        assert waited.ingested == ["iana.warc"]
    else:
        report = {}
        ingestion = threading.Thread(target=lambda: report.update(done=ingest_new_crawl(
            inbox=str(inbox), out=str(out), settle_seconds=0, n_workers=1)))
        ingestion.start()
        _held_by(out, "ingest-new-crawl")
        build = subprocess.run(build_command, cwd=REPO, capture_output=True, text=True, timeout=900)
        ingestion.join(timeout=600)
        assert build.returncode == 0, build.stderr[-2000:]
        assert report["done"].ingested == ["iana.warc"]
    # Whichever finished last, the live index holds the new page and the built ones, and the
    # epoch and the ledger describe that index.
    index = open_index(out)
    assert new_page in index and all(url in index for url in ("http://example.com/",))
    _consistent(out)
