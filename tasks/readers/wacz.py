"""WACZ packages (Webrecorder's format, as Browsertrix and ArchiveWeb.page write them): a ZIP file
whose archive/ folder holds the crawl's WARC files. A reader of simweb.tasks.readers: a package is
read through its WARC files, each from inside the package by an fsspec URL of its own (:func:`files`);
it has no records of its own."""
from __future__ import annotations

import logging

from simweb.core.formats import ARCHIVE_SUFFIXES, WACZ_SUFFIX
from simweb.tasks.storage import filesystem

NAME = "WACZ package"
SUFFIXES = (WACZ_SUFFIX,)
#: A package's files are read through their own records, not the package's.
records = None
# Its warnings are the folder listing's (simweb.tasks.sources), which opens the packages it finds.
_log = logging.getLogger("simweb.tasks.sources")

MEMBER_PROTOCOL = "zip"


def files(package: str) -> list[str]:
    """The WARC (or ARC) files of the WACZ ``package`` (a path or URL), each as an fsspec URL
    that reads it from inside the package (``zip://archive/data.warc.gz::/crawls/site.wacz``),
    in name order. A package that is no ZIP file, or holds no archive file under archive/, is
    listed as itself, for the ingest to report as a file it could not read."""
    import zipfile

    fs, path = filesystem(package)
    try:
        with fs.open(path, "rb") as f, zipfile.ZipFile(f) as z:
            names = sorted(n for n in z.namelist()
                           if n.startswith("archive/") and n.lower().endswith(ARCHIVE_SUFFIXES))
    except (zipfile.BadZipFile, OSError, EOFError):
        return [package]
    if not names:
        _log.warning("%s: a WACZ package with no WARC file in its archive/ folder", package)
        return [package]
    return [f"{MEMBER_PROTOCOL}://{n}::{package}" for n in names]


def problem(package: str) -> str:
    """What is wrong with a WACZ package that gave no WARC file to read (:func:`files`
    listed it as itself), for the ingest to report instead of reading it as an archive file."""
    import zipfile

    fs, path = filesystem(package)
    try:
        with fs.open(path, "rb") as f, zipfile.ZipFile(f) as z:
            names = z.namelist()
    except zipfile.BadZipFile as exc:
        return (f"a WACZ package that is not a readable ZIP file ({exc}): it is cut short or damaged, or no WACZ "
                "at all; copy or download it again")
    except (OSError, EOFError) as exc:
        return f"a WACZ package that cannot be read: {type(exc).__name__}: {exc}"
    held = ", ".join(names[:5]) + (f" and {len(names) - 5} more" if len(names) > 5 else "") if names else "nothing"
    in_archive = [n for n in names if n.startswith("archive/")]
    found = (f"its archive/ folder holds no WARC or ARC file ({', '.join(in_archive[:3])})" if in_archive
             else "it has no archive/ folder")
    return (f"a WACZ package without a WARC file to read: {found}, and it holds {held}; a WACZ keeps its crawl as "
            "WARC files under archive/ (e.g. archive/data.warc.gz) — make the package again with its WARC files")
