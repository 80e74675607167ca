"""The lock of an index folder: one writing run at a time, released when its holder dies."""
from __future__ import annotations

import os
import subprocess
import sys
import threading
import time

import pytest

from simweb.tasks.layout import LOCK, IndexLock, IndexLocked


def test_a_second_run_is_refused_with_the_holder_named(tmp_path):
    out = str(tmp_path / "index")
    with IndexLock(out, "build-index"):
        with pytest.raises(IndexLocked, match=r"in use by build-index \(host .*, process %d\)" % os.getpid()):
            with IndexLock(out, "ingest-new-crawl", wait=0):
                pass
    with IndexLock(out, "ingest-new-crawl", wait=0):  # released on exit
        assert (tmp_path / "index" / LOCK).read_text().split()[-1] == "ingest-new-crawl"


def test_a_waiting_run_goes_on_when_the_holder_finishes(tmp_path):
    out = str(tmp_path / "index")
    said: list[str] = []
    first = IndexLock(out, "build-index").__enter__()
    timer = threading.Timer(0.5, first.__exit__, (None, None, None))
    timer.start()
    started = time.monotonic()
    with IndexLock(out, "ingest-new-crawl", wait=30, on_wait=said.append, poll=0.05):
        waited = time.monotonic() - started
    timer.join()
    assert waited >= 0.4 and said and "waiting for build-index" in said[0]


def test_a_killed_holder_leaves_no_stale_lock(tmp_path):
    out = tmp_path / "index"
    code = ("import os, sys, time; from simweb.tasks.layout import IndexLock\n"
            f"IndexLock({str(out)!r}, 'build-index').__enter__(); print('held', flush=True); time.sleep(60)")
    holder = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(IndexLocked, match=f"process {holder.pid}"):
            IndexLock(str(out), "ingest-new-crawl", wait=0).__enter__()
        holder.kill()
        holder.wait(timeout=30)
        with IndexLock(str(out), "ingest-new-crawl", wait=0):
            pass
    finally:
        holder.kill()


def test_an_index_remembers_where_its_work_is_kept_and_can_take_it_back(tmp_path, monkeypatch):
    from simweb.tasks.layout import WORK, crawl_folder, set_work_folder, stages_folder, sweep_debris, work_folder

    out = str(tmp_path / "index")
    assert work_folder(out) == out and stages_folder(out) == f"{out}/stages"
    monkeypatch.chdir(tmp_path)
    set_work_folder(out, "elsewhere")  # a relative folder is remembered as the absolute one it names
    assert work_folder(out) == str(tmp_path / "elsewhere")
    assert crawl_folder(out) == f"{tmp_path}/elsewhere/crawl" and stages_folder(out) == f"{tmp_path}/elsewhere/stages"
    # A killed run's temporaries in a work folder kept elsewhere (which another index may share) are
    # the stage cache's to judge by their owner, not this index's lock holder's to sweep.
    other = tmp_path / "elsewhere" / "stages" / "bags" / ".tmp-0123-other-run"
    other.mkdir(parents=True)
    assert sweep_debris(out) == [] and other.is_dir()
    set_work_folder(out, "s3://bucket/simweb-work")
    assert stages_folder(out) == "s3://bucket/simweb-work/stages"
    set_work_folder(out, out)  # back into the index folder
    assert not os.path.exists(os.path.join(out, WORK)) and work_folder(out) == out


def test_an_index_folder_names_the_crawl_it_keeps_wherever_it_keeps_it(tmp_path):
    from simweb.tasks.layout import crawl_folder_of, set_work_folder

    ingested = tmp_path / "data"
    (ingested / "pages").mkdir(parents=True)
    assert crawl_folder_of(str(ingested)) == str(ingested)  # `simweb ingest --out DIR` itself
    index = tmp_path / "index"
    (index / "crawl" / "pages").mkdir(parents=True)
    assert crawl_folder_of(str(index)) == f"{index}/crawl"
    work = tmp_path / "work"
    (work / "crawl" / "pages").mkdir(parents=True)
    set_work_folder(str(index), str(work))  # `simweb build --work`: the crawl lives there
    assert crawl_folder_of(str(index)) == f"{work}/crawl"
    for other in (str(tmp_path / "nothing"), str(tmp_path / "empty"), "s3://bucket/crawl"):
        assert crawl_folder_of(other) == other  # left for the reader to refuse, or read remotely
