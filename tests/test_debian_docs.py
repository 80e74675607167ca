"""Any Debian documentation packages as one crawl (simweb.corpora.debian_docs): the site of a
package no table knows (its folders), known sites and layouts, links rewritten between packages.

Every package is built in the test; each expected number is counted by hand from the pages.
"""
from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
from warcio.archiveiterator import ArchiveIterator

from conftest import make_deb
from simweb.corpora import CorpusError
from simweb.corpora.debian_docs import build_debian_docs, debian_docs
from simweb.corpora.docsites import check_distinct_sites
from simweb.corpora.hierarchy import place_pages
from simweb.corpora.layouts import SPHINX_TOCTREE, read_page
from simweb.corpora.sites import KNOWN_SITES, Site, made_up_site, package_site

TINY = "usr/share/doc/tinydoc-doc/html/"
LINUX = "usr/share/doc/linux-doc-6.1/html/"


def page(title: str, body: str = "") -> bytes:
    return f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{title}</title></head><body>{body}</body></html>".encode()


def tinydoc() -> dict[str, bytes | None]:
    """A package no table knows: a generator without navigation, its pages in folders."""
    return {
        TINY + "index.html": page("Tinydoc", '<a href="guide/index.html">Guide</a> <a href="api/a.html">A</a>'),
        TINY + "guide/index.html": page("Guide", '<a href="start.html">Start</a> <a href="advanced/deep.html">Deep</a>'),
        TINY + "guide/start.html": page("Getting started", '<a href="../api/a.html#f">a()</a> <a href="#top">top</a>'
                                        '<img src="../style/logo.png">'),
        TINY + "guide/advanced/deep.html": page("Deep", '<a href="/usr/share/doc/tinydoc-doc/html/api/b.html">b</a>'
                                                '<a href="https://www.kernel.org/doc/html/latest/index.html">kernel</a>'),
        TINY + "api/a.html": page("a", '<a href="b.html">b</a> <a href="/usr/share/doc/linux-doc-6.1/html/core.html">'
                                  "core</a> <a href=\"https://example.org/\">elsewhere</a>"),
        TINY + "api/b.html": page("b", '<a href="a.html">a</a>'),
        TINY + "style/logo.png": b"\x89PNG",
        TINY + "style/site.css": b"body {}",
        "usr/share/doc/tinydoc-doc/copyright": b"c",
    }


def rtd_page(title: str, crumbs: list[str], body: str = "", depth: int = 0) -> bytes:
    """A page in the Read the Docs theme: a home icon, one breadcrumb per ancestor, the page itself."""
    up = "../" * depth
    items = "".join(f'<li class="breadcrumb-item"><a href="{href}">x</a></li>' for href in crumbs)
    return (
        f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{title} &mdash; The Linux Kernel  documentation"
        f'</title><script src="{up}_static/documentation_options.js"></script></head><body>'
        f'<ul class="wy-breadcrumbs"><li><a href="{up}index.html" class="icon icon-home"></a></li>{items}'
        f'<li class="breadcrumb-item active">{title}</li><li class="wy-breadcrumbs-aside">'
        f'<a href="{up}_sources/x.rst.txt">View page source</a></li></ul><div role="main">{body}</div></body></html>'
    ).encode()


def linux() -> dict[str, bytes | None]:
    """A known site in the Read the Docs layout (the Linux kernel's docs)."""
    return {
        LINUX + "index.html": rtd_page("The Linux Kernel documentation", []),
        LINUX + "core.html": rtd_page("Core API", [], '<a href="admin/index.html">admin</a>'),
        LINUX + "admin/index.html": rtd_page("Admin guide", [], depth=1),
        LINUX + "admin/sysctl/index.html": rtd_page("Documentation for /proc/sys", ["../index.html"], depth=2),
        LINUX + "admin/sysctl/vm.html": rtd_page("VM", ["../index.html", "index.html"], depth=2),
        LINUX + "admin/sysctl/kernel.html": rtd_page("Kernel", ["../index.html", "index.html"], depth=2),
    }


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    base = tmp_path_factory.mktemp("debian-docs")
    cache = base / "cache"
    make_deb(cache, "tinydoc-doc", "1.0-1", tinydoc())
    make_deb(cache, "linux-doc-6.1", "6.1.192-2", linux())
    summary = build_debian_docs(["tinydoc-doc", "linux-doc-6.1"], str(base / "out"), str(cache))
    records = {}
    for warc in sorted((base / "out" / "warc").glob("*.warc.gz")):
        with open(warc, "rb") as f:
            for record in ArchiveIterator(f, check_digests="raise"):
                if record.rec_type == "response":
                    records[record.rec_headers.get_header("WARC-Target-URI")] = record.content_stream().read().decode()
    return base, cache, summary, records


