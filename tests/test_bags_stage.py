"""The bags stage on Parquet: fragments, Dask shuffle merge, df and weighting, caching, reading, CLI,
and the paper's Figure 14 (top terms of a bag) for a real WARC file."""
from __future__ import annotations

import os
import shutil

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from simweb.cli import main as simweb
from simweb.core.bag_reference import LinkRow, PageRow, reference_bags
from simweb.core.strategy import Strategy
from simweb.core.urls import url_id
from simweb.tasks import schemas
from simweb.tasks.bag_reader import find_bags, read_bags
from simweb.tasks.bags.fragments import fragments_of_links_part, fragments_of_pages_part, largest_first
from simweb.tasks.bags.task import bags_task
from simweb.tasks.crawl.corpus import load_corpus
from simweb.tasks.stagecache import published
from simweb.tasks.stages.bags import build_bags_stage
from simweb.tasks.stages.fragments import NAME as STAGE_FRAGMENTS
from simweb.tasks.stages.merge import NAME as STAGE_MERGE
from simweb.tasks.stages.weighting import NAME as STAGE_BAGS
from simweb.tasks.storage import write_parquet_atomic


def U(name: str) -> str:
    return f"http://{name}.example/"


def I(name: str) -> int:
    return url_id(U(name))


PAGES_1 = [
    PageRow(U("a"), I("a"), ("alpha", "page"), ("debian", "packages", "are", "installed", "of", "big", "great",
                                               "the", "linux", "kernel", "see", "also", "modules", "packages")),
    PageRow(U("b"), I("b"), ("beta",), ("the", "kernel", "gamma", "modules", "self")),
]
LINKS_1 = [
    LinkRow(U("a"), I("a"), U("b"), I("b"), ("linux", "kernel"), ("the", "great", "big", "of"),
            ("see", "also", "modules", "packages"), 1, 2, 3, 4),
    LinkRow(U("b"), I("b"), U("c"), I("c"), ("gamma",), ("kernel",), ()),
    LinkRow(U("b"), I("b"), U("b"), I("b"), ("self",), (), ()),
]
# A second WARC file holds an earlier capture of page a (2020; the first file's is of 2024): a
# URL's page is its latest capture, so this copy and the links read from it are skipped.
PAGES_2 = [PageRow(U("a"), I("a"), ("alpha", "copy"), ("second", "crawl", "dup", "source"))]
LINKS_2 = [LinkRow(U("a"), I("a"), U("c"), I("c"), ("dup", "source"), (), ())]


def pages_table(rows: list[PageRow], source_file: str, timestamp: str = "20240101000000") -> pa.Table:
    return pa.table({
        "url": [r.url for r in rows], "url_id": pa.array([r.url_id for r in rows], pa.uint64()),
        "title": [" ".join(r.title_words) for r in rows],
        "title_words": [list(r.title_words) for r in rows], "words": [list(r.words) for r in rows],
        "status": pa.array([200] * len(rows), pa.int16()), "content_type": ["text/html"] * len(rows),
        "charset": ["utf-8"] * len(rows), "source_file": [source_file] * len(rows),
        "record_offset": pa.array(range(len(rows)), pa.int64()),
        "record_length": pa.array([0] * len(rows), pa.int64()), "surt": [""] * len(rows),
        "timestamp": [timestamp] * len(rows), "digest": ["-"] * len(rows),
    }, schema=schemas.PAGES)


def links_table(rows: list[LinkRow], pages: list[PageRow]) -> pa.Table:
    """LINKS rows: each link's words located as a run of its source page's words (LINKS stores offsets)."""
    words = {p.url_id: p.words for p in pages}
    columns: dict[str, list] = {f.name: [] for f in schemas.LINKS}
    for r in rows:
        page = words[r.source_id]
        span = (*reversed(r.left_words), *r.anchor_words, *r.right_words)
        (start,) = [i for i in range(len(page) - len(span) + 1) if page[i:i + len(span)] == span][:1]
        a0 = start + len(r.left_words)
        a1 = a0 + len(r.anchor_words)
        for name in ("source_url", "source_id", "target_url", "target_id", "syntactic_left", "syntactic_right",
                     "topical_left", "topical_right"):
            columns[name].append(getattr(r, name))
        for name, value in (("context_start", start), ("anchor_start", a0), ("anchor_end", a1),
                            ("context_end", a1 + len(r.right_words))):
            columns[name].append(value)
    return pa.table(columns, schema=schemas.LINKS)


