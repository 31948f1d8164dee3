/*
 * ledger.c - rngsnap.Ledger: the divergence ledger from Python.
 *
 *     with ctx.ledger("run/ledger/") as led:   # one file per rank
 *         ...
 *         led.note("loss", loss)                # bytes, int, float, str
 *         led.step(step)
 *
 * A Ledger keeps its context alive.  step() runs the app states' save
 * callables (tracked and registered generators), so it runs like a save:
 * the GIL released, each callable taking it back.
 */
#include "rngsnap_py.h"

#include "ledger_format.h"

typedef struct rsp_ledger {
    PyObject_HEAD
    rsp_context *owner; /* strong */
    int open;
} rsp_ledger;

PyObject *rsp_ctx_ledger(rsp_context *c, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"path", NULL};
    PyObject *path = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O&:ledger", kwlist,
                                     PyUnicode_FSConverter, &path))
        return NULL;
    rngsnap *ctx = rsp_ctx_get(c);
    if (!ctx) {
        Py_DECREF(path);
        return NULL;
    }
    rsp_ledger *l = PyObject_New(rsp_ledger, &rsp_ledger_type);
    if (!l) {
        Py_DECREF(path);
        return NULL;
    }
    Py_INCREF(c);
    l->owner = c;
    l->open = 0;
    const char *p = PyBytes_AS_STRING(path);
    int rc;
    RSP_WITHOUT_GIL(c, rc = rngsnap_ledger_open(ctx, p, 0));
    Py_DECREF(path);
    if (rc) {
        Py_DECREF(l);
        return rsp_raise(c, rc);
    }
    l->open = 1;
    return (PyObject *)l;
}

/* The context, or NULL with the Error set (closed ledger or context). */
static rngsnap *ledger_ctx(rsp_ledger *l, const char *call)
{
    if (!l->open) {
        rsp_raise_msg(RNGSNAP_E_INVALID, call);
        return NULL;
    }
    return rsp_ctx_get(l->owner);
}

/* v as a number: RS_LG_NOTE_INT (int, or anything with a working
 * __index__: NumPy integers, integer tensors), RS_LG_NOTE_FLOAT (float,
 * or a working __float__: a 0-d float tensor, a NumPy float32), into
 * num (8 bytes LE); 0 when it is neither; -1 with an error set. */
static int note_number(PyObject *v, uint8_t *num)
{
    if (PyLong_Check(v) || (!PyFloat_Check(v) && PyIndex_Check(v))) {
        PyObject *i = PyNumber_Index(v);
        if (!i && !PyLong_Check(v)
            && PyErr_ExceptionMatches(PyExc_TypeError)) {
            PyErr_Clear(); /* a float tensor: try __float__ */
        } else if (!i) {
            return -1;
        } else {
            long long x = PyLong_AsLongLong(i);
            Py_DECREF(i);
            if (x == -1 && PyErr_Occurred()) {
                if (PyErr_ExceptionMatches(PyExc_OverflowError)) {
                    PyErr_Clear();
                    PyErr_Format(PyExc_OverflowError, "led.note(): the "
                                 "int %R does not fit in 64 bits (-2**63 "
                                 "to 2**63 - 1); note str(value) instead",
                                 v);
                }
                return -1;
            }
            rs_lg_put64(num, (uint64_t)x);
            return RS_LG_NOTE_INT;
        }
    }
    if (PyFloat_Check(v) || (Py_TYPE(v)->tp_as_number
                             && Py_TYPE(v)->tp_as_number->nb_float)) {
        double d = PyFloat_AsDouble(v);
        if (d == -1.0 && PyErr_Occurred()) {
            if (PyFloat_Check(v) || !PyErr_ExceptionMatches(PyExc_TypeError))
                return -1;
            PyErr_Clear(); /* an array of many: bytes, if a buffer */
            return 0;
        }
        uint64_t u;
        memcpy(&u, &d, sizeof u);
        rs_lg_put64(num, u);
        return RS_LG_NOTE_FLOAT;
    }
    return 0;
}

