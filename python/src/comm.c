/*
 * comm.c - Context._save_ranks / _load_ranks: rngsnap_save_ranks and
 * rngsnap_load_ranks over collectives written in Python.
 *
 * The package's Context.save_ranks/load_ranks hand in a comm object with
 * allgather(data: bytes) -> bytes (size * len(data), rank order) and
 * broadcast(data: bytes, root: int) -> bytes (root's data), built on
 * torch.distributed (rngsnap/_context/comm.py).  The C call runs without the
 * GIL; each collective takes it back.  An exception in a collective
 * makes it return nonzero (the C call then fails on every rank) and is
 * re-raised as the Error's __cause__.
 */
#include "rngsnap_py.h"

typedef struct {
    rsp_context *owner;
    PyObject *comm;
} rsp_comm_user;

/* Call comm.<method>(data[, root]) and copy the bytes it returns (want
 * long) into out.  0 on success. */
static int call_comm(rsp_comm_user *u, const char *method, const void *in,
                     size_t inlen, int root, void *out, size_t want)
{
    PyGILState_STATE g = PyGILState_Ensure();
    int rc = 1;
    PyObject *data = PyBytes_FromStringAndSize(in, (Py_ssize_t)inlen);
    PyObject *r = NULL;
    if (data)
        r = root < 0 ? PyObject_CallMethod(u->comm, method, "O", data)
                     : PyObject_CallMethod(u->comm, method, "Oi", data, root);
    if (r && !PyBytes_Check(r))
        PyErr_Format(PyExc_TypeError, "comm.%s returned %.100s, expected "
                     "bytes", method, Py_TYPE(r)->tp_name);
    else if (r && (size_t)PyBytes_GET_SIZE(r) != want)
        PyErr_Format(PyExc_RuntimeError, "comm.%s returned %zd bytes, "
                     "expected %zu", method, PyBytes_GET_SIZE(r), want);
    else if (r) {
        if (want)
            memcpy(out, PyBytes_AS_STRING(r), want);
        rc = 0;
    }
    if (rc)
        rsp_keep_pending(u->owner);
    Py_XDECREF(r);
    Py_XDECREF(data);
    PyGILState_Release(g);
    return rc;
}

static int comm_allgather(void *user, const void *send, void *recv,
                          size_t len)
{
    rsp_comm_user *u = user;
    int size = 0;
    PyGILState_STATE g = PyGILState_Ensure();
    PyObject *ps = PyObject_GetAttrString(u->comm, "size");
    if (ps)
        size = (int)PyLong_AsLong(ps);
    Py_XDECREF(ps);
    if (PyErr_Occurred()) {
        rsp_keep_pending(u->owner);
        PyGILState_Release(g);
        return 1;
    }
    PyGILState_Release(g);
    return call_comm(u, "allgather", send, len, -1, recv,
                     (size_t)size * len);
}

static int comm_broadcast(void *user, void *buf, size_t len, int root)
{
    return call_comm(user, "broadcast", buf, len, root, buf, len);
}

/* _save_ranks(dir, comm, rank, size, replace) / _load_ranks(dir, comm,
 * rank, size, fork) */
static PyObject *ranks_call(rsp_context *c, PyObject *args, int save)
{
    PyObject *path, *comm;
    int rank, size, flag;
    if (!PyArg_ParseTuple(args, "O&Oiip", PyUnicode_FSConverter, &path,
                          &comm, &rank, &size, &flag))
        return NULL;
    rngsnap *ctx = rsp_ctx_get(c);
    if (!ctx) {
        Py_DECREF(path);
        return NULL;
    }
    rsp_comm_user u = {c, comm};
    rngsnap_comm cm = {.rank = rank, .size = size, .user = &u,
                       .allgather = comm_allgather,
                       .broadcast = comm_broadcast};
    const char *dir = PyBytes_AS_STRING(path);
    int rc;
    rsp_call call;
    rsp_file_call_begin(c, &call);
    Py_BEGIN_ALLOW_THREADS
    rc = save ? rngsnap_save_ranks(ctx, &cm, dir,
                                   flag ? RNGSNAP_SAVE_REPLACE : 0)
              : rngsnap_load_ranks(ctx, &cm, dir,
                                   flag ? RNGSNAP_LOAD_FORK : 0);
    Py_END_ALLOW_THREADS
    rsp_file_call_end(&call);
    Py_DECREF(path);
    return rsp_file_call_result(c, rc);
}

PyObject *rsp_save_ranks(rsp_context *c, PyObject *args, PyObject *kw)
{
    (void)kw;
    return ranks_call(c, args, 1);
}

PyObject *rsp_load_ranks(rsp_context *c, PyObject *args, PyObject *kw)
{
    (void)kw;
    return ranks_call(c, args, 0);
}
