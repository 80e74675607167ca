"""The strategy grids the evaluation sweeps, figure by figure (paper Section 5, Figures 3–9).

The paper varies one dimension of a strategy at a time: the document representation and the
anchor-window size (Figures 3–4), hybrid bags (Figure 5), term weighting (Figures 6–7) and
stemming (Figure 9), plus the Jaccard vs cosine comparison of Section 4. A grid maps each
figure to the strategies it compares; :func:`figure_label` spells each one as the paper's
plots do, which is also how the paper's findings name them (simweb.core.findings).

Beside the bag strategies, the link-based similarity measures of the ENS paper (Lin, Lyu,
King, Sections 3.2–3.4) are judged by the same Γ as :class:`LinkStrategy`, on the crawl's
link graph with the Table 1 parameters.

Beyond the paper, the ``hybrids`` grid adds each term source alone at the Section 7 settings
(W = 32 anchor windows, distance and NMDF weighting, STEM) — out-link ids among them — and a
small search over their source shares (every split of the bag's mass into quarters among two
or more sources, simweb.core.strategy "Source shares"), and bags compared by overlap (in-link
and out-link ids as sets — co-citation and bibliographic coupling as bags an index can
be built with — and each source alone at the Section 7 settings; simweb.core.strategy
"Overlap"): the space the evaluation's recommendation is chosen from (simweb.core.crossval).
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from simweb.core.gamma import ORTHOGONALITY
from simweb.core.linkgraph import PageRankParams, measure_params
from simweb.core.strategy import Frequency, Metric, Source, Strategy, Window, paper_grid

__all__ = [
    "FIGURE_MEASURE",
    "GRIDS",
    "LINK_LABELS",
    "LINK_MEASURES",
    "AnyStrategy",
    "LinkStrategy",
    "figure_label",
    "grid_strategies",
    "link_strategies",
    "overlap_strategies",
    "parse_strategy",
    "share_grid",
    "strategy_from_dict",
    "strategy_grid",
]

GRIDS = ("paper", "quick", "links", "hybrids", "full")
#: The step of the search over source shares: every share a multiple of a quarter.
SHARE_STEP = 0.25
#: The sources the search over shares combines, in the order of simweb.core.strategy.Source.
SHARE_SOURCES = (Source.ANCHOR, Source.CONTENT, Source.LINKS, Source.OUTLINKS)

#: The measure a figure plots when it is not the sibling-Γ (Figure 4: intra-cluster orthogonality).
FIGURE_MEASURE = {"figure4": ORTHOGONALITY}

# The link-based measures of the ENS paper (Sections 3.2–3.4) in the order of its Table 1,
# PageRank among them as a query-independent baseline (see LinkStrategy).
LINK_MEASURES = ("cocitation", "coupling", "ecbc", "simrank", "extended_simrank", "pagerank", "pagesim",
                 "extended_pagesim")
LINK_LABELS = {"cocitation": "co-citation", "coupling": "bibliographic coupling", "ecbc": "ECBC",
               "simrank": "SimRank", "extended_simrank": "extended SimRank", "pagerank": "PageRank",
               "pagesim": "PageSim", "extended_pagesim": "extended PageSim"}


@dataclass(frozen=True)
class LinkStrategy:
    """A link-based similarity measure judged as a strategy (ENS Sections 3–4), with the ENS
    paper's Table 1 parameters (``simweb.core.linkgraph.measure_params``), computed on the crawl's
    link graph (its ``links`` data set, without the directory's own pages' out-links).

    ``pagerank`` is not a similarity: here it ranks every candidate by its PageRank whatever
    the query, sim(q, c) = PR(c) — the query-independent baseline ("popular pages first")
    a similarity measure has to beat. Its Γ says how far popularity alone tracks the directory.
    """

    measure: str

    def __post_init__(self) -> None:
        if self.measure not in LINK_MEASURES:
            raise ValueError(f"expected a link measure among {', '.join(LINK_MEASURES)}, got {self.measure!r}")

    @property
    def label(self) -> str:
        return f"link {self.measure}"

    def spec(self) -> str:
        return f"link:{self.measure}"

    def to_dict(self) -> dict:
        return {"kind": "link", "measure": self.measure}

    def params(self):
        """The measure's parameters (ENS Table 1 defaults)."""
        return PageRankParams() if self.measure == "pagerank" else measure_params(self.measure)

    def __str__(self) -> str:
        return self.label