@pytest.fixture()
def crawl(tmp_path) -> str:
    root = str(tmp_path / "crawl")
    write_parquet_atomic(pages_table(PAGES_1, "a.warc.gz"), f"{root}/pages/part-1111.parquet")
    write_parquet_atomic(links_table(LINKS_1, PAGES_1), f"{root}/links/part-1111.parquet")
    write_parquet_atomic(pages_table(PAGES_2, "b.warc.gz", "20200101000000"), f"{root}/pages/part-2222.parquet")
    write_parquet_atomic(links_table(LINKS_2, PAGES_2), f"{root}/links/part-2222.parquet")
    return root


STRATEGY = Strategy(sources=["anchor", "content", "links"])


def assert_bags_equal(matrix, reference, tol=1e-6) -> None:
    got = matrix.to_dicts()
    assert set(got) == set(reference)
    for u, (url, bag) in reference.items():
        assert got[u][0] == url
        assert got[u][1] == pytest.approx(bag, rel=tol, abs=tol)


def test_stage_builds_the_reference_bags_and_counts_what_it_skipped(crawl, tmp_path):
    out = build_bags_stage(crawl, STRATEGY, str(tmp_path / "work"), partitions=2, scheduler="sync")
    assert not out.reused and out.stage == STAGE_BAGS
    s = out.stats
    assert {k: s[k] for k in ("pages", "duplicate_pages", "links", "links_of_duplicate_pages", "self_links",
                              "bags", "empty_bags", "collection_size")} == {
        "pages": 3, "duplicate_pages": 1, "links": 4, "links_of_duplicate_pages": 1, "self_links": 1,
        "bags": 3, "empty_bags": 0, "collection_size": 3}
    assert s["strategy"] == STRATEGY.to_dict() and s["label"] == STRATEGY.label
    assert s["weighting"]["nmdf_mu"] is not None
    assert_bags_equal(read_bags(out.path), reference_bags(PAGES_1, LINKS_1, STRATEGY))

    table = pq.read_table(out.path, schema=schemas.BAGS)
    assert table.schema.equals(schemas.BAGS)
    for row in table.to_pylist():
        assert row["terms"] == sorted(set(row["terms"]))
        assert sum(row["weights"]) == pytest.approx(1.0, abs=1e-5)


def test_a_repeated_call_reuses_the_bags_and_a_new_weighting_reuses_the_fragments(crawl, tmp_path):
    work = str(tmp_path / "work")
    first = build_bags_stage(crawl, STRATEGY, work, scheduler="sync")
    again = build_bags_stage(crawl, STRATEGY, work, scheduler="sync")
    assert again.reused and again.path == first.path and again.stats == first.stats
    sqrt = Strategy(sources=["anchor", "content", "links"], frequency="sqrt", metric="cosine")
    other = build_bags_stage(crawl, sqrt, work, scheduler="sync")
    assert not other.reused and other.path != first.path
    assert len(published(work, STAGE_FRAGMENTS)) == 1 and len(published(work, STAGE_MERGE)) == 1
    assert len(published(work, STAGE_BAGS)) == 2
    assert_bags_equal(read_bags(other.path), reference_bags(PAGES_1, LINKS_1, sqrt))
    # the metric does not change bags: same folder
    assert build_bags_stage(crawl, Strategy(sources=["anchor", "content", "links"], frequency="sqrt"),
                            work, scheduler="sync").path == other.path


