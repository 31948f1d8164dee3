/*
 * scan.c - _rngsnap._find_instances(objects, types, held_types): the
 * generators among `objects` (gc.get_objects()) and among what they
 * refer to.  The untracked generator report (rngsnap/_context/untracked.py)
 * runs it at a save, so it is one C pass that builds no list of referents:
 *
 * - an object of `objects` whose exact type is in `types` (the generator
 *   types the cycle collector tracks: NumPy's, random.Random) is returned
 *   as (object, None);
 * - when held_types is not empty, every object of `objects` is traversed
 *   (tp_traverse, as gc.get_referents does) and each referent whose exact
 *   type is in held_types (torch.Generator, which the collector does not
 *   track, so it is in no list) is returned as (referent, holder).  A dict
 *   or tuple holding nothing but such objects and atomic values is
 *   untracked too (the collector untracks them), so those are searched
 *   inside, one level of untracked container after another.
 */
#include "rngsnap_py.h"

#define SCAN_MAX_TYPES 64
#define SCAN_MAX_DEPTH 8 /* untracked containers inside each other */

typedef struct scan {
    PyTypeObject *types[SCAN_MAX_TYPES], *held[SCAN_MAX_TYPES];
    Py_ssize_t ntypes, nheld;
    /* (found, holder) pairs, strong references.  A plain array, not a
     * Python list of tuples: allocating a tracked object while traversing
     * could start a collection, whose finalizers may change the very
     * container being traversed. */
    PyObject **pairs;
    size_t npairs, cap;
    PyObject *holder; /* the object being traversed */
    int depth;
} scan;

static int in(PyTypeObject *const *set, Py_ssize_t n, PyObject *o)
{
    PyTypeObject *t = Py_TYPE(o);
    for (Py_ssize_t i = 0; i < n; i++)
        if (set[i] == t)
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
    if (in(s->held, s->nheld, o))
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

/* A tuple of at most SCAN_MAX_TYPES types into set; -1 with an error. */
static int types_from(PyObject *tuple, PyTypeObject **set, Py_ssize_t *n)
{
    *n = PyTuple_GET_SIZE(tuple);
    if (*n > SCAN_MAX_TYPES) {
        PyErr_Format(PyExc_ValueError, "_find_instances: at most %d types",
                     SCAN_MAX_TYPES);
        return -1;
    }
    for (Py_ssize_t i = 0; i < *n; i++) {
        PyObject *t = PyTuple_GET_ITEM(tuple, i);
        if (!PyType_Check(t)) {
            PyErr_Format(PyExc_TypeError, "_find_instances: types must be "
                         "types, not %.100s", Py_TYPE(t)->tp_name);
            return -1;
        }
        set[i] = (PyTypeObject *)t;
    }
    return 0;
}

PyObject *rsp_find_instances(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *objects, *types, *held;
    if (!PyArg_ParseTuple(args, "O!O!O!:_find_instances", &PyList_Type,
                          &objects, &PyTuple_Type, &types, &PyTuple_Type,
                          &held))
        return NULL;
    scan s = {0};
    if (types_from(types, s.types, &s.ntypes) < 0
        || types_from(held, s.held, &s.nheld) < 0)
        return NULL;
    /* The list holds every item while it is traversed, and nothing here
     * runs Python code or allocates a tracked object until the end. */
    int rc = 0;
    for (Py_ssize_t i = 0; !rc && i < PyList_GET_SIZE(objects); i++) {
        PyObject *o = PyList_GET_ITEM(objects, i);
        if (in(s.types, s.ntypes, o))
            rc = add(&s, o, Py_None);
        if (!rc && s.nheld && PyObject_IS_GC(o)) {
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
