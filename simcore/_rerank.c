/* The exact re-rank of a query's candidates: the fast path of simcore/rerank.py (exact_scores).
 *
 * scores(q_terms, q_weights, offsets, terms, weights, docs, jaccard, overlap) -> None
 *
 * q_terms     uint32: the query bag's term ids, strictly rising.
 * q_weights   float32: their weights (one per term).
 * offsets     uint64, n_docs + 1 rising: document d's terms are entries offsets[d] .. offsets[d + 1] - 1
 *             of terms and weights (the index's bags.offsets.u64).
 * terms       uint32: every document's term ids, strictly rising within a document (bags.terms.u32).
 * weights     float32: their weights (bags.weights.f32).
 * docs        int64: the candidates, each in 0 .. n_docs - 1.
 * jaccard, overlap   float64, one per candidate, written: the weighted Jaccard Σmin / Σmax of the
 *             query's bag and the candidate's (Section 4; 0 when both are empty) and Σmin.
 *
 * Each candidate's terms are merged with the query's (both rising), in float64: Σmin over the
 * shared terms, and Σmax = Σq + Σc − Σmin, Σq and Σc summed in term order. The arrays are
 * read where they lie (a memory-mapped index: no copy). A document outside offsets, offsets
 * outside terms, or arrays of other sizes raise ValueError before anything is written.
 * The numpy code of simcore/rerank.py (_scores_numpy) is the reference the tests compare with.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>

static int
sized(const Py_buffer *b, Py_ssize_t item, const char *name)
{
    if (b->len % item != 0) {
        PyErr_Format(PyExc_ValueError, "%s: expected items of %zd bytes, got %zd bytes", name, item, b->len);
        return 0;
    }
    return 1;
}

static PyObject *
scores(PyObject *self, PyObject *args)
{
    Py_buffer qt = {0}, qw = {0}, off = {0}, tm = {0}, wt = {0}, dc = {0}, jac = {0}, ovl = {0};
    if (!PyArg_ParseTuple(args, "y*y*y*y*y*y*w*w*:scores", &qt, &qw, &off, &tm, &wt, &dc, &jac, &ovl))
        return NULL;
    PyObject *result = NULL;
    if (!sized(&qt, 4, "q_terms") || !sized(&qw, 4, "q_weights") || !sized(&off, 8, "offsets") ||
        !sized(&tm, 4, "terms") || !sized(&wt, 4, "weights") || !sized(&dc, 8, "docs") ||
        !sized(&jac, 8, "jaccard") || !sized(&ovl, 8, "overlap"))
        goto done;
    const Py_ssize_t nq = qt.len / 4, n_off = off.len / 8, n_terms = tm.len / 4, n = dc.len / 8;
    const uint32_t *q_terms = qt.buf, *terms = tm.buf;
    const float *q_weights = qw.buf, *weights = wt.buf;
    const uint64_t *offsets = off.buf;
    const int64_t *docs = dc.buf;
    double *out_j = jac.buf, *out_o = ovl.buf;
    if (qw.len / 4 != nq || wt.len / 4 != n_terms || jac.len / 8 != n || ovl.len / 8 != n || n_off < 1) {
        PyErr_SetString(PyExc_ValueError, "scores: expected one weight per term, one offset more than documents, "
                                          "and one output per candidate");
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
    double sum_q = 0.0;
    for (Py_ssize_t a = 0; a < nq; a++)
        sum_q += (double)q_weights[a];
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0; i < n; i++) {
        const uint64_t lo = offsets[docs[i]], hi = offsets[docs[i] + 1];
        double inter = 0.0, sum_c = 0.0;
        Py_ssize_t a = 0;
        for (uint64_t b = lo; b < hi; b++) {
            const uint32_t t = terms[b];
            const double w = (double)weights[b];
            sum_c += w;
            while (a < nq && q_terms[a] < t)
                a++;
            if (a < nq && q_terms[a] == t) {
                const double v = (double)q_weights[a];
                inter += v < w ? v : w;
                a++;
            }
        }
        const double uni = sum_q + sum_c - inter;
        out_o[i] = inter;
        out_j[i] = uni > 0.0 ? inter / uni : 0.0;
    }
    Py_END_ALLOW_THREADS
    result = Py_None;
    Py_INCREF(result);
done:
    PyBuffer_Release(&qt);
    PyBuffer_Release(&qw);
    PyBuffer_Release(&off);
    PyBuffer_Release(&tm);
    PyBuffer_Release(&wt);
    PyBuffer_Release(&dc);
    PyBuffer_Release(&jac);
    PyBuffer_Release(&ovl);
    return result;
}

static PyMethodDef methods[] = {
    {"scores", scores, METH_VARARGS, "Exact weighted Jaccard and overlap of one bag with many (see simcore/_rerank.c)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_rerank", NULL, -1, methods};

PyMODINIT_FUNC
PyInit__rerank(void)
{
    return PyModule_Create(&module);
}
