"""The evaluation stages: Γ of every strategy of a grid against a topic directory (paper Sections 2, 5).

Three stages, each a thin adapter around simcore, each cached by :func:`simweb.tasks.stagecache.run_stage`
under ``work`` (same inputs and parameters → reused, so a re-run only computes what changed):

1. ``eval-sample`` (:func:`prepare_sample`): read the crawl's links once, parse the directory
   once (streaming, keeping only URLs the crawl links to), drop the directory's own pages, and
   draw the sample of sibling class pairs (Section 5). Writes ``sample.parquet`` (url, url_id,
   class levels) and ``sample.json`` (description, counts, the Figure 2 showcase sources).
2. ``eval-strategy`` (:func:`evaluate_strategies`): for a small group of strategies, build the
   crawl's bag corpus once from the ingest output (no WARC is re-read), then per strategy the
   weighted bags of the sample, their exact all-pairs similarity and the per-source
   concordant/discordant counts. Writes ``counts.npz`` per strategy.
3. :func:`write_report`: bootstrap intervals, the measures table (Parquet), the paper's
   Figures 3–9 for this crawl plus Jaccard vs cosine (PNG and SVG), a Figure 2-style listing,
   the paper's findings checked one by one, and a self-contained HTML report with a Markdown
   summary.

The Prefect tasks at the end of the module wrap these functions one-to-one.
"""
from __future__ import annotations

import base64
import dataclasses
import datetime as _dt
import html
import io
import json
import logging
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from prefect import get_run_logger, task
from prefect.cache_policies import NO_CACHE
from prefect.exceptions import MissingContextError

from simweb.core.bags import Corpus
from simweb.core.directory import ODP_HOSTS, Directory, build_directory
from simweb.core.gamma import (
    DISTANCE_NAMES,
    GAMMA_MEASURES,
    Estimate,
    ORTHOGONALITY,
    PairCounts,
    bootstrap,
    bootstrap_difference,
    class_codes,
    gammas,
    orthogonality,
    pair_counts,
    source_gamma,
)
from simweb.core.linkgraph import (
    ExtendedSimRankParams,
    LinkGraph,
    PageRankParams,
    SimRankParams,
    link_similarity,
    measure_params,
    pagerank,
    simrank_plan,
)
from simweb.core.minhash import MinHashParams, sign, term_hashes
from simweb.core.query import all_pairs as index_pairs
from simweb.core.query import invert
from simweb.core.retrieval_metrics import class_retrieval_scores, delta, top_n
from simweb.core.sampling import PAPER_PAIRS, Sample, describe, sample_class_pairs
from simweb.core.similarity import all_pairs
from simweb.core.strategy import Frequency, Metric, Source, Strategy, Window, paper_grid
from simweb.core.urls import url_id
from simweb.core.weighting import nmdf_factor
from simweb.tasks.crawl import content_tfidf, crawl_parts, link_targets, load_corpus, load_link_graph
from simweb.tasks.directory_file import directory_format, read_directory_file, read_lines
from simweb.tasks.stagecache import StageOutput, file_identities, run_stage
from simweb.tasks.storage import filesystem, join, parts, write_bytes_atomic, write_parquet_atomic

logger = logging.getLogger("simweb.evaluate")

SIBLING_GAMMA = "sibling_gamma"
COVERAGE = "coverage"  # fraction of the sample with a non-empty bag under the strategy
MEASURES = (*GAMMA_MEASURES, ORTHOGONALITY)

# Ranks shown in the Figure 2-style listing (the paper's own choice).
LISTING_RANKS = (1, 2, 5, 10, 20, 50, 100)
SHOWCASE_SOURCES = 3

# The index's agreement with exact similarity is measured for the strategy the index is built
# with by default (the paper's Section 7 choice) at the paper's m and α (Section 6.2).
INDEX_STRATEGY = Strategy()
INDEX_M = 80
INDEX_ALPHA = 0.15

# Names of the data sets a report folder holds.
MEASURES_TABLE = "measures.parquet"
DIFFERENCES_TABLE = "differences.parquet"

MEASURES_SCHEMA = pa.schema(
    [
        pa.field("strategy", pa.string(), nullable=False),  # Strategy.label
        pa.field("spec", pa.string(), nullable=False),  # .spec(), readable by parse_strategy
        pa.field("measure", pa.string(), nullable=False),
        pa.field("value", pa.float64()),
        pa.field("low", pa.float64()),  # bootstrap percentile interval
        pa.field("high", pa.float64()),
        pa.field("se", pa.float64()),  # bootstrap standard error
        pa.field("concordant", pa.int64()),  # pairs behind a Γ (null for other measures)
        pa.field("discordant", pa.int64()),
        pa.field("seconds", pa.float64()),  # bags + similarity + counting for this strategy
    ]
)

DIFFERENCES_SCHEMA = pa.schema(
    [
        pa.field("figure", pa.string(), nullable=False),
        pa.field("strategy", pa.string(), nullable=False),
        pa.field("baseline", pa.string(), nullable=False),
        pa.field("measure", pa.string(), nullable=False),
        pa.field("value", pa.float64()),  # measure(strategy) − measure(baseline)
        pa.field("low", pa.float64()),  # paired bootstrap interval
        pa.field("high", pa.float64()),
    ]
)


def _log():
    try:
        return get_run_logger()
    except MissingContextError:
        return logger


# ---------------------------------------------------------------------------------------------
# Grids: the paper's one-dimension-at-a-time sweeps (Section 5), figure by figure

FIGURE_TITLES = {
    "figure3": "Figure 3 — Document representations: sibling-Γ",
    "figure4": "Figure 4 — Intra-cluster orthogonality",
    "figure5": "Figure 5 — Hybrid bag types: sibling-Γ",
    "figure6": "Figure 6 — Term weighting: sibling-Γ",
    "figure7": "Figure 7 — Frequency weighting: sibling-Γ",
    "figure8": "Figure 8 — The NMDF weight of a term by its document frequency",
    "figure9": "Figure 9 — Stemming variants: sibling-Γ",
    "metric": "Jaccard vs cosine: sibling-Γ",
    "links": "Link-based measures (ENS paper) beside anchor windows: sibling-Γ",
}
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


GRIDS = ("paper", "quick", "links", "full")


def strategy_grid(name: str) -> dict[str, tuple[AnyStrategy, ...]]:
    """The strategies of a grid, by figure. ``paper``: every sweep of Section 5 (Figures 3–9)
    plus Jaccard vs cosine; ``quick``: window sizes, content and links (Figures 3–4) and the
    metric comparison, for a first look in a minute; ``links``: the ENS paper's link measures
    beside Figure 3's anchor windows, contents and link-id bags; ``full``: ``paper`` plus the
    ``links`` figure."""
    if name in ("links", "full"):
        figures = strategy_grid("paper") if name == "full" else {}
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
    return strategy.label


# ---------------------------------------------------------------------------------------------
# Stage 1: the sample


@dataclass(frozen=True)
class SampleParams:
    """How the sample is drawn (Section 5); see :mod:`simweb.core.sampling` for the reading of
    "300 pairs of clusters from the third level"."""

    seed: int = 0
    n_pairs: int = PAPER_PAIRS
    min_pages: int = 2
    max_pages_per_class: int | None = None
    directory_format: str = "auto"


