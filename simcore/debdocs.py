"""DebDocs: a real hypertext collection with a human-built topic directory over it.

The paper (Section 5) judged strategies on a Stanford WebBase crawl against the Open
Directory. Neither is reachable offline, so simweb builds the same two ingredients from three
documentation web sites that Debian ships as packages: PostgreSQL 15 (DocBook), Python 3.11
and Django (both Sphinx). Each site is written by people, densely interlinked (the anchors the
paper's strategies read, Section 3.1), and organised by its authors into parts and chapters —
a hand-made hierarchy that plays the role of the Open Directory (Section 2.1).

This module is the pure part of the build; it never touches files, apt or WARC:

- ``Site`` says where a site lives in its package, its canonical public URL and its layout;
  ``debdocs_sites`` makes the three sites for the package versions at hand.
- ``read_page`` recognises a page's layout and reads its place in the site's own hierarchy:
  the DocBook navigation header's "Up" link (PostgreSQL), the Sphinx breadcrumbs (Python),
  or the Sphinx toctrees that list a page (Django, whose "up" link names only the top-level
  ancestor).
- ``place_pages`` turns those parent links into the directory: every page gets the category
  ``Top/<Site>/<Part>/<Chapter>/…`` of the table-of-contents node it sits in; the TOC nodes
  themselves are the directory's own pages (see ``place_pages`` for the rule).
- ``rewrite_links`` gives every reference into the collection its canonical public URL, so
  the links between the sites (Django's links into the local Python docs) survive as real
  cross-site anchors; references outside the three sites stay as they are.
- ``odp_rdf`` and ``directory_tsv`` write the directory in the Open Directory's own dump
  format (content.rdf.u8) and as ``url<TAB>category`` lines; ``summarize`` gives the numbers.

What the Debian 12 (bookworm) packages hold, as found with ``apt-get download`` and
``dpkg-deb -c`` (postgresql-doc-15 15.20-0+deb12u1, python3.11-doc 3.11.2-6+deb12u9,
python-django-doc 3:3.2.25-0+deb12u7):

- postgresql-doc-15: 1,169 pages in /usr/share/doc/postgresql-doc-15/html/ (DocBook XSL,
  every page but legalnotice.html has a navheader whose "Up" link names its parent), plus
  one stylesheet and three SVG figures; man pages elsewhere in the package are not HTML.
- python3.11-doc: 530 pages in /usr/share/doc/python3.11/html/ (python3.11-doc/html is a
  symbolic link to it), plus 497 ``_sources/*.txt`` and other static files. Debian rewrote
  links to the local tree as ``file:///usr/share/doc/python3.11/html/…``; the footer's
  ``/license.html`` is root-relative.
- python-django-doc (this name, not python3-django-doc): Django 3.2, 692 pages in
  /usr/share/doc/python-django-doc/html/, 153 of them viewcode pages under ``_modules/``.
  Its intersphinx links point to ``/usr/share/doc/python3-doc/html/…`` (Debian's default
  Python docs, 3.11 on Debian 12). Its pages have no breadcrumbs, and their "up" link names
  the top-level ancestor only (the theme uses ``parents.0``), so the hierarchy comes from
  the toctrees; its Sphinx master document is contents.html, index.html a landing page.

Decisions: a page whose site navigation is missing (PostgreSQL's legalnotice.html) stays in
the crawl but gets no category and is counted (``unknown_layout``), rather than a category
guessed from its URL. Pages above the class depth (a part's own pages, Django's viewcode
pages, Python's top-level pages) are listed at their real depth; the evaluation ignores them
as the paper ignored the few documents above depth three.
"""
from __future__ import annotations

import codecs
import html as html_lib
import posixpath
import re
import statistics
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from urllib.parse import quote, unquote, urlsplit
from xml.sax.saxutils import escape as xml_escape
from xml.sax.saxutils import quoteattr

from selectolax.lexbor import LexborHTMLParser

from simweb.core.directory import CLASS_DEPTH, ROOT
from simweb.core.urls import normalize_url

__all__ = [
    "DOCBOOK",
    "PACKAGES",
    "SPHINX_BREADCRUMBS",
    "SPHINX_TOCTREE",
    "Collection",
    "DirectoryEntry",
    "DocPage",
    "LinkStats",
    "Rewrite",
    "Site",
    "category_segment",
    "compare_debian_versions",
    "debdocs_sites",
    "directory_pages_text",
    "directory_tsv",
    "link_stats",
    "odp_rdf",
    "page_charset",
    "place_pages",
    "read_page",
    "rewrite_links",
    "summarize",
    "upstream_release",
]

