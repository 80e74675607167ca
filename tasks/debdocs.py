"""DebDocs I/O: Debian documentation packages in, a WARC crawl and a topic directory out.

One task per package (never per page): fetch the ``.deb`` with ``apt-get download`` into a
cache folder, read its HTML pages straight from the package (ar archive + tar, no
installation), and write them as a WARC under their public URLs. The algorithms — layout
recognition, the directory, link rewriting — live in ``simweb.core.debdocs``.

Outputs in ``DIR``:

- ``warc/<package>-<NN>.warc.gz`` — the package's pages in path order, in shards of at most
  ``SHARD_BYTES`` bytes of HTML (so that the ingest, whose tasks are shards of whole files, spreads evenly over workers):
  each shard a warcinfo record, then one gzip-per-record ``response`` record per HTML page. Every header is derived from the package, never from
  the clock: WARC-Date and Last-Modified are the file's time stamp inside the package, the
  record id is a name-based UUID of the URL and payload digest. A rebuild from the same
  cached ``.deb`` files is byte-identical.
- ``directory.rdf`` (Open Directory content.rdf.u8 format), ``directory.tsv``
  (``url<TAB>category``) and ``directory_pages.txt`` (the directory's own TOC/index pages).
- ``MANIFEST.json`` (exact package versions, ``.deb`` SHA-256, output SHA-256) and
  ``SUMMARY.json`` (pages, links, classes) — neither holds a time stamp.
"""
from __future__ import annotations

import email.utils
import hashlib
import io
import json
import os
import re
import shutil
import subprocess
import tarfile
import tempfile
import uuid
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from prefect import get_run_logger, task
from prefect.cache_policies import NO_CACHE
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from simweb.core import debdocs
from simweb.core.debdocs import Collection, DirectoryEntry, DocPage, LinkStats, Site
from simweb.tasks import storage

# Name-based record ids live in their own namespace so they never collide with random ones.
RECORD_NAMESPACE = uuid.UUID("7d1b6c1e-4f0a-5b8e-9c39-2f1d5d0e6a41")
SOFTWARE = "simweb DebDocs"
# HTML bytes per WARC shard (a shard holds at least one page): DebDocs' ~90 MB of pages become
# ~25 files of similar parsing work, so the ingest (tasks of whole files) keeps every worker of a
# small cluster busy until the end.
SHARD_BYTES = 4_000_000


class DebDocsError(RuntimeError):
    """A DebDocs build cannot go on; the message says what was expected, what was found, the fix."""


class DownloadError(DebDocsError):
    """apt-get could not download a package it knows about (network or mirror trouble): worth a retry."""


@dataclass(frozen=True, slots=True)
class DebFile:
    """A documentation package in the cache, identified by its exact version and content digest."""

    package: str
    version: str
    architecture: str
    path: str
    sha256: str
    size: int
    downloaded: bool


@dataclass(frozen=True, slots=True)
class SiteSurvey:
    """What one package holds: every file under its site root, and each HTML page's self-description.

    ``counts``: ``pages`` read, ``static_files`` skipped (CSS, JavaScript, images, Sphinx
    sources, …), ``undecodable_pages`` skipped (bytes not in their declared charset).
    """

    package: str
    site: Site
    files: tuple[str, ...]
    pages: tuple[DocPage, ...]
    counts: dict[str, int]


@dataclass(frozen=True, slots=True)
class DirectoryResult:
    entries: tuple[DirectoryEntry, ...]
    counts: dict[str, int]
    outputs: dict[str, str]  # relative output path -> sha256


@dataclass(frozen=True, slots=True)
class WarcResult:
    package: str
    files: dict[str, str]  # relative path of each shard -> its SHA-256
    records: int
    links: LinkStats
    references: dict[str, int] = field(default_factory=dict)


# --------------------------------------------------------------------------- the cache