def prepare_sample(
    crawl: str,
    directory: str,
    work: str,
    params: SampleParams = SampleParams(),
    directory_pages: str | None = None,
) -> StageOutput:
    """Stage ``eval-sample``: parse the directory once and draw the sample (cached)."""
    inputs = {
        "crawl": file_identities(crawl_parts(crawl).files),
        "directory": file_identities([directory]),
        "directory_pages": file_identities([directory_pages]) if directory_pages else [],
    }

    def compute(tmp: str) -> dict:
        t0 = time.perf_counter()
        excluded = read_lines(directory_pages) if directory_pages else []
        fmt = directory_format(directory) if params.directory_format == "auto" else params.directory_format
        # The directory's own pages are known before it is parsed: the listed pages and, for an
        # Open Directory dump, its hosts. Their links are dropped before anything is counted.
        probe = build_directory((), directory_pages=excluded, directory_hosts=ODP_HOSTS if fmt == "rdf" else ())
        linked, counts = link_targets(crawl, probe.is_directory_page)
        # The single pass over the directory file, keeping only URLs the crawl links to.
        parsed = read_directory_file(directory, fmt=fmt, directory_pages=excluded, keep=set(linked))
        sample = sample_class_pairs(
            parsed.classes, linked, n_pairs=params.n_pairs, seed=params.seed,
            min_pages=params.min_pages, max_pages_per_class=params.max_pages_per_class,
        )
        if len(sample.class_pairs) == 0:
            raise ValueError(
                f"no pair of sibling classes with at least {params.min_pages} linked-to URLs each: the "
                f"directory classifies {len(parsed)} URLs that the crawl links to "
                f"(directory counts: {parsed.counts}); check that the directory and the crawl name the "
                "same URLs and that the directory is at least 3 levels deep below Top"
            )
        write_parquet_atomic(sample_table(sample), join(tmp, "sample.parquet"))
        description = describe(sample)
        rng = np.random.default_rng(params.seed)
        codes = class_codes(list(sample.classes))
        same = np.bincount(codes[:, -1])[codes[:, -1]] - 1
        candidates = np.flatnonzero(same >= 2)
        showcase = sorted(rng.choice(candidates, size=min(SHOWCASE_SOURCES, candidates.size), replace=False).tolist()) \
            if candidates.size else []
        info = {
            "seed": params.seed,
            "params": dataclasses.asdict(params),
            "description": dataclasses.asdict(description),
            "description_lines": description.lines(),
            "class_pairs": [["/".join(a), "/".join(b)] for a, b in sample.class_pairs],
            "eligible_classes": sample.eligible_classes,
            "eligible_urls": sample.eligible_urls,
            "directory_counts": parsed.counts,
            "directory_pages_listed": len(excluded),
            # The directory's own pages, dropped from the crawl by every strategy (footnote 8).
            "excluded_pages": sorted(probe.directory_pages),
            "excluded_hosts": list(probe.directory_hosts),
            "crawl_counts": _crawl_counts(counts),
            "showcase": showcase,
            "seconds": round(time.perf_counter() - t0, 3),
        }
        write_bytes_atomic(json.dumps(info, indent=1, sort_keys=True).encode(), join(tmp, "sample.json"))
        return {"urls": len(sample), "classes": description.classes, "pairs": description.class_pairs}

    return run_stage(work, "eval-sample", inputs, dataclasses.asdict(params), compute, log=_log())


def _crawl_counts(counts: dict[str, int]) -> dict[str, int]:
    """The crawl reader's counts, the pages it leaves out named as the directory's own."""
    names = {"excluded_pages": "directory_pages_dropped", "links_from_excluded_pages": "links_from_directory_pages"}
    return {names.get(k, k): v for k, v in counts.items()}


def sample_table(sample: Sample) -> pa.Table:
    depth = len(sample.classes[0]) if sample.classes else 3
    columns = {
        "url": pa.array(sample.urls, pa.string()),
        "url_id": pa.array([url_id(u) for u in sample.urls], pa.uint64()),
    }
    for k in range(depth):
        columns[f"class_{k + 1}"] = pa.array([c[k] for c in sample.classes], pa.string())
    return pa.table(columns)


@dataclass(frozen=True)
class LoadedSample:
    """The sample as the strategy and report stages read it back."""

    urls: list[str]
    url_ids: np.ndarray
    classes: list[tuple[str, ...]]
    codes: np.ndarray  # simweb.core.gamma.class_codes of ``classes``
    info: dict


def load_sample(sample_dir: str) -> LoadedSample:
    fs, path = filesystem(join(sample_dir, "sample.parquet"))
    with fs.open(path, "rb") as f:
        table = pq.read_table(f)
    level_cols = sorted(c for c in table.column_names if c.startswith("class_"))
    levels = [table.column(c).to_pylist() for c in level_cols]
    fs, path = filesystem(join(sample_dir, "sample.json"))
    with fs.open(path, "rb") as f:
        info = json.loads(f.read())
    classes = [tuple(c) for c in zip(*levels)]
    return LoadedSample(table.column("url").to_pylist(), table.column("url_id").to_numpy(), classes,
                        class_codes(classes), info)


# ---------------------------------------------------------------------------------------------
# Stage 2: strategies


class EmbeddedSimilarity:
    """The n × n similarity of the sample from the similarity of the documents that have a bag:
    rows and columns of documents without one are 0 (an empty bag is similar to nothing)."""

    def __init__(self, n: int, present: np.ndarray, inner: np.ndarray) -> None:
        self.shape = (n, n)
        self._present = present
        self._inner = inner
        self._row_of = np.full(n, -1, dtype=np.int64)
        self._row_of[present] = np.arange(present.size)

    def __getitem__(self, rows: slice) -> np.ndarray:
        return self.take(np.arange(self.shape[0])[rows])

    def take(self, idx: np.ndarray) -> np.ndarray:
        """The dense rows ``idx``."""
        idx = np.asarray(idx, dtype=np.int64)
        out = np.zeros((idx.size, self.shape[1]))
        inner_rows = self._row_of[idx]
        have = inner_rows >= 0
        if have.any():
            out[np.ix_(np.flatnonzero(have), self._present)] = self._inner[inner_rows[have]]
        return out


# Precision/recall/F/average precision and Δ are measured on each query's top N (ENS Section 4.2
# uses N = 10; the lecture's measures at the same N).
RETRIEVAL_N = 10
RETRIEVAL_MEASURES = (f"precision_at_{RETRIEVAL_N}", f"recall_at_{RETRIEVAL_N}", f"f_at_{RETRIEVAL_N}",
                      f"average_precision_at_{RETRIEVAL_N}", f"delta_at_{RETRIEVAL_N}")
_RETRIEVAL_KEYS = ("precision", "recall", "f", "average_precision")


def evaluate_strategies(crawl: str, sample: StageOutput, strategies: Sequence[AnyStrategy], work: str
                        ) -> list[StageOutput]:
    """Stage ``eval-strategy`` for a group of strategies: the corpus (bag strategies) or the link
    graph (link strategies) is built once from the crawl's ingest output (without the directory's
    own pages), then each strategy's counts are computed, or reused from an earlier run with the
    same crawl, sample and strategy."""
    deduplicated = [s.label for s in strategies if isinstance(s, Strategy) and s.dedup]
    if deduplicated:
        raise ValueError(
            f"{', '.join(deduplicated)}: dedup is an option of the index build (it removes pages before "
            "indexing), while the evaluation judges the bags of every sampled page; evaluate the strategy "
            "without 'dedup'"
        )
    loaded = load_sample(sample.path)
    crawl_identity = file_identities(crawl_parts(crawl).files)
    excluded = Directory({}, frozenset(loaded.info.get("excluded_pages", [])),
                         tuple(loaded.info.get("excluded_hosts", [])))
    state: dict = {}

    def corpus() -> Corpus:
        if "corpus" not in state:
            t0 = time.perf_counter()
            state["corpus"] = load_corpus(crawl, excluded.is_directory_page)
            _log().info("evaluate: bag corpus of %s built in %.1f s", crawl, time.perf_counter() - t0)
        return state["corpus"]

    def graph() -> tuple[LinkGraph, dict]:
        if "graph" not in state:
            t0 = time.perf_counter()
            loaded_graph = load_link_graph(crawl, excluded.is_directory_page)
            g = loaded_graph.graph
            counts = {**loaded_graph.counts, "seconds_graph": round(time.perf_counter() - t0, 4)}
            state["graph"] = (g, counts)
            _log().info("evaluate: link graph of %s (%d pages, %d links) built in %.1f s", crawl, g.n_nodes,
                        g.n_edges, counts["seconds_graph"])
        return state["graph"]

    def vectors() -> tuple:
        if "tfidf" not in state:
            state["tfidf"] = content_tfidf(crawl, loaded.url_ids, excluded.is_directory_page)
        return state["tfidf"]

    outputs = []
    for strategy in strategies:
        def compute(tmp: str, strategy: AnyStrategy = strategy) -> dict:
            if isinstance(strategy, LinkStrategy):
                return _evaluate_link(graph(), vectors(), loaded, strategy, tmp)
            return _evaluate_one(corpus(), vectors(), loaded, strategy, tmp)

        outputs.append(run_stage(work, "eval-strategy", {"crawl": crawl_identity, "sample": sample},
                                 {"strategy": strategy.to_dict(), "retrieval_n": RETRIEVAL_N}, compute, log=_log()))
    return outputs


