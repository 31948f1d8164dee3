/*
 * rngsnap_py.h - what the files of the _rngsnap extension share.
 *
 * The module wraps the public rngsnap.h API only: an opaque handle per
 * object, the GIL released around C work, every C error mapped to one
 * exception hierarchy (errors.c).
 */
#ifndef RNGSNAP_PY_H
#define RNGSNAP_PY_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <rngsnap.h>

/* One register_state: the callables, kept alive for the context's life.
 * A list, not an array: register_state runs the core call without the
 * GIL, so two threads may register at once (no realloc to race on). */
typedef struct rsp_app {
    struct rsp_context *owner; /* borrowed: the context owns this        */
    char *name;                /* as registered (unregister_state finds it) */
    PyObject *save, *load;     /* callables                              */
    PyObject *ledger;          /* the ledger's cheaper reader, or NULL   */
    PyObject *cached;          /* bytes from the last size() call, if any */
    struct rsp_app *next;
} rsp_app;

typedef struct rsp_context {
    PyObject_HEAD
    rngsnap *ctx;          /* NULL once closed                        */
    int opened;            /* opened once: never again (streams point
                              into that context, freed by close)      */
    int busy;              /* calls running with the GIL released     */
    rsp_app *apps;
    /* First exception raised by a callable during the running C call
     * (type, value, traceback), re-raised as the __cause__ of the Error. */
    PyObject *pending_type, *pending_value, *pending_tb;
} rsp_context;

typedef struct rsp_stream {
    PyObject_HEAD
    rsp_context *owner;    /* strong: streams keep their context alive */
    rngsnap_stream *s;
} rsp_stream;

extern PyTypeObject rsp_context_type, rsp_stream_type, rsp_keyed_type;
extern PyTypeObject rsp_ledger_type;
/* ledger.c: Context.ledger(path) */
PyObject *rsp_ctx_ledger(rsp_context *c, PyObject *args, PyObject *kw);

/* errors.c */
int rsp_errors_init(PyObject *module);
/* Raise the Error subclass of code with rngsnap_errmsg(ctx) (the calling
 * thread's message); chains a pending callable exception of owner as
 * __cause__.  Returns NULL. */
PyObject *rsp_raise(rsp_context *owner, int code);
/* Raise rngsnap.Error with a message of our own (closed context). */
PyObject *rsp_raise_msg(int code, const char *msg);
/* The end of a call that ran callables: rc != 0 raises the Error (from
 * the callable's exception); a KeyboardInterrupt or SystemExit a callable
 * raised is raised as itself even when the C call succeeded. */
PyObject *rsp_file_call_result(rsp_context *c, int rc);

/* context.c: NULL (with Error set) when the context is closed, or when
 * called from a callable of the context's own running save/load. */
rngsnap *rsp_ctx_get(rsp_context *c);
/* A save/load/ranks call running on this thread, on its stack: its
 * callables must not call back into c (locked: deadlock).  Per thread,
 * so that a second thread's call on c neither hides nor fakes it. */
typedef struct rsp_call {
    rsp_context *c;
    struct rsp_call *up; /* the call this thread ran it from, if any */
} rsp_call;
/* Set on this thread while a ledger step runs its callables: an app with
 * a ledger reader is read through it (ledger.c, callbacks.c). */
extern _Thread_local int rsp_ledger_reading;
/* Around a C call that runs callables: records it, counts busy. */
void rsp_file_call_begin(rsp_context *c, rsp_call *call);
void rsp_file_call_end(rsp_call *call);
/* Run a short core call (stmt) without the GIL: a save/load on another
 * thread may hold the context's locks while its callable waits for the
 * GIL.  busy keeps close() out meanwhile. */
#define RSP_WITHOUT_GIL(c, stmt)                                            \
    do {                                                                    \
        (c)->busy++;                                                        \
        Py_BEGIN_ALLOW_THREADS                                              \
        stmt;                                                               \
        Py_END_ALLOW_THREADS                                                \
        (c)->busy--;                                                        \
    } while (0)
/* module.c: o (an int, or anything with __index__) as a uint64; what
 * names it in the OverflowError of a value outside [0, 2**64). */
int rsp_u64(PyObject *o, const char *what, uint64_t *out);

/* stream.c */
PyObject *rsp_stream_new(rsp_context *owner, rngsnap_stream *s);
/* dist name -> rngsnap_dist, or -1 with ValueError set. */
int rsp_dist_from(PyObject *name);

/* callbacks.c */
extern const rngsnap_state_ops rsp_state_ops;
/* Keep exc (fetched) as the context's pending error unless one is kept. */
void rsp_keep_pending(rsp_context *c);
void rsp_drop_pending(rsp_context *c);
void rsp_app_free(rsp_app *a);
/* Context.unregister_state(name) */
PyObject *rsp_unregister_state(rsp_context *c, PyObject *args);

/* scan.c: _rngsnap._find_instances (the untracked generator report) */
PyObject *rsp_find_instances(PyObject *self, PyObject *args);

/* comm.c: Context._save_ranks/_load_ranks (multi-rank) */
PyObject *rsp_save_ranks(rsp_context *c, PyObject *args, PyObject *kw);
PyObject *rsp_load_ranks(rsp_context *c, PyObject *args, PyObject *kw);

#endif
