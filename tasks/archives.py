"""The records of one WARC or ARC file, read on through damage.

warcio parses the records — ARC records converted to WARC form, as its ``arc2warc``
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

A gzip member that holds more than one record — a file gzipped as a whole, one gzip stream
(which warcio refuses after its first record) — is read on in order, record after record, to
the member's end: every record it holds is kept, each with the member's offset (where a reader
must start decompressing) and a length of 0, since no byte range of the file holds it alone, so
that no player can replay it until the file is recompressed (``simweb cdxj`` leaves such records
out and says so). Bytes after the member that do not start a record are damage, reported as
such, and every record before them is kept. A file of members that split records cannot be read
record by record. ``warcio recompress`` rewrites either, record by record, and the message says
so where it would work: not when bytes after a member are not gzip data, which it cannot read
(the message then says where to cut the file first) (:meth:`ArchiveRecords.damage_note`).

A Zstandard-compressed WARC file (``.warc.zst``) is read as a gzipped one is, a zstd frame
standing for a gzip member (simweb.tasks.archive_members says how its frames make records).
"""
from __future__ import annotations

import enum
import re
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, BinaryIO

from warcio.recordloader import ArcWarcRecord

from simweb.core.formats import GZIP_MAGIC, ZSTD_DICT_FRAME, ZSTD_MAGIC
from simweb.tasks.archive_members import (
    FRAME_INPUT,
    MEMBER_HEAD,
    MemberWindow,
    ZstdMember,
    dictionary_id,
    frame_head,
    gzip_head,
    inflate_dropped,
    zstd_dictionary,
)
from simweb.tasks.record_starts import format_at, line_starts
from simweb.tasks.warcio_readers import DECODE_ERRORS, InOrderIterator, RecordIterator

