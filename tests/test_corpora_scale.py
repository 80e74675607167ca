"""A crawl of a given size (simweb.corpora.scale) and the near-copies that fill it (simweb.corpora.perturb).

Packages are built in the test: two small documentation sites of 12 and 8 pages, every page
with its own words and links into its site, so each count below is exact.
"""
from __future__ import annotations

import gzip
import hashlib
import html
import json
import re
from collections import Counter
from pathlib import Path

import pytest
from warcio.archiveiterator import ArchiveIterator

from conftest import make_deb
from simweb.core.directory import read_directory
from simweb.corpora import CorpusError
from simweb.corpora.links import rewrite_links
from simweb.corpora.perturb import Perturbation, Vocabulary, mirror_url, perturb_page, split_words
from simweb.corpora.scale import build_scale

WORDS = ("alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike november oscar papa "
         "quebec romeo sierra tango uniform victor whiskey xray yankee zulu").split()


def site_pages(package: str, n: int) -> dict[str, bytes]:
    """``n`` pages in two folders; page i links to the next three pages, to the root and outside."""
    root = f"usr/share/doc/{package}/html/"
    files = {}
    for i in range(n):
        folder = "one/" if i % 2 else "two/"
        links = "".join(f'<a href="../{"one/" if j % 2 else "two/"}p{j}.html">page {j}</a> '
                        for j in ((i + 1) % n, (i + 2) % n, (i + 3) % n))
        text = " ".join(WORDS[(i * 7 + k) % len(WORDS)] for k in range(60))
        body = (f"<h1>{package} page {i}</h1><p>{text}</p>{links}<a href=\"../index.html\">home</a> "
                f'<a href="https://example.org/x">out</a><script>var a = "b c d";</script>&amp; done')
        files[root + folder + f"p{i}.html"] = (
            f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{package} {i}</title></head>"
            f"<body>{body}</body></html>").encode()
    files[root + "index.html"] = b"<html><head><title>Home</title></head><body><a href='one/p1.html'>p</a></body></html>"
    return files


