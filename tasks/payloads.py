"""An HTTP payload's Content-Encoding undone, and whether a payload cut short is all there.

The ingest stage (:mod:`simweb.tasks.ingest`) reads a record's payload de-chunked but still
encoded, and decodes it here, so that an unsupported or corrupt encoding is counted as a
skip reason instead of passed on as bytes. Every decoder is capped: a payload that decodes
to more than the caller's limit is refused (a "gzip bomb" cannot exhaust memory).
"""
from __future__ import annotations

import zlib

import brotli
import zstandard

from simweb.core.charset import looks_like_html

# Why a payload could not be decoded: skip reasons of the ingest stage.
TOO_LARGE = "payload too large"
UNSUPPORTED_ENCODING = "unsupported content-encoding"
ENCODING_ERROR = "content-encoding error"


class EncodingError(ValueError):
    """A payload whose Content-Encoding cannot be undone; ``reason`` is the ingest's skip reason."""

    def __init__(self, reason: str, detail: str):
        super().__init__(detail)
        self.reason = reason


SUPPORTED_CONTENT_ENCODINGS = frozenset({"identity", "gzip", "x-gzip", "deflate", "br", "zstd"})


def supported_content_encodings() -> frozenset[str]:
    """Content-Encoding values the ingest decodes."""
    return SUPPORTED_CONTENT_ENCODINGS


# Bytes of compressed input given to zlib at a time. When a gzip member ends, zlib copies what
# was given after it into ``unused_data``: given the whole rest of the payload, a payload of many
# small members (a few bytes each can hold nothing) would cost the square of its length. The step
# starts small at each member and doubles while the member goes on, so a member costs at most
# about twice its own bytes, and a large one is read in steps of up to a megabyte.
_FIRST_STEP = 1 << 9
_LARGEST_STEP = 1 << 20


def _inflate(data: bytes, wbits: int, limit: int) -> bytes:
    """zlib/gzip decompression, capped at ``limit`` bytes, across concatenated gzip members;
    linear in the length of ``data`` whatever its members (see _FIRST_STEP)."""
    out: list[bytes] = []
    size = 0
    view = memoryview(data)
    pos, end = 0, len(data)
    while pos < end:
        d = zlib.decompressobj(wbits)
        step = _FIRST_STEP
        while True:
            given = view[pos:pos + step]
            chunk = d.decompress(given, limit + 1 - size)
            out.append(chunk)
            size += len(chunk)
            if d.unconsumed_tail or size > limit:
                raise EncodingError(TOO_LARGE, f"decodes to more than {limit:,} bytes")
            pos += len(given) - len(d.unused_data)
            if d.eof:
                break
            if pos >= end:
                return b"".join(out)  # a truncated stream: keep what it held (crawlers cut long payloads)
            step = min(2 * step, _LARGEST_STEP)
    return b"".join(out)


def _unbrotli(data: bytes, limit: int) -> bytes:
    """Brotli decompression (RFC 7932), capped at ``limit`` bytes; a cut stream gives what it held."""
    d = brotli.Decompressor()
    out = [d.process(data, output_buffer_limit=limit + 1)]
    size = len(out[0])
    while size <= limit and not d.is_finished():
        chunk = d.process(b"", output_buffer_limit=limit + 1 - size)
        if not chunk:
            break  # a truncated stream: keep what it held
        out.append(chunk)
        size += len(chunk)
    if size > limit:
        raise EncodingError(TOO_LARGE, f"decodes to more than {limit:,} bytes")
    if not size and not d.is_finished():
        raise EncodingError(ENCODING_ERROR, "the brotli stream ends before any data")
    return b"".join(out)


def _unzstd(data: bytes, limit: int) -> bytes:
    """Zstandard decompression (RFC 8878) across its frames, capped at ``limit`` bytes; a cut
    stream gives what it held."""
    reader = zstandard.ZstdDecompressor().stream_reader(data, read_across_frames=True)
    out: list[bytes] = []
    size = 0
    while size <= limit and (chunk := reader.read(min(1 << 20, limit + 1 - size))):
        out.append(chunk)
        size += len(chunk)
    if size > limit:
        raise EncodingError(TOO_LARGE, f"decodes to more than {limit:,} bytes")
    if not size and data:
        first = zstandard.ZstdDecompressor().decompressobj()
        first.decompress(data)
        if not first.eof:  # not an empty frame: one cut before any data
            raise EncodingError(ENCODING_ERROR, "the zstd stream ends before any data")
    return b"".join(out)


