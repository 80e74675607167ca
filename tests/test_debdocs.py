"""DebDocs on hand-written pages and hand-built packages: layouts, directory, links, RDF, WARC.

The real packages are built in tests/test_debdocs_build.py; here every input is small and
written out, so each expected number is exact.
"""
from __future__ import annotations

import hashlib
import io
import json
import re
from collections import Counter
from pathlib import Path

import defusedxml.ElementTree as safe_et
import pytest
from selectolax.lexbor import LexborHTMLParser
from warcio.archiveiterator import ArchiveIterator

from conftest import make_deb
from simweb.core.directory import read_directory
from simweb.corpora import debdocs, docsites, hierarchy, layouts, links
from simweb.corpora import directory as odp
from simweb.corpora.debian import upstream_release
from simweb.corpora.sites import Site
from simweb.corpora.warc import shard_ranges

VERSIONS = {
    "postgresql-doc-15": "15.20-0+deb12u1",
    "python3.11-doc": "3.11.2-6+deb12u9",
    "python-django-doc": "3:3.2.25-0+deb12u7",
}
SITES = {s.key: s for s in debdocs.debdocs_sites(VERSIONS)}
PG, PY, DJ = SITES["postgresql"], SITES["python"], SITES["django"]


# --------------------------------------------------------------------------- page builders


def docbook(title: str | None, up: str | None = None, body: str = "", navheader: bool = True) -> str:
    """A page in PostgreSQL's DocBook XSL layout (navheader table with Prev/Up/Home/Next)."""
    head = f"<title>{title}</title>" if title is not None else ""
    up_cell = f'<a accesskey="u" href="{up}" title="Parent">Up</a>' if up else ""
    nav = (
        '<div class="navheader"><table width="100%" summary="Navigation header"><tr><th colspan="5" '
        f'align="center">{title}</th></tr><tr><td width="10%" align="left"><a accesskey="p" href="prev.html">Prev</a> '
        f'</td><td width="10%" align="left">{up_cell}</td><th width="60%" align="center">Parent</th>'
        '<td width="10%" align="right"><a accesskey="h" href="index.html" title="PostgreSQL 15.20 Documentation">'
        "Home</a></td></tr></table><hr /></div>"
        if navheader
        else ""
    )
    return (
        '<?xml version="1.0" encoding="UTF-8" standalone="no"?>\n<!DOCTYPE html PUBLIC "-//W3C//DTD XHTML 1.0 '
        'Transitional//EN" "http://www.w3.org/TR/xhtml1/DTD/xhtml1-transitional.dtd"><html xmlns="http://www.w3.org/1999/xhtml">'
        '<head><meta http-equiv="Content-Type" content="text/html; charset=UTF-8" />'
        f'{head}<link rel="stylesheet" type="text/css" href="stylesheet.css" /></head><body id="docContent">'
        f"{nav}<div class=\"sect1\">{body}</div></body></html>"
    )


def python_page(title: str | None, crumbs: list[tuple[str, str]] = (), body: str = "", depth: int = 0) -> str:
    """A page in the Python docs' Sphinx layout (div.related with nav-item breadcrumbs)."""
    up = "../" * depth
    items = "".join(
        f'<li class="nav-item nav-item-{i}"><a href="{href}" >{text}</a> &#187;</li>'
        for i, (href, text) in enumerate(crumbs, start=1)
    )
    head = f"<title>{title} &#8212; Python 3.11.2 documentation</title>" if title is not None else ""
    return (
        f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8" />{head}'
        f'<link rel="stylesheet" href="{up}_static/pydoctheme.css?2022.1" />'
        f'<script src="{up}_static/doctools.js"></script></head><body>'
        '<div class="related" role="navigation" aria-label="related navigation"><h3>Navigation</h3><ul>'
        f'<li class="right"><a href="{up}genindex.html" title="General Index">index</a></li>'
        f'<li id="cpython-language-and-version"><a href="{up}index.html">3.11.2 Documentation</a> &#187;</li>'
        f'{items}<li class="nav-item nav-item-this"><a href="">{title}</a></li></ul></div>'
        f'<div class="body" role="main">{body}</div>'
        f'<div class="footer">See <a href="/license.html">History and License</a></div></body></html>'
    )