AnyStrategy = Strategy | LinkStrategy


def strategy_from_dict(data: dict) -> AnyStrategy:
    """A bag strategy (``Strategy.to_dict``) or a link strategy (``LinkStrategy.to_dict``)."""
    if data.get("kind") == "link":
        return LinkStrategy(data["measure"])
    return Strategy.from_dict(data)


def parse_strategy(spec: str) -> AnyStrategy:
    """The strategy of a measures-table ``spec``: ``link:<measure>`` or a ``Strategy.parse`` spec."""
    if isinstance(spec, str) and spec.strip().startswith("link:"):
        return LinkStrategy(spec.strip()[len("link:"):])
    return Strategy.parse(spec)


def link_strategies() -> tuple[LinkStrategy, ...]:
    return tuple(LinkStrategy(m) for m in LINK_MEASURES)


def share_grid(base: Strategy = Strategy(), sources: tuple[Source, ...] = SHARE_SOURCES,
               step: float = SHARE_STEP) -> tuple[Strategy, ...]:
    """``base`` (default: the Section 7 settings) with every split of the bag's mass among two or
    more of ``sources`` into multiples of ``step``: fewer sources first, then by the sources, the
    larger first share first."""
    units = round(1 / step)
    if abs(units * step - 1.0) > 1e-12:
        raise ValueError(f"share step: expected 1 divided by a whole number, got {step!r}")
    found = []

    def splits(left: int, parts: int):
        if parts == 1:
            yield (left,)
            return
        for first in range(left + 1):
            for rest in splits(left - first, parts - 1):
                yield (first, *rest)

    for quarters in splits(units, len(sources)):
        used = [(source, q) for source, q in zip(sources, quarters) if q]
        if len(used) >= 2:
            found.append(dataclasses.replace(base, sources=tuple(s for s, _ in used),
                                             shares=tuple(q / units for _, q in used)))
    return tuple(sorted(found, key=lambda s: (len(s.sources), [sources.index(x) for x in s.sources],
                                              [-x for x in s.shares])))


def overlap_strategies() -> tuple[Strategy, ...]:
    """Beyond the paper, bags compared by overlap (simweb.core.strategy, "Overlap"): in-link and
    out-link ids as sets — co-citation and bibliographic coupling as indexable bags —
    then each source alone at the Section 7 settings."""
    best = Strategy(metric=Metric.OVERLAP)
    plain = dataclasses.replace(best, frequency=Frequency.BINARY)
    return (dataclasses.replace(plain, sources=(Source.LINKS,)), dataclasses.replace(plain, sources=(Source.OUTLINKS,)),
            *(dataclasses.replace(best, sources=(s,)) for s in SHARE_SOURCES))


def hybrid_figures() -> dict[str, tuple[Strategy, ...]]:
    """Beyond the paper: each source alone at the Section 7 settings (``sources``), the search
    over their shares (``shares``) and the bags compared by overlap (``overlap``)."""
    best = Strategy()
    return {"sources": tuple(dataclasses.replace(best, sources=(s,)) for s in SHARE_SOURCES), "shares": share_grid(best),
            "overlap": overlap_strategies()}


