/*
 * context.c - rngsnap._rngsnap.Context: one rngsnap context.
 *
 * Context(config, resume=False) opens config (None: rngsnap_open's own
 * default; the package's Context subclass finds rng.ini first).  Calls
 * that do file I/O or draw release the GIL; `busy` counts them so that
 * close() cannot free the context under a running call of another thread.
 */
#include "rngsnap_py.h"
#include "words.h" /* the core's: its messages in Python's words */
#include "context.h" /* the core's: which streams have drawn */
#include "internal.h" /* the core's: rs_register_state */
#include "fork.h" /* the core's: is this a fork() child of the opener? */
#include "lock.h" /* the core's: _coords() copies under the lock */

/* This thread's running save/load/ranks calls, innermost first. */
static _Thread_local rsp_call *rsp_calls;

rngsnap *rsp_ctx_get(rsp_context *c)
{
    if (!c->ctx) {
        rsp_raise_msg(RNGSNAP_E_INVALID, "rngsnap.Context is closed");
        return NULL;
    }
    for (rsp_call *k = rsp_calls; k; k = k->up)
        if (k->c == c) {
            rsp_raise_msg(RNGSNAP_E_INVALID, "rngsnap.Context used from "
                          "inside one of its own save/load callables or "
                          "collectives (the context is locked while they "
                          "run)");
            return NULL;
        }
    return c->ctx;
}

void rsp_file_call_begin(rsp_context *c, rsp_call *call)
{
    c->busy++;
    call->c = c;
    call->up = rsp_calls;
    rsp_calls = call;
}

void rsp_file_call_end(rsp_call *call)
{
    rsp_calls = call->up;
    call->c->busy--;
}

static int ctx_init(rsp_context *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"config", "resume", NULL};
    PyObject *config = Py_None, *path = NULL;
    int resume = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|Op:Context", kwlist,
                                     &config, &resume))
        return -1;
    if (self->opened) {
        /* Streams of the closed context would see an open one again. */
        PyErr_SetString(PyExc_RuntimeError, self->ctx
                        ? "Context is already open"
                        : "a closed Context cannot be reopened (make a "
                          "new one)");
        return -1;
    }
    if (config != Py_None && !PyUnicode_FSConverter(config, &path))
        return -1;
    const char *p = path ? PyBytes_AS_STRING(path) : NULL;
    rngsnap *ctx = NULL;
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = rngsnap_open(&ctx, p, resume ? RNGSNAP_RESUME : 0);
    Py_END_ALLOW_THREADS
    Py_XDECREF(path);
    if (rc) {
        rsp_raise(NULL, rc);
        return -1;
    }
    rs_set_lang(ctx, RS_LANG_PYTHON);
    self->ctx = ctx;
    self->opened = 1;
    return 0;
}

static void free_apps(rsp_context *self)
{
    while (self->apps) {
        rsp_app *a = self->apps;
        self->apps = a->next;
        rsp_app_free(a);
    }
}

static int ctx_traverse(rsp_context *self, visitproc visit, void *arg)
{
    for (rsp_app *a = self->apps; a; a = a->next) {
        Py_VISIT(a->save);
        Py_VISIT(a->load);
        Py_VISIT(a->ledger);
    }
    return 0;
}

static int ctx_clear(rsp_context *self)
{
    for (rsp_app *a = self->apps; a; a = a->next) {
        Py_CLEAR(a->save);
        Py_CLEAR(a->load);
        Py_CLEAR(a->ledger);
        Py_CLEAR(a->cached);
    }
    rsp_drop_pending(self);
    return 0;
}

