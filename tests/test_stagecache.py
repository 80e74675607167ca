"""Stage caching and resume (tasks/stagecache.py), on real folders and fsspec's memory store."""
from __future__ import annotations

import json
import multiprocessing
import os
import shutil
import subprocess
import sys
import uuid
from dataclasses import dataclass
from pathlib import Path

import pytest

from simweb.tasks import stagecache
from simweb.tasks.stagecache import MANIFEST, StageOutput, lookup, run_stage, stage_key


@dataclass(frozen=True, slots=True)
class Params:
    m: int = 8
    alpha: float = 0.5
    strategy: str = "BASIC-8"


def write_numbers(n: int):
    def compute(tmp: str) -> dict:
        Path(tmp, "numbers.txt").write_text("\n".join(map(str, range(n))))
        return {"records_out": n}

    return compute


def test_a_stage_is_computed_once_and_then_reused(tmp_path):
    root = str(tmp_path)
    calls = []

    def compute(tmp):
        calls.append(tmp)
        return write_numbers(3)(tmp)

    first = run_stage(root, "ingest", {"warcs": ["sha256:aa"]}, Params(), compute)
    assert not first.reused and first.stats == {"records_out": 3}
    assert Path(first.path, "numbers.txt").read_text() == "0\n1\n2"
    manifest = json.loads(Path(first.path, MANIFEST).read_text())
    assert manifest["stage"] == "ingest" and manifest["key"] == first.key
    assert manifest["params"] == {"m": 8, "alpha": 0.5, "strategy": "BASIC-8"}
    assert manifest["inputs"] == {"warcs": ["sha256:aa"]}
    assert manifest["stats"] == {"records_out": 3} and manifest["seconds"] >= 0
    mtime = os.stat(Path(first.path, MANIFEST)).st_mtime_ns

    second = run_stage(root, "ingest", {"warcs": ["sha256:aa"]}, Params(), compute)
    assert second.reused and second.path == first.path and second.stats == {"records_out": 3}
    assert len(calls) == 1
    assert os.stat(Path(first.path, MANIFEST)).st_mtime_ns == mtime
    assert lookup(root, "ingest", first.key) == first.path
    # Only the published folder is left: the temporary one was renamed into place.
    assert sorted(p.name for p in (tmp_path / "ingest").iterdir()) == [first.key]


def test_changed_parameters_or_inputs_make_a_new_key_and_a_downstream_chain(tmp_path):
    root = str(tmp_path)
    a = run_stage(root, "ingest", {"warcs": ["sha256:aa"]}, None, write_numbers(2))
    bags1 = run_stage(root, "bags", {"ingest": a}, Params(strategy="BASIC-8"), write_numbers(4))
    bags2 = run_stage(root, "bags", {"ingest": a}, Params(strategy="BASIC-16"), write_numbers(5))
    assert bags1.key != bags2.key and not bags2.reused
    # Same parameters given as a dict are the same key (stable JSON, key order irrelevant).
    as_dict = {"strategy": "BASIC-8", "alpha": 0.5, "m": 8}
    assert stage_key("bags", {"ingest": a}, as_dict) == bags1.key
    assert run_stage(root, "bags", {"ingest": a}, as_dict, write_numbers(99)).reused
    # A changed upstream output changes the downstream key.
    b = run_stage(root, "ingest", {"warcs": ["sha256:bb"]}, None, write_numbers(2))
    assert stage_key("bags", {"ingest": b}, Params()) != bags1.key
    # Upstream outputs are named by stage and key, not by where the root lives.
    assert a.identity == f"ingest:{a.key}"


def test_a_crash_inside_the_stage_publishes_nothing_and_the_rerun_computes(tmp_path):
    root = str(tmp_path)

    def half_then_fail(tmp):
        Path(tmp, "part-0.parquet").write_bytes(b"half")
        raise RuntimeError("disk full")

    with pytest.raises(RuntimeError, match="disk full"):
        run_stage(root, "signatures", {"bags": "bags:k"}, Params(), half_then_fail)
    key = stage_key("signatures", {"bags": "bags:k"}, Params())
    assert lookup(root, "signatures", key) is None
    assert list((tmp_path / "signatures").iterdir()) == []

    again = run_stage(root, "signatures", {"bags": "bags:k"}, Params(), write_numbers(1))
    assert not again.reused and again.key == key
    assert sorted(p.name for p in Path(again.path).iterdir()) == [MANIFEST, "numbers.txt"]


