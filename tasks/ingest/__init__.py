"""The ingest stage: one WARC or ARC file in, its HTML pages and their link contexts out.

Paper Section 6.1 generates bags by scanning the Web repository; Section 3.1 builds them
from page content and from the anchor windows of pages linking in. This stage does the scan
once and keeps what every strategy needs (page words; anchors with the word offsets of their
anchor text and context in the page's words, and their SYNTACTIC/TOPICAL region lengths), so a
strategy sweep never re-reads WARC files.

For an archive file (WARC or ARC, plain or gzipped; WARC also .warc.zst) with identity ``h`` — the SHA-256 of a local
file's bytes, of a remote object's ETag and size (:func:`simweb.tasks.storage.identify`) — whose
first 16 hex digits are ``h16`` it writes::

    DIR/pages/part-<h16>.parquet   one row per HTML page   (schema simweb.tasks.schemas.PAGES)
    DIR/links/part-<h16>.parquet   one row per anchor      (schema simweb.tasks.schemas.LINKS)
    DIR/aliases/part-<h16>.parquet one row per piece of alias evidence (schema simweb.tasks.schemas.ALIASES)
    DIR/stats/part-<h16>.json      this file's IngestStats, written last

A large file may be read in pieces by several workers at once (:func:`.shards.plan_shards` cuts a
file whose records are compressed one by one when it would otherwise keep one worker busy
long after the others): piece ``k`` of ``n`` reads the records that start in the ``k``-th of
``n`` equal byte ranges (simweb.tasks.archives.ArchiveRecords) into ``DIR/{pages,links,aliases}/
part-<h16>.<k>of<n>.parquet`` and records itself in ``DIR/pieces/part-<h16>.<k>of<n>.json``;
when every piece is there, :func:`.files.finish_pieces` writes the file's stats, which list the
pieces' files. A URL recorded in two pieces of one file is then a duplicate across parts,
which the crawl reader resolves as it does for two files (first record wins), so the pieces
give the bags one whole reading gives.

Each part is written under a temporary name and renamed, and the stats file is the mark of
a finished part: ingesting a file whose content was already ingested into DIR is skipped and
counted (``files_unchanged``), whatever the file is called now (a remote object: while its ETag
and size stay the same; it is not read at all then).

Which records become pages:

- ``response`` records with an HTTP status 200–299 and ``resource`` records (status 200);
  ``request``, ``metadata``, ``warcinfo``, ``revisit``, ``conversion`` and ``continuation``
  records are skipped and counted by type. ARC (v1) files are read like WARC files, their
  records converted as warcio's ``arc2warc`` does: the version block is a ``warcinfo``
  record, every other record a ``response`` (:mod:`simweb.tasks.archives`).
- HTML by Content-Type (``text/html``, ``application/xhtml+xml``); when the type is missing or
  generic (``application/octet-stream`` and the like) the payload is sniffed. A payload that
  starts with a binary format's signature (an image, a PDF, an archive: served as text/html by
  a misconfigured server) is no page either (:func:`simweb.core.charset.looks_binary`).
- The payload is de-chunked (``Transfer-Encoding: chunked``) and decoded (``Content-Encoding``
  gzip, x-gzip, deflate, br, zstd; :mod:`simweb.tasks.payloads`),
  then read with the charset :func:`simweb.core.charset.decode_html` finds (UTF-8 bytes go to the
  parser as they are: :func:`simweb.core.charset.html_for_parser`).
- The WARC-Target-URI is normalised with :func:`simweb.core.urls.normalize_url`; a record without
  one, or with one that is not an http(s) URL, is skipped and counted.
- A response with status 301, 302, 303, 307 or 308 is no page (counted as ``HTTP 3xx``); its URL
  and Location become a row of the aliases data set (simweb.core.aliases holds the rules; a
  redirect without a usable Location is counted in ``aliases_skipped``). Each page adds a row for
  its ``<link rel="canonical">`` to another URL of its origin, and one per slash, index or noslash variant
  name of its URL: candidates, which the crawl reader (simweb.tasks.crawl) resolves over the whole crawl.
- Each page keeps what a web-archive player needs to replay its record (simweb.core.replay):
  ``record_offset``, ``record_length`` (as warcio's indexer counts it), ``surt``, ``timestamp``, ``digest``.
- The first record of a URL in a file wins; later ones are skipped as ``duplicate URL``.
  Duplicates across files are not removed here (files are ingested in parallel): the
  ``source_file`` and ``record_offset`` columns let a later stage keep the first.

Bad input, three tiers (STYLE.md habit 8): a record that cannot become a page is skipped
and counted by reason (:data:`.records.SKIP_REASONS`); a damaged file (truncated, corrupt framing,
bytes inserted, gzipped as a whole or in members that split records) is read on past the
damage — a record whose payload was read in full is kept, reading resumes at the next record
that parses (:mod:`simweb.tasks.archives`) — and is logged and listed in ``file_errors``
with where it is damaged, the bytes skipped and the records recovered; an ``OSError`` (the
file cannot be read at all) propagates, so the Prefect task can retry it.

One module each: the counts (:mod:`.stats`), a file's records into pages (:mod:`.records`), the
Parquet parts they are written to (:mod:`.parts`), one file into its part, once, whole or in
pieces (:mod:`.files`), retries of transient I/O errors (:mod:`.retries`), the work shared
out over worker slots (:mod:`.shards`) and the Prefect task of a shard (:mod:`.task`).
"""
