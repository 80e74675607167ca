/* The bag fragments' gather of runs: the fast path of simcore/bag_entries.py (gather_runs).
 *
 * runs(values, starts, lengths, step, run_rows, weights, mapping, rows, cols, out_weights, at) -> int
 *
 * values      int64: what the runs read (a term column per word, or a word code when mapping
 *             is given).
 * starts      int64 per run: the position in values of the run's first element.
 * lengths     int64 per run: its number of elements (zero or less: an empty run).
 * step        +1 (a run reads forwards) or -1 (backwards, as a left anchor window does).
 * run_rows    int64 per run: the row every entry of the run goes to.
 * weights     float64: one weight for every entry, or a table — the j-th element of a run
 *             (j = 0, 1, …) weighs weights[j + 1], and no run may be longer than the table
 *             leaves room for.
 * mapping     int64 or None: values are mapped through it, and an element mapped below zero
 *             (a stopword) is left out.
 * rows, cols, out_weights  int64, int64, float64 of one length: the entries are written
 *             from index at on, run by run, element by element.
 * Returns the index after the last entry written. A run outside values, a value outside
 * mapping, a run longer than the table or more entries than the outputs hold raise
 * ValueError, and nothing is promised about what was written before.
 *
 * The numpy code of simcore/bag_entries.py (_gather_runs_numpy) is the reference the tests compare
 * this with; it writes the same entries in the same order.
 *
 * sum_pairs(rows, cols, weights, n_cols) -> (bytes, bytes, bytes)
 *
 * rows, cols  int64 entries, 0 <= row < 2^62 / n_cols and 0 <= col < n_cols <= 2^32; weights
 *             float64, one per entry.
 * Returns the distinct (row, col) pairs, in row then column order, as their rows (int64),
 * their columns (int64) and the sum of each pair's weights (float64, added in input order:
 * 0.0 + w1 + w2 + ...).
 * First an open-addressing hash table of the keys row * n_cols + col, fast while it stays in a
 * core's cache: a slice of a 100k-page crawl's links part sums ~4 million entries to ~70,000
 * pairs. Past HASHED_PAIRS pairs (a slice of a 1M-page crawl's links part: 5.6 million
 * entries, 1 million pairs, 28–30 ns an entry in a table larger than the caches) the entries
 * are instead bucketed by row (a stable counting sort: a slice's rows number in the
 * thousands), then each row's summed into an array over the columns, the columns seen in the
 * row marked in a bitmap (and the bitmap's words in use in a second one) that is read back in
 * order. Either way the pairs come out ordered by the buckets. Memory: 12 bytes an entry and 8
 * a column, besides the pairs.
 *
 * first_links(sources, targets, first) -> int
 *
 * sources, targets  uint64 per link (a links part's source_id and target_id, in its order).
 * first             uint8 per link, written: 1 where the link is the first from its source to
 *                   its target and not a link of a page to itself, else 0.
 * Returns how many links are marked 1; or -1, with nothing promised about first, when the
 * links of one source are not all next to each other (the part was not written page by page),
 * for the caller to count another way. Each source's run of links is looked at on its own,
 * against a table of the targets seen in the run (cleared by a new stamp, not by writing
 * it over), and a table of the sources whose runs have begun: memory follows the longest run
 * and the number of pages, not the links.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    Py_buffer values, starts, lengths, run_rows, weights, mapping, rows, cols, out_weights;
} Buffers;

static void
release(Buffers *b)
{
    Py_buffer *all[] = {&b->values, &b->starts, &b->lengths, &b->run_rows, &b->weights, &b->mapping,
                        &b->rows, &b->cols, &b->out_weights};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        if (all[i]->obj != NULL)
            PyBuffer_Release(all[i]);
}

static int
check(const Py_buffer *b, Py_ssize_t item, const char *name)
{
    if (b->len % item != 0) {
        PyErr_Format(PyExc_ValueError, "%s: expected items of %zd bytes, got %zd bytes", name, item, b->len);
        return -1;
    }
    return 0;
}

/* Why a run cannot be written, or NULL. */
static const char *
gather(const Buffers *b, Py_ssize_t step, Py_ssize_t *at)
{
    const int64_t *values = b->values.buf, *starts = b->starts.buf, *lengths = b->lengths.buf;
    const int64_t *run_rows = b->run_rows.buf, *mapping = b->mapping.obj ? b->mapping.buf : NULL;
    const double *weights = b->weights.buf;
    int64_t *rows = b->rows.buf, *cols = b->cols.buf;
    double *out_weights = b->out_weights.buf;
    const Py_ssize_t n_values = b->values.len / 8, n_runs = b->starts.len / 8;
    const Py_ssize_t n_mapping = b->mapping.obj ? b->mapping.len / 8 : 0, n_weights = b->weights.len / 8;
    const Py_ssize_t capacity = b->rows.len / 8;
    Py_ssize_t k = *at;

    for (Py_ssize_t r = 0; r < n_runs; r++) {
        const int64_t length = lengths[r];
        if (length <= 0)
            continue;
        const int64_t first = starts[r], last = first + (length - 1) * step;
        if (first < 0 || first >= n_values || last < 0 || last >= n_values)
            return "a run reaches outside values";
        if (n_weights > 1 && length >= n_weights)
            return "a run is longer than the weight table";
        /* An unmapped run writes all its elements; a mapped one leaves its stopwords out,
         * so its room is checked entry by entry. */
        if (mapping == NULL && length > capacity - k)
            return "more entries than the outputs hold";
        const int64_t row = run_rows[r];
        const int64_t *v = values + first;
        for (int64_t j = 0; j < length; j++, v += step) {
            int64_t col = *v;
            if (mapping != NULL) {
                if (col < 0 || col >= n_mapping)
                    return "a value outside mapping";
                col = mapping[col];
                if (col < 0)
                    continue;
                if (k == capacity)
                    return "more entries than the outputs hold";
            }
            rows[k] = row;
            cols[k] = col;
            out_weights[k] = n_weights > 1 ? weights[j + 1] : weights[0];
            k++;
        }
    }
    *at = k;
    return NULL;
}

