"""A site's pages placed in a topic tree (paper Section 2.1: the directory is a tree).

Every page gets the category ``Top/<Site>/<label>/<label>/…`` of the node it sits in. Where the
site's layout states a hierarchy (``simweb.corpora.layouts``) the labels are the titles of its
table-of-contents pages; in the ``FOLDERS`` layout they are the names of its folders. The
directory's own pages — the root, the table-of-contents pages, the site-wide indexes — are
marked, to be kept out of the evaluation as the paper kept out the Open Directory's own pages
(Section 5, footnote 8).

``place_pages`` runs in phases, each a function of its own: who lists whom in a toctree
(``_listings``), each page's parent (``_parents``), cycles cut (``_break_cycles``), the
nodes named top-down (``_name_nodes``), and the entries (``_entries``).
"""
from __future__ import annotations

import posixpath
import re
from collections import Counter
from collections.abc import Sequence
from urllib.parse import unquote, urlsplit

from simweb.core.directory import ROOT
from simweb.corpora.directory import DirectoryEntry
from simweb.corpora.layouts import FOLDERS, SPHINX_TOCTREE, DocPage
from simweb.corpora.sites import Site

__all__ = ["category_segment", "place_pages", "site_path"]

# Sphinx and DocBook index pages that list the whole site rather than one topic.
_INDEX_PAGES = re.compile(r"(genindex(-[^/]*)?|py-modindex|search|bookindex|contents|index)\.html")


def category_segment(title: str) -> str:
    """A category name from a TOC page's title, spelt the Open Directory's way.

    Section numbering is dropped ("Part VI. Reference", "Chapter 9. Functions and Operators",
    "9.4. String Functions" → "Reference", …), a module page keeps the name before its
    em-dash ("email — An email and MIME handling package" → "email"), spaces become
    underscores, "/" (the path separator) becomes "-", and a trailing "@" (the Open Directory's
    soft-link mark) is removed.
    """
    text = " ".join(title.split())
    text = re.sub(r"^(?:(?:Part|Chapter|Appendix)\s+)?[0-9A-Z]{1,6}(?:\.[0-9A-Z]{1,6})*\.\s+", "", text)
    text = text.split(" — ", 1)[0].strip()
    text = text.replace("/", "-").replace("\t", " ")
    text = re.sub(r"[\x00-\x1f\x7f]", "", text)
    text = "_".join(text.split()).rstrip("@")
    return text


def site_path(page_path: str, ref: str) -> str | None:
    """The site path a relative reference in ``page_path`` points to (fragment and query dropped)."""
    parts = urlsplit(ref)
    if parts.scheme or parts.netloc or parts.path.startswith("/"):
        return None
    if not parts.path:
        return page_path
    target = posixpath.normpath(posixpath.join(posixpath.dirname(page_path), unquote(parts.path)))
    if target.startswith("../") or target == "..":
        return None
    if parts.path.endswith("/"):
        target = posixpath.join(target, "index.html") if target != "." else "index.html"
    return target


def place_pages(site: Site, pages: Sequence[DocPage]) -> tuple[list[DirectoryEntry], Counter]:
    """The topic directory of one site from its own hierarchy (paper Section 2.1).

    Parent of a page, by layout: DocBook — the navheader's "Up" page; Sphinx breadcrumbs — the
    last breadcrumb; Sphinx toctree — the page whose toctree lists it (the root's listing
    first, then by path), else its "up" link (Django's viewcode pages point "up" to the
    module-code overview). A page with no parent, or whose parent is one of the site's
    ``root_aliases`` (Django's landing page), hangs from the site's root page. Following
    parents from the root gives each TOC node a category ``Top/<Site>/<label>/<label>/…``
    whose labels are the TOC pages' titles (``category_segment``); a toctree's group (its
    caption or subsection heading, ``DocPage.toctree``) adds a level between a TOC page and
    the pages it lists. A page's category is the node of its parent (and group). In the
    ``FOLDERS`` layout the category is the page's folder instead (``_place_by_folders``).

    Directory pages (the directory's own pages, excluded from evaluation like the Open
    Directory's own pages, paper Section 5 footnote 8): the root page, every page that is the
    parent of another page (part, chapter and toctree pages — their anchors are the
    directory's own labels), and the site-wide index pages (genindex*, py-modindex, search,
    bookindex, index and contents at the site root). A directory page's category is the node
    it heads.

    Bad cases, counted in the returned Counter and never raised: a page whose layout is not
    recognised gets no category (``unknown_layout``) but stays in the crawl; a parent link to
    a page that does not exist (``parent_missing``) or one that closes a cycle
    (``parent_cycle``) hangs the page from the root; sibling nodes with the same label are told
    apart by their file name (``label_collision``).
    """
    if site.layout == FOLDERS:
        return _place_by_folders(site, pages)
    counts: Counter = Counter()
    by_path = {p.path: p for p in pages if p.layout_found}
    root = site.root_page if site.root_page in by_path else None
    if root is None:
        counts["root_missing"] += 1
    listed_by = _listings(site, by_path) if site.layout == SPHINX_TOCTREE else {}
    parent, group = _parents(site, by_path, root, listed_by, counts)
    _break_cycles(parent, group, root, counts)
    node_topic, heads = _name_nodes(site, by_path, parent, group, root, counts)
    return _entries(site, pages, parent, group, node_topic, heads, root, counts), counts


def _listings(site: Site, by_path: dict[str, DocPage]) -> dict[str, tuple[str, str]]:
    """Page → (the page whose toctree lists it, the toctree's group): the root's listing first."""
    listed_by: dict[str, tuple[str, str]] = {}
    for page in sorted(by_path.values(), key=lambda p: (p.path != site.root_page, p.path)):
        for ref, group in page.toctree:
            child = site_path(page.path, ref)
            if child is not None and child in by_path and child != page.path:
                listed_by.setdefault(child, (page.path, group))
    return listed_by


