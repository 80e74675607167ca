/* The word and marker scan of simcore.html in one pass over a page's text.
 *
 * scan(text, classes) -> (words, kinds, before, markers)
 *
 * text     the page's cleaned text (lower-cased, characters beyond the BMP are letters or
 *          marks of a letter), holding the marker characters simcore.html inserted.
 * classes  65,536 bytes, one per BMP code point (simcore.html._scan_classes): the low three
 *          bits its kind (separator, letter, mark, or one of the five markers), SENTENCE_END
 *          and CLOSER flags for the hard-break rule. A code point beyond the BMP is a letter.
 *
 * words    the words: a letter followed by letters and marks, as simcore.text.WORD_RE finds
 *          them; a marker character always separates words.
 * kinds    one byte per marker token in text order: 0 link start, 1 link end, 2 SYNTACTIC,
 *          3 TOPICAL. A <br> marker becomes a SYNTACTIC one when a sentence end precedes it
 *          past closing characters (simcore.html._SENTENCE_BREAK), and is dropped otherwise.
 * before   one native int64 per marker token: the number of words ahead of it.
 * markers  how many marker characters (of all five) the text holds.
 *
 * This is the fast path of simcore.html._scan_text, whose Python version is the reference
 * the tests compare it with.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

enum {
    SEPARATOR = 0, LETTER = 1, MARK = 2,
    START = 3, END = 4, SYNTACTIC = 5, TOPICAL = 6, BREAK = 7,
    KIND_BITS = 7, SENTENCE_END = 8, CLOSER = 16,
};

typedef struct {
    char *kinds;
    int64_t *before;
    Py_ssize_t length, capacity;
} Markers;

static int
markers_add(Markers *m, char kind, int64_t before)
{
    if (m->length == m->capacity) {
        Py_ssize_t capacity = m->capacity ? 2 * m->capacity : 256;
        char *kinds = PyMem_Realloc(m->kinds, capacity);
        if (kinds == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        m->kinds = kinds;
        int64_t *positions = PyMem_Realloc(m->before, capacity * sizeof(int64_t));
        if (positions == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        m->before = positions;
        m->capacity = capacity;
    }
    m->kinds[m->length] = kind;
    m->before[m->length] = before;
    m->length++;
    return 0;
}

static inline unsigned char
class_of(const unsigned char *classes, Py_UCS4 c)
{
    return c < 0x10000 ? classes[c] : LETTER;
}

/* A text and a table of exactly `size` bytes from args (`format`: "Uy*:name"), the text ready
 * to read; 0, or -1 with an exception set and nothing held. */
static int
text_and_table(PyObject *args, const char *format, PyObject **text, Py_buffer *table, Py_ssize_t size,
               const char *expected)
{
    if (!PyArg_ParseTuple(args, format, text, table))
        return -1;
    if (table->len != size) {
        PyErr_Format(PyExc_ValueError, "%s, got %zd bytes", expected, table->len);
        PyBuffer_Release(table);
        return -1;
    }
    if (PyUnicode_READY(*text) < 0) {
        PyBuffer_Release(table);
        return -1;
    }
    return 0;
}

