/* The marking walk of simcore.html in one pass of C over the Lexbor tree of a page's body.
 *
 * What simcore.html._mark does with Python calls per element — find the links, images and
 * region elements, insert the marker characters as text nodes around them, replace images by
 * their alt text, drop scripts and styles — and what the body's text(separator=" ") then reads,
 * this walk does without touching the tree: it writes the text the marked tree would give.
 *
 * bind(path) -> bool
 *     Looks up the Lexbor functions below in the selectolax module already loaded from
 *     ``path``. False when one is missing (another selectolax build): the caller keeps the
 *     Python path.
 *     The href of every link element (a, area) in document order outside dropped elements:
 *     its text, None for a bare attribute, False when it has none; and how deep the elements
 *     walked nest below ``body`` (1: children of the body only).
 * head(head, title_tag, link_tag) -> (title, links)
 * text(body, classes, kept, text_tag) -> (text, markers)
 *     The body's text as the marked tree gives it — fragments (text nodes, markers, alt text)
 *     joined by one space — and how many marker characters were written. ``kept`` has one
 *     byte per link of links(): 1 when its target is kept.
 * parse(html_element, html, depth, seconds, step) -> 0, TOO_DEEP or TOO_SLOW
 *     Parses ``html`` (UTF-8 bytes) into the document the element at ``html_element`` (a
 *     parser's root, of a document already parsed) belongs to, in place of what it holds: what
 *     selectolax's parser does in one call, in pieces of ``step`` bytes (Lexbor's chunk parsing,
 *     which gives the same tree), so that between two pieces the parse can stop. It stops — the
 *     document closed on what was read — when an element lies deeper than ``depth`` elements
 *     below the document on the tree's last branch (where the open elements of a page being
 *     parsed are, but for content a table moves before it), TOO_DEEP; or when the parse has
 *     taken more than ``seconds`` of this thread's CPU time, TOO_SLOW. Lexbor's tree builder
 *     looks through the open elements for many tags, so a page of deeply nested elements costs
 *     the square of its depth: 200,000 nested divs took minutes.
 * links(body, classes) -> (hrefs, depth)
 *     What the head's CSS queries "title" (the first) and "link[rel][href]" find: the text of
 *     the head's first title element (None when it has none), and the (rel, href) values of
 *     its link elements with both attributes, in document order ("" for a bare attribute).
 *
 * ``body`` is the address of the body element (selectolax's LexborNode.mem_id); ``classes``
 * one byte per tag id below 256: DROPPED, LINK, AREA, IMAGE flags and the region marker
 * before (bits 4-5) and after (bits 6-7) the element. Tag ids from 256 on (custom elements)
 * are none of these. The markers are those of simcore.html: U+FDD0 link start, U+FDD1 link
 * end, U+FDD2 SYNTACTIC, U+FDD3 TOPICAL, U+FDD4 break.
 *
 * The tests compare every page this parses with the Python path (tests/test_html.py).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <dlfcn.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

enum { DROPPED = 1, LINK = 2, AREA = 4, IMAGE = 8, BEFORE_SHIFT = 4, AFTER_SHIFT = 6, MARKER_MASK = 3 };
/* What an element leaves to write after its content: a link's end, an area's anchor. */
enum { POST_END = 4, POST_AREA = 8 };

typedef void node_t;
typedef void attr_t;
typedef uintptr_t tag_id_t;

static node_t *(*first_child)(node_t *);
static node_t *(*next_sibling)(node_t *);
static node_t *(*parent_of)(node_t *);
static tag_id_t (*tag_id_of)(node_t *);
static unsigned char *(*text_content)(node_t *, size_t *);
static attr_t *(*first_attribute)(node_t *);
static attr_t *(*next_attribute)(attr_t *);
static const unsigned char *(*qualified_name)(attr_t *, size_t *);
static const unsigned char *(*attribute_value)(attr_t *, size_t *);
static node_t *(*last_child)(node_t *);
static unsigned (*node_type)(node_t *);
static unsigned (*parse_begin)(void *);
static unsigned (*parse_chunk)(void *, const unsigned char *, size_t);
static unsigned (*parse_end)(void *);
static int bound = 0;

