"""The exact re-rank over the index's bag arrays (simweb.core.rerank): the C merge and its numpy
twin both equal Section 4's weighted Jaccard of the bags as dictionaries, on random bags."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simweb.core import rerank
from simweb.core.rerank import BagArrays, exact_scores
from simweb.core.similarity import jaccard, overlap


def _arrays(bags: list[dict[int, float]]) -> BagArrays:
    lengths = [len(b) for b in bags]
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.uint64)
    terms = np.array([t for b in bags for t in sorted(b)], dtype=np.uint32)
    weights = np.array([b[t] for b in bags for t in sorted(b)], dtype=np.float32)
    return BagArrays(offsets, terms, weights)


bags_strategy = st.lists(
    st.dictionaries(st.integers(0, 60), st.floats(0.0, 10.0, allow_nan=False, width=32), max_size=25),
    min_size=1, max_size=12)


@settings(max_examples=200, deadline=None)
@given(bags_strategy, st.data())
def test_exact_scores_are_the_weighted_jaccard_and_overlap_of_the_bags(bags, data):
    arrays = _arrays(bags)
    query = data.draw(st.integers(0, len(bags) - 1))
    docs = np.array(data.draw(st.lists(st.integers(0, len(bags) - 1), max_size=20)), dtype=np.int64)
    as_float = [{t: float(np.float32(w)) for t, w in b.items()} for b in bags]
    want_j = [jaccard(as_float[query], as_float[d]) for d in docs.tolist()]
    want_o = [overlap(as_float[query], as_float[d]) for d in docs.tolist()]
    got_j, got_o = exact_scores(arrays, query, docs)
    ref_j, ref_o = rerank._scores_numpy(arrays, *arrays.bag(query), docs)
    for got in ((got_j, got_o), (ref_j, ref_o)):
        assert got[0] == pytest.approx(want_j, abs=1e-9) and got[1] == pytest.approx(want_o, abs=1e-9)


def test_a_bag_against_itself_is_one_and_empty_bags_are_zero():
    arrays = _arrays([{1: 0.5, 4: 0.25}, {}, {4: 1.0}])
    j, o = exact_scores(arrays, 0, np.array([0, 1, 2]))
    assert j.tolist() == [1.0, 0.0, pytest.approx(0.25 / 1.5)] and o.tolist() == [0.75, 0.0, 0.25]
    assert exact_scores(arrays, 1, np.array([1]))[0].tolist() == [0.0]
    assert exact_scores(arrays, 0, np.zeros(0, np.int64))[0].size == 0


def test_candidates_outside_the_documents_are_refused():
    arrays = _arrays([{1: 1.0}, {2: 1.0}])
    with pytest.raises(IndexError, match="outside the documents 0 … 1"):
        exact_scores(arrays, 0, np.array([2]))
    with pytest.raises(IndexError):
        exact_scores(arrays, 5, np.array([0]))
    with pytest.raises(ValueError, match="uint64 offsets"):
        BagArrays(np.zeros(3, np.int64), np.zeros(0, np.uint32), np.zeros(0, np.float32))


@pytest.mark.skipif(rerank._c_scores is None, reason="simweb.core._rerank is not built here")
def test_the_c_merge_checks_what_it_reads():
    arrays = _arrays([{1: 1.0}, {2: 1.0}])
    out = np.empty(1)
    with pytest.raises(ValueError, match="not a document"):
        rerank._c_scores(np.array([1], np.uint32), np.array([1.0], np.float32), arrays.offsets, arrays.terms,
                         arrays.weights, np.array([7], np.int64), out, out.copy())
    with pytest.raises(ValueError, match="one output per candidate"):
        rerank._c_scores(np.array([1], np.uint32), np.array([1.0], np.float32), arrays.offsets, arrays.terms,
                         arrays.weights, np.array([0, 1], np.int64), out, out.copy())
