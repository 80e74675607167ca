"""Which capture of a URL counts (see simweb.tasks.crawl, "Captures"), and the pages merged into
another as its aliases."""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from simweb.core.aliases import REDIRECT, AliasMap
from simweb.tasks import schemas
from simweb.tasks.crawl.aliases import GONE, REVISIT, crawl_aliases, read_evidence
from simweb.tasks.crawl.parts import CrawlParts, file_stem
from simweb.tasks.crawl.read import open_part, read_part

__all__ = ["CAPTURE_RULE", "EPOCH", "DuplicateCopies", "capture_dates", "crawl_copies", "duplicate_copies"]

#: The capture date of a record whose WARC-Date is missing or invalid, or of a part written
#: before the ingest kept dates: older than every dated capture.
EPOCH = "00000000000000"
#: Named in the identity of every stage that reads the crawl (simweb.tasks.crawl.parts.crawl_identity),
#: so that outputs computed under another rule are not reused (2: a gone URL is no document).
CAPTURE_RULE = "latest-capture-2"


@dataclass(frozen=True, slots=True, eq=False)
class DuplicateCopies:
    """Per part file (:func:`file_stem`), the URL ids whose page there is not the URL's latest
    capture; the ids of the pages merged into another crawled page as its aliases (left out of
    every part); the crawl's resolved aliases; what the rule set aside (``counts``:
    ``captures_superseded`` page rows, ``pages_gone`` and ``pages_redirected`` URLs whose latest
    capture answered 404/410 or a redirect, ``captures_after_as_of`` captures of any kind,
    ``pages_of_revisits``); for a crawl read as of a date, the oldest and newest capture dates of
    its pages (``dates``); the pages captured last by a revisit (``redated``); and the URLs
    whose latest capture answered 404 or 410 (``gone``)."""

    by_part: dict[str, np.ndarray]
    merged: np.ndarray = field(default_factory=lambda: np.zeros(0, np.uint64))
    aliases: AliasMap = field(default_factory=AliasMap)
    counts: dict[str, int] = field(default_factory=dict)
    dates: tuple[str, str] | None = None
    #: (URL ids, 14-digit dates) of the pages whose latest capture is a revisit: captured at that date.
    redated: tuple[np.ndarray, np.ndarray] = field(default_factory=lambda: (np.zeros(0, np.uint64), np.zeros(0, "<U14")))
    #: The URL ids whose latest capture answered 404 or 410, crawled as pages before or not: no
    #: document at all, though pages link to them (those links count in the linking pages' bags).
    gone: np.ndarray = field(default_factory=lambda: np.zeros(0, np.uint64))

    def captured(self, ids: np.ndarray, stamps: np.ndarray) -> np.ndarray:
        """``stamps``, the dates of the page rows of ``ids``, with a revisit's date for a revisited page."""
        if not self.redated[0].size:
            return stamps
        at = {int(u): str(t) for u, t in zip(*self.redated)}
        return np.asarray([at.get(int(u), t) for u, t in zip(ids.tolist(), stamps.tolist())], dtype=object)

    def of(self, url: str) -> np.ndarray:
        """The URL ids a pages part, or the source ids a links part, loses to other parts or pages."""
        own = self.by_part.get(file_stem(url))
        if own is None:
            return self.merged
        return np.concatenate([own, self.merged]) if self.merged.size else own


def crawl_copies(found: CrawlParts) -> DuplicateCopies:
    """:func:`duplicate_copies` of a crawl's parts, as of its date when it has one."""
    return duplicate_copies(found.pages, found.aliases, found.as_of)


def capture_dates(dates: tuple[str, str], as_of: str | None) -> str:
    """The capture dates a build used, for people: "captures of 2020-06-01 to 2020-06-01 (as of 2021-01-01 23:59:59)"."""
    def day(stamp: str) -> str:
        return "no valid date" if stamp == EPOCH else f"{stamp[:4]}-{stamp[4:6]}-{stamp[6:8]}"

    when = f" (as of {day(as_of)} {as_of[8:10]}:{as_of[10:12]}:{as_of[12:]} UTC)" if as_of else ""
    return f"captures of {day(dates[0])} to {day(dates[1])}{when}"


