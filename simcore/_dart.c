/* DartMinHash signatures of weighted bags: the fast path of simcore/dartminhash.py.
 *
 * sign(codes, offsets, hashes, weights, m, key, lam, theta, thresholds, out) -> int
 *
 * codes       int64, one per term occurrence: an index into hashes.
 * offsets     int64, n + 1 of them: bag b is codes[offsets[b]:offsets[b + 1]].
 * hashes      uint64, the distinct terms' 64-bit hashes.
 * weights     float64 per occurrence, > 0 and finite, or None for weight 1.
 * m           signature positions (labels); key the seed's stream key (splitmix.seed_key).
 * lam         darts per unit of weight x rank (dartminhash.darts_per_unit); theta: the first
 *             pass's rank threshold is theta / total weight (1.0; any value gives the same
 *             signatures, only the work changes).
 * thresholds  uint64: the Poisson(1) table of dartminhash.POISSON_THRESHOLDS.
 * out         uint32, n x m, written for every non-empty bag.
 * once        (optional, default false) one pass at the absolute rank threshold theta, whatever
 *             the bag's total weight, a label without a dart below it written EMPTY (0xFFFFFFFF):
 *             the second signatures of dartminhash.sign_darts_once.
 * Returns -1, or the first bag whose total weight lies beyond the grid (nothing after it is
 * written; the caller raises).
 *
 * The sampler, the streams and the arithmetic are specified in simcore/dartminhash.py, whose
 * numpy code is the reference the tests compare this with bit for bit. Every floating-point
 * operation here is one IEEE 754 operation written in the order the numpy code performs it,
 * and the extension is compiled with -ffp-contract=off (setup.py), so no compiler fuses or
 * reorders them; FLT_EVAL_METHOD 0 (no excess precision) is required below.
 *
 * Two things differ from the numpy code and change only the work, never the result: a second
 * pass visits only the rows of cells not wholly below the previous threshold (a dart seen twice
 * changes no minimum); and cells are first enumerated into a buffer whose darts are then drawn
 * and kept in flat loops without data-dependent branches, which measured 1.7x faster than
 * looping over each cell's 0..3 darts (that loop's exit mispredicts at most cells).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <float.h>
#include <math.h>
#include <stdint.h>

#if !defined(FLT_EVAL_METHOD) || FLT_EVAL_METHOD != 0
#error "simweb.core._dart needs double arithmetic without excess precision (FLT_EVAL_METHOD 0)"
#endif

#define PHI UINT64_C(0x9E3779B97F4A7C15)
#define LOW32 UINT64_C(0xFFFFFFFF)
/* Scaled weights and thresholds below 2^52 keep 2^b - 1 exact; cell numbers
 * ((col << nu) + row) << 12 stay below 2^64 while nu + rho <= 52. */
#define LIMIT 4503599627370496.0
#define MAX_BANDS_SUM 52
#define SNAP 1.0625

static inline uint64_t
fmix64(uint64_t x)
{
    x ^= x >> 30;
    x *= UINT64_C(0xBF58476D1CE4E5B9);
    x ^= x >> 27;
    x *= UINT64_C(0x94D049BB133111EB);
    return x ^ (x >> 31);
}

/* Output number i of the splitmix64 stream seeded by state. */
static inline uint64_t
stream(uint64_t state, uint64_t i)
{
    return fmix64(state + (i + 1) * PHI);
}

/* 2^k for -1022 <= k <= 1023, from its bits: the value ldexp(1.0, k) gives, without a call. */
static inline double
pow2(int k)
{
    union { uint64_t u; double d; } v = {(uint64_t)(k + 1023) << 52};
    return v.d;
}

/* The largest b >= 0 with 2^b - 1 < v (v > 0): band e if 2^e - 1 < v, where v < 2^e. */
static inline int
top_band(double v)
{
    int e;
    frexp(v, &e);
    if (e > 1023)
        return 1023;  /* 2^1024 - 1 is inf in double: as the numpy code, no band 1024 */
    int top = (e >= -1022 ? pow2(e) : ldexp(1.0, e)) - 1.0 < v ? e : e - 1;
    return top > 0 ? top : 0;
}

