"""From a page's bytes to its text: HTML sniffing and charset decoding.

The paper's pipeline starts from page text (Section 3.1: comments, scripts, styles and tags
are removed from the page; Section 6.1: the bag generator scans the repository). Crawled
pages arrive as bytes in many encodings, so the ingest stage first decides which bytes are
HTML and how to turn them into text, following the WHATWG Encoding and MIME Sniffing
standards where they apply:

1. a byte order mark (UTF-8, UTF-16LE/BE) wins over everything, as in browsers;
2. the ``charset`` parameter of the HTTP Content-Type header;
3. a ``<meta charset>`` or ``<meta http-equiv="Content-Type" content="...; charset=...">``
   in the first :data:`PRESCAN_BYTES` bytes (comments skipped; a meta naming UTF-16 means
   UTF-8, as the standard says, because a page whose meta could be read as ASCII is not UTF-16);
4. detection: bytes that are valid UTF-8 (pure ASCII included) are UTF-8; otherwise
   charset-normalizer guesses on a sample; if it cannot, UTF-8 with replacement characters.

Labels are resolved with the WHATWG label table, so ``latin1``/``iso-8859-1``/``us-ascii``
decode as windows-1252, ``iso-8859-9`` as windows-1254, ``tis-620`` as windows-874,
``shift_jis`` as windows-31j and ``euc-kr`` as windows-949 — what browsers do, and what
the page authors saw. ``gb2312`` and ``gbk`` decode with the GB18030 decoder (a strict
superset, as the WHATWG GBK decoder is), and the charset reported is ``gb18030``. Labels the
table does not know but Python does (``cp037``, ``utf-32``) are used as Python names them;
unknown labels fall through to the next source. Decoding always uses replacement
characters, so no byte sequence makes it raise.
"""
from __future__ import annotations

import codecs
import functools
import re

from simweb.core.formats import GZIP_MAGIC, OTHER_COMPRESSIONS, ZIP_MAGIC, ZSTD_MAGIC

# How far into the page to look for <meta charset>. The WHATWG prescan reads 1024 bytes;
# real pages often put long scripts and comments first, so we read a little further.
PRESCAN_BYTES = 4096

# How much of the page charset-normalizer sees when nothing declares the charset.
DETECTION_SAMPLE_BYTES = 32_768

UTF8 = "utf-8"

# WHATWG encoding name -> (Python codec, name reported as "the charset used").
_ENCODINGS: dict[str, tuple[str, str]] = {
    "utf-8": ("utf-8", "utf-8"),
    "ibm866": ("cp866", "ibm866"),
    "iso-8859-2": ("iso8859-2", "iso-8859-2"),
    "iso-8859-3": ("iso8859-3", "iso-8859-3"),
    "iso-8859-4": ("iso8859-4", "iso-8859-4"),
    "iso-8859-5": ("iso8859-5", "iso-8859-5"),
    "iso-8859-6": ("iso8859-6", "iso-8859-6"),
    "iso-8859-7": ("iso8859-7", "iso-8859-7"),
    "iso-8859-8": ("iso8859-8", "iso-8859-8"),
    "iso-8859-8-i": ("iso8859-8", "iso-8859-8-i"),
    "iso-8859-10": ("iso8859-10", "iso-8859-10"),
    "iso-8859-13": ("iso8859-13", "iso-8859-13"),
    "iso-8859-14": ("iso8859-14", "iso-8859-14"),
    "iso-8859-15": ("iso8859-15", "iso-8859-15"),
    "iso-8859-16": ("iso8859-16", "iso-8859-16"),
    "koi8-r": ("koi8-r", "koi8-r"),
    "koi8-u": ("koi8-u", "koi8-u"),
    "macintosh": ("mac-roman", "macintosh"),
    "windows-874": ("cp874", "windows-874"),
    "windows-1250": ("cp1250", "windows-1250"),
    "windows-1251": ("cp1251", "windows-1251"),
    "windows-1252": ("cp1252", "windows-1252"),
    "windows-1253": ("cp1253", "windows-1253"),
    "windows-1254": ("cp1254", "windows-1254"),
    "windows-1255": ("cp1255", "windows-1255"),
    "windows-1256": ("cp1256", "windows-1256"),
    "windows-1257": ("cp1257", "windows-1257"),
    "windows-1258": ("cp1258", "windows-1258"),
    "x-mac-cyrillic": ("mac-cyrillic", "x-mac-cyrillic"),
    # GBK pages decode with the GB18030 decoder, a strict superset (as in WHATWG).
    "gbk": ("gb18030", "gb18030"),
    "gb18030": ("gb18030", "gb18030"),
    "big5": ("big5hkscs", "big5"),
    "euc-jp": ("euc_jp", "euc-jp"),
    "iso-2022-jp": ("iso2022_jp", "iso-2022-jp"),
    "shift_jis": ("cp932", "shift_jis"),
    "euc-kr": ("cp949", "euc-kr"),
    "utf-16be": ("utf-16-be", "utf-16be"),
    "utf-16le": ("utf-16-le", "utf-16le"),
    # WHATWG maps these to the "replacement" encoding to defend browsers against script
    # injection; for text extraction the real decoders are the better answer.
    "iso-2022-kr": ("iso2022_kr", "iso-2022-kr"),
    "hz-gb-2312": ("hz", "hz-gb-2312"),
}