static void ctx_dealloc(rsp_context *self)
{
    PyObject_GC_UnTrack(self);
    rngsnap_close(self->ctx);
    self->ctx = NULL;
    ctx_clear(self);
    free_apps(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *ctx_close(rsp_context *self, PyObject *unused)
{
    (void)unused;
    /* From one of its own callables: say so (rsp_ctx_get's message). */
    if (self->ctx && !rsp_ctx_get(self))
        return NULL;
    if (self->busy)
        return rsp_raise_msg(RNGSNAP_E_INVALID, "rngsnap.Context.close: "
                             "another thread is using this context");
    rngsnap_close(self->ctx);
    self->ctx = NULL;
    /* The C side no longer calls the callables: let them go. */
    ctx_clear(self);
    free_apps(self);
    Py_RETURN_NONE;
}

static PyObject *ctx_enter(rsp_context *self, PyObject *unused)
{
    (void)unused;
    if (!rsp_ctx_get(self))
        return NULL;
    Py_INCREF(self);
    return (PyObject *)self;
}

static PyObject *ctx_exit(rsp_context *self, PyObject *args)
{
    (void)args;
    PyObject *r = ctx_close(self, NULL);
    Py_XDECREF(r);
    if (!r)
        return NULL;
    Py_RETURN_FALSE;
}

static PyObject *ctx_seed_all(rsp_context *self, PyObject *arg)
{
    rngsnap *ctx = rsp_ctx_get(self);
    if (!ctx)
        return NULL;
    uint64_t seed;
    if (rsp_u64(arg, "seed", &seed) < 0)
        return NULL;
    int rc;
    RSP_WITHOUT_GIL(self, rc = rngsnap_seed_all(ctx, seed));
    if (rc)
        return rsp_raise(self, rc);
    Py_RETURN_NONE;
}

/* branch(): rngsnap_branch, the one deliberate way out of a resumed run
 * (docs/python.md, "Branching a run on purpose").  The Python layer
 * (rngsnap.Context.branch) lets go of what its own checks recorded. */
static PyObject *ctx_branch(rsp_context *self, PyObject *unused)
{
    (void)unused;
    rngsnap *ctx = rsp_ctx_get(self);
    if (!ctx)
        return NULL;
    int rc;
    RSP_WITHOUT_GIL(self, rc = rngsnap_branch(ctx));
    if (rc)
        return rsp_raise(self, rc);
    Py_RETURN_NONE;
}

/* _fork_check(what, load): in a fork() child of the process that opened
 * the context, the core's own refusal of a save (load=False) or a load
 * of `what` ("ctx.save('ck')"), as OrderError; else None.  The Python
 * layer asks it before its own checks of a save or load (an untracked
 * scan, the order of a resumed job), so that a forked worker is told
 * why in the core's words, whatever else it would have found. */
static PyObject *ctx_fork_check(rsp_context *self, PyObject *args)
{
    const char *what;
    int load;
    if (!PyArg_ParseTuple(args, "sp:_fork_check", &what, &load))
        return NULL;
    rngsnap *ctx = rsp_ctx_get(self);
    if (!ctx)
        return NULL;
    if (!rs_forked(ctx))
        Py_RETURN_NONE;
    return rsp_raise(self, rs_fork_refuse(ctx, what, load));
}

/* save/load: file I/O without the GIL; callbacks take it back. */
static PyObject *ctx_file_call(rsp_context *self, PyObject *args,
                               PyObject *kw, int save)
{
    static char *save_kw[] = {"path", "replace", NULL};
    static char *load_kw[] = {"path", NULL};
    PyObject *path = NULL;
    int replace = 0;
    if (save ? !PyArg_ParseTupleAndKeywords(args, kw, "O&|p:save", save_kw,
                                            PyUnicode_FSConverter, &path,
                                            &replace)
             : !PyArg_ParseTupleAndKeywords(args, kw, "O&:load", load_kw,
                                            PyUnicode_FSConverter, &path))
        return NULL;
    rngsnap *ctx = rsp_ctx_get(self);
    if (!ctx) {
        Py_DECREF(path);
        return NULL;
    }
    /* No drop of a pending exception here: each call takes its own at its
     * end, and another thread's call may still be about to take one. */
    const char *p = PyBytes_AS_STRING(path);
    int rc;
    rsp_call call;
    rsp_file_call_begin(self, &call);
    Py_BEGIN_ALLOW_THREADS
    rc = save ? rngsnap_save(ctx, p, replace ? RNGSNAP_SAVE_REPLACE : 0)
              : rngsnap_load(ctx, p, 0);
    Py_END_ALLOW_THREADS
    rsp_file_call_end(&call);
    Py_DECREF(path);
    return rsp_file_call_result(self, rc);
}

PyObject *rsp_file_call_result(rsp_context *c, int rc)
{
    for (rsp_app *a = c->apps; a; a = a->next)
        Py_CLEAR(a->cached);
    if (rc)
        return rsp_raise(c, rc);
    if (c->pending_value
        && !PyErr_GivenExceptionMatches(c->pending_value, PyExc_Exception))
        return rsp_raise(c, rc); /* Ctrl-C during a call that succeeded */
    rsp_drop_pending(c);
    Py_RETURN_NONE;
}

static PyObject *ctx_save(rsp_context *self, PyObject *args, PyObject *kw)
{
    return ctx_file_call(self, args, kw, 1);
}

static PyObject *ctx_load(rsp_context *self, PyObject *args, PyObject *kw)
{
    return ctx_file_call(self, args, kw, 0);
}

/* ---- bytes: save_bytes / load_bytes ------------------------------------ */

/* save_bytes() -> bytes: rngsnap_save_mem, as save() runs rngsnap_save
 * (GIL released, callables take it back). */
static PyObject *ctx_save_bytes(rsp_context *self, PyObject *unused)
{
    (void)unused;
    rngsnap *ctx = rsp_ctx_get(self);
    if (!ctx)
        return NULL;
    void *data = NULL;
    size_t size = 0;
    int rc;
    rsp_call call;
    rsp_file_call_begin(self, &call);
    Py_BEGIN_ALLOW_THREADS
    rc = rngsnap_save_mem(ctx, &data, &size, 0);
    Py_END_ALLOW_THREADS
    rsp_file_call_end(&call);
    PyObject *r = rsp_file_call_result(self, rc);
    PyObject *out = NULL;
    if (r) {
        Py_DECREF(r);
        out = PyBytes_FromStringAndSize(data, (Py_ssize_t)size);
    }
    rngsnap_free(data); /* also after a Ctrl-C raised over a success */
    return out;
}

/* load_bytes(data): any C-contiguous bytes-like object, read without the
 * GIL (the buffer stays exported, so it cannot be resized meanwhile).
 * Empty bytes are a truncated checkpoint, as an empty file is. */
static PyObject *ctx_load_bytes(rsp_context *self, PyObject *arg)
{
    Py_buffer view;
    if (PyObject_GetBuffer(arg, &view, PyBUF_SIMPLE) < 0)
        return NULL;
    rngsnap *ctx = rsp_ctx_get(self);
    if (!ctx) {
        PyBuffer_Release(&view);
        return NULL;
    }
    if (view.len == 0) {
        PyBuffer_Release(&view);
        return rsp_raise_msg(RNGSNAP_E_CORRUPT, "checkpoint bytes: 0 bytes, "
                             "not a checkpoint; nothing restored");
    }
    int rc;
    rsp_call call;
    rsp_file_call_begin(self, &call);
    Py_BEGIN_ALLOW_THREADS
    rc = rngsnap_load_mem(ctx, view.buf, (size_t)view.len, 0);
    Py_END_ALLOW_THREADS
    rsp_file_call_end(&call);
    PyBuffer_Release(&view);
    return rsp_file_call_result(self, rc);
}

static PyObject *ctx_register_state(rsp_context *self, PyObject *args,
                                    PyObject *kw)
{
    static char *kwlist[] = {"name", "save", "load", "ledger", NULL};
    const char *name;
    PyObject *save = NULL, *load = NULL, *ledger = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "s|$OOO:register_state",
                                     kwlist, &name, &save, &load, &ledger))
        return NULL;
    if (!save || !load)
        return PyErr_Format(PyExc_TypeError, "register_state() missing "
                            "required keyword-only argument: '%s'",
                            save ? "load" : "save");
    if (!PyCallable_Check(save) || !PyCallable_Check(load)
        || (ledger != Py_None && !PyCallable_Check(ledger))) {
        PyErr_SetString(PyExc_TypeError, "register_state: save, load (and "
                        "ledger, when given) must be callable");
        return NULL;
    }
    rngsnap *ctx = rsp_ctx_get(self);
    if (!ctx)
        return NULL;
    rsp_app *a = PyMem_Calloc(1, sizeof *a);
    if (!a)
        return PyErr_NoMemory();
    a->owner = self;
    size_t nlen = strlen(name) + 1;
    a->name = PyMem_Malloc(nlen);
    if (!a->name) {
        rsp_app_free(a);
        return PyErr_NoMemory();
    }
    memcpy(a->name, name, nlen);
    a->save = Py_NewRef(save);
    a->load = Py_NewRef(load);
    a->ledger = ledger == Py_None ? NULL : Py_NewRef(ledger);
    int rc;
    /* rs_register_state: python/rngsnap's ctx.register_state refuses a
     * late registration in Python words; a save's tag= registers after a
     * load on purpose (_context/tag.py). */
    RSP_WITHOUT_GIL(self, rc = rs_register_state(ctx, name,
                                                      &rsp_state_ops, a));
    if (rc) {
        rsp_app_free(a);
        return rsp_raise(self, rc);
    }
    a->next = self->apps;
    self->apps = a;
    Py_RETURN_NONE;
}

