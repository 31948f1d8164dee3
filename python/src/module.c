/*
 * module.c - the rngsnap._rngsnap extension module: types, errors and the
 * paths baked in at build time (the package's Context uses them to find
 * rng.ini the way the rngsnap command does).
 */
#include "rngsnap_py.h"
#include "rngsnap_build_config.h"

int rsp_u64(PyObject *o, const char *what, uint64_t *out)
{
    /* __index__: NumPy and torch integers are seeds and keys too. */
    PyObject *i = PyNumber_Index(o);
    if (!i)
        return -1;
    unsigned long long v = PyLong_AsUnsignedLongLong(i);
    if (v == (unsigned long long)-1 && PyErr_Occurred()) {
        if (PyErr_ExceptionMatches(PyExc_OverflowError)) {
            PyErr_Clear();
            PyErr_Format(PyExc_OverflowError, "%s = %R is out of range "
                         "(0 to 2**64 - 1)", what, i);
        }
        Py_DECREF(i);
        return -1;
    }
    Py_DECREF(i);
    *out = (uint64_t)v;
    return 0;
}

static PyObject *mod_dist_size(PyObject *self, PyObject *name)
{
    (void)self;
    int d = rsp_dist_from(name);
    return d < 0 ? NULL : PyLong_FromSize_t(rngsnap_dist_size(d));
}

static PyMethodDef mod_methods[] = {
    {"dist_size", mod_dist_size, METH_O,
     "dist_size(dist) -> bytes of one value"},
    {"_find_instances", rsp_find_instances, METH_VARARGS,
     "_find_instances(objects, types, held_types) -> [(found, holder)] "
     "(scan.c)"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef rsp_module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "rngsnap._rngsnap",
    .m_doc = "C core of the rngsnap package (use the rngsnap package).",
    .m_size = -1,
    .m_methods = mod_methods,
};

PyMODINIT_FUNC PyInit__rngsnap(void)
{
    PyObject *m = PyModule_Create(&rsp_module);
    if (!m)
        return NULL;
    if (PyType_Ready(&rsp_context_type) < 0
        || PyType_Ready(&rsp_stream_type) < 0
        || PyType_Ready(&rsp_keyed_type) < 0
        || PyType_Ready(&rsp_ledger_type) < 0
        || PyModule_AddObjectRef(m, "Context",
                                 (PyObject *)&rsp_context_type) < 0
        || PyModule_AddObjectRef(m, "Stream",
                                 (PyObject *)&rsp_stream_type) < 0
        || PyModule_AddObjectRef(m, "KeyedStream",
                                 (PyObject *)&rsp_keyed_type) < 0
        || rsp_errors_init(m) < 0
        || PyModule_AddStringConstant(m, "DEFAULT_CONFIG",
                                      RNGSNAP_DEFAULT_INI) < 0
        || PyModule_AddStringConstant(m, "BUILD_CONFIG",
                                      RNGSNAP_BUILD_INI) < 0
        || PyModule_AddStringConstant(m, "BUILD_ROOT", RNGSNAP_BUILD_ROOT) < 0
        || PyModule_AddStringConstant(m, "version",
                                      rngsnap_version()) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
