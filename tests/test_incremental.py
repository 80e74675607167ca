"""Incremental index updates within a df epoch equal a full build weighted with the same df
snapshot, URL for URL; beyond the growth limit an update re-weighs everything and equals a
plain full build. Real WARC files, real stages, no Prefect (the flow is tested in
tests/test_resume.py and tests/test_deployments.py)."""
from __future__ import annotations

import io
import shutil

import numpy as np
import pyarrow.parquet as pq
import pytest
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from simweb.api import open_index
from simweb.core.strategy import Strategy
from simweb.flows.ingest_new_crawl import refresh_index
from simweb.tasks import incremental
from simweb.tasks import index_store as store
from simweb.tasks.ingest.files import ingest_files
from simweb.tasks.layout import crawl_folder, stages_folder
from simweb.tasks.signatures import IndexParams
from simweb.tasks.stages.bags import bags_stage, build_bags_stage
from simweb.tasks.stages.invert import invert_stage
from simweb.tasks.stages.publish import publish_index
from simweb.tasks.stages.signatures import signatures_stage

TARGETS = ["http://www.uraharajuku.st/", "http://www.uraharajuku.st/shop/basket.html",
           "http://www.uraharajuku.st/html/mainm.html"]
NEW_PAGE = "http://new.example/links.html"
PARAMS = IndexParams(min_in_degree=None)
STRATEGY = Strategy()


def _write_new_warc(path) -> None:
    """A page linking to three crawled pages with words the first crawl never saw."""
    anchors = " ".join(f'<p>see the zyzzyva catalogue <a href="{u}">zyzzyva shop {i}</a> quuxly</p>'
                       for i, u in enumerate(TARGETS))
    body = f"<html><head><title>Zyzzyva links</title></head><body>{anchors}</body></html>".encode()
    with open(path, "wb") as f:
        writer = WARCWriter(f, gzip=True)
        headers = StatusAndHeaders("200 OK", [("Content-Type", "text/html; charset=utf-8")], protocol="HTTP/1.1")
        writer.write_record(writer.create_warc_record(NEW_PAGE, "response", payload=io.BytesIO(body),
                                                      http_headers=headers))


def _full_build(crawl: str, out: str, df_snapshot=None):
    bags = (bags_stage(crawl, STRATEGY, out) if df_snapshot is None
            else build_bags_stage(crawl, STRATEGY, stages_folder(out), df_snapshot=df_snapshot))
    signed = signatures_stage(bags, crawl, PARAMS, out)
    return bags, publish_index(invert_stage(signed, PARAMS, out), out)


@pytest.fixture(scope="module")
def files(warc_dir, tmp_path_factory):
    root = tmp_path_factory.mktemp("incremental-warcs")
    first = [str(warc_dir / "warcfile.warc.gz"), str(warc_dir / "example.warc.gz")]
    _write_new_warc(root / "new.warc.gz")
    shutil.copy(warc_dir / "example-iana.org-chunked.warc", root / "iana.warc")
    return first, [str(root / "new.warc.gz"), str(root / "iana.warc")]


@pytest.fixture(scope="module")
def updated(files, tmp_path_factory):
    """A full build over the first files, then the later files added incrementally."""
    first, later = files
    out = str(tmp_path_factory.mktemp("incremental") / "index")
    crawl = crawl_folder(out)
    ingest_files(first, crawl)
    bags, live = _full_build(crawl, out)
    epoch = incremental.start_epoch(out, bags, PARAMS)
    before = open_index(out)
    old_h = np.array(before._v.h)
    old_docs = pq.read_table(f"{live}/{store.DOCMAP_FILE}").to_pydict()
    new_parts = list(ingest_files(later, crawl).parts)
    index, stages = refresh_index(None, out, crawl, STRATEGY, PARAMS, None, new_parts)
    return {"out": out, "crawl": crawl, "epoch": epoch, "before": before, "old_h": old_h, "old_docs": old_docs,
            "index": index, "stages": stages, "new_parts": new_parts}


@pytest.fixture(scope="module")
def reference(updated, tmp_path_factory):
    """A full build over the same files weighted with the epoch's df snapshot."""
    out = str(tmp_path_factory.mktemp("incremental-reference") / "index")
    _, live = _full_build(updated["crawl"], out, df_snapshot=updated["epoch"].snapshot())
    return live


def _documents(version: str) -> dict[str, dict]:
    v = store.open_version(version)
    docs = pq.read_table(f"{version}/{store.DOCMAP_FILE}").to_pylist()
    bags = {r["doc_id"]: r for f in v.bag_files for r in pq.read_table(f"{version}/{f.file}").to_pylist()}
    return {d["url"]: {**{k: d[k] for k in ("title", "in_degree", "category", "n_terms", "indexed")},
                       "h": v.h[d["doc_id"]].tolist(), "terms": bags[d["doc_id"]]["terms"],
                       "weights": bags[d["doc_id"]]["weights"], "doc_id": d["doc_id"]}
            for d in docs}


