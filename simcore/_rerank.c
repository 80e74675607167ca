/* The exact re-rank of a query's candidates: the fast path of simcore/rerank.py (exact_scores).
 *
 * scores(q_terms, q_weights, q_sum, offsets, terms, weights, sums, docs, jaccard, overlap) -> None
 *
 * q_terms     uint32: the query bag's term ids, strictly rising.
 * q_weights   float32: their weights (one per term); q_sum: their sum (float64, the query's
 *             entry of sums).
 * offsets     uint64, n_docs + 1 rising: document d's terms are entries offsets[d] .. offsets[d + 1] - 1
 *             of terms and weights (the index's bags.offsets.u64).
 * terms       uint32: every document's term ids, strictly rising within a document (bags.terms.u32).
 * weights     float32: their weights (bags.weights.f32).
 * sums        float64, one per document: the sum of its weights in term order (bags.sums.f64).
 * docs        int64: the candidates, each in 0 .. n_docs - 1.
 * jaccard, overlap   float64, one per candidate, written: the weighted Jaccard Σmin / Σmax of the
 *             query's bag and the candidate's (Section 4; 0 when both are empty) and Σmin.
 *
 * Σmax = Σq + Σc − Σmin, so only the shared terms are needed. The query's terms go once into a
 * small open-addressing hash table (twice their number of slots, a power of two: in a core's
 * cache) behind a bitmap of 16 bits a slot, and each candidate's terms are looked up in it
 * (most are not the query's, and the bitmap turns them away in one read); a candidate over eight times longer
 * than the query is searched instead, by a galloping search for each of the query's terms (a
 * candidate of thousands of terms then costs the query's terms times a logarithm). Either way
 * Σmin adds the shared terms' minima in term order, in float64. The arrays are read where they lie (a memory-mapped index: no copy). A
 * document outside offsets, offsets outside terms, or arrays of other sizes raise ValueError
 * before anything is written. The numpy code of simcore/rerank.py (_scores_numpy) is the
 * reference the tests compare with.
 *
 * agreements(h, sig, docs, docs_itemsize, counts) -> None
 *
 * The step before the re-rank, PROCESSQUERY's count of each candidate (simcore/query.py,
 * _process_one): how many of the m min-hash positions of the candidate's row of H equal the
 * query's.
 *
 * h       uint32, n_docs × m row-major (the index's H.u32, read where it lies).
 * sig     uint32, m: the query's signature row.
 * docs    uint32 or int64 (docs_itemsize 4 or 8): the candidates, each in 0 .. n_docs - 1.
 * counts  int64, one per candidate, written.
 *
 * Without it numpy gathers the candidates' rows, compares and sums (three arrays of the
 * candidates times m); here each row is read once where it lies. A candidate outside H raises
 * ValueError before anything is written. The numpy expression (h[docs] == sig).sum(axis=1) is
 * the reference the tests compare with.
 *
 * candidates(offsets, offsets_itemsize, postings, buckets, h, sig, need, exclude, seen, out_docs,
 *            out_counts) -> n
 *
 * PROCESSQUERY's candidates and counts for one query in one pass (simcore/query.py,
 * _process_one): the documents of the given buckets of I, each once, with their agreement count
 * as above, those with a count of at least `need` and other than `exclude` written in the order
 * first met.
 *
 * offsets   uint32 or uint64 (offsets_itemsize 4 or 8): I's bucket offsets (I.offsets.*).
 * postings  uint32: I's documents (I.docs.u32), each in 0 .. n_docs - 1.
 * buckets   int64: the buckets to read (the query's buckets the pigeonhole bound keeps).
 * h, sig    as for agreements.
 * seen      uint8, n_docs, all zero: marks of the documents met; zero again on return.
 * out_docs, out_counts   int64, each at least as long as the buckets' postings together.
 *
 * Without it numpy gathers the postings, sorts them to drop repeats and then counts (five
 * arrays of the postings' length and a sort); here each posting is read once and each
 * candidate's row once. A bucket outside I, a posting outside H or an output too short raise
 * ValueError with `seen` left zero. The GIL is let go while the postings and rows are read: `seen`
 * must be the calling thread's own. The numpy path of _process_one is the reference the tests
 * compare with.
 *
 * counted(offsets, offsets_itemsize, postings, buckets, need, left_out, exclude, counts, out_docs, out_counts) -> n
 *
 * PROCESSQUERY as Figure 11 counts (simcore/query.py, count_candidates): each document's postings in
 * the given buckets counted, those with a count of at least `need` and other than `exclude`
 * written by count descending, ids rising within a count. The last `left_out` buckets (fewer
 * than need; the query's largest) are not swept: a document whose count in the others reaches
 * need − left_out is looked for in each of them by a galloping search from where the last one
 * was found, so a bucket of a million postings costs a search per such document, not a read of
 * each posting. Read from every bucket of the query,
 * the counts are the agreements candidates() reads from H, without reading H: a posting is a read
 * of 4 bytes in order and an increment, where a candidate's row of H is a read of 4·m bytes far
 * from the last. The buckets are swept COUNT_BLOCK documents at a time (their postings rise), so
 * the increments land in a block of counts a core's cache holds.
 *
 * counts    uint8, n_docs, all zero: each document's count so far (so at most 255 buckets);
 *           zero again on return.
 * offsets, postings, buckets, out_docs, out_counts   as for candidates (postings each < n_docs,
 *           rising within a bucket as I holds them).
 *
 * Errors as candidates', `counts` left zero; the GIL is let go while the postings are read, so
 * `counts` must be the calling thread's own.
 *
 * fine_agreements(h2, sig, docs, matches, defined) -> None
 *
 * The fine estimate's counts for each candidate (simcore/fine.py): of the m2 one-byte codes of
 * the candidate's row of H2 and of the query's, how many are equal and not 0 (an agreement), and
 * how many are not 0 in both (a label either bag has a dart for).
 *
 * h2        uint8, n_docs × m2 row-major (the index's H2.u8, read where it lies).
 * sig       uint8, m2: the query's row.
 * docs      int64: the candidates, each in 0 .. n_docs - 1.
 * matches, defined   int64, one per candidate, written.
 *
 * A candidate outside H2 raises ValueError before anything is written; the GIL is let go. The
 * numpy expressions of simcore/fine.py are the reference the tests compare with.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

static int
sized(const Py_buffer *b, Py_ssize_t item, const char *name)
{
    if (b->len % item != 0) {
        PyErr_Format(PyExc_ValueError, "%s: expected items of %zd bytes, got %zd bytes", name, item, b->len);
        return 0;
    }
    return 1;
}

/* The first index i in [from, n) with list[i] >= t (n if none): exponential steps from
 * `from`, then a binary search in the last step. */
