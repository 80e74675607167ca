"""Which parts belong to the crawl: ``CRAWL.json``, the selection a build writes (see
simweb.tasks.crawl)."""
from __future__ import annotations

import json
import re
from collections.abc import Iterable

from simweb.tasks.storage import filesystem, join, write_bytes_atomic

__all__ = ["SELECTION_FILE", "add_to_selection", "as_of_stamp", "left_out_of_selection", "read_selection", "selection_as_of",
           "write_selection"]


SELECTION_FILE = "CRAWL.json"
SELECTION_FORMAT = 1
_PART_NAME = re.compile(r"part-[0-9a-f]{16}")
_STAMP = re.compile(r"[0-9]{14}")


def write_selection(crawl_dir: str, names: Iterable[str], as_of: str | None = None) -> str:
    """Name the parts (``part-<h16>``) that make up the crawl in ``crawl_dir``: ``CRAWL.json``,
    written atomically. Every reader of the folder then reads those parts only, and with
    ``as_of`` (14 digits, UTC) only their captures dated at or before it (simweb.tasks.crawl.copies)."""
    names = sorted(set(names))
    bad = [n for n in names if not isinstance(n, str) or not _PART_NAME.fullmatch(n)]
    if bad:
        raise ValueError(f"expected part names of the form part-<16 hex digits> (as the ingest writes them), "
                         f"got {', '.join(map(repr, bad[:3]))}")
    if as_of is not None and not _STAMP.fullmatch(as_of):
        raise ValueError(f"expected a date as 14 digits (YYYYMMDDhhmmss, UTC), got {as_of!r}")
    data = {"format": SELECTION_FORMAT, "parts": names, **({"as_of": as_of} if as_of else {})}
    return write_bytes_atomic((json.dumps(data, indent=1) + "\n").encode(), join(crawl_dir, SELECTION_FILE))


_AS_OF = re.compile(r"(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2}))?Z?)?")


def as_of_stamp(text: str) -> str:
    """A date a crawl is read as of, as 14 digits (UTC): ``2021-01-01`` (the end of that day),
    ``2021-01-01T12:00`` or ``2021-01-01T12:00:00Z``, or 14 digits already. Raises ValueError."""
    text = str(text).strip()
    if _STAMP.fullmatch(text):
        return text
    match = _AS_OF.fullmatch(text)
    if match is None:
        raise ValueError(f"as-of {text!r}: expected a date such as 2021-01-01 or 2021-01-01T12:00:00Z (UTC)")
    year, month, day, hour, minute, second = match.groups()
    import datetime

    try:
        datetime.datetime(int(year), int(month), int(day), int(hour or 0), int(minute or 0), int(second or 0))
    except ValueError as err:
        raise ValueError(f"as-of {text!r}: {err}") from None
    clock = (hour + minute + (second or "00")) if hour else "235959"
    return f"{year}{month}{day}{clock}"


def left_out_of_selection(crawl_dir: str, names: Iterable[str]) -> list[tuple[str, int]]:
    """The parts the crawl's selection names now and ``names`` does not — the files an earlier
    build read and this one leaves out — as (the file they were read from, pages), from
    their ingest stats (("part-<h16>", 0) where those are gone)."""
    before = read_selection(crawl_dir) or ()
    kept = set(names)
    out = []
    for part in before:
        if part in kept:
            continue
        source, pages = part, 0
        try:
            fs, path = filesystem(join(crawl_dir, "stats", f"{part}.json"))
            with fs.open(path, "rb") as f:
                saved = json.loads(f.read())
            source = str(saved.get("source") or part)
            pages = int(saved.get("stats", {}).get("pages_written", 0))  # written when its file was read
        except (OSError, ValueError, TypeError, AttributeError):
            pass
        out.append((source, pages))
    return out


def add_to_selection(crawl_dir: str, names: Iterable[str]) -> None:
    """Add parts to the crawl's selection; a folder without one holds every part already."""
    selection = read_selection(crawl_dir)
    if selection is not None:
        write_selection(crawl_dir, [*selection, *names], selection_as_of(crawl_dir))


def read_selection(crawl_dir: str) -> tuple[str, ...] | None:
    """The parts ``CRAWL.json`` names, sorted; None when the folder has no such file (then every
    finished part belongs to the crawl). Raises ValueError when the file is not one we wrote."""
    data = _read(crawl_dir)
    return None if data is None else tuple(sorted(set(data["parts"])))


def selection_as_of(crawl_dir: str) -> str | None:
    """The date (14 digits) ``CRAWL.json`` reads the crawl as of, or None: its latest captures."""
    data = _read(crawl_dir)
    return None if data is None else data.get("as_of")


def _read(crawl_dir: str) -> dict | None:
    path = join(crawl_dir, SELECTION_FILE)
    fs, p = filesystem(path)
    try:
        with fs.open(p, "rb") as f:
            raw = f.read()
    except FileNotFoundError:
        return None
    try:
        data = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError):
        data = None
    names = data.get("parts") if isinstance(data, dict) and data.get("format") == SELECTION_FORMAT else None
    as_of = data.get("as_of") if isinstance(data, dict) else None
    if (not isinstance(names, list) or not all(isinstance(n, str) and _PART_NAME.fullmatch(n) for n in names)
            or not (as_of is None or isinstance(as_of, str) and _STAMP.fullmatch(as_of))):
        raise ValueError(f"{path}: expected {{\"format\": {SELECTION_FORMAT}, \"parts\": [\"part-<h16>\", ...]}}, "
                         "found something else; delete it to read every part of the folder, or re-run the build")
    return data
