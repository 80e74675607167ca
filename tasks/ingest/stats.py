"""What the ingest stage did: :class:`IngestStats` (files, records, pages, links, skips by
reason, damaged files), added up over files and shown to people; and what is said when a crawl
gave no page at all (:class:`NothingIngested`)."""
from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from prefect.states import Failed, State

from simweb.tasks.record_starts import FORMATS
from simweb.tasks.storage import local_path

__all__ = ["FileError", "IngestStats", "NothingIngested", "no_page_hint", "nothing_ingested", "unreadable"]


@dataclass(frozen=True, slots=True)
class FileError:
    """An archive file that was damaged or unreadable, and why; ``damage`` lists where a damaged
    file was skipped, as (offset, bytes skipped) — see :class:`simweb.tasks.archives.Gap`."""

    path: str
    reason: str
    damage: tuple[tuple[int, int], ...] = ()


@dataclass(frozen=True, slots=True)
class IngestStats:
    """What the ingest stage did; ``+`` sums two of them (associative and commutative).

    ``files_read`` counts files read in this run, ``files_unchanged`` files skipped because
    the same content was already ingested into the output folder (their ``pages_unchanged``
    pages and their ``file_errors`` are those of that ingest); ``files_by_format`` counts
    both kinds by format ("warc", "arc"; "unknown" for a file in which no record was found).
    ``skipped`` maps a reason (see :data:`SKIP_REASONS`) to the number of records skipped for
    it; ``links_skipped`` the same for links of written pages that were not kept
    (``simweb.core.html`` reasons, such as a ``mailto:`` target). ``alias_evidence`` counts the
    rows of the aliases data set by kind (simweb.core.aliases: redirect records, canonical links,
    slash and index variant names — candidates the crawl reader resolves), ``aliases_skipped``
    the redirects and canonical links that named no alias, by reason. ``file_errors`` lists the
    damaged or unreadable files; a damaged file's records are counted in the other fields,
    ``records_recovered`` those read after its first damage, ``bytes_skipped`` the bytes
    between the damage and the next record that parses. ``parts`` names the parts
    (``part-<h16>``) this run wrote or found unchanged: the identity of the stage's output for
    the stages after it.
    """

    files_read: int = 0
    files_unchanged: int = 0
    files_by_format: Mapping[str, int] = field(default_factory=dict)
    records_read: int = 0
    records_recovered: int = 0
    bytes_skipped: int = 0
    pages_written: int = 0
    pages_unchanged: int = 0
    links_written: int = 0
    skipped: Mapping[str, int] = field(default_factory=dict)
    links_skipped: Mapping[str, int] = field(default_factory=dict)
    alias_evidence: Mapping[str, int] = field(default_factory=dict)
    aliases_skipped: Mapping[str, int] = field(default_factory=dict)
    file_errors: tuple[FileError, ...] = ()
    parts: tuple[str, ...] = ()

    def __add__(self, other: IngestStats) -> IngestStats:
        if not isinstance(other, IngestStats):
            return NotImplemented
        return IngestStats(
            files_read=self.files_read + other.files_read,
            files_unchanged=self.files_unchanged + other.files_unchanged,
            files_by_format=_add_counts(self.files_by_format, other.files_by_format),
            records_read=self.records_read + other.records_read,
            records_recovered=self.records_recovered + other.records_recovered,
            bytes_skipped=self.bytes_skipped + other.bytes_skipped,
            pages_written=self.pages_written + other.pages_written,
            pages_unchanged=self.pages_unchanged + other.pages_unchanged,
            links_written=self.links_written + other.links_written,
            skipped=_add_counts(self.skipped, other.skipped),
            links_skipped=_add_counts(self.links_skipped, other.links_skipped),
            alias_evidence=_add_counts(self.alias_evidence, other.alias_evidence),
            aliases_skipped=_add_counts(self.aliases_skipped, other.aliases_skipped),
            file_errors=tuple(sorted(self.file_errors + other.file_errors, key=lambda e: (e.path, e.reason, e.damage))),
            parts=tuple(sorted(set(self.parts) | set(other.parts))),
        )

    @property
    def records_skipped(self) -> int:
        return sum(self.skipped.values())

    @property
    def usable(self) -> bool:
        """Whether the crawl gave any page (in this run or an earlier one): something to index."""
        return self.pages_written + self.pages_unchanged > 0

    @classmethod
    def total(cls, stats: Iterable[IngestStats]) -> IngestStats:
        result = cls()
        for s in stats:
            result = result + s
        return result

    def to_dict(self) -> dict[str, Any]:
        data = dataclasses.asdict(self)
        data["file_errors"] = [{"path": e.path, "reason": e.reason, "damage": [list(d) for d in e.damage]}
                               for e in self.file_errors]
        data["parts"] = list(self.parts)
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> IngestStats:
        values = dict(data)
        for name in ("files_by_format", "skipped", "links_skipped", "alias_evidence", "aliases_skipped"):
            values[name] = {str(k): int(v) for k, v in data.get(name, {}).items()}
        values["file_errors"] = tuple(
            FileError(e["path"], e["reason"], tuple((int(o), int(n)) for o, n in e.get("damage", ())))
            for e in data["file_errors"])
        values["parts"] = tuple(data["parts"])
        return cls(**values)

    def summary(self) -> str:
        """A few lines for people: files by format, records read, pages and links written, skips,
        file errors with what was recovered from them."""
        files = f"{self.files_read} file{'s' if self.files_read != 1 else ''} read"
        if self.files_unchanged:
            files += f", {self.files_unchanged} unchanged since an earlier ingest (skipped)"
        if self.files_by_format:
            files += "; " + ", ".join(f"{n} {fmt.upper() if fmt in FORMATS else fmt}"
                                      for fmt, n in _by_count(self.files_by_format))
        rows = [
            ("records read", self.records_read, 2),
            ("pages written", self.pages_written, 2),
            ("links written", self.links_written, 2),
            ("records skipped", self.records_skipped, 2),
            *((reason, n, 4) for reason, n in _by_count(self.skipped)),
        ]
        if self.links_skipped:
            rows.append(("links not kept", sum(self.links_skipped.values()), 2))
            rows.extend((reason, n, 4) for reason, n in _by_count(self.links_skipped))
        if self.alias_evidence:
            rows.append(("alias evidence", sum(self.alias_evidence.values()), 2))
            rows.extend((_EVIDENCE_LABELS.get(kind, kind), n, 4) for kind, n in _by_count(self.alias_evidence))
        if self.aliases_skipped:
            rows.append(("redirects and canonical links not taken", sum(self.aliases_skipped.values()), 2))
            rows.extend((reason, n, 4) for reason, n in _by_count(self.aliases_skipped))
        rows.append(("file errors", len(self.file_errors), 2))
        rows.append(("records recovered", self.records_recovered, 4))
        rows.append(("bytes skipped", self.bytes_skipped, 4))
        width = max(indent + len(label) for label, _, indent in rows) + 2
        lines = [f"ingest: {files}"]
        lines += [f"{' ' * indent}{label:<{width - indent}}{n:>10,}" for label, n, indent in rows]
        lines += [f"    {error.path}: {error.reason}" for error in self.file_errors]
        return "\n".join(lines)


