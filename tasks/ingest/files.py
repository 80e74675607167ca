"""One archive file ingested into its part of the output folder, once: the part named by the
file's content, its stats record the mark of a finished part; a large file read in pieces and
the pieces finished into the file's part (see simweb.tasks.ingest)."""
from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable, Mapping
from typing import Any

from simweb.tasks.crawl.parts import file_stem, part_files
from simweb.tasks.ingest.parts import DATA_SETS, IngestParts
from simweb.tasks.ingest.records import read_archive
from simweb.tasks.ingest.stats import FileError, IngestStats, unreadable
from simweb.tasks.readers import not_readable
from simweb.tasks.storage import file_digest, filesystem, identify, join, local_path, remove, write_bytes_atomic

__all__ = ["INGEST_FORMAT", "finish_pieces", "ingest_files", "ingest_warc", "part_name", "piece_name", "piece_range"]


# Bumped whenever what a part holds changes (schema, parsing, filtering), so that parts
# written by an older simweb are re-ingested instead of being taken as finished.
# 3: ARC files; damaged files read on past the damage.
# 4: the aliases data set (redirects, canonical links, slash and index variants); pages keep
#    their record's length, SURT key, timestamp and digest for replay.
# 5: 404 and 410 records kept as "gone" rows of the aliases data set (a capture with no page).
# 6: revisit records kept as "revisit" rows of the aliases data set (a capture of an earlier payload).
# 7: of a URL captured more than once in a file, its latest record is kept (not its first).
INGEST_FORMAT = 7

# Damaged places listed per file in its FileError (the totals count them all).
MAX_DAMAGE_LISTED = 100


def part_name(digest: str) -> str:
    return f"part-{digest[:16]}"


def _earlier_ingest(out_dir: str, part: str) -> IngestStats | None:
    """The stats of the finished ingest of ``part`` into ``out_dir``; None if there is none: its
    stats file (written last) is missing or of another format, or its pages and links parts
    do not have the sizes it records (a damaged part is ingested again)."""
    saved = _read_json(join(out_dir, "stats", f"{part}.json"))
    if not _whole(out_dir, saved):
        return None
    try:
        return IngestStats.from_dict(saved["stats"])
    except (KeyError, TypeError, ValueError):
        return None


def _whole(out_dir: str, saved: Any) -> bool:
    """Whether a stats record (a file's or a piece's) is of this format and every file it lists
    — a pages, links and aliases part each at least — has the size it records."""
    if not isinstance(saved, dict) or saved.get("format") != INGEST_FORMAT or not isinstance(saved.get("files"), dict):
        return False
    files = saved["files"]
    if {rel.split("/", 1)[0] for rel in files} != set(DATA_SETS):
        return False
    for rel, meta in files.items():
        dfs, p = filesystem(join(out_dir, rel))
        try:
            if int(dfs.size(p)) != (meta or {}).get("bytes"):
                return False
        except (OSError, TypeError, AttributeError):
            return False
    return True


def _read_json(url: str) -> Any:
    """The JSON at ``url``; None when it is missing or not JSON."""
    fs, path = filesystem(url)
    try:
        with fs.open(path, "rb") as f:
            return json.loads(f.read())
    except (FileNotFoundError, json.JSONDecodeError, UnicodeDecodeError):
        return None


def _part_files(out_dir: str, part: str) -> dict[str, dict[str, Any]]:
    """Size and SHA-256 of a part's pages, links and aliases files, recorded in its stats file."""
    files = {}
    for rel in (f"{data_set}/{part}.parquet" for data_set in DATA_SETS):
        fs, path = filesystem(join(out_dir, rel))
        files[rel] = {"bytes": int(fs.size(path)), "sha256": file_digest(join(out_dir, rel))}
    return files


def piece_name(part: str, k: int, n: int) -> str:
    """The name of piece ``k`` (from 0) of ``n`` of a part: ``part-<h16>.<k+1>of<n>``."""
    return f"{part}.{k + 1}of{n}"


