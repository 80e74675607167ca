"""The bags built from an ingest of the shared WARC fixtures, under strategies of every kind.

The bags were first pinned by the ingest that copied each anchor's context words into its
links row (commit 9714e48), before anchors became word offsets into the page's words: the
crawl reader's in-memory corpus (simweb.tasks.crawl, which the evaluation uses too) and the
bags stage must build exactly the same bags from the offsets. The digests were taken
again, weights to nine significant digits, when the weights' logarithms and exponentials
became simweb.core.fpmath's (the same bits on every CPU; weights moved by at most 3.5e-15 of
their value); tests/test_cpu_independence.py checks the bits across CPU paths.
"""
from __future__ import annotations

import hashlib

import pytest

from simweb.core.strategy import Strategy
from simweb.tasks.bags import build_bags_stage, read_bags
from simweb.tasks.crawl import load_corpus
from simweb.tasks.ingest import ingest_files

IN_MEMORY = {
    "anchor:8,nostem,dist": "1192 bags 18754 entries 34bb9aede54e8d0f",
    "anchor:32,stem,dist": "1192 bags 57836 entries 0d21ab054af5fafa",
    "anchor:32,stopstem,nodist": "1192 bags 61335 entries 1d41535fc52c8e23",
    "anchor:syntactic,stem": "1150 bags 14735 entries 9fbc83579905276d",
    "anchor:topical,nostem": "1176 bags 31323 entries d7e379da08ee1cb0",
    "content,stem": "47 bags 8012 entries 4b24a7926dca0edb",
    "links": "1147 bags 3584 entries 1967d26c0cddac7d",
    "anchor:4+content+links,stopstem,dist,nmdf": "1192 bags 22142 entries a6d61ab673828981",
    "anchor:0,stem": "1115 bags 2102 entries e0f433ffb6a778af",
    "anchor:16+content,nostem,sqrt": "1192 bags 41853 entries 057902789954f55b",
}
STAGE = {  # the bags stage stores float32 weights
    "anchor:32,stem,dist": "1192 bags 57836 entries 5444d9ed360d5e6d",
    "anchor:syntactic,stem": "1150 bags 14735 entries aed44a902a36f158",
}


def digest(matrix) -> str:
    h = hashlib.sha256()
    bags = matrix.to_dicts()
    for u in sorted(bags):
        url, bag = bags[u]
        h.update(f"{u} {url}\n".encode())
        for term, weight in sorted(bag.items()):
            h.update(f"{term} {weight:.9g}\n".encode())
    return f"{len(bags)} bags {sum(len(b) for _, b in bags.values())} entries {h.hexdigest()[:16]}"


@pytest.fixture(scope="module")
def crawl(warc_dir, tmp_path_factory) -> str:
    out = tmp_path_factory.mktemp("crawl")
    warcs = sorted(warc_dir.glob("*.warc.gz")) + sorted(warc_dir.glob("*.warc"))
    stats = ingest_files([str(p) for p in warcs], str(out))
    # example-trunc.warc gives http://example.com/ again (its gzip body decodes completely): a
    # duplicate across files, dropped by the readers (the first file's page is kept).
    assert (stats.pages_written, stats.links_written) == (48, 4342)
    return str(out)


def test_the_in_memory_corpus_builds_the_same_bags_as_before(crawl):
    corpus = load_corpus(crawl)
    for spec, expected in IN_MEMORY.items():
        assert digest(corpus.bags(Strategy.parse(spec))) == expected, spec


@pytest.mark.parametrize("spec", sorted(STAGE))
def test_bags_stage_builds_the_same_bags_as_before(crawl, tmp_path, spec):
    out = build_bags_stage(crawl, Strategy.parse(spec), str(tmp_path), scheduler="sync")
    assert digest(read_bags(out.path)) == STAGE[spec]


def test_links_parts_of_the_copied_context_format_are_refused(crawl, tmp_path):
    """A links part written before anchors became offsets (words copied, no offset columns)
    is refused with the fix, by the in-memory corpus and the bags stage alike."""
    import shutil

    import pyarrow as pa
    import pyarrow.parquet as pq

    old = tmp_path / "old"
    shutil.copytree(crawl, old)
    words = pa.list_(pa.string())
    for part in (old / "links").glob("*.parquet"):
        table = pq.read_table(part)
        table = table.drop_columns(["anchor_start", "anchor_end", "context_start", "context_end"])
        for name in ("anchor_words", "left_words", "right_words"):
            table = table.append_column(name, pa.array([[]] * table.num_rows, words))
        pq.write_table(table, part)
    for read in (load_corpus, lambda crawl: build_bags_stage(crawl, Strategy(), str(tmp_path / "work"),
                                                             scheduler="sync")):
        with pytest.raises(ValueError, match="expected columns anchor_start.*re-run `simweb ingest`"):
            read(str(old))