def _stamps(table: pa.Table) -> np.ndarray:
    """The 14-digit capture dates of ``table``'s rows (:data:`EPOCH` where there is none)."""
    if "timestamp" not in table.column_names:
        return np.full(table.num_rows, EPOCH, dtype="<U14")
    column = pc.fill_null(table.column("timestamp"), "")
    stamps = np.asarray(column.to_numpy(zero_copy_only=False), dtype="<U14")
    stamps[stamps == ""] = EPOCH
    return stamps


def _page_places(url: str, rows: np.ndarray) -> pa.Table:
    """timestamp, source_file, record_offset of ``rows`` of a pages part (timestamp read when the part has it)."""
    part = open_part(url, schemas.PAGES, ["source_file", "record_offset"])
    names = part.schema_arrow.names
    columns = ["source_file", "record_offset"] + [c for c in ("timestamp", "digest") if c in names]
    table = read_part(url, schemas.PAGES, columns).take(pa.array(rows))
    return _places(table)


def _places(table: pa.Table) -> pa.Table:
    """What the rule compares of captures: date (14 digits), file, offset, payload digest ("" for none)."""
    digest = (pc.fill_null(table.column("digest"), "") if "digest" in table.column_names
              else pa.array([""] * table.num_rows, pa.string()))
    return pa.table({"timestamp": pa.array(_stamps(table)), "source_file": table.column("source_file"),
                     "record_offset": table.column("record_offset"), "digest": digest})


def duplicate_copies(page_parts: Sequence[str], alias_parts: Sequence[str] = (),
                     as_of: str | None = None) -> DuplicateCopies:
    """Which captures of the crawl count: per URL the latest by (WARC-Date, source_file,
    record_offset, part) among its pages, its redirect, 404/410 and revisit records, of those
    dated at or before ``as_of`` (14 digits) when given. A page not so chosen is dropped with
    its links; a redirect chosen makes the URL an alias, a 404/410 chosen (or a URL's one
    capture) leaves it no page and no document (``gone``), a revisit chosen gives it the page it
    revisits (:func:`_revisited`); the other records' alias evidence (a page's canonical link and
    variant names) goes with them.
    Repeats within the winning part are left to the Corpus (first row wins); the ingest writes none.

    Columnar and light: the URL ids of every part (8 bytes a page) find the URLs captured more
    than once, and only those rows' dates, source files and offsets are read and compared (every
    row's when read as of a date)."""
    ids, part = [], []
    for i, url in enumerate(page_parts):
        open_part(url, schemas.PAGES, ["url_id", "source_file", "record_offset"])  # the footer's schema
        column = read_part(url, schemas.PAGES, ["url_id"]).column("url_id").to_numpy()
        ids.append(column.astype(np.uint64))
        part.append(np.full(column.size, i, dtype=np.int32))
    evidence = read_evidence(alias_parts)
    if not ids and evidence is None:
        return DuplicateCopies({})
    every = np.concatenate(ids) if ids else np.zeros(0, np.uint64)
    row_part = np.concatenate(part) if part else np.zeros(0, np.int32)
    kinds = (evidence.column("kind").to_numpy(zero_copy_only=False) if evidence is not None
             else np.zeros(0, object))
    capture_rows = np.flatnonzero((kinds == REDIRECT) | (kinds == GONE) | (kinds == REVISIT))
    capture_ids = (evidence.column("url_id").to_numpy()[capture_rows].astype(np.uint64) if evidence is not None
                   else np.zeros(0, np.uint64))
    ids_all = np.concatenate([every, capture_ids])
    if as_of is not None:
        chosen = np.ones(ids_all.size, dtype=bool)
    else:
        order = np.argsort(ids_all, kind="stable")
        same = ids_all[order][1:] == ids_all[order][:-1]
        chosen = np.zeros(ids_all.size, dtype=bool)
        chosen[order[1:][same]] = True
        chosen[order[:-1][same]] = True
    rows = np.flatnonzero(chosen)  # page rows first (in part order), then evidence captures
    pages_n = int(np.searchsorted(rows, every.size))
    page_rows = rows[:pages_n]
    starts = np.concatenate(([0], np.cumsum([a.size for a in ids]))) if ids else np.zeros(1, np.int64)
    places = [_page_places(page_parts[i], page_rows[row_part[page_rows] == i] - starts[i])
              for i in np.unique(row_part[page_rows]).tolist()]
    if evidence is not None:
        places.append(_places(evidence.take(pa.array(capture_rows[rows[pages_n:] - every.size]))))
    copies = _latest(every, row_part, rows, pages_n, places, evidence, capture_rows, as_of, page_parts)
    # A URL whose one capture is a 404 or 410 was not compared: it is gone as well.
    lone = ~chosen[every.size:] & (kinds[capture_rows] == GONE)
    return replace(copies, gone=np.union1d(copies.gone, capture_ids[lone])) if lone.any() else copies


