"""Replay: the record fields pages keep, `simweb cdxj`, and replay links in answers."""
from __future__ import annotations

import io
import json

import pytest
from warcio.indexer import Indexer

from simweb.api import open_index
from simweb.cli import main as simweb_main
from simweb.tasks.cdxj import write_cdxj
from simweb.tasks.ingest.files import ingest_files
from test_aliases_crawl import a, page, redirect, write_warc

# The server answers its own host names only (simweb.guard); TestClient's default Host is 'testserver'.
LOCAL = "http://127.0.0.1"

H = "http://r.example"
PREFIX = "http://localhost:8080/my-coll/"


@pytest.fixture(scope="module")
def fixtures_crawl(warc_dir, tmp_path_factory):
    out = tmp_path_factory.mktemp("crawl")
    warcs = sorted(warc_dir.glob("*.warc.gz")) + sorted(warc_dir.glob("*.warc"))
    ingest_files([str(p) for p in warcs], str(out))
    return out


def warcio_index(path) -> dict[int, int]:
    """offset → length of each response and revisit record, as warcio's own indexer gives them."""
    buf = io.StringIO()
    Indexer(["offset", "length", "warc-type"], [str(path)], buf).process_all()
    rows = [json.loads(line) for line in buf.getvalue().splitlines()]
    return {int(r["offset"]): int(r["length"]) for r in rows if r.get("warc-type") in ("response", "revisit")}


def test_cdxj_of_the_shared_fixtures(fixtures_crawl, warc_dir, tmp_path):
    out = tmp_path / "index.cdxj"
    counts = write_cdxj(str(fixtures_crawl), str(out))
    # 49 pages; clueweb-quirk.warc.gz's 29 have WARC-Dates that are no dates (day 65 and the like),
    # and example-bad-non-chunked.warc.gz's page and revisit are in a file gzipped as a whole: no
    # byte range holds them. example.warc.gz's revisit is listed.
    assert counts == {"pages": 19, "redirects": 0, "revisits": 1, "gone": 0, "without_timestamp": 29,
                      "not_replayable": 2, "not_replayable_files": ["example-bad-non-chunked.warc.gz"]}
    lines = out.read_text().splitlines()
    assert len(lines) == 20 and lines == sorted(lines)
    rows = [(key, stamp, json.loads(data)) for key, stamp, data in (line.split(" ", 2) for line in lines)]
    assert all(len(stamp) == 14 and stamp.isdigit() for _, stamp, _ in rows)
    assert all(list(d) == ["url", "mime", "status", "digest", "length", "offset", "filename"] for *_, d in rows)
    example = [r for r in rows if r[2]["filename"] == "example.warc.gz"]
    # As webrecorder's indexers list them (warcio.js `cdx-index` of the same file: the revisit at
    # offset 2621, 586 bytes).
    assert [(k, s, d["url"], d["mime"], d["status"], d["digest"]) for k, s, d in example] == [
        ("com,example)/", "20170306040206", "http://example.com/", "text/html", "200",
         "G7HRM7BGOKSKMSXZAHMUQTTV53QOFSMK"),
        ("com,example)/", "20170306040348", "http://example.com/", "warc/revisit", "200",
         "G7HRM7BGOKSKMSXZAHMUQTTV53QOFSMK")]
    assert (example[1][2]["offset"], example[1][2]["length"]) == ("2621", "586")
    for name in ("example.warc.gz", "warcfile.warc.gz", "example-iana.org-chunked.warc"):
        where = {int(d["offset"]): int(d["length"]) for *_, d in rows if d["filename"] == name}
        reference = warcio_index(warc_dir / name)
        assert where and all(reference[o] == n for o, n in where.items()), name


