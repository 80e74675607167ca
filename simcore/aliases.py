"""Redirects and canonical URLs: which URLs of a crawl name one document, by written rules.

Paper Section 3.1 credits the anchors of page v to the page u they point to; when u answers
under several URLs, anchors pointing at any of them must reach one document, or they are lost
(on a held-out academic crawl, 1,432 links pointed at the slash-less form of 622 crawled
pages). An **alias** is a URL that names another URL's document, its **target**. Every alias
comes from evidence in the crawl; nothing is guessed across hosts.

| rule | the crawl holds | alias → target |
| --- | --- | --- |
| redirect | a response record with status 301, 302, 303, 307 or 308 and a Location header | the record's URL → Location resolved against it, on any host (the server said so) |
| canonical | a page whose head has ``<link rel="canonical" href>`` (all of them naming one URL) in its origin (scheme, host, port) | the page's URL → href resolved against the page's base |
| refresh | a page whose head has an instant refresh, ``<meta http-equiv="refresh" content="0; url=…">`` (delay 0: a redirect written in HTML, as sites moved before servers were configured for it) | the page's URL → the URL resolved against the page's base, on any host (where a browser goes) |
| slash | a page ``…/dir/`` (no query) | ``…/dir`` → ``…/dir/``, unless ``…/dir`` was crawled |
| index | a page ``…/dir/`` (no query) | ``…/dir/index.html`` (and the other index files) → ``…/dir/``, unless crawled |
| index | a page ``…/dir/index.html`` (or another index file; no query) | ``…/dir/`` and ``…/dir`` → the page, unless crawled |
| noslash | a page ``…/name`` (no query; its last segment has no ``.``: a route, not a file) | ``…/name/`` → ``…/name``, unless crawled |

- **Default ports, case, escapes, dot segments, fragments** are one URL already:
  :func:`simweb.core.urls.normalize_url` (``http://H:80/a/./b#x`` is ``http://h/a/b``).
- **Index files** are :data:`INDEX_FILES`, the directory index documents that servers serve
  for a directory by default: Apache's and nginx's ``index.html``, PHP's ``index.php``, and
  IIS's default documents ``index.htm``, ``default.htm``, ``default.asp``, ``default.aspx``
  (matched without regard to case: IIS ignores it). No other file name is guessed.
- **The reverse of slash holds for routes, not files**: when the crawl holds only one of
  ``…/name`` and ``…/name/``, links to either count for it. Servers answer ``…/dir`` with a
  redirect to ``…/dir/`` (Apache's mod_dir, nginx, IIS), and sites that drop trailing slashes
  redirect ``…/name/`` to ``…/name`` (or route both to one handler, as Express and Rails do):
  the crawl's page under one form is the evidence for the other. A last segment with a ``.``
  names a file (``…/page.html``), which no common server serves at ``…/page.html/`` (Apache
  answers 404, or the same bytes under another base URL): no rule. The noslash rule is the
  weakest: a name that the slash or index rule gives a page goes to that page.
- **Variants need one crawled candidate**: a URL that is a variant of two crawled pages
  (``…/dir/index.html`` and ``…/dir/index.php`` crawled, ``…/dir/`` linked) is ambiguous and
  stays its own document; the slash rule goes before the index rule (``…/dir`` is ``…/dir/``
  when both ``…/dir/`` and ``…/dir/index.html`` were crawled).
- **Redirects across hosts** are kept (``http://a/x`` → ``https://b/x`` is the server's own
  word); a ``rel=canonical`` to another origin is ignored and counted: a page may only speak
  for URLs of its own origin (the browser's same-origin rule), or one page could claim another
  site's document.
- **A refresh after a delay** (``content="5; url=…"``) is no alias: the page is shown first, a
  page of its own; only the first refresh of a page counts, as in a browser.
- **Which evidence wins**: a URL with redirects, canonical links or refreshes to different
  targets takes its redirect over its canonical link over its refresh, then the one read first (by WARC file, then record
  offset); the others are counted as conflicting. Slash and index variants never override
  a redirect, a canonical link or a crawled page.
- **Chains** are followed to their end, at most :data:`MAX_HOPS` aliases (the Fetch
  standard's redirect limit); an alias in a loop (``a → b → a``), or leading into one, or on a
  chain longer than that, is not resolved: it stays its own document, counted.
- **Pages**: a crawled page whose URL is an alias (a canonical link or a refresh, or a URL
  crawled both as a page and as a redirect) whose final target is a crawled page is merged into that page —
  dropped with its out-links, as a duplicate copy is — and counted. When the final target was
  not crawled as a page, the alias is set aside and the page keeps its own document (one page
  is never replaced by a URL with no content); the aliases that led through it then end at it.

The functions here take and return plain strings and numpy arrays; the crawl reader
(simweb.tasks.crawl) reads the evidence the ingest stage wrote and applies the resolved map to
every link's target and every page, so that all stages agree.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from simweb.core.urls import normalize_url

__all__ = [
    "CANONICAL",
    "INDEX",
    "INDEX_FILES",
    "KINDS",
    "MAX_HOPS",
    "NOSLASH",
    "REDIRECT",
    "REDIRECT_STATUSES",
    "REFRESH",
    "SLASH",
    "AliasMap",
    "build_alias_map",
    "canonical_target",
    "choose_aliases",
    "redirect_target",
    "refresh_target",
    "resolve_chains",
    "same_origin",
    "variant_names",
]

#: Response statuses whose Location names the record's document (RFC 9110 Section 15.4).
#: 300 (a choice), 304 (not modified) and 305 (use proxy) name no document.
REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})
#: Directory index documents (see the module docstring), compared in lower case.
INDEX_FILES = ("index.html", "index.htm", "index.php", "default.htm", "default.asp", "default.aspx")
#: The longest chain of aliases followed (the Fetch standard's redirect limit).
MAX_HOPS = 20

# The kinds of alias, strongest evidence first (their order is the precedence of ``choose_aliases``).
REDIRECT = "redirect"
CANONICAL = "canonical"
REFRESH = "refresh"
SLASH = "slash"
INDEX = "index"
NOSLASH = "noslash"
KINDS = (REDIRECT, CANONICAL, REFRESH, SLASH, INDEX, NOSLASH)

# Why a redirect or canonical link gave no alias (counted by the ingest stage).
NO_LOCATION = "redirect without Location"
LOCATION_NOT_HTTP = "redirect Location not http(s)"
REDIRECT_TO_ITSELF = "redirect to itself"
CANONICAL_NOT_HTTP = "canonical link not http(s)"
CANONICAL_TO_ITSELF = "canonical link to itself"
CANONICAL_OTHER_HOST = "canonical link to another host"
CANONICAL_DISAGREE = "canonical links disagree"
REFRESH_NOT_HTTP = "refresh target not http(s)"
REFRESH_TO_ITSELF = "refresh to itself"
ALIAS_SKIP_REASONS = (NO_LOCATION, LOCATION_NOT_HTTP, REDIRECT_TO_ITSELF, CANONICAL_NOT_HTTP,
                      CANONICAL_TO_ITSELF, CANONICAL_OTHER_HOST, CANONICAL_DISAGREE, REFRESH_NOT_HTTP,
                      REFRESH_TO_ITSELF)


def redirect_target(url: str, location: str | None) -> tuple[str | None, str | None]:
    """The target of a redirect of the normalised ``url`` to ``location`` (resolved against
    ``url``, RFC 9110 Section 10.2.2), and None; or None and why there is none."""
    if location is None or not location.strip():
        return None, NO_LOCATION
    target = normalize_url(location, url)
    if target is None:
        return None, LOCATION_NOT_HTTP
    if target == url:
        return None, REDIRECT_TO_ITSELF
    return target, None


def same_origin(a: str, b: str) -> bool:
    """Whether two normalised URLs share scheme, host and port."""
    return a.split("/", 3)[:3] == b.split("/", 3)[:3]


def canonical_target(url: str, canonical: Sequence[str | None]) -> tuple[str | None, str | None]:
    """The target named by the canonical links of the page at the normalised ``url`` (their
    targets resolved against the page's base and normalised, None for one that is not an
    http(s) URL: :attr:`simweb.core.records.ParsedPage.canonical`), and None; or None and why
    they name no other document of the page's origin (None, None: the page has none)."""
    if not canonical:
        return None, None
    if len(set(canonical)) > 1:
        return None, CANONICAL_DISAGREE
    target = canonical[0]
    if target is None:
        return None, CANONICAL_NOT_HTTP
    if target == url:
        return None, CANONICAL_TO_ITSELF
    if not same_origin(url, target):
        return None, CANONICAL_OTHER_HOST
    return target, None


