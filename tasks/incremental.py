"""Incremental index updates: new crawl files re-weigh and re-sign only the URLs they touch.

The ``ingest-new-crawl`` flow asks :func:`plan_update` how to update after ingesting new WARC files into a
build's crawl folder. Which work an update does is decided by the **epoch policy**:

* An *epoch* begins with every full build (``build-index``, or a full refresh): the document
  frequencies of its bags stage and its resolved weighting (NMDF's μ, σ) are frozen and kept
  as ``OUT/epochs/<id>/df.parquet`` with ``OUT/EPOCH.json`` naming the live epoch.
* Within an epoch an update rebuilds only the **touched** URLs — the pages of the new files
  and the targets of their links (their anchor and link-id fragments changed) — from the
  whole crawl's fragments of those URLs, weighted with the epoch's frozen df (a term first
  crawled after the epoch began counts df = 1), and signs only them. Every other document
  keeps its bag and its signatures; the new index version copies them (same doc ids; new
  URLs get the next ids) and replaces the touched rows.
* A full re-weight (a new epoch) happens when the crawl has grown by more than
  ``max_growth`` (default 0.2: a fifth more pages than when the epoch began) — df drifts as
  the collection grows, and frozen weights would drift from what a full build gives — and
  whenever the update cannot be incremental: no epoch or no live index yet, a strategy or
  min-hash parameters other than the epoch's, a ``dedup`` strategy, or one with source shares.

The invariant the tests check: an incremental update gives, URL for URL, the bag,
signatures, title, in-degree, category and related pages of a full build over the same
files weighted with the same df snapshot (``build_bags_stage(..., df_snapshot=...)``).

I is re-inverted from the updated H in every update: the index drops buckets that hold a
single document (lossless for one index, Section 6.2), so a new segment's documents would not
see the old documents they share such a value with; inverting H is one sort of its N·m
entries, while the work that grows with the crawl's text — fragments, merging, weighting,
signing — is done for the touched URLs only. The new version is published like every other
(atomically: a query sees the old or the new index, never a mix).
"""
from __future__ import annotations

import json
import os
import shutil
import time
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from simweb.core.aliases import AliasMap
from simweb.core.minhash import MinHashParams
from simweb.core.strategy import Strategy
from simweb.core.weighting import Weighting
from simweb.tasks import index_store as store
from simweb.tasks import schemas
from simweb.tasks.bags import fragments as bag_fragments
from simweb.tasks.bags.cells import FRAGMENTS
from simweb.tasks.bags.df import DfSnapshot
from simweb.tasks.bags.merge import merge_rows, write_merged
from simweb.tasks.bags.sizes import PartSize
from simweb.tasks.bags.weigh import weigh_part
from simweb.tasks.crawl.aliases import redirect_links
from simweb.tasks.crawl.copies import crawl_copies, duplicate_copies
from simweb.tasks.crawl.degrees import in_degrees
from simweb.tasks.crawl.parts import count_page_rows, crawl_parts, part_of, parts_identity
from simweb.tasks.crawl.read import read_part
from simweb.tasks.crawl.slices import link_slices, page_slices
from simweb.tasks.crawl.tables import page_titles
from simweb.tasks.directory_file import url_categories
from simweb.tasks.layout import stages_folder
from simweb.tasks.logs import run_logger
from simweb.tasks.signatures import SIG_DIR, IndexParams, sign_part, signed_bags, write_index_version
from simweb.tasks.stagecache import StageOutput, file_identities, lineage, output_path, published, run_stage
from simweb.tasks.stages.weighting import DF_FILE
from simweb.tasks.storage import (
    download,
    exists,
    join,
    local_stand_in,
    read_parquet_file,
    write_bytes_atomic,
    write_parquet_atomic,
)

EPOCH_FILE = "EPOCH.json"
EPOCHS_DIR = "epochs"
DEFAULT_MAX_GROWTH = 0.2
STAGE_DELTA_BAGS = "delta-bags"
STAGE_DELTA_INDEX = "delta-index"


