"""The parts of a crawl folder (those its selection names, or every finished one), the names
of their files, and what a stage reading the crawl is keyed by."""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from simweb.tasks.crawl.read import DamagedPart
from simweb.tasks.crawl.selection import SELECTION_FILE, read_selection, selection_as_of
from simweb.tasks.stagecache import file_identities, stage_manifest
from simweb.tasks.storage import filesystem, join, parts

__all__ = ["CrawlParts", "count_page_rows", "count_part_rows", "crawl_identity", "crawl_of", "crawl_parts", "file_stem",
           "crawl_files_identity", "part_files", "part_of", "parts_identity"]


@dataclass(frozen=True, slots=True)
class CrawlParts:
    """The Parquet parts of a crawl's PAGES, LINKS and ALIASES data sets, sorted by name
    (``aliases`` may be empty: a crawl ingested before they were written has none)."""

    crawl_dir: str
    pages: tuple[str, ...]
    links: tuple[str, ...]
    selected: bool  # named by CRAWL.json rather than found in the folders
    aliases: tuple[str, ...] = ()
    as_of: str | None = None  # the crawl as of this date (14 digits, CRAWL.json): later captures left out

    @property
    def files(self) -> tuple[str, ...]:
        return self.pages + self.links + self.aliases


def crawl_parts(crawl_dir: str) -> CrawlParts:
    """The parts that belong to the crawl in ``crawl_dir`` (see the module docstring).

    Raises FileNotFoundError when a part ``CRAWL.json`` names is missing, or when the folder
    holds no part at all."""
    selection, as_of = read_selection(crawl_dir), selection_as_of(crawl_dir)
    aliases = parts(join(crawl_dir, "aliases"))
    if selection is None:
        pages, links = parts(join(crawl_dir, "pages")), parts(join(crawl_dir, "links"))
    else:
        chosen = set(selection)
        aliases = [url for url in aliases if part_of(url) in chosen]
        pages = [url for url in parts(join(crawl_dir, "pages")) if part_of(url) in chosen]
        links = [url for url in parts(join(crawl_dir, "links")) if part_of(url) in chosen]
        for name in selection:
            for data_set, found in (("pages", pages), ("links", links)):
                if not any(part_of(url) == name for url in found):
                    url = join(crawl_dir, data_set, f"{name}.parquet")
                    raise FileNotFoundError(
                        f"{join(crawl_dir, SELECTION_FILE)} names {name}, but {url} is missing; "
                        "re-run the build (or `simweb ingest` of the crawl's WARC files) to write it again"
                    )
    if not pages and not links:
        raise FileNotFoundError(
            f"no ingested crawl at {crawl_dir}: expected {join(crawl_dir, 'pages')}/part-*.parquet and "
            f"{join(crawl_dir, 'links')}/part-*.parquet as written by `simweb ingest WARC... --out DIR`; "
            "pass that DIR"
        )
    return CrawlParts(crawl_dir, tuple(pages), tuple(links), selection is not None, tuple(aliases), as_of)


def part_of(url: str) -> str:
    """The name (``part-<h16>``) of the part a pages, links or aliases file belongs to (the
    file's, or that of the file it is a piece of: ``part-<h16>.<k>of<n>``)."""
    return file_stem(url).split(".", 1)[0]


def part_files(crawl_dir: str, part: str, data_set: str) -> list[str]:
    """The files of ``part`` in a data set folder of ``crawl_dir``: the file's whole reading
    (``<part>.parquet``, which may be missing) and every piece of it found there
    (``<part>.<k>of<n>.parquet``, see simweb.tasks.ingest)."""
    fs, folder = filesystem(join(crawl_dir, data_set))
    pieces = fs.glob(f"{folder}/{part}.*of*.parquet") if fs.exists(folder) else []
    return [join(crawl_dir, data_set, f"{name}.parquet") for name in [part, *sorted(map(file_stem, pieces))]]


def file_stem(url: str) -> str:
    """The name of a pages, links or aliases file without its ``.parquet``: its part's name, or
    for a piece of a file (simweb.tasks.ingest) ``part-<h16>.<k>of<n>``; the same in the three
    data sets."""
    return url.rstrip("/").rsplit("/", 1)[-1].removesuffix(".parquet")


def crawl_of(data_set: str) -> str:
    """The crawl folder holding a ``pages`` or ``links`` data set folder: a stage given the data
    set reads it as part of its crawl (the selection and the duplicate-copy rule apply)."""
    return data_set.rstrip("/").rsplit("/", 1)[0] if "/" in data_set.rstrip("/") else "."


def crawl_identity(crawl_dir: str) -> dict[str, Any]:
    """What a stage reading the crawl is keyed by: the content of the parts that belong to it,
    the rule choosing among a URL's captures and the date the crawl is read as of.

    A crawl folder that is itself a cached stage output (the dedup stage's) is named by its
    stage key, unless a selection narrows it."""
    found = crawl_parts(crawl_dir)
    manifest = None if found.selected else stage_manifest(crawl_dir)
    if manifest and manifest.get("stage") and manifest.get("key"):
        return {"crawl": f"{manifest['stage']}:{manifest['key']}"}
    return parts_identity(found)


def crawl_files_identity(crawl_dir: str) -> list[str]:
    """The content identities of the crawl's parts and the rule choosing among a URL's captures
    (with the date it is read as of): what a stage that reads the crawl's files is keyed by."""
    from simweb.tasks.crawl.copies import CAPTURE_RULE

    found = crawl_parts(crawl_dir)
    return [*file_identities(found.files), f"captures:{CAPTURE_RULE}" + (f"@{found.as_of}" if found.as_of else "")]


def parts_identity(found: CrawlParts) -> dict[str, Any]:
    """The identity of ``found``'s parts (see :func:`crawl_identity`)."""
    from simweb.tasks.crawl.copies import CAPTURE_RULE

    identity = {"pages": file_identities(found.pages), "links": file_identities(found.links),
                "captures": CAPTURE_RULE + (f"@{found.as_of}" if found.as_of else "")}
    if found.aliases:
        identity["aliases"] = file_identities(found.aliases)
    return identity


def count_page_rows(crawl_dir: str) -> int:
    """Page rows of the crawl's parts, duplicate copies included (the measure of its growth:
    a re-crawled URL counts again), read from the Parquet footers only."""
    return count_part_rows(crawl_parts(crawl_dir).pages)


def count_part_rows(urls: Iterable[str]) -> int:
    """Rows of the parts ``urls``, read from their Parquet footers only."""
    total = 0
    for url in urls:
        fs, path = filesystem(url)
        with fs.open(path, "rb") as f:
            try:
                total += pq.ParquetFile(f).metadata.num_rows
            except pa.ArrowInvalid as err:
                raise DamagedPart(url, err) from None
    return int(total)
