"""The crawl's link graph (ENS Section 3.1) with the URL of each of its nodes."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import pyarrow as pa

from simweb.core.linkgraph import LinkGraph
from simweb.tasks.crawl.read import EDGE_COLUMNS, keep_all
from simweb.tasks.crawl.tables import read_crawl

__all__ = ["CrawlGraph", "load_link_graph"]


@dataclass(frozen=True, slots=True, eq=False)
class CrawlGraph:
    """A crawl's link graph (ENS Section 3.1), the URL of each of its nodes, and the counts of
    the links read, left out and merged."""

    graph: LinkGraph
    urls: dict[int, str]
    counts: dict[str, int]


def load_link_graph(crawl_dir: str, exclude: Callable[[str], bool] = keep_all) -> CrawlGraph:
    """The graph of the crawl's links: every page that links or is linked to is a node; self-links
    and repeated links are counted out by ``LinkGraph.from_edges``; duplicate copies' links and
    the out-links of the pages ``exclude`` names are left out."""
    tables = read_crawl(crawl_dir, None, EDGE_COLUMNS, exclude=exclude)
    links = tables.links
    graph = LinkGraph.from_edges(links.column("source_id").to_numpy(), links.column("target_id").to_numpy())
    urls: dict[int, str] = {}
    for ids, names in ((links.column("source_id"), links.column("source_url")),
                       (links.column("target_id"), links.column("target_url"))):
        named = pa.table({"id": ids, "url": names}).group_by("id").aggregate([("url", "min")])
        urls.update(zip(named.column("id").to_pylist(), named.column("url_min").to_pylist()))
    counts = {k: v for k, v in tables.counts.items() if k.startswith("links")}
    counts.update(self_links=graph.stats.self_loops, repeated_links=graph.stats.duplicate_edges,
                  nodes=graph.n_nodes, edges=graph.n_edges)
    return CrawlGraph(graph, urls, counts)
