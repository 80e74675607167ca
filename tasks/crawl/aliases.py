"""The crawl's aliases resolved over its whole evidence (simweb.core.aliases holds the rules),
and links pointed at an alias's document (see simweb.tasks.crawl, "Aliases")."""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from simweb.core.aliases import KINDS, AliasMap, build_alias_map
from simweb.tasks import schemas
from simweb.tasks.crawl.read import read_part

__all__ = ["GONE", "GONE_STATUSES", "REVISIT", "crawl_aliases", "read_evidence", "redirect_links"]

#: The ALIASES kind of a record that answered 404 or 410 (:data:`GONE_STATUSES`): a capture of
#: its URL that has no page, and no alias (simweb.tasks.crawl.copies).
GONE = "gone"
GONE_STATUSES = frozenset({404, 410})
#: The ALIASES kind of a revisit record: a capture of its URL at its date whose payload is an
#: earlier capture's (the one of the same payload digest), and no alias.
REVISIT = "revisit"
_CAPTURES = (GONE, REVISIT)

_ALIAS_COLUMNS = ["url_id", "target_id", "target_url", "kind", "source_file", "record_offset", "timestamp", "digest"]


def read_evidence(alias_parts: Sequence[str]) -> pa.Table | None:
    """The alias evidence of ``alias_parts`` (its kinds checked), or None when there is none."""
    tables = [read_part(url, schemas.ALIASES, _ALIAS_COLUMNS) for url in alias_parts]
    evidence = pa.concat_tables(tables).combine_chunks() if tables else None
    if evidence is None or not evidence.num_rows:
        return None
    known = pc.is_in(evidence.column("kind"), value_set=pa.array([*KINDS, *_CAPTURES]))
    if not pc.all(known).as_py():
        raise ValueError(f"{alias_parts[0]}…: column 'kind': expected one of {', '.join([*KINDS, *_CAPTURES])}, found "
                         f"{set(evidence.column('kind').to_pylist()) - {*KINDS, *_CAPTURES}}; re-run `simweb ingest`")
    return evidence


def crawl_aliases(evidence: pa.Table | None, page_ids: np.ndarray) -> tuple[AliasMap, np.ndarray]:
    """The crawl's resolved aliases (simweb.core.aliases.build_alias_map over ``evidence``, the
    rows of :func:`read_evidence` that hold, ranked by source_file then record_offset) and the
    ids of the crawled pages merged into another crawled page. An alias that is a crawled page
    and leads to no crawled page is taken out of the evidence, so that it keeps its own document
    (repeated until none is left: taking one out can shorten a chain that passed through it)."""
    if evidence is not None:
        evidence = evidence.filter(pc.invert(pc.is_in(evidence.column("kind"), value_set=pa.array(_CAPTURES))))
    if evidence is None or not evidence.num_rows:
        return AliasMap(), np.zeros(0, np.uint64)
    kinds = pc.index_in(evidence.column("kind"), value_set=pa.array(KINDS)).to_numpy(zero_copy_only=False)
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
