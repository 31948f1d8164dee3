/*
 * stream.c - Stream (one registry entry) and KeyedStream (s.derive(k0, k1)).
 *
 * generate(dist, n) returns a new NumPy array; generate(dist, out=buf)
 * fills a writable, C-contiguous buffer whose itemsize is the dist's
 * (TypeError / ValueError otherwise) and returns it.  Draws run with the
 * GIL released.  A KeyedStream draws through rngsnap_generate_at from its
 * own position, which only it advances.
 */
#include "rngsnap_py.h"

static const struct {
    const char *name, *dtype;
    rngsnap_dist dist;
} rsp_dists[] = {
    {"u32", "uint32", RNGSNAP_U32},
    {"u64", "uint64", RNGSNAP_U64},
    {"f32", "float32", RNGSNAP_F32},
    {"f64", "float64", RNGSNAP_F64},
    {"normal_f32", "float32", RNGSNAP_NORMAL_F32},
    {"normal_f64", "float64", RNGSNAP_NORMAL_F64},
    {"curand_uniform_f32", "float32", RNGSNAP_CURAND_UNIFORM_F32},
    {"curand_uniform_f64", "float64", RNGSNAP_CURAND_UNIFORM_F64},
    {"curand_normal_f32", "float32", RNGSNAP_CURAND_NORMAL_F32},
    {"curand_normal_f64", "float64", RNGSNAP_CURAND_NORMAL_F64},
};
#define RSP_NDISTS (sizeof rsp_dists / sizeof rsp_dists[0])

/* Index into rsp_dists, or -1 with ValueError/TypeError set. */
static int dist_index(PyObject *name)
{
    const char *s = PyUnicode_Check(name) ? PyUnicode_AsUTF8(name) : NULL;
    if (!s) {
        if (!PyErr_Occurred())
            PyErr_Format(PyExc_TypeError, "dist must be a str, not %.100s",
                         Py_TYPE(name)->tp_name);
        return -1;
    }
    for (size_t i = 0; i < RSP_NDISTS; i++)
        if (strcmp(s, rsp_dists[i].name) == 0)
            return (int)i;
    PyErr_Format(PyExc_ValueError, "unknown dist '%s'; one of u32 u64 f32 "
                 "f64 normal_f32 normal_f64 curand_uniform_f32 "
                 "curand_uniform_f64 curand_normal_f32 curand_normal_f64", s);
    return -1;
}

int rsp_dist_from(PyObject *name)
{
    int i = dist_index(name);
    return i < 0 ? -1 : (int)rsp_dists[i].dist;
}

/* A new 1-D NumPy array of n values of dtype. */
static PyObject *new_array(const char *dtype, Py_ssize_t n)
{
    static PyObject *empty; /* numpy.empty, imported on first use */
    if (!empty) {
        PyObject *np = PyImport_ImportModule("numpy");
        if (!np)
            return NULL;
        empty = PyObject_GetAttrString(np, "empty");
        Py_DECREF(np);
        if (!empty)
            return NULL;
    }
    return PyObject_CallFunction(empty, "ns", n, dtype);
}

/* Where a draw goes: a buffer held until release_target. */
typedef struct {
    PyObject *result; /* returned to the caller */
    Py_buffer view;
    int have_view;
    size_t n;
} rsp_target;

static void release_target(rsp_target *t)
{
    if (t->have_view)
        PyBuffer_Release(&t->view);
    t->have_view = 0;
}

