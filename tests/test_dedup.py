"""The near-duplicate report: a crawl written with warcio holding a mirrored host, a near copy,
distinct pages, an empty page and a URL crawled twice, with exact expected counts; and the
real WARC fixtures."""
from __future__ import annotations

import io
import shutil

import numpy as np
import pyarrow.parquet as pq
import pytest
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from simweb.tasks.dedup import DedupParams, clusters_table, find_duplicates, write_clusters
from simweb.tasks.ingest.files import ingest_files


def _write_warc(path, records) -> None:
    with open(path, "wb") as f:
        writer = WARCWriter(f, gzip=True)
        for url, title, words in records:
            body = f"<html><head><title>{title}</title></head><body><p>{' '.join(words)}</p></body></html>"
            headers = StatusAndHeaders("200 OK", [("Content-Type", "text/html; charset=utf-8")], protocol="HTTP/1.1")
            writer.write_record(writer.create_warc_record(url, "response", payload=io.BytesIO(body.encode()),
                                                          http_headers=headers))


def _text(rng, n=200) -> list[str]:
    letters = list("abcdefghijklmnopqrstuvwxyz")
    return ["".join(rng.choice(letters, 6)) for _ in range(n)]


@pytest.fixture(scope="module")
def crawl(tmp_path_factory) -> str:
    rng = np.random.default_rng(5)
    root = tmp_path_factory.mktemp("dedup")
    mirrored = [_text(rng) for _ in range(4)]
    near = _text(rng)
    near_copy = list(near)
    near_copy[100] = "changedword"  # 10 of ~191 shingles differ: resemblance about 0.9
    records = [(f"http://a.example/p{i}.html", "page", t) for i, t in enumerate(mirrored)]
    records += [(f"http://b.example/p{i}.html", "page", t) for i, t in enumerate(mirrored)]
    records += [("http://c.example/doc.html", "doc", near), ("http://d.example/another/doc-copy.html", "doc", near_copy),
                ("http://e.example/unique.html", "unique", _text(rng)), ("http://f.example/empty.html", "", [])]
    _write_warc(root / "one.warc.gz", records)
    _write_warc(root / "two.warc.gz", [("http://a.example/p0.html", "page", mirrored[0])])  # crawled again
    out = root / "crawl"
    ingest_files([str(root / "one.warc.gz"), str(root / "two.warc.gz")], str(out))
    return str(out)


def test_counts_clusters_and_mirrors(crawl):
    report = find_duplicates(crawl)
    assert report.counts == {
        "pages": 12, "repeated_urls": 1, "pages_without_shingles": 1, "duplicate_pairs": 5, "clusters": 5,
        "pages_in_clusters": 10, "duplicates": 5, "mirror_candidates": 1, "mirrors": 1, "common_paths_ignored": 0,
    }
    assert report.cluster_urls() == [
        *([f"http://a.example/p{i}.html", f"http://b.example/p{i}.html"] for i in range(4)),
        ["http://c.example/doc.html", "http://d.example/another/doc-copy.html"],  # the shorter URL represents
    ]
    [mirror] = report.mirrors.pairs
    assert (mirror.host_a, mirror.host_b, mirror.shared_paths, mirror.sampled, mirror.matched, mirror.is_mirror) == (
        "a.example", "b.example", 4, 4, 4, True)


def test_a_strict_threshold_keeps_only_exact_copies(crawl):
    report = find_duplicates(crawl, DedupParams(threshold=1.0))
    assert report.counts["clusters"] == 4  # the near copy no longer qualifies
    assert report.counts["mirrors"] == 1


def test_clusters_table(crawl, tmp_path):
    report = find_duplicates(crawl)
    table = clusters_table(report)
    assert table.num_rows == 10
    rows = table.to_pylist()
    assert {r["representative_url"] for r in rows} == {
        "http://c.example/doc.html", *(f"http://a.example/p{i}.html" for i in range(4))}
    assert all(r["cluster_size"] == 2 for r in rows)
    path = write_clusters(report, str(tmp_path))
    assert pq.read_table(path).equals(table)


def test_bad_parameters_and_missing_crawl_say_what_to_do(tmp_path):
    with pytest.raises(ValueError, match="expected a shingle size k >= 1"):
        DedupParams(k=0)
    with pytest.raises(ValueError, match=r"threshold in \(0, 1\]"):
        DedupParams(threshold=0.0)
    with pytest.raises(FileNotFoundError, match="simweb ingest"):
        find_duplicates(str(tmp_path))


def test_the_real_warc_fixtures(warc_dir, tmp_path):
    out = tmp_path / "crawl"
    ingest_files(sorted(str(p) for p in warc_dir.glob("*.warc*")), str(out))
    report = find_duplicates(str(out))
    assert report.counts["pages"] == 47
    assert report.counts["clusters"] == 2 and report.counts["duplicates"] == 2
    assert report.counts["mirrors"] == 0
    assert all(u.startswith("http://www.uraharajuku.st/shopdetail/") for g in report.cluster_urls() for u in g)


def test_command_line(crawl, tmp_path, capsys):
    from simweb.cli import main

    assert main(["dedup", "--crawl", crawl, "--out", str(tmp_path)]) == 0
    printed = capsys.readouterr().out
    assert "duplicate clusters" in printed and "mirror        a.example  b.example" in printed
    assert (tmp_path / "duplicates.parquet").exists()
    assert main(["dedup", "--crawl", str(tmp_path / "nothing")]) == 2
    assert "is not a folder" in capsys.readouterr().err
    # The folder of `simweb build --out` is read through the crawl it keeps.
    shutil.copytree(crawl, tmp_path / "index" / "crawl")
    (tmp_path / "index" / "stages").mkdir()
    assert main(["dedup", "--crawl", str(tmp_path / "index")]) == 0
    again = capsys.readouterr().out
    assert "duplicate clusters" in again and "mirror        a.example  b.example" in again


def test_result_lists_lose_near_duplicates_of_earlier_results(crawl):
    from simweb.tasks.dedup import near_duplicate_filter

    urls = ["http://a.example/p0.html", "http://b.example/p0.html", "http://c.example/doc.html",
            "http://d.example/another/doc-copy.html", "http://e.example/unique.html", "http://f.example/empty.html",
            "http://never.crawled.example/"]
    got = near_duplicate_filter(crawl, urls)
    assert got.kept == [0, 2, 4, 5, 6]  # the empty page and the uncrawled one have no text: kept
    assert got.dropped == {1: 0, 3: 2}
    # A mirror of the query page itself is no related page either.
    got = near_duplicate_filter(crawl, ["http://b.example/p1.html", "http://a.example/p0.html"],
                                query="http://a.example/p1.html")
    assert got.kept == [1] and got.dropped == {0: -1}
