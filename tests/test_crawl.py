"""The one reader of a crawl folder (simweb.tasks.crawl): duplicate copies and the crawl selection.

WARC files are written with warcio and ingested; every stage that reads a crawl must see the
same pages and links — the bags stage, the evaluation's corpus, the link graph, the index's
titles and in-degrees, the near-duplicate report and the incremental update.
"""
from __future__ import annotations

import io
import json
import os
import shutil
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from simweb.core.bag_reference import LINK_PREFIX
from simweb.core.strategy import Strategy
from simweb.core.urls import url_id
from simweb.core.weighting import Weighting
from simweb.tasks import schemas
from simweb.tasks.bag_reader import read_bags
from simweb.tasks.bags.df import DfSnapshot
from simweb.tasks.crawl.copies import duplicate_copies
from simweb.tasks.crawl.corpus import load_corpus
from simweb.tasks.crawl.degrees import in_degrees
from simweb.tasks.crawl.graph import load_link_graph
from simweb.tasks.crawl.parts import count_page_rows, crawl_identity, crawl_parts
from simweb.tasks.crawl.selection import SELECTION_FILE, read_selection, write_selection
from simweb.tasks.crawl.tables import link_targets, page_titles, unique_pages
from simweb.tasks.crawl.tfidf import content_tfidf
from simweb.tasks.dedup import find_duplicates
from simweb.tasks.incremental import touched_bags
from simweb.tasks.ingest.files import ingest_files, part_name
from simweb.tasks.overlap import estimate_crawl_overlap
from simweb.tasks.stages.bags import build_bags_stage
from simweb.tasks.stages.eval_strategies import EvaluationInputs
from simweb.tasks.stages.weighting import DF_FILE
from simweb.tasks.storage import file_digest, join, write_parquet_atomic

STRATEGIES = ("anchor:8+content+links,nostem,dist", "links", "content,stem")


def U(name: str) -> str:
    return f"http://{name}.example/"


def I(name: str) -> int:
    return url_id(U(name))


def page(title: str, words: str, links: dict[str, str]) -> bytes:
    anchors = " ".join(f'<a href="{U(t)}">{text}</a>' for t, text in links.items())
    return f"<html><head><title>{title}</title></head><body><p>{words} {anchors} closing words</p></body></html>".encode()


def write_warc(path: Path, pages: dict[str, bytes], date: str = "2020-01-01T00:00:00Z") -> Path:
    with open(path, "wb") as f:
        writer = WARCWriter(f, gzip=True)
        for name, body in pages.items():
            headers = StatusAndHeaders("200 OK", [("Content-Type", "text/html; charset=utf-8")], protocol="HTTP/1.1")
            writer.write_record(writer.create_warc_record(U(name), "response", payload=io.BytesIO(body),
                                                          http_headers=headers, warc_headers_dict={"WARC-Date": date}))
    return path


def assert_same_bags(stage, memory, tol=1e-6) -> None:
    """The bags stage stores float32 weights; the in-memory corpus float64."""
    a, b = stage.to_dicts(), memory.to_dicts()
    assert set(a) == set(b)
    for u, (url, bag) in b.items():
        assert a[u][0] == url
        assert a[u][1] == pytest.approx(bag, rel=tol, abs=tol)


# -- A page crawled in two WARC files -------------------------------------------------------------

HUB_KEPT = page("hub kept", "kept copy words", {"t1": "first target", "t2": "second target"})
HUB_LATER = page("hub later", "later copy words", {"t3": "zqxonlyinthecopy", "t1": "copy anchor"})


@pytest.fixture(scope="module")
def twice(tmp_path_factory) -> dict:
    """The hub page in two WARC files. The copy captured last (its copy is kept) is in the file
    whose name sorts first and in the part that sorts last, so keeping "the last file's copy" or
    "the first part's copy" would keep the wrong one."""
    root = tmp_path_factory.mktemp("twice")
    while True:  # the record ids are random: write until the 2024 capture's part sorts last
        one = write_warc(root / "one.warc.gz", {"hub": HUB_KEPT, "t1": page("t1", "target one", {}),
                                                "t2": page("t2", "target two", {"t1": "sibling"})},
                         date="2024-05-01T00:00:00Z")
        two = write_warc(root / "two.warc.gz", {"hub": HUB_LATER, "t3": page("t3", "target three", {"hub": "back"})},
                         date="2020-05-01T00:00:00Z")
        if part_name(file_digest(str(one))) > part_name(file_digest(str(two))):
            break
    os.rename(one, root / "a.warc.gz")
    os.rename(two, root / "b.warc.gz")
    crawl = root / "crawl"
    stats = ingest_files([str(root / "a.warc.gz"), str(root / "b.warc.gz")], str(crawl))
    assert stats.pages_written == 5
    return {"crawl": str(crawl), "kept_words": "kept"}