def django_page(title: str | None, up: str | None = None, toctrees: list[tuple[str, list[str], str]] = (),
                body: str = "", depth: int = 0) -> str:
    """A page in the Django docs' Sphinx layout; toctrees are (section heading, hrefs, caption)."""
    root = "../" * depth
    up_link = f'|\n<a href="{up}" title="Top" accesskey="U">up</a>' if up else ""
    sections = ""
    for heading, hrefs, caption in toctrees:
        entries = "".join(f'<li class="toctree-l1"><a class="reference internal" href="{h}">{h}</a></li>' for h in hrefs)
        cap = f'<p class="caption" role="heading"><span class="caption-text">{caption}</span></p>' if caption else ""
        tree = f'<div class="toctree-wrapper compound">{cap}<ul>{entries}</ul></div>'
        sections += f'<div class="section" id="s-{len(sections)}"><h2>{heading}<a class="headerlink" href="#x">¶</a></h2>{tree}</div>' if heading else tree
    head = f"<title>{title} &#8212; Django 3.2.25 documentation</title>" if title is not None else ""
    return (
        f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8" />{head}'
        f'<link rel="stylesheet" href="{root}_static/default.css" />'
        "<script>var base = \"../templates/builtins.html\"; $(elem).html(\"<a href='\" + base + \"#x'>\");</script>"
        '</head><body><div class="document"><div id="custom-doc" class="yui-t6"><div id="hd">'
        f'<h1><a href="{root}index.html">Django 3.2.25 documentation</a></h1>'
        f'<div id="global-nav"><a title="Home page" href="{root}index.html">Home</a></div>'
        f'<div class="nav">&laquo; <a href="prev.html" title="Prev">previous</a> {up_link}</div></div>'
        f'<div id="bd"><div class="section"><h1>{title}</h1>{sections}{body}</div></div></div></div></body></html>'
    )


def place(site: Site, pages: dict[str, str]):
    docs = [layouts.read_page(site, path, html) for path, html in pages.items()]
    entries, counts = hierarchy.place_pages(site, docs)
    return {e.path: e for e in entries}, counts


# --------------------------------------------------------------------------- reading pages


def test_docbook_page_gives_title_and_up_link():
    page = layouts.read_page(PG, "sql-select.html", docbook("SELECT", up="sql-commands.html"))
    assert (page.title, page.title_found, page.layout_found, page.parent_ref) == (
        "SELECT", True, True, "sql-commands.html")


def test_a_page_without_the_sites_navigation_has_an_unknown_layout():
    page = layouts.read_page(PG, "legalnotice.html", docbook("Legal Notice", navheader=False))
    assert not page.layout_found and page.parent_ref is None


def test_a_page_without_title_gets_its_heading_or_file_name():
    with_heading = layouts.read_page(PG, "a.html", docbook(None, up="index.html", body="<h2>Heading  text</h2>"))
    assert (with_heading.title, with_heading.title_found) == ("Heading text", False)
    bare = layouts.read_page(PY, "library/nothing.html", "<html><body><div class='related'></div></body></html>")
    assert (bare.title, bare.title_found) == ("nothing", False)


def test_python_breadcrumbs_name_the_nearest_ancestor_and_the_title_loses_the_site_suffix():
    html = python_page("os.path — Common pathname manipulations",
                       [("index.html", "The Python Standard Library"), ("filesys.html", "File and Directory Access")],
                       depth=1)
    page = layouts.read_page(PY, "library/os.path.html", html)
    assert page.title == "os.path — Common pathname manipulations"
    assert page.parent_ref == "filesys.html" and page.layout_found


def test_django_toctree_entries_carry_their_caption_or_subsection_heading():
    html = django_page("Release notes", toctrees=[
        ("", ["security.html"], ""),
        ("3.2 release", ["3.2.1.html", "3.2.html"], ""),
        ("", ["faq.html"], "Other"),
    ], depth=1)
    page = layouts.read_page(DJ, "releases/index.html", html)
    assert page.toctree == (("security.html", ""), ("3.2.1.html", "3.2 release"), ("3.2.html", "3.2 release"),
                            ("faq.html", "Other"))
    assert page.title == "Release notes" and page.layout_found


# --------------------------------------------------------------------------- the directory


@pytest.mark.parametrize("title, segment", [
    ("Part VI. Reference", "Reference"),
    ("Chapter 9. Functions and Operators", "Functions_and_Operators"),
    ("9.4. String Functions and Operators", "String_Functions_and_Operators"),
    ("Appendix E. Release Notes", "Release_Notes"),
    ("E.1. Release 15.20", "Release_15.20"),
    ("email — An email and MIME handling package", "email"),
    ("Python/C API Reference Manual", "Python-C_API_Reference_Manual"),
    ("A Brief History of PostgreSQL", "A_Brief_History_of_PostgreSQL"),
    ("Soft links@", "Soft_links"),
    ("  Tabs\tand\nnewlines ", "Tabs_and_newlines"),
])
def test_category_segment_spells_titles_the_open_directory_way(title, segment):
    assert hierarchy.category_segment(title) == segment


def postgresql_site() -> dict[str, str]:
    return {
        "index.html": docbook("PostgreSQL 15.20 Documentation"),
        "reference.html": docbook("Part VI. Reference", up="index.html"),
        "sql-commands.html": docbook("SQL Commands", up="reference.html"),
        "sql-select.html": docbook("SELECT", up="sql-commands.html"),
        "sql-insert.html": docbook("INSERT", up="sql-commands.html"),
        "tutorial.html": docbook("Part I. Tutorial", up="index.html"),
        "tutorial-start.html": docbook("Chapter 1. Getting Started", up="tutorial.html"),
        "tutorial-install.html": docbook("1.1. Installation", up="tutorial-start.html"),
        "bookindex.html": docbook("Index", up="index.html"),
        "legalnotice.html": docbook("Legal Notice", navheader=False),
    }


