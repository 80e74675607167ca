"""The evaluation's Prefect tasks and their wiring: Γ of every strategy of a grid against a topic directory.

Paper Sections 2 and 5. Three stages, each a thin adapter around simcore, each cached by
simweb.tasks.stagecache under ``work`` (same inputs and parameters → reused, so a re-run only
computes what changed):

1. ``eval-sample`` (tasks/eval_sample.py): parse the directory once, leave out its own pages,
   draw the sample of sibling class pairs.
2. ``eval-strategy`` (tasks/eval_strategies.py): per small group of strategies, the bag corpus
   or the link graph built once from the crawl; per strategy, exact similarity on the sample
   and the Γ pair counts.
3. the report (tasks/report.py): bootstrap intervals, tables, the paper's Figures 3–9 and
   findings, the HTML and Markdown pages.

The grids are simweb.core.grids. :func:`run_evaluation` runs the three stages in this process
(tests, benchmarks, ``simweb evaluate --no-prefect``); the flow ``evaluate-strategies``
(flows/evaluate_strategies.py) runs them as the tasks below, one per stage or per small group
of strategies (never per pair or per URL).
"""
from __future__ import annotations

import json
from collections.abc import Sequence

from prefect import task
from prefect.cache_policies import NO_CACHE

from simweb.core.grids import AnyStrategy, LinkStrategy, grid_strategies, strategy_from_dict, strategy_grid
from simweb.core.strategy import Strategy
from simweb.tasks.eval_sample import STAGE_SAMPLE, SampleParams, prepare_sample
from simweb.tasks.eval_strategies import STAGE_STRATEGY, evaluate_group
from simweb.tasks.report import write_report
from simweb.tasks.stagecache import StageOutput
from simweb.tasks.storage import join

__all__ = ["report_task", "run_evaluation", "sample_task", "strategy_groups", "strategy_task"]


def strategy_groups(strategies: Sequence[AnyStrategy], group_size: int) -> list[tuple[AnyStrategy, ...]]:
    """Small groups of strategies, one task each. Strategies sharing fragment settings (they
    differ only in weighting or metric) go together so the corpus's merged-bag cache serves them;
    link strategies form groups of their own (they need the link graph, not the bag corpus)."""
    if group_size < 1:
        raise ValueError(f"group_size: expected at least 1 strategy per task, got {group_size}")
    bags = sorted((s for s in strategies if isinstance(s, Strategy)),
                  key=lambda s: json.dumps(s.fragment_params(), sort_keys=True))
    links = [s for s in strategies if isinstance(s, LinkStrategy)]
    return [tuple(part[i:i + group_size]) for part in (bags, links) for i in range(0, len(part), group_size)]


def run_evaluation(
    crawl: str,
    directory: str,
    out: str,
    *,
    grid: str = "paper",
    work: str | None = None,
    sample_params: SampleParams = SampleParams(),
    directory_pages: str | None = None,
    n_resamples: int = 1000,
    title: str = "",
) -> dict:
    """The whole evaluation in this process, without Prefect (tests, benchmarks, scripts)."""
    work = work or join(out, "_work")
    figures = strategy_grid(grid)
    sample = prepare_sample(crawl, directory, work, sample_params, directory_pages)
    strategies = grid_strategies(figures)
    outputs = evaluate_group(crawl, sample, strategies, work)
    return write_report(out, sample, figures, dict(zip(strategies, outputs)), seed=sample_params.seed,
                        n_resamples=n_resamples, title=title)


def _transient(task, task_run, state) -> bool:
    """Retry the sample stage on an I/O error reading its files, not on a file that is not
    there or a directory of the wrong shape (the same bytes give the same answer)."""
    try:
        state.result()
    except (FileNotFoundError, PermissionError, IsADirectoryError, NotADirectoryError):
        return False
    except OSError:
        return True
    except Exception:  # noqa: BLE001 — anything else is deterministic
        return False
    return False


@task(name=STAGE_SAMPLE, cache_policy=NO_CACHE, persist_result=False, retries=2, retry_delay_seconds=2,
      retry_condition_fn=_transient)
def sample_task(crawl: str, directory: str, work: str, params: SampleParams,
                directory_pages: str | None = None) -> StageOutput:
    """Parse the directory once and draw the sample (retried on I/O errors: it only reads files)."""
    return prepare_sample(crawl, directory, work, params, directory_pages)


@task(name=STAGE_STRATEGY, cache_policy=NO_CACHE, persist_result=False)
def strategy_task(crawl: str, sample: StageOutput, strategies: list[dict], work: str) -> list[StageOutput]:
    """The ``eval-strategy`` stage for a small group of strategies: bags or the link graph, exact
    similarity and Γ counts (no retries: the computation is deterministic; an I/O failure is
    retried by re-running the flow, which reuses every finished strategy)."""
    return evaluate_group(crawl, sample, [strategy_from_dict(s) for s in strategies], work)


@task(name="eval-report", cache_policy=NO_CACHE, persist_result=False)
def report_task(out: str, sample: StageOutput, grid: str, outputs: list[list[StageOutput]],
                groups: list[list[dict]], seed: int, n_resamples: int, title: str = "") -> dict:
    """Tables, figures and the report from every group's outputs."""
    results = {}
    for group, group_outputs in zip(groups, outputs):
        for spec, output in zip(group, group_outputs):
            results[strategy_from_dict(spec)] = output
    return write_report(out, sample, strategy_grid(grid), results, seed=seed, n_resamples=n_resamples, title=title)