def retrieval_values(similarity, codes: np.ndarray, vectors, rows: np.ndarray, n: int = RETRIEVAL_N,
                     *, block: int = 512) -> dict[str, np.ndarray]:
    """Per-query precision, recall, F and average precision at ``n`` against the directory
    classes (lecture; relevant = the other sample pages of the query's class, candidates = the
    sample) and score_{A,N} of Δ(A, N) (ENS Section 4.2), every sample page a query.

    Returns the per-query arrays and ``scored``, the queries whose class has another sample
    page (the others have no relevant page and are skipped; the sample's classes always have
    two or more pages, so normally none is)."""
    total = codes.shape[0]
    classes = codes[:, -1].tolist()
    out = {k: [] for k in _RETRIEVAL_KEYS}
    scores = np.zeros(total)
    for start in range(0, total, block):
        idx = np.arange(start, min(total, start + block))
        dense = similarity.take(idx) if isinstance(similarity, EmbeddedSimilarity) else np.asarray(similarity)[idx]
        got = class_retrieval_scores(dense, [classes[i] for i in idx], classes, n, self_columns=idx)
        for k in _RETRIEVAL_KEYS:
            out[k].append(got.per_query[k])
        scores[idx] = delta(top_n(dense, n, idx), rows[idx], rows, vectors, n).per_query
    sizes = np.bincount(codes[:, -1])
    result = {k: np.concatenate(v) if v else np.zeros(0) for k, v in out.items()}
    result["scored"] = np.flatnonzero(sizes[codes[:, -1]] >= 2)
    result["delta"] = scores
    return result


def _evaluate_one(corpus: Corpus, vectors, sample: LoadedSample, strategy: Strategy, out: str) -> dict:
    n = len(sample.urls)
    t0 = time.perf_counter()
    bags = corpus.bags(strategy, targets=sample.url_ids.tolist())
    present = np.flatnonzero(np.isin(sample.url_ids, bags.url_ids))
    t1 = time.perf_counter()
    inner = all_pairs(bags, strategy.metric, ids=sample.url_ids[present].tolist()) if present.size else np.zeros((0, 0))
    similarity = EmbeddedSimilarity(n, present, inner)
    t2 = time.perf_counter()
    weighting = bags.weighting.to_dict() if bags.weighting is not None else {}
    index = None
    stats = _count_and_save(similarity, vectors, sample, strategy, present, out)
    if strategy == INDEX_STRATEGY and present.size > 1:
        index = index_agreement(bags, sample.url_ids[present], inner, present, sample.codes, n, out)
        index["gamma_exact"] = {k: stats["values"][k] for k in GAMMA_MEASURES}
    stats.update(index=index, weighting=weighting, seconds_bags=round(t1 - t0, 4),
                 seconds_similarity=round(t2 - t1, 4))
    stats["seconds"] = round(stats["seconds_bags"] + stats["seconds_similarity"] + stats["seconds_gamma"], 4)
    return stats


def _evaluate_link(graph_and_counts: tuple[LinkGraph, dict], vectors, sample: LoadedSample,
                   strategy: LinkStrategy, out: str) -> dict:
    """A link measure on the sample: each sampled page that is a node of the link graph against
    every other (pages outside the graph are similar to nothing, as pages without a bag are).
    The measures run on the whole graph with the sample as queries and candidates, which bounds
    SimRank-type memory by the sample (``simweb.core.linkgraph``: exact iteration when the graph fits
    the measure's ``max_bytes``, its linear form or block bounds beyond)."""
    graph, graph_counts = graph_and_counts
    n = len(sample.urls)
    t0 = time.perf_counter()
    present = np.flatnonzero(graph.contains(sample.url_ids))
    nodes = graph.indices(sample.url_ids[present])
    params = strategy.params()
    plan = None
    if isinstance(params, (SimRankParams, ExtendedSimRankParams)) and nodes.size:
        # Which computation fits max_bytes on this graph: exact, linear form, or block lower bounds.
        chosen = simrank_plan(graph, nodes, nodes, params)
        plan = {"method": chosen.method, "exact": bool(chosen.exact), "rows": int(chosen.rows.size),
                "cols": int(chosen.cols.size), "bytes_estimate": int(chosen.bytes_estimate)}
    if strategy.measure == "pagerank":
        rank = pagerank(graph, params)[nodes]
        inner = np.broadcast_to(rank, (nodes.size, nodes.size))
    else:
        inner = link_similarity(graph, params, nodes, nodes) if nodes.size else np.zeros((0, 0))
    t1 = time.perf_counter()
    similarity = EmbeddedSimilarity(n, present, np.asarray(inner))
    stats = _count_and_save(similarity, vectors, sample, strategy, present, out)
    stats.update(index=None, weighting={}, params=_params_dict(params), graph=graph_counts, simrank_plan=plan,
                 seconds_similarity=round(t1 - t0, 4))
    stats["seconds"] = round(stats["seconds_similarity"] + stats["seconds_gamma"], 4)
    return stats


def _params_dict(params) -> dict:
    return {f.name: (_params_dict(getattr(params, f.name)) if dataclasses.is_dataclass(getattr(params, f.name))
                     else getattr(params, f.name)) for f in dataclasses.fields(params)}


def _count_and_save(similarity: EmbeddedSimilarity, vectors, sample: LoadedSample, strategy: AnyStrategy,
                    present: np.ndarray, out: str) -> dict:
    """Γ pair counts, the retrieval measures and the showcase rows of one strategy, saved as
    ``counts.npz``; returns the stage's stats (point values and timings)."""
    n = len(sample.urls)
    t0 = time.perf_counter()
    counts = pair_counts(similarity, sample.codes)
    t1 = time.perf_counter()
    retrieval = retrieval_values(similarity, sample.codes, *vectors)
    t2 = time.perf_counter()
    showcase = np.asarray(sample.info.get("showcase", []), dtype=np.int64)
    rows = similarity.take(showcase)
    buffer = io.BytesIO()
    np.savez_compressed(buffer, types=np.asarray(counts.types), concordant=counts.concordant,
                        discordant=counts.discordant, orthogonal=counts.orthogonal,
                        same_class=counts.same_class, showcase=showcase, showcase_rows=rows,
                        **{f"retrieval_{k}": v for k, v in retrieval.items()})
    write_bytes_atomic(buffer.getvalue(), join(out, "counts.npz"))
    values = {**gammas(counts), ORTHOGONALITY: orthogonality(counts)}
    for name, key in zip(RETRIEVAL_MEASURES, (*_RETRIEVAL_KEYS, "delta")):
        v = retrieval[key]
        values[name] = float(v.mean()) if v.size else math.nan
    return {
        "strategy": strategy.to_dict(),
        "label": strategy.label,
        "spec": strategy.spec(),
        "with_bag": int(present.size),
        "sample": n,
        "seconds_gamma": round(t1 - t0, 4),
        "seconds_retrieval": round(t2 - t1, 4),
        "values": {k: (None if math.isnan(v) else v) for k, v in values.items()},
    }


def load_counts(output_path: str) -> tuple[PairCounts, np.ndarray, np.ndarray]:
    """A strategy's pair counts and its showcase similarity rows."""
    counts, showcase, rows, _ = load_strategy_output(output_path)
    return counts, showcase, rows


