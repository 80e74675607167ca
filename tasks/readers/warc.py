"""WARC and ARC files, plain, gzipped or Zstandard-compressed (``.warc.zst``). A reader of
simweb.tasks.readers, and the one for a file named otherwise: its records are
simweb.tasks.archives.ArchiveRecords', which tells the compression and the format by the file's
first bytes and reads on through damage."""
from __future__ import annotations

from typing import BinaryIO

from simweb.core.formats import ARCHIVE_SUFFIXES
from simweb.tasks.archives import ArchiveRecords

NAME = "WARC or ARC file"
SUFFIXES = ARCHIVE_SUFFIXES


def files(url: str) -> list[str]:
    """An archive file is the one file it holds."""
    return [url]


def problem(url: str) -> None:
    """Nothing to tell before its records are read: what is wrong with them is reported as they are."""
    return None


def records(raw: BinaryIO, start: int = 0, stop: int | None = None) -> ArchiveRecords:
    """The records of the open file ``raw`` that start in [``start``, ``stop``)."""
    return ArchiveRecords(raw, start, stop)