/* Parse generate(dist, n=None, *, out=None) into *dist and *t. */
static int parse_generate(PyObject *args, PyObject *kw, rngsnap_dist *dist,
                          rsp_target *t)
{
    static char *kwlist[] = {"dist", "n", "out", NULL};
    PyObject *name, *pn = Py_None, *out = Py_None;
    memset(t, 0, sizeof *t);
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O|O$O:generate", kwlist,
                                     &name, &pn, &out))
        return -1;
    int i = dist_index(name);
    if (i < 0)
        return -1;
    *dist = rsp_dists[i].dist;
    size_t isize = rngsnap_dist_size(*dist);
    Py_ssize_t n = -1;
    if (pn != Py_None) {
        n = PyNumber_AsSsize_t(pn, PyExc_OverflowError);
        if (n == -1 && PyErr_Occurred())
            return -1;
        if (n < 0) {
            PyErr_SetString(PyExc_ValueError, "n must be >= 0");
            return -1;
        }
    }
    if (out == Py_None) {
        if (n < 0) {
            PyErr_SetString(PyExc_TypeError,
                            "generate needs n or out=buffer");
            return -1;
        }
        t->result = new_array(rsp_dists[i].dtype, n);
        if (!t->result)
            return -1;
        out = t->result;
    } else {
        t->result = Py_NewRef(out);
    }
    if (PyObject_GetBuffer(out, &t->view, PyBUF_FULL_RO) < 0) {
        PyErr_Clear();
        PyErr_Format(PyExc_TypeError, "out must support the buffer "
                     "protocol (e.g. a NumPy array), not %.100s",
                     Py_TYPE(out)->tp_name);
        goto fail;
    }
    t->have_view = 1;
    if (t->view.readonly) {
        PyErr_SetString(PyExc_TypeError, "out is read-only");
        goto fail;
    }
    if (!PyBuffer_IsContiguous(&t->view, 'C')) {
        PyErr_SetString(PyExc_ValueError, "out must be C-contiguous");
        goto fail;
    }
    /* Values are written in native byte order: a '>' array would read
     * as other numbers. */
    const char *fmt = t->view.format;
    char other = PY_LITTLE_ENDIAN ? '>' : '<';
    if (fmt && (fmt[0] == other || (PY_LITTLE_ENDIAN && fmt[0] == '!'))) {
        PyErr_Format(PyExc_ValueError, "out has non-native byte order "
                     "(format '%s')", fmt);
        goto fail;
    }
    if ((size_t)t->view.itemsize != isize) {
        PyErr_Format(PyExc_TypeError, "out has items of %zd bytes; %s "
                     "values are %zu bytes", t->view.itemsize,
                     rsp_dists[i].name, isize);
        goto fail;
    }
    size_t have = (size_t)(t->view.len / t->view.itemsize);
    if (n >= 0 && (size_t)n > have) {
        PyErr_Format(PyExc_ValueError, "n = %zd but out holds %zu values",
                     n, have);
        goto fail;
    }
    t->n = n >= 0 ? (size_t)n : have;
    return 0;
fail:
    release_target(t);
    Py_CLEAR(t->result);
    return -1;
}

/* ---- Stream ---------------------------------------------------------- */

/* Streams are GC objects: an app-state callable holding a stream (a
 * sampler object: ctx -> callable -> sampler -> stream -> ctx) is a cycle
 * the collector must see through, or a dropped context is never freed.
 * No tp_clear: the context's clears the callables, which breaks it, and a
 * stream never has a NULL owner. */
PyObject *rsp_stream_new(rsp_context *owner, rngsnap_stream *s)
{
    rsp_stream *o = PyObject_GC_New(rsp_stream, &rsp_stream_type);
    if (!o)
        return NULL;
    o->owner = (rsp_context *)Py_NewRef((PyObject *)owner);
    o->s = s;
    PyObject_GC_Track(o);
    return (PyObject *)o;
}

static int stream_traverse(rsp_stream *self, visitproc visit, void *arg)
{
    Py_VISIT(self->owner);
    return 0;
}

static void stream_dealloc(rsp_stream *self)
{
    PyObject_GC_UnTrack(self);
    Py_XDECREF(self->owner);
    PyObject_GC_Del(self);
}

static PyObject *stream_generate(rsp_stream *self, PyObject *args,
                                 PyObject *kw)
{
    rngsnap_dist dist;
    rsp_target t;
    if (parse_generate(args, kw, &dist, &t))
        return NULL;
    /* After the parse: it runs Python code (n's __index__, numpy.empty,
     * a buffer's export), which may close the context. */
    if (!rsp_ctx_get(self->owner)) {
        release_target(&t);
        Py_DECREF(t.result);
        return NULL;
    }
    int rc;
    self->owner->busy++;
    Py_BEGIN_ALLOW_THREADS
    rc = rngsnap_generate(self->s, dist, t.view.buf, t.n);
    Py_END_ALLOW_THREADS
    self->owner->busy--;
    release_target(&t);
    if (rc) {
        Py_DECREF(t.result);
        return rsp_raise(self->owner, rc);
    }
    return t.result;
}

