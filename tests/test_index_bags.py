"""The index's bags in files of BAG_FILE_DOCS documents (tasks/index_store.py): written by
parallel runs of files, the same files whatever the runs; each document's bag read back as
signed, from the bag arrays the queries read (tasks/bag_arrays.py) as from the files; an index
of an earlier format refused with the advice to rebuild; an incremental update copies the files
it does not touch and writes the others as a build would."""
from __future__ import annotations

import json
import os

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from simweb.core.urls import url_id
from simweb.tasks import index_store as store
from simweb.tasks.incremental import _write_bags
from simweb.tasks.schemas import BAGS
from simweb.tasks.signatures import signatures, write_index_version
from simweb.tasks.storage import write_parquet_atomic


@pytest.fixture
def small_files(monkeypatch):
    """Row groups of 3 bags and files of 6, so that a few dozen documents span many of each."""
    monkeypatch.setattr(store, "BAG_ROW_GROUP", 3)
    monkeypatch.setattr(store, "BAG_FILE_DOCS", 6)


def _bags_folder(root, seed: int = 3) -> tuple[str, list[dict[str, float]]]:
    """Six BAGS parts of 0-9 rows (one empty; a URL of part 0 again in parts 2 and 4, and a bad
    row, each skipped by the signatures stage); the bags the documents must hold, in id order."""
    rng = np.random.default_rng(seed)
    expected, seen, n = [], set(), 0
    for p, size in enumerate([7, 9, 5, 0, 8, 4]):
        rows = []
        for r in range(size):
            k = 1 if (p, r) in ((2, 1), (4, 3)) else n  # url 1 (part 0) once more
            n += k == n
            url = f"http://site{k}.example/"
            terms = sorted({f"t{int(x)}" for x in rng.integers(0, 40, size=int(rng.integers(0, 9)))})
            weights = (rng.random(len(terms)) + 0.1).astype(np.float32)
            bad = (p, r) == (1, 4)
            rows.append({"url_id": url_id(url), "url": url, "terms": terms,
                         "weights": weights.tolist() + ([0.5] if bad else [])})
            if not bad and url not in seen:
                seen.add(url)
                expected.append(dict(zip(terms, weights.tolist())))
        write_parquet_atomic(pa.Table.from_pylist(rows, schema=BAGS), str(root / "bags" / f"part-{p:05d}.parquet"))
    return str(root / "bags"), expected


def _index(root, bags: str, tasks: int | None) -> store.IndexVersion:
    signatures(bags, str(root / "signed"), tasks=tasks)
    write_index_version(str(root / "signed"), str(root / "version"))
    return store.open_version(str(root / "version"), verify=True)


