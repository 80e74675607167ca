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
    res = index.related(JAVA1, top=5, rerank=False)
    assert 1 <= len(res) <= 5 and [r.rank for r in res] == list(range(1, len(res) + 1))
    assert all(r.url.startswith("http://java") and r.url != JAVA1 for r in res)
    sims = [(-r.similarity, r.doc_id) for r in res]
    assert sims == sorted(sims) and all(r.similarity >= 0.15 for r in res)
    assert res[0].title.startswith("Java page")


def test_url_forms_normalise_to_the_same_page(index):
    assert [r.url for r in index.related("HTTP://Java1.Example.com")] == [r.url for r in index.related(JAVA1)]


def test_rerank_orders_by_exact_weighted_jaccard(index):
    res = index.related(JAVA1, top=10)  # re-ranked by default
    assert res and res == index.related(JAVA1, top=10, rerank=True)
    query = dict(index.top_terms(JAVA1, k=1000))
    for r in res:
        other = dict(index.top_terms(r.url, k=1000))
        assert r.exact == pytest.approx(jaccard(query, other))
        assert r.exact >= 0.15
    assert [r.exact for r in res] == sorted((r.exact for r in res), reverse=True)


def test_rerank_scores_every_candidate_down_to_two_sigma_below_alpha(index):
    from simweb.core.query import candidate_alpha

    everything = index.related(JAVA1, top=1000, alpha=0.0, rerank=False)
    low = candidate_alpha(0.15, 80)
    assert 0.0 < low < 0.15
    query = dict(index.top_terms(JAVA1, k=1000))
    exact = {r.url: jaccard(query, dict(index.top_terms(r.url, k=1000))) for r in everything if r.similarity >= low}
    want = sorted((u for u, j in exact.items() if j >= 0.15), key=lambda u: (-exact[u], index.doc_id(u)))
    assert [r.url for r in index.related(JAVA1, top=1000)] == want
    pairs = index.all_pairs()
    assert all(j >= 0.15 for _, _, j in pairs) and [j for _, _, j in pairs] == sorted((j for _, _, j in pairs), reverse=True)
    # A pair is found from either of its pages: JAVA1's answers, and the pages of I's filter that find JAVA1.
    assert {frozenset((a, b)) for a, b, _ in pairs if JAVA1 in (a, b)} >= {frozenset((JAVA1, u)) for u in want}


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
    for rerank, value in ((False, "similarity"), (True, "exact")):
        pairs = index.all_pairs(0.3, rerank=rerank)
        assert pairs and all(s >= 0.3 for _, _, s in pairs)
        a, b, s = pairs[0]
        assert any(r.url == b and getattr(r, value) == pytest.approx(s)
                   for r in index.related(a, top=100, alpha=0.3, rerank=rerank)) or \
            any(r.url == a and getattr(r, value) == pytest.approx(s)
                for r in index.related(b, top=100, alpha=0.3, rerank=rerank))


def test_top_terms_are_the_heaviest_terms_of_the_bag(index):
    terms = index.top_terms("http://money4.example.com/", k=3)
    assert len(terms) == 3 and [w for _, w in terms] == sorted((w for _, w in terms), reverse=True)


def test_info_reports_sizes_and_parameters(index):
    info = index.info()
    assert info["documents"] == 48 and info["indexed_documents"] == 44
    assert info["bytes"]["H_per_doc"] == 320.0 and info["minhash"]["m"] == 80


def test_errors_say_what_was_wrong(index):
    with pytest.raises(UnknownURL, match="not among the 48 crawled pages"):
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
    assert [(r["url"], r["score"], r["similarity"]) for r in doc["results"]] == \
        [(r.url, r.score, r.similarity) for r in index.related(JAVA1, top=7)]
    assert cli(["related", JAVA1, "--index", small_index, "--top", "3"]) == 0
    text = capsys.readouterr().out
    first = index.related(JAVA1, top=3)[0]
    # The score the listing is ranked by first: the exact similarity, then the estimate.
    assert text.splitlines()[0].split()[:3] == ["rank", "exact", "est."]
    assert f"   1  {first.exact:5.3f}  {first.similarity:5.3f}  {first.url}" in text and first.title in text
    assert cli(["related", JAVA1, "--index", small_index, "--top", "3", "--no-rerank"]) == 0
    first = index.related(JAVA1, top=3, rerank=False)[0]
    assert f"   1  {first.similarity:5.3f}  {first.url}" in capsys.readouterr().out
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