def load_strategy_output(output_path: str) -> tuple[PairCounts, np.ndarray, np.ndarray, dict[str, np.ndarray]]:
    """A strategy's pair counts, showcase similarity rows and per-query retrieval values
    (see :func:`retrieval_values`)."""
    fs, path = filesystem(join(output_path, "counts.npz"))
    with fs.open(path, "rb") as f:
        data = np.load(io.BytesIO(f.read()))
        types = tuple(tuple(int(x) for x in t) for t in data["types"])
        n = data["concordant"].shape[0]
        counts = PairCounts(np.arange(n), types, data["concordant"], data["discordant"],
                            data["orthogonal"], data["same_class"])
        retrieval = {k[len("retrieval_"):]: data[k] for k in data.files if k.startswith("retrieval_")}
        return counts, data["showcase"], data["showcase_rows"], retrieval


def retrieval_estimates(retrieval: dict[str, np.ndarray], groups: np.ndarray, *, n_resamples: int = 1000,
                        seed: int = 0, level: float = 0.95) -> dict[str, Estimate]:
    """Means of the per-query retrieval values with the same cluster bootstrap as Γ
    (``simweb.core.gamma.bootstrap``: the sampled classes drawn with replacement, same seed), each
    mean a ratio of sums: Σ values / number of queries."""
    if not retrieval:
        return {}
    dense = np.unique(groups, return_inverse=True)[1].ravel()
    n_groups = int(dense.max()) + 1 if dense.size else 0
    weights = (np.random.default_rng(seed).multinomial(n_groups, np.full(n_groups, 1.0 / n_groups),
                                                       size=n_resamples).astype(np.float64)
               if n_groups else np.zeros((0, 0)))
    scored = retrieval["scored"].astype(np.int64)
    out = {}
    for name, key in zip(RETRIEVAL_MEASURES, (*_RETRIEVAL_KEYS, "delta")):
        values = retrieval[key]
        members = dense if key == "delta" else dense[scored]
        num = np.bincount(members, weights=values, minlength=n_groups)
        den = np.bincount(members, minlength=n_groups).astype(np.float64)
        value = float(num.sum() / den.sum()) if den.sum() else math.nan
        if not n_groups or math.isnan(value):
            out[name] = Estimate(value, math.nan, math.nan, math.nan)
            continue
        with np.errstate(invalid="ignore", divide="ignore"):
            draws = (weights @ num) / (weights @ den)
        draws = draws[np.isfinite(draws)]
        if draws.size < 2:
            out[name] = Estimate(value, math.nan, math.nan, math.nan)
            continue
        tail = (1.0 - level) / 2.0
        low, high = np.quantile(draws, [tail, 1.0 - tail])
        out[name] = Estimate(value, float(low), float(high), float(draws.std(ddof=1)))
    return out


def index_agreement(bags, ids: np.ndarray, exact: np.ndarray, present: np.ndarray, codes: np.ndarray, n: int,
                    out: str, *, m: int = INDEX_M, alpha: float = INDEX_ALPHA) -> dict:
    """How well the min-hash index reproduces exact similarity on the sample (Section 6.2):
    Γ computed from the signature estimates instead of exact Jaccard, and the recall and
    precision of PROCESSQUERY at threshold α against the pairs whose exact Jaccard reaches α."""
    t0 = time.perf_counter()
    rows = bags.indices(ids.tolist())
    csr = bags.csr[rows]
    csr.sort_indices()
    signatures = sign(csr.indices.astype(np.int64), csr.indptr.astype(np.int64), term_hashes(bags.vocabulary),
                      csr.data, MinHashParams(m=m)).values
    k = signatures.shape[0]
    estimate = np.empty((k, k))
    step = max(1, (1 << 22) // max(1, k * m))
    for r0 in range(0, k, step):
        estimate[r0:r0 + step] = (signatures[r0:r0 + step, None, :] == signatures[None, :, :]).mean(axis=2)
    counts = pair_counts(EmbeddedSimilarity(n, present, estimate), codes)
    a, b, _ = index_pairs(invert(signatures), signatures, alpha)
    retrieved = set(zip(np.minimum(a, b).tolist(), np.maximum(a, b).tolist()))
    upper = np.triu(exact >= alpha - 1e-12, k=1)
    relevant = set(zip(*(x.tolist() for x in np.nonzero(upper))))
    hits = len(retrieved & relevant)
    off = ~np.eye(k, dtype=bool)
    buffer = io.BytesIO()
    np.savez_compressed(buffer, concordant=counts.concordant, discordant=counts.discordant)
    write_bytes_atomic(buffer.getvalue(), join(out, "index_counts.npz"))
    return {
        "strategy": INDEX_STRATEGY.label, "m": m, "alpha": alpha,
        "relevant_pairs": len(relevant), "retrieved_pairs": len(retrieved), "hits": hits,
        "recall": hits / len(relevant) if relevant else None,
        "precision": hits / len(retrieved) if retrieved else None,
        "mean_abs_error": float(np.abs(estimate - exact)[off].mean()) if k > 1 else None,
        "gamma_estimate": {key: _nan_to_none(v) for key, v in gammas(counts).items()},
        "seconds": round(time.perf_counter() - t0, 3),
    }


# ---------------------------------------------------------------------------------------------
# Stage 3: the report


@dataclass(frozen=True)
class StrategyResult:
    strategy: Strategy
    counts: PairCounts
    estimates: dict
    stats: dict
    showcase: np.ndarray
    showcase_rows: np.ndarray


def write_report(
    out: str,
    sample: StageOutput,
    figures: dict[str, tuple[Strategy, ...]],
    results: dict[Strategy, StageOutput],
    *,
    seed: int = 0,
    n_resamples: int = 1000,
    title: str = "",
) -> dict:
    """Bootstrap intervals, tables, figures and the HTML/Markdown report in ``out``.

    Returns a summary: paths of the report files and each strategy's sibling-Γ with its interval.
    """
    loaded = load_sample(sample.path)
    groups = loaded.codes[:, -1]  # resample whole classes: their sources share the ground truth
    by_strategy: dict[Strategy, StrategyResult] = {}
    for strategy, output in results.items():
        counts, showcase, rows, retrieval = load_strategy_output(output.path)
        estimates = bootstrap(counts, groups, n_resamples=n_resamples, seed=seed)
        estimates.update(retrieval_estimates(retrieval, groups, n_resamples=n_resamples, seed=seed))
        by_strategy[strategy] = StrategyResult(strategy, counts, estimates, output.stats, showcase, rows)

    fs, out_path = filesystem(out)
    fs.makedirs(out_path, exist_ok=True)
    write_parquet_atomic(_measures_table(by_strategy), join(out, MEASURES_TABLE))
    differences = _differences(figures, by_strategy, groups, n_resamples, seed)
    write_parquet_atomic(differences, join(out, DIFFERENCES_TABLE))

    figure_files = _draw_figures(out, figures, by_strategy)
    jaccard = [r for r in by_strategy.values()
               if isinstance(r.strategy, Strategy) and r.strategy.metric is Metric.JACCARD]
    ranked = sorted(jaccard, key=lambda r: _value(r, SIBLING_GAMMA), reverse=True)
    best, worst = (ranked[0], ranked[-1]) if ranked else (None, None)
    listings = _listings(loaded, best, worst) if best is not None else []
    findings = paper_findings(figures, by_strategy, groups, n_resamples=n_resamples, seed=seed)

    index = next((r.stats.get("index") for r in by_strategy.values() if r.stats.get("index")), None)
    context = {
        "index": index,
        "title": title or "simweb evaluation report",
        "generated": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "sample": loaded.info,
        "figures": figures,
        "results": by_strategy,
        "figure_files": figure_files,
        "listings": listings,
        "findings": findings,
        "differences": differences.to_pylist(),
        "best": best,
        "worst": worst,
        "n_resamples": n_resamples,
        "seed": seed,
    }
    markdown = _markdown(context)
    write_bytes_atomic(markdown.encode(), join(out, "summary.md"))
    write_bytes_atomic(_html(context, out).encode(), join(out, "report.html"))
    summary = {
        "report": join(out, "report.html"),
        "summary": join(out, "summary.md"),
        "measures": join(out, MEASURES_TABLE),
        "sample": loaded.info.get("description_lines", []),
        "sibling_gamma": [
            {"strategy": r.strategy.label, **dataclasses.asdict(r.estimates[SIBLING_GAMMA]),
             "seconds": r.stats.get("seconds"),
             "retrieval": {m: dataclasses.asdict(r.estimates[m]) for m in RETRIEVAL_MEASURES if m in r.estimates}}
            for r in sorted(by_strategy.values(), key=lambda r: _value(r, SIBLING_GAMMA), reverse=True)
        ],
        "best": best.strategy.label if best else None,
        "worst": worst.strategy.label if worst else None,
        "findings": findings,
        "index": index,
    }
    write_bytes_atomic(json.dumps(summary, indent=1, default=_json_default).encode(), join(out, "summary.json"))
    return summary


def _json_default(value):
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, (np.integer,)):
        return int(value)
    if isinstance(value, (np.floating,)):
        return float(value)
    raise TypeError(f"cannot write {type(value).__name__} to JSON")


