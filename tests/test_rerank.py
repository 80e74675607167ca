"""The exact re-rank over the index's bag arrays (simweb.core.rerank): the C merge and its numpy
twin both equal Section 4's weighted Jaccard of the bags as dictionaries, on random bags."""
from __future__ import annotations

from contextlib import contextmanager

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simweb.core import query, rerank
from simweb.core.rerank import BagArrays, exact_scores
from simweb.core.similarity import jaccard, overlap


def _arrays(bags: list[dict[int, float]]) -> BagArrays:
    lengths = [len(b) for b in bags]
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.uint64)
    terms = np.array([t for b in bags for t in sorted(b)], dtype=np.uint32)
    weights = np.array([b[t] for b in bags for t in sorted(b)], dtype=np.float32)
    return BagArrays.of(offsets, terms, weights)


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
    ref_j, ref_o = rerank._scores_numpy(arrays, query, docs)
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
        BagArrays(np.zeros(3, np.int64), np.zeros(0, np.uint32), np.zeros(0, np.float32), np.zeros(2))


@pytest.mark.skipif(rerank._c_scores is None, reason="simweb.core._rerank is not built here")
def test_the_c_merge_checks_what_it_reads():
    arrays = _arrays([{1: 1.0}, {2: 1.0}])
    out = np.empty(1)
    with pytest.raises(ValueError, match="not a document"):
        rerank._c_scores(np.array([1], np.uint32), np.array([1.0], np.float32), 1.0, arrays.offsets, arrays.terms,
                         arrays.weights, arrays.sums, np.array([7], np.int64), out, out.copy())
    with pytest.raises(ValueError, match="one output per candidate"):
        rerank._c_scores(np.array([1], np.uint32), np.array([1.0], np.float32), 1.0, arrays.offsets, arrays.terms,
                         arrays.weights, arrays.sums, np.array([0, 1], np.int64), out, out.copy())


def test_a_short_bag_against_a_long_one_is_scored_alike_by_the_merge_and_the_galloping_search():
    rng = np.random.default_rng(7)
    long_bag = {int(t): float(w) for t, w in zip(rng.choice(100_000, 3000, replace=False), rng.random(3000))}
    shared = list(long_bag)[:5]
    bags = [long_bag, {**{t: 0.5 for t in shared}, 100_001: 1.0}, {t: 0.25 for t in list(long_bag)[:2000]}]
    arrays = _arrays(bags)
    as_float = [{t: float(np.float32(w)) for t, w in b.items()} for b in bags]
    for q in range(3):
        got = exact_scores(arrays, q, np.arange(3))[0]
        assert got == pytest.approx([jaccard(as_float[q], b) for b in as_float], abs=1e-12)
        assert got == pytest.approx(rerank._scores_numpy(arrays, q, np.arange(3))[0], abs=1e-12)


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(1, 30), st.floats(0.0, 0.6))
def test_the_top_of_the_candidates_are_those_of_the_full_re_rank_when_estimates_are_true(seed, top, alpha):
    # Candidates whose estimate is their exact Jaccard rounded down to a multiple of 1/m: a
    # candidate left unscored lies below τ − 2σ(τ), so it could not have reached the top.
    from simweb.core.query import exact_order
    from simweb.core.rerank import top_exact

    rng = np.random.default_rng(seed)
    base = {int(t): float(rng.random()) for t in rng.choice(200, 40, replace=False)}
    bags = [base] + [{t: w for t, w in base.items() if rng.random() < rng.uniform(0.2, 1.0)}
                     | {int(200 + rng.integers(0, 400)): 1.0 for _ in range(int(rng.integers(0, 20)))}
                     for _ in range(600)]
    arrays = _arrays(bags)
    docs = np.arange(1, len(bags))
    exact = exact_scores(arrays, 0, docs)[0]
    m = 80
    counts = np.floor(exact * m + 1e-9).astype(np.int64)
    by_estimate = np.lexsort((docs, -counts))
    order, values = top_exact(arrays, 0, docs[by_estimate], counts[by_estimate], m, alpha, top)
    want = exact_order(docs, exact, alpha, top)
    assert docs[by_estimate][order].tolist() == docs[want].tolist()
    assert values == pytest.approx(exact[want])


