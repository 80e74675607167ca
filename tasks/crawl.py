"""The one reader of a crawl folder: the ingest output every later stage starts from (paper Figure 10).

A crawl folder is a pool of parts, each named by the content digest of the WARC file it was
read from (simweb.tasks.ingest)::

    DIR/pages/part-<h16>.parquet   PAGES, one row per HTML page     (simweb.tasks.schemas)
    DIR/links/part-<h16>.parquet   LINKS, one row per anchor
    DIR/aliases/part-<h16>.parquet ALIASES, the evidence that a URL names another URL's document
    DIR/stats/part-<h16>.json      the file's ingest counts
    DIR/CRAWL.json                 optional: {"format": 1, "parts": ["part-<h16>", ...]}

**Which parts belong to the crawl.** When ``CRAWL.json`` exists, only the parts it lists do
(:func:`write_selection` writes it, atomically): a build names its WARC files, and parts left in
the pool by earlier runs must not leak into its index. Without it every finished part does. A
listed part that is missing is an error naming the part and the fix, never a silent loss.

**Duplicate copies.** The ingest keeps the first record of a URL within one WARC file only. Across
files the copy with the smallest ``(source_file, record_offset)`` is kept; the other copies' pages
and the links read from them (a links part shares its pages part's name) are dropped and counted,
so a page crawled twice gives one content fragment, its anchors once, and its out-links once.
Every reader here applies that rule, so the bags stage, the evaluation, the link graph, the
signatures' titles and in-degrees, the near-duplicate report and the overlap estimate agree on
what a crawl contains.

**Aliases** (simweb.core.aliases, whose docstring holds the rules). The ingest writes the
evidence that a URL names another URL's document (``DIR/aliases/part-<h16>.parquet``: redirect
records, same-origin canonical links, slash and index variant names); the reader resolves it
over the whole crawl, ranked by (source_file, record_offset), into one :class:`AliasMap`. Every
link whose target is an alias is counted for the alias's final target (its ``target_id`` and
``target_url`` replaced); a crawled page whose URL is an alias of another crawled page is
merged into it — dropped with its out-links, as a duplicate copy is. A crawled page whose URL is
an alias of a URL that was not crawled as a page keeps its own document, and so do the aliases
that lead to it. A crawl without aliases parts reads as before.

What it gives: the parts (:func:`crawl_parts`), one part read with its schema checked
(:func:`read_part`, :func:`read_pages`, :func:`read_links`; slice by slice in
:mod:`simweb.tasks.part_slices`: memory bounded by a slice, not by the part), the in-memory
:class:`simweb.core.bags.Corpus` (:func:`load_corpus`), the URLs linked to (:func:`link_targets`),
the link graph with its nodes' URLs (:func:`load_link_graph`), each URL's page once (:func:`unique_pages`), titles and
in-degrees (:func:`page_titles`, :func:`in_degrees`) and the cache identity of the crawl
(:func:`crawl_identity`). ``exclude`` arguments name pages to leave out with their out-links
(the evaluation leaves out a directory's own pages, paper Section 5, footnote 8).
"""
from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from simweb.core.aliases import KINDS, AliasMap, build_alias_map
from simweb.core.bags import Corpus, LinkColumns, PageColumns, WordLists
from simweb.core.linkgraph import LinkGraph
from simweb.tasks import schemas
from simweb.tasks.contexts import source_rows
from simweb.tasks.stagecache import file_identities, read_manifest
from simweb.tasks.storage import (arrow_threads, filesystem, join, local_path, parts, read_parquet_file,
                                  read_parquet_schema, write_bytes_atomic)

try:
    from simweb.core._gather import first_links as _c_first_links
except ImportError:  # pragma: no cover - depends on the build
    _c_first_links = None

__all__ = [
    "LINK_COLUMNS",
    "PAGE_COLUMNS",
    "SELECTION_FILE",
    "AliasMap",
    "CrawlGraph",
    "CrawlParts",
    "DamagedPart",
    "DuplicateCopies",
    "add_to_selection",
    "alias_report",
    "crawl_aliases",
    "corpus_from_tables",
    "count_page_rows",
    "count_part_rows",
    "crawl_identity",
    "crawl_of",
    "crawl_parts",
    "duplicate_copies",
    "file_stem",
    "flat_lists",
    "in_degrees",
    "link_targets",
    "load_corpus",
    "load_link_graph",
    "page_titles",
    "pages_of",
    "part_files",
    "part_of",
    "read_links",
    "read_pages",
    "read_part",
    "read_selection",
    "redirect_links",
    "unique_pages",
    "write_selection",
]

SELECTION_FILE = "CRAWL.json"
SELECTION_FORMAT = 1
_PART_NAME = re.compile(r"part-[0-9a-f]{16}")

#: The PAGES columns a bag needs (content and title fragments).
PAGE_COLUMNS = ["url", "url_id", "title_words", "words"]
#: Every LINKS column: the anchor's offsets and regions as well as its ends.
LINK_COLUMNS = [f.name for f in schemas.LINKS]
#: The LINKS columns of the link graph.
EDGE_COLUMNS = ["source_url", "source_id", "target_url", "target_id"]


def _keep_all(url: str) -> bool:
    """The default ``exclude``: no page is left out."""
    return False


# ---------------------------------------------------------------------------------------------
# Which parts belong to the crawl


