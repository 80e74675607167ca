"""The DebDocs corpus: a real crawl and topic directory from Debian documentation packages.

Stand-in for the paper's Stanford WebBase crawl and Open Directory (Section 5): three
interlinked documentation sites as a WARC crawl, their own tables of contents as the
directory. One task per package; the work inside a task is ``simweb.corpora.docsites``.
"""
from __future__ import annotations

from prefect import flow, unmapped

from simweb.corpora.debdocs import DEBDOCS
from simweb.tasks.corpus import fetch_package, survey_package, write_directory, write_summary, write_warc


@flow(name="debdocs-corpus", log_prints=True)
def debdocs_corpus(out: str, cache: str | None = None) -> dict:
    """Build DIR=``out``: warc/*.warc.gz, directory.rdf/.tsv, directory_pages.txt, MANIFEST.json, SUMMARY.json.

    ``cache`` is the folder holding the downloaded .deb files (default ~/.cache/simweb/debs).
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