# WHATWG labels (https://encoding.spec.whatwg.org/#names-and-labels) -> encoding name.
_LABELS: dict[str, str] = {}


def _labels(name: str, *labels: str) -> None:
    for label in (name, *labels):
        _LABELS[label] = name


_labels("utf-8", "unicode-1-1-utf-8", "unicode11utf8", "unicode20utf8", "utf8", "x-unicode20utf8")
_labels("ibm866", "866", "cp866", "csibm866")
_labels("iso-8859-2", "csisolatin2", "iso-ir-101", "iso8859-2", "iso88592", "iso_8859-2",
        "iso_8859-2:1987", "l2", "latin2")
_labels("iso-8859-3", "csisolatin3", "iso-ir-109", "iso8859-3", "iso88593", "iso_8859-3",
        "iso_8859-3:1988", "l3", "latin3")
_labels("iso-8859-4", "csisolatin4", "iso-ir-110", "iso8859-4", "iso88594", "iso_8859-4",
        "iso_8859-4:1988", "l4", "latin4")
_labels("iso-8859-5", "csisolatincyrillic", "cyrillic", "iso-ir-144", "iso8859-5", "iso88595",
        "iso_8859-5", "iso_8859-5:1988")
_labels("iso-8859-6", "arabic", "asmo-708", "csiso88596e", "csiso88596i", "csisolatinarabic",
        "ecma-114", "iso-8859-6-e", "iso-8859-6-i", "iso-ir-127", "iso8859-6", "iso88596",
        "iso_8859-6", "iso_8859-6:1987")
_labels("iso-8859-7", "csisolatingreek", "ecma-118", "elot_928", "greek", "greek8", "iso-ir-126",
        "iso8859-7", "iso88597", "iso_8859-7", "iso_8859-7:1987", "sun_eu_greek")
_labels("iso-8859-8", "csiso88598e", "csisolatinhebrew", "hebrew", "iso-8859-8-e", "iso-ir-138",
        "iso8859-8", "iso88598", "iso_8859-8", "iso_8859-8:1988", "visual")
_labels("iso-8859-8-i", "csiso88598i", "logical")
_labels("iso-8859-10", "csisolatin6", "iso-ir-157", "iso8859-10", "iso885910", "l6", "latin6")
_labels("iso-8859-13", "iso8859-13", "iso885913")
_labels("iso-8859-14", "iso8859-14", "iso885914")
_labels("iso-8859-15", "csisolatin9", "iso8859-15", "iso885915", "iso_8859-15", "l9")
_labels("iso-8859-16")
_labels("koi8-r", "cskoi8r", "koi", "koi8", "koi8_r")
_labels("koi8-u", "koi8-ru")
_labels("macintosh", "csmacintosh", "mac", "x-mac-roman")
_labels("windows-874", "dos-874", "iso-8859-11", "iso8859-11", "iso885911", "tis-620")
_labels("windows-1250", "cp1250", "x-cp1250")
_labels("windows-1251", "cp1251", "x-cp1251")
_labels("windows-1252", "ansi_x3.4-1968", "ascii", "cp1252", "cp819", "csisolatin1", "ibm819",
        "iso-8859-1", "iso-ir-100", "iso8859-1", "iso88591", "iso_8859-1", "iso_8859-1:1987",
        "l1", "latin1", "us-ascii", "x-cp1252")
_labels("windows-1253", "cp1253", "x-cp1253")
_labels("windows-1254", "cp1254", "csisolatin5", "iso-8859-9", "iso-ir-148", "iso8859-9",
        "iso88599", "iso_8859-9", "iso_8859-9:1989", "l5", "latin5", "x-cp1254")
_labels("windows-1255", "cp1255", "x-cp1255")
_labels("windows-1256", "cp1256", "x-cp1256")
_labels("windows-1257", "cp1257", "x-cp1257")
_labels("windows-1258", "cp1258", "x-cp1258")
_labels("x-mac-cyrillic", "x-mac-ukrainian")
_labels("gbk", "chinese", "csgb2312", "csiso58gb231280", "gb2312", "gb_2312", "gb_2312-80",
        "iso-ir-58", "x-gbk")
