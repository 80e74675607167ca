"""Retrieval measures for related-pages results, beside Γ in the evaluation report.

- Precision, recall, F and average precision against the directory classes: the law is the
  lecture notes ``papers/lecture-similarity-queries-and-evaluation.txt`` ("Precision and
  Recall", "Alternative measures"). For a query page, the relevant set R is the other pages of
  its directory class; the retrieved set Q is its top N results.
- Δ(A, N) of the ENS paper (``papers/lin2007-extended-neighborhood-structure.md``, Section
  4.2): the average over query pages of score_{A,N}(v) = (1/N) Σ_{u ∈ top_{A,N}(v)} TFIDF(u, v),
  the cosine of TF-IDF vectors.

Rankings come from a similarity matrix (query rows x candidate columns): a candidate is
retrieved when it is among the N most similar and its similarity is positive (a similarity
of 0 is no evidence); the query page itself is never retrieved; equal similarities are
ordered by column, so results are deterministic.
"""
from __future__ import annotations

from collections.abc import Collection, Hashable, Sequence
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from simweb.core import fpmath
from simweb.core.gamma import Estimate, bootstrap_ratios

RECALL_LEVELS = tuple(i / 10 for i in range(11))  # 0%, 10%, ..., 100%


@dataclass(frozen=True, slots=True)
class PrecisionRecall:
    precision: float
    recall: float
    f: float


def f_measure(precision: float, recall: float) -> float:
    """Harmonic mean of precision and recall, F = 2pr / (p + r); 0 when both are 0."""
    return 0.0 if precision + recall == 0 else 2 * precision * recall / (precision + recall)


def precision_recall_f(retrieved: Collection[Hashable], relevant: Collection[Hashable]) -> PrecisionRecall:
    """Precision = |Q ∩ R| / |Q|, recall = |Q ∩ R| / |R| and their F (lecture).

    Nothing retrieved has precision 0 (the lecture's Q2 example scores 0); an empty R has no
    recall to measure and raises.
    """
    q, r = set(retrieved), set(relevant)
    if not r:
        raise ValueError("expected at least one relevant document: recall is undefined for an empty relevant set")
    hits = len(q & r)
    precision = hits / len(q) if q else 0.0
    recall = hits / len(r)
    return PrecisionRecall(precision, recall, f_measure(precision, recall))


def average_precision(ranked: Sequence[Hashable], relevant: Collection[Hashable], n: int | None = None) -> float:
    """Interpolated average precision over the first ``n`` results (lecture, "Average
    precision: ... average of precision at recall = 0%, 10%, ..., 100%", taking the max
    precision at that recall or beyond; precision at recall 0% is thereby extrapolated).
    Recall levels the list never reaches count as precision 0."""
    r = set(relevant)
    if not r:
        raise ValueError("expected at least one relevant document: average precision needs recall levels")
    if n is not None and n < 0:
        raise ValueError(f"expected n >= 0, got {n}")
    ranked = list(ranked if n is None else ranked[:n])
    precisions, recalls, hits = [], [], 0
    for k, doc in enumerate(ranked, start=1):
        if doc in r:
            hits += 1
            precisions.append(hits / k)
            recalls.append(hits / len(r))
    if not precisions:
        return 0.0
    precisions_arr, recalls_arr = np.array(precisions), np.array(recalls)
    total = 0.0
    for level in RECALL_LEVELS:
        reached = recalls_arr >= level - 1e-12
        total += precisions_arr[reached].max() if reached.any() else 0.0
    return total / len(RECALL_LEVELS)


