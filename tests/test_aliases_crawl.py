"""Redirects and canonical URLs through the ingest and the crawl reader, on WARCs made here."""
from __future__ import annotations

import io

import pytest
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from simweb.cli import main as simweb_main
from simweb.core.strategy import Strategy
from simweb.core.urls import url_id
from simweb.tasks.crawl.corpus import load_corpus
from simweb.tasks.crawl.degrees import in_degrees
from simweb.tasks.crawl.graph import load_link_graph
from simweb.tasks.crawl.tables import alias_report, unique_pages
from simweb.tasks.ingest.files import ingest_files
from simweb.tasks.storage import read_parquet

H = "http://h.example"


def page(url: str, body: str, head: str = "", date: str = "2024-05-01T10:00:00Z"):
    html = f"<html><head><title>{url}</title>{head}</head><body>{body}</body></html>".encode()

    def make(writer: WARCWriter):
        http = StatusAndHeaders("200 OK", [("Content-Type", "text/html")], protocol="HTTP/1.1")
        return writer.create_warc_record(url, "response", payload=io.BytesIO(html), http_headers=http,
                                         warc_headers_dict={"WARC-Date": date})
    return make


def redirect(url: str, location: str | None, status: str = "301 Moved Permanently", date: str = "2024-05-01T09:00:00Z"):
    def make(writer: WARCWriter):
        headers = [("Content-Type", "text/html")] + ([("Location", location)] if location is not None else [])
        http = StatusAndHeaders(status, headers, protocol="HTTP/1.1")
        return writer.create_warc_record(url, "response", payload=io.BytesIO(b"moved"), http_headers=http,
                                         warc_headers_dict={"WARC-Date": date})
    return make


def write_warc(path, records):
    with open(path, "wb") as f:
        writer = WARCWriter(f, gzip=True)
        for make in records:
            writer.write_record(make(writer))
    return str(path)


def a(href: str, text: str) -> str:
    return f'<p>see <a href="{href}">{text}</a> here</p>'


HUB_LINKS = ["/docs", "/docs/index.html", "/old", "/docs/guide?utm=1", "/loop1", "http://h.example:80/docs/",
             "/article", "http://a.example", "/print"]
WORDS = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india"]
RECORDS = [
    page(f"{H}/docs/", a("/docs/guide", "guide") + a("/docs", "kilo")),
    redirect(f"{H}/old", "/docs/guide"),
    page(f"{H}/docs/guide", "the guide itself"),
    page(f"{H}/docs/guide?utm=1", a("/docs", "lima"), f'<link rel="canonical" href="{H}/docs/guide">'),
    page(f"{H}/print", "printable", '<link rel="canonical" href="/article">'),
    page(f"{H}/x", "elsewhere", '<link rel="canonical" href="http://other.example/x">'),
    redirect(f"{H}/loop1", "/loop2"),
    redirect(f"{H}/loop2", "/loop1", "302 Found"),
    redirect("http://a.example/", "https://b.example/"),
    redirect(f"{H}/nowhere", None),
    page(f"{H}/hub", "".join(a(href, word) for word, href in zip(WORDS, HUB_LINKS))),
]


@pytest.fixture()
def crawl(tmp_path):
    warc = write_warc(tmp_path / "a.warc.gz", RECORDS)
    out = str(tmp_path / "crawl")
    stats = ingest_files([warc], out)
    return out, stats


def test_ingest_writes_the_evidence_and_counts_what_it_did_not_take(crawl):
    out, stats = crawl
    assert (stats.records_read, stats.pages_written) == (11, 6)
    assert stats.skipped == {"HTTP 3xx": 5}  # the redirects are not pages; their aliases are beside
    # noslash: /docs/guide, /print, /x and /hub (routes) also answer with a trailing slash.
    assert stats.alias_evidence == {"canonical": 2, "index": 6, "noslash": 4, "redirect": 4, "slash": 1}
    assert stats.aliases_skipped == {"canonical link to another host": 1, "redirect without Location": 1}
    evidence = read_parquet(f"{out}/aliases").to_pylist()
    old = next(row for row in evidence if row["url"] == f"{H}/old")
    assert (old["target_url"], old["kind"], old["status"], old["surt"]) == (f"{H}/docs/guide", "redirect", 301,
                                                                             "example,h)/old")
    assert old["record_length"] > 0 and len(old["timestamp"]) == 14
    assert "ingest: 1 file read" in stats.summary() and "redirect records" in stats.summary()


