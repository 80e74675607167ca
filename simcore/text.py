"""Words and terms: tokenizing, the stoplist, and the three stemming variants (paper Sections 3.1–3.2).

A page's text becomes *words* — lower-cased runs of letters, everything else a separator
(Section 3.1: "non-alphabetic characters" removed). A word becomes a bag *term* under one of
the stemming variants of Section 3.2, or is dropped as a stopword:

* NOSTEM   — the word itself; dropped if it is in the stoplist.
* STEM     — the word's Porter stem; dropped if the stem is in the stemmed stoplist.
* STOPSTEM — the word itself, but dropped if its Porter stem is in the stemmed stoplist.

The stoplist (about 800 terms, ``simcore/data/stoplist.txt``, provenance in ``STOPLIST.md``)
ships with the package; nothing is downloaded at run time. Stemming is nltk's Porter stemmer
in its ORIGINAL_ALGORITHM mode (Porter 1980, the paper's reference [22]), memoised per word; an
ASCII word is stemmed by simcore/_porter.c where it is built, nltk's steps rule for rule (the
same stem on every word the tests and a 320,000-word crawl vocabulary compared, about a
hundred times faster: stemming each new word in nltk was a quarter of the bag fragments'
time on the 100k scale crawl).
"""
from __future__ import annotations

import enum
import functools
import re
import unicodedata
from array import array
from collections.abc import Iterable, Sequence
from importlib import resources

from simweb.core.memo import Memo


# STEMMED_STOPWORDS is an attribute too (module __getattr__, built with the stemmer on first
# use); the function stemmed_stopwords() is its exported form.
__all__ = [
    "STOPWORDS",
    "WORD_RE",
    "Stemming",
    "clean_text",
    "never_stop",
    "never_stop_flags",
    "porter_stem",
    "stemmed_stopwords",
    "surface_forms",
    "term",
    "term_texts",
    "terms",
    "tokenize",
]


class Stemming(str, enum.Enum):
    """The stemming variants of paper Section 3.2."""

    NOSTEM = "nostem"
    STOPSTEM = "stopstem"
    STEM = "stem"


# --- tokenizing (Section 3.1) -------------------------------------------------------------------

def _bmp_class(predicate) -> str:
    """A regex character-class body listing the BMP code points for which predicate holds."""
    parts: list[str] = []
    start = -1
    for point in range(0x10001):
        inside = point < 0x10000 and predicate(chr(point))
        if inside and start < 0:
            start = point
        elif not inside and start >= 0:
            last = point - 1
            parts.append(re.escape(chr(start)) if start == last else f"{re.escape(chr(start))}-{re.escape(chr(last))}")
            start = -1
    return "".join(parts)


def _is_mark(c: str) -> bool:
    return unicodedata.category(c)[0] == "M"


# A word is a letter followed by letters and combining marks (a Devanagari vowel sign, a Hebrew
# point, a decomposed accent stay inside the word they modify); digits, numeric symbols such as
# "²" or "½", punctuation, symbols and white space separate words. The classes list BMP code
# points explicitly, which Python's regex engine tests with one bitmap look-up — about twice as
# fast as the Unicode-category test behind [^\W\d_]. A character outside the BMP is blanked
# by clean_text unless it is a letter or mark, so the one range that covers them all is exact.
_LETTERS = _bmp_class(str.isalpha)
_LETTERS_AND_MARKS = _bmp_class(lambda c: c.isalpha() or _is_mark(c))
_ASTRAL = "\U00010000-\U0010ffff"

#: Matches one word of a text prepared by clean_text.
WORD_RE = re.compile(f"[{_LETTERS}{_ASTRAL}][{_LETTERS_AND_MARKS}{_ASTRAL}]*")
_ASTRAL_RE = re.compile(f"[{_ASTRAL}]")


def _astral_letter_or_space(match: re.Match[str]) -> str:
    c = match.group()
    if c.isalpha():
        return c
    if _is_mark(c):  # a mark belongs to the letter it follows, if any, past other marks
        text, i = match.string, match.start() - 1
        while i >= 0 and _is_mark(text[i]):
            i -= 1
        if i >= 0 and text[i].isalpha():
            return c
    return " "


