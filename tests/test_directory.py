"""The topic directory: the real ODP dump excerpt, its quirks, collapse, exclusion, and hostile files."""
from __future__ import annotations

import codecs
import io
import tracemalloc
from collections import Counter

import pytest

from simweb.core.directory import (
    ODP_HOSTS,
    DirectoryFormatError,
    Listing,
    build_directory,
    collapse,
    iter_odp_rdf,
    iter_tsv,
    read_directory,
    repaired_xml,
    sniff_format,
    topic_segments,
)

ANIME = ("Arts", "Animation", "Anime")


@pytest.fixture(scope="module")
def odp_bytes(shared_fixtures) -> bytes:
    return (shared_fixtures / "odp" / "dmoz-content-excerpt.rdf").read_bytes()


def rdf(body: str) -> io.BytesIO:
    return io.BytesIO(
        (
            '<?xml version="1.0" encoding="UTF-8"?>\n'
            '<RDF xmlns:r="http://www.w3.org/TR/RDF/" xmlns:d="http://purl.org/dc/elements/1.0/" '
            f'xmlns="http://dmoz.org/rdf/">{body}</RDF>'
        ).encode()
    )


# --- the real excerpt ---------------------------------------------------------------------------

def test_real_excerpt_elements_are_all_read(odp_bytes):
    counts = Counter()
    listings = list(iter_odp_rdf(io.BytesIO(odp_bytes), counts))
    # 6 Topic elements (the first with an empty r:id), 29 ExternalPage elements, and 40 link/link1
    # children: Animation 1 link1 + 4 link, Characters 6, Clubs_and_Organizations 29.
    assert counts["topics"] == 6
    assert counts["external_pages"] == 29
    assert counts["topic_links"] == 40
    assert len(listings) == 69
    # 28 of the 29 pages are stated in both places; google.com only as an ExternalPage, and 12
    # Clubs links have no ExternalPage in the excerpt.
    assert len(set(listings)) == 41
    assert counts["listing_without_url"] == counts["listing_without_topic"] == 0


def test_link1_and_priority_quirks(odp_bytes):
    listings = list(iter_odp_rdf(io.BytesIO(odp_bytes)))
    awn = [entry for entry in listings if entry.url == "http://www.awn.com/"]
    # Once from the Topic's <link1> (an editor's pick) and once from its ExternalPage, whose
    # <priority>1</priority> does not stop the <topic> being read.
    assert awn == [Listing("http://www.awn.com/", "Top/Arts/Animation")] * 2


def test_real_excerpt_collapses_to_one_third_level_class(odp_bytes):
    d = read_directory(io.BytesIO(odp_bytes), fmt="rdf")
    # Characters (6 URLs) and Clubs_and_Organizations (29 links + google.com) lie below depth 3
    # and collapse into Top/Arts/Animation/Anime; the 5 Top/Arts/Animation URLs lie above it.
    assert len(d) == 36
    assert set(d.classes.values()) == {ANIME}
    assert d.counts["above_depth"] == 10  # 5 link/link1 + 5 ExternalPage listings
    assert d.counts["collapsed"] == 59
    assert d.counts["classes"] == 1
    assert d.class_of("http://www.awn.com/") is None
    assert d.class_of("http://animation.about.com/") is None
    assert d.class_of("http://google.com/") == ANIME  # only an ExternalPage lists it
    assert d.class_of("http://www.calanimagealpha.com/") == ANIME  # only a Topic link lists it
    assert d.class_of("http://www.hcs.harvard.edu/~anime/") == ANIME


def test_real_excerpt_at_depth_two_keeps_the_animation_pages(odp_bytes):
    d = read_directory(io.BytesIO(odp_bytes), fmt="rdf", depth=2)
    assert len(d) == 41
    assert d.class_of("http://www.awn.com/") == ("Arts", "Animation")
    assert d.counts["above_depth"] == 0  # the root topic lists no URL


