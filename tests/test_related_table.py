"""The related pages computed ahead (simweb.tasks.precomputed, simweb.core.precomputed): a table
row is the default query's answer, every query it covers is answered from it and equals the
live query, the rest run live, and a table that is not the version's own or is damaged is not used."""
from __future__ import annotations

import json
import os
import shutil

import dask
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_incremental import PARAMS, STRATEGY, _full_build, _write_new_warc
from test_rerank import _clustered_bags, _minhash_index

from simweb.api import open_index
from simweb.core.precomputed import AnswerTable, answer_rows, rows_to_update
from simweb.core.query import invert
from simweb.core.rerank import related_top
from simweb.tasks import index_store as store
from simweb.tasks import precomputed
from simweb.tasks.stages.related_table import related_table_shard, related_table_stage
from tests.conftest import build_small_index


@pytest.fixture
def index(tmp_path) -> str:
    """A fresh copy of the synthetic index (48 pages in 4 topics of 12) without a table."""
    return build_small_index(tmp_path)


def _table(index: str, **kw) -> dict:
    return precomputed.compute_table(store.resolve(index), related_table_shard, **kw)


def _no_table(version: str) -> None:
    os.remove(os.path.join(version, precomputed.TABLE_MANIFEST))


def _answers(ix, urls, **kw):
    return {u: [r.to_dict() for r in ix.related(u, **kw)] for u in urls}


def test_every_row_is_the_default_query_of_its_page(index):
    figures = _table(index, shard_docs=7)  # 48 documents: 7 shards, the last one short
    assert (figures["documents"], figures["shards"], figures["shards_computed"]) == (48, 7, 7)
    v = store.open_version(index)
    table = precomputed.open_table(v)
    assert (table.n_docs, table.width, table.alpha) == (48, precomputed.WIDTH, precomputed.ALPHA)
    for d in range(v.n_docs):
        match, exact = related_top(v.inverted, v.h, v.bag_arrays, d, precomputed.ALPHA, precomputed.WIDTH, h2=v.h2)
        k = len(match)
        assert k == int((table.docs[d] >= 0).sum())
        assert table.docs[d, :k].tolist() == match.docs.tolist()
        assert table.counts[d, :k].tolist() == match.counts.tolist()
        assert table.exact[d, :k].tolist() == exact.tolist()
        assert (table.docs[d, k:] == -1).all()
    # A topic of 12 pages gives its pages up to 11 answers: the rows are cut at the width.
    assert max(int((table.docs[d] >= 0).sum()) for d in range(v.n_docs)) == precomputed.WIDTH


def test_answers_from_the_table_equal_live_answers(index, monkeypatch):
    _table(index)
    ix = open_index(index)
    urls = [ix._v.doc_rows([d])[0]["url"] for d in range(len(ix))]
    requests = [{}, {"top": 3}, {"top": 10, "alpha": 0.4}, {"alpha": 0.9}, {"top": 1, "alpha": 0.15}]
    from_table = [_answers(ix, urls, **kw) for kw in requests]
    assert any(len(a) == 10 for a in from_table[0].values())  # rows that are full
    _no_table(store.resolve(index))
    live = open_index(index)
    assert live.info()["related_table"] is None
    for kw, answers in zip(requests, from_table):
        expected = _answers(live, urls, **kw)
        if kw.get("top", 10) == 10:
            assert answers == expected, kw
        else:  # a shorter answer is the first of the row's: the live query's own top is the same pages here
            assert answers == {u: a[: kw["top"]] for u, a in _answers(live, urls, alpha=kw.get("alpha", 0.15)).items()}


def test_the_table_answers_what_it_covers_and_only_that(index, monkeypatch):
    _table(index)
    ix = open_index(index)
    url = ix._v.doc_rows([13])[0]["url"]
    assert ix.info()["related_table"] == {"documents": 48, "width": 10, "alpha": 0.15}

    def no_live_query(*a, **k):
        raise AssertionError("a live query")

    monkeypatch.setattr("simweb.api.related_top", no_live_query)
    assert len(ix.related(url)) == 10
    assert len(ix.related(url, top=4, alpha=0.3)) <= 4
    for uncovered in ({"top": 11}, {"alpha": 0.1}):  # more answers, or a lower threshold: live
        with pytest.raises(AssertionError, match="a live query"):
            ix.related(url, **uncovered)
    ix.related(url, rerank=False)  # the estimate alone is PROCESSQUERY's, never the table's