def _value(result: StrategyResult, measure: str) -> float:
    v = result.estimates[measure].value
    return -math.inf if math.isnan(v) else v


def _measures_table(by_strategy: dict[Strategy, StrategyResult]) -> pa.Table:
    rows = []
    for strategy, result in by_strategy.items():
        seconds = result.stats.get("seconds")
        for measure in (*MEASURES, *RETRIEVAL_MEASURES):
            if measure not in result.estimates:
                continue
            est = result.estimates[measure]
            if measure in GAMMA_MEASURES:
                c, d = result.counts.per_source(measure)
                c, d = int(c.sum()), int(d.sum())
            else:
                c = d = None
            rows.append({"strategy": strategy.label, "spec": strategy.spec(), "measure": measure,
                         "value": _nan_to_none(est.value), "low": _nan_to_none(est.low),
                         "high": _nan_to_none(est.high), "se": _nan_to_none(est.se),
                         "concordant": c, "discordant": d, "seconds": seconds})
        n = result.stats.get("sample") or 0
        coverage = (result.stats.get("with_bag", 0) / n) if n else None
        rows.append({"strategy": strategy.label, "spec": strategy.spec(), "measure": COVERAGE,
                     "value": coverage, "low": None, "high": None, "se": None,
                     "concordant": None, "discordant": None, "seconds": seconds})
    return pa.Table.from_pylist(rows, schema=MEASURES_SCHEMA)


def _nan_to_none(x: float) -> float | None:
    return None if x is None or (isinstance(x, float) and math.isnan(x)) else float(x)


def _differences(figures, by_strategy, groups, n_resamples, seed) -> pa.Table:
    """Per figure: each strategy minus the figure's best one, with a paired bootstrap interval."""
    rows = []
    for figure, strategies in figures.items():
        measure = FIGURE_MEASURE.get(figure, SIBLING_GAMMA)
        present = [by_strategy[s] for s in dict.fromkeys(strategies) if s in by_strategy]
        if len(present) < 2:
            continue
        lower_is_better = measure == ORTHOGONALITY
        key = (lambda r: -_value(r, measure)) if not lower_is_better else (lambda r: _value(r, measure))
        top = sorted(present, key=key)[0]
        for other in present:
            if other is top:
                continue
            diff = bootstrap_difference(other.counts, top.counts, groups, n_resamples=n_resamples, seed=seed)[measure]
            rows.append({"figure": figure, "strategy": figure_label(figure, other.strategy),
                         "baseline": figure_label(figure, top.strategy), "measure": measure,
                         "value": _nan_to_none(diff.value), "low": _nan_to_none(diff.low),
                         "high": _nan_to_none(diff.high)})
    return pa.Table.from_pylist(rows, schema=DIFFERENCES_SCHEMA)


# -- the paper's findings, checked one by one (Section 5) -----------------------------------------

# (claim, figure, better label, worse label, measure, lower is better)
PAPER_CLAIMS = (
    ("Larger anchor windows give a higher sibling-Γ (w32 > w0)", "figure3", "w32", "w0", SIBLING_GAMMA, False),
    ("Anchor windows beat page contents (w32 > contents)", "figure3", "w32", "contents", SIBLING_GAMMA, False),
    ("Anchor windows beat pure links (w32 > links)", "figure3", "w32", "links", SIBLING_GAMMA, False),
    ("Topical windows beat the narrow syntactic ones", "figure3", "topical", "syntactic", SIBLING_GAMMA, False),
    ("Small windows leave more same-class pairs orthogonal (w0 > w32)", "figure4", "w32", "w0",
     ORTHOGONALITY, True),
    ("Pure links leave more same-class pairs orthogonal than anchor windows (links > w32)", "figure4", "w32",
     "links", ORTHOGONALITY, True),
    ("Adding page contents to anchor windows helps", "figure5", "Anchor Window, Content", "Anchor Window",
     SIBLING_GAMMA, False),
    ("Adding link ids to anchor windows and contents lowers Γ", "figure5", "Anchor Window, Content",
     "Anchor Window, Content, Links", SIBLING_GAMMA, False),
    ("Distance weighting helps", "figure6", "Distance", "None", SIBLING_GAMMA, False),
    ("Frequency weighting helps", "figure6", "Frequency", "None", SIBLING_GAMMA, False),
    ("Distance and frequency weighting together beat distance alone", "figure6", "Distance and Frequency",
     "Distance", SIBLING_GAMMA, False),
    ("sqrt is the better monotonic frequency weighting (sqrt > log)", "figure7", "sqrt", "log", SIBLING_GAMMA, False),
    ("NMDF does (slightly) better than sqrt", "figure7", "NMDF", "sqrt", SIBLING_GAMMA, False),
    ("StopStem beats NoStem", "figure9", "StopStem", "NoStem", SIBLING_GAMMA, False),
    ("Stem beats StopStem (slightly)", "figure9", "Stem", "StopStem", SIBLING_GAMMA, False),
)


def paper_findings(figures, by_strategy, groups: np.ndarray, *, n_resamples: int = 1000, seed: int = 0
                   ) -> list[dict]:
    """The paper's Section 5 claims, each judged on this crawl with a paired bootstrap of the
    difference it rests on: "holds" when the interval excludes 0 in the claimed direction,
    "does not hold" when it excludes 0 the other way, "within noise" otherwise."""

    def find(figure: str, label: str) -> StrategyResult | None:
        for s in figures.get(figure, ()):
            if figure_label(figure, s) == label and s in by_strategy:
                return by_strategy[s]
        return None

    findings = []
    for claim, figure, better, worse, measure, lower_is_better in PAPER_CLAIMS:
        a, b = find(figure, better), find(figure, worse)
        if a is None or b is None:
            continue
        diff = bootstrap_difference(a.counts, b.counts, groups, n_resamples=n_resamples, seed=seed)[measure]
        sign = -1.0 if lower_is_better else 1.0
        value, low, high = sign * diff.value, *sorted((sign * diff.low, sign * diff.high))
        if math.isnan(value):
            verdict = "undecided (no comparable pairs)"
        elif value == 0.0:
            verdict = "no difference"
        elif not math.isnan(low) and low > 0:
            verdict = "holds"
        elif not math.isnan(high) and high < 0:
            verdict = "does not hold"
        else:
            verdict = "within noise" + (" (same direction)" if value > 0 else " (other direction)")
        va, vb = a.estimates[measure].value, b.estimates[measure].value
        findings.append({"claim": claim, "figure": figure, "measure": measure, "verdict": verdict,
                         "detail": f"{better} {va:.3f} vs {worse} {vb:.3f}",
                         "advantage": _nan_to_none(value), "low": _nan_to_none(low), "high": _nan_to_none(high)})
    # Section 4: "the Jaccard coefficient and the cosine measure yield comparable results".
    pair = [s for s in figures.get("metric", ()) if s in by_strategy][:2]
    if len(pair) == 2:
        a, b = by_strategy[pair[0]], by_strategy[pair[1]]
        diff = bootstrap_difference(a.counts, b.counts, groups, n_resamples=n_resamples, seed=seed)[SIBLING_GAMMA]
        comparable = not math.isnan(diff.low) and diff.low <= 0 <= diff.high
        findings.append({
            "claim": "Jaccard and cosine give comparable results (Section 4)", "figure": "metric",
            "measure": SIBLING_GAMMA,
            "verdict": "holds" if comparable else f"does not hold ({'Jaccard' if diff.value > 0 else 'cosine'} better)",
            "detail": f"jaccard {a.estimates[SIBLING_GAMMA].value:.3f} vs cosine {b.estimates[SIBLING_GAMMA].value:.3f}",
            "advantage": _nan_to_none(diff.value), "low": _nan_to_none(diff.low), "high": _nan_to_none(diff.high),
        })
    return findings


