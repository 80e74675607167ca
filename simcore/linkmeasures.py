"""One entry point to every link measure: the similarity of query pages to candidate pages
under the measure that a parameters object configures, and the top related pages it gives
(ENS Section 4.2, top_{A,N}(v))."""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from simweb.core.linkgraph import (
    Progress,
    CocitationParams,
    CouplingParams,
    EcbcParams,
    ExtendedPageSimParams,
    ExtendedSimRankParams,
    LinkGraph,
    PARAMS_BY_MEASURE,
    MeasureParams,
    PageSimParams,
    SimRankParams,
    cocitation,
    coupling,
    ecbc,
)
from simweb.core.pagesim import extended_pagesim, pagesim
from simweb.core.simrank import extended_simrank, simrank


def link_similarity(graph: LinkGraph, params: MeasureParams, queries=None, candidates=None,
                    progress: Progress | None = None) -> np.ndarray:
    """Similarity of each query node (rows) to each candidate node (columns) under the
    measure that ``params`` configures; ``None`` means every node. ``progress(done, total)``
    follows the iterative measures (SimRank, PageSim and their extensions) step by step."""
    if isinstance(params, CocitationParams):
        return cocitation(graph, queries, candidates)
    if isinstance(params, CouplingParams):
        return coupling(graph, queries, candidates)
    if isinstance(params, EcbcParams):
        return ecbc(graph, queries, candidates, params)
    if isinstance(params, SimRankParams):
        return simrank(graph, queries, candidates, params, progress=progress)
    if isinstance(params, ExtendedSimRankParams):
        return extended_simrank(graph, queries, candidates, params, progress=progress)
    if isinstance(params, PageSimParams):
        return pagesim(graph, queries, candidates, params, progress=progress)
    if isinstance(params, ExtendedPageSimParams):
        return extended_pagesim(graph, queries, candidates, params, progress=progress)
    raise ValueError(f"expected parameters of a link measure among {sorted(PARAMS_BY_MEASURE)}, got {type(params).__name__}")


def top_related(
    scores: np.ndarray, queries: np.ndarray, candidates: np.ndarray, n: int
) -> list[list[tuple[int, float]]]:
    """For each query row, the ``n`` best (candidate node, score) pairs with a positive score,
    best first, the query itself excluded (ENS Section 4.2, top_{A,N}(v)); ties go to the
    lower node index."""
    scores = np.asarray(scores)
    queries, candidates = np.asarray(queries), np.asarray(candidates)
    if scores.shape != (queries.size, candidates.size):
        raise ValueError(
            f"expected scores of shape ({queries.size}, {candidates.size}) for the given queries and "
            f"candidates, got {scores.shape}"
        )
    if n < 0:
        raise ValueError(f"expected n >= 0, got {n}")
    order_tiebreak = np.argsort(candidates, kind="stable")
    result = []
    for row, query in zip(scores, queries):
        ranked = order_tiebreak[np.argsort(-row[order_tiebreak], kind="stable")]
        picked = []
        for j in ranked:
            if len(picked) == n or row[j] <= 0:
                break
            if candidates[j] != query:
                picked.append((int(candidates[j]), float(row[j])))
        result.append(picked)
    return result


def related_pages(
    graph: LinkGraph,
    url_ids: Sequence[int] | np.ndarray,
    params: MeasureParams,
    n: int = 10,
    candidate_ids: Sequence[int] | np.ndarray | None = None,
) -> list[list[tuple[int, float]]]:
    """For each page of ``url_ids``, its ``n`` most similar pages under ``params`` as
    (URL id, score), best first, itself and zero scores excluded; candidates are every page
    unless ``candidate_ids`` is given. Raises if a URL id is not in the graph."""
    queries = graph.indices(url_ids)
    candidates = None if candidate_ids is None else graph.indices(candidate_ids)
    scores = link_similarity(graph, params, queries, candidates)
    columns = np.arange(graph.n_nodes) if candidates is None else candidates
    return [
        [(int(graph.ids[node]), score) for node, score in row]
        for row in top_related(scores, queries, columns, n)
    ]