def test_an_index_opened_before_its_table_uses_it_once_whole(index, monkeypatch):
    ix = open_index(index)
    url = ix._v.doc_rows([5])[0]["url"]
    before = ix.related(url)
    calls = []
    monkeypatch.setattr("simweb.api.related_top", lambda *a, **k: calls.append(1) or related_top(*a, **k))
    ix.related(url)
    assert calls == [1]
    _table(index)
    assert ix.related(url) == before and calls == [1]  # from the table: no further live query


def test_a_stopped_run_resumes_with_the_shards_missing(index, tmp_path):
    version = store.resolve(index)
    real = precomputed.compute_shard
    done = []

    def stops_at_the_fourth(**call):
        if len(done) == 3:
            raise RuntimeError("the run is stopped")
        done.append(call["first"])
        return real(**call)

    class Stopping:
        name = "related-table-shard"
        fn = staticmethod(stops_at_the_fourth)

    with dask.config.set(scheduler="synchronous"), pytest.raises(RuntimeError, match="the run is stopped"):
        precomputed.compute_table(version, Stopping, shard_docs=5)  # 10 shards, one after another
    assert precomputed.open_table(store.open_version(index)) is None  # no table until every shard is in
    work = sorted(os.listdir(os.path.join(version, precomputed.WORK_FOLDER)))
    assert work == sorted(f"shard-{first:010d}.bin" for first in done)
    figures = _table(index, shard_docs=5)
    assert (figures["shards_found"], figures["shards_computed"]) == (3, 7)
    assert not os.path.exists(os.path.join(version, precomputed.WORK_FOLDER))
    resumed = precomputed.open_table(store.open_version(index))
    other = build_small_index(tmp_path / "again")
    _table(other)  # the same index computed in one go
    whole = precomputed.open_table(store.open_version(other))
    for name in ("docs", "counts", "exact"):
        assert np.array_equal(getattr(resumed, name), getattr(whole, name))
    assert _table(index, shard_docs=5)["reused"] is True


def test_a_table_of_another_version_or_a_damaged_one_is_not_used(index, tmp_path):
    _table(index)
    version = store.resolve(index)
    v = store.open_version(index)
    assert precomputed.open_table(v) is not None
    # Another version of the index (a rebuild with another m): the table is not its own.
    other = build_small_index(tmp_path / "other")
    other_version = store.resolve(other)
    for name in os.listdir(version):
        if name.startswith("answers."):
            shutil.copy(os.path.join(version, name), os.path.join(other_version, name))
    with open(os.path.join(other_version, store.MANIFEST)) as f:
        manifest = json.load(f)
    manifest["created"] = "2020-01-01T00:00:00+00:00"  # the same files, written at another time
    with open(os.path.join(other_version, store.MANIFEST), "w") as f:
        json.dump(manifest, f)
    assert precomputed.table_problems(other_version) == ["it was computed for another version of the index"]
    assert precomputed.open_table(store.open_version(other)) is None
    # A file cut short: not used, and computed anew by the next run.
    exact = os.path.join(version, precomputed.EXACT_FILE)
    with open(exact, "r+b") as f:
        f.truncate(os.path.getsize(exact) - 8)
    assert precomputed.table_problems(version) == [f"{precomputed.EXACT_FILE}: expected {48 * 10 * 8} bytes, found {48 * 10 * 8 - 8}"]
    assert precomputed.open_table(store.open_version(index)) is None
    assert _table(index)["reused"] is False
    assert precomputed.open_table(store.open_version(index)) is not None
    # A byte changed: found by its digest when verified.
    with open(exact, "r+b") as f:
        f.seek(100)
        byte = f.read(1)
        f.seek(100)
        f.write(bytes([byte[0] ^ 1]))
    assert precomputed.table_problems(version) == []
    assert "differs from the SHA-256" in precomputed.table_problems(version, digests=True)[0]
    assert precomputed.open_table(store.open_version(index), verify=True) is None
    assert open_index(index, verify=True).info()["related_table"] is None
    assert _table(index, verify=True)["reused"] is False


def test_a_version_replaced_while_its_table_is_computed_is_left(index, monkeypatch):
    version = store.resolve(index)
    real = precomputed.compute_shard

    def replaced_meanwhile(**call):
        if call["first"] == 0:  # a newer publish prunes this version under the run
            os.remove(os.path.join(version, store.MANIFEST))
        return real(**call)

    class Replaced:
        name = "related-table-shard"
        fn = staticmethod(replaced_meanwhile)

    figures = precomputed.compute_table(version, Replaced, shard_docs=16)
    assert figures["superseded"] is True
    assert not os.path.exists(os.path.join(version, precomputed.TABLE_MANIFEST))