def test_the_copy_kept_is_the_latest_capture_not_by_source_file_or_part(twice):
    found = crawl_parts(twice["crawl"])
    copies = duplicate_copies(found.pages)
    # The copy dropped is in the part that sorts first.
    assert copies.of(found.pages[0]).tolist() == [I("hub")]
    assert copies.of(found.pages[1]).size == 0
    pages, repeated = unique_pages(twice["crawl"], ["url", "words"])
    assert repeated == 1 and pages.num_rows == 4
    [hub_words] = [w for u, w in zip(pages.column("url").to_pylist(), pages.column("words").to_pylist())
                   if u == U("hub")]
    assert twice["kept_words"] in hub_words


def test_bags_stage_evaluation_corpus_and_link_graph_agree(twice, tmp_path):
    crawl = twice["crawl"]
    corpus = load_corpus(crawl)
    every = corpus.url_ids
    evaluation = EvaluationInputs(crawl, every, exclude=lambda url: False, work=str(tmp_path / "eval"))
    for spec in STRATEGIES:
        stage = build_bags_stage(crawl, Strategy.parse(spec), str(tmp_path / "work"), scheduler="sync")
        assert_same_bags(read_bags(stage.path), corpus.bags(Strategy.parse(spec)))
        assert_same_bags(evaluation.bags(Strategy.parse(spec)), corpus.bags(Strategy.parse(spec)))
    # The link-id terms of the bags are exactly the graph's in-links.
    links = read_bags(build_bags_stage(crawl, Strategy.parse("links"), str(tmp_path / "work"),
                                       scheduler="sync").path).to_dicts()
    graph, _ = evaluation.graph()
    in_links = {}
    for node in range(graph.graph.n_nodes):
        sources = graph.graph.in_links[node].indices
        if sources.size:
            in_links[int(graph.graph.ids[node])] = {LINK_PREFIX + graph.urls[int(graph.graph.ids[s])] for s in sources}
    assert {u: set(bag) for u, (_, bag) in links.items()} == in_links
    # Only one copy of the hub's links counts: the kept copy's.
    hub_targets = set(in_links) - {I("hub")}
    expected = {I("t1"), I("t2")} if twice["kept_words"] == "kept" else {I("t3"), I("t1")}
    assert {t for t in hub_targets if LINK_PREFIX + U("hub") in in_links[t]} == expected
    assert graph.counts["links_of_duplicate_copies"] == 2


def test_out_links_and_source_shares_agree_in_the_bags_stage_the_evaluation_and_the_corpus(twice, tmp_path):
    # The out-link source and a strategy with source shares: the bags stage (each source's bags,
    # then their share-weighted sum), the evaluation's sample bags (each source's sample bags,
    # added the same way) and the in-memory corpus give the same bags.
    crawl = twice["crawl"]
    corpus = load_corpus(crawl)
    evaluation = EvaluationInputs(crawl, corpus.url_ids, exclude=lambda url: False, work=str(tmp_path / "eval"))
    for spec in ("outlinks", "anchor:8@0.5+content@0.25+outlinks@0.25,nostem,dist"):
        strategy = Strategy.parse(spec)
        stage = build_bags_stage(crawl, strategy, str(tmp_path / "work"), partitions=2, scheduler="sync")
        assert_same_bags(read_bags(stage.path), corpus.bags(strategy))
        assert_same_bags(evaluation.bags(strategy), corpus.bags(strategy))
    hub = corpus.bags(Strategy.parse("outlinks")).row(I("hub"))
    targets = ("t1", "t2") if twice["kept_words"] == "kept" else ("t3", "t1")
    assert set(hub) == {"outlink:" + U(t) for t in targets}  # only the kept copy's links count