def write_selection(crawl_dir: str, names: Iterable[str]) -> str:
    """Name the parts (``part-<h16>``) that make up the crawl in ``crawl_dir``: ``CRAWL.json``,
    written atomically. Every reader of the folder then reads those parts only."""
    names = sorted(set(names))
    bad = [n for n in names if not isinstance(n, str) or not _PART_NAME.fullmatch(n)]
    if bad:
        raise ValueError(f"expected part names of the form part-<16 hex digits> (as the ingest writes them), "
                         f"got {', '.join(map(repr, bad[:3]))}")
    data = {"format": SELECTION_FORMAT, "parts": names}
    return write_bytes_atomic((json.dumps(data, indent=1) + "\n").encode(), join(crawl_dir, SELECTION_FILE))


def left_out_of_selection(crawl_dir: str, names: Iterable[str]) -> list[tuple[str, int]]:
    """The parts the crawl's selection names now and ``names`` does not — the files an earlier
    build read and this one leaves out — as (the file they were read from, pages), from
    their ingest stats (("part-<h16>", 0) where those are gone)."""
    before = read_selection(crawl_dir) or ()
    kept = set(names)
    out = []
    for part in before:
        if part in kept:
            continue
        source, pages = part, 0
        try:
            fs, path = filesystem(join(crawl_dir, "stats", f"{part}.json"))
            with fs.open(path, "rb") as f:
                saved = json.loads(f.read())
            source = str(saved.get("source") or part)
            pages = int(saved.get("stats", {}).get("pages_written", 0))  # written when its file was read
        except (OSError, ValueError, TypeError, AttributeError):
            pass
        out.append((source, pages))
    return out


def add_to_selection(crawl_dir: str, names: Iterable[str]) -> None:
    """Add parts to the crawl's selection; a folder without one holds every part already."""
    selection = read_selection(crawl_dir)
    if selection is not None:
        write_selection(crawl_dir, [*selection, *names])


def read_selection(crawl_dir: str) -> tuple[str, ...] | None:
    """The parts ``CRAWL.json`` names, sorted; None when the folder has no such file (then every
    finished part belongs to the crawl). Raises ValueError when the file is not one we wrote."""
    path = join(crawl_dir, SELECTION_FILE)
    fs, p = filesystem(path)
    try:
        with fs.open(p, "rb") as f:
            raw = f.read()
    except FileNotFoundError:
        return None
    try:
        data = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError):
        data = None
    names = data.get("parts") if isinstance(data, dict) and data.get("format") == SELECTION_FORMAT else None
    if not isinstance(names, list) or not all(isinstance(n, str) and _PART_NAME.fullmatch(n) for n in names):
        raise ValueError(f"{path}: expected {{\"format\": {SELECTION_FORMAT}, \"parts\": [\"part-<h16>\", ...]}}, "
                         "found something else; delete it to read every part of the folder, or re-run the build")
    return tuple(sorted(set(names)))


@dataclass(frozen=True, slots=True)
class CrawlParts:
    """The Parquet parts of a crawl's PAGES, LINKS and ALIASES data sets, sorted by name
    (``aliases`` may be empty: a crawl ingested before they were written has none)."""

    crawl_dir: str
    pages: tuple[str, ...]
    links: tuple[str, ...]
    selected: bool  # named by CRAWL.json rather than found in the folders
    aliases: tuple[str, ...] = ()

    @property
    def files(self) -> tuple[str, ...]:
        return self.pages + self.links + self.aliases


def crawl_parts(crawl_dir: str) -> CrawlParts:
    """The parts that belong to the crawl in ``crawl_dir`` (see the module docstring).

    Raises FileNotFoundError when a part ``CRAWL.json`` names is missing, or when the folder
    holds no part at all."""
    selection = read_selection(crawl_dir)
    aliases = parts(join(crawl_dir, "aliases"))
    if selection is None:
        pages, links = parts(join(crawl_dir, "pages")), parts(join(crawl_dir, "links"))
    else:
        chosen = set(selection)
        aliases = [url for url in aliases if part_of(url) in chosen]
        pages = [url for url in parts(join(crawl_dir, "pages")) if part_of(url) in chosen]
        links = [url for url in parts(join(crawl_dir, "links")) if part_of(url) in chosen]
        for name in selection:
            for data_set, found in (("pages", pages), ("links", links)):
                if not any(part_of(url) == name for url in found):
                    url = join(crawl_dir, data_set, f"{name}.parquet")
                    raise FileNotFoundError(
                        f"{join(crawl_dir, SELECTION_FILE)} names {name}, but {url} is missing; "
                        "re-run the build (or `simweb ingest` of the crawl's WARC files) to write it again"
                    )
    if not pages and not links:
        raise FileNotFoundError(
            f"no ingested crawl at {crawl_dir}: expected {join(crawl_dir, 'pages')}/part-*.parquet and "
            f"{join(crawl_dir, 'links')}/part-*.parquet as written by `simweb ingest WARC... --out DIR`; "
            "pass that DIR"
        )
    return CrawlParts(crawl_dir, tuple(pages), tuple(links), selection is not None, tuple(aliases))


def part_of(url: str) -> str:
    """The name (``part-<h16>``) of the part a pages, links or aliases file belongs to (the
    file's, or that of the file it is a piece of: ``part-<h16>.<k>of<n>``)."""
    return file_stem(url).split(".", 1)[0]