def test_partitioning_does_not_change_the_bags(crawl, tmp_path):
    one = build_bags_stage(crawl, STRATEGY, str(tmp_path / "p1"), partitions=1, scheduler="sync")
    three = build_bags_stage(crawl, STRATEGY, str(tmp_path / "p3"), partitions=3, scheduler="threads")
    assert read_bags(one.path).to_dicts() == read_bags(three.path).to_dicts()
    assert one.stats["partitions"] == 1 and three.stats["partitions"] == 3


def test_the_fragments_are_consumed_by_the_merge_and_made_again_only_when_it_is_lost(crawl, tmp_path):
    import shutil

    work = str(tmp_path / "work")
    first = build_bags_stage(crawl, STRATEGY, work, scheduler="sync")
    (fragments,) = published(work, STAGE_FRAGMENTS)
    folder = tmp_path / "work" / STAGE_FRAGMENTS / fragments["key"]
    # Merged, the fragments' files are gone; their manifest and stats remain.
    assert fragments["consumed"]["bytes"] > 0 and sorted(p.name for p in folder.iterdir()) == ["_SUCCESS.json"]
    assert first.stats["fragment_rows"] == fragments["stats"]["fragment_rows"] > 0
    # Another weighting needs only the merge: nothing is made again.
    sqrt = Strategy(sources=["anchor", "content", "links"], frequency="sqrt", metric="cosine")
    build_bags_stage(crawl, sqrt, work, scheduler="sync")
    assert published(work, STAGE_FRAGMENTS) == [fragments]
    # The merge lost: fragments and merge are made again, and the bags are the same.
    (merged,) = published(work, STAGE_MERGE)
    shutil.rmtree(tmp_path / "work" / STAGE_MERGE / merged["key"])
    shutil.rmtree(first.path)
    again = build_bags_stage(crawl, STRATEGY, work, scheduler="sync")
    assert not again.reused and again.path == first.path and again.stats["fragment_rows"] == first.stats["fragment_rows"]
    assert published(work, STAGE_FRAGMENTS)[0]["finished"] != fragments["finished"]
    assert_bags_equal(read_bags(again.path), reference_bags(PAGES_1, LINKS_1, STRATEGY))


def test_read_bags_of_chosen_urls_and_find_bags(crawl, tmp_path):
    work = str(tmp_path / "work")
    with pytest.raises(FileNotFoundError, match="no bags under"):
        find_bags(work)
    out = build_bags_stage(crawl, STRATEGY, work, scheduler="sync")
    assert find_bags(work) == out.path and find_bags(out.path) == out.path
    some = read_bags(work, [I("b"), I("zzz")])
    assert list(some.url_ids) == [I("b")] and I("zzz") not in some
    assert some.collection_size == 3 and some.weighting is not None
    kernel = list(some.vocabulary).index("kernel")
    assert some.df[kernel] == 3  # a (its link text), b and c, over the whole collection
    build_bags_stage(crawl, Strategy(sources=["links"]), work, scheduler="sync")
    with pytest.raises(FileNotFoundError, match="2 bag sets"):
        find_bags(work)


def test_load_corpus_gives_the_same_bags_as_the_stage(crawl, tmp_path):
    corpus = load_corpus(crawl)
    out = build_bags_stage(crawl, STRATEGY, str(tmp_path / "work"), scheduler="sync")
    assert_bags_equal(read_bags(out.path), corpus.bags(STRATEGY).to_dicts())


def test_bad_inputs_are_refused_with_the_fix(tmp_path, crawl):
    with pytest.raises(FileNotFoundError, match="simweb ingest"):
        build_bags_stage(str(tmp_path / "nothing"), STRATEGY, str(tmp_path / "work"))
    with pytest.raises(ValueError, match="partitions"):
        build_bags_stage(crawl, STRATEGY, str(tmp_path / "work"), partitions=0)
    bad = pages_table(PAGES_1, "x").set_column(1, "url_id", pa.array([1, 2], pa.int64()))
    write_parquet_atomic(bad, f"{crawl}/pages/part-3333.parquet")
    with pytest.raises(ValueError, match="url_id.*expected uint64"):
        build_bags_stage(crawl, STRATEGY, str(tmp_path / "work"), scheduler="sync")


