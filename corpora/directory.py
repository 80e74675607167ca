"""The topic directory of a corpus, written as the Open Directory writes its own.

``odp_rdf`` gives the Open Directory's dump format (content.rdf.u8) and ``directory_tsv``
``url<TAB>category`` lines, the two formats ``simweb.core.directory`` reads;
``directory_pages_text`` names the directory's own pages (TOC and index pages), which the
evaluation keeps out as the paper kept out the Open Directory's own pages (Section 5,
footnote 8). ``rdf_parts`` and ``tsv_parts`` write the same text tree by tree, so that a
directory of a million pages is written without holding it whole. ``summarize`` gives the
numbers of a directory and its crawl's links.
"""
from __future__ import annotations

import re
import statistics
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from xml.sax.saxutils import escape as xml_escape
from xml.sax.saxutils import quoteattr

from simweb.core.directory import CLASS_DEPTH, ROOT
from simweb.corpora.links import LinkStats

__all__ = [
    "DirectoryEntry",
    "DirectoryStats",
    "by_tree",
    "directory_pages_text",
    "directory_tsv",
    "odp_rdf",
    "rdf_parts",
    "summarize",
    "tsv_parts",
]


@dataclass(frozen=True, slots=True)
class DirectoryEntry:
    """One page's place in the topic directory.

    ``topic`` is ``Top/<Site>/…`` (the TOC node the page sits in, or, for a directory page,
    the node it heads); None when the page's layout was not recognised, so it has no place.
    ``directory_page`` marks the directory's own index/TOC pages (excluded from evaluation
    like the Open Directory's own pages, paper Section 5 footnote 8).
    """

    site: str
    path: str
    url: str
    title: str
    topic: str | None
    directory_page: bool


def _listed(entries: Iterable[DirectoryEntry]) -> list[DirectoryEntry]:
    return sorted((e for e in entries if e.topic is not None and not e.directory_page), key=lambda e: (e.topic, e.url))


def _xml_text(text: str) -> str:
    # XML 1.0 forbids most control characters even as references.
    return re.sub(r"[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]", "", text)


def by_tree(entries: Iterable[DirectoryEntry]) -> list[list[DirectoryEntry]]:
    """The placed entries grouped by top-level category (``Top/<Site>``), in the trees' name order."""
    trees: dict[str, list[DirectoryEntry]] = {}
    for entry in entries:
        if entry.topic is not None:
            trees.setdefault(entry.topic.split("/")[1] if "/" in entry.topic else "", []).append(entry)
    return [trees[name] for name in sorted(trees)]


_RDF_HEAD = (
    '<?xml version="1.0" encoding="UTF-8"?>\n'
    '<RDF xmlns:r="http://www.w3.org/TR/RDF/" xmlns:d="http://purl.org/dc/elements/1.0/" '
    'xmlns="http://dmoz.org/rdf/">\n'
)


def rdf_parts(trees: Iterable[Sequence[DirectoryEntry]], comment: str = "") -> Iterator[str]:
    """``odp_rdf`` as a sequence of strings, one top-level tree at a time.

    ``trees`` are the entries of each top-level category ``Top/<name>``, in ascending order of
    name (``by_tree``); only one tree is held at a time.
    """
    yield _RDF_HEAD
    if comment:
        yield f"  <!-- {_xml_text(comment).replace('--', '- -')} -->\n"
    catid = 0
    first = True
    for tree in trees:
        out, catid = _rdf_tree(tree, catid, with_root=first)
        first = False
        yield out
    yield "</RDF>\n"


def _rdf_tree(entries: Sequence[DirectoryEntry], catid: int, with_root: bool) -> tuple[str, int]:
    listed = _listed(entries)
    heads = {e.topic for e in entries if e.directory_page and e.topic}
    topics: set[str] = set()
    for topic in [e.topic for e in listed] + list(heads):
        parts = topic.split("/")
        for i in range(1, len(parts) + 1):
            topics.add("/".join(parts[:i]))
    if not with_root:
        topics.discard(ROOT)
    by_topic: dict[str, list[DirectoryEntry]] = {}
    for entry in listed:
        by_topic.setdefault(entry.topic, []).append(entry)
    out = []
    for topic in sorted(topics, key=lambda t: t.split("/")):
        catid += 1
        out.append(f"  <Topic r:id={quoteattr(_xml_text(topic))}>\n    <catid>{catid}</catid>\n")
        for entry in by_topic.get(topic, ()):
            out.append(f"    <link r:resource={quoteattr(entry.url)}></link>\n")
        out.append("  </Topic>\n")
        for entry in by_topic.get(topic, ()):
            out.append(
                f"  <ExternalPage about={quoteattr(entry.url)}>\n"
                f"    <d:Title>{xml_escape(_xml_text(entry.title))}</d:Title>\n"
                f"    <topic>{xml_escape(_xml_text(topic))}</topic>\n"
                "  </ExternalPage>\n"
            )
    return "".join(out), catid