_EVIDENCE_LABELS = {"redirect": "redirect records", "canonical": "canonical links",
                    "slash": "slash variant names", "index": "index variant names",
                    "noslash": "noslash variant names"}


def _add_counts(a: Mapping[str, int], b: Mapping[str, int]) -> dict[str, int]:
    total = Counter(a)
    total.update(b)
    return dict(sorted(total.items()))


def _by_count(counts: Mapping[str, int]) -> list[tuple[str, int]]:
    return sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))


def unreadable(path: str, exc: BaseException | str) -> IngestStats:
    """The stats of a file that could not be read at all."""
    reason = exc if isinstance(exc, str) else f"could not be read: {type(exc).__name__}: {exc}"
    return IngestStats(file_errors=(FileError(local_path(path) or path, reason),))


# Files made from a crawl's WARC files that hold no page's HTML (Common Crawl's WET and WAT
# files): what their records are, by the skip reason most of them get.
_EXTRACTS = {"conversion record": "conversion records: the pages' text without their HTML and links, as in a WET file",
             "metadata record": "metadata records: what was found of the pages, without their HTML, as in a WAT file"}


def no_page_hint(stats: IngestStats) -> str:
    """Why files that were read gave no page, when their records tell (WET or WAT files): a
    clause to add to the "nothing usable was read" message, or ""."""
    if not stats.skipped:
        return ""
    reason, count = max(stats.skipped.items(), key=lambda item: item[1])
    if reason not in _EXTRACTS or count < sum(stats.skipped.values()) / 2:
        return ""
    return f"; the files hold {_EXTRACTS[reason]} — simweb reads the crawl's WARC files themselves"


class NothingIngested(Exception):
    """No file of a crawl gave a page: there is nothing to build an index from."""

    def __init__(self, stats: IngestStats):
        self.stats = stats
        super().__init__(
            f"nothing usable was read: the crawl's files gave no HTML page ({len(stats.file_errors)} "
            "damaged or unreadable, listed in the file errors); stopped before the bags stage, no index published"
            + no_page_hint(stats)
        )


def nothing_ingested(stats: IngestStats) -> State:
    """What a flow returns when its crawl gave no page: a Failed state whose result is
    :class:`NothingIngested`, so that the run fails with a one-line message (no traceback in
    its log) and a caller of the flow gets the exception."""
    exc = NothingIngested(stats)
    return Failed(message=str(exc), data=exc)
