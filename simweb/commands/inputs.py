"""Checks of a command's inputs and outputs made before anything starts (no Prefect server, no
Dask cluster): each returns None when all is well, or the one-line message to print."""
from __future__ import annotations

import os

from simweb.core.formats import (ARCHIVE_SUFFIXES, GZIP_MAGIC, OTHER_COMPRESSIONS, WACZ_SUFFIX, ZIP_MAGIC,
                                  ZSTD_DICT_FRAME, ZSTD_MAGIC)

#: How much of a directory file is read to check it before the run.
HEAD_BYTES = 1 << 16


def directory_problem(path: str, option: str = "--directory") -> str | None:
    """Why ``path`` cannot be a topic directory file (missing, a folder, unreadable, not an Open
    Directory RDF dump or url<TAB>category TSV, declaring XML entities), or None."""
    if "://" in path:
        return None  # a remote file is checked when it is read
    if not os.path.exists(path):
        return f"{option} {path}: no such file; expected an Open Directory RDF dump or a url<TAB>category file"
    if os.path.isdir(path):
        return (f"{option} {path} is a folder; expected a directory file — an Open Directory RDF dump "
                "(content.rdf.u8) or a url<TAB>category file, optionally .gz or .bz2")
    import io
    from collections import Counter

    import fsspec

    from simweb.core.directory import (DirectoryFormatError, DirectoryRefused, UntilCut, iter_odp_rdf, iter_tsv,
                                       nothing_listed, sniff_format)

    try:
        with fsspec.open(path, "rb", compression="infer") as f:
            whole = UntilCut(f)  # a compressed file cut short: what decodes of its start
            head = io.BufferedReader(whole).read(HEAD_BYTES)
    except OSError as err:
        return f"{option} {path} cannot be read ({err}); expected a readable directory file"
    if not head.strip() and whole.cut:
        return (f"{option} {path}: its compressed data is cut short before any of it decodes (a download that "
                "stopped?); expected a whole Open Directory RDF dump or url<TAB>category file")
    if not head.strip():
        return f"{option} {path} is empty; expected an Open Directory RDF dump or url<TAB>category lines"
    if sniff_format(head) == "rdf":
        counts = Counter()
        try:
            counts["listings"] = sum(1 for _ in iter_odp_rdf(io.BytesIO(head), counts))
        except DirectoryRefused as err:
            return f"{option} {path}: {err}"
        except DirectoryFormatError:
            return None  # the head of a larger file ends mid-element: the run reads it whole
        whole_file = len(head) < HEAD_BYTES and not whole.cut
        problem = nothing_listed(counts, "rdf") if whole_file else None
        return f"{option} {path}: {problem}" if problem else None
    lines = head.split(b"\n")[:-1] if len(head) == HEAD_BYTES else head.split(b"\n")
    try:
        listed = sum(1 for _ in iter_tsv(io.BytesIO(b"\n".join(lines))))
    except DirectoryFormatError as err:
        return f"{option} {path}: {err}"
    if not listed:
        listing = next((line for line in lines if b"://" in line and not line.lstrip().startswith(b"#")), b"")
        hint = ""
        for separator, name in ((b",", "commas"), (b";", "semicolons"), (b"|", "'|'")):
            if separator in listing:
                hint = f" (its lines look separated by {name}: save it with tabs between the URL and the category)"
                break
        return (f"{option} {path}: no url<TAB>category line in its first {len(head):,} bytes; expected an Open "
                f"Directory RDF dump or lines of url<TAB>Top/category/path{hint}")
    return None


def output_problem(path: str, option: str = "--out") -> str | None:
    """Why ``path`` cannot be written into (a file, no permission), or None."""
    from simweb.tasks.layout import OutputNotWritable, check_writable

    try:
        check_writable(path)
    except OutputNotWritable as err:
        return f"{option} {err}"
    return None


def local_index_problem(path: str, option: str = "--out") -> str | None:
    """Why ``path`` cannot hold an index: it is remote (an index is a local folder, memory-mapped
    by queries, published by renames and locked by the kernel), or None."""
    if "://" not in path or path.startswith("file://"):
        return None
    return (f"{option} {path}: an index is written to a local folder (queries memory-map it); give a local "
            "folder — the crawl itself may be remote, and --work s3://… keeps the ingested crawl and the stage "
            "outputs on an object store")


