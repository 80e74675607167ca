"""The records of one WARC or ARC file, read on through damage.

warcio parses the records — ARC (v1) records converted to WARC form, as its ``arc2warc``
does, so that an ARC file gives the same records as the WARC file holding the same
responses. This module decides where the records are. A file without damage is read
exactly as warcio reads it, with nothing added per record; each record read ends in one of
three ways (:class:`RecordEnd`):

- **whole**: its block was read to its Content-Length, and the blank lines (or the end of its
  gzip member) that end a record follow it. A record followed directly by the next record,
  without the blank lines, is whole too;
- **unframed**: its block was read to its Content-Length, but bytes that do not start a
  record follow it — a Content-Length too short, or bytes inserted after the record. Whether
  the payload was read in full is for the reader of the payload to tell (a gzip or deflate
  body whose stream ends inside the block was);
- **cut**: its block could not be read to its Content-Length: the file or the record's gzip
  member ends inside it (a truncated file, a cut or corrupt member, gzip members that split a
  record), or the block runs past the start of the next record (a Content-Length too long).

A record header that does not parse, or has no usable Content-Length, is not a record: it
is skipped with what follows it. After damage, reading resumes at the next record that
parses, found by scanning forward: in an uncompressed file the next ``WARC/1.x`` version
line (or, in an ARC file, the next header line ``URL IP-address date content-type length``
at the start of a line), in a gzipped file the next gzip member that starts with one. The
stretch in between is a :class:`Gap`: it starts where the damaged record starts, or — when
that record was read to its Content-Length — where its block ends (in a gzipped file: where
its gzip member ends); its ``skipped`` bytes do not count the blank lines before the record
where reading resumed. Offsets are file offsets, of a record's first byte (in a gzipped
file, of its gzip member's first byte): where a reader seeks to read the record again.

A gzipped file whose gzip members do not hold one record each — the whole file one gzip
stream, or members that split records — cannot be read record by record; ``warcio
recompress`` rewrites it (:meth:`ArchiveRecords.damage`).
"""
from __future__ import annotations

import enum
import re
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import BinaryIO

from warcio.archiveiterator import ArchiveIterator
from warcio.bufferedreaders import DecompressingBufferedReader
from warcio.exceptions import ArchiveLoadFailed
from warcio.recordloader import ArcWarcRecord
from warcio.utils import BUFF_SIZE

WARC_SUFFIXES = (".warc", ".warc.gz")
ARC_SUFFIXES = (".arc", ".arc.gz")
ARCHIVE_SUFFIXES = WARC_SUFFIXES + ARC_SUFFIXES
FORMATS = ("warc", "arc")

# The version lines warcio reads (looked for anywhere: bytes inserted before a record need not
# end with a line break), and the header line of an ARC v1 record or of its version block
# (``filedesc://NAME IP DATE TYPE LENGTH``, looked for at the start of a line).
_WARC_VERSION = re.compile(rb"WARC/(?:1\.[01]|0\.1[78])\r?\n")
_ARC_HEADER = re.compile(rb"[A-Za-z][A-Za-z0-9+.-]*:\S* \S+ \d{12,14} \S+ \d+\r?\n")
_ARC_LINE = re.compile(rb"(?m)^(?=" + _ARC_HEADER.pattern + rb")")
_GZIP_MAGIC = b"\x1f\x8b\x08"
# Bytes read to tell a file's format; bytes of a gzip member decoded to tell what it starts with.
_HEAD = 1 << 16
_MEMBER_HEAD = 1 << 12
# The scan for the next record reads windows of this size, overlapping by the longest header
# line it recognises.
_SCAN_WINDOW = 1 << 20
_SCAN_OVERLAP = 1 << 14


class RecordEnd(enum.Enum):
    """How a record read from an archive ended (see the module docstring)."""

    WHOLE = "whole"
    UNFRAMED = "unframed"
    CUT = "cut"


@dataclass(frozen=True, slots=True)
class Gap:
    """A stretch of an archive that no record was read from, and why."""

    offset: int  # where it starts (see the module docstring)
    skipped: int  # its bytes, without the blank lines before the record where reading resumed
    resumed: int | None  # where reading resumed: the next record that parses; None: nothing did
    reason: str  # what was found at ``offset``


