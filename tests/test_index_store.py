"""H and I on disk (paper Section 6.2): the stages' output equals the in-memory reference, the
byte layout is as documented, versions publish atomically, damage is detected."""
from __future__ import annotations

import json
import os
import threading

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from conftest import build_small_index, write_synthetic_crawl

from simweb.core.minhash import MinHashParams, sign_bags
from simweb.core.query import invert as invert_in_memory
from simweb.tasks import index_store as store
from simweb.tasks.schemas import BAGS
from simweb.tasks.signatures import shards, signatures, write_index_version
from simweb.tasks.storage import write_parquet_atomic


def test_h_holds_one_fixed_width_row_per_document_equal_to_signing_the_bags(small_index):
    v = store.open_version(small_index, verify=True)
    docs = v.docs.to_pylist()
    assert [d["doc_id"] for d in docs] == list(range(v.n_docs)) == list(range(48))
    bags = [v.bag(d["doc_id"]) for d in docs]
    expected = sign_bags(bags, v.params).values
    assert np.array_equal(v.h, expected)
    # One seek: document d's row is the 4·m bytes at offset 4·m·d of H.u32.
    with open(os.path.join(v.path, store.H_FILE), "rb") as f:
        f.seek(4 * 80 * 17)
        assert np.frombuffer(f.read(4 * 80), "<u4").tolist() == v.h[17].tolist()


def test_i_equals_the_in_memory_inversion_with_the_in_degree_filter(small_index):
    v = store.open_version(small_index)
    indexed = v.docs.column("indexed").to_numpy(zero_copy_only=False)
    degree = v.docs.column("in_degree").to_numpy()
    assert (indexed == (degree > 3)).all() and indexed.sum() == 44  # page 0 of each topic has 1 inlink
    ref = invert_in_memory(np.asarray(v.h), indexed)
    assert np.array_equal(v.inverted.keys, ref.keys)
    assert np.array_equal(v.inverted.offsets.astype(np.uint64), ref.offsets)
    assert np.array_equal(v.inverted.docs, ref.docs)
    assert not set(v.inverted.docs.tolist()) & set(np.flatnonzero(~indexed).tolist())
    man = v.manifest
    assert man["min_in_degree"] == 3 and man["minhash"] == MinHashParams().to_dict()
    assert man["n_postings"] == v.inverted.docs.size and man["n_buckets"] == v.inverted.keys.size
    assert (np.diff(v.inverted.keys.astype(np.float64)) > 0).all()


def test_document_map_has_titles_in_degrees_and_url_lookup(small_index):
    from simweb.core.urls import url_id

    v = store.open_version(small_index)
    row = v.doc_rows([v.doc_of(url_id("http://music3.example.com/"))])[0]
    assert row["url"] == "http://music3.example.com/" and row["title"] == "Music page 3"
    assert row["in_degree"] == 7 and row["n_terms"] == 12
    assert v.doc_of(12345) is None


def test_sharded_inversion_equals_one_block(tmp_path):
    crawl = write_synthetic_crawl(tmp_path / "crawl", per_topic=10)
    signatures(crawl["bags"], str(tmp_path / "signed"), links=crawl["links"])
    write_index_version(str(tmp_path / "signed"), str(tmp_path / "one"), min_in_degree=None)
    write_index_version(str(tmp_path / "signed"), str(tmp_path / "many"), min_in_degree=None, block_docs=7, reducers=5)
    for name in (store.KEYS_FILE, store.DOCS_FILE, "I.offsets.u32", store.H_FILE):
        assert (tmp_path / "one" / name).read_bytes() == (tmp_path / "many" / name).read_bytes()
    assert json.loads((tmp_path / "one" / "index.json").read_text())["min_in_degree"] is None
    # H, the maps and the bags are the signed folder's files, linked, not copied.
    bags = [f.file for f in store.bag_files(json.loads((tmp_path / "one" / "index.json").read_text()))]
    assert bags == [store.bags_file_name(0)]
    for name in (store.H_FILE, store.URLS_FILE, store.URL_DOCS_FILE, *bags):
        assert (tmp_path / "one" / name).samefile(tmp_path / "signed" / name), name



@pytest.mark.parametrize("n, sizes", [(1, [10]), (3, [3, 3, 4]), (4, [2, 3, 2, 3]), (10, [1] * 10), (25, [1] * 10),
                                      (0, [10])])
def test_shards_are_runs_of_consecutive_calls_of_near_equal_size(n, sizes):
    calls = [{"index": i} for i in range(10)]
    got = shards(calls, n)
    assert [len(s) for s in got] == sizes
    assert [c for s in got for c in s] == calls
    assert shards([], 4) == []


def test_signing_in_shards_writes_what_signing_part_by_part_writes(tmp_path):
    """The cluster's signing tasks each sign a shard of parts: the signed folder is the same
    file for file (the run of tasks here: Dask's local scheduler, as without a cluster)."""
    crawl = write_synthetic_crawl(tmp_path / "crawl", per_topic=10)
    for i in range(2, 5):  # more parts than shards: parts of one bag each, and an empty one
        rows = [{"url_id": 10_000 + i, "url": f"http://more.example/{i}", "terms": ["x", f"t{i}"],
                 "weights": [0.25, 0.75]}] if i < 4 else []
        write_parquet_atomic(pa.Table.from_pylist(rows, schema=BAGS), crawl["bags"] + f"/part-{i:05d}.parquet")
    one = signatures(crawl["bags"], str(tmp_path / "one"), links=crawl["links"])
    sharded = signatures(crawl["bags"], str(tmp_path / "sharded"), links=crawl["links"], tasks=2)
    assert one == sharded and one["parts"] == 5
    names = sorted(p.name for p in (tmp_path / "one").iterdir())
    assert names == sorted(p.name for p in (tmp_path / "sharded").iterdir()) and store.H_FILE in names
    for name in names:
        assert (tmp_path / "one" / name).read_bytes() == (tmp_path / "sharded" / name).read_bytes(), name