@pytest.fixture(scope="module")
def cache(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("scale-debs")
    make_deb(folder, "aaa-doc", "1.0-1", site_pages("aaa-doc", 11))  # 12 pages with index.html
    make_deb(folder, "bbb-doc", "2.0-1", site_pages("bbb-doc", 7))   # 8 pages
    return folder


PACKAGES = ("aaa-doc", "bbb-doc")


def records(out: Path) -> dict[str, list[tuple[str, bytes]]]:
    """WARC file name → its (URL, body) response records, in order."""
    found = {}
    for warc in sorted((out / "warc").glob("*.warc.gz")):
        with open(warc, "rb") as f:
            found[warc.name] = [(r.rec_headers.get_header("WARC-Target-URI"), r.content_stream().read())
                                for r in ArchiveIterator(f, check_digests="raise") if r.rec_type == "response"]
    return found


def digests(out: Path) -> dict[str, str]:
    return {str(p.relative_to(out)): hashlib.sha256(p.read_bytes()).hexdigest() for p in out.rglob("*") if p.is_file()}


# --------------------------------------------------------------------------- the size target


def test_real_pages_come_first_and_the_last_package_is_cut_at_n(cache, tmp_path):
    summary = build_scale(15, str(tmp_path), packages=PACKAGES, cache=str(cache))
    urls = [u for recs in records(tmp_path).values() for u, _ in recs]
    assert len(urls) == 15 and summary["real_pages"] == 15 and summary["copied_pages"] == 0
    assert sum(u.startswith("https://aaa-doc.docs.example/") for u in urls) == 12
    # bbb-doc's first three pages in path order.
    assert [u for u in urls if "bbb-doc" in u] == [f"https://bbb-doc.docs.example/{p}" for p in
                                                  ("index.html", "one/p1.html", "one/p3.html")]
    manifest = json.loads((tmp_path / "MANIFEST.json").read_text())
    assert [(p["package"], p["version"], p["pages_taken"]) for p in manifest["packages"]] == [
        ("aaa-doc", "1.0-1", 12), ("bbb-doc", "2.0-1", 3)]


@pytest.mark.parametrize("pages", [1, 20, 21, 47])
def test_the_crawl_holds_exactly_n_pages_with_copies_when_real_ones_run_out(cache, tmp_path, pages):
    summary = build_scale(pages, str(tmp_path), packages=PACKAGES, cache=str(cache))
    urls = [u for recs in records(tmp_path).values() for u, _ in recs]
    assert len(urls) == len(set(urls)) == pages == summary["pages"]
    assert summary["copied_pages"] == max(0, pages - 20)
    hosts = Counter(re.match(r"https://(mirror\d+)\.", u).group(1) if "mirror" in u else "real" for u in urls)
    expected = {"real": min(pages, 20)}
    for k in range(1, 3):
        if pages - 20 * k > 0:
            expected[f"mirror{k}"] = min(20, pages - 20 * k)
    assert hosts == expected


def test_warc_files_stay_within_their_size_and_each_opens_with_warcinfo(cache, tmp_path):
    build_scale(47, str(tmp_path), packages=PACKAGES, cache=str(cache), warc_bytes=6_000)
    found = records(tmp_path)
    assert len(found) > 5
    for name, recs in found.items():
        assert len(recs) == 1 or sum(len(body) for _, body in recs) <= 6_000, name
        with gzip.open(tmp_path / "warc" / name) as f:
            assert b"WARC-Type: warcinfo" in f.read(400)
    manifest = json.loads((tmp_path / "MANIFEST.json").read_text())
    assert sorted(n for n in manifest["outputs"] if n.startswith("warc/")) == [f"warc/{n}" for n in sorted(found)]


def test_a_smaller_build_into_the_same_folder_leaves_no_stale_warc_files(cache, tmp_path):
    build_scale(47, str(tmp_path), packages=PACKAGES, cache=str(cache), warc_bytes=6_000)
    interrupted = tmp_path / "warc" / ".tmp-0123456789abcdef-scale-copy001-00004.warc.gz"
    interrupted.write_bytes(b"half a file")  # what a killed build leaves
    before = len(list((tmp_path / "warc").glob("scale-*.warc.gz")))
    summary = build_scale(10, str(tmp_path), packages=PACKAGES, cache=str(cache), warc_bytes=6_000)
    after = len(list((tmp_path / "warc").glob("scale-*.warc.gz")))
    assert summary["stale_warc_files_removed"] == before - after + 1
    assert not interrupted.exists()
    assert sum(len(r) for r in records(tmp_path).values()) == 10


def test_the_same_request_gives_the_same_bytes_and_another_seed_other_copies(cache, tmp_path):
    build_scale(47, str(tmp_path / "a"), packages=PACKAGES, cache=str(cache))
    build_scale(47, str(tmp_path / "b"), packages=PACKAGES, cache=str(cache))
    build_scale(47, str(tmp_path / "c"), packages=PACKAGES, cache=str(cache), perturbation=Perturbation(seed=1))
    assert digests(tmp_path / "a") == digests(tmp_path / "b")
    first, other = records(tmp_path / "a"), records(tmp_path / "c")
    real = {u: b for recs in first.values() for u, b in recs if "mirror" not in u}
    assert real == {u: b for recs in other.values() for u, b in recs if "mirror" not in u}
    # Every copy of a p*.html page (60 words, 5 links) differs; the tiny index pages may not.
    copies = {u: b for recs in first.values() for u, b in recs if "mirror" in u and "/p" in u}
    reseeded = dict(x for r in other.values() for x in r)
    assert len(copies) == 18 + 6 and all(b != reseeded[u] for u, b in copies.items())


def test_the_bytes_do_not_depend_on_how_many_copy_rounds_run_at_once(cache, tmp_path):
    one = build_scale(67, str(tmp_path / "one"), packages=PACKAGES, cache=str(cache), jobs=1)
    two = build_scale(67, str(tmp_path / "two"), packages=PACKAGES, cache=str(cache), jobs=2)
    assert one == two and one["copy_rounds"] == 3 and one["copied_pages"] == 47
    assert digests(tmp_path / "one") == digests(tmp_path / "two")
    # Each round in files of its own, whose warcinfo names the round.
    names = sorted(records(tmp_path / "two"))
    assert names == ["scale-00000.warc.gz"] + [f"scale-copy{k:03d}-00000.warc.gz" for k in (1, 2, 3)]
    with gzip.open(tmp_path / "two" / "warc" / names[2]) as f:
        assert b"copy round: 2\r\n" in f.read(800)


def test_a_copy_of_a_page_in_a_narrow_charset_writes_foreign_words_as_character_references(tmp_path):
    greek = "ωμέγα αλφάβητο λέξη κείμενο σελίδα".split()
    folder = tmp_path / "debs"
    folder.mkdir()
    root = "usr/share/doc/{}/html/"
    make_deb(folder, "ggg-doc", "1.0-1", {
        root.format("ggg-doc") + f"p{i}.html": (
            f"<html><head><meta charset='utf-8'><title>g{i}</title></head><body><p>"
            + " ".join(greek[(i + k) % len(greek)] for k in range(200)) + "</p></body></html>").encode()
        for i in range(4)})
    make_deb(folder, "lll-doc", "1.0-1", {
        root.format("lll-doc") + "p0.html": (
            "<html><head><meta charset='iso-8859-1'><title>Café</title></head><body><p>"
            + " ".join(["café naïve façade"] * 40) + "</p></body></html>").encode("iso-8859-1")})
    build_scale(10, str(tmp_path / "out"), packages=("ggg-doc", "lll-doc"), cache=str(folder))
    copies = {u: b for recs in records(tmp_path / "out").values() for u, b in recs if "mirror" in u and "lll-doc" in u}
    assert copies
    for body in copies.values():
        text = body.decode("iso-8859-1")
        assert "&#" in text and "café" in text
        assert html.unescape(text).count("ω") + sum(html.unescape(text).count(w[0]) for w in greek) > 0


def test_the_directory_gives_every_copy_a_tree_of_its_own(cache, tmp_path):
    summary = build_scale(47, str(tmp_path), packages=PACKAGES, cache=str(cache))
    pages = (tmp_path / "directory_pages.txt").read_text().split()
    with open(tmp_path / "directory.rdf", "rb") as f:
        from_rdf = read_directory(f, fmt="rdf", directory_pages=pages)
    with open(tmp_path / "directory.tsv", "rb") as f:
        from_tsv = read_directory(f, fmt="tsv", directory_pages=pages)
    assert from_rdf.classes == from_tsv.classes
    # Folders are the hierarchy: Top/<package>/<one|two> is depth 2, so topics are above class depth...
    assert summary["classes"] == 0 and summary["pages_above_class_depth"] == summary["listed_pages"]
    lines = [line.split("\t") for line in (tmp_path / "directory.tsv").read_text().splitlines()]
    trees = Counter(topic.split("/")[1] for _, topic in lines)
    # ...and each mirror round has a tree of its own, over the pages it copied (index.html is a
    # directory page, so 11 of aaa-doc's 12 and 7 of bbb-doc's 8 pages are listed).
    assert trees == {"aaa-doc": 11, "aaa-doc-mirror1": 11, "bbb-doc": 7, "bbb-doc-mirror1": 7,
                     "aaa-doc-mirror2": 6}
    assert ["https://mirror2.aaa-doc.docs.example/one/p1.html", "Top/aaa-doc-mirror2/one"] in lines
    assert "https://mirror1.bbb-doc.docs.example/index.html" in pages
    assert summary["listed_pages"] == 42 and summary["directory_pages"] == 5


def test_bad_requests_get_clear_errors(cache, tmp_path):
    with pytest.raises(CorpusError, match="expected a number of pages ≥ 1, got 0"):
        build_scale(0, str(tmp_path), packages=PACKAGES, cache=str(cache))
    make_deb(cache, "empty-doc", "1-1", {"usr/share/doc/empty-doc/README": b"x"})
    with pytest.raises(CorpusError, match="holds no HTML pages"):
        build_scale(5, str(tmp_path), packages=("empty-doc",), cache=str(cache))


@pytest.mark.parametrize("jobs", [1, 2])
def test_the_build_reports_the_real_pages_and_the_copies_as_they_are_written(cache, tmp_path, jobs):
    calls: list[tuple[str, int, int]] = []
    build_scale(67, str(tmp_path), packages=PACKAGES, cache=str(cache), jobs=jobs,
                progress=lambda step, done, total: calls.append((step, done, total)))
    real = [(done, total) for step, done, total in calls if step == "real pages"]
    copies = [(done, total) for step, done, total in calls if step == "copies"]
    assert [step for step, _, _ in calls] == ["real pages"] * len(real) + ["copies"] * len(copies)
    assert real[-1] == (20, 20) and [d for d, _ in real] == sorted(d for d, _ in real)
    assert copies[-1] == (47, 47) and [d for d, _ in copies] == sorted(d for d, _ in copies)


def test_cli_builds_a_crawl_of_n_pages_and_refuses_bad_fractions(cache, tmp_path, capsys):
    from simweb.cli import main

    args = ["corpus", "scale", "--pages", "25", "--packages", *PACKAGES, "--cache", str(cache)]
    assert main([*args, "--out", str(tmp_path / "out")]) == 0
    printed = capsys.readouterr().out
    assert re.search(r"pages\s+25\b", printed) and re.search(r"copies \(1 rounds\)\s+5\b", printed)
    assert "copies: 5/5 pages done" not in printed  # over in a blink: no progress lines
    assert main([*args, "--out", str(tmp_path / "bad"), "--words", "1.5"]) == 2
    assert "expected a fraction in [0, 1] for words, got 1.5" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["corpus", "scale", "--pages", "0", "--out", str(tmp_path / "zero")])
    assert "expected a whole number ≥ 1, got '0'" in capsys.readouterr().err


