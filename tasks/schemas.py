"""One pyarrow schema per Parquet data set (STYLE.md habit 7).

The ingest output is strategy-free: every strategy of the paper is built from these two
data sets without re-reading WARC files.
"""
from __future__ import annotations

import pyarrow as pa

WORDS = pa.list_(pa.string())

# DIR/pages/part-<warc content hash>.parquet — one row per HTML page.
PAGES = pa.schema(
    [
        pa.field("url", pa.string(), nullable=False),
        pa.field("url_id", pa.uint64(), nullable=False),  # simcore.urls.url_id(url)
        pa.field("title", pa.string(), nullable=False),
        pa.field("title_words", WORDS, nullable=False),
        pa.field("words", WORDS, nullable=False),  # cleaned page words, title excluded
        pa.field("status", pa.int16(), nullable=False),  # HTTP status; 200 for resource records
        pa.field("content_type", pa.string(), nullable=False),
        pa.field("charset", pa.string(), nullable=False),  # the charset the page was decoded with
        pa.field("source_file", pa.string(), nullable=False),
        pa.field("record_offset", pa.int64(), nullable=False),
    ]
)

# DIR/links/part-<warc content hash>.parquet — one row per anchor (simcore.records.Anchor).
LINKS = pa.schema(
    [
        pa.field("source_url", pa.string(), nullable=False),
        pa.field("source_id", pa.uint64(), nullable=False),
        pa.field("target_url", pa.string(), nullable=False),
        pa.field("target_id", pa.uint64(), nullable=False),
        pa.field("anchor_words", WORDS, nullable=False),
        pa.field("left_words", WORDS, nullable=False),  # nearest first
        pa.field("right_words", WORDS, nullable=False),  # nearest first
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
