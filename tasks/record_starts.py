"""What the start of a WARC or ARC record looks like: how the record reader (simweb.tasks.archives)
tells a file's format and finds where records may start again after damage."""
from __future__ import annotations

import re
from collections.abc import Iterator

FORMATS = ("warc", "arc")
# The version lines warcio reads (looked for anywhere: bytes inserted before a record need not
# end with a line break), and the header line of an ARC record (version 1 or 2) or of its version block
# (``filedesc://NAME IP DATE TYPE LENGTH``, looked for at the start of a line).
WARC_VERSION = re.compile(rb"WARC/(?:1\.[01]|0\.1[78])\r?\n")
ARC_HEADER = re.compile(rb"[A-Za-z][A-Za-z0-9+.-]*:\S* \S+ \d{12,14} \S+(?: \S+ \S+ \S+ \d+ \S+)? \d+\r?\n")
ARC_LINE = re.compile(rb"(?m)^(?=" + ARC_HEADER.pattern + rb")")


def format_at(text: bytes) -> str | None:
    """"warc" or "arc" when ``text`` starts with a record (after blank lines), else None."""
    text = text.lstrip(b"\r\n")
    if WARC_VERSION.match(text):
        return "warc"
    if ARC_HEADER.match(text):
        return "arc"
    return None


def line_starts(window: bytes, i: int, limit: int, fmt: str | None) -> Iterator[tuple[int, str]]:
    """Where records may start in ``window[i:limit]`` of an uncompressed file of format ``fmt``
    (None: not known yet): WARC version lines anywhere (inserted bytes need not end with a line
    break), ARC header lines at the start of a line."""
    found: list[tuple[int, str]] = []
    if fmt in (None, "warc"):
        j = i
        while (j := window.find(b"WARC/", j, limit)) >= 0:
            if WARC_VERSION.match(window, j):
                found.append((j, "warc"))
            j += 1
    if fmt in (None, "arc"):
        found += ((m.start(), "arc") for m in ARC_LINE.finditer(window, i) if m.start() < limit)
    return iter(sorted(found))
