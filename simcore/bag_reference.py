"""Bags record by record: the readable reference of the bag definitions (paper Sections 3, 5.2, 6.1).

Plain dicts and frozen records, easy to read and to check by hand: the fragments a page and a
link contribute (:func:`page_fragments`, :func:`link_fragments`), their merge, document
frequencies and weighting (:func:`merge_fragments`, :func:`weigh_bags`), and the weighted bag
of every URL (:func:`reference_bags`). The definitions themselves are stated in
:mod:`simweb.core.bags`, whose columnar :class:`~simweb.core.bags.Corpus` is the fast path the
stages use; tests check the two agree.
"""
from __future__ import annotations

import enum
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from simweb.core.strategy import Frequency, Strategy, Window
from simweb.core.text import Stemming, term, terms
from simweb.core.weighting import ANCHOR_DISTANCE_WEIGHT, Weighting, distance_weight

__all__ = [
    "Fragment",
    "FragmentKind",
    "LINK_PREFIX",
    "OUTLINK_PREFIX",
    "LinkRow",
    "PageRow",
    "anchor_fragment",
    "content_fragment",
    "document_frequencies",
    "link_fragment",
    "link_fragments",
    "merge_bags",
    "merge_fragments",
    "outlink_fragment",
    "page_fragments",
    "reference_bags",
    "share_bags",
    "title_fragment",
    "weigh_bags",
    "window_terms",
]

#: Link-id terms are the inlinking URL behind this prefix, so they never collide with words.
LINK_PREFIX = "link:"
#: Out-link-id terms are the linked-to URL behind this prefix (beyond the paper).
OUTLINK_PREFIX = "outlink:"

Bag = dict[str, float]


# ---------------------------------------------------------------------------------------------
# Records (the rows of the PAGES and LINKS data sets that bags need)


@dataclass(frozen=True, slots=True)
class PageRow:
    """The part of a PAGES row a bag needs: the page and its cleaned title and page words."""

    url: str
    url_id: int
    title_words: tuple[str, ...]
    words: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class LinkRow:
    """A LINKS row: an anchor in page ``source`` pointing to page ``target`` with its context.

    ``left_words``/``right_words`` are nearest first; the region lengths count context words
    (stopwords included) inside the SYNTACTIC and TOPICAL regions (simweb.core.records.Anchor).
    """

    source_url: str
    source_id: int
    target_url: str
    target_id: int
    anchor_words: tuple[str, ...]
    left_words: tuple[str, ...] = ()
    right_words: tuple[str, ...] = ()
    syntactic_left: int = 0
    syntactic_right: int = 0
    topical_left: int = 0
    topical_right: int = 0


class FragmentKind(str, enum.Enum):
    CONTENT = "content"
    TITLE = "title"
    ANCHOR = "anchor"
    LINK = "link"
    OUTLINK = "outlink"


@dataclass(frozen=True, slots=True)
class Fragment:
    """A partial bag of one URL (Section 6.1): its terms with summed weights, sorted by term."""

    url_id: int
    url: str
    kind: FragmentKind
    terms: tuple[tuple[str, float], ...]

    def bag(self) -> Bag:
        return dict(self.terms)


def _fragment(url_id: int, url: str, kind: FragmentKind, weights: dict[str, float]) -> Fragment | None:
    weights = {t: w for t, w in weights.items() if w > 0}
    if not weights:
        return None
    return Fragment(int(url_id), url, kind, tuple(sorted(weights.items())))


# ---------------------------------------------------------------------------------------------
# Fragments, record by record (the readable reference)


def window_terms(words: Sequence[str], stemming: Stemming, *, window_size: int | None = None,
                 region: int | None = None) -> list[tuple[str, int]]:
    """The terms of one side of an anchor window with their distances (Section 3.1).

    ``words`` are the context words on one side, nearest first. A word's distance is its
    position among the words that are not stopwords under ``stemming`` (1 = nearest);
    stopwords are dropped and not counted. BASIC passes ``window_size`` = W (keep d ≤ W);
    SYNTACTIC and TOPICAL pass ``region`` = how many context words the region spans.
    """
    if region is not None:
        words = words[: max(0, region)]
    out = []
    rank = 0
    for word in words:
        t = term(word, stemming)
        if t is None:
            continue
        rank += 1
        if window_size is not None and rank > window_size:
            break
        out.append((t, rank))
    return out


