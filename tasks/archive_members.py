"""The compressed members of an archive for the record reader (simweb.tasks.archives): a gzip
member's first bytes and end, and Zstandard frames.

A Zstandard-compressed WARC file (``.warc.zst``, as the IIPC's WARC-Zstandard specification
defines it and Wget-AT writes it) is read as a gzipped one is, a zstd frame standing for a gzip
member: a record is one frame, or — as the specification allows — several, with skippable
frames before or between them; the file may start with a dictionary frame (skippable frame
0x184D2A5D holding a dictionary, plain or itself zstd-compressed), with which every frame
decodes. A record's offset is that of its first frame, or of the skippable frames before it (a
reader that seeks there decodes it with the file's dictionary), and its length covers all its
frames. A record's frames run on while its header's Content-Length says it is not yet whole,
unless a frame starts a record of its own: then the record before it is found cut there and
reported (:class:`ZstdMember`).
"""
from __future__ import annotations

import re
import struct
import zlib
from typing import Any, BinaryIO

import zstandard

from simweb.core.formats import ZSTD_MAGIC
from simweb.tasks.record_starts import WARC_VERSION

#: Bytes of a gzip member decoded to tell what it starts with.
MEMBER_HEAD = 1 << 12


def gzip_head(data: bytes) -> bytes | None:
    """The first decoded bytes of the gzip member that ``data`` starts with; None if it is not one."""
    try:
        return zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(data, MEMBER_HEAD)
    except zlib.error:
        return None


def inflate_dropped(decoder: Any, data: bytes) -> None:
    """Feed ``data`` to the zlib ``decoder`` a megabyte of output at a time, the output dropped
    (a few kilobytes of deflate can stand for a gigabyte)."""
    while data and not decoder.eof:
        decoder.decompress(data, 1 << 20)
        data = decoder.unconsumed_tail


class MemberWindow:
    """The bytes [``start``, ``stop``) of a seekable file, read from ``start`` (what the reader of
    a gzip member is given: nothing past the member's end)."""

    def __init__(self, raw: BinaryIO, start: int, stop: int):
        self._raw, self._pos, self._stop = raw, start, stop

    def read(self, n: int | None = -1) -> bytes:
        n = self._stop - self._pos if n is None or n < 0 else min(n, self._stop - self._pos)
        if n <= 0:
            return b""
        self._raw.seek(self._pos)
        data = self._raw.read(n)
        self._pos += len(data)
        return data

    def tell(self) -> int:
        return self._pos


_ZSTD_DICTIONARY = b"\x37\xa4\x30\xec"  # a zstd dictionary
_ZSTD_DICT_LIMIT = 1 << 26  # the largest dictionary read (the specification asks readers for 8 MiB)
# Bytes of a zstd frame read to decode its first bytes: zstd decodes block by block, and a block
# holds up to 128 KiB.
FRAME_INPUT = (1 << 17) + 64


class ZstdMember:
    """A zstd decompressor with the interface of zlib's that warcio's reader drives, for the
    frames of a .warc.zst file. One member is one record's frames: the next frame that holds
    data, with the skippable (and empty) frames before it, and — since the specification lets a
    record span several frames — the frames after it while the record's header says it is
    longer than what they have given so far, unless a frame's first bytes start a record of
    their own. What follows the member is ``unused_data``.

    The bytes after a frame that may continue the record are held (``_held``) until the next
    frame's first output tells whose they are: a record's start ends the member there, with the
    held bytes its ``unused_data``, as if the frame had never been fed."""

    def __init__(self, dictionary: zstandard.ZstdCompressionDict | None):
        self._frames = zstandard.ZstdDecompressor(dict_data=dictionary)
        self._frame = self._frames.decompressobj()
        self._decoded = 0  # bytes this member has given
        self._head = b""  # its first bytes, until the end of the record's header (at most _RECORD_HEAD)
        self._length: int | None = None  # the record's bytes by its header; -1: not known; None: not read yet
        self._held: bytes | None = None
        self.unused_data = b""
        self.eof = False

    def decompress(self, data: bytes, max_length: int = 0) -> bytes:
        if self.eof:
            self.unused_data += data
            return b""
        if self._held is not None:
            self._held += data
        out = []
        while data:
            chunk = self._frame.decompress(data)
            if chunk:
                if self._held is not None:
                    if _starts_record(chunk):  # the frame is the next record's: the member ends before it
                        self.unused_data, self.eof, self._held = self._held, True, None
                        return b"".join(out)
                    self._held = None
                out.append(chunk)
                self._read(chunk)
            if not self._frame.eof:
                break
            data = self._frame.unused_data
            self._frame = self._frames.decompressobj()
            if self._decoded and self._held is None:
                if not self._continues():
                    self.unused_data, self.eof = data, True
                    break
                self._held = data
        return b"".join(out)

    def _read(self, chunk: bytes) -> None:
        self._decoded += len(chunk)
        if self._length is not None:
            return
        self._head += chunk[:_RECORD_HEAD - len(self._head)]
        end = self._head.find(b"\r\n\r\n")
        if not WARC_VERSION.match(self._head[:12]) and len(self._head) >= 12:
            self._length = -1  # not a WARC record: its frame is its member
        elif end >= 0:
            length = _CONTENT_LENGTH.search(self._head, 0, end + 2)
            self._length = end + 4 + int(length.group(1)) + 4 if length else -1
        elif len(self._head) >= _RECORD_HEAD:
            self._length = -1

    def _continues(self) -> bool:
        """Whether the record goes on after the frame that just ended, by its header."""
        if self._length is None:  # the frame ended inside the header (or its first line)
            return self._head[:5] == b"WARC/"[:len(self._head)]
        return self._length > self._decoded

    def flush(self) -> bytes:
        return b""