def test_a_page_with_many_near_copies_is_answered_from_few_of_its_candidates(monkeypatch):
    from simweb.core.rerank import top_exact

    base = {t: 1.0 for t in range(50)}
    bags = [base] + [{**base, 1000 + i: 0.05} for i in range(5000)]  # 5,000 near-copies, J ≈ 0.999
    arrays = _arrays(bags)
    docs = np.arange(1, len(bags))
    counts = np.full(docs.size, 80)
    scored = []
    real = rerank.exact_scores
    monkeypatch.setattr(rerank, "exact_scores", lambda b, q, d: (scored.append(len(d)), real(b, q, d))[1])
    order, _ = top_exact(arrays, 0, docs, counts, 80, 0.15, 10)
    assert docs[order].tolist() == list(range(1, 11))  # ties by document id
    assert sum(scored) == 5000  # every estimate (80/80) reaches within 2σ of τ: all are scored ...
    scored.clear()
    counts = np.concatenate([np.full(100, 80), np.full(docs.size - 100, 60)])  # ... but most lie far below
    order, _ = top_exact(arrays, 0, docs, counts, 80, 0.15, 10)
    assert docs[order].tolist() == list(range(1, 11)) and sum(scored) == rerank.FIRST_ROUND


# --- PROCESSQUERY's count of agreeing positions (simcore/_rerank.c agreements, simcore/query.py) -----

needs_c_agreements = pytest.mark.skipif(query._c_agreements is None, reason="simweb.core._rerank is not built here")


@needs_c_agreements
@settings(max_examples=200, deadline=None)
@given(st.integers(1, 40), st.integers(1, 96), st.integers(0, 3), st.integers(0, 2**32 - 1), st.booleans())
def test_the_c_count_of_agreeing_positions_equals_numpys(n_docs, m, values, seed, wide):
    rng = np.random.default_rng(seed)
    # Few distinct values, so that rows agree with the query in some positions and not others.
    h = rng.integers(0, values + 1, (n_docs, m)).astype(np.uint32) * np.uint32(2**31 + 1)
    sig = h[rng.integers(n_docs)].copy()
    sig[rng.random(m) < 0.3] = np.uint32(2**32 - 1)
    docs = rng.integers(0, n_docs, rng.integers(0, 3 * n_docs)).astype(np.int64 if wide else np.uint32)
    counts = query.agreements(h, sig, docs)
    assert counts.dtype == np.int64
    assert counts.tolist() == (h[docs] == sig).sum(axis=1).tolist()


@needs_c_agreements
def test_the_c_count_refuses_a_candidate_outside_h():
    h = np.zeros((3, 4), np.uint32)
    with pytest.raises(ValueError, match="not a row of H"):
        query._c_agreements(h, h[0], np.array([0, 3], np.int64), 8, np.empty(2, np.int64))
    with pytest.raises(ValueError, match="one count per candidate"):
        query._c_agreements(h, h[0], np.array([0, 1], np.uint32), 4, np.empty(1, np.int64))
    with pytest.raises(ValueError, match="4 or 8 bytes"):
        query._c_agreements(h, h[0], np.array([0, 1], np.uint32), 2, np.empty(2, np.int64))


# --- one query's candidates counted in one pass (simcore/_rerank.c candidates, simcore/query.py) -----

needs_c_candidates = pytest.mark.skipif(query._c_candidates is None, reason="simweb.core._rerank is not built here")


@needs_c_candidates
@settings(max_examples=150, deadline=None)
@given(st.integers(2, 80), st.integers(1, 24), st.integers(1, 6), st.floats(0.0, 1.0), st.integers(0, 2**32 - 1),
       st.sampled_from([np.uint32, np.uint64]))
def test_the_c_candidates_of_one_query_equal_a_count_over_every_indexed_document(n, m, values, alpha, seed, wide):
    rng = np.random.default_rng(seed)
    h = rng.integers(0, values, (n, m)).astype(np.uint32)
    indexed = rng.random(n) < 0.8
    full = query.invert(h, indexed)
    index = query.InvertedIndex(full.keys, full.offsets.astype(wide), full.docs, m)  # I's offsets as stored
    need = query.min_count(alpha, m)
    for q in range(n):
        counts = (h == h[q]).sum(axis=1)
        ok = (counts >= need) & indexed & (np.arange(n) != q)
        want = sorted(((int(d), int(counts[d])) for d in np.flatnonzero(ok)), key=lambda x: (-x[1], x[0]))
        got = query.process_query(index, h, q, alpha)
        assert list(zip(got.docs.tolist(), got.counts.tolist())) == want
        at = query._buckets_of(index, h[q])
        ranked = query._ranked_in_c(index, at, int(index.docs.size), h[q], need, 3, q, h)
        assert ranked is not None and list(zip(ranked.docs.tolist(), ranked.counts.tolist())) == want[:3]
    assert not index._directory["marks"].seen.any()  # the marks are left zero for the next query