# --------------------------------------------------------------------------- perturbation


SITE = "https://docs.example.org/v1/"
VOCABULARY = [f"voc{a}{b}" for a in "abcde" for b in "fghijklmno"]  # words are runs of letters


def original_page() -> tuple[str, tuple[str, ...]]:
    """A page of 100 text words, 20 links into its site, 5 outside, an image; links already absolute."""
    words = " ".join(f"text{i}" for i in range(100))
    inside = "".join(f'<a href="{SITE}p{i}.html#s">{i}</a>' for i in range(20))  # digits: not words
    outside = "".join(f'<a href="https://other.example/{i}">o</a>' for i in range(5))
    html = (f"<html><head><title>T</title><style>.x {{ color: red }}</style></head><body><p>{words}</p>"
            f'{inside}{outside}<img src="{SITE}logo.png"><!-- note --></body></html>')
    anchors = tuple(re.findall(r'<a href="([^"]*)"', html))
    return html, anchors


SITE_PAGES = [f"{SITE}p{i}.html" for i in range(40)]


def copy_of(copy: int, perturbation: Perturbation = Perturbation()):
    html, anchors = original_page()
    return perturb_page(html, anchors, SITE + "page.html", copy, SITE, SITE_PAGES, VOCABULARY, perturbation)


def test_a_copy_differs_from_its_original_by_the_documented_fractions():
    html, _ = original_page()
    made = copy_of(1)
    before, before_words = split_words(html)
    after, after_words = split_words(made.html)
    changed = sum(before[i].lower() != after[j].lower() for i, j in zip(before_words, after_words))
    assert len(before_words) == len(after_words) == made.words
    assert changed == made.words_replaced == round(0.2 * made.words)
    assert all(after[j] in VOCABULARY for i, j in zip(before_words, after_words) if before[i] != after[j])
    # Links into the site: 2 of 20 lose their href, 2 point elsewhere in the site, all on the mirror host.
    hrefs = re.findall(r"<a( href=\"[^\"]*\")?>", made.html)
    assert sum(1 for h in hrefs if not h) == made.links_dropped == 2 and made.links == 20
    mirrored = re.findall(r'<a href="https://mirror1\.docs\.example\.org/v1/p(\d+)\.html(#s)?">(\d+)</a>', made.html)
    assert len(mirrored) == 18
    moved = [(target, text) for target, fragment, text in mirrored if target != text]
    assert len(moved) == made.links_retargeted == 2 and all(not f for t, f, x in mirrored if t != x)
    # Everything else into the site names the mirror; links out and markup stay.
    assert 'src="https://mirror1.docs.example.org/v1/logo.png"' in made.html
    assert made.html.count('href="https://other.example/') == 5
    assert "<style>.x { color: red }</style>" in made.html and "<!-- note -->" in made.html


