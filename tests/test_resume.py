"""Resume after a failure, reuse after success, incremental = full: the stage cache on the
real pipeline stages and flows.

A real exception is raised inside a late stage (the ``fail_stage`` fixture makes the stage fail
after it has written its output, before publishing it); the re-run must not
recompute any earlier stage — their manifests and files keep their modification times and
the count of computed stages says so — and must end with the same output as a build that
was never interrupted. The first tests call the stages directly (fast); the slow ones run
the build-index and ingest-new-crawl flows against a real Prefect server.
"""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from conftest import InjectedFailure

from simweb.core.strategy import Frequency, Strategy
from simweb.tasks import stagecache
from simweb.tasks.ingest.files import ingest_files
from simweb.tasks.stages.bags import build_bags_stage
from simweb.tasks.stages.weighting import DF_FILE
from simweb.tasks.storage import read_parquet

WARCS = ("warcfile.warc.gz", "example.warc.gz", "example-iana.org-chunked.warc")
LATE_STAGES = ("bag-merge", "bags")


def build(warcs: list[str], root: Path, strategy: Strategy):
    """The pipeline as far as its stages exist today: ingest → bag fragments → merge → bags."""
    ingest_files(warcs, str(root / "crawl"))
    return build_bags_stage(str(root / "crawl"), strategy, str(root / "stages"), scheduler="sync")


def finished(root: Path) -> dict[str, int | str]:
    """Every finished unit of work with when it was computed: stage manifests (the time they
    record: consuming an output rewrites its manifest, not its work) and ingest parts."""
    marks = {str(p.relative_to(root)): json.loads(p.read_text())["finished"]
             for p in root.glob("stages/*/*/" + stagecache.MANIFEST)}
    marks.update((str(p.relative_to(root)), p.stat().st_mtime_ns) for p in root.glob("crawl/stats/part-*.json"))
    return marks


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
def test_a_build_that_failed_in_a_late_stage_resumes_there(failing, warcs, uninterrupted, tmp_path, fail_stage):
    fail_stage.add(failing)
    with pytest.raises(InjectedFailure, match=f"stage {failing}: failing on purpose"):
        build(warcs, tmp_path, Strategy())
    after_failure = finished(tmp_path)
    assert not list((tmp_path / "stages" / failing).iterdir()), "the failed stage left output behind"
    # What finished before the failure: every ingest part and the stages before `failing`.
    earlier = {"bag-merge": ["bag-fragments"], "bags": ["bag-fragments", "bag-merge"]}[failing]
    assert sorted({k.split("/")[1] for k in after_failure if k.startswith("stages/")}) == earlier
    assert len([k for k in after_failure if k.startswith("crawl/")]) == len(WARCS)

    fail_stage.clear()
    out = build(warcs, tmp_path, Strategy())
    after_resume = finished(tmp_path)
    recomputed = computed_since(after_failure, after_resume)
    # Exactly the failed stage and the ones after it were computed; nothing before it.
    assert [k.split("/")[1] for k in recomputed] == list(LATE_STAGES[LATE_STAGES.index(failing):])
    assert {k: after_resume[k] for k in after_failure} == after_failure

    reference_root, reference = uninterrupted
    assert out.key == reference.key and not out.reused
    assert rows(out.path) == rows(reference.path)
    df_file = f"/{DF_FILE}"
    assert rows(out.path + df_file) == rows(reference.path + df_file)


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


# ---------------------------------------------------------------------------------------
# Through the flows, on a real Prefect server


def flow_marks(out: Path) -> dict[str, int | str]:
    """Finished units of a build-index output folder: ingest parts and stage manifests."""
    return finished(out)


