"""Stage ``eval-strategy`` of the evaluation: each strategy's Γ pair counts on the sample (paper Sections 2–5).

For a small group of strategies (one Prefect task), what they read from the crawl is built once
(:class:`EvaluationInputs`, by simweb.tasks.crawl, without the directory's own pages): the link
graph for link strategies (ENS Sections 3–4) and the TF-IDF vectors of the sample's contents for
Δ. Then per strategy, cached under ``work`` by simweb.tasks.stagecache (same crawl, sample and
strategy → reused):

* the weighted bags of the sample — from the bags stage's fragments and merge sub-stages over
  the crawl without the directory's pages (simweb.tasks.bags.sample.sample_bags, cached under ``work``
  too and shared by strategies that differ only in weighting), df and NMDF over the whole
  collection — and their exact similarity (Section 4), a block of sources at a time
  (simweb.core.similarity.ExactRows); or the link measure between every two sampled pages of
  the graph;
* the per-source concordant/discordant counts behind every Γ and the intra-cluster
  orthogonality (simweb.core.gamma), and each query's precision, recall, F, average precision
  and Δ at 10 (simweb.core.retrieval_metrics).

Writes ``counts.npz`` per strategy; the stage's stats hold the point values and timings. (The
index's agreement with exact similarity is stage ``eval-index``, tasks/stages/eval_index.py.)

Memory is bounded by the sample, never by the crawl or by n × n: a process holds the sample's
bags, one block of similarity rows (``BLOCK_CELLS``) and a part of the crawl at a time. For a
50,000-URL sample, the n × n similarity alone would take 20 GB.
"""
from __future__ import annotations

import dataclasses
import hashlib
import io
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from simweb.core.bag_matrix import BagMatrix
from simweb.core.gamma import (
    ORTHOGONALITY,
    PairCounts,
    SiblingCounts,
    gammas,
    orthogonality,
    pair_counts_rows,
    sibling_counts_rows,
)
from simweb.core.grids import AnyStrategy, LinkStrategy
from simweb.core.linkgraph import ExtendedSimRankParams, SimRankParams, pagerank
from simweb.core.linkmeasures import link_similarity
from simweb.core.retrieval_metrics import (
    RETRIEVAL_KEYS,
    RETRIEVAL_MEASURES,
    RETRIEVAL_N,
    retrieval_rows,
    stack_retrieval,
)
from simweb.core.similarity import EmbeddedSimilarity, ExactRows
from simweb.core.simrank import simrank_plan
from simweb.core.strategy import Strategy
from simweb.tasks.bag_shares import shared_sample_bags
from simweb.tasks.bags.sample import sample_bags
from simweb.tasks.stages.fragments import LeftOut
from simweb.tasks.crawl.graph import CrawlGraph, load_link_graph
from simweb.tasks.crawl.parts import crawl_files_identity
from simweb.tasks.crawl.tfidf import content_tfidf
from simweb.tasks.logs import run_logger
from simweb.tasks.progress import reporter, track
from simweb.tasks.stagecache import StageOutput, run_stage
from simweb.tasks.stages.eval_sample import LoadedSample, load_sample
from simweb.tasks.storage import filesystem, join, write_bytes_atomic

__all__ = ["STAGE_STRATEGY", "EvaluationInputs", "StrategyCounts", "evaluate_group", "load_strategy_output",
           "save_arrays"]

STAGE_STRATEGY = "eval-strategy"
# Bumped when counts.npz changes, so older outputs are not reused (2: the sibling pairs by class).
COUNTS_FORMAT = 2
LOGGER = "simweb.evaluate"
#: Similarity cells per block of source rows (× 8 bytes, and about 40 bytes of the Γ count's
#: temporaries): 4 million keep a block near 200 MB whatever the sample's size.
BLOCK_CELLS = 1 << 22


