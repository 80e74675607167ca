"""A documentation web site inside a Debian package: its folder, public URL and layout.

``KNOWN_SITES`` names the packages whose site is known: the project's own public URL for the
release the package holds, and the layout its pages are written in. Any other package gets
``made_up_site``: its HTML folder, a stable made-up host (``https://<package>.docs.example/``)
and its folders as its hierarchy.
"""
from __future__ import annotations

import posixpath
import re
from collections.abc import Iterable
from dataclasses import dataclass
from urllib.parse import quote

from simweb.corpora.debian import upstream_release
from simweb.corpora.layouts import DOCBOOK, FOLDERS, SPHINX_BREADCRUMBS, SPHINX_TOCTREE

__all__ = ["KNOWN_SITES", "KnownSite", "Site", "made_up_site", "package_site"]


@dataclass(frozen=True, slots=True)
class Site:
    """One documentation web site shipped in a Debian package.

    ``key`` names the site in counts and links (unique in a collection); ``name`` is its
    top-level category (``Top/<name>/…``). ``html_root`` is the folder inside the package (no
    leading slash) that holds the site; a page's ``path`` is relative to it. ``layout`` says how
    a page states its place in the site (``simweb.corpora.layouts``). ``local_roots`` are the
    absolute folders under which a Debian system serves the same files (other packages link to
    them); ``public_aliases`` are other public URL prefixes that name the same release
    ("current", "stable", "3") and are mapped to ``base_url`` when the linked file exists in the
    collection. ``directory_urls``: the public site names ``a/b.html`` as ``a/b/`` (Django).
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
        """The title with white space collapsed and the site's title suffix removed."""
        title = " ".join(title.split())
        if self.title_suffix:
            title = re.sub(self.title_suffix, "", title).strip()
        return title


@dataclass(frozen=True, slots=True)
class KnownSite:
    """Where a documentation package's site lives on the web, and how its pages state their place.

    ``base_url``, ``name`` and ``public_aliases`` may name the package's release as
    ``{major}``, ``{release}`` (major.minor) or ``{upstream}`` (major.minor.patch), taken from
    its Debian version (``upstream_release``), so the URLs follow the package.
    """

    key: str
    name: str
    html_root: str
    base_url: str
    layout: str
    root_page: str = "index.html"
    local_roots: tuple[str, ...] = ()
    public_aliases: tuple[str, ...] = ()
    directory_urls: bool = False
    title_suffix: str = ""
    root_aliases: tuple[str, ...] = ()

    def site(self, package: str, version: str) -> Site:
        """The site of ``package`` at Debian ``version``."""
        fields = _ReleaseFields(version)
        return Site(
            key=self.key,
            name=self.name.format_map(fields),
            package=package,
            html_root=self.html_root,
            base_url=self.base_url.format_map(fields),
            layout=self.layout,
            root_page=self.root_page,
            local_roots=self.local_roots or ("/" + self.html_root,),
            public_aliases=tuple(alias.format_map(fields) for alias in self.public_aliases),
            directory_urls=self.directory_urls,
            title_suffix=self.title_suffix,
            root_aliases=self.root_aliases,
        )


class _ReleaseFields(dict):
    """``{major}``, ``{release}`` and ``{upstream}`` of a Debian version, computed when a template asks."""

    _PARTS = {"major": 1, "release": 2, "upstream": 3}

    def __init__(self, version: str):
        super().__init__()
        self.version = version

    def __missing__(self, key: str) -> str:
        if key not in self._PARTS:
            raise KeyError(f"unknown release field {{{key}}}: expected one of {sorted(self._PARTS)}")
        return upstream_release(self.version, self._PARTS[key])


def _sphinx_suffix(project: str) -> str:
    """The title suffix Sphinx appends to every page's title: `` — <project>``."""
    return rf"\s+—\s+{project}$"