def piece_range(size: int, k: int, n: int) -> tuple[int, int | None]:
    """The bytes [start, stop) of a file of ``size`` bytes in which piece ``k`` of ``n`` finds the
    starts of its records (stop None: to the end)."""
    return k * size // n, (None if k == n - 1 else (k + 1) * size // n)


def ingest_warc(path: str, out_dir: str, piece: tuple[int, int] = (0, 1)) -> IngestStats:
    """Ingest one archive file — WARC or ARC, plain or gzipped (or a .warc.zst), local path or fsspec URL — into
    ``out_dir``; see the module docstring. ``piece`` = (k, n) reads only piece ``k`` of ``n``
    of it (see :func:`finish_pieces`, which then gives the file's stats).

    Returns this file's :class:`IngestStats` (a piece's: its counts and its part, no file
    counted — a piece read earlier only its part and pages, as unchanged; the piece ``k`` = 0
    of a file ingested earlier returns that file's stats, the others nothing).
    Raises ``OSError`` only when the file cannot be read at all (missing, unreadable, I/O
    failure), which is worth retrying; a damaged file is reported in ``file_errors`` instead.
    """
    k, n = piece
    source = local_path(path) or path
    problem = not_readable(path)
    if problem is not None:  # a package with no WARC file in it
        return unreadable(path, problem) if k == 0 else IngestStats()
    identity = identify(path)
    digest = identity.digest
    part = part_name(digest)
    earlier = _earlier_ingest(out_dir, part)
    if earlier is not None:
        if k:
            return IngestStats()
        return IngestStats(
            files_unchanged=1, files_by_format=earlier.files_by_format, pages_unchanged=earlier.pages_written,
            file_errors=tuple(FileError(source, e.reason, e.damage) for e in earlier.file_errors), parts=(part,),
        )
    name = part if n == 1 else piece_name(part, k, n)
    record_path = join(out_dir, "stats", f"{part}.json") if n == 1 else join(out_dir, "pieces", f"{name}.json")
    if n > 1:
        saved = _read_json(record_path)
        if _whole(out_dir, saved) and saved.get("identity") == digest:  # read by a run stopped before the file was finished
            return IngestStats(pages_unchanged=int(saved["stats"].get("pages_written", 0)), parts=(part,))
        fs, pieces = filesystem(join(out_dir, "pieces"))
        fs.makedirs(pieces, exist_ok=True)  # the mark that pieces may be left to remove (_remove_unlisted)
    parts = IngestParts(out_dir, name)
    try:
        fs, fs_path = filesystem(path)
        start, stop = piece_range(int(fs.size(fs_path)), k, n) if n > 1 else (0, None)
        counts = read_archive(path, source, parts, start, stop)
        if counts.later:  # a URL captured again later in the file: read it again, keeping its latest records
            parts.discard()
            parts = IngestParts(out_dir, name)
            counts = read_archive(path, source, parts, start, stop, keep=counts.later)
        parts.publish()
    except BaseException:
        parts.discard()
        raise
    stats = IngestStats(
        files_read=1,
        files_by_format={counts.format: 1},
        records_read=counts.records,
        records_recovered=counts.recovered,
        bytes_skipped=sum(skipped for _, skipped in counts.damage),
        pages_written=parts.pages.rows,
        links_written=parts.links.rows,
        skipped=dict(sorted(counts.skipped.items())),
        links_skipped=dict(sorted(counts.links_skipped.items())),
        alias_evidence=dict(sorted(parts.alias_kinds.items())),
        aliases_skipped=dict(sorted(counts.aliases_skipped.items())),
        file_errors=(FileError(source, counts.error, counts.damage[:MAX_DAMAGE_LISTED]),) if counts.error else (),
        parts=(part,),
    )
    record = {"format": INGEST_FORMAT, "source": source, **identity.basis, "identity": digest,
              "stats": stats.to_dict(), "files": _part_files(out_dir, name)}
    if n > 1:
        record["piece"] = [k, n]
    write_bytes_atomic(json.dumps(record, indent=1, sort_keys=True).encode(), record_path)
    if n > 1:
        return _piece_stats(record)
    fs, pieces = filesystem(join(out_dir, "pieces"))
    if fs.exists(pieces):  # a folder into which no file was read in pieces has none to remove
        _remove_unlisted(out_dir, part, record["files"])
    return stats


