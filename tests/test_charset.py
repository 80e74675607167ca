"""simweb.core.charset: which bytes are HTML and how they become text (WHATWG rules)."""
from __future__ import annotations

import codecs

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simweb.core.charset import (
    PRESCAN_BYTES,
    charset_from_content_type,
    decode_html,
    html_for_parser,
    looks_like_html,
    meta_charset,
    resolve_label,
)

RUSSIAN = "Пожарная безопасность: о компании и её услугах"
CHINESE = "我国卫生与健康领域有了基本法"
JAPANESE = "ブラウニー ブリーフケース【ヘッドポーター 吉田かばん】"


def page(title: str, head: str = "") -> str:
    return f"<html><head>{head}<title>{title}</title></head><body><p>{title}</p></body></html>"


# --- the order of the sources ------------------------------------------------------------------

def test_the_http_charset_decodes_the_page():
    text, used = decode_html(page(RUSSIAN).encode("cp1251"), "windows-1251")
    assert RUSSIAN in text and used == "windows-1251"


def test_the_http_charset_wins_over_a_contradicting_meta():
    body = page(RUSSIAN, '<meta charset="utf-8">').encode("cp1251")
    text, used = decode_html(body, "cp1251")
    assert RUSSIAN in text and used == "windows-1251"


def test_meta_charset_is_used_when_the_header_has_none():
    body = page(CHINESE, '<meta charset="gb2312">').encode("gb2312")
    text, used = decode_html(body, None)
    assert CHINESE in text
    assert used == "gb18030"  # gb2312 decodes with its superset, and says so


def test_meta_http_equiv_content_type_is_used():
    head = '<META HTTP-EQUIV="Content-Type" CONTENT="text/html; charset=EUC-JP">'
    text, used = decode_html(page(JAPANESE, head).encode("euc_jp"), None)
    assert JAPANESE in text and used == "euc-jp"


def test_a_meta_inside_a_comment_is_ignored():
    head = '<!-- <meta charset="koi8-r"> --><meta charset="windows-1251">'
    text, used = decode_html(page(RUSSIAN, head).encode("cp1251"), None)
    assert RUSSIAN in text and used == "windows-1251"


def test_a_meta_beyond_the_prescan_window_is_not_seen_and_detection_takes_over():
    head = "<!--" + "x" * PRESCAN_BYTES + '--><meta charset="windows-1251">'
    body = page(RUSSIAN * 20, head).encode("cp1251")
    assert meta_charset(body[:PRESCAN_BYTES]) is None
    text, used = decode_html(body, None)
    assert RUSSIAN in text and used == "windows-1251"  # charset-normalizer's guess


def test_an_unknown_header_label_falls_through_to_meta():
    text, used = decode_html(page(RUSSIAN, '<meta charset="cp1251">').encode("cp1251"), "x-no-such-charset")
    assert RUSSIAN in text and used == "windows-1251"


def test_a_byte_order_mark_wins_over_everything():
    body = codecs.BOM_UTF8 + page(CHINESE, '<meta charset="windows-1252">').encode("utf-8")
    text, used = decode_html(body, "iso-8859-1")
    assert text.startswith("<html>") and CHINESE in text and used == "utf-8"
    body16 = codecs.BOM_UTF16_LE + page(CHINESE).encode("utf-16-le")
    text, used = decode_html(body16, None)
    assert CHINESE in text and used == "utf-16le"


def test_a_meta_naming_utf16_means_utf8():
    text, used = decode_html(page("café", '<meta charset="utf-16">').encode("utf-8"), None)
    assert "café" in text and used == "utf-8"


def test_undeclared_valid_utf8_is_utf8_and_undeclared_ascii_too():
    assert decode_html(page(CHINESE).encode("utf-8"), None) == (page(CHINESE), "utf-8")
    assert decode_html(b"<p>plain</p>", None) == ("<p>plain</p>", "utf-8")


# --- WHATWG labels -----------------------------------------------------------------------------

@pytest.mark.parametrize(
    "label, codec, reported",
    [
        ("latin1", "cp1252", "windows-1252"),
        ("ISO-8859-1", "cp1252", "windows-1252"),
        ("us-ascii", "cp1252", "windows-1252"),
        ("iso-8859-9", "cp1254", "windows-1254"),
        ("tis-620", "cp874", "windows-874"),
        ("gb2312", "gb18030", "gb18030"),
        ("GBK", "gb18030", "gb18030"),
        ("x-euc-jp", "euc_jp", "euc-jp"),
        ("shift_jis", "cp932", "shift_jis"),
        ("ks_c_5601-1987", "cp949", "euc-kr"),
        ("windows-1251", "cp1251", "windows-1251"),
        ("x-cp1251", "cp1251", "windows-1251"),
        (' "utf8" ', "utf-8", "utf-8"),
        ("unicode-1-1-utf-8", "utf-8", "utf-8"),
        ("big5", "big5hkscs", "big5"),
        ("koi8-u", "koi8-u", "koi8-u"),
        ("cp037", "cp037", "cp037"),  # not a WHATWG label, but a text codec Python knows
    ],
)
def test_labels_resolve_as_whatwg_says(label, codec, reported):
    assert resolve_label(label) == (codec, reported)