def default_cache() -> str:
    """``$XDG_CACHE_HOME/simweb/debs`` (``~/.cache/simweb/debs`` by default)."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "simweb", "debs")


def _ar_members(path: str) -> Iterator[tuple[str, bytes]]:
    """The members of a Debian package (an ``ar`` archive): (name, bytes)."""
    with open(path, "rb") as f:
        if f.read(8) != b"!<arch>\n":
            raise DebDocsError(
                f"{path} is not a Debian package (no ar archive header); delete it from the cache "
                "and run the build again to download it afresh"
            )
        while header := f.read(60):
            if len(header) < 60 or header[58:60] != b"`\n":
                raise DebDocsError(f"{path} is truncated or damaged; delete it from the cache and run the build again")
            name = header[:16].decode("ascii", "replace").strip().rstrip("/")
            size = int(header[48:58].decode("ascii").strip() or 0)
            data = f.read(size)
            if len(data) < size:
                raise DebDocsError(f"{path} is truncated; delete it from the cache and run the build again")
            if size % 2:
                f.read(1)
            yield name, data


def _open_tar(path: str, prefix: str) -> tarfile.TarFile:
    """Open the package's ``control.tar.*`` or ``data.tar.*`` member as a tar archive."""
    for name, data in _ar_members(path):
        if not name.startswith(prefix):
            continue
        if name.endswith(".zst"):
            # Python's tarfile has no zstd before 3.14: let dpkg-deb unpack it.
            option = "--ctrl-tarfile" if prefix == "control.tar" else "--fsys-tarfile"
            if shutil.which("dpkg-deb") is None:
                raise DebDocsError(
                    f"{path} stores {name} with zstd, which needs dpkg-deb to read; install dpkg "
                    "(apt-get install dpkg) or use a package compressed with xz or gzip"
                )
            data = subprocess.run(["dpkg-deb", option, path], capture_output=True, check=True).stdout
        return tarfile.open(fileobj=io.BytesIO(data), mode="r:*")
    raise DebDocsError(f"{path} has no {prefix} member: expected a Debian binary package")


def deb_control(path: str) -> dict[str, str]:
    """The fields of a package's ``control`` file (Package, Version, Architecture, …)."""
    with _open_tar(path, "control.tar") as tar:
        for member in tar:
            if member.name.lstrip("./") == "control" and member.isfile():
                text = tar.extractfile(member).read().decode("utf-8", "replace")
                break
        else:
            raise DebDocsError(f"{path} has no control file: expected a Debian binary package")
    fields: dict[str, str] = {}
    for line in text.splitlines():
        match = re.match(r"([A-Za-z0-9-]+):\s*(.*)", line)
        if match:
            fields[match.group(1)] = match.group(2).strip()
    return fields


def _describe(path: str, package: str, downloaded: bool) -> DebFile:
    control = deb_control(path)
    if control.get("Package") != package:
        raise DebDocsError(
            f"{path} holds package {control.get('Package')!r}, expected {package!r}; remove it from the cache"
        )
    return DebFile(
        package=package,
        version=control.get("Version", ""),
        architecture=control.get("Architecture", ""),
        path=str(Path(path).resolve()),
        sha256=storage.file_digest(path),
        size=os.path.getsize(path),
        downloaded=downloaded,
    )


def _apt_candidate(package: str) -> str | None:
    """The version ``apt-get download`` would fetch, from ``apt-cache policy`` (None: no candidate)."""
    result = subprocess.run(["apt-cache", "policy", package], capture_output=True, text=True)
    return parse_apt_candidate(result.stdout)


def parse_apt_candidate(policy_output: str) -> str | None:
    """The ``Candidate:`` of ``apt-cache policy`` output; None for "(none)" or an unknown package."""
    match = re.search(r"^\s*Candidate:\s*(\S+)", policy_output, re.M)
    if match is None or match.group(1) == "(none)":
        return None
    return match.group(1)


def _run_apt_update() -> None:
    result = subprocess.run(["apt-get", "update"], capture_output=True, text=True)
    if result.returncode != 0:
        raise DownloadError(
            "`apt-get update` failed, so the package lists stay empty: "
            + (result.stderr.strip().splitlines() or ["no message"])[-1]
            + "; check the network access to the Debian mirror and run `apt-get update` by hand"
        )