def test_docbook_up_chain_gives_part_and_chapter_categories_and_marks_toc_pages():
    entries, counts = place(PG, postgresql_site())
    topic = {p: (e.topic, e.directory_page) for p, e in entries.items()}
    assert topic == {
        "index.html": ("Top/PostgreSQL", True),
        "reference.html": ("Top/PostgreSQL/Reference", True),
        "sql-commands.html": ("Top/PostgreSQL/Reference/SQL_Commands", True),
        "sql-select.html": ("Top/PostgreSQL/Reference/SQL_Commands", False),
        "sql-insert.html": ("Top/PostgreSQL/Reference/SQL_Commands", False),
        "tutorial.html": ("Top/PostgreSQL/Tutorial", True),
        "tutorial-start.html": ("Top/PostgreSQL/Tutorial/Getting_Started", True),
        "tutorial-install.html": ("Top/PostgreSQL/Tutorial/Getting_Started", False),
        "bookindex.html": ("Top/PostgreSQL", True),
        "legalnotice.html": (None, False),
    }
    assert entries["sql-select.html"].url == "https://www.postgresql.org/docs/15/sql-select.html"
    assert counts == Counter(listed_pages=3, directory_pages=6, unknown_layout=1)


def test_cycles_and_missing_parents_hang_from_the_root_and_are_counted():
    entries, counts = place(PG, {
        "index.html": docbook("Home"),
        "a.html": docbook("Chapter 1. A", up="b.html"),
        "b.html": docbook("Chapter 2. B", up="a.html"),
        "c.html": docbook("C", up="missing.html"),
    })
    assert counts["parent_cycle"] == 1 and counts["parent_missing"] == 1
    assert entries["c.html"].topic == "Top/PostgreSQL"
    # The loop is cut once: b (whose parent closed it) hangs from the root, a stays below b.
    assert (entries["b.html"].topic, entries["b.html"].directory_page) == ("Top/PostgreSQL/B", True)
    assert (entries["a.html"].topic, entries["a.html"].directory_page) == ("Top/PostgreSQL/B", False)


def test_sibling_nodes_with_one_label_are_told_apart():
    entries, counts = place(PG, {
        "index.html": docbook("Home"),
        "x1.html": docbook("Chapter 1. Overview", up="index.html"),
        "x2.html": docbook("Chapter 2. Overview", up="index.html"),
        "p1.html": docbook("P1", up="x1.html"),
        "p2.html": docbook("P2", up="x2.html"),
    })
    assert counts["label_collision"] == 1
    assert entries["p1.html"].topic == "Top/PostgreSQL/Overview"
    assert entries["p2.html"].topic == "Top/PostgreSQL/Overview_(x2)"


def python_site() -> dict[str, str]:
    lib = [("index.html", "The Python Standard Library")]
    return {
        "index.html": python_page("3.11.2 Documentation"),
        "genindex.html": python_page("Index"),
        "library/index.html": python_page("The Python Standard Library", depth=1),
        "library/filesys.html": python_page("File and Directory Access", lib, depth=1),
        "library/os.path.html": python_page(
            "os.path — Common pathname manipulations", lib + [("filesys.html", "File and Directory Access")],
            body='<a href="pathlib.html#x">pathlib</a> <a href="#os.path.join">join</a>', depth=1),
        "library/pathlib.html": python_page(
            "pathlib — Object-oriented filesystem paths", lib + [("filesys.html", "File and Directory Access")],
            body='<a href="os.path.html">os.path</a> <a href="https://docs.djangoproject.com/en/stable/topics/db/queries/">'
                 "Django queries</a>", depth=1),
    }


def test_python_breadcrumbs_give_the_library_chapters():
    entries, counts = place(PY, python_site())
    assert entries["library/os.path.html"].topic == "Top/Python/The_Python_Standard_Library/File_and_Directory_Access"
    assert not entries["library/os.path.html"].directory_page
    assert entries["library/filesys.html"].directory_page
    assert (entries["genindex.html"].topic, entries["genindex.html"].directory_page) == ("Top/Python", True)
    assert counts == Counter(listed_pages=2, directory_pages=4)


def django_site() -> dict[str, str]:
    return {
        "contents.html": django_page("Django documentation contents",
                                     toctrees=[("", ["topics/index.html", "releases/index.html"], "")]),
        "index.html": django_page("Django documentation"),
        "topics/index.html": django_page("Using Django", toctrees=[("", ["db/index.html"], "")], depth=1),
        "topics/db/index.html": django_page("Models and databases", up="../index.html",
                                            toctrees=[("", ["queries.html"], "")], depth=2),
        "topics/db/queries.html": django_page(
            "Making queries", up="../index.html", depth=2,
            body='<a href="/usr/share/doc/python3-doc/html/library/os.path.html#os.path.join">join</a>'
                 '<a href="https://www.postgresql.org/docs/current/sql-select.html">SELECT</a>'
                 '<a href="../index.html">up</a><a href="/usr/share/doc/python-psycopg2-doc/html/extras.html">x</a>'),
        "releases/index.html": django_page("Release notes", toctrees=[("3.2 release", ["3.2.1.html", "3.2.html"], "")],
                                           depth=1),
        "releases/3.2.html": django_page("Django 3.2 release notes", up="index.html", depth=1),
        "releases/3.2.1.html": django_page("Django 3.2.1 release notes", up="index.html", depth=1),
        "_modules/index.html": django_page("Overview: module code", up="../index.html", depth=1),
        "_modules/django/db.html": django_page("django.db", up="../index.html", depth=2),
    }