def refresh_target(url: str, refresh: Sequence[str | None]) -> tuple[str | None, str | None]:
    """The target of the instant refresh of the page at the normalised ``url`` (resolved and
    normalised, None for one that is not an http(s) URL: :attr:`simweb.core.records.ParsedPage.refresh`),
    and None; or None and why it names no other document (None, None: the page has none)."""
    if not refresh:
        return None, None
    target = refresh[0]
    if target is None:
        return None, REFRESH_NOT_HTTP
    if target == url:
        return None, REFRESH_TO_ITSELF
    return target, None


def variant_names(url: str) -> list[tuple[str, str]]:
    """The URLs the page at the normalised ``url`` also answers to by the slash, index and
    noslash rules, each with its rule (:data:`SLASH`, :data:`INDEX`, :data:`NOSLASH`):
    candidates, which the crawl reader keeps only when they are not crawled themselves and
    name no other page."""
    if "?" in url:
        return []
    origin_end = url.index("/", url.index("//") + 2)
    path = url[origin_end:]
    last = path.rsplit("/", 1)[1]
    if not last:  # a directory: ".../dir/"
        names = [(url + name, INDEX) for name in INDEX_FILES]
        if path != "/":
            names.insert(0, (url[:-1], SLASH))
        return names
    if last.lower() in INDEX_FILES:
        directory = url[: len(url) - len(last)]
        names = [(directory, INDEX)]
        if directory[origin_end:] != "/":
            names.append((directory[:-1], INDEX))
        return names
    if "." not in last:  # a route: ".../name" answers ".../name/" too
        return [(url + "/", NOSLASH)]
    return []