static PyObject *ctx_stream(rsp_context *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"backend", "device", "name", NULL};
    const char *backend, *name = "default";
    int device = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "s|is:stream", kwlist,
                                     &backend, &device, &name))
        return NULL;
    rngsnap *ctx = rsp_ctx_get(self);
    if (!ctx)
        return NULL;
    rngsnap_stream *s;
    int rc = rngsnap_stream_find(ctx, backend, device, name, &s);
    if (rc)
        return rsp_raise(self, rc);
    return rsp_stream_new(self, s);
}

static PyObject *ctx_streams(rsp_context *self, PyObject *unused)
{
    (void)unused;
    rngsnap *ctx = rsp_ctx_get(self);
    if (!ctx)
        return NULL;
    size_t n = rngsnap_stream_count(ctx);
    PyObject *list = PyList_New((Py_ssize_t)n);
    for (size_t i = 0; list && i < n; i++) {
        PyObject *s = rsp_stream_new(self, rngsnap_stream_at(ctx, i));
        if (!s) {
            Py_CLEAR(list);
            break;
        }
        PyList_SET_ITEM(list, (Py_ssize_t)i, s);
    }
    return list;
}

static PyObject *ctx_set_rank(rsp_context *self, PyObject *args)
{
    int rank, world;
    if (!PyArg_ParseTuple(args, "ii:set_rank", &rank, &world))
        return NULL;
    rngsnap *ctx = rsp_ctx_get(self);
    if (!ctx)
        return NULL;
    int rc;
    RSP_WITHOUT_GIL(self, rc = rngsnap_set_rank(ctx, rank, world));
    if (rc)
        return rsp_raise(self, rc);
    Py_RETURN_NONE;
}

