"""Near-duplicates in the build and in answers: the ``dedup`` strategy option collapses each
cluster to its representative before the bags (its inlinks merged), and ``dedup=True`` on a
query leaves out copies of the query page and of earlier results. Also ``simweb related
--measure``: related pages by a link measure of the crawl."""
from __future__ import annotations

import io
import json

import numpy as np
import pyarrow.compute as pc
import pytest
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from simweb.core.strategy import Strategy, StrategyError
from simweb.core.urls import url_id
from simweb.tasks.dedup import collapse_duplicates
from simweb.tasks.ingest.files import ingest_files
from simweb.tasks.layout import crawl_folder
from simweb.tasks.signatures import IndexParams
from simweb.tasks.stages.bags import bags_stage
from simweb.tasks.stages.dedup import dedup_stage
from simweb.tasks.stages.invert import invert_stage
from simweb.tasks.stages.publish import publish_index
from simweb.tasks.stages.signatures import signatures_stage
from simweb.tasks.storage import join, read_parquet

# The server answers its own host names only (simweb.guard); TestClient's default Host is 'testserver'.
LOCAL = "http://127.0.0.1"

COPY_A, COPY_B = "http://a.example/guide.html", "http://b.example/mirror/guide.html"
OTHER = "http://c.example/other.html"
HUBS = [f"http://hub{i}.example/" for i in range(6)]


def _words(rng, n=150) -> str:
    return " ".join("".join(rng.choice(list("abcdefghijklmnopqrstuvwxyz"), 6)) for _ in range(n))


def _write_warc(path, records) -> None:
    with open(path, "wb") as f:
        writer = WARCWriter(f, gzip=True)
        for url, body in records:
            headers = StatusAndHeaders("200 OK", [("Content-Type", "text/html; charset=utf-8")], protocol="HTTP/1.1")
            writer.write_record(writer.create_warc_record(url, "response", payload=io.BytesIO(body.encode()),
                                                          http_headers=headers))


def _page(title: str, text: str, links: list[tuple[str, str]] = ()) -> str:
    anchors = " ".join(f'<a href="{u}">{a}</a>' for u, a in links)
    return f"<html><head><title>{title}</title></head><body><p>{text}</p><p>{anchors}</p></body></html>"


@pytest.fixture(scope="module")
def warc(tmp_path_factory):
    """Two copies of a guide on two hosts (each copy linking on to OTHER), a different page, and
    six hubs linking to the copies with their own anchor words."""
    rng = np.random.default_rng(11)
    guide, other = _words(rng), _words(rng)
    records = [
        (COPY_A, _page("guide", guide, [(OTHER, "other page")])),
        (COPY_B, _page("guide", guide, [(OTHER, "other page")])),
        (OTHER, _page("other", other)),
    ]
    for i, hub in enumerate(HUBS):
        target = COPY_A if i < 4 else COPY_B
        records.append((hub, _page(f"hub {i}", _words(rng, 40), [(target, "astronomy guide"), (OTHER, "other")])))
    path = tmp_path_factory.mktemp("dedup-build") / "crawl.warc.gz"
    _write_warc(path, records)
    return str(path)


@pytest.fixture(scope="module")
def crawl(warc, tmp_path_factory) -> str:
    out = str(tmp_path_factory.mktemp("dedup-crawl"))
    ingest_files([warc], crawl_folder(out))
    return crawl_folder(out)


def test_the_option_is_part_of_the_strategy():
    s = Strategy.parse("anchor:32+content,stem,dist,nmdf,dedup")
    assert s.dedup and "dedup" in s.label and Strategy.parse(s.spec()) == s
    assert Strategy.parse("anchor:32+content,nodedup") == Strategy(sources=("anchor", "content"))
    assert s.bags_key() != Strategy().bags_key()
    # Strategies without the option keep the bag keys they always had (caches stay valid).
    assert "dedup" not in Strategy().bag_params()
    with pytest.raises(StrategyError, match="dedup: expected true or false"):
        Strategy(dedup="yes")


