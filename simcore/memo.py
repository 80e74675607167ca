"""A bounded memo: a dict that its user empties, whole, once it would hold more than ``limit``
entries — the cheapest bound a hot loop can check (web text and links have a long tail of
distinct words and references). Used by the word stemmer (simweb.core.text) and the URL
normaliser (simweb.core.urls); a test sets a memo's ``limit`` or gives a module a fresh one."""
from __future__ import annotations


class Memo(dict):
    """A dict with the number of entries it may hold, ``limit``."""

    __slots__ = ("limit",)

    def __init__(self, limit: int):
        super().__init__()
        self.limit = limit