static PyObject *ctx_get_rank_part(rsp_context *self, void *which)
{
    rngsnap *ctx = rsp_ctx_get(self);
    if (!ctx)
        return NULL;
    int rank = 0, world = 1;
    int rc;
    RSP_WITHOUT_GIL(self, rc = rngsnap_get_rank(ctx, &rank, &world));
    if (rc)
        return rsp_raise(self, rc);
    return PyLong_FromLong(which ? world : rank);
}

/* _set_coords(text): rngsnap_set_coords; the package's set_coords(**kw)
 * writes the text (rngsnap/_context/coords.py). */
static PyObject *ctx_set_coords(rsp_context *self, PyObject *args)
{
    const char *text;
    if (!PyArg_ParseTuple(args, "s:_set_coords", &text))
        return NULL;
    rngsnap *ctx = rsp_ctx_get(self);
    if (!ctx)
        return NULL;
    int rc;
    RSP_WITHOUT_GIL(self, rc = rngsnap_set_coords(ctx, text));
    if (rc)
        return rsp_raise(self, rc);
    Py_RETURN_NONE;
}

/* _coords() -> str: the canonical coordinates, "" when none.  Copied
 * under the context's lock (without the GIL, as every call that takes
 * it): another thread's set_coords never shows half written.  Not in a
 * fork() child: a lock held by another of the parent's threads at the
 * fork stays held there, and the child's set_coords is refused. */