_labels("gb18030")
_labels("big5", "big5-hkscs", "cn-big5", "csbig5", "x-x-big5")
_labels("euc-jp", "cseucpkdfmtjapanese", "x-euc-jp")
_labels("iso-2022-jp", "csiso2022jp")
_labels("shift_jis", "csshiftjis", "ms932", "ms_kanji", "shift-jis", "sjis", "windows-31j",
        "x-sjis")
_labels("euc-kr", "cseuckr", "csksc56011987", "iso-ir-149", "korean", "ks_c_5601-1987",
        "ks_c_5601-1989", "ksc5601", "ksc_5601", "windows-949")
_labels("utf-16be", "unicodefffe")
_labels("utf-16le", "csunicode", "iso-10646-ucs-2", "ucs-2", "unicode", "unicodefeff", "utf-16")
_labels("iso-2022-kr", "csiso2022kr")
_labels("hz-gb-2312")

_BOMS = (
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF16_BE, "utf-16be"),
    (codecs.BOM_UTF16_LE, "utf-16le"),
)

_COMMENT = re.compile(rb"<!--.*?(?:-->|\Z)", re.S)
_META = re.compile(rb"<meta[\s/]([^>]*)", re.I)
_ATTRIBUTE = re.compile(rb"""([^\s=/>]+)(?:\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s>]+)))?""")
_CHARSET_PARAM = re.compile(r"""charset\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s;"']+))""", re.I)

# Leading bytes of an HTML document (WHATWG MIME Sniffing, "identifying an unknown MIME type").
_HTML_STARTS = tuple(
    s.encode()
    for s in ("<!doctype html", "<html", "<head", "<script", "<iframe", "<h1", "<div", "<font",
              "<table", "<a", "<style", "<title", "<b", "<body", "<br", "<p", "<!--")
)
_TAG_END = (b" ", b">")
_SNIFF_WHITESPACE = b"\t\n\x0c\r "


def resolve_label(label: str | None) -> tuple[str, str] | None:
    """(Python codec, reported charset name) for a charset label, or None if unusable.

    WHATWG labels first (case-insensitive, surrounding whitespace and quotes ignored); then
    any text codec Python knows under that name.
    """
    if not label:
        return None
    key = label.strip().strip("\"'").strip().lower()
    if not key:
        return None
    name = _LABELS.get(key)
    if name is not None:
        return _ENCODINGS[name]
    try:
        info = codecs.lookup(key)
    except (LookupError, ValueError):
        return None
    if not getattr(info, "_is_text_encoding", True):
        return None  # bytes-to-bytes codecs such as "base64" or "zlib"
    name = _LABELS.get(info.name.replace("_", "-"), None)
    if name is not None:
        return _ENCODINGS[name]
    return info.name, info.name


def charset_from_content_type(content_type: str | None) -> str | None:
    """The ``charset`` parameter of a Content-Type header value, unresolved, or None."""
    if not content_type or "charset" not in content_type.lower():
        return None
    match = _CHARSET_PARAM.search(content_type)
    if match is None:
        return None
    return next(g for g in match.groups() if g is not None).strip() or None


def meta_charset(head: bytes) -> str | None:
    """The charset label a page declares in a ``<meta>`` element of ``head``, or None.

    Follows the WHATWG prescan: ``<meta charset=...>``, or ``http-equiv="content-type"`` with
    a ``content`` holding ``charset=...``; comments are skipped. Also accepts the common
    non-standard ``<meta http-equiv="charset" content="LABEL">``.
    """
    if b"<meta" not in head.lower():
        return None
    head = _COMMENT.sub(b"", head)
    for meta in _META.finditer(head):
        attributes: dict[bytes, bytes] = {}
        for name, dq, sq, bare in _ATTRIBUTE.findall(meta.group(1)):
            attributes.setdefault(name.lower(), dq or sq or bare)
        if attributes.get(b"charset"):
            return attributes[b"charset"].decode("latin-1").strip()
        equiv = attributes.get(b"http-equiv", b"").strip().lower()
        content = attributes.get(b"content", b"").decode("latin-1")
        if equiv == b"content-type":
            label = charset_from_content_type(content)
            if label:
                return label
        elif equiv == b"charset" and content.strip():
            return content.strip()
    return None


def looks_like_html(body: bytes) -> bool:
    """True if ``body`` starts like an HTML document (WHATWG MIME Sniffing, HTML patterns).

    Used when a response has no Content-Type or a generic one (application/octet-stream).
    Leading whitespace and a UTF-8 byte order mark are skipped.
    """
    start = body[:64]
    if start.startswith(codecs.BOM_UTF8):
        start = start[3:]
    start = start.lstrip(_SNIFF_WHITESPACE).lower()
    for pattern in _HTML_STARTS:
        if start.startswith(pattern) and start[len(pattern):len(pattern) + 1] in _TAG_END:
            return True
    return False