@needs_c_candidates
def test_the_c_candidates_refuse_what_is_not_in_the_index_and_leave_the_marks_zero():
    h = np.array([[1, 2], [1, 3], [4, 2]], np.uint32)
    index = query.invert(h)
    seen = np.zeros(3, np.uint8)

    def run(buckets, postings=index.docs, seen=seen, out=4, width=8):
        return query._c_candidates(index.offsets, width, postings, np.array(buckets, np.int64), h, h[0], 1, -1, seen,
                                   np.empty(out, np.int64), np.empty(out, np.int64))

    assert run([0, 1]) == 3 and not seen.any()
    with pytest.raises(ValueError, match="bucket 2 is not in I"):
        run([0, 2])
    with pytest.raises(ValueError, match="not a row of H"):
        run([0, 1], postings=np.array([0, 1, 0, 7], np.uint32))
    assert not seen.any()
    with pytest.raises(ValueError, match="do not fit"):
        run([0, 1], out=3)
    with pytest.raises(ValueError, match="one mark per row"):
        run([0], seen=np.zeros(2, np.uint8))
    with pytest.raises(ValueError, match="4 or 8 bytes"):
        run([0], width=2)


@needs_c_candidates
@settings(max_examples=150, deadline=None)
@given(st.integers(2, 80), st.integers(1, 24), st.integers(1, 6), st.floats(0.0, 1.0), st.integers(0, 2**32 - 1),
       st.sampled_from([np.uint32, np.uint64]), st.integers(0, 2), st.integers(0, 6))
def test_counts_from_every_buckets_postings_are_the_counts_read_from_h(n, m, values, alpha, seed, wide, top, left):
    # Figure 11's count over every bucket of the query (simcore/_rerank.c counted; the `left`
    # largest searched, as many as need allows) against the count of agreeing positions read
    # from H for the candidates of all but the need − 1 largest; and full_count's own choice.
    rng = np.random.default_rng(seed)
    h = rng.integers(0, values, (n, m)).astype(np.uint32)
    full = query.invert(h, rng.random(n) < 0.8)
    index = query.InvertedIndex(full.keys, full.offsets.astype(wide), full.docs, m)
    need = query.min_count(alpha, m)
    for q in range(n):
        buckets, _ = query.query_buckets(index, h[q])
        if buckets.size < need:
            continue
        from_h = query.count_candidates(index, buckets[: buckets.size - need + 1], h[q], need, top or None, q, h)
        left_out = min(left, need - 1, buckets.size)
        counted = query.count_candidates(index, buckets, h[q], need, top or None, q, h, every=True, left_out=left_out)
        assert counted.docs.tolist() == from_h.docs.tolist() and counted.counts.tolist() == from_h.counts.tolist()
        big, query.BIG_BUCKET = query.BIG_BUCKET, 1 + left % 3  # every bucket large enough to leave out
        try:
            chosen = query.full_count(index, buckets, np.diff(index.offsets.astype(np.int64))[buckets], h[q], need,
                                      top or None, q, h)
        finally:
            query.BIG_BUCKET = big
        assert chosen.docs.tolist() == from_h.docs.tolist() and chosen.counts.tolist() == from_h.counts.tolist()
    marks = index._directory.get("marks")
    assert marks is None or not marks.counts.any()  # the counts are left zero for the next query


