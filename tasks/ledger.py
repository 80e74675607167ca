"""The inbox ledger of a crawl folder: which WARC files it holds, by content.

Incremental ingestion (flows/ingest_new_crawl.py) cannot key a whole stage by its inputs,
because the inputs grow. Instead the crawl folder keeps a ledger, ``CRAWL/_ingested.json``,
of the WARC files it has consumed, by the SHA-256 of their bytes (of an inbox on an object
store: of their ETag and size, :func:`simweb.tasks.storage.identify`): a file is ingested once
however often it is dropped into the inbox, renamed or copied; a file that failed is retried
by later runs, up to :data:`MAX_ATTEMPTS` times while its bytes stay the same; and each entry
says whether the live index covers the file yet. The ledger is rewritten whole and atomically
after each batch. Runs that write it hold the index folder's lock (simweb.tasks.layout).
"""
from __future__ import annotations

import datetime as _dt
import json
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from simweb.tasks.crawl.selection import read_selection
from simweb.tasks.ingest.files import part_name
from simweb.tasks.readers import reader_named
from simweb.tasks.storage import filesystem, identify, join, write_bytes_atomic

LEDGER = "_ingested.json"
LEDGER_FORMAT = 1
# A file that failed this many runs in a row is no longer retried until its bytes change.
MAX_ATTEMPTS = 3


@dataclass(frozen=True, slots=True)
class InboxFile:
    """A WARC file found in the inbox, named by the SHA-256 of its bytes."""

    url: str
    size: int
    digest: str

    @property
    def name(self) -> str:
        """The file's name; for a WARC file of a WACZ package, ``<package>/<its name>``."""
        if "::" in self.url:
            member, package = self.url.split("::", 1)
            return f"{package.rstrip('/').rsplit('/', 1)[-1]}/{member.rsplit('/', 1)[-1]}"
        return self.url.rstrip("/").rsplit("/", 1)[-1]


@dataclass(frozen=True, slots=True)
class InboxScan:
    """What an inbox holds relative to the ledger (each list in inbox order)."""

    new: tuple[InboxFile, ...]  # never seen, or failed fewer than MAX_ATTEMPTS times
    already: tuple[InboxFile, ...]  # content already ingested
    duplicates: tuple[InboxFile, ...]  # same bytes as another file of this scan
    given_up: tuple[InboxFile, ...]  # failed MAX_ATTEMPTS times; retried once the bytes change
    unsettled: tuple[str, ...]  # modified too recently: probably still being copied in
    ignored: tuple[str, ...] = ()  # not named *.warc(.gz) / *.arc(.gz) (hidden files are not listed)
    # Entries that are not files, not taken: symbolic links (never followed: a link can point
    # outside the inbox, at /etc/passwd, at itself), folders (not read into), special files
    # (FIFOs, sockets, devices): each (its kind, its URL).
    not_taken: tuple[tuple[str, str], ...] = ()

    def summary(self) -> dict[str, int]:
        counts = {
            "new": len(self.new),
            "already_ingested": len(self.already),
            "duplicate_in_inbox": len(self.duplicates),
            "given_up": len(self.given_up),
            "still_being_written": len(self.unsettled),
            "not_warc": len(self.ignored),
        }
        for kind in NOT_TAKEN:
            counts[kind.replace(" ", "_") + "s"] = sum(1 for k, _ in self.not_taken if k == kind)
        return counts

    def not_taken_text(self) -> str | None:
        """What the inbox holds that was not taken, by kind, with names, in a sentence; None when nothing."""
        if not self.not_taken:
            return None
        said = []
        for kind, why in NOT_TAKEN.items():
            names = [url.rstrip("/").rsplit("/", 1)[-1] for k, url in self.not_taken if k == kind]
            if names:
                shown = ", ".join(names[:10]) + (f" and {len(names) - 10} more" if len(names) > 10 else "")
                said.append(f"{len(names)} {kind}{'s' if len(names) != 1 else ''} ({why}): {shown}")
        return "not taken: " + "; ".join(said)