def test_the_prefect_task_wraps_the_stage(crawl, tmp_path):
    out = bags_task.fn(crawl, STRATEGY, str(tmp_path / "work"), 1)
    assert out.stats["bags"] == 3


def test_simweb_bags_and_similarity(crawl, tmp_path, capsys):
    work = str(tmp_path / "work")
    assert simweb(["bags", "--crawl", crawl, "--out", work, "--strategy", "anchor:32+content+links,stem,dist,nmdf",
                   "--scheduler", "sync", "--show", U("b")]) == 0
    text = capsys.readouterr().out
    assert "anchor-W32+content+links dist nmdf stem" in text and "self-links skipped" in text
    assert f"{U('b')}: " in text and "kernel" in text
    assert simweb(["similarity", U("b"), U("c"), "--bags", work]) == 0
    text = capsys.readouterr().out
    bags = read_bags(work)
    from simweb.core.similarity import cosine, jaccard, overlap

    a, c = bags.row(I("b")), bags.row(I("c"))
    assert f"jaccard {jaccard(a, c):.4f}" in text and f"cosine  {cosine(a, c):.4f}" in text
    assert f"overlap {overlap(a, c):.4f}" in text
    assert "kernel" in text.split("shared terms")[1]
    assert simweb(["similarity", U("b"), U("nowhere"), "--bags", work]) == 1
    assert "no bag for http://nowhere.example/" in capsys.readouterr().err
    # An index folder (`simweb build --out`) is read through the crawl it keeps.
    shutil.copytree(crawl, tmp_path / "index" / "crawl")
    assert simweb(["bags", "--crawl", str(tmp_path / "index"), "--out", str(tmp_path / "work2"), "--strategy",
                   "anchor:32+content+links,stem,dist,nmdf", "--scheduler", "sync", "--show", U("b")]) == 0
    assert f"{U('b')}: " in capsys.readouterr().out
    assert read_bags(str(tmp_path / "work2")).to_dicts() == bags.to_dicts()
    with pytest.raises(SystemExit, match="window_size"):
        simweb(["bags", "--crawl", crawl, "--out", work, "--strategy", "anchor:64"])
    assert simweb(["bags", "--crawl", crawl, "--out", work, "--strategy-json",
                   '{"sources": ["links"], "frequency": "none"}', "--scheduler", "sync"]) == 0
    assert "links none stem" in capsys.readouterr().out


def test_figure_14_top_terms_of_bags_for_a_real_warc(warc_dir, tmp_path):
    """Paper Figure 14 for our data: the top terms of sample bags built from a Common Crawl excerpt."""
    from simweb.tasks.ingest.files import ingest_files

    crawl = str(tmp_path / "crawl")
    ingested = ingest_files([str(warc_dir / "warcfile.warc.gz")], crawl)
    assert ingested.pages_written == 16
    out = build_bags_stage(crawl, Strategy(), str(tmp_path / "work"), scheduler="sync")
    bags = read_bags(out.path)
    assert out.stats["pages"] == 16 and out.stats["bags"] == len(bags) > 16
    print(f"\nFigure 14 for {os.path.basename(str(warc_dir / 'warcfile.warc.gz'))} ({Strategy().label}):")
    titles = {r["url"]: r["title_words"] for r in pq.read_table(f"{crawl}/pages").to_pylist()}
    shown = 0
    for url in ("http://0900-hovenier.nl/gelderland/oosterbeek/", "http://06.live-radsport.ch/",
                "http://01spb.ru/company/", "http://0760.jxtdw.com/area/sanxiang/"):
        uid = url_id(url)
        assert uid in bags, url
        top = bags.top_terms(uid, 10)
        print(f"  {url:<50} {', '.join(t for t, _ in top)}")
        row = bags.row(uid)
        assert sum(row.values()) == pytest.approx(1.0, abs=1e-5)
        shown += 1
    hovenier = [t for t, _ in bags.top_terms(url_id("http://0900-hovenier.nl/gelderland/oosterbeek/"), 3)]
    assert "hoveni" in hovenier and "oosterbeek" in hovenier  # the page's title words (STEM), weighted up
    assert "http://0900-hovenier.nl/gelderland/oosterbeek/" in titles and shown == 4