def test_a_package_no_table_knows_gets_a_made_up_host_and_its_html_folder_as_root():
    site = made_up_site("libstdc++-12-doc", ["usr/share/doc/x/html/a/b.html", "usr/share/doc/x/html/c.html"])
    assert (site.html_root, site.base_url) == ("usr/share/doc/x/html/", "https://libstdcxx-12-doc.docs.example/")
    assert site.local_roots == ("/usr/share/doc/x/html/",) and site.name == "libstdc++-12-doc"
    assert site.canonical_url("a/b.html") == "https://libstdcxx-12-doc.docs.example/a/b.html"


@pytest.mark.parametrize("package, version, base_url, name", [
    ("python-django-doc", "3:3.2.25-0+deb12u7", "https://docs.djangoproject.com/en/3.2/", "Django"),
    ("openjdk-17-doc", "17.0.21.1+2-1~deb12u1", "https://docs.oracle.com/en/java/javase/17/docs/api/", "Java_SE_17"),
    ("rust-doc", "1.63.0+dfsg1-2", "https://doc.rust-lang.org/1.63.0/", "Rust_1.63.0"),
    ("linux-doc-6.1", "6.1.192-2", "https://www.kernel.org/doc/html/v6.1/", "Linux_kernel"),
    ("python-scipy-doc", "1.10.1-2", "https://docs.scipy.org/doc/scipy-1.10.1/", "SciPy"),
])
def test_known_sites_take_their_release_from_the_package_version(package, version, base_url, name):
    site = package_site(package, version, [])
    assert (site.base_url, site.name, site.package) == (base_url, name, package)
    assert site.local_roots == (KNOWN_SITES[package].local_roots or ("/" + site.html_root,))


def test_folders_are_the_hierarchy_of_a_site_without_known_navigation(built):
    base, _, summary, _ = built
    topics = dict(line.split("\t") for line in (base / "out" / "directory.tsv").read_text().splitlines())
    tiny = "https://tinydoc-doc.docs.example/"
    assert {u: t for u, t in topics.items() if u.startswith(tiny)} == {
        tiny + "guide/start.html": "Top/tinydoc-doc/guide",
        tiny + "guide/advanced/deep.html": "Top/tinydoc-doc/guide/advanced",
        tiny + "api/a.html": "Top/tinydoc-doc/api",
        tiny + "api/b.html": "Top/tinydoc-doc/api",
    }
    # A folder's index.html is the folder's own page, as is the site's root page.
    pages = (base / "out" / "directory_pages.txt").read_text().split()
    assert [p for p in pages if p.startswith(tiny)] == [tiny + "guide/index.html", tiny + "index.html"]
    assert summary["sites"]["tinydoc-doc"]["pages"] == 6
    assert summary["sites"]["tinydoc-doc"]["listed_pages"] == 4


def test_read_the_docs_breadcrumbs_give_a_known_sites_hierarchy(built):
    base, _, _, _ = built
    topics = dict(line.split("\t") for line in (base / "out" / "directory.tsv").read_text().splitlines())
    kernel = "https://www.kernel.org/doc/html/v6.1/"
    assert topics[kernel + "admin/sysctl/vm.html"] == "Top/Linux_kernel/Admin_guide/Documentation_for_-proc-sys"
    assert topics[kernel + "admin/sysctl/kernel.html"] == "Top/Linux_kernel/Admin_guide/Documentation_for_-proc-sys"
    assert topics[kernel + "core.html"] == "Top/Linux_kernel"  # its only crumb is the home page


