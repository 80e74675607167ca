"""Progress of long steps: a bar on a terminal, a log line per tenth of the way elsewhere, none
for steps over in a blink."""
from __future__ import annotations

import logging

import pytest

from simweb.tasks import progress


@pytest.fixture
def lines(monkeypatch):
    said: list[str] = []

    class Keep(logging.Handler):
        def emit(self, record):
            said.append(record.getMessage())

    logger = logging.getLogger("test.progress")
    logger.setLevel(logging.INFO)
    handler = Keep()
    logger.addHandler(handler)
    monkeypatch.setenv("SIMWEB_PROGRESS", "log")
    yield said, logger
    logger.removeHandler(handler)


def test_a_long_step_logs_each_tenth_once(lines, monkeypatch):
    said, logger = lines
    clock = iter(range(0, 10_000, 1))  # one second per unit: long enough to be logged
    monkeypatch.setattr(progress.time, "monotonic", lambda: float(next(clock)))
    for _ in progress.track(range(25), "ingest", "files", log=logger):
        pass
    assert said[-1] == "ingest: 25/25 files done"
    assert len(said) == len(set(said)) <= 10 and all(line.startswith("ingest: ") for line in said)


def test_a_quick_step_logs_nothing(lines):
    said, logger = lines
    for _ in progress.track(range(25), "ingest", "files", log=logger):
        pass
    assert said == []


def test_a_dask_graph_is_reported_under_its_stage(lines, monkeypatch):
    """dask_progress counts the tasks of graphs Dask's local scheduler runs meanwhile."""
    import dask

    said, logger = lines
    monkeypatch.setattr(progress, "LOG_AFTER_SECONDS", 0.0)
    monkeypatch.setattr(progress, "run_logger", lambda name="": logger)
    with progress.dask_progress("bag-merge"):
        dask.compute(*[dask.delayed(abs)(-i) for i in range(20)], scheduler="sync")
    assert said and said[-1] == "bag-merge: 20/20 tasks done"


def test_the_mode_follows_the_terminal_unless_told(monkeypatch):
    monkeypatch.setenv("SIMWEB_PROGRESS", "off")
    assert progress.mode() == "off"
    monkeypatch.delenv("SIMWEB_PROGRESS")
    assert progress.mode() == "log"  # pytest captures standard error: not a terminal


def test_simrank_and_pagesim_report_each_step(lines, monkeypatch):
    """The iterative link measures call progress(done, total) after each step; the reporter
    turns the calls into the step's progress."""
    from simweb.core.linkgraph import LinkGraph, PageSimParams, SimRankParams
    from simweb.core.linkmeasures import link_similarity

    said, logger = lines
    monkeypatch.setattr(progress, "LOG_AFTER_SECONDS", 0.0)
    edges = [(0, 1), (1, 2), (2, 0), (0, 3), (3, 1), (2, 3)]
    graph = LinkGraph.from_edges([a for a, _ in edges], [b for _, b in edges])
    calls = []
    link_similarity(graph, SimRankParams(iterations=4), progress=lambda done, total: calls.append((done, total)))
    assert calls == [(1, 4), (2, 4), (3, 4), (4, 4)]
    pages = []
    link_similarity(graph, PageSimParams(), progress=lambda done, total: pages.append((done, total)))
    assert pages and pages[-1][0] == pages[-1][1]
    with progress.reporter("SimRank", "steps", log=logger) as report:
        link_similarity(graph, SimRankParams(iterations=4), progress=report)
    assert said[-1] == "SimRank: 4/4 steps done"


def test_a_logged_tenth_says_the_time_left_at_the_pace_so_far(lines, monkeypatch):
    said, logger = lines
    clock = iter(range(0, 10_000, 3))  # three seconds per unit
    monkeypatch.setattr(progress.time, "monotonic", lambda: float(next(clock)))
    for _ in progress.track(range(40), "ingest", "files", log=logger):
        pass
    # The first tenth is logged after 4 units (12 s): 36 units left at 3 s each.
    assert said[0] == "ingest: 4/40 files done, about 1 min 48 s left"
    assert said[-1] == "ingest: 40/40 files done"


@pytest.mark.parametrize("seconds, said", [(0, "0 s"), (59.4, "59 s"), (60, "1 min 00 s"), (3599, "59 min 59 s"),
                                           (3600, "1 h 00 min"), (7500, "2 h 05 min"), (-3, "0 s")])
def test_durations_read_as_a_person_says_them(seconds, said):
    assert progress.duration(seconds) == said
