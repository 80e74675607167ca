"""A one-file update through the inbox against the full rebuild of the same index, both run as
the deployments run them: Prefect flow runs on a real server.

    python -m benchmarks.inbox_update [--crawl WARC_DIR] [--links 5]

The crawl defaults to the demo's DebDocs WARC files (out/demo/debdocs/warc, written by
`make demo`), else two WARC fixtures beside the repository (../shared/fixtures/warc).

1. A Prefect server on 127.0.0.1 is started before any timing, as a user's would be running.
2. The index of the crawl is built (not timed: the index the update starts from).
3. A run of ``ingest-new-crawl`` with an empty inbox (timed apart: what most scheduled runs
   are). Then one small new WARC file — a page linking to ``--links`` pages of the crawl — is
   dropped into the inbox, and the ``ingest-new-crawl`` flow runs with the deployment's parameters
   (``n_workers`` unset: a few small files are ingested in the flow's process). Timed: the flow
   run, from the call to its end. Goal: at most 10 s.
4. The same update from a copy of the same index folder with ``n_workers=2``: a local Dask
   cluster, which every update started before small work stayed in the flow's process.
5. The ``build-index`` flow over the crawl and the new file into a fresh folder (its Dask
   cluster sized to the machine, as the deployment runs it): the full rebuild of the same index.

Prints each time, the ratios, and which stages each update ran.
"""
from __future__ import annotations

import os
import shutil
import tempfile
import time
from pathlib import Path

from benchmarks.incremental import crawl_files, new_page_warc, update_arguments

GOAL_SECONDS = 10.0


def main(argv: list[str] | None = None) -> int:
    args = update_arguments(__doc__, argv)

    os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
    os.environ.setdefault("PREFECT_LOGGING_LEVEL", "WARNING")
    files = crawl_files(args.crawl)
    work = Path(tempfile.mkdtemp(dir=args.work, prefix="simweb-inbox-update-"))
    try:
        return _run(files, work, args.links)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _run(files: list[str], work: Path, links: int) -> int:
    import pyarrow.parquet as pq
    from prefect.settings import PREFECT_API_URL, temporary_settings

    from simweb.deployments.server import LocalPrefectServer
    from simweb.flows.build_index import build_index
    from simweb.flows.ingest_new_crawl import ingest_new_crawl
    from simweb.tasks.crawl.parts import count_page_rows
    from simweb.tasks.layout import crawl_folder

    out, inbox = work / "index", work / "inbox"
    inbox.mkdir()
    t = time.perf_counter()
    build_index.fn(crawl=files, out=str(out))
    crawl = crawl_folder(str(out))
    print(f"crawl: {len(files)} WARC files, {sum(os.path.getsize(f) for f in files) / 2**20:.1f} MB, "
          f"{count_page_rows(crawl):,} pages; the index to update built in {time.perf_counter() - t:.1f} s")
    urls = pq.read_table(os.path.join(crawl, "pages"), columns=["url"]).column("url").to_pylist()
    new = work / "new.warc.gz"
    new_page_warc(str(new), urls[:: max(1, len(urls) // links)][:links])
    print(f"new file: {new.stat().st_size} bytes, 1 page, {links} links")
    shutil.copytree(out, work / "index-copy", symlinks=True)
    (work / "inbox-copy").mkdir()
    shutil.copy(new, work / "inbox-copy" / new.name)

    with LocalPrefectServer(prefect_home=work / "prefect-home") as server, \
            temporary_settings({PREFECT_API_URL: server.api_url}):
        # A scheduled run that finds nothing new, as most do: it also warms the server's first
        # answers (about 3 s on a fresh server), which a running server has long given.
        t = time.perf_counter()
        ingest_new_crawl(inbox=str(inbox), out=str(out), settle_seconds=0)
        idle_s = time.perf_counter() - t
        shutil.copy(new, inbox / new.name)
        t = time.perf_counter()
        report = ingest_new_crawl(inbox=str(inbox), out=str(out), settle_seconds=0)
        update_s = time.perf_counter() - t
        t = time.perf_counter()
        clustered = ingest_new_crawl(inbox=str(work / "inbox-copy"), out=str(work / "index-copy"),
                                     settle_seconds=0, n_workers=2)
        cluster_s = time.perf_counter() - t
        t = time.perf_counter()
        build_index(crawl=[*files, str(new)], out=str(work / "rebuild"))
        rebuild_s = time.perf_counter() - t
    for name, r in (("in process", report), ("cluster", clustered)):
        if r.ingested != ["new.warc.gz"]:
            raise SystemExit(f"the update ({name}) ingested {r.ingested}, expected the new file alone")
    stages = ", ".join(f"{s} {'reused' if reused else 'computed'}" for s, reused in report.stages.items())
    print(f"  a scheduled run with nothing new (the server's first run)      {idle_s:7.2f} s")
    print(f"  one-file update (ingest-new-crawl flow run, in its process)   {update_s:7.2f} s   ({stages})")
    print(f"  one-file update on a 2-worker Dask cluster (n_workers=2)       {cluster_s:7.2f} s")
    print(f"  full rebuild (build-index flow run, its Dask cluster)          {rebuild_s:7.2f} s")
    print(f"  ratio rebuild / update {rebuild_s / update_s:.1f}x; cluster / in process {cluster_s / update_s:.1f}x; "
          f"goal update <= {GOAL_SECONDS:.0f} s: {'met' if update_s <= GOAL_SECONDS else 'NOT met'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