class EvaluationInputs:
    """What a group of strategies reads from the crawl, each built on first use and kept: the
    sample's bags of each bag strategy, the link graph and the TF-IDF vectors of the sample's
    page contents, all without the pages ``exclude`` names and their links (the directory's
    own, Section 5). ``work`` holds the bags stage's sub-stages the bags come from, and
    ``identity`` names the pages left out in their cache keys."""

    def __init__(self, crawl: str, url_ids: np.ndarray, exclude: Callable[[str], bool], work: str | None = None,
                 identity: dict | None = None) -> None:
        self.crawl = crawl
        self._url_ids = url_ids
        self._exclude = exclude
        self._work = work
        self._left_out = LeftOut(exclude, identity if identity is not None else {"unnamed": repr(exclude)})
        self._graph: tuple[CrawlGraph, dict] | None = None
        self._vectors: tuple[sp.csr_matrix, np.ndarray] | None = None

    @classmethod
    def of_sample(cls, crawl: str, loaded: LoadedSample, work: str) -> EvaluationInputs:
        """The inputs of the sample ``loaded``, the directory's own pages left out (Section 5)."""
        directory = loaded.directory_pages()
        identity = {"directory_pages": hashlib.sha256("\n".join(sorted(directory.directory_pages)).encode()).hexdigest(),
                    "directory_hosts": sorted(directory.directory_hosts)}
        return cls(crawl, loaded.url_ids, directory.is_directory_page, work, identity)

    def bags(self, strategy: Strategy) -> BagMatrix:
        """The sample's weighted bags under ``strategy`` in double precision (simweb.tasks.bags.sample.sample_bags)."""
        if self._work is None:
            raise ValueError("EvaluationInputs: the sample's bags need a work folder for the bags stage's sub-stages")
        t0 = time.perf_counter()
        # A strategy with source shares: each source's sample bags, added in their shares (tasks/bag_shares.py).
        build = sample_bags if strategy.shares is None else shared_sample_bags
        bags = build(self.crawl, strategy, self._work, self._url_ids, scheduler="sync", left_out=self._left_out)
        run_logger(LOGGER).info("evaluate: %d bags of the sample under %s in %.1f s", len(bags), strategy.label,
                                time.perf_counter() - t0)
        return bags

    def graph(self) -> tuple[CrawlGraph, dict]:
        """The link graph, and its counts with the seconds it took."""
        if self._graph is None:
            t0 = time.perf_counter()
            loaded = load_link_graph(self.crawl, self._exclude)
            counts = {**loaded.counts, "seconds_graph": round(time.perf_counter() - t0, 4)}
            self._graph = (loaded, counts)
            run_logger(LOGGER).info("evaluate: link graph of %s (%d pages, %d links) built in %.1f s", self.crawl,
                                    loaded.graph.n_nodes, loaded.graph.n_edges, counts["seconds_graph"])
        return self._graph

    def vectors(self) -> tuple[sp.csr_matrix, np.ndarray]:
        """TF-IDF rows of the crawl's contents and the row of each sampled URL (simweb.tasks.crawl.tfidf.content_tfidf)."""
        if self._vectors is None:
            self._vectors = content_tfidf(self.crawl, self._url_ids, self._exclude)
        return self._vectors


def evaluate_group(crawl: str, sample: StageOutput, strategies: Sequence[AnyStrategy], work: str) -> list[StageOutput]:
    """Stage ``eval-strategy`` for a group of strategies (see the module docstring): each
    strategy's counts computed, or reused from an earlier run with the same crawl, sample and
    strategy."""
    deduplicated = [s.label for s in strategies if isinstance(s, Strategy) and s.dedup]
    if deduplicated:
        raise ValueError(
            f"{', '.join(deduplicated)}: dedup is an option of the index build (it removes pages before "
            "indexing), while the evaluation judges the bags of every sampled page; evaluate the strategy "
            "without 'dedup'"
        )
    loaded = load_sample(sample.path)
    crawl_identity = crawl_files_identity(crawl)
    inputs = EvaluationInputs.of_sample(crawl, loaded, work)
    log = run_logger(LOGGER)
    outputs = []
    for strategy in track(strategies, "evaluate", "strategies", log=log):
        def compute(tmp: str, strategy: AnyStrategy = strategy) -> dict:
            if isinstance(strategy, LinkStrategy):
                return _evaluate_link(inputs.graph(), inputs.vectors(), loaded, strategy, tmp)
            return _evaluate_bags(inputs, loaded, strategy, tmp)

        outputs.append(run_stage(work, STAGE_STRATEGY, {"crawl": crawl_identity, "sample": sample},
                                 {"strategy": strategy.to_dict(), "retrieval_n": RETRIEVAL_N, "format": COUNTS_FORMAT},
                                 compute, log=log, label=strategy.label))
    return outputs


