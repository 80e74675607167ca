"""The columnar form of a crawl's pages and links that bags are built from (simweb.core.bags.Corpus):
word sequences over one vocabulary, page and link columns, and the corpus's counts."""
from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import chain

import numpy as np


@dataclass(frozen=True, slots=True)
class WordLists:
    """Many word sequences over one shared vocabulary: sequence i is ``codes[offsets[i]:offsets[i+1]]``."""

    codes: np.ndarray  # int64 indices into the corpus vocabulary
    offsets: np.ndarray  # int64, length n + 1, offsets[0] == 0

    def __post_init__(self) -> None:
        codes = np.ascontiguousarray(self.codes, dtype=np.int64)
        offsets = np.ascontiguousarray(self.offsets, dtype=np.int64)
        if offsets.ndim != 1 or offsets.size == 0 or offsets[0] != 0 or offsets[-1] != codes.size:
            raise ValueError(
                f"word lists: expected offsets starting at 0 and ending at len(codes)={codes.size}, "
                f"got {offsets[:1].tolist()}…{offsets[-1:].tolist()}; subtract offsets[0] from sliced list arrays"
            )
        if np.any(np.diff(offsets) < 0):
            raise ValueError("word lists: expected non-decreasing offsets, found a decrease")
        object.__setattr__(self, "codes", codes)
        object.__setattr__(self, "offsets", offsets)

    def __len__(self) -> int:
        return self.offsets.size - 1

    @property
    def lengths(self) -> np.ndarray:
        return np.diff(self.offsets)

    @classmethod
    def from_lists(cls, lists: Iterable[Sequence[str]], index: dict[str, int]) -> WordLists:
        """Intern ``lists`` into ``index`` (word → code, extended in place)."""
        lists = lists if isinstance(lists, list) else list(lists)
        setdefault = index.setdefault
        codes = [setdefault(w, len(index)) for w in chain.from_iterable(lists)]
        offsets = np.zeros(len(lists) + 1, dtype=np.int64)
        np.cumsum(np.fromiter(map(len, lists), dtype=np.int64, count=len(lists)), out=offsets[1:])
        return cls(np.asarray(codes, dtype=np.int64), np.asarray(offsets, dtype=np.int64))

    def take(self, rows: np.ndarray) -> WordLists:
        """The sequences ``rows`` (in that order)."""
        lengths = self.lengths[rows]
        starts = self.offsets[:-1][rows]
        offsets = np.concatenate(([0], np.cumsum(lengths)))
        idx = np.repeat(starts - offsets[:-1], lengths) + np.arange(offsets[-1])
        return WordLists(self.codes[idx], offsets)

    def reversed_rows(self) -> WordLists:
        """Every sequence read backwards."""
        lengths = self.lengths
        idx = np.repeat(2 * self.offsets[:-1] + lengths - 1, lengths) - np.arange(self.codes.size)
        return WordLists(self.codes[idx], self.offsets)

    @staticmethod
    def concat_rows(a: WordLists, b: WordLists) -> WordLists:
        """Row i = a's row i followed by b's row i."""
        la, lb = a.lengths, b.lengths
        offsets = np.concatenate(([0], np.cumsum(la + lb)))
        out = np.empty(offsets[-1], dtype=np.int64)
        ia = np.repeat(offsets[:-1] - a.offsets[:-1], la) + np.arange(a.codes.size)
        ib = np.repeat(offsets[:-1] + la - b.offsets[:-1], lb) + np.arange(b.codes.size)
        out[ia] = a.codes
        out[ib] = b.codes
        return WordLists(out, offsets)


@dataclass(frozen=True)
class PageColumns:
    """The PAGES columns a bag needs, one entry per page."""

    url: Sequence[str]
    url_id: np.ndarray  # uint64
    title_words: WordLists
    words: WordLists


@dataclass(frozen=True)
class LinkColumns:
    """The LINKS columns, one entry per anchor: its ends, and where its anchor and context lie.

    As in the LINKS data set, the anchor and its context are word offsets into a source text
    (a page's words, shared by all its anchors) rather than copies of the words: row
    ``text[i]`` of ``texts`` holds link i's words, ``texts[anchor_start:anchor_end]`` is its
    anchor, ``[context_start:anchor_start]`` its left context (read backwards: nearest first)
    and ``[anchor_end:context_end]`` its right one. The region lengths count context words,
    nearest first, inside the SYNTACTIC and TOPICAL regions.
    """

    source_url: Sequence[str]
    source_id: np.ndarray  # uint64
    target_url: Sequence[str]
    target_id: np.ndarray  # uint64
    texts: WordLists
    text: np.ndarray  # int64: the row of ``texts`` each link points into
    anchor_start: np.ndarray
    anchor_end: np.ndarray
    context_start: np.ndarray
    context_end: np.ndarray
    syntactic_left: np.ndarray
    syntactic_right: np.ndarray
    topical_left: np.ndarray
    topical_right: np.ndarray

    @classmethod
    def from_word_lists(cls, source_url: Sequence[str], source_id: np.ndarray, target_url: Sequence[str],
                        target_id: np.ndarray, anchor_words: WordLists, left_words: WordLists,
                        right_words: WordLists, syntactic_left: np.ndarray, syntactic_right: np.ndarray,
                        topical_left: np.ndarray, topical_right: np.ndarray) -> LinkColumns:
        """Links whose anchor and contexts are given as word lists (left and right nearest first):
        each link gets a text of its own, its left context reversed, its anchor, its right context."""
        left = left_words.lengths
        anchor_end = left + anchor_words.lengths
        texts = WordLists.concat_rows(WordLists.concat_rows(left_words.reversed_rows(), anchor_words), right_words)
        return cls(source_url, source_id, target_url, target_id, texts, np.arange(len(texts), dtype=np.int64),
                   left, anchor_end, np.zeros(len(texts), dtype=np.int64), anchor_end + right_words.lengths,
                   syntactic_left, syntactic_right, topical_left, topical_right)


@dataclass(frozen=True, slots=True)
class CorpusStats:
    pages: int
    duplicate_pages: int  # pages whose URL was already crawled: skipped (one content fragment per URL)
    links: int
    self_links: int  # links from a page to itself: no anchor or link-id fragment
    urls: int  # URLs that can have a bag: crawled pages and link targets

    def to_dict(self) -> dict[str, int]:
        return {"pages": self.pages, "duplicate_pages": self.duplicate_pages, "links": self.links,
                "self_links": self.self_links, "urls": self.urls}