# The documentation packages, in the order their sites are listed everywhere.
PACKAGES = ("postgresql-doc-15", "python3.11-doc", "python-django-doc")

# Site layouts (how a page states its place in the site's hierarchy).
DOCBOOK = "docbook-navheader"
SPHINX_BREADCRUMBS = "sphinx-breadcrumbs"
SPHINX_TOCTREE = "sphinx-toctree"


@dataclass(frozen=True, slots=True)
class Site:
    """One documentation web site shipped in a Debian package.

    ``html_root`` is the folder inside the package (no leading slash) that holds the site;
    a page's ``path`` is relative to it. ``local_roots`` are the absolute folders under which
    a Debian system serves the same files (other packages link to them); ``public_aliases``
    are other public URL prefixes that name the same release ("current", "stable", "3") and
    are mapped to ``base_url`` when the linked file exists in the collection.
    ``directory_urls``: the public site names ``a/b.html`` as ``a/b/`` (Django).
    ``root_aliases``: pages that stand for the root page as a parent (Django's landing page).
    """

    key: str
    name: str
    package: str
    html_root: str
    base_url: str
    layout: str
    root_page: str
    local_roots: tuple[str, ...]
    public_aliases: tuple[str, ...]
    directory_urls: bool = False
    title_suffix: str = ""
    root_aliases: tuple[str, ...] = ()

    def canonical_url(self, path: str) -> str:
        """The public URL of the file at ``path`` (relative to the site root)."""
        if self.directory_urls and path.endswith(".html"):
            stem = path[: -len(".html")]
            if stem == "index" or stem.endswith("/index"):
                stem = stem[: -len("index")]
            else:
                stem += "/"
            path = stem
        return self.base_url + quote(path, safe="/-._~!$&'()*+,;=:@")

    def clean_title(self, title: str) -> str:
        title = " ".join(title.split())
        if self.title_suffix:
            title = re.sub(self.title_suffix, "", title).strip()
        return title


def upstream_release(version: str, parts: int = 2) -> str:
    """The upstream ``major.minor`` of a Debian version: ``"3:3.2.25-0+deb12u7"`` → ``"3.2"``."""
    upstream = version.split(":", 1)[-1].rsplit("-", 1)[0]
    numbers = re.match(r"\d+(?:\.\d+)*", upstream)
    if not numbers:
        raise ValueError(f"expected a Debian version with a numeric upstream part, got {version!r}")
    return ".".join(numbers.group().split(".")[:parts])


def debdocs_sites(versions: Mapping[str, str]) -> tuple[Site, ...]:
    """The three DebDocs sites; ``versions`` maps package name → Debian version.

    The Django release in its URLs comes from the package version (python-django-doc
    3:3.2.25-… → docs.djangoproject.com/en/3.2/); PostgreSQL 15 and Python 3.11 are fixed by
    the package names.
    """
    django = upstream_release(versions["python-django-doc"])
    return (
        Site(
            key="postgresql",
            name="PostgreSQL",
            package="postgresql-doc-15",
            html_root="usr/share/doc/postgresql-doc-15/html/",
            base_url="https://www.postgresql.org/docs/15/",
            layout=DOCBOOK,
            root_page="index.html",
            local_roots=("/usr/share/doc/postgresql-doc-15/html/",),
            public_aliases=("https://www.postgresql.org/docs/current/", "https://www.postgresql.org/docs/15/"),
        ),
        Site(
            key="python",
            name="Python",
            package="python3.11-doc",
            html_root="usr/share/doc/python3.11/html/",
            base_url="https://docs.python.org/3.11/",
            layout=SPHINX_BREADCRUMBS,
            root_page="index.html",
            local_roots=(
                "/usr/share/doc/python3.11/html/",
                "/usr/share/doc/python3.11-doc/html/",
                # Debian's default-version docs (python3-doc) are Python 3.11 on Debian 12.
                "/usr/share/doc/python3-doc/html/",
            ),
            public_aliases=(
                "https://docs.python.org/3.11/",
                "https://docs.python.org/3/",
                "https://docs.python.org/",
            ),
            title_suffix=r"\s+—\s+Python \S+ documentation$",
        ),
        Site(
            key="django",
            name="Django",
            package="python-django-doc",
            html_root="usr/share/doc/python-django-doc/html/",
            base_url=f"https://docs.djangoproject.com/en/{django}/",
            layout=SPHINX_TOCTREE,
            # Django's Sphinx master document is contents; index is a hand-made landing page.
            root_page="contents.html",
            local_roots=("/usr/share/doc/python-django-doc/html/",),
            public_aliases=(
                f"https://docs.djangoproject.com/en/{django}/",
                "https://docs.djangoproject.com/en/stable/",
            ),
            directory_urls=True,
            title_suffix=r"\s+—\s+Django \S+ documentation$",
            root_aliases=("index.html",),
        ),
    )