static PyObject *philox_tuple(const rngsnap_philox *at)
{
    return Py_BuildValue("(KKK)", (unsigned long long)at->seed,
                         (unsigned long long)at->subsequence,
                         (unsigned long long)at->offset);
}

static PyObject *stream_reserve(rsp_stream *self, PyObject *arg)
{
    uint64_t n;
    if (rsp_u64(arg, "n", &n) < 0 || !rsp_ctx_get(self->owner))
        return NULL;
    rngsnap_philox at;
    int rc;
    RSP_WITHOUT_GIL(self->owner, rc = rngsnap_reserve(self->s, n, &at));
    return rc ? rsp_raise(self->owner, rc) : philox_tuple(&at);
}

static PyObject *stream_position(rsp_stream *self, PyObject *unused)
{
    (void)unused;
    if (!rsp_ctx_get(self->owner))
        return NULL;
    rngsnap_philox at;
    int rc;
    RSP_WITHOUT_GIL(self->owner, rc = rngsnap_stream_position(self->s, &at));
    return rc ? rsp_raise(self->owner, rc) : philox_tuple(&at);
}

typedef struct rsp_keyed {
    PyObject_HEAD
    rsp_stream *stream; /* strong */
    rngsnap_philox at;  /* this keyed stream's own position */
    int busy;           /* a draw is running (GIL released) */
} rsp_keyed;

static PyObject *stream_derive(rsp_stream *self, PyObject *args)
{
    PyObject *o0, *o1 = NULL;
    uint64_t k0, k1 = 0;
    /* Not "K": it wraps -1 and 2**64 silently onto other keys. */
    if (!PyArg_ParseTuple(args, "O|O:derive", &o0, &o1)
        || rsp_u64(o0, "k0", &k0) < 0
        || (o1 && rsp_u64(o1, "k1", &k1) < 0)
        || !rsp_ctx_get(self->owner))
        return NULL;
    rngsnap_philox at;
    int rc;
    RSP_WITHOUT_GIL(self->owner, rc = rngsnap_derive(self->s, k0, k1, &at));
    if (rc)
        return rsp_raise(self->owner, rc);
    rsp_keyed *o = PyObject_GC_New(rsp_keyed, &rsp_keyed_type);
    if (!o)
        return NULL;
    o->stream = (rsp_stream *)Py_NewRef((PyObject *)self);
    o->at = at;
    o->busy = 0;
    PyObject_GC_Track(o);
    return (PyObject *)o;
}

static PyObject *stream_get_str(rsp_stream *self, void *which)
{
    if (!rsp_ctx_get(self->owner))
        return NULL;
    if (which == (void *)2)
        return PyLong_FromLong(rngsnap_stream_device(self->s));
    return PyUnicode_FromString(which ? rngsnap_stream_name(self->s)
                                      : rngsnap_stream_backend(self->s));
}

static PyObject *stream_repr(rsp_stream *self)
{
    if (!self->owner->ctx)
        return PyUnicode_FromString("<rngsnap.Stream of a closed context>");
    return PyUnicode_FromFormat("<rngsnap.Stream %s:%d/%s>",
                                rngsnap_stream_backend(self->s),
                                rngsnap_stream_device(self->s),
                                rngsnap_stream_name(self->s));
}

/* pickle (a DataLoader worker started by spawn or forkserver, any
 * multiprocessing): refused, saying why and what crosses instead. */
static PyObject *no_pickle(PyObject *self, PyObject *unused)
{
    (void)unused;
    return PyErr_Format(PyExc_TypeError,
                        "cannot pickle an %s: a stream's position belongs "
                        "to the process that opened its rngsnap.Context, "
                        "and a copy in another process (a DataLoader worker "
                        "started by spawn or forkserver) would draw the "
                        "same numbers as the original. Send keys instead "
                        "and draw in the main process "
                        "(rngsnap.torch.ResumableSampler with KeyedDataset: "
                        "only integers and bytes cross into a worker)",
                        Py_TYPE(self)->tp_name);
}

