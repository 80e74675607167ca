"""The near-duplicate report of an ingested crawl: duplicate clusters and mirrored hosts.

The law is the lecture notes (``papers/lecture-similarity-queries-and-evaluation.txt``,
"Detection of identical or near-identical pages"; ``papers/lecture-web-size-duplicates-pagerank.md``,
"Duplicates and mirrors"): each page's text as K-word shingles, min-hash sketches, pairs whose
sketches agree on at least the threshold, connected components as duplicate clusters, and host
pairs sharing paths or near-duplicate pages validated on sampled paths. The algorithms are
:mod:`simweb.core.shingles`; this module reads the crawl's ``pages`` data set (written by
``simweb ingest``) and writes the cluster table.

A page's text is its title followed by its cleaned words (the ingest's ``title_words`` and
``words``). A URL crawled twice (two WARC files) counts once: the copy simweb.tasks.crawl keeps.
Within a cluster the representative is the page with the shortest URL (then the
alphabetically first): the plainest address stands for its copies.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from simweb.core.shingles import (
    DuplicateClusters,
    MirrorParams,
    MirrorReport,
    SketchParams,
    duplicate_clusters,
    find_mirrors,
    shingle_fingerprints,
    sketch,
)
from simweb.core.urls import normalize_url, url_id
from simweb.tasks import schemas
from simweb.tasks.crawl.aliases import redirect_links
from simweb.tasks.crawl.copies import crawl_copies
from simweb.tasks.crawl.parts import crawl_parts, part_of
from simweb.tasks.crawl.selection import write_selection
from simweb.tasks.crawl.read import read_part
from simweb.tasks.crawl.tables import pages_of, unique_pages
from simweb.tasks.storage import join, write_parquet_atomic

CLUSTERS_TABLE = "duplicates.parquet"

# DIR/duplicates.parquet — one row per page of a duplicate cluster (clusters of one are left out).
CLUSTERS_SCHEMA = pa.schema(
    [
        pa.field("url", pa.string(), nullable=False),
        pa.field("url_id", pa.uint64(), nullable=False),
        pa.field("representative_url", pa.string(), nullable=False),  # the cluster's representative
        pa.field("representative_id", pa.uint64(), nullable=False),
        pa.field("cluster_size", pa.int32(), nullable=False),
    ]
)


@dataclass(frozen=True, slots=True)
class DedupParams:
    """Shingle size K (lecture: 10), the resemblance threshold (lecture: 80%), the sketch
    (lecture: 200 min-hashes) and the mirror validation (:class:`simweb.core.shingles.MirrorParams`;
    its page threshold is ``threshold``)."""

    k: int = 10
    threshold: float = 0.8
    sketch: SketchParams = field(default_factory=SketchParams)
    mirrors: MirrorParams = field(default_factory=MirrorParams)

    def __post_init__(self) -> None:
        if self.k < 1:
            raise ValueError(f"expected a shingle size k >= 1, got {self.k}")
        if not 0 < self.threshold <= 1:
            raise ValueError(f"expected a resemblance threshold in (0, 1], got {self.threshold}")


@dataclass(frozen=True, slots=True, eq=False)
class DedupReport:
    """What :func:`find_duplicates` found: the pages (in representative-first order), their
    clusters, the mirror report, and counts of what was read and left out."""

    urls: list[str]
    url_ids: np.ndarray
    clusters: DuplicateClusters
    mirrors: MirrorReport
    counts: dict[str, int]
    params: DedupParams
    seconds: float

    def cluster_urls(self) -> list[list[str]]:
        """Each cluster's URLs, representative first, largest cluster first."""
        groups = [[self.urls[i] for i in members.tolist()] for members in self.clusters.clusters()]
        return sorted(groups, key=lambda g: (-len(g), g[0]))


