"""The Parquet parts the ingest stage writes for one archive file (simweb.tasks.ingest).

Each part is buffered, written in row groups (memory is bounded by a row group, not by the
file) under a temporary name, and published by rename when the whole file was read. The three
data sets are those of :data:`DATA_SETS` (schemas in simweb.tasks.schemas).
"""
from __future__ import annotations

import uuid
from array import array
from collections import Counter
from dataclasses import dataclass
from itertools import accumulate, chain, repeat

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from simweb.core.aliases import CANONICAL, REFRESH, canonical_target, refresh_target, variant_names
from simweb.core.records import ANCHOR_FIELDS, ParsedPage
from simweb.core.replay import surt
from simweb.core.urls import normal_url_id, url_id
from simweb.tasks import schemas
from simweb.tasks.storage import TMP_PREFIX, filesystem, join

__all__ = ["DATA_SETS", "LINKS_PER_ROW_GROUP", "PAGES_PER_ROW_GROUP", "IngestParts", "PartWriter", "RecordPlace", "arrow_chunks", "arrow_column"]

#: The data sets of an ingest part, in the order they are written, with their schemas.
DATA_SETS = {"pages": schemas.PAGES, "links": schemas.LINKS, "aliases": schemas.ALIASES}
# Pages buffered before a row group is written: bounds memory on multi-GB WARC files.
PAGES_PER_ROW_GROUP = 2_000
# Links buffered before a row group is written, whatever the pages: 2,000 index pages of 15,000
# links each would otherwise hold 30 million links (about 10 GB of Python objects) at once.
LINKS_PER_ROW_GROUP = 100_000


class PartWriter:
    """One Parquet part being written: a temporary file, published by rename when complete."""

    def __init__(self, url: str, schema: pa.Schema):
        self.schema = schema
        self.fs, self.path = filesystem(url)
        parent, name = self.path.rsplit("/", 1)
        self.fs.makedirs(parent, exist_ok=True)
        self.tmp = f"{parent}/{TMP_PREFIX}{uuid.uuid4().hex}-{name}"
        self.rows = 0
        self.columns: dict[str, list] = {f.name: [] for f in schema}
        # Columns buffered as a sequence of values per page, not a value per row: see arrow_chunks.
        self.chunked: frozenset[str] = frozenset()
        self._file = self.fs.open(self.tmp, "wb")
        # Dictionary encoding pays for URL-like columns; on word lists zstd alone gives the
        # same size (they repeat in long runs), and hashing every word costs a third of the write.
        dictionary = [f.name for f in schema if f.type == pa.string()]
        self._writer = pq.ParquetWriter(self._file, schema, compression="zstd", use_dictionary=dictionary)

    def write(self) -> None:
        """Write the buffered columns as a row group."""
        columns = [(arrow_chunks if f.name in self.chunked else arrow_column)(self.columns[f.name], f.type)
                   for f in self.schema]
        for values in self.columns.values():
            values.clear()
        table = pa.Table.from_arrays(columns, schema=self.schema)
        if table.num_rows:
            self._writer.write_table(table)
            self.rows += table.num_rows

    def publish(self) -> None:
        self._writer.close()
        self._file.close()
        self.fs.mv(self.tmp, self.path)

    def discard(self) -> None:
        try:
            self._writer.close()
            self._file.close()
        finally:
            if self.fs.exists(self.tmp):
                self.fs.rm(self.tmp)


@dataclass(frozen=True, slots=True)
class RecordPlace:
    """What a player needs to find a record again (simweb.core.replay), and its media type."""

    offset: int
    length: int
    timestamp: str
    digest: str
    media_type: str