def _latest(every, row_part, rows, pages_n, places, evidence, capture_rows, as_of, page_parts) -> DuplicateCopies:
    """The rule of :func:`duplicate_copies` applied to the ``rows`` read (their ``places``)."""
    table = pa.concat_tables(places) if places else pa.table({"timestamp": pa.array([], pa.string()),
                                                              "source_file": pa.array([], pa.string()),
                                                              "record_offset": pa.array([], pa.int64()),
                                                              "digest": pa.array([], pa.string())})
    stamps = table.column("timestamp").to_numpy(zero_copy_only=False).astype("<U14")
    files = pc.rank(table.column("source_file"), sort_keys="ascending", tiebreaker="dense").to_numpy()
    offsets = table.column("record_offset").to_numpy()
    is_page = np.arange(rows.size) < pages_n
    capture_ids = (evidence.column("url_id").to_numpy()[capture_rows].astype(np.uint64) if evidence is not None
                   else np.zeros(0, np.uint64))
    url = np.concatenate([every[rows[:pages_n]], capture_ids[rows[pages_n:] - every.size]])
    source = np.concatenate([row_part[rows[:pages_n]], np.full(rows.size - pages_n, -1, np.int32)])
    late = stamps > as_of if as_of is not None else np.zeros(rows.size, dtype=bool)
    _, stamp_rank = np.unique(stamps, return_inverse=True)
    best = np.lexsort((source, offsets, files, stamp_rank, ~late, url))  # per URL, the winner last
    last = np.concatenate((url[best][1:] != url[best][:-1], [True])) if best.size else np.zeros(0, bool)
    winner = np.zeros(rows.size, dtype=bool)
    winner[best[last]] = True
    winner &= ~late
    kinds = np.full(rows.size, "page", dtype=object)
    if evidence is not None:
        kinds[pages_n:] = evidence.column("kind").to_numpy(zero_copy_only=False)[capture_rows][rows[pages_n:] - every.size]
    revisits, revisit_rows = _revisited(winner & (kinds == REVISIT), is_page & ~late, url, best,
                                        table.column("digest").to_numpy(zero_copy_only=False))
    winner[revisits] = True
    redated = (url[revisit_rows], stamps[revisit_rows])
    lost = ~winner
    counts = {"captures_superseded": int((lost & ~late & is_page).sum()), "captures_after_as_of": int(late.sum()),
              "pages_of_revisits": int(revisits.size)}
    # Pages: the losers, per part; the page ids the aliases may lead to are the winners' and the unread.
    loser_page = np.flatnonzero(lost & is_page)
    by_part = {file_stem(page_parts[int(i)]): np.unique(url[loser_page][source[loser_page] == i])
               for i in np.unique(source[loser_page]).tolist()}
    dropped = np.zeros(every.size, dtype=bool)
    dropped[rows[loser_page]] = True
    page_ids = np.unique(every[~dropped])
    kept_evidence, gone = None, np.zeros(0, np.uint64)
    if evidence is not None:
        kept_evidence, won = _evidence_kept(evidence, capture_rows, rows[pages_n:] - every.size, winner[pages_n:],
                                            table.slice(0, pages_n), lost[:pages_n])
        had_page = np.isin(won[0], np.unique(every))
        counts.update(pages_redirected=int((had_page & (won[1] == REDIRECT)).sum()),
                      pages_gone=int((had_page & (won[1] == GONE)).sum()))
        gone = np.unique(np.asarray(won[0], np.uint64)[np.asarray(won[1] == GONE, bool)])
    aliases, merged = crawl_aliases(kept_evidence, page_ids)
    dates = None
    if as_of is not None and pages_n:
        kept = stamps[:pages_n].copy()
        kept[revisits] = stamps[revisit_rows]
        kept = kept[winner[:pages_n]]
        dates = (str(min(kept.tolist())), str(max(kept.tolist()))) if kept.size else None
    return DuplicateCopies(by_part, merged, aliases, counts, dates, redated, gone)