# --------------------------------------------------------------------------- reading pages


@dataclass(frozen=True, slots=True)
class DocPage:
    """What one HTML page says about itself: title and place in its site's hierarchy.

    ``parent_ref`` is the raw reference (as written in the page) to the page's parent by the
    site's layout: DocBook's "Up" link, the last Sphinx breadcrumb, or — for the toctree
    layout — the "up" link, used only when no toctree lists the page. ``toctree`` holds the
    raw references of the first-level entries of the page's toctrees (its children).
    ``toctree`` holds the page's first-level toctree entries (its children) as ``(raw
    reference, group)`` pairs, the group being the toctree's caption or the heading of the
    subsection holding it ("" when the toctree sits in the page's top section).
    ``layout_found`` is False when the page carries none of its site's navigation.
    """

    path: str
    title: str
    title_found: bool
    layout_found: bool
    parent_ref: str | None
    toctree: tuple[tuple[str, str], ...]


_DECLARED_CHARSET = re.compile(
    rb"""<meta[^>]*?charset\s*=\s*["']?\s*([A-Za-z0-9_.:-]+)|<\?xml[^>]*?encoding\s*=\s*["']([A-Za-z0-9_.:-]+)""", re.I
)


def page_charset(data: bytes) -> str:
    """The charset a page declares in its first 2 KiB (``<meta>`` or XML declaration), else utf-8.

    Returned lower-cased as declared (the label an HTTP Content-Type carries); a name Python
    has no codec for gives utf-8, the charset of every page these packages ship.
    """
    match = _DECLARED_CHARSET.search(data[:2048])
    name = (match.group(1) or match.group(2)).decode("ascii").lower() if match else "utf-8"
    try:
        codecs.lookup(name)
    except LookupError:
        return "utf-8"
    return name


def _text(node) -> str:
    return " ".join(node.text(deep=True, separator=" ").split()) if node is not None else ""


def read_page(site: Site, path: str, html: str) -> DocPage:
    """Recognise the page's layout and read its title and parent reference (Section 2.1).

    A page without a ``<title>`` gets the text of its first heading, else its file name, as
    title (``title_found`` is then False, so the caller counts it). Never raises on odd HTML.
    """
    tree = LexborHTMLParser(html)
    title = site.clean_title(_text(tree.css_first("title")))
    title_found = bool(title)
    if not title:
        for selector in ("h1", "h2", "h3"):
            title = site.clean_title(_text(tree.css_first(selector)))
            if title:
                break
    if not title:
        title = posixpath.splitext(posixpath.basename(path))[0] or path
    parent_ref: str | None = None
    toctree: tuple[tuple[str, str], ...] = ()
    if site.layout == DOCBOOK:
        header = tree.css_first("div.navheader")
        layout_found = header is not None
        if header is not None:
            up = header.css_first('a[accesskey="u"]')
            parent_ref = up.attributes.get("href") if up is not None else None
    else:
        if site.layout == SPHINX_BREADCRUMBS:
            related = tree.css_first("div.related")
            layout_found = related is not None
            if related is not None:
                crumbs = [
                    a.attributes.get("href")
                    for li in related.css("li")
                    if _is_breadcrumb(li.attributes.get("class") or "")
                    for a in [li.css_first("a")]
                    if a is not None
                ]
                crumbs = [c for c in crumbs if c is not None]
                parent_ref = crumbs[-1] if crumbs else None
        else:
            nav = tree.css_first("div#hd div.nav") or tree.css_first("div.nav")
            layout_found = nav is not None or tree.css_first("div#global-nav") is not None
            if nav is not None:
                up = nav.css_first('a[accesskey="U"]')
                parent_ref = up.attributes.get("href") if up is not None else None
        entries: list[tuple[str, str]] = []
        for wrapper in tree.css("div.toctree-wrapper"):
            group = _toctree_group(wrapper)
            for li in wrapper.css("li.toctree-l1"):
                a = li.css_first("a")
                href = a.attributes.get("href") if a is not None else None
                if href:
                    entries.append((href, group))
        toctree = tuple(entries)
    return DocPage(path, title, title_found, layout_found, parent_ref or None, toctree)