class _QuietReader(DecompressingBufferedReader):
    """warcio's reader, without the message it prints to stderr when a gzip member does not
    decode: the record it holds ends there, is found cut, and the damage is reported."""

    def _decompress(self, data: bytes) -> bytes:
        if self.decompressor is not None and data and self.num_block_read:
            try:
                return self.decompressor.decompress(data)
            except zlib.error:
                return b""
        return super()._decompress(data)


class _Iterator(ArchiveIterator):
    # warcio prints a warning to stderr when a record is not followed by blank lines; this
    # module finds and reports that damage itself.
    INC_RECORD = ""

    def __init__(self, fileobj: BinaryIO, fmt: str):
        super().__init__(fileobj, arc2warc=True)
        self.reader = _QuietReader(self.fh, block_size=BUFF_SIZE)
        self.known_format = fmt  # with arc2warc, warcio never sets it: records are read as this format


def _format_at(text: bytes) -> str | None:
    """"warc" or "arc" when ``text`` starts with a record (after blank lines), else None."""
    text = text.lstrip(b"\r\n")
    if _WARC_VERSION.match(text):
        return "warc"
    if _ARC_HEADER.match(text):
        return "arc"
    return None


def _member_head(data: bytes) -> bytes | None:
    """The first decoded bytes of the gzip member that ``data`` starts with; None if it is not one."""
    try:
        return zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(data, _MEMBER_HEAD)
    except zlib.error:
        return None


def _said(exc: Exception) -> str:
    """An exception for a message: one line, control characters escaped, at most 200 characters."""
    text = " ".join(str(exc).split())
    text = "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)
    return f"{type(exc).__name__}: {text[:200]}{'…' if len(text) > 200 else ''}"


def _delimited(record: ArcWarcRecord) -> bool:
    """Whether the record's Content-Length (an ARC record's length) says where it ends."""
    if record.length is None:
        return False
    if record.length:
        return True
    # warcio reads a length it cannot use (not a number, or shorter than an ARC version block) as 0.
    declared = record.rec_headers.get_header("Content-Length")
    return declared is not None and declared.strip().isdigit()


