/*
 * callbacks.c - app states: the C rngsnap_state_ops calling Python.
 *
 * The C save/load run with the GIL released, so each callback takes it.
 * A Python save() is called once per C size()/save() pair: size() calls
 * it and keeps the bytes, the following save(buf, len) copies them (a
 * load also calls size() alone once first, as a hint).  An exception in a
 * callable, or a save() returning something other than bytes, makes the
 * callback return nonzero (the C load then rolls back) and is kept as the
 * context's pending exception, re-raised as the Error's __cause__ (a
 * KeyboardInterrupt or SystemExit as itself: errors.c).
 * unregister_state removes a state from the core, then frees its
 * callables.
 */
#include "rngsnap_py.h"

_Thread_local int rsp_ledger_reading;

void rsp_drop_pending(rsp_context *c)
{
    Py_CLEAR(c->pending_type);
    Py_CLEAR(c->pending_value);
    Py_CLEAR(c->pending_tb);
}

void rsp_keep_pending(rsp_context *c)
{
    PyObject *t, *v, *tb;
    PyErr_Fetch(&t, &v, &tb);
    if (!t)
        return;
    PyErr_NormalizeException(&t, &v, &tb);
    if (tb && v)
        PyException_SetTraceback(v, tb);
    if (c->pending_type) { /* keep the first: it is the cause */
        Py_XDECREF(t);
        Py_XDECREF(v);
        Py_XDECREF(tb);
        return;
    }
    c->pending_type = t;
    c->pending_value = v;
    c->pending_tb = tb;
}

void rsp_app_free(rsp_app *a)
{
    if (!a)
        return;
    Py_XDECREF(a->save);
    Py_XDECREF(a->load);
    Py_XDECREF(a->ledger);
    Py_XDECREF(a->cached);
    PyMem_Free(a->name);
    PyMem_Free(a);
}

PyObject *rsp_unregister_state(rsp_context *c, PyObject *args)
{
    const char *name;
    if (!PyArg_ParseTuple(args, "s:unregister_state", &name))
        return NULL;
    rngsnap *ctx = rsp_ctx_get(c);
    if (!ctx)
        return NULL;
    int rc;
    RSP_WITHOUT_GIL(c, rc = rngsnap_unregister_state(ctx, name));
    if (rc)
        return rsp_raise(c, rc);
    /* The core no longer calls them (it removed the state under its
     * lock): let the callables go. */
    for (rsp_app **p = &c->apps; *p; p = &(*p)->next)
        if (strcmp((*p)->name, name) == 0) {
            rsp_app *a = *p;
            *p = a->next;
            rsp_app_free(a);
            break;
        }
    Py_RETURN_NONE;
}

/* Call a->save(); new reference to bytes, or NULL with the error kept. */
static PyObject *call_save(rsp_app *a)
{
    if (!a->save) {
        PyErr_SetString(PyExc_RuntimeError, "app state callables were "
                        "cleared (context being destroyed)");
        return NULL;
    }
    int led = rsp_ledger_reading && a->ledger;
    PyObject *r = PyObject_CallNoArgs(led ? a->ledger : a->save);
    if (r && !PyBytes_Check(r)) {
        PyErr_Format(PyExc_TypeError, "register_state %s callable "
                     "returned %.100s, expected bytes",
                     led ? "ledger" : "save", Py_TYPE(r)->tp_name);
        Py_CLEAR(r);
    }
    return r;
}

static size_t cb_size(void *user)
{
    rsp_app *a = user;
    PyGILState_STATE g = PyGILState_Ensure();
    Py_CLEAR(a->cached);
    size_t len = 0;
    a->cached = call_save(a);
    if (a->cached)
        len = (size_t)PyBytes_GET_SIZE(a->cached);
    else
        rsp_keep_pending(a->owner);
    PyGILState_Release(g);
    return len;
}

static int cb_save(void *user, void *buf, size_t len)
{
    rsp_app *a = user;
    PyGILState_STATE g = PyGILState_Ensure();
    int rc = 1;
    PyObject *b = a->cached;
    a->cached = NULL;
    if (!b && !a->owner->pending_type)
        b = call_save(a); /* no size() before: call it now */
    if (!b) {
        rsp_keep_pending(a->owner);
    } else if ((size_t)PyBytes_GET_SIZE(b) != len) {
        PyErr_Format(PyExc_RuntimeError, "register_state save callable "
                     "returned %zd bytes, then %zu were asked for",
                     PyBytes_GET_SIZE(b), len);
        rsp_keep_pending(a->owner);
    } else {
        if (len)
            memcpy(buf, PyBytes_AS_STRING(b), len);
        rc = 0;
    }
    Py_XDECREF(b);
    PyGILState_Release(g);
    return rc;
}

static int cb_load(void *user, const void *buf, size_t len)
{
    rsp_app *a = user;
    PyGILState_STATE g = PyGILState_Ensure();
    int rc = 1;
    Py_CLEAR(a->cached);
    PyObject *data = PyBytes_FromStringAndSize(buf, (Py_ssize_t)len);
    PyObject *r = NULL;
    if (data && a->load)
        r = PyObject_CallOneArg(a->load, data);
    else if (data)
        PyErr_SetString(PyExc_RuntimeError, "app state callables were "
                        "cleared (context being destroyed)");
    if (r)
        rc = 0;
    else
        rsp_keep_pending(a->owner);
    Py_XDECREF(r);
    Py_XDECREF(data);
    PyGILState_Release(g);
    return rc;
}

const rngsnap_state_ops rsp_state_ops = {cb_size, cb_save, cb_load};