@pytest.mark.slow
def test_bags_task_in_a_prefect_flow(prefect_harness, crawl, tmp_path):
    from prefect import flow

    @flow
    def build(crawl_dir: str, strategy: Strategy, out: str) -> int:
        return bags_task(crawl_dir, strategy, out).stats["bags"]

    assert build(crawl, STRATEGY.to_dict(), str(tmp_path / "work")) == 3


# --- strategies with source shares (beyond the paper) -----------------------------------------------

SHARED = Strategy(sources=["anchor", "content", "outlinks"], shares=[0.5, 0.25, 0.25])


def test_a_shared_strategy_builds_each_source_and_their_share_weighted_sum(crawl, tmp_path):
    from simweb.tasks.bag_shares import SOURCES_FOLDER

    work = str(tmp_path / "work")
    out = build_bags_stage(crawl, SHARED, work, partitions=3, scheduler="sync")
    assert not out.reused and out.stats["label"] == SHARED.label and out.stats["partitions"] == 3
    # Each source's own bags stage, kept apart so that `find_bags(work)` finds the strategy's bags.
    assert sorted(out.stats["sources"]) == ["anchor", "content", "outlinks"]
    assert len(published(f"{work}/{SOURCES_FOLDER}", STAGE_BAGS)) == 3 and find_bags(work) == out.path
    assert_bags_equal(read_bags(out.path), reference_bags(PAGES_1, LINKS_1, SHARED))
    assert_bags_equal(read_bags(out.path), load_corpus(crawl).bags(SHARED).to_dicts())
    for row in pq.read_table(out.path, schema=schemas.BAGS).to_pylist():
        assert row["terms"] == sorted(set(row["terms"]))
    # c was never crawled and links nowhere: only its anchor part, half the mass.
    assert sum(read_bags(out.path).row(I("c")).values()) == pytest.approx(0.5, abs=1e-6)
    again = build_bags_stage(crawl, SHARED, work, partitions=1, scheduler="sync")
    assert again.reused  # the partitions cut the work, not the bags
    other = build_bags_stage(crawl, Strategy(sources=["anchor", "content", "outlinks"], shares=[0.2, 0.4, 0.4]),
                             work, scheduler="sync")
    assert not other.reused and other.stats["sources"]["anchor"]["path"] == out.stats["sources"]["anchor"]["path"]


def test_a_shared_strategy_refuses_a_frozen_df(crawl, tmp_path):
    from simweb.core.weighting import Weighting
    from simweb.tasks.bags.df import DfSnapshot

    snapshot = DfSnapshot(str(tmp_path / "df.parquet"), Weighting(SHARED.frequency, 1.0, 1.0, 1.0))
    with pytest.raises(ValueError, match="one df per source"):
        build_bags_stage(crawl, SHARED, str(tmp_path / "work"), scheduler="sync", df_snapshot=snapshot)