static PyObject *
runs(PyObject *self, PyObject *args)
{
    Buffers b = {0};
    PyObject *mapping_obj;
    Py_ssize_t step, at;
    if (!PyArg_ParseTuple(args, "y*y*y*ny*y*Ow*w*w*n:runs", &b.values, &b.starts, &b.lengths, &step, &b.run_rows,
                          &b.weights, &mapping_obj, &b.rows, &b.cols, &b.out_weights, &at))
        return NULL;
    if (mapping_obj != Py_None && PyObject_GetBuffer(mapping_obj, &b.mapping, PyBUF_SIMPLE) < 0) {
        release(&b);
        return NULL;
    }
    const char *why = NULL;
    if (check(&b.values, 8, "values") || check(&b.starts, 8, "starts") || check(&b.lengths, 8, "lengths")
        || check(&b.run_rows, 8, "run_rows") || check(&b.weights, 8, "weights")
        || (b.mapping.obj && check(&b.mapping, 8, "mapping")) || check(&b.rows, 8, "rows")
        || check(&b.cols, 8, "cols") || check(&b.out_weights, 8, "out_weights")) {
        release(&b);
        return NULL;
    }
    if (b.lengths.len != b.starts.len || b.run_rows.len != b.starts.len)
        why = "starts, lengths and run_rows differ in length";
    else if (b.cols.len != b.rows.len || b.out_weights.len != b.rows.len)
        why = "rows, cols and out_weights differ in length";
    else if (b.weights.len == 0)
        why = "no weights";
    else if (step != 1 && step != -1)
        why = "step is neither 1 nor -1";
    else if (at < 0 || at > b.rows.len / 8)
        why = "at lies outside the outputs";
    if (why == NULL) {
        Py_BEGIN_ALLOW_THREADS
        why = gather(&b, step, &at);
        Py_END_ALLOW_THREADS
    }
    release(&b);
    if (why != NULL) {
        PyErr_Format(PyExc_ValueError, "gather runs: %s", why);
        return NULL;
    }
    return PyLong_FromSsize_t(at);
}

/* The hash table sum_pairs begins with: key -1 marks an empty slot. */
typedef struct {
    int64_t *keys;
    double *sums;
    uint64_t mask; /* slots - 1, slots a power of two */
    Py_ssize_t used;
} Table;

static inline uint64_t
slot_of(int64_t key, uint64_t mask)
{
    uint64_t h = (uint64_t)key * UINT64_C(0x9E3779B97F4A7C15);
    return (h ^ (h >> 29)) & mask;
}