def _revisited(revisit: np.ndarray, page: np.ndarray, url: np.ndarray, best: np.ndarray,
               digests: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The page rows that the winning revisit captures (``revisit``) give their URL: per revisit,
    its URL's latest page capture before it with its payload digest, else its latest page
    capture before it (none: the revisit's URL has no page); and the revisit rows they are of."""
    rows = np.flatnonzero(revisit)
    if not rows.size:
        return rows, rows
    position = np.empty(best.size, np.int64)
    position[best] = np.arange(best.size)  # by URL, then the rule's order
    pages = np.flatnonzero(page & np.isin(url, url[rows]))
    by_url: dict[int, list[int]] = {}
    for i in pages[np.argsort(position[pages])].tolist():
        by_url.setdefault(int(url[i]), []).append(i)
    chosen, of = [], []
    for r in rows.tolist():
        before = [i for i in by_url.get(int(url[r]), []) if position[i] < position[r]]
        same = [i for i in before if digests[i] and digests[i] == digests[r]]
        if same or before:
            chosen.append((same or before)[-1])
            of.append(r)
    return np.asarray(chosen, dtype=np.int64), np.asarray(of, dtype=np.int64)


def _evidence_kept(evidence: pa.Table, capture_rows: np.ndarray, read: np.ndarray, won: np.ndarray,
                   page_places: pa.Table, page_lost: np.ndarray) -> tuple[pa.Table, tuple[np.ndarray, np.ndarray]]:
    """The alias evidence that holds: without the redirect, 404/410 and revisit captures that are
    not their URL's latest, without every 404/410 and revisit row (no alias), and without the rows read from a
    page that is not its URL's latest capture (its canonical link, refresh and variant names);
    and the (URL ids, kinds) of the redirect and 404/410 captures that won."""
    kinds = evidence.column("kind").to_numpy(zero_copy_only=False)
    keep = (kinds != GONE) & (kinds != REVISIT)
    keep[capture_rows[read[~won]]] = False
    winners = capture_rows[read[won]]
    won_ids = evidence.column("url_id").to_numpy()[winners].astype(np.uint64)
    if page_lost.any():
        lost = page_places.filter(pa.array(page_lost))
        places = set(zip(lost.column("source_file").to_pylist(), lost.column("record_offset").to_pylist()))
        from_page = np.flatnonzero(keep & (kinds != REDIRECT))
        if from_page.size:
            sub = evidence.take(pa.array(from_page))
            gone = [place in places for place in zip(sub.column("source_file").to_pylist(),
                                                     sub.column("record_offset").to_pylist())]
            keep[from_page[np.asarray(gone, dtype=bool)]] = False
    return evidence.filter(pa.array(keep)), (won_ids, kinds[winners])