@needs_c_candidates
def test_the_count_from_postings_refuses_what_is_not_in_the_index_and_leaves_the_counts_zero():
    h = np.array([[1, 2], [1, 3], [4, 2]], np.uint32)
    index = query.invert(h)
    counts = np.zeros(3, np.uint8)

    def run(buckets, postings=index.docs, out=4, width=8):
        return query._c_counted(index.offsets, width, postings, np.array(buckets, np.int64), 1, 0, -1, counts,
                                np.empty(out, np.int64), np.empty(out, np.int64))

    assert run([0, 1]) == 3 and not counts.any()
    with pytest.raises(ValueError, match="bucket 2 is not in I"):
        run([0, 2])
    with pytest.raises(ValueError, match="not a document"):
        run([0, 1], postings=np.array([0, 1, 0, 7], np.uint32))
    assert not counts.any()
    with pytest.raises(ValueError, match="do not fit"):
        run([0, 1], out=3)
    with pytest.raises(ValueError, match="at most 255 buckets"):
        run([0] * 256, out=600)
    with pytest.raises(ValueError, match="4 or 8 bytes"):
        run([0], width=2)
    with pytest.raises(ValueError, match="fewer buckets left out than need"):  # need 1: none may be
        query._c_counted(index.offsets, 8, index.docs, np.array([0, 1], np.int64), 1, 1, -1, counts,
                         np.empty(4, np.int64), np.empty(4, np.int64))


@needs_c_candidates
def test_queries_from_many_threads_on_one_index_get_the_answers_of_one_thread():
    from concurrent.futures import ThreadPoolExecutor

    rng = np.random.default_rng(11)
    h = rng.integers(0, 3, (3000, 16)).astype(np.uint32)
    index = query.invert(h)
    alone = [query.process_query(index, h, q, 0.3) for q in range(0, 3000, 7)]
    with ThreadPoolExecutor(8) as pool:
        together = list(pool.map(lambda q: query.process_query(index, h, q, 0.3), range(0, 3000, 7)))
    for a, b in zip(alone, together):
        assert a.docs.tolist() == b.docs.tolist() and a.counts.tolist() == b.counts.tolist()


# --- the staged re-rank of one query (simweb.core.rerank.related_top) ---------------------------------


def _minhash_index(bags: list[dict[int, float]], m: int, seed: int):
    """H as the unweighted min-hash of each bag's terms (m positions; an empty bag EMPTY), I, the arrays."""
    from simweb.core.minhash import EMPTY

    rng = np.random.default_rng(seed)
    salt = rng.integers(1, 2**31, m)
    h = np.full((len(bags), m), EMPTY, np.uint32)
    for i, bag in enumerate(bags):
        if bag:
            terms = np.array(sorted(bag), np.uint64)
            hashed = (terms[None, :] * np.uint64(2654435761) + salt[:, None].astype(np.uint64)) % np.uint64(2**31 - 1)
            h[i] = terms[hashed.argmin(axis=1)].astype(np.uint32)
    return h, query.invert(h), _arrays(bags)


def _clustered_bags(rng, n: int) -> list[dict[int, float]]:
    """Bags of a few topics: each keeps a share of its topic's 30 terms, plus a few terms of its own."""
    bags = []
    for i in range(n):
        topic = int(rng.integers(0, 4))
        keep = rng.uniform(0.2, 1.0)
        bag = {topic * 100 + t: float(rng.uniform(0.5, 2.0)) for t in range(30) if rng.random() < keep}
        bag |= {1000 + int(rng.integers(0, 5000)): 1.0 for _ in range(int(rng.integers(0, 6)))}
        bags.append(bag)
    return bags


@contextmanager
def _guessing(guess: bool):
    """related_top's first guess of τ made for every query (``guess``) or for none."""
    kept = rerank.GUESS_PAST
    rerank.GUESS_PAST = -1 if guess else 2**62
    try:
        yield
    finally:
        rerank.GUESS_PAST = kept


@settings(max_examples=120, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(1, 15), st.floats(0.0, 0.5), st.sampled_from([8, 16, 32]), st.booleans())
def test_the_answer_is_the_top_of_every_candidate_the_rule_reaches(seed, top, alpha, m, guess):
    # The answer is the top of the candidates (estimated ≥ α − 2σ(α)) by exact Jaccard ≥ α, and a
    # candidate left out beats no answer unless its estimate lies below τ − 2σ(τ) (τ: the last
    # answer's); with fewer than `top` answers, it is every one. The same with the candidates
    # counted at a first guess of τ (a floor of τ: none the rule reaches is left out).
    from simweb.core.rerank import related_top

    rng = np.random.default_rng(seed)
    bags = _clustered_bags(rng, 120)
    h, index, arrays = _minhash_index(bags, m, seed)
    for q in rng.choice(len(bags), 6, replace=False).tolist():
        with _guessing(guess):
            found, exact = related_top(index, h, arrays, q, alpha, top)
        _assert_the_top_of_the_rule(index, h, arrays, q, alpha, top, found, exact)


