"""A full disk is named: ENOSPC, EDQUOT or EROFS where a run writes stops it at once, in one line
that names the folder and what was left unpublished, exit 1 — never a retry, never blamed on an
input file — and the next run, once there is room, resumes.

The builds into a small tmpfs mount one (root only; skipped, saying why, elsewhere); the others
make a write fail with the errno, wherever they run.
"""
from __future__ import annotations

import errno
import os
import shutil
import subprocess
import sys
import uuid
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from simweb.cli import main as simweb_main
from simweb.tasks.full_disk import full_disk_error, full_disk_message
from simweb.tasks.ingest import retries

FULL = OSError(errno.ENOSPC, "No space left on device")


def test_a_full_disk_is_found_wherever_it_is_carried():
    assert full_disk_error(FULL) is FULL
    arrow = OSError("Error writing bytes to file. Detail: [errno 28] No space left on device")
    assert full_disk_error(arrow) is arrow
    try:
        try:
            raise OSError(errno.EDQUOT, "Disk quota exceeded")
        except OSError as inner:
            raise RuntimeError("stage failed") from inner
    except RuntimeError as outer:
        assert full_disk_error(outer).errno == errno.EDQUOT

    class State:
        data = OSError(errno.EROFS, "Read-only file system")

    assert full_disk_error(State()).errno == errno.EROFS
    for other in (OSError(errno.EIO, "I/O error"), ValueError("x"), None, "text"):
        assert full_disk_error(other) is None


def test_the_message_names_the_folder_and_what_was_not_published(tmp_path):
    line = full_disk_message(OSError(errno.ENOSPC, "No space left on device", str(tmp_path / "x" / "f.parquet")),
                             [], "no index was published")
    assert line.startswith(f"writing into {tmp_path / 'x'}: no space left on the device (ENOSPC); no index was published")
    assert "\n" not in line and "run the same command again" in line
    assert "read-only" in full_disk_message(OSError(errno.EROFS, "Read-only file system"), [str(tmp_path)], "x")


def failing_ingest(monkeypatch, code: int) -> list[str]:
    """The ingest of every file fails with ``code``; the paths it was asked for, in order."""
    calls: list[str] = []

    def failing(path, out, piece=(0, 1)):
        calls.append(path)
        raise OSError(code, os.strerror(code))

    monkeypatch.setattr(retries, "ingest_warc", failing)
    return calls


def test_the_ingest_neither_retries_nor_blames_the_file(monkeypatch, tmp_path):
    calls = failing_ingest(monkeypatch, errno.ENOSPC)
    with pytest.raises(OSError) as raised:
        retries.ingest_with_retries("crawl.warc.gz", str(tmp_path), io_retries=3, retry_delay=0)
    assert raised.value.errno == errno.ENOSPC and calls == ["crawl.warc.gz"]


def test_a_bad_argument_is_not_retried(monkeypatch, tmp_path):
    """EINVAL (a seek to a negative offset) comes again from the same bytes: one attempt, reported."""
    calls = failing_ingest(monkeypatch, errno.EINVAL)
    stats = retries.ingest_with_retries("crawl.warc.gz", str(tmp_path), io_retries=3, retry_delay=0)
    assert calls == ["crawl.warc.gz"] and "after" not in stats.file_errors[0].reason
    assert not retries.is_transient_io_error(OSError(errno.EINVAL, "Invalid argument"))
    assert retries.is_transient_io_error(OSError(errno.EIO, "I/O error"))