# -- figures ----------------------------------------------------------------------------------------

AXIS_LABELS = {SIBLING_GAMMA: "Sibling Γ", ORTHOGONALITY: "Fraction of pairs that are orthogonal"}


def _draw_figures(out: str, figures: dict[str, tuple[Strategy, ...]],
                  by_strategy: dict[Strategy, StrategyResult]) -> dict[str, dict]:
    """PNG and SVG of every figure of the grid (and Figure 8 when NMDF was evaluated)."""
    drawn: dict[str, dict] = {}
    for figure, strategies in figures.items():
        present = [by_strategy[s] for s in dict.fromkeys(strategies) if s in by_strategy]
        if not present:
            continue
        measure = FIGURE_MEASURE.get(figure, SIBLING_GAMMA)
        labels = [figure_label(figure, r.strategy) for r in present]
        drawn[figure] = _save(out, figure, _bar_figure(FIGURE_TITLES.get(figure, figure), labels,
                                                       [r.estimates[measure] for r in present], measure,
                                                       from_zero=figure in ("figure3", "figure4", "links")))
    # Figure 8: the NMDF curve fitted for this crawl, preferably that of Figure 7's NMDF strategy.
    nmdf = [r for r in by_strategy.values() if (r.stats.get("weighting") or {}).get("nmdf_mu") is not None]
    nmdf.sort(key=lambda r: r.strategy not in figures.get("figure7", ()))
    if nmdf:
        weighting = nmdf[0].stats["weighting"]
        drawn["figure8"] = _save(out, "figure8", _nmdf_figure(weighting["nmdf_mu"], weighting["nmdf_sigma"],
                                                              nmdf[0].strategy.label))
    return dict(sorted(drawn.items(), key=lambda kv: _figure_order(kv[0])))


def _figure_order(name: str) -> tuple[int, str]:
    digits = "".join(ch for ch in name if ch.isdigit())
    return (int(digits) if digits else 99, name)


def _new_figure(width: float = 6.4, height: float = 3.8):
    from matplotlib.figure import Figure  # the object API: no pyplot state, no GUI backend

    fig = Figure(figsize=(width, height), dpi=110)
    return fig, fig.add_subplot(1, 1, 1)


def _bar_figure(title: str, labels: list[str], estimates: list, measure: str, *, from_zero: bool):
    fig, ax = _new_figure(max(5.0, 0.85 * len(labels) + 2.0))
    values = np.array([e.value for e in estimates], dtype=float)
    low = np.array([e.low for e in estimates], dtype=float)
    high = np.array([e.high for e in estimates], dtype=float)
    x = np.arange(len(labels))
    shown = np.nan_to_num(values)
    err = np.vstack([np.nan_to_num(shown - low), np.nan_to_num(high - shown)])
    err = np.clip(err, 0, None)
    ax.bar(x, shown, color="#4e79a7", yerr=err, capsize=4, ecolor="#333333")
    for xi, v, h in zip(x, values, high):
        at = 0.0 if math.isnan(v) else (h if not math.isnan(h) else v)
        ax.annotate("n/a" if math.isnan(v) else f"{v:.3f}", (xi, max(at, v if not math.isnan(v) else 0.0)),
                    textcoords="offset points", xytext=(0, 4), ha="center", fontsize=8)
    ax.set_xticks(x, labels, rotation=20 if max(map(len, labels)) > 8 else 0, ha="right" if max(map(len, labels)) > 8 else "center",
                  fontsize=8)
    ax.set_ylabel(AXIS_LABELS.get(measure, measure))
    ax.set_title(title, fontsize=10)
    finite = np.concatenate([v[np.isfinite(v)] for v in (values, low, high)])
    if finite.size:
        lo, hi = float(finite.min()), float(finite.max())
        if from_zero or lo <= 0:
            bottom = min(0.0, lo)
        else:
            bottom = max(0.0, lo - 0.25 * max(hi - lo, 0.01))
        top = hi + 0.12 * max(hi - bottom, 0.01)
        ax.set_ylim(bottom, top)
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    return fig


def _nmdf_figure(mu: float, sigma: float, label: str):
    fig, ax = _new_figure()
    top = max(1e4, math.exp(mu + 3 * sigma))
    df = np.logspace(0, math.log10(top), 400)
    ax.plot(df, nmdf_factor(df, mu, sigma), color="#e15759")
    ax.set_xscale("log")
    ax.set_ylim(0, 1.2)
    ax.set_xlabel("Document Frequency")
    ax.set_ylabel("Term Weight")
    ax.set_title(f"{FIGURE_TITLES['figure8']}\nμ = {mu:.2f} (df ≈ {math.exp(mu):.0f}), σ = {sigma:.2f} "
                 f"(natural log), fitted to this crawl for {label}", fontsize=9)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    return fig


def _save(out: str, name: str, fig) -> dict:
    files = {}
    for fmt in ("png", "svg"):
        buffer = io.BytesIO()
        fig.savefig(buffer, format=fmt, metadata={"Date": None} if fmt == "svg" else None)
        write_bytes_atomic(buffer.getvalue(), join(out, "figures", f"{name}.{fmt}"))
        files[fmt] = buffer.getvalue()
    return {"png": f"figures/{name}.png", "svg": f"figures/{name}.svg", "svg_bytes": files["svg"],
            "title": FIGURE_TITLES.get(name, name)}


# -- Figure 2: ranked listings for a few sources ---------------------------------------------------


def _listings(sample: LoadedSample, best: StrategyResult, worst: StrategyResult) -> list[dict]:
    """For each showcase source, the documents at ranks 1, 2, 5, … under the best and the worst
    strategy with their similarity and category (paper Figure 2)."""
    out = []
    codes = sample.codes
    for position, source in enumerate(best.showcase.tolist()):
        entry = {"url": sample.urls[source], "category": "/" + "/".join(sample.classes[source]), "settings": []}
        for result in (best, worst):
            row = result.showcase_rows[position].copy()
            order = [i for i in np.argsort(-row, kind="stable").tolist() if i != source]
            per_source = source_gamma(result.counts)[source]
            ranks = []
            for rank in LISTING_RANKS:
                if rank <= len(order):
                    doc = order[rank - 1]
                    distance = int(codes.shape[1] - (codes[doc] == codes[source]).sum())
                    ranks.append({"rank": rank, "similarity": float(row[doc]), "url": sample.urls[doc],
                                  "category": "/" + "/".join(sample.classes[doc]),
                                  "distance": DISTANCE_NAMES[distance]})
            entry["settings"].append({"strategy": result.strategy.label,
                                      "gamma": _nan_to_none(float(per_source)), "ranks": ranks})
        out.append(entry)
    return out


# -- Markdown and HTML ------------------------------------------------------------------------------


def _fmt(value, digits: int = 3) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    return f"{value:.{digits}f}"


