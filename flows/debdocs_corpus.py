"""The DebDocs corpus: a real crawl and topic directory from Debian documentation packages.

Stand-in for the paper's Stanford WebBase crawl and Open Directory (Section 5): three
interlinked documentation sites as a WARC crawl, their own tables of contents as the
directory. One task per package or stage, each a thin adapter around a stage of
``simweb.corpora.docsites`` (the corpus builders stand apart from the index pipeline in
``simweb.tasks``, so their tasks live here, beside the one flow that runs them). Only the
download is retried, and only when apt reports a download failure.
"""
from __future__ import annotations

from prefect import flow, get_run_logger, task, unmapped
from prefect.cache_policies import NO_CACHE

from simweb.corpora import docsites
from simweb.corpora.debdocs import DEBDOCS
from simweb.corpora.debian import DebFile, DownloadError, fetch_deb
from simweb.corpora.docsites import DirectoryResult, DocsCorpus, SiteSurvey, WarcResult


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
    """``debian.fetch_deb`` (retried on download failures only)."""
    return fetch_deb(package, cache)


@task(name="survey-package", cache_policy=NO_CACHE)
def survey_package(deb: DebFile) -> SiteSurvey:
    """``docsites.survey_deb``."""
    return docsites.survey_deb(deb)


@task(name="write-directory", cache_policy=NO_CACHE)
def write_directory(surveys: list[SiteSurvey], out: str, corpus: DocsCorpus) -> DirectoryResult:
    """``docsites.build_directory``."""
    return docsites.build_directory(surveys, out, corpus)


@task(name="write-warc", cache_policy=NO_CACHE)
def write_warc(
    deb: DebFile, surveys: list[SiteSurvey], directory: DirectoryResult, out: str, corpus: DocsCorpus
) -> WarcResult:
    """``docsites.build_warc``."""
    return docsites.build_warc(deb, surveys, directory, out, corpus)


@task(name="write-summary", cache_policy=NO_CACHE)
def write_summary(
    debs: list[DebFile],
    surveys: list[SiteSurvey],
    directory: DirectoryResult,
    warcs: list[WarcResult],
    out: str,
    corpus: DocsCorpus,
) -> dict:
    """``docsites.build_summary``; the flow run's log says it in one sentence (SUMMARY.json has it all)."""
    summary = docsites.build_summary(debs, surveys, directory, warcs, out, corpus)
    get_run_logger().info("%s corpus in %s: %s pages, %s links, %s classes at depth %s (the rest in SUMMARY.json)",
                          corpus.title, out, f"{summary['pages']:,}", f"{summary['links']:,}", summary["classes"],
                          summary["class_depth"])
    return summary


@flow(name="debdocs-corpus", log_prints=True)
def debdocs_corpus(out: str, cache: str | None = None) -> dict:
    """Build DIR=``out``: warc/*.warc.gz, directory.rdf/.tsv, directory_pages.txt, MANIFEST.json, SUMMARY.json.

    Args:
        out: The folder the DebDocs crawl, its topic directory and its MANIFEST.json (package versions) go into.
        cache: The folder holding the downloaded .deb files (default ~/.cache/simweb/debs); a cached package is reused.
    """
    # Fetch the documentation packages with apt-get into the cache (a cached .deb is reused).
    debs = fetch_package.map(list(DEBDOCS.packages), cache=unmapped(cache)).result()
    # Read each package: its files, and every page's title and place in its site's hierarchy.
    surveys = survey_package.map(debs).result()
    # Derive the topic directory Top/<Site>/<Part>/<Chapter>/… and write RDF, TSV, directory pages.
    directory = write_directory(surveys, out, DEBDOCS)
    # Write each package's pages as a WARC under canonical URLs, cross-site links rewritten.
    warcs = write_warc.map(
        debs, surveys=unmapped(surveys), directory=unmapped(directory), out=unmapped(out), corpus=unmapped(DEBDOCS)
    ).result()
    # Record versions and digests (MANIFEST.json) and the corpus numbers (SUMMARY.json).
    return write_summary(debs, surveys, directory, warcs, out, DEBDOCS)