static PyMethodDef stream_methods[] = {
    {"__reduce__", no_pickle, METH_NOARGS, NULL},
    {"generate", (PyCFunction)(void (*)(void))stream_generate,
     METH_VARARGS | METH_KEYWORDS,
     "generate(dist, n) -> numpy array; generate(dist, out=buffer) -> out"},
    {"reserve", (PyCFunction)stream_reserve, METH_O,
     "reserve(n) -> (seed, subsequence, offset) of the first of n words "
     "handed to your own kernels; the stream advances by n."},
    {"position", (PyCFunction)stream_position, METH_NOARGS,
     "position() -> (seed, subsequence, offset), without advancing."},
    {"derive", (PyCFunction)stream_derive, METH_VARARGS,
     "derive(k0, k1=0) -> KeyedStream: the keyed stream of (k0, k1)."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef stream_getset[] = {
    {"backend", (getter)stream_get_str, NULL, "backend name", NULL},
    {"name", (getter)stream_get_str, NULL, "stream name", (void *)1},
    {"device", (getter)stream_get_str, NULL, "device index", (void *)2},
    {NULL, NULL, NULL, NULL, NULL},
};

PyTypeObject rsp_stream_type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "rngsnap.Stream",
    .tp_basicsize = sizeof(rsp_stream),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "One (backend, device, name) stream; from Context.stream().",
    .tp_dealloc = (destructor)stream_dealloc,
    .tp_traverse = (traverseproc)stream_traverse,
    .tp_repr = (reprfunc)stream_repr,
    .tp_methods = stream_methods,
    .tp_getset = stream_getset,
};

/* ---- KeyedStream ----------------------------------------------------- */

static int keyed_traverse(rsp_keyed *self, visitproc visit, void *arg)
{
    Py_VISIT(self->stream);
    return 0;
}

static void keyed_dealloc(rsp_keyed *self)
{
    PyObject_GC_UnTrack(self);
    Py_XDECREF(self->stream);
    PyObject_GC_Del(self);
}

static PyObject *keyed_generate(rsp_keyed *self, PyObject *args,
                                PyObject *kw)
{
    rsp_context *owner = self->stream->owner;
    rngsnap_dist dist;
    rsp_target t;
    if (parse_generate(args, kw, &dist, &t))
        return NULL;
    /* Checked after the parse, which runs Python code (see generate). */
    if (self->busy) /* two draws would both start at self->at */
        PyErr_Format(PyExc_RuntimeError, "KeyedStream.generate: "
                     "another thread is drawing from this keyed "
                     "stream (derive one per thread)");
    if (self->busy || !rsp_ctx_get(owner)) {
        release_target(&t);
        Py_DECREF(t.result);
        return NULL;
    }
    /* Draw on a copy: the position moves only when the draw succeeds. */
    rngsnap_philox at = self->at;
    int rc;
    owner->busy++;
    self->busy = 1;
    Py_BEGIN_ALLOW_THREADS
    rc = rngsnap_generate_at(self->stream->s, &at, dist, t.view.buf, t.n);
    Py_END_ALLOW_THREADS
    self->busy = 0;
    owner->busy--;
    release_target(&t);
    if (rc) {
        Py_DECREF(t.result);
        return rsp_raise(owner, rc);
    }
    self->at = at;
    return t.result;
}

static PyObject *keyed_position(rsp_keyed *self, PyObject *unused)
{
    (void)unused;
    return philox_tuple(&self->at);
}

static PyMethodDef keyed_methods[] = {
    {"__reduce__", no_pickle, METH_NOARGS, NULL},
    {"generate", (PyCFunction)(void (*)(void))keyed_generate,
     METH_VARARGS | METH_KEYWORDS,
     "generate(dist, n) / generate(dist, out=buffer), as Stream.generate"},
    {"position", (PyCFunction)keyed_position, METH_NOARGS,
     "position() -> (seed, subsequence, offset) of the next word"},
    {NULL, NULL, 0, NULL},
};

PyTypeObject rsp_keyed_type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "rngsnap.KeyedStream",
    .tp_basicsize = sizeof(rsp_keyed),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "A keyed stream from Stream.derive(k0, k1): its own Philox "
              "position, drawn with the parent's backend.",
    .tp_dealloc = (destructor)keyed_dealloc,
    .tp_traverse = (traverseproc)keyed_traverse,
    .tp_methods = keyed_methods,
};