def test_django_toctrees_give_the_hierarchy_with_subsection_groups_and_viewcode_pages():
    entries, counts = place(DJ, django_site())
    topic = {p: (e.topic, e.directory_page) for p, e in entries.items()}
    assert topic == {
        "contents.html": ("Top/Django", True),
        "index.html": ("Top/Django", True),
        "topics/index.html": ("Top/Django/Using_Django", True),
        "topics/db/index.html": ("Top/Django/Using_Django/Models_and_databases", True),
        "topics/db/queries.html": ("Top/Django/Using_Django/Models_and_databases", False),
        "releases/index.html": ("Top/Django/Release_notes", True),
        "releases/3.2.html": ("Top/Django/Release_notes/3.2_release", False),
        "releases/3.2.1.html": ("Top/Django/Release_notes/3.2_release", False),
        "_modules/index.html": ("Top/Django/Overview:_module_code", True),
        "_modules/django/db.html": ("Top/Django/Overview:_module_code", False),
    }
    assert entries["topics/db/queries.html"].url == "https://docs.djangoproject.com/en/3.2/topics/db/queries/"
    assert counts == Counter(listed_pages=4, directory_pages=6)


# --------------------------------------------------------------------------- URLs and links


@pytest.mark.parametrize("site, path, url", [
    (DJ, "index.html", "https://docs.djangoproject.com/en/3.2/"),
    (DJ, "ref/index.html", "https://docs.djangoproject.com/en/3.2/ref/"),
    (DJ, "ref/models/querysets.html", "https://docs.djangoproject.com/en/3.2/ref/models/querysets/"),
    (DJ, "_static/default.css", "https://docs.djangoproject.com/en/3.2/_static/default.css"),
    (PY, "library/os.path.html", "https://docs.python.org/3.11/library/os.path.html"),
    (PY, "genindex-_.html", "https://docs.python.org/3.11/genindex-_.html"),
    (PG, "sql-select.html", "https://www.postgresql.org/docs/15/sql-select.html"),
])
def test_canonical_urls_are_the_public_ones_and_already_normalised(site, path, url):
    from simweb.core.urls import normalize_url

    assert site.canonical_url(path) == url and normalize_url(url) == url


def test_the_django_release_comes_from_the_package_version():
    assert upstream_release("3:3.2.25-0+deb12u7") == "3.2"
    assert upstream_release("4.2.11-1") == "4.2"
    assert debdocs.debdocs_sites({"python-django-doc": "2:4.2.11-1"})[2].base_url == "https://docs.djangoproject.com/en/4.2/"
    with pytest.raises(ValueError, match="numeric upstream"):
        upstream_release("1:abc-1")


def collection_of(*sites: tuple[Site, dict[str, str]], static: dict[str, list[str]] = None) -> links.Collection:
    static = static or {}
    return links.Collection(
        [s for s, _ in sites],
        {s.key: list(pages) + static.get(s.key, []) for s, pages in sites},
        {s.key: list(pages) for s, pages in sites},
    )


@pytest.fixture(scope="module")
def three_sites():
    return collection_of((PG, postgresql_site()), (PY, python_site()), (DJ, django_site()),
                         static={"python": ["license.html", "_static/doctools.js"], "django": ["_static/default.css"]})


