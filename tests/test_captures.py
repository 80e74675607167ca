"""Captures over time: the page of a URL is its latest capture by WARC-Date, in a full build
whatever the files' names, through the inbox whatever the order the files arrive in, and as of
a date; a latest capture answering 404 takes the page out. Real WARC files written with warcio,
built and queried through the Python API a user calls (simweb.open_index, the build-index and
ingest-new-crawl flows run in this process)."""
from __future__ import annotations

import io
from pathlib import Path

import pytest
from hypothesis import HealthCheck, Phase, example, given, settings
from hypothesis import strategies as st
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

import simweb
from simweb.cli import main
from simweb.flows.build_index import build_index
from simweb.flows.ingest_new_crawl import ingest_new_crawl
from simweb.tasks import index_store as store

SITE = "http://site.example/"
A, B, C = SITE + "alpha.html", SITE + "beta.html", SITE + "gamma.html"


def page(title: str, words: str, links: dict[str, str]) -> bytes:
    anchors = " ".join(f'<a href="{url}">{text}</a>' for url, text in links.items())
    return f"<html><head><title>{title}</title></head><body><p>{words}</p>{anchors}</body></html>".encode()


REVISIT = None  # a revisit record of an earlier capture (its digest unknown: the latest page before it)


def write_warc(path: Path, date: str, captures: dict[str, bytes | int | str | None]) -> Path:
    """A WARC file of captures dated ``date``: a page (HTML bytes), a status without a page
    (an int: 404, 410), a redirect (a str: its Location) or a revisit (:data:`REVISIT`)."""
    with open(path, "wb") as f:
        writer = WARCWriter(f, gzip=True)
        for url, what in captures.items():
            if what is REVISIT:
                writer.write_record(writer.create_revisit_record(url, "sha1:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", url, date,
                                                                 warc_headers_dict={"WARC-Date": date}))
                continue
            if isinstance(what, bytes):
                http = StatusAndHeaders("200 OK", [("Content-Type", "text/html; charset=utf-8")], protocol="HTTP/1.1")
                body = what
            elif isinstance(what, int):
                http = StatusAndHeaders(f"{what} Gone", [("Content-Type", "text/html")], protocol="HTTP/1.1")
                body = b"<html><body>not here</body></html>"
            else:
                http = StatusAndHeaders("301 Moved Permanently", [("Location", what)], protocol="HTTP/1.1")
                body = b""
            writer.write_record(writer.create_warc_record(url, "response", payload=io.BytesIO(body), http_headers=http,
                                                          warc_headers_dict={"WARC-Date": date}))
    return path


WORD = {2020: "zephyr", 2024: "quasar"}  # a word of each year's captures only


def year_crawl(year: int) -> dict[str, bytes]:
    """The three pages as captured in ``year``: the same topic, words and titles of that year."""
    word = WORD[year]
    return {
        A: page(f"Alpha {year}", f"shared topic words orchard apple {word} alpha{word}", {B: f"beta {word}"}),
        B: page(f"Beta {year}", f"shared topic words orchard apple {word} beta{word}", {A: f"alpha {word}"}),
        C: page(f"Gamma {year}", f"shared topic words orchard apple {word} gamma{word}", {}),
    }


@pytest.fixture(scope="module")
def crawls(tmp_path_factory) -> dict[str, Path]:
    """The 2020 and 2024 crawls under both name orders, and a 2025 crawl in which gamma is gone."""
    root = tmp_path_factory.mktemp("captures")
    made = {}
    for order, (old, new) in {"old-first": ("a", "b"), "new-first": ("b", "a")}.items():
        folder = root / order
        folder.mkdir()
        made[order] = [write_warc(folder / f"{old}.warc.gz", "2020-06-01T00:00:00Z", year_crawl(2020)),
                       write_warc(folder / f"{new}.warc.gz", "2024-06-01T00:00:00Z", year_crawl(2024))]
    made["gone"] = write_warc(root / "gone.warc.gz", "2025-06-01T00:00:00Z", {C: 404})
    return made


def answers(out: Path, url: str = A) -> list[tuple[str, str]]:
    return [(r.url, r.title) for r in simweb.open_index(str(out)).related(url, top=10, alpha=0.05)]