/* Lexbor's node types (lxb_dom_node_type_t) and what parse() returns when it stops early. */
enum { ELEMENT_NODE = 1, DOCUMENT_NODE = 9 };
enum { PARSED = 0, TOO_DEEP = 1, TOO_SLOW = 2 };

/* The region markers by their two-bit code (0: none) and the link markers, in UTF-8. */
static const char *const REGION[4] = {NULL, "\xef\xb7\x92", "\xef\xb7\x93", "\xef\xb7\x94"};
static const char START[] = "\xef\xb7\x90";
static const char END[] = "\xef\xb7\x91";

static PyObject *
walk_bind(PyObject *self, PyObject *args)
{
    const char *path;
    if (!PyArg_ParseTuple(args, "s", &path))
        return NULL;
    void *module = dlopen(path, RTLD_NOW | RTLD_NOLOAD);
    if (module == NULL)
        Py_RETURN_FALSE;
    struct { void **into; const char *name; } wanted[] = {
        {(void **)&first_child, "lxb_dom_node_first_child_noi"},
        {(void **)&next_sibling, "lxb_dom_node_next_noi"},
        {(void **)&parent_of, "lxb_dom_node_parent_noi"},
        {(void **)&tag_id_of, "lxb_dom_node_tag_id_noi"},
        {(void **)&text_content, "lxb_dom_node_text_content"},
        {(void **)&first_attribute, "lxb_dom_element_first_attribute_noi"},
        {(void **)&next_attribute, "lxb_dom_element_next_attribute_noi"},
        {(void **)&qualified_name, "lxb_dom_attr_qualified_name"},
        {(void **)&attribute_value, "lxb_dom_attr_value_noi"},
        {(void **)&last_child, "lxb_dom_node_last_child_noi"},
        {(void **)&node_type, "lxb_dom_node_type_noi"},
        {(void **)&parse_begin, "lxb_html_document_parse_chunk_begin"},
        {(void **)&parse_chunk, "lxb_html_document_parse_chunk"},
        {(void **)&parse_end, "lxb_html_document_parse_chunk_end"},
    };
    for (size_t i = 0; i < sizeof wanted / sizeof wanted[0]; i++) {
        *wanted[i].into = dlsym(module, wanted[i].name);
        if (*wanted[i].into == NULL) {
            dlclose(module);
            Py_RETURN_FALSE;
        }
    }
    /* The module stays loaded while Python holds it; this handle keeps it so as well. */
    bound = 1;
    Py_RETURN_TRUE;
}

/* The attribute of ``element`` whose qualified name is ``name`` (ASCII case-insensitively, as
 * HTML matches attribute names), or NULL. */
static attr_t *
attribute(node_t *element, const char *name, size_t length)
{
    for (attr_t *attr = first_attribute(element); attr != NULL; attr = next_attribute(attr)) {
        size_t n = 0;
        const unsigned char *q = qualified_name(attr, &n);
        if (q != NULL && n == length) {
            size_t i = 0;
            while (i < n && (q[i] | 0x20) == (unsigned char)name[i])
                i++;
            if (i == n)
                return attr;
        }
    }
    return NULL;
}

/* What each open element of the walk leaves to write when its subtree ends. */
typedef struct {
    unsigned char *posts;
    Py_ssize_t depth, capacity;
} Stack;