static Py_ssize_t
gallop(const uint32_t *list, Py_ssize_t from, Py_ssize_t n, uint32_t t)
{
    Py_ssize_t step = 1, lo = from, hi = from;
    while (hi < n && list[hi] < t) {
        lo = hi + 1;
        hi += step;
        step <<= 1;
    }
    if (hi > n)
        hi = n;
    while (lo < hi) {
        Py_ssize_t mid = lo + (hi - lo) / 2;
        if (list[mid] < t)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

#define NO_TERM 0xFFFFFFFFu /* no term id: ids are below 2^32 - 1 */

/* The query's terms by id: slots of (term id, place in the query), linear probing; and a
 * bitmap of 16 bits a slot (about 32 a term), one set per term, that most terms of a candidate (those the query
 * lacks) are turned away by, in one read of a word that stays in the cache. */
typedef struct {
    uint32_t *keys;
    int32_t *at;
    uint64_t *bits;
    uint32_t mask, bit_mask;
    int shift;
} Table;

static inline uint32_t
slot_of(const Table *t, uint32_t term)
{
    return (uint32_t)((term * 2654435761u) >> t->shift) & t->mask;
}

static inline uint32_t
bit_of(const Table *t, uint32_t term)
{
    return (term * 0x9E3779B1u + (term >> 16)) & t->bit_mask;
}

static void
table_free(Table *t)
{
    PyMem_Free(t->keys);
    PyMem_Free(t->at);
    PyMem_Free(t->bits);
    t->keys = NULL;
    t->at = NULL;
    t->bits = NULL;
}

static int
table_fill(Table *t, const uint32_t *terms, Py_ssize_t n)
{
    int bits = 4;
    while (((Py_ssize_t)1 << bits) < 2 * n)
        bits++;
    const size_t size = (size_t)1 << bits, words = size / 4 < 1 ? 1 : size / 4; /* 16 bits a slot */
    t->keys = PyMem_Malloc(size * sizeof(uint32_t));
    t->at = PyMem_Malloc(size * sizeof(int32_t));
    t->bits = PyMem_Calloc(words, sizeof(uint64_t));
    if (t->keys == NULL || t->at == NULL || t->bits == NULL) {
        table_free(t);
        return 0;
    }
    memset(t->keys, 0xFF, size * sizeof(uint32_t));
    t->mask = (uint32_t)(size - 1);
    t->bit_mask = (uint32_t)(words * 64 - 1);
    t->shift = 32 - bits;
    for (Py_ssize_t i = 0; i < n; i++) {
        const uint32_t b = bit_of(t, terms[i]);
        t->bits[b >> 6] |= (uint64_t)1 << (b & 63);
        uint32_t s = slot_of(t, terms[i]);
        while (t->keys[s] != NO_TERM)
            s = (s + 1) & t->mask;
        t->keys[s] = terms[i];
        t->at[s] = (int32_t)i;
    }
    return 1;
}

/* The query's place of `term`, or -1. */
static inline int32_t
table_find(const Table *t, uint32_t term)
{
    uint32_t s = slot_of(t, term);
    for (;;) {
        const uint32_t k = t->keys[s];
        if (k == term)
            return t->at[s];
        if (k == NO_TERM)
            return -1;
        s = (s + 1) & t->mask;
    }
}

/* Σmin of the query's terms (q, wq: nq of them, also in `table`) and a candidate's (c, wc: nc). */
static double
shared_min(const Table *table, const uint32_t *q, const float *wq, Py_ssize_t nq, const uint32_t *c,
           const float *wc, Py_ssize_t nc)
{
    double inter = 0.0;
    if (nq == 0 || nc == 0)
        return 0.0;
    if (nc > 8 * nq) {
        Py_ssize_t at = 0;
        for (Py_ssize_t i = 0; i < nq && at < nc; i++) {
            at = gallop(c, at, nc, q[i]);
            if (at < nc && c[at] == q[i]) {
                const double x = (double)wq[i], y = (double)wc[at];
                inter += x < y ? x : y;
                at++;
            }
        }
        return inter;
    }
    /* The bitmap's answers for 64 terms at a time go into one word without a branch, and only
     * the terms it lets through are looked up: a similar page shares about half its terms, and a
     * branch on each answer would be mispredicted as often as not. */
    for (Py_ssize_t j0 = 0; j0 < nc; j0 += 64) {
        const Py_ssize_t len = nc - j0 < 64 ? nc - j0 : 64;
        uint64_t hits = 0;
        for (Py_ssize_t k = 0; k < len; k++) {
            const uint32_t b = bit_of(table, c[j0 + k]);
            hits |= ((table->bits[b >> 6] >> (b & 63)) & 1) << k;
        }
        while (hits) {
            const Py_ssize_t j = j0 + __builtin_ctzll(hits);
            hits &= hits - 1;
            const int32_t i = table_find(table, c[j]);
            if (i >= 0) {
                const double x = (double)wq[i], y = (double)wc[j];
                inter += x < y ? x : y;
            }
        }
    }
    return inter;
}

static PyObject *
scores(PyObject *self, PyObject *args)
{
    Py_buffer qt = {0}, qw = {0}, off = {0}, tm = {0}, wt = {0}, sm = {0}, dc = {0}, jac = {0}, ovl = {0};
    double sum_q;
    if (!PyArg_ParseTuple(args, "y*y*dy*y*y*y*y*w*w*:scores", &qt, &qw, &sum_q, &off, &tm, &wt, &sm, &dc, &jac,
                          &ovl))
        return NULL;
    PyObject *result = NULL;
    Table table = {NULL, NULL, NULL, 0, 0, 0};
    if (!sized(&qt, 4, "q_terms") || !sized(&qw, 4, "q_weights") || !sized(&off, 8, "offsets") ||
        !sized(&tm, 4, "terms") || !sized(&wt, 4, "weights") || !sized(&sm, 8, "sums") || !sized(&dc, 8, "docs") ||
        !sized(&jac, 8, "jaccard") || !sized(&ovl, 8, "overlap"))
        goto done;
    const Py_ssize_t nq = qt.len / 4, n_off = off.len / 8, n_terms = tm.len / 4, n = dc.len / 8;
    const uint32_t *q_terms = qt.buf, *terms = tm.buf;
    const float *q_weights = qw.buf, *weights = wt.buf;
    const uint64_t *offsets = off.buf;
    const double *sums = sm.buf;
    const int64_t *docs = dc.buf;
    double *out_j = jac.buf, *out_o = ovl.buf;
    if (qw.len / 4 != nq || wt.len / 4 != n_terms || jac.len / 8 != n || ovl.len / 8 != n || n_off < 1 ||
        sm.len / 8 != n_off - 1) {
        PyErr_SetString(PyExc_ValueError, "scores: expected one weight per term, one offset more than documents, "
                                          "one sum per document and one output per candidate");
        goto done;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        int64_t d = docs[i];
        if (d < 0 || d >= n_off - 1 || offsets[d] > offsets[d + 1] || offsets[d + 1] > (uint64_t)n_terms) {
            PyErr_Format(PyExc_ValueError, "scores: candidate %lld is not a document of the bags (0 .. %zd) "
                                           "or its offsets lie outside the terms", (long long)d, n_off - 2);
            goto done;
        }
    }
    for (Py_ssize_t a = 0; a < nq; a++) {
        if (q_terms[a] == NO_TERM || (a > 0 && q_terms[a] <= q_terms[a - 1])) {
            PyErr_SetString(PyExc_ValueError, "scores: expected the query's term ids strictly rising, below 2^32 - 1");
            goto done;
        }
    }
    if (nq > INT32_MAX / 4 || !table_fill(&table, q_terms, nq)) {
        PyErr_NoMemory();
        goto done;
    }
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0; i < n; i++) {
        const uint64_t lo = offsets[docs[i]], hi = offsets[docs[i] + 1];
        const double inter = shared_min(&table, q_terms, q_weights, nq, terms + lo, weights + lo,
                                        (Py_ssize_t)(hi - lo));
        const double uni = sum_q + sums[docs[i]] - inter;
        out_o[i] = inter;
        out_j[i] = uni > 0.0 ? inter / uni : 0.0;
    }
    Py_END_ALLOW_THREADS
    result = Py_None;
    Py_INCREF(result);
done:
    table_free(&table);
    PyBuffer_Release(&qt);
    PyBuffer_Release(&qw);
    PyBuffer_Release(&off);
    PyBuffer_Release(&tm);
    PyBuffer_Release(&wt);
    PyBuffer_Release(&sm);
    PyBuffer_Release(&dc);
    PyBuffer_Release(&jac);
    PyBuffer_Release(&ovl);
    return result;
}

#define AHEAD 8 /* rows of H asked for ahead of the one counted */

/* Ask for H's row d (m positions) ahead of its use: the rows lie far apart. */
static inline void
prefetch_row(const uint32_t *h, int64_t d, Py_ssize_t m)
{
    const uint32_t *row = h + d * m;
    for (Py_ssize_t j = 0; j < m; j += 16)
        __builtin_prefetch(row + j);
}

/* The agreements of H's row d with sig over m positions. */
static inline int64_t
agree(const uint32_t *h, int64_t d, const uint32_t *sig, Py_ssize_t m)
{
    const uint32_t *row = h + d * m;
    int64_t c = 0;
    for (Py_ssize_t j = 0; j < m; j++)
        c += row[j] == sig[j];
    return c;
}

static PyObject *
agreements(PyObject *self, PyObject *args)
{
    Py_buffer hb = {0}, sb = {0}, db = {0}, cb = {0};
    Py_ssize_t width;
    if (!PyArg_ParseTuple(args, "y*y*y*nw*:agreements", &hb, &sb, &db, &width, &cb))
        return NULL;
    PyObject *result = NULL;
    if (!sized(&hb, 4, "h") || !sized(&sb, 4, "sig") || !sized(&cb, 8, "counts"))
        goto done;
    const Py_ssize_t m = sb.len / 4;
    if (width != 4 && width != 8) {
        PyErr_SetString(PyExc_ValueError, "agreements: expected candidates of 4 or 8 bytes");
        goto done;
    }
    if (m < 1 || hb.len / 4 % m != 0 || db.len % width != 0 || cb.len / 8 != db.len / width) {
        PyErr_SetString(PyExc_ValueError, "agreements: expected H of rows of the signature's length and "
                                          "one count per candidate");
        goto done;
    }
    const Py_ssize_t n_docs = hb.len / 4 / m, n = db.len / width;
    const uint32_t *h = hb.buf, *sig = sb.buf, *d32 = db.buf;
    const int64_t *d64 = db.buf;
    int64_t *counts = cb.buf;
    for (Py_ssize_t i = 0; i < n; i++) {
        const int64_t d = width == 8 ? d64[i] : (int64_t)d32[i];
        if (d < 0 || d >= n_docs) {
            PyErr_Format(PyExc_ValueError, "agreements: candidate %lld is not a row of H (0 .. %zd)", (long long)d,
                         n_docs - 1);
            goto done;
        }
    }
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0; i < n; i++) {
        const int64_t d = width == 8 ? d64[i] : (int64_t)d32[i];
        if (i + AHEAD < n) /* ask for a later row while this one is read */
            prefetch_row(h, width == 8 ? d64[i + AHEAD] : (int64_t)d32[i + AHEAD], m);
        counts[i] = agree(h, d, sig, m);
    }
    Py_END_ALLOW_THREADS
    result = Py_None;
    Py_INCREF(result);
done:
    PyBuffer_Release(&hb);
    PyBuffer_Release(&sb);
    PyBuffer_Release(&db);
    PyBuffer_Release(&cb);
    return result;
}