def _toctree_group(wrapper) -> str:
    """The caption of a toctree, else the heading of the subsection that holds it.

    Django's release notes list every release in toctrees under one subsection per series
    ("3.2 release"); that heading is the authors' own grouping, one level below the page.
    A toctree in the page's top section (under its ``h1``) has no group.
    """
    caption = wrapper.css_first(".caption-text")
    if caption is not None:
        return _text(caption)
    node = wrapper.parent
    while node is not None:
        classes = (node.attributes.get("class") or "").split()
        if node.tag == "section" or (node.tag == "div" and "section" in classes):
            for child in node.iter():
                if child.tag in ("h1", "h2", "h3", "h4", "h5", "h6"):
                    return "" if child.tag == "h1" else _text(child).rstrip("¶").strip()
            return ""
        node = node.parent
    return ""


def _is_breadcrumb(classes: str) -> bool:
    """Sphinx's breadcrumb items carry ``nav-item nav-item-<n>``; the page itself is ``nav-item-this``."""
    return any(re.fullmatch(r"nav-item-\d+", c) for c in classes.split())


def _site_path(page_path: str, ref: str) -> str | None:
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


# --------------------------------------------------------------------------- the directory


@dataclass(frozen=True, slots=True)
class DirectoryEntry:
    """One page's place in the topic directory.

    ``topic`` is ``Top/<Site>/…`` (the TOC node the page sits in, or, for a directory page,
    the node it heads); None when the page's layout was not recognised, so it has no place.
    ``directory_page`` marks the directory's own index/TOC pages (excluded from evaluation
    like the Open Directory's own pages, paper Section 5 footnote 8).
    """

    site: str
    path: str
    url: str
    title: str
    topic: str | None
    directory_page: bool


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
    the pages it lists. A page's category is the node of its parent (and group).

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
    counts: Counter = Counter()
    by_path = {p.path: p for p in pages if p.layout_found}
    root = site.root_page if site.root_page in by_path else None
    if root is None:
        counts["root_missing"] += 1
    roots = {site.root_page, *site.root_aliases}

    listed_by: dict[str, tuple[str, str]] = {}
    if site.layout == SPHINX_TOCTREE:
        for page in sorted(by_path.values(), key=lambda p: (p.path != site.root_page, p.path)):
            for ref, group in page.toctree:
                child = _site_path(page.path, ref)
                if child is not None and child in by_path and child != page.path:
                    listed_by.setdefault(child, (page.path, group))

    parent: dict[str, str | None] = {}
    group: dict[str, str] = {}
    for page in by_path.values():
        if page.path == root:
            parent[page.path] = None
            continue
        target, group[page.path] = listed_by.get(page.path, (None, ""))
        if target is None and page.parent_ref is not None:
            target = _site_path(page.path, page.parent_ref)
            if target is None or target not in by_path:
                counts["parent_missing"] += 1
                target = None
        if target == page.path or target in roots:
            target = None
        parent[page.path] = target if target is not None else root

    # Break cycles: the page whose parent closes a loop hangs from the root instead.
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

    children: dict[str | None, list[str]] = {}
    for path, up in parent.items():
        children.setdefault(up, []).append(path)
    heads = {up for up in children if up is not None}

    # Node names, top-down, so that sibling labels are told apart deterministically.
    site_topic = f"{ROOT}/{site.name}"
    node_topic: dict[str, str] = {}
    if root is not None:
        node_topic[root] = site_topic

    def slot(up: str | None, page: str) -> str:
        base = node_topic.get(up, site_topic) if up is not None else site_topic
        label = category_segment(group.get(page, ""))
        return f"{base}/{label}" if label else base

    pending: list[str | None] = [root]
    while pending:
        node = pending.pop()
        used: set[str] = set()
        for child in sorted(children.get(node, ()), key=lambda c: (group.get(c, ""), c)):
            if child not in heads or child in node_topic:
                continue
            stem = posixpath.splitext(posixpath.basename(child))[0]
            base = slot(node, child)
            label = category_segment(by_path[child].title) or stem
            if f"{base}/{label}" in used:
                counts["label_collision"] += 1
                label = f"{label}_({stem})"
            used.add(f"{base}/{label}")
            node_topic[child] = f"{base}/{label}"
            pending.append(child)

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
            topic = slot(parent[page.path], page.path)
        if not page.title_found:
            counts["untitled"] += 1
        counts["directory_pages" if directory_page else "listed_pages"] += 1
        entries.append(DirectoryEntry(site.key, page.path, url, page.title, topic, directory_page))
    return entries, counts


