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
Called as a plain function, ``evaluate_strategies.fn(...)``, the same body runs in this
process without Prefect or Dask, every strategy in one group (one bag corpus).
"""
from __future__ import annotations

from typing import Literal

from prefect import flow

from simweb.core.grids import grid_strategies, strategy_grid
from simweb.core.markdown import md_code, md_text
from simweb.flows.cluster import call_task, publish_markdown, run_task, stage_runner
from simweb.tasks.evaluate import (
    index_strategies,
    index_task,
    recommend_task,
    report_task,
    sample_task,
    strategy_groups,
    strategy_task,
)
from simweb.tasks.logs import run_logger
from simweb.tasks.stages.eval_sample import SampleParams
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
    depth: int = 3,
    work: str | None = None,
    n_resamples: int = 1000,
    group_size: int = 4,
    dask_address: str | None = None,
    n_workers: int | None = None,
    title: str = "",
) -> dict:
    """Evaluate a grid of strategies on ``crawl`` against ``directory`` (paper Sections 2 and 5)
    and write the report into ``out``. An RDF dump's own hosts are always kept out of the data.

    Args:
        crawl: An ingested crawl folder (OUT/crawl of build-index, or the output of `simweb ingest`).
        directory: The topic directory: an Open Directory RDF dump or a url<TAB>Top/category/path file, optionally .gz or .bz2.
        out: The report folder: report.html, summary.md, measures.parquet, figures/.
        grid: Which strategies: hybrids (the default: the paper's grid, the out-link source and a search over source shares), paper (Figures 3–9 and Jaccard vs cosine), quick, links (the link measures) or full (hybrids and links).
        seed: Seed of the sample and of the bootstrap.
        n_pairs: Pairs of sibling classes to sample (the paper's 300).
        min_pages: Linked-to URLs a class needs to be sampled.
        max_pages_per_class: A cap on the URLs per sampled class, to bound the all-pairs cost (empty: none).
        directory_pages: A file listing the directory's own pages, one URL a line, kept out of the data (footnote 8).
        directory_format: The directory file's format: auto (sniffed), rdf or tsv.
        depth: The depth below Top the directory's categories are collapsed at (the paper's 3); a shallower directory is taken at its own depth.
        work: The stage cache folder (default: OUT/_work).
        n_resamples: Bootstrap resamples for the intervals.
        group_size: Strategies per task (each task builds the bag corpus once).
        dask_address: The address of an existing Dask scheduler; empty starts a local cluster.
        n_workers: Worker processes of the local Dask cluster (default: one per core).
        title: A title for the report.
    """
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
        # 3. The recommendation: the indexable strategy of best sibling-Γ, cross-validated over classes.
        recommendation = call_task(recommend_task, sample=sample, outputs=outputs, groups=groups, seed=seed,
                                   n_resamples=n_resamples)
        # 4. The index's agreement with exact similarity for Section 7's strategy and the recommended one (Section 6.2).
        index_specs = [s.to_dict() for s in index_strategies(recommendation)]
        index = run_task(runner, index_task, {"crawl": crawl, "sample": sample, "strategies": index_specs,
                                              "work": work}).result()
    # 5. Bootstrap intervals, the measures table, Figures 3–9 (and the link-measure figure) and the report.
    summary = call_task(report_task, out=out, sample=sample, grid=grid, outputs=outputs, groups=groups, seed=seed,
                        n_resamples=n_resamples, title=title, recommendation=recommendation, index=index)
    log.info("evaluate-strategies: report at %s", summary["report"])
    best = "\n".join(f"| {md_text(r['strategy'])} | {r['value']:.3f} |" for r in summary.get("sibling_gamma", [])[:10]
                     if isinstance(r.get("value"), float))
    publish_markdown("evaluate-strategies-summary", f"# evaluate-strategies\n\nThe report is at "
                     f"{md_code(summary['report'])}.\n\n" + "\n".join(map(md_text, summary.get("sample", [])))
                     + "\n\n| strategy | sibling-Γ |\n| --- | --- |\n"
                     + best + "\n", f"evaluate-strategies of {crawl}")
    return summary
