"""An incremental index update against a full rebuild, on the same grown crawl.

    python -m benchmarks.incremental [--crawl DEBDOCS/warc] [--links 5]

The crawl defaults to the demo's DebDocs WARC files (out/demo/debdocs/warc, written by
`make demo`), else the WARC fixtures beside the repository (../shared/fixtures/warc).

1. Builds the index of the WARC files given (ingest → bags → signatures → invert, the stages
   called directly in this process) and starts its df epoch.
2. Writes one small new WARC file — a page linking to ``--links`` pages of the crawl, the shape
   of a newly crawled page — and ingests it.
3. Times, on the same grown crawl folder: the incremental update (tasks/incremental.py: bags
   of the touched URLs with the epoch's df, their signatures, the new version with their rows
   replaced and I re-inverted, publish) and a full rebuild from the ingest output (every
   bag, every signature, I, publish) into a fresh stages folder.

Prints both, the ratio, and how many URLs the update touched. The ingest of the new file is
the same for both and is shown apart. Then the related pages computed ahead
(tasks/stages/related_table.py) of the updated version: from the first version's table, only
the rows the update may change, against the whole table computed anew (and whether the two
are the same).
"""
from __future__ import annotations

import argparse
import glob
import io
import os
import shutil
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DEFAULT_CRAWLS = (REPO / "out" / "demo" / "debdocs" / "warc", REPO.parent / "shared" / "fixtures" / "warc")