def part_files(crawl_dir: str, part: str, data_set: str) -> list[str]:
    """The files of ``part`` in a data set folder of ``crawl_dir``: the file's whole reading
    (``<part>.parquet``, which may be missing) and every piece of it found there
    (``<part>.<k>of<n>.parquet``, see simweb.tasks.ingest)."""
    fs, folder = filesystem(join(crawl_dir, data_set))
    pieces = fs.glob(f"{folder}/{part}.*of*.parquet") if fs.exists(folder) else []
    return [join(crawl_dir, data_set, f"{name}.parquet") for name in [part, *sorted(map(file_stem, pieces))]]


def file_stem(url: str) -> str:
    """The name of a pages, links or aliases file without its ``.parquet``: its part's name, or
    for a piece of a file (simweb.tasks.ingest) ``part-<h16>.<k>of<n>``; the same in the three
    data sets."""
    return url.rstrip("/").rsplit("/", 1)[-1].removesuffix(".parquet")


def crawl_of(data_set: str) -> str:
    """The crawl folder holding a ``pages`` or ``links`` data set folder: a stage given the data
    set reads it as part of its crawl (the selection and the duplicate-copy rule apply)."""
    return data_set.rstrip("/").rsplit("/", 1)[0] if "/" in data_set.rstrip("/") else "."


def crawl_identity(crawl_dir: str) -> dict[str, Any]:
    """What a stage reading the crawl is keyed by: the content of the parts that belong to it.

    A crawl folder that is itself a cached stage output (the dedup stage's) is named by its
    stage key, unless a selection narrows it."""
    found = crawl_parts(crawl_dir)
    manifest = None if found.selected else read_manifest(crawl_dir)
    if manifest and manifest.get("stage") and manifest.get("key"):
        return {"crawl": f"{manifest['stage']}:{manifest['key']}"}
    identity = {"pages": file_identities(found.pages), "links": file_identities(found.links)}
    if found.aliases:
        identity["aliases"] = file_identities(found.aliases)
    return identity


def count_page_rows(crawl_dir: str) -> int:
    """Page rows of the crawl's parts, duplicate copies included (the measure of its growth:
    a re-crawled URL counts again), read from the Parquet footers only."""
    return count_part_rows(crawl_parts(crawl_dir).pages)


def count_part_rows(urls: Iterable[str]) -> int:
    """Rows of the parts ``urls``, read from their Parquet footers only."""
    total = 0
    for url in urls:
        fs, path = filesystem(url)
        with fs.open(path, "rb") as f:
            try:
                total += pq.ParquetFile(f).metadata.num_rows
            except pa.ArrowInvalid as err:
                raise DamagedPart(url, err) from None
    return int(total)


# ---------------------------------------------------------------------------------------------
# One part


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


@dataclass(frozen=True, slots=True, eq=False)
class DuplicateCopies:
    """Per part file (:func:`file_stem`), the URL ids whose kept copy lies in another; the ids of the pages
    merged into another crawled page as its aliases (left out of every part); and the crawl's
    resolved aliases (see the module docstring)."""

    by_part: dict[str, np.ndarray]
    merged: np.ndarray = field(default_factory=lambda: np.zeros(0, np.uint64))
    aliases: AliasMap = field(default_factory=AliasMap)

    def of(self, url: str) -> np.ndarray:
        """The URL ids a pages part, or the source ids a links part, loses to other parts or pages."""
        own = self.by_part.get(file_stem(url))
        if own is None:
            return self.merged
        return np.concatenate([own, self.merged]) if self.merged.size else own


def duplicate_copies(page_parts: Sequence[str], alias_parts: Sequence[str] = ()) -> DuplicateCopies:
    """Which copies of a URL crawled in several parts are dropped: all but the first by
    (source_file, record_offset), then by part. Repeats within the winning part are left to the
    Corpus (first row wins); the ingest writes none. With ``alias_parts`` (:attr:`CrawlParts.aliases`)
    the crawl's aliases are resolved too, and the pages merged by them are dropped.

    Columnar and light: the URL ids of every part (8 bytes a page) find the URLs crawled more
    than once, and only those rows' source files and offsets are read and compared. (Before: a
    pandas frame of url_id, source_file and offset of every page, ~150 bytes a page.)
    """
    ids, part = [], []
    for i, url in enumerate(page_parts):
        _parquet_file(url, schemas.PAGES, ["url_id", "source_file", "record_offset"])  # the footer's schema
        column = read_part(url, schemas.PAGES, ["url_id"]).column("url_id").to_numpy()
        ids.append(column.astype(np.uint64))
        part.append(np.full(column.size, i, dtype=np.int32))
    if not ids:
        return DuplicateCopies({})
    every = np.concatenate(ids)
    aliases, merged = crawl_aliases(alias_parts, every)
    order = np.argsort(every, kind="stable")
    same = every[order][1:] == every[order][:-1]
    repeated = np.zeros(every.size, dtype=bool)
    repeated[1:] |= same
    repeated[:-1] |= same
    if not repeated.any():
        return DuplicateCopies({}, merged, aliases)
    rows = np.sort(order[repeated])  # rows of the URLs crawled more than once, in part order
    starts = np.concatenate(([0], np.cumsum([a.size for a in ids])))
    row_part = np.concatenate(part)[rows]
    files, offsets = [], []
    for i in np.unique(row_part).tolist():
        local = rows[row_part == i] - starts[i]
        table = read_part(page_parts[i], schemas.PAGES, ["source_file", "record_offset"]).take(pa.array(local))
        files.append(table.column("source_file"))
        offsets.append(table.column("record_offset").to_numpy())
    file_rank = pc.rank(pa.chunked_array(files, pa.string()), sort_keys="ascending", tiebreaker="dense").to_numpy()
    offset = np.concatenate(offsets)
    url = every[rows]
    best = np.lexsort((row_part, offset, file_rank, url))
    first = np.concatenate(([True], url[best][1:] != url[best][:-1]))
    losers = best[~first]
    loser_part, loser_url = row_part[losers], url[losers]
    return DuplicateCopies({file_stem(page_parts[int(i)]): np.unique(loser_url[loser_part == i])
                            for i in np.unique(loser_part).tolist()}, merged, aliases)


