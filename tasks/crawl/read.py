"""One part of a crawl folder read with its schema checked (simweb.tasks.schemas): whole
(:func:`read_part`, :func:`read_pages`, :func:`read_links`) or batch by batch from an open file
(:func:`open_part`, :func:`part_batches`, which simweb.tasks.crawl.slices reads slice by slice);
the rows to leave out of it (:func:`without`, :func:`excluded`); and :class:`DamagedPart`, the
error of a part that is not the Parquet file the ingest wrote."""
from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from simweb.tasks import schemas
from simweb.tasks.storage import arrow_threads, filesystem, local_path, read_parquet_file, read_parquet_schema

__all__ = ["EDGE_COLUMNS", "LINK_COLUMNS", "PAGE_COLUMNS", "DamagedPart", "empty_table", "excluded", "keep_all",
           "open_part", "part_batches", "read_links", "read_pages", "read_part", "without"]

#: The PAGES columns a bag needs (content and title fragments).
PAGE_COLUMNS = ["url", "url_id", "title_words", "words"]
#: Every LINKS column: the anchor's offsets and regions as well as its ends.
LINK_COLUMNS = [f.name for f in schemas.LINKS]
#: The LINKS columns of the link graph.
EDGE_COLUMNS = ["source_url", "source_id", "target_url", "target_id"]


def keep_all(url: str) -> bool:
    """The default ``exclude``: no page is left out."""
    return False


def _check_schema(table: pa.Table, expected: pa.Schema, url: str) -> None:
    for name in table.column_names:
        want = expected.field(name).type
        got = table.schema.field(name).type
        if not got.equals(want):
            raise ValueError(
                f"{url}: column {name!r}: expected {want}, found {got}; "
                "this part was not written by simweb's ingest stage — re-run `simweb ingest`"
            )


def read_part(url: str, expected: pa.Schema, columns: Sequence[str]) -> pa.Table:
    """``columns`` of one part, checked against ``expected`` (simweb.tasks.schemas). Raises
    ValueError naming the part, what is missing or mistyped, and the fix."""
    columns = list(columns)
    try:
        schema = read_parquet_schema(url)
    except pa.ArrowInvalid as err:
        raise DamagedPart(url, err) from None
    missing = [c for c in columns if c not in schema.names]
    if missing:
        raise ValueError(
            f"{url}: expected columns {', '.join(missing)} (schema simweb.tasks.schemas), found "
            f"{', '.join(schema.names)}; re-run `simweb ingest` with this version of simweb"
        )
    try:
        table = read_parquet_file(url, columns)
    except pa.ArrowInvalid as err:
        raise DamagedPart(url, err) from None
    _check_schema(table, expected, url)
    return table


class DamagedPart(ValueError):
    """A part of the crawl folder that cannot be read as the Parquet file the ingest wrote."""

    def __init__(self, url: str, err: Exception) -> None:
        reason = " ".join(str(err).split())[:200]
        super().__init__(
            f"{url} is damaged: it cannot be read as Parquet ({reason}); run `simweb verify --repair` on the "
            "index folder, then the build again: it reads that WARC file anew"
        )


def without(table: pa.Table, column: str, ids: np.ndarray) -> tuple[pa.Table, int]:
    """``table`` without the rows whose ``column`` is among ``ids``; and how many they were."""
    drop = pc.is_in(table.column(column), value_set=pa.array(ids, table.schema.field(column).type))
    dropped = pc.sum(drop).as_py() or 0
    return (table.filter(pc.invert(drop)) if dropped else table), dropped


def read_pages(url: str, columns: Sequence[str], skip_ids: np.ndarray | None = None) -> tuple[pa.Table, int]:
    """A pages part without the pages of ``skip_ids``; and how many rows were skipped."""
    if skip_ids is None or not skip_ids.size:
        return read_part(url, schemas.PAGES, columns), 0
    table = read_part(url, schemas.PAGES, list(dict.fromkeys([*columns, "url_id"])))
    table, skipped = without(table, "url_id", skip_ids)
    return table.select(list(columns)), skipped


def read_links(url: str, skip_sources: np.ndarray | None = None,
               columns: Sequence[str] = tuple(LINK_COLUMNS)) -> tuple[pa.Table, int]:
    """A links part without the links read from the pages of ``skip_sources``; and how many were
    skipped (links to an alias are pointed at its document by simweb.tasks.crawl.aliases.redirect_links)."""
    if skip_sources is None or not skip_sources.size:
        return read_part(url, schemas.LINKS, columns), 0
    table = read_part(url, schemas.LINKS, list(dict.fromkeys([*columns, "source_id"])))
    table, skipped = without(table, "source_id", skip_sources)
    return table.select(list(columns)), skipped


def open_part(url: str, expected: pa.Schema, columns: Sequence[str]) -> pq.ParquetFile:
    """An open Parquet part whose schema holds ``columns`` as ``expected`` types them."""
    fs, path = filesystem(url)
    try:
        # A local part is read by Arrow itself (see simweb.tasks.storage.read_parquet_file).
        part = pq.ParquetFile(local_path(url) or fs.open(path, "rb"))
    except pa.ArrowInvalid as err:
        raise DamagedPart(url, err) from None
    schema = part.schema_arrow
    missing = [c for c in columns if c not in schema.names]
    if missing:
        raise ValueError(
            f"{url}: expected columns {', '.join(missing)} (schema simweb.tasks.schemas), found "
            f"{', '.join(schema.names)}; re-run `simweb ingest` with this version of simweb"
        )
    _check_schema(pa.schema([schema.field(c) for c in columns]).empty_table(), expected, url)
    return part


def part_batches(part: pq.ParquetFile, url: str, columns: Sequence[str], rows: int) -> Iterator[pa.Table]:
    """``columns`` of an open part (:func:`open_part`) in tables of at most ``rows`` rows."""
    try:
        for batch in part.iter_batches(batch_size=max(1, rows), columns=list(columns), use_threads=arrow_threads(url)):
            yield pa.Table.from_batches([batch])
    except pa.ArrowInvalid as err:
        raise DamagedPart(url, err) from None


def empty_table(schema: pa.Schema, columns: Sequence[str]) -> pa.Table:
    """A table of no rows of ``columns`` typed as in ``schema``."""
    return pa.table({c: pa.array([], schema.field(c).type) for c in columns})


def excluded(urls: pa.ChunkedArray | pa.Array, exclude: Callable[[str], bool]) -> np.ndarray:
    """True where a URL is to be left out (``exclude`` asked once per distinct URL)."""
    if exclude is keep_all or len(urls) == 0:
        return np.zeros(len(urls), dtype=bool)
    flagged = [u for u in pc.unique(urls).to_pylist() if exclude(u)]
    if not flagged:
        return np.zeros(len(urls), dtype=bool)
    return pc.is_in(urls, value_set=pa.array(flagged, pa.string())).to_numpy(zero_copy_only=False)