def test_links_to_aliases_count_for_their_documents(crawl):
    out, _ = crawl
    report = alias_report(out)
    assert {k: report[k] for k in ("aliases", "aliases_redirect", "aliases_canonical", "aliases_slash",
                                   "aliases_index", "aliases_noslash", "aliases_in_loops", "pages_merged",
                                   "aliased_pages_kept", "links_redirected_to_aliases")} == {
        "aliases": 14, "aliases_redirect": 2, "aliases_canonical": 1, "aliases_slash": 1, "aliases_index": 6,
        "aliases_noslash": 4,
        "aliases_in_loops": 2, "pages_merged": 1, "aliased_pages_kept": 1, "links_redirected_to_aliases": 6}

    graph = load_link_graph(out)
    assert graph.counts["links_redirected_to_aliases"] == 6
    degrees = dict(zip(*(c.to_pylist() for c in in_degrees(out).columns)))
    assert degrees[url_id(f"{H}/docs/")] == 1  # the hub, by three names; its own link is a self-link
    assert degrees[url_id(f"{H}/docs/guide")] == 2  # the hub (by /old and by the merged copy) and /docs/
    assert degrees[url_id("https://b.example/")] == 1  # a redirect across hosts is the server's word
    assert degrees[url_id(f"{H}/loop1")] == 1  # a loop resolves nowhere: the link keeps its URL
    assert degrees[url_id(f"{H}/article")] == 1 and degrees[url_id(f"{H}/print")] == 1  # kept apart
    for gone in ("/docs", "/docs/index.html", "/old", "/docs/guide?utm=1"):
        assert url_id(H + gone) not in degrees

    pages, copies = unique_pages(out, ["url"])
    assert sorted(pages.column("url").to_pylist()) == sorted(
        f"{H}{p}" for p in ("/docs/", "/docs/guide", "/print", "/x", "/hub"))
    assert copies == 1  # the canonical copy, merged with its out-link

    bags = load_corpus(out).bags(Strategy.parse("anchor:0,nostem"))
    by_url = {url: dict(bag) for url, bag in bags.to_dicts().values()}
    # The hub's anchors by three names, and the page's title; its own link to /docs is a self-link.
    assert set(by_url[f"{H}/docs/"]) == {"alpha", "bravo", "foxtrot", "docs"}
    assert set(by_url[f"{H}/docs/guide"]) == {"charlie", "delta", "guide", "docs"}
    assert "lima" not in str(by_url)  # the merged copy's anchor is dropped with it


def refresh(seconds: str, url: str) -> str:
    return f'<meta http-equiv="Refresh" content="{seconds}; URL={url}">'


def test_an_instant_refresh_is_a_redirect_written_in_html(tmp_path):
    """A page that moved the way sites moved before their servers said so: ``/moved`` refreshes
    at once to ``/new.html``, so the hub's link to it counts for /new.html and the stub page is
    merged into it; ``/slow`` refreshes after 5 seconds (a page shown first: its own document);
    refreshes to the page itself or to a script are no evidence, and counted."""
    warc = write_warc(tmp_path / "r.warc.gz", [
        page(f"{H}/moved", "this page has moved", refresh("0", "/new.html")),
        page(f"{H}/new.html", "the new page"),
        page(f"{H}/slow", "read this first", refresh("5", "/new.html")),
        page(f"{H}/self", "reloads", refresh("0", f"{H}/self")),
        page(f"{H}/js", "scripted", refresh("0", "javascript:go()")),
        page(f"{H}/hub", a("/moved", "mike") + a("/slow", "november")),
    ])
    out = str(tmp_path / "crawl")
    stats = ingest_files([warc], out)
    assert stats.alias_evidence["refresh"] == 1
    assert stats.aliases_skipped == {"refresh to itself": 1, "refresh target not http(s)": 1}
    report = alias_report(out)
    assert (report["aliases_refresh"], report["pages_merged"], report["links_redirected_to_aliases"]) == (1, 1, 1)
    degrees = dict(zip(*(c.to_pylist() for c in in_degrees(out).columns)))
    assert degrees[url_id(f"{H}/new.html")] == 1 and url_id(f"{H}/moved") not in degrees
    assert degrees[url_id(f"{H}/slow")] == 1
    bags = load_corpus(out).bags(Strategy.parse("anchor:0,nostem"))
    by_url = {url: dict(bag) for url, bag in bags.to_dicts().values()}
    assert "mike" in by_url[f"{H}/new.html"] and f"{H}/moved" not in by_url


