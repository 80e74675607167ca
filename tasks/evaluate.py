"""The evaluation's Prefect tasks and their wiring: Γ of every strategy of a grid against a topic directory.

Paper Sections 2 and 5. The stages, each a thin adapter around simcore, the cached ones cached by
simweb.tasks.stagecache under ``work`` (same inputs and parameters → reused, so a re-run only
computes what changed):

1. ``eval-sample`` (tasks/stages/eval_sample.py): parse the directory once, leave out its own pages,
   draw the sample of sibling class pairs.
2. ``eval-strategy`` (tasks/stages/eval_strategies.py): per small group of strategies, the bag corpus
   or the link graph built once from the crawl; per strategy, exact similarity on the sample
   and the Γ pair counts.
3. the recommendation (tasks/eval_recommend.py, not cached: it only reads the counts): the
   indexable strategy of best sibling-Γ, cross-validated over directory classes.
4. ``eval-index`` (tasks/stages/eval_index.py): the index's agreement with exact similarity for the
   Section 7 strategy and the recommended one (Section 6.2).
5. the report (tasks/report.py): bootstrap intervals, tables, the paper's Figures 3–9 and
   findings, the recommendation, the HTML and Markdown pages.

The grids are simweb.core.grids. :func:`run_evaluation` runs the stages in this process
(tests, benchmarks, ``simweb evaluate --no-prefect``); the flow ``evaluate-strategies``
(flows/evaluate_strategies.py) runs them as the tasks below, one per stage or per small group
of strategies (never per pair or per URL).
"""
from __future__ import annotations

import json
from collections.abc import Sequence

from prefect import task
from prefect.cache_policies import NO_CACHE

from simweb.core.crossval import CrossValidationParams
from simweb.core.grids import AnyStrategy, LinkStrategy, grid_strategies, strategy_from_dict, strategy_grid
from simweb.core.index_agreement import INDEX_STRATEGY
from simweb.core.strategy import Strategy
from simweb.tasks.eval_recommend import recommend
from simweb.tasks.report import write_report
from simweb.tasks.stagecache import StageOutput
from simweb.tasks.stages.eval_index import STAGE_INDEX, evaluate_index
from simweb.tasks.stages.eval_sample import STAGE_SAMPLE, SampleParams, prepare_sample
from simweb.tasks.stages.eval_strategies import STAGE_STRATEGY, evaluate_group
from simweb.tasks.storage import join

__all__ = ["index_strategies", "index_task", "recommend_task", "report_task", "run_evaluation", "sample_task",
           "strategy_groups", "strategy_task"]


def strategy_groups(strategies: Sequence[AnyStrategy], group_size: int) -> list[tuple[AnyStrategy, ...]]:
    """Small groups of strategies, one task each. Strategies sharing fragment settings (they
    differ only in weighting or metric) go together so the corpus's merged-bag cache serves them;
    link strategies form groups of their own (they need the link graph, not the bag corpus)."""
    if group_size < 1:
        raise ValueError(f"group_size: expected at least 1 strategy per task, got {group_size}")
    bags = sorted((s for s in strategies if isinstance(s, Strategy) and s.shares is None),
                  key=lambda s: json.dumps(s.fragment_params(), sort_keys=True))
    # Strategies with source shares reuse each source's merged bags: they go together, in
    # groups of four times the size (each of them only re-weighs and adds cached sources).
    shared = sorted((s for s in strategies if isinstance(s, Strategy) and s.shares is not None),
                    key=lambda s: json.dumps({**s.fragment_params(), "sources": None}, sort_keys=True))
    links = [s for s in strategies if isinstance(s, LinkStrategy)]
    return [tuple(part[i:i + size]) for part, size in ((bags, group_size), (shared, 4 * group_size),
                                                       (links, group_size))
            for i in range(0, len(part), size)]


def index_strategies(recommendation: dict | None) -> list[Strategy]:
    """The strategies whose index agreement the report shows: the Section 7 strategy (the
    index's default) and the recommended one."""
    chosen = [INDEX_STRATEGY]
    if recommendation is not None:
        chosen.append(Strategy.parse(recommendation["spec"]))
    return list(dict.fromkeys(chosen))


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
    results = dict(zip(strategies, evaluate_group(crawl, sample, strategies, work)))
    recommendation = recommend(sample, results, params=CrossValidationParams(seed=sample_params.seed),
                               n_resamples=n_resamples, seed=sample_params.seed)
    index = evaluate_index(crawl, sample, index_strategies(recommendation), work)
    return write_report(out, sample, figures, results, seed=sample_params.seed, n_resamples=n_resamples, title=title,
                        recommendation=recommendation, index=index)


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


def _results(outputs: list[list[StageOutput]], groups: list[list[dict]]) -> dict[AnyStrategy, StageOutput]:
    results = {}
    for group, group_outputs in zip(groups, outputs):
        for spec, output in zip(group, group_outputs):
            results[strategy_from_dict(spec)] = output
    return results


@task(name="eval-recommend", cache_policy=NO_CACHE, persist_result=False)
def recommend_task(sample: StageOutput, outputs: list[list[StageOutput]], groups: list[list[dict]], seed: int,
                   n_resamples: int) -> dict | None:
    """The recommendation from every group's counts (tasks/eval_recommend.py)."""
    return recommend(sample, _results(outputs, groups), params=CrossValidationParams(seed=seed),
                     n_resamples=n_resamples, seed=seed)


@task(name=STAGE_INDEX, cache_policy=NO_CACHE, persist_result=False)
def index_task(crawl: str, sample: StageOutput, strategies: list[dict], work: str) -> list[StageOutput]:
    """The ``eval-index`` stage for the index's strategies (deterministic: no retries)."""
    return evaluate_index(crawl, sample, [Strategy.from_dict(s) for s in strategies], work)


@task(name="eval-report", cache_policy=NO_CACHE, persist_result=False)
def report_task(out: str, sample: StageOutput, grid: str, outputs: list[list[StageOutput]],
                groups: list[list[dict]], seed: int, n_resamples: int, title: str = "",
                recommendation: dict | None = None, index: list[StageOutput] = ()) -> dict:
    """Tables, figures and the report from every group's outputs, the recommendation and the index's agreement."""
    return write_report(out, sample, strategy_grid(grid), _results(outputs, groups), seed=seed,
                        n_resamples=n_resamples, title=title, recommendation=recommendation, index=list(index))