static PyObject *
candidates(PyObject *self, PyObject *args)
{
    Py_buffer ob = {0}, pb = {0}, bb = {0}, hb = {0}, sb = {0}, seenb = {0}, odb = {0}, ocb = {0};
    Py_ssize_t width, need, exclude;
    if (!PyArg_ParseTuple(args, "y*ny*y*y*y*nnw*w*w*:candidates", &ob, &width, &pb, &bb, &hb, &sb, &need, &exclude,
                          &seenb, &odb, &ocb))
        return NULL;
    PyObject *result = NULL;
    if (width != 4 && width != 8) {
        PyErr_SetString(PyExc_ValueError, "candidates: expected offsets of 4 or 8 bytes");
        goto done;
    }
    if (!sized(&ob, width, "offsets") || !sized(&pb, 4, "postings") || !sized(&bb, 8, "buckets") || !sized(&hb, 4, "h")
        || !sized(&sb, 4, "sig") || !sized(&odb, 8, "out_docs") || !sized(&ocb, 8, "out_counts"))
        goto done;
    const Py_ssize_t m = sb.len / 4, n_buckets = ob.len / width - 1, n_postings = pb.len / 4, nb = bb.len / 8;
    if (m < 1 || hb.len / 4 % m != 0 || n_buckets < 0 || seenb.len != hb.len / 4 / m) {
        PyErr_SetString(PyExc_ValueError, "candidates: expected H of rows of the signature's length, bucket offsets "
                                          "and one mark per row of H");
        goto done;
    }
    const Py_ssize_t n_docs = hb.len / 4 / m, cap = odb.len / 8 < ocb.len / 8 ? odb.len / 8 : ocb.len / 8;
    const uint32_t *o32 = ob.buf, *postings = pb.buf, *h = hb.buf, *sig = sb.buf;
    const uint64_t *o64 = ob.buf;
    const int64_t *buckets = bb.buf;
    uint8_t *seen = seenb.buf;
    int64_t *out_d = odb.buf, *out_c = ocb.buf;
    Py_ssize_t total = 0;
    for (Py_ssize_t i = 0; i < nb; i++) {
        const int64_t b = buckets[i];
        if (b < 0 || b >= n_buckets) {
            PyErr_Format(PyExc_ValueError, "candidates: bucket %lld is not in I (0 .. %zd)", (long long)b, n_buckets - 1);
            goto done;
        }
        const uint64_t lo = width == 8 ? o64[b] : o32[b], hi = width == 8 ? o64[b + 1] : o32[b + 1];
        if (hi < lo || hi > (uint64_t)n_postings) {
            PyErr_Format(PyExc_ValueError, "candidates: bucket %lld lies outside I's postings", (long long)b);
            goto done;
        }
        total += (Py_ssize_t)(hi - lo);
    }
    if (total > cap) {
        PyErr_Format(PyExc_ValueError, "candidates: %zd postings do not fit in outputs of %zd", total, cap);
        goto done;
    }
    /* First pass: each candidate once, in the order met; second: each one's agreements, keeping
     * those the query asks for. `seen` is the caller's own (one per thread), so the GIL is let go. */
    Py_ssize_t n = 0, kept = 0;
    int64_t bad = -1;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0; i < nb && bad < 0; i++) {
        const int64_t b = buckets[i];
        const uint64_t lo = width == 8 ? o64[b] : o32[b], hi = width == 8 ? o64[b + 1] : o32[b + 1];
        for (uint64_t p = lo; p < hi; p++) {
            const uint32_t d = postings[p];
            if ((Py_ssize_t)d >= n_docs) {
                bad = d;
                break;
            }
            if (!seen[d]) {
                seen[d] = 1;
                out_d[n++] = d;
            }
        }
    }
    for (Py_ssize_t i = 0; i < n; i++)
        seen[out_d[i]] = 0;
    for (Py_ssize_t i = 0; i < n && bad < 0; i++) {
        if (i + AHEAD < n)
            prefetch_row(h, out_d[i + AHEAD], m);
        const int64_t d = out_d[i], c = agree(h, d, sig, m);
        if (c >= need && d != exclude) {
            out_d[kept] = d;
            out_c[kept++] = c;
        }
    }
    Py_END_ALLOW_THREADS
    if (bad >= 0) {
        PyErr_Format(PyExc_ValueError, "candidates: posting %lld is not a row of H (0 .. %zd)", (long long)bad,
                     n_docs - 1);
        goto done;
    }
    result = PyLong_FromSsize_t(kept);