@pytest.mark.parametrize("site, page, ref, expected, kind", [
    # Relative references inside the site become canonical URLs (Django's are directory-style).
    (DJ, "topics/db/queries.html", "../index.html", "https://docs.djangoproject.com/en/3.2/topics/", "site"),
    (DJ, "topics/db/queries.html", "index.html#s-x", "https://docs.djangoproject.com/en/3.2/topics/db/#s-x", "site"),
    (DJ, "topics/db/queries.html", "../../_static/default.css?v=1",
     "https://docs.djangoproject.com/en/3.2/_static/default.css?v=1", "site"),
    (PY, "library/os.path.html", "pathlib.html#x", "https://docs.python.org/3.11/library/pathlib.html#x", "site"),
    (PY, "library/os.path.html", "?q=1", "https://docs.python.org/3.11/library/os.path.html?q=1", "site"),
    # Debian's local documentation folders of the three sites, as paths and file: URLs.
    (DJ, "topics/db/queries.html", "/usr/share/doc/python3-doc/html/library/os.path.html#os.path.join",
     "https://docs.python.org/3.11/library/os.path.html#os.path.join", "local"),
    (PY, "library/os.path.html", "file:///usr/share/doc/python3.11/html/library/pathlib.html",
     "https://docs.python.org/3.11/library/pathlib.html", "local"),
    # Public URLs of the same release under another name, when the page exists here.
    (DJ, "topics/db/queries.html", "https://www.postgresql.org/docs/current/sql-select.html",
     "https://www.postgresql.org/docs/15/sql-select.html", "alias"),
    (PY, "library/pathlib.html", "https://docs.djangoproject.com/en/stable/topics/db/queries/",
     "https://docs.djangoproject.com/en/3.2/topics/db/queries/", "alias"),
    (PG, "sql-select.html", "http://docs.python.org/3/library/os.path.html#x",
     "https://docs.python.org/3.11/library/os.path.html#x", "alias"),
    (PG, "sql-select.html", "https://docs.python.org/library/pathlib.html",
     "https://docs.python.org/3.11/library/pathlib.html", "alias"),
    # Root-relative: a file of the site maps to it, another Debian package becomes a file: URL.
    (PY, "library/os.path.html", "/license.html", "https://docs.python.org/3.11/license.html", "root"),
    (DJ, "topics/db/queries.html", "/usr/share/doc/python-psycopg2-doc/html/extras.html",
     "file:///usr/share/doc/python-psycopg2-doc/html/extras.html", "other_local"),
    (DJ, "topics/db/queries.html", "../../../../../javascript/jquery.js", "file:///usr/share/javascript/jquery.js",
     "other_local"),
])
def test_references_get_their_canonical_url(three_sites, site, page, ref, expected, kind):
    assert three_sites.resolve(site, page, ref) == (expected, kind)


@pytest.mark.parametrize("site, page, ref, kind", [
    (PG, "sql-select.html", "https://www.postgresql.org/docs/current/no-such-page.html", "unchanged"),
    (PY, "library/os.path.html", "https://docs.python.org/3.12/library/os.path.html", "unchanged"),
    (PY, "library/os.path.html", "https://docs.python.org/ko/", "unchanged"),
    (PY, "library/os.path.html", "https://example.org/a.html", "unchanged"),
    (PY, "library/os.path.html", "mailto:docs@python.org", "unchanged"),
    (PY, "library/os.path.html", "/bugs.html", "unchanged"),
    (PY, "library/os.path.html", "#os.path.join", "same_page"),
    (PY, "library/os.path.html", "", "same_page"),
])
def test_references_outside_the_collection_stay_as_they_are(three_sites, site, page, ref, kind):
    assert three_sites.resolve(site, page, ref) == (None, kind)


def test_rewriting_changes_only_url_attribute_values(three_sites):
    html = django_site()["topics/db/queries.html"].replace(
        "</body>",
        '<!-- <a href="commented.html"> --><a title="a > b" href=\'queries.html#y\'>q</a>'
        '<a href="queries.html?a=1&amp;b=2">amp</a><A HREF=../index.html>caps</A>'
        "<style>a[href='x.html'] { color: red }</style><form action=\"../../search.html\"></form></body>",
    )
    result = links.rewrite_links(html, DJ, "topics/db/queries.html", three_sites)
    out = result.html
    assert "https://docs.python.org/3.11/library/os.path.html#os.path.join" in out
    assert 'href="https://www.postgresql.org/docs/15/sql-select.html"' in out
    assert "file:///usr/share/doc/python-psycopg2-doc/html/extras.html" in out
    assert 'href="https://docs.djangoproject.com/en/3.2/topics/db/queries/#y"' in out
    assert 'href="https://docs.djangoproject.com/en/3.2/topics/db/queries/?a=1&amp;b=2"' in out
    assert 'HREF="https://docs.djangoproject.com/en/3.2/topics/"' in out
    assert 'action="https://docs.djangoproject.com/en/3.2/search/"' in out
    # Script, style and comment bodies are not markup: left exactly as they were.
    assert "$(elem).html(\"<a href='\" + base + \"#x'>\");" in out
    assert "<!-- <a href=\"commented.html\"> -->" in out and "a[href='x.html']" in out
    # Outside the attribute values nothing moved.
    strip = re.compile(r"""((?:href|HREF|src|action)=)("[^"]*"|'[^']*'|[^\s"'>]+)""")
    assert strip.sub(r"\1", out) == strip.sub(r"\1", html)
    # Every <a href> an HTML parser sees is reported, in document order.
    parsed = [a.attributes["href"] for a in LexborHTMLParser(out).css("a[href]")]
    assert list(result.anchors) == parsed


