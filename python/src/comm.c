/*
 * comm.c - Context._save_ranks / _load_ranks: rngsnap_save_ranks and
 * rngsnap_load_ranks over a communicator written in Python.
 *
 * The package's Context.save_ranks/load_ranks hand in a comm object
 * (rngsnap/_context/comm.py's TorchComm, on torch.distributed; the tests'
 * own in tests/python/collectives.py) with:
 *
 *   size                     ranks in the job
 *   node_ranks               this rank's node: its ranks, ascending
 *                            (read once, before the C call)
 *   broadcast(data, root)    -> root's bytes, on every rank (collective)
 *   send(data, dest)         data to rank dest
 *   recv(nbytes, src)        -> (data, sender): nbytes from rank src, or
 *                            from any rank when src is None
 *
 * The C call runs without the GIL; each call into comm takes it back.
 * An exception in one makes it return nonzero (the C call then fails
 * with RNGSNAP_E_BACKEND) and is re-raised as the Error's __cause__.
 */
#include <stdlib.h>

#include "rngsnap_py.h"

typedef struct {
    rsp_context *owner;
    PyObject *comm;
    int size;
} rsp_comm_user;

/* r, what comm.<method> returned, as exactly want bytes copied into out;
 * 0, or 1 with an exception set. */
static int take_bytes(const char *method, PyObject *r, void *out,
                      size_t want)
{
    if (!PyBytes_Check(r)) {
        PyErr_Format(PyExc_TypeError, "comm.%s returned %.100s, expected "
                     "bytes", method, Py_TYPE(r)->tp_name);
        return 1;
    }
    if ((size_t)PyBytes_GET_SIZE(r) != want) {
        PyErr_Format(PyExc_RuntimeError, "comm.%s returned %zd bytes, "
                     "expected %zu", method, PyBytes_GET_SIZE(r), want);
        return 1;
    }
    if (want)
        memcpy(out, PyBytes_AS_STRING(r), want);
    return 0;
}

/* The end of a call into comm (GIL held): keep a failure's exception
 * for the Error's __cause__, release r and the GIL, return rc. */
static int comm_done(rsp_comm_user *u, PyGILState_STATE g, PyObject *r,
                     int rc)
{
    if (rc)
        rsp_keep_pending(u->owner);
    Py_XDECREF(r);
    PyGILState_Release(g);
    return rc;
}

static int comm_broadcast(void *user, void *buf, size_t len, int root)
{
    rsp_comm_user *u = user;
    PyGILState_STATE g = PyGILState_Ensure();
    PyObject *r = PyObject_CallMethod(u->comm, "broadcast", "y#i",
                                      (const char *)buf, (Py_ssize_t)len,
                                      root);
    int rc = !r || take_bytes("broadcast", r, buf, len);
    return comm_done(u, g, r, rc);
}

static int comm_send(void *user, const void *buf, size_t len, int dest)
{
    rsp_comm_user *u = user;
    PyGILState_STATE g = PyGILState_Ensure();
    PyObject *r = PyObject_CallMethod(u->comm, "send", "y#i",
                                      (const char *)buf, (Py_ssize_t)len,
                                      dest);
    return comm_done(u, g, r, r == NULL);
}

static int comm_recv(void *user, void *buf, size_t len, int src, int *from)
{
    rsp_comm_user *u = user;
    PyGILState_STATE g = PyGILState_Ensure();
    PyObject *r = src < 0
        ? PyObject_CallMethod(u->comm, "recv", "nO", (Py_ssize_t)len,
                              Py_None)
        : PyObject_CallMethod(u->comm, "recv", "ni", (Py_ssize_t)len, src);
    int rc = 1;
    if (r && (!PyTuple_Check(r) || PyTuple_GET_SIZE(r) != 2))
        PyErr_Format(PyExc_TypeError, "comm.recv returned %.100s, expected "
                     "a tuple (data, sender)", Py_TYPE(r)->tp_name);
    else if (r && !take_bytes("recv", PyTuple_GET_ITEM(r, 0), buf, len)) {
        long sender = PyLong_AsLong(PyTuple_GET_ITEM(r, 1));
        int bad = sender < 0 || sender >= u->size
                  || (src >= 0 && sender != src);
        if (bad && !PyErr_Occurred())
            PyErr_Format(PyExc_RuntimeError, "comm.recv(%zu, %d) says the "
                         "sender was rank %ld", len, src, sender);
        if (!bad) {
            *from = (int)sender;
            rc = 0;
        }
    }
    return comm_done(u, g, r, rc);
}

