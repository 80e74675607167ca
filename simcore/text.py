"""Words and terms: tokenizing, the stoplist, and the three stemming variants (paper Sections 3.1–3.2).

A page's text becomes *words* — lower-cased runs of letters, everything else a separator
(Section 3.1: "non-alphabetic characters" removed). A word becomes a bag *term* under one of
the stemming variants of Section 3.2, or is dropped as a stopword:

* NOSTEM   — the word itself; dropped if it is in the stoplist.
* STEM     — the word's Porter stem; dropped if the stem is in the stemmed stoplist.
* STOPSTEM — the word itself, but dropped if its Porter stem is in the stemmed stoplist.

The stoplist (about 800 terms, ``simcore/data/stoplist.txt``, provenance in ``STOPLIST.md``)
ships with the package; nothing is downloaded at run time. Stemming uses nltk's Porter stemmer
in its ORIGINAL_ALGORITHM mode (Porter 1980, the paper's reference [22]), memoised per word.
"""
from __future__ import annotations

import enum
import re
import unicodedata
from collections.abc import Iterable
from importlib import resources

from nltk.stem.porter import PorterStemmer

__all__ = [
    "STEMMED_STOPWORDS",
    "STOPWORDS",
    "Stemming",
    "never_stop",
    "porter_stem",
    "term",
    "terms",
    "tokenize",
]


class Stemming(str, enum.Enum):
    """The stemming variants of paper Section 3.2."""

    NOSTEM = "nostem"
    STOPSTEM = "stopstem"
    STEM = "stem"


# --- tokenizing (Section 3.1) -------------------------------------------------------------------

def _code_point_class(predicate) -> str:
    """A regex character-class body of the code points (BMP, SMP, variation selectors) matching predicate."""
    points = [i for r in (range(0x20000), range(0xE0100, 0xE01F0)) for i in r if predicate(chr(i))]
    parts: list[str] = []
    start = prev = points[0]
    for point in [*points[1:], -1]:
        if point == prev + 1:
            prev = point
            continue
        parts.append(re.escape(chr(start)) if start == prev else f"{re.escape(chr(start))}-{re.escape(chr(prev))}")
        start = prev = point
    return "".join(parts)


# Combining marks are part of a word (Devanagari vowel signs, Hebrew points, a decomposed
# accent), though str.isalpha() says no; numeric symbols such as "²" or "½" are not letters,
# though the regex \w says they are. Both are rare, so a page without them takes the fast pattern.
_MARKS = _code_point_class(lambda c: unicodedata.category(c)[0] == "M" and not c.isalpha())
_NUMERIC_SYMBOLS = _code_point_class(lambda c: unicodedata.category(c) in ("No", "Nl") and not c.isalpha())

#: A run of letters in text that has no combining marks or numeric symbols (the common case).
WORD_FAST = r"[^\W\d_]+"
#: A run of letters and combining marks, numeric symbols excluded (the exact definition).
WORD_EXACT = rf"(?:[^\W\d_{_NUMERIC_SYMBOLS}]|[{_MARKS}])+"
#: Finds a character that makes WORD_FAST inexact.
NEEDS_EXACT = re.compile(f"[{_MARKS}{_NUMERIC_SYMBOLS}]")

_WORD_FAST_RE = re.compile(WORD_FAST)
_WORD_EXACT_RE = re.compile(WORD_EXACT)


def tokenize(text: str) -> list[str]:
    """The cleaned words of ``text``: lower-cased runs of letters (paper Section 3.1).

    Digits, punctuation, symbols and white space separate words; any Unicode letter counts
    as alphabetic, and combining marks stay inside the word they modify.
    """
    text = text.lower()
    if NEEDS_EXACT.search(text) is None:
        return _WORD_FAST_RE.findall(text)
    return _WORD_EXACT_RE.findall(text)


# --- the stoplist ---------------------------------------------------------------------------------

def _load_stoplist() -> frozenset[str]:
    text = resources.files("simcore").joinpath("data", "stoplist.txt").read_text(encoding="utf-8")
    words = [line.strip() for line in text.splitlines()]
    return frozenset(w for w in words if w and not w.startswith("#"))


#: The English stoplist of about 800 terms (Section 3.1), see simcore/data/STOPLIST.md.
STOPWORDS: frozenset[str] = _load_stoplist()


# --- Porter stemming (Section 3.2) -----------------------------------------------------------------

_STEMMER = PorterStemmer(mode=PorterStemmer.ORIGINAL_ALGORITHM)
# A plain dict is the fastest memo; web text has a long tail of distinct words, so it is
# emptied when it reaches this size rather than grown without bound (~100 MB at most).
_STEM_CACHE_LIMIT = 1 << 20
_stem_cache: dict[str, str] = {}


def porter_stem(word: str) -> str:
    """The Porter stem of a lower-case word (Porter 1980, original algorithm; paper Section 3.2)."""
    stem = _stem_cache.get(word)
    if stem is None:
        if len(_stem_cache) >= _STEM_CACHE_LIMIT:
            _stem_cache.clear()
        stem = _stem_cache[word] = _STEMMER.stem(word, to_lowercase=False)
    return stem


#: The stemmed stoplist: the Porter stem of every stopword (Section 3.2, STEM and STOPSTEM).
STEMMED_STOPWORDS: frozenset[str] = frozenset(map(porter_stem, STOPWORDS))


# --- terms -----------------------------------------------------------------------------------------

def term(word: str, stemming: Stemming) -> str | None:
    """The bag term for a cleaned word under a stemming variant, or None for a stopword (Section 3.2)."""
    if stemming == Stemming.NOSTEM:
        return None if word in STOPWORDS else word
    stem = porter_stem(word)
    if stem in STEMMED_STOPWORDS:
        return None
    return stem if stemming == Stemming.STEM else word


def terms(words: Iterable[str], stemming: Stemming) -> list[str]:
    """The bag terms of a word sequence under a stemming variant, stopwords dropped (Section 3.2)."""
    stemming = Stemming(stemming)
    if stemming is Stemming.NOSTEM:
        return [w for w in words if w not in STOPWORDS]
    if stemming is Stemming.STEM:
        return [s for s in map(porter_stem, words) if s not in STEMMED_STOPWORDS]
    return [w for w in words if porter_stem(w) not in STEMMED_STOPWORDS]


def never_stop(word: str) -> bool:
    """True when the word is kept under every stemming variant, so it counts towards any window W.

    Stopwords do not count towards the anchor window W (paper Section 3.1, footnote 5), and which
    words are stopwords depends on the variant; a context holding 32 words for which this is
    True therefore holds a full W = 32 window under NOSTEM, STOPSTEM and STEM alike.
    (A stopword's stem is always in the stemmed stoplist, so the stem test alone decides.)
    """
    return porter_stem(word) not in STEMMED_STOPWORDS

