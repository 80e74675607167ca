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

static PyObject *
scan(PyObject *module, PyObject *args)
{
    PyObject *text;
    Py_buffer table;
    if (!PyArg_ParseTuple(args, "Uy*:scan", &text, &table))
        return NULL;
    if (table.len != 0x10000) {
        PyErr_Format(PyExc_ValueError, "scan: expected 65536 class bytes, got %zd", table.len);
        PyBuffer_Release(&table);
        return NULL;
    }
    if (PyUnicode_READY(text) < 0) {
        PyBuffer_Release(&table);
        return NULL;
    }
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

static PyMethodDef methods[] = {
    {"scan", scan, METH_VARARGS, "scan(text, classes) -> (words, kinds, before, markers)"},
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