def test_link_counts_by_target(three_sites):
    listed = frozenset({PY.canonical_url("library/pathlib.html"), DJ.canonical_url("topics/db/queries.html")})
    py = links.rewrite_links(python_site()["library/os.path.html"], PY, "library/os.path.html", three_sites)
    stats = links.link_stats(PY, [("library/os.path.html", py.anchors)], three_sites, listed)
    # genindex, index, library/index, filesys (internal); pathlib (internal, listed);
    # "" and #os.path.join (same page); /license.html → license.html is a static file here: external.
    assert stats == links.LinkStats(anchors=8, internal=5, cross_site=0, to_directory=1, same_page=2, external=1)
    pl = links.rewrite_links(python_site()["library/pathlib.html"], PY, "library/pathlib.html", three_sites)
    stats = links.link_stats(PY, [("library/pathlib.html", pl.anchors)], three_sites, listed)
    assert (stats.cross_site, stats.to_directory) == (1, 1)


# --------------------------------------------------------------------------- RDF and TSV


def entries_of_all_sites():
    entries = []
    for site, pages in ((PG, postgresql_site()), (PY, python_site()), (DJ, django_site())):
        placed, _ = place(site, pages)
        entries.extend(placed.values())
    return entries


def test_rdf_is_well_formed_open_directory_content(shared_fixtures):
    entries = entries_of_all_sites()
    text = odp.odp_rdf(entries, comment="made -- by a test")
    root = safe_et.fromstring(text.encode("utf-8"))
    ns = {"d": "http://purl.org/dc/elements/1.0/", "r": "http://www.w3.org/TR/RDF/", "o": "http://dmoz.org/rdf/"}
    # Same root element and namespaces as the real dump.
    real = safe_et.parse(str(shared_fixtures / "odp" / "dmoz-content-excerpt.rdf")).getroot()
    assert root.tag == real.tag == "{http://dmoz.org/rdf/}RDF"
    topics = root.findall("o:Topic", ns)
    ids = [t.get("{http://www.w3.org/TR/RDF/}id") for t in topics]
    assert ids[0] == "Top" and ids == sorted(ids, key=lambda i: i.split("/"))
    assert [int(t.find("o:catid", ns).text) for t in topics] == list(range(1, len(topics) + 1))
    for topic_id in ids:  # every ancestor of a topic is a topic
        assert "/".join(topic_id.split("/")[:-1]) in ids or topic_id == "Top"
    pages = {p.get("about"): (p.find("d:Title", ns).text, p.find("o:topic", ns).text)
             for p in root.findall("o:ExternalPage", ns)}
    links = {l.get("{http://www.w3.org/TR/RDF/}resource"): t.get("{http://www.w3.org/TR/RDF/}id")
             for t in topics for l in t.findall("o:link", ns)}
    assert links == {url: topic for url, (_, topic) in pages.items()}
    listed = {e.url: (e.title, e.topic) for e in entries if e.topic and not e.directory_page}
    assert pages == listed and len(pages) == 9
    assert "Top/Django/Release_notes/3.2_release" in ids


def test_titles_with_markup_characters_and_controls_survive_the_rdf():
    entry = odp.DirectoryEntry("python", "a.html", "https://docs.python.org/3.11/a.html?x=1&y=2",
                              'Tom & "Jerry" <b>\x07', "Top/Python/A_&_B/C", False)
    root = safe_et.fromstring(odp.odp_rdf([entry]).encode("utf-8"))
    page = root.find("{http://dmoz.org/rdf/}ExternalPage")
    assert page.get("about") == entry.url
    assert page.find("{http://purl.org/dc/elements/1.0/}Title").text == 'Tom & "Jerry" <b>'
    assert page.find("{http://dmoz.org/rdf/}topic").text == "Top/Python/A_&_B/C"


def test_rdf_and_tsv_round_trip_through_the_directory_parser():
    entries = entries_of_all_sites()
    pages = odp.directory_pages_text(entries).split()
    from_rdf = read_directory(io.BytesIO(odp.odp_rdf(entries).encode()), fmt="rdf", directory_pages=pages)
    from_tsv = read_directory(io.BytesIO(odp.directory_tsv(entries).encode()), fmt="tsv", directory_pages=pages)
    expected = {
        "https://www.postgresql.org/docs/15/sql-select.html": ("PostgreSQL", "Reference", "SQL_Commands"),
        "https://www.postgresql.org/docs/15/sql-insert.html": ("PostgreSQL", "Reference", "SQL_Commands"),
        "https://www.postgresql.org/docs/15/tutorial-install.html": ("PostgreSQL", "Tutorial", "Getting_Started"),
        "https://docs.python.org/3.11/library/os.path.html": ("Python", "The_Python_Standard_Library",
                                                              "File_and_Directory_Access"),
        "https://docs.python.org/3.11/library/pathlib.html": ("Python", "The_Python_Standard_Library",
                                                              "File_and_Directory_Access"),
        "https://docs.djangoproject.com/en/3.2/topics/db/queries/": ("Django", "Using_Django", "Models_and_databases"),
        "https://docs.djangoproject.com/en/3.2/releases/3.2/": ("Django", "Release_notes", "3.2_release"),
        "https://docs.djangoproject.com/en/3.2/releases/3.2.1/": ("Django", "Release_notes", "3.2_release"),
    }
    assert from_rdf.classes == from_tsv.classes == expected
    # _modules/django/db is listed at depth 2 (above the class depth) and ignored.
    assert from_tsv.counts["above_depth"] == 1
    assert all(from_rdf.is_directory_page(u) for u in pages) and len(pages) == 16