def _crash_mid_stage(root: str) -> None:
    def compute(tmp):
        Path(tmp, "part-0").write_text("partial")
        os._exit(9)  # the process dies: no exception handler, no clean-up

    run_stage(root, "index", {"signatures": "signatures:k"}, None, compute)


def test_a_killed_run_leaves_only_a_temporary_folder_which_the_next_run_removes(tmp_path):
    root = str(tmp_path)
    proc = multiprocessing.get_context("spawn").Process(target=_crash_mid_stage, args=(root,))
    proc.start()
    proc.join(60)
    assert proc.exitcode == 9
    leftovers = list((tmp_path / "index").iterdir())
    assert len(leftovers) == 1 and leftovers[0].name.startswith(stagecache.TMP_PREFIX)
    assert lookup(root, "index", stage_key("index", {"signatures": "signatures:k"}, None)) is None

    out = run_stage(root, "index", {"signatures": "signatures:k"}, None, write_numbers(1))
    assert not out.reused
    assert [p.name for p in (tmp_path / "index").iterdir()] == [out.key]


def test_a_live_runs_temporary_folder_is_not_removed(tmp_path):
    live = tmp_path / "bags" / f"{stagecache.TMP_PREFIX}abcd-{stagecache._HOST}-{os.getpid()}-0000"
    live.mkdir(parents=True)
    assert stagecache.clean_stale(str(tmp_path)) == []
    assert live.is_dir()
    dead_pid = _a_dead_pid()
    dead = tmp_path / "bags" / f"{stagecache.TMP_PREFIX}abcd-{stagecache._HOST}-{dead_pid}-0000"
    dead.mkdir()
    removed = stagecache.clean_stale(str(tmp_path))
    assert removed == [f"{tmp_path}/bags/{dead.name}"] and not dead.exists() and live.is_dir()


def _a_dead_pid() -> int:
    proc = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    return int(proc.stdout)


def test_a_folder_without_manifest_is_not_a_result_and_is_replaced(tmp_path):
    root = str(tmp_path)
    key = stage_key("bags", {"x": "1"}, None)
    debris = tmp_path / "bags" / key
    debris.mkdir(parents=True)
    (debris / "stale.txt").write_text("left by an interrupted copy")
    assert lookup(root, "bags", key) is None
    out = run_stage(root, "bags", {"x": "1"}, None, write_numbers(2))
    assert not out.reused and not (debris / "stale.txt").exists()


def test_an_unkeyable_parameter_is_refused_with_the_fix():
    with pytest.raises(TypeError, match="cannot key a object; expected a frozen dataclass"):
        stage_key("bags", {}, {"hash": object()})
    with pytest.raises(ValueError, match="expected a finite number"):
        stage_key("bags", {}, {"alpha": float("nan")})
    with pytest.raises(ValueError, match="expected a plain folder name"):
        stage_key("../bags", {}, None)


def test_file_identities_follow_content_not_location(tmp_path):
    (tmp_path / "a.warc").write_bytes(b"one")
    (tmp_path / "b.warc").write_bytes(b"two")
    (tmp_path / "moved").mkdir()
    (tmp_path / "moved" / "renamed.warc").write_bytes(b"one")
    first = stagecache.file_identities([str(tmp_path / "a.warc"), str(tmp_path / "b.warc")])
    moved = stagecache.file_identities([str(tmp_path / "b.warc"), str(tmp_path / "moved" / "renamed.warc")])
    assert first == moved and all(i.startswith("sha256:") for i in first)
    (tmp_path / "b.warc").write_bytes(b"two!")
    assert stagecache.file_identities([str(tmp_path / "a.warc"), str(tmp_path / "b.warc")]) != first