done:
    PyBuffer_Release(&ob);
    PyBuffer_Release(&pb);
    PyBuffer_Release(&bb);
    PyBuffer_Release(&hb);
    PyBuffer_Release(&sb);
    PyBuffer_Release(&seenb);
    PyBuffer_Release(&odb);
    PyBuffer_Release(&ocb);
    return result;
}

#define COUNT_BLOCK 65536 /* documents counted at once: their counts stay in a core's cache */
#define SEARCH_COST 32    /* postings swept in the time of one galloping search of a large bucket */

/* How many of the n counts are >= thr (1 <= thr <= 128, eight at a time as counted() judges
 * them; more than n, so "many", otherwise). */
static Py_ssize_t
block_reaching(const uint8_t *counts, Py_ssize_t n, Py_ssize_t thr)
{
    if (thr < 1 || thr > 128)
        return n + 1;
    const uint64_t high = 0x8080808080808080ull, low = 0x0101010101010101ull * (uint64_t)thr;
    Py_ssize_t found = 0, d = 0;
    for (; d + 8 <= n; d += 8) {
        uint64_t word;
        memcpy(&word, counts + d, 8);
        found += __builtin_popcountll((((word | high) - low) | word) & high);
    }
    for (; d < n; d++)
        found += counts[d] >= thr;
    return found;
}