def test_summary_counts_classes_at_depth_three():
    entries = entries_of_all_sites()
    stats = [links.LinkStats(10, 6, 1, 4, 3, 1), links.LinkStats(5, 2, 0, 1, 2, 1)]
    summary = odp.summarize(entries, stats)
    assert summary["pages"] == 26 and summary["listed_pages"] == 9 and summary["directory_pages"] == 16
    assert summary["unplaced_pages"] == 1 and summary["pages_above_class_depth"] == 1
    assert summary["classes"] == 5
    assert summary["pages_per_class"] == {"min": 1, "median": 2, "max": 2}
    assert (summary["links"], summary["links_inside_collection"], summary["links_to_directory"]) == (15, 8, 5)


def test_page_charset_reads_the_declaration():
    assert layouts.page_charset(b'<?xml version="1.0" encoding="UTF-8"?><html>') == "utf-8"
    assert layouts.page_charset(b'<meta http-equiv="Content-Type" content="text/html; charset=windows-1251">') == "windows-1251"
    assert layouts.page_charset(b"<meta charset=bogus-charset>") == "utf-8"
    assert layouts.page_charset(b"<p>no declaration</p>") == "utf-8"


# --------------------------------------------------------------------------- packages and the build


def tiny_cache(folder: Path) -> Path:
    """Three small packages shaped like the real ones (same names, folders and layouts)."""
    folder.mkdir(parents=True, exist_ok=True)
    pg = {PG.html_root + p: h.encode() for p, h in postgresql_site().items()}
    pg[PG.html_root + "stylesheet.css"] = b"body { }"
    pg["usr/share/doc/postgresql-doc-15/copyright"] = b"not part of the site"
    py = {PY.html_root + p: h.encode() for p, h in python_site().items()}
    py[PY.html_root + "library/untitled.html"] = python_page(
        None, [("index.html", "The Python Standard Library"), ("filesys.html", "File and Directory Access")],
        depth=1).encode()
    py[PY.html_root + "library/broken.html"] = b'<meta charset="utf-8"><title>bad \xff bytes</title>'
    py[PY.html_root + "license.html"] = python_page("History and License").encode()
    py[PY.html_root + "_sources/index.rst.txt"] = b"source"
    py[PY.html_root + "_static/jquery.js"] = None  # a symbolic link, as Debian ships it
    dj = {DJ.html_root + p: h.encode() for p, h in django_site().items()}
    dj[DJ.html_root + "_static/default.css"] = b"body { }"
    for package, files in (("postgresql-doc-15", pg), ("python3.11-doc", py), ("python-django-doc", dj)):
        make_deb(folder, package, VERSIONS[package], files)
    return folder


@pytest.fixture(scope="module")
def tiny_build(tmp_path_factory):
    base = tmp_path_factory.mktemp("debdocs")
    cache = tiny_cache(base / "cache")
    summary = debdocs.build_debdocs(str(base / "out"), str(cache))
    return base, cache, summary


def test_tiny_build_summary_counts_every_case(tiny_build):
    _, _, summary = tiny_build
    assert summary["pages"] == 10 + 8 + 10  # broken.html is not in its declared charset: skipped
    assert summary["undecodable_pages_skipped"] == 1
    assert summary["untitled_pages"] == 1 and summary["unknown_layout_pages"] == 1
    assert summary["static_files_skipped"] == 1 + 2 + 1
    assert summary["classes"] == 5
    assert summary["listed_pages"] == 3 + 4 + 4
    assert summary["sites"]["django"]["links_cross_site"] == 2  # to Python's os.path and PostgreSQL's SELECT


def test_tiny_build_warc_records_and_headers(tiny_build):
    base, _, _ = tiny_build
    seen = {}
    for warc in sorted((base / "out" / "warc").glob("*.warc.gz")):
        with open(warc, "rb") as f:
            records = [(r.rec_type, r.rec_headers, r.http_headers, r.content_stream().read())
                       for r in ArchiveIterator(f, check_digests="raise")]
        assert records[0][0] == "warcinfo"
        for rec_type, rec_headers, headers, body in records[1:]:
            assert rec_type == "response"
            assert headers.get_statuscode() == "200"
            assert headers.get_header("Content-Type") == "text/html; charset=utf-8"
            assert int(headers.get_header("Content-Length")) == len(body)
            assert rec_headers.get_header("WARC-Date") == "2026-01-01T00:00:00Z"
            assert rec_headers.get_header("WARC-Payload-Digest").startswith("sha1:")
            seen[rec_headers.get_header("WARC-Target-URI")] = body.decode()
    assert len(seen) == 28
    queries = seen["https://docs.djangoproject.com/en/3.2/topics/db/queries/"]
    assert 'href="https://docs.python.org/3.11/library/os.path.html#os.path.join"' in queries
    assert 'href="https://www.postgresql.org/docs/15/sql-select.html"' in queries
    assert 'href="https://docs.python.org/3.11/license.html"' in seen["https://docs.python.org/3.11/library/os.path.html"]