def decode_content_encoding(body: bytes, content_encoding: str, limit: int) -> bytes:
    """The payload with its Content-Encoding undone (RFC 9110 Section 8.4), innermost last.

    A payload that does not even start like the compressed format it claims but looks like
    HTML is taken as already decoded (some crawlers store decoded payloads and keep the
    header). Raises ``EncodingError`` for unsupported or corrupt encodings, and for a payload
    that decodes to more than ``limit`` bytes.
    """
    codings = [c.strip().lower() for c in content_encoding.split(",")]
    for coding in reversed([c for c in codings if c and c != "identity"]):
        try:
            if coding in ("gzip", "x-gzip"):
                body = _inflate(body, 32 + zlib.MAX_WBITS, limit)  # gzip or zlib header, detected
            elif coding == "deflate":
                try:
                    body = _inflate(body, zlib.MAX_WBITS, limit)  # RFC: zlib-wrapped deflate
                except zlib.error:
                    body = _inflate(body, -zlib.MAX_WBITS, limit)  # what many servers send: raw deflate
            elif coding == "br":
                body = _unbrotli(body, limit)
            elif coding == "zstd":
                body = _unzstd(body, limit)
            else:
                raise EncodingError(UNSUPPORTED_ENCODING, f"Content-Encoding {coding!r} is not supported")
        except zlib.error as exc:
            if looks_like_html(body):
                continue
            raise EncodingError(ENCODING_ERROR, f"{coding}: {exc}") from exc
        except EncodingError:
            raise
        except Exception as exc:  # brotli.error, zstandard.ZstdError and friends
            if looks_like_html(body):
                continue
            raise EncodingError(ENCODING_ERROR, f"{coding}: {exc}") from exc
    return body


def encoded_payload_ends(body: bytes, content_encoding: str, limit: int) -> bool:
    """Whether the outermost Content-Encoding stream of ``body`` (gzip, x-gzip or deflate) ends
    inside it: all of the payload's data is there, even when the stream's trailer (gzip's CRC
    and length, zlib's checksum) is cut. False for identity and other codings (nothing tells),
    and for a stream that decodes to more than ``limit`` bytes before it ends."""
    codings = [c.strip().lower() for c in content_encoding.split(",")]
    codings = [c for c in codings if c and c != "identity"]
    if not codings:
        return False
    if codings[-1] in ("gzip", "x-gzip"):
        start = _gzip_header_length(body)
        return start is not None and _deflate_ends(body[start:], limit)
    if codings[-1] == "deflate":
        zlib_wrapped = len(body) >= 2 and body[0] & 0x0F == 8 and (body[0] << 8 | body[1]) % 31 == 0
        return _deflate_ends(body[2:] if zlib_wrapped else body, limit)
    return False


def _gzip_header_length(data: bytes) -> int | None:
    """The length of the gzip member header ``data`` starts with (RFC 1952 Section 2.3)."""
    if len(data) < 10 or not data.startswith(b"\x1f\x8b\x08"):
        return None
    flags, pos = data[3], 10
    if flags & 4:  # FEXTRA: a length, then that many bytes
        pos += 2 + int.from_bytes(data[pos:pos + 2], "little")
    for flag in (8, 16):  # FNAME, FCOMMENT: zero-terminated
        if flags & flag:
            pos = data.find(b"\0", pos) + 1
            if pos == 0:
                return None
    if flags & 2:  # FHCRC
        pos += 2
    return pos if pos <= len(data) else None


def _deflate_ends(data: bytes, limit: int) -> bool:
    """Whether the raw deflate stream ``data`` starts with reaches its final block's end
    within ``limit`` decoded bytes."""
    d = zlib.decompressobj(-zlib.MAX_WBITS)
    size = 0
    try:
        while data and not d.eof:
            size += len(d.decompress(data, limit + 1 - size))
            if size > limit:
                return False
            data = d.unconsumed_tail
    except zlib.error:
        return False
    return d.eof