@dataclass(frozen=True, slots=True)
class Epoch:
    """The frozen weighting of the live epoch and what it was built with."""

    id: str
    df_path: str
    weighting: dict[str, Any]
    pages: int
    strategy: dict[str, Any]
    minhash: dict[str, Any]
    min_in_degree: int | None
    started: str

    def snapshot(self) -> DfSnapshot:
        return DfSnapshot(self.df_path, Weighting.from_dict(self.weighting))


def read_epoch(out: str) -> Epoch | None:
    path = os.path.join(store.local_dir(out), EPOCH_FILE)
    try:
        with open(path) as f:
            data = json.load(f)
        epoch = Epoch(**data)
    except (FileNotFoundError, TypeError, ValueError):
        return None
    return epoch if os.path.exists(epoch.df_path) else None


def _epoch_df(out: str, bags: StageOutput) -> str:
    """Where the epoch of the bags stage ``bags`` keeps its df (named by the bags' key)."""
    return os.path.join(store.local_dir(out), EPOCHS_DIR, bags.key[:16], "df.parquet")


def epoch_started(out: str, bags: StageOutput) -> bool:
    """Whether the epoch of ``bags`` has its df already (so the bags' own files are not needed)."""
    return os.path.exists(_epoch_df(out, bags))


def start_epoch(out: str, bags: StageOutput, params) -> Epoch:
    """Freeze the df and weighting of the bags stage ``bags`` (a full build's) as the live epoch."""
    stats = bags.stats
    epoch_id = bags.key[:16]
    df_path = _epoch_df(out, bags)
    os.makedirs(os.path.dirname(df_path), exist_ok=True)
    if not os.path.exists(df_path):
        tmp = df_path + ".tmp"
        download(join(bags.path, DF_FILE), tmp)
        os.replace(tmp, df_path)
    epoch = Epoch(
        id=epoch_id, df_path=df_path, weighting=dict(stats["weighting"]), pages=int(stats.get("pages", 0)),
        strategy=dict(stats["strategy"]), minhash=params.minhash().to_dict(), min_in_degree=params.min_in_degree,
        started=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    )
    write_bytes_atomic((json.dumps(asdict(epoch), indent=1) + "\n").encode(), join(out, EPOCH_FILE))
    return epoch


@dataclass(frozen=True, slots=True)
class UpdatePlan:
    """How the next update of an index folder goes: incremental within ``epoch`` over the live
    version ``live``, or a full re-weight (a new epoch) for ``full_reason``."""

    epoch: Epoch | None
    live: str | None
    full_reason: str | None

    @property
    def incremental(self) -> bool:
        return self.full_reason is None


def plan_update(out: str, crawl_dir: str, strategy: Strategy, params, new_parts: list[str] | None,
                max_growth: float = DEFAULT_MAX_GROWTH) -> UpdatePlan:
    """The epoch policy (module docstring) applied to the index folder ``out``: incremental when
    the new parts are known and :func:`full_rebuild_reason` finds no reason for a full re-weight."""
    live = live_index(out)
    epoch = read_epoch(out)
    reason = ("the new parts are not known" if new_parts is None
              else full_rebuild_reason(epoch, live, strategy, params, crawl_dir, max_growth, new_parts))
    return UpdatePlan(epoch, live, reason)


def live_index(out: str) -> str | None:
    """The live version folder of the index folder ``out``, or None when there is none yet."""
    try:
        return store.resolve(out)
    except (FileNotFoundError, store.IndexFormatError):
        return None


def index_parameters(out: str, follow_index: bool, strategy: Strategy, params: IndexParams,
                     log=None) -> tuple[Strategy, IndexParams]:
    """The strategy and index parameters the live index of ``out`` was built with, if it
    should be followed and its build is recorded in ``out``'s stage outputs; else the given ones."""
    log = log or run_logger("simweb.incremental")
    if not follow_index:
        return strategy, params
    built = _live_build(out)
    if built is None:
        log.info("no index built in %s yet: using the given strategy %s, m=%d", out, strategy.label, params.m)
        return strategy, params
    if built != (strategy, params):
        log.info("following the live index: strategy %s, m=%d, seed=%d, min_in_degree=%s",
                 built[0].label, built[1].m, built[1].seed, built[1].min_in_degree)
    return built