def test_tiny_build_manifest_and_directory(tiny_build):
    base, cache, _ = tiny_build
    out = base / "out"
    manifest = json.loads((out / "MANIFEST.json").read_text())
    assert {p["package"]: p["version"] for p in manifest["packages"]} == VERSIONS
    for package in manifest["packages"]:
        assert package["sha256"] == hashlib.sha256((cache / package["file"]).read_bytes()).hexdigest()
    for name, digest in manifest["outputs"].items():
        assert hashlib.sha256((out / name).read_bytes()).hexdigest() == digest
    pages = (out / "directory_pages.txt").read_text().split()
    with open(out / "directory.rdf", "rb") as f:
        directory = read_directory(f, fmt="rdf", directory_pages=pages)
    assert len(directory) == 3 + 3 + 3  # listed pages at depth 3 or below, untitled.html included
    assert directory.class_of("https://docs.python.org/3.11/library/untitled.html") == (
        "Python", "The_Python_Standard_Library", "File_and_Directory_Access")


def test_tiny_rebuild_from_the_cache_is_byte_identical(tiny_build):
    base, cache, _ = tiny_build
    debdocs.build_debdocs(str(base / "again"), str(cache))
    first = {p.relative_to(base / "out"): p.read_bytes() for p in (base / "out").rglob("*") if p.is_file()}
    second = {p.relative_to(base / "again"): p.read_bytes() for p in (base / "again").rglob("*") if p.is_file()}
    assert first.keys() == second.keys() and len(first) == 8
    assert all(first[k] == second[k] for k in first)


def test_cli_builds_without_prefect_and_reports_a_missing_package(tmp_path, monkeypatch, capsys):
    from simweb.cli import main

    cache = tiny_cache(tmp_path / "cache")
    assert main(["corpus", "debdocs", "--out", str(tmp_path / "out"), "--cache", str(cache), "--no-prefect"]) == 0
    printed = capsys.readouterr().out
    assert re.search(r"pages\s+28\b", printed) and "classes at depth 3" in printed
    (cache / "python3.11-doc_3.11.2-6+deb12u9_all.deb").unlink()
    monkeypatch.setenv("PATH", str(tmp_path / "empty-bin"))
    assert main(["corpus", "debdocs", "--out", str(tmp_path / "out2"), "--cache", str(cache), "--no-prefect"]) == 2
    assert "python3.11-doc" in capsys.readouterr().err


def test_the_prefect_flow_writes_what_the_plain_stages_write(tiny_build, prefect_harness):
    from simweb.flows.debdocs_corpus import debdocs_corpus

    base, cache, summary = tiny_build
    assert debdocs_corpus(out=str(base / "flow"), cache=str(cache)) == summary
    plain = {p.relative_to(base / "out"): p.read_bytes() for p in (base / "out").rglob("*") if p.is_file()}
    flow = {p.relative_to(base / "flow"): p.read_bytes() for p in (base / "flow").rglob("*") if p.is_file()}
    assert plain == flow


def test_large_sites_are_written_in_shards_with_the_same_pages(tiny_build, tmp_path, monkeypatch):
    base, cache, summary = tiny_build
    monkeypatch.setattr(docsites, "SHARD_BYTES", 2_000)
    sharded = debdocs.build_debdocs(str(tmp_path / "out"), str(cache))
    assert sharded == summary  # the same pages, links and directory

    def pages(folder: Path, most: int) -> dict[str, bytes]:
        found = {}
        for warc in sorted(folder.glob("*.warc.gz")):
            with open(warc, "rb") as f:
                records = list((r.rec_type, r.rec_headers.get_header("WARC-Target-URI"), r.content_stream().read())
                               for r in ArchiveIterator(f))
            assert records[0][0] == "warcinfo" and 1 <= len(records) - 1 <= most
            found.update({url: body for kind, url, body in records[1:]})
        return found

    names = sorted(p.name for p in (tmp_path / "out" / "warc").glob("*.warc.gz"))
    assert names[:3] == ["postgresql-doc-15-00.warc.gz", "postgresql-doc-15-01.warc.gz", "postgresql-doc-15-02.warc.gz"]
    assert pages(tmp_path / "out" / "warc", 4) == pages(base / "out" / "warc", 10)
    manifest = json.loads((tmp_path / "out" / "MANIFEST.json").read_text())
    assert sorted(n for n in manifest["outputs"] if n.startswith("warc/")) == [f"warc/{n}" for n in names]


def test_shards_stay_within_their_byte_budget():
    assert shard_ranges([], 10) == [(0, 0)]
    assert shard_ranges([4, 4, 4, 20, 1], 10) == [(0, 2), (2, 3), (3, 4), (4, 5)]
    assert shard_ranges([10, 10], 10) == [(0, 1), (1, 2)]