static int
stack_push(Stack *s, unsigned char post)
{
    if (s->depth == s->capacity) {
        Py_ssize_t capacity = s->capacity ? 2 * s->capacity : 64;
        unsigned char *posts = PyMem_Realloc(s->posts, capacity);
        if (posts == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        s->posts = posts;
        s->capacity = capacity;
    }
    s->posts[s->depth++] = post;
    return 0;
}

typedef struct {
    char *data;
    Py_ssize_t length, capacity;
    Py_ssize_t fragments;
    Py_ssize_t markers;
} Text;

static int
text_reserve(Text *t, size_t more)
{
    if ((size_t)(t->capacity - t->length) >= more)
        return 0;
    size_t capacity = t->capacity ? (size_t)t->capacity : 4096;
    while (capacity - (size_t)t->length < more)
        capacity *= 2;
    char *data = PyMem_Realloc(t->data, capacity);
    if (data == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    t->data = data;
    t->capacity = (Py_ssize_t)capacity;
    return 0;
}

/* A fragment of text, after a space when it is not the first (as text(separator=" ")). */
static int
text_add(Text *t, const char *data, size_t length)
{
    if (text_reserve(t, length + 1) < 0)
        return -1;
    if (t->fragments++ > 0)
        t->data[t->length++] = ' ';
    memcpy(t->data + t->length, data, length);
    t->length += (Py_ssize_t)length;
    return 0;
}

static int
marker_add(Text *t, const char *marker)
{
    t->markers++;
    return text_add(t, marker, 3);
}

/* The alt text of ``element`` ("" for a bare attribute) and its length, or NULL when it has none. */
static const char *
alt_of(node_t *element, size_t *length)
{
    attr_t *alt = attribute(element, "alt", 3);
    *length = 0;
    if (alt == NULL)
        return NULL;
    const unsigned char *value = attribute_value(alt, length);
    if (value == NULL) {
        *length = 0;
        return "";
    }
    return (const char *)value;
}

/* An area's anchor: its alt text between a link's start and end (the text the one text node
 * "START alt END" inserted after the area gives). */
static int
area_add(Text *t, node_t *area)
{
    size_t n;
    const char *alt = alt_of(area, &n);
    if (marker_add(t, START) < 0 || text_add(t, alt != NULL ? alt : "", n) < 0 || marker_add(t, END) < 0)
        return -1;
    return 0;
}

static int
leave(Text *t, node_t *element, unsigned char post)
{
    if ((post & POST_END) && marker_add(t, END) < 0)
        return -1;
    if ((post & POST_AREA) && area_add(t, element) < 0)
        return -1;
    if ((post & MARKER_MASK) && marker_add(t, REGION[post & MARKER_MASK]) < 0)
        return -1;
    return 0;
}

typedef struct {
    const unsigned char *classes;
    tag_id_t text_tag;
    /* links(): the hrefs found; text(): the kept bytes and where the walk is in them */
    PyObject *hrefs;
    const char *kept;
    Py_ssize_t n_kept, link;
    Text text;
    Py_ssize_t depth;  /* how deep the elements walked nest below the root */
} Walk;

static PyObject *
href_of(node_t *element)
{
    attr_t *href = attribute(element, "href", 4);
    if (href == NULL)
        Py_RETURN_FALSE;
    size_t n = 0;
    const unsigned char *value = attribute_value(href, &n);
    if (value == NULL)
        Py_RETURN_NONE;
    return PyUnicode_DecodeUTF8((const char *)value, (Py_ssize_t)n, "replace");
}

/* Enter one element: record or mark it. Returns what to write when its subtree ends, or -1
 * on error; sets *skip when its subtree is not to be walked. */
static int
enter(Walk *w, node_t *node, unsigned char cls, int *skip)
{
    int post = 0;
    *skip = 0;
    if (cls & LINK) {
        if (w->hrefs != NULL) {
            PyObject *href = href_of(node);
            if (href == NULL || PyList_Append(w->hrefs, href) < 0) {
                Py_XDECREF(href);
                return -1;
            }
            Py_DECREF(href);
            return 0;
        }
        if (w->link >= w->n_kept) {
            PyErr_SetString(PyExc_ValueError, "kept: fewer bytes than the page has links");
            return -1;
        }
        if (w->kept[w->link++]) {
            if (cls & AREA)
                post |= POST_AREA;
            else {
                if (marker_add(&w->text, START) < 0)
                    return -1;
                post |= POST_END;
            }
        }
    }
    if (cls & IMAGE) {
        size_t n;
        const char *alt = alt_of(node, &n);
        if (alt != NULL) {  /* replaced by its alt text: the element and anything in it go */
            *skip = 1;
            if (w->hrefs == NULL && text_add(&w->text, alt, n) < 0)
                return -1;
            return 0;
        }
    }
    if (w->hrefs != NULL)
        return 0;
    unsigned before = (cls >> BEFORE_SHIFT) & MARKER_MASK;
    if (before && marker_add(&w->text, REGION[before]) < 0)
        return -1;
    return post | ((cls >> AFTER_SHIFT) & MARKER_MASK);
}

static int
walk(Walk *w, node_t *root)
{
    Stack stack = {NULL, 0, 0};
    int status = 0;
    node_t *node = first_child(root);
    while (node != NULL) {
        tag_id_t tag = tag_id_of(node);
        int descend = 0;
        if (tag == w->text_tag) {
            if (w->hrefs == NULL) {
                size_t n = 0;
                unsigned char *data = text_content(node, &n);
                if (data != NULL && text_add(&w->text, (const char *)data, n) < 0)
                    goto fail;
            }
        }
        else {
            unsigned char cls = tag < 256 ? w->classes[tag] : 0;
            if (!(cls & DROPPED) && stack.depth >= w->depth && node_type(node) == ELEMENT_NODE)
                w->depth = stack.depth + 1;
            if (!(cls & DROPPED)) {
                int skip;
                int post = enter(w, node, cls, &skip);
                if (post < 0)
                    goto fail;
                if (!skip) {
                    if (first_child(node) != NULL) {
                        if (stack_push(&stack, (unsigned char)post) < 0)
                            goto fail;
                        descend = 1;
                    }
                    else if (w->hrefs == NULL && leave(&w->text, node, (unsigned char)post) < 0)
                        goto fail;
                }
            }
        }
        if (descend) {
            node = first_child(node);
            continue;
        }
        /* on to the next sibling, leaving every element whose last child this was */
        for (;;) {
            node_t *next = next_sibling(node);
            if (next != NULL) {
                node = next;
                break;
            }
            node = parent_of(node);
            if (node == NULL || node == root || stack.depth == 0) {
                node = NULL;
                break;
            }
            unsigned char post = stack.posts[--stack.depth];
            if (w->hrefs == NULL && leave(&w->text, node, post) < 0)
                goto fail;
        }
    }
    goto done;
fail:
    status = -1;
done:
    PyMem_Free(stack.posts);
    return status;
}

static int
parse_common(PyObject *address, Py_buffer *classes, node_t **root)
{
    if (!bound) {
        PyErr_SetString(PyExc_RuntimeError, "not bound to Lexbor: call bind() first");
        return -1;
    }
    if (classes->len != 256) {
        PyErr_SetString(PyExc_ValueError, "classes: expected 256 bytes");
        return -1;
    }
    *root = PyLong_AsVoidPtr(address);
    if (*root == NULL) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_ValueError, "body: a null address");
        return -1;
    }
    return 0;
}

