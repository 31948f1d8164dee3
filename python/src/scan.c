/*
 * scan.c - _rngsnap._find_instances(objects, types): the objects of the
 * given exact types among `objects` (gc.get_objects()) and among what
 * they refer to, each with the object that refers to it.  The untracked
 * generator report (rngsnap/_untracked.py) runs it at every save, so it
 * is one C pass with no list of referents built: a torch.Generator is not
 * tracked by the cycle collector, so it is found only as a referent, and
 * a dict or tuple holding nothing but such objects and atomic values is
 * untracked too (the collector untracks them), so those are searched
 * inside, one level of untracked container after another.
 */
#include "rngsnap_py.h"

#define SCAN_MAX_TYPES 64
#define SCAN_MAX_DEPTH 8 /* untracked containers inside each other */

typedef struct scan {
    PyTypeObject *types[SCAN_MAX_TYPES];
    Py_ssize_t ntypes;
    /* (found, holder) pairs, strong references.  A plain array, not a
     * Python list of tuples: allocating a tracked object while traversing
     * could start a collection, whose finalizers may change the very
     * container being traversed. */
    PyObject **pairs;
    size_t npairs, cap;
    PyObject *holder; /* the object being traversed (None: found itself) */
    int depth;
} scan;

static int wanted(const scan *s, PyObject *o)
{
    PyTypeObject *t = Py_TYPE(o);
    for (Py_ssize_t i = 0; i < s->ntypes; i++)
        if (s->types[i] == t)
            return 1;
    return 0;
}

static int add(scan *s, PyObject *found, PyObject *holder)
{
    if (s->npairs == s->cap) {
        size_t cap = s->cap ? 2 * s->cap : 16;
        PyObject **p = PyMem_Realloc(s->pairs, 2 * cap * sizeof *p);
        if (!p) {
            PyErr_NoMemory();
            return -1;
        }
        s->pairs = p;
        s->cap = cap;
    }
    s->pairs[2 * s->npairs] = Py_NewRef(found);
    s->pairs[2 * s->npairs + 1] = Py_NewRef(holder);
    s->npairs++;
    return 0;
}

static int visit(PyObject *o, void *arg)
{
    scan *s = arg;
    if (wanted(s, o))
        return add(s, o, s->holder);
    /* Not in gc.get_objects(): look inside here, or never. */
    if ((PyDict_CheckExact(o) || PyTuple_CheckExact(o))
        && !PyObject_GC_IsTracked(o) && s->depth < SCAN_MAX_DEPTH) {
        s->depth++;
        int rc = Py_TYPE(o)->tp_traverse(o, visit, s);
        s->depth--;
        return rc;
    }
    return 0;
}

static PyObject *pairs_list(scan *s)
{
    PyObject *out = PyList_New((Py_ssize_t)s->npairs);
    for (size_t i = 0; out && i < s->npairs; i++) {
        PyObject *pair = PyTuple_Pack(2, s->pairs[2 * i],
                                      s->pairs[2 * i + 1]);
        if (!pair)
            Py_CLEAR(out);
        else
            PyList_SET_ITEM(out, (Py_ssize_t)i, pair);
    }
    return out;
}

PyObject *rsp_find_instances(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *objects, *types;
    if (!PyArg_ParseTuple(args, "O!O!:_find_instances", &PyList_Type,
                          &objects, &PyTuple_Type, &types))
        return NULL;
    scan s = {.ntypes = PyTuple_GET_SIZE(types)};
    if (s.ntypes > SCAN_MAX_TYPES)
        return PyErr_Format(PyExc_ValueError, "_find_instances: at most %d "
                            "types", SCAN_MAX_TYPES);
    for (Py_ssize_t i = 0; i < s.ntypes; i++) {
        PyObject *t = PyTuple_GET_ITEM(types, i);
        if (!PyType_Check(t))
            return PyErr_Format(PyExc_TypeError, "_find_instances: types "
                                "must hold types, not %.100s",
                                Py_TYPE(t)->tp_name);
        s.types[i] = (PyTypeObject *)t;
    }
    /* The list holds every item while it is traversed, and nothing here
     * runs Python code or allocates a tracked object until the end. */
    int rc = 0;
    for (Py_ssize_t i = 0; !rc && i < PyList_GET_SIZE(objects); i++) {
        PyObject *o = PyList_GET_ITEM(objects, i);
        if (wanted(&s, o))
            rc = add(&s, o, Py_None);
        if (!rc && PyObject_IS_GC(o)) {
            s.holder = o;
            rc = Py_TYPE(o)->tp_traverse(o, visit, &s);
        }
    }
    PyObject *out = rc ? NULL : pairs_list(&s);
    for (size_t i = 0; i < 2 * s.npairs; i++)
        Py_DECREF(s.pairs[i]);
    PyMem_Free(s.pairs);
    return out;
}