static PyObject *
scan(PyObject *module, PyObject *args)
{
    PyObject *text;
    Py_buffer table;
    if (text_and_table(args, "Uy*:scan", &text, &table, 0x10000, "scan: expected 65536 class bytes") < 0)
        return NULL;
    const unsigned char *classes = table.buf;
    const int kind = PyUnicode_KIND(text);
    const void *data = PyUnicode_DATA(text);
    const Py_ssize_t n = PyUnicode_GET_LENGTH(text);

    PyObject *words = PyList_New(0);
    Markers m = {NULL, NULL, 0, 0};
    Py_ssize_t marker_characters = 0;
    Py_ssize_t start = -1;  /* where the current word began, -1 outside a word */
    if (words == NULL)
        goto fail;

    for (Py_ssize_t i = 0; i <= n; i++) {
        unsigned char cls = i < n ? class_of(classes, PyUnicode_READ(kind, data, i)) : SEPARATOR;
        unsigned char k = cls & KIND_BITS;
        if (start >= 0) {
            if (k == LETTER || k == MARK)
                continue;
            PyObject *word = PyUnicode_Substring(text, start, i);
            if (word == NULL || PyList_Append(words, word) < 0) {
                Py_XDECREF(word);
                goto fail;
            }
            Py_DECREF(word);
            start = -1;
        }
        if (k == LETTER) {
            start = i;
        }
        else if (k >= START) {
            marker_characters++;
            char code = (char)(k - START);
            if (k == BREAK) {
                Py_ssize_t j = i - 1;
                while (j >= 0 && (class_of(classes, PyUnicode_READ(kind, data, j)) & CLOSER))
                    j--;
                if (j < 0 || !(class_of(classes, PyUnicode_READ(kind, data, j)) & SENTENCE_END))
                    continue;
                code = SYNTACTIC - START;
            }
            if (markers_add(&m, code, (int64_t)PyList_GET_SIZE(words)) < 0)
                goto fail;
        }
    }
    PyBuffer_Release(&table);
    PyObject *result = Py_BuildValue(
        "(Ny#y#n)", words, m.kinds ? m.kinds : "", m.length,
        m.before ? (const char *)m.before : "", m.length * (Py_ssize_t)sizeof(int64_t), marker_characters);
    PyMem_Free(m.kinds);
    PyMem_Free(m.before);
    return result;

fail:
    PyBuffer_Release(&table);
    Py_XDECREF(words);
    PyMem_Free(m.kinds);
    PyMem_Free(m.before);
    return NULL;
}

/* How many of the n increasing values are at most x (numpy's searchsorted "right"), and below
 * x ("left"), from *at, the answer for the link before: links come in document order, so
 * the answers rise and a walk from the last one costs a step or two where a binary search
 * costs a dozen mispredicted branches. A smaller x (a link inside an SVG link) searches anew. */
static Py_ssize_t
count_at_most(const int64_t *values, Py_ssize_t n, int64_t x, Py_ssize_t *at)
{
    Py_ssize_t lo = *at;
    if (lo > 0 && values[lo - 1] > x) {
        Py_ssize_t hi = lo;
        lo = 0;
        while (lo < hi) {
            Py_ssize_t mid = lo + (hi - lo) / 2;
            if (values[mid] <= x)
                lo = mid + 1;
            else
                hi = mid;
        }
    }
    while (lo < n && values[lo] <= x)
        lo++;
    return *at = lo;
}

static Py_ssize_t
count_below(const int64_t *values, Py_ssize_t n, int64_t x, Py_ssize_t *at)
{
    Py_ssize_t lo = *at;
    if (lo > 0 && values[lo - 1] >= x) {
        Py_ssize_t hi = lo;
        lo = 0;
        while (lo < hi) {
            Py_ssize_t mid = lo + (hi - lo) / 2;
            if (values[mid] < x)
                lo = mid + 1;
            else
                hi = mid;
        }
    }
    while (lo < n && values[lo] < x)
        lo++;
    return *at = lo;
}

static int
int64s(Py_buffer *b, const char *name)
{
    if (b->len % (Py_ssize_t)sizeof(int64_t)) {
        PyErr_Format(PyExc_ValueError, "windows: %s: expected native int64s, got %zd bytes", name, b->len);
        return -1;
    }
    return 0;
}

/* windows(flags, first, last, syntactic, topical, w) -> 8 columns of int32s in one bytes object
 *
 * The anchors' columns after their targets (simcore.html._anchors, whose numpy code is the
 * reference the tests compare with), from
 *
 * flags      one byte per word of the page, 1 for a never-stop word, else 0.
 * first      native int64s: each link's first word; last: each link's end word.
 * syntactic  native int64s, increasing: the SYNTACTIC cuts' word offsets; topical: TOPICAL's.
 * w          never-stop words a context holds each side.
 *
 * first, last, the context's left and right edges (the word that brings the side's count of
 * never-stop words to w, or the page edge), and the context words inside the syntactic and
 * topical regions on the left and on the right of each link.
 */