def _live_build(out: str) -> tuple[Strategy, IndexParams] | None:
    """What the live index of ``out`` was made with: a full build's strategy and parameters as
    its stages recorded them, an update's those of the epoch it was made in (an update keeps
    its epoch's); None when neither is recorded."""
    source = _live_source(out)
    if source is None:
        return None
    stages, (stage, key) = stages_folder(out), source
    chain = lineage(stages, f"{stage}:{key}")
    if stage == STAGE_DELTA_INDEX:
        epoch = read_epoch(out)
        if epoch is None or chain[STAGE_DELTA_BAGS]["params"]["df_snapshot"] != epoch.snapshot().identity():
            return None
        strategy, minhash, min_in_degree = epoch.strategy, epoch.minhash, epoch.min_in_degree
    else:
        strategy = chain["bags"]["stats"]["strategy"]
        minhash, min_in_degree = chain["signatures"]["params"]["minhash"], chain["invert"]["params"]["min_in_degree"]
    m = MinHashParams.from_dict(minhash)
    return Strategy.from_dict(strategy), IndexParams(m=m.m, seed=m.seed, algorithm=m.algorithm,
                                                     min_in_degree=min_in_degree)


def _live_source(out: str) -> tuple[str, str] | None:
    """The stage output the live index of ``out`` was published from, as (stage, key): a full
    build's invert output or an update's delta-index output."""
    live = live_index(out)
    if live is None:
        return None
    live_manifest = store.read_manifest(live)
    stages = stages_folder(out)
    for stage, version in (("invert", ""), (STAGE_DELTA_INDEX, "version")):
        for manifest in reversed(published(stages, stage)):
            candidate = output_path(stages, stage, manifest["key"])
            try:
                same = store.read_manifest(join(candidate, version) if version else candidate) == live_manifest
            except (store.IndexFormatError, FileNotFoundError):
                continue
            if same:
                return stage, manifest["key"]
    return None


def full_rebuild_reason(epoch: Epoch | None, live: str | None, strategy: Strategy, params, crawl_dir: str,
                        max_growth: float = DEFAULT_MAX_GROWTH, new_parts: list[str] | None = None) -> str | None:
    """Why the next update must re-weigh the whole collection, or None when it can be incremental.

    An incremental update replaces and adds documents but never removes one: when the aliases of
    ``new_parts`` give a URL that is a document of the live index another document (``…/d`` of
    the new page ``…/d/``), its document would stay behind, so the update is a full one."""
    if epoch is None:
        return "no epoch yet (first update after a build of an earlier version)"
    if live is None:
        return "no live index"
    try:
        store.read_manifest(live)
    except store.IndexFormatError:
        return "the live index is of a format this simweb does not update (written by an earlier version)"
    if strategy.dedup:
        return "dedup strategies are rebuilt in full"
    if strategy.shares is not None:
        return "strategies with source shares are rebuilt in full (each source has its own df)"
    if Strategy.from_dict(epoch.strategy) != strategy:
        return "the strategy differs from the epoch's"
    if epoch.minhash != params.minhash().to_dict() or epoch.min_in_degree != params.min_in_degree:
        return "the min-hash parameters differ from the epoch's"
    pages = count_page_rows(crawl_dir)
    if epoch.pages and (pages - epoch.pages) / epoch.pages > max_growth:
        return f"the crawl grew by {(pages - epoch.pages) / epoch.pages:.0%} since the epoch began (limit {max_growth:.0%})"
    if new_parts:
        version = store.open_version(live)
        moved = [u for u in _alias_moves(crawl_dir, new_parts)[0].tolist() if version.doc_of(u) is not None]
        if moved:
            return f"the new files' redirects and URL variants give {len(moved)} URL(s) of the index another document"
        taken_out = int(np.isin(removed_pages(crawl_dir, new_parts), version.url_ids).sum())
        if taken_out:
            return (f"the new files take {taken_out} page(s) of the index out "
                    "(their latest capture is a 404, 410 or redirect)")
    return None


