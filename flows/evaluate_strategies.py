"""The evaluate-strategies flow: which strategy finds related pages best, judged by a directory.

Paper Sections 2 and 5: sample pairs of sibling third-level classes of a topic directory,
compute every strategy's exact similarities on the sample, and compare the similarity
ordering with the directory's familial ordering by the Kruskal–Goodman Γ (overall and the
sibling, cousin and unrelated partial Γs) and intra-cluster orthogonality, with bootstrap
intervals; recommend the strategy to build the index with, its sibling-Γ cross-validated over
directory classes; measure the index's agreement with exact similarity (Section 6.2); then
draw the paper's Figures 3–9 for this crawl and write the report.

The directory is parsed once (stage 1); each task builds the bag corpus once from the
crawl's ingest output and evaluates a small group of strategies (stage 2); every stage is
cached under ``work``, so a re-run with one more strategy computes only that one. Needs the
``if __name__ == "__main__":`` guard in any script that calls it (Dask starts processes).
"""
from __future__ import annotations

from typing import Literal

from prefect import flow, get_run_logger

from simweb.core.grids import grid_strategies, strategy_grid
from simweb.flows.cluster import dask_task_runner
from simweb.tasks.eval_sample import SampleParams
from simweb.tasks.evaluate import (
    index_strategies,
    index_task,
    recommend_task,
    report_task,
    sample_task,
    strategy_groups,
    strategy_task,
)
from simweb.tasks.storage import join


@flow(name="evaluate-strategies")
def evaluate_strategies(
    crawl: str,
    directory: str,
    out: str,
    grid: Literal["paper", "quick", "links", "hybrids", "full"] = "hybrids",
    seed: int = 0,
    n_pairs: int = 300,
    min_pages: int = 2,
    max_pages_per_class: int | None = None,
    directory_pages: str | None = None,
    directory_format: Literal["auto", "rdf", "tsv"] = "auto",
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
    log = get_run_logger()
    work = work or join(out, "_work")
    params = SampleParams(seed=seed, n_pairs=n_pairs, min_pages=min_pages,
                          max_pages_per_class=max_pages_per_class, directory_format=directory_format)
    groups = [[s.to_dict() for s in group] for group in strategy_groups(grid_strategies(strategy_grid(grid)), group_size)]
    log.info("evaluate-strategies: grid %s, %d strategies in %d tasks", grid, sum(map(len, groups)), len(groups))
    with dask_task_runner(dask_address, n_workers) as runner:
        # 1. Parse the directory once; sample pairs of sibling third-level classes (Section 5).
        sample = runner.submit(sample_task, {"crawl": crawl, "directory": directory, "work": work, "params": params,
                                             "directory_pages": directory_pages}).result()
        # 2. Per small group of strategies: bags or the link graph, exact all-pairs similarity, Γ pair counts,
        #    top-10 precision/recall/F/AP and Δ (Sections 2–4; ENS Sections 3–4).
        futures = [runner.submit(strategy_task, {"crawl": crawl, "sample": sample, "strategies": group,
                                                 "work": work}) for group in groups]
        outputs = [future.result() for future in futures]
        # 3. The recommendation: the indexable strategy of best sibling-Γ, cross-validated over classes.
        recommendation = recommend_task(sample, outputs, groups, seed, n_resamples)
        # 4. The index's agreement with exact similarity for Section 7's strategy and the recommended one (Section 6.2).
        strategies = [s.to_dict() for s in index_strategies(recommendation)]
        index = runner.submit(index_task, {"crawl": crawl, "sample": sample, "strategies": strategies,
                                           "work": work}).result()
    # 5. Bootstrap intervals, the measures table, Figures 3–9 (and the link-measure figure) and the report.
    summary = report_task(out, sample, grid, outputs, groups, seed, n_resamples, title, recommendation, index)
    log.info("evaluate-strategies: report at %s", summary["report"])
    return summary