static int
table_init(Table *t, uint64_t slots)
{
    t->keys = malloc(slots * sizeof(int64_t));
    t->sums = malloc(slots * sizeof(double));
    if (t->keys == NULL || t->sums == NULL) {
        free(t->keys);
        free(t->sums);
        t->keys = NULL;
        t->sums = NULL;
        return -1;
    }
    memset(t->keys, 0xff, slots * sizeof(int64_t)); /* every key -1 */
    t->mask = slots - 1;
    t->used = 0;
    return 0;
}

/* Move every key to a table twice the size; -1 when out of memory. */
static int
table_grow(Table *t)
{
    Table bigger;
    if (table_init(&bigger, (t->mask + 1) * 2) < 0)
        return -1;
    for (uint64_t i = 0; i <= t->mask; i++) {
        if (t->keys[i] < 0)
            continue;
        uint64_t j = slot_of(t->keys[i], bigger.mask);
        while (bigger.keys[j] >= 0)
            j = (j + 1) & bigger.mask;
        bigger.keys[j] = t->keys[i];
        bigger.sums[j] = t->sums[i];
    }
    bigger.used = t->used;
    free(t->keys);
    free(t->sums);
    *t = bigger;
    return 0;
}

enum { SUMMED, BAD_PAIR, NO_MEMORY, TOO_MANY };

/* The most distinct pairs the hash table takes before sum_pairs turns to buckets: at most 2^18
 * slots (4 MB), near a core's own cache (2 MB of L2 on this project's machines). Slices of the
 * 100k scale crawl's links parts (60,000-80,000 pairs) sum as fast as before by the table;
 * those of the 1M crawl's (a million pairs) 1.7 times as fast by the buckets. */
#define HASHED_PAIRS (1 << 17)

/* Sum the entries into the table; TOO_MANY as soon as it holds more than HASHED_PAIRS keys. */
static int
sum_into(Table *t, const int64_t *rows, const int64_t *cols, const double *weights, Py_ssize_t n, int64_t n_cols)
{
    const int64_t row_limit = (INT64_C(1) << 62) / n_cols; /* keys below 2^62 */
    for (Py_ssize_t e = 0; e < n; e++) {
        if (rows[e] < 0 || rows[e] >= row_limit || cols[e] < 0 || cols[e] >= n_cols)
            return BAD_PAIR;
        const int64_t key = rows[e] * n_cols + cols[e];
        uint64_t j = slot_of(key, t->mask);
        while (t->keys[j] >= 0 && t->keys[j] != key)
            j = (j + 1) & t->mask;
        if (t->keys[j] == key) {
            t->sums[j] += weights[e];
            continue;
        }
        t->keys[j] = key;
        t->sums[j] = 0.0 + weights[e];
        if (++t->used > HASHED_PAIRS)
            return TOO_MANY;
        if (t->used * 2 > (Py_ssize_t)(t->mask + 1) && table_grow(t) < 0)
            return NO_MEMORY;
    }
    return SUMMED;
}

/* Then the entries bucketed by row (a counting sort, stable), each row's summed in a dense
 * array over the columns. */

/* The pairs summed so far, in order: their rows, columns and sums, in arrays that grow. */
typedef struct {
    int64_t *rows, *cols;
    double *sums;
    Py_ssize_t used, size;
} Pairs;

static int
pairs_reserve(Pairs *p, Py_ssize_t more)
{
    if (p->used + more <= p->size)
        return 0;
    Py_ssize_t size = p->size ? p->size : 1 << 12;
    while (size < p->used + more)
        size *= 2;
    int64_t *rows = realloc(p->rows, size * sizeof(int64_t));
    if (rows != NULL)
        p->rows = rows;
    int64_t *cols = realloc(p->cols, size * sizeof(int64_t));
    if (cols != NULL)
        p->cols = cols;
    double *sums = realloc(p->sums, size * sizeof(double));
    if (sums != NULL)
        p->sums = sums;
    if (rows == NULL || cols == NULL || sums == NULL)
        return -1;
    p->size = size;
    return 0;
}

