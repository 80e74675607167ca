"""The related-pages answer document, schema simweb.related/1: one shape from the CLI and the
HTTP API, by the index and by a link measure, valid against the JSON Schema shipped in the package."""
from __future__ import annotations

import json
import os

import jsonschema
import pytest
from fastapi.testclient import TestClient

import simweb
from simweb.cli import main as cli
from simweb.http import create_app
from simweb.tasks.link_related import related_by_link

# The server answers its own host names only (simweb.guard); TestClient's default Host is 'testserver'.
LOCAL = "http://127.0.0.1"

JAVA1 = "http://java1.example.com/"
SCHEMA_FILE = os.path.join(os.path.dirname(simweb.__file__), "schemas", "related-1.json")


@pytest.fixture(scope="module")
def validate():
    with open(SCHEMA_FILE) as f:
        schema = json.load(f)
    return jsonschema.Draft202012Validator(schema).validate


@pytest.fixture(scope="module")
def crawl(small_index) -> str:
    return os.path.join(os.path.dirname(small_index), "crawl")  # the synthetic crawl it was built from


@pytest.fixture(scope="module")
def client(small_index, crawl) -> TestClient:
    return TestClient(create_app(simweb.open_index(small_index, crawl=crawl)), base_url=LOCAL)


def test_the_shipped_json_schema_is_the_one_the_models_give():
    from simweb.answers import json_schema

    with open(SCHEMA_FILE) as f:
        assert json.load(f) == json_schema()


def test_related_json_is_a_versioned_document_without_doc_ids(small_index, validate, capsys):
    assert cli(["related", JAVA1, "--index", small_index, "--top", "4", "--rerank", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    validate(doc)
    index = simweb.open_index(small_index)
    assert doc["schema"] == "simweb.related/1" and doc["measure"] == "minhash" and doc["version"] == index.version
    assert "doc_id" not in json.dumps(doc)
    want = index.related(JAVA1, top=4, rerank=True)
    assert [(r["url"], r["title"], r["score"], r["exact"], r["similarity"]) for r in doc["results"]] == \
        [(r.url, r.title, r.exact, r.exact, r.similarity) for r in want]


def test_measure_answers_have_the_same_shape_with_titles_from_the_index(small_index, crawl, validate, capsys):
    assert cli(["related", JAVA1, "--index", small_index, "--crawl", crawl, "--measure", "cocitation", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    validate(doc)
    assert doc["measure"] == "cocitation" and doc["alpha"] is None and doc["rerank"] is False
    want = related_by_link(crawl, JAVA1, "cocitation")
    assert [(r["url"], r["score"]) for r in doc["results"]] == [(r.url, r.score) for r in want] and want
    assert all(r["title"] == f"Java page {r['url'][len('http://java'):-len('.example.com/')]}" for r in doc["results"])
    # Without an index, the same answer without titles.
    assert cli(["related", JAVA1, "--crawl", crawl, "--measure", "cocitation", "--json"]) == 0
    bare = json.loads(capsys.readouterr().out)
    validate(bare)
    assert bare["version"] is None and {r["title"] for r in bare["results"]} == {None}
    assert cli(["related", JAVA1, "--crawl", crawl, "--measure", "cocitation", "--rerank"]) == 2
    assert "not to --measure" in capsys.readouterr().err


def test_the_http_api_answers_the_same_documents(client, small_index, crawl, validate, capsys):
    got = client.get("/api/related", params={"url": JAVA1, "top": 4, "rerank": "true"}).json()
    validate(got)
    assert cli(["related", JAVA1, "--index", small_index, "--top", "4", "--rerank", "--json"]) == 0
    assert got == json.loads(capsys.readouterr().out)
    batch = client.post("/api/related", json={"urls": [JAVA1, "http://music1.example.com/"], "top": 3}).json()
    for answer in batch["answers"]:
        validate(answer)
    r = client.get("/api/related", params={"url": JAVA1, "measure": "cocitation"})
    assert r.status_code == 200
    validate(r.json())
    assert cli(["related", JAVA1, "--index", small_index, "--crawl", crawl, "--measure", "cocitation", "--json"]) == 0
    assert r.json() == json.loads(capsys.readouterr().out)


def test_http_link_measures_say_what_is_wrong(client, small_index):
    assert client.get("/api/related", params={"url": JAVA1, "measure": "pagerank"}).status_code == 422
    r = client.get("/api/related", params={"url": JAVA1, "measure": "cocitation", "dedup": "true"})
    assert r.status_code == 422 and "not to a link measure" in r.json()["detail"]
    r = client.get("/api/related", params={"url": "http://nowhere.example.com/", "measure": "coupling"})
    assert r.status_code == 404 and "no link of the crawl touches it" in r.json()["detail"]
    assert client.get("/api/related", params={"url": "mailto:x@y", "measure": "coupling"}).status_code == 404
    no_crawl = TestClient(create_app(small_index), base_url=LOCAL)  # INDEX/crawl does not exist for this index
    r = no_crawl.get("/api/related", params={"url": JAVA1, "measure": "cocitation"})
    assert r.status_code == 409 and "serve with --crawl DIR" in r.json()["detail"]


def test_the_server_reads_the_link_graph_again_when_the_crawl_changes(small_index, crawl, tmp_path):
    import shutil

    import pyarrow as pa

    from simweb.core.urls import url_id
    from simweb.tasks.schemas import LINKS
    from simweb.tasks.storage import write_parquet_atomic

    copy = shutil.copytree(crawl, tmp_path / "crawl")
    client = TestClient(create_app(simweb.open_index(small_index, crawl=str(copy))), base_url=LOCAL)

    def cocited() -> set[str]:
        r = client.get("/api/related", params={"url": JAVA1, "measure": "cocitation", "top": 100})
        assert r.status_code == 200
        return {x["url"] for x in r.json()["results"]}

    before = cocited()
    assert before and all(u.startswith("http://java") for u in before)
    hub, music = "http://newhub.example.org/", "http://music3.example.com/"
    rows = [{"source_url": hub, "source_id": url_id(hub), "target_url": t, "target_id": url_id(t),
             **dict.fromkeys(("anchor_start", "anchor_end", "context_start", "context_end", "syntactic_left",
                              "syntactic_right", "topical_left", "topical_right"), 0)} for t in (JAVA1, music)]
    write_parquet_atomic(pa.Table.from_pylist(rows, schema=LINKS), str(copy / "links" / "part-1.parquet"))
    assert cocited() == before | {music}  # a new part of the crawl: the graph is read again