def test_collapse_keeps_one_copy_and_merges_its_inlinks(crawl, tmp_path):
    counts = collapse_duplicates(crawl, str(tmp_path))
    assert counts["clusters"] == 1
    assert (counts["pages_in"], counts["pages_out"], counts["duplicate_pages_dropped"]) == (9, 8, 1)
    # Links: 2 copies x 1 + 6 hubs x 2 = 14; COPY_B's own outlink dropped; 2 hub links redirected.
    assert (counts["links_in"], counts["links_from_duplicates_dropped"], counts["links_redirected"],
            counts["links_out"]) == (14, 1, 2, 13)
    pages = read_parquet(join(str(tmp_path), "pages"))
    assert COPY_B not in pages.column("url").to_pylist() and COPY_A in pages.column("url").to_pylist()
    links = read_parquet(join(str(tmp_path), "links"))
    assert COPY_B not in links.column("target_url").to_pylist() + links.column("source_url").to_pylist()
    to_a = links.filter(pc.equal(links.column("target_id"), pa_uint64(url_id(COPY_A))))
    assert sorted(to_a.column("source_url").to_pylist()) == HUBS  # all six hubs now link to the representative
    assert links.schema.equals(read_parquet(join(crawl, "links")).schema)


def pa_uint64(value: int):
    import pyarrow as pa

    return pa.scalar(value, pa.uint64())


def _build(crawl: str, out: str, strategy: Strategy) -> tuple[str, dict]:
    params = IndexParams(min_in_degree=None)
    stages = {}
    bag_crawl = crawl
    if strategy.dedup:
        deduped = dedup_stage(crawl, out)
        stages["dedup"] = deduped
        bag_crawl = deduped.path
    bags = stages["bags"] = bags_stage(bag_crawl, strategy, out)
    signed = signatures_stage(bags, bag_crawl, params, out)
    return publish_index(invert_stage(signed, params, out), out), stages


def _bags(path: str) -> dict[str, dict[str, float]]:
    return {row["url"]: dict(zip(row["terms"], row["weights"])) for row in read_parquet(path).to_pylist()}


def test_dedup_build_indexes_the_representative_with_every_copys_anchors(crawl, tmp_path):
    strategy = Strategy.parse("anchor:8,nostem,nodist,none,dedup")
    _, stages = _build(crawl, str(tmp_path / "index"), strategy)
    bags = _bags(stages["bags"].path)
    assert COPY_B not in bags
    assert "astronomy" in bags[COPY_A]
    # The representative's bag gathers the anchor windows of both copies' inlinks: its terms
    # are those of the two copies' bags of a build without the option (hub words differ).
    plain = _build(crawl, str(tmp_path / "plain"), Strategy.parse("anchor:8,nostem,nodist,none"))[1]["bags"]
    plain_bags = _bags(plain.path)
    assert set(plain_bags[COPY_B]) - set(plain_bags[COPY_A])  # the copies' inlinks bring different words
    assert set(bags[COPY_A]) == set(plain_bags[COPY_A]) | set(plain_bags[COPY_B])
    assert set(bags) == set(plain_bags) - {COPY_B}
    # A second build reuses the dedup stage.
    again = _build(crawl, str(tmp_path / "index"), strategy)[1]
    assert again["dedup"].reused and again["bags"].reused


def test_queries_can_leave_out_copies(crawl, tmp_path):
    import simweb

    out = str(tmp_path / "index")
    _build(crawl, out, Strategy.parse("content,nostem,none"))
    index = simweb.open_index(out, crawl=crawl)
    plain = [r.url for r in index.related(COPY_A, top=8, alpha=0.0)]
    assert plain[0] == COPY_B  # the copy is the most similar page by content
    deduped = index.related(COPY_A, top=5, alpha=0.0, dedup=True)
    # The copy is left out and the list still fills up to five from further down.
    assert [r.url for r in deduped] == plain[1:6]
    assert [r.rank for r in deduped] == list(range(1, len(deduped) + 1))
    # Without the crawl's pages the option says what it needs.
    with pytest.raises(FileNotFoundError, match="crawl=DIR"):
        simweb.open_index(out, crawl=str(tmp_path / "nowhere")).related(COPY_A, alpha=0.0, dedup=True)