_ALIAS_COLUMNS = ["url_id", "target_id", "target_url", "kind", "source_file", "record_offset"]


def crawl_aliases(alias_parts: Sequence[str], page_ids: np.ndarray) -> tuple[AliasMap, np.ndarray]:
    """The crawl's resolved aliases (simweb.core.aliases.build_alias_map over the evidence of
    ``alias_parts``, ranked by source_file then record_offset) and the ids of the crawled pages
    merged into another crawled page. An alias that is a crawled page and leads to no crawled
    page is taken out of the evidence, so that it keeps its own document (repeated until none
    is left: taking one out can shorten a chain that passed through it)."""
    tables = [read_part(url, schemas.ALIASES, _ALIAS_COLUMNS) for url in alias_parts]
    evidence = pa.concat_tables(tables).combine_chunks() if tables else None
    if evidence is None or not evidence.num_rows:
        return AliasMap(), np.zeros(0, np.uint64)
    kinds = pc.index_in(evidence.column("kind"), value_set=pa.array(KINDS)).to_numpy(zero_copy_only=False)
    if np.isnan(kinds.astype(float)).any():
        raise ValueError(f"{alias_parts[0]}…: column 'kind': expected one of {', '.join(KINDS)}, found "
                         f"{set(evidence.column('kind').to_pylist()) - set(KINDS)}; re-run `simweb ingest`")
    kinds = kinds.astype(np.int8)
    _, files = np.unique(evidence.column("source_file").to_numpy(zero_copy_only=False), return_inverse=True)
    order = np.lexsort((evidence.column("record_offset").to_numpy(), files))
    rank = np.empty(order.size, np.int64)
    rank[order] = np.arange(order.size)
    alias_ids = evidence.column("url_id").to_numpy()
    target_ids = evidence.column("target_id").to_numpy()
    target_urls = evidence.column("target_url").to_pylist()
    page_ids = np.unique(np.asarray(page_ids, np.uint64))
    kept_apart = np.zeros(0, np.uint64)
    while True:
        rows = np.flatnonzero(~np.isin(alias_ids, kept_apart))
        aliases = build_alias_map(alias_ids[rows], target_ids[rows], [target_urls[i] for i in rows.tolist()],
                                  kinds[rows], rank[rows], page_ids)
        is_page = np.isin(aliases.ids, page_ids)
        to_page = np.isin(aliases.targets, page_ids)
        more = aliases.ids[is_page & ~to_page]
        if not more.size:
            break
        kept_apart = np.union1d(kept_apart, more)
    merged = aliases.ids[is_page & to_page]
    aliases.counts.update(pages_merged=int(merged.size), aliased_pages_kept=int(kept_apart.size))
    return aliases, merged


def redirect_links(table: pa.Table, aliases: AliasMap) -> tuple[pa.Table, int]:
    """``table`` (LINKS columns) with each link to an alias pointing at the alias's final target
    (``target_id``, and ``target_url`` when read); and how many links were redirected.

    The aliases are looked up in a hash table of their ids (Arrow's ``index_in``), the same rows
    as AliasMap.positions finds by binary search, five times as fast on a links part of millions
    of links (0.065 s against 0.30 s for 3.7 million links and 6,578 aliases)."""
    if not len(aliases) or not table.num_rows or "target_id" not in table.column_names:
        return table, 0
    ids = table.column("target_id")
    at = pc.index_in(ids, value_set=pa.array(aliases.ids, pa.uint64()))
    n = len(at) - at.null_count
    if not n:
        return table, 0
    hit, safe = pc.is_valid(at), pc.fill_null(at, 0)
    where = table.schema.get_field_index("target_id")
    table = table.set_column(where, table.schema.field(where),
                             pc.if_else(hit, pa.array(aliases.targets, pa.uint64()).take(safe), ids))
    if "target_url" in table.column_names:
        where = table.schema.get_field_index("target_url")
        urls = pa.array(aliases.target_urls, pa.string()).take(safe)
        table = table.set_column(where, table.schema.field(where), pc.if_else(hit, urls, table.column("target_url")))
    return table, n


