"""warcio's readers as the record reader (simweb.tasks.archives) drives them: quiet about the damage
it reports itself, ARC version 2 header lines read, header lines read as UTF-8, and a gzip member
(zstd frame) holding many records read on in order."""
from __future__ import annotations

import zlib
from typing import BinaryIO

import zstandard
from warcio.archiveiterator import ArchiveIterator
from warcio.bufferedreaders import BufferedReader, DecompressingBufferedReader
from warcio.recordloader import ARC2WARCHeadersParser
from warcio.statusandheaders import StatusAndHeadersParser
from warcio.utils import BUFF_SIZE

from simweb.tasks.archive_members import ZstdMember

DECODE_ERRORS = (zlib.error, zstandard.ZstdError)


class _QuietReader(DecompressingBufferedReader):
    """warcio's reader, without the message it prints to stderr when a gzip member (or zstd
    frame) does not decode: the record it holds ends there, is found cut, and the damage is
    reported. With ``zstd=True`` it reads zstd frames, decoded with ``dictionary`` if given."""

    def __init__(self, stream: BinaryIO, zstd: bool = False, dictionary: zstandard.ZstdCompressionDict | None = None):
        if zstd:
            self.DECOMPRESSORS = {**BufferedReader.DECOMPRESSORS, "zstd": lambda: ZstdMember(dictionary)}
        super().__init__(stream, block_size=BUFF_SIZE, decomp_type="zstd" if zstd else "gzip")

    def _decompress(self, data: bytes) -> bytes:
        # warcio takes a gzip member whose first bytes do not decode for uncompressed data; a
        # zstd frame that does not decode is no record either way.
        if self.decompressor is not None and data and (self.num_block_read or self.decomp_type == "zstd"):
            try:
                return self.decompressor.decompress(data)
            except DECODE_ERRORS:
                return b""
        return super()._decompress(data)


def _is_arc_v2(fields: list[str]) -> bool:
    """Whether the fields of an ARC header line (split from the right) are those of version 2:
    ``URL IP-address Archive-date Content-type Result-code Checksum Location Offset Filename
    Archive-length`` (version 1 has the first four and the last)."""
    return (len(fields) == 10 and fields[2].isdigit() and 12 <= len(fields[2]) <= 14 and fields[7].isdigit()
            and fields[9].isdigit() and (fields[4].isdigit() or fields[4] == "-"))


def _header_text(line: bytes | str) -> str:
    """A header line as text: UTF-8, a byte that is not UTF-8 read as U+FFFD (warcio reads such a
    line byte for byte as Latin-1), as the page's own text is read, so that the URLs of a record's
    headers and the links to it in pages are spelt one way (simweb.core.urls)."""
    return line if isinstance(line, str) else line.decode("utf-8", "replace")


class HeaderParser(StatusAndHeadersParser):
    """warcio's header reader, every line read as :func:`_header_text` reads it."""

    decode_header = staticmethod(_header_text)


class _ArcHeaders(ARC2WARCHeadersParser):
    """warcio's ARC header line reader, which knows version 1 lines only, reading version 2
    lines too (the ARC format's second version, as the Internet Archive describes it): their URL,
    address, date, type and length are those of a version 1 line; result code, checksum,
    location, offset and file name are left out, as a version 1 record has none."""

    def parse(self, stream, headerline=None):
        if headerline is None:
            headerline = stream.readline()
        headerline = _header_text(headerline)
        fields = headerline.rstrip("\r\n").rsplit(" ", 9)
        if _is_arc_v2(fields):
            headerline = " ".join(fields[:4] + fields[9:]) + "\n"
        return super().parse(stream, headerline)


class RecordIterator(ArchiveIterator):
    # warcio prints a warning to stderr when a record is not followed by blank lines; this
    # module finds and reports that damage itself.
    INC_RECORD = ""

    def __init__(self, fileobj: BinaryIO, fmt: str, zstd: bool = False,
                 dictionary: zstandard.ZstdCompressionDict | None = None):
        super().__init__(fileobj, arc2warc=True)
        self.reader = _QuietReader(self.fh, zstd, dictionary)
        self.known_format = fmt  # with arc2warc, warcio never sets it: records are read as this format
        self.loader.arc_parser = _ArcHeaders()
        loader = self.loader
        loader.warc_parser = HeaderParser(loader.WARC_TYPES)
        loader.http_parser = HeaderParser(loader.HTTP_TYPES, loader.http_parser.verify)
        loader.http_req_parser = HeaderParser(loader.HTTP_VERBS, loader.http_req_parser.verify)


class InOrderIterator(RecordIterator):
    """:class:`RecordIterator` reading on through a gzip member (zstd frame) that holds many records,
    where warcio stops: the records one after another, as the member's stream gives them."""

    def _raise_invalid_gzip_err(self) -> None:
        pass