def _assert_the_top_of_the_rule(index, h, arrays, q, alpha, top, found, exact):
    """``found`` and ``exact`` (related_top's answer for ``q``) are the top of the candidates
    estimated ≥ α − 2σ(α) by exact Jaccard ≥ α, ordered by it, with their counts; with fewer than
    ``top`` answers every one, else none left out beats the last unless its estimate lies below
    τ − 2σ(τ) of the last answer's τ."""
    m = index.m
    every = query.process_query(index, h, q, query.candidate_alpha(alpha, m))
    count = dict(zip(every.docs.tolist(), every.counts.tolist()))
    truth = dict(zip(every.docs.tolist(), exact_scores(arrays, q, every.docs)[0].tolist()))
    got = found.docs.tolist()
    assert len(got) <= top and all(d in count for d in got)
    assert found.counts.tolist() == [count[d] for d in got]
    assert exact.tolist() == [truth[d] for d in got] and all(x >= alpha - 1e-12 for x in exact)
    assert got == sorted(got, key=lambda d: (-truth[d], d))
    if len(got) < top:
        assert got == sorted((d for d in truth if truth[d] >= alpha - 1e-12), key=lambda d: (-truth[d], d))
    else:
        last = (-truth[got[-1]], got[-1])
        reach = m * query.candidate_alpha(truth[got[-1]], m) - 1e-9
        beaten = [d for d in truth if d not in got and count[d] >= reach and (-truth[d], d) < last
                  and truth[d] >= alpha - 1e-12]
        assert not beaten


@settings(max_examples=12, deadline=None)
@given(st.integers(0, 2**32 - 1), st.sampled_from([8, 16]), st.integers(3, 12))
def test_candidates_counted_at_the_first_guess_leave_out_none_the_rule_reaches(seed, m, top):
    # Topics of 500 pages: a query has hundreds of candidates, more than the guess scores, so the
    # count at τ₀ − 2σ(τ₀) leaves some out; none it leaves out beats an answer unless its
    # estimate lies below τ − 2σ(τ) of the answer's τ (a τ₀ above the answer's τ, or a cut
    # nearer τ₀, leaves out candidates the rule reaches).
    from simweb.core.rerank import related_top

    rng = np.random.default_rng(seed)
    bags = _clustered_bags(rng, 2000)
    h, index, arrays = _minhash_index(bags, m, seed)
    alpha = 0.1
    for q in rng.choice(len(bags), 4, replace=False).tolist():
        with _guessing(True):
            found, exact = related_top(index, h, arrays, q, alpha, top)
        _assert_the_top_of_the_rule(index, h, arrays, q, alpha, top, found, exact)


def test_a_query_whose_smallest_bucket_is_too_large_to_guess_from_is_answered_without_a_guess(monkeypatch):
    from simweb.core.rerank import related_top

    rng = np.random.default_rng(5)
    bags = _clustered_bags(rng, 300)
    h, index, arrays = _minhash_index(bags, 16, 5)
    gathered = []
    real = query.gather
    monkeypatch.setattr(rerank, "gather", lambda *a: (gathered.append(1), real(*a))[1])
    with _guessing(False):
        plain = [related_top(index, h, arrays, q, 0.1, 5)[0].docs.tolist() for q in range(0, 300, 7)]
    monkeypatch.setattr(rerank, "FIRST_POSTINGS", 0)  # 16 × 0: every bucket is too large
    with _guessing(True):
        unguessed = [related_top(index, h, arrays, q, 0.1, 5)[0].docs.tolist() for q in range(0, 300, 7)]
    assert unguessed == plain and not gathered


