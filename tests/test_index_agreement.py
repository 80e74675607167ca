"""simweb.core.index_agreement block by block: the same record from the exact similarity held
whole or computed a block of rows at a time (ExactRows), and its two query paths checked pair by
pair against the inverted index."""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from simweb.core.bag_matrix import BagMatrix
from simweb.core.index_agreement import AgreementParams, index_agreement
from simweb.core.minhash import sign, term_hashes
from simweb.core.query import all_pairs, candidate_alpha, invert
from simweb.core.similarity import ExactRows, exact_pairs


def _bags(seed: int) -> tuple[BagMatrix, np.ndarray]:
    rng = np.random.default_rng(seed)
    dense = rng.random((50, 30)) * (rng.random((50, 30)) < 0.25)
    dense[25:40] = dense[:15] * (rng.random((15, 30)) < 0.9)  # near-duplicates: pairs above α
    dense[dense.sum(axis=1) == 0, 0] = 1.0
    csr = sp.csr_matrix(dense)
    csr.sort_indices()
    ids = np.arange(1, 51, dtype=np.uint64) * 7919
    bags = BagMatrix(ids, tuple(f"http://u{i}/" for i in range(50)), tuple(f"t{i}" for i in range(30)), csr,
                     np.bincount(csr.indices, minlength=30), 50, None)
    return bags, ids


def _pairs(a, b) -> set[tuple[int, int]]:
    return set(zip(np.minimum(a, b).tolist(), np.maximum(a, b).tolist()))


def test_the_record_is_the_same_from_whole_or_blockwise_exact_similarity_and_matches_the_index():
    for seed in range(3):
        bags, ids = _bags(seed)
        rng = np.random.default_rng(seed)
        n, present = 60, np.sort(rng.choice(60, 50, replace=False))
        codes = np.stack([rng.integers(0, 2, n), rng.integers(0, 3, n), rng.integers(0, 6, n)], axis=1)
        degree = rng.integers(0, 5, ids.size)
        params = AgreementParams(m=40, min_in_degree=1)
        whole = exact_pairs(bags, "jaccard", ids=ids.tolist())
        a = index_agreement(bags, ids, whole, present, codes, n, degree, params).stats
        b = index_agreement(bags, ids, ExactRows(bags, "jaccard", ids=ids.tolist()), present, codes, n, degree,
                            params).stats
        for record in (a, b):
            record.pop("seconds")
        assert a.keys() == b.keys() and a["estimate"] == b["estimate"] and a["misses"] == b["misses"]
        assert a["rerank"] == b["rerank"] and abs(a["mean_abs_error"] - b["mean_abs_error"]) < 1e-12

        # Pair by pair: the index's pairs at α and at α − 2σ, the exact ones ≥ α.
        signatures = sign(bags.csr.indices.astype(np.int64), bags.csr.indptr.astype(np.int64),
                          term_hashes(bags.vocabulary), bags.csr.data, params.minhash()).values
        inverted = invert(signatures, degree > params.min_in_degree)
        relevant = {(x, y) for x in range(ids.size) for y in range(x + 1, ids.size) if whole[x, y] >= params.alpha - 1e-12}
        by_estimate = _pairs(*all_pairs(inverted, signatures, params.alpha)[:2])
        candidates = _pairs(*all_pairs(inverted, signatures, candidate_alpha(params.alpha, params.m))[:2])
        reranked = {(x, y) for x, y in candidates if whole[x, y] >= params.alpha - 1e-12}
        assert a["relevant_pairs"] == len(relevant) > 0
        assert a["estimate"]["retrieved_pairs"] == len(by_estimate)
        assert a["estimate"]["hits"] == len(by_estimate & relevant)
        assert a["rerank"]["candidate_pairs"] == len(candidates) and a["rerank"]["hits"] == len(reranked)
        assert a["misses"]["pairs"] == len(relevant - by_estimate)
        assert a["misses"]["both_out_of_i"] == sum(1 for x, y in relevant - by_estimate
                                                   if degree[x] <= 1 and degree[y] <= 1)