def _alias_moves(crawl_dir: str, new_parts: list[str]) -> tuple[np.ndarray, np.ndarray, AliasMap]:
    """The URL ids whose document the new parts change besides their own pages (simweb.tasks.crawl:
    an alias, a page merged or no longer merged, a page of an earlier part that is no longer or
    again its URL's latest capture, with the targets of its links), the documents they had and
    have with the URLs no longer gone (their anchors count again), and the map."""
    crawl = crawl_parts(crawl_dir)
    now = crawl_copies(crawl)
    new = set(new_parts)
    before = duplicate_copies([u for u in crawl.pages if part_of(u) not in new],
                              [u for u in crawl.aliases if part_of(u) not in new], crawl.as_of)
    named = np.union1d(now.aliases.ids, before.aliases.ids)
    then, later = before.aliases.resolve(named), now.aliases.resolve(named)
    merged = np.setxor1d(now.merged, before.merged)
    moved = then != later
    superseded = [np.zeros(0, np.uint64)]
    for url in crawl.links:
        if part_of(url) in new:
            continue
        # Its pages no longer the latest captures, or again (a revisit after a 404 or redirect).
        changed = np.setxor1d(now.of(url), before.of(url))
        if changed.size:
            links = read_part(url, schemas.LINKS, ["source_id", "target_id"])
            targets = links.filter(pc.is_in(links.column("source_id"), value_set=pa.array(changed, pa.uint64())))
            targets = targets.column("target_id").to_numpy()
            superseded += [changed, before.aliases.resolve(targets), now.aliases.resolve(targets)]
    superseded = np.concatenate(superseded).astype(np.uint64)
    back = np.setdiff1d(before.gone, now.gone)
    return (np.union1d(named[moved], merged),
            np.concatenate([then[moved], later[moved], now.aliases.resolve(merged), superseded, back]), now.aliases)


def removed_pages(crawl_dir: str, new_parts: list[str]) -> np.ndarray:
    """The URL ids that were pages of the crawl without ``new_parts`` and are none with them:
    their latest capture is now one of the new parts' 404, 410 or redirect records; and every
    URL whose latest capture is a 404 or 410, crawled or only linked to (no document: one the
    live index has, made gone by the new parts or kept by an index of an earlier simweb, goes)."""
    crawl = crawl_parts(crawl_dir)
    new = set(new_parts)
    old_pages = [u for u in crawl.pages if part_of(u) not in new]
    before = duplicate_copies(old_pages, [u for u in crawl.aliases if part_of(u) not in new], crawl.as_of)
    now = crawl_copies(crawl)
    return np.union1d(_no_longer_pages(crawl, old_pages, before, now), now.gone)


def _no_longer_pages(crawl, old_pages: list[str], before, now) -> np.ndarray:
    """The URL ids that were pages under ``before`` (the crawl without the new parts) and are
    none under ``now``."""
    ids = [np.zeros(0, np.uint64)]
    for url in old_pages:
        column = read_part(url, schemas.PAGES, ["url_id"]).column("url_id").to_numpy().astype(np.uint64)
        was = column[~np.isin(column, before.of(url))]
        ids.append(was[np.isin(was, now.of(url))])
    was_page = np.unique(np.concatenate(ids))
    if not was_page.size:
        return was_page
    still = [np.zeros(0, np.uint64)]
    for url in crawl.pages:
        column = read_part(url, schemas.PAGES, ["url_id"]).column("url_id").to_numpy().astype(np.uint64)
        candidates = column[np.isin(column, was_page)]
        still.append(candidates[~np.isin(candidates, now.of(url))])
    return np.setdiff1d(was_page, np.concatenate(still))