/* min(cap, ceil(v)) for 0 <= v and cap = 2^k <= 2^52, as an integer: ceil(min(v, cap)). */
static inline int64_t
ceil_capped(double v, double cap)
{
    double c = v < cap ? v : cap;
    int64_t i = (int64_t)c;
    return i + ((double)i < c);
}

/* Cells are enumerated into a buffer and their darts drawn in one flat loop when it fills:
 * a loop over the 0..3 darts of each cell would mispredict its exit at almost every cell. */
#define CELLS 256
#define DARTS (4 * CELLS + 64)

typedef struct {
    uint64_t key;                  /* the cell's stream state */
    double s_col, r_row;           /* its lower-left corner */
    double width32, height32;      /* its width and height / 2^32 */
    double s;                      /* the scaled weight of its term */
} Cell;

typedef struct {
    const int64_t *codes;
    const int64_t *offsets;
    const uint64_t *hashes;
    const double *weights;
    const uint64_t *thresholds;
    int n_thresholds;
    uint64_t key;
    double lam, theta;
    uint32_t m;
    double *best_rank;
    uint64_t *best_id;
    int n_cells, n_darts;
    Cell cells[CELLS];
    uint16_t dart_cell[DARTS];
    uint8_t dart_q[DARTS];
    double kept_rank[DARTS];
    uint64_t kept_state[DARTS];
} Sampler;

/* Draw the buffered cells' darts below rank t and keep, per label, the one of smallest (r, y). */
static void
flush(Sampler *sp, double t)
{
    int kept = 0;
    for (int k = 0; k < sp->n_darts; k++) {
        const Cell *c = &sp->cells[sp->dart_cell[k]];
        uint64_t q = sp->dart_q[k];
        uint64_t z = stream(c->key, 2 * q + 1);
        double sd = c->s_col + (double)(z >> 32) * c->width32;
        double rd = c->r_row + (double)(z & LOW32) * c->height32;
        sp->kept_rank[kept] = rd;
        sp->kept_state[kept] = c->key + (2 * q + 3) * PHI;  /* y = stream(key, 2q + 2) */
        kept += (sd < c->s) & (rd < t);
    }
    uint64_t m = sp->m;
    for (int k = 0; k < kept; k++) {
        uint64_t y = fmix64(sp->kept_state[k]);
        double rd = sp->kept_rank[k];
        uint64_t j = ((y >> 32) * m) >> 32;
        double best = sp->best_rank[j];
        uint64_t best_y = sp->best_id[j];
        /* a new minimum about one dart in three: selected without a branch */
        uint64_t take = -(uint64_t)((rd < best) | ((rd == best) & (y < best_y)));
        union { double d; uint64_t u; } a = {rd}, b = {best};
        b.u = (a.u & take) | (b.u & ~take);
        sp->best_rank[j] = b.d;
        sp->best_id[j] = (y & take) | (best_y & ~take);
    }
    sp->n_cells = sp->n_darts = 0;
}

/* Buffer the cells of one term occurrence with rank rows above those wholly below t_prev and
 * starting below t, flushing when the buffer fills. */