def find_duplicates(crawl: str, params: DedupParams = DedupParams()) -> DedupReport:
    """Near-duplicate clusters and mirrored host pairs among the crawl's pages (lecture,
    Steps 1–4 and "Mirrors")."""
    t0 = time.perf_counter()
    pages, repeated = unique_pages(crawl, ["url", "url_id", "title_words", "words"])
    ids = pages.column("url_id").to_numpy()
    urls_all = pages.column("url").to_pylist()
    # Representative-first order: duplicate_clusters represents a cluster by its earliest member.
    order = sorted(range(pages.num_rows), key=lambda i: (len(urls_all[i]), urls_all[i]))
    fingerprints = page_fingerprints(pages, params.k)
    fingerprints = [fingerprints[i] for i in order]
    sketches = sketch(fingerprints, params.sketch)
    clusters = duplicate_clusters(sketches, params.threshold)
    urls = [urls_all[i] for i in order]
    mirror_params = params.mirrors
    if mirror_params.threshold != params.threshold:
        mirror_params = MirrorParams(**{**_fields(mirror_params), "threshold": params.threshold})
    mirrors = find_mirrors(urls, sketches, mirror_params)
    counts = {
        "pages": len(order),
        "repeated_urls": repeated,
        "pages_without_shingles": clusters.skipped_empty,
        "duplicate_pairs": len(clusters.pairs),
        "clusters": clusters.n_clusters,
        "pages_in_clusters": int(sum(c.size for c in clusters.clusters())),
        "duplicates": clusters.n_duplicates,
        "mirror_candidates": len(mirrors.pairs),
        "mirrors": len(mirrors.mirrors),
        "common_paths_ignored": mirrors.common_paths_ignored,
    }
    return DedupReport(urls, ids[order], clusters, mirrors, counts, params, round(time.perf_counter() - t0, 3))


def page_fingerprints(pages: pa.Table, k: int) -> list[np.ndarray]:
    """The K-word shingle fingerprints of each page of ``pages`` (columns ``title_words`` and
    ``words``): its text is its title followed by its words."""
    titles = pages.column("title_words").to_pylist()
    words = pages.column("words").to_pylist()
    return [shingle_fingerprints((title or []) + (text or []), k) for title, text in zip(titles, words)]


def _fields(params) -> dict:
    return {name: getattr(params, name) for name in params.__dataclass_fields__}


def clusters_table(report: DedupReport) -> pa.Table:
    """One row per page of a cluster of two or more: the page and its representative."""
    rows = {name: [] for name in CLUSTERS_SCHEMA.names}
    for members in report.clusters.clusters():
        rep = int(members[0])
        for i in members.tolist():
            rows["url"].append(report.urls[i])
            rows["url_id"].append(int(report.url_ids[i]))
            rows["representative_url"].append(report.urls[rep])
            rows["representative_id"].append(int(report.url_ids[rep]))
            rows["cluster_size"].append(int(members.size))
    return pa.table(rows, schema=CLUSTERS_SCHEMA)


def write_clusters(report: DedupReport, out: str) -> str:
    """Write ``duplicates.parquet`` into ``out`` atomically; returns its path."""
    return write_parquet_atomic(clusters_table(report), join(out, CLUSTERS_TABLE))


@dataclass(frozen=True, slots=True)
class NearDuplicateFilter:
    """Which of a ranked list of pages to keep: ``kept`` are positions in the list, in order;
    ``dropped`` maps a dropped position to the position of the earlier listed page it nearly
    duplicates (-1: the query page itself)."""

    kept: list[int]
    dropped: dict[int, int]


def near_duplicate_filter(crawl: str, urls: list[str], *, query: str | None = None,
                          params: DedupParams = DedupParams()) -> NearDuplicateFilter:
    """Drop the pages of a ranked result list that nearly duplicate a page listed before them
    (or the query page): the paper notes that commercial "related pages" were often merely
    mirrored copies. Resemblance is estimated from the sketches of the pages' shingles as in
    :func:`find_duplicates`; a page the crawl has no text for is always kept."""
    listed = ([query] if query is not None else []) + list(urls)
    ids = [url_id(u) for u in (normalize_url(x) or x for x in listed)]
    texts = _page_texts(crawl, ids)
    sketches = sketch([shingle_fingerprints(texts.get(i, []), params.k) for i in ids], params.sketch)
    offset = 1 if query is not None else 0
    kept_rows: list[int] = [0] if query is not None else []
    kept, dropped = [], {}
    for row in range(offset, len(listed)):
        twin = next((k for k in kept_rows if sketches.estimate(k, row) >= params.threshold), None)
        if twin is None:
            kept_rows.append(row)
            kept.append(row - offset)
        else:
            dropped[row - offset] = twin - offset
    return NearDuplicateFilter(kept, dropped)


def _page_texts(crawl: str, ids: list[int]) -> dict[int, list[str]]:
    """Title and words of the crawled pages among ``ids`` (one copy of a URL crawled twice)."""
    pages = pages_of(crawl, ids, ["title_words", "words"])
    return {i: (title or []) + (words or [])
            for i, title, words in zip(*(pages.column(c).to_pylist() for c in ("url_id", "title_words", "words")))}