static PyObject *ctx_get_coords(rsp_context *self, PyObject *unused)
{
    (void)unused;
    rngsnap *ctx = rsp_ctx_get(self);
    if (!ctx)
        return NULL;
    char text[RS_COORDS_MAX];
    if (rs_forked(ctx))
        memcpy(text, rngsnap_get_coords(ctx), sizeof text);
    else
        RSP_WITHOUT_GIL(self, {
            rs_ctx_lock(ctx);
            memcpy(text, rngsnap_get_coords(ctx), sizeof text);
            rs_ctx_unlock(ctx);
        });
    return PyUnicode_FromString(text);
}

static PyObject *ctx_closed(rsp_context *self, void *unused)
{
    (void)unused;
    return PyBool_FromLong(self->ctx == NULL);
}

/* Labels of the streams that have drawn (generate, reserve) since the
 * open: in a resume=True context, since its load.  The Python layer's
 * refusal of a second load names them with the generators that moved
 * (the core refuses such a load itself too, naming the streams only). */
static PyObject *ctx_streams_drawn(rsp_context *self, PyObject *unused)
{
    (void)unused;
    rngsnap *ctx = rsp_ctx_get(self);
    if (!ctx)
        return NULL;
    PyObject *out = PyList_New(0);
    for (size_t i = 0; out && i < ctx->nstreams; i++) {
        const struct rngsnap_stream *s = &ctx->streams[i];
        if (!atomic_load_explicit(&s->drawn, memory_order_relaxed))
            continue;
        PyObject *l = PyUnicode_FromFormat("%s:%d/%s", s->backend->name,
                                           s->device, s->name);
        if (!l || PyList_Append(out, l) < 0)
            Py_CLEAR(out);
        Py_XDECREF(l);
    }
    return out;
}

/* Opened with resume=True and no load yet (the core's resume gate). */
static PyObject *ctx_awaiting_load(rsp_context *self, PyObject *unused)
{
    (void)unused;
    rngsnap *ctx = rsp_ctx_get(self);
    if (!ctx)
        return NULL;
    return PyBool_FromLong(atomic_load(&ctx->awaiting_load));
}