def test_streaming_keep_set_holds_only_wanted_urls(odp_bytes):
    keep = {"http://google.com/", "http://www.yale.edu/anime/"}
    d = read_directory(io.BytesIO(odp_bytes), fmt="rdf", keep=keep)
    assert set(d.classes) == keep
    assert d.counts["not_kept"] == 59 - 3  # google once, yale twice


# --- rules ---------------------------------------------------------------------------------------

def test_topic_segments_and_collapse():
    assert topic_segments("Top/Arts/Animation") == ("Arts", "Animation")
    assert topic_segments("/home/gardens/plants/") == ("home", "gardens", "plants")
    assert topic_segments("") == ()
    assert collapse("Top/A/B/C/D/E") == ("A", "B", "C")
    assert collapse("Top/A/B/C") == ("A", "B", "C")
    assert collapse("Top/A/B") is None
    assert collapse("Top/A/B@/C") is None
    assert collapse("Top/A/B/C", depth=1) == ("A",)


def test_soft_links_are_ignored():
    stream = rdf(
        '<Topic r:id="Top/Arts/Anime@/Characters"><link r:resource="http://a.example/"/></Topic>'
        '<ExternalPage about="http://b.example/"><topic>Top/Arts/Movies/Anime@</topic></ExternalPage>'
        '<ExternalPage about="http://c.example/"><topic>Top/Arts/Movies/Titles</topic></ExternalPage>'
    )
    d = read_directory(stream, fmt="rdf")
    assert d.counts["soft_link"] == 2
    assert d.classes == {"http://c.example/": ("Arts", "Movies", "Titles")}


def test_urls_are_normalised_like_the_ingest_stage_and_bad_ones_counted():
    listings = [
        Listing("HTTP://Example.COM:80/a/./b#frag", "Top/A/B/C"),
        Listing("mailto:someone@example.com", "Top/A/B/C"),
        Listing("ftp://example.com/file", "Top/A/B/C"),
    ]
    d = build_directory(listings)
    assert d.classes == {"http://example.com/a/b": ("A", "B", "C")}
    assert d.counts["bad_url"] == 2


def test_a_url_in_two_classes_is_dropped_and_counted():
    listings = [
        Listing("http://x.example/", "Top/A/B/C"),
        Listing("http://x.example/", "Top/A/B/D"),
        Listing("http://x.example/", "Top/A/B/C/Deeper"),
        Listing("http://y.example/", "Top/A/B/C"),
        Listing("http://y.example/", "Top/A/B/C/Deeper"),  # same class after collapse: kept
    ]
    d = build_directory(listings)
    assert d.classes == {"http://y.example/": ("A", "B", "C")}
    assert d.counts["conflicting_class"] == 1


def test_directory_pages_are_excluded_by_host_and_by_list():
    stream = rdf(
        '<ExternalPage about="http://www.dmoz.org/Arts/Animation/"><topic>Top/Arts/Animation/Anime</topic></ExternalPage>'
        '<ExternalPage about="http://dmoz.org/"><topic>Top/Arts/Animation/Anime</topic></ExternalPage>'
        '<ExternalPage about="http://notdmoz.org/"><topic>Top/Arts/Animation/Anime</topic></ExternalPage>'
        '<ExternalPage about="http://toc.example/index.html"><topic>Top/Arts/Animation/Anime</topic></ExternalPage>'
        '<ExternalPage about="http://page.example/"><topic>Top/Arts/Animation/Anime</topic></ExternalPage>'
    )
    d = read_directory(stream, fmt="rdf", directory_pages=["HTTP://TOC.example:80/index.html#top"])
    assert "dmoz.org" in ODP_HOSTS
    assert set(d.classes) == {"http://notdmoz.org/", "http://page.example/"}
    assert d.counts["directory_page"] == 3
    assert d.is_directory_page("https://www.dmoz.org/Computers/")
    assert d.is_directory_page("http://toc.example/index.html")
    assert not d.is_directory_page("http://notdmoz.org/")
    assert not d.is_directory_page("http://page.example/")


