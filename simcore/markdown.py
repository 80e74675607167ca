"""Text from a crawl (titles, URLs, categories, file names, error reasons) put into Markdown as
text, never as markup.

A crawled title such as ``[click](javascript:alert(1))`` or ``<img src=x onerror=…>`` would be a
link or raw HTML in a Markdown report or in a Prefect artifact, which the UI renders. CommonMark
reads a backslash before any ASCII punctuation character as that character itself, so every
character that can start markup is escaped; line breaks become spaces (a line of its own could
start a heading or a list). Code spans and fenced blocks are delimited by a run of backticks
longer than any inside them, so that the text cannot close them.
"""
from __future__ import annotations

import re

__all__ = ["md_block", "md_code", "md_text"]

# Characters that can begin or end Markdown inline markup or raw HTML (CommonMark Sections 2.4,
# 6; GitHub's tables and strike-through), and what starts a block at the start of a line: a list
# item ("-", "+", "1." or "1)") or a heading (escaped by the first set).
_MARKUP = re.compile(r"([\\`*_\[\]()<>#!|~&{}])")
_LIST_ITEM = re.compile(r"^([-+]|\d+[.)])")
_LINE_BREAKS = re.compile(r"[\r\n\u2028\u2029]+")
_BACKTICKS = re.compile(r"`+")


def md_text(text: object) -> str:
    """``text`` as inline Markdown text: what it says, not markup."""
    escaped = _MARKUP.sub(r"\\\1", _LINE_BREAKS.sub(" ", str(text)).strip())
    return _LIST_ITEM.sub(lambda m: m.group()[:-1] + "\\" + m.group()[-1], escaped)


def _longest_run(text: str) -> int:
    return max((len(m.group()) for m in _BACKTICKS.finditer(text)), default=0)


def md_code(text: object) -> str:
    """``text`` as an inline code span (a path, a command): literal, whatever backticks it holds."""
    text = _LINE_BREAKS.sub(" ", str(text))
    fence = "`" * (_longest_run(text) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") or not text.strip() else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def md_block(text: object) -> str:
    """``text`` as a fenced code block (a summary table): literal, whatever fences it holds."""
    text = str(text)
    fence = "`" * max(3, _longest_run(text) + 1)
    return f"{fence}\n{text}\n{fence}\n"