def touched_urls(crawl_dir: str, new_parts: list[str]) -> np.ndarray:
    """URL ids whose bags the new ingest parts change: their pages, their links' targets (each an
    alias's document when it is an alias), and the URLs whose document the new parts change
    otherwise, with their documents before and after (:func:`_alias_moves`)."""
    moved, documents, aliases = _alias_moves(crawl_dir, new_parts)
    found = [np.zeros(0, np.uint64), moved, documents]
    for name in new_parts:
        page = join(crawl_dir, "pages", f"{name}.parquet")
        link = join(crawl_dir, "links", f"{name}.parquet")
        if exists(page):  # the crawl may be on an object store (simweb build --work)
            found.append(read_part(page, schemas.PAGES, ["url_id"]).column("url_id").to_numpy())
        if exists(link):
            found.append(aliases.resolve(read_part(link, schemas.LINKS, ["target_id"]).column("target_id").to_numpy()))
    return np.unique(np.concatenate(found).astype(np.uint64))


def touched_bags(crawl_dir: str, strategy: Strategy, touched: np.ndarray, snapshot: DfSnapshot,
                 out: str) -> dict[str, int]:
    """The weighted bags of the ``touched`` URLs into ``out/part-00000.parquet`` (BAGS), built
    as the bags stage builds them: each part's fragments of those URLs (the crawl's parts and
    duplicate-copy rule, simweb.tasks.crawl), merged per URL, weighted with the snapshot."""
    found = crawl_parts(crawl_dir)
    copies = crawl_copies(found)
    wanted = pa.array(touched, pa.uint64())
    gone = copies.gone[np.isin(copies.gone, touched)]  # no bag, as in the bags stage
    size = PartSize()
    fragments = []
    # The bags stage merges its fragment files in name order: links parts, then pages parts.
    for url in found.links:
        for piece in link_slices(url, copies.of(url), size.link_rows, sources=strategy.uses_anchor):
            links = redirect_links(piece.links, copies.aliases)[0]
            # A link gives fragments to its target's bag and, with out-link ids, to its source's.
            ends = pc.is_in(links.column("target_id"), value_set=wanted)
            if strategy.uses_outlinks:
                ends = pc.or_(ends, pc.is_in(links.column("source_id"), value_set=wanted))
            links = links.filter(ends)
            if links.num_rows:
                table = bag_fragments.fragments(None, links, strategy, piece.sources, where=url)[0]
                if strategy.uses_outlinks:  # not the untouched targets' fragments: partial bags
                    table = table.filter(pc.is_in(table.column("url_id"), value_set=wanted))
                fragments.append(bag_fragments.without_gone(table, gone)[0] if gone.size else table)
    columns = ["url", "url_id", "title_words", "words"]
    for url in found.pages:
        for piece in page_slices(url, columns, copies.of(url), size.page_rows):
            table = piece.pages.filter(pc.is_in(piece.pages.column("url_id"), value_set=wanted))
            if table.num_rows:
                fragments.append(bag_fragments.fragments(table, None, strategy)[0])
    merged, counts = merge_rows(pa.concat_tables(fragments) if fragments else FRAGMENTS.empty_table())
    merged_path = os.path.join(out, "_merged.parquet")
    write_merged(merged, merged_path)
    terms = counts.select(["term"])
    df_path = os.path.join(out, "_df.parquet")
    write_parquet_atomic(snapshot.covering(terms), df_path)
    stats = weigh_part(merged_path, df_path, snapshot.weighting, os.path.join(out, "part-00000.parquet"))
    os.remove(merged_path)
    return {"touched": int(touched.size), **stats}