static void
visit_term(Sampler *sp, uint64_t elem, double s, int nu_top, int rho_top, double t, double t_prev)
{
    const uint64_t *thr = sp->thresholds;
    for (int nu = 0; nu <= nu_top; nu++) {
        double s0 = pow2(nu) - 1.0;
        for (int rho = 0; rho <= rho_top; rho++) {
            double r0 = pow2(rho) - 1.0;
            double width = pow2(nu - rho), height = pow2(rho - nu);
            int64_t n_cols = ceil_capped((s - s0) * height, pow2(rho));
            int64_t n_rows = ceil_capped((t - r0) * width, pow2(nu));
            int64_t row0 = 0;
            if (t_prev > r0) {  /* rows ending below the previous threshold were visited then */
                row0 = ceil_capped((t_prev - r0) * width, pow2(nu)) - 1;
                row0 = row0 > 0 ? row0 : 0;
            }
            uint64_t region = ((uint64_t)nu << 6) + (uint64_t)rho;
            Cell c = {0, 0.0, 0.0, pow2(nu - rho - 32), pow2(rho - nu - 32), s};
            for (int64_t col = 0; col < n_cols; col++) {
                c.s_col = s0 + (double)col * width;
                for (int64_t row = row0; row < n_rows; row++) {
                    c.key = stream(elem, ((((uint64_t)col << nu) + (uint64_t)row) << 12) + region);
                    c.r_row = r0 + (double)row * height;
                    int n = (c.key >= thr[0]) + (c.key >= thr[1]) + (c.key >= thr[2]) + (c.key >= thr[3]);
                    if (n == 4)
                        while (n < sp->n_thresholds && c.key >= thr[n])
                            n++;
                    int i = sp->n_cells++, d = sp->n_darts;
                    sp->cells[i] = c;
                    for (int q = 0; q < 4; q++) {  /* written whether drawn or not: no branch */
                        sp->dart_cell[d + q] = (uint16_t)i;
                        sp->dart_q[d + q] = (uint8_t)q;
                    }
                    for (int q = 4; q < n; q++) {
                        sp->dart_cell[d + q] = (uint16_t)i;
                        sp->dart_q[d + q] = (uint8_t)q;
                    }
                    sp->n_darts = d + n;
                    if (sp->n_cells == CELLS || sp->n_darts > DARTS - 36)
                        flush(sp, t);
                }
            }
        }
    }
}

/* Sign bag b into row; 0, or -1 when its grid would exceed the limits. With `once`, one pass at
 * the absolute rank threshold theta, a label without a dart below it left EMPTY (0xFFFFFFFF). */
static int
sign_bag(Sampler *sp, Py_ssize_t b, uint32_t *row, int once)
{
    int64_t s_ = sp->offsets[b], e_ = sp->offsets[b + 1];
    double total = 0.0;
    for (int64_t i = s_; i < e_; i++)
        total += sp->weights ? sp->weights[i] : 1.0;
    for (uint32_t j = 0; j < sp->m; j++) {
        sp->best_rank[j] = INFINITY;
        sp->best_id[j] = UINT64_MAX;
    }
    double t = once ? sp->theta : sp->theta / total, t_prev = 0.0;
    int rho = top_band(t);
    if (!once && rho > 0 && t <= (pow2(rho) - 1.0) * SNAP)
        t = pow2(rho) - 1.0;  /* a sliver of a rank band costs a row of cells per column: leave it */
    for (;;) {
        if (!(t < LIMIT))
            return -1;
        int rho_top = top_band(t);
        for (int64_t i = s_; i < e_; i++) {
            double s = (sp->weights ? sp->weights[i] : 1.0) * sp->lam;
            if (!(s < LIMIT))
                return -1;
            int nu_top = top_band(s);
            if (nu_top + rho_top > MAX_BANDS_SUM)
                return -1;
            visit_term(sp, sp->hashes[sp->codes[i]] ^ sp->key, s, nu_top, rho_top, t, t_prev);
        }
        flush(sp, t);
        uint32_t filled = 0;
        for (uint32_t j = 0; j < sp->m; j++)
            filled += sp->best_rank[j] != INFINITY;
        if (filled == sp->m || once)
            break;
        t_prev = t;
        t *= 2.0;
    }
    for (uint32_t j = 0; j < sp->m; j++)
        row[j] = sp->best_rank[j] != INFINITY ? (uint32_t)(sp->best_id[j] & LOW32) : UINT32_C(0xFFFFFFFF);
    return 0;
}