def content_fragment(page: PageRow, strategy: Strategy) -> Fragment | None:
    """The page's own terms, title words then page words, 1 per occurrence (Section 3.1, content)."""
    if not strategy.uses_content:
        return None
    weights: dict[str, float] = defaultdict(float)
    for t in terms((*page.title_words, *page.words), strategy.stemming):
        weights[t] += 1.0
    return _fragment(page.url_id, page.url, FragmentKind.CONTENT, weights)


def title_fragment(page: PageRow, strategy: Strategy) -> Fragment | None:
    """The page's title as anchor-bag terms at distance 0, once per bag (Section 3.1)."""
    if not strategy.uses_anchor:
        return None
    w0 = ANCHOR_DISTANCE_WEIGHT if strategy.distance_weighting else 1.0
    weights: dict[str, float] = defaultdict(float)
    for t in terms(page.title_words, strategy.stemming):
        weights[t] += w0
    return _fragment(page.url_id, page.url, FragmentKind.TITLE, weights)


def anchor_fragment(link: LinkRow, strategy: Strategy) -> Fragment | None:
    """The anchor window of one inlink, credited to its target (Sections 3.1, 5.2); None for a self-link."""
    if not strategy.uses_anchor or link.source_id == link.target_id:
        return None
    dist = strategy.distance_weighting
    w0 = ANCHOR_DISTANCE_WEIGHT if dist else 1.0
    weights: dict[str, float] = defaultdict(float)
    for t in terms(link.anchor_words, strategy.stemming):
        weights[t] += w0
    if strategy.window is Window.BASIC:
        sides = [(link.left_words, None), (link.right_words, None)]
    elif strategy.window is Window.SYNTACTIC:
        sides = [(link.left_words, link.syntactic_left), (link.right_words, link.syntactic_right)]
    else:
        sides = [(link.left_words, link.topical_left), (link.right_words, link.topical_right)]
    limit = strategy.window_size if strategy.window is Window.BASIC else None
    for words, region in sides:
        for t, d in window_terms(words, strategy.stemming, window_size=limit, region=region):
            weights[t] += distance_weight(d) if dist else 1.0
    return _fragment(link.target_id, link.target_url, FragmentKind.ANCHOR, weights)


def link_fragment(link: LinkRow, strategy: Strategy) -> Fragment | None:
    """The inlinking URL as one term ``link:<source URL>`` (the link-based approach, Section 1); None for a self-link."""
    if not strategy.uses_links or link.source_id == link.target_id:
        return None
    return _fragment(link.target_id, link.target_url, FragmentKind.LINK, {LINK_PREFIX + link.source_url: 1.0})


def outlink_fragment(link: LinkRow, strategy: Strategy) -> Fragment | None:
    """The linked-to URL as one term ``outlink:<target URL>`` of the *linking* page's bag; None for
    a self-link. The in-link id of Section 1 seen from the other end: two pages share such a
    term when they link to the same page, bibliographic coupling as a bag (ENS Section 3.2)."""
    if not strategy.uses_outlinks or link.source_id == link.target_id:
        return None
    return _fragment(link.source_id, link.source_url, FragmentKind.OUTLINK, {OUTLINK_PREFIX + link.target_url: 1.0})


def page_fragments(page: PageRow, strategy: Strategy) -> list[Fragment]:
    """The fragments one crawled page contributes to its own bag: content and title."""
    return [f for f in (content_fragment(page, strategy), title_fragment(page, strategy)) if f is not None]


def link_fragments(link: LinkRow, strategy: Strategy) -> list[Fragment]:
    """The fragments one link contributes: anchor window and link id to its target's bag, the
    out-link id to its source's."""
    fragments = (anchor_fragment(link, strategy), link_fragment(link, strategy), outlink_fragment(link, strategy))
    return [f for f in fragments if f is not None]


# ---------------------------------------------------------------------------------------------
# Merging, df, weighting — record by record


