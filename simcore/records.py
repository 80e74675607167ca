"""Frozen, typed records shared by the stages (STYLE.md habit 7).

One record per data set; the matching pyarrow schemas live in ``tasks/schemas.py``.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Anchor:
    """One outgoing link of a page with the text around it (paper Section 3.1).

    ``left_words`` and ``right_words`` are the cleaned words on each side of the anchor,
    nearest first, cut at the page edge or once they hold 32 words that are not stopwords
    under any stemming variant — enough for the widest BASIC window (W = 32). The region
    lengths count how many of those context words lie inside the anchor's SYNTACTIC and
    TOPICAL regions (capped at the stored context length).
    """

    target_url: str
    anchor_words: tuple[str, ...]
    left_words: tuple[str, ...]
    right_words: tuple[str, ...]
    syntactic_left: int
    syntactic_right: int
    topical_left: int
    topical_right: int


@dataclass(frozen=True, slots=True)
class ParsedPage:
    """What the ingest stage keeps of one HTML page: strategy-free, enough for every strategy."""

    url: str
    title: str
    title_words: tuple[str, ...]
    words: tuple[str, ...]
    anchors: tuple[Anchor, ...]