def choose_aliases(alias_ids: np.ndarray, target_ids: np.ndarray, rank: np.ndarray) -> tuple[np.ndarray, int, int]:
    """Which rows of alias evidence hold: per alias id the row of least ``rank`` (the caller
    ranks by kind, then WARC file, then offset). Returns the kept rows' mask, the rows dropped
    because they named another target (conflicting), and the rows dropped as repeats of the
    kept one (the same target)."""
    n = alias_ids.size
    keep = np.zeros(n, dtype=bool)
    if not n:
        return keep, 0, 0
    order = np.lexsort((rank, alias_ids))
    first = np.ones(n, dtype=bool)
    first[1:] = alias_ids[order][1:] != alias_ids[order][:-1]
    keep[order[first]] = True
    group = np.cumsum(first) - 1
    chosen_target = target_ids[order][first][group]
    dropped = ~first
    conflicting = int((dropped & (target_ids[order] != chosen_target)).sum())
    return keep, conflicting, int(dropped.sum()) - conflicting


def resolve_chains(alias_ids: np.ndarray, target_ids: np.ndarray,
                   max_hops: int = MAX_HOPS) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Follow each alias (``alias_ids`` unique) through the others to its final target.

    Returns the final targets, the hops taken (1 for an alias whose target is no alias) and a
    mask of the aliases that resolve; those that do not (in or into a loop, or on a chain of
    more than ``max_hops`` aliases) keep their first target in the first array.
    """
    order = np.argsort(alias_ids, kind="stable")
    keys, nexts = alias_ids[order], target_ids[order]
    final = target_ids.copy()
    hops = np.ones(alias_ids.size, dtype=np.int64)
    moving = np.arange(alias_ids.size)
    for _ in range(max_hops):
        if not moving.size or not keys.size:
            break
        at = np.minimum(np.searchsorted(keys, final[moving]), keys.size - 1)
        on = keys[at] == final[moving]
        moving, at = moving[on], at[on]
        final[moving] = nexts[at]
        hops[moving] += 1
    resolved = np.ones(alias_ids.size, dtype=bool)
    resolved[moving] = False  # still on an alias after max_hops further steps
    final[~resolved] = target_ids[~resolved]
    hops[~resolved] = 0
    return final, hops, resolved


def in_loop(alias_ids: np.ndarray, target_ids: np.ndarray, start: int) -> bool:
    """Whether following aliases from ``start`` comes back to an id it passed (a loop, rather
    than a chain too long). For the few aliases :func:`resolve_chains` left unresolved."""
    step = dict(zip(alias_ids.tolist(), target_ids.tolist()))
    seen = set()
    at = start
    while at in step:
        if at in seen:
            return True
        seen.add(at)
        at = step[at]
    return False


@dataclass(frozen=True, slots=True, eq=False)
class AliasMap:
    """A crawl's resolved aliases: sorted alias ids, each one's final target id and URL and the
    kind of its first hop (an index into :data:`KINDS`), and the counts of how it was made."""

    ids: np.ndarray = field(default_factory=lambda: np.zeros(0, np.uint64))
    targets: np.ndarray = field(default_factory=lambda: np.zeros(0, np.uint64))
    target_urls: Sequence[str] = ()
    kinds: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int8))
    counts: dict[str, int] = field(default_factory=dict)

    def __len__(self) -> int:
        return int(self.ids.size)

    def positions(self, ids: np.ndarray) -> np.ndarray:
        """For each of ``ids`` its row in the map, or -1 when it is no alias."""
        ids = np.asarray(ids, dtype=np.uint64)
        if not self.ids.size or not ids.size:
            return np.full(ids.size, -1, dtype=np.int64)
        at = np.minimum(np.searchsorted(self.ids, ids), self.ids.size - 1)
        return np.where(self.ids[at] == ids, at, -1)

    def resolve(self, ids: np.ndarray) -> np.ndarray:
        """The document id of each of ``ids``: its final target when it is an alias, else itself."""
        ids = np.asarray(ids, dtype=np.uint64)
        at = self.positions(ids)
        return np.where(at >= 0, self.targets[np.maximum(at, 0)] if self.ids.size else ids, ids)


def build_alias_map(alias_ids: np.ndarray, target_ids: np.ndarray, target_urls: Sequence[str], kinds: np.ndarray,
                    rank: np.ndarray, page_ids: np.ndarray, max_hops: int = MAX_HOPS) -> AliasMap:
    """The resolved aliases of a crawl from its evidence, by the rules of the module docstring.

    One row per piece of evidence: alias id, target id and URL, kind (an index into
    :data:`KINDS`) and rank (the order it was read in: WARC file, then offset); ``page_ids``
    are the ids of the crawl's pages (a variant name that was crawled is no alias).

    The map's counts: the evidence read (``redirect_and_canonical_rows``: redirects, canonical
    links and refreshes; ``variant_rows``), the
    rows set aside (``conflicting_aliases`` naming another target, ``repeated_aliases`` naming the
    same; ``variants_crawled``, ``variants_ambiguous``), the aliases left unresolved
    (``aliases_in_loops``, ``aliases_too_long``), and the aliases kept (``aliases``, per kind
    ``aliases_<kind>``, ``aliases_chained`` of them reached through another alias).
    """
    alias_ids = np.asarray(alias_ids, dtype=np.uint64)
    target_ids = np.asarray(target_ids, dtype=np.uint64)
    kinds = np.asarray(kinds, dtype=np.int8)
    rank = np.asarray(rank, dtype=np.int64)
    explicit = kinds <= KINDS.index(REFRESH)
    counts = {"redirect_and_canonical_rows": int(explicit.sum()), "variant_rows": int((~explicit).sum())}

    # Redirects, canonical links and refreshes: per URL the strongest, then the first read.
    rows = np.flatnonzero(explicit)
    keep, conflicting, repeated = choose_aliases(alias_ids[rows], target_ids[rows],
                                                 kinds[rows].astype(np.int64) * (rank.max(initial=0) + 1) + rank[rows])
    rows = rows[keep]
    counts.update(conflicting_aliases=conflicting, repeated_aliases=repeated)

    # Slash and index variants: only names that were not crawled and have no evidence of their
    # own, each naming exactly one page.
    variants = np.flatnonzero(~explicit)
    taken = np.isin(alias_ids[variants], np.concatenate([np.asarray(page_ids, np.uint64), alias_ids[rows]]))
    counts["variants_crawled"] = int(np.unique(alias_ids[variants[taken]]).size)
    variants = variants[~taken]
    # A slash variant (".../dir" of ".../dir/") goes before index variants of the same name.
    if variants.size:
        order = np.lexsort((kinds[variants], alias_ids[variants]))
        variants = variants[order]
        starts = np.ones(variants.size, dtype=bool)
        starts[1:] = alias_ids[variants][1:] != alias_ids[variants][:-1]
        least = kinds[variants][starts][np.cumsum(starts) - 1]
        variants = variants[kinds[variants] == least]
    pairs = np.unique(np.stack([alias_ids[variants], target_ids[variants]]), axis=1) if variants.size else \
        np.zeros((2, 0), np.uint64)
    names, per_name = np.unique(pairs[0], return_counts=True)
    ambiguous = names[per_name > 1]
    counts["variants_ambiguous"] = int(ambiguous.size)
    variants = variants[~np.isin(alias_ids[variants], ambiguous)]
    _, first = np.unique(alias_ids[variants], return_index=True)  # the same page read twice: once
    rows = np.concatenate([rows, variants[np.sort(first)]])

    ids, targets, row_kinds = alias_ids[rows], target_ids[rows], kinds[rows]
    final, hops, resolved = resolve_chains(ids, targets, max_hops)
    unresolved = np.flatnonzero(~resolved)
    loops = sum(in_loop(ids, targets, int(ids[i])) for i in unresolved.tolist())
    counts.update(aliases_in_loops=loops, aliases_too_long=int(unresolved.size) - loops,
                  aliases_chained=int((hops > 1).sum()))
    order = np.argsort(ids[resolved], kind="stable")
    ids, final, row_kinds = ids[resolved][order], final[resolved][order], row_kinds[resolved][order]
    counts["aliases"] = int(ids.size)
    for i, kind in enumerate(KINDS):
        counts[f"aliases_{kind}"] = int((row_kinds == i).sum())
    # The URL of each final target: the target URL of a row naming it (every final target is one).
    by_target = np.argsort(target_ids, kind="stable")
    named = by_target[np.searchsorted(target_ids[by_target], final)] if final.size else by_target[:0]
    return AliasMap(ids, final, [target_urls[i] for i in named.tolist()], row_kinds, counts)
