"""Wrong inputs and outputs are refused before anything starts: one line on standard error,
exit code 2, no traceback, no Prefect server or Dask cluster started."""
from __future__ import annotations

import zipfile

import pytest

from simweb.cli import main

BOMB = ('<?xml version="1.0"?>\n<!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;&lol;&lol;">]>\n'
        "<RDF>&lol2;</RDF>\n")


@pytest.fixture
def places(tmp_path, warc_dir):
    (tmp_path / "bomb.rdf").write_text(BOMB)
    (tmp_path / "a-folder").mkdir()
    (tmp_path / "a-file").write_text("not a folder")
    (tmp_path / "empty.tsv").write_text("")
    (tmp_path / "no-tabs.tsv").write_text("http://a.example/ Top/A/B/C\n")
    (tmp_path / "directory.csv").write_text("url,category\nhttp://a.example/,Top/A/B/C\n")
    (tmp_path / "empty-folder").mkdir()
    (tmp_path / "notes.txt").write_text("these are my notes, not a crawl\n")
    (tmp_path / "crawl.warc.bz2").write_bytes(__import__("bz2").compress((warc_dir / "example.warc.gz").read_bytes()))
    with zipfile.ZipFile(tmp_path / "crawl.zip", "w") as package:
        package.write(warc_dir / "example.warc.gz", "crawl/data.warc.gz")
    return {"tmp": tmp_path, "warc": str(warc_dir / "example.warc.gz")}


def _run(argv, capsys) -> tuple[int, str]:
    code = main(argv)
    err = capsys.readouterr().err
    return code, err


@pytest.mark.parametrize("case, argv, expected", [
    ("directory is a folder", ["evaluate", "--crawl", "{tmp}", "--directory", "{tmp}/a-folder", "--out", "{tmp}/r"],
     "--directory .*a-folder is a folder; expected a directory file"),
    ("entity bomb", ["evaluate", "--crawl", "{tmp}", "--directory", "{tmp}/bomb.rdf", "--out", "{tmp}/r"],
     "refused to read the directory file"),
    ("missing directory", ["build", "{warc}", "--out", "{tmp}/i", "--directory", "{tmp}/nothere.rdf"],
     "--directory .*nothere.rdf: no such file"),
    ("empty directory", ["build", "{warc}", "--out", "{tmp}/i", "--directory", "{tmp}/empty.tsv"], "is empty"),
    ("no TSV line", ["build", "{warc}", "--out", "{tmp}/i", "--directory", "{tmp}/no-tabs.tsv"],
     r"no url<TAB>category line"),
    ("a CSV directory", ["evaluate", "--crawl", "{tmp}", "--directory", "{tmp}/directory.csv", "--out", "{tmp}/r"],
     r"no url<TAB>category line .*\(its lines look separated by commas: save it with tabs between the URL and the "
     r"category\)"),
    ("out is a file", ["build", "{warc}", "--out", "{tmp}/a-file"], "--out .*a-file is a file: expected a folder"),
    ("out under a file", ["build", "{warc}", "--out", "{tmp}/a-file/index"], "--out cannot write into .*a-file/index"),
    ("ingest out is a file", ["ingest", "{warc}", "--out", "{tmp}/a-file"], "is a file"),
    ("contradictory strategy", ["build", "{warc}", "--out", "{tmp}/i", "--strategy", "anchor,stem,nostem"],
     "contradict each other"),
    ("missing WARC", ["build", "{tmp}/gone.warc.gz", "--out", "{tmp}/i"],
     "gone.warc.gz: no such file or folder; expected a WARC or ARC file"),
    ("empty crawl folder", ["build", "{tmp}/empty-folder", "--out", "{tmp}/i"],
     "empty-folder is an empty folder; expected WARC or ARC files"),
    ("glob matching nothing", ["ingest", "{tmp}/*.warc.gz", "--out", "{tmp}/i"], "no file matches"),
    ("ingest of a text file", ["ingest", "{tmp}/notes.txt", "--out", "{tmp}/i"],
     'notes.txt is not a WARC file: it starts with "these are my not", not "WARC/"'),
    ("a bzip2 file", ["ingest", "{tmp}/crawl.warc.bz2", "--out", "{tmp}/i"],
     r"crawl.warc.bz2 is compressed with bzip2, which simweb does not read; decompress it \(bzip2 -d\)"),
    ("a ZIP file", ["build", "{tmp}/crawl.zip", "--out", "{tmp}/i"],
     r"crawl.zip is a ZIP file, not a WARC file; unzip it and name the WARC files it holds"),
    ("a chained URL", ["ingest", "zip://crawl/data.warc.gz::{tmp}/crawl.zip", "--out", "{tmp}/i"],
     r"a chained URL \(…::…\) is not read; name the WARC or ARC file itself"),
    ("no-prefect with a cluster", ["build", "{warc}", "--out", "{tmp}/i", "--no-prefect", "--workers", "2"],
     "--no-prefect runs in this process; it cannot be combined with --workers"),
    ("s3 without s3fs", ["build", "s3://bucket/crawl/", "--out", "{tmp}/i"],
     r"reading s3:// URLs needs the 's3fs' package.*pip install 'simweb\[s3\]'"),
    ("https without aiohttp", ["ingest", "https://example.org/crawl.warc.gz", "--out", "{tmp}/i"],
     r"needs the 'aiohttp' package.*pip install 'simweb\[http\]'"),
])
def test_refused_before_anything_starts(case, argv, expected, places, capsys, monkeypatch):
    import importlib.util

    find_spec = importlib.util.find_spec  # the extras' packages missing, wherever the test runs
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name in ("s3fs", "aiohttp") else find_spec(name, *a))
    argv = [a.format(tmp=places["tmp"], warc=places["warc"]) for a in argv]
    code, err = _run(argv, capsys)
    assert code == 2, case
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    assert __import__("re").search(expected, err), err