def test_an_object_store_url_is_published_with_the_manifest_last():
    import fsspec

    root = f"memory://stagecache-{uuid.uuid4().hex}"

    def compute(tmp):
        fs, p = fsspec.core.url_to_fs(tmp)
        with fs.open(f"{p}/part-0.txt", "wb") as f:
            f.write(b"remote")
        return {"records_out": 1}

    first = run_stage(root, "ingest", {"w": "1"}, None, compute)
    assert first.path.startswith("memory://") and not first.reused
    fs, p = fsspec.core.url_to_fs(first.path)
    assert sorted(x.rsplit("/", 1)[-1] for x in fs.ls(p, detail=False)) == [MANIFEST, "part-0.txt"]
    assert run_stage(root, "ingest", {"w": "1"}, None, compute).reused
    assert [m["key"] for m in stagecache.published(root, "ingest")] == [first.key]

    def fail(tmp):
        raise OSError("connection reset")

    with pytest.raises(OSError):
        run_stage(root, "ingest", {"w": "2"}, None, fail)
    assert lookup(root, "ingest", stage_key("ingest", {"w": "2"}, None)) is None
    assert [x.rsplit("/", 1)[-1] for x in fs.ls(fsspec.core.url_to_fs(root)[1] + "/ingest", detail=False)] == [first.key]


def test_stage_output_is_a_plain_triple():
    out = StageOutput("/r/bags/abc", {"n": 1}, True)
    path, stats, reused = out
    assert (path, stats, reused, out.stage, out.key) == ("/r/bags/abc", {"n": 1}, True, "bags", "abc")


def test_the_lineage_of_an_output_names_every_stage_it_was_computed_from(tmp_path):
    root = str(tmp_path)
    ingest = run_stage(root, "ingest", {"warcs": ["sha256:" + "a" * 64]}, None, write_numbers(1))
    bags = run_stage(root, "bags", {"ingest": ingest}, Params(strategy="BASIC-16"), write_numbers(2))
    signed = run_stage(root, "signatures", {"bags": bags, "links": [ingest.identity]}, {"m": 80}, write_numbers(3))
    index = run_stage(root, "index", {"signed": signed}, {"min_in_degree": 3}, write_numbers(4))
    chain = stagecache.lineage(root, index)
    assert sorted(chain) == ["bags", "index", "ingest", "signatures"]
    assert chain["bags"]["params"]["strategy"] == "BASIC-16" and chain["signatures"]["params"] == {"m": 80}
    assert stagecache.lineage(root, bags.identity).keys() == {"bags", "ingest"}
    shutil.rmtree(ingest.path)
    with pytest.raises(FileNotFoundError, match="expected a finished stage output"):
        stagecache.lineage(root, index)


def test_a_consumed_output_keeps_its_manifest_and_stats_but_is_never_reused(tmp_path):
    root = str(tmp_path)
    calls = []

    def compute(tmp):
        calls.append(tmp)
        return write_numbers(5)(tmp)

    first = run_stage(root, "frag", {"crawl": ["sha256:aa"]}, Params(), compute)
    down = run_stage(root, "merge", {"frag": first}, None, write_numbers(2))
    size = Path(first.path, "numbers.txt").stat().st_size
    assert stagecache.consume(first) == size and stagecache.consume(first) == 0  # once
    assert not Path(first.path, "numbers.txt").exists()
    manifest = json.loads(Path(first.path, MANIFEST).read_text())
    assert manifest["files"] == {} and manifest["consumed"]["bytes"] == size
    # Its key and stats still name it: in the lineage, and for a stage that reads only its record.
    assert stagecache.recorded(root, "frag", {"crawl": ["sha256:aa"]}, Params()) == \
        StageOutput(first.path, {"records_out": 5}, True)
    assert set(stagecache.lineage(root, down)) == {"merge", "frag"}
    assert stagecache.find(root, "merge", {"frag": first}, None) == StageOutput(down.path, {"records_out": 2}, True)
    # Never reused: looked for, it is not there; run again, it is computed anew, whole.
    assert stagecache.find(root, "frag", {"crawl": ["sha256:aa"]}, Params()) is None
    again = run_stage(root, "frag", {"crawl": ["sha256:aa"]}, Params(), compute)
    assert len(calls) == 2 and not again.reused and again.path == first.path
    assert Path(again.path, "numbers.txt").read_text() == "0\n1\n2\n3\n4"
    assert "consumed" not in json.loads(Path(again.path, MANIFEST).read_text())


def test_find_removes_a_damaged_output_as_run_stage_would(tmp_path):
    root = str(tmp_path)
    out = run_stage(root, "merge", {"frag": "frag:" + "0" * 64}, None, write_numbers(4))
    Path(out.path, "numbers.txt").write_text("0\n1")
    assert stagecache.find(root, "merge", {"frag": "frag:" + "0" * 64}, None) is None
    assert not Path(out.path).exists()