def merge_bags(a: Bag, b: Bag) -> Bag:
    """Bag sum: weights of equal terms add (Section 6.1). Associative and commutative."""
    out = dict(a)
    for t, w in b.items():
        out[t] = out.get(t, 0.0) + w
    return out


def merge_fragments(fragments: Iterable[Fragment]) -> dict[int, tuple[str, Bag]]:
    """Collapse fragments into one bag per URL id: ``{url_id: (url, bag)}`` (Section 6.1)."""
    urls: dict[int, str] = {}
    bags: dict[int, Bag] = defaultdict(dict)
    for f in fragments:
        bag = bags[f.url_id]
        for t, w in f.terms:
            bag[t] = bag.get(t, 0.0) + w
        urls[f.url_id] = min(urls.get(f.url_id, f.url), f.url)
    return {u: (urls[u], bag) for u, bag in bags.items()}


def document_frequencies(bags: Iterable[Bag]) -> dict[str, int]:
    """df of every term: the number of bags containing it (Section 5.2)."""
    df: dict[str, int] = defaultdict(int)
    for bag in bags:
        for t, w in bag.items():
            if w > 0:
                df[t] += 1
    return dict(df)


def weigh_bags(bags: dict[int, tuple[str, Bag]], strategy: Strategy) -> tuple[dict[int, tuple[str, Bag]], Weighting]:
    """Frequency-weight merged bags by their df in this collection, then normalise each (Sections 5.2, 6.1;
    not for overlap, whose bags keep their weighted sums)."""
    df = document_frequencies(b for _, b in bags.values())
    vocab = sorted(df)
    df_arr = np.array([df[t] for t in vocab], dtype=np.int64)
    weighting = Weighting.resolve(strategy, df_arr)
    factor = dict(zip(vocab, weighting.factors(df_arr).tolist())) if vocab else {}
    binary = weighting.frequency is Frequency.BINARY
    out = {}
    for u, (url, bag) in bags.items():
        weighted = {t: (1.0 if binary else w) * factor[t] for t, w in bag.items() if w > 0}
        weighted = {t: w for t, w in weighted.items() if w > 0}
        total = sum(weighted.values())
        if total > 0:
            scale = strategy.normalise_to / total if strategy.normalised else 1.0
            out[u] = (url, {t: w * scale for t, w in weighted.items()})
    return out, weighting


def share_bags(parts: Iterable[tuple[float, dict[int, tuple[str, Bag]]]]) -> dict[int, tuple[str, Bag]]:
    """Σ_k share_k · B_k over the weighted single-source bags B_k of each URL (``parts``: pairs of
    a share and the bags ``reference_bags`` gives for that source alone): the bag of a strategy
    with source shares (simweb.core.strategy, "Source shares"). A URL without a part for a
    source gets nothing for it."""
    out: dict[int, tuple[str, Bag]] = {}
    for share, bags in parts:
        for u, (url, bag) in bags.items():
            known, combined = out.get(u, (url, {}))
            for t, w in bag.items():
                combined[t] = combined.get(t, 0.0) + share * w
            out[u] = (min(known, url), combined)
    return out


def reference_bags(pages: Iterable[PageRow], links: Iterable[LinkRow], strategy: Strategy) -> dict[int, tuple[str, Bag]]:
    """The weighted bag of every URL, computed record by record: the definition :class:`Corpus` must match.

    A URL crawled more than once keeps its first page (at most one content fragment per page).
    With source shares, each source's bags are weighted on their own and then added in their
    shares (:func:`share_bags`).
    """
    if strategy.shares is not None:
        pages, links = list(pages), list(links)
        return share_bags([(share, reference_bags(pages, links, strategy.source_strategy(source)))
                           for source, share in strategy.share_of().items()])
    seen: set[int] = set()
    fragments: list[Fragment] = []
    for page in pages:
        if page.url_id in seen:
            continue
        seen.add(page.url_id)
        fragments += page_fragments(page, strategy)
    for link in links:
        fragments += link_fragments(link, strategy)
    return weigh_bags(merge_fragments(fragments), strategy)[0]