def clean_text(text: str) -> str:
    """``text`` lower-cased and ready for WORD_RE (characters beyond the BMP that are not letters blanked)."""
    if _c_lower is not None and not text.isascii():  # str.lower of ASCII is fast already
        lowered = _c_lower(text, _lower_table())
        if lowered is not None:  # within the BMP: nothing to blank
            return lowered
    text = text.lower()
    # Emoji and other symbols beyond the BMP are rare, and a UTF-16 copy is cheap: it is
    # longer than two bytes a character exactly when such characters are present.
    if not text.isascii() and len(text.encode("utf-16-le", "surrogatepass")) != 2 * len(text):
        text = _ASTRAL_RE.sub(_astral_letter_or_space, text)
    return text


@functools.cache
def _lower_table() -> array:
    """For simcore/_scan.c's lower: each BMP code point's lower case where str.lower gives one
    character and does not look at the neighbours (all but a capital sigma), else 0xFFFF."""
    table = array("H", bytes(2 * 0x10000))
    for code in range(0x10000):
        low = chr(code).lower()
        table[code] = ord(low) if len(low) == 1 and code != 0x3A3 else 0xFFFF
    return table


def tokenize(text: str) -> list[str]:
    """The cleaned words of ``text``: lower-cased runs of letters (paper Section 3.1).

    Digits, punctuation, symbols and white space separate words; any Unicode letter counts
    as alphabetic, and combining marks stay inside the word they modify.
    """
    return WORD_RE.findall(clean_text(text))


# --- the stoplist ---------------------------------------------------------------------------------

def _load_stoplist() -> frozenset[str]:
    text = resources.files(__package__).joinpath("data", "stoplist.txt").read_text(encoding="utf-8")
    words = [line.strip() for line in text.splitlines()]
    return frozenset(w for w in words if w and not w.startswith("#"))


#: The English stoplist of about 800 terms (Section 3.1), see simcore/data/STOPLIST.md.
STOPWORDS: frozenset[str] = _load_stoplist()


# --- Porter stemming (Section 3.2) -----------------------------------------------------------------

@functools.cache
def _stemmer():
    # nltk is imported on first use: importing it loads scipy.stats (over a second), which
    # commands that never stem (help, queries, the start of a build) need not wait for.
    from nltk.stem.porter import PorterStemmer

    return PorterStemmer(mode=PorterStemmer.ORIGINAL_ALGORITHM)


try:
    from simweb.core._porter import stem as _c_stem
except ImportError:  # pragma: no cover - depends on the build
    _c_stem = None
try:
    from simweb.core._scan import flags as _c_flags, lower as _c_lower
except ImportError:  # pragma: no cover - depends on the build
    _c_flags = _c_lower = None

#: Each word's stem: a dict is the fastest memo; web text has a long tail of distinct words, so
#: it is emptied when it reaches its limit rather than grown without bound (~100 MB at most).
STEMS: Memo = Memo(1 << 20)


def porter_stem(word: str) -> str:
    """The Porter stem of a lower-case word (Porter 1980, original algorithm; paper Section 3.2)."""
    stem = STEMS.get(word)
    if stem is None:
        if len(STEMS) >= STEMS.limit:
            STEMS.clear()
        # Every Porter rule removes or rewrites an ASCII suffix: a word that does not end in
        # an ASCII letter is its own stem (Chinese, Japanese, Cyrillic words) — and stemming
        # such long runs in nltk is slow. A word is stemmed in C where that is built
        # (simcore/_porter.c: nltk's steps rule for rule, ~100 times faster), else by nltk —
        # and so is one over 256 characters, which is all a build may import nltk for.
        if not word[-1:].isascii():
            stem = word
        else:
            stem = _c_stem(word) if _c_stem is not None else None
            if stem is None:
                stem = _stemmer().stem(word, to_lowercase=False)
        STEMS[word] = stem
    return stem


@functools.cache
def stemmed_stopwords() -> frozenset[str]:
    """The stemmed stoplist: the Porter stem of every stopword (Section 3.2, STEM and STOPSTEM)."""
    return frozenset(map(porter_stem, STOPWORDS))


