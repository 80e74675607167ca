"""The ingest stage (paper Section 6.1 scans the repository): WARC and ARC files into the crawl
folder that simweb.tasks.crawl reads, in shards of files (or of pieces of a large file;
simweb.tasks.ingest.shards.plan_shards), one simweb.tasks.ingest.task.ingest_shard task each, on
the workers the flow gives it (simweb.tasks.options.Workers); their stats summed — a file read in
pieces finished once all its pieces are in, and a shard whose task failed reported for each of its
files."""
from __future__ import annotations

from collections.abc import Sequence

from simweb.tasks.full_disk import full_disk_error
from simweb.tasks.ingest.files import finish_pieces
from simweb.tasks.ingest.shards import plan_shards
from simweb.tasks.ingest.stats import IngestStats, unreadable
from simweb.tasks.ingest.task import ingest_shard
from simweb.tasks.options import HERE, RunOptions, Workers
from simweb.tasks.progress import track

NAME = "ingest"


def ingest_stage(files: list[str], out: str, options: RunOptions = RunOptions(), *,
                 on: Workers = HERE) -> IngestStats:
    """Ingest every WARC or ARC file into ``out``: on a cluster (``on``), one ``ingest_shard`` task
    per shard of files or of pieces of a large file, the largest first; summed stats. A file read
    in pieces is finished here, once all its pieces are in.

    A file that cannot be read (after ``options.io_retries`` retries of transient I/O errors) is
    reported in the stats' ``file_errors`` and skipped; the other files are not affected.
    Without a cluster the files are ingested here, one after another (``on.call``: in a flow run,
    each file a task run of its own).
    """
    if on.slots is None:
        return IngestStats.total(stats for path in track(files, NAME, "files")
                                 for stats in on.call(ingest_shard, paths=[path], out=out,
                                                      io_retries=options.io_retries))
    shards = plan_shards(files, on.slots)
    calls = [{"paths": [item.path for item in shard], "pieces": [[item.k, item.n] for item in shard],
              "out": out, "io_retries": options.io_retries} for shard in shards]
    pieces = [item for shard in shards for item in shard if item.n > 1]
    what = f"shards of {len(files)} WARC file(s)" + (
        f" ({len(pieces)} pieces of {_large_files(len({item.path for item in pieces}))})" if pieces else "")
    return ingested(shards, on.map(ingest_shard, calls, NAME, what), out)


def ingested(shards: Sequence[Sequence], outcomes: Sequence[object], out: str) -> IngestStats:
    """The summed stats of the ``shards`` ingested into ``out`` from each shard's task ``outcome``
    (its list of stats, or what its failure left). A full disk stops the stage."""
    results: list[IngestStats] = []
    cut: dict[str, list[IngestStats]] = {}
    for shard, outcome in zip(shards, outcomes):
        if full_disk_error(outcome) is not None:  # the output's disk, not the files: the stage stops
            raise full_disk_error(outcome)
        if not isinstance(outcome, list):  # the worker running the shard was lost: say so for each of its files
            outcome = [unreadable(item.path, f"not ingested: its task failed: {_reason(outcome)}") for item in shard]
        for item, stats in zip(shard, outcome):
            if item.n == 1:
                results.append(stats)
            else:
                cut.setdefault(item.path, []).append(stats)
    for path, pieces_read in cut.items():
        results.append(_finish_pieces(path, out, pieces_read))
    return IngestStats.total(results)


def _large_files(n: int) -> str:
    """"N large file(s)", for the ingest's progress line."""
    return f"{n} large file{'s' if n != 1 else ''}"


def _finish_pieces(path: str, out: str, pieces: list[IngestStats]) -> IngestStats:
    """The stats of a file read in pieces: the file's, once every piece is in; else the file
    is unreadable, for the reasons its pieces gave."""
    unchanged = [stats for stats in pieces if stats.files_unchanged]
    if unchanged:  # ingested whole before: its first piece says so, the others read nothing
        return unchanged[0]
    failed = [error.reason for stats in pieces if not stats.parts for error in stats.file_errors]
    part = next((name for stats in pieces for name in stats.parts), None)
    try:
        done = None if failed or part is None else finish_pieces(path, out, len(pieces), part)
    except OSError as exc:
        if full_disk_error(exc) is not None:
            raise
        return unreadable(path, f"could not be read: {type(exc).__name__}: {exc}")
    if done is None:
        return unreadable(path, f"not ingested: a piece of it could not be read: {failed[0] if failed else 'missing'}")
    return done


def _reason(outcome: object) -> str:
    if isinstance(outcome, BaseException):
        return f"{type(outcome).__name__}: {outcome}"
    return str(outcome)
