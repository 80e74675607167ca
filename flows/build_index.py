"""The build-index flow: a crawl's WARC files in, the related-pages index out (paper Figure 10).

The flow body is the stage sequence; the stages themselves, shared with the ingest-new-crawl
flow, are in simweb.flows.chain, and the Dask cluster they run on in simweb.flows.cluster.

Run it from the command line (``simweb build CRAWL --out DIR``), from Python, or from a
Prefect deployment; every script that calls it needs the ``if __name__ == "__main__":`` guard,
because the Dask workers start new Python processes that import the caller's main module.
Called as a plain function, ``build_index.fn(...)``, the same body runs in this process
without a Prefect server or a Dask cluster (what ``simweb build`` does for small crawls):
the same stages, the same outputs.
"""
from __future__ import annotations

from typing import Literal

from prefect import flow
from prefect.states import Failed

from simweb.core.strategy import Strategy
from simweb.flows.chain import BuildSummary, NothingToIndex, index_chain, ingest_sentence
from simweb.flows.cluster import fresh_workers_after_ingest, publish_markdown, stage_runner, workers
from simweb.flows.parameters import StrategyParameter
from simweb.flows.stage_runs import stage_task_runs
from simweb.tasks.bags.sizes import PART_MB
from simweb.tasks.crawl.selection import as_of_stamp, left_out_of_selection, write_selection
from simweb.tasks.ingest.stats import nothing_ingested
from simweb.tasks.layout import IndexLock, check_writable, crawl_folder, set_work_folder, sweep_debris, work_folder
from simweb.tasks.ledger import crawl_selection
from simweb.tasks.logs import run_logger
from simweb.tasks.options import RunOptions
from simweb.tasks.signatures import IndexParams
from simweb.tasks.sources import crawl_files
from simweb.tasks.stages.ingest import ingest_stage
from simweb.tasks.stages.related_table import NAME as TABLE_STAGE
from simweb.tasks.stages.related_table import related_table_stage, table_record


