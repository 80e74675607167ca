"""A crawl of a given number of pages, for measuring simweb at 10k, 100k and 1M pages.

``build_scale(pages=N, out=DIR)`` — ``simweb corpus scale --pages N --out DIR`` — takes real
pages from Debian documentation packages (``SCALE_PACKAGES``, in order; the last package used
is cut at N in path order) exactly as ``simweb.corpora.debian_docs`` writes them. When the real
pages run out before N, it adds copies of them under mirror hosts, round after round
(``mirror1.<host>``, ``mirror2.<host>``, …; each round copies the pages in the same order),
each copy's words and links perturbed by ``perturb.Perturbation``, until the crawl holds N
pages. The same packages, N and perturbation give the same bytes.

Outputs in ``DIR``:

- ``warc/scale-<NNNNN>.warc.gz`` (the real pages) and ``warc/scale-copy<KKK>-<NNNNN>.warc.gz``
  (copy round ``K``) — gzip-per-record WARC files of at most ``warc_bytes`` bytes of pages each
  (uncompressed; ~1 GB by default), each opened by a warcinfo record;
- ``directory.rdf``, ``directory.tsv`` and ``directory_pages.txt`` — each site's own tree
  ``Top/<Site>/…`` over its real pages, and a tree of its own, ``Top/<Site>-mirror<k>/…``, over
  the copies of round ``k`` (each copy where its original sits), so the evaluation can judge
  copies as it judges real pages;
- ``MANIFEST.json`` (request, perturbation, exact package versions and digests, output
  digests) and ``SUMMARY.json`` (pages, links, classes, what the copies changed).

Memory is bounded by the real pages' list and directory entries, whatever N: pages are read
from their unpacked package one at a time, copies made and written one at a time, and the
directory written tree by tree. Copy rounds run in parallel, one process per core, each into WARC
files of its own, so the bytes written do not depend on how many run at once.
"""
from __future__ import annotations

import json
import os
import threading
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import asdict, dataclass, replace
from multiprocessing import get_context
from typing import Any

import fsspec

from simweb.corpora import CorpusError
from simweb.corpora.debian import DebFile, Package, fetch_deb
from simweb.corpora.directory import DirectoryEntry, DirectoryStats, rdf_parts, tsv_parts
from simweb.corpora.docsites import SiteSurvey, check_distinct_sites, decode_page, survey_deb
from simweb.corpora.files import TMP_PREFIX, OutputFile, join, write_output
from simweb.corpora.hierarchy import place_pages
from simweb.corpora.links import Collection, LinkCounter, LinkStats, rewrite_links
from simweb.corpora.perturb import Perturbation, Vocabulary, mirror_url, perturb_page
from simweb.corpora.warc import WarcFile, record_id, warc_date

__all__ = ["SCALE_PACKAGES", "WARC_BYTES", "build_scale", "format_scale_summary"]

#: Packages the real pages come from, in order: the first 10,000 pages are DebDocs, the Linux
#: kernel's and SciPy's docs (DocBook and Sphinx, with their own hierarchies); 100,000 are
#: reached within the first twenty; all of them hold about 207,000 (``debian_docs`` lists them).
SCALE_PACKAGES = (
    "postgresql-doc-15",
    "python3.11-doc",
    "python-django-doc",
    "linux-doc-6.1",
    "python-scipy-doc",
    "libstdc++-12-doc",
    "openjdk-17-doc",
    "rust-doc",
    "python-statsmodels-doc",
    "qtbase5-doc-html",
    "libboost1.81-doc",
    "ghc-doc",
    "python-pandas-doc",
    "cppreference-doc-en-html",
    "wx3.2-doc",
    "python-astropy-doc",
    "sagemath-doc",
    "erlang-doc",
    "lilypond-doc-html",
    "scala-doc",
    "sumo-doc",
    "libfastutil-java-doc",
    "rust-web-doc",
    "trilinos-doc",
    "vtk9-doc",
)

#: Uncompressed page bytes per WARC file.
WARC_BYTES = 1_000_000_000
SOFTWARE = "simweb scale corpus"


