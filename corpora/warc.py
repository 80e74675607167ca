"""Pages written as a WARC crawl: gzip-per-record ``response`` records, files of bounded size.

Every header is derived from the pages, never from the clock: WARC-Date and Last-Modified are
a file's time stamp inside its package, and a record's id is a name-based UUID of what it
holds, so a crawl built again from the same packages is byte-identical.
"""
from __future__ import annotations

import email.utils
import hashlib
import io
import uuid
from collections.abc import Sequence
from datetime import datetime, timezone

from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from simweb.corpora.files import OutputFile

__all__ = ["WarcFile", "record_id", "shard_ranges", "warc_date"]

# Name-based record ids live in their own namespace so they never collide with random ones.
RECORD_NAMESPACE = uuid.UUID("7d1b6c1e-4f0a-5b8e-9c39-2f1d5d0e6a41")


def warc_date(mtime: float) -> str:
    """A time stamp (seconds since the epoch) as a WARC-Date."""
    return datetime.fromtimestamp(int(mtime), timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def record_id(*parts: str) -> str:
    """A WARC-Record-ID named by ``parts``: the same parts always give the same id."""
    return f"<urn:uuid:{uuid.uuid5(RECORD_NAMESPACE, chr(10).join(parts))}>"


def shard_ranges(sizes: Sequence[int], budget: int) -> list[tuple[int, int]]:
    """Consecutive [first, last) ranges of items, each at most ``budget`` in total size unless it
    is a single item; one empty range when there are no items."""
    ranges, first, total = [], 0, 0
    for i, size in enumerate(sizes):
        if i > first and total + size > budget:
            ranges.append((first, i))
            first, total = i, 0
        total += size
    ranges.append((first, len(sizes)))
    return ranges


class WarcFile:
    """One WARC file: a ``warcinfo`` record (``info``: its ``key: value`` lines), then one
    ``response`` record per page, each gzipped on its own so that readers can seek to it.

    Use as a context manager; the file appears at ``url`` whole when the block ends.
    ``records`` and ``payload_bytes`` (the pages' bytes, uncompressed) say what it holds;
    ``sha256`` is the digest of the written file.
    """

    def __init__(self, url: str, info: str, info_id: str, date: str):
        self.url = url
        self.records = 0
        self.payload_bytes = 0
        self._info, self._info_id, self._date = info, info_id, date
        self._out = OutputFile(url)
        self._writer: WARCWriter | None = None

    def __enter__(self) -> "WarcFile":
        self._out.__enter__()
        self._writer = WARCWriter(self._out, gzip=True)
        info = self._info.encode("utf-8")
        self._writer.write_record(
            self._writer.create_warc_record(
                "",
                "warcinfo",
                payload=io.BytesIO(info),
                length=len(info),
                warc_headers_dict={
                    "WARC-Record-ID": self._info_id,
                    "WARC-Date": self._date,
                    "WARC-Filename": self.url.rsplit("/", 1)[-1],
                },
            )
        )
        return self

    def __exit__(self, *exc) -> None:
        self._out.__exit__(*exc)

    @property
    def sha256(self) -> str:
        return self._out.sha256

    def add_page(self, url: str, mtime: float, body: bytes, charset: str) -> None:
        """A ``200 OK`` response of ``text/html`` in ``charset``, last modified at ``mtime``."""
        http_headers = StatusAndHeaders(
            "200 OK",
            [
                ("Content-Type", f"text/html; charset={charset}"),
                ("Content-Length", str(len(body))),
                ("Last-Modified", email.utils.formatdate(int(mtime), usegmt=True)),
            ],
            protocol="HTTP/1.1",
        )
        record = self._writer.create_warc_record(
            url,
            "response",
            payload=io.BytesIO(body),
            length=len(body),
            http_headers=http_headers,
            warc_headers_dict={
                "WARC-Record-ID": record_id("response", url, hashlib.sha1(body).hexdigest()),
                "WARC-Date": warc_date(mtime),
            },
        )
        self._writer.write_record(record)
        self.records += 1
        self.payload_bytes += len(body)