def _touched_metadata(crawl_dir: str, ids: np.ndarray, directory: str | None) -> pa.Table:
    """(url_id, title, in_degree, category, crawled) of ``ids``, as the signatures stage derives
    them for the whole crawl (simweb.tasks.crawl.tables.page_titles and .degrees.in_degrees; the
    directory's class)."""
    wanted = pa.array(ids, pa.uint64())
    base = pa.table({"url_id": wanted, "row": pa.array(np.arange(len(ids)))})
    titles = page_titles(crawl_dir, ids)
    titles = titles.append_column("crawled", pa.array(np.ones(titles.num_rows, dtype=bool)))
    joined = base.join(titles, "url_id", join_type="left outer")
    joined = joined.join(in_degrees(crawl_dir, ids), "url_id", join_type="left outer")
    if directory:
        joined = joined.join(url_categories(directory), "url_id", join_type="left outer")
    joined = joined.sort_by("row")
    n = joined.num_rows
    return pa.table({
        "url_id": joined.column("url_id"),
        "title": pc.cast(joined.column("title"), pa.string()) if n else pa.array([], pa.string()),
        "in_degree": pc.cast(pc.fill_null(joined.column("in_degree"), 0), pa.int32()),
        "category": (pc.cast(joined.column("category"), pa.string()) if directory
                     else pa.nulls(n, pa.string())),
        "crawled": pc.fill_null(joined.column("crawled"), False) if n else pa.array([], pa.bool_()),
    })


def updated_version(live: str, delta_bags: str, crawl_dir: str, params, directory: str | None,
                    out: str) -> dict[str, int]:
    """A complete index version in ``out``: the live version with the touched documents'
    rows replaced and new URLs appended (H, doc map, url map, bags), then I inverted anew."""
    signed = os.path.join(out, "_signed")
    os.makedirs(signed, exist_ok=True)
    minhash = params.minhash()
    delta_part = join(delta_bags, "part-00000.parquet")
    v = store.open_version(live)
    fine_m = 0 if v.h2 is None else v.h2.shape[1]  # the live version's fine signatures, if it has them
    sign_part(delta_part, signed, 0, minhash, fine_m)
    meta = pq.read_table(os.path.join(signed, SIG_DIR, "part-00000.parquet"))
    bags = signed_bags(delta_part, meta.column("row").to_numpy())
    sigs = np.fromfile(os.path.join(signed, SIG_DIR, "part-00000.u32"), dtype="<u4").reshape(meta.num_rows, minhash.m)
    if v.params.to_dict() != minhash.to_dict():
        raise ValueError(f"the live index {live} was signed with {v.params.to_dict()}, not {minhash.to_dict()}")
    prev_docs = pq.read_table(os.path.join(v.path, store.DOCMAP_FILE)).cast(store.DOCMAP)
    n_prev = prev_docs.num_rows
    new_ids = meta.column("url_id").to_numpy()
    old_doc = np.array([-1 if (d := v.doc_of(int(u))) is None else d for u in new_ids.tolist()], dtype=np.int64)
    appended = old_doc < 0
    doc = old_doc.copy()
    doc[appended] = n_prev + np.arange(int(appended.sum()))
    n = n_prev + int(appended.sum())
    # H: the live rows, the touched rows replaced, new documents appended.
    h = np.empty((n, minhash.m), dtype=np.uint32)
    h[:n_prev] = v.h
    h[doc] = sigs
    store.write_array_atomic(h.reshape(-1), os.path.join(signed, store.H_FILE))
    if fine_m:  # H2 likewise
        h2 = np.empty((n, fine_m), dtype=np.uint8)
        h2[:n_prev] = v.h2
        h2[doc] = np.fromfile(os.path.join(signed, SIG_DIR, "part-00000.u8"), dtype=np.uint8).reshape(-1, fine_m)
        store.write_array_atomic(h2.reshape(-1), os.path.join(signed, store.H2_FILE))
    # Doc map.
    info = _touched_metadata(crawl_dir, new_ids, directory)
    columns = {name: prev_docs.column(name).to_pylist() for name in store.DOCMAP.names}
    for name in columns:
        columns[name].extend([None] * (n - n_prev))
    touched_rows = {
        "doc_id": doc.tolist(), "url_id": new_ids.tolist(), "url": meta.column("url").to_pylist(),
        "title": info.column("title").to_pylist(), "in_degree": info.column("in_degree").to_pylist(),
        "category": info.column("category").to_pylist(), "n_terms": meta.column("n_terms").to_pylist(),
        "indexed": [True] * len(doc), "crawled": info.column("crawled").to_pylist(),
    }
    for name, values in touched_rows.items():
        column = columns[name]
        for d, value in zip(doc.tolist(), values):
            column[d] = value
    pq.write_table(pa.table(columns, schema=store.DOCMAP), os.path.join(signed, store.DOCMAP_FILE))
    ids = np.asarray(columns["url_id"], dtype=np.uint64)
    order = np.argsort(ids, kind="stable")
    store.write_array_atomic(ids[order], os.path.join(signed, store.URLS_FILE))
    store.write_array_atomic(order.astype(np.uint32), os.path.join(signed, store.URL_DOCS_FILE))
    found = crawl_parts(crawl_dir)
    store.write_aliases(signed, crawl_copies(found).aliases, ids[order], order)
    bag_files = _write_bags(v, bags, doc, signed)
    # What changed, for what is kept per document beside the index (simweb.tasks.precomputed).
    store.write_array_atomic(np.sort(doc).astype(np.uint32), os.path.join(signed, store.UPDATED_DOCS_FILE))
    with open(os.path.join(signed, "signatures.json"), "w") as f:
        json.dump({"n_docs": n, "minhash": minhash.to_dict(), "metric": v.metric,
                   "updated_from": store.sha256(os.path.join(live, store.MANIFEST)),
                   "stats": {"updated_docs": int((~appended).sum()), "new_docs": int(appended.sum())},
                   "bags": bag_files}, f, indent=1)
    shutil.rmtree(os.path.join(signed, SIG_DIR), ignore_errors=True)
    version = os.path.join(out, "version")
    stats = write_index_version(signed, version, min_in_degree=params.min_in_degree)
    return {**stats, "updated_docs": int((~appended).sum()), "new_docs": int(appended.sum())}