@dataclass(frozen=True, slots=True)
class _Source:
    """One package's share of the crawl: its survey, and the pages taken (path order)."""

    deb: DebFile
    survey: SiteSurvey
    taken: tuple[str, ...]
    entries: tuple[DirectoryEntry, ...]  # the taken pages' places, path order


class _WarcParts:
    """WARC files ``<prefix>-NNNNN.warc.gz`` of at most ``budget`` page bytes each, opened as pages
    come (a context manager)."""

    def __init__(self, out: str, budget: int, info: Callable[[int], str], info_id: Callable[[int], str],
                 prefix: str = "scale"):
        self.out, self.budget, self.info, self.info_id, self.prefix = out, budget, info, info_id, prefix
        self.files: dict[str, str] = {}
        self.payload_bytes = 0
        self._current: WarcFile | None = None

    def __enter__(self) -> "_WarcParts":
        return self

    def add(self, url: str, mtime: float, body: bytes, charset: str) -> None:
        current = self._current
        if current is not None and current.records and current.payload_bytes + len(body) > self.budget:
            self._close(None, None, None)
            current = None
        if current is None:
            part = len(self.files)
            name = f"{self.prefix}-{part:05d}.warc.gz"
            current = self._current = WarcFile(join(self.out, "warc", name), self.info(part), self.info_id(part),
                                               warc_date(mtime))
            current.__enter__()
        current.add_page(url, mtime, body, charset)
        self.payload_bytes += len(body)

    def _close(self, *exc) -> None:
        current, self._current = self._current, None
        current.__exit__(*exc)
        if exc[0] is None:
            self.files[f"warc/{current.url.rsplit('/', 1)[-1]}"] = current.sha256

    def __exit__(self, *exc) -> None:
        if self._current is not None:
            self._close(*exc)


def _survey(packages: Sequence[str], pages: int, cache: str | None, log: Callable[[str], None]) -> list[_Source]:
    """Survey packages in order until they hold ``pages`` pages; the last one is cut there."""
    sources: list[_Source] = []
    total = 0
    for package in packages:
        if total >= pages:
            break
        deb = fetch_deb(package, cache)
        survey = survey_deb(deb)
        paths = tuple(p.path for p in survey.pages)
        taken = paths[: pages - total]
        total += len(taken)
        placed, _ = place_pages(survey.site, survey.pages)
        chosen = set(taken)
        entries = tuple(e for e in placed if e.path in chosen)
        sources.append(_Source(deb, survey, taken, entries))
        log(f"{package} {deb.version}: {len(paths):,} pages, {len(taken):,} taken ({total:,} of {pages:,})")
    check_distinct_sites([s.survey.site for s in sources])
    return sources


def _pages(source: _Source, collection: Collection) -> Iterator[tuple[str, float, str, str]]:
    """The taken pages of a package in path order: (path, mtime, page with links rewritten, charset)."""
    site = source.survey.site
    chosen = set(source.taken)
    with Package(source.deb.path) as package:
        members = sorted(((p, m) for p, m in package.files(site.html_root) if p in chosen), key=lambda pm: pm[0])
        for path, member in members:
            decoded = decode_page(package.read(member))
            if decoded is not None:
                text, charset = decoded
                yield path, member.mtime, rewrite_links(text, site, path, collection), charset


def _mirrored(entry: DirectoryEntry, copy: int, root: str) -> DirectoryEntry:
    """The place of copy ``copy`` of a page: its tree ``Top/<Site>-mirror<copy>``."""
    topic = entry.topic
    if topic is not None:
        topic = f"{root}-mirror{copy}" + topic[len(root):]
    return replace(entry, site=f"{entry.site}-mirror{copy}", url=mirror_url(entry.url, copy), topic=topic)


@dataclass(frozen=True, slots=True)
class _Tree:
    """A top-level tree of the directory: a source's real pages (``copy`` 0) or the first ``count``
    of them as copied in round ``copy``."""

    source: _Source
    copy: int
    count: int

    @property
    def name(self) -> str:
        name = self.source.survey.site.name
        return f"{name}-mirror{self.copy}" if self.copy else name

    def entries(self) -> list[DirectoryEntry]:
        if not self.copy:
            return list(self.source.entries)
        root = f"Top/{self.source.survey.site.name}"
        return [_mirrored(e, self.copy, root) for e in self.source.entries[: self.count]]