def test_links_between_pages_and_packages_get_the_public_urls(built):
    _, _, summary, records = built
    tiny = "https://tinydoc-doc.docs.example/"
    start = records[tiny + "guide/start.html"]
    assert f'href="{tiny}api/a.html#f"' in start and 'href="#top"' in start
    assert f'src="{tiny}style/logo.png"' in start
    deep = records[tiny + "guide/advanced/deep.html"]
    assert f'href="{tiny}api/b.html"' in deep  # a path into the package's own Debian folder
    a = records[tiny + "api/a.html"]
    assert 'href="https://www.kernel.org/doc/html/v6.1/core.html"' in a  # into the other package
    assert 'href="https://example.org/"' in a
    assert summary["sites"]["tinydoc-doc"]["links_cross_site"] == 1
    assert summary["references_by_kind"]["local"] == 2  # deep's and a's Debian paths


def test_manifest_names_the_exact_packages_and_every_output(built):
    base, cache, _, _ = built
    manifest = json.loads((base / "out" / "MANIFEST.json").read_text())
    assert manifest["corpus"] == "debian-docs"
    assert [(p["package"], p["version"]) for p in manifest["packages"]] == [
        ("tinydoc-doc", "1.0-1"), ("linux-doc-6.1", "6.1.192-2")]
    assert [s["base_url"] for s in manifest["sites"]] == [
        "https://tinydoc-doc.docs.example/", "https://www.kernel.org/doc/html/v6.1/"]
    assert {n for n in manifest["outputs"] if n.startswith("warc/")} == {
        "warc/tinydoc-doc-00.warc.gz", "warc/linux-doc-6.1-00.warc.gz"}


def test_a_package_named_twice_or_none_is_refused():
    with pytest.raises(CorpusError, match="distinct.*rust-doc named more than once.*apt-cache search"):
        debian_docs(["rust-doc", "ghc-doc", "rust-doc"])
    with pytest.raises(CorpusError, match="expected a list of distinct"):
        debian_docs([])


def test_two_sites_of_one_name_are_refused():
    one = made_up_site("a-doc", ["usr/share/doc/a/x.html"])
    with pytest.raises(CorpusError, match="one site per name, found Rust.*give one a site of its own"):
        check_distinct_sites([
            Site("r1", "Rust", "rust-doc", "", "https://a/", "folders", "index.html", (), ()),
            Site("r2", "Rust", "rust-web-doc", "", "https://b/", "folders", "index.html", (), ()), one])


def test_a_package_without_html_pages_gets_a_clear_error(tmp_path):
    make_deb(tmp_path, "empty-doc", "1-1", {"usr/share/doc/empty-doc/README": b"text"})
    with pytest.raises(CorpusError, match="holds no HTML pages.*expected the documentation site"):
        build_debian_docs(["empty-doc"], str(tmp_path / "out"), str(tmp_path))


def test_any_sphinx_page_carries_the_toctree_layout():
    site = Site("s", "S", "s-doc", "", "https://s/", SPHINX_TOCTREE, "index.html", (), ())
    sphinx = ('<html><head><title>Guide</title><script src="_static/documentation_options.js"></script></head>'
              '<body><div class="toctree-wrapper"><ul><li class="toctree-l1"><a href="a.html">A</a></li></ul></div>'
              "</body></html>")
    root = read_page(site, "index.html", sphinx)
    child = read_page(site, "a.html", sphinx.replace("Guide", "A").replace("a.html", "b.html"))
    other = read_page(site, "c.html", "<html><head><title>C</title></head></html>")
    assert (root.layout_found, child.layout_found, other.layout_found) == (True, True, False)
    entries, counts = place_pages(site, [root, child, other])
    assert {e.path: e.topic for e in entries} == {"index.html": "Top/S", "a.html": "Top/S", "c.html": None}
    assert counts == Counter(directory_pages=1, listed_pages=1, unknown_layout=1)


def test_cli_builds_a_crawl_and_reports_a_missing_package(tmp_path, monkeypatch, capsys):
    from simweb.cli import main

    make_deb(tmp_path / "cache", "tinydoc-doc", "1.0-1", tinydoc())
    assert main(["corpus", "debian-docs", "--packages", "tinydoc-doc", "--out", str(tmp_path / "out"),
                 "--cache", str(tmp_path / "cache")]) == 0
    assert "pages                                6" in capsys.readouterr().out
    monkeypatch.setenv("PATH", str(tmp_path / "empty-bin"))
    assert main(["corpus", "debian-docs", "--packages", "nosuch-doc", "--out", str(tmp_path / "out2"),
                 "--cache", str(tmp_path / "cache")]) == 2
    assert "apt-get not found" in capsys.readouterr().err
    assert Path(tmp_path / "out" / "SUMMARY.json").exists()
