"""Words, the stoplist and the stemming variants (paper Sections 3.1–3.2)."""
from __future__ import annotations

import re
from importlib import resources

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from nltk.stem.porter import PorterStemmer

from simweb.core import text
from simweb.core.memo import Memo
from simweb.core.text import (
    STEMMED_STOPWORDS,
    STOPWORDS,
    Stemming,
    never_stop,
    never_stop_flags,
    porter_stem,
    term,
    term_texts,
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


@settings(max_examples=500, deadline=None)
@given(st.text(max_size=80) | st.text(alphabet="aZ ÀÉǅΣσİıKΆ\u0345\ufdd0\ufdd3'.\u2160\u24b6\uffff\ud800", max_size=30))
def test_a_text_is_lower_cased_as_str_lower_does_it(raw):
    # The C lowering by a table (simcore/_scan.c: lower) answers for a text of the BMP whose
    # characters lower one to one, str.lower for the others (a capital sigma looks at its neighbours).
    if all(ord(c) <= 0xFFFF for c in raw):
        assert text.clean_text(raw) == raw.lower()
    if text._c_lower is not None:
        lowered = text._c_lower(raw, text._lower_table())
        assert lowered is None or lowered == raw.lower()
        if all(ord(c) < 0xFFFF for c in raw) and not any(c == "Σ" or len(c.lower()) > 1 for c in raw):
            assert lowered == raw.lower()


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


# The C stemmer (simcore/_porter.c) against nltk, word for word, without the memo in between.

needs_c_stem = pytest.mark.skipif(text._c_stem is None, reason="simweb.core._porter is not built (no C compiler at install)")
# Letters that steer the rules (vowels, y, the doubled and *o letters) and the suffixes the steps strip.
rule_letters = st.text(alphabet="aeiouyybcdglmnrstvwxz", max_size=16)
suffixed = st.tuples(st.text(alphabet="aeiouybcdlmnrstz", max_size=6), st.lists(st.sampled_from([
    "sses", "ies", "ss", "s", "eed", "ed", "ing", "at", "bl", "iz", "y", "ational", "tional", "enci", "anci", "izer",
    "abli", "bli", "alli", "entli", "eli", "ousli", "ization", "ation", "ator", "alism", "iveness", "fulness",
    "ousness", "aliti", "iviti", "biliti", "logi", "icate", "ative", "alize", "iciti", "ical", "ful", "ness", "al",
    "ance", "ence", "er", "ic", "able", "ible", "ant", "ement", "ment", "ent", "ion", "sion", "tion", "ou", "ism",
    "ate", "iti", "ous", "ive", "ize", "e", "ll", "l", "tt", "ff", "zz"]), max_size=4)).map(lambda t: t[0] + "".join(t[1]))


@needs_c_stem
@settings(max_examples=3000, deadline=None)
@given(st.one_of(rule_letters, suffixed, st.text(alphabet="abyz09_-'ABY", max_size=8)))
def test_the_c_stemmer_equals_nltk_on_generated_words(word):
    assert text._c_stem(word) == NLTK_ORIGINAL.stem(word, to_lowercase=False)


@needs_c_stem
def test_the_c_stemmer_equals_nltk_on_the_words_of_real_pages(shared_fixtures):
    import gzip

    found = set(STOPWORDS)
    for path in sorted((shared_fixtures / "warc").glob("*.warc*")) + [shared_fixtures / "odp" / "dmoz-content-excerpt.rdf"]:
        raw = path.read_bytes()
        if path.suffix == ".gz":
            try:
                raw = gzip.decompress(raw)
            except (OSError, EOFError):  # a damaged fixture: its readable start is enough here
                continue
        found.update(w for w in tokenize(raw.decode("utf-8", "replace")) if w.isascii())
    assert len(found) > 3000
    differ = [w for w in sorted(found) if text._c_stem(w) != NLTK_ORIGINAL.stem(w, to_lowercase=False)]
    assert differ == []


@needs_c_stem
@needs_c_stem
@settings(max_examples=800, deadline=None)
@given(st.text(alphabet="aeiouybcdlstzéïøßÿ一ñ", max_size=12).map(lambda w: w + "ing"),
       st.sampled_from(["", "s", "ed", "ational", "ement", "e", "ll", "ÿÿ", "ßß"]))
def test_the_c_stemmer_equals_nltk_on_words_with_letters_outside_ascii(word, suffix):
    assert text._c_stem(word + suffix) == NLTK_ORIGINAL.stem(word + suffix, to_lowercase=False)


@needs_c_stem
def test_the_c_stemmer_leaves_very_long_words_to_nltk(monkeypatch):
    assert text._c_stem("naïvetés") == NLTK_ORIGINAL.stem("naïvetés", to_lowercase=False)
    assert text._c_stem("a" * 300 + "ing") is None
    assert text._c_stem("a" * 250 + "ing") == NLTK_ORIGINAL.stem("a" * 250 + "ing", to_lowercase=False)
    monkeypatch.setattr(text, "STEMS", Memo(text.STEMS.limit))
    long = "ba" * 150 + "tional"
    assert text._c_stem(long) is None
    assert porter_stem(long) == NLTK_ORIGINAL.stem(long, to_lowercase=False) != long
    assert porter_stem("naïvetés") == NLTK_ORIGINAL.stem("naïvetés", to_lowercase=False)


@settings(max_examples=200, deadline=None)
@given(words)
def test_porter_stem_equals_nltk_with_the_c_stemmer_switched_off(word):
    from unittest import mock

    with mock.patch.object(text, "_c_stem", None), mock.patch.object(text, "STEMS", Memo(text.STEMS.limit)):
        assert porter_stem(word) == NLTK_ORIGINAL.stem(word, to_lowercase=False)


def test_porter_stem_is_memoised_and_bounded(monkeypatch):
    monkeypatch.setattr(text, "STEMS", Memo(3))
    assert porter_stem("connections") == "connect"
    assert text.STEMS == {"connections": "connect"}
    for w in ("connected", "connecting", "connective"):
        porter_stem(w)
    assert len(text.STEMS) <= 3  # emptied when full, never grown past the bound
    assert porter_stem("connections") == "connect"


def test_stemming_never_downloads(monkeypatch):
    import nltk

    def refuse(*args, **kwargs):
        raise AssertionError("nltk tried to load or download data")

    monkeypatch.setattr(nltk, "download", refuse)
    monkeypatch.setattr(nltk.data, "load", refuse)
    monkeypatch.setattr(nltk.data, "find", refuse)
    monkeypatch.setattr(text, "STEMS", Memo(text.STEMS.limit))
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


@settings(max_examples=100, deadline=None)
@given(st.lists(words, max_size=30), st.sampled_from(list(Stemming)))
def test_term_texts_give_each_words_term_or_drop_it(ws, stemming):
    texts, stopped = term_texts(ws, stemming)
    assert len(texts) == len(stopped) == len(ws)
    assert [None if s else t for t, s in zip(texts, stopped)] == [term(w, stemming) for w in ws]

@settings(max_examples=300, deadline=None)
@given(words)
def test_never_stop_means_kept_under_every_variant(word):
    assert never_stop(word) == all(term(word, v) is not None for v in Stemming)


@settings(max_examples=100, deadline=None)
@given(st.lists(words, max_size=30))
def test_never_stop_flags_equals_never_stop(ws):
    assert never_stop_flags(ws) == bytes(never_stop(w) for w in ws)
    assert never_stop_flags(ws) == bytes(never_stop(w) for w in ws)  # now from the memo
    assert never_stop_flags(tuple(ws)) == bytes(never_stop(w) for w in ws)  # a C-level map and join


def test_the_c_flags_refuse_a_memo_that_does_not_hold_one_byte_a_word():
    from simweb.core import text

    if text._c_flags is None:
        pytest.skip("built without the C scan")
    assert text._c_flags(["a", "b"], {"a": b"\x01", "b": b"\x00"}) == b"\x01\x00"
    assert text._c_flags(["c", "a", "d", "c"], {"a": b"\x01"}) == ["c", "d", "c"]  # the words it misses
    with pytest.raises(TypeError, match="one byte"):
        text._c_flags(["a"], {"a": True})


def test_the_c_lowering_refuses_a_table_of_another_size():
    if text._c_lower is None:
        pytest.skip("built without the C scan")
    with pytest.raises(ValueError, match="65536 uint16 code points, got 3 bytes"):
        text._c_lower("Ab\ufdd0", b"abc")
    assert text._c_lower("Ab\ufdd0", text._lower_table()) == "ab\ufdd0"


def test_never_stop_flags_stay_right_when_the_memo_is_emptied_for_room(monkeypatch):
    """A page's new words are stemmed once each, however often they occur; when they would
    take the memo past its size it is emptied first, and the page's flags are still right."""
    from simweb.core import text

    monkeypatch.setattr(text, "NEVER_STOP", Memo(6))
    pages = [["the", "running", "the", "of", "running"], ["queries", "the", "zebra", "and", "about", "yes"],
             ["running", "queries", "running"], ["a", "b", "c", "d", "e", "f", "g", "h", "the", "h"]]
    for page in pages * 2:
        assert text.never_stop_flags(page) == bytes(never_stop(w) for w in page)
        assert len(text.NEVER_STOP) <= max(6, len(set(page)))