def _trees(sources: Sequence[_Source], copied: dict[tuple[int, int], int]) -> list[_Tree]:
    """Every top-level tree, in name order; ``copied[(i, k)]`` is how many pages of ``sources[i]``
    round ``k`` copied."""
    trees = [_Tree(source, 0, len(source.taken)) for source in sources]
    trees += [_Tree(sources[i], copy, count) for (i, copy), count in copied.items()]
    return sorted(trees, key=lambda tree: tree.name)


def _write_directory(out: str, trees: Sequence[_Tree], comment: str) -> tuple[dict[str, str], DirectoryStats]:
    """directory.rdf, .tsv and directory_pages.txt, one tree in memory at a time; their digests and numbers."""
    stats = DirectoryStats()
    outputs = {}
    with OutputFile(join(out, "directory.rdf")) as rdf, OutputFile(join(out, "directory.tsv")) as tsv, \
            OutputFile(join(out, "directory_pages.txt")) as pages:
        # The RDF writer pulls the trees one at a time; the TSV and the page list follow along.
        def written():
            for tree in trees:
                entries = tree.entries()
                for entry in entries:
                    stats.add(entry)
                tsv.write("".join(tsv_parts([entries])).encode("utf-8"))
                pages.write("".join(sorted(f"{e.url}\n" for e in entries if e.directory_page)).encode("utf-8"))
                yield entries

        for part in rdf_parts(written(), comment):
            rdf.write(part.encode("utf-8"))
    for output in (rdf, tsv, pages):
        outputs[output.url.rsplit("/", 1)[-1]] = output.sha256
    return outputs, stats


def _remove_stale_parts(out: str, written: dict[str, str]) -> int:
    """Delete ``warc/scale-*.warc.gz`` files an earlier, larger build left behind, and the
    unfinished ``.tmp-…`` files of an interrupted one (this build has renamed all of its own)."""
    fs, path = fsspec.core.url_to_fs(join(out, "warc"))
    stale = [p for p in fs.glob(path + "/scale-*.warc.gz") if f"warc/{p.rsplit('/', 1)[-1]}" not in written]
    stale += fs.glob(path + f"/{TMP_PREFIX}*-scale-*.warc.gz")
    for p in stale:
        fs.rm(p)
    return len(stale)


def _warc_info(pages: int, perturbation: Perturbation,
               copy: int = 0) -> tuple[Callable[[int], str], Callable[[int], str]]:
    """The warcinfo text and record id of WARC part ``n`` of the real pages (``copy`` 0) or of copy
    round ``copy``: what was asked for, never the clock."""
    asked = json.dumps(asdict(perturbation), sort_keys=True)
    holds = f"copy round: {copy}\r\n" if copy else ""

    def info(part: int) -> str:
        return (
            f"software: {SOFTWARE}\r\n"
            "format: WARC File Format 1.0\r\n"
            "description: pages of Debian documentation packages under their public URLs, and perturbed "
            "copies of them under mirror hosts (simweb corpus scale)\r\n"
            f"pages: {pages}\r\n"
            f"perturbation: {asked}\r\n"
            f"{holds}"
            f"part: {part + 1}\r\n"
        )

    def info_id(part: int) -> str:
        round_ = (str(copy),) if copy else ()
        return record_id("warcinfo", SOFTWARE, str(pages), asked, *round_, str(part))

    return info, info_id


#: ``progress(step, done, total)``: how far a long step of the build has come ("real pages",
#: "copies"), called as pages are written.
Progress = Callable[[str, int, int], None]
#: Seconds between two reports of the copies made by the rounds' processes.
COPY_REPORT_SECONDS = 0.5


def _no_progress(step: str, done: int, total: int) -> None:
    pass