static PyObject *
counted(PyObject *self, PyObject *args)
{
    Py_buffer ob = {0}, pb = {0}, bb = {0}, cb = {0}, odb = {0}, ocb = {0};
    Py_ssize_t width, need, left_out, exclude;
    if (!PyArg_ParseTuple(args, "y*ny*y*nnnw*w*w*:counted", &ob, &width, &pb, &bb, &need, &left_out, &exclude, &cb,
                          &odb, &ocb))
        return NULL;
    PyObject *result = NULL;
    uint64_t *pos = NULL, *end = NULL;
    int64_t *tmp = NULL;
    if (width != 4 && width != 8) {
        PyErr_SetString(PyExc_ValueError, "counted: expected offsets of 4 or 8 bytes");
        goto done;
    }
    if (!sized(&ob, width, "offsets") || !sized(&pb, 4, "postings") || !sized(&bb, 8, "buckets")
        || !sized(&odb, 8, "out_docs") || !sized(&ocb, 8, "out_counts"))
        goto done;
    const Py_ssize_t n_buckets = ob.len / width - 1, n_postings = pb.len / 4, nb = bb.len / 8, n_docs = cb.len;
    const Py_ssize_t cap = odb.len / 8 < ocb.len / 8 ? odb.len / 8 : ocb.len / 8;
    if (n_buckets < 0 || nb > 255) {
        PyErr_SetString(PyExc_ValueError, "counted: expected bucket offsets and at most 255 buckets");
        goto done;
    }
    if (left_out < 0 || left_out > nb || (left_out > 0 && left_out >= need)) {
        PyErr_Format(PyExc_ValueError, "counted: expected fewer buckets left out than need (%zd), got %zd", need,
                     left_out);
        goto done;
    }
    const Py_ssize_t swept = nb - left_out, partial = need - left_out;
    const uint32_t *o32 = ob.buf, *postings = pb.buf;
    const uint64_t *o64 = ob.buf;
    const int64_t *buckets = bb.buf;
    uint8_t *counts = cb.buf;
    int64_t *out_d = odb.buf, *out_c = ocb.buf;
    pos = PyMem_RawMalloc(sizeof(uint64_t) * (nb + 1));
    end = PyMem_RawMalloc(sizeof(uint64_t) * (nb + 1));
    if (!pos || !end) {
        PyErr_NoMemory();
        goto done;
    }
    Py_ssize_t total = 0;
    for (Py_ssize_t i = 0; i < nb; i++) {
        const int64_t b = buckets[i];
        if (b < 0 || b >= n_buckets) {
            PyErr_Format(PyExc_ValueError, "counted: bucket %lld is not in I (0 .. %zd)", (long long)b, n_buckets - 1);
            goto done;
        }
        pos[i] = width == 8 ? o64[b] : o32[b];
        end[i] = width == 8 ? o64[b + 1] : o32[b + 1];
        if (end[i] < pos[i] || end[i] > (uint64_t)n_postings) {
            PyErr_Format(PyExc_ValueError, "counted: bucket %lld lies outside I's postings", (long long)b);
            goto done;
        }
        total += (Py_ssize_t)(end[i] - pos[i]);
    }
    if (total > cap) {
        PyErr_Format(PyExc_ValueError, "counted: %zd postings do not fit in outputs of %zd", total, cap);
        goto done;
    }
    /* A bucket's documents rise, so the postings of one block of documents are a run of each
     * bucket: the buckets are swept block by block, each block's counts in cache, then the block's
     * documents read in order; so they come out rising, and a counting sort (stable) orders them by
     * count, descending. */
    Py_ssize_t n = 0, left = 0;
    Py_ssize_t per_count[256] = {0};
    /* Eight counts at a time: a word of zeros is passed over, and a word none of whose counts
     * reaches `need` is cleared without looking at each (most documents a query touches share a
     * bucket or two with it, not `need`): ((w | H) - need·L) | w has a byte's high bit set
     * exactly where that byte is >= need, for 1 <= need <= 128 (no borrow crosses a byte, each
     * being 128 or more before need is taken away, and a byte of 128 or more is >= need). On the
     * 1M-page scale crawl's index this took the sweep of a median query from 5.0 ms to 1.4 ms,
     * the counting itself being 0.8 ms of it. */
    const uint64_t high = 0x8080808080808080ull, ones = 0x0101010101010101ull;
    int searched[256];
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t b0 = 0; b0 < n_docs; b0 += COUNT_BLOCK) {
        const uint32_t b1 = (uint32_t)(b0 + COUNT_BLOCK < n_docs ? b0 + COUNT_BLOCK : n_docs);
        int touched = 0;
        for (Py_ssize_t i = 0; i < swept; i++) {
            uint64_t p = pos[i];
            const uint64_t e = end[i];
            while (p < e && postings[p] < b1) {
                counts[postings[p]]++;
                p++;
            }
            touched |= p != pos[i];
            pos[i] = p;
        }
        if (!touched)
            continue; /* no document here reaches need: at most left_out < need of its count is left */
        /* Each left-out bucket's run in this block is swept after all where that reads fewer
         * postings than SEARCH_COST searches, one per document that could reach need. */
        Py_ssize_t thr = partial, n_searched = 0;
        if (left_out) {
            const Py_ssize_t within = block_reaching(counts + b0, (Py_ssize_t)b1 - b0, partial);
            for (Py_ssize_t i = swept; i < nb; i++) {
                const Py_ssize_t lo = gallop(postings, (Py_ssize_t)pos[i], (Py_ssize_t)end[i], (uint32_t)b0);
                const Py_ssize_t hi = gallop(postings, lo, (Py_ssize_t)end[i], b1);
                pos[i] = (uint64_t)lo;
                if (hi - lo > SEARCH_COST * within) {
                    searched[n_searched++] = (int)i;
                    continue;
                }
                for (Py_ssize_t p = lo; p < hi; p++)
                    counts[postings[p]]++;
                pos[i] = (uint64_t)hi;
                thr++;
            }
        }
        const int swar = thr >= 1 && thr <= 128;
        const uint64_t low = ones * (uint64_t)(swar ? thr : 0);
        for (Py_ssize_t d = b0; d < (Py_ssize_t)b1; d += 8) {
            uint8_t word_counts[8];
            const Py_ssize_t stop = d + 8 < (Py_ssize_t)b1 ? d + 8 : (Py_ssize_t)b1;
            if (stop - d == 8) {
                uint64_t word;
                memcpy(&word, counts + d, 8);
                if (!word)
                    continue;
                memcpy(word_counts, &word, 8);
                memset(counts + d, 0, 8);
                if (swar && !((((word | high) - low) | word) & high))
                    continue;
            } else {
                memcpy(word_counts, counts + d, (size_t)(stop - d));
                memset(counts + d, 0, (size_t)(stop - d));
            }
            for (Py_ssize_t x = d; x < stop; x++) {
                int64_t c = word_counts[x - d];
                if (!c || c < thr)
                    continue;
                for (Py_ssize_t k = 0; k < n_searched; k++) {
                    const int i = searched[k];
                    pos[i] = (uint64_t)gallop(postings, (Py_ssize_t)pos[i], (Py_ssize_t)end[i], (uint32_t)x);
                    c += pos[i] < end[i] && postings[pos[i]] == (uint32_t)x;
                }
                if (c >= need && x != exclude) {
                    out_d[n] = x;
                    out_c[n++] = c;
                    per_count[c]++;
                }
            }
        }
    }
    for (Py_ssize_t i = 0; i < swept; i++)
        left += pos[i] < end[i];
    Py_END_ALLOW_THREADS
    if (left) {
        PyErr_SetString(PyExc_ValueError, "counted: a bucket holds a posting that is not a document, or postings "
                                          "that do not rise");
        goto done;
    }
    tmp = PyMem_RawMalloc(sizeof(int64_t) * (n > 0 ? n : 1));
    if (!tmp) {
        PyErr_NoMemory();
        goto done;
    }
    Py_ssize_t at[256], next = 0;
    for (int c = 255; c >= 0; c--) {
        at[c] = next;
        next += per_count[c];
    }
    for (Py_ssize_t i = 0; i < n; i++)
        tmp[at[out_c[i]]++] = out_d[i];
    next = 0;
    for (int c = 255; c >= 0; c--)
        for (Py_ssize_t k = 0; k < per_count[c]; k++, next++) {
            out_d[next] = tmp[next];
            out_c[next] = c;
        }
    result = PyLong_FromSsize_t(n);