def test_copies_are_deterministic_and_two_copies_of_a_page_differ():
    assert copy_of(1) == copy_of(1)
    assert copy_of(1).html != copy_of(2).html
    assert copy_of(1).html != copy_of(1, Perturbation(seed=7)).html
    assert "https://mirror2.docs.example.org/v1/" in copy_of(2).html


def test_no_perturbation_only_moves_the_page_to_its_mirror():
    html, _ = original_page()
    made = copy_of(3, Perturbation(words=0, drop_links=0, retarget_links=0))
    assert made.html == html.replace(SITE, "https://mirror3.docs.example.org/v1/")
    assert (made.words_replaced, made.links_dropped, made.links_retargeted) == (0, 0, 0)


@pytest.mark.parametrize("field, value", [("words", -0.1), ("drop_links", 1.5)])
def test_fractions_outside_zero_to_one_are_refused(field, value):
    with pytest.raises(ValueError, match=f"fraction in \\[0, 1\\] for {field}"):
        Perturbation(**{field: value})
    with pytest.raises(ValueError, match="dropped or re-targeted, not both"):
        Perturbation(drop_links=0.6, retarget_links=0.6)


def test_words_are_read_from_the_text_only():
    html = '<p title="attr words">Hello, wörld 42 x_y</p><script>no words</script>&nbsp;<!-- nor here -->end'
    pieces, words = split_words(html)
    assert "".join(pieces) == html
    assert [pieces[i] for i in words] == ["Hello", "wörld", "x", "y", "end"]