def test_an_update_within_the_epoch_rebuilds_only_the_touched_urls(updated):
    assert updated["stages"] == {"delta-bags": False, "delta-index": False}
    touched = incremental.touched_urls(updated["crawl"], updated["new_parts"])
    new = _documents(updated["index"])
    old_ids = updated["old_docs"]["url"]
    from simweb.core.urls import url_id

    touched_urls = {u for u in new if url_id(u) in set(touched.tolist())}
    assert set(TARGETS) | {NEW_PAGE, "http://www.iana.org/"} <= touched_urls
    # Untouched documents keep their doc ids and signature rows; new URLs come after the old ones.
    for doc, url in enumerate(old_ids):
        assert new[url]["doc_id"] == doc
        if url not in touched_urls:
            assert new[url]["h"] == updated["old_h"][doc].tolist()
    assert {u for u in new if new[u]["doc_id"] >= len(old_ids)} == set(new) - set(old_ids)
    # The touched targets carry the new anchor words.
    for url in TARGETS:
        assert "zyzzyva" in new[url]["terms"]


def test_incremental_equals_a_full_build_under_the_same_df_snapshot(updated, reference):
    got, want = _documents(updated["index"]), _documents(reference)
    assert set(got) == set(want)
    for url, doc in want.items():
        mine = got[url]
        assert mine["terms"] == doc["terms"], url
        assert np.allclose(mine["weights"], doc["weights"], rtol=1e-6), url
        assert mine["h"] == doc["h"], url
        assert {k: mine[k] for k in ("title", "in_degree", "category", "n_terms", "indexed")} == \
            {k: doc[k] for k in ("title", "in_degree", "category", "n_terms", "indexed")}, url
    # The same related pages for every page, at the same estimated similarity.
    a, b = open_index(updated["out"]), open_index(reference)
    for url in want:
        mine = sorted((r.url, r.similarity) for r in a.related(url, top=500, alpha=0.1))
        theirs = sorted((r.url, r.similarity) for r in b.related(url, top=500, alpha=0.1))
        assert mine == theirs, url


def test_terms_new_to_the_epoch_count_df_one(updated):
    frozen = set(pq.read_table(updated["epoch"].df_path).column("term").to_pylist())
    bag = dict(zip(*(_documents(updated["index"])[TARGETS[0]][k] for k in ("terms", "weights"))))
    assert "zyzzyva" not in frozen and bag["zyzzyva"] > 0


def test_a_reader_keeps_the_version_it_opened(updated):
    before = updated["before"]
    assert NEW_PAGE not in before
    assert before.refresh() and NEW_PAGE in before


def test_growth_beyond_the_limit_re_weighs_everything_like_a_full_build(files, tmp_path, build_in_process,
                                                                        index_diff):
    first, later = files
    out = str(tmp_path / "index")
    crawl = crawl_folder(out)
    ingest_files(first, crawl)
    bags, _ = _full_build(crawl, out)
    epoch = incremental.start_epoch(out, bags, PARAMS)
    new_parts = list(ingest_files(later, crawl).parts)
    reason = incremental.full_rebuild_reason(epoch, store.resolve(out), STRATEGY, PARAMS, crawl, max_growth=0.0)
    assert reason is not None and "grew by" in reason
    index, stages = refresh_index(None, out, crawl, STRATEGY, PARAMS, None, new_parts, max_growth=0.0)
    assert set(stages) == {"bags", "signatures", "invert"}
    assert incremental.read_epoch(out).id != epoch.id  # a new epoch began
    reference = build_in_process(first + later, tmp_path / "reference", min_in_degree=None)
    assert index_diff(index, reference) == []


def test_other_parameters_or_no_epoch_mean_a_full_re_weight(updated):
    epoch, live, crawl = updated["epoch"], updated["index"], updated["crawl"]
    assert incremental.full_rebuild_reason(None, live, STRATEGY, PARAMS, crawl) is not None
    assert "strategy" in incremental.full_rebuild_reason(epoch, live, Strategy(sources=("links",)), PARAMS, crawl)
    assert "min-hash" in incremental.full_rebuild_reason(epoch, live, STRATEGY, IndexParams(m=40, min_in_degree=None),
                                                         crawl)
    assert "dedup" in incremental.full_rebuild_reason(epoch, live, Strategy(dedup=True), PARAMS, crawl)


def test_new_aliases_that_move_an_indexed_url_mean_a_full_re_weight(tmp_path):
    """The index holds the linked URL http://h.example/d; a new file crawls /d/, so /d now names
    /d/'s document: an incremental update would leave /d's document behind."""
    from test_aliases_crawl import a, page, write_warc

    out = str(tmp_path / "index")
    crawl = crawl_folder(out)
    hub = page("http://h.example/hub", a("/d", "river") + a("/e", "lake"))
    ingest_files([write_warc(tmp_path / "1.warc.gz", [hub])], crawl)
    bags, live = _full_build(crawl, out)
    epoch = incremental.start_epoch(out, bags, PARAMS)
    assert "http://h.example/d" in open_index(out)
    new_parts = list(ingest_files([write_warc(tmp_path / "2.warc.gz", [page("http://h.example/d/", "dir")])],
                                  crawl).parts)
    reason = incremental.full_rebuild_reason(epoch, live, STRATEGY, PARAMS, crawl, 10.0, new_parts)
    assert reason == "the new files' redirects and URL variants give 1 URL(s) of the index another document"
    other = list(ingest_files([write_warc(tmp_path / "3.warc.gz", [page("http://h.example/f", "f")])], crawl).parts)
    assert incremental.full_rebuild_reason(epoch, live, STRATEGY, PARAMS, crawl, 10.0, other) is None