#: Documentation packages of Debian 12 whose public site is known, by package name. The first
#: three are DebDocs (``simweb.corpora.debdocs``); their URL rules are described there. The
#: pydata-themed Sphinx sites (SciPy, pandas, statsmodels) take their folders as hierarchy:
#: their content toctrees place few of their pages at the class depth (SciPy 4%, pandas 3%,
#: statsmodels 1%: the API pages hang from hidden autosummary toctrees), their folders more
#: (96%, 60% and 6%).
KNOWN_SITES: dict[str, KnownSite] = {
    "postgresql-doc-15": KnownSite(
        key="postgresql",
        name="PostgreSQL",
        html_root="usr/share/doc/postgresql-doc-15/html/",
        base_url="https://www.postgresql.org/docs/15/",
        layout=DOCBOOK,
        public_aliases=("https://www.postgresql.org/docs/current/", "https://www.postgresql.org/docs/15/"),
    ),
    "python3.11-doc": KnownSite(
        key="python",
        name="Python",
        html_root="usr/share/doc/python3.11/html/",
        base_url="https://docs.python.org/3.11/",
        layout=SPHINX_BREADCRUMBS,
        local_roots=(
            "/usr/share/doc/python3.11/html/",
            "/usr/share/doc/python3.11-doc/html/",
            # Debian's default-version docs (python3-doc) are Python 3.11 on Debian 12.
            "/usr/share/doc/python3-doc/html/",
        ),
        public_aliases=("https://docs.python.org/3.11/", "https://docs.python.org/3/", "https://docs.python.org/"),
        title_suffix=r"\s+—\s+Python \S+ documentation$",
    ),
    "python-django-doc": KnownSite(
        key="django",
        name="Django",
        html_root="usr/share/doc/python-django-doc/html/",
        base_url="https://docs.djangoproject.com/en/{release}/",
        layout=SPHINX_TOCTREE,
        # Django's Sphinx master document is contents; index is a hand-made landing page.
        root_page="contents.html",
        public_aliases=("https://docs.djangoproject.com/en/{release}/", "https://docs.djangoproject.com/en/stable/"),
        directory_urls=True,
        title_suffix=r"\s+—\s+Django \S+ documentation$",
        root_aliases=("index.html",),
    ),
    "linux-doc-6.1": KnownSite(
        key="linux",
        name="Linux_kernel",
        html_root="usr/share/doc/linux-doc-6.1/html/",
        base_url="https://www.kernel.org/doc/html/v{release}/",
        layout=SPHINX_BREADCRUMBS,
        title_suffix=_sphinx_suffix(r"The Linux Kernel\s+documentation"),
    ),
    "python-scipy-doc": KnownSite(
        key="scipy",
        name="SciPy",
        html_root="usr/share/doc/python-scipy-doc/html/",
        base_url="https://docs.scipy.org/doc/scipy-{upstream}/",
        layout=FOLDERS,
        title_suffix=_sphinx_suffix(r"SciPy v\S+ Manual"),
    ),
    "python-pandas-doc": KnownSite(
        key="pandas",
        name="pandas",
        html_root="usr/share/doc/python-pandas-doc/html/",
        base_url="https://pandas.pydata.org/pandas-docs/version/{upstream}/",
        layout=FOLDERS,
        title_suffix=_sphinx_suffix(r"pandas \S+ documentation"),
    ),
    "python-statsmodels-doc": KnownSite(
        key="statsmodels",
        name="statsmodels",
        html_root="usr/share/doc/python-statsmodels-doc/html/",
        base_url="https://www.statsmodels.org/v{upstream}/",
        layout=FOLDERS,
        title_suffix=_sphinx_suffix("statsmodels"),
    ),
    "openjdk-17-doc": KnownSite(
        key="java",
        name="Java_SE_{major}",
        html_root="usr/share/doc/openjdk-17-jre-headless/api/",
        base_url="https://docs.oracle.com/en/java/javase/{major}/docs/api/",
        layout=FOLDERS,
    ),
    "rust-doc": KnownSite(
        key="rust",
        name="Rust_{upstream}",
        html_root="usr/share/doc/rust-doc/html/",
        base_url="https://doc.rust-lang.org/{upstream}/",
        layout=FOLDERS,
    ),
    "rust-web-doc": KnownSite(
        key="rust-web",
        name="Rust_{upstream}",
        html_root="usr/share/doc/rust-web-doc/html/",
        base_url="https://doc.rust-lang.org/{upstream}/",
        layout=FOLDERS,
    ),
    "ghc-doc": KnownSite(
        key="ghc",
        name="GHC_{upstream}",
        html_root="usr/share/doc/ghc-doc/html/",
        base_url="https://downloads.haskell.org/ghc/{upstream}/docs/html/",
        layout=FOLDERS,
    ),
}


def _host_label(package: str) -> str:
    """A DNS label for a package name: ``libstdc++-12-doc`` → ``libstdcxx-12-doc``, ``python3.11-doc`` →
    ``python3-11-doc``."""
    label = re.sub(r"[^a-z0-9-]+", "-", package.lower().replace("+", "x")).strip("-")
    return label or "package"


def made_up_site(package: str, html_paths: Iterable[str]) -> Site:
    """The site of a package no table knows: the folder holding all its HTML pages, served at a
    stable made-up host ``https://<package>.docs.example/``, its folders its hierarchy.

    ``html_paths``: the package's HTML files, relative to the package root (no leading slash).
    """
    folders = [posixpath.dirname(p) for p in html_paths]
    root = posixpath.commonpath(folders) if folders else ""
    html_root = root + "/" if root else ""
    return Site(
        key=package,
        name=package,
        package=package,
        html_root=html_root,
        base_url=f"https://{_host_label(package)}.docs.example/",
        layout=FOLDERS,
        root_page="index.html",
        local_roots=("/" + html_root,) if html_root else (),
        public_aliases=(),
    )


def package_site(package: str, version: str, html_paths: Iterable[str]) -> Site:
    """The site of ``package`` at Debian ``version``: from ``KNOWN_SITES``, else ``made_up_site``."""
    known = KNOWN_SITES.get(package)
    return known.site(package, version) if known is not None else made_up_site(package, html_paths)