def words(out: Path, url: str) -> set[str]:
    return set(simweb.open_index(str(out)).bag(url))


def assert_answers_of(out: Path, year: int) -> None:
    other = 2020 if year == 2024 else 2024
    found = answers(out)
    assert {url for url, _ in found} == {B, C}
    assert all(str(year) in title and str(other) not in title for _, title in found), found
    assert WORD[year] in words(out, A) and f"alpha{WORD[year]}" in words(out, A)
    assert not any(WORD[other] in term for term in words(out, A))


@pytest.mark.parametrize("order", ["old-first", "new-first"])
def test_a_full_build_answers_with_the_latest_capture_whatever_the_file_names(crawls, tmp_path, order):
    out = tmp_path / "index"
    build_index.fn([str(p) for p in crawls[order]], str(out))
    assert_answers_of(out, 2024)


@pytest.mark.parametrize("first", [0, 1])
def test_the_inbox_agrees_with_a_full_build_whatever_arrives_first(crawls, tmp_path, first):
    """2020 built then 2024 through the inbox, or 2024 built then 2020: the 2024 capture counts."""
    files = crawls["old-first"]
    out, inbox = tmp_path / "index", tmp_path / "inbox"
    inbox.mkdir()
    build_index.fn([str(files[first])], str(out))
    (inbox / files[1 - first].name).write_bytes(files[1 - first].read_bytes())
    ingest_new_crawl.fn(str(inbox), str(out), settle_seconds=0)
    assert_answers_of(out, 2024)


def test_a_page_whose_latest_capture_is_a_404_is_no_longer_answered(crawls, tmp_path):
    out, inbox = tmp_path / "index", tmp_path / "inbox"
    inbox.mkdir()
    build_index.fn([str(p) for p in crawls["old-first"]], str(out))
    assert C in {url for url, _ in answers(out)}
    (inbox / "gone.warc.gz").write_bytes(crawls["gone"].read_bytes())
    ingest_new_crawl.fn(str(inbox), str(out), settle_seconds=0)
    assert {url for url, _ in answers(out)} == {B}
    with pytest.raises(simweb.UnknownURL):
        simweb.open_index(str(out)).related(C)


def test_a_gone_page_that_other_pages_still_link_to_is_neither_answered_nor_returned(tmp_path):
    """Gamma answers 404 in 2025 while alpha and beta still link to it: no document, through the
    inbox as in a full build; the links to it still count in the linking pages' own bags (their
    out-link ids). Captured again in 2026, it is back."""
    from simweb.core.strategy import Strategy

    word = WORD[2024]
    linked = {A: page("Alpha", f"shared topic words orchard apple {word} alpha", {B: "beta words", C: "gamma orchard"}),
              B: page("Beta", f"shared topic words orchard apple {word} beta", {A: "alpha words", C: "gamma apple"}),
              C: page("Gamma", f"shared topic words orchard apple {word} gamma", {A: "alpha"})}
    crawl = write_warc(tmp_path / "a.warc.gz", "2024-06-01T00:00:00Z", linked)
    gone = write_warc(tmp_path / "gone.warc.gz", "2025-06-01T00:00:00Z", {C: 404})
    back = write_warc(tmp_path / "back.warc.gz", "2026-06-01T00:00:00Z", {C: linked[C]})
    out, inbox, rebuilt, outlinks = tmp_path / "index", tmp_path / "inbox", tmp_path / "rebuilt", tmp_path / "outlinks"
    inbox.mkdir()
    build_index.fn([str(crawl)], str(out))
    assert C in {url for url, _ in answers(out)}
    (inbox / gone.name).write_bytes(gone.read_bytes())
    ingest_new_crawl.fn(str(inbox), str(out), settle_seconds=0)
    build_index.fn([str(crawl), str(gone)], str(rebuilt))
    build_index.fn([str(crawl), str(gone)], str(outlinks), strategy=Strategy.parse("anchor:32+content+outlinks"))
    for index in (out, rebuilt, outlinks):
        assert {url for url, _ in answers(index)} == {B}
        with pytest.raises(simweb.UnknownURL):
            simweb.open_index(str(index)).related(C)
    assert f"outlink:{C}" in words(outlinks, A) and f"outlink:{C}" in words(outlinks, B)
    (inbox / back.name).write_bytes(back.read_bytes())
    ingest_new_crawl.fn(str(inbox), str(out), settle_seconds=0)
    assert {url for url, _ in answers(out)} == {B, C}
    assert "gamma" in words(out, C)