def _evaluate_bags(inputs: EvaluationInputs, sample: LoadedSample, strategy: Strategy, out: str) -> dict:
    """A bag strategy on the sample: its weighted bags, their exact similarity (Section 4)."""
    n = len(sample.urls)
    vectors = inputs.vectors()
    t0 = time.perf_counter()
    bags = inputs.bags(strategy)
    present = np.flatnonzero(np.isin(sample.url_ids, bags.url_ids))
    t1 = time.perf_counter()
    inner = ExactRows(bags, strategy.metric, ids=sample.url_ids[present].tolist())
    similarity = EmbeddedSimilarity(n, present, inner)
    weighting = bags.weighting.to_dict() if bags.weighting is not None else {}
    stats = _count_and_save(similarity, vectors, sample, strategy, present, out)
    stats.update(weighting=weighting, seconds_bags=round(t1 - t0, 4), seconds_similarity=stats.pop("seconds_rows"))
    stats["seconds"] = round(stats["seconds_bags"] + stats["seconds_similarity"] + stats["seconds_gamma"], 4)
    return stats


def _evaluate_link(graph_and_counts: tuple[CrawlGraph, dict], vectors, sample: LoadedSample,
                   strategy: LinkStrategy, out: str) -> dict:
    """A link measure on the sample: each sampled page that is a node of the link graph against
    every other (pages outside the graph are similar to nothing, as pages without a bag are).
    The measures run on the whole graph with the sample as queries and candidates, which bounds
    SimRank-type memory by the sample (``simweb.core.linkgraph``: exact iteration when the graph fits
    the measure's ``max_bytes``, its linear form or block bounds beyond)."""
    loaded, graph_counts = graph_and_counts
    graph = loaded.graph
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
        with reporter(strategy.label, "steps", run_logger(LOGGER)) as report:
            inner = link_similarity(graph, params, nodes, nodes, progress=report) if nodes.size else np.zeros((0, 0))
    t1 = time.perf_counter()
    similarity = EmbeddedSimilarity(n, present, np.asarray(inner))
    stats = _count_and_save(similarity, vectors, sample, strategy, present, out)
    stats.pop("seconds_rows")
    stats.update(weighting={}, params=_params_dict(params), graph=graph_counts, simrank_plan=plan,
                 seconds_similarity=round(t1 - t0, 4))
    stats["seconds"] = round(stats["seconds_similarity"] + stats["seconds_gamma"], 4)
    return stats


def _params_dict(params) -> dict:
    return {f.name: (_params_dict(getattr(params, f.name)) if dataclasses.is_dataclass(getattr(params, f.name))
                     else getattr(params, f.name)) for f in dataclasses.fields(params)}


def save_arrays(url: str, **arrays: np.ndarray) -> None:
    """``arrays`` as one compressed ``.npz`` file at ``url``, written atomically."""
    buffer = io.BytesIO()
    np.savez_compressed(buffer, **arrays)
    write_bytes_atomic(buffer.getvalue(), url)