def _depth(topic: str) -> int:
    return len([p for p in topic.split("/") if p]) - 1


def _listed(entries: Iterable[DirectoryEntry]) -> list[DirectoryEntry]:
    return sorted((e for e in entries if e.topic is not None and not e.directory_page), key=lambda e: (e.topic, e.url))


def _xml_text(text: str) -> str:
    # XML 1.0 forbids most control characters even as references.
    return re.sub(r"[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]", "", text)


def odp_rdf(entries: Iterable[DirectoryEntry], comment: str = "") -> str:
    """The directory in the Open Directory's content.rdf.u8 format.

    ``<RDF>`` root with the dump's namespaces; one ``<Topic r:id="Top/…">`` per category (every
    ancestor included, in tree order, ``catid`` numbered from 1 for ``Top``) with a
    ``<link r:resource="url"/>`` per listed page, each followed by the ``<ExternalPage
    about="url">`` entries (``<d:Title>``, ``<topic>``) of its links, as in the real dump.
    Directory pages are not listed — the Open Directory never lists its own pages either;
    ``directory_pages_text`` names them. Topics holding only directory pages are written too.
    """
    entries = list(entries)
    listed = _listed(entries)
    heads = {e.topic for e in entries if e.directory_page and e.topic}
    topics: set[str] = set()
    for topic in [e.topic for e in listed] + list(heads):
        parts = topic.split("/")
        for i in range(1, len(parts) + 1):
            topics.add("/".join(parts[:i]))
    by_topic: dict[str, list[DirectoryEntry]] = {}
    for entry in listed:
        by_topic.setdefault(entry.topic, []).append(entry)
    out = [
        '<?xml version="1.0" encoding="UTF-8"?>\n',
        '<RDF xmlns:r="http://www.w3.org/TR/RDF/" xmlns:d="http://purl.org/dc/elements/1.0/" '
        'xmlns="http://dmoz.org/rdf/">\n',
    ]
    if comment:
        out.append(f"  <!-- {_xml_text(comment).replace('--', '- -')} -->\n")
    for catid, topic in enumerate(sorted(topics, key=lambda t: t.split("/")), start=1):
        out.append(f"  <Topic r:id={quoteattr(_xml_text(topic))}>\n    <catid>{catid}</catid>\n")
        for entry in by_topic.get(topic, ()):
            out.append(f"    <link r:resource={quoteattr(entry.url)}></link>\n")
        out.append("  </Topic>\n")
        for entry in by_topic.get(topic, ()):
            out.append(
                f"  <ExternalPage about={quoteattr(entry.url)}>\n"
                f"    <d:Title>{xml_escape(_xml_text(entry.title))}</d:Title>\n"
                f"    <topic>{xml_escape(_xml_text(topic))}</topic>\n"
                "  </ExternalPage>\n"
            )
    out.append("</RDF>\n")
    return "".join(out)


def directory_tsv(entries: Iterable[DirectoryEntry]) -> str:
    """``url<TAB>category`` lines of the listed pages, in the order of ``odp_rdf``."""
    return "".join(f"{e.url}\t{e.topic}\n" for e in _listed(entries))


def directory_pages_text(entries: Iterable[DirectoryEntry]) -> str:
    """The directory's own pages (TOC and index pages), one URL per line, sorted."""
    return "".join(f"{url}\n" for url in sorted(e.url for e in entries if e.directory_page))


# --------------------------------------------------------------------------- links