static PyObject *
walk_links(PyObject *self, PyObject *args)
{
    PyObject *address;
    Py_buffer classes;
    if (!PyArg_ParseTuple(args, "Oy*", &address, &classes))
        return NULL;
    PyObject *result = NULL;
    node_t *root;
    Walk w = {0};
    if (parse_common(address, &classes, &root) < 0)
        goto done;
    w.classes = classes.buf;
    w.text_tag = (tag_id_t)-1;  /* text nodes are not read */
    w.hrefs = PyList_New(0);
    if (w.hrefs == NULL || walk(&w, root) < 0)
        goto done;
    result = Py_BuildValue("(On)", w.hrefs, w.depth);
done:
    Py_XDECREF(w.hrefs);
    PyBuffer_Release(&classes);
    return result;
}

static PyObject *
walk_text(PyObject *self, PyObject *args)
{
    PyObject *address;
    Py_buffer classes, kept;
    unsigned long long text_tag;
    if (!PyArg_ParseTuple(args, "Oy*y*K", &address, &classes, &kept, &text_tag))
        return NULL;
    PyObject *result = NULL;
    node_t *root;
    Walk w = {0};
    if (parse_common(address, &classes, &root) < 0)
        goto done;
    w.classes = classes.buf;
    w.text_tag = (tag_id_t)text_tag;
    w.kept = kept.buf;
    w.n_kept = kept.len;
    if (walk(&w, root) < 0)
        goto done;
    if (w.link != w.n_kept) {
        PyErr_SetString(PyExc_ValueError, "kept: more bytes than the page has links");
        goto done;
    }
    PyObject *text = PyUnicode_DecodeUTF8(w.text.data ? w.text.data : "", w.text.length, "replace");
    if (text == NULL)
        goto done;
    result = Py_BuildValue("(Nn)", text, w.text.markers);
done:
    PyMem_Free(w.text.data);
    PyBuffer_Release(&classes);
    PyBuffer_Release(&kept);
    return result;
}