@pytest.mark.parametrize("buffer_rows", [0, 1_000_000])
def test_fragments_go_to_one_file_per_cell_in_row_groups_of_finer_cells(tmp_path, buffer_rows):
    import numpy as np

    from simweb.tasks.bags.cells import FRAGMENTS, CellFiles
    from simweb.tasks.bags.grid import file_cell, partition_files, url_ranges

    rng = np.random.default_rng(7)
    ids = np.sort(rng.integers(0, 2**64 - 1, 200_000, dtype=np.uint64, endpoint=True))
    table = pa.table({"url_id": pa.array(ids), "url": [f"u{i}" for i in ids.tolist()],
                      "term": [f"t{i % 97}" for i in range(ids.size)], "weight": np.ones(ids.size)}, schema=FRAGMENTS)
    stem = str(tmp_path / "part-links-x")
    with CellFiles(stem, 2, buffer_rows) as cells:  # two slices of one part, written at once or held back
        cells.write(table.slice(0, 100_000))
        cells.write(table.slice(100_000))
    files = sorted(str(p) for p in tmp_path.iterdir())
    assert [file_cell(f) for f in files] == [0, 1, 2, 3]
    rows = 0
    for f in files:
        meta = pq.ParquetFile(f).metadata
        rows += meta.num_rows
        cell = file_cell(f)
        groups = [meta.row_group(i).column(0).statistics for i in range(meta.num_row_groups)]
        assert all(s.min >> 62 == s.max >> 62 == cell for s in groups)  # every row in the file's cell
        # Each run of a cell (~25,000 rows a slice, ~50,000 held back) is cut at a finer grid:
        # row groups of one finer cell each, sorted by URL id.
        assert meta.num_row_groups >= 4 and all(s.min >> 61 == s.max >> 61 for s in groups)
        for i in range(meta.num_row_groups):
            run = pq.ParquetFile(f).read_row_group(i).column("url_id").to_numpy()
            assert (np.diff(run.astype(np.float64)) >= 0).all()
    assert rows == table.num_rows and pa.concat_tables(pq.read_table(f) for f in files).sort_by("url_id").equals(table)
    # A partition opens the files of its cells only: a union of cells, or a part of one.
    ranges = url_ranges(2)
    assert [file_cell(f) for f in partition_files(files, 2, *ranges[1])] == [2, 3]
    assert [file_cell(f) for f in partition_files(files, 2, *url_ranges(8)[5])] == [2]
    # No file is left when the writing fails, nor when the last held-back rows cannot be written.
    with pytest.raises(RuntimeError), CellFiles(str(tmp_path / "failed"), 2, buffer_rows) as cells:
        cells.write(table)
        raise RuntimeError("killed")
    with pytest.raises(pa.ArrowInvalid), CellFiles(str(tmp_path / "bad"), 2, 10**9) as cells:
        cells.write(table)
        cells.write(table.rename_columns(["url_id", "url", "word", "weight"]))
    assert sorted(str(p) for p in tmp_path.iterdir()) == files


def test_fragments_row_groups_hold_the_strings_they_use_alone(tmp_path):
    """Fragments arrive with a slice's dictionaries (all its URLs and terms); each row group
    written keeps only the strings of its own rows, and reads back as the same strings."""
    import numpy as np

    from simweb.tasks.bags.cells import FRAGMENT_ROWS, CellFiles

    rng = np.random.default_rng(11)
    urls = pa.array([f"http://h{i}.example/p" for i in range(5_000)])
    terms = pa.array([f"term{i}" for i in range(3_000)])
    url_at = np.sort(rng.integers(0, len(urls), 60_000)).astype(np.int32)
    ids = np.array([url_id(u) for u in urls.to_pylist()], dtype=np.uint64)
    order = np.argsort(ids[url_at], kind="stable")
    url_at = url_at[order]
    term_at = rng.integers(0, len(terms), url_at.size).astype(np.int32)
    table = pa.table({"url_id": pa.array(ids[url_at]),
                      "url": pa.DictionaryArray.from_arrays(pa.array(url_at), urls),
                      "term": pa.DictionaryArray.from_arrays(pa.array(term_at), terms),
                      "weight": rng.random(url_at.size)}, schema=FRAGMENT_ROWS)
    with CellFiles(str(tmp_path / "part-links-x"), 2, 0) as cells:
        cells.write(table.slice(0, 30_000))
        cells.write(table.slice(30_000))
    files = sorted(tmp_path.iterdir())
    assert len(files) == 4
    back = []
    for f in files:
        parquet = pq.ParquetFile(f, read_dictionary=["url", "term"])
        for i in range(parquet.metadata.num_row_groups):
            group = parquet.read_row_group(i)
            for name in ("url", "term"):
                column = group.column(name).combine_chunks()
                used = pc.unique(column.indices)
                assert len(column.dictionary) == len(used) == len(pc.unique(column.dictionary))
        back.append(pq.read_table(f))
    expected = table.cast(pa.schema([(f.name, pa.string() if f.name in ("url", "term") else f.type)
                                      for f in FRAGMENT_ROWS]))
    got = pa.concat_tables(back)
    key = [("url_id", "ascending"), ("term", "ascending"), ("weight", "ascending")]
    assert got.schema.field("url").type == pa.string()
    assert got.sort_by(key).equals(expected.cast(got.schema).sort_by(key))


