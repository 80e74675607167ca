"""Where a crawl's archive files are: local paths, object stores, web servers, paths lists.

A crawl is named by any mix of:

- local paths: a WARC or ARC file, a folder (searched recursively), a glob;
- WACZ packages (``*.wacz``, as Browsertrix and ArchiveWeb.page write them), local or remote:
  the WARC files of their archive/ folder, each read from inside the package
  (simweb.tasks.readers.wacz);
- object-store URLs (``s3://bucket/key.warc.gz``; ``s3://bucket/prefix/``, every archive file
  under it; ``s3://bucket/crawl/**/*.warc.gz``, a glob), listed through fsspec (``simweb[s3]``);
- web URLs (``https://host/path/file.warc.gz``): one file each, since a web server lists no
  folders; read through fsspec with HTTP range requests (``simweb[http]``);
- a paths list (:func:`read_paths_list`): a file of one archive path per line, plain or gzipped,
  local or remote, each line joined to a prefix — Common Crawl's ``warc.paths.gz`` with
  ``https://data.commoncrawl.org/`` or ``s3://commoncrawl/``.

Remote files are read streamed, never copied to local disk first; their identity for the
ingest's parts, the stage cache and the inbox ledger is :func:`simweb.tasks.storage.identify`'s
(the store's ETag and size), so a re-run over the same objects reads none of them again.
"""
from __future__ import annotations

import logging
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass

from simweb.core.formats import ARCHIVE_SUFFIXES, OTHER_COMPRESSION_SUFFIXES
from simweb.tasks.readers import archive_files, reader_named
from simweb.tasks.readers.wacz import MEMBER_PROTOCOL
from simweb.tasks.storage import filesystem, protocol_of

_log = logging.getLogger(__name__)
_GLOB_CHARS = re.compile(r"[*?\[]")
#: Protocols whose URLs name one file each: their servers list no folders, and a glob
#: character may be part of the URL (a query string).
SINGLE_FILE_PROTOCOLS = ("http", "https")


def list_archive_files(crawl: str | Iterable[str]) -> list[str]:
    """The archive files of a crawl: a file, a folder (searched recursively), a glob, an
    object-store prefix, a web URL, or a list of them (see the module docstring).

    Folders, prefixes and globs contribute files named ``*.warc``, ``*.warc.gz``, ``*.arc`` or
    ``*.arc.gz``, except hidden ones: a name starting with "." in the part of the path that was
    searched (a download or a copy in progress, ``.tmp-…`` files an interrupted writer left) is
    skipped, and the skipped files are counted in a warning; so are files a crawler is still
    writing, named as Heritrix and warcprox name them (``*.warc.gz.open``). A file named explicitly is taken
    whatever its name, and a web URL is taken without asking its server (an unreachable one is
    reported by the ingest). Raises ``FileNotFoundError`` when nothing matches, naming what was
    looked for.
    """
    items = [crawl] if isinstance(crawl, str) else list(crawl)
    found: list[str] = []
    hidden: list[str] = []
    packages: list[str] = []  # ZIP files found where archive files were looked for
    left_out: dict[_LeftOut, list[str]] = {kind: [] for kind in _LEFT_OUT}  # files of a kind not read
    for item in items:
        if "://" in item and item.split("://", 1)[0].lower() in SINGLE_FILE_PROTOCOLS + (MEMBER_PROTOCOL,):
            found.append(item)  # a web URL, or a WARC file of a WACZ package already listed
            continue
        fs, path = filesystem(item)
        protocol = protocol_of(fs)
        prefix = "" if protocol in ("file", "local") else f"{protocol}://"
        if prefix:
            fs.invalidate_cache()  # a long-lived process must see objects added since it last listed
        if _GLOB_CHARS.search(path):
            try:
                candidates = [p for p in fs.glob(path) if fs.isfile(p)]
                # Hidden names below the glob's fixed folders are skipped, unless the pattern asks for them.
                searched = None if path.rsplit("/", 1)[-1].startswith(".") else _static_prefix(path)
            except ValueError as err:  # fsspec's "'**' can only be an entire path component"
                raise FileNotFoundError(f"{item}: not a usable glob ({err}); expected e.g. "
                                        f"{prefix}bucket/crawl/**/*.warc.gz") from None
        elif fs.isdir(path):
            candidates, searched = fs.find(path), path.rstrip("/") + "/"
        elif fs.isfile(path) or (not prefix and os.path.islink(path)):
            # A link whose target is gone (as a folder search finds it) is the ingest's to report
            # as a file it could not read, with the others read.
            found += archive_files(prefix + path if prefix else os.path.abspath(path))
            continue
        else:
            raise FileNotFoundError(
                f"{item}: no such file or folder; expected a WARC or ARC file, a folder of them or a glob")
        for p in sorted(candidates):
            name = p.rsplit("/", 1)[-1].lower()
            where = prefix + p if prefix else os.path.abspath(p)
            if name.endswith(".zip"):
                packages.append(where)
            elif kind := next((k for k in _LEFT_OUT if name.endswith(k.suffixes)), None):
                left_out[kind].append(where)
            elif (reader := reader_named(name)) is not None:
                if searched is not None and _is_hidden(p, searched):
                    hidden.append(where)
                else:
                    found += reader.files(where)
    unique = list(dict.fromkeys(found))
    hidden = list(dict.fromkeys(hidden))
    if hidden:
        _log.warning("skipped %d hidden archive file(s) (a name starting with \".\", e.g. %s): files being "
                     "written or left by an interrupted writer; name a file to read it", len(hidden), hidden[0])
    for kind, files in left_out.items():
        if files:
            _log.warning("left out %d %s (e.g. %s): %s", len(files), kind.what, files[0], kind.advice)
    if not unique:
        hint = (f"; {len(packages)} ZIP file(s) there (e.g. {packages[0]}): unzip them and name the WARC files "
                "they hold") if packages else ""
        hint += "".join(f"; found {len(files)} {kind.what} (e.g. {files[0]}): {kind.advice}"
                        for kind, files in left_out.items() if files)
        raise FileNotFoundError(f"no WARC or ARC files (*.warc, *.warc.gz, *.warc.zst, *.arc, *.arc.gz) in {', '.join(items)}{hint}")
    return unique