class Collection:
    """The three sites and the files each holds: what link rewriting resolves against.

    ``files`` maps a site key to the paths (relative to its root) of every file the package
    ships under the site root, pages and static files alike; ``pages`` to its HTML pages.
    """

    def __init__(self, sites: Sequence[Site], files: Mapping[str, Iterable[str]], pages: Mapping[str, Iterable[str]]):
        self.sites = tuple(sites)
        self.by_key = {s.key: s for s in self.sites}
        self.files = {s.key: frozenset(files.get(s.key, ())) for s in self.sites}
        self.pages = {s.key: frozenset(pages.get(s.key, ())) for s in self.sites}
        self.page_site = {s.canonical_url(p): s.key for s in self.sites for p in self.pages[s.key]}
        self._local = sorted(
            ((root, s) for s in self.sites for root in s.local_roots), key=lambda rs: -len(rs[0])
        )
        self._memo: dict[tuple[str, str, str], tuple[str | None, str]] = {}
        self._public = sorted(
            ((alias.split("://", 1)[1].lower(), s) for s in self.sites for alias in s.public_aliases),
            key=lambda rs: -len(rs[0]),
        )

    def _public_file(self, site: Site, rest: str) -> str | None:
        """The file a public URL path (below an alias prefix) names, if the site ships it."""
        rest = unquote(rest)
        files = self.files[site.key]
        if rest in ("", "/"):
            candidates = ["index.html"]
        elif rest.endswith("/"):
            candidates = [rest + "index.html", rest[:-1] + ".html"]
        else:
            candidates = [rest, rest + ".html", rest + "/index.html"]
        return next((c for c in candidates if c in files), None)

    def resolve(self, site: Site, page_path: str, ref: str, folder: str | None = None) -> tuple[str | None, str]:
        """Memoised ``resolve_reference`` (pages of one folder share most references).

        ``folder`` is ``posixpath.dirname(page_path)``, passed in by callers resolving many
        references of one page.
        """
        value = ref.strip()
        if not value or value[0] in "?#":
            scope = page_path
        else:
            scope = posixpath.dirname(page_path) if folder is None else folder
        key = (site.key, scope, ref)
        found = self._memo.get(key)
        if found is None:
            found = self._memo[key] = self.resolve_reference(site, page_path, ref)
        return found

    def resolve_reference(self, site: Site, page_path: str, ref: str) -> tuple[str | None, str]:
        """The canonical form of reference ``ref`` found in ``page_path`` of ``site``.

        Returns ``(new_reference or None if unchanged, kind)`` with kind one of ``same_page``,
        ``site`` (a relative reference into the site), ``local`` (a path or file: URL of a
        Debian documentation folder of one of the sites), ``alias`` (a public URL of the same
        release under another name), ``other_local`` (a Debian documentation folder of
        another package: kept, as a file: URL), ``root`` (a root-relative reference that names
        a file of the site) or ``unchanged``.
        """
        value = ref.strip()
        if not value or value.startswith("#"):
            return None, "same_page"
        parts = urlsplit(value)
        scheme = parts.scheme.lower()
        suffix = (f"?{parts.query}" if parts.query else "") + (f"#{parts.fragment}" if parts.fragment else "")
        if scheme in ("http", "https") and parts.netloc:
            located = parts.netloc + (parts.path or "/")
            for prefix, target in self._public:
                if located.lower().startswith(prefix):
                    rest = located[len(prefix) :]
                    found = self._public_file(target, rest)
                    if found is not None:
                        new = target.canonical_url(found) + suffix
                        return (new if new != value else None), "alias"
            return None, "unchanged"
        if scheme == "file" or (not scheme and not parts.netloc and parts.path.startswith("/")):
            return self._resolve_local(site, posixpath.normpath(unquote(parts.path)), suffix, scheme == "file")
        if scheme or parts.netloc:
            return None, "unchanged"
        # A relative reference: resolve it inside the package, then name it publicly.
        if not parts.path:
            return self._resolve_local(site, "/" + site.html_root + page_path, suffix, True, relative=True)
        folder = "/" + site.html_root + posixpath.dirname(page_path)
        target = posixpath.normpath(posixpath.join(folder, unquote(parts.path)))
        if parts.path.endswith("/"):
            target += "/"
        return self._resolve_local(site, target, suffix, True, relative=True)

    def _resolve_local(self, site: Site, path: str, suffix: str, is_file: bool, relative: bool = False):
        for root, target in self._local:
            stripped = root.rstrip("/")
            if path == stripped or path.startswith(root):
                rest = path[len(root) :] if path.startswith(root) else ""
                if rest == "" or rest.endswith("/"):
                    rest += "index.html"
                return target.canonical_url(rest) + suffix, ("site" if relative else "local")
        if not is_file:
            # Root-relative on the web: a file of this site (Python's "/license.html") maps to
            # its canonical URL; anything else resolves against the site's host, as on the web.
            rest = path.lstrip("/")
            if rest in self.files[site.key]:
                return site.canonical_url(rest) + suffix, "root"
            if path.startswith("/usr/share/"):
                return "file://" + quote(path, safe="/-._~!$&'()*+,;=:@") + suffix, "other_local"
            return None, "unchanged"
        return "file://" + quote(path, safe="/-._~!$&'()*+,;=:@") + suffix, "other_local"