@pytest.mark.parametrize("partitions", [1, 3, 4, 16])
def test_bags_are_the_same_whatever_cells_the_fragments_are_cut_into(crawl, tmp_path, monkeypatch, partitions):
    from simweb.tasks.stages import fragments as stage

    whole = build_bags_stage(crawl, STRATEGY, str(tmp_path / "one"), scheduler="sync")
    monkeypatch.setattr(stage, "fragment_level", lambda rows, size: 3)
    cut = build_bags_stage(crawl, STRATEGY, str(tmp_path / "eight"), partitions, scheduler="sync")
    (fragments,) = published(str(tmp_path / "eight"), STAGE_FRAGMENTS)
    assert fragments["stats"]["cells"] == 8 and cut.stats["partitions"] == partitions
    assert read_bags(cut.path).to_dicts() == read_bags(whole.path).to_dicts()
    assert_bags_equal(read_bags(cut.path), reference_bags(PAGES_1, LINKS_1, STRATEGY))


def test_merge_partitions_are_a_power_of_two_and_the_cells_follow_the_estimate():
    from simweb.tasks.bags.grid import FRAGMENT_MAX_CELLS, fragment_level, merge_partitions
    from simweb.tasks.bags.sizes import PartSize

    size = PartSize(16)
    per = size.fragment_rows
    assert [merge_partitions(n, size) for n in (0, 1, per, per + 1, 3 * per, 5 * per)] == [1, 1, 1, 2, 4, 8]
    assert fragment_level(3 * per, size) == 2
    assert 1 << fragment_level(10**12, size) == FRAGMENT_MAX_CELLS


def test_a_fragments_task_raises_a_low_limit_of_open_files_for_its_cells(tmp_path):
    import resource

    from simweb.tasks.bags.cells import CellFiles

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < 2048:
        pytest.skip(f"the hard limit of open files here is {hard}")
    resource.setrlimit(resource.RLIMIT_NOFILE, (512, hard))
    try:
        with CellFiles(str(tmp_path / "part"), 8):
            assert resource.getrlimit(resource.RLIMIT_NOFILE)[0] == 1024 + 4 * 256
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


@pytest.mark.parametrize("n_cols", [7, 1 << 61])  # one int64 key, or a (row, column) key when they overflow it
def test_sum_pairs_sums_equal_pairs_in_row_then_column_order(n_cols):
    import numpy as np
    import scipy.sparse as sp

    from simweb.tasks.bags.fragments import sum_pairs

    rng = np.random.default_rng(5)
    rows = rng.integers(0, 40, 5_000)
    cols = rng.integers(0, 7, 5_000)
    weights = rng.choice([0.25, 1.0, 0.1, 3.0], 5_000)
    rows, cols, weights = (np.concatenate([a, b]) for a, b in
                           ((rows, [41, 41]), (cols, [3, 3]), (weights, [2.5, -2.5])))  # one pair sums to zero
    got_rows, got_cols, got = sum_pairs(rows, cols, weights, n_cols)
    expected = sp.csr_matrix((weights, (rows, cols)), shape=(42, 7))
    expected.sum_duplicates()
    expected.eliminate_zeros()
    want_rows = np.repeat(np.arange(42), np.diff(expected.indptr))
    assert got_rows.tolist() == want_rows.tolist() and got_cols.tolist() == expected.indices.tolist()
    assert got == pytest.approx(expected.data, rel=1e-12)
    assert (41, 3) not in set(zip(got_rows.tolist(), got_cols.tolist()))
    empty = np.zeros(0, np.int64)
    assert [a.size for a in sum_pairs(empty, empty, np.zeros(0), n_cols)] == [0, 0, 0]


