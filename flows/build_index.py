"""The build-index flow: a crawl's WARC files in, the related-pages index out (paper Figure 10).

The flow body is the stage sequence; the stages themselves, shared with the ingest-new-crawl
flow, are in simweb.flows.chain, and the Dask cluster they run on in simweb.flows.cluster.

Run it from the command line (``simweb ingest WARC... --out DIR``), from Python, or from a
Prefect deployment; every script that calls it needs the ``if __name__ == "__main__":`` guard,
because the Dask workers start new Python processes that import the caller's main module.
"""
from __future__ import annotations

from typing import Literal

from prefect import flow, get_run_logger

from simweb.core.strategy import Strategy
from simweb.flows.chain import BuildSummary, index_chain, ingest_stage
from simweb.flows.cluster import dashboard_link, dask_task_runner
from simweb.tasks.crawl import write_selection
from simweb.tasks.ingest import list_warc_files
from simweb.tasks.layout import IndexLock, check_writable, crawl_folder, sweep_debris
from simweb.tasks.ledger import crawl_selection
from simweb.tasks.signatures import IndexParams


@flow(name="build-index")
def build_index(
    crawl: str | list[str],
    out: str,
    strategy: Strategy = Strategy(),
    m: int = 80,
    seed: int = 1,
    min_in_degree: int | None = None,
    directory: str | None = None,
    until: Literal["ingest", "bags", "index"] = "index",
    crawl_out: str | None = None,
    dask_address: str | None = None,
    n_workers: int | None = None,
    partitions: int | None = None,
    io_retries: int = 3,
    lock_wait_seconds: float | None = None,
    verify: bool = False,
    keep_earlier: bool = False,
) -> BuildSummary:
    """Build the related-pages index of a crawl (paper Section 6, Figure 10) into ``out``.

    ``crawl`` is a WARC file, a folder of them, a glob, or a list of those (WARC only, not
    ARC). ``strategy`` is how pages are described (Sections 3–4; the default is the paper's
    Section 7 choice); ``m`` and ``seed`` make the min-hash signatures; documents with
    in-degree ≤ ``min_in_degree`` stay out of I (Section 7.1; None, the default, keeps all). ``directory``
    (ODP RDF or url<TAB>category) adds categories to results. ``until`` stops after a stage.
    The ingest output goes to ``crawl_out`` (default ``out/crawl``). ``dask_address`` names an
    existing Dask scheduler; without it a local cluster of ``n_workers`` processes (default:
    one per core) runs for the flow. ``io_retries`` is how often a task retries a file it
    could not read. Finished stages are reused; a failed run resumes at the failed stage.
    Another run writing into ``out`` is waited for, at most ``lock_wait_seconds`` (None: as
    long as it takes). What is reused is checked by size, and with ``verify`` by content
    (SHA-256); whatever is damaged is computed again. The crawl is the files named, with the
    files an ingest-new-crawl inbox added; pages of files named by earlier builds into ``out``
    are left out unless ``keep_earlier``.
    """
    log = get_run_logger()
    files = list_warc_files(crawl)
    crawl_dir = crawl_out or crawl_folder(out)
    for folder in {out, crawl_dir}:
        check_writable(folder)
    params = IndexParams(m=m, seed=seed, min_in_degree=min_in_degree)
    log.info("build-index: %d WARC file(s) from %s into %s, strategy %s", len(files), crawl, out, strategy.label)
    with IndexLock(out, "build-index", wait=lock_wait_seconds, on_wait=log.info), \
            dask_task_runner(dask_address, n_workers) as runner:
        log.info("Dask dashboard: %s", dashboard_link(runner) or "not served")
        for path in sweep_debris(out, crawl_dir):
            log.info("removed %s, left by a run that was killed", path)
        # 1. Ingest (Section 6.1 scans the repository): WARC files -> pages + link contexts.
        ingested = ingest_stage(runner, files, crawl_dir, io_retries)
        log.info("%s", ingested.summary())
        # 2. The crawl is the files named (and those the inbox added), nothing left by earlier builds.
        write_selection(crawl_dir, crawl_selection(crawl_dir, ingested.parts, keep_earlier=keep_earlier))
        if until == "ingest":
            return BuildSummary(ingest=ingested)
        # 3. Bags, signatures, invert and publish (Sections 6.1–6.2, 7.1): simweb.flows.chain.
        chain = index_chain(runner, crawl_dir, out, strategy, params, directory, partitions, until, verify)
    summary = BuildSummary(ingest=ingested, stages=chain.records(), index=chain.index)
    log.info("%s", summary.summary())
    return summary