def _write_real(sources: Sequence[_Source], collection: Collection, warcs: _WarcParts,
                vocabulary: Vocabulary | None, progress: Progress = _no_progress) -> tuple[list[LinkStats], int]:
    """Every taken page, links rewritten; its words sampled into ``vocabulary`` when copies follow.

    Returns the link numbers per source and the pages written (a page that cannot be decoded is not).
    """
    taken = sum(len(s.taken) for s in sources)
    skipped = 0  # pages that could not be decoded: gone through all the same
    listed = frozenset(e.url for s in sources for e in s.entries if e.topic is not None and not e.directory_page)
    link_stats = []
    written = 0
    for source in sources:
        site = source.survey.site
        counter = LinkCounter(site, collection, listed)
        before = written
        for path, mtime, rewritten, charset in _pages(source, collection):
            counter.add(path, rewritten.anchors)
            if vocabulary is not None:
                vocabulary.add(rewritten.html)
            warcs.add(site.canonical_url(path), mtime, rewritten.html.encode(charset), charset)
            written += 1
            progress("real pages", written + skipped, taken)
        skipped += len(source.taken) - (written - before)
        progress("real pages", written + skipped, taken)
        link_stats.append(counter.stats())
    return link_stats, written


@dataclass(frozen=True, slots=True)
class _Round:
    """Copy round ``copy``: the first ``limit`` pages written, copied in order into WARC files of its own."""

    copy: int
    limit: int
    pages: int
    out: str
    budget: int
    words: tuple[str, ...]
    perturbation: Perturbation


@dataclass(frozen=True, slots=True)
class _RoundDone:
    copy: int
    files: dict[str, str]
    payload_bytes: int
    copied: dict[tuple[int, int], int]
    changed: Counter


# What every copy round reads, set before the rounds' processes are forked (never pickled): the
# sources, the collection, and the count of copies made by every round (shared memory), which
# the building process reports.
_SHARED: tuple[Sequence[_Source], Collection, Any] | None = None


def _copy_round(task: _Round) -> _RoundDone:
    """One copy round, in a process of its own: its pages perturbed and written to its own WARC files."""
    sources, collection, made_by_all = _SHARED
    site_pages = {s.survey.site.key: tuple(s.survey.site.canonical_url(p) for p in s.taken) for s in sources}
    copied: dict[tuple[int, int], int] = {}
    changed: Counter = Counter()
    made = 0
    with _WarcParts(task.out, task.budget, *_warc_info(task.pages, task.perturbation, task.copy),
                    prefix=f"scale-copy{task.copy:03d}") as warcs:
        for i, source in enumerate(sources):
            site = source.survey.site
            count = 0
            for path, mtime, rewritten, charset in _pages(source, collection):
                if made == task.limit:
                    break
                url = site.canonical_url(path)
                page = perturb_page(rewritten.html, rewritten.anchors, url, task.copy, site.base_url,
                                    site_pages[site.key], task.words, task.perturbation)
                changed.update(words=page.words, words_replaced=page.words_replaced, links=page.links,
                               links_dropped=page.links_dropped, links_retargeted=page.links_retargeted,
                               anchors=len(rewritten.anchors) - page.links_dropped)
                # A word from another page may not exist in this page's charset: HTML writes it
                # as a character reference then (&#937;), which every reader decodes back.
                warcs.add(mirror_url(url, task.copy), mtime, page.html.encode(charset, "xmlcharrefreplace"),
                          charset)
                made += 1
                count += 1
                with made_by_all.get_lock():
                    made_by_all.value += 1
            if count:
                copied[(i, task.copy)] = count
    if made < task.limit:
        raise CorpusError(f"copy round {task.copy} copied {made:,} of {task.limit:,} pages: "
                          "the packages' pages could not be read again")
    return _RoundDone(task.copy, warcs.files, warcs.payload_bytes, copied, changed)


