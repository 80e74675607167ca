"""Frozen, typed records shared by the stages (STYLE.md habit 7).

One record per data set; the matching pyarrow schemas live in ``tasks/schemas.py``.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Anchor:
    """One outgoing link of a page with the text around it (paper Section 3.1), as word offsets.

    The offsets index the page's cleaned word list (:attr:`ParsedPage.words`):
    ``words[anchor_start:anchor_end]`` are the anchor words, ``words[context_start:anchor_start]``
    the context on the left and ``words[anchor_end:context_end]`` the context on the right.
    Each context side is cut at the page edge or once it holds 32 words that are not
    stopwords under any stemming variant — enough for the widest BASIC window (W = 32). The
    region lengths count how many of those context words, nearest first, lie inside the
    anchor's SYNTACTIC and TOPICAL regions (capped at the stored context length).

    Offsets instead of copied words: a page's anchors overlap each other's contexts, so the
    words stay stored once, in the page.
    """

    target_url: str
    anchor_start: int
    anchor_end: int
    context_start: int
    context_end: int
    syntactic_left: int
    syntactic_right: int
    topical_left: int
    topical_right: int

    def anchor_words(self, words: Sequence[str]) -> tuple[str, ...]:
        """The anchor's words, given its page's word list."""
        return tuple(words[self.anchor_start:self.anchor_end])

    def left_words(self, words: Sequence[str]) -> tuple[str, ...]:
        """The context words on the left, nearest first, given its page's word list."""
        return tuple(words[self.context_start:self.anchor_start])[::-1]

    def right_words(self, words: Sequence[str]) -> tuple[str, ...]:
        """The context words on the right, nearest first, given its page's word list."""
        return tuple(words[self.anchor_end:self.context_end])


@dataclass(frozen=True, slots=True)
class ParsedPage:
    """What the ingest stage keeps of one HTML page: strategy-free, enough for every strategy."""

    url: str
    title: str
    title_words: tuple[str, ...]
    words: tuple[str, ...]
    anchors: tuple[Anchor, ...]
