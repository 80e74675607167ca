"""Crawled text in Markdown (reports, Prefect artifacts) is text, never markup: rendered by a
CommonMark renderer (markdown-it, what rich renders with; installed with Prefect) it reads as
it was written, and makes no link, image or HTML."""
from __future__ import annotations

import html
import re

from hypothesis import given, settings
from hypothesis import strategies as st
from markdown_it import MarkdownIt

from simweb.core.markdown import md_block, md_code, md_text

HOSTILE = [
    "[click](javascript:alert(document.domain))", "<img src=x onerror=alert(1)>", "<script>alert(1)</script>",
    "![x](http://evil.example/x.png)", "**bold** _it_ `code` ~~gone~~", "# heading", "- item", "12. item",
    "a | b | c", "line\n# heading\n<b>x</b>", "&lt;b&gt; &amp;", "\\[escaped\\]", "<http://evil.example/>",
    "``` fence", "Top/Arts/Movies/Titles/", "http://x.example/a_b-c.html?q=1&r=[2]",
]

md = MarkdownIt("commonmark").enable("table").enable("strikethrough")


def rendered_text(markdown: str) -> str:
    out = md.render(markdown)
    assert not re.search(r"<(a|img|script|b|h\d|li|ol|ul|s|del|em|strong|table)\b", out), out
    return html.unescape(re.sub(r"</?(p|code|pre)>", "", out)).strip()


def test_hostile_titles_are_text():
    for text in HOSTILE:
        assert rendered_text(md_text(text)) == " ".join(text.split("\n")).strip()


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.characters(blacklist_categories=("Cs", "Cc")) | st.sampled_from("[]()<>*_`#!|~&\\-+.\n "),
               max_size=40))
def test_any_text_renders_as_itself(text):
    expected = " ".join(re.split(r"[\r\n\u2028\u2029]+", text)).strip()
    got = rendered_text(md_text(text))
    assert " ".join(got.split()) == " ".join(expected.split())


def test_code_spans_and_blocks_hold_any_backticks():
    for text in ("a ` b", "``x``", "`", "path with ``` inside"):
        out = md.render(md_code(text))
        assert html.unescape(re.sub(r"</?(p|code)>", "", out)).strip() == text
        out = md.render("before\n\n" + md_block(f"{text}\n```\nnot closed\n# not a heading"))
        assert "<h1>" not in out and "not a heading" in out and out.count("<pre>") == 1


def test_the_evaluation_report_escapes_crawled_cells():
    from simweb.tasks.report_pages import SourceHeading, Table, _markdown

    table = _markdown(Table(["rank", "url"], [["1", "<img src=x onerror=alert(1)>"], ["2", "[a](javascript:x)"]]))
    assert "<img" not in md.render(table) and "href" not in md.render(table)
    heading = _markdown(SourceHeading("http://x.example/[a](javascript:x)", "<script>x</script>"))
    assert "<script>" not in md.render(heading) and "href" not in md.render(heading)


def test_the_inbox_run_artifact_escapes_file_names_and_reasons():
    from simweb.flows.ingest_new_crawl import IncrementalIngest

    report = IncrementalIngest(inbox={}, ingested=["a`](javascript:x) `b.warc.gz"],
                               failed={"<img src=x onerror=alert(1)>.warc.gz": "found [x](javascript:y)"})
    out = md.render(report.markdown("table\n```\n# breaks out"))
    assert "href" not in out and "<img" not in out and "<h1>breaks" not in out