# The signatures of binary formats (WHATWG MIME Sniffing's image, audio, video, font and archive
# patterns, and PDF, ELF): a payload that starts with one is no HTML page, whatever its
# Content-Type says (servers label images and downloads text/html).
_BINARY_STARTS = (b"%PDF-", b"\x89PNG\r\n\x1a\n", b"GIF87a", b"GIF89a", b"\xff\xd8\xff", ZIP_MAGIC, GZIP_MAGIC,
                  ZSTD_MAGIC, *(magic for magic, _ in OTHER_COMPRESSIONS), b"Rar!\x1a\x07", b"OggS\x00", b"ID3",
                  b"wOFF", b"wOF2", b"\x7fELF", b"\x00\x00\x01\x00", b"\x1aE\xdf\xa3")


def looks_binary(body: bytes) -> bool:
    """True if ``body`` starts with the signature of a binary format (an image, a PDF, an
    archive, audio, video, a font, a program), or is a RIFF (WebP, WAV, AVI) or ISO media (MP4)
    file: no page, whatever it was labelled."""
    return (body.startswith(_BINARY_STARTS) or (body[:4] == b"RIFF" and len(body) >= 12)
            or body[4:8] == b"ftyp")


def _detect(body: bytes) -> tuple[str, str]:
    """The charset of a page that declares none and is not valid UTF-8."""
    sample = body[:DETECTION_SAMPLE_BYTES]
    try:
        import charset_normalizer
    except ImportError as exc:  # pragma: no cover - a declared dependency
        raise ImportError(
            "charset detection needs charset-normalizer: pip install charset-normalizer"
        ) from exc
    best = charset_normalizer.from_bytes(sample).best()
    if best is not None:
        resolved = resolve_label(best.encoding)
        if resolved is not None:
            return resolved
    return "utf-8", UTF8


def decode_html(body: bytes, http_charset: str | None) -> tuple[str, str]:
    """Decode an HTML page: (text, name of the charset used). Never raises on bad bytes.

    Order: byte order mark, the HTTP header's charset (``http_charset``, a raw label),
    ``<meta>`` in the first :data:`PRESCAN_BYTES` bytes, then detection; see the module
    docstring for the rules. Undecodable bytes become U+FFFD.
    """
    html, used = html_for_parser(body, http_charset)
    return (html.decode("utf-8") if type(html) is bytes else html), used


def html_for_parser(body: bytes, http_charset: str | None) -> tuple[str | bytes, str]:
    """:func:`decode_html`, but the page's bytes as they are where they are its text in UTF-8.

    An HTML parser reads UTF-8: a page whose bytes are already its text in UTF-8 (valid UTF-8
    read as UTF-8, or ASCII read with a charset that reads ASCII as ASCII) goes to it as it
    is, neither decoded nor encoded again. ``(html, charset)``: html is bytes exactly then.
    """
    for bom, name in _BOMS:
        if body.startswith(bom):
            codec, reported = _ENCODINGS[name]
            return body[len(bom):].decode(codec, "replace"), reported

    resolved = resolve_label(http_charset)
    if resolved is None:
        declared = meta_charset(body[:PRESCAN_BYTES])
        resolved = resolve_label(declared)
        if resolved is not None and resolved[1] in ("utf-16be", "utf-16le"):
            resolved = _ENCODINGS["utf-8"]
    if resolved is None or resolved[0] == "utf-8":
        if body.isascii():
            return body, resolved[1] if resolved else UTF8
        try:  # bytes that are valid UTF-8 are UTF-8: checked once, never decoded
            str(body, "utf-8")
            return body, resolved[1] if resolved else UTF8
        except UnicodeDecodeError:
            if resolved is None:
                resolved = _detect(body)

    codec, reported = resolved
    if body.isascii() and _reads_ascii_as_ascii(codec):
        return body, reported
    try:
        return body.decode(codec, "replace"), reported
    except (LookupError, TypeError, ValueError):
        # A codec that exists but cannot decode with replacement (rare stateful codecs).
        return body.decode("utf-8", "replace"), UTF8


# Every ASCII byte, and the shifts into other character sets of the stateful codecs (ISO-2022's
# escapes, HZ's "~{", UTF-7's "+"): a codec that decodes these as ASCII reads any ASCII as ASCII.
_ASCII_PROBE = bytes(range(128)) + b"\x1b$B!!\x1b(B\x1b$)C\x0e!!\x0f~{!!~}+AGE-"


@functools.lru_cache(maxsize=None)
def _reads_ascii_as_ascii(codec: str) -> bool:
    try:
        return _ASCII_PROBE.decode(codec) == _ASCII_PROBE.decode("ascii")
    except (LookupError, TypeError, ValueError):
        return False