/* The eight columns of windows() from plain arrays (the flags' n bytes, links starts and ends,
 * the cuts), as one bytes object of native int32s, column after column (a page's links cost no
 * Python int each; the ingest writes the columns as they are); NULL with an exception set on
 * error. */
static PyObject *
windows_of(const unsigned char *flag, Py_ssize_t n, const int64_t *starts, const int64_t *ends, Py_ssize_t links,
           const int64_t *syn, Py_ssize_t n_syn, const int64_t *top, Py_ssize_t n_top, long long w)
{
    PyObject *result = NULL;
    if (n > INT32_MAX) {
        PyErr_Format(PyExc_ValueError, "windows: a page of %zd words is more than a column of int32 offsets holds", n);
        return NULL;
    }
    int64_t *nonstop = PyMem_Malloc((n + 1) * sizeof(int64_t));
    if (nonstop == NULL) {
        PyErr_NoMemory();
        return NULL;
    }
    nonstop[0] = 0;
    for (Py_ssize_t i = 0; i < n; i++)
        nonstop[i + 1] = nonstop[i] + (flag[i] != 0);
    result = PyBytes_FromStringAndSize(NULL, 8 * links * (Py_ssize_t)sizeof(int32_t));
    if (result == NULL)
        goto done;
    int32_t *columns = (int32_t *)PyBytes_AS_STRING(result);
    Py_ssize_t at[6] = {0, 0, 0, 0, 0, 0};  /* each search's last answer */
    for (Py_ssize_t k = 0; k < links; k++) {
        const int64_t start = starts[k], end = ends[k];
        if (start < 0 || start > n || end < 0 || end > n) {
            PyErr_Format(PyExc_ValueError, "windows: link %zd: words %lld to %lld lie outside the page's %zd",
                         k, (long long)start, (long long)end, n);
            Py_CLEAR(result);
            goto done;
        }
        Py_ssize_t left = count_at_most(nonstop, n + 1, nonstop[start] - w, &at[0]) - 1;
        if (left < 0)
            left = 0;
        Py_ssize_t right = count_below(nonstop, n + 1, nonstop[end] + w, &at[1]);
        if (right > n)
            right = n;
        int64_t values[8] = {start, end, left, right};
        const int64_t *cuts[2] = {syn, top};
        const Py_ssize_t n_cuts[2] = {n_syn, n_top};
        for (int r = 0; r < 2; r++) {
            Py_ssize_t before = count_at_most(cuts[r], n_cuts[r], start, &at[2 + 2 * r]);  /* cuts at or before the start */
            int64_t region_start = before ? cuts[r][before - 1] : 0;
            values[4 + 2 * r] = start - (region_start > left ? region_start : left);
            Py_ssize_t after = count_below(cuts[r], n_cuts[r], end, &at[3 + 2 * r]);  /* the first cut at or after the end */
            int64_t region_end = after < n_cuts[r] ? cuts[r][after] : ((int64_t)1 << 62);
            values[5 + 2 * r] = (region_end < right ? region_end : right) - end;
        }
        for (int c = 0; c < 8; c++)  /* every value lies in 0..n (a region's length at most the context's) */
            columns[c * links + k] = (int32_t)values[c];
    }
done:
    PyMem_Free(nonstop);
    return result;
}