@dataclass(frozen=True)
class _LeftOut:
    """Files a folder or glob may hold beside a crawl's archive files that are not read: they are
    left out with a warning (``what`` and ``advice``), and named when nothing else was found."""

    suffixes: tuple[str, ...]
    what: str
    advice: str


_LEFT_OUT = (
    # Heritrix and warcprox write NAME.warc.gz.open and rename it when the file is closed.
    _LeftOut(tuple(suffix + ".open" for suffix in ARCHIVE_SUFFIXES),
             "archive file(s) still being written by the crawler (a name ending in \".open\")",
             "they are read once the crawler closes them"),
    _LeftOut(tuple(suffix + ext for suffix in (".warc", ".arc") for ext in OTHER_COMPRESSION_SUFFIXES),
             "archive file(s) compressed with bzip2, xz or lz4, which simweb does not read",
             "decompress them, or compress them record by record with gzip or zstd"),
    # Common Crawl's text (WET) and metadata (WAT) extracts of its WARC files: WARC files
    # themselves, but with no page's HTML.
    _LeftOut((".warc.wet.gz", ".warc.wat.gz", ".warc.wet", ".warc.wat"), "WET or WAT file(s)",
             "they hold the pages' text or metadata, not their HTML and links; name the crawl's WARC files "
             "(Common Crawl: its warc.paths.gz list)"),
)

def _is_hidden(path: str, searched: str) -> bool:
    """Whether a part of ``path`` below the folder ``searched`` starts with "."."""
    below = path[len(searched):] if path.startswith(searched) else path.rsplit("/", 1)[-1]
    return any(part.startswith(".") for part in below.split("/"))


def _static_prefix(pattern: str) -> str:
    """The folders of a glob before its first wildcard ("/crawl/" of "/crawl/**/*.warc.gz")."""
    parts = pattern.split("/")
    first = next(i for i, part in enumerate(parts) if _GLOB_CHARS.search(part))
    return "/".join(parts[:first]) + "/" if first else ""


def crawl_files(crawl: str | Iterable[str], paths_list: str | None = None, paths_prefix: str | None = None) -> list[str]:
    """The archive files of a crawl named by ``crawl`` (:func:`list_archive_files`; may be empty
    when there is a paths list) and by a paths list (:func:`read_paths_list`), in that order,
    each once."""
    items = [crawl] if isinstance(crawl, str) else list(crawl)
    if not items and not paths_list:
        raise FileNotFoundError("no crawl named; expected WARC or ARC files, folders of them, globs or URLs "
                                "(s3://…, https://…), or a paths list")
    files = list_archive_files(items) if items else []
    if paths_list:
        files += read_paths_list(paths_list, paths_prefix)
    return list(dict.fromkeys(files))


class PathsListError(ValueError):
    """A paths list that cannot name a crawl: empty, or relative lines without a prefix."""


def read_paths_list(url: str, prefix: str | None = None) -> list[str]:
    """The archive files a paths list names, in its order, duplicates dropped.

    ``url`` is a local file or remote object, plain or gzipped (``.gz``), with one path per
    line; blank lines and lines starting with ``#`` are ignored. A line that is a URL
    (``https://…``, ``s3://…``) is taken as it is; any other line is joined to ``prefix``
    (``https://data.commoncrawl.org/`` + ``crawl-data/CC-MAIN-…/warc/….warc.gz``). Raises
    ``FileNotFoundError`` when the list is not there, :class:`PathsListError` when it names
    nothing or has relative lines and no prefix was given.
    """
    fs, path = filesystem(url)
    compression = "gzip" if path.lower().endswith(".gz") else None
    try:
        with fs.open(path, "rb", compression=compression) as f:
            lines = [line.strip() for line in f.read().decode("utf-8", "replace").splitlines()]
    except FileNotFoundError:
        raise FileNotFoundError(f"paths list {url}: no such file; expected a list of WARC or ARC paths, one per "
                                "line (as Common Crawl's warc.paths.gz)") from None
    lines = [line for line in lines if line and not line.startswith("#")]
    if not lines:
        raise PathsListError(f"paths list {url} names no file; expected one WARC or ARC path per line "
                             "(as Common Crawl's warc.paths.gz)")
    files = []
    for number, line in enumerate(lines, 1):
        if "://" in line:
            files.append(line)
        elif prefix is None:
            raise PathsListError(
                f"paths list {url}: line {number} ({line[:80]}) is a relative path; give the prefix the "
                "lines are relative to (--paths-prefix; the build-index flow's paths_prefix), e.g. "
                "https://data.commoncrawl.org/ for Common Crawl")
        else:
            files.append(prefix.rstrip("/") + "/" + line.lstrip("/"))
    return list(dict.fromkeys(files))