def _write_copies(sources: Sequence[_Source], collection: Collection, out: str, budget: int, written: int,
                  wanted: int, pages: int, vocabulary: Vocabulary, perturbation: Perturbation, jobs: int,
                  log: Callable[[str], None], progress: Progress = _no_progress) -> tuple[int, list[_RoundDone]]:
    """``wanted`` copies, round after round over the ``written`` real pages in order, ``jobs`` rounds
    at a time in processes of their own; each round writes WARC files of its own, so the crawl's
    bytes do not depend on ``jobs``. ``progress("copies", made, wanted)`` is called every
    COPY_REPORT_SECONDS from a thread of this process while the rounds run.

    Returns the rounds made and what each wrote, copied and changed (in round order).
    """
    global _SHARED
    if written == 0:
        raise CorpusError("no real page could be read, so none can be copied")
    rounds = [_Round(copy, min(written, wanted - (copy - 1) * written), pages, out, budget,
                     tuple(vocabulary.words), perturbation)
              for copy in range(1, -(-wanted // written) + 1)]
    made_by_all = get_context("fork").Value("q", 0)
    _SHARED = (sources, collection, made_by_all)
    done: list[_RoundDone] = []
    made = 0
    stop_reporting = threading.Event()

    def report() -> None:
        while not stop_reporting.wait(COPY_REPORT_SECONDS):
            progress("copies", made_by_all.value, wanted)

    # Started once the rounds' processes are forked (never fork a process while a thread of
    # it may hold a lock), or at once when the rounds run here.
    reporter = threading.Thread(target=report, name="simweb-copy-progress", daemon=True)

    def finished(result: _RoundDone) -> None:
        nonlocal made
        done.append(result)
        made += sum(result.copied.values())
        log(f"copy round {result.copy}: done ({made:,} of {wanted:,} copies)")

    try:
        if jobs <= 1 or len(rounds) == 1:
            reporter.start()
            for task in rounds:
                finished(_copy_round(task))
        else:
            # Rounds are reported as they finish, and the first that fails stops the others.
            with ProcessPoolExecutor(max_workers=min(jobs, len(rounds)), mp_context=get_context("fork")) as pool:
                futures = [pool.submit(_copy_round, task) for task in rounds]
                reporter.start()  # the pool forks all its processes at the first submit
                try:
                    for future in as_completed(futures):
                        finished(future.result())
                except BaseException:
                    for future in futures:
                        future.cancel()
                    for process in list(getattr(pool, "_processes", {}).values()):
                        process.terminate()  # a round can take many minutes: do not wait for it
                    raise
    finally:
        _SHARED = None
        stop_reporting.set()
        if reporter.is_alive():
            reporter.join()
    progress("copies", made_by_all.value, wanted)
    return len(rounds), sorted(done, key=lambda result: result.copy)


def build_scale(
    pages: int,
    out: str,
    *,
    packages: Sequence[str] = SCALE_PACKAGES,
    cache: str | None = None,
    perturbation: Perturbation = Perturbation(),
    warc_bytes: int = WARC_BYTES,
    jobs: int | None = None,
    log: Callable[[str], None] = lambda line: None,
    progress: Progress = _no_progress,
) -> dict:
    """Build a crawl of exactly ``pages`` pages (real ones first, then perturbed copies) into ``out``.

    Copy rounds run ``jobs`` at a time (default: one per core). ``log`` receives one line per
    package and per copy round; ``progress(step, done, total)`` how many of the real pages
    ("real pages") and of the copies ("copies") have been written, as they are. Returns the
    summary (SUMMARY.json).
    """
    if pages < 1:
        raise CorpusError(f"expected a number of pages ≥ 1, got {pages}")
    if warc_bytes < 1:
        raise CorpusError(f"expected a WARC file size ≥ 1 byte, got {warc_bytes}")
    # Survey packages until they hold the pages asked for; place each site's pages.
    sources = _survey(packages, pages, cache, log)
    real = sum(len(s.taken) for s in sources)
    if real == 0:
        raise CorpusError(f"the packages {', '.join(packages)} hold no HTML pages; name documentation packages")
    collection = Collection([s.survey.site for s in sources], {s.survey.site.key: s.survey.files for s in sources},
                            {s.survey.site.key: s.taken for s in sources})
    vocabulary = Vocabulary(seed=perturbation.seed) if pages > real else None
    # Write the real pages, then the copies, into WARC files of bounded size.
    with _WarcParts(out, warc_bytes, *_warc_info(pages, perturbation)) as warcs:
        link_stats, written = _write_real(sources, collection, warcs, vocabulary, progress)
    files, payload_bytes = dict(warcs.files), warcs.payload_bytes
    rounds, copied, changed = 0, {}, Counter()
    if vocabulary is not None:
        rounds, done = _write_copies(sources, collection, out, warc_bytes, written, pages - real, pages,
                                     vocabulary, perturbation, jobs or os.cpu_count() or 1, log, progress)
        for result in done:
            files.update(result.files)
            payload_bytes += result.payload_bytes
            copied.update(result.copied)
            changed.update(result.changed)
    stale = _remove_stale_parts(out, files)
    # The directory: a tree per site and per mirror round.
    comment = f"scale crawl of {pages} pages built by simweb from: " + ", ".join(
        f"{s.deb.package} {s.deb.version}" for s in sources)
    directory_outputs, stats = _write_directory(out, _trees(sources, copied), comment)
    # What was asked for and built, and the numbers.
    summary = _summary(pages, real, rounds, sources, link_stats, changed, stats, files, payload_bytes, stale)
    manifest = {
        "corpus": "scale",
        "software": SOFTWARE,
        "pages": pages,
        "perturbation": asdict(perturbation),
        "warc_bytes": warc_bytes,
        "packages": [
            {"package": s.deb.package, "version": s.deb.version, "architecture": s.deb.architecture,
             "file": os.path.basename(s.deb.path), "sha256": s.deb.sha256, "size": s.deb.size,
             "site": s.survey.site.name, "base_url": s.survey.site.base_url, "pages_taken": len(s.taken)}
            for s in sources
        ],
        "outputs": {**files, **directory_outputs},
    }
    for name, value in (("SUMMARY.json", summary), ("MANIFEST.json", manifest)):
        write_output(join(out, name), (json.dumps(value, indent=2, ensure_ascii=False) + "\n").encode("utf-8"))
    return summary


def _summary(pages, real, rounds, sources, link_stats, changed, stats: DirectoryStats, files, payload_bytes,
             stale) -> dict:
    real_links = {f: sum(getattr(s, f) for s in link_stats) for f in LinkStats.__slots__}
    return {
        "pages": pages,
        "real_pages": real,
        "copied_pages": pages - real,
        "copy_rounds": rounds,
        "links": real_links["anchors"] + changed["anchors"],
        "real_links": real_links,
        "copies": {
            "words": changed["words"],
            "words_replaced": changed["words_replaced"],
            "links_into_site": changed["links"],
            "links_dropped": changed["links_dropped"],
            "links_retargeted": changed["links_retargeted"],
        },
        **stats.as_dict(),
        "warc_files": len(files),
        "warc_page_bytes": payload_bytes,
        "stale_warc_files_removed": stale,
        "sites": {s.survey.site.key: {"package": s.deb.package, "version": s.deb.version,
                                      "pages": len(s.survey.pages), "pages_taken": len(s.taken)} for s in sources},
    }


def format_scale_summary(summary: dict) -> str:
    """The summary as the lines the command prints."""
    copies = summary["copies"]
    lines = [
        f"pages                        {summary['pages']:>11,}",
        f"  real                       {summary['real_pages']:>11,}",
        f"  copies ({summary['copy_rounds']} rounds)          {summary['copied_pages']:>11,}",
        f"links (all <a href>)         {summary['links']:>11,}",
        f"copies: words replaced       {copies['words_replaced']:>11,} of {copies['words']:,}",
        f"copies: links dropped        {copies['links_dropped']:>11,} of {copies['links_into_site']:,} into their site",
        f"copies: links re-targeted    {copies['links_retargeted']:>11,}",
        f"pages listed in directory    {summary['listed_pages']:>11,}",
        f"classes at depth {summary['class_depth']}           {summary['classes']:>11,}",
        f"WARC files                   {summary['warc_files']:>11,} ({summary['warc_page_bytes'] / 1e6:,.0f} MB of pages)",
    ]
    return "\n".join(lines)