def fetch_deb(package: str, cache: str | None = None, *, update_lists: bool | None = None) -> DebFile:
    """The package's ``.deb`` from the cache folder, downloading it with apt-get when missing.

    A cached file is reused as it is (delete it to fetch a newer version); with several cached
    versions the newest is used. Without a cached file: ``apt-cache policy`` must show a
    candidate; when it shows none the package lists are refreshed with ``apt-get update`` if
    ``update_lists`` (default: when this process runs as root), otherwise the error names the
    command to run.
    """
    if update_lists is None:
        update_lists = os.geteuid() == 0
    folder = Path(cache or default_cache()).expanduser()
    folder.mkdir(parents=True, exist_ok=True)
    cached = [p for p in folder.glob(f"{package}_*.deb") if p.is_file()]
    if cached:
        described = [_describe(str(p), package, False) for p in sorted(cached)]
        newest = described[0]
        for deb in described[1:]:
            if debdocs.compare_debian_versions(deb.version, newest.version) > 0:
                newest = deb
        return newest
    for tool in ("apt-get", "apt-cache"):
        if shutil.which(tool) is None:
            raise DebDocsError(
                f"{tool} not found: DebDocs downloads the Debian package {package} with apt; run the build "
                f"on Debian or Ubuntu, or copy {package}_*.deb (from `apt-get download {package}` on such a "
                f"machine) into the cache folder {folder}"
            )
    candidate = _apt_candidate(package)
    if candidate is None and update_lists:
        _run_apt_update()
        candidate = _apt_candidate(package)
    elif candidate is None:
        raise DebDocsError(
            f"apt knows no version of {package} (`apt-cache policy {package}` shows no candidate): the package "
            "lists are empty or out of date; run `sudo apt-get update` (as root) and build again"
        )
    if candidate is None:
        raise DebDocsError(
            f"package {package} is not available from the configured apt sources (`apt-cache policy {package}` "
            "shows no candidate after `apt-get update`); DebDocs needs Debian 12 (bookworm) main in "
            "/etc/apt/sources.list(.d), or the .deb copied into the cache folder "
            f"{folder}"
        )
    staging = Path(tempfile.mkdtemp(prefix=".tmp-download-", dir=folder))
    try:
        result = subprocess.run(
            ["apt-get", "download", f"{package}={candidate}"], cwd=staging, capture_output=True, text=True
        )
        downloaded = sorted(staging.glob("*.deb"))
        if result.returncode != 0 or len(downloaded) != 1:
            lines = [ln for ln in result.stderr.splitlines() if ln.startswith("E:")] or result.stderr.splitlines()
            raise DownloadError(
                f"`apt-get download {package}={candidate}` failed: {lines[-1] if lines else 'no message'}; "
                "check the network access to the Debian mirror (or run `apt-get update`) and build again"
            )
        target = folder / downloaded[0].name
        os.replace(downloaded[0], target)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return _describe(str(target), package, True)


def _retry_download_only(task, task_run, state) -> bool:
    try:
        state.result()
    except DownloadError:
        return True
    except BaseException:
        return False
    return False


@task(name="fetch-deb", retries=2, retry_delay_seconds=10, retry_condition_fn=_retry_download_only, cache_policy=NO_CACHE)
def fetch_package(package: str, cache: str | None = None) -> DebFile:
    """Prefect task: ``fetch_deb`` (retried on download failures only)."""
    return fetch_deb(package, cache)


# --------------------------------------------------------------------------- reading packages


def sites_for(debs: Sequence[DebFile]) -> dict[str, Site]:
    """The DebDocs sites keyed by package name, for the package versions at hand."""
    sites = debdocs.debdocs_sites({d.package: d.version for d in debs})
    return {s.package: s for s in sites}


def iter_site_files(deb: DebFile, site: Site) -> Iterator[tuple[str, tarfile.TarInfo, bytes | None]]:
    """Every file under the site root in the package: (path, tar entry, bytes of a regular file)."""
    root = site.html_root
    with _open_tar(deb.path, "data.tar") as tar:
        for member in tar:
            name = member.name[2:] if member.name.startswith("./") else member.name.lstrip("/")
            if not name.startswith(root) or member.isdir():
                continue
            path = name[len(root) :]
            data = tar.extractfile(member).read() if member.isfile() else None
            yield path, member, data


