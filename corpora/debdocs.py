"""DebDocs: a real hypertext collection with a human-built topic directory over it.

The paper (Section 5) judged strategies on a Stanford WebBase crawl against the Open
Directory. Neither is reachable offline, so simweb builds the same two ingredients from three
documentation web sites that Debian ships as packages: PostgreSQL 15 (DocBook), Python 3.11
and Django (both Sphinx). Each site is written by people, densely interlinked (the anchors the
paper's strategies read, Section 3.1), and organised by its authors into parts and chapters —
a hand-made hierarchy that plays the role of the Open Directory (Section 2.1). The build is
``simweb.corpora.docsites``; the sites are in ``simweb.corpora.sites.KNOWN_SITES``:

- the DocBook navigation header's "Up" link gives PostgreSQL's hierarchy, the Sphinx
  breadcrumbs Python's, and the Sphinx toctrees that list a page Django's (whose "up" link
  names only the top-level ancestor);
- every reference into the collection gets its canonical public URL, so the links between
  the sites (Django's links into the local Python docs) survive as real cross-site anchors;
  references outside the three sites stay as they are.

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

from collections.abc import Mapping

from simweb.corpora.docsites import DocsCorpus, build_corpus
from simweb.corpora.sites import KNOWN_SITES, Site

__all__ = ["DEBDOCS", "PACKAGES", "build_debdocs", "debdocs_sites"]

# The documentation packages, in the order their sites are listed everywhere.
PACKAGES = ("postgresql-doc-15", "python3.11-doc", "python-django-doc")

DEBDOCS = DocsCorpus(key="debdocs", title="DebDocs", packages=PACKAGES)


def debdocs_sites(versions: Mapping[str, str]) -> tuple[Site, ...]:
    """The three DebDocs sites; ``versions`` maps package name → Debian version.

    The Django release in its URLs comes from the package version (python-django-doc
    3:3.2.25-… → docs.djangoproject.com/en/3.2/); PostgreSQL 15 and Python 3.11 are fixed by
    the package names.
    """
    return tuple(KNOWN_SITES[p].site(p, versions.get(p, "")) for p in PACKAGES)


def build_debdocs(out: str, cache: str | None = None) -> dict:
    """Build the DebDocs crawl and directory into ``out`` (``.deb`` files cached in ``cache``)."""
    return build_corpus(DEBDOCS, out, cache)