def alias_report(crawl_dir: str) -> dict[str, int]:
    """How the crawl's aliases were resolved (the counts of :func:`crawl_aliases`) and how many of
    its kept links were redirected to an alias's document (``links_redirected_to_aliases``)."""
    found = crawl_parts(crawl_dir)
    copies = duplicate_copies(found.pages, found.aliases)
    redirected = 0
    if len(copies.aliases):
        for url in found.links:
            table, _ = read_links(url, copies.of(url), ["source_id", "target_id"])
            redirected += redirect_links(table, copies.aliases)[1]
    return {**copies.aliases.counts, "links_redirected_to_aliases": redirected}


def _without(table: pa.Table, column: str, ids: np.ndarray) -> tuple[pa.Table, int]:
    """``table`` without the rows whose ``column`` is among ``ids``; and how many they were."""
    drop = pc.is_in(table.column(column), value_set=pa.array(ids, table.schema.field(column).type))
    dropped = pc.sum(drop).as_py() or 0
    return (table.filter(pc.invert(drop)) if dropped else table), dropped


def read_pages(url: str, columns: Sequence[str], skip_ids: np.ndarray | None = None) -> tuple[pa.Table, int]:
    """A pages part without the pages of ``skip_ids``; and how many rows were skipped."""
    if skip_ids is None or not skip_ids.size:
        return read_part(url, schemas.PAGES, columns), 0
    table = read_part(url, schemas.PAGES, list(dict.fromkeys([*columns, "url_id"])))
    table, skipped = _without(table, "url_id", skip_ids)
    return table.select(list(columns)), skipped


def read_links(url: str, skip_sources: np.ndarray | None = None, columns: Sequence[str] = tuple(LINK_COLUMNS),
               *, aliases: AliasMap | None = None) -> tuple[pa.Table, int]:
    """A links part without the links read from the pages of ``skip_sources``; and how many were
    skipped. With ``aliases`` links to an alias point at its document (:func:`redirect_links`)."""
    if skip_sources is None or not skip_sources.size:
        table, skipped = read_part(url, schemas.LINKS, columns), 0
    else:
        table = read_part(url, schemas.LINKS, list(dict.fromkeys([*columns, "source_id"])))
        table, skipped = _without(table, "source_id", skip_sources)
        table = table.select(list(columns))
    if aliases is not None:
        table = redirect_links(table, aliases)[0]
    return table, skipped


def _parquet_file(url: str, expected: pa.Schema, columns: Sequence[str]) -> pq.ParquetFile:
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


def _batches(part: pq.ParquetFile, url: str, columns: Sequence[str], rows: int) -> Iterator[pa.Table]:
    try:
        for batch in part.iter_batches(batch_size=max(1, rows), columns=list(columns), use_threads=arrow_threads(url)):
            yield pa.Table.from_batches([batch])
    except pa.ArrowInvalid as err:
        raise DamagedPart(url, err) from None


# ---------------------------------------------------------------------------------------------
# The whole crawl


@dataclass(frozen=True, slots=True, eq=False)
class _Tables:
    pages: pa.Table | None
    links: pa.Table | None
    counts: dict[str, int]


def _empty(schema: pa.Schema, columns: Sequence[str]) -> pa.Table:
    return pa.table({c: pa.array([], schema.field(c).type) for c in columns})


def _excluded(urls: pa.ChunkedArray | pa.Array, exclude: Callable[[str], bool]) -> np.ndarray:
    """True where a URL is to be left out (``exclude`` asked once per distinct URL)."""
    if exclude is _keep_all or len(urls) == 0:
        return np.zeros(len(urls), dtype=bool)
    flagged = [u for u in pc.unique(urls).to_pylist() if exclude(u)]
    if not flagged:
        return np.zeros(len(urls), dtype=bool)
    return pc.is_in(urls, value_set=pa.array(flagged, pa.string())).to_numpy(zero_copy_only=False)


def _read_crawl(crawl_dir: str, page_columns: Sequence[str] | None, link_columns: Sequence[str] | None, *,
                exclude: Callable[[str], bool] = _keep_all) -> _Tables:
    """The crawl's pages and links (None: that data set is not read) without duplicate copies,
    nor the pages ``exclude`` names and their out-links; with counts of what was read and left out."""
    found = crawl_parts(crawl_dir)
    copies = duplicate_copies(found.pages, found.aliases)
    counts = dict.fromkeys(("pages", "duplicate_copies", "excluded_pages", "links", "links_of_duplicate_copies",
                            "links_from_excluded_pages"), 0)
    if len(copies.aliases):
        counts["links_redirected_to_aliases"] = 0
    pages = links = None
    if page_columns is not None:
        columns = list(dict.fromkeys([*page_columns, "url"]))
        tables = []
        for url in found.pages:
            table, skipped = read_pages(url, columns, copies.of(url))
            counts["pages"] += table.num_rows + skipped
            counts["duplicate_copies"] += skipped
            tables.append(table)
        pages = pa.concat_tables(tables).combine_chunks() if tables else _empty(schemas.PAGES, columns)
        dropped = _excluded(pages.column("url"), exclude)
        counts["excluded_pages"] = int(dropped.sum())
        pages = pages.filter(pa.array(~dropped)).select(list(page_columns))
    if link_columns is not None:
        columns = list(dict.fromkeys([*link_columns, "source_url", "source_id"]))
        tables = []
        for url in found.links:
            table, skipped = read_links(url, copies.of(url), columns)
            table, redirected = redirect_links(table, copies.aliases)
            if redirected:
                counts["links_redirected_to_aliases"] += redirected
            counts["links"] += table.num_rows + skipped
            counts["links_of_duplicate_copies"] += skipped
            tables.append(table)
        links = pa.concat_tables(tables).combine_chunks() if tables else _empty(schemas.LINKS, columns)
        dropped = _excluded(links.column("source_url"), exclude)
        counts["links_from_excluded_pages"] = int(dropped.sum())
        links = links.filter(pa.array(~dropped))
        links = links.select(list(link_columns))
    return _Tables(pages, links, counts)


