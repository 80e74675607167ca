"""What a documentation page says about itself: its title and its place in its site.

The hierarchy of a site (paper Section 2.1: the directory is a tree of topics) is read from
the navigation its generator writes into every page, by layout:

- ``DOCBOOK``: DocBook XSL's navigation header, whose "Up" link names the parent
  (PostgreSQL).
- ``SPHINX_BREADCRUMBS``: Sphinx breadcrumbs, the last naming the parent — the classic
  theme's ``div.related`` items (Python) or the Read the Docs theme's ``ul.wy-breadcrumbs``
  (the Linux kernel).
- ``SPHINX_TOCTREE``: the toctrees in a page's content list its children (Django, and any
  Sphinx site); Django's "up" link is the parent of a page no toctree lists.
- ``FOLDERS``: no navigation is read; the site's folders are its hierarchy (Doxygen, Javadoc,
  rustdoc and any other generator).
"""
from __future__ import annotations

import codecs
import posixpath
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from selectolax.lexbor import LexborHTMLParser

if TYPE_CHECKING:
    from simweb.corpora.sites import Site

__all__ = ["DOCBOOK", "FOLDERS", "LAYOUTS", "SPHINX_BREADCRUMBS", "SPHINX_TOCTREE", "DocPage", "page_charset",
           "read_page"]

DOCBOOK = "docbook-navheader"
SPHINX_BREADCRUMBS = "sphinx-breadcrumbs"
SPHINX_TOCTREE = "sphinx-toctree"
FOLDERS = "folders"
LAYOUTS = (DOCBOOK, SPHINX_BREADCRUMBS, SPHINX_TOCTREE, FOLDERS)


@dataclass(frozen=True, slots=True)
class DocPage:
    """What one HTML page says about itself: title and place in its site's hierarchy.

    ``parent_ref`` is the raw reference (as written in the page) to the page's parent by the
    site's layout: DocBook's "Up" link, the last Sphinx breadcrumb, or — for the toctree
    layout — the "up" link, used only when no toctree lists the page. ``toctree`` holds the
    page's first-level toctree entries (its children) as ``(raw reference, group)`` pairs, the
    group being the toctree's caption or the heading of the subsection holding it ("" when
    the toctree sits in the page's top section). ``layout_found`` is False when the page
    carries none of its site's navigation.
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
    has no codec for gives utf-8, the charset of nearly every page Debian ships.
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
    if site.layout == DOCBOOK:
        layout_found, parent_ref, toctree = _docbook(tree)
    elif site.layout == SPHINX_BREADCRUMBS:
        layout_found, parent_ref, toctree = _sphinx_breadcrumbs(tree)
    elif site.layout == SPHINX_TOCTREE:
        layout_found, parent_ref, toctree = _sphinx_toctree(tree)
    else:
        layout_found, parent_ref, toctree = True, None, ()
    return DocPage(path, title, title_found, layout_found, parent_ref or None, toctree)


def _docbook(tree) -> tuple[bool, str | None, tuple]:
    header = tree.css_first("div.navheader")
    if header is None:
        return False, None, ()
    up = header.css_first('a[accesskey="u"]')
    return True, (up.attributes.get("href") if up is not None else None), ()


def _sphinx_breadcrumbs(tree) -> tuple[bool, str | None, tuple]:
    related = tree.css_first("div.related")
    if related is not None:
        items = [li for li in related.css("li") if _is_breadcrumb(li.attributes.get("class") or "")]
    else:
        # The Read the Docs theme: a home icon, then one item per ancestor, then the page itself.
        related = tree.css_first("ul.wy-breadcrumbs")
        items = [li for li in related.css("li") if _is_rtd_crumb(li.attributes.get("class") or "")] \
            if related is not None else []
    if related is None:
        return False, None, _toctree(tree)
    crumbs = [a.attributes.get("href") for li in items for a in [li.css_first("a")] if a is not None]
    crumbs = [c for c in crumbs if c is not None]
    return True, (crumbs[-1] if crumbs else None), _toctree(tree)


def _sphinx_toctree(tree) -> tuple[bool, str | None, tuple]:
    nav = tree.css_first("div#hd div.nav") or tree.css_first("div.nav")
    layout_found = (
        nav is not None
        or tree.css_first("div#global-nav") is not None
        or tree.css_first('script[src$="documentation_options.js"]') is not None
    )
    up = nav.css_first('a[accesskey="U"]') if nav is not None else None
    return layout_found, (up.attributes.get("href") if up is not None else None), _toctree(tree)


def _toctree(tree) -> tuple[tuple[str, str], ...]:
    entries: list[tuple[str, str]] = []
    for wrapper in tree.css("div.toctree-wrapper"):
        group = _toctree_group(wrapper)
        for li in wrapper.css("li.toctree-l1"):
            a = li.css_first("a")
            href = a.attributes.get("href") if a is not None else None
            if href:
                entries.append((href, group))
    return tuple(entries)


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


def _is_rtd_crumb(classes: str) -> bool:
    """The Read the Docs theme's home item (no class) and its ancestors (``breadcrumb-item``), not the
    page itself (``active``) nor the "view source" aside."""
    names = classes.split()
    return not names or ("breadcrumb-item" in names and "active" not in names)
