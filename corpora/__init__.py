"""simweb.corpora — ready-made crawls with a topic directory, built from Debian packages.

Crawls to try simweb on and to measure it with, each with the ground truth the evaluation
needs (paper Section 5: a crawl and a topic directory over it). One module per concern, one
per data set, as ir_datasets keeps them:

- ``debian``: Debian packages — download with apt, read ``.deb`` files, order versions.
- ``sites``: a documentation site inside a package: its folder, public URL and layout.
- ``layouts``: what a page says about its place in its site (DocBook, Sphinx, folders).
- ``hierarchy``: a site's pages placed in a topic tree, phase by phase.
- ``links``: references resolved inside the collection and rewritten to public URLs.
- ``directory``: the topic directory written as Open Directory RDF and ``url<TAB>topic``.
- ``warc``: pages written as WARC response records, in files of bounded size.
- ``files``: output files written whole or not at all, with their SHA-256.
- ``docsites``: the stages that turn documentation packages into a crawl and directory.
- ``perturb``: near-copies of pages (words and links changed by set fractions).
- data sets: ``debdocs`` (three sites, the demo's crawl), ``debian_docs`` (any documentation
  packages) and ``scale`` (a crawl of a given number of pages, for benchmarks).

This package may read files and use warcio; ``simweb.core`` never imports it.
"""


class CorpusError(RuntimeError):
    """A corpus cannot be built; the message says what was expected, what was found, the fix."""