def __getattr__(name: str):
    if name == "STEMMED_STOPWORDS":  # computed on first use, with the stemmer
        return stemmed_stopwords()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# --- terms -----------------------------------------------------------------------------------------

def term(word: str, stemming: Stemming) -> str | None:
    """The bag term for a cleaned word under a stemming variant, or None for a stopword (Section 3.2)."""
    if stemming == Stemming.NOSTEM:
        return None if word in STOPWORDS else word
    stem = porter_stem(word)
    if stem in stemmed_stopwords():
        return None
    return stem if stemming == Stemming.STEM else word


def terms(words: Iterable[str], stemming: Stemming) -> list[str]:
    """The bag terms of a word sequence under a stemming variant, stopwords dropped (Section 3.2)."""
    stemming = Stemming(stemming)
    if stemming is Stemming.NOSTEM:
        return [w for w in words if w not in STOPWORDS]
    stopped = stemmed_stopwords()
    if stemming is Stemming.STEM:
        return [s for s in map(porter_stem, words) if s not in stopped]
    return [w for w in words if porter_stem(w) not in stopped]


def term_texts(words: Sequence[str], stemming: Stemming) -> tuple[Sequence[str], list[bool]]:
    """:func:`term` of each of ``words`` in C-level maps (the stems memoised): the texts, and
    for each whether it is dropped as a stopword; where it is not, ``texts[i]`` is its term."""
    stemming = Stemming(stemming)
    if stemming is Stemming.NOSTEM:
        return words, list(map(STOPWORDS.__contains__, words))
    stems = list(map(porter_stem, words))
    return (stems if stemming is Stemming.STEM else words), list(map(stemmed_stopwords().__contains__, stems))


def surface_forms(words: Iterable[str]) -> dict[str, str]:
    """For each Porter stem of ``words``, the word people would read for it: the most frequent
    word of the page with that stem (ties: the shorter, then the first alphabetically). Bag terms
    under STEM are stems ("queri"); shown as "queries" they read as words (Figure 14)."""
    counts: dict[str, dict[str, int]] = {}
    for word in words:
        forms = counts.setdefault(porter_stem(word), {})
        forms[word] = forms.get(word, 0) + 1
    return {stem: min(forms, key=lambda w: (-forms[w], len(w), w)) for stem, forms in counts.items()}


def never_stop(word: str) -> bool:
    """True when the word is kept under every stemming variant, so it counts towards any window W.

    Stopwords do not count towards the anchor window W (paper Section 3.1, footnote 5), and which
    words are stopwords depends on the variant; a context holding 32 words for which this is
    True therefore holds a full W = 32 window under NOSTEM, STOPSTEM and STEM alike.
    (A stopword's stem is always in the stemmed stoplist, so the stem test alone decides.)
    """
    return porter_stem(word) not in stemmed_stopwords()


#: Each word's flag of never_stop_flags, bounded as STEMS is.
NEVER_STOP: Memo = Memo(1 << 20)
_FLAG_BYTE = {False: b"\x00", True: b"\x01"}


def never_stop_flags(words: list[str]) -> bytes:
    """One byte per word, 1 where :func:`never_stop` holds, else 0.

    Memoised per word, so that a page costs one look-up a word in C (simcore/_scan.c: flags,
    which also names the words not seen before; a C-level map and join and a set difference
    without it), not a loop over the page's words; bytes, so that numpy reads them without converting
    element by element.
    """
    found = _memoised_flags(words)
    if type(found) is bytes:
        return found
    new = set(found)
    if len(NEVER_STOP) + len(new) > NEVER_STOP.limit:
        NEVER_STOP.clear()
        new = set(words)
    stopped = stemmed_stopwords()
    for word in new:
        NEVER_STOP[word] = _FLAG_BYTE[porter_stem(word) not in stopped]
    return _memoised_flags(words)


def _memoised_flags(words: list[str]) -> bytes | list[str] | set[str]:
    """The flags of ``words`` from the memo, or the words that are not in it."""
    if _c_flags is not None and type(words) is list:
        return _c_flags(words, NEVER_STOP)
    try:
        return b"".join(map(NEVER_STOP.__getitem__, words))
    except KeyError:
        return set(words).difference(NEVER_STOP)