def test_a_version_pruned_while_open_keeps_answering_from_its_unlinked_files(tmp_path):
    import os
    import shutil

    from conftest import build_small_index
    from simweb.tasks import index_store

    root = build_small_index(tmp_path / "a")
    reference = simweb.open_index(shutil.copytree(tmp_path / "a" / "version", tmp_path / "ref"))
    shutil.rmtree(tmp_path / "a" / "version")  # the published files now have no other link
    idx = simweb.open_index(root)
    served = index_store.resolve(root)
    for name in ("v-next", "v-last"):  # two publishes: the version idx holds is pruned
        index_store.publish(str(tmp_path / "ref"), root, name=name)
    assert not os.path.exists(served)
    with open("/proc/self/maps") as f:
        maps = f.read()
    for name in (index_store.H_FILE, index_store.BAG_TERMS_FILE, index_store.DOCMAP_ARROW_FILE):
        assert f"{served}/{name} (deleted)" in maps
    # No bag was read before the prune: re-ranking and top terms read them from the mapped files.
    assert idx.related(JAVA1, rerank=True) == reference.related(JAVA1, rerank=True)
    assert idx.top_terms(JAVA1, k=5) == reference.top_terms(JAVA1, k=5)
    assert idx.document(JAVA1) == reference.document(JAVA1)
    assert idx.info()["version"] == os.path.basename(served)


def _version_copy(small_index: str, folder, damage) -> str:
    """A copy of the small index's live version in ``folder`` (files of its own), with
    ``damage(path of H.u32)`` done to it."""
    import shutil

    from simweb.tasks import index_store

    version = shutil.copytree(index_store.resolve(small_index), folder)
    damage(version / index_store.H_FILE)
    return str(version)


def _same_size_overwrite(path) -> None:
    with open(path, "r+b") as f:
        f.seek(4 * 80 * 5)
        f.write(bytes(4 * 80))  # document 5's signatures, zeroed


def test_open_index_with_verify_names_the_damaged_file_the_digests_and_the_fix(small_index, tmp_path):
    import json

    from simweb.tasks import index_store

    version = _version_copy(small_index, tmp_path / "v", _same_size_overwrite)
    assert len(simweb.open_index(version)) == 48  # the sizes are right: only a digest tells
    with pytest.raises(index_store.IndexFormatError) as err:
        simweb.open_index(version, verify=True)
    expected = json.load(open(f"{version}/index.json"))["files"]["H.u32"]["sha256"]
    found = index_store.sha256(f"{version}/H.u32")
    message = str(err.value)
    assert message.startswith(f"{version} is damaged: H.u32: ") and "\n" not in message
    assert f"expected SHA-256 {expected}" in message and f"found {found}" in message
    assert "rebuild the index" in message


def test_refresh_with_verify_keeps_the_open_version_when_the_new_one_is_damaged(small_index, tmp_path, monkeypatch):
    import os

    from simweb.tasks import index_store

    root = str(tmp_path / "idx")
    index_store.publish(_version_copy(small_index, tmp_path / "good", lambda h: None), root, name="v-good")
    idx = simweb.open_index(root, verify=True)
    want = idx.related(JAVA1)
    index_store.publish(_version_copy(small_index, tmp_path / "bad", lambda h: None), root, name="v-bad")
    _same_size_overwrite(os.path.join(root, "versions", "v-bad", "H.u32"))  # publish copies: the copy only
    with pytest.raises(index_store.IndexFormatError, match="v-bad is damaged: H.u32"):
        idx.refresh()
    hashed = []
    monkeypatch.setattr(index_store, "sha256", lambda path, *a: hashed.append(path) or "0")
    with pytest.raises(index_store.IndexFormatError, match="v-bad is damaged: H.u32"):
        idx.refresh()  # remembered: the damaged version is not read again at every refresh
    assert hashed == []
    assert idx.version == "v-good" and idx.related(JAVA1) == want
    assert simweb.open_index(root).version == "v-bad"  # without verify the sizes pass