/* comm.node_ranks as a new int array (free()) of *n ranks, each in
 * [0, size); NULL with an exception set otherwise.  That they ascend and
 * hold this rank is the core's to check (rngsnap_comm's contract). */
static int *node_ranks(PyObject *comm, int size, int *n)
{
    PyObject *o = PyObject_GetAttrString(comm, "node_ranks");
    PyObject *seq = o ? PySequence_Fast(o, "comm.node_ranks must be a "
                                        "sequence of ranks") : NULL;
    Py_XDECREF(o);
    if (!seq)
        return NULL;
    Py_ssize_t len = PySequence_Fast_GET_SIZE(seq);
    int *ranks = NULL;
    if (len < 1 || len > size)
        PyErr_Format(PyExc_RuntimeError, "comm.node_ranks has %zd ranks, "
                     "expected 1 to %d", len, size);
    else if (!(ranks = malloc((size_t)len * sizeof *ranks)))
        PyErr_NoMemory();
    for (Py_ssize_t i = 0; ranks && i < len; i++) {
        long r = PyLong_AsLong(PySequence_Fast_GET_ITEM(seq, i));
        if (r == -1 && PyErr_Occurred()) {
            free(ranks);
            ranks = NULL;
        } else if (r < 0 || r >= size) {
            PyErr_Format(PyExc_RuntimeError, "comm.node_ranks holds rank "
                         "%ld, outside 0..%d", r, size - 1);
            free(ranks);
            ranks = NULL;
        } else
            ranks[i] = (int)r;
    }
    Py_DECREF(seq);
    *n = (int)len;
    return ranks;
}

/* _save_ranks(dir, comm, rank, size, replace, per_rank_files=False) /
 * _load_ranks(dir, comm, rank, size, fork) */
static PyObject *ranks_call(rsp_context *c, PyObject *args, int save)
{
    PyObject *path, *comm;
    int rank, size, flag, per_rank = 0;
    if (!PyArg_ParseTuple(args, save ? "O&Oiip|p" : "O&Oiip",
                          PyUnicode_FSConverter, &path, &comm, &rank, &size,
                          &flag, &per_rank))
        return NULL;
    rngsnap *ctx = rsp_ctx_get(c);
    int nnode = 0, *node = NULL;
    if (ctx && size < 1)
        PyErr_Format(PyExc_ValueError, "size %d: must be at least 1", size);
    else if (ctx)
        node = node_ranks(comm, size, &nnode);
    if (!node) {
        Py_DECREF(path);
        return NULL;
    }
    rsp_comm_user u = {c, comm, size};
    rngsnap_comm cm = {.rank = rank, .size = size, .user = &u,
                       .broadcast = comm_broadcast,
                       .send = comm_send, .recv = comm_recv,
                       .node_size = nnode, .node_ranks = node};
    unsigned flags = save ? (flag ? RNGSNAP_SAVE_REPLACE : 0)
                                | (per_rank ? RNGSNAP_SAVE_PER_RANK_FILES : 0)
                          : (flag ? RNGSNAP_LOAD_FORK : 0);
    const char *dir = PyBytes_AS_STRING(path);
    int rc;
    rsp_call call;
    rsp_file_call_begin(c, &call);
    Py_BEGIN_ALLOW_THREADS
    rc = save ? rngsnap_save_ranks(ctx, &cm, dir, flags)
              : rngsnap_load_ranks(ctx, &cm, dir, flags);
    Py_END_ALLOW_THREADS
    rsp_file_call_end(&call);
    free(node);
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