def _count_and_save(similarity: EmbeddedSimilarity, vectors, sample: LoadedSample, strategy: AnyStrategy,
                    present: np.ndarray, out: str) -> dict:
    """Γ pair counts, the retrieval measures and the showcase rows of one strategy, saved as
    ``counts.npz``; returns the stage's stats (point values and timings, the similarity's own
    seconds within them when it is computed block by block).

    One pass over blocks of source rows: each block of similarities is computed once (for
    ExactRows: here) and serves the block's Γ counts, retrieval measures and showcase rows."""
    n = len(sample.urls)
    showcase = np.asarray(sample.info.get("showcase", []), dtype=np.int64)
    showcase_rows = np.zeros((showcase.size, n))
    counted, measured, by_class = [], [], []
    seconds = {"similarity": 0.0, "gamma": 0.0, "retrieval": 0.0}
    step = max(1, BLOCK_CELLS // max(n, 1))
    for start in range(0, n, step):
        rows = np.arange(start, min(n, start + step))
        t0 = time.perf_counter()
        dense = similarity.take(rows)
        t1 = time.perf_counter()
        counted.append(pair_counts_rows(dense, sample.codes, rows))
        by_class.append(sibling_counts_rows(dense, sample.codes, rows))
        t2 = time.perf_counter()
        measured.append(retrieval_rows(dense, rows, sample.codes, *vectors))
        t3 = time.perf_counter()
        mine = (showcase >= start) & (showcase < rows[-1] + 1)
        showcase_rows[mine] = dense[showcase[mine] - start]
        seconds["similarity"] += t1 - t0
        seconds["gamma"] += t2 - t1
        seconds["retrieval"] += t3 - t2
    counts = PairCounts.stack(counted, sample.codes.shape[1])
    retrieval = stack_retrieval(measured, sample.codes)
    sibling = SiblingCounts.stack(by_class)
    save_arrays(join(out, "counts.npz"), types=np.asarray(counts.types), concordant=counts.concordant,
                 discordant=counts.discordant, orthogonal=counts.orthogonal, same_class=counts.same_class,
                 showcase=showcase, showcase_rows=showcase_rows,
                 sibling_sources=sibling.sources, sibling_classes=sibling.classes,
                 sibling_concordant=sibling.concordant, sibling_discordant=sibling.discordant,
                 **{f"retrieval_{k}": v for k, v in retrieval.items()})
    values = {**gammas(counts), ORTHOGONALITY: orthogonality(counts)}
    for name, key in zip(RETRIEVAL_MEASURES, RETRIEVAL_KEYS):
        v = retrieval[key]
        values[name] = float(v.mean()) if v.size else math.nan
    return {
        "strategy": strategy.to_dict(),
        "label": strategy.label,
        "spec": strategy.spec(),
        "with_bag": int(present.size),
        "sample": n,
        "seconds_gamma": round(seconds["gamma"], 4),
        "seconds_retrieval": round(seconds["retrieval"], 4),
        "seconds_rows": round(seconds["similarity"], 4),
        "values": {k: (None if math.isnan(v) else v) for k, v in values.items()},
    }


@dataclass(frozen=True, slots=True, eq=False)
class StrategyCounts:
    """What the stage saved for one strategy: its pair counts, its sibling-Γ pairs by sibling
    class, the similarity rows of the showcase sources, and the per-query retrieval values
    (simweb.core.retrieval_metrics.retrieval_values)."""

    counts: PairCounts
    showcase: np.ndarray
    showcase_rows: np.ndarray
    retrieval: dict[str, np.ndarray]
    sibling: SiblingCounts


def load_strategy_output(output_path: str) -> StrategyCounts:
    """The ``counts.npz`` of one strategy's stage output."""
    fs, path = filesystem(join(output_path, "counts.npz"))
    with fs.open(path, "rb") as f:
        data = np.load(io.BytesIO(f.read()))
        types = tuple(tuple(int(x) for x in t) for t in data["types"])
        n = data["concordant"].shape[0]
        counts = PairCounts(np.arange(n), types, data["concordant"], data["discordant"],
                            data["orthogonal"], data["same_class"])
        retrieval = {k[len("retrieval_"):]: data[k] for k in data.files if k.startswith("retrieval_")}
        sibling = SiblingCounts(*(data[f"sibling_{k}"] for k in ("sources", "classes", "concordant", "discordant")))
        return StrategyCounts(counts, data["showcase"], data["showcase_rows"], retrieval, sibling)