def test_the_vocabulary_follows_word_frequencies_and_stays_bounded():
    vocabulary = Vocabulary(size=200, per_page=50, seed=3)
    for _ in range(40):
        vocabulary.add("<p>" + "common " * 45 + "rare1 rare2 rare3 rare4 rare5" + "</p>")
    counts = Counter(vocabulary.words)
    assert len(vocabulary.words) == 200 and counts["common"] > 150
    again = Vocabulary(size=200, per_page=50, seed=3)
    for _ in range(40):
        again.add("<p>" + "common " * 45 + "rare1 rare2 rare3 rare4 rare5" + "</p>")
    assert again.words == vocabulary.words


def test_mirror_urls_keep_the_path_on_a_mirror_host():
    assert mirror_url("https://docs.python.org/3.11/x.html?q#f", 3) == "https://mirror3.docs.python.org/3.11/x.html?q#f"
    with pytest.raises(ValueError, match="absolute URL"):
        mirror_url("x.html", 1)


def test_rewritten_anchors_line_up_with_the_pages_links():
    """perturb_page reads a page's links from ``Rewrite.anchors``; they are its <a href> in order."""
    from simweb.corpora.links import Collection
    from simweb.corpora.sites import made_up_site

    site = made_up_site("aaa-doc", ["usr/share/doc/aaa-doc/html/a.html"])
    collection = Collection([site], {"aaa-doc": ["a.html", "b.html"]}, {"aaa-doc": ["a.html", "b.html"]})
    rewritten = rewrite_links("<a href=b.html>b</a><A HREF='#x'>x</A><a name=n>n</a><a href=\"a.html\">a</a>",
                              site, "a.html", collection)
    assert rewritten.anchors == ("https://aaa-doc.docs.example/b.html", "#x", "https://aaa-doc.docs.example/a.html")
    made = perturb_page(rewritten.html, rewritten.anchors, site.canonical_url("a.html"), 1, site.base_url,
                        [site.canonical_url("b.html")], [], Perturbation(words=0, drop_links=0.5, retarget_links=0))
    assert made.links == 2 and made.links_dropped == 1 and made.html.lower().count("href") == 2


def test_cli_prints_the_progress_of_a_long_build_where_no_bar_can_be_drawn(cache, tmp_path, capsys, monkeypatch):
    from simweb.cli import main
    from simweb.tasks import progress

    monkeypatch.setenv("SIMWEB_PROGRESS", "log")
    monkeypatch.setattr(progress, "LOG_AFTER_SECONDS", 0.0)
    args = ["corpus", "scale", "--pages", "25", "--packages", *PACKAGES, "--cache", str(cache), "--jobs", "1"]
    assert main([*args, "--out", str(tmp_path / "out")]) == 0
    printed = capsys.readouterr().out.splitlines()
    assert "real pages: 20/20 pages done" in printed and "copies: 5/5 pages done" in printed
    assert printed.index("real pages: 20/20 pages done") < printed.index("copies: 5/5 pages done")