def work_problem(url: str) -> str | None:
    """Why ``--work URL`` cannot hold a build's crawl and stage outputs — a local folder that
    cannot be written, a store whose reader is not installed or that does not answer — or None."""
    if "://" not in url or url.startswith("file://"):
        return output_problem(url, "--work")
    if problem := remote_problem(url):
        return f"--work {problem}"
    from simweb.tasks.storage import filesystem

    try:
        fs, path = filesystem(url)
        fs.ls(path.split("/", 1)[0])  # the bucket (or host) is there and these credentials may list it
    except Exception as err:  # noqa: BLE001 — an object store that does not answer or refuses
        said = " ".join(f"{type(err).__name__}: {err}".split())[:200]
        return (f"--work {url}: cannot be listed ({said}); check the URL (the bucket must exist), and the store's "
                "endpoint (AWS_ENDPOINT_URL for an S3-compatible store) and credentials")
    return None


#: fsspec protocols that need an optional extra, and the extra that installs them.
REMOTE_EXTRAS = {"s3": ("s3fs", "s3"), "s3a": ("s3fs", "s3"), "http": ("aiohttp", "http"), "https": ("aiohttp", "http")}


def remote_problem(url: str) -> str | None:
    """Why a remote ``url`` (s3://, http(s)://) cannot be read here — the package that reads it is
    not installed — or None."""
    import importlib.util

    protocol = url.split("://", 1)[0].lower() if "://" in url else ""
    if protocol not in REMOTE_EXTRAS:
        return None
    module, extra = REMOTE_EXTRAS[protocol]
    if importlib.util.find_spec(module) is None:
        return (f"{url}: reading {protocol}:// URLs needs the '{module}' package, which is not installed; "
                f"install simweb's {extra} extra: pip install 'simweb[{extra}]'")
    return None


def not_an_archive(path: str) -> str | None:
    """Why the local file ``path``, named without an archive suffix, is not a WARC (or ARC) file —
    its first bytes are neither "WARC/" nor "filedesc://", plain or gzipped, nor those of a zstd
    frame or of a .warc.zst file's dictionary frame (read by the ingest) — or None."""
    import gzip

    try:
        with open(path, "rb") as f:
            head = f.read(64)
        if head.startswith(GZIP_MAGIC[:2]):
            with gzip.open(path, "rb") as f:
                head = f.read(64)
    except (OSError, EOFError):
        return None  # unreadable or cut: the ingest reports it, with the file's other errors
    if head.lstrip().startswith((b"WARC/", b"filedesc://")) or head.startswith((ZSTD_MAGIC, ZSTD_DICT_FRAME)):
        return None
    for magic, tool in OTHER_COMPRESSIONS:
        if head.startswith(magic):
            return (f"{path} is compressed with {tool}, which simweb does not read; decompress it ({tool} -d) and "
                    "name the WARC file, or compress it record by record with gzip or zstd")
    if head.startswith(ZIP_MAGIC):
        return (f"{path} is a ZIP file, not a WARC file; unzip it and name the WARC files it holds (a WACZ "
                "package is read as it is when its name ends in .wacz)")
    shown = head.lstrip()[:16].decode("latin-1").encode("unicode_escape").decode("ascii")
    return (f"{path} is not a WARC file: it starts with \"{shown}\", not \"WARC/\" (nor an ARC file's "
            "\"filedesc://\"); expected a WARC or ARC file (plain, gzipped or .warc.zst), a folder of them or a glob")


def crawl_paths_problem(items: list[str]) -> str | None:
    """Why ``items`` (WARC or ARC files, folders, globs, URLs) cannot name a crawl, found without reading
    anything (no heavy import): a local path that is not there, an empty folder, a glob matching
    nothing, a remote URL whose reader is not installed; or None."""
    import glob

    for item in items:
        if "::" in item:
            return (f"{item}: a chained URL (…::…) is not read; name the WARC or ARC file itself (unpacked "
                    "from its package, or by its own path or URL)")
        if "://" in item:
            problem = remote_problem(item)
            if problem:
                return problem
            continue
        if any(c in item for c in "*?["):
            if not glob.glob(item, recursive=True):
                return f"{item}: no file matches; expected a glob naming WARC or ARC files (*.warc.gz, *.arc.gz, …)"
        elif not os.path.exists(item):
            return f"{item}: no such file or folder; expected a WARC or ARC file (.warc, .warc.gz, .warc.zst, .arc, .arc.gz), a folder of them or a glob"
        elif os.path.isdir(item) and not any(names for _, _, names in os.walk(item)):
            return f"{item} is an empty folder; expected WARC or ARC files (.warc.gz, .arc.gz, …) in it"
        elif os.path.isfile(item) and not item.lower().endswith(ARCHIVE_SUFFIXES + (WACZ_SUFFIX,)):
            # A file named explicitly is read whatever its name: not when it is no archive at all.
            problem = not_an_archive(item)
            if problem:
                return problem
    return None