/* The value of ``element``'s attribute ``name`` ("" for a bare one); NULL with no exception
 * when it has none. */
static PyObject *
attribute_text(node_t *element, const char *name, size_t length)
{
    attr_t *attr = attribute(element, name, length);
    if (attr == NULL)
        return NULL;
    size_t n = 0;
    const unsigned char *value = attribute_value(attr, &n);
    return PyUnicode_DecodeUTF8(value != NULL ? (const char *)value : "", value != NULL ? (Py_ssize_t)n : 0,
                                "replace");
}

static PyObject *
walk_head(PyObject *self, PyObject *args)
{
    PyObject *address;
    unsigned long long title_tag, link_tag;
    if (!PyArg_ParseTuple(args, "OKK", &address, &title_tag, &link_tag))
        return NULL;
    if (!bound) {
        PyErr_SetString(PyExc_RuntimeError, "not bound to Lexbor: call bind() first");
        return NULL;
    }
    node_t *root = PyLong_AsVoidPtr(address);
    if (root == NULL) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_ValueError, "head: a null address");
        return NULL;
    }
    PyObject *title = NULL, *links = PyList_New(0);
    if (links == NULL)
        return NULL;
    /* Every descendant in document order: down to the first child, else on to the next
     * sibling of the nearest ancestor that has one, up to the root. */
    node_t *node = first_child(root);
    while (node != NULL) {
        tag_id_t tag = tag_id_of(node);
        if (tag == title_tag && title == NULL) {
            size_t n = 0;
            unsigned char *data = text_content(node, &n);
            title = PyUnicode_DecodeUTF8(data != NULL ? (const char *)data : "", data != NULL ? (Py_ssize_t)n : 0,
                                         "replace");
            if (title == NULL)
                goto fail;
        }
        else if (tag == link_tag) {
            PyObject *rel = attribute_text(node, "rel", 3);
            if (rel == NULL && PyErr_Occurred())
                goto fail;
            PyObject *href = rel != NULL ? attribute_text(node, "href", 4) : NULL;
            if (href == NULL) {
                Py_XDECREF(rel);
                if (PyErr_Occurred())
                    goto fail;
            }
            else {
                PyObject *pair = PyTuple_Pack(2, rel, href);
                Py_DECREF(rel);
                Py_DECREF(href);
                if (pair == NULL || PyList_Append(links, pair) < 0) {
                    Py_XDECREF(pair);
                    goto fail;
                }
                Py_DECREF(pair);
            }
        }
        node_t *next = first_child(node);
        while (next == NULL && node != NULL) {
            next = next_sibling(node);
            if (next == NULL) {
                node = parent_of(node);
                if (node == root)
                    node = NULL;
            }
        }
        node = next;
    }
    PyObject *result = Py_BuildValue("(OO)", title != NULL ? title : Py_None, links);
    Py_XDECREF(title);
    Py_DECREF(links);
    return result;