def test_the_cdxj_command_lists_pages_and_redirects(tmp_path, capsys):
    warc = write_warc(tmp_path / "r.warc.gz", [
        page(f"{H}/b/", "bee", date="2024-05-02T10:00:00Z"),
        redirect(f"{H}/b", "/b/"),
        page(f"{H}/a", "a page", date="2024-05-01T23:30:00-02:00"),
    ])
    crawl = str(tmp_path / "crawl")
    ingest_files([warc], crawl)
    assert simweb_main(["cdxj", crawl, "-o", str(tmp_path / "x.cdxj")]) == 0
    assert "2 page(s) and 1 redirect(s) indexed" in capsys.readouterr().err
    lines = (tmp_path / "x.cdxj").read_text().splitlines()
    assert [line.split(" ", 2)[:2] for line in lines] == [
        ["example,r)/a", "20240502013000"], ["example,r)/b", "20240501090000"], ["example,r)/b", "20240502100000"]]
    redirect_row = json.loads(lines[1].split(" ", 2)[2])
    assert (redirect_row["url"], redirect_row["status"], redirect_row["filename"]) == (f"{H}/b", "301", "r.warc.gz")
    assert simweb_main(["cdxj", crawl, "--full-paths"]) == 0
    assert f'"filename": "{warc}"' in capsys.readouterr().out


@pytest.fixture(scope="module")
def replay_index(tmp_path_factory, build_in_process):
    folder = tmp_path_factory.mktemp("replay")
    hubs = [page(f"{H}/hub{i}", a("/t1", "river boats") + a("/t2", "river boats") + a("/t3", "river boats"))
            for i in range(3)]
    warc = write_warc(folder / "w.warc.gz", [
        page(f"{H}/t1", "one", date="2024-01-01T00:00:00Z"), page(f"{H}/t2", "two", date="2024-01-02T00:00:00Z"),
        *hubs])
    build_in_process(warc, folder / "index", min_in_degree=1)
    return str(folder / "index")


def test_replay_links_in_python_cli_and_http(replay_index, capsys):
    from fastapi.testclient import TestClient

    from simweb.http import create_app

    index = open_index(replay_index)
    plain = index.related(f"{H}/t1", alpha=0.1)
    assert [r.url for r in plain] == [f"{H}/t2", f"{H}/t3"] and all(r.replay is None for r in plain)
    found = index.related(f"{H}/t1", alpha=0.1, replay_prefix=PREFIX)
    # t3 was only linked to: no capture, no replay link.
    assert [r.replay for r in found] == [f"{PREFIX}20240102000000/{H}/t2", None]

    assert simweb_main(["related", f"{H}/t1", "--index", replay_index, "--alpha", "0.1",
                        "--replay-prefix", "https://web.archive.org/web"]) == 0
    assert f"replay: https://web.archive.org/web/20240102000000/{H}/t2" in capsys.readouterr().out
    assert simweb_main(["related", f"{H}/t1", "--index", replay_index, "--alpha", "0.1", "--json",
                        "--replay-prefix", PREFIX]) == 0
    results = json.loads(capsys.readouterr().out)["results"]
    assert [r.get("replay") for r in results] == [f"{PREFIX}20240102000000/{H}/t2", None]

    client = TestClient(create_app(index, replay_prefix=PREFIX), base_url=LOCAL)
    answer = client.get("/api/related", params={"url": f"{H}/t1", "alpha": 0.1}).json()
    assert answer["results"][0]["replay"] == f"{PREFIX}20240102000000/{H}/t2"
    other = client.get("/api/related", params={"url": f"{H}/t1", "alpha": 0.1, "replay_prefix": "http://p/{timestamp}/{url}"})
    assert other.json()["results"][0]["replay"] == f"http://p/20240102000000/{H}/t2"
    html = client.get("/", params={"url": f"{H}/t1", "alpha": 0.1}).text
    assert f'<a class="replay" href="{PREFIX}20240102000000/{H}/t2"' in html and html.count('class="replay"') == 1
    asked = client.get("/", params={"url": f"{H}/t1", "alpha": 0.1, "replay_prefix": "http://p/"}).text
    assert '<a class="replay" href="http://p/20240102000000/' in asked
    assert 'name="replay_prefix" value="http://p/"' in asked and "replay_prefix=http%3A%2F%2Fp%2F" in asked


