"""The bags built from an ingest of the shared WARC fixtures, under strategies of every kind.

The bags were first pinned by the ingest that copied each anchor's context words into its
links row (commit 9714e48), before anchors became word offsets into the page's words: the
crawl reader's in-memory corpus (simweb.tasks.crawl, which the evaluation uses too) and the
bags stage must build exactly the same bags from the offsets. The digests were taken
again, weights to nine significant digits, when the weights' logarithms and exponentials
became simweb.core.fpmath's (the same bits on every CPU; weights moved by at most 3.5e-15 of
their value); tests/test_cpu_independence.py checks the bits across CPU paths.

They were taken again when the crawl reader began to resolve aliases (simweb.core.aliases):
warcfile.warc.gz holds the page http://0760.jxtdw.com/area/sanxiang/ and a link each to
``…/sanxiang`` (slash rule) and ``…/sanxiang/index.php`` (index rule); those two links now count
for the page, so every anchor and links strategy has two bags fewer (their terms moved to the
page's bag) and content bags are unchanged. Read without its aliases data set, the crawl still
gives the earlier digests (BEFORE_ALIASES): resolving links changes nothing where there are no aliases.
"""
from __future__ import annotations

import hashlib

import pytest

from simweb.core.strategy import Strategy
from simweb.tasks.bag_reader import read_bags
from simweb.tasks.crawl.corpus import load_corpus
from simweb.tasks.crawl.tables import alias_report
from simweb.tasks.ingest.files import ingest_files
from simweb.tasks.stages.bags import build_bags_stage

# The same crawl read without its aliases data set: the bags as they were before aliases.
BEFORE_ALIASES = {
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
IN_MEMORY = {
    "anchor:8,nostem,dist": "1190 bags 18720 entries b409e38389d04948",
    "anchor:32,stem,dist": "1190 bags 57739 entries 9ef9113701d6fc6b",
    "anchor:32,stopstem,nodist": "1190 bags 61232 entries bc8269c563805a45",
    "anchor:syntactic,stem": "1148 bags 14733 entries b7c63ede1fc75464",
    "anchor:topical,nostem": "1174 bags 31290 entries 2d55990e7176d883",
    "content,stem": "47 bags 8012 entries 4b24a7926dca0edb",
    "links": "1145 bags 3582 entries 001aaab62bb35746",
    "anchor:4+content+links,stopstem,dist,nmdf": "1190 bags 22122 entries e4b0f6ec950b9a92",
    "anchor:0,stem": "1113 bags 2100 entries 44f88182e1a6031d",
    "anchor:16+content,nostem,sqrt": "1190 bags 41795 entries dc7f01d4003ece31",
}
STAGE = {  # the bags stage stores float32 weights
    "anchor:32,stem,dist": "1190 bags 57739 entries 8286c2e191910ee0",
    "anchor:syntactic,stem": "1148 bags 14733 entries df9dbca005a77e9a",
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
    # example-trunc.warc gives http://example.com/ again (its gzip body decodes completely), and so
    # does example-bad-non-chunked.warc.gz, read in order since it is gzipped as a whole: duplicates
    # across files, dropped by the readers (one copy is kept; all hold the same page).
    assert (stats.pages_written, stats.links_written) == (49, 4343)
    return str(out)


def test_the_in_memory_corpus_builds_the_same_bags_as_before(crawl):
    corpus = load_corpus(crawl)
    for spec, expected in IN_MEMORY.items():
        assert digest(corpus.bags(Strategy.parse(spec))) == expected, spec


def test_without_aliases_the_bags_are_those_of_before(crawl, tmp_path):
    import shutil

    bare = tmp_path / "bare"
    shutil.copytree(crawl, bare, ignore=shutil.ignore_patterns("aliases"))
    corpus = load_corpus(str(bare))
    for spec, expected in BEFORE_ALIASES.items():
        assert digest(corpus.bags(Strategy.parse(spec))) == expected, spec


def test_the_fixtures_aliases(crawl):
    report = alias_report(crawl)
    assert {k: report[k] for k in ("aliases", "aliases_slash", "aliases_index", "aliases_redirect",
                                   "aliases_canonical", "links_redirected_to_aliases", "pages_merged")} == {
        "aliases": 242, "aliases_slash": 32, "aliases_index": 210, "aliases_redirect": 0, "aliases_canonical": 0,
        "links_redirected_to_aliases": 2, "pages_merged": 0}


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


def ingest_in_pieces(paths: list[str], out: str, n: int):
    """Each file read in ``n`` pieces (as plan_shards has the flow do for large files), then finished."""
    from simweb.tasks.ingest.files import finish_pieces, ingest_warc
    from simweb.tasks.ingest.stats import IngestStats

    total = IngestStats()
    for path in paths:
        pieces = [ingest_warc(path, out, (k, n)) for k in range(n)]
        done = finish_pieces(path, out, n, pieces[0].parts[0])
        assert done is not None and done.parts == pieces[0].parts
        total = total + done
    return total


@pytest.mark.parametrize("n", [2, 7])
def test_files_read_in_pieces_give_the_same_bags(warc_dir, crawl, tmp_path, n):
    """The fixtures read in pieces, as the flow reads large files on several workers: every
    strategy's bags equal those of the files read whole, in memory and by the bags stage, with
    the crawl named by a selection of its parts as a build names it."""
    from simweb.tasks.crawl.parts import crawl_parts
    from simweb.tasks.crawl.selection import write_selection

    warcs = sorted(warc_dir.glob("*.warc.gz")) + sorted(warc_dir.glob("*.warc"))
    out = tmp_path / "pieces"
    stats = ingest_in_pieces([str(p) for p in warcs], str(out), n)
    whole = ingest_files([str(p) for p in warcs], str(tmp_path / "whole"))
    assert (stats.files_read, stats.records_read, stats.parts) == (whole.files_read, whole.records_read, whole.parts)
    assert stats.pages_written >= whole.pages_written  # a URL twice in a file: once per piece it is in
    write_selection(str(out), stats.parts)
    found = crawl_parts(str(out))
    assert len(found.pages) > len(whole.parts) and not list((out / "pieces").glob("*.json"))
    corpus = load_corpus(str(out))
    for spec, expected in IN_MEMORY.items():
        assert digest(corpus.bags(Strategy.parse(spec))) == expected, spec
    for spec, expected in STAGE.items():
        built = build_bags_stage(str(out), Strategy.parse(spec), str(tmp_path / f"work-{spec}"), scheduler="sync")
        assert digest(read_bags(built.path)) == expected, spec
