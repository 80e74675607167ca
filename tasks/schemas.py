"""One pyarrow schema per Parquet data set (STYLE.md habit 7).

The ingest output is strategy-free: every strategy of the paper is built from its pages, links
and aliases data sets without re-reading WARC files.
"""
from __future__ import annotations

import pyarrow as pa

WORDS = pa.list_(pa.string())

# DIR/pages/part-<warc content hash>.parquet — one row per HTML page.
PAGES = pa.schema(
    [
        pa.field("url", pa.string(), nullable=False),
        pa.field("url_id", pa.uint64(), nullable=False),  # simweb.core.urls.url_id(url)
        pa.field("title", pa.string(), nullable=False),
        pa.field("title_words", WORDS, nullable=False),
        pa.field("words", WORDS, nullable=False),  # cleaned page words, title excluded
        pa.field("status", pa.int16(), nullable=False),  # HTTP status; 200 for resource records
        pa.field("content_type", pa.string(), nullable=False),
        pa.field("charset", pa.string(), nullable=False),  # the charset the page was decoded with
        pa.field("source_file", pa.string(), nullable=False),
        pa.field("record_offset", pa.int64(), nullable=False),
        # Where a player finds the record again (simweb.core.replay): its bytes in the file (its
        # gzip member in a gzipped file), the SURT key of url, the WARC-Date as 14 digits in UTC
        # ("" when the date is not a valid ISO 8601 date-time) and the payload digest without
        # its algorithm label ("-" when the record has none and it could not be computed).
        pa.field("record_length", pa.int64(), nullable=False),
        pa.field("surt", pa.string(), nullable=False),
        pa.field("timestamp", pa.string(), nullable=False),
        pa.field("digest", pa.string(), nullable=False),
    ]
)

# DIR/aliases/part-<warc content hash>.parquet — the evidence that a URL names another URL's
# document (simweb.core.aliases), or none: one row per record answering 404 or 410 (kind "gone",
# target "" and 0: simweb.tasks.crawl.copies), per redirect record (kind "redirect"), per page with a
# canonical link to another URL of its origin ("canonical"), and per slash, index or noslash variant name
# of a page ("slash", "index", "noslash": candidates, which the crawl reader keeps only when the name was not
# crawled and names no other page). source_file and record_offset are the record's (the page's for
# the last three kinds); a redirect or gone row also keeps what a CDXJ line needs of its record, the
# other rows hold nulls there (the page's row in PAGES has them).
ALIASES = pa.schema(
    [
        pa.field("url", pa.string(), nullable=False),  # the alias
        pa.field("url_id", pa.uint64(), nullable=False),
        pa.field("target_url", pa.string(), nullable=False),
        pa.field("target_id", pa.uint64(), nullable=False),
        pa.field("kind", pa.string(), nullable=False),  # simweb.core.aliases.KINDS, or "gone"
        pa.field("status", pa.int16(), nullable=False),  # the redirect's status; the page's for the others
        pa.field("source_file", pa.string(), nullable=False),
        pa.field("record_offset", pa.int64(), nullable=False),
        pa.field("record_length", pa.int64()),
        pa.field("surt", pa.string()),
        pa.field("timestamp", pa.string()),
        pa.field("content_type", pa.string()),
        pa.field("digest", pa.string()),
    ]
)

# DIR/links/part-<warc content hash>.parquet — one row per anchor (simweb.core.records.Anchor).
# The anchor and its context are word offsets into ``words`` of the source page's PAGES row:
# the row with url_id == source_id in the pages part of the same name (DIR/pages/part-<same>).
# words[anchor_start:anchor_end] is the anchor, words[context_start:anchor_start] the left
# context (read it backwards for nearest first), words[anchor_end:context_end] the right one;
# 0 <= context_start <= anchor_start <= anchor_end <= context_end <= len(words). The region
# lengths count context words, nearest first, inside the SYNTACTIC and TOPICAL regions.
# simweb.tasks.contexts turns the offsets back into word lists (anchor_words, left_words, right_words).
LINKS = pa.schema(
    [
        pa.field("source_url", pa.string(), nullable=False),
        pa.field("source_id", pa.uint64(), nullable=False),
        pa.field("target_url", pa.string(), nullable=False),
        pa.field("target_id", pa.uint64(), nullable=False),
        pa.field("anchor_start", pa.int32(), nullable=False),
        pa.field("anchor_end", pa.int32(), nullable=False),
        pa.field("context_start", pa.int32(), nullable=False),
        pa.field("context_end", pa.int32(), nullable=False),
        pa.field("syntactic_left", pa.int32(), nullable=False),
        pa.field("syntactic_right", pa.int32(), nullable=False),
        pa.field("topical_left", pa.int32(), nullable=False),
        pa.field("topical_right", pa.int32(), nullable=False),
    ]
)

# BAGS/part-<n>.parquet — one weighted bag per URL (paper Section 6.1: merged fragments,
# frequency-weighted and normalised to a constant sum). Terms are sorted and unique within a
# row; link-id terms are the inlinking URLs prefixed with "link:" so they never collide with words.
BAGS = pa.schema(
    [
        pa.field("url_id", pa.uint64(), nullable=False),
        pa.field("url", pa.string(), nullable=False),
        pa.field("terms", WORDS, nullable=False),
        pa.field("weights", pa.list_(pa.float32()), nullable=False),
    ]
)
#: How BAGS parts are written (pyarrow.parquet writer options): float weights byte-stream-split
#: rather than in a dictionary (measured on the 10k-page scale crawl: 32.0 → 29.9 MB).
BAGS_WRITE = {"use_dictionary": ["url", "terms.list.element"], "use_byte_stream_split": ["weights.list.element"]}
