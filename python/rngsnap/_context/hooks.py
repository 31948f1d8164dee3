"""Layer context: one path in front of every save and every load of
rngsnap.Context.

install(Context) wraps each method of SAVES and LOADS that the class has
(the C ones and the Python ones alike), so that a method added later
under one of these names gets the same checks with no edit here:

    a save   ctx._before_save(method, args, kw) first (the untracked
             generator report);
    a load   ctx._before_load(method, args, kw) first (the order check of
             registered generators), ctx._after_load() once it succeeded;
    both     an rngsnap error that one of rngsnap's own callables raised
             (a malformed state, a generator of another kind) is raised
             as itself, the core's words after its own.

A save or load called from inside another (state_dict() calling
save_bytes()) runs the checks once, in the outer one.
"""

import functools
import threading

from .._core.errors import Error, raised_by_python

SAVES = ("save", "save_bytes", "state_dict", "save_ranks")
LOADS = ("load", "load_bytes", "load_state_dict", "load_ranks")

_running = threading.local()  # .ids: contexts in a save/load on this thread


def _wrap(call, method, saving):
    @functools.wraps(call)
    def hooked(self, *args, **kw):
        ids = _running.__dict__.setdefault("ids", set())
        if id(self) in ids:  # inside our own save or load: checked there
            return call(self, *args, **kw)
        ids.add(id(self))
        try:
            if saving:
                self._before_save(method, args, kw)
            else:
                self._before_load(method, args, kw)
            try:
                result = call(self, *args, **kw)
            except Error as e:
                own = raised_by_python(e)
                if own is None:
                    raise
                raise own from e
            if not saving:
                self._after_load()
            return result
        finally:
            ids.discard(id(self))
    hooked.rngsnap_hooked = True
    return hooked


def install(cls):
    for names, saving in ((SAVES, True), (LOADS, False)):
        for method in names:
            call = getattr(cls, method, None)
            if call is not None and not getattr(call, "rngsnap_hooked",
                                                False):
                setattr(cls, method, _wrap(call, method, saving))
    return cls
