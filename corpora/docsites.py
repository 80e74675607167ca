"""Documentation packages in, a WARC crawl and its topic directory out: the stages of the build.

``build_corpus`` runs them in order; ``simweb.flows.debdocs_corpus`` runs the same functions
as Prefect tasks, one per package where it can. For each package: fetch the ``.deb``
(``debian.fetch_deb``), survey its site (its files, and every page's title and place), then
place all pages in the topic directory, write each package's pages as WARC records under their
public URLs with the links between them rewritten, and record what was built.

Outputs in ``DIR``:

- ``warc/<package>-<NN>.warc.gz`` — the package's pages in path order, in shards of at most
  ``SHARD_BYTES`` bytes of HTML (so that the ingest, whose tasks are shards of whole files,
  spreads evenly over workers): each shard a warcinfo record, then one gzip-per-record
  ``response`` record per HTML page (``simweb.corpora.warc``). A rebuild from the same cached
  ``.deb`` files is byte-identical.
- ``directory.rdf`` (Open Directory content.rdf.u8 format), ``directory.tsv``
  (``url<TAB>category``) and ``directory_pages.txt`` (the directory's own TOC/index pages).
- ``MANIFEST.json`` (exact package versions, ``.deb`` SHA-256, output SHA-256) and
  ``SUMMARY.json`` (pages, links, classes) — neither holds a time stamp.

Memory stays bounded by a package's page list, never its pages: each is read from the
unpacked package when it is written.
"""
from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field

from simweb.corpora import CorpusError
from simweb.corpora.debian import DebFile, Package, fetch_deb
from simweb.corpora.directory import (
    DirectoryEntry,
    by_tree,
    directory_pages_text,
    rdf_parts,
    summarize,
    tsv_parts,
)
from simweb.corpora.files import OutputFile, join, write_output
from simweb.corpora.hierarchy import place_pages
from simweb.corpora.layouts import DocPage, page_charset, read_page
from simweb.corpora.links import Collection, LinkCounter, LinkStats, rewrite_links
from simweb.corpora.sites import Site, package_site
from simweb.corpora.warc import WarcFile, record_id, shard_ranges, warc_date

__all__ = [
    "SHARD_BYTES",
    "DirectoryResult",
    "DocsCorpus",
    "SiteSurvey",
    "WarcResult",
    "build_corpus",
    "build_directory",
    "build_summary",
    "build_warc",
    "check_distinct_sites",
    "collection_of",
    "decode_page",
    "format_summary",
    "survey_deb",
]

# HTML bytes per WARC shard (a shard holds at least one page): DebDocs' ~90 MB of pages become
# ~25 files of similar parsing work, so the ingest (tasks of whole files) keeps every worker of a
# small cluster busy until the end.
SHARD_BYTES = 4_000_000


@dataclass(frozen=True, slots=True)
class DocsCorpus:
    """A crawl of documentation packages: ``key`` names it in MANIFEST.json, ``title`` in the
    descriptions written into the WARC files and the directory."""

    key: str
    title: str
    packages: tuple[str, ...]

    @property
    def software(self) -> str:
        return f"simweb {self.title}"


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


# --------------------------------------------------------------------------- survey


def decode_page(data: bytes) -> tuple[str, str] | None:
    """(text, charset) of a page, or None when its bytes are not in its declared charset."""
    charset = page_charset(data)
    try:
        return data.decode(charset), charset
    except (UnicodeDecodeError, LookupError):
        return None


def _is_page(path: str, member) -> bool:
    return member.isfile() and path.endswith(".html")


def survey_deb(deb: DebFile) -> SiteSurvey:
    """Read the package: its site (``sites.package_site``), the site's file list and each HTML
    page's title and place in the hierarchy."""
    files: list[str] = []
    pages: list[DocPage] = []
    counts: Counter = Counter()
    with Package(deb.path) as package:
        html = [path for path, member in package.files() if _is_page(path, member)]
        site = package_site(deb.package, deb.version, html)
        for path, member in package.files(site.html_root):
            files.append(path)
            data = package.read(member)
            if data is None or not path.endswith(".html"):
                counts["static_files"] += 1
                continue
            decoded = decode_page(data)
            if decoded is None:
                counts["undecodable_pages"] += 1
                continue
            pages.append(read_page(site, path, decoded[0]))
            counts["pages"] += 1
    if not pages:
        raise CorpusError(
            f"{deb.path} ({deb.package} {deb.version}) holds no HTML pages under /{site.html_root}: "
            "expected the documentation site there; the package layout may have changed"
        )
    return SiteSurvey(deb.package, site, tuple(sorted(files)), tuple(sorted(pages, key=lambda p: p.path)), dict(counts))


# --------------------------------------------------------------------------- the directory


def check_distinct_sites(sites: Sequence[Site]) -> None:
    """Raise unless every site has its own key and its own top-level category."""
    for field_name in ("key", "name"):
        values = [getattr(s, field_name) for s in sites]
        twice = sorted({v for v in values if values.count(v) > 1})
        if twice:
            raise CorpusError(
                f"expected one site per {field_name}, found {', '.join(twice)} more than once (packages "
                f"{', '.join(s.package for s in sites if getattr(s, field_name) in twice)}); build them as "
                "separate crawls or give one a site of its own in simweb.corpora.sites.KNOWN_SITES"
            )


