"""The crawl's parts read together under its rules (its selection, the duplicate-copy rule, its
aliases; see simweb.tasks.crawl): the pages and links as tables with counts of what was left
out (:func:`read_crawl`), each URL's page once, pages by id, titles, one page's words, the URLs
linked to, and how the aliases were resolved."""
from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from simweb.tasks import schemas
from simweb.tasks.crawl.aliases import redirect_links
from simweb.tasks.crawl.copies import DuplicateCopies, crawl_copies
from simweb.tasks.crawl.parts import crawl_parts
from simweb.tasks.crawl.read import (EDGE_COLUMNS, PAGE_COLUMNS, empty_table, excluded, keep_all, read_links,
                                     read_pages)
from simweb.tasks.storage import arrow_threads, filesystem, local_path

__all__ = ["CrawlTables", "add_counts", "alias_report", "iter_parts", "link_targets", "page_titles", "page_words",
           "pages_of", "read_crawl", "unique_pages", "wanted_ids"]


@dataclass(frozen=True, slots=True, eq=False)
class CrawlTables:
    """The crawl's pages and links as :func:`read_crawl` reads them, and its counts."""

    pages: pa.Table | None
    links: pa.Table | None
    counts: dict[str, int]


def read_crawl(crawl_dir: str, page_columns: Sequence[str] | None, link_columns: Sequence[str] | None, *,
               exclude: Callable[[str], bool] = keep_all) -> CrawlTables:
    """The crawl's pages and links (None: that data set is not read) without duplicate copies,
    nor the pages ``exclude`` names and their out-links; with counts of what was read and left out."""
    found = crawl_parts(crawl_dir)
    copies = crawl_copies(found)
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
        pages = pa.concat_tables(tables).combine_chunks() if tables else empty_table(schemas.PAGES, columns)
        dropped = excluded(pages.column("url"), exclude)
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
        links = pa.concat_tables(tables).combine_chunks() if tables else empty_table(schemas.LINKS, columns)
        dropped = excluded(links.column("source_url"), exclude)
        counts["links_from_excluded_pages"] = int(dropped.sum())
        links = links.filter(pa.array(~dropped))
        links = links.select(list(link_columns))
    return CrawlTables(pages, links, counts)


def unique_pages(crawl_dir: str, columns: Sequence[str] = tuple(PAGE_COLUMNS)) -> tuple[pa.Table, int]:
    """``columns`` of each URL's page, once (its kept copy; the first row of a repeat within a
    part), in part order; and how many page rows were left out as copies."""
    tables = read_crawl(crawl_dir, list(dict.fromkeys([*columns, "url_id"])), None)
    pages = tables.pages
    _, first = np.unique(pages.column("url_id").to_numpy(), return_index=True)
    kept = pages.take(pa.array(np.sort(first))).select(list(columns))
    return kept, tables.counts["pages"] - kept.num_rows


def wanted_ids(url_ids: Iterable[int] | np.ndarray | None) -> pa.Array | None:
    """``url_ids`` as a sorted Arrow set to filter rows by; None (every row) for None."""
    return None if url_ids is None else pa.array(np.unique(np.asarray(url_ids, dtype=np.uint64)), pa.uint64())


def iter_parts(crawl_dir: str, data_set: str, columns: Sequence[str], key: str,
               url_ids: Iterable[int] | np.ndarray | None, copies: DuplicateCopies | None = None
               ) -> Iterator[pa.Table]:
    """Each part of ``data_set`` without duplicate copies (``copies``: the crawl's, computed
    when None), its rows with ``key`` among ``url_ids``."""
    found = crawl_parts(crawl_dir)
    if copies is None:
        copies = crawl_copies(found)
    wanted = wanted_ids(url_ids)
    for url in (found.pages if data_set == "pages" else found.links):
        if data_set == "pages":
            table, _ = read_pages(url, columns, copies.of(url))
        else:
            table = redirect_links(read_links(url, copies.of(url), columns)[0], copies.aliases)[0]
        if wanted is not None:
            table = table.filter(pc.is_in(table.column(key), value_set=wanted))
        yield table


