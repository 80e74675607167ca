"""The Python API and the CLI over one small index: same rankings, re-rank, batch, errors."""
from __future__ import annotations

import json

import pytest

import simweb
from simweb.core.similarity import jaccard
from simweb.api import Index, UnknownURL
from simweb.cli import main as cli

JAVA1 = "http://java1.example.com/"


@pytest.fixture(scope="module")
def index(small_index) -> Index:
    return simweb.open_index(small_index)


def test_related_finds_the_same_topic_ranked_by_estimate(index):
    res = index.related(JAVA1, top=5)
    assert 1 <= len(res) <= 5 and [r.rank for r in res] == list(range(1, len(res) + 1))
    assert all(r.url.startswith("http://java") and r.url != JAVA1 for r in res)
    sims = [(-r.similarity, r.doc_id) for r in res]
    assert sims == sorted(sims) and all(r.similarity >= 0.15 for r in res)
    assert res[0].title.startswith("Java page")


def test_url_forms_normalise_to_the_same_page(index):
    assert [r.url for r in index.related("HTTP://Java1.Example.com")] == [r.url for r in index.related(JAVA1)]


def test_rerank_orders_by_exact_weighted_jaccard(index):
    res = index.related(JAVA1, top=10, rerank=True)
    assert res
    query = dict(index.top_terms(JAVA1, k=1000))
    for r in res:
        other = dict(index.top_terms(r.url, k=1000))
        assert r.exact == pytest.approx(jaccard(query, other))
        assert r.exact >= 0.15
    assert [r.exact for r in res] == sorted((r.exact for r in res), reverse=True)


def test_related_many_equals_one_at_a_time(index):
    urls = [JAVA1, "http://music2.example.com/", "http://weather0.example.com/"]
    batch = index.related_many(urls, top=4)
    for u in urls:
        assert batch[u] == index.related(u, top=4)


def test_filtered_pages_are_queryable_but_never_results(index):
    assert index.related("http://weather0.example.com/")  # in-degree 1: in H, not in I
    everything = [r.url for u in ("http://weather1.example.com/", "http://weather2.example.com/")
                  for r in index.related(u, top=100, alpha=0.0)]
    assert "http://weather0.example.com/" not in everything


def test_all_pairs_agrees_with_related(index):
    pairs = index.all_pairs(0.3)
    assert pairs and all(s >= 0.3 for _, _, s in pairs)
    a, b, s = pairs[0]
    assert any(r.url == b and r.similarity == s for r in index.related(a, top=100, alpha=0.3)) or \
        any(r.url == a and r.similarity == s for r in index.related(b, top=100, alpha=0.3))


def test_top_terms_are_the_heaviest_terms_of_the_bag(index):
    terms = index.top_terms("http://money4.example.com/", k=3)
    assert len(terms) == 3 and [w for _, w in terms] == sorted((w for _, w in terms), reverse=True)


def test_info_reports_sizes_and_parameters(index):
    info = index.info()
    assert info["documents"] == 48 and info["indexed_documents"] == 44
    assert info["bytes"]["H_per_doc"] == 320.0 and info["minhash"]["m"] == 80


def test_errors_say_what_was_wrong(index):
    with pytest.raises(UnknownURL, match="not among the 48 pages"):
        index.related("http://nowhere.example.com/")
    with pytest.raises(UnknownURL, match="http or https"):
        index.related("ftp://java1.example.com/")
    with pytest.raises(ValueError, match="top"):
        index.related(JAVA1, top=0)
    with pytest.raises(ValueError, match="alpha"):
        index.related(JAVA1, alpha=2)
    assert JAVA1 in index and "http://nowhere.example.com/" not in index


def test_cli_prints_the_same_ranking_as_the_api(index, small_index, capsys):
    assert cli(["related", JAVA1, "--index", small_index, "--top", "7", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert [(r["url"], r["similarity"]) for r in doc["results"]] == \
        [(r.url, r.similarity) for r in index.related(JAVA1, top=7)]
    assert cli(["related", JAVA1, "--index", small_index, "--top", "3"]) == 0
    text = capsys.readouterr().out
    first = index.related(JAVA1, top=3)[0]
    assert f"   1  {first.similarity:5.3f}  {first.url}" in text and first.title in text
    assert cli(["related", "http://nowhere.example.com/", "--index", small_index]) == 2
    assert "unknown URL" in capsys.readouterr().err


def test_refresh_switches_to_a_newly_published_version(tmp_path):
    from conftest import build_small_index
    from simweb.tasks import index_store

    root = build_small_index(tmp_path / "a")
    idx = simweb.open_index(root)
    before = idx.info()["version"]
    assert idx.refresh() is False
    index_store.publish(index_store.resolve(root), root, name="v-next")
    assert idx.refresh() is True and idx.info()["version"] == "v-next" != before