def build_directory(surveys: Sequence[SiteSurvey], out: str, corpus: DocsCorpus) -> DirectoryResult:
    """Place every page in the topic directory and write directory.rdf, .tsv and directory_pages.txt."""
    check_distinct_sites([s.site for s in surveys])
    entries: list[DirectoryEntry] = []
    counts: Counter = Counter()
    for survey in surveys:
        placed, placed_counts = place_pages(survey.site, survey.pages)
        entries.extend(placed)
        counts.update({f"{survey.site.key}.{k}": v for k, v in placed_counts.items()})
        counts.update(placed_counts)
    versions = ", ".join(f"{s.package} {s.site.base_url}" for s in surveys)
    comment = f"{corpus.title} topic directory built by simweb from the Debian documentation packages: {versions}"
    trees = by_tree(entries)
    digests = {}
    for name, parts in (
        ("directory.rdf", rdf_parts(trees, comment)),
        ("directory.tsv", tsv_parts(trees)),
        ("directory_pages.txt", [directory_pages_text(entries)]),
    ):
        with OutputFile(join(out, name)) as output:
            for part in parts:
                output.write(part.encode("utf-8"))
        digests[name] = output.sha256
    return DirectoryResult(tuple(entries), dict(counts), digests)


# --------------------------------------------------------------------------- the WARC


def collection_of(surveys: Sequence[SiteSurvey]) -> Collection:
    """The sites of the surveys and the files each ships: what links are resolved against."""
    return Collection(
        [s.site for s in surveys],
        {s.site.key: s.files for s in surveys},
        {s.site.key: [p.path for p in s.pages] for s in surveys},
    )


def build_warc(
    deb: DebFile, surveys: Sequence[SiteSurvey], directory: DirectoryResult, out: str, corpus: DocsCorpus
) -> WarcResult:
    """Write the package's pages as WARC response records under their canonical URLs.

    Links are rewritten by ``links.rewrite_links``; pages whose bytes are not in their declared
    charset were counted by the survey and are left out here too.
    """
    survey = next(s for s in surveys if s.package == deb.package)
    site = survey.site
    collection = collection_of(surveys)
    listed = frozenset(e.url for e in directory.entries if e.topic is not None and not e.directory_page)
    counter = LinkCounter(site, collection, listed)
    references: Counter = Counter()
    records = 0
    files: dict[str, str] = {}
    with Package(deb.path) as package:
        pages = sorted(((p, m) for p, m in package.files(site.html_root) if _is_page(p, m)), key=lambda pm: pm[0])
        info_date = warc_date(max((member.mtime for _, member in pages), default=0))
        shards = shard_ranges([member.size for _, member in pages], SHARD_BYTES)
        for shard, (first, last) in enumerate(shards):
            filename = f"{deb.package}-{shard:02d}.warc.gz"
            info = (
                f"software: {corpus.software}\r\n"
                "format: WARC File Format 1.0\r\n"
                f"description: HTML pages of the Debian package {deb.package} {deb.version} under their public "
                f"URLs ({site.base_url}), links between the {corpus.title} sites rewritten to those URLs\r\n"
                f"package: {deb.package}\r\n"
                f"package-version: {deb.version}\r\n"
                f"package-sha256: {deb.sha256}\r\n"
                f"shard: {shard + 1} of {len(shards)}\r\n"
            )
            info_id = record_id("warcinfo", deb.package, deb.version, deb.sha256, str(shard))
            with WarcFile(join(out, "warc", filename), info, info_id, info_date) as warc:
                for path, member in pages[first:last]:
                    decoded = decode_page(package.read(member))
                    if decoded is None:
                        continue
                    text, charset = decoded
                    rewritten = rewrite_links(text, site, path, collection)
                    references.update(rewritten.kinds)
                    counter.add(path, rewritten.anchors)
                    warc.add_page(site.canonical_url(path), member.mtime, rewritten.html.encode(charset), charset)
            records += warc.records
            files[f"warc/{filename}"] = warc.sha256
    return WarcResult(deb.package, files, records, counter.stats(), dict(references))


# --------------------------------------------------------------------------- summary


def build_summary(
    debs: Sequence[DebFile],
    surveys: Sequence[SiteSurvey],
    directory: DirectoryResult,
    warcs: Sequence[WarcResult],
    out: str,
    corpus: DocsCorpus,
) -> dict:
    """Write MANIFEST.json and SUMMARY.json; return the summary."""
    summary = summarize(directory.entries, [w.links for w in warcs])
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
        "corpus": corpus.key,
        "software": corpus.software,
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
        write_output(join(out, name), (json.dumps(value, indent=2, ensure_ascii=False) + "\n").encode("utf-8"))
    return summary


def build_corpus(corpus: DocsCorpus, out: str, cache: str | None = None) -> dict:
    """Every stage in order, as plain calls (``simweb.flows.debdocs_corpus`` runs them as Prefect tasks)."""
    debs = [fetch_deb(package, cache) for package in corpus.packages]
    surveys = [survey_deb(deb) for deb in debs]
    directory = build_directory(surveys, out, corpus)
    warcs = [build_warc(deb, surveys, directory, out, corpus) for deb in debs]
    return build_summary(debs, surveys, directory, warcs, out, corpus)


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