def top_n(similarity: np.ndarray, n: int, self_columns: Sequence[int] | np.ndarray | None = None) -> np.ndarray:
    """Column indices of the ``n`` most similar candidates of each row with a positive
    similarity, best first, padded with -1; ``self_columns[i]`` is row i's own column (or -1)
    and is never returned. Ties go to the lower column."""
    sims = np.asarray(similarity, dtype=np.float64)
    if sims.ndim != 2:
        raise ValueError(f"expected a 2-D similarity matrix (queries x candidates), got shape {sims.shape}")
    if n < 0:
        raise ValueError(f"expected n >= 0, got {n}")
    rows = sims.shape[0]
    own = np.full(rows, -1, dtype=np.int64) if self_columns is None else np.asarray(self_columns, dtype=np.int64)
    if own.shape != (rows,):
        raise ValueError(f"expected one self column per row ({rows}), got shape {own.shape}")
    out = np.full((rows, n), -1, dtype=np.int64)
    for i in range(rows):
        row = sims[i].copy()
        if own[i] >= 0:
            row[own[i]] = -np.inf
        order = np.argsort(-row, kind="stable")[:n]
        keep = order[row[order] > 0]
        out[i, : keep.size] = keep
    return out


@dataclass(frozen=True, slots=True, eq=False)
class RetrievalScores:
    """Mean precision, recall, F and average precision at N over the scored queries, with the
    per-query values (for intervals) and how many queries had no relevant page and were skipped."""

    n: int
    precision: float
    recall: float
    f: float
    average_precision: float
    per_query: dict[str, np.ndarray]
    queries: int
    skipped: int


def class_retrieval_scores(
    similarity: np.ndarray,
    query_classes: Sequence[Hashable],
    candidate_classes: Sequence[Hashable],
    n: int,
    self_columns: Sequence[int] | np.ndarray | None = None,
) -> RetrievalScores:
    """Precision/recall/F and average precision at ``n`` of every query row against the
    directory classes: relevant = the candidates of the query's class other than itself.
    Queries whose class has no other candidate are skipped and counted."""
    sims = np.asarray(similarity)
    if sims.shape != (len(query_classes), len(candidate_classes)):
        raise ValueError(
            f"expected a similarity matrix of shape ({len(query_classes)}, {len(candidate_classes)}) "
            f"for the given classes, got {sims.shape}"
        )
    own = np.full(len(query_classes), -1) if self_columns is None else np.asarray(self_columns)
    ranked = top_n(sims, n, own)
    by_class: dict[Hashable, list[int]] = {}
    for col, cls in enumerate(candidate_classes):
        by_class.setdefault(cls, []).append(col)
    values = {"precision": [], "recall": [], "f": [], "average_precision": []}
    skipped = 0
    for i, cls in enumerate(query_classes):
        relevant = set(by_class.get(cls, ())) - {int(own[i])}
        if not relevant:
            skipped += 1
            continue
        got = [int(c) for c in ranked[i] if c >= 0]
        # Precision at N divides by N: an engine that returns fewer results is not rewarded.
        hits = len(relevant.intersection(got))
        precision = hits / n if n else 0.0
        recall = hits / len(relevant)
        values["precision"].append(precision)
        values["recall"].append(recall)
        values["f"].append(f_measure(precision, recall))
        values["average_precision"].append(average_precision(got, relevant))
    per_query = {k: np.array(v, dtype=np.float64) for k, v in values.items()}
    means = {k: float(v.mean()) if v.size else float("nan") for k, v in per_query.items()}
    return RetrievalScores(
        n, means["precision"], means["recall"], means["f"], means["average_precision"], per_query,
        len(values["precision"]), skipped,
    )


def tfidf_vectors(documents: Sequence[Sequence[str]]) -> sp.csr_matrix:
    """L2-normalised TF-IDF rows, W_tv = tf_tv · log(D / df_t) (ENS Section 4.2, after
    Joachims), one row per document; a document whose terms all occur everywhere has a zero
    row (cosine 0 with everything)."""
    vocabulary: dict[str, int] = {}
    codes = np.fromiter((vocabulary.setdefault(t, len(vocabulary)) for doc in documents for t in doc), dtype=np.int64)
    offsets = np.concatenate(([0], np.cumsum([len(doc) for doc in documents]))).astype(np.int64)
    rows = np.repeat(np.arange(len(documents)), np.diff(offsets))
    df = np.bincount(np.unique(rows * max(1, len(vocabulary)) + codes) % max(1, len(vocabulary)),
                     minlength=len(vocabulary)) if codes.size else np.zeros(len(vocabulary), np.int64)
    return tfidf_rows(codes, offsets, df, len(documents))