done:
    PyMem_RawFree(pos);
    PyMem_RawFree(end);
    PyMem_RawFree(tmp);
    PyBuffer_Release(&ob);
    PyBuffer_Release(&pb);
    PyBuffer_Release(&bb);
    PyBuffer_Release(&cb);
    PyBuffer_Release(&odb);
    PyBuffer_Release(&ocb);
    return result;
}

#define FINE_RUN 128 /* codes summed in one byte at a time */

static PyObject *
fine_agreements(PyObject *self, PyObject *args)
{
    Py_buffer hb = {0}, sb = {0}, db = {0}, mb = {0}, fb = {0};
    if (!PyArg_ParseTuple(args, "y*y*y*w*w*:fine_agreements", &hb, &sb, &db, &mb, &fb))
        return NULL;
    PyObject *result = NULL;
    if (!sized(&db, 8, "docs") || !sized(&mb, 8, "matches") || !sized(&fb, 8, "defined"))
        goto done;
    const Py_ssize_t m = sb.len, n = db.len / 8;
    if (m < 1 || hb.len % m != 0 || mb.len / 8 != n || fb.len / 8 != n) {
        PyErr_SetString(PyExc_ValueError, "fine_agreements: expected H2 of rows of the query's length and two "
                                          "counts per candidate");
        goto done;
    }
    const Py_ssize_t n_docs = hb.len / m;
    const uint8_t *h = hb.buf, *sig = sb.buf;
    const int64_t *docs = db.buf;
    int64_t *matches = mb.buf, *defined = fb.buf;
    for (Py_ssize_t i = 0; i < n; i++)
        if (docs[i] < 0 || docs[i] >= n_docs) {
            PyErr_Format(PyExc_ValueError, "fine_agreements: candidate %lld is not a row of H2 (0 .. %zd)",
                         (long long)docs[i], n_docs - 1);
            goto done;
        }
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0; i < n; i++) {
        if (i + AHEAD < n) {
            const uint8_t *ahead = h + docs[i + AHEAD] * m;
            for (Py_ssize_t j = 0; j < m; j += 64)
                __builtin_prefetch(ahead + j);
        }
        const uint8_t *row = h + docs[i] * m;
        int64_t same = 0, any = 0;
        /* One-byte sums over runs of at most FINE_RUN codes (so they do not wrap): the compiler
         * does these 16 or 32 bytes at a time, twice as fast as wide sums. */
        for (Py_ssize_t j = 0; j < m; j += FINE_RUN) {
            const Py_ssize_t stop = j + FINE_RUN < m ? j + FINE_RUN : m;
            uint8_t s = 0, a = 0;
            for (Py_ssize_t k = j; k < stop; k++) {
                s += (row[k] == sig[k]) & (sig[k] != 0);
                a += (row[k] | sig[k]) != 0;
            }
            same += s;
            any += a;
        }
        matches[i] = same;
        defined[i] = any;
    }
    Py_END_ALLOW_THREADS
    result = Py_None;
    Py_INCREF(result);
done:
    PyBuffer_Release(&hb);
    PyBuffer_Release(&sb);
    PyBuffer_Release(&db);
    PyBuffer_Release(&mb);
    PyBuffer_Release(&fb);
    return result;
}

static PyMethodDef methods[] = {
    {"scores", scores, METH_VARARGS, "Exact weighted Jaccard and overlap of one bag with many (see simcore/_rerank.c)."},
    {"agreements", agreements, METH_VARARGS, "The min-hash positions each candidate shares with a query (see simcore/_rerank.c)."},
    {"candidates", candidates, METH_VARARGS, "One query's candidates and their agreement counts (see simcore/_rerank.c)."},
    {"fine_agreements", fine_agreements, METH_VARARGS, "The fine estimate's counts of each candidate (see simcore/_rerank.c)."},
    {"counted", counted, METH_VARARGS, "One query's candidates counted from I's postings alone (see simcore/_rerank.c)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_rerank", NULL, -1, methods};

PyMODINIT_FUNC
PyInit__rerank(void)
{
    return PyModule_Create(&module);
}