def _write_bags(v: store.IndexVersion, bags: pa.Table, doc: np.ndarray, folder: str) -> list[dict[str, Any]]:
    """The bags files of the new version in ``folder``: the live version's bags with the touched
    documents' (``bags``, of the documents ``doc``) replaced and the new documents' appended.

    A file of the live version that holds no touched document is copied as it is (checked
    against its digest); one that does is written again a row group at a time; the new
    documents fill the last file up to store.BAG_FILE_DOCS (it is written again only if it has
    room) and go on into new files, as a build of the grown index would lay them out. Returns
    the files (BagFile dicts), in id order."""
    if np.unique(doc).size != doc.size:
        raise ValueError("the touched bags name a document twice")
    columns = pa.schema([store.INDEX_BAGS.field("terms"), store.INDEX_BAGS.field("weights")])
    order = np.argsort(doc, kind="stable")
    touched, new = doc[order], bags.take(pa.array(order)).select(columns.names).cast(columns)
    appended = int(np.searchsorted(touched, v.n_docs))  # new[appended:] are the new documents
    old = v.bag_files
    files: list[dict[str, Any]] = []
    filled = False  # whether the new documents went on from the last file's
    for k, f in enumerate(old):
        lo, hi = np.searchsorted(touched, [f.first_doc, f.first_doc + f.docs])
        # The new documents come after the last file's, in it while it has room.
        fills = k == len(old) - 1 and appended < touched.size and f.docs < store.BAG_FILE_DOCS
        if lo == hi and not fills:
            store.copy_file(os.path.join(v.path, f.file), os.path.join(folder, f.file),
                            v.manifest["files"][f.file]["sha256"])
            files.append(f.to_dict())
            continue
        writer = store.BagsWriter(folder, f.first_doc, store.BAG_FILE_DOCS if fills else f.docs)
        source = pq.ParquetFile(os.path.join(v.path, f.file))
        at = f.first_doc  # the first document of the row group
        for g in range(source.num_row_groups):
            group = source.read_row_group(g, columns=columns.names).cast(columns)
            a, b = np.searchsorted(touched, [at, at + group.num_rows])
            if a < b:  # take row i of the group, or for a touched one its new bag (after the group's rows)
                pick = np.arange(group.num_rows, dtype=np.int64)
                pick[touched[a:b] - at] = group.num_rows + np.arange(a, b)
                group = pa.concat_tables([group, new]).take(pa.array(pick))
            writer.write(group)
            at += group.num_rows
        if at != f.first_doc + f.docs:
            raise store.IndexFormatError(f"{v.path}/{f.file}: expected {f.docs} bags, found {at - f.first_doc}; "
                                         "rebuild the index")
        if fills:
            writer.write(new.slice(appended))
            filled = True
        files.extend(x.to_dict() for x in writer.close())
    if appended < touched.size and not filled:  # the last file is full, or the index had no documents
        writer = store.BagsWriter(folder, v.n_docs)
        writer.write(new.slice(appended))
        files.extend(x.to_dict() for x in writer.close())
    return files