#: Kinds of inbox entries that are not taken, and why.
NOT_TAKEN = {
    "symbolic link": "never followed: copy or move the file itself into the inbox",
    "folder": "the inbox is not read into folders: move their files up",
    "special file": "not a regular file",
}


def read_ledger(crawl: str) -> dict[str, dict[str, Any]]:
    """The ledger entries of a crawl folder, by content digest (empty when none yet)."""
    url = join(crawl, LEDGER)
    fs, p = filesystem(url)
    try:
        with fs.open(p, "rb") as f:
            document = json.loads(f.read())
    except FileNotFoundError:
        return {}
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise ValueError(
            f"{url}: expected the JSON ledger of ingested WARC files, found unreadable content ({err}); "
            "it is only ever replaced whole, so this file was edited by hand — restore it from a backup "
            "or delete it to re-ingest every file of the inbox"
        ) from None
    if not isinstance(document, dict) or document.get("format") != LEDGER_FORMAT or not isinstance(document.get("files"), dict):
        raise ValueError(
            f"{url}: expected a ledger with format {LEDGER_FORMAT} and a 'files' object, found "
            f"{str(document)[:120]!r}; delete it to re-ingest every file of the inbox"
        )
    return document["files"]


def scan_inbox(inbox: str, crawl: str, *, settle_seconds: float = 60.0) -> InboxScan:
    """List the WARC files of ``inbox`` and sort them against the ledger of ``crawl``.

    Files modified less than ``settle_seconds`` ago are left for the next run, so a file still
    being copied into the inbox is not read half-written. A file whose content the crawl already
    holds — ingested from the inbox, or named by the build (its part is in the crawl's
    selection) — is "already ingested": dropping it in changes nothing.
    """
    fs, inbox_p = filesystem(inbox)
    if not fs.isdir(inbox_p):
        raise FileNotFoundError(
            f"inbox {inbox}: expected a folder of WARC or ARC files, found nothing there; create it and drop "
            f"*.warc / *.warc.gz / *.warc.zst / *.arc / *.arc.gz files into it"
        )
    ledger = read_ledger(crawl)
    in_crawl = set(read_selection(crawl) or ())
    now = time.time()
    new, already, duplicates, given_up, unsettled, ignored = [], [], [], [], [], []
    seen: set[str] = set()
    not_taken: list[tuple[str, str]] = []
    for info in sorted(fs.ls(inbox_p, detail=True), key=lambda e: e["name"]):
        name = info["name"].rstrip("/").rsplit("/", 1)[-1]
        if name.startswith("."):
            continue
        if info.get("islink") or info.get("type") != "file":
            kind = ("symbolic link" if info.get("islink") else "folder" if info.get("type") == "directory"
                    else "special file")
            not_taken.append((kind, join(inbox, name)))
            continue
        url = join(inbox, name)
        reader = reader_named(name)
        if reader is None:
            ignored.append(url)
            continue
        try:
            modified = fs.modified(info["name"]).timestamp()
        except (NotImplementedError, OSError):
            modified = None
        if modified is not None and now - modified < settle_seconds:
            unsettled.append(url)
            continue
        # A WACZ package is its WARC files, each read from inside it (simweb.tasks.readers.wacz).
        members = reader.files(url)
        for member in members:
            size = int(info.get("size") or 0) if member == url else _size(member)
            item = InboxFile(url=member, size=size, digest=identify(member).digest)
            entry = ledger.get(item.digest)
            if (entry is not None and entry.get("status") == "ingested") or part_name(item.digest) in in_crawl:
                already.append(item)
            elif item.digest in seen:
                duplicates.append(item)
            elif entry is not None and int(entry.get("attempts", 0)) >= MAX_ATTEMPTS:
                given_up.append(item)
            else:
                new.append(item)
            seen.add(item.digest)
    return InboxScan(tuple(new), tuple(already), tuple(duplicates), tuple(given_up), tuple(unsettled), tuple(ignored),
                     tuple(not_taken))


