"""In-degrees: the number of distinct other pages linking to each URL, the in-degree the index
filters I by (paper Section 7.1)."""
from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from simweb.tasks import schemas
from simweb.tasks.crawl.aliases import redirect_links
from simweb.tasks.crawl.copies import DuplicateCopies, crawl_copies
from simweb.tasks.crawl.parts import crawl_parts
from simweb.tasks.crawl.read import open_part, part_batches, read_links, without
from simweb.tasks.crawl.tables import add_counts, wanted_ids

try:
    from simweb.core._gather import first_links as _c_first_links
except ImportError:  # pragma: no cover - depends on the build
    _c_first_links = None

__all__ = ["in_degrees", "link_counts"]

#: Links of a part read at once (memory: a batch of ids, not a part's: a recrawl's part of 12.6
#: million links held 200 MB of ids and several times that in temporaries).
LINK_BATCH = 1 << 20
_COLUMNS = ["source_id", "target_id"]


def in_degrees(crawl_dir: str, url_ids: Iterable[int] | np.ndarray | None = None, *,
               copies: DuplicateCopies | None = None) -> pa.Table:
    """(url_id, in_degree): the number of distinct other pages linking to each URL (to those of
    ``url_ids`` when given), the in-degree the index filters I by (Section 7.1).

    Part by part, batch by batch: a page's links all lie in the part of its kept copy, next to
    each other, so the (target, source) pairs of two batches never coincide and their counts add
    up. Memory holds a batch of a part's ids (LINK_BATCH links) and a count per linked URL, not
    the crawl's links nor a part's. ``copies`` as for simweb.tasks.crawl.tables.page_titles."""
    found = crawl_parts(crawl_dir)
    copies = crawl_copies(found) if copies is None else copies
    wanted = wanted_ids(url_ids)
    total = pa.table({"url_id": pa.array([], pa.uint64()), "in_degree": pa.array([], pa.int64())})
    for url in found.links:
        total = add_counts([total, *_part_counts(url, copies, wanted)], "url_id", "in_degree")
    return pa.table({"url_id": total.column("url_id"), "in_degree": pc.cast(total.column("in_degree"), pa.int32())})


def _part_counts(url: str, copies: DuplicateCopies, wanted: pa.Array | None) -> list[pa.Table]:
    """The counts of :func:`link_counts` of one links part, without the links of the pages it loses
    to other parts: a table per batch of about LINK_BATCH links, a batch never splitting one
    source's links; one table of the whole part where a source's links are not all next to each
    other (a part the ingest did not write), so that no pair is counted in two batches."""
    skip = copies.of(url)

    def count(links: pa.Table) -> pa.Table:
        if skip.size:
            links = without(links, "source_id", skip)[0]
        links = redirect_links(links, copies.aliases)[0]
        if wanted is not None:
            links = links.filter(pc.is_in(links.column("target_id"), value_set=wanted))
        return link_counts(links)

    counts, held, seen = [], None, np.zeros(0, np.uint64)
    for batch in part_batches(open_part(url, schemas.LINKS, _COLUMNS), url, _COLUMNS, LINK_BATCH):
        batch = pa.concat_tables([held, batch]) if held is not None else batch
        sources = batch.column("source_id").to_numpy()
        # The last source's links may go on in the next batch: they are held back until they end.
        other = np.flatnonzero(sources != sources[-1])
        end = int(other[-1]) + 1 if other.size else 0
        held = batch.slice(end)
        if end:
            runs = np.unique(sources[:end])
            if np.isin(runs, seen, assume_unique=True).any():  # a source met again after others
                return [count(read_links(url, None, _COLUMNS)[0])]
            seen = np.union1d(seen, runs)
            counts.append(count(batch.slice(0, end)))
    if held is not None and held.num_rows:
        if np.isin(held.column("source_id").to_numpy()[:1], seen).any():
            return [count(read_links(url, None, _COLUMNS)[0])]
        counts.append(count(held))
    return counts


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
