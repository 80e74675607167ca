"""Words, the stoplist and the stemming variants (paper Sections 3.1–3.2)."""
from __future__ import annotations

import re
from importlib import resources

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from nltk.stem.porter import PorterStemmer

from simweb.core import text
from simweb.core.text import (
    STEMMED_STOPWORDS,
    STOPWORDS,
    Stemming,
    never_stop,
    never_stop_flags,
    porter_stem,
    term,
    terms,
    tokenize,
)

NLTK_ORIGINAL = PorterStemmer(mode=PorterStemmer.ORIGINAL_ALGORITHM)

# Lower-case words: ASCII-heavy, with some non-ASCII letters and stopwords mixed in.
words = st.one_of(
    st.sampled_from(sorted(STOPWORDS)),
    st.text(alphabet="abcdefghijklmnopqrstuvwxyz", min_size=1, max_size=14),
    st.text(alphabet="aeiouysnlgtdrbcéüßжя中ア", min_size=1, max_size=10),
)


# --- stoplist ------------------------------------------------------------------------------------

def test_stoplist_has_about_800_clean_terms():
    assert 700 <= len(STOPWORDS) <= 900
    assert all(re.fullmatch("[a-z]+", w) for w in STOPWORDS)
    assert isinstance(STOPWORDS, frozenset)


def test_stoplist_covers_function_words_numbers_and_web_boilerplate():
    for word in ("the", "of", "and", "which", "themselves", "would", "eleven", "thousand",
                 "http", "www", "html", "click", "home", "page", "next", "previous"):
        assert word in STOPWORDS, word
    for word in ("music", "physics", "football", "database"):
        assert word not in STOPWORDS, word


def test_stoplist_file_lists_each_term_once_and_md_states_its_size():
    data = resources.files("simweb.core").joinpath("data")
    lines = data.joinpath("stoplist.txt").read_text(encoding="utf-8").splitlines()
    entries = [line for line in lines if line and not line.startswith("#")]
    assert len(entries) == len(set(entries)) == len(STOPWORDS)
    assert f"**Size: {len(STOPWORDS)} terms**" in data.joinpath("STOPLIST.md").read_text(encoding="utf-8")


def test_stemmed_stoplist_is_the_stem_of_every_stopword():
    assert STEMMED_STOPWORDS == {NLTK_ORIGINAL.stem(w, to_lowercase=False) for w in STOPWORDS}


# --- tokenizing ----------------------------------------------------------------------------------

@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("Hello, World!", ["hello", "world"]),
        ("3rd-party web2.0 e-mail O'Neil", ["rd", "party", "web", "e", "mail", "o", "neil"]),
        ("under_score tab\tnew\nline\u00a0nbsp", ["under", "score", "tab", "new", "line", "nbsp"]),
        ("naïve CAFÉ Straße", ["naïve", "café", "straße"]),
        ("Москва 中文字符 and 日本語", ["москва", "中文字符", "and", "日本語"]),
        ("हिन्दी", ["हिन्दी"]),  # vowel signs and virama are combining marks: one word
        ("cafe\u0301 x", ["cafe\u0301", "x"]),  # a decomposed accent stays in its word
        ("m² ½cup x³y", ["m", "cup", "x", "y"]),  # numeric symbols separate words
        ("emoji😀here 𝐀bc 𝟙two", ["emoji", "here", "𝐀bc", "two"]),  # astral: letters kept, others split
        ("", []),
        ("123 ... !!!", []),
    ],
)
def test_tokenize(raw, expected):
    assert tokenize(raw) == expected


@settings(max_examples=500, deadline=None)
@given(st.text(max_size=60) | st.text(alphabet="aZ \u0301\u00b2\U0001d400\U0001f600\U000e0100\U00011000\U00011038.", max_size=20))
def test_tokenize_equals_a_per_character_reference(raw):
    # reference: a word is a letter followed by letters or combining marks, on the lower-cased text
    import unicodedata

    reference, current = [], ""
    for c in raw.lower():
        if c.isalpha() or (current and unicodedata.category(c)[0] == "M"):
            current += c
        else:
            if current:
                reference.append(current)
            current = ""
    if current:
        reference.append(current)
    assert tokenize(raw) == reference


