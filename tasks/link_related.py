"""Related pages by a link measure of the ENS paper, from a crawl's ``links`` data set.

Where the index answers with its min-hash estimate of bag similarity, this answers with one of
the link-based measures (``simweb.core.linkgraph``, ENS Sections 3.2–3.4, Table 1 parameters):
co-citation, bibliographic coupling, ECBC, SimRank, extended SimRank, PageSim or extended
PageSim, over the crawl's link graph (simweb.tasks.crawl.graph.load_link_graph: every link of the
crawl, the links of a page crawled twice read from one copy; an index keeps its crawl in
``INDEX/crawl``). Candidates are every page of the graph; the query page itself and pages
scoring 0 are never listed (ENS Section 4.2, top_{A,N}(v)).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from simweb.core.linkgraph import measure_params
from simweb.core.linkmeasures import related_pages
from simweb.core.urls import normalize_url, url_id
from simweb.tasks.crawl.graph import CrawlGraph, load_link_graph

# PageRank is no similarity (it ranks pages whatever the query), so it is not offered here.
RELATED_MEASURES = ("cocitation", "coupling", "ecbc", "simrank", "extended_simrank", "pagesim", "extended_pagesim")


class NotInGraph(ValueError):
    """The page is neither the source nor the target of any link of the crawl."""


@dataclass(frozen=True, slots=True)
class LinkRelated:
    rank: int
    url: str
    score: float

    def to_dict(self) -> dict:
        return {"rank": self.rank, "url": self.url, "score": self.score}


def related_by_link(crawl: str | CrawlGraph, url: str, measure: str, top: int = 10) -> list[LinkRelated]:
    """The ``top`` pages most similar to ``url`` under the link measure ``measure`` (a name of
    ``RELATED_MEASURES``) with the ENS paper's Table 1 parameters, best first.

    Raises ValueError when the measure is unknown or ``top`` is below 1, NotInGraph (a
    ValueError) when no link of the crawl touches the page."""
    if measure not in RELATED_MEASURES:
        raise ValueError(f"expected a link measure among {', '.join(RELATED_MEASURES)}, got {measure!r}")
    if top < 1:
        raise ValueError(f"top: expected a number of results >= 1, got {top}")
    normalised = normalize_url(url.strip()) if isinstance(url, str) else None
    if normalised is None:
        raise ValueError(f"expected an absolute http(s) URL, got {url!r}")
    loaded = load_link_graph(crawl) if isinstance(crawl, str) else crawl
    wanted = np.array([url_id(normalised)], dtype=np.uint64)
    if not loaded.graph.contains(wanted)[0]:
        raise NotInGraph(
            f"no link of the crawl touches {normalised}: link measures know only pages that link or are "
            f"linked to ({loaded.graph.n_nodes:,} in this crawl); check the address"
        )
    [row] = related_pages(loaded.graph, wanted, measure_params(measure), n=top)
    return [LinkRelated(rank, loaded.urls.get(node, str(node)), score) for rank, (node, score) in enumerate(row, 1)]