def test_the_writer_starts_a_file_every_file_docs_documents_and_a_row_group_every_row_group(tmp_path, small_files):
    writer = store.BagsWriter(str(tmp_path), 12)
    bags = [{"terms": [f"w{i}"] * (i % 3), "weights": [float(i)] * (i % 3)} for i in range(15)]
    table = pa.Table.from_pylist(bags, schema=pa.schema([store.INDEX_BAGS.field("terms"),
                                                         store.INDEX_BAGS.field("weights")]))
    for a, b in ((0, 1), (1, 5), (5, 5), (5, 13), (13, 15)):
        writer.write(table.slice(a, b - a))
    files = writer.close()
    assert [(f.file, f.first_doc, f.docs) for f in files] == [
        (store.bags_file_name(12), 12, 6), (store.bags_file_name(18), 18, 6), (store.bags_file_name(24), 24, 3)]
    assert sorted(os.listdir(tmp_path)) == [f.file for f in files]  # no temporary file left
    read = []
    for f in files:
        pf = pq.ParquetFile(tmp_path / f.file)
        assert [pf.metadata.row_group(g).num_rows for g in range(pf.num_row_groups)] == [3, 3][:(f.docs + 2) // 3]
        read.extend(pf.read().to_pylist())
    assert [r["doc_id"] for r in read] == list(range(12, 27))
    assert [{"terms": r["terms"], "weights": r["weights"]} for r in read] == bags


@pytest.mark.parametrize("tasks", [2, 3, 5])
def test_the_bags_files_are_the_same_however_many_runs_wrote_them(tmp_path, small_files, tasks):
    bags, expected = _bags_folder(tmp_path)
    one = _index(tmp_path / "one", bags, None)
    many = _index(tmp_path / "many", bags, tasks)
    assert len(expected) == one.n_docs == 30
    names = [f.file for f in one.bag_files]
    assert names == [store.bags_file_name(d) for d in range(0, 30, 6)] == [f.file for f in many.bag_files]
    for name in names + [store.H_FILE]:
        assert (tmp_path / "one" / "version" / name).read_bytes() == (tmp_path / "many" / "version" / name).read_bytes()
    assert one.manifest["bags"] == many.manifest["bags"]


def test_every_document_reads_back_its_own_bag_from_the_arrays_and_the_files(tmp_path, small_files):
    bags, expected = _bags_folder(tmp_path)
    v = _index(tmp_path, bags, 4)
    assert [v.bag(d) for d in range(v.n_docs)] == expected
    files = [r for f in v.bag_files for r in pq.read_table(tmp_path / "version" / f.file).to_pylist()]
    assert [dict(zip(r["terms"], r["weights"])) for r in files] == expected
    # The arrays: one vocabulary in UTF-8 byte order, each bag's term ids rising.
    vocabulary = v.terms(np.arange(v.manifest["n_terms"]))
    assert vocabulary == sorted({t for bag in expected for t in bag}, key=lambda t: t.encode())
    offsets, terms = v.bag_arrays.offsets, v.bag_arrays.terms
    assert offsets[-1] == terms.size == v.manifest["n_entries"] == sum(len(b) for b in expected)
    assert all(np.all(np.diff(terms[a:b].astype(np.int64)) > 0) for a, b in zip(offsets[:-1], offsets[1:]))
    with pytest.raises(IndexError):
        v.bag(30)


def test_bags_whose_terms_are_not_in_order_are_sorted_into_the_arrays(tmp_path, small_files):
    from simweb.tasks.bag_arrays import write_bag_arrays

    bags, expected = _bags_folder(tmp_path)
    v = _index(tmp_path, bags, None)
    version = tmp_path / "version"
    for f in v.bag_files:  # each bag's terms reversed, as a writer other than the bags stage may leave them
        table = pq.read_table(version / f.file)
        rows = [{**r, "terms": r["terms"][::-1], "weights": r["weights"][::-1]} for r in table.to_pylist()]
        pq.write_table(pa.Table.from_pylist(rows, schema=table.schema), version / f.file)
    write_bag_arrays(str(version), [f.file for f in v.bag_files], v.n_docs)
    store.write_manifest(str(version), {k: x for k, x in v.manifest.items()
                                        if k not in ("format", "format_version", "created", "files")})
    again = store.open_version(str(version))
    assert [again.bag(d) for d in range(again.n_docs)] == expected
    assert np.array_equal(again.bag_arrays.terms, v.bag_arrays.terms)


@pytest.mark.parametrize("group_docs", [1, 3, 7])
def test_the_arrays_written_a_row_group_at_a_time_are_the_same(tmp_path, small_files, group_docs):
    # Read a row group at a time, each with a dictionary of its own terms: files cut in groups of
    # 1, 3 or 7 documents give the arrays of the files as the build writes them, byte for byte.
    from simweb.tasks import bag_arrays

    bags, expected = _bags_folder(tmp_path)
    v = _index(tmp_path, bags, None)
    version = tmp_path / "version"
    whole = {name: (version / name).read_bytes() for name in (store.BAG_OFFSETS_FILE, store.BAG_TERMS_FILE,
                                                              store.BAG_WEIGHTS_FILE, store.BAG_SUMS_FILE)}
    for f in v.bag_files:
        table = pq.read_table(version / f.file)
        pq.write_table(table, version / f.file, row_group_size=group_docs, use_dictionary=["terms.list.element"])
        assert pq.ParquetFile(version / f.file).num_row_groups == -(-table.num_rows // group_docs)
    counts = bag_arrays.write_bag_arrays(str(version), [f.file for f in v.bag_files], v.n_docs)
    assert counts["entries"] == sum(len(b) for b in expected)
    assert {name: (version / name).read_bytes() for name in whole} == whole


def test_an_index_of_an_earlier_format_is_refused_with_the_advice_to_rebuild(tmp_path, small_files):
    bags, _ = _bags_folder(tmp_path)
    _index(tmp_path, bags, None)
    path = tmp_path / "version" / store.MANIFEST
    written = json.loads(path.read_text())
    written["format_version"] = 2
    path.write_text(json.dumps(written))
    with pytest.raises(store.IndexFormatError, match="version 2; rebuild the index with this simweb"):
        store.open_version(str(tmp_path / "version"))


@pytest.mark.parametrize("bags, problem", [
    ([{"file": "bags-0000000000.parquet", "first_doc": 0, "docs": 4}], "hold 4 documents, not 6"),
    ([{"file": "bags-0000000000.parquet", "first_doc": 0, "docs": 4},
      {"file": "bags-0000000005.parquet", "first_doc": 5, "docs": 1}], "in order"),
    ([{"file": "../bags-0000000000.parquet", "first_doc": 0, "docs": 6}], "size and digest"),
    ([{"file": "bags-0000000000.parquet", "first_doc": 0}], "missing or not a list"),
    (None, "missing or not a list"),
])
def test_a_manifest_whose_bags_files_do_not_cover_the_documents_is_refused(bags, problem):
    files = {"bags-0000000000.parquet": {}, "bags-0000000005.parquet": {}, "bags-0000000004.parquet": {}}
    manifest = {"format_version": 2, "n_docs": 6, "files": files, **({} if bags is None else {"bags": bags})}
    with pytest.raises(store.IndexFormatError, match=problem):
        store.bag_files(manifest)


def test_a_bags_file_that_disagrees_with_the_manifest_is_refused(tmp_path, small_files):
    bags, _ = _bags_folder(tmp_path)
    _index(tmp_path, bags, None)
    version = str(tmp_path / "version")
    manifest = store.read_manifest(version)
    name = manifest["bags"][1]["file"]
    table = pq.read_table(os.path.join(version, name))
    pq.write_table(table.slice(1), os.path.join(version, name))  # a bag short
    manifest["files"][name]["bytes"] = os.path.getsize(os.path.join(version, name))
    with open(os.path.join(version, store.MANIFEST), "w") as fh:
        json.dump(manifest, fh)
    from simweb.tasks.bag_arrays import write_bag_arrays

    with pytest.raises(store.IndexFormatError, match="expected the bags of 30 documents, found 29"):
        write_bag_arrays(version, [f["file"] for f in manifest["bags"]], 30)


def _new_bags(doc: np.ndarray) -> tuple[list[dict], pa.Table]:
    """New bags for the documents ``doc`` of an update, as rows and as the table it is given."""
    new = [{"terms": ["new", f"d{d}"], "weights": [1.0, float(d)]} for d in doc.tolist()]
    return new, pa.Table.from_pylist(new, schema=pa.schema([pa.field("terms", pa.list_(pa.string())),
                                                            pa.field("weights", pa.list_(pa.float32()))]))


def _assert_bags_read_back(folder, files, expected, doc, new) -> None:
    """The updated files hold documents 0–31 in order: the new bags where given, else the old."""
    want = list(expected) + [{}, {}]
    for d, bag in zip(doc.tolist(), new):
        want[d] = dict(zip(bag["terms"], bag["weights"]))
    rows = [r for f in files for r in pq.read_table(folder / f["file"]).to_pylist()]
    assert [r["doc_id"] for r in rows] == list(range(32))
    assert [dict(zip(r["terms"], r["weights"])) for r in rows] == \
        [{t: pytest.approx(w) for t, w in b.items()} for b in want]


def test_an_update_copies_the_untouched_files_and_lays_out_the_rest_as_a_build(tmp_path, small_files):
    bags, expected = _bags_folder(tmp_path)
    _index(tmp_path, bags, 2)
    old = str(tmp_path / "version")
    v = store.open_version(old)
    # Documents 7 and 29 (files 1 and 4) get new bags; 30 and 31 are new.
    doc = np.array([31, 7, 30, 29])
    new, table = _new_bags(doc)
    folder = tmp_path / "updated"
    folder.mkdir()
    files = _write_bags(v, table, doc, str(folder))
    assert [(f["file"], f["first_doc"], f["docs"]) for f in files] == \
        [(store.bags_file_name(d), d, 6) for d in range(0, 30, 6)] + [(store.bags_file_name(30), 30, 2)]
    assert sorted(os.listdir(folder)) == [f["file"] for f in files]
    for f in files:  # files 0, 2 and 3 hold no touched document: copies
        same = (folder / f["file"]).read_bytes() == (tmp_path / "version" / f["file"]).read_bytes() \
            if os.path.exists(tmp_path / "version" / f["file"]) else False
        assert same == (f["first_doc"] in (0, 12, 18)), f
    _assert_bags_read_back(folder, files, expected, doc, new)


def test_an_update_that_only_appends_after_a_full_last_file_copies_every_file(tmp_path, small_files, monkeypatch):
    """The live version's files are all full (30 documents, files of 6): one touched document
    (7, file 1) and two new ones (30, 31) rewrite file 1 alone, copy the other four, the last
    included, and start a new file for the new documents."""
    bags, expected = _bags_folder(tmp_path)
    _index(tmp_path, bags, 2)
    v = store.open_version(str(tmp_path / "version"))
    doc = np.array([30, 7, 31])
    new, table = _new_bags(doc)
    folder = tmp_path / "updated"
    folder.mkdir()
    copied, copy_file = [], store.copy_file
    monkeypatch.setattr(store, "copy_file", lambda src, dst, sha=None: (copied.append(os.path.basename(dst)),
                                                                        copy_file(src, dst, sha)))
    files = _write_bags(v, table, doc, str(folder))
    assert [(f["file"], f["first_doc"], f["docs"]) for f in files] == \
        [(store.bags_file_name(d), d, 6) for d in range(0, 30, 6)] + [(store.bags_file_name(30), 30, 2)]
    assert copied == [store.bags_file_name(d) for d in (0, 12, 18, 24)]
    for f in files[:5]:
        same = (folder / f["file"]).read_bytes() == (tmp_path / "version" / f["file"]).read_bytes()
        assert same == (f["first_doc"] != 6), f
    _assert_bags_read_back(folder, files, expected, doc, new)