def update_arguments(doc: str, argv: list[str] | None):
    """The options of a benchmark of one new page added to a crawl: --crawl, --links, --work."""
    ap = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--crawl", default=None, help="a folder of WARC files (e.g. a DebDocs corpus's warc/)")
    ap.add_argument("--links", type=int, default=5, help="links of the new page into the crawl")
    ap.add_argument("--work", default=None, help="scratch folder (default: the system's temporary folder)")
    return ap.parse_args(argv)


def crawl_files(crawl: str | None) -> list[str]:
    """The WARC files of ``crawl`` (a folder), else of the first of :data:`DEFAULT_CRAWLS` there is
    (of the fixtures, the two that hold HTML pages)."""
    crawl_dir = crawl or next((str(p) for p in DEFAULT_CRAWLS if p.is_dir()), None)
    if crawl_dir is None:
        raise SystemExit("no crawl: give --crawl WARC_DIR (e.g. `make demo` writes out/demo/debdocs/warc)")
    files = sorted(glob.glob(os.path.join(crawl_dir, "*.warc*")))
    if crawl_dir == str(DEFAULT_CRAWLS[1]):
        files = [f for f in files if os.path.basename(f) in ("warcfile.warc.gz", "example.warc.gz")]
    if not files:
        raise SystemExit(f"no WARC files in {crawl_dir}")
    return files


def new_page_warc(path: str, targets: list[str]) -> None:
    """A gzipped WARC file of one new page (``http://reading-list.example/``) linking to ``targets``."""
    from warcio.statusandheaders import StatusAndHeaders
    from warcio.warcwriter import WARCWriter

    anchors = " ".join(f'<li>related reading: <a href="{u}">chapter {i}</a></li>' for i, u in enumerate(targets))
    body = f"<html><head><title>Reading list</title></head><body><ul>{anchors}</ul></body></html>".encode()
    with open(path, "wb") as f:
        writer = WARCWriter(f, gzip=True)
        headers = StatusAndHeaders("200 OK", [("Content-Type", "text/html; charset=utf-8")], protocol="HTTP/1.1")
        writer.write_record(writer.create_warc_record("http://reading-list.example/", "response",
                                                      payload=io.BytesIO(body), http_headers=headers))


def main(argv: list[str] | None = None) -> int:
    args = update_arguments(__doc__, argv)

    import numpy as np
    import pyarrow.parquet as pq

    from simweb.core.strategy import Strategy
    from simweb.flows.ingest_new_crawl import refresh_index
    from simweb.tasks import incremental, index_store, precomputed
    from simweb.tasks.crawl.parts import count_page_rows
    from simweb.tasks.ingest.files import ingest_files
    from simweb.tasks.layout import crawl_folder
    from simweb.tasks.signatures import IndexParams
    from simweb.tasks.stages.bags import bags_stage
    from simweb.tasks.stages.invert import invert_stage
    from simweb.tasks.stages.publish import publish_index
    from simweb.tasks.stages.related_table import related_table_stage
    from simweb.tasks.stages.signatures import signatures_stage

    files = crawl_files(args.crawl)
    work = tempfile.mkdtemp(dir=args.work, prefix="simweb-incremental-")
    strategy, params = Strategy(), IndexParams()
    try:
        out = os.path.join(work, "index")
        crawl = crawl_folder(out)

        def full(target: str):
            bags = bags_stage(crawl, strategy, target)
            signed = signatures_stage(bags, crawl, params, target)
            return bags, publish_index(invert_stage(signed, params, target), target)

        t = time.perf_counter()
        ingest_files(files, crawl)
        bags, _ = full(out)
        incremental.start_epoch(out, bags, params)
        print(f"crawl: {len(files)} WARC files, {count_page_rows(crawl):,} pages; "
              f"first build {time.perf_counter() - t:.1f} s")
        t = time.perf_counter()
        first_table = related_table_stage(index_store.resolve(out))
        print(f"  its related pages computed ahead: {first_table['documents']:,} pages in {time.perf_counter() - t:.1f} s")

        urls = pq.read_table(os.path.join(crawl, "pages"), columns=["url"]).column("url").to_pylist()
        new = os.path.join(work, "new.warc.gz")
        new_page_warc(new, urls[:: max(1, len(urls) // args.links)][: args.links])
        t = time.perf_counter()
        new_parts = list(ingest_files([new], crawl).parts)
        ingest_s = time.perf_counter() - t

        t = time.perf_counter()
        _, stages = refresh_index(None, out, crawl, strategy, params, None, new_parts)
        inc_s = time.perf_counter() - t
        if set(stages) != {incremental.STAGE_DELTA_BAGS, incremental.STAGE_DELTA_INDEX}:
            raise SystemExit(f"expected an incremental update, the stages were {stages}")
        touched = incremental.touched_urls(crawl, new_parts).size

        t = time.perf_counter()
        full(os.path.join(work, "rebuild"))
        full_s = time.perf_counter() - t
        # The related pages computed ahead of the updated version: from the first one's, and whole.
        t = time.perf_counter()
        updated = related_table_stage(index_store.resolve(out))
        table_update_s = time.perf_counter() - t
        alone = os.path.join(work, "alone", "versions", "v")
        shutil.copytree(index_store.resolve(out), alone, ignore=shutil.ignore_patterns("answers.*"))
        t = time.perf_counter()
        related_table_stage(alone)
        table_whole_s = time.perf_counter() - t
        tables = [precomputed.open_table(index_store.open_version(v)) for v in (index_store.resolve(out), alone)]
        same = all(np.array_equal(getattr(tables[0], k), getattr(tables[1], k)) for k in ("docs", "counts", "exact"))

        print(f"new file: 1 page, {args.links} links; ingest {ingest_s:.2f} s (the same for both)")
        print(f"  incremental update   {inc_s:8.2f} s   ({touched} touched URLs re-weighted and re-signed)")
        print(f"  full rebuild         {full_s:8.2f} s   (every bag, every signature)")
        print(f"  ratio full / incremental  {full_s / inc_s:.1f}x")
        print(f"related pages computed ahead of the updated version ({updated['documents']:,} pages):")
        print(f"  from the first version's {table_update_s:8.2f} s   ({updated['rows_computed']:,} rows computed, "
              f"{updated['rows_kept']:,} kept)")
        print(f"  whole                    {table_whole_s:8.2f} s   (every row)")
        print(f"  ratio whole / from the first  {table_whole_s / table_update_s:.1f}x; the same table: {same}")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