def tfidf_rows(codes: np.ndarray, offsets: np.ndarray, df: np.ndarray, documents: int) -> sp.csr_matrix:
    """The TF-IDF rows of :func:`tfidf_vectors` for some documents of a larger collection: row i
    holds the terms ``codes[offsets[i]:offsets[i+1]]`` (one per occurrence), weighted by their
    ``df`` (per code) among the collection's ``documents``. The evaluation needs the rows of its
    sample only, with df counted over the whole crawl part by part."""
    codes = np.asarray(codes, dtype=np.int64)
    offsets = np.asarray(offsets, dtype=np.int64)
    rows = np.repeat(np.arange(offsets.size - 1), np.diff(offsets))
    n_terms = max(1, int(np.asarray(df).size))
    pairs, tf = np.unique(rows * n_terms + codes, return_counts=True)
    matrix = sp.csr_matrix((tf.astype(np.float64), (pairs // n_terms, pairs % n_terms)),
                           shape=(offsets.size - 1, np.asarray(df).size))
    idf = fpmath.log(documents / np.maximum(np.asarray(df, dtype=np.float64), 1.0)) if documents else np.zeros(0)
    matrix.data *= idf[matrix.indices]
    norms = np.sqrt(np.asarray(matrix.multiply(matrix).sum(axis=1)).ravel())
    scale = np.divide(1.0, norms, out=np.zeros_like(norms), where=norms > 0)
    matrix = sp.csr_matrix(sp.diags(scale) @ matrix)
    matrix.eliminate_zeros()
    return matrix


@dataclass(frozen=True, slots=True, eq=False)
class Delta:
    """Δ(A, N) and each query's score_{A,N}(v)."""

    n: int
    value: float
    per_query: np.ndarray


def delta(top: np.ndarray, query_rows: Sequence[int] | np.ndarray, candidate_rows: Sequence[int] | np.ndarray,
          vectors: sp.csr_matrix, n: int) -> Delta:
    """Δ(A, N) = mean over queries v of (1/N) Σ_{u ∈ top_{A,N}(v)} TFIDF(u, v) (ENS Section 4.2).

    ``top`` is ``top_n``'s output (candidate columns, -1 = no result); ``query_rows[i]`` and
    ``candidate_rows[j]`` are the rows of ``vectors`` (from ``tfidf_vectors``) of query i and
    candidate j. Missing results add 0 and the sum is still divided by N, as the formula says.
    """
    top = np.asarray(top, dtype=np.int64)
    qrows, crows = np.asarray(query_rows, dtype=np.int64), np.asarray(candidate_rows, dtype=np.int64)
    if n <= 0:
        raise ValueError(f"expected N >= 1, got {n}")
    if top.ndim != 2 or top.shape[0] != qrows.size or top.shape[1] > n:
        raise ValueError(f"expected top results of shape ({qrows.size}, ≤{n}), got {top.shape}")
    scores = np.zeros(qrows.size)
    for i in range(qrows.size):
        cols = top[i][top[i] >= 0]
        if cols.size:
            sims = vectors[crows[cols]] @ vectors[qrows[i]].T
            scores[i] = sims.sum() / n
    return Delta(n, float(scores.mean()) if scores.size else float("nan"), scores)


# ---------------------------------------------------------------------------------------------
# Over an evaluation sample: every sampled page a query, the rest of the sample its candidates

# Measured on each query's top N: ENS Section 4.2 uses N = 10, the lecture's measures the same N.
RETRIEVAL_N = 10
#: The per-query values :func:`retrieval_values` gives, in the order of :data:`RETRIEVAL_MEASURES`.
RETRIEVAL_KEYS = ("precision", "recall", "f", "average_precision", "delta")
#: Their names in result tables.
RETRIEVAL_MEASURES = tuple(f"{key}_at_{RETRIEVAL_N}" for key in RETRIEVAL_KEYS)


def retrieval_values(similarity, codes: np.ndarray, vectors: sp.csr_matrix, rows: np.ndarray, n: int = RETRIEVAL_N,
                     *, block: int = 512) -> dict[str, np.ndarray]:
    """Per-query precision, recall, F and average precision at ``n`` against the directory
    classes (relevant = the other sample pages of the query's class) and score_{A,N} of Δ(A, N),
    every sample page a query (lecture notes; ENS Section 4.2).

    ``similarity`` is the sample's n × n similarity (an array, or any object whose row slices
    are arrays); ``codes`` the classes (simweb.core.gamma.class_codes); ``vectors`` and ``rows``
    the TF-IDF rows of the sample's pages. Returns the per-query arrays and ``scored``, the
    queries whose class has another sample page (the class measures skip the others; the
    sample's classes always have two or more pages, so normally none is skipped)."""
    total = codes.shape[0]
    blocks = []
    for start in range(0, total, block):
        idx = np.arange(start, min(total, start + block))
        blocks.append(retrieval_rows(np.asarray(similarity[start:start + idx.size]), idx, codes, vectors, rows, n))
    return stack_retrieval(blocks, codes)


def retrieval_rows(dense: np.ndarray, idx: np.ndarray, codes: np.ndarray, vectors: sp.csr_matrix, rows: np.ndarray,
                   n: int = RETRIEVAL_N) -> dict[str, np.ndarray]:
    """:func:`retrieval_values` of the queries ``idx`` alone, from their similarity rows ``dense``
    (len(idx) × the sample): a caller holding one block of rows of the similarity at a time
    measures block by block and joins the blocks in order with :func:`stack_retrieval`."""
    classes = codes[:, -1].tolist()
    got = class_retrieval_scores(dense, [classes[i] for i in idx.tolist()], classes, n, self_columns=idx)
    values = {k: got.per_query[k] for k in RETRIEVAL_KEYS[:-1]}
    values["delta"] = delta(top_n(dense, n, idx), rows[idx], rows, vectors, n).per_query
    return values


def stack_retrieval(blocks: Sequence[dict[str, np.ndarray]], codes: np.ndarray) -> dict[str, np.ndarray]:
    """The per-query values of :func:`retrieval_rows` blocks, in order, with ``scored``."""
    joined = {k: np.concatenate([b[k] for b in blocks]) if blocks else np.zeros(0) for k in RETRIEVAL_KEYS}
    sizes = np.bincount(codes[:, -1]) if codes.size else np.zeros(0, np.int64)
    result = {k: joined[k] for k in RETRIEVAL_KEYS[:-1]}
    result["scored"] = np.flatnonzero(sizes[codes[:, -1]] >= 2) if codes.size else np.zeros(0, np.int64)
    result["delta"] = joined["delta"]
    return result


def retrieval_estimates(values: dict[str, np.ndarray], groups: np.ndarray, *, n_resamples: int = 1000,
                        seed: int = 0, level: float = 0.95) -> dict[str, Estimate]:
    """The mean of each per-query value of :func:`retrieval_values` with the cluster bootstrap
    of Γ (simweb.core.gamma.bootstrap_ratios: the sampled classes drawn with replacement, the
    same seed), each mean a ratio of sums: Σ values / number of queries."""
    if not values:
        return {}
    total = groups.size
    scored = values["scored"].astype(np.int64)
    statistics = {}
    for name, key in zip(RETRIEVAL_MEASURES, RETRIEVAL_KEYS):
        # Δ scores every query; the class measures only the scored ones.
        members = np.arange(total) if key == "delta" else scored
        num, den = np.zeros(total), np.zeros(total)
        num[members], den[members] = values[key], 1.0
        statistics[name] = (num, den)
    return bootstrap_ratios(statistics, groups, n_resamples=n_resamples, seed=seed, level=level)
