"""Stage ``eval-index`` of the evaluation: the index's agreement with exact similarity (paper Section 6.2).

For the strategies an index is built with — the paper's Section 7 choice, and the evaluation's
recommendation (tasks/eval_recommend.py) — the sample's bags are signed as a build signs them
(the index's m, seed and sampler), put in an inverted index filtered by in-degree as a build
filters I (Section 7.1, in-degrees counted over the whole crawl as the signatures stage
counts them, simweb.tasks.crawl.degrees.in_degrees), and queried by both of the index's paths
(simweb.core.index_agreement): the paper's PROCESSQUERY at α and the default exact re-rank.
Cached by simweb.tasks.stagecache under ``work`` per crawl, sample, strategy and index parameters;
writes ``index_counts.npz`` (the Γ pair counts of the estimates) and keeps the record in the
stage's stats, with the Γ of the exact similarities beside the estimates'.

A strategy compared by overlap (simweb.core.strategy, "Overlap") is indexed by the weighted
Jaccard of its bags — the index finds its candidates by Jaccard and orders them by overlap — so
its agreement is measured against the exact Jaccard of the same bags (``compared_by``), and the
Γ of its exact similarities is its overlap's.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import numpy as np

from simweb.core.findings import as_optional
from simweb.core.gamma import GAMMA_MEASURES, gammas, pair_counts
from simweb.core.index_agreement import AgreementParams, index_agreement
from simweb.core.similarity import EmbeddedSimilarity, ExactRows
from simweb.core.strategy import Metric, Strategy
from simweb.tasks.crawl.degrees import in_degrees
from simweb.tasks.crawl.parts import crawl_files_identity
from simweb.tasks.logs import run_logger
from simweb.tasks.signatures import IndexParams
from simweb.tasks.stagecache import StageOutput, run_stage
from simweb.tasks.stages.eval_sample import load_sample
from simweb.tasks.stages.eval_strategies import EvaluationInputs, save_arrays
from simweb.tasks.storage import join

__all__ = ["STAGE_INDEX", "build_agreement_params", "evaluate_index"]

STAGE_INDEX = "eval-index"


def build_agreement_params(index: IndexParams = IndexParams()) -> AgreementParams:
    """The agreement's parameters for an index built with ``index`` (default: a build's defaults)."""
    return AgreementParams(m=index.m, seed=index.seed, algorithm=index.algorithm, min_in_degree=index.min_in_degree)


def evaluate_index(crawl: str, sample: StageOutput, strategies: Sequence[Strategy], work: str,
                   params: AgreementParams | None = None) -> list[StageOutput]:
    """Stage ``eval-index`` for each of ``strategies`` (see the module docstring): the sample's
    bags from the bags stage's sub-stages under ``work`` (simweb.tasks.bags.sample.sample_bags), their
    exact similarity a block of rows at a time (simweb.core.similarity.ExactRows)."""
    params = params or build_agreement_params()
    loaded = load_sample(sample.path)
    inputs = EvaluationInputs.of_sample(crawl, loaded, work)
    identity = crawl_files_identity(crawl)
    table = in_degrees(crawl, loaded.url_ids)
    degree_of = dict(zip(table.column("url_id").to_pylist(), table.column("in_degree").to_pylist()))
    n = len(loaded.urls)
    outputs = []
    for strategy in strategies:
        if strategy.metric is Metric.COSINE:
            raise ValueError(f"{strategy.label}: the min-hash index estimates Jaccard similarity; "
                             "measure its agreement for a Jaccard or overlap strategy")

        def compute(tmp: str, strategy: Strategy = strategy) -> dict:
            bags = inputs.bags(strategy)
            present = np.flatnonzero(np.isin(loaded.url_ids, bags.url_ids))
            if present.size < 2:
                return {"strategy": strategy.label, "spec": strategy.spec(), "agreement": None}
            ids = loaded.url_ids[present]
            exact = ExactRows(bags, Metric.JACCARD, ids=ids.tolist())  # a block of rows at a time
            degree = np.array([degree_of.get(int(u), 0) for u in ids], dtype=np.int64)
            agreement = index_agreement(bags, ids, exact, present, loaded.codes, n, degree, params,
                                        strategy=strategy.label)
            save_arrays(join(tmp, "index_counts.npz"), concordant=agreement.counts.concordant,
                        discordant=agreement.counts.discordant)
            own = exact if strategy.metric is Metric.JACCARD else ExactRows(bags, strategy.metric, ids=ids.tolist())
            exact_gammas = gammas(pair_counts(EmbeddedSimilarity(n, present, own), loaded.codes))
            return {"strategy": strategy.label, "spec": strategy.spec(),
                    "agreement": {**agreement.stats, "compared_by": Metric.JACCARD.value,
                                  "gamma_exact": {k: as_optional(exact_gammas[k]) for k in GAMMA_MEASURES}}}

        outputs.append(run_stage(work, STAGE_INDEX, {"crawl": identity, "sample": sample},
                                 {"strategy": strategy.to_dict(), "index": dataclasses.asdict(params)}, compute,
                                 log=run_logger("simweb.evaluate")))
    return outputs