def test_sampling_dedup_titles_and_in_degrees_see_one_copy(twice):
    crawl = twice["crawl"]
    linked, counts = link_targets(crawl)
    only_in_copy = I("t3") if twice["kept_words"] == "kept" else I("t2")
    assert {url_id(u) for u in linked} == {I(n) for n in ("t1", "t2", "t3", "hub")} - {only_in_copy}
    assert counts["duplicate_copies"] == 1 and counts["links_of_duplicate_copies"] == 2
    titles = dict(zip(*(page_titles(crawl).column(c).to_pylist() for c in ("url_id", "title"))))
    assert titles[I("hub")] == ("hub kept" if twice["kept_words"] == "kept" else "hub later")
    degree = dict(zip(*(in_degrees(crawl).column(c).to_pylist() for c in ("url_id", "in_degree"))))
    assert only_in_copy not in degree
    report = find_duplicates(crawl)
    assert report.counts["pages"] == 4 and report.counts["repeated_urls"] == 1
    overlap = estimate_crawl_overlap(crawl, crawl)
    assert len(overlap.a.crawl.urls) + overlap.a.crawl.without_words == 4 and overlap.a.crawl.repeated_urls == 1
    assert count_page_rows(crawl) == 5  # the measure of growth counts every row


# -- The crawl selection --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def pool(tmp_path_factory) -> dict:
    """Parts of three WARC files in one crawl folder; a copy of the folder holding two of them."""
    root = tmp_path_factory.mktemp("pool")
    files = {
        "x": {"x1": page("x one", "alpha words", {"x2": "x link", "y1": "cross"}), "x2": page("x two", "beta", {})},
        "y": {"y1": page("y one", "gamma words", {"x1": "back"}), "y2": page("y two", "delta", {"y1": "y link"})},
        "z": {"z1": page("z one", "epsilon words", {"x1": "from z", "z2": "z link"}), "z2": page("z two", "zeta", {})},
    }
    crawl, two = root / "crawl", root / "two"
    parts = {}
    for name, pages in files.items():
        path = write_warc(root / f"{name}.warc.gz", pages)
        ingest_files([str(path)], str(crawl))
        parts[name] = part_name(file_digest(str(path)))
        if name != "z":
            ingest_files([str(path)], str(two))
    return {"crawl": str(crawl), "two": str(two), "parts": parts}


def test_a_selection_limits_every_reader_to_its_parts(pool, tmp_path):
    crawl = str(tmp_path / "crawl")
    shutil.copytree(pool["crawl"], crawl)
    assert len(crawl_parts(crawl).pages) == 3 and read_selection(crawl) is None
    write_selection(crawl, [pool["parts"]["y"], pool["parts"]["x"]])
    assert read_selection(crawl) == tuple(sorted([pool["parts"]["x"], pool["parts"]["y"]]))
    assert json.loads((Path(crawl) / SELECTION_FILE).read_text())["format"] == 1
    pages = {U(n) for n in ("x1", "x2", "y1", "y2")}
    found = crawl_parts(crawl)
    assert found.selected and len(found.pages) == len(found.links) == 2
    # The evaluation's corpus, the bags stage and the reference of two files alone.
    evaluation = EvaluationInputs(crawl, np.array([I("x1"), I("z1")], np.uint64), exclude=lambda url: False,
                                  work=str(tmp_path / "eval"))
    every = np.array([I(n) for n in ("x1", "x2", "y1", "y2", "z1", "z2")], np.uint64)
    whole = EvaluationInputs(crawl, every, exclude=lambda url: False, work=str(tmp_path / "eval"))
    assert set(whole.bags(Strategy.parse("content,stem")).urls) == pages
    for spec in STRATEGIES:
        strategy = Strategy.parse(spec)
        stage = build_bags_stage(crawl, strategy, str(tmp_path / "work"), scheduler="sync")
        assert_same_bags(read_bags(stage.path), load_corpus(pool["two"]).bags(strategy))
        assert stage.stats["pages"] == 4 and stage.stats["links"] == 4
    # Links: the sample's linked URLs, the link graph (the evaluation's and related --measure's),
    # in-degrees; pages: titles, the evaluation's TF-IDF, dedup.
    linked, counts = link_targets(crawl)
    assert linked == {U(n) for n in ("x1", "x2", "y1")} and counts["pages"] == 4
    for graph in (load_link_graph(crawl), evaluation.graph()[0]):
        assert set(graph.urls.values()) == pages and graph.graph.n_edges == 4
    assert {url_id(u) for u in pages} >= set(in_degrees(crawl).column("url_id").to_pylist())
    assert set(page_titles(crawl).column("url_id").to_pylist()) == {url_id(u) for u in pages}
    vectors, rows = evaluation.vectors()
    assert vectors.shape[0] == 2 and rows.tolist() == [0, 1]  # x1's page, and z1 not in the crawl: the zero row
    vectors, rows = content_tfidf(crawl, every)
    assert vectors.shape[0] == 5 and rows.tolist()[4:] == [4, 4]  # the z pages are not in the selection
    assert find_duplicates(crawl).counts["pages"] == 4
    assert count_page_rows(crawl) == 4
    # An incremental update rebuilds touched bags from the selected parts only.
    stage = build_bags_stage(crawl, Strategy(), str(tmp_path / "work"), scheduler="sync")
    snapshot = DfSnapshot(join(stage.path, DF_FILE), Weighting.from_dict(stage.stats["weighting"]))
    every = np.array([I(n) for n in ("x1", "x2", "y1", "y2", "z1", "z2")], np.uint64)
    (tmp_path / "delta").mkdir()
    touched_bags(crawl, Strategy(), every, snapshot, str(tmp_path / "delta"))
    rebuilt = pq.read_table(tmp_path / "delta" / "part-00000.parquet").column("url").to_pylist()
    assert set(rebuilt) == set(read_bags(stage.path).urls) <= pages