static PyObject *led_note(rsp_ledger *l, PyObject *args)
{
    const char *name;
    PyObject *v;
    if (!PyArg_ParseTuple(args, "sO:note", &name, &v))
        return NULL;
    rngsnap *ctx = ledger_ctx(l, "led.note(): the ledger is closed");
    if (!ctx)
        return NULL;
    uint8_t num[8];
    Py_buffer view = {0};
    const void *p = num;
    size_t len = 8;
    int type;
    if (PyUnicode_Check(v)) {
        Py_ssize_t n;
        if (!(p = PyUnicode_AsUTF8AndSize(v, &n)))
            return NULL;
        len = (size_t)n;
        type = RS_LG_NOTE_STR;
    } else if (PyBytes_Check(v) || PyByteArray_Check(v)
               || PyMemoryView_Check(v)) {
        if (PyObject_GetBuffer(v, &view, PyBUF_SIMPLE) < 0)
            return NULL;
        p = view.buf;
        len = (size_t)view.len;
        type = RS_LG_NOTE_BYTES;
    } else if ((type = note_number(v, num)) < 0) {
        return NULL;
    } else if (type == 0 && PyObject_CheckBuffer(v)) { /* a NumPy array */
        if (PyObject_GetBuffer(v, &view, PyBUF_SIMPLE) < 0)
            return NULL;
        p = view.buf;
        len = (size_t)view.len;
        type = RS_LG_NOTE_BYTES;
    } else if (type == 0) {
        return PyErr_Format(PyExc_TypeError, "led.note(%R, ...): the value "
                            "is %.100s; pass bytes, int, float or str",
                            PyTuple_GET_ITEM(args, 0), Py_TYPE(v)->tp_name);
    }
    int rc = rs_ledger_note_typed(ctx, name, type, p, len);
    if (view.obj)
        PyBuffer_Release(&view);
    if (rc)
        return rsp_raise(l->owner, rc);
    Py_RETURN_NONE;
}

static PyObject *led_step(rsp_ledger *l, PyObject *arg)
{
    rngsnap *ctx = ledger_ctx(l, "led.step(): the ledger is closed");
    if (!ctx)
        return NULL;
    uint64_t step;
    if (rsp_u64(arg, "step", &step) < 0)
        return NULL;
    int rc;
    rsp_call call;
    rsp_file_call_begin(l->owner, &call);
    rsp_ledger_reading = 1; /* this thread's callables: ledger readers */
    Py_BEGIN_ALLOW_THREADS
    rc = rngsnap_ledger_step(ctx, step);
    Py_END_ALLOW_THREADS
    rsp_ledger_reading = 0;
    rsp_file_call_end(&call);
    return rsp_file_call_result(l->owner, rc);
}

static PyObject *led_close(rsp_ledger *l, PyObject *unused)
{
    (void)unused;
    if (!l->open)
        Py_RETURN_NONE;
    l->open = 0;
    if (!l->owner->ctx) /* the context's close closed it */
        Py_RETURN_NONE;
    rngsnap *ctx = rsp_ctx_get(l->owner);
    if (!ctx)
        return NULL;
    int rc;
    RSP_WITHOUT_GIL(l->owner, rc = rngsnap_ledger_close(ctx));
    if (rc)
        return rsp_raise(l->owner, rc);
    Py_RETURN_NONE;
}

static PyObject *led_enter(rsp_ledger *l, PyObject *unused)
{
    (void)unused;
    Py_INCREF(l);
    return (PyObject *)l;
}

static PyObject *led_exit(rsp_ledger *l, PyObject *args)
{
    (void)args;
    PyObject *r = led_close(l, NULL);
    Py_XDECREF(r);
    if (!r)
        return NULL;
    Py_RETURN_FALSE;
}

static PyObject *led_closed(rsp_ledger *l, void *unused)
{
    (void)unused;
    return PyBool_FromLong(!l->open || !l->owner->ctx);
}

static void led_dealloc(rsp_ledger *l)
{
    /* Not closed: the context's close (or the next ctx.ledger() after an
     * explicit close) ends it; a dropped Ledger leaves the file open so
     * that a loop's `ctx.ledger(p).step(n)` misuse is not silent data
     * loss: rngsnap_close fsyncs it. */
    Py_XDECREF(l->owner);
    PyObject_Free(l);
}

static PyMethodDef led_methods[] = {
    {"note", (PyCFunction)led_note, METH_VARARGS,
     "note(name, value): a value (bytes, int, float or str) for the next "
     "step's record; noted again before the step, the last value counts"},
    {"step", (PyCFunction)led_step, METH_O,
     "step(n): append step n's record: every stream's position, a digest "
     "of every app state and generator, the notes since the last step"},
    {"close", (PyCFunction)led_close, METH_NOARGS,
     "close(): fsync and close the ledger (ctx.close() also does)"},
    {"__enter__", (PyCFunction)led_enter, METH_NOARGS, NULL},
    {"__exit__", (PyCFunction)led_exit, METH_VARARGS, NULL},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef led_getset[] = {
    {"closed", (getter)led_closed, NULL, "True once closed", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

PyTypeObject rsp_ledger_type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "rngsnap.Ledger",
    .tp_basicsize = sizeof(rsp_ledger),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A divergence ledger (ctx.ledger(path)); see docs/python.md",
    .tp_dealloc = (destructor)led_dealloc,
    .tp_methods = led_methods,
    .tp_getset = led_getset,
};
