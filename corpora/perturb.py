"""Near-copies of pages, for crawls larger than the real pages at hand.

A copy of a page is served by a mirror of its site — copy ``k`` of ``https://host/path`` is
``https://mirror<k>.host/path`` — and differs from its original, and from every other copy,
by set fractions (``Perturbation``), so that copies are neither exact duplicates nor trivially
similar:

- **words**: of the words in the page's text (runs of letters outside tags, comments, scripts,
  styles and character references), exactly ``round(words × n)``, chosen at random, are each
  replaced by a word drawn from the corpus's own vocabulary (``Vocabulary``: a sample of word
  occurrences, so common words are drawn more often, as they occur) and different from it;
- **links**: of the page's ``<a href>`` links into its own site, exactly
  ``round(drop_links × m)``, chosen at random, lose their ``href`` (the anchor text stays), and
  ``round(retarget_links × m)`` others point to another page of the site drawn at random; every
  reference into the site (the remaining links, images, stylesheets) names the mirror's host.
  Links to other sites stay as they are, as a mirror's would.

Every choice comes from a generator seeded by (seed, copy number, URL): a copy is the same
whatever order pages are copied in, and two copies of one page differ.
"""
from __future__ import annotations

import random
import re
from collections.abc import Sequence
from dataclasses import dataclass

from simweb.corpora.links import DROP, edit_references

__all__ = ["Copy", "Perturbation", "Vocabulary", "mirror_url", "perturb_page", "split_words"]


@dataclass(frozen=True, slots=True)
class Perturbation:
    """The fractions a copy changes: of its words, and of its links into its own site."""

    words: float = 0.2
    drop_links: float = 0.1
    retarget_links: float = 0.1
    seed: int = 0

    def __post_init__(self) -> None:
        for name in ("words", "drop_links", "retarget_links"):
            value = getattr(self, name)
            if not 0.0 <= value <= 1.0:
                raise ValueError(f"expected a fraction in [0, 1] for {name}, got {value}")
        if self.drop_links + self.retarget_links > 1.0:
            raise ValueError(
                f"expected drop_links + retarget_links ≤ 1, got {self.drop_links} + {self.retarget_links}: "
                "a link is dropped or re-targeted, not both"
            )


# Markup whose letters are not words of the text (comments, script and style elements, tags,
# character references), and words (runs of letters): splitting a page by them leaves the
# other text between them.
_TOKENS = re.compile(
    r"(<!--.*?-->|<script\b[^>]*>.*?</script\s*>|<style\b[^>]*>.*?</style\s*>|<[^>]*>|&#?\w+;|[^\W\d_]+)",
    re.S | re.I,
)


def split_words(html: str) -> tuple[list[str], list[int]]:
    """The page in pieces (``"".join(pieces) == html``) and the indices of the pieces that are
    words of its text (runs of letters outside markup), in order."""
    pieces = _TOKENS.split(html)
    return pieces, [i for i in range(1, len(pieces), 2) if pieces[i][0] not in "<&"]


class Vocabulary:
    """A sample of the word occurrences of the pages added (reservoir sampling, seeded).

    Each page gives at most ``per_page`` occurrences drawn at random, so the sample follows the
    words' frequencies while a page costs little; ``words`` holds at most ``size`` of them.
    """

    def __init__(self, size: int = 1 << 16, per_page: int = 32, seed: int = 0):
        self.size, self.per_page = size, per_page
        self.words: list[str] = []
        self._seen = 0
        self._rng = random.Random(f"vocabulary\0{seed}")

    def add(self, html: str) -> None:
        pieces, words = split_words(html)
        if len(words) > self.per_page:
            words = self._rng.sample(words, self.per_page)
        for index in words:
            self._seen += 1
            if len(self.words) < self.size:
                self.words.append(pieces[index])
            else:
                slot = self._rng.randrange(self._seen)
                if slot < self.size:
                    self.words[slot] = pieces[index]


def mirror_url(url: str, copy: int) -> str:
    """Copy ``copy`` of ``url``: the same path on host ``mirror<copy>.<host>``."""
    scheme, sep, rest = url.partition("://")
    if not sep:
        raise ValueError(f"expected an absolute URL, got {url!r}")
    return f"{scheme}://mirror{copy}.{rest}"


@dataclass(frozen=True, slots=True)
class Copy:
    """A copy of a page and what changed: ``words`` in its text, ``words_replaced`` of them;
    ``links`` into its own site, ``links_dropped`` and ``links_retargeted`` of them."""

    html: str
    words: int
    words_replaced: int
    links: int
    links_dropped: int
    links_retargeted: int


def perturb_page(
    html: str,
    anchors: Sequence[str],
    url: str,
    copy: int,
    site_base: str,
    site_pages: Sequence[str],
    vocabulary: Sequence[str],
    perturbation: Perturbation,
) -> Copy:
    """Copy ``copy`` of the page at ``url``, its links already absolute (``links.rewrite_links``).

    ``anchors`` are the final hrefs of the page's ``<a>`` elements in document order (``Rewrite.
    anchors``); ``site_base`` is the URL prefix of the page's site; ``site_pages`` the URLs of the
    site's pages a link may be re-targeted to; ``vocabulary`` the words a replaced word is drawn from.
    """
    rng = random.Random(f"{perturbation.seed}\0{copy}\0{url}")
    mirror_base = mirror_url(site_base, copy)

    # Links: choose which of those into the site to drop and which to re-target.
    inside = [i for i, href in enumerate(anchors) if href.startswith(site_base)]
    n_drop = round(perturbation.drop_links * len(inside))
    n_retarget = round(perturbation.retarget_links * len(inside))
    chosen = rng.sample(inside, n_drop + n_retarget)
    dropped, retargeted = set(chosen[:n_drop]), set(chosen[n_drop:])
    anchor = -1
    retargets = 0

    def mirror(tag: str, attribute: str, value: str):
        nonlocal anchor, retargets
        if tag == "a" and attribute == "href":
            anchor += 1
            if anchor in dropped:
                return DROP
            if anchor in retargeted and len(site_pages) > 1:
                target = value.split("#", 1)[0]
                new = rng.choice(site_pages)
                while new == target:
                    new = rng.choice(site_pages)
                retargets += 1
                value = new
        if not value.startswith(site_base):
            return None
        return mirror_base + value[len(site_base):]

    pieces, words = split_words(edit_references(html, mirror))

    # Words: replace an exact share of them by other words of the corpus.
    replaced = 0
    if vocabulary:
        for index in rng.sample(words, round(perturbation.words * len(words))):
            original = pieces[index].lower()
            for _ in range(8):
                word = rng.choice(vocabulary)
                if word.lower() != original:
                    pieces[index] = word
                    replaced += 1
                    break
    return Copy("".join(pieces), len(words), replaced, len(inside), len(dropped), retargets)
