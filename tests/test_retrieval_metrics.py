"""Precision/recall/F, average precision and Δ(A, N) against hand-computed values."""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simweb.core.retrieval_metrics import (
    average_precision,
    class_retrieval_scores,
    delta,
    f_measure,
    precision_recall_f,
    tfidf_vectors,
    top_n,
)


def test_the_lecture_example_of_two_queries():
    """|R| = 3; Q1 returns two relevant and three irrelevant documents: precision 2/5, recall
    2/3; Q2 returns one irrelevant document: precision and recall 0."""
    relevant = {"r1", "r2", "r3"}
    q1 = precision_recall_f(["r1", "x1", "r2", "x2", "x3"], relevant)
    assert (q1.precision, q1.recall) == (pytest.approx(2 / 5), pytest.approx(2 / 3))
    assert q1.f == pytest.approx(2 * (2 / 5) * (2 / 3) / (2 / 5 + 2 / 3))
    q2 = precision_recall_f(["x1"], relevant)
    assert (q2.precision, q2.recall, q2.f) == (0.0, 0.0, 0.0)
    assert precision_recall_f([], relevant).precision == 0.0
    with pytest.raises(ValueError, match="empty relevant set"):
        precision_recall_f(["a"], [])


def test_f_is_the_harmonic_mean():
    assert f_measure(0.5, 0.5) == 0.5
    assert f_measure(1.0, 0.0) == 0.0
    assert f_measure(0.2, 0.8) == pytest.approx(1 / ((1 / 0.2 + 1 / 0.8) / 2))


def test_interpolated_average_precision_by_hand():
    """Ranking r, x, r with |R| = 2: precision 1 at recall 0.5, 2/3 at recall 1. Interpolated at
    recall 0, 0.1, ..., 0.5 the max precision is 1 (six levels), at 0.6 .. 1.0 it is 2/3 (five):
    AP = (6 + 5·2/3) / 11 = 28/33."""
    assert average_precision(["r1", "x", "r2"], {"r1", "r2"}) == pytest.approx(28 / 33)
    # Cut at N = 2 the second relevant page is never reached: levels above 0.5 score 0.
    assert average_precision(["r1", "x", "r2"], {"r1", "r2"}, n=2) == pytest.approx(6 / 11)
    assert average_precision(["x"], {"r"}) == 0.0
    assert average_precision(["r"], {"r"}) == 1.0


@settings(max_examples=50, deadline=None)
@given(st.lists(st.integers(0, 20), unique=True, max_size=15), st.sets(st.integers(0, 20), min_size=1))
def test_average_precision_lies_in_0_1_and_a_perfect_ranking_scores_1(ranked, relevant):
    assert 0.0 <= average_precision(ranked, relevant) <= 1.0
    assert average_precision(sorted(relevant), relevant) == 1.0


def test_top_n_skips_the_query_itself_and_zero_similarities_and_breaks_ties_by_column():
    sims = np.array([[0.9, 0.3, 0.3, 0.0, 0.5], [0.2, 0.0, 0.0, 0.0, 0.0]])
    assert top_n(sims, 3, [0, -1]).tolist() == [[4, 1, 2], [0, -1, -1]]
    assert top_n(sims, 0).shape == (2, 0)


def test_class_retrieval_scores_against_directory_classes():
    """Four pages, classes A, A, A, B; rows are the queries 0 and 3 over all four columns.
    Query 0: top 2 = columns 1 (A) and 3 (B): P@2 = 1/2, recall 1/2 (relevant {1, 2}),
    AP: precision 1 at recall 0.5, never recall 1: (6·1 + 5·0)/11. Query 3 (class B) has no
    other page of its class: skipped and counted."""
    sims = np.array([[1.0, 0.8, 0.1, 0.5], [0.5, 0.2, 0.3, 1.0]])
    scores = class_retrieval_scores(sims, ["A", "B"], ["A", "A", "A", "B"], n=2, self_columns=[0, 3])
    assert (scores.queries, scores.skipped) == (1, 1)
    assert (scores.precision, scores.recall) == (pytest.approx(0.5), pytest.approx(0.5))
    assert scores.f == pytest.approx(0.5)
    assert scores.average_precision == pytest.approx(6 / 11)
    with pytest.raises(ValueError, match="shape"):
        class_retrieval_scores(sims, ["A"], ["A", "A", "A", "B"], n=2)


def test_tfidf_cosine_by_hand():
    """Documents 'a b', 'a c', 'd': idf(a) = ln(3/2), idf(b) = idf(c) = idf(d) = ln 3.
    cos(0, 1) = ln(3/2)² / (ln(3/2)² + ln(3)²); document 2 shares nothing."""
    v = tfidf_vectors([["a", "b"], ["a", "c"], ["d", "d"]])
    cos = (v @ v.T).toarray()
    expected = math.log(1.5) ** 2 / (math.log(1.5) ** 2 + math.log(3) ** 2)
    assert cos[0, 1] == pytest.approx(expected)
    assert cos[0, 2] == 0.0
    assert np.diag(cos) == pytest.approx([1.0, 1.0, 1.0])
    everywhere = tfidf_vectors([["a"], ["a"]])
    assert everywhere.nnz == 0  # idf 0: nothing distinguishes the pages


def test_delta_averages_tfidf_cosine_of_the_top_n_and_divides_by_n():
    """Query 0's top 2 are documents 1 and 2: score = (cos(0,1) + 0)/2; query 2 returned nothing:
    score 0. Δ = cos(0,1)/4."""
    v = tfidf_vectors([["a", "b"], ["a", "c"], ["d", "e"]])
    c01 = (v[0] @ v[1].T).toarray()[0, 0]
    result = delta(np.array([[1, 2], [-1, -1]]), [0, 2], [0, 1, 2], v, n=2)
    assert result.per_query == pytest.approx([c01 / 2, 0.0])
    assert result.value == pytest.approx(c01 / 4)
    with pytest.raises(ValueError, match="N >= 1"):
        delta(np.zeros((1, 0), dtype=int), [0], [0], v, n=0)