fail:
    Py_XDECREF(title);
    Py_DECREF(links);
    return NULL;
}

/* Whether an element lies more than ``limit`` elements below ``document`` on its last branch. */
static int
deeper_than(node_t *document, Py_ssize_t limit)
{
    Py_ssize_t depth = 0;
    for (node_t *node = last_child(document); node != NULL; node = last_child(node))
        if (node_type(node) == ELEMENT_NODE && ++depth > limit)
            return 1;
    return 0;
}

static double
cpu_seconds(void)
{
    struct timespec now;
    if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now) != 0)
        return 0.0;
    return (double)now.tv_sec + now.tv_nsec * 1e-9;
}

static PyObject *
walk_parse(PyObject *self, PyObject *args)
{
    PyObject *address;
    Py_buffer html;
    Py_ssize_t limit, step;
    double seconds;
    if (!PyArg_ParseTuple(args, "Oy*ndn", &address, &html, &limit, &seconds, &step))
        return NULL;
    PyObject *result = NULL;
    if (!bound) {
        PyErr_SetString(PyExc_RuntimeError, "not bound to Lexbor: call bind() first");
        goto done;
    }
    if (step <= 0) {
        PyErr_SetString(PyExc_ValueError, "step: expected a positive number of bytes");
        goto done;
    }
    node_t *root = PyLong_AsVoidPtr(address);
    if (root == NULL) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_ValueError, "html_element: a null address");
        goto done;
    }
    node_t *document = parent_of(root);
    if (document == NULL || node_type(document) != DOCUMENT_NODE) {
        PyErr_SetString(PyExc_ValueError, "html_element: not the root element of a document");
        goto done;
    }
    int stopped = PARSED;
    unsigned status, end_status;
    const unsigned char *data = html.buf;
    Py_BEGIN_ALLOW_THREADS
    double start = cpu_seconds();
    status = parse_begin(document);
    for (Py_ssize_t at = 0; status == 0 && at < html.len; at += step) {
        status = parse_chunk(document, data + at, (size_t)(html.len - at < step ? html.len - at : step));
        if (status != 0)
            break;
        if (deeper_than(document, limit))
            stopped = TOO_DEEP;
        else if (cpu_seconds() - start > seconds)
            stopped = TOO_SLOW;
        if (stopped != PARSED)
            break;
    }
    end_status = parse_end(document);
    Py_END_ALLOW_THREADS
    if (status != 0 || end_status != 0) {
        PyErr_Format(PyExc_RuntimeError, "Lexbor could not parse the page (status %u)", status ? status : end_status);
        goto done;
    }
    result = PyLong_FromLong(stopped);
done:
    PyBuffer_Release(&html);
    return result;
}

static PyMethodDef methods[] = {
    {"bind", walk_bind, METH_VARARGS, "Look up the Lexbor functions in the selectolax module loaded from a path."},
    {"parse", walk_parse, METH_VARARGS, "Parse a page into a document in pieces, within a depth and a time."},
    {"links", walk_links, METH_VARARGS, "The hrefs of a body's link elements in document order, and their depth."},
    {"text", walk_text, METH_VARARGS, "A body's text with the markers, and how many were written."},
    {"head", walk_head, METH_VARARGS, "The text of a head's first title and its link elements' (rel, href)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_walk", NULL, -1, methods};

PyMODINIT_FUNC
PyInit__walk(void)
{
    return PyModule_Create(&module);
}