static int
sum_sorted(const int64_t *rows, const int64_t *cols, const double *weights, Py_ssize_t n, int64_t n_cols, Pairs *out)
{
    const int64_t row_limit = (INT64_C(1) << 62) / n_cols; /* as sum_into's */
    int64_t n_rows = 0;
    for (Py_ssize_t e = 0; e < n; e++) {
        if (rows[e] < 0 || rows[e] >= row_limit || cols[e] < 0 || cols[e] >= n_cols)
            return BAD_PAIR;
        if (rows[e] >= n_rows)
            n_rows = rows[e] + 1;
    }
    int status = NO_MEMORY;
    const size_t words = ((size_t)n_cols + 63) / 64, summary_words = (words + 63) / 64;
    Py_ssize_t *start = calloc((size_t)n_rows + 1, sizeof(Py_ssize_t));
    Py_ssize_t *fill = malloc(((size_t)n_rows + 1) * sizeof(Py_ssize_t));
    uint32_t *bucket_cols = malloc((size_t)n * sizeof(uint32_t) + 1);
    double *bucket_weights = malloc((size_t)n * sizeof(double) + 1);
    uint64_t *seen = calloc(words, sizeof(uint64_t));       /* the columns of the row so far */
    uint64_t *seen_words = calloc(summary_words, sizeof(uint64_t)); /* which words of seen are not 0 */
    double *acc = malloc((size_t)n_cols * sizeof(double));
    if (start == NULL || fill == NULL || bucket_cols == NULL || bucket_weights == NULL || seen == NULL
        || seen_words == NULL || acc == NULL)
        goto done;
    for (Py_ssize_t e = 0; e < n; e++)
        start[rows[e] + 1]++;
    for (int64_t r = 0; r < n_rows; r++)
        start[r + 1] += start[r];
    memcpy(fill, start, ((size_t)n_rows + 1) * sizeof(Py_ssize_t));
    for (Py_ssize_t e = 0; e < n; e++) { /* input order kept within a row */
        Py_ssize_t at = fill[rows[e]]++;
        bucket_cols[at] = (uint32_t)cols[e];
        bucket_weights[at] = weights[e];
    }
    for (int64_t r = 0; r < n_rows; r++) {
        Py_ssize_t first = start[r], end = start[r + 1];
        if (first == end)
            continue;
        if (pairs_reserve(out, end - first) < 0)
            goto done;
        for (Py_ssize_t at = first; at < end; at++) {
            const uint32_t c = bucket_cols[at];
            const uint64_t bit = UINT64_C(1) << (c & 63);
            if (seen[c >> 6] & bit) {
                acc[c] += bucket_weights[at];
            } else {
                seen[c >> 6] |= bit;
                seen_words[c >> 12] |= UINT64_C(1) << ((c >> 6) & 63);
                acc[c] = 0.0 + bucket_weights[at];
            }
        }
        /* The row's columns in order, from the bits (each cleared for the next row). */
        for (size_t i = 0; i < summary_words; i++) {
            for (uint64_t s = seen_words[i]; s != 0; s &= s - 1) {
                const size_t w = i * 64 + (size_t)__builtin_ctzll(s);
                for (uint64_t b = seen[w]; b != 0; b &= b - 1) {
                    const int64_t c = (int64_t)(w * 64 + (size_t)__builtin_ctzll(b));
                    out->rows[out->used] = r;
                    out->cols[out->used] = c;
                    out->sums[out->used++] = acc[c];
                }
                seen[w] = 0;
            }
            seen_words[i] = 0;
        }
    }
    status = SUMMED;
done:
    free(start);
    free(fill);
    free(bucket_cols);
    free(bucket_weights);
    free(seen);
    free(seen_words);
    free(acc);
    return status;
}

/* The hash table first; if the pairs outgrow it, the buckets over all the entries instead. The
 * table's pairs are put in order by the buckets too (each its own entry: 0.0 + sum is the sum). */