# ---------------------------------------------------------------------------------------------
# The optional dedup stage of build_index: one representative per duplicate cluster.

COLLAPSE_COUNTS = ("pages_in", "pages_out", "duplicate_pages_dropped", "links_in", "links_out",
                   "links_from_duplicates_dropped", "links_redirected")


def collapse_duplicates(crawl: str, out: str, params: DedupParams = DedupParams()) -> dict:
    """Write a copy of the crawl's ``pages`` and ``links`` data sets into ``out`` in which each
    duplicate cluster is collapsed to its representative (issue: "collapses each duplicate
    cluster to one representative before indexing and merges their inlinks").

    * pages of the other members of a cluster are dropped;
    * links whose target is another member now point at the representative (target URL and id
      rewritten), so the representative's bag gathers the anchor windows of every copy;
    * links whose source is another member are dropped: they are the copies' own outlinks,
      which would otherwise count each anchor once per copy.

    Every other column is copied as it is, part by part (bounded memory). Returns the counts
    of what was read, dropped and rewritten, and the duplicate report's counts.
    """
    report = find_duplicates(crawl, params)
    members, reps, rep_urls = [], [], []
    for cluster in report.clusters.clusters():
        rep = int(cluster[0])
        for i in cluster[1:].tolist():
            members.append(int(report.url_ids[i]))
            reps.append(int(report.url_ids[rep]))
            rep_urls.append(report.urls[rep])
    member_ids = pa.array(members, pa.uint64())
    counts = dict.fromkeys(COLLAPSE_COUNTS, 0)
    found = crawl_parts(crawl)
    # The crawl's aliases go along unchanged (the output is read as a crawl), and links to an
    # alias are pointed at its document first, so that a link to an alias of a copy reaches the
    # representative too.
    aliases = crawl_copies(found).aliases
    for path in found.aliases:
        write_parquet_atomic(read_part(path, schemas.ALIASES, schemas.ALIASES.names),
                             join(out, "aliases", path.rsplit("/", 1)[-1]))
    for path in found.pages:
        table = read_part(path, schemas.PAGES, schemas.PAGES.names)
        kept = table.filter(pc.invert(pc.is_in(table.column("url_id"), value_set=member_ids)))
        counts["pages_in"] += table.num_rows
        counts["pages_out"] += kept.num_rows
        write_parquet_atomic(kept, join(out, "pages", path.rsplit("/", 1)[-1]))
    counts["duplicate_pages_dropped"] = counts["pages_in"] - counts["pages_out"]
    for path in found.links:
        table = redirect_links(read_part(path, schemas.LINKS, schemas.LINKS.names), aliases)[0]
        counts["links_in"] += table.num_rows
        from_copy = pc.is_in(table.column("source_id"), value_set=member_ids)
        table = table.filter(pc.invert(from_copy))
        counts["links_from_duplicates_dropped"] += int(pc.sum(from_copy).as_py() or 0)
        position = pc.index_in(table.column("target_id"), value_set=member_ids)
        redirected = pc.is_valid(position)
        counts["links_redirected"] += int(pc.sum(redirected).as_py() or 0)
        if members:
            table = _redirect(table, position, redirected, reps, rep_urls)
        counts["links_out"] += table.num_rows
        write_parquet_atomic(table, join(out, "links", path.rsplit("/", 1)[-1]))
    if found.as_of:  # the output is read as of the same date
        write_selection(out, {part_of(path) for path in found.pages}, found.as_of)
    return {**counts, "clusters": report.counts["clusters"], "duplicate_pairs": report.counts["duplicate_pairs"],
            "mirrors": report.counts["mirrors"], "dedup_seconds": report.seconds}


def _redirect(table: pa.Table, position: pa.Array, redirected: pa.Array,
              reps: list[int], rep_urls: list[str]) -> pa.Table:
    """``table`` with the target of each redirected row replaced by its cluster's representative."""
    safe = pc.fill_null(position, 0)
    new_ids = pc.if_else(redirected, pa.array(reps, pa.uint64()).take(safe), table.column("target_id"))
    new_urls = pc.if_else(redirected, pa.array(rep_urls, pa.string()).take(safe), table.column("target_url"))
    table = table.set_column(table.schema.get_field_index("target_id"), table.schema.field("target_id"), new_ids)
    return table.set_column(table.schema.get_field_index("target_url"), table.schema.field("target_url"), new_urls)