def _piece_stats(saved: Mapping[str, Any]) -> IngestStats:
    """What a piece adds to the stage's counts: its records, pages and links, and the part it is
    of, but no file read (its file is counted when it is finished)."""
    return dataclasses.replace(IngestStats.from_dict(saved["stats"]), files_read=0, files_by_format={})


def finish_pieces(path: str, out_dir: str, n: int, part: str) -> IngestStats | None:
    """The stats of a file read in ``n`` pieces, once every piece is done: written as the file's
    stats record (listing the pieces' files; the piece records are then removed) and returned
    as one reading of the file would give them, except that a URL recorded in two pieces is
    written by both (the crawl reader keeps the first). None when a piece is missing."""
    pieces = [_read_json(join(out_dir, "pieces", f"{piece_name(part, k, n)}.json")) for k in range(n)]
    if not all(_whole(out_dir, saved) and saved.get("piece") == [k, n] for k, saved in enumerate(pieces)):
        return None
    each = [IngestStats.from_dict(saved["stats"]) for saved in pieces]
    total = dataclasses.replace(IngestStats.total(map(_piece_stats, pieces)), files_read=1,
                                files_by_format=dict(each[0].files_by_format), parts=(part,))
    errors = [e for stats in each for e in stats.file_errors]
    if errors:
        # The records after the first damage, in its piece and in every piece after it.
        first = next(k for k, stats in enumerate(each) if stats.file_errors)
        recovered = each[first].records_recovered + sum(stats.records_read for stats in each[first + 1:])
        damage = tuple(d for e in errors for d in e.damage)[:MAX_DAMAGE_LISTED]
        total = dataclasses.replace(total, records_recovered=recovered, file_errors=(
            FileError(errors[0].path, "; ".join(e.reason for e in errors), damage),))
    files = {rel: meta for saved in pieces for rel, meta in saved["files"].items()}
    record = {**{key: value for key, value in pieces[0].items() if key != "piece"}, "pieces": n,
              "stats": total.to_dict(), "files": dict(sorted(files.items()))}
    write_bytes_atomic(json.dumps(record, indent=1, sort_keys=True).encode(), join(out_dir, "stats", f"{part}.json"))
    _remove_unlisted(out_dir, part, files)
    for k in range(n):
        fs, p = filesystem(join(out_dir, "pieces", f"{piece_name(part, k, n)}.json"))
        try:
            fs.rm(p)
        except FileNotFoundError:
            pass
    return total


def _remove_unlisted(out_dir: str, part: str, listed: Mapping[str, Any]) -> None:
    """Remove the files of ``part`` that its stats record does not list: those of an earlier
    reading of the file in other pieces (or whole), which the crawl would otherwise read twice."""
    for data_set in DATA_SETS:
        for url in part_files(out_dir, part, data_set):
            if f"{data_set}/{file_stem(url)}.parquet" not in listed:
                remove(url)


def ingest_files(files: Iterable[str], out_dir: str) -> IngestStats:
    """Ingest archive files one after another in this process (no Prefect, no Dask).

    A file that cannot be read at all is reported in ``file_errors`` and skipped.
    """
    total = IngestStats()
    for path in files:
        try:
            total = total + ingest_warc(path, out_dir)
        except OSError as exc:
            total = total + unreadable(path, exc)
    return total
