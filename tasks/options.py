"""The knobs of one run of the stages, built by a flow from its parameters and passed down as one
record (STYLE.md habit 19): they say how the work is cut and how much of what is reused is
checked; none of them changes the index a build publishes."""
from __future__ import annotations

from dataclasses import dataclass

from simweb.tasks.bags.sizes import PART_MB


@dataclass(frozen=True, slots=True)
class RunOptions:
    """``verify``: every reused stage output and the live index checked by content (SHA-256), not
    only by size, and recomputed when damaged. ``part_mb``: the working memory of each task of the
    bags stage (simweb.tasks.bags.sizes.PartSize). ``partitions``: the bags stage's merge
    partitions (None: as many as ``part_mb`` takes). ``io_retries``: how often an archive file that
    could not be read (a transient I/O error) is tried again by the ingest."""

    verify: bool = False
    part_mb: int = PART_MB
    partitions: int | None = None
    io_retries: int = 3