def odp_rdf(entries: Iterable[DirectoryEntry], comment: str = "") -> str:
    """The directory in the Open Directory's content.rdf.u8 format.

    ``<RDF>`` root with the dump's namespaces; one ``<Topic r:id="Top/…">`` per category (every
    ancestor included, in tree order, ``catid`` numbered from 1 for ``Top``) with a
    ``<link r:resource="url"/>`` per listed page, each followed by the ``<ExternalPage
    about="url">`` entries (``<d:Title>``, ``<topic>``) of its links, as in the real dump.
    Directory pages are not listed — the Open Directory never lists its own pages either;
    ``directory_pages_text`` names them. Topics holding only directory pages are written too.
    """
    return "".join(rdf_parts(by_tree(entries), comment))


def tsv_parts(trees: Iterable[Sequence[DirectoryEntry]]) -> Iterator[str]:
    """``url<TAB>category`` lines of the listed pages, one top-level tree at a time (as ``rdf_parts``),
    sorted by category and URL within a tree."""
    for tree in trees:
        yield "".join(f"{e.url}\t{e.topic}\n" for e in _listed(tree))


def directory_tsv(entries: Iterable[DirectoryEntry]) -> str:
    """``url<TAB>category`` lines of the listed pages, tree by tree in the order of ``odp_rdf``."""
    return "".join(tsv_parts(by_tree(entries)))


def directory_pages_text(entries: Iterable[DirectoryEntry]) -> str:
    """The directory's own pages (TOC and index pages), one URL per line, sorted."""
    return "".join(f"{url}\n" for url in sorted(e.url for e in entries if e.directory_page))


class DirectoryStats:
    """The numbers of a directory, gathered one entry at a time (``summarize``)."""

    def __init__(self, depth: int = CLASS_DEPTH):
        self.depth = depth
        self.pages = self.listed = self.directory_pages = self.unplaced = self.above = 0
        self.topics: set[str] = set()
        self.per_class: Counter = Counter()

    def add(self, entry: DirectoryEntry) -> None:
        self.pages += 1
        if entry.topic is None:
            self.unplaced += 1
            return
        self.topics.add(entry.topic)
        if entry.directory_page:
            self.directory_pages += 1
            return
        self.listed += 1
        parts = entry.topic.split("/")[1:]
        if len(parts) < self.depth:
            self.above += 1
        else:
            self.per_class[tuple(parts[: self.depth])] += 1

    def as_dict(self) -> dict:
        """Listed, directory and unplaced pages, topics, and the classes at the collapse depth."""
        sizes = sorted(self.per_class.values())
        return {
            "listed_pages": self.listed,
            "directory_pages": self.directory_pages,
            "unplaced_pages": self.unplaced,
            "topics": len(self.topics),
            "class_depth": self.depth,
            "classes": len(self.per_class),
            "pages_above_class_depth": self.above,
            "pages_per_class": {
                "min": sizes[0] if sizes else 0,
                "median": statistics.median(sizes) if sizes else 0,
                "max": sizes[-1] if sizes else 0,
            },
        }


def summarize(entries: Iterable[DirectoryEntry], links: Sequence[LinkStats], depth: int = CLASS_DEPTH) -> dict:
    """The corpus summary: pages, links, and the directory's classes at the collapse depth.

    Classes are the distinct depth-``depth`` ancestors of the listed pages' topics (paper
    Section 2.1: the directory collapsed below depth three; pages above it are ignored and
    counted as ``pages_above_class_depth``). ``entries`` is read once.
    """
    stats = DirectoryStats(depth)
    for entry in entries:
        stats.add(entry)
    total = {f: sum(getattr(s, f) for s in links) for f in LinkStats.__slots__}
    return {
        "pages": stats.pages,
        "links": total["anchors"],
        "links_inside_collection": total["internal"],
        "links_cross_site": total["cross_site"],
        "links_to_directory": total["to_directory"],
        "links_same_page": total["same_page"],
        "links_external": total["external"],
        **stats.as_dict(),
    }
