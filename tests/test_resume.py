"""Resume after a failure, reuse after success: the stage cache on the real pipeline stages.

A real exception is raised inside a late stage (tasks.stagecache.FAIL_STAGE_ENV makes the
stage fail after it has written its output, before publishing it); the re-run must not
recompute any earlier stage — their manifests and files keep their modification times and
the count of computed stages says so — and must end with the same output as a build that
was never interrupted.
"""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from simcore.strategy import Frequency, Strategy
from tasks import stagecache
from tasks.bags import build_bags_stage
from tasks.ingest import ingest_files
from tasks.storage import read_parquet

WARCS = ("warcfile.warc.gz", "example.warc.gz", "example-iana.org-chunked.warc")
LATE_STAGES = ("bag-merge", "bags")


def build(warcs: list[str], root: Path, strategy: Strategy):
    """The pipeline as far as its stages exist today: ingest → bag fragments → merge → bags."""
    ingest_files(warcs, str(root / "crawl"))
    return build_bags_stage(str(root / "crawl"), strategy, str(root / "stages"), scheduler="sync")


def finished(root: Path) -> dict[str, int]:
    """Every finished unit of work with its modification time: stage manifests and ingest parts."""
    marks = list(root.glob("stages/*/*/" + stagecache.MANIFEST)) + list(root.glob("crawl/stats/part-*.json"))
    return {str(p.relative_to(root)): p.stat().st_mtime_ns for p in marks}


def computed_since(before: dict[str, int], after: dict[str, int]) -> list[str]:
    """The units of work (re)computed between two snapshots: new or rewritten marks."""
    return sorted(k for k, mtime in after.items() if before.get(k) != mtime)


def rows(folder: str) -> list[str]:
    table = read_parquet(folder)
    return sorted(json.dumps(r, sort_keys=True) for r in table.to_pylist())


@pytest.fixture(scope="module")
def warcs(warc_dir, tmp_path_factory) -> list[str]:
    folder = tmp_path_factory.mktemp("warc")
    for name in WARCS:
        shutil.copy(warc_dir / name, folder / name)
    return [str(folder / name) for name in WARCS]


@pytest.fixture(scope="module")
def uninterrupted(warcs, tmp_path_factory):
    root = tmp_path_factory.mktemp("uninterrupted")
    return root, build(warcs, root, Strategy())


@pytest.mark.parametrize("failing", LATE_STAGES)
def test_a_build_that_failed_in_a_late_stage_resumes_there(failing, warcs, uninterrupted, tmp_path, monkeypatch):
    monkeypatch.setenv(stagecache.FAIL_STAGE_ENV, failing)
    with pytest.raises(stagecache.InjectedFailure, match=f"stage {failing}: failing on purpose"):
        build(warcs, tmp_path, Strategy())
    after_failure = finished(tmp_path)
    assert not list((tmp_path / "stages" / failing).iterdir()), "the failed stage left output behind"
    # What finished before the failure: every ingest part and the stages before `failing`.
    earlier = {"bag-merge": ["bag-fragments"], "bags": ["bag-fragments", "bag-merge"]}[failing]
    assert sorted({k.split("/")[1] for k in after_failure if k.startswith("stages/")}) == earlier
    assert len([k for k in after_failure if k.startswith("crawl/")]) == len(WARCS)

    monkeypatch.delenv(stagecache.FAIL_STAGE_ENV)
    out = build(warcs, tmp_path, Strategy())
    after_resume = finished(tmp_path)
    recomputed = computed_since(after_failure, after_resume)
    # Exactly the failed stage and the ones after it were computed; nothing before it.
    assert [k.split("/")[1] for k in recomputed] == list(LATE_STAGES[LATE_STAGES.index(failing):])
    assert {k: after_resume[k] for k in after_failure} == after_failure

    reference_root, reference = uninterrupted
    assert out.key == reference.key and not out.reused
    assert rows(out.path) == rows(reference.path)
    assert rows(f"{out.path}/terms") == rows(f"{reference.path}/terms")


def test_a_finished_build_run_again_does_no_work(warcs, uninterrupted):
    root, first = uninterrupted
    before = finished(root)
    again = build(warcs, root, Strategy())
    assert again.reused and again.path == first.path
    assert computed_since(before, finished(root)) == []


def test_changing_only_the_strategy_reruns_from_the_bags_stage_not_the_ingest(warcs, tmp_path):
    build(warcs, tmp_path, Strategy())
    before = finished(tmp_path)

    # Another weighting: fragments and merge are shared, only the weighting is computed.
    reweighted = build(warcs, tmp_path, Strategy(frequency=Frequency.LOG))
    recomputed = computed_since(before, finished(tmp_path))
    assert [k.split("/")[1] for k in recomputed] == ["bags"] and not reweighted.reused

    # Another anchor window: new fragments onwards, and still no WARC file is read again
    # (no ingest part among the recomputed units).
    before = finished(tmp_path)
    build(warcs, tmp_path, Strategy(window_size=8))
    recomputed = computed_since(before, finished(tmp_path))
    assert [k.split("/")[1] for k in recomputed] == ["bag-fragments", "bag-merge", "bags"]
