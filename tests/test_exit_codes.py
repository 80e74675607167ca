"""The exit status of `simweb ingest` and `simweb build`, on real archives and damaged ones:
0 when every file was read, 3 when some were damaged or unreadable but the output (the index)
was written, 4 when nothing usable was read — then no index is published."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from simweb.cli import main as simweb_main
from simweb.commands import EXIT_FILE_ERRORS, EXIT_NOTHING_READ

# Real files that give pages, and damaged ones that give none (../shared/fixtures/warc).
CLEAN = ("example.warc.gz", "example-iana.org-chunked.warc")
DAMAGED = ("clipped.warc.gz", "example-wrong-chunks.warc.gz")  # a file gzipped whole gives its pages now


@pytest.fixture
def crawls(warc_dir, tmp_path) -> dict[str, list[str]]:
    """Three crawls: every file good; good and damaged files; only damaged or non-archive files."""
    not_an_archive = tmp_path / "notes.warc"
    not_an_archive.write_bytes(b"crawl notes, not a WARC file\n")
    clean = [str(warc_dir / name) for name in CLEAN]
    damaged = [str(warc_dir / name) for name in DAMAGED]
    return {"clean": clean, "mixed": clean + damaged[:1], "all bad": damaged + [str(not_an_archive)]}


def test_the_exit_codes_are_documented(capsys):
    for command in ("ingest", "build"):
        with pytest.raises(SystemExit):
            simweb_main([command, "--help"])
        text = " ".join(capsys.readouterr().out.split())
        assert "exit status: 0 every archive file was read" in text
        assert (f"{EXIT_FILE_ERRORS} some files were damaged or unreadable (listed under \"file errors\"); "
                "the rest was read and the output written") in text
        assert (f"{EXIT_NOTHING_READ} nothing usable was read (no file gave a page; with --add, pages ingested "
                "before count); nothing is published and the crawl is left as it was") in text
    repo = Path(__file__).resolve().parents[1]
    archives = (repo / "docs" / "ARCHIVES.md").read_text()
    assert "| 3 |" in archives and "| 4 |" in archives
    assert "[docs/ARCHIVES.md](docs/ARCHIVES.md)" in (repo / "README.md").read_text()  # the front door links to it


def test_ingest_without_prefect(crawls, tmp_path, capsys):
    for name, expected in (("clean", 0), ("mixed", EXIT_FILE_ERRORS), ("all bad", EXIT_NOTHING_READ)):
        out = tmp_path / name
        assert simweb_main(["ingest", *crawls[name], "--out", str(out), "--no-prefect"]) == expected, name
        err = capsys.readouterr().err
        assert ("nothing usable was read" in err) == (expected == EXIT_NOTHING_READ), name
        # Run again: every file unchanged, its pages and its damage remembered, the same status.
        assert simweb_main(["ingest", *crawls[name], "--out", str(out), "--no-prefect"]) == expected, name
        assert f"0 files read, {len(crawls[name])} unchanged since an earlier ingest" in capsys.readouterr().out


def test_an_all_bad_ingest_leaves_the_crawl_as_it_was(crawls, tmp_path, capsys):
    """Into a folder that holds a crawl: all-bad files change nothing (4, the selection kept);
    with --add the crawl keeps its pages and takes the new files' parts (3: they are damaged)."""
    from simweb.tasks.crawl.selection import read_selection

    out = str(tmp_path / "out")
    assert simweb_main(["ingest", *crawls["clean"], "--out", out, "--no-prefect"]) == 0
    clean = read_selection(out)
    assert len(clean) == 2
    assert simweb_main(["ingest", *crawls["all bad"], "--out", out, "--no-prefect"]) == EXIT_NOTHING_READ
    assert read_selection(out) == clean
    assert simweb_main(["ingest", *crawls["all bad"], "--out", out, "--no-prefect", "--add"]) == EXIT_FILE_ERRORS
    assert set(read_selection(out)) > set(clean) and len(read_selection(out)) == 5
    capsys.readouterr()


# In this process, under the test harness's Prefect API. (Prefect's console log handler keeps
# the stderr of the test that set logging up, so stderr is not checked for tracebacks here:
# the slow test below runs the command as a user does.)


def test_ingest_through_the_flow_when_nothing_is_usable(prefect_harness, crawls, tmp_path, capsys):
    out = tmp_path / "out"
    assert simweb_main(["ingest", *crawls["all bad"], "--out", str(out), "--workers", "1"]) == EXIT_NOTHING_READ
    captured = capsys.readouterr()
    assert "file errors                   3" in captured.out
    assert "simweb ingest: nothing usable was read: no file gave a page (3 damaged or unreadable" in captured.err


NOTHING_READ_MESSAGE = (
    "simweb build: nothing usable was read: the crawl's files gave no HTML page (3 damaged or unreadable, "
    "listed in the file errors); stopped before the bags stage, no index published")


@pytest.mark.parametrize("name, expected, published", [
    ("all bad", EXIT_NOTHING_READ, False),
    ("mixed", EXIT_FILE_ERRORS, True),
    ("clean", 0, True),
])
def test_build(name, expected, published, prefect_harness, crawls, tmp_path, capsys):
    out = tmp_path / "index"
    assert simweb_main(["build", *crawls[name], "--out", str(out), "--workers", "1"]) == expected
    captured = capsys.readouterr()
    assert (out / "CURRENT").exists() == published
    assert (out / "stages").exists() == published  # an all-bad crawl stops before the bags stage
    assert (NOTHING_READ_MESSAGE in captured.err) == (not published)
    if published:
        assert "index published at" in captured.out


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_build_of_an_all_bad_crawl_as_a_user_runs_it(crawls, tmp_path):
    """`simweb build` in its own process, with its own temporary Prefect server: exit status 4,
    the summary and a one-line message, no traceback, nothing published."""
    env = {**os.environ, "PREFECT_HOME": str(tmp_path / "prefect-home")}
    env.pop("PREFECT_API_URL", None)
    done = subprocess.run([sys.executable, "-m", "simweb", "build", *crawls["all bad"], "--out", str(tmp_path / "index"),
                           "--workers", "1"], capture_output=True, text=True, env=env, timeout=500)
    assert done.returncode == EXIT_NOTHING_READ, done.stderr
    assert "Traceback" not in done.stderr and "Traceback" not in done.stdout
    assert NOTHING_READ_MESSAGE in done.stderr.splitlines()
    assert "file errors                   3" in done.stdout
    assert not (tmp_path / "index" / "CURRENT").exists() and not (tmp_path / "index" / "stages").exists()


def test_reading_a_crawl_part_does_not_abort_the_process_at_exit(tmp_path):
    """Reads of a part through a Python file object ran on Arrow's threads (pre-buffering,
    decoding), which could still be at work when the interpreter exited: the process then
    aborted after its work was done (exit 134, every other run; now and then with
    pre-buffering off, on a busy machine) and a command's exit code no longer said what it had
    read. A local part is now read by Arrow itself."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    part = tmp_path / "part.parquet"
    pq.write_table(pa.table({"url_id": pa.array(range(1000), pa.uint64()), "n": list(range(1000))}), part)
    script = ("import sys\nfrom simweb.tasks.storage import read_parquet\n"
              "from simweb.tasks.crawl.read import read_part\nfrom simweb.tasks import schemas\n"
              f"read_parquet({str(part)!r}, ['url_id'])\n"
              f"read_part({str(part)!r}, schemas.PAGES, ['url_id'])\n")
    codes = [subprocess.run([sys.executable, "-c", script], capture_output=True).returncode for _ in range(8)]
    assert codes == [0] * 8