def _interval(est) -> str:
    if math.isnan(est.value):
        return "n/a"
    if math.isnan(est.low):
        return f"{est.value:.3f}"
    return f"{est.value:.3f} [{est.low:.3f}, {est.high:.3f}]"


def _strategy_rows(context) -> tuple[list[str], list[list[str]]]:
    headers = ["strategy", "sibling-Γ [95% CI]", "cousin-Γ", "unrelated-Γ", "Γ", "orthogonality",
               *(f"{m}@{RETRIEVAL_N}" for m in ("P", "R", "F", "AP", "Δ")), "with bag", "seconds"]
    rows = []
    ranked = sorted(context["results"].values(), key=lambda r: _value(r, SIBLING_GAMMA), reverse=True)
    for r in ranked:
        n = r.stats.get("sample") or 0
        rows.append([
            r.strategy.label,
            _interval(r.estimates[SIBLING_GAMMA]),
            _interval(r.estimates["cousin_gamma"]),
            _interval(r.estimates["unrelated_gamma"]),
            _interval(r.estimates["gamma"]),
            _interval(r.estimates[ORTHOGONALITY]),
            *(_fmt(r.estimates[m].value) if m in r.estimates else "n/a" for m in RETRIEVAL_MEASURES),
            f"{r.stats.get('with_bag', 0)}/{n}",
            _fmt(r.stats.get("seconds"), 2),
        ])
    return headers, rows


def _figure_rows(context, figure: str) -> tuple[list[str], list[list[str]]]:
    measure = FIGURE_MEASURE.get(figure, SIBLING_GAMMA)
    rows = []
    for s in dict.fromkeys(context["figures"][figure]):
        r = context["results"].get(s)
        if r is not None:
            rows.append([figure_label(figure, s), _interval(r.estimates[measure]), s.label])
    return ["setting", AXIS_LABELS.get(measure, measure) + " [95% CI]", "strategy"], rows


RETRIEVAL_TITLE = "Top-{} results against the directory classes (lecture measures; Δ of the ENS paper)".format(
    RETRIEVAL_N)


def _retrieval_rows(context) -> tuple[list[str], list[list[str]]]:
    rows = []
    ranked = sorted(context["results"].values(), key=lambda r: _value(r, SIBLING_GAMMA), reverse=True)
    for r in ranked:
        if any(m in r.estimates for m in RETRIEVAL_MEASURES):
            rows.append([r.strategy.label, *(_interval(r.estimates[m]) if m in r.estimates else "n/a"
                                             for m in RETRIEVAL_MEASURES)])
    headers = ["strategy", *(f"{m}@{RETRIEVAL_N} [95% CI]" for m in ("precision", "recall", "F",
                                                                    "average precision", "Δ"))]
    return headers, rows


def _finding_rows(context) -> tuple[list[str], list[list[str]]]:
    rows = []
    for f in context["findings"]:
        ci = "n/a" if f["low"] is None else f"{_fmt(f['advantage'])} [{_fmt(f['low'])}, {_fmt(f['high'])}]"
        rows.append([f["claim"], f["verdict"], f["detail"], ci])
    return ["paper's finding (Section 5)", "on this crawl", "measured", "advantage [95% CI]"], rows


def _listing_rows(entry: dict, setting: dict) -> tuple[list[str], list[list[str]]]:
    rows = [[str(r["rank"]), f"{r['similarity']:.3f}", r["category"], r["distance"], r["url"]] for r in setting["ranks"]]
    return ["rank", "sim", "category", "familial distance", "url"], rows


def _index_rows(context) -> tuple[list[str], list[list[str]]]:
    index = context["index"]
    rows = []
    for measure in GAMMA_MEASURES:
        rows.append([measure.replace("_", "-").replace("gamma", "Γ"), _fmt(index["gamma_exact"].get(measure)),
                     _fmt(index["gamma_estimate"].get(measure))])
    return ["measure", "exact Jaccard", f"min-hash estimate (m = {index['m']})"], rows


def _index_lines(context) -> list[str]:
    index = context["index"]
    return [
        f"Strategy {index['strategy']}, m = {index['m']} ICWS min-hash signatures per bag, α = {index['alpha']}.",
        f"PROCESSQUERY at α: recall {_fmt(index['recall'])} ({index['hits']:,} of {index['relevant_pairs']:,} pairs "
        f"with exact Jaccard ≥ α found), precision {_fmt(index['precision'])} ({index['retrieved_pairs']:,} pairs "
        f"retrieved); mean absolute error of the estimates {_fmt(index['mean_abs_error'], 4)}.",
    ]


def _md_table(headers: list[str], rows: list[list[str]]) -> str:
    esc = lambda text: str(text).replace("|", "\\|")
    lines = ["| " + " | ".join(map(esc, headers)) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(map(esc, row)) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def _html_table(headers: list[str], rows: list[list[str]]) -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in row) + "</tr>" for row in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>\n"


def _method_lines(context) -> list[str]:
    info = context["sample"]
    params = info.get("params", {})
    lines = [
        "Ground truth: the directory collapsed to depth 3; familial distance same / sibling / cousin / "
        "unrelated (Section 2.1). Every sampled document is a source; Γ sums concordant and discordant "
        "pairs over all sources, similarity ties excluded (Section 2.3).",
        f"Sample: seed {params.get('seed')}, {params.get('n_pairs')} pairs of sibling third-level classes "
        f"requested, at least {params.get('min_pages')} linked-to URLs per class"
        + (f", at most {params['max_pages_per_class']} per class" if params.get("max_pages_per_class") else "")
        + ".",
        "Similarity: exact bag Jaccard (or cosine where named) on every pair of the sample; a document "
        "without a bag under a strategy (e.g. a page that was linked to but not crawled, for contents) is "
        "similar to nothing, so its same-class pairs count as orthogonal and its comparisons are ties.",
        f"Intervals: 95% percentile bootstrap over the sampled classes ({context['n_resamples']} resamples, "
        f"seed {context['seed']}); differences use a paired bootstrap (the same resampled classes for both).",
        f"Top-{RETRIEVAL_N} measures: every sampled page is a query, the rest of the sample its candidates; its "
        f"top {RETRIEVAL_N} are the most similar candidates with a positive similarity (ties to the earlier "
        f"sample page). Precision, recall, F and interpolated average precision (lecture notes) count the other "
        f"pages of the query's class as relevant, precision dividing by {RETRIEVAL_N}; Δ (ENS Section 4.2) "
        f"averages the TF-IDF cosine of the query's page contents with each result's, divided by {RETRIEVAL_N} "
        "(a page that was not crawled has no contents: cosine 0).",
    ]
    if any(isinstance(s, LinkStrategy) for s in context["results"]):
        lines.append(
            "Link measures (ENS Sections 3.2–3.4, Table 1 parameters: ECBC α = 0.5; SimRank and extended "
            "SimRank γ = 0.8, 10 iterations; PageSim r = 3, d = 0.5; extended PageSim r = 3, d = 0.6; PageRank "
            "teleport 0.1) on the crawl's link graph without the directory's own pages' links; a sampled page "
            "no kept link touches is similar to nothing. PageRank is a query-independent baseline: every "
            "query ranks the candidates by their PageRank.")
    return lines


def _sample_lines(context) -> list[str]:
    info = context["sample"]
    lines = list(info.get("description_lines", []))
    crawl = info.get("crawl_counts", {})
    d = info.get("directory_counts", {})
    lines.append(
        f"crawl: {crawl.get('pages', 0):,} pages, {crawl.get('links', 0):,} links "
        f"({crawl.get('links_from_directory_pages', 0):,} from the directory's own pages, dropped); "
        f"{crawl.get('linked_urls', 0):,} distinct URLs linked to"
    )
    lines.append(
        f"directory: {d.get('listings', 0):,} listings; {d.get('urls', 0):,} linked-to URLs classified into "
        f"{d.get('classes', 0):,} classes; ignored: {d.get('above_depth', 0):,} above depth 3, "
        f"{d.get('soft_link', 0):,} soft links, {d.get('directory_page', 0):,} directory pages, "
        f"{d.get('conflicting_class', 0):,} URLs in two classes, {d.get('bad_url', 0):,} bad URLs, "
        f"{d.get('not_kept', 0):,} not linked to by the crawl"
    )
    return lines