# -- Property: any arrival order and split of the files gives the full build's bags and signatures --

VOCABULARY = ["orchard", "apple", "quince", "medlar", "sorrel", "thyme"]
URLS = [SITE + f"p{i}.html" for i in range(4)]
P0, P1, P2, P3 = URLS
HOME = SITE  # captured in every file, linking to P0 and P1, so that every build has pages
DATES = ["2019-01-01T00:00:00Z", "2020-01-01T00:00:00Z", "2021-01-01T00:00:00Z"]
D2019, D2020, D2021 = DATES

capture_st = st.one_of(
    st.sampled_from([404, 410]), st.just(REVISIT), st.sampled_from(URLS),
    st.tuples(st.lists(st.sampled_from(VOCABULARY), min_size=2, max_size=5),
              st.lists(st.sampled_from(URLS), max_size=2)),
)
file_st = st.tuples(st.sampled_from(DATES), st.dictionaries(st.sampled_from(URLS), capture_st, min_size=1, max_size=4))
#: The files, the order they arrive in (indices) and how many of the first a build makes the index of.
arrivals_st = st.lists(file_st, min_size=2, max_size=4).flatmap(
    lambda files: st.tuples(st.just(files), st.permutations(range(len(files))), st.integers(1, len(files) - 1)))


def _capture(url: str, what) -> bytes | int | str | None:
    if what in (404, 410) or what is REVISIT or isinstance(what, str):
        return what
    words, links = what
    name = url.rsplit("/", 1)[-1]
    return page(f"{name} {' '.join(words[:2])}", " ".join(words), {u: f"{words[0]} link" for u in links if u != url})


def _gone(files: list, order: list[int], built: int, root: Path) -> set[str]:
    """The URLs whose latest capture answered 404 or 410: by WARC-Date, then the file's path (a
    build reads ``root``'s files, the inbox its own copies; a file captures a URL once)."""
    latest = {}
    for rank, i in enumerate(order):
        date, captures = files[i]
        place = str(root / f"f{i}.warc.gz" if rank < built else root / "inbox" / f"f{i}.warc.gz")
        for url, what in captures.items():
            if url not in latest or (date, place) > latest[url][0]:
                latest[url] = ((date, place), what)
    return {url for url, (_, what) in latest.items() if what in (404, 410)}


def _documents(version: str) -> dict[str, tuple]:
    import pyarrow.parquet as pq

    v = store.open_version(version)
    docs = pq.read_table(f"{version}/{store.DOCMAP_FILE}").to_pylist()
    bags = {r["doc_id"]: r for f in v.bag_files for r in pq.read_table(f"{version}/{f.file}").to_pylist()}
    return {d["url"]: (d["title"], d["in_degree"], tuple(bags[d["doc_id"]]["terms"]),
                       tuple(round(w, 5) for w in bags[d["doc_id"]]["weights"]), tuple(v.h[d["doc_id"]].tolist()))
            for d in docs}


def _page(*words: str, links: tuple[str, ...] = ()) -> tuple[list[str], list[str]]:
    return list(words), list(links)