class IngestParts:
    """The pages, links and aliases parts of one WARC file, buffered together and written in row groups."""

    def __init__(self, out_dir: str, part: str):
        self._all: list[PartWriter] = []
        try:
            for data_set, schema in DATA_SETS.items():
                self._all.append(PartWriter(join(out_dir, data_set, f"{part}.parquet"), schema))
        except BaseException:
            self.discard()
            raise
        self.pages, self.links, self.aliases = self._all
        self.links.chunked = frozenset(ANCHOR_FIELDS[1:])  # a page's word offsets, in one piece each
        self.alias_kinds: Counter[str] = Counter()
        self.buffered = 0
        self._ids: dict[str, int] = {}

    def _url_ids(self, urls: tuple[str, ...]) -> list[int]:
        # Link targets repeat (navigation links), and every one needs its id: C-level maps over
        # the memo, hashing only the targets not seen before (normalised already by the parser).
        ids = self._ids
        try:
            return list(map(ids.__getitem__, urls))
        except KeyError:
            pass
        new = set(urls).difference(ids)
        ids.update(zip(new, map(normal_url_id, new)))
        return list(map(ids.__getitem__, urls))

    def add(self, parsed: ParsedPage, status: int, charset: str, source: str, record: RecordPlace,
            alias_skips: Counter) -> None:
        """Add a page, its anchors, and its canonical link, refresh and variant names (simweb.core.aliases)."""
        url = parsed.url
        source_id = url_id(url)
        anchors = parsed.anchors
        target_ids = self._url_ids(anchors.target_url)
        canonical, why_not = canonical_target(url, parsed.canonical)
        aliases = [(url, source_id, canonical, self._url_ids((canonical,))[0], CANONICAL)] if canonical else []
        refresh, refresh_not = refresh_target(url, parsed.refresh)
        if refresh:
            aliases.append((url, source_id, refresh, self._url_ids((refresh,))[0], REFRESH))
        aliases += [(name, url_id(name), url, source_id, kind) for name, kind in variant_names(url)]

        p = self.pages.columns
        p["url"].append(url)
        p["url_id"].append(source_id)
        p["title"].append(parsed.title)
        p["title_words"].append(parsed.title_words)
        p["words"].append(parsed.words)
        p["status"].append(status)
        p["content_type"].append(record.media_type)
        p["charset"].append(charset)
        p["source_file"].append(source)
        p["record_offset"].append(record.offset)
        p["record_length"].append(record.length)
        p["timestamp"].append(record.timestamp)
        p["digest"].append(record.digest)

        if target_ids:
            n = len(target_ids)
            c = self.links.columns
            c["source_url"].extend(repeat(url, n))
            c["source_id"].extend(repeat(source_id, n))
            c["target_id"].extend(target_ids)
            c["target_url"].extend(anchors.target_url)
            for name, column in zip(ANCHOR_FIELDS[1:], anchors.columns()[1:]):
                c[name].append(column)
        for alias, alias_id, target, target_id, kind in aliases:
            self.add_alias(alias, alias_id, target, target_id, kind, status, source, record.offset)
        if why_not is not None:
            alias_skips[why_not] += 1
        if refresh_not is not None:
            alias_skips[refresh_not] += 1

        self.buffered += 1
        if self.buffered >= PAGES_PER_ROW_GROUP or len(self.links.columns["source_id"]) >= LINKS_PER_ROW_GROUP:
            self.flush()

    def add_alias(self, url: str, alias_id: int, target: str, target_id: int, kind: str, status: int, source: str,
                  offset: int, record: RecordPlace | None = None) -> None:
        """Add a row of alias evidence (schemas.ALIASES); ``record`` for a redirect record's own row."""
        self.alias_kinds[kind] += 1
        a = self.aliases.columns
        a["url"].append(url)
        a["url_id"].append(alias_id)
        a["target_url"].append(target)
        a["target_id"].append(target_id)
        a["kind"].append(kind)
        a["status"].append(status)
        a["source_file"].append(source)
        a["record_offset"].append(offset)
        a["record_length"].append(record.length if record else None)
        a["surt"].append(surt(url) if record else None)
        a["timestamp"].append(record.timestamp if record else None)
        a["content_type"].append(record.media_type if record else None)
        a["digest"].append(record.digest if record else None)

    def flush(self) -> None:
        # The pages' SURT keys in one run over the row group: between two pages' parses the
        # steps of a key run cold, at three times the cost of the same steps run back to back.
        pages = self.pages.columns
        pages["surt"].extend(map(surt, pages["url"]))  # empty since the last write, as every column
        for part in self._all:
            part.write()
        self.buffered = 0
        if len(self._ids) > 1 << 20:
            self._ids = {}

    def publish(self) -> None:
        self.flush()
        for part in self._all:
            part.publish()

    def discard(self) -> None:
        errors = []
        for part in self._all:
            try:
                part.discard()
            except Exception as exc:  # noqa: BLE001 — discard the others all the same
                errors.append(exc)
        if errors:
            raise errors[0]


def arrow_chunks(chunks: list, type_: pa.DataType) -> pa.Array:
    """One column from its pieces (sequences of values): the bytes of the parser's int32 arrays
    joined as they are, other pieces value by value."""
    if type_ == pa.int32() and all(type(chunk) is array and chunk.typecode == "i" for chunk in chunks):
        return pa.array(np.frombuffer(b"".join(chunks), np.int32), type_)
    return arrow_column(list(chain.from_iterable(chunks)), type_)


def arrow_column(values: list, type_: pa.DataType) -> pa.Array:
    if type_ == schemas.WORDS:
        # Flattened in C and converted in one call: converting a list of tuples element by
        # element costs an order of magnitude more.
        flat = list(chain.from_iterable(values))
        offsets = np.fromiter(accumulate(map(len, values), initial=0), np.int32, len(values) + 1)
        return pa.ListArray.from_arrays(pa.array(offsets), pa.array(flat, pa.string()))
    if pa.types.is_integer(type_):
        # numpy reads a list of ints five times faster than Arrow does (13 against 70 ns an int),
        # refusing as Arrow does any that does not fit; a column with nulls takes Arrow's way.
        try:
            return pa.array(np.fromiter(values, type_.to_pandas_dtype(), len(values)), type_)
        except TypeError:
            pass
    return pa.array(values, type_)