def test_the_bags_key_follows_the_selected_parts_only(pool, tmp_path):
    crawl = str(tmp_path / "crawl")
    shutil.copytree(pool["crawl"], crawl)
    write_selection(crawl, [pool["parts"]["x"], pool["parts"]["y"]])
    strategy = Strategy.parse("anchor:8")
    selected = build_bags_stage(crawl, strategy, str(tmp_path / "work"), scheduler="sync")
    # The folder holding only those two parts has the same identity: the work is reused.
    assert crawl_identity(crawl) == crawl_identity(pool["two"])
    assert build_bags_stage(pool["two"], strategy, str(tmp_path / "work"), scheduler="sync").reused
    # Another selection, or none, is another crawl.
    write_selection(crawl, [pool["parts"]["x"], pool["parts"]["z"]])
    other = build_bags_stage(crawl, strategy, str(tmp_path / "work"), scheduler="sync")
    assert not other.reused and other.path != selected.path
    os.remove(Path(crawl) / SELECTION_FILE)
    assert crawl_identity(crawl) == crawl_identity(pool["crawl"]) != crawl_identity(pool["two"])


def test_a_missing_or_bad_selection_says_what_to_do(pool, tmp_path):
    crawl = tmp_path / "crawl"
    shutil.copytree(pool["crawl"], crawl)
    write_selection(str(crawl), [pool["parts"]["x"], "part-00000000000000ff"])
    with pytest.raises(FileNotFoundError, match=r"names part-00000000000000ff, but .*missing; re-run the build"):
        crawl_parts(str(crawl))
    with pytest.raises(FileNotFoundError, match="part-00000000000000ff"):
        load_corpus(str(crawl))
    with pytest.raises(ValueError, match="part-<16 hex digits>"):
        write_selection(str(crawl), ["pages/part-x.parquet"])
    (crawl / SELECTION_FILE).write_text('{"parts": "all"}')
    with pytest.raises(ValueError, match="expected .*format.*delete it to read every part"):
        crawl_parts(str(crawl))
    write_selection(str(crawl), [])
    with pytest.raises(FileNotFoundError, match="no ingested crawl"):
        crawl_parts(str(crawl))


# -- Property: exactly one capture of each URL survives, the latest by (date, source_file, offset) --

STAMPS = ["", "20200101000000", "20240101000000"]  # "": no valid WARC-Date, older than any date
copies_st = st.lists(st.tuples(st.integers(0, 5), st.integers(0, 3), st.sampled_from(["a.warc", "b.warc", "c.warc"]),
                               st.integers(0, 50), st.sampled_from(STAMPS)), min_size=1, max_size=25)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=copies_st, as_of=st.sampled_from([None, "20210101000000"]))
