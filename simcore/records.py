"""Frozen, typed records shared by the stages (STYLE.md habit 7).

One record per data set; the matching pyarrow schemas live in ``tasks/schemas.py``.
"""
from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
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


#: The fields of :class:`Anchor`, in order: the columns of :class:`Anchors`.
ANCHOR_FIELDS = tuple(Anchor.__dataclass_fields__)


@dataclass(frozen=True, slots=True, eq=False)
class Anchors(Sequence[Anchor]):
    """The anchors of one page, column by column: field ``f`` holds ``f`` of every anchor in order.

    A sequence of :class:`Anchor` records (made when looked at): the parser fills the columns
    in one step each and the ingest stage writes them as they are, so a page with a hundred
    links costs no hundred record objects on the way. A column is any sequence (the parser's
    C path gives the offsets as ``array('i')``); two Anchors are equal when their values are.
    """

    target_url: tuple[str, ...] = ()
    anchor_start: tuple[int, ...] = ()
    anchor_end: tuple[int, ...] = ()
    context_start: tuple[int, ...] = ()
    context_end: tuple[int, ...] = ()
    syntactic_left: tuple[int, ...] = ()
    syntactic_right: tuple[int, ...] = ()
    topical_left: tuple[int, ...] = ()
    topical_right: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        lengths = {name: len(getattr(self, name)) for name in ANCHOR_FIELDS}
        if len(set(lengths.values())) > 1:
            raise ValueError(f"anchors: expected columns of one length, got {lengths}")

    @classmethod
    def of(cls, anchors: Iterable[Anchor]) -> Anchors:
        """The columns of ``anchors``."""
        anchors = tuple(anchors)
        return cls(*(tuple(getattr(a, name) for a in anchors) for name in ANCHOR_FIELDS))

    def columns(self) -> tuple[Sequence, ...]:
        """The columns in the order of :data:`ANCHOR_FIELDS`."""
        return tuple(getattr(self, name) for name in ANCHOR_FIELDS)

    def _values(self) -> tuple[tuple, ...]:
        return tuple(map(tuple, self.columns()))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Anchors):
            return NotImplemented
        return self._values() == other._values()

    def __hash__(self) -> int:
        return hash(self._values())

    def __len__(self) -> int:
        return len(self.target_url)

    def __getitem__(self, i):  # type: ignore[override]
        if isinstance(i, slice):
            return tuple(self)[i]
        return Anchor(*(column[i] for column in self.columns()))

    def __iter__(self) -> Iterator[Anchor]:
        return map(Anchor, *self.columns())


@dataclass(frozen=True, slots=True)
class ParsedPage:
    """What the ingest stage keeps of one HTML page: strategy-free, enough for every strategy.

    ``anchors`` may be given as any sequence of :class:`Anchor`; it is kept as :class:`Anchors`.
    ``canonical`` holds the targets of the page's ``<link rel="canonical">`` elements in its
    head, resolved and normalised (None for one that is not an http(s) URL), in document order;
    ``refresh`` the target of its instant refresh (``<meta http-equiv="refresh" content="0; url=…">``,
    the first in its head), the same way: empty when it has none.
    """

    url: str
    title: str
    title_words: tuple[str, ...]
    words: tuple[str, ...]
    anchors: Anchors
    canonical: tuple[str | None, ...] = ()
    refresh: tuple[str | None, ...] = ()

    def __post_init__(self) -> None:
        if not isinstance(self.anchors, Anchors):
            object.__setattr__(self, "anchors", Anchors.of(self.anchors))