def test_tsv_reads_lines_comments_and_counts_bad_lines():
    text = (
        "# url<TAB>category\n"
        "http://a.example/\tTop/A/B/C\r\n"
        "\n"
        "http://b.example/\t/A/B/D/E\n"
        "http://c.example/ no tab here\n"
        "http://d.example/\tTop/A/B/C\textra field\n"
        "http://e.example/\tTop/A\n"
    )
    counts = Counter()
    listings = list(iter_tsv(io.BytesIO(text.encode()), counts))
    assert [entry.url for entry in listings] == ["http://a.example/", "http://b.example/", "http://d.example/",
                                                 "http://e.example/"]
    assert counts["bad_tsv_line"] == 1 and counts["tsv_extra_columns"] == 1 and counts["tsv_lines"] == 4
    d = read_directory(io.BytesIO(text.encode()), fmt="tsv")
    assert d.classes == {"http://a.example/": ("A", "B", "C"), "http://b.example/": ("A", "B", "D"),
                         "http://d.example/": ("A", "B", "C")}
    assert d.counts["above_depth"] == 1
    assert not d.is_directory_page("http://www.dmoz.org/")  # a TSV names no directory hosts


def test_tsv_that_is_not_utf8_is_refused_with_the_fix():
    with pytest.raises(DirectoryFormatError, match="UTF-8"):
        list(iter_tsv(io.BytesIO("http://a.example/\tTop/Caf\xe9/B/C\n".encode("latin-1"))))


def test_sniff_format():
    assert sniff_format(b'\xef\xbb\xbf<?xml version="1.0"?>') == "rdf"
    assert sniff_format(b"http://a.example/\tTop/A/B/C\n") == "tsv"
    assert sniff_format('<?xml version="1.0" encoding="UTF-16"?>'.encode("utf-16")) == "rdf"
    assert sniff_format("http://a.example/\tTop/A/B/C\n".encode("utf-16-le")[:9]) == "tsv"


# --- hostile and broken files -----------------------------------------------------------------

def test_entity_expansion_is_refused():
    bomb = (
        b'<?xml version="1.0"?>\n<!DOCTYPE RDF [<!ENTITY a "aaaaaaaaaa">'
        b'<!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;"><!ENTITY c "&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;">]>'
        b'<RDF><ExternalPage about="http://x.example/"><topic>&c;</topic></ExternalPage></RDF>'
    )
    with pytest.raises(DirectoryFormatError, match="refused"):
        list(iter_odp_rdf(io.BytesIO(bomb)))


def test_external_entities_are_refused():
    xxe = (
        b'<?xml version="1.0"?>\n<!DOCTYPE RDF [<!ENTITY x SYSTEM "file:///etc/passwd">]>'
        b'<RDF><ExternalPage about="http://x.example/"><topic>&x;</topic></ExternalPage></RDF>'
    )
    with pytest.raises(DirectoryFormatError, match="refused"):
        list(iter_odp_rdf(io.BytesIO(xxe)))


def test_a_dump_cut_short_gives_what_came_before_and_says_where_it_ends(odp_bytes):
    cut = odp_bytes[: odp_bytes.index(b"<Topic r:id=\"Top/Arts/Animation/Anime\">") + 10]
    counts = Counter()
    got = list(iter_odp_rdf(io.BytesIO(cut), counts))
    assert len(got) == 10  # the Animation topic's 5 links and its 5 pages
    assert counts["file_cut_at_line"] == cut.count(b"\n") + 1
    between = odp_bytes.index(b"<Topic r:id=\"Top/Arts/Animation/Anime\">")
    for end in (len(cut) - 1, between):  # cut inside a tag, and between two elements
        counts = Counter()
        assert len(list(iter_odp_rdf(io.BytesIO(odp_bytes[:end]), counts))) == 10 and counts["file_cut_at_line"]
    whole = Counter()
    list(iter_odp_rdf(io.BytesIO(odp_bytes), whole))
    assert "file_cut_at_line" not in whole


