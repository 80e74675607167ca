"""The ingest's work shared out over worker slots: files packed into shards by bytes, and a
large file cut into pieces read by several slots at once (:func:`plan_shards`)."""
from __future__ import annotations

import heapq
from dataclasses import dataclass

from simweb.tasks.ingest.files import piece_range
from simweb.tasks.readers import open_records
from simweb.tasks.storage import filesystem

__all__ = ["PIECE_BYTES", "SHARDS_PER_SLOT", "SHARD_BYTES", "ShardItem", "plan_shards"]


#: Bytes of archive at or above which a file is a shard of its own: at the ingest's pace (~3 MB
#: of gzipped WARC a second on one core) about twenty seconds of work, next to which a task's
#: own cost (a few hundred ms) is small. Smaller files are packed together up to this size.
SHARD_BYTES = 64 << 20
#: Shards wanted per worker slot, at least, when the files allow: the last to finish are then
#: small, so that no slot waits long for another at the end.
SHARDS_PER_SLOT = 4
#: The smallest piece a file is cut into (about five seconds of work).
PIECE_BYTES = 16 << 20


@dataclass(frozen=True, slots=True)
class ShardItem:
    """A file to ingest in a shard, or piece ``k`` of ``n`` of it."""

    path: str
    k: int = 0
    n: int = 1


def plan_shards(files: list[str], slots: int) -> list[list[ShardItem]]:
    """``files`` in shards to be ingested by ``slots`` worker slots, the largest shard first.

    Work is shared out by bytes. A file of more than ``total / (SHARDS_PER_SLOT × slots)``
    bytes (and at least 2 × PIECE_BYTES) whose records are compressed one by one is cut into
    pieces no larger than that (:func:`ingest_warc`), read at once by several slots: a crawl of
    a few large files would otherwise keep one slot busy with the last of them while the
    others wait (the 100k scale crawl's five files of 30–181 MB on two slots), and one huge
    file would use one slot only. A shard holds at most ``min(SHARD_BYTES, total /
    (SHARDS_PER_SLOT × slots))`` bytes unless it is a single file or piece: every one that
    large is a shard of its own, and the smaller ones are packed, largest first, into the
    lightest shard that still has room. Handed out in this order, each shard to the first slot
    that is free, the slots end close together as far as bytes tell the work (a file's pages
    and links, not its bytes, set its time: the 100k scale crawl's files take 0.34–0.50 s a
    MB on one core). A shard of several files holds at most 64 MB (about half a minute of
    work), so the progress bar and its estimate move file by file on a crawl of many files,
    and a lost worker takes little work with it. A file whose size cannot be read counts as
    the median size (its error is reported when it is ingested); it is not cut."""
    if not files:
        return []
    sizes = []
    for path in files:
        try:
            fs, p = filesystem(path)
            sizes.append(int(fs.size(p) or 0))
        except Exception:  # noqa: BLE001 — reported by the ingest itself
            sizes.append(-1)
    known = sorted(s for s in sizes if s >= 0)
    fill = known[len(known) // 2] if known else 1
    share = sum(s if s >= 0 else fill for s in sizes) // (SHARDS_PER_SLOT * max(1, slots))
    cut_above = max(2 * PIECE_BYTES, share)
    items: list[ShardItem] = []
    loads: list[int] = []
    for path, size in zip(files, sizes):
        n = -(-size // max(PIECE_BYTES, share)) if slots > 1 and size > cut_above and _cuttable(path) else 1
        for k in range(n):
            start, stop = piece_range(size, k, n)
            items.append(ShardItem(path, k, n))
            loads.append(fill if size < 0 else (size if stop is None else stop) - start)
    cap = max(1, min(SHARD_BYTES, share))
    shard_loads: list[int] = []
    members: list[list[int]] = []
    open_shards: list[tuple[int, int]] = []  # (load, shard) of the shards files are packed into
    for i in sorted(range(len(items)), key=lambda i: (-loads[i], i)):
        if loads[i] < cap and open_shards and open_shards[0][0] + loads[i] <= cap:
            _, b = heapq.heappop(open_shards)  # the lightest: if it has no room, none has
            shard_loads[b] += loads[i]
            members[b].append(i)
        else:
            b = len(shard_loads)
            shard_loads.append(loads[i])
            members.append([i])
        if shard_loads[b] < cap:
            heapq.heappush(open_shards, (shard_loads[b], b))
    order = sorted(range(len(shard_loads)), key=lambda b: (-shard_loads[b], b))
    return [[items[i] for i in sorted(members[b])] for b in order]


def _cuttable(path: str) -> bool:
    """Whether the archive file's records are compressed one by one (ArchiveRecords.cuttable)."""
    try:
        with open_records(path) as records:
            return records.cuttable
    except Exception:  # noqa: BLE001 — read whole; its error is reported by the ingest itself
        return False
