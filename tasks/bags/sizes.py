"""How much of the crawl one task of the bags stage holds at once (``part_mb``, :class:`PartSize`)."""
from __future__ import annotations

from dataclasses import dataclass

#: The default working memory of one task of the bags stage, in megabytes (:class:`PartSize`).
PART_MB = 768


@dataclass(frozen=True, slots=True)
class PartSize:
    """How much of the crawl one task of the bags stage holds at once: ``part_mb`` megabytes of
    working memory, turned into rows per slice or partition by what a row costs.

    The costs are the peak RSS of one task above its process's start, over its rows, measured
    on the largest part of the 50k scale corpus (W = 32, STEM, a fresh process each): a links
    slice 786 MiB for 134,217 links (6.0 KB a link: ~100 context words), a pages slice 704 MiB
    for 4,294 pages (168 KB a page), a merge partition 1,043 MiB for 5.6 million fragment rows
    (195 B a row); weighing (110 B a merged row) and signing (158 B a bag entry) a partition
    cost less than merging it. The constants below round these up. A fragments task also holds
    back up to ``buffer_rows`` (a quarter of a merge partition, ~90 B a row) to write them in
    longer runs (:class:`CellFiles`).

    The default, 768 MB, keeps every process of a build under 2 GiB: a Dask worker starts at
    about 0.3 GB (one that an ingest left holding more is restarted before this stage:
    simweb.flows.cluster.fresh_workers), and the flow's own process, which runs the tasks
    itself on a cluster of one worker thread, holds about 0.9 GB after the ingest — so four
    workers fit in 8 GB. A task
    never holds a whole part (a WARC file's pages or links), a whole merge shuffle or the whole
    crawl.
    """

    part_mb: int = PART_MB

    #: Bytes of working memory per link of a fragments slice: its source pages' words, its
    #: window positions and their terms, the summed fragment rows.
    LINK_BYTES = 8_000
    #: Bytes per page of a content fragments slice.
    PAGE_BYTES = 250_000
    #: Bytes per fragment row of a merge partition: the row read, its term encoded, sorted and summed.
    FRAGMENT_ROW_BYTES = 200

    def __post_init__(self) -> None:
        if isinstance(self.part_mb, bool) or not isinstance(self.part_mb, int) or self.part_mb < 16:
            raise ValueError(f"part_mb: expected megabytes of working memory per task, at least 16, got {self.part_mb!r}")

    @property
    def link_rows(self) -> int:
        return max(256, (self.part_mb << 20) // self.LINK_BYTES)

    @property
    def page_rows(self) -> int:
        return max(16, (self.part_mb << 20) // self.PAGE_BYTES)

    @property
    def fragment_rows(self) -> int:
        return max(4096, (self.part_mb << 20) // self.FRAGMENT_ROW_BYTES)

    @property
    def buffer_rows(self) -> int:
        """Fragment rows a fragments task holds back to write them in fewer, longer runs (CellFiles)."""
        return self.fragment_rows // 4