def test_related_command_dedup_and_link_measures(crawl, tmp_path, capsys):
    from simweb.cli import main

    out = str(tmp_path / "index")
    _build(crawl, out, Strategy.parse("content,nostem,none"))
    assert main(["related", COPY_A, "--index", out, "--crawl", crawl, "--alpha", "0", "--dedup", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["dedup"] is True and COPY_B not in [r["url"] for r in doc["results"]]
    # Co-citation: COPY_A and OTHER are cited together by four hubs, COPY_B and OTHER by two.
    assert main(["related", OTHER, "--crawl", crawl, "--measure", "cocitation", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert [(r["url"], r["score"]) for r in doc["results"]][:2] == [(COPY_A, 4.0), (COPY_B, 2.0)]
    assert main(["related", OTHER, "--crawl", crawl, "--measure", "cocitation"]) == 0
    assert "(cocitation)" in capsys.readouterr().out
    assert main(["related", "http://nowhere.example/", "--crawl", crawl, "--measure", "coupling"]) == 2
    assert "no link of the crawl touches" in capsys.readouterr().err
    assert main(["related", OTHER, "--measure", "coupling"]) == 2
    assert "give --index" in capsys.readouterr().err


def test_evaluation_refuses_dedup_strategies_with_a_reason(tmp_path):
    from simweb.tasks.stages.eval_strategies import evaluate_group

    with pytest.raises(ValueError, match="dedup is an option of the index build"):
        evaluate_group(str(tmp_path), None, [Strategy(dedup=True)], str(tmp_path))


def test_http_api_and_page_leave_out_copies(crawl, tmp_path):
    from fastapi.testclient import TestClient

    import simweb
    from simweb.http import create_app

    out = str(tmp_path / "index")
    _build(crawl, out, Strategy.parse("content,nostem,none"))
    client = TestClient(create_app(simweb.open_index(out, crawl=crawl)), base_url=LOCAL)
    plain = client.get("/api/related", params={"url": COPY_A, "alpha": 0}).json()
    deduped = client.get("/api/related", params={"url": COPY_A, "alpha": 0, "dedup": "true"}).json()
    assert plain["results"][0]["url"] == COPY_B and plain["dedup"] is False
    assert deduped["dedup"] is True and COPY_B not in [r["url"] for r in deduped["results"]]
    batch = client.post("/api/related", json={"urls": [COPY_A], "alpha": 0, "dedup": True}).json()
    assert batch["answers"][0]["results"] == deduped["results"]
    page = client.get("/", params={"url": COPY_A, "alpha": 0, "dedup": "true"})
    assert page.status_code == 200 and COPY_B not in page.text and "hide near-duplicates" in page.text
    assert 'name="dedup" type="checkbox" value="true" checked' in page.text
    # An index whose crawl is not at hand says so instead of answering without the filter.
    lost = TestClient(create_app(simweb.open_index(out, crawl=str(tmp_path / "gone"))), base_url=LOCAL)
    answer = lost.get("/api/related", params={"url": COPY_A, "alpha": 0, "dedup": "true"})
    assert answer.status_code == 409 and "crawl" in answer.json()["detail"]


def test_a_refresh_of_a_dedup_index_collapses_copies_too(crawl, tmp_path):
    """ingest-new-crawl's full re-weight (here: no epoch yet) runs the dedup stage as build-index does."""
    from simweb.api import open_index
    from simweb.flows.ingest_new_crawl import refresh_index

    strategy = Strategy.parse("anchor:8,nostem,nodist,none,dedup")
    out = str(tmp_path / "index")
    index, stages = refresh_index(None, out, crawl, strategy, IndexParams(min_in_degree=None), None)
    assert stages["dedup"] is False and set(stages) == {"dedup", "bags", "signatures", "invert"}
    built, _ = _build(crawl, str(tmp_path / "built"), strategy)
    refreshed, reference = open_index(out), open_index(str(tmp_path / "built"))
    assert COPY_B not in refreshed and COPY_A in refreshed
    assert refreshed.related(COPY_A) == reference.related(COPY_A)