def pages_of(crawl_dir: str, url_ids: Iterable[int] | np.ndarray, columns: Sequence[str]) -> pa.Table:
    """``columns`` of the pages of ``url_ids`` the crawl holds, each once, part by part (the
    ``timestamp`` of a page whose latest capture is a revisit: the revisit's)."""
    columns = list(dict.fromkeys(["url_id", *columns]))
    copies = crawl_copies(crawl_parts(crawl_dir))
    tables = list(iter_parts(crawl_dir, "pages", columns, "url_id", url_ids, copies))
    pages = pa.concat_tables(tables) if tables else empty_table(schemas.PAGES, columns)
    _, first = np.unique(pages.column("url_id").to_numpy(), return_index=True)
    pages = pages.take(pa.array(np.sort(first)))
    if "timestamp" in columns and copies.redated[0].size:  # a revisited page was captured at the revisit's date
        at = pages.schema.get_field_index("timestamp")
        stamps = copies.captured(pages.column("url_id").to_numpy(), pages.column("timestamp").to_numpy(zero_copy_only=False))
        pages = pages.set_column(at, pages.schema.field(at), pa.array(stamps, pa.string()))
    return pages


def page_titles(crawl_dir: str, url_ids: Iterable[int] | np.ndarray | None = None, *,
                copies: DuplicateCopies | None = None) -> pa.Table:
    """(url_id, title) of the crawl's pages (those of ``url_ids`` when given): the index's titles.
    ``copies``: the crawl's :func:`duplicate_copies`, when the caller has them already."""
    tables = list(iter_parts(crawl_dir, "pages", ["url_id", "title"], "url_id", url_ids, copies))
    pages = pa.concat_tables(tables) if tables else empty_table(schemas.PAGES, ["url_id", "title"])
    first = pages.group_by("url_id", use_threads=False).aggregate([("title", "first")])
    return pa.table({"url_id": first.column("url_id"), "title": first.column("title_first")})


def add_counts(tables: list[pa.Table], key: str, count: str) -> pa.Table:
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


def link_targets(crawl_dir: str, exclude: Callable[[str], bool] = keep_all) -> tuple[frozenset[str], dict[str, int]]:
    """The URLs some page of the crawl links to (self-links aside; without the out-links of the
    pages ``exclude`` names), and the counts of what was read and left out (``linked_urls``
    among them). Part by part: memory holds one part's links and the distinct targets, not the
    crawl's links."""
    found = crawl_parts(crawl_dir)
    copies = crawl_copies(found)
    counts = dict.fromkeys(("pages", "duplicate_copies", "excluded_pages", "links", "links_of_duplicate_copies",
                            "links_from_excluded_pages"), 0)
    for url in found.pages:
        table, skipped = read_pages(url, ["url"], copies.of(url))
        counts["pages"] += table.num_rows + skipped
        counts["duplicate_copies"] += skipped
        counts["excluded_pages"] += int(excluded(table.column("url"), exclude).sum())
    targets = pa.array([], pa.string())
    for url in found.links:
        links, skipped = read_links(url, copies.of(url), EDGE_COLUMNS)
        counts["links"] += links.num_rows + skipped
        counts["links_of_duplicate_copies"] += skipped
        dropped = excluded(links.column("source_url"), exclude)
        counts["links_from_excluded_pages"] += int(dropped.sum())
        keep = pc.and_(pa.array(~dropped), pc.not_equal(links.column("source_id"), links.column("target_id")))
        targets = pc.unique(pa.chunked_array([targets, *links.column("target_url").filter(keep).chunks], pa.string()))
    linked = frozenset(targets.to_pylist())
    return linked, {**counts, "linked_urls": len(linked)}


def alias_report(crawl_dir: str) -> dict[str, int]:
    """How the crawl's aliases were resolved (the counts of :func:`crawl_aliases`) and how many of
    its kept links were redirected to an alias's document (``links_redirected_to_aliases``)."""
    found = crawl_parts(crawl_dir)
    copies = crawl_copies(found)
    redirected = 0
    if len(copies.aliases):
        for url in found.links:
            table, _ = read_links(url, copies.of(url), ["source_id", "target_id"])
            redirected += redirect_links(table, copies.aliases)[1]
    return {**copies.aliases.counts, "links_redirected_to_aliases": redirected}