def test_duplicate_copies_keep_one_capture_the_latest_by_date_source_and_offset(tmp_path_factory, rows, as_of):
    """rows: (url, part, source_file, record_offset, timestamp); within a part a URL appears once
    (as the ingest writes). Read as of a date, the captures after it are left out."""
    folder = tmp_path_factory.mktemp("copies")
    by_part: dict[int, dict[int, tuple[str, int, str]]] = {}
    for url, part, source, offset, stamp in rows:
        by_part.setdefault(part, {}).setdefault(url, (source, offset, stamp))
    files = []
    for part, pages in sorted(by_part.items()):
        table = pa.table({
            "url_id": pa.array([url_id(U(f"u{u}")) for u in pages], pa.uint64()),
            "source_file": [s for s, _, _ in pages.values()],
            "record_offset": pa.array([o for _, o, _ in pages.values()], pa.int64()),
            "timestamp": [t for _, _, t in pages.values()],
        })
        files.append(write_parquet_atomic(table, str(folder / f"part-{part:016x}.parquet")))
    copies = duplicate_copies(files, as_of=as_of)
    kept: dict[int, list[tuple[str, str, int, int]]] = {}
    for part, pages in sorted(by_part.items()):
        dropped = set(copies.of(files[sorted(by_part).index(part)]).tolist())
        for u, (source, offset, stamp) in pages.items():
            if url_id(U(f"u{u}")) not in dropped:
                kept.setdefault(u, []).append((stamp or "0" * 14, source, offset, part))
    every = {u: [(t or "0" * 14, s, o, p) for p, pages in by_part.items() for v, (s, o, t) in pages.items()
                 if v == u and (as_of is None or (t or "0" * 14) <= as_of)]
             for u in {u for pages in by_part.values() for u in pages}}
    every = {u: captures for u, captures in every.items() if captures}
    assert set(kept) == set(every)
    for u, survivors in kept.items():
        assert survivors == [max(every[u])]


def test_parts_of_another_schema_are_refused_with_the_fix(pool, tmp_path):
    crawl = tmp_path / "crawl"
    shutil.copytree(pool["two"], crawl)
    part = sorted((crawl / "pages").glob("*.parquet"))[0]
    table = pq.read_table(part)
    table = table.set_column(table.schema.get_field_index("record_offset"), "record_offset",
                             table.column("record_offset").cast(pa.int32()))
    pq.write_table(table, part)
    with pytest.raises(ValueError, match="record_offset.*expected int64, found int32.*re-run `simweb ingest`"):
        load_corpus(str(crawl))
    assert schemas.PAGES.field("record_offset").type == pa.int64()


# -- In-degrees: the first link of each source to each target, in C ---------------------------------


def _links_table(runs: list[tuple[int, list[int]]]) -> pa.Table:
    sources = [s for s, targets in runs for _ in targets]
    targets = [t for _, ts in runs for t in ts]
    return pa.table({"source_id": pa.array(sources, pa.uint64()), "target_id": pa.array(targets, pa.uint64())})


def _sorted_counts(table: pa.Table) -> list[tuple[int, int]]:
    return sorted(zip(table.column("url_id").to_pylist(), table.column("in_degree").to_pylist()))


_ids = st.integers(0, 40) | st.integers(2**64 - 3, 2**64 - 1)  # few ids (repeats, self links), and the top


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(_ids, st.lists(_ids, max_size=60)), max_size=40, unique_by=lambda run: run[0]))
def test_link_counts_in_c_are_arrows_counts(runs):
    from simweb.tasks.crawl import degrees as crawl_module

    if crawl_module._c_first_links is None:
        pytest.skip("simweb.core._gather is not built (no C compiler at install)")
    links = _links_table(runs)
    first = np.empty(links.num_rows, np.uint8)
    marked = crawl_module._c_first_links(links.column("source_id").to_numpy(), links.column("target_id").to_numpy(),
                                         first)
    # Each page's links lie next to each other: the C path is the one taken.
    expected = {(s, t) for s, targets in runs for t in targets if t != s}
    assert marked == len(expected) == int(first.sum())
    assert _sorted_counts(crawl_module.link_counts(links)) == _sorted_counts(crawl_module._link_counts_grouped(links))


