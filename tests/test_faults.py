"""Faults on real processes and real files: kills at every stage boundary and inside each stage,
every kind of cached and published file truncated or overwritten.

A build killed with SIGKILL (tests/fault_build.py kills its own process, so no clean-up runs)
and then run again must end with the same index as a build never interrupted, leave no
temporary file behind, and hold nothing damaged. A damaged file is found — by its size on the
next build, by its SHA-256 with ``simweb verify`` or ``build --verify`` — and repaired.
"""
from __future__ import annotations

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
        "bags stage part": sorted((out / "stages" / "bags").glob("*/part-*.parquet")),
        "signatures stage H": sorted((out / "stages" / "signatures").glob("*/H.u32")),
        "invert stage I": sorted((out / "stages" / "invert").glob("*/I.docs.u32")),
        "published H": [live / "H.u32"],
        "published docs": [live / "docs.parquet"],
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


KINDS = ("ingest part", "bags stage part", "signatures stage H", "invert stage I", "published H", "published docs")


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
    from simweb.tasks.signatures import IndexParams

    out = _built(tmp_path)
    first = index_store.resolve(str(out))
    target = _target(out, "bags stage part")
    _damage(target, "overwritten")
    params = IndexParams(m=16, min_in_degree=0)
    # By size, the damage goes unnoticed; by content, the bags are computed again.
    cheap = index_chain(None, crawl_folder(str(out)), str(out), Strategy(), params)
    assert cheap.stages["bags"].reused
    checked = index_chain(None, crawl_folder(str(out)), str(out), Strategy(), params, verify=True)
    assert not checked.stages["bags"].reused and checked.stages["signatures"].reused
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