class NotIncremental(Exception):
    """An update found, once it computed the touched bags, that it cannot be incremental: the
    message says why (documents it would have to remove)."""


def _emptied_documents(live: str, delta_bags: str, touched: np.ndarray) -> int:
    """How many touched URLs have a document in the live index and no bag any more (an
    incremental update replaces and adds documents, never removes one)."""
    bagged = read_parquet_file(join(delta_bags, "part-00000.parquet"), ["url_id"]).column("url_id").to_numpy()
    version = store.open_version(live)
    return sum(version.doc_of(u) is not None for u in np.setdiff1d(touched, bagged).tolist())


def update(out: str, crawl_dir: str, new_parts: list[str], epoch: Epoch, strategy: Strategy, params,
           directory: str | None, live: str) -> tuple[str, dict[str, bool], dict[str, Any]]:
    """Bring the index in ``out`` up to date incrementally (see the module docstring); the live
    version, per stage whether it was reused, and the stats."""
    stages = stages_folder(out)
    touched = touched_urls(crawl_dir, new_parts)
    crawl_identity = parts_identity(crawl_parts(crawl_dir))
    snapshot = epoch.snapshot()

    def bags_compute(tmp: str) -> dict[str, Any]:
        with local_stand_in(tmp) as local:  # the stage folder may be on an object store
            return touched_bags(crawl_dir, strategy, touched, snapshot, local)

    delta = run_stage(stages, STAGE_DELTA_BAGS,
                      {**crawl_identity, "touched": [f"parts:{','.join(sorted(new_parts))}"]},
                      {"strategy": strategy.bag_params(), "df_snapshot": snapshot.identity()}, bags_compute)
    emptied = _emptied_documents(live, delta.path, touched)
    if emptied:
        raise NotIncremental(f"the new files leave {emptied} document(s) of the index with nothing to describe them "
                             "(their in-links came from captures the new files supersede)")

    def index_compute(tmp: str) -> dict[str, Any]:
        with local_stand_in(tmp) as local:
            return updated_version(live, delta.path, crawl_dir, params, directory, local)

    live_identity = json.dumps(store.read_manifest(live), sort_keys=True)
    inputs = {"delta": delta, "live": [live_identity], **({"directory": file_identities([directory])} if directory else {})}
    version = run_stage(stages, STAGE_DELTA_INDEX, inputs,
                        {"minhash": params.minhash().to_dict(), "min_in_degree": params.min_in_degree}, index_compute)
    published = store.publish(join(version.path, "version"), out)
    return published, {STAGE_DELTA_BAGS: delta.reused, STAGE_DELTA_INDEX: version.reused}, {
        "touched": int(touched.size), **{k: v for k, v in version.stats.items() if isinstance(v, int)}}