@pytest.mark.parametrize("label", [None, "", "  ", "x-user-defined", "base64", "zlib", "rot13", "no-such", "utf\x00-8"])
def test_unusable_labels_resolve_to_none(label):
    assert resolve_label(label) is None


def test_latin1_labels_decode_the_c1_range_as_windows_1252():
    text, used = decode_html(b"<p>\x80 caf\xe9</p>", "iso-8859-1")
    assert text == "<p>€ café</p>" and used == "windows-1252"


def test_charset_parameter_of_a_content_type():
    assert charset_from_content_type('text/html; charset="UTF-8"') == "UTF-8"
    assert charset_from_content_type("text/html;charset=gb2312") == "gb2312"
    assert charset_from_content_type("text/html; Charset='EUC-JP'; q=1") == "EUC-JP"
    assert charset_from_content_type("text/html") is None
    assert charset_from_content_type(None) is None
    assert charset_from_content_type("text/html; charset=") is None


def test_meta_charset_forms():
    assert meta_charset(b'<meta charset="utf-8">') == "utf-8"
    assert meta_charset(b"<META charset=windows-1251>") == "windows-1251"
    assert meta_charset(b'<meta http-equiv="content-type" content="text/html;charset=gbk" />') == "gbk"
    assert meta_charset(b"<meta http-equiv='charset' content='EUC-JP'>") == "EUC-JP"  # ClueWeb pages
    assert meta_charset(b'<meta name="description" content="charset=koi8-r">') is None
    assert meta_charset(b'<meta http-equiv="refresh" content="0; charset=koi8-r">') is None
    assert meta_charset(b"<html><head><title>x</title></head>") is None


# --- sniffing ------------------------------------------------------------------------------------

@pytest.mark.parametrize(
    "body",
    [b"<!DOCTYPE html><html>", b"\r\n\t <html lang=en>", b"<HTML>", b"<head>", b"<body bgcolor=white>",
     b"<p>hi", b"<!-- comment --><div>", b"\xef\xbb\xbf<html>", b"<a href=x>", b"<title>t</title>"],
)
def test_html_starts_are_sniffed_as_html(body):
    assert looks_like_html(body)


@pytest.mark.parametrize(
    "body",
    [b"", b"   ", b"%PDF-1.4", b"\x89PNG\r\n", b"GIF89a", b"<?xml version='1.0'?><rss>", b"<htmlx>", b"<abbr>",
     b"hello <html>", b'{"json": true}'],
)
def test_other_payloads_are_not_sniffed_as_html(body):
    assert not looks_like_html(body)


# --- never raises ----------------------------------------------------------------------------------

LABELS = st.sampled_from(
    [None, "utf-8", "gb2312", "euc-jp", "iso-2022-jp", "utf-16", "utf-16be", "shift_jis", "big5", "hz-gb-2312",
     "iso-2022-kr", "cp037", "utf-32", "latin1", "x-user-defined", "garbage", "utf-7"]
) | st.text(max_size=12)


@settings(max_examples=300, deadline=None)
@given(body=st.binary(max_size=600), label=LABELS, meta=LABELS)
def test_decode_html_never_raises_and_names_a_charset(body, label, meta):
    if meta is not None:
        body = f'<meta charset="{meta}">'.encode("utf-8", "surrogatepass") + body
    text, used = decode_html(body, label)
    assert isinstance(text, str)
    assert resolve_label(used) is not None  # the reported name is itself a usable label


ASCII_AND_SHIFTS = st.lists(st.sampled_from([b"<p>", b"a b", b"\x1b$B", b"\x1b(B", b"~{", b"+AGE-", b"\x0e", b"\x00"]),
                            max_size=12).map(b"".join)


@settings(max_examples=400, deadline=None)
@given(body=st.one_of(st.binary(max_size=300), ASCII_AND_SHIFTS, st.text(max_size=80).map(str.encode)),
       label=LABELS, meta=LABELS)
def test_the_parser_reads_the_bytes_as_they_are_only_where_they_are_the_text_in_utf8(body, label, meta):
    # A page goes to the parser undecoded exactly when its bytes are its text in UTF-8: what the
    # charset the page is read with makes of them is what UTF-8 makes of them.
    if meta is not None:
        body = f'<meta charset="{meta}">'.encode("utf-8", "surrogatepass") + body
    html, used = html_for_parser(body, label)
    assert decode_html(body, label)[1] == used
    codec = resolve_label(used)[0]
    if type(html) is bytes:
        assert html is body and body.decode(codec, "replace") == body.decode("utf-8")
    else:
        assert isinstance(html, str) and decode_html(body, label)[0] == html


def test_ascii_goes_to_the_parser_as_it_is_unless_the_charset_reads_ascii_otherwise():
    body = b"<p>~{plain ascii +AGE- text~}</p>"
    assert html_for_parser(body, "windows-1252") == (body, "windows-1252")
    assert html_for_parser(body, None) == (body, "utf-8")
    assert isinstance(html_for_parser(body, "hz-gb-2312")[0], str)  # "~{" shifts HZ into GB2312
    assert isinstance(html_for_parser("é".encode("latin-1"), "utf-8")[0], str)  # not UTF-8: decoded with U+FFFD