class ArchiveRecords:
    """The records of one WARC or ARC file (gzipped or not) in file order, with their offsets.

    Iterate to get ``(offset, record)``; read what is wanted of each record's ``raw_stream``,
    then call :meth:`finish` (iterating on calls it if it was not called). ``format`` is
    "warc" or "arc" (None while no record was found), ``gzipped`` whether the file is gzipped;
    after the iteration ``gaps`` lists the damage and ``recovered`` counts the records read
    after the first gap; after :meth:`finish`, ``length`` is the record's length in the file.
    ``raw`` must be seekable.
    """

    def __init__(self, raw: BinaryIO):
        self._raw = raw
        head = raw.read(_HEAD)
        self.size = raw.seek(0, 2)
        raw.seek(0)
        self.gzipped = head.startswith(b"\x1f\x8b")
        self.format = _format_at((_member_head(head) or b"") if self.gzipped else head)
        self.gaps: list[Gap] = []
        self.recovered = 0
        # The bytes of the record last finished (with its blank lines; in a gzipped file, of its
        # gzip member), as warcio's indexer counts them: the CDX "length". None until then.
        self.length: int | None = None
        self.whole_gzip_at: int | None = None  # a gzip member holding more than one record
        self.split_member_at: int | None = None  # a gzip member that continues a record
        self._head = head
        self._it: _Iterator | None = None
        self._records: Iterator[ArcWarcRecord] | None = None
        self._pending: ArcWarcRecord | None = None
        self._record: ArcWarcRecord | None = None
        self._offset = 0
        self._end: RecordEnd | None = None
        self._open_failure = ""
        # The gzip member of the last record goes on after it: warcio's offsets inside it mean nothing.
        self._member_goes_on = False

    # --- iteration -------------------------------------------------------------------------

    def __iter__(self) -> Iterator[tuple[int, ArcWarcRecord]]:
        if not self._head.strip():
            return  # an empty file (or only blank lines): no records, nothing damaged
        if self.format is None:
            start = self._head.lstrip(b"\r\n")[:40]
            found = (f"found {start!r}" if not self.gzipped
                     else "found a gzip member that does not start with one" if _member_head(self._head)
                     else "found gzip data that does not decode")
            if not self._resync(0, 1, "expected a WARC record ('WARC/1.0') or an ARC file's "
                                      f"'filedesc://' line at offset 0, {found}"):
                return
        elif not self._open_at(0, self.format):
            if not self._resync(0, 1, f"cannot read the record at offset 0: {self._open_failure}"):
                return
        while True:
            if self._pending is not None:
                record, self._pending = self._pending, None
            else:
                offset = self._it.offset
                try:
                    record = next(self._records)
                except StopIteration:
                    # warcio also stops, silently, at a gzip member it cannot decode at all.
                    if self._member_goes_on:
                        offset = self._offset
                    if offset >= self.size or not self._resync(offset, offset + 1, self._why_stopped(offset)):
                        return
                    continue
                except OSError:
                    raise
                except Exception as exc:  # warcio's ArchiveLoadFailed, a header it cannot parse, ...
                    if not self._resync_after_failure(exc, offset):
                        return
                    continue
                if not _delimited(record):
                    length = record.rec_headers.get_header("Content-Length")
                    if not self._resync(offset, offset + 1, f"the record at offset {offset} has no usable "
                                                            f"Content-Length (found {length!r})"):
                        return
                    continue
            self._record, self._offset, self._end = record, self._it.offset, None
            if self.gaps:
                self.recovered += 1
            yield self._offset, record
            if self._end is None:
                self.finish()

    def finish(self) -> RecordEnd:
        """Read the rest of the current record and tell how it ended; after damage, find the
        next record, where the iteration resumes."""
        if self._end is not None:
            return self._end
        it, record, offset = self._it, self._record, self._offset
        errors = it.err_count
        self.length = None
        try:
            it.read_to_end()
            cut = getattr(record.raw_stream, "limit", 0) > 0
            self.length = it.member_info[1] if it.member_info else None
        except OSError:
            raise
        except Exception:  # warcio could not read the rest of the block
            cut = True
        if not cut and it.err_count == errors:
            self._end = RecordEnd.WHOLE  # the path of every record of an undamaged file
            # In a gzipped file, a line after the record's blank lines is inside its member.
            self._member_goes_on = self.gzipped and it.next_line is not None and it.reader.decompressor is not None
            return self._end
        if cut:
            self._end = RecordEnd.CUT
            self._resync(offset, offset + 1, self._why_cut(offset))
            return self._end
        # Read to its Content-Length, but what follows is not blank lines.
        if self.gzipped:
            self._end = RecordEnd.UNFRAMED
            end, _ = self._member_end(offset)
            self._resync(offset if end is None else end, offset + 1,
                         f"the record at offset {offset} is followed, inside its gzip member, by bytes "
                         "that do not start a record (its Content-Length is too short)")
            return self._end
        block_end = offset + it.member_info[1]
        found = self._find(offset + 1)
        if found is not None and found < block_end:
            self._end = RecordEnd.CUT
            self._add_gap(offset, found, f"the record at offset {offset} runs past the start of the "
                                         f"next record at offset {found} (its Content-Length is too long)")
        elif found == block_end:
            self._end = RecordEnd.WHOLE
            self._add_gap(block_end, found, f"the record at offset {offset} is not followed by the "
                                            "blank lines that end a record")
        else:
            self._end = RecordEnd.UNFRAMED
            self._add_gap(block_end, found, f"the record at offset {offset} is followed by bytes that "
                                            "do not start a record (its Content-Length is too short, "
                                            "or bytes were inserted)")
        return self._end

    # --- damage ----------------------------------------------------------------------------

    def damage(self, source: str) -> str | None:
        """What was damaged, skipped and recovered, for people (None for an undamaged file)."""
        if not self.gaps:
            return None

        def told(gap: Gap) -> str:
            after = f"reading resumed at offset {gap.resumed}" if gap.resumed is not None else "no record follows"
            return f"{gap.reason}: {gap.skipped} bytes skipped, {after}"

        if len(self.gaps) == 1:
            text = told(self.gaps[0])
        else:
            listed = "; ".join(told(gap) for gap in self.gaps[:3])
            more = f"; and {len(self.gaps) - 3} more" if len(self.gaps) > 3 else ""
            text = (f"damaged at {len(self.gaps)} places, {sum(g.skipped for g in self.gaps)} bytes "
                    f"skipped in all: {listed}{more}")
        if self.format is None:
            text = f"not a WARC or ARC file (no record was found in it): {text}"
        if self.recovered:
            text += f"; {self.recovered} record{'s' if self.recovered != 1 else ''} recovered after the damage"
        if self.whole_gzip_at is not None or self.split_member_at is not None:
            base = re.sub(r"\.w?arc\.gz$", "", source, flags=re.I)
            text += ("; the file is likely still valid and can be fixed by running: "
                     f"warcio recompress {source} {base}.recompressed.warc.gz")
        return text

    def _why_cut(self, offset: int) -> str:
        if not self.gzipped:
            return f"the file ends inside the record at offset {offset} (truncated)"
        end, why = self._member_end(offset)
        if end is None:
            return f"the gzip member of the record at offset {offset} {why}"
        why = (f"the gzip member of the record at offset {offset} ends at offset {end}, before the "
               "record's Content-Length")
        head = _member_head(self._read_at(end, _MEMBER_HEAD))
        if head and _format_at(head) is None:
            self.split_member_at = end
            why += ", and the gzip member there continues the record (the file's gzip members split records)"
        return why

    def _why_stopped(self, offset: int) -> str:
        if self.gzipped:
            end, why = self._member_end(offset)
            if end is None:
                return f"the gzip member at offset {offset} {why}"
        return f"cannot read a record at offset {offset}"

    def _resync_after_failure(self, exc: Exception, offset: int) -> bool:
        text = _said(exc)
        if self._member_goes_on:
            # The last record's gzip member goes on after it: the damage is that member, from its start.
            member = self._offset
            if isinstance(exc, ArchiveLoadFailed) and "non-chunked gzip" in text:
                self.whole_gzip_at = member
                return self._resync(member, member + 1,
                                    f"the gzip member at offset {member} holds more than one record (the "
                                    "file is gzipped as a whole instead of record by record), so only its "
                                    "first record could be read")
            return self._resync(member, member + 1,
                                f"the gzip member at offset {member} goes on after its record with bytes "
                                f"that are not a record ({text})")
        return self._resync(offset, offset + 1, f"cannot read a record at offset {offset}: {text}")

    def _resync(self, start: int, scan_from: int, reason: str) -> bool:
        """Record the gap from ``start`` to the next record at or after ``scan_from`` and
        resume there; False when no record follows."""
        # Never back to or before the last record read: every resync moves forward.
        if self._record is not None:
            start, scan_from = max(start, self._offset), max(scan_from, self._offset + 1)
        self._member_goes_on = False
        found = self._find(scan_from)
        self._add_gap(start, found, reason)
        return found is not None

    def _add_gap(self, start: int, found: int | None, reason: str) -> None:
        end = self.size if found is None else found
        skipped = max(0, end - start)
        if found is not None and skipped and not self.gzipped:
            # Blank lines before the record where reading resumed end the stretch: not skipped.
            before = self._read_at(max(start, found - 64), found - max(start, found - 64))
            skipped -= len(before) - len(before.rstrip(b"\r\n"))
        self.gaps.append(Gap(start, skipped, found, reason))

    def _read_at(self, offset: int, n: int) -> bytes:
        """``n`` bytes at ``offset``, leaving the file where it was (a reader may be reading it)."""
        here = self._raw.tell()
        try:
            self._raw.seek(offset)
            return self._raw.read(n)
        finally:
            self._raw.seek(here)

    def _member_end(self, offset: int) -> tuple[int | None, str]:
        """Where the gzip member starting at ``offset`` ends, or None and why it does not."""
        d = zlib.decompressobj(16 + zlib.MAX_WBITS)
        at = offset
        try:
            while not d.eof:
                data = self._read_at(at, 1 << 16)
                if not data:
                    return None, "is cut: the file ends inside it (truncated)"
                at += len(data)
                while data and not d.eof:
                    d.decompress(data, 1 << 20)
                    data = d.unconsumed_tail
        except zlib.error as exc:
            return None, f"does not decode ({exc})"
        return at - len(d.unused_data), ""

    # --- finding the next record -----------------------------------------------------------

    def _find(self, start: int) -> int | None:
        """The offset of the next record at or after ``start`` that parses, with the iteration
        moved there; None when none does."""
        for offset, fmt in self._candidates(start):
            if self._open_at(offset, fmt):
                if self.format is None:
                    self.format = fmt
                return offset
        return None

    def _candidates(self, start: int) -> Iterator[tuple[int, str]]:
        """Offsets at or after ``start`` whose bytes look like the start of a record, in order,
        with the format of that record."""
        pos = start
        while pos < self.size:
            # One byte before the window, so that a line that starts at ``pos`` is seen as one.
            lead = 1 if pos > 0 else 0
            self._raw.seek(pos - lead)
            window = self._raw.read(lead + _SCAN_WINDOW + _SCAN_OVERLAP)
            limit = len(window) if pos + _SCAN_WINDOW >= self.size else lead + _SCAN_WINDOW
            base = pos - lead
            if self.gzipped:
                yield from ((base + i, fmt) for i, fmt in self._member_starts(window, lead, limit)
                            if fmt is not None and self.format in (None, fmt))
            else:
                yield from ((base + i, fmt) for i, fmt in self._line_starts(window, lead, limit))
            pos += _SCAN_WINDOW

    @staticmethod
    def _member_starts(window: bytes, i: int, limit: int) -> Iterator[tuple[int, str | None]]:
        """Where gzip members may start in ``window[i:limit]``, each with the format of the
        record its decoded bytes start with (None: they decode but start no record)."""
        while (i := window.find(_GZIP_MAGIC, i, limit)) >= 0:
            head = _member_head(window[i:i + _MEMBER_HEAD])
            if head:
                yield i, _format_at(head)
            i += 1

    def _line_starts(self, window: bytes, i: int, limit: int) -> Iterator[tuple[int, str]]:
        """Where records may start in ``window[i:limit]`` of an uncompressed file: WARC version
        lines anywhere (inserted bytes need not end with a line break), ARC header lines at
        the start of a line."""
        found: list[tuple[int, str]] = []
        if self.format in (None, "warc"):
            j = i
            while (j := window.find(b"WARC/", j, limit)) >= 0:
                if _WARC_VERSION.match(window, j):
                    found.append((j, "warc"))
                j += 1
        if self.format in (None, "arc"):
            found += ((m.start(), "arc") for m in _ARC_LINE.finditer(window, i) if m.start() < limit)
        return iter(sorted(found))

    def _open_at(self, offset: int, fmt: str) -> bool:
        """Start reading records of format ``fmt`` at ``offset``: True when the first one parses
        and says where it ends (it is the next record of the iteration); else False, with the
        reason in ``_open_failure``."""
        self._raw.seek(offset)
        it = _Iterator(self._raw, fmt)
        # A gzip member may start with the blank lines that end the record before it.
        line = it.reader.readline()
        while line and not line.strip():
            line = it.reader.readline()
        it.next_line = line or None
        records = iter(it)
        try:
            record = next(records)
        except StopIteration:
            self._open_failure = "no record follows"
            return False
        except OSError:
            raise
        except Exception as exc:  # warcio's ArchiveLoadFailed, a header it cannot parse, ...
            self._open_failure = _said(exc)
            return False
        if not _delimited(record):
            length = record.rec_headers.get_header("Content-Length")
            self._open_failure = f"the record has no usable Content-Length (found {length!r})"
            return False
        self._it, self._records, self._pending = it, records, record
        return True