@flow(name="build-index")
def build_index(
    crawl: str | list[str],
    out: str,
    strategy: StrategyParameter = Strategy(),
    m: int = 80,
    seed: int = 1,
    min_in_degree: int | None = None,
    directory: str | None = None,
    until: Literal["ingest", "bags", "index"] = "index",
    crawl_out: str | None = None,
    work: str | None = None,
    dask_address: str | None = None,
    n_workers: int | None = None,
    partitions: int | None = None,
    part_mb: int = PART_MB,
    io_retries: int = 3,
    lock_wait_seconds: float | None = None,
    verify: bool = False,
    keep_earlier: bool = False,
    paths_list: str | None = None,
    paths_prefix: str | None = None,
    as_of: str | None = None,
    related_table: bool = True,
) -> BuildSummary:
    """Build the related-pages index of a crawl (paper Section 6, Figure 10) into ``out``.

    Finished stages are reused; a failed run resumes at the failed stage. Another run writing
    into ``out`` is waited for. What is reused is checked by size (and with ``verify`` by
    content); whatever is damaged is computed again. The run publishes a markdown artifact
    with its summary and where the index was published.

    Args:
        crawl: The crawl: a WARC or ARC file (plain or gzipped, or a .warc.zst), a folder of them (searched recursively), a glob, an s3:// prefix or glob, an https:// file URL, or a list of those.
        out: The index folder: the published index (versions/, CURRENT, current), its stage cache and its crawl.
        strategy: How pages are described (paper Sections 3–4): sources, window, stemming, weighting, as fields or in the text form of simweb build --strategy (anchor:32+content,stem,dist,nmdf); the default is the paper's Section 7 choice.
        m: Min-hash signatures per page (Section 6.2); more is more accurate and slower.
        seed: Seed of the min-hash functions; two indexes compare only with the same seed and m.
        min_in_degree: Pages with at most this many inlinks stay queryable but are not returned as results (Section 7.1); empty, the default, keeps every page.
        directory: A topic directory (Open Directory RDF dump or url<TAB>category file) whose categories results show.
        until: Stop after this stage: ingest, bags or index (the whole build).
        crawl_out: Where the ingested pages and links go (default: OUT/crawl, or WORK/crawl). Point several indexes at one to ingest once.
        work: Where the ingested crawl and the stage outputs are kept (default: the index folder, or where an earlier build's work was given): a local folder, or an object-store URL (s3://bucket/prefix) that a cluster's workers on other machines share; OUT remembers it.
        dask_address: The address of an existing Dask scheduler (tcp://host:8786); empty starts a local cluster.
        n_workers: Worker processes of the local Dask cluster (default: one per core; 1 runs one worker thread in the flow's process).
        partitions: Partitions of the bags stage's merge (default: from the crawl's size).
        part_mb: The working memory, in megabytes, each task of the bags stage holds at most (default 768: every process stays under 2 GiB, four workers fit in 8 GB); partitions fixes the merge partitions instead.
        io_retries: How often a WARC file that could not be read (a transient I/O error) is tried again.
        lock_wait_seconds: How long to wait for another run writing into OUT (empty: as long as it takes).
        verify: Check every reused stage output and the live index by content (SHA-256), not only by size.
        keep_earlier: Keep the pages of files that earlier builds into OUT named (by default the crawl is exactly the files named, with those an ingest-new-crawl inbox added).
        paths_list: A file (local or URL, plain or .gz) naming one WARC or ARC file per line, such as Common Crawl's warc.paths.gz, read besides the crawl (which may then be empty).
        paths_prefix: What the paths list's relative lines are relative to, e.g. https://data.commoncrawl.org/ or s3://commoncrawl/.
        as_of: Build the web as of this date (2021-01-01, the end of that day, or 2021-01-01T12:00:00Z; UTC): each URL's latest capture at or before it; empty: each URL's latest capture.
        related_table: Once the index is published, compute every page's related pages ahead (the default query, ten at alpha 0.15), so that such a query is a look-up; it takes about as long as a query per page, and the index answers by live queries until it is done.
    """
    log = run_logger("simweb.build")
    as_of = as_of_stamp(as_of) if as_of else None
    files = crawl_files(crawl, paths_list, paths_prefix)
    for folder in {out, crawl_out or out, work or out}:
        check_writable(folder)
    params = IndexParams(m=m, seed=seed, min_in_degree=min_in_degree)
    options = RunOptions(verify=verify, part_mb=part_mb, partitions=partitions, io_retries=io_retries)
    log.info("build-index: %d archive file(s) into %s, strategy %s", len(files), out, strategy.label)
    # Each stage a task run of its own: the run page shows which one failed, how long each took.
    with IndexLock(out, "build-index", wait=lock_wait_seconds, on_wait=log.info), \
            stage_runner(dask_address, n_workers) as runner, stage_task_runs():
        if work is not None:
            set_work_folder(out, work)
        crawl_dir = crawl_out or crawl_folder(out)
        if work_folder(out) != out:
            log.info("build-index: the crawl and the stage outputs are kept in %s", work_folder(out))
        for path in sweep_debris(out, crawl_dir):
            log.info("removed %s, left by a run that was killed", path)
        # 1. Ingest (Section 6.1 scans the repository): WARC/ARC files -> pages + link contexts.
        ingested = ingest_stage(files, crawl_dir, options, on=workers(runner))
        log.info("ingest: %s", ingest_sentence(ingested))
        if not ingested.usable and not keep_earlier:  # no file gave a page: stop here, publish nothing
            return nothing_ingested(ingested)
        # 2. The crawl is the files named (and those the inbox added), nothing left by earlier builds.
        selection = crawl_selection(crawl_dir, ingested.parts, keep_earlier=keep_earlier)
        left_out = left_out_of_selection(crawl_dir, selection)
        if left_out:
            log.info("build-index: %d file(s) of the last build not named this time left out of the crawl, with "
                     "their %s pages (e.g. %s); --add keeps them", len(left_out),
                     f"{sum(pages for _, pages in left_out):,}", left_out[0][0])
        write_selection(crawl_dir, selection, as_of)
        if until == "ingest":
            return BuildSummary(ingest=ingested)
        # 3. Bags, signatures, invert and publish (Sections 6.1–6.2, 7.1): simweb.flows.chain,
        # on workers that hold no more than a fresh one would (what an ingest left is let go).
        fresh_workers_after_ingest(runner, ingested.files_read, log)
        try:
            chain = index_chain(runner, crawl_dir, out, strategy, params, directory, until, options=options)
        except NothingToIndex as exc:  # every bag empty: stop, publish nothing, say why (one line, no traceback)
            return Failed(message=str(exc), data=exc)
        stages = chain.records()
        # 4. Every page's related pages computed ahead, so that the default query is a look-up.
        if chain.index is not None and related_table:
            stages[TABLE_STAGE] = table_record(chain.index, related_table_stage(chain.index, options, on=workers(runner)))
    summary = BuildSummary(ingest=ingested, stages=stages, index=chain.index)
    log.info("%s", summary.sentence())
    # The run page's Artifacts tab: the summary, and where the index was published.
    publish_markdown("build-index-summary", summary.markdown(out), f"build-index into {out}")
    return summary
