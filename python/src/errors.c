/*
 * errors.c - rngsnap.Error and one subclass per return code.
 *
 * str(e) is rngsnap_errmsg (which file, rank, section, stream; the core
 * names the API in Python's words, context.c); e.code is the int code,
 * e.name its name ("RNGSNAP_E_MISMATCH").  An exception raised by a
 * save/load callable or a collective during the C call is chained as the
 * Error's __cause__ (raise Error(...) from exc), with its traceback, and
 * its own text ends the Error's first line.
 */
#include "rngsnap_py.h"

/* Code -> class name; index = code. */
static const char *const rsp_error_names[] = {
    NULL,               /* RNGSNAP_OK */
    "ConfigError",      /* RNGSNAP_E_CONFIG */
    "PluginError",      /* RNGSNAP_E_PLUGIN */
    "UnavailableError", /* RNGSNAP_E_UNAVAILABLE */
    "IOFailedError",    /* RNGSNAP_E_IO (not IOError: that is OSError) */
    "ExistsError",      /* RNGSNAP_E_EXISTS */
    "CorruptError",     /* RNGSNAP_E_CORRUPT */
    "MismatchError",    /* RNGSNAP_E_MISMATCH */
    "OrderError",       /* RNGSNAP_E_ORDER */
    "InvalidError",     /* RNGSNAP_E_INVALID */
    "NoMemoryError",    /* RNGSNAP_E_NOMEM */
    "BackendError",     /* RNGSNAP_E_BACKEND */
    "DurabilityError",  /* RNGSNAP_E_DURABILITY */
};
#define RSP_NCODES (sizeof rsp_error_names / sizeof rsp_error_names[0])

static PyObject *rsp_error_base;
static PyObject *rsp_error_class[RSP_NCODES];

int rsp_errors_init(PyObject *module)
{
    rsp_error_base = PyErr_NewExceptionWithDoc("rngsnap.Error",
        "A failed rngsnap call: .code (int), .name (e.g. "
        "'RNGSNAP_E_MISMATCH'); str() is the library's message.",
        NULL, NULL);
    if (!rsp_error_base || PyModule_AddObjectRef(module, "Error",
                                                 rsp_error_base) < 0)
        return -1;
    for (size_t i = 1; i < RSP_NCODES; i++) {
        char qual[64];
        snprintf(qual, sizeof qual, "rngsnap.%s", rsp_error_names[i]);
        rsp_error_class[i] = PyErr_NewException(qual, rsp_error_base, NULL);
        if (!rsp_error_class[i]
            || PyModule_AddObjectRef(module, rsp_error_names[i],
                                     rsp_error_class[i]) < 0)
            return -1;
    }
    return 0;
}

/* text + "; the callable raised ValueError: ..." (the one-line form that
 * traceback prints for cause); text itself if that cannot be made. */
static PyObject *with_cause(PyObject *text, PyObject *cause)
{
    PyObject *lines = NULL, *line = NULL, *joined = NULL, *sep = NULL;
    PyObject *tb = PyImport_ImportModule("traceback");
    if (tb)
        lines = PyObject_CallMethod(tb, "format_exception_only", "OO",
                                    (PyObject *)Py_TYPE(cause), cause);
    if (lines && (sep = PyUnicode_FromString("")))
        joined = PyUnicode_Join(sep, lines);
    if (joined)
        line = PyObject_CallMethod(joined, "rstrip", "s", "\n");
    PyObject *r = line ? PyUnicode_FromFormat("%U; the callable raised %U",
                                              text, line)
                       : NULL;
    Py_XDECREF(tb);
    Py_XDECREF(lines);
    Py_XDECREF(sep);
    Py_XDECREF(joined);
    Py_XDECREF(line);
    if (!r) { /* a __str__ that raises: the cause still says it */
        PyErr_Clear();
        return Py_NewRef(text);
    }
    return r;
}

/* cause: the callable's exception (an Exception), or NULL. */
static PyObject *make_error(int code, const char *msg, PyObject *cause)
{
    PyObject *cls = (code > 0 && (size_t)code < RSP_NCODES)
                        ? rsp_error_class[code] : rsp_error_base;
    /* The message names paths as the OS gave them: bytes that are not
     * UTF-8 show as \xNN instead of raising UnicodeDecodeError. */
    PyObject *text = PyUnicode_DecodeUTF8(msg, (Py_ssize_t)strlen(msg),
                                          "backslashreplace");
    if (text && cause)
        Py_SETREF(text, with_cause(text, cause));
    PyObject *exc = text ? PyObject_CallOneArg(cls, text) : NULL;
    Py_XDECREF(text);
    if (!exc)
        return NULL;
    PyObject *pcode = PyLong_FromLong(code);
    PyObject *pname = PyUnicode_FromString(rngsnap_error_name(code));
    int bad = !pcode || !pname
              || PyObject_SetAttrString(exc, "code", pcode) < 0
              || PyObject_SetAttrString(exc, "name", pname) < 0;
    Py_XDECREF(pcode);
    Py_XDECREF(pname);
    if (bad) {
        Py_DECREF(exc);
        return NULL;
    }
    return exc;
}

PyObject *rsp_raise_msg(int code, const char *msg)
{
    PyObject *exc = make_error(code, msg, NULL);
    if (exc) {
        PyErr_SetObject((PyObject *)Py_TYPE(exc), exc);
        Py_DECREF(exc);
    }
    return NULL;
}

PyObject *rsp_raise(rsp_context *owner, int code)
{
    PyObject *exc = NULL;
    PyObject *cause = owner ? owner->pending_value : NULL;
    if (cause && !PyErr_GivenExceptionMatches(cause, PyExc_Exception))
        cause = NULL; /* Ctrl-C: raised as itself, below */
    if (code) {
        exc = make_error(code, rngsnap_errmsg(owner ? owner->ctx : NULL),
                         cause);
        if (!exc) {
            if (owner)
                rsp_drop_pending(owner);
            return NULL;
        }
    }
    if (owner && owner->pending_value) {
        PyObject *t = owner->pending_type, *v = owner->pending_value;
        PyObject *tb = owner->pending_tb;
        owner->pending_type = owner->pending_value = owner->pending_tb = NULL;
        if (!PyErr_GivenExceptionMatches(v, PyExc_Exception)) {
            /* KeyboardInterrupt, SystemExit: raised as themselves (an
             * `except Error` must not swallow Ctrl-C), with the failed
             * call's Error as their __context__. */
            if (exc)
                PyException_SetContext(v, exc); /* steals exc */
            PyErr_Restore(t, v, tb);
            return NULL;
        }
        Py_XDECREF(t);
        Py_XDECREF(tb);
        if (!exc) {
            Py_DECREF(v);
            return PyErr_Format(PyExc_SystemError, "rngsnap: no error");
        }
        /* raise Error(...) from the callable's exception */
        PyException_SetCause(exc, Py_NewRef(v)); /* steals */
        PyException_SetContext(exc, v);          /* steals v */
    }
    if (!exc) /* code 0 and nothing pending: a caller's mistake */
        return PyErr_Format(PyExc_SystemError, "rngsnap: no error");
    PyErr_SetObject((PyObject *)Py_TYPE(exc), exc);
    Py_DECREF(exc);
    return NULL;
}