static int
sum_both(const int64_t *rows, const int64_t *cols, const double *weights, Py_ssize_t n, int64_t n_cols, Pairs *out)
{
    Table t = {0};
    if (table_init(&t, 1 << 12) < 0)
        return NO_MEMORY;
    int status = sum_into(&t, rows, cols, weights, n, n_cols);
    if (status == TOO_MANY) {
        free(t.keys);
        free(t.sums);
        return sum_sorted(rows, cols, weights, n, n_cols, out);
    }
    int64_t *pair_rows = NULL, *pair_cols = NULL;
    if (status == SUMMED) {
        pair_rows = malloc(t.used * sizeof(int64_t) + 1);
        pair_cols = malloc(t.used * sizeof(int64_t) + 1);
        if (pair_rows == NULL || pair_cols == NULL) {
            status = NO_MEMORY;
        } else {
            Py_ssize_t k = 0;
            for (uint64_t i = 0; i <= t.mask; i++)
                if (t.keys[i] >= 0) {
                    pair_rows[k] = t.keys[i] / n_cols;
                    pair_cols[k] = t.keys[i] % n_cols;
                    t.sums[k++] = t.sums[i]; /* k <= i: the sums packed in place */
                }
            status = sum_sorted(pair_rows, pair_cols, t.sums, k, n_cols, out);
        }
    }
    free(pair_rows);
    free(pair_cols);
    free(t.keys);
    free(t.sums);
    return status;
}

static PyObject *
bytes_of(const void *data, Py_ssize_t n)
{
    return PyBytes_FromStringAndSize(n ? data : NULL, n);
}

static PyObject *
sum_pairs(PyObject *self, PyObject *args)
{
    Py_buffer rows = {0}, cols = {0}, weights = {0};
    long long n_cols;
    if (!PyArg_ParseTuple(args, "y*y*y*L:sum_pairs", &rows, &cols, &weights, &n_cols))
        return NULL;
    const Py_ssize_t n = rows.len / 8;
    const char *why = NULL;
    int status = SUMMED;
    Pairs out = {0};
    if (rows.len % 8 || cols.len != rows.len || weights.len != rows.len)
        why = "rows, cols and weights must be 8-byte items of one length";
    else if (n_cols < 1 || n_cols > (INT64_C(1) << 32))
        why = "n_cols outside 1 .. 2^32";
    if (why == NULL) {
        Py_BEGIN_ALLOW_THREADS
        status = sum_both(rows.buf, cols.buf, weights.buf, n, n_cols, &out);
        Py_END_ALLOW_THREADS
    }
    PyBuffer_Release(&rows);
    PyBuffer_Release(&cols);
    PyBuffer_Release(&weights);
    PyObject *result = NULL;
    if (why == NULL && status == SUMMED) {
        PyObject *r = bytes_of(out.rows, out.used * (Py_ssize_t)sizeof(int64_t));
        PyObject *c = bytes_of(out.cols, out.used * (Py_ssize_t)sizeof(int64_t));
        PyObject *s = bytes_of(out.sums, out.used * (Py_ssize_t)sizeof(double));
        if (r != NULL && c != NULL && s != NULL)
            result = PyTuple_Pack(3, r, c, s);
        Py_XDECREF(r);
        Py_XDECREF(c);
        Py_XDECREF(s);
    }
    free(out.rows);
    free(out.cols);
    free(out.sums);
    if (status == NO_MEMORY)
        return PyErr_NoMemory();
    if (status == BAD_PAIR)
        why = "a row outside 0 .. 2^62 / n_cols - 1 or a column outside 0 .. n_cols - 1";
    if (why != NULL) {
        PyErr_Format(PyExc_ValueError, "sum pairs: %s", why);
        return NULL;
    }
    return result;
}

/* first_links: a table of uint64 keys, each slot stamped with the run that filled it. */
typedef struct {
    uint64_t *keys;
    uint32_t *stamps; /* 0: empty */
    uint64_t mask;
    Py_ssize_t used;
} StampedSet;

static int
stamped_init(StampedSet *t, uint64_t slots)
{
    t->keys = malloc(slots * sizeof(uint64_t));
    t->stamps = calloc(slots, sizeof(uint32_t));
    if (t->keys == NULL || t->stamps == NULL) {
        free(t->keys);
        free(t->stamps);
        t->keys = NULL;
        t->stamps = NULL;
        return -1;
    }
    t->mask = slots - 1;
    t->used = 0;
    return 0;
}

static void
stamped_free(StampedSet *t)
{
    free(t->keys);
    free(t->stamps);
    t->keys = NULL;
    t->stamps = NULL;
}

/* Add key under stamp: 1 if it was not there, 0 if it was. */
static inline int
stamped_add(StampedSet *t, uint64_t key, uint32_t stamp)
{
    uint64_t j = slot_of((int64_t)key, t->mask);
    while (t->stamps[j] == stamp) {
        if (t->keys[j] == key)
            return 0;
        j = (j + 1) & t->mask;
    }
    t->keys[j] = key;
    t->stamps[j] = stamp;
    return 1;
}