# ~60,000 distinct pairs: the C hash table (grown many times); ~580,000: more than its 2^17, so
# the C code sums by buckets of rows instead.
@pytest.mark.parametrize("n, n_rows, n_cols", [(300_000, 3_000, 20), (600_000, 5_000, 2_000)])
def test_sum_pairs_in_c_gives_arrows_sums_bit_for_bit(n, n_rows, n_cols):
    import numpy as np

    from simweb.tasks.bags import fragments as bags_stage

    if bags_stage._c_sum_pairs is None:
        pytest.skip("simweb.core._gather is not built (no C compiler at install)")
    rng = np.random.default_rng(11)
    rows = rng.integers(0, n_rows, n)
    cols = rng.integers(0, n_cols, n)
    weights = rng.random(n) * rng.choice([1.0, 5.0, 0.37], n)  # sums whose rounding depends on the order
    rows, cols, weights = (np.concatenate([a, b]) for a, b in  # a pair summing to zero, left out
                           ((rows, [n_rows, n_rows]), (cols, [3, 3]), (weights, [2.5, -2.5])))
    with_c = bags_stage.sum_pairs(rows, cols, weights, n_cols)
    with_arrow = bags_stage.sum_pairs_in_arrow(rows, cols, weights, n_cols)
    assert with_c[0].size > (50_000 if n_cols == 20 else 1 << 17)
    for a, b in zip(with_c, with_arrow):
        assert a.tobytes() == b.tobytes()
    assert n_rows not in with_c[0]


@pytest.mark.parametrize("rows, cols, why", [([0, -1], [0, 0], "row outside"), ([0, 1 << 58], [0, 0], "row outside"),
                                             ([0, 1], [0, 20], "column outside")])
def test_sum_pairs_in_c_refuses_pairs_outside_the_columns(rows, cols, why):
    import numpy as np

    from simweb.tasks.bags import fragments as bags_stage

    if bags_stage._c_sum_pairs is None:
        pytest.skip("simweb.core._gather is not built (no C compiler at install)")
    with pytest.raises(ValueError, match=why):
        bags_stage._c_sum_pairs(np.array(rows, np.int64), np.array(cols, np.int64), np.ones(2), 20)


def test_fragments_tasks_are_handed_out_largest_first_a_pages_part_weighing_less_a_byte(tmp_path):
    def part(name, size):
        path = tmp_path / name
        path.write_bytes(b"x" * size)
        return str(path)

    pages = [(fragments_of_pages_part, part("p1", 100), ()), (fragments_of_pages_part, part("p2", 30), ())]
    links = [(fragments_of_links_part, part("l1", 20), ()), (fragments_of_links_part, part("l2", 40), ())]
    missing = (fragments_of_links_part, str(tmp_path / "gone"), ())  # its error comes when it runs
    order = largest_first(pages + links + [missing], STRATEGY)
    # With anchor windows a links byte costs four pages bytes: 40, 25 (p1), 20, 7.5 (p2), 0.
    assert [u.rsplit("/", 1)[1] for _, u, _ in order] == ["l2", "p1", "l1", "p2", "gone"]
    content = largest_first(pages + links, Strategy(sources=["content"]))
    assert [u.rsplit("/", 1)[1] for _, u, _ in content] == ["p1", "l2", "p2", "l1"]