static PyMethodDef ctx_methods[] = {
    {"_awaiting_load", (PyCFunction)ctx_awaiting_load, METH_NOARGS,
     "Opened with resume=True and not loaded yet (internal)."},
    {"_streams_drawn", (PyCFunction)ctx_streams_drawn, METH_NOARGS,
     "Labels of the streams drawn since the open (internal)."},
    {"_fork_check", (PyCFunction)ctx_fork_check, METH_VARARGS,
     "_fork_check(what, load): OrderError in a fork() child (internal)."},
    {"close", (PyCFunction)ctx_close, METH_NOARGS,
     "Close the context (streams of it then raise Error)."},
    {"branch", (PyCFunction)ctx_branch, METH_NOARGS,
     "branch(): leave the resumed run on purpose (a new run started from "
     "the loaded checkpoint): seed_all, a load and register_state are "
     "allowed again."},
    {"__enter__", (PyCFunction)ctx_enter, METH_NOARGS, NULL},
    {"__exit__", (PyCFunction)ctx_exit, METH_VARARGS, NULL},
    {"seed_all", (PyCFunction)ctx_seed_all, METH_O,
     "seed_all(seed): seed every stream from (seed, rank, backend, "
     "device, name)."},
    {"save", (PyCFunction)(void (*)(void))ctx_save,
     METH_VARARGS | METH_KEYWORDS,
     "save(path, replace=False): write every stream and app state."},
    {"load", (PyCFunction)(void (*)(void))ctx_load,
     METH_VARARGS | METH_KEYWORDS,
     "load(path): restore all or nothing."},
    {"save_bytes", (PyCFunction)ctx_save_bytes, METH_NOARGS,
     "save_bytes() -> bytes: the checkpoint save() writes, as bytes."},
    {"load_bytes", (PyCFunction)ctx_load_bytes, METH_O,
     "load_bytes(data): restore from checkpoint bytes (any bytes-like), "
     "all or nothing."},
    {"register_state", (PyCFunction)(void (*)(void))ctx_register_state,
     METH_VARARGS | METH_KEYWORDS,
     "register_state(name, *, save, load): save() -> bytes, load(bytes)."},
    {"unregister_state", (PyCFunction)rsp_unregister_state, METH_VARARGS,
     "unregister_state(name): remove an app state (register_state's or "
     "register_generator's) from later saves and loads."},
    {"stream", (PyCFunction)(void (*)(void))ctx_stream,
     METH_VARARGS | METH_KEYWORDS,
     "stream(backend, device=0, name='default') -> Stream"},
    {"ledger", (PyCFunction)(void (*)(void))rsp_ctx_ledger,
     METH_VARARGS | METH_KEYWORDS,
     "ledger(path) -> Ledger: open (or continue) the divergence ledger"},
    {"streams", (PyCFunction)ctx_streams, METH_NOARGS,
     "Every stream of the registry, in its fixed order."},
    {"set_rank", (PyCFunction)ctx_set_rank, METH_VARARGS,
     "set_rank(rank, world_size)"},
    {"_set_coords", (PyCFunction)ctx_set_coords, METH_VARARGS,
     "_set_coords(text): rngsnap_set_coords (use set_coords(**coords))"},
    {"_coords", (PyCFunction)ctx_get_coords, METH_NOARGS,
     "_coords() -> the canonical coordinates text, \"\" when none"},
    {"_save_ranks", (PyCFunction)(void (*)(void))rsp_save_ranks,
     METH_VARARGS,
     "_save_ranks(dir, comm, rank, size, replace): see save_ranks."},
    {"_load_ranks", (PyCFunction)(void (*)(void))rsp_load_ranks,
     METH_VARARGS,
     "_load_ranks(dir, comm, rank, size, fork): see load_ranks."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef ctx_getset[] = {
    {"rank", (getter)ctx_get_rank_part, NULL, "this process's rank", NULL},
    {"world_size", (getter)ctx_get_rank_part, NULL, "ranks in the job",
     (void *)1},
    {"closed", (getter)ctx_closed, NULL, "True once closed", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

PyTypeObject rsp_context_type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "rngsnap._rngsnap.Context",
    .tp_basicsize = sizeof(rsp_context),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "Context(config=None, resume=False): one rngsnap context.",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)ctx_init,
    .tp_dealloc = (destructor)ctx_dealloc,
    .tp_traverse = (traverseproc)ctx_traverse,
    .tp_clear = (inquiry)ctx_clear,
    .tp_methods = ctx_methods,
    .tp_getset = ctx_getset,
};