def test_a_worker_holds_only_the_versions_it_computes_for(index, tmp_path):
    other = build_small_index(tmp_path / "other")
    _table(index)
    assert list(precomputed._OPENED) == [store.resolve(index)]
    _table(other)  # the next version a long-lived worker computes for: the first one is let go
    assert list(precomputed._OPENED) == [store.resolve(other)]


def test_the_stage_reports_a_whole_table_as_reused(index):
    live = store.resolve(index)
    first = related_table_stage(live)
    assert (first["reused"], first["documents"], first["shards_computed"]) == (False, 48, 1)
    assert related_table_stage(live)["reused"] is True


def test_a_row_is_cut_by_the_threshold_and_top_asked():
    docs = np.full((8, 4), -1, dtype=np.int32)
    counts, exact = np.zeros((8, 4), dtype=np.uint16), np.zeros((8, 4))
    docs[0, :3], counts[0, :3], exact[0, :3] = [4, 7, 2], [60, 30, 20], [0.8, 0.4, 0.2]
    table = AnswerTable(docs, counts, exact, alpha=0.15, m=80)
    match, scores = table.answer(0, 0.15, 4)
    assert match.docs.tolist() == [4, 7, 2] and match.counts.tolist() == [60, 30, 20] and scores.tolist() == [0.8, 0.4, 0.2]
    assert table.answer(0, 0.4, 4)[0].docs.tolist() == [4, 7]  # 0.4 itself reaches 0.4
    assert table.answer(0, 0.15, 2)[0].docs.tolist() == [4, 7]
    assert len(table.answer(1, 0.15, 4)[0]) == 0
    assert not table.covers(0.15, 5) and not table.covers(0.1, 4) and table.covers(0.15 - 1e-13, 4)
    docs[3, 0], exact[3, 0] = 8, 0.5  # a page outside the table: not an answer
    assert table.answer(3, 0.15, 4) is None
    with pytest.raises(ValueError, match="top ≤ 4 at alpha ≥ 0.15"):
        table.answer(0, 0.15, 5)


def test_an_incremental_update_recomputes_only_the_rows_it_may_change(warc_dir, tmp_path):
    """A full build with its table, then new files added incrementally (tests/test_incremental.py's):
    the new version's table keeps the rows no updated page can change and equals the table computed whole."""
    from simweb.flows.ingest_new_crawl import refresh_index
    from simweb.tasks import incremental
    from simweb.tasks.ingest.files import ingest_files
    from simweb.tasks.layout import crawl_folder

    _write_new_warc(tmp_path / "new.warc.gz")
    shutil.copy(warc_dir / "example-iana.org-chunked.warc", tmp_path / "iana.warc")
    first = [str(warc_dir / "warcfile.warc.gz"), str(warc_dir / "example.warc.gz")]
    later = [str(tmp_path / "new.warc.gz"), str(tmp_path / "iana.warc")]
    out = str(tmp_path / "index")
    crawl = crawl_folder(out)
    ingest_files(first, crawl)
    bags, live = _full_build(crawl, out)
    incremental.start_epoch(out, bags, PARAMS)
    assert related_table_stage(live)["reused"] is False
    new_parts = list(ingest_files(later, crawl).parts)
    index, stages = refresh_index(None, out, crawl, STRATEGY, PARAMS, None, new_parts)
    assert stages == {"delta-bags": False, "delta-index": False}
    manifest = store.read_manifest(index)
    assert manifest["updated_from"] == precomputed.index_identity(live)
    updated = np.fromfile(os.path.join(index, store.UPDATED_DOCS_FILE), dtype="<u4")
    n_old, n_new = store.open_version(live).n_docs, manifest["n_docs"]
    assert 0 < updated.size < n_new and (updated >= n_old).sum() == n_new - n_old

    figures = related_table_stage(index)
    assert figures["rows_computed"] < n_new and figures["rows_kept"] > 0, figures
    assert figures["rows_computed"] + figures["rows_kept"] == n_new
    by_update = precomputed.open_table(store.open_version(index))
    # The same version alone (no table beside it to start from): its table computed whole.
    alone = tmp_path / "alone" / "versions" / "v"
    shutil.copytree(index, alone, ignore=shutil.ignore_patterns("answers.*"))
    whole_figures = _table(str(alone))
    assert "rows_kept" not in whole_figures
    whole = precomputed.open_table(store.open_version(str(alone)))
    for name in ("docs", "counts", "exact"):
        assert np.array_equal(getattr(by_update, name), getattr(whole, name)), name
    # And a query of the updated index answers from it as a live one would.
    ix = open_index(out)
    for url in ("http://www.uraharajuku.st/", "http://new.example/links.html"):
        assert ix.info()["related_table"]["documents"] == n_new
        from_table = ix.related(url)
        _no_table(index)
        assert open_index(out).related(url) == from_table
        _table(out)


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(0, 30), st.integers(0, 30), st.booleans())
def test_the_rows_an_update_may_change_are_all_that_change(seed, replaced, appended, filtered):
    """Bags of a few topics, some replaced by bags of other topics and some appended, some pages
    outside I: the old table with the rows rows_to_update names computed again equals the new
    index's table computed whole (a missed row, or the rows an updated page enters left out, fails it)."""
    rng = np.random.default_rng(seed)
    m, alpha, width = 16, 0.15, 6
    old_bags = _clustered_bags(rng, 200)
    new_bags = list(old_bags)
    updated = rng.choice(200, replaced, replace=False)
    for d, bag in zip(updated.tolist(), _clustered_bags(rng, replaced)):
        new_bags[d] = bag
    new_bags += _clustered_bags(rng, appended)
    updated = np.concatenate([updated, np.arange(200, 200 + appended)]).astype(np.int64)
    h_new, _, arrays_new = _minhash_index(new_bags, m, seed % 1000)
    h_old, _, arrays_old = _minhash_index(old_bags, m, seed % 1000)
    outside = rng.random(len(new_bags)) < (0.2 if filtered else 0.0)
    old_outside = outside[:200].copy()  # the same pages outside I in both, but for updated ones
    old_outside[updated[updated < 200]] = rng.random(replaced) < (0.2 if filtered else 0.0)
    index_old, index_new = invert(h_old, ~old_outside), invert(h_new, ~outside)

    def table(index, h, arrays, n):
        return AnswerTable(*answer_rows(index, h, arrays, range(n), alpha, width), alpha=alpha, m=m)

    old = table(index_old, h_old, arrays_old, 200)
    whole = table(index_new, h_new, arrays_new, len(new_bags))
    rows = rows_to_update(index_new, h_new, arrays_new, old, updated, np.flatnonzero(outside))
    assert set(updated.tolist()) <= set(rows.tolist())
    patched = [np.concatenate([a, np.zeros((appended, width), a.dtype)]) for a in (old.docs, old.counts, old.exact)]
    for a, b in zip(patched, answer_rows(index_new, h_new, arrays_new, rows.tolist(), alpha, width)):
        a[rows] = b
    for a, b in zip(patched, (whole.docs, whole.counts, whole.exact)):
        assert np.array_equal(a, b)