def _markdown(context) -> str:
    parts = [f"# {context['title']}\n\n", f"Generated {context['generated']}.\n\n", "## Sample\n\n"]
    parts += [f"- {line}\n" for line in _sample_lines(context)]
    parts.append("\n## Method\n\n")
    parts += [f"- {line}\n" for line in _method_lines(context)]
    parts.append("\n## Strategies, best sibling-Γ first\n\n")
    parts.append(_md_table(*_strategy_rows(context)))
    retrieval = _retrieval_rows(context)
    if retrieval[1]:
        parts.append(f"\n## {RETRIEVAL_TITLE}\n\n")
        parts.append(_md_table(*retrieval))
    if context["findings"]:
        parts.append("\n## The paper's findings on this crawl\n\n")
        parts.append(_md_table(*_finding_rows(context)))
    for figure, files in context["figure_files"].items():
        parts.append(f"\n## {files['title']}\n\n![{files['title']}]({files['png']})\n\n")
        if figure in context["figures"]:
            parts.append(_md_table(*_figure_rows(context, figure)))
    if context["index"]:
        parts.append("\n## The min-hash index against exact similarity (Section 6)\n\n")
        parts += [f"- {line}\n" for line in _index_lines(context)]
        parts.append("\n" + _md_table(*_index_rows(context)))
    if context["listings"]:
        parts.append("\n## Ranked listings (as in the paper's Figure 2): best and worst strategy\n")
        for entry in context["listings"]:
            parts.append(f"\nSource {entry['url']} ({entry['category']})\n")
            for setting in entry["settings"]:
                parts.append(f"\n{setting['strategy']}: Γ for this source = {_fmt(setting['gamma'], 2)}\n\n")
                parts.append(_md_table(*_listing_rows(entry, setting)))
    return "".join(parts)


_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;color:#222}
table{border-collapse:collapse;margin:0.8em 0;font-size:0.88em}
th,td{border:1px solid #ccc;padding:0.25em 0.55em;text-align:left;vertical-align:top}
th{background:#f2f2f2} img{max-width:100%;border:1px solid #eee} h2{margin-top:1.6em;border-bottom:1px solid #ddd}
.note{color:#555;font-size:0.9em}
"""


def _html(context, out: str) -> str:
    h = html.escape
    parts = [f"<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>{h(context['title'])}</title>"
             f"<style>{_CSS}</style></head><body>",
             f"<h1>{h(context['title'])}</h1><p class=\"note\">Generated {h(context['generated'])}. "
             "Self-contained: every figure is embedded.</p>",
             "<h2>Sample</h2><ul>" + "".join(f"<li>{h(line)}</li>" for line in _sample_lines(context)) + "</ul>",
             "<h2>Method</h2><ul>" + "".join(f"<li>{h(line)}</li>" for line in _method_lines(context)) + "</ul>",
             "<h2>Strategies, best sibling-Γ first</h2>", _html_table(*_strategy_rows(context))]
    retrieval = _retrieval_rows(context)
    if retrieval[1]:
        parts += [f"<h2>{h(RETRIEVAL_TITLE)}</h2>", _html_table(*retrieval)]
    if context["findings"]:
        parts += ["<h2>The paper's findings on this crawl</h2>", _html_table(*_finding_rows(context))]
    for figure, files in context["figure_files"].items():
        data = base64.b64encode(files["svg_bytes"]).decode("ascii")
        parts.append(f"<h2>{h(files['title'])}</h2><img alt=\"{h(files['title'])}\" src=\"data:image/svg+xml;base64,{data}\">")
        if figure in context["figures"]:
            parts.append(_html_table(*_figure_rows(context, figure)))
    if context["index"]:
        parts.append("<h2>The min-hash index against exact similarity (Section 6)</h2><ul>"
                     + "".join(f"<li>{h(line)}</li>" for line in _index_lines(context)) + "</ul>")
        parts.append(_html_table(*_index_rows(context)))
    if context["listings"]:
        parts.append("<h2>Ranked listings (as in the paper's Figure 2): best and worst strategy</h2>")
        for entry in context["listings"]:
            parts.append(f"<h3>Source {h(entry['url'])} <small>({h(entry['category'])})</small></h3>")
            for setting in entry["settings"]:
                parts.append(f"<p>{h(setting['strategy'])}: Γ for this source = {h(_fmt(setting['gamma'], 2))}</p>")
                parts.append(_html_table(*_listing_rows(entry, setting)))
    parts.append("</body></html>\n")
    return "".join(parts)


# ---------------------------------------------------------------------------------------------
# Grouping strategies into tasks


def strategy_groups(strategies: Sequence[AnyStrategy], group_size: int) -> list[tuple[AnyStrategy, ...]]:
    """Small groups of strategies, one task each. Strategies sharing fragment settings (they
    differ only in weighting or metric) go together so the corpus's merged-bag cache serves them;
    link strategies form groups of their own (they need the link graph, not the bag corpus)."""
    if group_size < 1:
        raise ValueError(f"group_size: expected at least 1 strategy per task, got {group_size}")
    bags = sorted((s for s in strategies if isinstance(s, Strategy)),
                  key=lambda s: json.dumps(s.fragment_params(), sort_keys=True))
    links = [s for s in strategies if isinstance(s, LinkStrategy)]
    return [tuple(part[i:i + group_size]) for part in (bags, links) for i in range(0, len(part), group_size)]


def run_evaluation(
    crawl: str,
    directory: str,
    out: str,
    *,
    grid: str = "paper",
    work: str | None = None,
    sample_params: SampleParams = SampleParams(),
    directory_pages: str | None = None,
    n_resamples: int = 1000,
    title: str = "",
) -> dict:
    """The whole evaluation in this process, without Prefect (tests, benchmarks, scripts)."""
    work = work or join(out, "_work")
    figures = strategy_grid(grid)
    sample = prepare_sample(crawl, directory, work, sample_params, directory_pages)
    strategies = grid_strategies(figures)
    outputs = evaluate_strategies(crawl, sample, strategies, work)
    return write_report(out, sample, figures, dict(zip(strategies, outputs)), seed=sample_params.seed,
                        n_resamples=n_resamples, title=title)


# ---------------------------------------------------------------------------------------------
# Prefect tasks: one per stage, or per small group of strategies (never per pair or per URL)


@task(name="eval-sample", cache_policy=NO_CACHE, persist_result=False, retries=2, retry_delay_seconds=2)
def sample_task(crawl: str, directory: str, work: str, params: SampleParams,
                directory_pages: str | None = None) -> StageOutput:
    """Parse the directory once and draw the sample (retried: it only reads files)."""
    return prepare_sample(crawl, directory, work, params, directory_pages)


@task(name="eval-strategies", cache_policy=NO_CACHE, persist_result=False)
def strategies_task(crawl: str, sample: StageOutput, strategies: list[dict], work: str) -> list[StageOutput]:
    """Bags, exact similarity and Γ counts for a small group of strategies (no retries: the
    computation is deterministic; an I/O failure is retried by re-running the flow, which
    reuses every finished strategy)."""
    return evaluate_strategies(crawl, sample, [strategy_from_dict(s) for s in strategies], work)


@task(name="eval-report", cache_policy=NO_CACHE, persist_result=False)
def report_task(out: str, sample: StageOutput, grid: str, outputs: list[list[StageOutput]],
                groups: list[list[dict]], seed: int, n_resamples: int, title: str = "") -> dict:
    """Tables, figures and the report from every group's outputs."""
    results = {}
    for group, group_outputs in zip(groups, outputs):
        for spec, output in zip(group, group_outputs):
            results[strategy_from_dict(spec)] = output
    return write_report(out, sample, strategy_grid(grid), results, seed=seed, n_resamples=n_resamples, title=title)