static PyObject *
windows(PyObject *module, PyObject *args)
{
    Py_buffer flags, first, last, syntactic, topical;
    long long w;
    if (!PyArg_ParseTuple(args, "y*y*y*y*y*L:windows", &flags, &first, &last, &syntactic, &topical, &w))
        return NULL;
    PyObject *result = NULL;
    Py_buffer *buffers[5] = {&flags, &first, &last, &syntactic, &topical};
    if (int64s(&first, "first") < 0 || int64s(&last, "last") < 0 || int64s(&syntactic, "syntactic") < 0
            || int64s(&topical, "topical") < 0)
        goto done;
    if (last.len != first.len) {
        PyErr_SetString(PyExc_ValueError, "windows: first and last: expected one value per link each");
        goto done;
    }
    result = windows_of(flags.buf, flags.len, first.buf, last.buf, first.len / (Py_ssize_t)sizeof(int64_t),
                        syntactic.buf, syntactic.len / (Py_ssize_t)sizeof(int64_t),
                        topical.buf, topical.len / (Py_ssize_t)sizeof(int64_t), w);
done:
    for (int b = 0; b < 5; b++)
        PyBuffer_Release(buffers[b]);
    return result;
}

/* anchors(flags, kinds, before, w) -> windows()'s int32 bytes, or None
 *
 * windows() from scan()'s markers as they are: the links' first and end words are the start
 * and end markers' word offsets, the SYNTACTIC cuts those of the SYNTACTIC and TOPICAL
 * markers, the TOPICAL cuts the TOPICAL markers'. None when the link markers do not simply
 * alternate start, end (an <a> inside an SVG <a>): simcore.html's general path takes those.
 */