def test_the_server_answers_from_a_table_that_appears_while_it_runs(index, monkeypatch):
    """A server started before the table is computed: its answers are the same before and after,
    and once the table is whole /api/related reads it (no live query) and /api/info says so."""
    from fastapi.testclient import TestClient
    from test_http import LOCAL

    from simweb.http import create_app

    client = TestClient(create_app(index), base_url=LOCAL)
    url = store.open_version(index).doc_rows([20])[0]["url"]
    assert client.get("/api/info").json()["related_table"] is None
    live = client.get("/api/related", params={"url": url}).json()
    _table(index)
    assert client.get("/api/info").json()["related_table"] == {"documents": 48, "width": 10, "alpha": 0.15}
    monkeypatch.setattr("simweb.api.related_top", None)  # a live query would fail
    assert client.get("/api/related", params={"url": url}).json() == live


@pytest.mark.parametrize("answers_json", [
    b"not json", b"[]", b'{"format": "simweb-answers"}',
    b'{"format": "simweb-answers", "format_version": 1, "index": "x", "n_docs": "many", "width": 10}',
])
def test_an_answers_file_simweb_did_not_write_is_not_used_and_queries_go_on(index, answers_json):
    _table(index)
    version = store.resolve(index)
    expected = [r.to_dict() for r in open_index(index).related(store.open_version(index).doc_rows([9])[0]["url"])]
    with open(os.path.join(version, precomputed.TABLE_MANIFEST), "wb") as f:
        f.write(answers_json)
    ix = open_index(index)
    assert precomputed.open_table(ix._v) is None and precomputed.table_problems(version)
    assert [r.to_dict() for r in ix.related(ix._v.doc_rows([9])[0]["url"])] == expected


def test_a_row_naming_a_page_outside_the_index_is_answered_live(index):
    _table(index)
    version = store.resolve(index)
    ix = open_index(index)
    url = ix._v.doc_rows([9])[0]["url"]
    expected = ix.related(url)
    with open(os.path.join(version, precomputed.DOCS_FILE), "r+b") as f:  # same size, row 9 damaged
        f.seek(9 * precomputed.WIDTH * 4)
        f.write(np.int32(10_000).tobytes())
    again = open_index(index)
    assert again.info()["related_table"] is not None  # by size, whole
    assert again.related(url) == expected