def test_a_link_with_a_trailing_slash_reaches_a_crawled_route_but_not_a_file(tmp_path):
    """/page crawled, /page/ linked: one document; /page.html crawled, /page.html/ linked: two."""
    warc = write_warc(tmp_path / "b.warc.gz", [page(f"{H}/page", "x"), page(f"{H}/file.html", "y"),
                                               page(f"{H}/hub", a("/page/", "p") + a("/file.html/", "f"))])
    out = str(tmp_path / "crawl")
    ingest_files([warc], out)
    assert alias_report(out)["links_redirected_to_aliases"] == 1
    degrees = dict(zip(*(c.to_pylist() for c in in_degrees(out).columns)))
    assert degrees[url_id(f"{H}/page")] == 1 and url_id(f"{H}/page/") not in degrees
    assert degrees[url_id(f"{H}/file.html/")] == 1 and url_id(f"{H}/file.html") not in degrees


def test_the_ingest_command_reports_aliases_and_links_redirected(crawl, tmp_path, capsys):
    warc = write_warc(tmp_path / "c.warc.gz", RECORDS)
    assert simweb_main(["ingest", warc, "--out", str(tmp_path / "c"), "--no-prefect"]) == 0
    out = capsys.readouterr().out
    assert ("aliases: 14 URLs name another URL's document (2 redirect, 1 canonical, 0 refresh, 1 slash, 6 index, "
            "4 noslash)") in out
    assert "links redirected to an alias's document          6" in out


def test_the_bags_stage_reports_aliases_and_links_redirected(crawl, tmp_path):
    from simweb.tasks.stages.bags import build_bags_stage

    out, _ = crawl
    stats = build_bags_stage(out, Strategy.parse("anchor:0,nostem"), str(tmp_path / "work"), scheduler="sync").stats
    assert (stats["aliases"], stats["links_redirected_to_aliases"], stats["pages_merged_into_aliases"]) == (14, 6, 1)
    assert (stats["aliases_redirect"], stats["aliases_canonical"], stats["aliases_slash"], stats["aliases_index"],
            stats["aliases_noslash"]) == (2, 1, 1, 6, 4)


def test_on_a_dask_cluster_the_alias_map_goes_to_the_workers_once_and_the_bags_are_the_same(crawl, tmp_path):
    """On a cluster the links parts' tasks get the alias map as a future sent to every worker
    ahead of them, not a copy in the graph beside each task; the bags do not change."""
    from distributed import Client, Future, LocalCluster

    from simweb.tasks.bag_reader import read_bags
    from simweb.tasks.bags.scheduling import shared
    from simweb.tasks.stages.bags import build_bags_stage

    out, _ = crawl
    strategy = Strategy.parse("anchor:0,nostem")
    alone = build_bags_stage(out, strategy, str(tmp_path / "alone"), scheduler="sync")
    assert shared({"a": 1}, None) == {"a": 1}  # no cluster: the object itself
    with LocalCluster(n_workers=1, threads_per_worker=2, processes=False, dashboard_address=None) as cluster, \
            Client(cluster):
        sent = shared({"a": 1}, None)
        assert isinstance(sent, Future) and sent.result() == {"a": 1}
        assert shared({"a": 1}, "sync") == {"a": 1}  # a scheduler of its own: not the cluster's
        on_cluster = build_bags_stage(out, strategy, str(tmp_path / "cluster"))
    assert on_cluster.stats["links_redirected_to_aliases"] == alone.stats["links_redirected_to_aliases"] == 6
    assert read_bags(on_cluster.path).to_dicts() == read_bags(alone.path).to_dicts()


def test_an_incremental_update_touches_the_urls_whose_document_new_aliases_change(tmp_path):
    """A new part holding the page /d/ makes the old links to /d count for it: both bags change."""
    from simweb.tasks.incremental import touched_urls

    out = str(tmp_path / "crawl")
    ingest_files([write_warc(tmp_path / "1.warc.gz", [page(f"{H}/hub", a("/d", "river") + a("/e", "lake"))])], out)
    new = ingest_files([write_warc(tmp_path / "2.warc.gz", [page(f"{H}/d/", "dir")])], out).parts
    touched = set(touched_urls(out, list(new)).tolist())
    assert {url_id(f"{H}/d"), url_id(f"{H}/d/")} <= touched and url_id(f"{H}/e") not in touched
    assert url_id(f"{H}/hub") not in touched