def test_malformed_xml_before_the_end_still_stops_the_reading(odp_bytes):
    at = odp_bytes.index(b"<Topic r:id=\"Top/Arts/Animation/Anime\">")
    broken = odp_bytes[:at] + b"<Topic r:id=\"x\"></Wrong>" + odp_bytes[at:]
    with pytest.raises(DirectoryFormatError, match=r"mismatched tag: line \d+, column \d+"):
        list(iter_odp_rdf(io.BytesIO(broken)))


OLD_DUMP = (  # what dumps of the paper's years hold: a bare "&" in URLs, an HTML entity, a form
    # feed and a Latin-1 byte in a title
    '<?xml version="1.0" encoding="UTF-8"?>\n<RDF xmlns:r="http://www.w3.org/TR/RDF/" '
    'xmlns:d="http://purl.org/dc/elements/1.0/" xmlns="http://dmoz.org/rdf/">\n'
    '<Topic r:id="Top/A/B/C"><link r:resource="http://a.example/?x=1&y=2"/>'
    '<link r:resource="http://b.example/?q=&amp;"/></Topic>\n'
    '<ExternalPage about="http://c.example/?p=1&q=2"><d:Title>Caf\xe9&nbsp;\x0cX &#233;</d:Title>'
    "<topic>Top/A/B/D</topic></ExternalPage>\n</RDF>\n"
).encode("latin-1")


def test_a_dump_that_is_not_well_formed_is_repaired_and_the_repairs_counted():
    counts = Counter()
    listings = list(iter_odp_rdf(io.BytesIO(OLD_DUMP), counts))
    assert [(entry.url, entry.topic) for entry in listings] == [
        ("http://a.example/?x=1&y=2", "Top/A/B/C"), ("http://b.example/?q=&", "Top/A/B/C"),
        ("http://c.example/?p=1&q=2", "Top/A/B/D")]
    assert {k: counts[k] for k in ("bare_ampersands_escaped", "forbidden_characters_dropped",
                                   "bytes_not_utf8_replaced")} == {
        "bare_ampersands_escaped": 3, "forbidden_characters_dropped": 1, "bytes_not_utf8_replaced": 1}


@pytest.mark.parametrize("chunk", [1, 2, 3, 7, 64])
def test_the_repair_gives_the_same_bytes_whatever_its_chunks(chunk):
    """A reference cut by a chunk's end ("&am" | "p;") is not escaped twice."""
    whole = repaired_xml(io.BytesIO(OLD_DUMP), Counter()).read()
    assert b"&amp;amp;" not in whole and b"?q=&amp;\"" in whole and b"&amp;nbsp;" in whole
    assert repaired_xml(io.BytesIO(OLD_DUMP), Counter(), chunk).read() == whole


def test_a_well_formed_dump_passes_the_repair_unchanged(odp_bytes):
    counts = Counter()
    assert repaired_xml(io.BytesIO(odp_bytes), counts, 4096).read() == odp_bytes
    assert not counts


def test_a_dump_in_another_encoding_is_not_repaired():
    latin1 = OLD_DUMP.replace(b'encoding="UTF-8"', b'encoding="ISO-8859-1"')
    assert repaired_xml(io.BytesIO(latin1), Counter()).read() == latin1


def test_wrong_root_element_is_refused():
    with pytest.raises(DirectoryFormatError, match="root element is <RDF>"):
        list(iter_odp_rdf(io.BytesIO(b"<html><body>not a dump</body></html>")))
    with pytest.raises(DirectoryFormatError):
        list(iter_odp_rdf(io.BytesIO(b"")))


def test_unknown_format_is_refused():
    with pytest.raises(ValueError, match="'rdf' or 'tsv'"):
        read_directory(io.BytesIO(b""), fmt="json")