def _with_fine(bags: list[dict[int, float]]) -> np.ndarray:
    """H2 of integer-term bags (simweb.core.fine), each normalised to a total weight of 1."""
    from simweb.core import fine
    from simweb.core.minhash import term_hashes

    codes = np.array([t for bag in bags for t in sorted(bag)], np.int64)
    weights = np.array([bag[t] / sum(bag.values()) for bag in bags for t in sorted(bag)], np.float64)
    offsets = np.concatenate([[0], np.cumsum([len(b) for b in bags])]).astype(np.int64)
    return fine.sign(codes, offsets, term_hashes(range(int(codes.max(initial=0)) + 1), "identity"), weights, 9)


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(1, 12), st.floats(0.0, 0.4), st.integers(0, 40), st.booleans())
def test_the_answer_by_the_fine_estimate_is_the_top_of_every_candidate_its_rule_reaches(seed, top, alpha, after,
                                                                                        guess):
    # Past `after` candidates scored by H's estimate, the rest by the fine one: a candidate left
    # out beats no answer unless the scoring stopped by H's rule (estimate below τ − 2σ(τ)) or
    # its fine estimate lies below τ' − 2σ₂(τ') (τ' = τ, or α with fewer than `top` answers).
    from simweb.core import fine
    from simweb.core.rerank import related_top

    rng = np.random.default_rng(seed)
    bags = _clustered_bags(rng, 150)
    m = 32
    h, index, arrays = _minhash_index(bags, m, seed)
    h2 = _with_fine(bags)
    low = query.candidate_alpha(alpha, m)
    for q in rng.choice(len(bags), 5, replace=False).tolist():
        with _guessing(guess):
            found, exact = related_top(index, h, arrays, q, alpha, top, h2=h2, fine_after=after, budget=10**9)
        every = query.process_query(index, h, q, low)
        count = dict(zip(every.docs.tolist(), every.counts.tolist()))
        truth = dict(zip(every.docs.tolist(), exact_scores(arrays, q, every.docs)[0].tolist()))
        same, defined = fine.agreements(h2, h2[q], every.docs)
        fine_est = dict(zip(every.docs.tolist(), (same / np.maximum(defined, 1)).tolist()))
        spreads = dict(zip(every.docs.tolist(), defined.tolist()))
        got = found.docs.tolist()
        assert len(got) <= top and exact.tolist() == [truth[d] for d in got]
        assert all(x >= alpha - 1e-12 for x in exact) and got == sorted(got, key=lambda d: (-truth[d], d))
        tau = truth[got[-1]] if len(got) == top else None
        at = max(alpha, tau if tau is not None else alpha)
        for d in truth:
            if d in got or truth[d] < alpha - 1e-12 or (tau is not None and (-truth[d], d) > (-tau, got[-1])):
                continue
            by_h = tau is not None and count[d] < m * query.candidate_alpha(tau, m) - 1e-9
            by_fine = fine_est[d] < at - 2 * float(fine.spread(at, np.array([spreads[d]]))[0]) - 1e-12
            assert by_h or by_fine, (d, truth[d], count[d], fine_est[d])


def test_many_loosely_similar_candidates_are_cut_by_the_fine_estimate(monkeypatch):
    # A query with 3 true answers (J ≈ 0.5) among 3,000 candidates of J ≈ 0.06: with fewer than
    # 10 answers H's rule scores every candidate; the fine estimate scores a few hundred.
    from simweb.core.rerank import related_top

    m, rng = 32, np.random.default_rng(6)
    base = {t: 1.0 for t in range(60)}
    bags = [base] + [{t: 1.0 for t in range(40)} | {1000 + 30 * i + t: 1.0 for t in range(20)} for i in range(3)]
    for i in range(3000):  # share 7 of the query's terms: J = 7 / 113
        bags.append({int(t): 1.0 for t in rng.choice(60, 7, replace=False)} | {10**5 + 50 * i + t: 1.0 for t in range(46)})
    h, index, arrays = _minhash_index(bags, m, 1)
    h2 = _with_fine(bags)
    scored = []
    real = rerank.exact_scores
    monkeypatch.setattr(rerank, "exact_scores", lambda b, q, d: (scored.append(len(d)), real(b, q, d))[1])
    plain, _ = related_top(index, h, arrays, 0, 0.15, 10)
    by_h = sum(scored)
    scored.clear()
    finer, _ = related_top(index, h, arrays, 0, 0.15, 10, h2=h2, fine_after=64)
    assert plain.docs.tolist() == finer.docs.tolist() == [1, 2, 3]
    assert by_h > 2000 and sum(scored) < by_h / 4, (by_h, sum(scored))
    # At α = 0.12 (cut at 0.12 − 2σ₂ ≈ 0.075) a thousand loose candidates reach the fine rule:
    # a budget bounds the candidates scored, best fine estimates first, ...
    scored.clear()
    bounded, _ = related_top(index, h, arrays, 0, 0.12, 4, h2=h2, fine_after=0, budget=200)
    assert bounded.docs.tolist() == [1, 2, 3] and sum(scored) == 200
    scored.clear()  # ... but not below 32 per answer asked for
    related_top(index, h, arrays, 0, 0.12, 4, h2=h2, fine_after=0, budget=50)
    assert sum(scored) == 128
    # ... and at most ENTRIES_PER_SCORE bag entries per candidate of the budget, the last round
    # cut where it would pass them (a loose candidate has 53 entries, a true answer 60).
    entries = []
    monkeypatch.setattr(rerank, "exact_scores", lambda b, q, d: (entries.append(int(rerank._entries(b, d).sum())),
                                                                 real(b, q, d))[1])
    monkeypatch.setattr(rerank, "ENTRIES_PER_SCORE", 10)
    related_top(index, h, arrays, 0, 0.12, 4, h2=h2, fine_after=0, budget=200)
    assert 2000 - 60 < sum(entries) <= 2000