def test_link_counts_in_c_grow_their_tables_and_mark_each_first_link():
    from simweb.tasks.crawl import degrees as crawl_module

    if crawl_module._c_first_links is None:
        pytest.skip("simweb.core._gather is not built (no C compiler at install)")
    rng = np.random.default_rng(5)
    # 5,000 pages (the table of finished sources grows from 1,024 slots), one with 20,000 links
    # (the table of a run's targets grows), repeated targets and self links throughout.
    runs = [(int(s), rng.integers(0, 3_000, int(n)).tolist()) for s, n in
            zip(rng.permutation(6_000)[:5_000], rng.integers(0, 12, 5_000))]
    runs[2_500] = (runs[2_500][0], rng.integers(0, 9_000, 20_000).tolist() + [runs[2_500][0]] * 3)
    links = _links_table(runs)
    first = np.empty(links.num_rows, np.uint8)
    crawl_module._c_first_links(links.column("source_id").to_numpy(), links.column("target_id").to_numpy(), first)
    seen, want = set(), []
    for s, t in zip(links.column("source_id").to_pylist(), links.column("target_id").to_pylist()):
        want.append(int(s != t and (s, t) not in seen))
        seen.add((s, t))
    assert first.tolist() == want
    assert _sorted_counts(crawl_module.link_counts(links)) == _sorted_counts(crawl_module._link_counts_grouped(links))


def test_link_counts_of_a_part_not_written_page_by_page_are_counted_by_arrow():
    from simweb.tasks.crawl import degrees as crawl_module

    if crawl_module._c_first_links is None:
        pytest.skip("simweb.core._gather is not built (no C compiler at install)")
    # Page 1's links in two runs: its second link to 7 must not count twice.
    links = _links_table([(1, [7, 8]), (2, [7]), (1, [7, 9])])
    sources, targets = links.column("source_id").to_numpy(), links.column("target_id").to_numpy()
    assert crawl_module._c_first_links(sources, targets, np.empty(links.num_rows, np.uint8)) == -1
    assert _sorted_counts(crawl_module.link_counts(links)) == [(7, 2), (8, 1), (9, 1)]
    with pytest.raises(ValueError, match="first links"):
        crawl_module._c_first_links(sources, targets[:-1], np.empty(links.num_rows, np.uint8))


@pytest.mark.parametrize("batch", [1, 2, 3, 1 << 20])
def test_in_degrees_read_in_batches_count_what_a_whole_part_counts(twice, pool, monkeypatch, batch):
    # A batch never splits a page's links (the C count marks a source's first link to a target in
    # its run), so any batch size gives the counts of the whole parts, duplicate copies left out.
    from simweb.tasks.crawl import degrees as crawl_module

    want = {name: _sorted_counts(in_degrees(fixture["crawl"])) for name, fixture in (("twice", twice), ("pool", pool))}
    monkeypatch.setattr(crawl_module, "LINK_BATCH", batch)
    for name, fixture in (("twice", twice), ("pool", pool)):
        assert _sorted_counts(in_degrees(fixture["crawl"])) == want[name]
    assert dict(want["pool"])[I("x1")] == 2  # from y1 and z1


def test_in_degrees_of_a_part_whose_pages_links_are_apart_count_each_pair_once(tmp_path, monkeypatch):
    # A links part not written page by page: page a's link to b twice, apart, with b's links between
    # and after, then page c's. Read a link at a time, a count per batch would count a → b twice; the part is counted whole.
    from simweb.tasks.crawl import degrees as crawl_module

    path = write_warc(tmp_path / "ab.warc.gz", {"a": page("a", "words", {"b": "one", "c": "two"}),
                                                 "b": page("b", "words", {"a": "back", "c": "three"}),
                                                 "c": page("c", "words", {"a": "four"})})
    crawl = tmp_path / "crawl"
    ingest_files([str(path)], str(crawl))
    (part,) = crawl_parts(str(crawl)).links
    table = pq.read_table(part)
    sources = table.column("source_id").to_pylist()
    a_rows = [i for i, s in enumerate(sources) if s == I("a")]
    b_rows = [i for i, s in enumerate(sources) if s == I("b")]
    c_rows = [i for i, s in enumerate(sources) if s == I("c")]
    order = [a_rows[0], b_rows[0], a_rows[0], b_rows[1], a_rows[1], *c_rows]  # a → b, b, a → b again, b, a, c
    pq.write_table(table.take(pa.array(order)), part)
    monkeypatch.setattr(crawl_module, "LINK_BATCH", 1)
    degree = dict(_sorted_counts(in_degrees(str(crawl))))
    assert degree[I("b")] == 1 and degree[I("c")] == 2 and degree[I("a")] == 2