def _parents(
    site: Site, by_path: dict[str, DocPage], root: str | None, listed_by: dict[str, tuple[str, str]], counts: Counter
) -> tuple[dict[str, str | None], dict[str, str]]:
    """Each page's parent (None for the root) and the group it is listed under."""
    roots = {site.root_page, *site.root_aliases}
    parent: dict[str, str | None] = {}
    group: dict[str, str] = {}
    for page in by_path.values():
        if page.path == root:
            parent[page.path] = None
            continue
        target, group[page.path] = listed_by.get(page.path, (None, ""))
        if target is None and page.parent_ref is not None:
            target = site_path(page.path, page.parent_ref)
            if target is None or target not in by_path:
                counts["parent_missing"] += 1
                target = None
        if target == page.path or target in roots:
            target = None
        parent[page.path] = target if target is not None else root
    return parent, group


def _break_cycles(parent: dict[str, str | None], group: dict[str, str], root: str | None, counts: Counter) -> None:
    """The page whose parent closes a loop hangs from the root instead (in place)."""
    for start in sorted(parent):
        seen: set[str] = set()
        node: str | None = start
        while node is not None and node not in seen:
            seen.add(node)
            up = parent.get(node)
            if up is not None and up in seen:
                counts["parent_cycle"] += 1
                parent[node] = root if node != root else None
                group[node] = ""
                break
            node = up


def _slot(site: Site, node_topic: dict[str, str], group: dict[str, str], up: str | None, page: str) -> str:
    """The category of ``page`` below its parent ``up``: the parent's node, then the page's group."""
    site_topic = f"{ROOT}/{site.name}"
    base = node_topic.get(up, site_topic) if up is not None else site_topic
    label = category_segment(group.get(page, ""))
    return f"{base}/{label}" if label else base


def _name_nodes(
    site: Site,
    by_path: dict[str, DocPage],
    parent: dict[str, str | None],
    group: dict[str, str],
    root: str | None,
    counts: Counter,
) -> tuple[dict[str, str], set[str]]:
    """The category each TOC page heads, named top-down so that sibling labels are told apart
    deterministically; and the set of TOC pages (the parents of some page)."""
    children: dict[str | None, list[str]] = {}
    for path, up in parent.items():
        children.setdefault(up, []).append(path)
    heads = {up for up in children if up is not None}
    node_topic: dict[str, str] = {}
    if root is not None:
        node_topic[root] = f"{ROOT}/{site.name}"
    pending: list[str | None] = [root]
    while pending:
        node = pending.pop()
        used: set[str] = set()
        for child in sorted(children.get(node, ()), key=lambda c: (group.get(c, ""), c)):
            if child not in heads or child in node_topic:
                continue
            stem = posixpath.splitext(posixpath.basename(child))[0]
            base = _slot(site, node_topic, group, node, child)
            label = category_segment(by_path[child].title) or stem
            if f"{base}/{label}" in used:
                counts["label_collision"] += 1
                label = f"{label}_({stem})"
            used.add(f"{base}/{label}")
            node_topic[child] = f"{base}/{label}"
            pending.append(child)
    return node_topic, heads


def _entries(
    site: Site,
    pages: Sequence[DocPage],
    parent: dict[str, str | None],
    group: dict[str, str],
    node_topic: dict[str, str],
    heads: set[str],
    root: str | None,
    counts: Counter,
) -> list[DirectoryEntry]:
    """One entry per page, in path order: a TOC page at the node it heads, any other at its parent's."""
    entries: list[DirectoryEntry] = []
    for page in sorted(pages, key=lambda p: p.path):
        url = site.canonical_url(page.path)
        if page.path not in parent:
            counts["unknown_layout"] += 1
            entries.append(DirectoryEntry(site.key, page.path, url, page.title, None, False))
            continue
        is_index = bool(_INDEX_PAGES.fullmatch(page.path))
        directory_page = page.path in heads or page.path == root or is_index
        if page.path in node_topic:
            topic = node_topic[page.path]
        else:
            topic = _slot(site, node_topic, group, parent[page.path], page.path)
        if not page.title_found:
            counts["untitled"] += 1
        counts["directory_pages" if directory_page else "listed_pages"] += 1
        entries.append(DirectoryEntry(site.key, page.path, url, page.title, topic, directory_page))
    return entries


def _place_by_folders(site: Site, pages: Sequence[DocPage]) -> tuple[list[DirectoryEntry], Counter]:
    """The folder tree as the topic tree: ``a/b/page.html`` sits in ``Top/<Site>/a/b``.

    A folder's ``index.html`` is the folder's own page (a directory page heading its folder's
    category), as are the site-wide index pages at the root; folder names are spelt by
    ``category_segment``.
    """
    counts: Counter = Counter()
    entries: list[DirectoryEntry] = []
    for page in sorted(pages, key=lambda p: p.path):
        folder, name = posixpath.split(page.path)
        labels = [category_segment(part) or "_" for part in folder.split("/") if part]
        topic = "/".join([ROOT, site.name, *labels])
        directory_page = name == "index.html" or bool(_INDEX_PAGES.fullmatch(page.path))
        if not page.title_found:
            counts["untitled"] += 1
        counts["directory_pages" if directory_page else "listed_pages"] += 1
        entries.append(DirectoryEntry(site.key, page.path, site.canonical_url(page.path), page.title, topic,
                                      directory_page))
    return entries, counts