@needs_c_candidates
@settings(max_examples=25, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(1, 3), st.integers(2, 30), st.data())
def test_the_count_searching_its_largest_buckets_finds_the_counts_of_sweeping_them(seed, blocks, need, data):
    # The count from postings with its `left_out` largest buckets searched for the documents
    # within their number of need (swept instead in a block where that reads less): the same
    # documents and counts as a count of every posting, over several blocks of 65,536 documents,
    # with buckets of every size from a few postings to most of the documents.
    rng = np.random.default_rng(seed)
    n = blocks * 65_536 - int(rng.integers(0, 5_000))
    near = rng.choice(n, 40, replace=False)  # pages like the query: in most of its buckets
    nb = data.draw(st.integers(need, min(need + 12, 255)))
    left_out = data.draw(st.integers(0, min(need - 1, nb)))
    members = []
    for b in range(nb):
        dense = b >= nb - left_out - 1 and rng.random() < 0.8  # the largest: up to most documents
        loose = rng.random(n) < (rng.uniform(0.2, 0.9) if dense else rng.uniform(0.0, 0.002))
        loose[near[rng.random(near.size) < 0.7]] = True
        members.append(np.flatnonzero(loose))
    members.sort(key=len)  # smallest first, as a query's buckets are
    postings = np.concatenate(members).astype(np.uint32)
    offsets = np.concatenate([[0], np.cumsum([len(x) for x in members])]).astype(np.uint64)
    counts, docs, found = np.zeros(n, np.uint8), np.empty(postings.size, np.int64), np.empty(postings.size, np.int64)
    exclude = int(near[0])
    k = query._c_counted(offsets, 8, postings, np.arange(nb, dtype=np.int64), need, left_out, exclude, counts, docs,
                         found)
    total = np.bincount(postings, minlength=n)
    want = np.flatnonzero(total >= need)
    want = want[want != exclude]
    order = np.lexsort((want, -total[want]))
    assert docs[:k].tolist() == want[order].tolist() and found[:k].tolist() == total[want[order]].tolist()
    assert not counts.any()


@needs_c_candidates
@pytest.mark.parametrize("need", [1, 6, 127, 128, 129, 200, 255])
def test_the_count_from_postings_finds_every_count_reaching_need_whatever_its_size(need):
    # The C sweep judges eight counts at once where 1 <= need <= 128 and one at a time otherwise:
    # counts of 0 to 255 in 255 buckets, over 21 documents (two words of eight and a tail).
    rng = np.random.default_rng(need)
    n, nb = 21, 255
    member = rng.random((nb, n)) < np.linspace(0.0, 1.0, n)  # document d in about d/20 of the buckets
    member[:, n - 1] = True  # and one in all 255
    postings = np.concatenate([np.flatnonzero(row) for row in member]).astype(np.uint32)
    offsets = np.concatenate([[0], np.cumsum(member.sum(axis=1))]).astype(np.uint64)
    counts, docs, found = np.zeros(n, np.uint8), np.empty(postings.size, np.int64), np.empty(postings.size, np.int64)
    k = query._c_counted(offsets, 8, postings, np.arange(nb, dtype=np.int64), need, 0, 3, counts, docs, found)
    total = member.sum(axis=0)
    want = sorted((-int(total[d]), d) for d in range(n) if total[d] >= need and d != 3)
    assert list(zip((-found[:k]).tolist(), docs[:k].tolist())) == want
    assert not counts.any()