@pytest.mark.parametrize("code", [errno.ENOSPC, errno.EDQUOT, errno.EROFS])
def test_a_full_disk_in_a_later_stage_is_one_line_and_exit_1(code, monkeypatch, tmp_path, capsys, warc_dir):
    """The bags stage's first Parquet write fails as a full disk would: the build says so in one
    line naming the folder, publishes nothing, and the next run resumes where it stopped."""
    real_write = pq.ParquetWriter.write_table

    def full(self, *args, **kwargs):
        raise OSError(code, os.strerror(code))

    monkeypatch.setattr(pq.ParquetWriter, "write_table", full)
    out = tmp_path / "index"
    args = ["build", str(warc_dir / "example.warc.gz"), str(warc_dir / "warcfile.warc.gz"), "--out", str(out),
            "--no-prefect"]
    monkeypatch.setattr(pq.ParquetWriter, "write_table", real_write)
    assert simweb_main(["ingest", *args[1:3], "--out", str(out / "crawl"), "--no-prefect"]) == 0
    monkeypatch.setattr(pq.ParquetWriter, "write_table", full)
    capsys.readouterr()
    assert simweb_main(args) == 1
    err = capsys.readouterr().err
    last = err.strip().splitlines()[-1]
    assert last.startswith(f"simweb build: writing into {out}") and errno.errorcode[code] in last
    assert "no index was published" in last and "Traceback" not in err and "could not be read" not in err
    assert not (out / "CURRENT").exists()
    monkeypatch.setattr(pq.ParquetWriter, "write_table", real_write)
    assert simweb_main(args) == 0
    assert "2 unchanged since an earlier ingest" in capsys.readouterr().err


def can_mount() -> str | None:
    """Why a tmpfs cannot be mounted here (None: it can)."""
    if os.geteuid() != 0:
        return "mounting a small tmpfs needs root"
    if shutil.which("mount") is None:
        return "no mount command"
    probe = Path(f"/tmp/simweb-mount-probe-{uuid.uuid4().hex}")
    probe.mkdir()
    try:
        done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(probe)], capture_output=True)
        if done.returncode != 0:
            return f"mount -t tmpfs is not permitted here: {done.stderr.decode().strip()}"
        subprocess.run(["umount", str(probe)], check=True)
        return None
    finally:
        probe.rmdir()


@pytest.fixture
def small_disk(tmp_path):
    """A tmpfs of 600 KB mounted at tmp_path/disk: (its folder, grow), grow(size) giving it more room."""
    why = can_mount()
    if why:
        pytest.skip(why)
    disk = tmp_path / "disk"
    disk.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=600k", "tmpfs", str(disk)], check=True)

    def grow(size: str = "64m") -> None:
        subprocess.run(["mount", "-o", f"remount,size={size}", str(disk)], check=True)

    try:
        yield disk, grow
    finally:
        if subprocess.run(["umount", str(disk)], capture_output=True).returncode != 0:
            subprocess.run(["umount", "-l", str(disk)], check=False)


def simweb(*args: str, timeout: float = 900) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "simweb.cli", *args], capture_output=True, text=True,
                          timeout=timeout, env={**os.environ, "PREFECT_SERVER_ANALYTICS_ENABLED": "false"})


def assert_one_line_about_the_full_disk(done: subprocess.CompletedProcess, out: Path) -> None:
    assert done.returncode == 1, done.stderr[-3000:]
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith(f"simweb build: writing into {out}: no space left on the device (ENOSPC)"), last
    assert "no index was published" in last
    assert "could not be read" not in done.stderr and "retry" not in done.stderr


def test_a_build_into_a_small_disk_says_so_and_resumes(small_disk, warc_dir):
    disk, grow = small_disk
    out = disk / "index"
    done = simweb("build", str(warc_dir), "--out", str(out))
    assert_one_line_about_the_full_disk(done, out)
    assert "Traceback" not in done.stderr
    assert not [p for p in out.rglob("*") if p.name.startswith(".tmp-") and p.is_file()]  # no half-written file
    grow()
    again = simweb("build", str(warc_dir), "--out", str(out))
    assert again.returncode == 3, again.stderr[-3000:]  # the shared fixtures hold damaged files
    assert "8 unchanged since an earlier ingest" in again.stderr and (out / "CURRENT").exists()


@pytest.mark.slow
def test_a_build_through_prefect_into_a_small_disk_says_so(small_disk, warc_dir):
    out = small_disk[0] / "index"
    done = simweb("build", str(warc_dir), "--out", str(out), "--prefect")
    assert_one_line_about_the_full_disk(done, out)
    assert "Task run failed with exception: OSError(28" in done.stderr  # the stage that met it, one line