@settings(max_examples=4, deadline=None, phases=(Phase.explicit, Phase.reuse, Phase.generate),
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(arrivals=arrivals_st, outlinks=st.booleans())
# P0 gone before the inbox's file, which links to it again (HOME does): no bag of its in-link anchors.
@example(outlinks=False, arrivals=([(D2019, {P0: _page("orchard", "apple")}), (D2020, {P0: 404}),
                    (D2021, {P1: _page("quince", "thyme")})], [0, 1, 2], 2))
# P0's one capture a 404, built first; an older page of it arrives.
@example(outlinks=False, arrivals=([(D2020, {P0: 410}), (D2019, {P0: _page("sorrel", "thyme"), P1: _page("apple", "medlar")})],
                   [0, 1], 1))
# P2, linked to only by P3, gone; then P3 arrives linking to it.
@example(outlinks=False, arrivals=([(D2020, {P2: 404}), (D2019, {P3: _page("orchard", "quince", links=(P2,))})], [0, 1], 1))
# P2 gone, then back by a revisit of its 2019 page, whose link to P3 counts again.
@example(outlinks=False, arrivals=([(D2019, {P2: _page("sorrel", "thyme", links=(P3,))}), (D2020, {P2: 410}), (D2021, {P2: REVISIT})],
                   [0, 1, 2], 2))
# P1 gone then back by a page (arriving later), and back then gone (the 404 arriving last).
@example(outlinks=False, arrivals=([(D2019, {P1: 404}), (D2020, {P1: _page("apple", "quince", links=(P2,))})], [0, 1], 1))
@example(outlinks=False, arrivals=([(D2019, {P0: _page("orchard", "thyme", links=(P2,))}), (D2021, {P0: 404}),
                    (D2020, {P0: _page("medlar", "sorrel", links=(P3,))})], [0, 2, 1], 1))
# An index of out-link ids, two files through the inbox one after the other: the second update
# follows the strategy the first one's index was made with.
@example(outlinks=True, arrivals=([(D2019, {P0: _page("orchard", "apple", links=(P1,))}),
                                   (D2020, {P1: _page("quince", "thyme", links=(P2,))}),
                                   (D2021, {P2: _page("medlar", "sorrel", links=(P0, P3))})], [0, 1, 2], 1))
# ... and P1 made an alias of P2 by the inbox's file: P0's out-link id to it is P2's now.
@example(outlinks=True, arrivals=([(D2019, {P0: _page("orchard", "apple", links=(P1,)), P1: _page("quince", "thyme")}),
                                   (D2020, {P1: P2, P2: _page("medlar", "sorrel")})], [0, 1], 1))
def test_any_arrival_order_and_split_gives_the_full_builds_bags_and_signatures(tmp_path_factory, arrivals, outlinks):
    """Whatever order the files arrive in, the inbox gives the full build's documents, and a URL
    whose latest capture is a 404 or 410 is none of them, though pages still link to it; with
    the default strategy and with one of out-link ids too."""
    from simweb.tasks.stages.invert import invert_stage
    from simweb.tasks.stages.publish import publish_index
    from simweb.tasks.stages.signatures import signatures_stage
    from simweb.tasks.stages.bags import build_bags_stage
    from simweb.tasks.incremental import read_epoch
    from simweb.tasks.layout import crawl_folder, stages_folder
    from simweb.tasks.signatures import IndexParams
    from simweb.core.strategy import Strategy

    files, arrival, built = arrivals
    strategy = Strategy.parse("anchor:32+content+outlinks") if outlinks else Strategy()
    root = tmp_path_factory.mktemp("arrivals")
    warcs = [write_warc(root / f"f{i}.warc.gz", date, {HOME: _capture(HOME, (VOCABULARY[i:i + 3], URLS[:2])),
                                                        **{u: _capture(u, w) for u, w in captures.items()}})
             for i, (date, captures) in enumerate(files)]
    order = [warcs[i] for i in arrival]
    out, inbox = root / "index", root / "inbox"
    inbox.mkdir()
    build_index.fn([str(p) for p in order[:built]], str(out), strategy=strategy)
    for warc in order[built:]:
        (inbox / warc.name).write_bytes(warc.read_bytes())
        ingest_new_crawl.fn(str(inbox), str(out), settle_seconds=0, max_growth=100.0)
    # The reference: a full build over the same files, weighted with the live epoch's df.
    crawl, ref = crawl_folder(str(out)), str(root / "reference")
    params = IndexParams(min_in_degree=None)
    bags = build_bags_stage(crawl, strategy, stages_folder(ref), df_snapshot=read_epoch(str(out)).snapshot())
    live = publish_index(invert_stage(signatures_stage(bags, crawl, params, ref), params, ref), ref)
    documents = _documents(store.resolve(str(out)))
    assert documents == _documents(live)
    gone = _gone(files, arrival, built, root)
    assert not gone & documents.keys(), f"gone, yet documents: {sorted(gone & documents.keys())}"
    index = simweb.open_index(str(out))
    for url in gone:
        with pytest.raises(simweb.UnknownURL):
            index.related(url)


def test_the_web_as_of_a_date_answers_with_the_captures_before_it(crawls, tmp_path, capsys):
    out = tmp_path / "index"
    files = [str(p) for p in crawls["new-first"]]
    assert main(["build", *files, "--out", str(out), "--as-of", "2021-01-01"]) == 0
    assert "the pages are the captures of 2020-06-01 to 2020-06-01 (as of 2021-01-01 23:59:59 UTC)" in capsys.readouterr().out
    assert_answers_of(out, 2020)
    assert main(["build", *files, "--out", str(out)]) == 0  # without --as-of: the latest captures again
    assert_answers_of(out, 2024)
    assert main(["build", *files, "--out", str(out), "--as-of", "2021-13-01"]) == 2
    assert "--as-of '2021-13-01': month must be in 1..12" in capsys.readouterr().err


def test_a_revisit_is_a_capture_at_its_date_with_the_revisited_payload(crawls, tmp_path):
    """2020: alpha's page; 2022: alpha answers 404; 2024: a revisit of alpha's 2020 payload. The
    revisit is the latest capture: alpha has its 2020 page again."""
    import base64
    import hashlib

    root = tmp_path / "warcs"
    root.mkdir()
    old = write_warc(root / "a.warc.gz", "2020-06-01T00:00:00Z", year_crawl(2020))
    gone = write_warc(root / "b.warc.gz", "2022-06-01T00:00:00Z", {A: 404})
    digest = "sha1:" + base64.b32encode(hashlib.sha1(year_crawl(2020)[A]).digest()).decode()
    with open(root / "c.warc.gz", "wb") as f:
        writer = WARCWriter(f, gzip=True)
        writer.write_record(writer.create_revisit_record(A, digest, A, "2020-06-01T00:00:00Z",
                                                         warc_headers_dict={"WARC-Date": "2024-06-01T00:00:00Z"}))
    out = tmp_path / "index"
    build_index.fn([str(old), str(gone)], str(out))
    with pytest.raises(simweb.UnknownURL):  # gone: no document, though beta still links to it
        words(out, A)
    build_index.fn([str(old), str(gone), str(root / "c.warc.gz")], str(out))
    assert {url for url, _ in answers(out)} == {B, C}
    assert f"alpha{WORD[2020]}" in words(out, A)
    assert simweb.open_index(str(out)).captures([A, B]) == {A: "20240601000000", B: "20200601000000"}  # replayed at


def test_a_build_that_collapses_near_duplicates_reads_the_crawl_as_of_the_same_date(crawls, tmp_path):
    from simweb.core.strategy import Strategy

    out = tmp_path / "index"
    build_index.fn([str(p) for p in crawls["old-first"]], str(out), strategy=Strategy.parse("anchor:32+content,dedup"),
                   as_of="2021-01-01")
    assert all("2020" in title for _, title in answers(out))
    assert f"alpha{WORD[2020]}" in words(out, A)


@pytest.mark.parametrize("order", [(2020, 2024), (2024, 2020)])
def test_a_url_captured_twice_in_one_file_has_its_latest_capture(tmp_path, order):
    path = tmp_path / "both.warc.gz"
    with open(path, "wb") as f:
        writer = WARCWriter(f, gzip=True)
        http = StatusAndHeaders("200 OK", [("Content-Type", "text/html; charset=utf-8")], protocol="HTTP/1.1")
        for year in order:
            for url, body in year_crawl(year).items():
                writer.write_record(writer.create_warc_record(url, "response", payload=io.BytesIO(body), http_headers=http,
                                                              warc_headers_dict={"WARC-Date": f"{year}-06-01T00:00:00Z"}))
    out = tmp_path / "index"
    build_index.fn([str(path)], str(out))
    assert_answers_of(out, 2024)