def test_bad_bag_rows_and_duplicate_urls_are_skipped_and_counted(tmp_path):
    rows = [
        {"url_id": 1, "url": "http://a.example/", "terms": ["x", "y"], "weights": [0.5, 0.5]},
        {"url_id": 2, "url": "http://b.example/", "terms": ["x"], "weights": [0.5, 0.5]},  # lengths differ
        {"url_id": 3, "url": "http://c.example/", "terms": ["x"], "weights": [float("nan")]},
        {"url_id": 4, "url": "http://d.example/", "terms": [], "weights": []},  # empty bag
        {"url_id": 5, "url": "http://e.example/", "terms": ["w"], "weights": [1.0]},
    ]
    write_parquet_atomic(pa.Table.from_pylist(rows, schema=BAGS), str(tmp_path / "bags" / "part-0.parquet"))
    dup = [{"url_id": 1, "url": "http://a.example/", "terms": ["z"], "weights": [1.0]}]
    write_parquet_atomic(pa.Table.from_pylist(dup, schema=BAGS), str(tmp_path / "bags" / "part-1.parquet"))
    stats = signatures(str(tmp_path / "bags"), str(tmp_path / "signed"))
    assert stats == {"parts": 2, "bags": 3, "empty_bags": 1, "bad_rows": 2, "duplicate_urls": 1}
    inv = write_index_version(str(tmp_path / "signed"), str(tmp_path / "v"))
    assert inv["documents"] == 3 and inv["indexed"] == 2  # the empty bag is in H, not in I
    v = store.open_version(str(tmp_path / "v"))
    # Each document keeps its own bag, the skipped rows between them notwithstanding.
    assert [v.bag(d) for d in range(3)] == [{"x": 0.5, "y": 0.5}, {}, {"w": 1.0}]
    assert [v.doc_rows([d])[0]["url"] for d in range(3)] == ["http://a.example/", "http://d.example/", "http://e.example/"]


def test_publish_switches_versions_atomically_and_keeps_the_previous(tmp_path):
    root = tmp_path / "idx"
    first = build_small_index(tmp_path / "a")
    v1 = store.resolve(first)
    store.publish(v1, str(root), name="v1")
    store.publish(v1, str(root), name="v2")
    assert (root / "CURRENT").read_text().strip() == "v2"
    assert store.resolve(str(root)).endswith("v2")
    store.publish(v1, str(root), name="v3")
    assert sorted(os.listdir(root / "versions")) == ["v2", "v3"]  # the replaced one is kept

    # Readers resolving while versions are published see a complete version every time.
    seen, errors = [], []

    def reader():
        for _ in range(200):
            try:
                seen.append(store.open_version(str(root)).manifest["n_docs"])
            except Exception as e:  # noqa: BLE001 - the test reports any failure below
                errors.append(e)

    t = threading.Thread(target=reader)
    t.start()
    for i in range(4, 14):
        store.publish(v1, str(root), name=f"v{i}")
    t.join()
    assert not errors and set(seen) == {48}


def test_damaged_or_foreign_folders_are_refused_with_a_clear_message(tmp_path, small_index):
    with pytest.raises(FileNotFoundError, match="simweb build"):
        store.open_version(str(tmp_path))
    v = store.resolve(small_index)
    copy = tmp_path / "copy"
    copy.mkdir()
    for name in os.listdir(v):
        (copy / name).write_bytes((open(os.path.join(v, name), "rb")).read())
    with open(copy / store.H_FILE, "r+b") as f:
        f.write(b"\x00\x01\x02\x03")
    with pytest.raises(store.IndexFormatError, match=r"H.u32: expected SHA-256 [0-9a-f]{64} \(in index.json\), found [0-9a-f]{64}"):
        store.open_version(str(copy), verify=True)
    with open(copy / store.DOCS_FILE, "ab") as f:
        f.write(b"\x00")
    with pytest.raises(store.IndexFormatError, match="bytes"):
        store.open_version(str(copy))
    man = json.loads((copy / "index.json").read_text())
    man["format_version"] = 99
    (copy / "index.json").write_text(json.dumps(man))
    with pytest.raises(store.IndexFormatError, match="rebuild"):
        store.open_version(str(copy))


def test_bags_file_has_small_row_groups_in_document_order(small_index):
    v = store.open_version(small_index)
    pf = pq.ParquetFile(os.path.join(v.path, store.bags_file_name(0)))
    assert pf.metadata.row_group(0).num_rows == min(store.BAG_ROW_GROUP, 48)
    assert pf.read().column("doc_id").to_pylist() == list(range(48))


def test_a_fan_out_of_one_call_runs_in_the_calling_process():
    # One part gives nothing to run in parallel: no task is handed to the runner.
    from prefect import task

    from simweb.flows.cluster import fan_out

    class NoRunner:
        def map(self, *args, **kwargs):
            raise AssertionError("a single call was handed to the task runner")

    calls = []

    @task
    def work(x):
        calls.append(x)
        return x * 2

    fan = fan_out(NoRunner())
    assert fan(work, [{"x": 21}]) == [42]
    assert calls == [21]
    with pytest.raises(AssertionError, match="handed to the task runner"):
        fan(work, [{"x": 1}, {"x": 2}])