def add_paths_list_options(parser) -> None:
    """--paths-list and --paths-prefix: a crawl named by a list of archive paths (Common Crawl's
    warc.paths.gz), beside or instead of the files, folders, globs and URLs named."""
    parser.add_argument(
        "--paths-list", default=None, metavar="FILE",
        help="a file (local or URL, plain or .gz) naming one WARC or ARC file per line, such as Common "
             "Crawl's warc.paths.gz; its files are read besides any named before it")
    parser.add_argument(
        "--paths-prefix", default=None, metavar="PREFIX",
        help="what --paths-list's relative lines are relative to, e.g. https://data.commoncrawl.org/ "
             "or s3://commoncrawl/ (lines that are URLs are taken as they are)")


def paths_list_problem(paths_list: str | None, prefix: str | None) -> str | None:
    """Why --paths-list / --paths-prefix cannot be used (found without reading the list), or None."""
    if paths_list is None:
        return "--paths-prefix joins the lines of --paths-list: give --paths-list FILE too" if prefix else None
    for url in (paths_list, prefix or ""):
        if "://" in url and (problem := remote_problem(url)):
            return problem
    if "://" not in paths_list and not os.path.isfile(paths_list):
        return (f"--paths-list {paths_list}: no such file; expected a list of WARC or ARC paths, one per "
                "line (as Common Crawl's warc.paths.gz)")
    return None


def crawl_problem(items: list[str], paths_list: str | None = None,
                  paths_prefix: str | None = None) -> tuple[list[str], str | None]:
    """The WARC and ARC files that ``items`` (files, folders, globs, URLs) and the paths list name,
    or the one-line reason there are none (nothing there, an empty folder, no archive file among
    them, a web URL its server does not have, a remote URL whose reader is not installed)."""
    if not items and not paths_list:
        return [], ("no crawl named; expected WARC or ARC files, folders of them, globs or URLs "
                    "(s3://…, https://…), or --paths-list FILE")
    problem = crawl_paths_problem(items) or paths_list_problem(paths_list, paths_prefix)
    if problem:
        return [], problem
    from simweb.tasks.sources import PathsListError, crawl_files

    try:
        for item in items:
            if item.split("://", 1)[0].lower() in ("http", "https") and (problem := web_file_problem(item)):
                return [], problem
        files = crawl_files(items, paths_list, paths_prefix)
        for url in dict.fromkeys(f.split("://", 1)[0] + "://" for f in files if "://" in f):
            if problem := remote_problem(url):
                return [], f"--paths-list {paths_list}: {problem}"
        return files, None
    except (PathsListError, FileNotFoundError, NotADirectoryError, PermissionError) as err:
        return [], str(err)
    except ImportError as err:  # an fsspec protocol whose package is missing, not one named above
        return [], f"{', '.join(items)}: {err}"
    except Exception as err:  # noqa: BLE001 — an object store or web server that does not answer
        named = items + ([paths_list] if paths_list else [])
        if not any("://" in item for item in named):
            raise
        said = " ".join(f"{type(err).__name__}: {err}".split())[:200]
        return [], (f"{', '.join(named)}: cannot be listed or read ({said}); check the URL, and the store's "
                    "endpoint (AWS_ENDPOINT_URL for an S3-compatible store) and credentials")


def web_file_problem(url: str) -> str | None:
    """Why the web server of ``url`` cannot serve it as an archive file (asked with one HEAD
    request), or None."""
    from simweb.tasks.storage import filesystem

    fs, path = filesystem(url)
    try:
        info = fs.info(path)
    except FileNotFoundError as err:
        cause = err.__cause__
        if cause is None or getattr(cause, "status", None) in (404, 410):
            return f"{url}: the web server has no such file; expected the URL of a WARC or ARC file"
        said = " ".join(f"{type(cause).__name__}: {cause}".split())[:200]
        return f"{url}: cannot be read from its web server ({said}); check the URL and that the server is reachable"
    if not info.get("size"):
        return (f"{url}: the web server does not tell this file's size; simweb reads web files by byte "
                "ranges and needs a server that gives Content-Length (and supports Range requests)")
    return None