def strategy_grid(name: str) -> dict[str, tuple[AnyStrategy, ...]]:
    """The strategies of a grid, by figure. ``paper``: every sweep of Section 5 (Figures 3–9)
    plus Jaccard vs cosine; ``quick``: window sizes, content and links (Figures 3–4) and the
    metric comparison, for a first look in a minute; ``links``: the ENS paper's link measures
    beside Figure 3's anchor windows, contents and link-id bags; ``hybrids``: ``paper`` plus each
    source alone and the search over source shares (:func:`hybrid_figures`); ``full``:
    ``hybrids`` plus the ``links`` figure."""
    if name == "hybrids":
        return {**strategy_grid("paper"), **hybrid_figures()}
    if name in ("links", "full"):
        figures = strategy_grid("hybrids") if name == "full" else {}
        figures["links"] = tuple(paper_grid()["figure3"]) + link_strategies()
        return figures
    figures = dict(paper_grid())
    base = figures["figure3"][0]  # anchor windows W = 32, no weighting
    best = Strategy()  # the paper's Section 7 choice
    metric = (best, dataclasses.replace(best, metric=Metric.COSINE),
              base, dataclasses.replace(base, metric=Metric.COSINE))
    if name == "paper":
        figures["metric"] = metric
        return figures
    if name == "quick":
        fig3 = tuple(s for s in figures["figure3"]
                     if (s.window is Window.BASIC and s.window_size in (0, 8, 32)) or not s.uses_anchor)
        return {"figure3": fig3, "figure4": fig3, "metric": metric[:2]}
    raise ValueError(f"unknown grid {name!r}: expected one of {', '.join(GRIDS)}")


def grid_strategies(figures: dict[str, tuple[AnyStrategy, ...]]) -> tuple[AnyStrategy, ...]:
    """Every distinct strategy of a grid, in figure order."""
    return tuple(dict.fromkeys(s for group in figures.values() for s in group))


def figure_label(figure: str, strategy: AnyStrategy) -> str:
    """The short label of a strategy in one figure, spelt as in the paper's plots."""
    if isinstance(strategy, LinkStrategy):
        return LINK_LABELS[strategy.measure]
    if figure in ("figure3", "figure4", "links"):
        if strategy.sources == (Source.CONTENT,):
            return "contents"
        if strategy.sources == (Source.LINKS,):
            return "link-id bags" if figure == "links" else "links"
        if strategy.window is Window.BASIC:
            return f"w{strategy.window_size}"
        return strategy.window.value
    if figure == "figure5":
        names = {Source.ANCHOR: "Anchor Window", Source.CONTENT: "Content", Source.LINKS: "Links"}
        return ", ".join(names[s] for s in strategy.sources)
    if figure == "figure6":
        dist = strategy.distance_weighting
        freq = strategy.frequency is not Frequency.NONE
        return {(False, False): "None", (True, False): "Distance", (False, True): "Frequency",
                (True, True): "Distance and Frequency"}[(dist, freq)]
    if figure == "figure7":
        return {"none": "None", "log": "log", "sqrt": "sqrt", "nmdf": "NMDF"}[strategy.frequency.value]
    if figure == "figure9":
        return {"nostem": "NoStem", "stopstem": "StopStem", "stem": "Stem"}[strategy.stemming.value]
    if figure == "metric":
        short = "Section 7 choice" if strategy.frequency is Frequency.NMDF else "anchor w32"
        return f"{short}, {strategy.metric.value}"
    if figure in ("sources", "shares"):
        letters = {Source.ANCHOR: "A", Source.CONTENT: "C", Source.LINKS: "In", Source.OUTLINKS: "Out"}
        if strategy.shares is None:
            return {Source.ANCHOR: "anchor w32", Source.CONTENT: "contents", Source.LINKS: "in-link ids",
                    Source.OUTLINKS: "out-link ids"}[strategy.sources[0]] if len(strategy.sources) == 1 else strategy.label
        return " ".join(f"{letters[s]}{round(100 * x)}" for s, x in zip(strategy.sources, strategy.shares))
    if figure == "overlap":
        if strategy.frequency is Frequency.BINARY and strategy.sources in ((Source.LINKS,), (Source.OUTLINKS,)):
            return "co-citation bag" if strategy.sources == (Source.LINKS,) else "coupling bag"
        return figure_label("sources", dataclasses.replace(strategy, metric=Metric.JACCARD)) + ", overlap"
    return strategy.label