class _GeneratedDump(io.RawIOBase):
    """A large ODP-like dump produced on the fly, so the test never holds it in memory."""

    def __init__(self, pages: int):
        self._chunks = self._generate(pages)
        self._buffer = b""

    @staticmethod
    def _generate(pages: int):
        yield b'<?xml version="1.0"?><RDF xmlns:r="http://www.w3.org/TR/RDF/" xmlns="http://dmoz.org/rdf/">'
        for i in range(pages):
            topic = f"Top/T{i % 7}/S{i % 13}/C{i % 17}/Deep"
            yield (
                f'<Topic r:id="{topic}"><catid>{i}</catid><link r:resource="http://site{i}.example/"/></Topic>'
                f'<ExternalPage about="http://site{i}.example/"><d:Title xmlns:d="x">Site {i}</d:Title>'
                f"<d:Description xmlns:d=\"x\">{'words ' * 30}</d:Description><topic>{topic}</topic></ExternalPage>"
            ).encode()
        yield b"</RDF>"

    def readable(self):
        return True

    def readinto(self, buffer):
        while not self._buffer:
            try:
                self._buffer = next(self._chunks)
            except StopIteration:
                return 0
        n = min(len(buffer), len(self._buffer))
        buffer[:n] = self._buffer[:n]
        self._buffer = self._buffer[n:]
        return n


def test_parsing_streams_in_bounded_memory():
    pages = 10_000  # about 4 MB of XML
    tracemalloc.start()
    try:
        count = sum(1 for _ in iter_odp_rdf(io.BufferedReader(_GeneratedDump(pages))))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert count == 2 * pages
    assert peak < 2 * 2**20, f"parser held {peak / 2**20:.1f} MiB: the tree is not being released"


def test_one_line_that_is_not_utf8_is_skipped_and_counted_the_rest_read():
    data = ("http://a.example/\tTop/A/B/C\n".encode() + "http://b.example/\tTop/Caf\xe9/B/C\n".encode("latin-1")
            + "http://c.example/\tTop/A/B/D\n".encode())
    counts = Counter()
    assert [e.url for e in iter_tsv(io.BytesIO(data), counts)] == ["http://a.example/", "http://c.example/"]
    assert counts["bad_tsv_line"] == 1 and counts["tsv_lines"] == 2


def test_tsv_exports_with_more_columns_or_the_category_first_are_read_and_counted():
    text = ("Top/Arts/Movies/Genres\thttp://a.example/\tA title\tA description\n"
            "http://b.example/\tTop/Arts/Music/Bands\tB title\n"
            "Top/Arts/Movies/Genres\thttp://c.example/\n"
            "just one field\n")
    counts = Counter()
    listings = list(iter_tsv(io.BytesIO(text.encode()), counts))
    assert [(e.url, e.topic) for e in listings] == [("http://a.example/", "Top/Arts/Movies/Genres"),
                                                    ("http://b.example/", "Top/Arts/Music/Bands"),
                                                    ("http://c.example/", "Top/Arts/Movies/Genres")]
    assert (counts["tsv_lines"], counts["tsv_extra_columns"], counts["tsv_category_first"], counts["bad_tsv_line"]) \
        == (3, 2, 2, 1)


def test_a_category_first_line_with_a_url_written_without_its_scheme_is_read_the_other_way_round():
    text = ("Top/Arts/Movies/Genres\twww.a.example/films\n"  # category first, the URL without its scheme
            "www.b.example/\tTop/Arts/Music/Bands\n"  # URL first, without its scheme: as it is
            "Arts/Music\tJazz/Bebop\n"  # neither looks like a URL: read as written
            "Top/Arts/Movies/Genres\t//c.example/x\n")
    counts = Counter()
    listings = [(e.url, e.topic) for e in iter_tsv(io.BytesIO(text.encode()), counts)]
    assert listings == [("www.a.example/films", "Top/Arts/Movies/Genres"), ("www.b.example/", "Top/Arts/Music/Bands"),
                        ("Arts/Music", "Jazz/Bebop"), ("//c.example/x", "Top/Arts/Movies/Genres")]
    assert counts["tsv_category_first"] == 2