def test_an_alias_url_names_its_document_in_queries(tmp_path, build_in_process):
    """``/dir`` of a crawled ``/dir/``, and a crawled redirect, are asked about as their documents."""
    hubs = [page(f"{H}/hub{i}", a("/d/", "river boats") + a("/t2", "river boats")) for i in range(3)]
    warc = write_warc(tmp_path / "w.warc.gz", [page(f"{H}/d/", "dir"), page(f"{H}/t2", "two"),
                                               redirect(f"{H}/old", "/d/"), *hubs])
    build_in_process(warc, tmp_path / "index", min_in_degree=1)
    index = open_index(str(tmp_path / "index"))
    expected = [r.url for r in index.related(f"{H}/d/", alpha=0.1)]
    assert expected == [f"{H}/t2"]
    for alias in (f"{H}/d", f"{H}/d/index.html", f"{H}/old"):
        assert [r.url for r in index.related(alias, alpha=0.1)] == expected
        assert index.document(alias)["url"] == f"{H}/d/"
    assert f"{H}/elsewhere" not in index


def test_the_cdxj_lists_revisits_and_gone_captures_as_a_player_replays_them(tmp_path, capsys):
    """A URL captured in 2020, revisited in 2024 (identical payload) and a URL that answered 404:
    one line per capture, the revisit's as `warc/revisit` with the revisited payload's digest and
    the byte range warcio's own indexer gives it, the 404 with its status."""
    from warcio.statusandheaders import StatusAndHeaders
    from warcio.warcwriter import WARCWriter

    path = tmp_path / "recrawl.warc.gz"
    body = b"<html><head><title>Kept</title></head><body><p>same words</p></body></html>"
    with open(path, "wb") as f:
        writer = WARCWriter(f, gzip=True)
        html = StatusAndHeaders("200 OK", [("Content-Type", "text/html")], protocol="HTTP/1.1")
        original = writer.create_warc_record(f"{H}/kept", "response", payload=io.BytesIO(body), http_headers=html,
                                             warc_headers_dict={"WARC-Date": "2020-06-01T00:00:00Z"})
        writer.write_record(original)
        digest = original.rec_headers.get_header("WARC-Payload-Digest")
        writer.write_record(writer.create_revisit_record(f"{H}/kept", digest, f"{H}/kept", "2020-06-01T00:00:00Z",
                                                         warc_headers_dict={"WARC-Date": "2024-06-01T00:00:00Z"}))
        gone = StatusAndHeaders("404 Not Found", [("Content-Type", "text/html")], protocol="HTTP/1.1")
        writer.write_record(writer.create_warc_record(f"{H}/lost", "response", payload=io.BytesIO(b"no"),
                                                      http_headers=gone,
                                                      warc_headers_dict={"WARC-Date": "2024-06-01T00:00:00Z"}))
    crawl = str(tmp_path / "crawl")
    ingest_files([str(path)], crawl)
    assert simweb_main(["cdxj", crawl, "-o", str(tmp_path / "x.cdxj")]) == 0
    assert "1 page(s), 0 redirect(s), 1 revisit(s) and 1 404/410 capture(s) indexed" in capsys.readouterr().err
    rows = [(key, stamp, json.loads(fields)) for key, stamp, fields in
            (line.split(" ", 2) for line in (tmp_path / "x.cdxj").read_text().splitlines())]
    assert [(key, stamp, d["mime"], d["status"]) for key, stamp, d in rows] == [
        ("example,r)/kept", "20200601000000", "text/html", "200"),
        ("example,r)/kept", "20240601000000", "warc/revisit", "200"),
        ("example,r)/lost", "20240601000000", "-", "404")]
    assert rows[0][2]["digest"] == rows[1][2]["digest"] == digest.split(":", 1)[1]
    buf = io.StringIO()
    Indexer(["offset", "length", "warc-type"], [str(path)], buf).process_all()
    reference = {int(r["offset"]): int(r["length"]) for r in map(json.loads, buf.getvalue().splitlines())}
    assert all(reference[int(d["offset"])] == int(d["length"]) for *_, d in rows)