@dataclass(frozen=True, slots=True)
class Rewrite:
    """A page after link rewriting: its new text, the final ``href`` of each ``<a>`` in
    document order, and how many references of each kind were seen (``Collection.resolve``)."""

    html: str
    anchors: tuple[str, ...]
    kinds: dict[str, int]


# Markup tokens worth a look: comments, script/style start tags (their bodies are skipped),
# and start tags holding a URL attribute. Quoted attribute values are consumed whole, so a
# ">" or "href=" inside one is never mistaken for markup; tags without a URL attribute fail
# to match inside the regex engine and cost no Python work.
_ATTR_VALUE = r"""(?:[^>"']|"[^"]*"|'[^']*')"""
_TOKEN = re.compile(
    r"<!--.*?-->"
    rf"|<(script|style)\b({_ATTR_VALUE}*)>"
    rf"|<([A-Za-z][^\s/>]*)(\s{_ATTR_VALUE}*?\b(?:href|src|action)\s*={_ATTR_VALUE}*)>",
    re.S | re.I,
)
_ATTRIBUTE = re.compile(r"""([^\s"'>/=]+)(?:\s*=\s*("[^"]*"|'[^']*'|[^\s"'>]+))?""")
_RAW_TEXT = {"script": re.compile(r"</script\s*>", re.I), "style": re.compile(r"</style\s*>", re.I)}
_URL_ATTRIBUTES = frozenset({"href", "src", "action"})


def rewrite_links(html: str, site: Site, path: str, collection: Collection) -> Rewrite:
    """Give every reference (``href``, ``src``, ``action``) into the collection its canonical URL.

    Only attribute values change; every other byte of the page stays as it was. Script and
    style bodies and comments are skipped (Django's pages build links in JavaScript strings).
    References to resources outside the three sites stay as they are, except paths into other
    Debian documentation packages, which become ``file:`` URLs so that they are not mistaken
    for pages of the site's own host. Same-page fragments (``#x``) are kept relative.
    """
    out: list[str] = []
    anchors: list[str] = []
    kinds: Counter = Counter()
    folder = posixpath.dirname(path)
    pos = 0
    scan = 0
    while True:
        match = _TOKEN.search(html, scan)
        if match is None:
            break
        scan = match.end()
        raw_text = match.group(1)
        if raw_text is not None:
            name, attrs, attrs_start = raw_text.lower(), match.group(2), match.start(2)
        elif match.group(3) is not None:
            name, attrs, attrs_start = match.group(3).lower(), match.group(4), match.start(4)
        else:
            continue
        for attr in _ATTRIBUTE.finditer(attrs):
            raw = attr.group(2)
            if raw is None or attr.group(1).lower() not in _URL_ATTRIBUTES:
                continue
            quoted = raw[:1] in "\"'"
            value = html_lib.unescape(raw[1:-1] if quoted else raw)
            new, kind = collection.resolve(site, path, value, folder)
            kinds[kind] += 1
            final = value if new is None else new
            if name == "a" and attr.group(1).lower() == "href":
                anchors.append(final)
            if new is not None:
                start = attrs_start + attr.start(2)
                out.append(html[pos:start])
                out.append('"' + html_lib.escape(new, quote=True) + '"')
                pos = start + len(raw)
        if raw_text is not None and not attrs.rstrip().endswith("/"):
            end = _RAW_TEXT[name].search(html, scan)
            scan = end.end() if end is not None else len(html)
    out.append(html[pos:])
    return Rewrite("".join(out), tuple(anchors), dict(kinds))


@dataclass(frozen=True, slots=True)
class LinkStats:
    """The links of one site's pages: ``anchors`` (all ``<a href>``), ``internal`` (to another
    page of the collection), ``cross_site`` (internal, into another site), ``to_directory``
    (to a page listed in the directory), ``same_page`` and ``external``."""

    anchors: int
    internal: int
    cross_site: int
    to_directory: int
    same_page: int
    external: int


