"""The one reader of a crawl folder: the ingest output every later stage starts from (paper Figure 10).

A crawl folder is a pool of parts, each named by the content digest of the WARC file it was
read from (simweb.tasks.ingest)::

    DIR/pages/part-<h16>.parquet   PAGES, one row per HTML page     (simweb.tasks.schemas)
    DIR/links/part-<h16>.parquet   LINKS, one row per anchor
    DIR/aliases/part-<h16>.parquet ALIASES, the evidence that a URL names another URL's document
    DIR/stats/part-<h16>.json      the file's ingest counts
    DIR/CRAWL.json                 optional: {"format": 1, "parts": ["part-<h16>", ...]}

**Which parts belong to the crawl.** When ``CRAWL.json`` exists, only the parts it lists do
(:func:`write_selection` writes it, atomically): a build names its WARC files, and parts left in
the pool by earlier runs must not leak into its index. Without it every finished part does. A
listed part that is missing is an error naming the part and the fix, never a silent loss.

**Captures.** A URL captured more than once — in several files, a year apart — has one page:
its **latest capture**, by the record's WARC-Date, then by ``source_file``, then by
``record_offset`` (the largest wins; a record whose date is missing or invalid, or a part written
before the ingest kept dates, counts as dated at the epoch, 1970). The captures compared are the
URL's pages, its redirect records and its 404/410 records (the ``gone`` rows of the aliases data
set): a latest capture that redirects makes the URL an alias of its target, one that answered
404 or 410 leaves it no page and no document (``DuplicateCopies.gone``: its in-link anchors make
none; it stays a link target of the pages that link to it). The other
captures' pages and the links read from them (a links part shares its pages part's name) are
dropped and counted, and so is the alias evidence read from those pages (a canonical link, a
refresh, variant names). Within one WARC file the ingest keeps the latest record of a URL of
each kind only (simweb.tasks.ingest.records).
A crawl whose ``CRAWL.json`` names a date (``"as_of"``, 14 digits; ``simweb build --as-of``) is
read as of that date: every capture dated after it is left out first. Every reader here applies
that rule (:mod:`.copies`), so the bags stage, the evaluation, the link graph, the signatures'
titles and in-degrees, the near-duplicate report and the overlap estimate agree on what a crawl
contains; the incremental update and a full build over the same files agree whatever order the
files arrived in.

**Aliases** (simweb.core.aliases, whose docstring holds the rules). The ingest writes the
evidence that a URL names another URL's document (``DIR/aliases/part-<h16>.parquet``: redirect
records, same-origin canonical links, slash and index variant names); the reader resolves it
over the whole crawl (the evidence of the captures that count), ranked by (source_file,
record_offset), into one :class:`AliasMap`. Every
link whose target is an alias is counted for the alias's final target (its ``target_id`` and
``target_url`` replaced); a crawled page whose URL is an alias of another crawled page is
merged into it — dropped with its out-links, as a duplicate copy is. A crawled page whose URL is
an alias of a URL that was not crawled as a page keeps its own document, and so do the aliases
that lead to it. A crawl without aliases parts reads as before.

What it gives, one module each: which parts belong to the crawl (:mod:`.selection`,
:mod:`.parts`: :func:`~.parts.crawl_parts`, and :func:`~.parts.crawl_identity`, the cache identity
of the crawl); one part read with its schema checked (:mod:`.read`), or slice by slice, memory
bounded by a slice, not by the part (:mod:`.slices`); which capture of a page counts
(:mod:`.copies`) and the crawl's aliases (:mod:`.aliases`); the parts read together under those
rules — each URL's page once, titles, the URLs linked to (:mod:`.tables`) —, in-degrees
(:mod:`.degrees`), the link graph with its nodes' URLs (:mod:`.graph`), the in-memory
:class:`simweb.core.bags.Corpus` (:mod:`.corpus`) and the TF-IDF of a sample's contents
(:mod:`.tfidf`). ``exclude`` arguments name pages to leave out with their out-links (the
evaluation leaves out a directory's own pages, paper Section 5, footnote 8).
"""
