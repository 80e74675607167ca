"""The evaluate-strategies flow: which strategy finds related pages best, judged by a directory.

Paper Sections 2 and 5: sample pairs of sibling third-level classes of a topic directory,
compute every strategy's exact similarities on the sample, and compare the similarity
ordering with the directory's familial ordering by the Kruskal–Goodman Γ (overall and the
sibling, cousin and unrelated partial Γs) and intra-cluster orthogonality, with bootstrap
intervals; then draw the paper's Figures 3–9 for this crawl and write the report.

The directory is parsed once (stage 1); each task builds the bag corpus once from the
crawl's ingest output and evaluates a small group of strategies (stage 2); every stage is
cached under ``work``, so a re-run with one more strategy computes only that one. Needs the
``if __name__ == "__main__":`` guard in any script that calls it (Dask starts processes).
Called as a plain function, ``evaluate_strategies.fn(...)``, the same body runs in this
process without Prefect or Dask, every strategy in one group (one bag corpus).
"""
from __future__ import annotations

from typing import Literal

from prefect import flow

from simweb.core.grids import grid_strategies, strategy_grid
from simweb.flows.cluster import run_task, stage_runner
from simweb.tasks.eval_sample import SampleParams
from simweb.tasks.logs import run_logger
from simweb.tasks.evaluate import report_task, sample_task, strategy_groups, strategy_task
from simweb.tasks.storage import join


@flow(name="evaluate-strategies")
def evaluate_strategies(
    crawl: str,
    directory: str,
    out: str,
    grid: Literal["paper", "quick", "links", "full"] = "paper",
    seed: int = 0,
    n_pairs: int = 300,
    min_pages: int = 2,
    max_pages_per_class: int | None = None,
    directory_pages: str | None = None,
    directory_format: Literal["auto", "rdf", "tsv"] = "auto",
    depth: int = 3,
    work: str | None = None,
    n_resamples: int = 1000,
    group_size: int = 4,
    dask_address: str | None = None,
    n_workers: int | None = None,
    title: str = "",
) -> dict:
    """Evaluate a grid of strategies on ``crawl`` (an ingest output folder) against ``directory``
    (an Open Directory RDF dump or a ``url<TAB>category`` TSV, optionally compressed) and write
    the report into ``out``. ``directory_pages`` lists the directory's own pages (one URL a
    line) to keep out of the data; an RDF dump's own hosts are always kept out."""
    log = run_logger("simweb.evaluate")
    work = work or join(out, "_work")
    params = SampleParams(seed=seed, n_pairs=n_pairs, min_pages=min_pages,
                          max_pages_per_class=max_pages_per_class, directory_format=directory_format,
                          depth=depth)
    strategies = grid_strategies(strategy_grid(grid))
    with stage_runner(dask_address, n_workers) as runner:
        # In one process, one group: the bag corpus is built once for every strategy.
        size = group_size if runner is not None else len(strategies)
        groups = [[s.to_dict() for s in group] for group in strategy_groups(strategies, size)]
        log.info("evaluate-strategies: grid %s, %d strategies in %d group(s)", grid, len(strategies), len(groups))
        # 1. Parse the directory once; sample pairs of sibling third-level classes (Section 5).
        sample = run_task(runner, sample_task, {"crawl": crawl, "directory": directory, "work": work,
                                                "params": params, "directory_pages": directory_pages}).result()
        # 2. Per small group of strategies: bags or the link graph, exact all-pairs similarity, Γ pair counts,
        #    top-10 precision/recall/F/AP and Δ (Sections 2–4; ENS Sections 3–4).
        futures = [run_task(runner, strategy_task, {"crawl": crawl, "sample": sample, "strategies": group,
                                                    "work": work}) for group in groups]
        outputs = [future.result() for future in futures]
    # 3. Bootstrap intervals, the measures table, Figures 3–9 (and the link-measure figure) and the report.
    summary = report_task(out, sample, grid, outputs, groups, seed, n_resamples, title)
    log.info("evaluate-strategies: report at %s", summary["report"])
    return summary
