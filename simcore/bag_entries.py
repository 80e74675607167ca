"""Bag entries (row, column, weight) on flat arrays: gathered from runs of word codes, and equal
(URL, term) pairs summed — the merge step of paper Section 6.1. Each has a C twin in simcore/_gather.c
where it is built."""
from __future__ import annotations

import numpy as np

try:
    from simweb.core._gather import runs as _c_runs
except ImportError:  # pragma: no cover - depends on the build
    _c_runs = None


def _runs(starts: np.ndarray, lengths: np.ndarray, step: int) -> tuple[np.ndarray, np.ndarray]:
    """(run, position) of every element of the runs ``starts[r] + j * step`` for ``j < lengths[r]``,
    run by run (a negative length is an empty run)."""
    lengths = np.maximum(lengths, 0)
    ends = np.cumsum(lengths)
    run = np.repeat(np.arange(lengths.size, dtype=np.int64), lengths)
    position = np.arange(int(ends[-1]) if ends.size else 0, dtype=np.int64)
    position -= np.repeat(ends - lengths, lengths)
    if step != 1:
        position *= step
    position += starts[run]
    return run, position


def _gather_runs_numpy(values: np.ndarray, starts: np.ndarray, lengths: np.ndarray, step: int, run_rows: np.ndarray,
                       weights: np.ndarray, mapping: np.ndarray | None, rows: np.ndarray, cols: np.ndarray,
                       out_weights: np.ndarray, at: int) -> int:
    """:func:`gather_runs` in numpy: the reference for simcore/_gather.c."""
    lengths = np.maximum(lengths, 0)
    full = lengths > 0
    first, last = starts[full], starts[full] + (lengths[full] - 1) * step
    if full.any() and (min(first.min(), last.min()) < 0 or max(first.max(), last.max()) >= values.size):
        raise ValueError("gather runs: a run reaches outside values")
    if weights.size > 1 and lengths.max(initial=0) >= weights.size:
        raise ValueError("gather runs: a run is longer than the weight table")
    run, position = _runs(starts, lengths, step)
    col = values[position]
    j = (position - starts[run]) * step
    if mapping is not None:
        if col.size and (col.min() < 0 or col.max() >= mapping.size):
            raise ValueError("gather runs: a value outside mapping")
        col = mapping[col]
        kept = col >= 0
        run, col, j = run[kept], col[kept], j[kept]
    if col.size > rows.size - at:
        raise ValueError("gather runs: more entries than the outputs hold")
    end = at + col.size
    rows[at:end], cols[at:end] = run_rows[run], col
    out_weights[at:end] = weights[j + 1] if weights.size > 1 else weights[0]
    return end


def gather_runs(values: np.ndarray, starts: np.ndarray, lengths: np.ndarray, step: int, run_rows: np.ndarray,
                weights: np.ndarray, mapping: np.ndarray | None, rows: np.ndarray, cols: np.ndarray,
                out_weights: np.ndarray, at: int) -> int:
    """Write the entries of runs of ``values`` into ``rows``, ``cols``, ``out_weights`` from
    index ``at`` on, and return the index after the last: run r reads ``lengths[r]`` values
    from ``starts[r]`` on, a ``step`` of +1 or −1 apart, each an entry of row ``run_rows[r]``
    and column the value (mapped through ``mapping`` when given, a value mapped below zero
    left out); its j-th element weighs ``weights[j + 1]``, or ``weights[0]`` when ``weights``
    holds one weight.

    One pass of C over the runs (simcore/_gather.c) where it is built, else numpy with the
    same entries in the same order. On a links part of the 100k scale crawl the numpy gathers
    and repeats over each slice's millions of entries were most of the bag fragments' time."""
    args = [np.ascontiguousarray(a, dtype=np.int64) for a in (values, starts, lengths)]
    run_rows = np.ascontiguousarray(run_rows, dtype=np.int64)
    weights = np.ascontiguousarray(weights, dtype=np.float64)
    mapping = None if mapping is None else np.ascontiguousarray(mapping, dtype=np.int64)
    for name, out, dtype in (("rows", rows, np.int64), ("cols", cols, np.int64), ("out_weights", out_weights, np.float64)):
        if out.dtype != dtype or not out.flags.c_contiguous or out.size != rows.size:
            raise ValueError(f"gather runs: {name} must be contiguous {np.dtype(dtype)} of one length with rows")
    if _c_runs is None:
        return _gather_runs_numpy(*args, step, run_rows, weights, mapping, rows, cols, out_weights, at)
    return _c_runs(*args, step, run_rows, weights, mapping, rows, cols, out_weights, at)


def merge_entries(url_ids: np.ndarray, term_codes: np.ndarray, weights: np.ndarray
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Sum the weights of equal (URL id, term) pairs: the merge step of Section 6.1 on flat arrays.

    Returns (url_ids, term_codes, weights) sorted by URL id then term code, each pair once,
    zero sums dropped. Order and grouping of the input do not matter beyond float rounding;
    equal pairs are summed in input order (a stable sort).

    The two keys are sorted as one: the URL ids' dense rank (or the ids themselves when they
    are small, e.g. ranks already) times the number of term codes, plus the code — one stable
    argsort of int64 (timsort, fast on the sorted runs fragments come in), five times faster
    than np.lexsort of the two keys on 5 million rows (0.26 s against 1.2 s).
    """
    url_ids = np.asarray(url_ids, dtype=np.uint64)
    term_codes = np.asarray(term_codes, dtype=np.int64)
    weights = np.asarray(weights, dtype=np.float64)
    if not (url_ids.size == term_codes.size == weights.size):
        raise ValueError(f"merge: expected equal lengths, got {url_ids.size}, {term_codes.size}, {weights.size}")
    if url_ids.size == 0:
        return url_ids, term_codes, weights
    if term_codes.min() < 0:
        raise ValueError(f"merge: expected term codes ≥ 0, found {term_codes.min()}")
    width = int(term_codes.max()) + 1
    if int(url_ids.max()) < (1 << 62) // width:
        key = url_ids.astype(np.int64) * width + term_codes
    else:
        _, rank = np.unique(url_ids, return_inverse=True)
        key = rank.astype(np.int64).ravel() * width + term_codes
    order = np.argsort(key, kind="stable")
    key = key[order]
    starts = np.flatnonzero(np.concatenate(([True], key[1:] != key[:-1])))
    sums = np.add.reduceat(weights[order], starts)
    keep = sums != 0
    first = order[starts][keep]
    return url_ids[first], term_codes[first], sums[keep]