@pytest.mark.slow
@pytest.mark.timeout(900)
@pytest.mark.parametrize("failing", ["signatures", "invert"])
def test_build_index_failed_in_a_late_stage_resumes_there(failing, prefect_api, warcs, tmp_path, fail_stage,
                                                          build_in_process, index_diff):
    from simweb.flows.build_index import build_index

    out = tmp_path / "index"
    fail_stage.add(failing)
    with pytest.raises(InjectedFailure, match=f"stage {failing}"):
        build_index(crawl=warcs, out=str(out), n_workers=1)
    after_failure = flow_marks(out)
    assert not (out / "CURRENT").exists(), "a failed build published an index"

    fail_stage.clear()
    summary = build_index(crawl=warcs, out=str(out), n_workers=1)
    recomputed = computed_since(after_failure, flow_marks(out))
    order = ["bag-fragments", "bag-merge", "bags", "signatures", "invert"]
    assert [k.split("/")[1] for k in sorted(recomputed, key=lambda k: order.index(k.split("/")[1]))] == \
        order[order.index(failing):]
    assert {k: v for k, v in flow_marks(out).items() if k in after_failure} == after_failure
    assert summary.ingest.files_unchanged == len(WARCS) and summary.ingest.files_read == 0
    assert summary.stages["bags"]["reused"] and not summary.stages["invert"]["reused"]

    reference = build_in_process(warcs, tmp_path / "reference", min_in_degree=None)  # the flow's default
    assert index_diff(summary.index, reference) == []


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_new_crawl_files_update_the_index_to_what_a_full_build_makes(prefect_api, warcs, tmp_path,
                                                                     build_in_process, index_diff):
    from simweb.api import open_index
    from simweb.flows.build_index import build_index
    from simweb.flows.ingest_new_crawl import ingest_new_crawl
    from simweb.tasks.layout import crawl_folder
    from simweb.tasks.ledger import read_ledger

    first, later = warcs[:2], warcs[2:]
    out, inbox = tmp_path / "index", tmp_path / "inbox"
    inbox.mkdir()
    built = build_index(crawl=first, out=str(out), n_workers=1, min_in_degree=None)
    before = open_index(out)
    assert before.info()["version"] == Path(built.index).name
    new_url = "http://www.iana.org/"
    assert new_url not in before

    for path in later:
        shutil.copy(path, inbox / Path(path).name)
    # max_growth=0: every update begins a new df epoch, re-weighting the whole collection
    # (tests/test_incremental.py covers updates within an epoch).
    report = ingest_new_crawl(inbox=str(inbox), out=str(out), settle_seconds=0, n_workers=1, max_growth=0.0)
    assert report.ingested == [Path(p).name for p in later] and report.failed == {}
    assert report.stages == {"bags": False, "signatures": False, "invert": False, "related-table": False}
    # It kept the build's parameters (min_in_degree=None).
    assert open_index(out).info()["min_in_degree"] is None

    # The index now equals a full build over all the files with the same parameters.
    reference = build_in_process(warcs, tmp_path / "reference", min_in_degree=None)
    assert index_diff(report.index, reference) == []

    # A reader that opened the old version keeps answering from it until it refreshes.
    assert new_url not in before and before.refresh() and new_url in before
    assert len(before) == len(open_index(reference))

    # Nothing new: no work, and nothing counted twice.
    ledger = read_ledger(crawl_folder(str(out)))
    again = ingest_new_crawl(inbox=str(inbox), out=str(out), settle_seconds=0, n_workers=1, max_growth=0.0)
    assert again.ingested == [] and again.stages == {} and again.index == report.index
    assert read_ledger(crawl_folder(str(out))) == ledger


def _chain(warcs: list[str], out: Path, m: int = 80):
    """ingest → bags → signatures → invert → publish in this process (simweb.flows.chain)."""
    from simweb.flows.chain import index_chain
    from simweb.tasks.layout import crawl_folder
    from simweb.tasks.signatures import IndexParams

    ingest_files(warcs, crawl_folder(str(out)))
    return index_chain(None, crawl_folder(str(out)), str(out), Strategy(), IndexParams(m=m, min_in_degree=None))


def test_an_index_build_consumes_its_bags_and_weighs_them_again_only_to_sign_again(warcs, tmp_path):
    from simweb.api import open_index

    first = _chain(warcs, tmp_path)
    bags = first.stages["bags"]
    # The index keeps the bags (in document order); the stage keeps its manifest and stats only.
    assert stagecache.was_consumed(bags) and not list(Path(bags.path).glob("*.parquet"))
    assert bags.stats["bags"] > 0
    index = open_index(tmp_path)
    some = index._v.docs.column("url")[0].as_py()
    assert index.bag(some) and index.related(some) is not None
    before = finished(tmp_path)

    # The same build again: nothing is computed, the consumed bags are named by their key.
    again = _chain(warcs, tmp_path)
    assert computed_since(before, finished(tmp_path)) == []
    assert again.stages["bags"].key == bags.key and again.stages["signatures"].reused

    # Another m: the bags are weighed again from the merge (not from the crawl) to be signed.
    other = _chain(warcs, tmp_path, m=40)
    recomputed = [k.split("/")[1] for k in computed_since(before, finished(tmp_path))]
    assert sorted(recomputed) == ["bags", "invert", "signatures"]
    assert other.stages["bags"].key == bags.key and stagecache.was_consumed(other.stages["bags"])
    assert open_index(tmp_path).info()["minhash"]["m"] == 40

    # The epoch's df comes from the bags: lost with the epochs, it is weighed again.
    shutil.rmtree(tmp_path / "epochs")
    before = finished(tmp_path)
    _chain(warcs, tmp_path, m=40)
    assert [k.split("/")[1] for k in computed_since(before, finished(tmp_path))] == ["bags"]
    assert list((tmp_path / "epochs").glob("*/df.parquet"))