def link_stats(
    site: Site, pages: Iterable[tuple[str, Sequence[str]]], collection: Collection, listed: frozenset[str]
) -> LinkStats:
    """Count the links of ``pages`` — (path, final hrefs of its ``<a>`` elements) pairs — by target.

    Targets are normalised as the ingest stage normalises them (``simweb.core.urls``), so the
    counts are the links the crawl will hold.
    """
    counts: Counter = Counter()
    for path, hrefs in pages:
        url = site.canonical_url(path)
        here = normalize_url(url)
        for href in hrefs:
            counts["anchors"] += 1
            if not href.strip() or href.lstrip().startswith("#"):
                target = here
            else:
                # Rewritten references are absolute: without a base they share one cache entry.
                target = normalize_url(href) if "://" in href[:12] else normalize_url(href, url)
            if target == here:
                counts["same_page"] += 1
            elif target in collection.page_site:
                counts["internal"] += 1
                if collection.page_site[target] != site.key:
                    counts["cross_site"] += 1
                if target in listed:
                    counts["to_directory"] += 1
            else:
                counts["external"] += 1
    return LinkStats(*(counts[k] for k in ("anchors", "internal", "cross_site", "to_directory", "same_page", "external")))


def summarize(entries: Sequence[DirectoryEntry], links: Sequence[LinkStats], depth: int = CLASS_DEPTH) -> dict:
    """The corpus summary: pages, links, and the directory's classes at the collapse depth.

    Classes are the distinct depth-``depth`` ancestors of the listed pages' topics (paper
    Section 2.1: the directory collapsed below depth three; pages above it are ignored and
    counted as ``pages_above_class_depth``).
    """
    listed = _listed(entries)
    per_class: Counter = Counter()
    above = 0
    for entry in listed:
        parts = entry.topic.split("/")[1:]
        if len(parts) < depth:
            above += 1
        else:
            per_class[tuple(parts[:depth])] += 1
    sizes = sorted(per_class.values())
    total = {f: sum(getattr(s, f) for s in links) for f in LinkStats.__slots__}
    return {
        "pages": len(entries),
        "links": total["anchors"],
        "links_inside_collection": total["internal"],
        "links_cross_site": total["cross_site"],
        "links_to_directory": total["to_directory"],
        "links_same_page": total["same_page"],
        "links_external": total["external"],
        "listed_pages": len(listed),
        "directory_pages": sum(1 for e in entries if e.directory_page),
        "unplaced_pages": sum(1 for e in entries if e.topic is None),
        "topics": len({e.topic for e in entries if e.topic}),
        "class_depth": depth,
        "classes": len(per_class),
        "pages_above_class_depth": above,
        "pages_per_class": {
            "min": sizes[0] if sizes else 0,
            "median": statistics.median(sizes) if sizes else 0,
            "max": sizes[-1] if sizes else 0,
        },
    }


# --------------------------------------------------------------------------- Debian versions


def _order(char: str) -> int:
    if char == "~":
        return -1
    if char.isdigit():
        return 0
    if char.isalpha():
        return ord(char)
    return ord(char) + 256


def _compare_part(a: str, b: str) -> int:
    """dpkg's comparison of an upstream version or revision (deb-version(7))."""
    i = j = 0
    while i < len(a) or j < len(b):
        first_diff = 0
        while (i < len(a) and not a[i].isdigit()) or (j < len(b) and not b[j].isdigit()):
            ac = _order(a[i]) if i < len(a) and not a[i].isdigit() else 0
            bc = _order(b[j]) if j < len(b) and not b[j].isdigit() else 0
            if ac != bc:
                return -1 if ac < bc else 1
            i += 1
            j += 1
        while i < len(a) and a[i] == "0":
            i += 1
        while j < len(b) and b[j] == "0":
            j += 1
        while i < len(a) and a[i].isdigit() and j < len(b) and b[j].isdigit():
            if not first_diff:
                first_diff = (a[i] > b[j]) - (a[i] < b[j])
            i += 1
            j += 1
        if i < len(a) and a[i].isdigit():
            return 1
        if j < len(b) and b[j].isdigit():
            return -1
        if first_diff:
            return first_diff
    return 0


def compare_debian_versions(a: str, b: str) -> int:
    """-1, 0 or 1 as Debian version ``a`` sorts before, equal to or after ``b`` (deb-version(7))."""

    def split(v: str) -> tuple[int, str, str]:
        epoch, _, rest = v.partition(":") if ":" in v else ("0", "", v)
        upstream, _, revision = rest.rpartition("-") if "-" in rest else (rest, "", "0")
        return int(epoch or 0), upstream, revision

    ea, ua, ra = split(a)
    eb, ub, rb = split(b)
    if ea != eb:
        return -1 if ea < eb else 1
    return _compare_part(ua, ub) or _compare_part(ra, rb)