#: The most bytes of a zstd-compressed record read to find the end of its header.
_RECORD_HEAD = 1 << 16
_CONTENT_LENGTH = re.compile(rb"(?im)^content-length[ \t]*:[ \t]*(\d{1,18})[ \t]*\r?$")


def _starts_record(chunk: bytes) -> bool:
    """Whether decoded bytes (a frame's first) start a WARC record, or could: a few bytes that
    begin a version line count as one."""
    return chunk.startswith(b"WARC/") or b"WARC/".startswith(chunk)


def frame_head(data: bytes, dictionary: zstandard.ZstdCompressionDict | None) -> bytes | None:
    """The first decoded bytes of the zstd member (:class:`ZstdMember`) that ``data`` starts
    with; None if it is not one. Fed in small pieces: a few bytes of zstd can stand for megabytes."""
    member, out = ZstdMember(dictionary), b""
    try:
        for i in range(0, len(data), 256):
            out += member.decompress(data[i:i + 256])
            if len(out) >= MEMBER_HEAD or member.eof:
                break
    except zstandard.ZstdError:
        return None
    return out[:MEMBER_HEAD]


def dictionary_id(frame: bytes) -> int:
    """The Dictionary_ID the zstd frame ``frame`` starts with names (0: none, or not a frame)."""
    try:
        return zstandard.get_frame_parameters(frame).dict_id
    except zstandard.ZstdError:
        return 0


def zstd_dictionary(raw: BinaryIO) -> tuple[zstandard.ZstdCompressionDict | None, int, str]:
    """The dictionary of the .warc.zst file ``raw`` that starts with a dictionary frame, the offset
    of the frame after it, and what is wrong with it ("" when nothing is)."""
    raw.seek(0)
    header = raw.read(8)
    size = struct.unpack("<I", header[4:8])[0] if len(header) == 8 else 0
    data = raw.read(min(size, _ZSTD_DICT_LIMIT + 1))
    raw.seek(0)
    start = 8 + size
    if len(header) < 8 or len(data) < size:
        return None, start, "the file ends inside the zstd dictionary frame at offset 0 (truncated)"
    if size > _ZSTD_DICT_LIMIT:
        return None, start, f"the zstd dictionary at offset 0 is {size:,} bytes, more than the {_ZSTD_DICT_LIMIT:,} read"
    try:
        if data.startswith(ZSTD_MAGIC):
            data = zstandard.ZstdDecompressor().decompressobj().decompress(data)
        if not data.startswith(_ZSTD_DICTIONARY):
            return None, start, "the zstd dictionary frame at offset 0 holds no zstd dictionary"
        dictionary = zstandard.ZstdCompressionDict(data, dict_type=zstandard.DICT_TYPE_FULLDICT)
        zstandard.ZstdDecompressor(dict_data=dictionary).decompressobj()  # loads it: a damaged one fails here
    except zstandard.ZstdError as exc:
        return None, start, f"the zstd dictionary frame at offset 0 does not decode ({exc})"
    return dictionary, start, ""