def decode_page(data: bytes) -> tuple[str, str] | None:
    """(text, charset) of a page, or None when its bytes are not in its declared charset."""
    charset = debdocs.page_charset(data)
    try:
        return data.decode(charset), charset
    except (UnicodeDecodeError, LookupError):
        return None


def survey_deb(deb: DebFile, debs: Sequence[DebFile]) -> SiteSurvey:
    """Read the package: its file list and each HTML page's title and place in the hierarchy."""
    site = sites_for(debs)[deb.package]
    files: list[str] = []
    pages: list[DocPage] = []
    counts: Counter = Counter()
    for path, member, data in iter_site_files(deb, site):
        files.append(path)
        if data is None or not path.endswith(".html"):
            counts["static_files"] += 1
            continue
        decoded = decode_page(data)
        if decoded is None:
            counts["undecodable_pages"] += 1
            continue
        pages.append(debdocs.read_page(site, path, decoded[0]))
        counts["pages"] += 1
    if not pages:
        raise DebDocsError(
            f"{deb.path} ({deb.package} {deb.version}) holds no HTML pages under /{site.html_root}: "
            "expected the documentation site there; the package layout may have changed"
        )
    return SiteSurvey(deb.package, site, tuple(sorted(files)), tuple(sorted(pages, key=lambda p: p.path)), dict(counts))


@task(name="survey-package", cache_policy=NO_CACHE)
def survey_package(deb: DebFile, debs: list[DebFile]) -> SiteSurvey:
    """Prefect task: ``survey_deb``."""
    return survey_deb(deb, debs)


# --------------------------------------------------------------------------- the directory


def build_directory(surveys: Sequence[SiteSurvey], out: str) -> DirectoryResult:
    """Place every page in the topic directory and write directory.rdf, .tsv and directory_pages.txt."""
    entries: list[DirectoryEntry] = []
    counts: Counter = Counter()
    for survey in surveys:
        placed, placed_counts = debdocs.place_pages(survey.site, survey.pages)
        entries.extend(placed)
        counts.update({f"{survey.site.key}.{k}": v for k, v in placed_counts.items()})
        counts.update(placed_counts)
    versions = ", ".join(f"{s.package} {s.site.base_url}" for s in surveys)
    comment = f"DebDocs topic directory built by simweb from the Debian documentation packages: {versions}"
    outputs = {
        "directory.rdf": debdocs.odp_rdf(entries, comment),
        "directory.tsv": debdocs.directory_tsv(entries),
        "directory_pages.txt": debdocs.directory_pages_text(entries),
    }
    digests = {}
    for name, text in outputs.items():
        data = text.encode("utf-8")
        storage.write_bytes_atomic(data, storage.join(out, name))
        digests[name] = hashlib.sha256(data).hexdigest()
    return DirectoryResult(tuple(entries), dict(counts), digests)


@task(name="write-directory", cache_policy=NO_CACHE)
def write_directory(surveys: list[SiteSurvey], out: str) -> DirectoryResult:
    """Prefect task: ``build_directory``."""
    return build_directory(surveys, out)


# --------------------------------------------------------------------------- the WARC


