"""References between the pages of a collection, resolved and rewritten to public URLs.

A documentation package links its pages with relative references, with paths into Debian's
documentation folders (``/usr/share/doc/python3-doc/html/…``, ``file:///…``) and with public
URLs of other releases ("current", "stable"). ``Collection`` resolves each of them against
the files the collection's packages ship; ``rewrite_links`` gives every reference into the
collection its canonical public URL, so that the links between pages and sites survive as
the anchors the paper's strategies read (Section 3.1); ``LinkCounter`` counts a site's links
by target, as the ingest will see them.
"""
from __future__ import annotations

import html as html_lib
import posixpath
import re
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from urllib.parse import quote, unquote, urlsplit

from simweb.core.urls import normalize_url
from simweb.corpora.sites import Site

__all__ = ["DROP", "Collection", "LinkCounter", "LinkStats", "Rewrite", "edit_references", "link_stats", "rewrite_links"]

# Resolved references kept per collection before the memo starts afresh: pages of one folder
# share most references, and a bound keeps a site of many thousand folders in bounded memory.
_MEMO_LIMIT = 1 << 18


class Collection:
    """The sites of a crawl and the files each holds: what link rewriting resolves against.

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
            if len(self._memo) >= _MEMO_LIMIT:
                self._memo.clear()
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


#: What an edit returns to remove the attribute from its tag (``edit_references``).
DROP = object()


def edit_references(html: str, edit: Callable[[str, str, str], object]) -> str:
    """The page with each URL attribute (``href``, ``src``, ``action``) passed through ``edit``.

    ``edit(tag, attribute, value)`` gets lower-cased names and the unescaped value, in document
    order, and returns the new value, None to keep it, or ``DROP`` to remove the attribute. Only
    those values change; every other byte of the page stays as it was. Script and style bodies
    and comments are skipped (Django's pages build links in JavaScript strings).
    """
    out: list[str] = []
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
            attribute = attr.group(1).lower()
            if raw is None or attribute not in _URL_ATTRIBUTES:
                continue
            quoted = raw[:1] in "\"'"
            new = edit(name, attribute, html_lib.unescape(raw[1:-1] if quoted else raw))
            if new is DROP:
                # The attribute and the white space before it.
                start = attrs_start + attr.start(1)
                while start > attrs_start and html[start - 1].isspace():
                    start -= 1
                out.append(html[pos:start])
                pos = attrs_start + attr.end(2)
            elif new is not None:
                start = attrs_start + attr.start(2)
                out.append(html[pos:start])
                out.append('"' + html_lib.escape(new, quote=True) + '"')
                pos = start + len(raw)
        if raw_text is not None and not attrs.rstrip().endswith("/"):
            end = _RAW_TEXT[name].search(html, scan)
            scan = end.end() if end is not None else len(html)
    out.append(html[pos:])
    return "".join(out)


def rewrite_links(html: str, site: Site, path: str, collection: Collection) -> Rewrite:
    """Give every reference (``href``, ``src``, ``action``) into the collection its canonical URL.

    Only attribute values change (``edit_references``). References to resources outside the
    collection stay as they are, except paths into other Debian documentation packages, which
    become ``file:`` URLs so that they are not mistaken for pages of the site's own host.
    Same-page fragments (``#x``) are kept relative.
    """
    anchors: list[str] = []
    kinds: Counter = Counter()
    folder = posixpath.dirname(path)

    def canonical(tag: str, attribute: str, value: str) -> str | None:
        new, kind = collection.resolve(site, path, value, folder)
        kinds[kind] += 1
        if tag == "a" and attribute == "href":
            anchors.append(value if new is None else new)
        return new

    html = edit_references(html, canonical)
    return Rewrite(html, tuple(anchors), dict(kinds))


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


class LinkCounter:
    """The links of one site's pages counted by target, a page at a time (``LinkStats``).

    Targets are normalised as the ingest stage normalises them (``simweb.core.urls``), so the
    counts are the links the crawl will hold. ``listed``: the URLs listed in the directory.
    """

    def __init__(self, site: Site, collection: Collection, listed: frozenset[str]):
        self.site, self.collection, self.listed = site, collection, listed
        self.counts: Counter = Counter()

    def add(self, path: str, hrefs: Sequence[str]) -> None:
        """Count the final hrefs of the ``<a>`` elements of the page at ``path``."""
        counts, page_site = self.counts, self.collection.page_site
        url = self.site.canonical_url(path)
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
            elif target in page_site:
                counts["internal"] += 1
                if page_site[target] != self.site.key:
                    counts["cross_site"] += 1
                if target in self.listed:
                    counts["to_directory"] += 1
            else:
                counts["external"] += 1

    def stats(self) -> LinkStats:
        return LinkStats(*(self.counts[k] for k in LinkStats.__slots__))


def link_stats(
    site: Site, pages: Iterable[tuple[str, Sequence[str]]], collection: Collection, listed: frozenset[str]
) -> LinkStats:
    """Count the links of ``pages`` — (path, final hrefs of its ``<a>`` elements) pairs — by target."""
    counter = LinkCounter(site, collection, listed)
    for path, hrefs in pages:
        counter.add(path, hrefs)
    return counter.stats()
