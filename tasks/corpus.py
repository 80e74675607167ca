"""Prefect tasks around the corpus builders of ``simweb.corpora``: one task per package or stage.

Thin adapters (STYLE.md habit 3): each calls one stage of ``simweb.corpora.docsites`` and
returns its record. Only the download is retried, and only when apt reports a download
failure (habit 10).
"""
from __future__ import annotations

from prefect import get_run_logger, task
from prefect.cache_policies import NO_CACHE

from simweb.corpora import docsites
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
    """``docsites.build_summary``; the summary also goes to the flow run's log."""
    summary = docsites.build_summary(debs, surveys, directory, warcs, out, corpus)
    get_run_logger().info("%s corpus in %s:\n%s", corpus.title, out, docsites.format_summary(summary))
    return summary