static PyObject *
sign(PyObject *module, PyObject *args)
{
    Py_buffer codes, offsets, hashes, thresholds, out, weights = {0};
    PyObject *weights_obj;
    unsigned int m;
    unsigned long long key;
    double lam, theta;
    int once = 0;
    if (!PyArg_ParseTuple(args, "y*y*y*OIKddy*w*|p:sign", &codes, &offsets, &hashes, &weights_obj, &m, &key,
                          &lam, &theta, &thresholds, &out, &once))
        return NULL;
    PyObject *result = NULL;
    double *best_rank = NULL;
    uint64_t *best_id = NULL;
    Sampler *sp = NULL;
    int have_weights = weights_obj != Py_None;
    if (have_weights && PyObject_GetBuffer(weights_obj, &weights, PyBUF_SIMPLE) < 0)
        goto done;
    Py_ssize_t n_occ = codes.len / 8, n = offsets.len / 8 - 1, n_hashes = hashes.len / 8;
    if (m < 1 || offsets.len < 8 || codes.len % 8 || hashes.len % 8 || offsets.len % 8 || thresholds.len % 8 || thresholds.len < 32 || thresholds.len > 256
        || (have_weights && weights.len != codes.len) || out.len != (Py_ssize_t)n * m * 4) {
        PyErr_Format(PyExc_ValueError,
                     "sign: expected 8-byte codes, offsets, hashes and 4 to 32 thresholds, a weight per code and an "
                     "n x m uint32 output (n = %zd bags, m = %u), got %zd output bytes", n, m, out.len);
        goto done;
    }
    const int64_t *code = codes.buf, *offset = offsets.buf;
    if (offset[0] != 0 || offset[n] != n_occ) {
        PyErr_Format(PyExc_ValueError, "sign: expected offsets from 0 to %zd, got %lld to %lld", n_occ,
                     (long long)offset[0], (long long)offset[n]);
        goto done;
    }
    for (Py_ssize_t b = 0; b < n; b++)
        if (offset[b + 1] < offset[b]) {
            PyErr_SetString(PyExc_ValueError, "sign: expected non-decreasing offsets");
            goto done;
        }
    for (Py_ssize_t i = 0; i < n_occ; i++) {
        if (code[i] < 0 || code[i] >= n_hashes) {
            PyErr_Format(PyExc_ValueError, "sign: expected codes in 0..%zd, found %lld", n_hashes - 1,
                         (long long)code[i]);
            goto done;
        }
        if (have_weights && !(((const double *)weights.buf)[i] > 0.0 && ((const double *)weights.buf)[i] <= DBL_MAX)) {
            PyErr_Format(PyExc_ValueError, "sign: expected finite weights > 0 (drop zero weights first), "
                         "found an other one at occurrence %zd", i);
            goto done;
        }
    }
    best_rank = PyMem_RawMalloc(sizeof(double) * m);
    best_id = PyMem_RawMalloc(sizeof(uint64_t) * m);
    sp = PyMem_RawMalloc(sizeof(Sampler));
    if (!best_rank || !best_id || !sp) {
        PyErr_NoMemory();
        goto done;
    }
    *sp = (Sampler){code, offset, hashes.buf, have_weights ? weights.buf : NULL, thresholds.buf,
                    (int)(thresholds.len / 8), key, lam, theta, m, best_rank, best_id, 0, 0};
    uint32_t *rows = out.buf;
    Py_ssize_t failed = -1;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t b = 0; b < n; b++) {
        if (offset[b + 1] == offset[b])
            continue;
        if (sign_bag(sp, b, rows + (size_t)b * m, once) < 0) {
            failed = b;
            break;
        }
    }
    Py_END_ALLOW_THREADS
    result = PyLong_FromSsize_t(failed);
done:
    PyMem_RawFree(sp);
    PyMem_RawFree(best_rank);
    PyMem_RawFree(best_id);
    PyBuffer_Release(&codes);
    PyBuffer_Release(&offsets);
    PyBuffer_Release(&hashes);
    PyBuffer_Release(&thresholds);
    PyBuffer_Release(&out);
    if (have_weights && weights.obj)
        PyBuffer_Release(&weights);
    return result;
}

static PyMethodDef methods[] = {
    {"sign", sign, METH_VARARGS, "DartMinHash signatures of weighted bags (simcore/dartminhash.py)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "simcore._dart",
    "DartMinHash signatures in C: the fast path of simweb.core.dartminhash.", -1, methods,
};

PyMODINIT_FUNC
PyInit__dart(void)
{
    return PyModule_Create(&module);
}