# Bytes read to tell a file's format; bytes of a gzip member decoded to tell what it starts with.
_HEAD = 1 << 16
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
    "warc" or "arc" (None while no record was found), ``compression`` "gzip", "zstd" or None;
    after the iteration ``gaps`` lists the damage and ``recovered`` counts the records read
    after the first gap; after :meth:`finish`, ``length`` is the record's length in the file.
    ``raw`` must be seekable.

    ``start`` and ``stop`` read a piece of the file: the records that start at an offset in
    [``start``, ``stop``). The piece's first record is the first at or after ``start`` that
    parses (found as after damage), and the iteration ends at the first record at or past
    ``stop``, so the pieces of a file cut at any offsets hold every record once. Only a file
    whose records are compressed one by one (gzip members, zstd frames) can be cut so — in an
    uncompressed file a record's payload may hold lines that read as a record, and the records
    of an ARC file are read by its version block — so in any other file (see :attr:`cuttable`)
    the piece that starts at offset 0 reads the whole file and the others read nothing.
    """

    def __init__(self, raw: BinaryIO, start: int = 0, stop: int | None = None):
        self._raw = raw
        head = raw.read(_HEAD)
        self.size = raw.seek(0, 2)
        raw.seek(0)
        self.compression = ("gzip" if head.startswith(GZIP_MAGIC[:2])
                            else "zstd" if head.startswith((ZSTD_MAGIC, ZSTD_DICT_FRAME)) else None)
        self._member = "zstd frame" if self.compression == "zstd" else "gzip member"
        # Where the first record may start: after a .warc.zst file's dictionary frame.
        self._dictionary, self._start, self._dictionary_problem = None, 0, ""
        if head.startswith(ZSTD_DICT_FRAME):
            self._dictionary, self._start, self._dictionary_problem = zstd_dictionary(raw)
        first = self._read_at(self._start, FRAME_INPUT) if self.compression == "zstd" else head
        self.format = format_at((self._member_head(first) or b"") if self.compression else first)
        self.gaps: list[Gap] = []
        self.recovered = 0
        # The bytes of the record last finished (with its blank lines; in a gzipped file, of its
        # gzip member), as warcio's indexer counts them: the CDX "length". None until then.
        self.length: int | None = None
        self.whole_gzip_at: int | None = None  # a gzip member (zstd frame) holding more than one record
        self.in_whole_members = 0  # the records read from such members
        self.split_member_at: int | None = None  # a gzip member (zstd frame) that continues a record
        # Where bytes that are not gzip data follow a gzip member, which warcio recompress cannot read.
        self.not_gzip_at: int | None = None
        self._in_member: int | None = None  # the member whose records are being read in order
        self._head = head
        self._piece = (start, stop) if start > 0 or stop is not None else None
        self._stop: int | None = None  # where the records of this piece end
        self._it: RecordIterator | None = None
        self._records: Iterator[ArcWarcRecord] | None = None
        self._pending: ArcWarcRecord | None = None
        self._record: ArcWarcRecord | None = None
        self._offset = 0
        self._end: RecordEnd | None = None
        self._open_failure = ""
        # The gzip member (zstd frame) of the last record goes on after it: warcio's offsets inside it mean nothing.
        self._member_goes_on = False

    # --- iteration -------------------------------------------------------------------------

    @property
    def cuttable(self) -> bool:
        """Whether the file can be read in pieces (see the class docstring): a WARC file
        compressed record by record."""
        return self.compression is not None and self.format == "warc"

    def __iter__(self) -> Iterator[tuple[int, ArcWarcRecord]]:
        if self._piece is None:
            yield from self._records_from_start()
            return
        start, self._stop = self._piece
        if not self.cuttable:  # read whole by the piece that starts the file
            self._stop = None
            if start <= self._start:
                yield from self._records_from_start()
        elif start <= self._start:
            yield from self._records_from_start()
        elif self._head.strip() and self._find(start) is not None:  # not damage: a record of the piece before
            yield from self._records_on()

    def _records_from_start(self) -> Iterator[tuple[int, ArcWarcRecord]]:
        if not self._head.strip():
            return  # an empty file (or only blank lines): no records, nothing damaged
        start = self._start
        if self._dictionary_problem:
            self._add_gap(0, None, f"{self._dictionary_problem}, and no record decodes without it")
            return
        if self.format is None:
            if not self._resync(start, start + 1, self._why_no_first_record()):
                return
        elif not self._open_at(start, self.format):
            if not self._resync(start, start + 1, f"cannot read the record at offset {start}: {self._open_failure}"):
                return
        yield from self._records_on()

    def _records_on(self) -> Iterator[tuple[int, ArcWarcRecord]]:
        """The records from where the iteration stands (a record opened by _open_at)."""
        while True:
            if self._pending is not None:
                record, self._pending = self._pending, None
            elif self._member_goes_on and format_at(self._it.next_line or b""):
                # The member of the record before holds the next record too: its records in order.
                if not (yield from self._member_in_order(self._offset)):
                    return
                continue
            else:
                offset = max(self._it.offset, self._offset)  # never before the last record read
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
            if self._stop is not None and self._it.offset >= self._stop:
                return  # the next piece's first record
            self._record, self._offset, self._end = record, self._it.offset, None
            if self.gaps:
                self.recovered += 1
            yield self._offset, record
            if self._end is None:
                self.finish()

    def _member_in_order(self, member: int):
        """Yield the records of the gzip member (zstd frame) at ``member`` after its first, which
        was read, in order (:class:`InOrderIterator`), each at the member's offset; then find where
        reading goes on. Returns (as a generator's value) False when nothing follows."""
        if self.whole_gzip_at is None:
            self.whole_gzip_at = member
        self.in_whole_members += 1
        self._member_goes_on = False
        end, why = self._member_end(member)
        window = MemberWindow(self._raw, member, self.size if end is None else end)
        self._it = it = InOrderIterator(window, self.format, self.compression == "zstd", self._dictionary)
        records, read, failure = iter(it), 0, None
        self._in_member = member
        try:
            while True:
                try:
                    record = next(records)
                except StopIteration:
                    break
                except OSError:
                    raise
                except Exception as exc:  # bytes inside the member that are not a record
                    failure = exc
                    break
                read += 1
                if read == 1:  # the member's first record, read before
                    continue
                self._record, self._offset, self._end = record, member, None
                self.in_whole_members += 1
                if self.gaps:
                    self.recovered += 1
                yield member, record
                if self._end is None:
                    self.finish()
        finally:
            self._in_member = None
        what = f"the {self._member} at offset {member}, which holds {read} records"
        found = None
        if end is None:  # the member is cut, or stops decoding: its records up to there were read
            found = self._find(member + 1)
        elif end < self.size:
            found = self._find(end)
        if failure is not None:
            self.gaps.append(Gap(member, 0, found, f"{what}, goes on after its last record with bytes that are not "
                                                   f"a record ({_said(failure)}): the rest of it was skipped"))
        elif end is None:
            self.gaps.append(Gap(member, 0, found, f"{what}, {why}"))
        if end is not None and end < self.size and found != end:
            self._add_gap(end, found, f"{what}, ends at offset {end}, and the bytes after it are not a record "
                                      "(bytes after the end of the compressed data)")
        return found is not None

    def finish(self) -> RecordEnd:
        """Read the rest of the current record and tell how it ended; after damage, find the
        next record, where the iteration resumes."""
        if self._end is not None:
            return self._end
        it, record, offset = self._it, self._record, self._offset
        if self._in_member is not None:  # a record of a member read in order: no byte range of its own
            try:
                it.read_to_end()
                cut = getattr(record.raw_stream, "limit", 0) > 0
            except OSError:
                raise
            except Exception:
                cut = True
            self.length = 0
            self._end = RecordEnd.CUT if cut else RecordEnd.WHOLE
            return self._end
        errors, self.length = it.err_count, None
        try:
            it.read_to_end()
            cut = getattr(record.raw_stream, "limit", 0) > 0
            length = it.member_info[1] if it.member_info else -1  # < 0: a member the file cuts short
            self.length = length if length >= 0 else None
        except OSError:
            raise
        except Exception:  # warcio could not read the rest of the block
            cut = True
        if not cut and it.err_count == errors:
            self._end = RecordEnd.WHOLE  # the path of every record of an undamaged file
            # In a gzipped file, a line after the record's blank lines is inside its member.
            self._member_goes_on = (self.compression is not None and it.next_line is not None
                                    and it.reader.decompressor is not None)
            if self._member_goes_on and format_at(it.next_line) is not None:
                self.length = 0  # its member holds the next record too: no byte range holds it alone
            return self._end
        if cut:
            self._end = RecordEnd.CUT
            self._resync(offset, offset + 1, self._why_cut(offset))
            return self._end
        # Read to its Content-Length, but what follows is not blank lines.
        if self.compression:
            self._end = RecordEnd.UNFRAMED
            end, _ = self._member_end(offset)
            self._resync(offset if end is None else end, offset + 1,
                         f"the record at offset {offset} is followed, inside its {self._member}, by bytes "
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

    def damage_note(self, source: str) -> str | None:
        """What was damaged, skipped and recovered, for people (None for an undamaged file); a
        file compressed as a whole is said to be, with how to make it replayable."""
        if not self.gaps and self.whole_gzip_at is None:
            return None

        def told(gap: Gap) -> str:
            after = f"reading resumed at offset {gap.resumed}" if gap.resumed is not None else "no record follows"
            return f"{gap.reason}: {gap.skipped} bytes skipped, {after}"

        said = []
        if self.whole_gzip_at is not None:
            how = "gzipped" if self.compression == "gzip" else "compressed"
            said.append(f"the file is {how} as a whole instead of record by record (the {self._member} at offset "
                        f"{self.whole_gzip_at} holds more than one record): its {self.in_whole_members} records were "
                        "read in order, but a player cannot seek to one, so they are not replayable until the file is "
                        "recompressed")
        if len(self.gaps) == 1:
            said.append(told(self.gaps[0]))
        elif self.gaps:
            listed = "; ".join(told(gap) for gap in self.gaps[:3])
            more = f"; and {len(self.gaps) - 3} more" if len(self.gaps) > 3 else ""
            said.append(f"damaged at {len(self.gaps)} places, {sum(g.skipped for g in self.gaps)} bytes "
                        f"skipped in all: {listed}{more}")
        text = "; ".join(said)
        if self.format is None:
            text = f"not a WARC or ARC file (no record was found in it): {text}"
        if self.recovered:
            text += f"; {self.recovered} record{'s' if self.recovered != 1 else ''} recovered after the damage"
        if self.compression == "zstd" and self.whole_gzip_at is not None:
            text += f"; 'zstd -d {source}' writes the uncompressed WARC file, which reads in full"
        if self.compression == "gzip" and (self.whole_gzip_at is not None or self.split_member_at is not None):
            base = re.sub(r"\.w?arc\.gz(\.open)?$", "", source, flags=re.I)
            if self.not_gzip_at is None:
                text += ("; the file is likely still valid and can be rewritten record by record by running: "
                         f"warcio recompress {source} {base}.recompressed.warc.gz")
            else:  # warcio recompress stops at bytes that are not gzip data
                text += (f"; to rewrite it record by record, cut the bytes from offset {self.not_gzip_at} on, which "
                         f"warcio recompress cannot read, and recompress what is before them: head -c "
                         f"{self.not_gzip_at} {source} > {base}.trimmed.warc.gz && warcio recompress "
                         f"{base}.trimmed.warc.gz {base}.recompressed.warc.gz")
        return text

    def _why_no_first_record(self) -> str:
        start = self._start
        if self.compression is None:
            shown = self._head.lstrip(b"\r\n")[:40]
            if re.match(rb"WARC/\d+\.\d+\r\r\n", shown):
                return ("its lines end in '\\r\\r\\n', not '\\r\\n': the file was converted as text after it was "
                        "written, so its Content-Lengths no longer hold")
            arc = re.match(rb"[A-Za-z][A-Za-z0-9+.-]*:\S* \S+ \S+ \S+ (\S+)\r?\n", self._head.lstrip(b"\r\n"))
            if arc and not arc.group(1).isdigit():
                return (f"the ARC header line at offset 0 gives a length that is not a number ({arc.group(1)!r}): "
                        f"{arc.group(0)[:80]!r}")
            return f"expected a WARC record ('WARC/1.0') or an ARC file's 'filedesc://' line at offset 0, found {shown!r}"
        what = "a WARC record ('WARC/1.0') or an ARC file's 'filedesc://' line"
        first = self._head_input(start)
        if self._member_head(first):
            return f"expected {what} at offset {start}, found a {self._member} that does not start with one"
        if self.compression == "zstd" and self._dictionary is None and dictionary_id(first):
            return (f"the zstd frame at offset {start} needs a dictionary (id {dictionary_id(first)}) that the file "
                    "does not hold: a .warc.zst file keeps its dictionary in a frame at its start")
        return f"expected {what} at offset {start}, found {self.compression} data that does not decode"

    def _why_cut(self, offset: int) -> str:
        if not self.compression:
            return f"the file ends inside the record at offset {offset} (truncated)"
        end, why = self._member_end(offset)
        if end is None:
            return f"the {self._member} of the record at offset {offset} {why}"
        why = (f"the {self._member} of the record at offset {offset} ends at offset {end}, before the "
               "record's Content-Length")
        head = self._member_head(self._head_input(end))
        if head and format_at(head) is None:
            self.split_member_at = end
            why += (f", and the {self._member} there continues the record (the file's {self._member}s split "
                    "records)")
        return why

    def _why_stopped(self, offset: int) -> str:
        if self.compression:
            end, why = self._member_end(offset)
            if end is None:
                return f"the {self._member} at offset {offset} {why}"
        return f"cannot read a record at offset {offset}"

    def _resync_after_failure(self, exc: Exception, offset: int) -> bool:
        text = _said(exc)
        if self._member_goes_on:
            # The last record's member goes on after it: the damage is that member, from its start.
            member = self._offset
            return self._resync(member, member + 1,
                                f"the {self._member} at offset {member} goes on after its record with bytes "
                                f"that are not a record ({text})")
        return self._resync(offset, offset + 1, f"cannot read a record at offset {offset}: {text}")

    def _resync(self, start: int, scan_from: int, reason: str) -> bool:
        """Record the gap from ``start`` to the next record at or after ``scan_from`` and
        resume there; False when no record follows."""
        # Never back to or before the last record read: every resync moves forward.
        if self._record is not None:
            start, scan_from = max(start, self._offset), max(scan_from, self._offset + 1)
        start, scan_from = max(start, 0), max(scan_from, 0)
        self._member_goes_on = False
        found = self._find(scan_from)
        self._add_gap(start, found, reason)
        return found is not None

    def _add_gap(self, start: int, found: int | None, reason: str) -> None:
        end = self.size if found is None else found
        skipped = max(0, end - start)
        if (self.compression == "gzip" and skipped and self.not_gzip_at is None
                and self._read_at(start, len(GZIP_MAGIC)) != GZIP_MAGIC):
            self.not_gzip_at = start  # bytes that are not gzip data, where warcio recompress stops
        if found is not None and skipped and not self.compression:
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

    def _head_input(self, offset: int) -> bytes:
        """The bytes at ``offset`` that :meth:`_member_head` needs."""
        return self._read_at(offset, FRAME_INPUT if self.compression == "zstd" else MEMBER_HEAD)

    def _member_head(self, data: bytes) -> bytes | None:
        """The first decoded bytes of the gzip member (zstd frame) ``data`` starts with; None if it is not one."""
        return frame_head(data, self._dictionary) if self.compression == "zstd" else gzip_head(data)

    def _member_end(self, offset: int) -> tuple[int | None, str]:
        """Where the gzip member (zstd frame) starting at ``offset`` ends, or None and why it does not."""
        if self.compression == "zstd":
            # zstd in small reads: a few bytes of it can stand for megabytes
            return self._decoded_end(ZstdMember(self._dictionary), offset, 1 << 12, ZstdMember.decompress)
        return self._decoded_end(zlib.decompressobj(16 + zlib.MAX_WBITS), offset, 1 << 16, inflate_dropped)

    def _decoded_end(self, decoder: Any, offset: int, step: int, feed: Callable[[Any, bytes], object]
                     ) -> tuple[int | None, str]:
        """Where ``decoder`` (zlib's interface: ``eof``, ``unused_data``) finds the end of the
        compressed data starting at ``offset``, fed ``step`` bytes at a time by ``feed``, its
        output dropped; or None and why it finds none."""
        at = offset
        try:
            while not decoder.eof:
                data = self._read_at(at, step)
                if not data:
                    return None, "is cut: the file ends inside it (truncated)"
                at += len(data)
                feed(decoder, data)
        except DECODE_ERRORS as exc:
            return None, f"does not decode ({exc})"
        return at - len(decoder.unused_data), ""

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
            if self.compression:
                yield from ((base + i, fmt) for i, fmt in self._member_starts(window, lead, limit, base)
                            if fmt is not None and self.format in (None, fmt))
            else:
                yield from ((base + i, fmt) for i, fmt in line_starts(window, lead, limit, self.format))
            pos += _SCAN_WINDOW

    def _member_starts(self, window: bytes, i: int, limit: int, base: int) -> Iterator[tuple[int, str | None]]:
        """Where gzip members (zstd frames) may start in ``window[i:limit]``, each with the format
        of the record its decoded bytes start with (None: they decode but start no record)."""
        magic = ZSTD_MAGIC if self.compression == "zstd" else GZIP_MAGIC
        while (i := window.find(magic, i, limit)) >= 0:
            head = self._member_head(self._head_input(base + i) if self.compression == "zstd"
                                     else window[i:i + MEMBER_HEAD])
            if head:
                yield i, format_at(head)
            i += 1


    def _open_at(self, offset: int, fmt: str) -> bool:
        """Start reading records of format ``fmt`` at ``offset``: True when the first one parses
        and says where it ends (it is the next record of the iteration); else False, with the
        reason in ``_open_failure``."""
        self._raw.seek(offset)
        it = RecordIterator(self._raw, fmt, self.compression == "zstd", self._dictionary)
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