def record_ingestion(crawl: str, outcomes: list[tuple[InboxFile, Mapping[str, Any] | None, str | None]]) -> str:
    """Add ``(file, stats, error)`` outcomes to the ledger of ``crawl`` and rewrite it atomically.

    ``error`` None marks the file ingested; otherwise it is recorded as failed with the reason,
    and its attempt count grows (see :data:`MAX_ATTEMPTS`).
    """
    ledger = dict(read_ledger(crawl))
    at = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="microseconds")
    for item, stats, error in outcomes:
        previous = ledger.get(item.digest, {})
        entry = {"name": item.name, "url": item.url, "size": item.size, "at": at}
        if error is None:
            entry.update(status="ingested", indexed=False, stats=json.loads(json.dumps(dict(stats or {}))))
        else:
            entry.update(status="failed", reason=error, attempts=int(previous.get("attempts", 0)) + 1)
        ledger[item.digest] = entry
    return _write_ledger(crawl, ledger)


def mark_indexed(crawl: str, digests: list[str] | tuple[str, ...]) -> str:
    """Record that the index now covers the ingested files ``digests`` (rewritten atomically)."""
    ledger = dict(read_ledger(crawl))
    unknown = sorted(set(digests) - set(ledger))
    if unknown:
        raise KeyError(f"{len(unknown)} digest(s) are not in the ledger of {crawl}, e.g. {unknown[0]}; "
                       "expected digests of files recorded by record_ingestion")
    for digest in digests:
        ledger[digest] = {**ledger[digest], "indexed": True}
    return _write_ledger(crawl, ledger)


def not_indexed(crawl: str) -> list[str]:
    """Digests of files ingested but not yet covered by the index (an update failed or is due)."""
    return sorted(d for d, e in read_ledger(crawl).items() if e.get("status") == "ingested" and not e.get("indexed"))


def _write_ledger(crawl: str, ledger: dict[str, dict[str, Any]]) -> str:
    text = json.dumps({"format": LEDGER_FORMAT, "files": ledger}, sort_keys=True, indent=1).encode()
    return write_bytes_atomic(text, join(crawl, LEDGER))


def ingested_digests(crawl: str) -> list[str]:
    """Content digests of every WARC file the crawl folder holds, sorted (its identity for caching)."""
    return sorted(d for d, e in read_ledger(crawl).items() if e.get("status") == "ingested")


def file_outcomes(files: tuple[InboxFile, ...], stats) -> list[tuple[InboxFile, dict | None, str | None]]:
    """``(file, stats, error)`` per inbox file after an ingest whose summed IngestStats is
    ``stats``: ingested when its part is among the stage's parts, else failed with the reason."""
    errors = {e.path: e.reason for e in stats.file_errors}
    outcomes = []
    for f in files:
        damage = _error_for(errors, f)
        if part_name(f.digest) in stats.parts:
            outcomes.append((f, {"part": part_name(f.digest), "damage": damage}, None))
        else:
            outcomes.append((f, None, damage or "no output was written for this file"))
    return outcomes


def _size(url: str) -> int:
    fs, path = filesystem(url)
    return int(fs.size(path))


def _error_for(errors: dict[str, str], f: InboxFile) -> str | None:
    for path, reason in errors.items():
        if path == f.url or path.endswith("/" + f.name):
            return reason
    return None


def crawl_selection(crawl: str, built: Iterable[str], *, keep_earlier: bool = False) -> list[str]:
    """The parts that make up the crawl after a build whose named files gave the parts ``built``:
    those, and the files the inbox added (ingested, in the ledger) — nothing left by earlier
    builds, unless ``keep_earlier`` (then the crawl's parts so far stay too)."""
    parts = set(built) | {part_name(d) for d in ingested_digests(crawl)}
    if keep_earlier:
        earlier = read_selection(crawl)
        if earlier is None:
            fs, stats = filesystem(join(crawl, "stats"))
            found = fs.ls(stats, detail=False) if fs.exists(stats) else []
            earlier = [p.rsplit("/", 1)[-1].removesuffix(".json") for p in found
                       if p.endswith(".json") and not p.rsplit("/", 1)[-1].startswith(".")]
        parts |= set(earlier)
    return sorted(parts)