/* Double the set (every key under stamp 1); -1 when out of memory. */
static int
stamped_grow(StampedSet *t)
{
    StampedSet bigger;
    if (stamped_init(&bigger, (t->mask + 1) * 2) < 0)
        return -1;
    for (uint64_t i = 0; i <= t->mask; i++)
        if (t->stamps[i])
            stamped_add(&bigger, t->keys[i], 1);
    bigger.used = t->used;
    stamped_free(t);
    *t = bigger;
    return 0;
}

static uint64_t
slots_for(Py_ssize_t n)
{
    uint64_t slots = 16;
    while (slots < (uint64_t)n * 2)
        slots *= 2;
    return slots;
}

enum { MARKED, SPLIT_SOURCE };

static int
mark_first_links(const uint64_t *sources, const uint64_t *targets, uint8_t *first, Py_ssize_t n, Py_ssize_t *marked)
{
    StampedSet seen = {0}, done = {0}; /* a run's targets; the sources whose runs have begun */
    uint32_t stamp = 0;
    Py_ssize_t count = 0;
    int status = MARKED;
    if (stamped_init(&seen, 16) < 0 || stamped_init(&done, 1 << 10) < 0) {
        status = NO_MEMORY;
        goto out;
    }
    for (Py_ssize_t start = 0, end; start < n; start = end) {
        const uint64_t source = sources[start];
        for (end = start + 1; end < n && sources[end] == source; end++)
            ;
        if (!stamped_add(&done, source, 1)) { /* its links came in an earlier run too */
            status = SPLIT_SOURCE;
            goto out;
        }
        if (++done.used * 2 > (Py_ssize_t)(done.mask + 1) && stamped_grow(&done) < 0) {
            status = NO_MEMORY;
            goto out;
        }
        if ((uint64_t)(end - start) * 2 > seen.mask + 1) {
            stamped_free(&seen);
            if (stamped_init(&seen, slots_for(end - start)) < 0) {
                status = NO_MEMORY;
                goto out;
            }
            stamp = 0;
        }
        if (++stamp == 0) { /* after 2^32 - 1 runs: clear the stamps once */
            memset(seen.stamps, 0, (seen.mask + 1) * sizeof(uint32_t));
            stamp = 1;
        }
        for (Py_ssize_t e = start; e < end; e++) {
            const int keep = targets[e] != source && stamped_add(&seen, targets[e], stamp);
            first[e] = (uint8_t)keep;
            count += keep;
        }
    }
    *marked = count;
out:
    stamped_free(&seen);
    stamped_free(&done);
    return status;
}

static PyObject *
first_links(PyObject *self, PyObject *args)
{
    Py_buffer sources = {0}, targets = {0}, first = {0};
    if (!PyArg_ParseTuple(args, "y*y*w*:first_links", &sources, &targets, &first))
        return NULL;
    const Py_ssize_t n = sources.len / 8;
    const char *why = NULL;
    int status = MARKED;
    Py_ssize_t marked = 0;
    if (sources.len % 8 || targets.len != sources.len || first.len != n)
        why = "sources and targets must be 8-byte items of one length, first one byte per link";
    else {
        Py_BEGIN_ALLOW_THREADS
        status = mark_first_links(sources.buf, targets.buf, first.buf, n, &marked);
        Py_END_ALLOW_THREADS
    }
    PyBuffer_Release(&sources);
    PyBuffer_Release(&targets);
    PyBuffer_Release(&first);
    if (why != NULL) {
        PyErr_Format(PyExc_ValueError, "first links: %s", why);
        return NULL;
    }
    if (status == NO_MEMORY)
        return PyErr_NoMemory();
    return PyLong_FromSsize_t(status == SPLIT_SOURCE ? -1 : marked);
}

static PyMethodDef methods[] = {
    {"runs", runs, METH_VARARGS, "Write the entries of runs of values (see simcore/_gather.c)."},
    {"sum_pairs", sum_pairs, METH_VARARGS, "Sum the weights of equal (row, column) pairs (see simcore/_gather.c)."},
    {"first_links", first_links, METH_VARARGS, "Mark each source's first link to each other page (see simcore/_gather.c)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_gather", NULL, -1, methods};

PyMODINIT_FUNC
PyInit__gather(void)
{
    return PyModule_Create(&module);
}