static PyObject *
anchors(PyObject *module, PyObject *args)
{
    Py_buffer flags, kinds, before;
    long long w;
    if (!PyArg_ParseTuple(args, "y*y*y*L:anchors", &flags, &kinds, &before, &w))
        return NULL;
    PyObject *result = NULL;
    int64_t *arrays = NULL;
    if (before.len != kinds.len * (Py_ssize_t)sizeof(int64_t)) {
        PyErr_SetString(PyExc_ValueError, "anchors: before: expected one native int64 per marker kind");
        goto done;
    }
    const Py_ssize_t m = kinds.len;
    const signed char *kind = kinds.buf;
    const int64_t *at = before.buf;
    arrays = PyMem_Malloc((4 * m + 1) * sizeof(int64_t));
    if (arrays == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    int64_t *starts = arrays, *ends = arrays + m, *syn = arrays + 2 * m, *top = arrays + 3 * m;
    Py_ssize_t links = 0, n_syn = 0, n_top = 0;
    int open = 0;
    for (Py_ssize_t i = 0; i < m; i++) {
        if (kind[i] <= 1) {  /* a link's start, then its end */
            if (kind[i] != (open ? 1 : 0)) {
                result = Py_NewRef(Py_None);
                goto done;
            }
            if (open)
                ends[links++] = at[i];
            else
                starts[links] = at[i];
            open = !open;
        }
        else if (kind[i] >= 2) {
            syn[n_syn++] = at[i];
            if (kind[i] == 3)
                top[n_top++] = at[i];
        }
    }
    if (open) {
        result = Py_NewRef(Py_None);
        goto done;
    }
    result = windows_of(flags.buf, flags.len, starts, ends, links, syn, n_syn, top, n_top, w);
done:
    PyMem_Free(arrays);
    PyBuffer_Release(&flags);
    PyBuffer_Release(&kinds);
    PyBuffer_Release(&before);
    return result;
}

/* lower(text, table) -> str, or None
 *
 * text.lower() for a text of the Basic Multilingual Plane whose every character lowers to one
 * character without regard to its neighbours: table holds, for each BMP code point, the native
 * uint16 code point it lowers to, or 0xFFFF where str.lower gives more than one character or
 * looks at the neighbours (a capital sigma); None for a text that holds such a character (or
 * U+FFFF, a noncharacter, whose own code is the mark) or lies beyond the BMP, for the caller
 * to ask str.lower. One pass through a table, where str.lower of a text with any character
 * beyond ASCII (the parser's markers are) takes its general path.
 */
static PyObject *
lower(PyObject *module, PyObject *args)
{
    PyObject *text;
    Py_buffer table;
    if (text_and_table(args, "Uy*:lower", &text, &table, 0x10000 * (Py_ssize_t)sizeof(uint16_t),
                       "lower: expected 65536 uint16 code points") < 0)
        return NULL;
    PyObject *result = NULL;
    const int kind = PyUnicode_KIND(text);
    const Py_ssize_t n = PyUnicode_GET_LENGTH(text);
    const uint16_t *to = table.buf;
    if (kind == PyUnicode_4BYTE_KIND) {
        result = Py_NewRef(Py_None);
        goto done;
    }
    uint16_t *out = PyMem_Malloc((n ? n : 1) * sizeof(uint16_t));
    if (out == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    const void *data = PyUnicode_DATA(text);
    for (Py_ssize_t i = 0; i < n; i++) {
        uint16_t c = to[PyUnicode_READ(kind, data, i)];
        if (c == 0xFFFF) {
            PyMem_Free(out);
            result = Py_NewRef(Py_None);
            goto done;
        }
        out[i] = c;
    }
    result = PyUnicode_FromKindAndData(PyUnicode_2BYTE_KIND, out, n);
    PyMem_Free(out);
done:
    PyBuffer_Release(&table);
    return result;
}

/* flags(words, memo) -> bytes, or the list of the words not in memo
 *
 * One byte per word: the first byte of memo[word] (a one-byte bytes object), so that a page's
 * never-stop flags cost a dict look-up a word (its hash cached in the str) and no Python
 * objects; when words are missing from the memo, those words (as often as they occur), for
 * the caller to add to the memo before it asks again.
 */
static PyObject *
flags(PyObject *module, PyObject *args)
{
    PyObject *words, *memo;
    if (!PyArg_ParseTuple(args, "O!O!:flags", &PyList_Type, &words, &PyDict_Type, &memo))
        return NULL;
    const Py_ssize_t n = PyList_GET_SIZE(words);
    PyObject *result = PyBytes_FromStringAndSize(NULL, n);
    PyObject *missing = NULL;
    if (result == NULL)
        return NULL;
    char *out = PyBytes_AS_STRING(result);
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *word = PyList_GET_ITEM(words, i);
        PyObject *flag = PyDict_GetItemWithError(memo, word);
        if (flag == NULL) {
            if (PyErr_Occurred())
                goto fail;
            if (missing == NULL && (missing = PyList_New(0)) == NULL)
                goto fail;
            if (PyList_Append(missing, word) < 0)
                goto fail;
            continue;
        }
        if (!PyBytes_Check(flag) || PyBytes_GET_SIZE(flag) != 1) {
            PyErr_SetString(PyExc_TypeError, "flags: expected the memo's values to be one byte each");
            goto fail;
        }
        out[i] = PyBytes_AS_STRING(flag)[0];
    }
    if (missing != NULL) {
        Py_DECREF(result);
        return missing;
    }
    return result;

fail:
    Py_DECREF(result);
    Py_XDECREF(missing);
    return NULL;
}

static PyMethodDef methods[] = {
    {"scan", scan, METH_VARARGS, "scan(text, classes) -> (words, kinds, before, markers)"},
    {"windows", windows, METH_VARARGS,
     "windows(flags, first, last, syntactic, topical, w) -> the anchors' eight word-offset columns as int32 bytes"},
    {"anchors", anchors, METH_VARARGS,
     "anchors(flags, kinds, before, w) -> windows() from scan()'s markers, or None when links nest"},
    {"lower", lower, METH_VARARGS, "lower(text, table) -> text.lower() by a table of one-character lowerings, or None"},
    {"flags", flags, METH_VARARGS, "flags(words, memo) -> the first byte of memo[word] for every word, or the words not in memo"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "simcore._scan",
    "The word and marker scan of simcore.html in C (see simcore/_scan.c).", -1, methods,
};

PyMODINIT_FUNC
PyInit__scan(void)
{
    return PyModule_Create(&module);
}