def test_categories_of_a_dump_cut_short_are_those_before_the_cut_with_a_warning(odp_bytes, tmp_path, caplog):
    from simweb.tasks.directory_file import url_categories

    cut = tmp_path / "content.rdf.u8"
    cut.write_bytes(odp_bytes[: len(odp_bytes) // 2])
    whole = tmp_path / "whole.rdf.u8"
    whole.write_bytes(odp_bytes)
    with caplog.at_level("WARNING"):
        table = url_categories(str(cut))
    assert 0 < table.num_rows < url_categories(str(whole)).num_rows
    assert f"{cut}: the directory file ends early, inside its XML at line" in caplog.text


@pytest.mark.parametrize("compress, suffix", [(__import__("gzip").compress, ".gz"), (__import__("bz2").compress, ".bz2")])
def test_a_compressed_directory_file_cut_short_gives_what_decodes_before_the_cut(odp_bytes, tmp_path, compress,
                                                                                  suffix):
    from simweb.commands.inputs import directory_problem
    from simweb.tasks.directory_file import read_directory_file

    first, end = odp_bytes.index(b"<Topic"), odp_bytes.rindex(b"</RDF>")
    packed = compress(odp_bytes[:first] + odp_bytes[first:end] * 200 + odp_bytes[end:])  # bzip2: several blocks
    cut = tmp_path / f"content.rdf.u8{suffix}"
    cut.write_bytes(packed[: len(packed) * 3 // 4])
    found = read_directory_file(str(cut))
    assert found.counts["compressed_file_cut"] == 1 and found.counts["file_cut_at_line"] > 1
    assert found.classes and directory_problem(str(cut)) is None
    cut.write_bytes(packed[:40])  # nothing of it decodes
    assert "its compressed data is cut short before any of it decodes" in directory_problem(str(cut))


@pytest.mark.parametrize("encoding", ["utf-8-sig", "utf-16", "utf-16-be"])
def test_a_tsv_saved_with_a_byte_order_mark_or_as_utf16_reads_as_the_utf8_one(encoding):
    text = "http://a.example/caf\u00e9\tTop/A/B/C\r\nhttp://b.example/\tTop/A/B/D\r\n"
    data = text.encode(encoding)
    if encoding == "utf-16-be":
        data = codecs.BOM_UTF16_BE + data
    counts = Counter()
    got = [(e.url, e.topic) for e in iter_tsv(io.BytesIO(data), counts)]
    assert got == [("http://a.example/caf\u00e9", "Top/A/B/C"), ("http://b.example/", "Top/A/B/D")]
    assert counts["tsv_lines"] == 2 and not counts["bad_tsv_line"]


@pytest.mark.parametrize("chunk", [1 << 18, 7])  # 7: code units and the declaration split across chunks
def test_an_rdf_dump_saved_as_utf16_reads_as_the_utf8_one(odp_bytes, chunk):
    text = odp_bytes.decode("utf-8")
    assert text.lstrip().startswith("<?xml") and "UTF-8" in text[:100]  # an encoding to say again
    utf16 = text.replace("UTF-8", "UTF-16", 1).encode("utf-16")
    assert sniff_format(utf16[:4096]) == "rdf"
    want, got = Counter(), Counter()
    listings = list(iter_odp_rdf(io.BytesIO(odp_bytes), want))
    assert listings and list(iter_odp_rdf(repaired_xml(io.BytesIO(utf16), Counter(), chunk), got)) == listings
    assert got == want


def test_a_directory_pages_file_is_read_with_its_byte_order_mark_and_refused_clearly_if_not_utf8(tmp_path):
    from simweb.tasks.directory_file import read_lines

    listed = tmp_path / "directory_pages.txt"
    listed.write_bytes(codecs.BOM_UTF8 + b"# the directory's own pages\nhttp://dir.example/\n\nhttp://dir.example/a\n")
    assert read_lines(str(listed)) == ["http://dir.example/", "http://dir.example/a"]
    listed.write_bytes(b"http://caf\xe9.example/\n")
    with pytest.raises(ValueError, match=r"directory_pages.txt is not UTF-8 text \(byte 0xe9 at offset 10\); save it"):
        read_lines(str(listed))


STRUCTURE_DUMP = b"""<?xml version="1.0" encoding="UTF-8"?>
<RDF xmlns:r="http://www.w3.org/TR/RDF/" xmlns:d="http://purl.org/dc/elements/1.0/" xmlns="http://dmoz.org/rdf/">
  <Topic r:id="Top/Arts">
    <catid>2</catid>
    <d:Title>Arts</d:Title>
    <narrow r:resource="Top/Arts/Music"/>
    <symbolic r:resource="Top/Arts/Crafts:Top/Shopping/Crafts"/>
  </Topic>
  <Topic r:id="Top/Arts/Music">
    <catid>3</catid>
    <related r:resource="Top/Shopping/Music"/>
  </Topic>
</RDF>
"""


def test_a_file_that_lists_no_page_is_refused_naming_what_it_is(tmp_path):
    from simweb.commands.inputs import directory_problem
    from simweb.tasks.directory_file import read_directory_file

    structure = tmp_path / "structure.rdf.u8"
    structure.write_bytes(STRUCTURE_DUMP)
    with pytest.raises(DirectoryFormatError, match=r"names 2 categories and 3 links between them but lists no page: "
                                                    r"it is an Open Directory structure dump \(structure.rdf.u8\)"):
        read_directory_file(str(structure))
    assert "use the content dump (content.rdf.u8)" in directory_problem(str(structure))
    topics_alone = tmp_path / "topics.rdf"
    topics_alone.write_bytes(STRUCTURE_DUMP.replace(b"narrow", b"catid").replace(b"symbolic", b"catid")
                             .replace(b"related", b"catid"))
    with pytest.raises(DirectoryFormatError, match=r"lists no page \(2 <Topic> elements, none with a <link>"):
        read_directory_file(str(topics_alone))
    comments = tmp_path / "directory.tsv"
    comments.write_bytes(b"# url<TAB>category\n\n")
    with pytest.raises(DirectoryFormatError, match="has no url<TAB>category line"):
        read_directory_file(str(comments))
    # A content dump whose first topics list nothing is read as before.
    listed = tmp_path / "content.rdf.u8"
    listed.write_bytes(STRUCTURE_DUMP.replace(b"<catid>3</catid>", b'<link r:resource="http://a.example/"/>'))
    assert directory_problem(str(listed)) is None and read_directory_file(str(listed)).counts["listings"] == 1


def test_a_url_written_without_its_scheme_names_the_page_over_http_or_https():
    data = (b"www.example.com/a\tTop/A/B/C\n//cdn.example/x?y=1\tTop/A/B/C\nexample.org\tTop/A/B/D\n"
            b"http://x.example/\tTop/A/B/D\nmailto:a@b.example\tTop/A/B/C\nnot a url\tTop/A/B/C\nlocalhost/x\tTop/A/B/C\n")
    crawl_has = {"https://www.example.com/a", "http://cdn.example/x?y=1", "http://x.example/"}
    found = read_directory(io.BytesIO(data), fmt="tsv", depth=3, keep=crawl_has)
    assert found.classes == {"https://www.example.com/a": ("A", "B", "C"), "http://cdn.example/x?y=1": ("A", "B", "C"),
                             "http://x.example/": ("A", "B", "D")}
    assert found.counts["url_without_scheme"] == 3 and found.counts["bad_url"] == 3
    assert found.counts["not_kept"] == 1  # example.org: in the crawl under neither scheme
    # Without a crawl to look in (the categories a build shows), the page is classified under both.
    anywhere = read_directory(io.BytesIO(data), fmt="tsv", depth=3)
    assert anywhere.classes["http://www.example.com/a"] == anywhere.classes["https://www.example.com/a"] == ("A", "B", "C")