def test_similarity_reads_the_bags_of_an_index_folder(small_index, capsys):
    """`simweb similarity --bags INDEX` compares the bags the index holds (not only a bags folder)."""
    from simweb.api import open_index
    from simweb.core.similarity import jaccard

    a, b = "http://java1.example.com/", "http://java2.example.com/"
    assert main(["similarity", a, b, "--bags", small_index]) == 0
    out = capsys.readouterr().out
    index = open_index(small_index)
    assert out.splitlines()[0] == f"jaccard {jaccard(index.bag(a), index.bag(b)):.4f}"
    assert main(["similarity", a, "http://nowhere.example.com/", "--bags", small_index]) == 1
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "not among the" in err


def test_related_for_the_other_scheme_suggests_the_form_the_index_has(small_index, capsys):
    code = main(["related", "https://java1.example.com/", "--index", small_index])
    err = capsys.readouterr().err
    assert code != 0 and len(err.strip().splitlines()) == 1
    assert "but http://java1.example.com/ is" in err and "ask for http://java1.example.com/" in err


def test_a_user_error_inside_a_prefect_task_is_logged_in_one_line(prefect_harness, tmp_path, caplog):
    """Under Prefect, a user-input error raised inside a task (here: a directory naming no page of
    the crawl) is logged by the task and the flow without a traceback, and not retried."""
    import logging

    from test_evaluate import build_synthetic_crawl

    from simweb.commands.errors import install_one_line_user_errors
    from simweb.flows.evaluate_strategies import evaluate_strategies
    from simweb.tasks.stages.eval_sample import EmptySample

    made = build_synthetic_crawl(tmp_path / "crawl")
    elsewhere = tmp_path / "elsewhere.tsv"
    elsewhere.write_text("".join(f"http://other{i}.example/\tTop/a/b/c{i % 2}\n" for i in range(8)))
    install_one_line_user_errors()

    class Keep(logging.Handler):  # on the run loggers themselves: Prefect configures the root's handlers
        def __init__(self):
            super().__init__(logging.DEBUG)
            self.lines: list[str] = []

        def emit(self, record):
            self.lines.append(logging.Formatter("%(levelname)s %(message)s").format(record))

    keep = Keep()
    loggers = [logging.getLogger(n) for n in ("prefect.task_runs", "prefect.flow_runs")]
    for logger in loggers:
        logger.addHandler(keep)
    try:
        with pytest.raises(EmptySample):
            evaluate_strategies(crawl=made["crawl"], directory=str(elsewhere), out=str(tmp_path / "r"), n_workers=1)
    finally:
        for logger in loggers:
            logger.removeHandler(keep)
    errors = [line for line in keep.lines if line.startswith("ERROR")]
    assert errors, f"Prefect logged no error: the check saw nothing ({keep.lines})"
    for line in errors:
        assert "Traceback" not in line and len(line.splitlines()) == 1, line
    assert not [line for line in keep.lines if "Retrying" in line or "retry" in line.lower()]