def flat_lists(column: pa.ChunkedArray | pa.Array) -> tuple[pa.Array, np.ndarray]:
    """A list<string> column as (its values, their offsets from 0)."""
    array = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    if len(array) == 0:
        return pa.array([], pa.string()), np.zeros(1, dtype=np.int64)
    lengths = pc.fill_null(pc.list_value_length(array), 0).to_numpy(zero_copy_only=False).astype(np.int64)
    offsets = np.zeros(len(array) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    return pc.list_flatten(array).cast(pa.string()), offsets


class _Strings(Sequence[str]):
    """An Arrow string column as a sequence of str, converted item by item when read (a corpus
    reads the URLs of its bags, not those of its every link)."""

    def __init__(self, column: pa.ChunkedArray | pa.Array) -> None:
        self._column = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column

    def __len__(self) -> int:
        return len(self._column)

    def __getitem__(self, i):  # type: ignore[override]
        if isinstance(i, slice):
            return self._column[i].to_pylist()
        return self._column[i].as_py()

    def __iter__(self) -> Iterator[str]:
        return iter(self._column.to_pylist())


def corpus_from_tables(pages: pa.Table | None, links: pa.Table | None, sources: pa.Table | None = None,
                       where: str = "links") -> Corpus:
    """A :class:`Corpus` of PAGES and LINKS tables (either may be None); words interned by Arrow
    in order of first appearance. Pages without a ``words`` column count as pages of no words
    (a strategy without contents reads titles only).

    The links' anchors and contexts are offsets into the words of their source pages:
    ``sources`` (url_id, words; default ``pages``) must hold every link's source page, or a
    ValueError naming ``where`` says the parts do not belong together. With neither (a strategy
    without anchor windows reads no words), every anchor and context is empty.
    """
    if sources is None and pages is not None and "words" in pages.column_names and links is not None:
        sources = pages
    pages = pages if pages is not None else _empty(schemas.PAGES, PAGE_COLUMNS)
    links = links if links is not None else _empty(schemas.LINKS, LINK_COLUMNS)
    flats = [flat_lists(pages.column(c) if c in pages.column_names else pa.array([[]] * pages.num_rows, schemas.WORDS))
             for c in ("title_words", "words")]
    if sources is not None and sources is not pages:
        flats.append(flat_lists(sources.column("words")))
    encoded = pc.dictionary_encode(pa.concat_arrays([values for values, _ in flats]))
    codes = encoded.indices.to_numpy(zero_copy_only=False).astype(np.int64)
    lists, start = [], 0
    for values, offsets in flats:
        lists.append(WordLists(codes[start:start + len(values)], offsets))
        start += len(values)

    def ints(table: pa.Table, name: str, dtype) -> np.ndarray:
        return table.column(name).to_numpy().astype(dtype)

    page_columns = PageColumns(
        url=_Strings(pages.column("url")), url_id=ints(pages, "url_id", np.uint64),
        title_words=lists[0], words=lists[1],
    )
    n = links.num_rows
    if sources is None:
        texts, text = WordLists(np.zeros(0, np.int64), np.zeros(2, np.int64)), np.zeros(n, np.int64)
        offsets = [np.zeros(n, np.int64)] * 4
    else:
        texts = lists[-1]
        text = source_rows(links, sources.column("url_id"), texts.lengths, where)
        offsets = [ints(links, name, np.int64) for name in ("anchor_start", "anchor_end", "context_start", "context_end")]
    link_columns = LinkColumns(
        source_url=_Strings(links.column("source_url")), source_id=ints(links, "source_id", np.uint64),
        target_url=_Strings(links.column("target_url")), target_id=ints(links, "target_id", np.uint64),
        texts=texts, text=text, anchor_start=offsets[0], anchor_end=offsets[1], context_start=offsets[2],
        context_end=offsets[3],
        syntactic_left=ints(links, "syntactic_left", np.int64), syntactic_right=ints(links, "syntactic_right", np.int64),
        topical_left=ints(links, "topical_left", np.int64), topical_right=ints(links, "topical_right", np.int64),
    )
    return Corpus(encoded.dictionary.to_pylist(), page_columns, link_columns)


def load_corpus(crawl_dir: str, exclude: Callable[[str], bool] = _keep_all) -> Corpus:
    """The whole crawl in memory as a :class:`Corpus`, for sweeping strategies (Section 5):
    duplicate copies dropped, and the pages ``exclude`` names with their out-links."""
    tables = _read_crawl(crawl_dir, PAGE_COLUMNS, LINK_COLUMNS, exclude=exclude)
    return corpus_from_tables(tables.pages, tables.links, where=crawl_dir)


def link_targets(crawl_dir: str, exclude: Callable[[str], bool] = _keep_all) -> tuple[frozenset[str], dict[str, int]]:
    """The URLs some page of the crawl links to (self-links aside; without the out-links of the
    pages ``exclude`` names), and the counts of what was read and left out (``linked_urls``
    among them). Part by part: memory holds one part's links and the distinct targets, not the
    crawl's links."""
    found = crawl_parts(crawl_dir)
    copies = duplicate_copies(found.pages)
    counts = dict.fromkeys(("pages", "duplicate_copies", "excluded_pages", "links", "links_of_duplicate_copies",
                            "links_from_excluded_pages"), 0)
    for url in found.pages:
        table, skipped = read_pages(url, ["url"], copies.of(url))
        counts["pages"] += table.num_rows + skipped
        counts["duplicate_copies"] += skipped
        counts["excluded_pages"] += int(_excluded(table.column("url"), exclude).sum())
    targets = pa.array([], pa.string())
    for url in found.links:
        links, skipped = read_links(url, copies.of(url), EDGE_COLUMNS)
        counts["links"] += links.num_rows + skipped
        counts["links_of_duplicate_copies"] += skipped
        dropped = _excluded(links.column("source_url"), exclude)
        counts["links_from_excluded_pages"] += int(dropped.sum())
        keep = pc.and_(pa.array(~dropped), pc.not_equal(links.column("source_id"), links.column("target_id")))
        targets = pc.unique(pa.chunked_array([targets, *links.column("target_url").filter(keep).chunks], pa.string()))
    linked = frozenset(targets.to_pylist())
    return linked, {**counts, "linked_urls": len(linked)}


@dataclass(frozen=True, slots=True, eq=False)
class CrawlGraph:
    """A crawl's link graph (ENS Section 3.1), the URL of each of its nodes, and the counts of
    the links read, left out and merged."""

    graph: LinkGraph
    urls: dict[int, str]
    counts: dict[str, int]


def load_link_graph(crawl_dir: str, exclude: Callable[[str], bool] = _keep_all) -> CrawlGraph:
    """The graph of the crawl's links: every page that links or is linked to is a node; self-links
    and repeated links are counted out by ``LinkGraph.from_edges``; duplicate copies' links and
    the out-links of the pages ``exclude`` names are left out."""
    tables = _read_crawl(crawl_dir, None, EDGE_COLUMNS, exclude=exclude)
    links = tables.links
    graph = LinkGraph.from_edges(links.column("source_id").to_numpy(), links.column("target_id").to_numpy())
    urls: dict[int, str] = {}
    for ids, names in ((links.column("source_id"), links.column("source_url")),
                       (links.column("target_id"), links.column("target_url"))):
        named = pa.table({"id": ids, "url": names}).group_by("id").aggregate([("url", "min")])
        urls.update(zip(named.column("id").to_pylist(), named.column("url_min").to_pylist()))
    counts = {k: v for k, v in tables.counts.items() if k.startswith("links")}
    counts.update(self_links=graph.stats.self_loops, repeated_links=graph.stats.duplicate_edges,
                  nodes=graph.n_nodes, edges=graph.n_edges)
    return CrawlGraph(graph, urls, counts)


def unique_pages(crawl_dir: str, columns: Sequence[str] = tuple(PAGE_COLUMNS)) -> tuple[pa.Table, int]:
    """``columns`` of each URL's page, once (its kept copy; the first row of a repeat within a
    part), in part order; and how many page rows were left out as copies."""
    tables = _read_crawl(crawl_dir, list(dict.fromkeys([*columns, "url_id"])), None)
    pages = tables.pages
    _, first = np.unique(pages.column("url_id").to_numpy(), return_index=True)
    kept = pages.take(pa.array(np.sort(first))).select(list(columns))
    return kept, tables.counts["pages"] - kept.num_rows


def _wanted(url_ids: Iterable[int] | np.ndarray | None) -> pa.Array | None:
    return None if url_ids is None else pa.array(np.unique(np.asarray(url_ids, dtype=np.uint64)), pa.uint64())


def _iter_parts(crawl_dir: str, data_set: str, columns: Sequence[str], key: str,
                url_ids: Iterable[int] | np.ndarray | None, copies: DuplicateCopies | None = None
                ) -> Iterator[pa.Table]:
    """Each part of ``data_set`` without duplicate copies (``copies``: the crawl's, computed
    when None), its rows with ``key`` among ``url_ids``."""
    found = crawl_parts(crawl_dir)
    if copies is None:
        copies = duplicate_copies(found.pages, found.aliases)
    wanted = _wanted(url_ids)
    for url in (found.pages if data_set == "pages" else found.links):
        if data_set == "pages":
            table, _ = read_pages(url, columns, copies.of(url))
        else:
            table, _ = read_links(url, copies.of(url), columns, aliases=copies.aliases)
        if wanted is not None:
            table = table.filter(pc.is_in(table.column(key), value_set=wanted))
        yield table


def pages_of(crawl_dir: str, url_ids: Iterable[int] | np.ndarray, columns: Sequence[str]) -> pa.Table:
    """``columns`` of the pages of ``url_ids`` the crawl holds, each once, part by part."""
    columns = list(dict.fromkeys(["url_id", *columns]))
    tables = list(_iter_parts(crawl_dir, "pages", columns, "url_id", url_ids))
    pages = pa.concat_tables(tables) if tables else _empty(schemas.PAGES, columns)
    _, first = np.unique(pages.column("url_id").to_numpy(), return_index=True)
    return pages.take(pa.array(np.sort(first)))


def page_titles(crawl_dir: str, url_ids: Iterable[int] | np.ndarray | None = None, *,
                copies: DuplicateCopies | None = None) -> pa.Table:
    """(url_id, title) of the crawl's pages (those of ``url_ids`` when given): the index's titles.
    ``copies``: the crawl's :func:`duplicate_copies`, when the caller has them already."""
    tables = list(_iter_parts(crawl_dir, "pages", ["url_id", "title"], "url_id", url_ids, copies))
    pages = pa.concat_tables(tables) if tables else _empty(schemas.PAGES, ["url_id", "title"])
    first = pages.group_by("url_id", use_threads=False).aggregate([("title", "first")])
    return pa.table({"url_id": first.column("url_id"), "title": first.column("title_first")})


def in_degrees(crawl_dir: str, url_ids: Iterable[int] | np.ndarray | None = None, *,
               copies: DuplicateCopies | None = None) -> pa.Table:
    """(url_id, in_degree): the number of distinct other pages linking to each URL (to those of
    ``url_ids`` when given), the in-degree the index filters I by (Section 7.1).

    Part by part: a page's links all lie in the part of its kept copy, so the (target, source)
    pairs of two parts never coincide and each part's counts add up. Memory holds one links
    part's ids and a count per linked URL, not the crawl's links. ``copies`` as for
    :func:`page_titles`."""
    total = pa.table({"url_id": pa.array([], pa.uint64()), "in_degree": pa.array([], pa.int64())})
    pending = []
    for links in _iter_parts(crawl_dir, "links", ["source_id", "target_id"], "target_id", url_ids, copies):
        pending.append(link_counts(links))
        if len(pending) >= 8:
            total, pending = _add_counts([total, *pending], "url_id", "in_degree"), []
    total = _add_counts([total, *pending], "url_id", "in_degree")
    return pa.table({"url_id": total.column("url_id"), "in_degree": pc.cast(total.column("in_degree"), pa.int32())})


def link_counts(links: pa.Table) -> pa.Table:
    """(url_id, in_degree) of one part's links (``source_id``, ``target_id``): per target, the
    distinct sources other than itself linking to it.

    Where a part holds each page's links next to each other (as the ingest writes them), the
    first link of each source to each target is marked in one pass of C over the links
    (simweb.core._gather.first_links) and the marked targets counted; otherwise, or without the
    extension, the (target, source) pairs are grouped by Arrow — the same counts (tested). The
    100,000-page crawl's 13.7 million links: 15–22 ms of C a part where the group-by took
    ~0.4 s a million links (its in-degrees, read and counted, in 0.85 s against 2.9–3.4 s)."""
    sources = links.column("source_id").to_numpy()
    targets = links.column("target_id").to_numpy()
    first = np.empty(sources.size, dtype=np.uint8)
    if _c_first_links is not None and _c_first_links(np.ascontiguousarray(sources, dtype=np.uint64),
                                                     np.ascontiguousarray(targets, dtype=np.uint64), first) >= 0:
        counts = pc.value_counts(pa.array(targets[first.view(bool)], pa.uint64()))
        return pa.table({"url_id": counts.field("values"), "in_degree": counts.field("counts")})
    return _link_counts_grouped(links)


def _link_counts_grouped(links: pa.Table) -> pa.Table:
    """:func:`link_counts` by Arrow's group-by: the reference for the C path."""
    links = links.filter(pc.not_equal(links.column("source_id"), links.column("target_id")))
    pairs = links.group_by(["target_id", "source_id"], use_threads=False).aggregate([])
    counts = pairs.group_by("target_id", use_threads=False).aggregate([("source_id", "count")])
    return pa.table({"url_id": counts.column("target_id"), "in_degree": counts.column("source_id_count")})


def _add_counts(tables: list[pa.Table], key: str, count: str) -> pa.Table:
    """One row per ``key`` with its ``count`` summed over ``tables``."""
    summed = pa.concat_tables(tables).group_by(key, use_threads=False).aggregate([(count, "sum")])
    return pa.table({key: summed.column(key), count: summed.column(f"{count}_sum")})


def page_words(crawl_dir: str, url_id: int) -> list[str]:
    """The words of one page of the crawl (empty when it holds no such page), read cheaply: the
    url_id column of each pages part, then only the row group holding the page."""
    import pyarrow.parquet as pq

    for part in crawl_parts(crawl_dir).pages:
        fs, path = filesystem(part)
        local, threads = local_path(part), arrow_threads(part)  # see simweb.tasks.storage.read_parquet_file
        with (contextlib.nullcontext(local) if local else fs.open(path, "rb")) as f:
            parquet = pq.ParquetFile(f)
            for group in range(parquet.num_row_groups):
                ids = parquet.read_row_group(group, columns=["url_id"], use_threads=threads).column("url_id")
                rows = np.flatnonzero(ids.to_numpy() == np.uint64(url_id))
                if rows.size:
                    words = parquet.read_row_group(group, columns=["words"], use_threads=threads).column("words")
                    return [str(w) for w in words[int(rows[0])].as_py() or []]
    return []