# --- stemming ------------------------------------------------------------------------------------

@pytest.mark.parametrize(
    ("word", "stem"),
    [
        ("caresses", "caress"), ("ponies", "poni"), ("running", "run"), ("relational", "relat"),
        ("generalizations", "gener"), ("hopefully", "hopefulli"), ("abilities", "abil"),
        # the original algorithm, not nltk's extensions (which give "die", "sky", "use")
        ("dying", "dy"), ("skies", "ski"), ("useful", "us"),
        ("москва", "москва"), ("日本語", "日本語"),
    ],
)
def test_porter_stem_original_algorithm(word, stem):
    assert porter_stem(word) == stem


@settings(max_examples=300, deadline=None)
@given(words)
def test_porter_stem_equals_nltk_original_algorithm(word):
    assert porter_stem(word) == NLTK_ORIGINAL.stem(word, to_lowercase=False)


def test_porter_stem_is_memoised_and_bounded(monkeypatch):
    monkeypatch.setattr(text, "_stem_cache", {})
    monkeypatch.setattr(text, "_STEM_CACHE_LIMIT", 3)
    assert porter_stem("connections") == "connect"
    assert text._stem_cache == {"connections": "connect"}
    for w in ("connected", "connecting", "connective"):
        porter_stem(w)
    assert len(text._stem_cache) <= 3  # emptied when full, never grown past the bound
    assert porter_stem("connections") == "connect"


def test_stemming_never_downloads(monkeypatch):
    import nltk

    def refuse(*args, **kwargs):
        raise AssertionError("nltk tried to load or download data")

    monkeypatch.setattr(nltk, "download", refuse)
    monkeypatch.setattr(nltk.data, "load", refuse)
    monkeypatch.setattr(nltk.data, "find", refuse)
    monkeypatch.setattr(text, "_stem_cache", {})
    assert terms(["unwritten", "archives", "dying"], Stemming.STEM) == ["unwritten", "dy"]


# --- stemming variants (Section 3.2) -------------------------------------------------------------

def test_stemming_values():
    assert [v.value for v in Stemming] == ["nostem", "stopstem", "stem"]
    assert Stemming("stopstem") is Stemming.STOPSTEM


@pytest.mark.parametrize(
    ("word", "nostem", "stopstem", "stem"),
    [
        ("the", None, None, None),  # a stopword under every variant
        ("pages", None, None, None),
        ("running", "running", "running", "run"),
        ("skies", "skies", "skies", "ski"),
        # not stopwords themselves, but their stem is that of one ("general", "provide",
        # "related", "new", "home"): STOPSTEM and STEM drop them, NOSTEM keeps them
        ("generalizations", "generalizations", None, None),
        ("provider", "provider", None, None),
        ("relational", "relational", None, None),
        ("news", "news", None, None),
        ("homes", "homes", None, None),
    ],
)
def test_term_under_each_variant(word, nostem, stopstem, stem):
    assert term(word, Stemming.NOSTEM) == nostem
    assert term(word, Stemming.STOPSTEM) == stopstem
    assert term(word, Stemming.STEM) == stem
    assert term(word, "stem") == stem  # the enum's value works too


@settings(max_examples=200, deadline=None)
@given(st.lists(words, max_size=25), st.sampled_from(list(Stemming)))
def test_terms_equals_term_word_by_word(ws, stemming):
    expected = [t for t in (term(w, stemming) for w in ws) if t is not None]
    assert terms(ws, stemming) == expected
    assert terms(iter(ws), stemming.value) == expected


@settings(max_examples=300, deadline=None)
@given(words)
def test_never_stop_means_kept_under_every_variant(word):
    assert never_stop(word) == all(term(word, v) is not None for v in Stemming)


@settings(max_examples=100, deadline=None)
@given(st.lists(words, max_size=30))
def test_never_stop_flags_equals_never_stop(ws):
    assert never_stop_flags(ws) == bytes(never_stop(w) for w in ws)
    assert never_stop_flags(ws) == bytes(never_stop(w) for w in ws)  # now from the memo
