"""Signing speed on one core: simweb vs datasketch and rensa, from the same token lists (Section 6.2).

    python -m benchmarks.signatures [--docs 20000] [--tokens 100] [--repeat 3]
                                    [--weighted-bags 20000] [--crawl DIR] [--skip-sets]

Every figure is measured in this run, on one pinned core (OMP/RAYON threads = 1), best of
``--repeat`` rounds that each run every row once (interleaved, so load from other processes
falls on all rows alike). Inputs: ``--docs`` token lists of ``--tokens`` tokens drawn from a
Zipf(1.1) vocabulary of 50,000 words (repeats within a list count once: sets).

Rows:
* datasketch MinHash.bulk with its defaults (num_perm = 128) — the issue's 20× baseline — and
  at num_perm = 80;
* rensa RMinHash at m = 80: its bulk matrix API (its fastest) and one object per document;
* the Arrow conversion of the Python lists alone, without signing: a bound on every path that
  starts from Python lists in pure Python/numpy (each token must become a hashed object);
* simweb at m = 80, OPH (sets):
  - ``sign_bags`` on the Python lists (the Python API: pure-Python dictionary encoding);
  - from the Python lists converted to Arrow inside the timing, then dictionary-encoded;
  - from the Arrow list column, dictionary-encoded (what the signatures stage does today);
  - from a Parquet file of the lists read with the terms as a dictionary column (the read
    included): Parquet already stores the terms dictionary-encoded, so no term is hashed or
    encoded twice;
* simweb ICWS (weighted, the index's default) from the same lists with weights 1;
* weighted: simweb ICWS and DartMinHash vs datasketch WeightedMinHashGenerator (sample_size =
  80, dense vectors over the subset's vocabulary) on a subset, with random real weights;
* weighted samplers, same bags, same rounds: ICWS, DartMinHash in C and its numpy twin (the
  fallback without a compiler), each through ``sign`` as the signatures stage calls it, on
  ``--weighted-bags`` bags of 100 terms weighted as the bags stage weights them (distance
  log2(32/(1+d)) summed over a term's occurrences, times NMDF fitted to the collection's df,
  normalised to 1.0), and with ``--crawl`` on the real bags of an ingested crawl (the default
  strategy, e.g. DebDocs); every round's rate is printed, and the DartMinHash / ICWS ratio of
  each round.

Every simweb row signs with the same code (simweb.core.minhash.sign); the rows differ only in how
the token lists reach it.
"""
from __future__ import annotations

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("RAYON_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402


def pin_one_core() -> str:
    try:
        cpu = min(os.sched_getaffinity(0))
        os.sched_setaffinity(0, {cpu})
        return f"pinned to CPU {cpu}"
    except (AttributeError, OSError):
        return "not pinned (no sched_setaffinity)"


def token_lists(n_docs: int, n_tokens: int, vocab: int = 50_000, seed: int = 0) -> list[list[str]]:
    rng = np.random.default_rng(seed)
    words = [f"w{i}" for i in range(vocab)]
    ranks = rng.zipf(1.1, size=n_docs * n_tokens * 3)
    ranks = ranks[ranks <= vocab][: n_docs * n_tokens] - 1
    return [[words[i] for i in ranks[k * n_tokens:(k + 1) * n_tokens]] for k in range(n_docs)]


def weighted_bags(n_docs: int, n_terms: int, vocab: int = 50_000, seed: int = 2):
    """Bags of ``n_terms`` distinct Zipf(1.1) terms weighted like the bags stage's: each term
    occurs Geometric(1/2) times at distance d (0 for anchor words, a third of them, else 1..30,
    the window words of positive weight), tf = Σ log2(32/(1+d)), times NMDF fitted to the bags'
    own df, normalised to 1.0.
    Returns (codes, offsets, hashes, weights) for :func:`simweb.core.minhash.sign`."""
    from simweb.core.minhash import term_hashes
    from simweb.core.weighting import distance_weights, fit_nmdf, nmdf_factor, normalise_rows

    rng = np.random.default_rng(seed)
    cdf = np.cumsum(np.arange(1, vocab + 1, dtype=np.float64) ** -1.1)
    cdf /= cdf[-1]
    rows = []
    for _ in range(n_docs):
        drawn = np.unique(np.searchsorted(cdf, rng.random(6 * n_terms)))
        rows.append(rng.permutation(drawn)[:n_terms])
    codes = np.concatenate(rows).astype(np.int64)
    offsets = np.concatenate([[0], np.cumsum([r.size for r in rows])]).astype(np.int64)
    occurrences = rng.geometric(0.5, codes.size)
    d = np.where(rng.random(occurrences.sum()) < 1 / 3, 0, rng.integers(1, 31, occurrences.sum()))
    tf = np.add.reduceat(distance_weights(d), np.concatenate([[0], np.cumsum(occurrences)[:-1]]))
    df = np.bincount(codes, minlength=vocab)
    weights = tf * nmdf_factor(df[codes], *fit_nmdf(df))
    keep = weights > 0
    row = np.repeat(np.arange(n_docs), np.diff(offsets))[keep]
    codes, weights = codes[keep], weights[keep]
    offsets = np.concatenate([[0], np.cumsum(np.bincount(row, minlength=n_docs))]).astype(np.int64)
    weights, _ = normalise_rows(offsets, weights, 1.0)
    return codes, offsets, term_hashes([f"w{i}" for i in range(vocab)]), weights


def crawl_bags(crawl: str):
    """The default strategy's bags of an ingested crawl (simweb ingest … --out DIR), as sign() takes them."""
    from simweb.core.minhash import term_hashes
    from simweb.core.strategy import Strategy
    from simweb.tasks.crawl.corpus import load_corpus

    matrix = load_corpus(crawl).bags(Strategy())
    csr = matrix.csr.tocsr()
    csr.sort_indices()
    return (csr.indices.astype(np.int64), csr.indptr.astype(np.int64), term_hashes(matrix.vocabulary),
            csr.data.astype(np.float64))


def compare_weighted(label: str, bags, repeat: int, numpy_share: int = 10) -> None:
    """ICWS, DartMinHash (C) and its numpy twin on the same bags, interleaved rounds; per row every
    round's bags per CPU second of this process (the core it is pinned to: other processes'
    time on that core is not counted, their cache traffic is) and the best wall-clock rate, and
    the DartMinHash / ICWS ratio of each round."""
    from simweb.core import dartminhash
    from simweb.core.minhash import MinHashParams, sign

    codes, offsets, hashes, weights = bags
    n = offsets.size - 1

    def first(k: int):
        return codes[:offsets[k]], offsets[:k + 1], hashes, weights[:offsets[k]]

    def numpy_twin(k: int):
        c, o, h, w = first(k)
        out = np.empty((k, 80), np.uint32)
        dartminhash.sign_darts_numpy(c, o, h, w, 80, 1, out)

    few = max(1, n // numpy_share)
    cases = [("ICWS (numpy)", lambda: sign(*bags, MinHashParams(algorithm="icws")), n),
             ("DartMinHash, C", lambda: sign(*bags, MinHashParams(algorithm="dart")), n),
             ("DartMinHash, numpy twin", lambda: numpy_twin(few), few)]
    if dartminhash._c_sign is None:
        cases.pop(1)
        print("  (simweb.core._dart is not built: DartMinHash runs as its numpy twin)")
    rates: dict[str, list[float]] = {name: [] for name, _, _ in cases}
    wall: dict[str, float] = {name: 0.0 for name, _, _ in cases}
    for _ in range(repeat):
        for name, fn, count in cases:
            cpu, clock = time.process_time(), time.perf_counter()
            fn()
            cpu, clock = time.process_time() - cpu, time.perf_counter() - clock
            rates[name].append(count / cpu)
            wall[name] = max(wall[name], count / clock)
    print(f"{label}: {n:,} bags, {codes.size / n:.0f} terms per bag on average, m = 80; "
          "bags per CPU second, best and every round, and the best wall-clock rate:")
    for name, values in rates.items():
        runs = " ".join(f"{v:,.0f}" for v in sorted(values, reverse=True))
        print(f"  {name:<26} {max(values):>9,.0f}/s  rounds: {runs}   (wall: {wall[name]:,.0f}/s)")
    if "DartMinHash, C" in rates:
        ratios = [d / i for d, i in zip(rates["DartMinHash, C"], rates["ICWS (numpy)"])]
        print(f"  DartMinHash (C) / ICWS: {min(ratios):.1f}× to {max(ratios):.1f}× over {repeat} rounds")


def best_of(repeat: int, fn) -> float:
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best


def simweb_from_arrow(arr, params):
    import pyarrow.compute as pc

    from simweb.core.minhash import sign, term_hashes

    enc = pc.dictionary_encode(arr.values)
    offsets = arr.offsets.to_numpy()
    codes = enc.indices.to_numpy()
    # A token repeated in a list (weight 1 each time) yields the same minimum as one copy, in
    # both algorithms, so the lists are signed as sets without deduplicating them first.
    return sign(codes, offsets, term_hashes(enc.dictionary.to_pylist(), params.hash_family), None, params)


def simweb_from_parquet(path: str, params):
    """Read a Parquet file of token lists with the terms as a dictionary column and sign it."""
    import pyarrow.parquet as pq

    from simweb.core.minhash import sign, term_hashes

    column = pq.read_table(path, columns=["terms"], read_dictionary=["terms.list.element"]).column("terms")
    out = []
    for chunk in column.chunks:  # one dictionary per chunk (row group)
        values = chunk.values
        out.append(sign(values.indices.to_numpy(), chunk.offsets.to_numpy(),
                        term_hashes(values.dictionary.to_pylist(), params.hash_family), None, params).values)
    return np.concatenate(out)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--docs", type=int, default=20_000)
    ap.add_argument("--tokens", type=int, default=100)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--weighted-docs", type=int, default=200)
    ap.add_argument("--weighted-bags", type=int, default=20_000)
    ap.add_argument("--crawl", help="an ingested crawl (simweb ingest … --out DIR) whose real bags to sign too")
    ap.add_argument("--skip-sets", action="store_true", help="only the weighted samplers")
    args = ap.parse_args(argv)
    if args.skip_sets:
        print(f"weighted signatures benchmark, {pin_one_core()}, {args.repeat} interleaved rounds")
        weighted_rows(args)
        return

    import pyarrow as pa
    import pyarrow.parquet as pq
    import rensa
    from datasketch import MinHash, WeightedMinHashGenerator

    from simweb.core.minhash import MinHashParams, sign_bags

    print(f"signatures benchmark: {args.docs} token lists × {args.tokens} tokens, {pin_one_core()}, "
          f"best of {args.repeat} interleaved rounds")
    docs = token_lists(args.docs, args.tokens)
    docs_bytes = [[t.encode() for t in d] for d in docs]
    n = len(docs)
    sub = max(1, min(n, 4000))
    few = min(n, 2000)
    oph = MinHashParams(m=80, algorithm="oph")
    icws = MinHashParams(m=80, algorithm="icws")
    list_type = pa.list_(pa.string())
    arr = pa.array(docs, type=list_type)
    arr_few = pa.array(docs[:few], type=list_type)

    def rensa_objects():
        for d in docs:
            mh = rensa.RMinHash(80, 42)
            mh.update(d)
            mh.digest()

    tmp = tempfile.TemporaryDirectory()
    path = os.path.join(tmp.name, "bags.parquet")
    pq.write_table(pa.table({"terms": arr}), path)
    assert (simweb_from_parquet(path, oph) == sign_bags(docs, oph).values).all(), \
        "every input path must give the same signatures"
    # (label, function, bags per call). Every round runs every row once, so a burst of load from
    # other processes on the machine does not land on one row only; each row keeps its best.
    cases = [
        ("datasketch MinHash.bulk, defaults (num_perm=128)", lambda: MinHash.bulk(docs_bytes[:sub]), sub),
        ("datasketch MinHash.bulk, num_perm=80", lambda: MinHash.bulk(docs_bytes[:sub], num_perm=80), sub),
        ("rensa RMinHash.digest_matrix_from_token_sets, m=80",
         lambda: rensa.RMinHash.digest_matrix_from_token_sets(docs, 80, 42), n),
        ("rensa RMinHash per document (update + digest), m=80", rensa_objects, n),
        # What any Python-list path pays before signing: every token becomes an Arrow string.
        ("(no signing) pa.array of the Python lists alone", lambda: pa.array(docs, type=list_type), n),
        ("simweb OPH, sign_bags on the Python lists", lambda: sign_bags(docs, oph), n),
        ("simweb OPH from Python lists (Arrow conversion included)",
         lambda: simweb_from_arrow(pa.array(docs, type=list_type), oph), n),
        ("simweb OPH from the Arrow column (dictionary-encoded)", lambda: simweb_from_arrow(arr, oph), n),
        ("simweb OPH from Parquet, terms read as dictionary", lambda: simweb_from_parquet(path, oph), n),
        ("simweb ICWS (weighted algorithm, weights 1) from Arrow", lambda: simweb_from_arrow(arr_few, icws), few),
    ]
    best = {label: float("inf") for label, _, _ in cases}
    for _ in range(args.repeat):
        for label, fn, _ in cases:
            best[label] = min(best[label], best_of(1, fn))
    tmp.cleanup()
    rows = {label: count / best[label] for label, _, count in cases}
    for label in rows:
        print(f"  {label:<58} {rows[label]:>12,.0f} bags/s")

    base = rows["datasketch MinHash.bulk, defaults (num_perm=128)"]
    rensa_best = max(rows["rensa RMinHash.digest_matrix_from_token_sets, m=80"],
                     rows["rensa RMinHash per document (update + digest), m=80"])
    print("ratios (target: ≥ 20× datasketch defaults, ≥ 1.0× rensa's fastest):")
    for label in rows:
        if not label.startswith(("datasketch", "rensa")):
            print(f"  {label:<58} {rows[label] / base:7.1f}× datasketch   {rows[label] / rensa_best:5.2f}× rensa")

    # Weighted: real weights; the peer takes dense vectors over the subset's vocabulary.
    rng = np.random.default_rng(1)
    wdocs = [{t: float(w) for t, w in zip(d, rng.lognormal(size=len(d)))} for d in docs[:args.weighted_docs]]
    vocab = sorted({t for d in wdocs for t in d})
    col = {t: i for i, t in enumerate(vocab)}
    dense = np.zeros((len(wdocs), len(vocab)))
    for i, d in enumerate(wdocs):
        for t, w in d.items():
            dense[i, col[t]] = w
    gen = WeightedMinHashGenerator(len(vocab), sample_size=80, seed=1)
    dart = MinHashParams(m=80, algorithm="dart")
    peer_s = icws_s = dart_s = float("inf")
    for _ in range(args.repeat):
        peer_s = min(peer_s, best_of(1, lambda: [gen.minhash(v) for v in dense]))
        icws_s = min(icws_s, best_of(1, lambda: sign_bags(wdocs, icws)))
        dart_s = min(dart_s, best_of(1, lambda: sign_bags(wdocs, dart)))
    peer = len(wdocs) / peer_s
    print(f"weighted ({len(wdocs)} bags, real weights, dim {len(vocab)}):")
    print(f"  {'datasketch WeightedMinHashGenerator (sample_size=80)':<58} {peer:>12,.0f} bags/s")
    for name, secs in (("ICWS", icws_s), ("DartMinHash", dart_s)):
        ours = len(wdocs) / secs
        print(f"  {f'simweb {name} (sign_bags, dict input)':<58} {ours:>12,.0f} bags/s   {ours / peer:6.1f}× datasketch")
    weighted_rows(args)


def weighted_rows(args) -> None:
    compare_weighted("weighted samplers on 100-term bags (distance × NMDF, normalised)",
                     weighted_bags(args.weighted_bags, 100), args.repeat)
    if args.crawl:
        compare_weighted(f"weighted samplers on the real bags of {args.crawl} (default strategy)",
                         crawl_bags(args.crawl), args.repeat)


if __name__ == "__main__":
    main()