def _warc_date(mtime: float) -> str:
    return datetime.fromtimestamp(int(mtime), timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _record_id(*parts: str) -> str:
    return f"<urn:uuid:{uuid.uuid5(RECORD_NAMESPACE, chr(10).join(parts))}>"


def build_warc(deb: DebFile, surveys: Sequence[SiteSurvey], directory: DirectoryResult, out: str) -> WarcResult:
    """Write the package's pages as WARC response records under their canonical URLs.

    Links are rewritten by ``simweb.core.debdocs.rewrite_links``; pages whose bytes are not in
    their declared charset were counted by the survey and are left out here too.
    """
    survey = next(s for s in surveys if s.package == deb.package)
    site = survey.site
    collection = Collection(
        [s.site for s in surveys],
        {s.site.key: s.files for s in surveys},
        {s.site.key: [p.path for p in s.pages] for s in surveys},
    )
    listed = frozenset(e.url for e in directory.entries if e.topic is not None and not e.directory_page)
    pages = sorted(
        (path, member.mtime, data)
        for path, member, data in iter_site_files(deb, site)
        if data is not None and path.endswith(".html")
    )
    info_date = _warc_date(max((mtime for _, mtime, _ in pages), default=0))
    shards = _shards([len(data) for _, _, data in pages], SHARD_BYTES)
    n_shards = len(shards)
    anchors: list[tuple[str, tuple[str, ...]]] = []
    references: Counter = Counter()
    records = 0
    files: dict[str, str] = {}
    for shard, (first, last) in enumerate(shards):
        filename = f"{deb.package}-{shard:02d}.warc.gz"
        buffer = io.BytesIO()
        writer = WARCWriter(buffer, gzip=True)
        info = (
            f"software: {SOFTWARE}\r\n"
            "format: WARC File Format 1.0\r\n"
            f"description: HTML pages of the Debian package {deb.package} {deb.version} under their public URLs "
            f"({site.base_url}), links between the DebDocs sites rewritten to those URLs\r\n"
            f"package: {deb.package}\r\n"
            f"package-version: {deb.version}\r\n"
            f"package-sha256: {deb.sha256}\r\n"
            f"shard: {shard + 1} of {n_shards}\r\n"
        ).encode("utf-8")
        writer.write_record(
            writer.create_warc_record(
                "",
                "warcinfo",
                payload=io.BytesIO(info),
                length=len(info),
                warc_headers_dict={
                    "WARC-Record-ID": _record_id("warcinfo", deb.package, deb.version, deb.sha256, str(shard)),
                    "WARC-Date": info_date,
                    "WARC-Filename": filename,
                },
            )
        )
        for path, mtime, data in pages[first:last]:
            decoded = decode_page(data)
            if decoded is None:
                continue
            text, charset = decoded
            rewritten = debdocs.rewrite_links(text, site, path, collection)
            references.update(rewritten.kinds)
            anchors.append((path, rewritten.anchors))
            writer.write_record(_response_record(writer, site.canonical_url(path), mtime,
                                                 rewritten.html.encode(charset), charset))
            records += 1
        data = buffer.getvalue()
        storage.write_bytes_atomic(data, storage.join(out, "warc", filename))
        files[f"warc/{filename}"] = hashlib.sha256(data).hexdigest()
    links = debdocs.link_stats(site, anchors, collection, listed)
    return WarcResult(deb.package, files, records, links, dict(references))


def _shards(sizes: Sequence[int], budget: int) -> list[tuple[int, int]]:
    """Consecutive [first, last) ranges of items, each at most ``budget`` in total size unless it
    is a single item; one empty range when there are no items."""
    ranges, first, total = [], 0, 0
    for i, size in enumerate(sizes):
        if i > first and total + size > budget:
            ranges.append((first, i))
            first, total = i, 0
        total += size
    ranges.append((first, len(sizes)))
    return ranges


def _response_record(writer: WARCWriter, url: str, mtime: float, body: bytes, charset: str):
    http_headers = StatusAndHeaders(
        "200 OK",
        [
            ("Content-Type", f"text/html; charset={charset}"),
            ("Content-Length", str(len(body))),
            ("Last-Modified", email.utils.formatdate(int(mtime), usegmt=True)),
        ],
        protocol="HTTP/1.1",
    )
    return writer.create_warc_record(
        url,
        "response",
        payload=io.BytesIO(body),
        length=len(body),
        http_headers=http_headers,
        warc_headers_dict={
            "WARC-Record-ID": _record_id("response", url, hashlib.sha1(body).hexdigest()),
            "WARC-Date": _warc_date(mtime),
        },
    )


@task(name="write-warc", cache_policy=NO_CACHE)
def write_warc(deb: DebFile, surveys: list[SiteSurvey], directory: DirectoryResult, out: str) -> WarcResult:
    """Prefect task: ``build_warc``."""
    return build_warc(deb, surveys, directory, out)


# --------------------------------------------------------------------------- summary


def build_summary(
    debs: Sequence[DebFile],
    surveys: Sequence[SiteSurvey],
    directory: DirectoryResult,
    warcs: Sequence[WarcResult],
    out: str,
) -> dict:
    """Write MANIFEST.json and SUMMARY.json; return the summary."""
    summary = debdocs.summarize(directory.entries, [w.links for w in warcs])
    skipped: Counter = Counter()
    for survey in surveys:
        skipped.update({k: v for k, v in survey.counts.items() if k != "pages"})
    summary["static_files_skipped"] = skipped["static_files"]
    summary["undecodable_pages_skipped"] = skipped["undecodable_pages"]
    summary["untitled_pages"] = directory.counts.get("untitled", 0)
    summary["unknown_layout_pages"] = directory.counts.get("unknown_layout", 0)
    summary["hierarchy_repairs"] = {
        k: directory.counts.get(k, 0) for k in ("parent_missing", "parent_cycle", "label_collision", "root_missing")
    }
    summary["sites"] = {
        s.site.key: {
            "pages": s.counts.get("pages", 0),
            "listed_pages": directory.counts.get(f"{s.site.key}.listed_pages", 0),
            "directory_pages": directory.counts.get(f"{s.site.key}.directory_pages", 0),
            **{f"links_{k}" if k != "anchors" else "links": v for k, v in asdict(w.links).items()},
        }
        for s, w in zip(surveys, warcs)
    }
    references: Counter = Counter()
    for w in warcs:
        references.update(w.references)
    summary["references_by_kind"] = dict(sorted(references.items()))
    manifest = {
        "corpus": "debdocs",
        "software": SOFTWARE,
        "packages": [
            {
                "package": d.package,
                "version": d.version,
                "architecture": d.architecture,
                "file": os.path.basename(d.path),
                "sha256": d.sha256,
                "size": d.size,
            }
            for d in debs
        ],
        "sites": [
            {"site": s.site.name, "package": s.package, "base_url": s.site.base_url, "html_root": "/" + s.site.html_root}
            for s in surveys
        ],
        "outputs": {**{path: digest for w in warcs for path, digest in w.files.items()}, **directory.outputs},
    }
    for name, value in (("SUMMARY.json", summary), ("MANIFEST.json", manifest)):
        data = (json.dumps(value, indent=2, ensure_ascii=False) + "\n").encode("utf-8")
        storage.write_bytes_atomic(data, storage.join(out, name))
    return summary


@task(name="write-summary", cache_policy=NO_CACHE)
def write_summary(
    debs: list[DebFile], surveys: list[SiteSurvey], directory: DirectoryResult, warcs: list[WarcResult], out: str
) -> dict:
    """Prefect task: ``build_summary``; the summary also goes to the flow run's log."""
    summary = build_summary(debs, surveys, directory, warcs, out)
    get_run_logger().info("DebDocs corpus in %s:\n%s", out, format_summary(summary))
    return summary


def build_corpus(out: str, cache: str | None = None) -> dict:
    """The stages of ``simweb.flows.debdocs_corpus`` as plain calls, in the same order (no Prefect)."""
    debs = [fetch_deb(package, cache) for package in debdocs.PACKAGES]
    surveys = [survey_deb(deb, debs) for deb in debs]
    directory = build_directory(surveys, out)
    warcs = [build_warc(deb, surveys, directory, out) for deb in debs]
    return build_summary(debs, surveys, directory, warcs, out)


def format_summary(summary: dict) -> str:
    """The summary as the lines the command prints."""
    per_class = summary["pages_per_class"]
    lines = [
        f"pages                        {summary['pages']:>9,}",
        f"links (all <a href>)         {summary['links']:>9,}",
        f"links inside the collection  {summary['links_inside_collection']:>9,}",
        f"  of which across sites      {summary['links_cross_site']:>9,}",
        f"links to listed pages        {summary['links_to_directory']:>9,}",
        f"pages listed in directory    {summary['listed_pages']:>9,}",
        f"directory (TOC/index) pages  {summary['directory_pages']:>9,}",
        f"classes at depth {summary['class_depth']}           {summary['classes']:>9,}",
        f"pages per class min/med/max  {per_class['min']:>5} / {per_class['median']:g} / {per_class['max']}",
        f"pages above depth {summary['class_depth']} (ignored) {summary['pages_above_class_depth']:>8,}",
        f"static files skipped         {summary['static_files_skipped']:>9,}",
        f"untitled pages (fallback)    {summary['untitled_pages']:>9,}",
        f"pages of unknown layout      {summary['unknown_layout_pages']:>9,}",
    ]
    return "\n".join(lines)
