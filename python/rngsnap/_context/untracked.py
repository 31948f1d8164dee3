"""Layer context: the untracked-generator report (docs/python.md, "Untracked
generators"): at a save, the generators that live in the process but are
in no checkpoint, by type and where they live.

A generator counts as tracked when a register_generator() of an open
context covers it, when ignore_generator() marked it, or when it is one
of the process-wide generators that rngsnap.torch.track() owns (torch's
default generators, NumPy's global RandomState, random's own instance)
or that a library keeps for itself (the random.Random of each tempfile
name sequence: tempfile's, multiprocessing's; SymPy's, which torch 2.x
imports).

Every save compares the process-wide generators (torch's, NumPy's,
random's: process_wide.py) with the previous save's states, a few
microseconds; the scan of everything else is rate-limited under "warn"
(Watch.due).

The scan looks only for the types of modules already imported (it never
imports torch or NumPy), walks gc.get_objects() and what each object
refers to in one C pass (_rngsnap._find_instances: a torch.Generator is
not tracked by the cycle collector, so it is found as a referent), and
the frames of the running call stack.  Finding where an object lives
costs more (gc.get_referrers walks), so it is done only for what is
reported.
"""

import gc
import sys
import time
import types as _types
import warnings
import weakref

from . import process_wide
from .generators import adapter_for
from .. import _rngsnap
from .._core.errors import (UntrackedGeneratorError,
                            UntrackedGeneratorWarning, error)
from .._core.stack import ours, stacklevel

MODES = ("warn", "error", "ignore")
# "warn": a later save scans again once RESCAN_FACTOR times the last
# scan's duration has passed since it ended (at most ~1% of the time).
RESCAN_FACTOR = 100
_clock = time.monotonic  # tests replace it


def check_mode(mode):
    if mode not in MODES:
        raise ValueError("untracked must be one of %s, not %r"
                         % (", ".join(map(repr, MODES)), mode))
    return mode


# ---- what to look for ----------------------------------------------------

def _subclasses(cls):
    out, todo = [], [cls]
    while todo:
        c = todo.pop()
        out.append(c)
        todo.extend(c.__subclasses__())
    return out


def target_types():
    """The generator types of the modules imported so far: (those the
    cycle collector tracks, so in gc.get_objects(); those it does not,
    found only as what other objects refer to)."""
    tracked, held = [], []
    torch = sys.modules.get("torch")
    if torch is not None and hasattr(torch, "Generator"):
        held.append(torch.Generator)
    npr = sys.modules.get("numpy.random")
    if npr is not None:
        tracked += [npr.Generator, npr.RandomState]
        tracked += _subclasses(npr.BitGenerator)[1:]
    rnd = sys.modules.get("random")
    if rnd is not None:
        system = set(_subclasses(rnd.SystemRandom))
        tracked += [c for c in _subclasses(rnd.Random) if c not in system]
    return tuple(tracked), tuple(held)


def library_generators():
    """The generators libraries keep for themselves, as {id: object}
    (torch's, NumPy's and random's global ones: process_wide.py)."""
    objs = _sympy_generators()
    return {id(o): o for o in objs if o is not None}


def _sympy_generators():
    """SymPy's random.Random instances, made when it is imported: torch 2.x
    imports it with its first optimizer (torch.optim -> torch._dynamo ->
    symbolic_shapes).  They serve SymPy's own work: the order its
    assumption rules are tried in (the answer must not depend on it),
    randomized factoring and numeric spot checks, the base index of Dummy
    names.  A training job never draws from them (torch uses SymPy for
    symbolic shapes only), so no checkpoint needs them.  A job that draws
    from sympy.core.random itself registers sympy.core.random.rng.
    SymPy 1.11 (Debian 12) to 1.14 (torch 2.13's)."""
    mods = sys.modules
    rand = mods.get("sympy.core.random")
    symbol = mods.get("sympy.core.symbol")
    return [getattr(rand, "rng", None),
            getattr(rand, "_assumptions_rng", None),  # 1.14, not 1.11
            getattr(getattr(symbol, "Dummy", None), "_prng", None),
            getattr(mods.get("sympy.ntheory.ecm"), "rgen", None),  # 1.11
            getattr(mods.get("sympy.ntheory.qs"), "rgen", None)]  # 1.11


def _library_holders():
    """Types whose instances hold a random.Random of a library's own (not
    data): tempfile's name sequences (tempfile's, multiprocessing's
    SemLock._rand).  The scan finds them with the generators."""
    tmp = sys.modules.get("tempfile")
    seq = getattr(tmp, "_RandomNameSequence", None)
    return (seq,) if isinstance(seq, type) else ()


def _label(obj):
    mod = type(obj).__module__ or ""
    name = type(obj).__qualname__
    if mod.startswith("torch"):
        return "torch.Generator (%s)" % obj.device.type
    if mod.startswith("numpy.random"):
        if name in ("Generator", "RandomState"):
            bg = getattr(obj, "bit_generator", None) or obj._bit_generator
            return "numpy.random.%s(%s)" % (name, type(bg).__qualname__)
        return "numpy.random.%s" % name
    return "%s.%s" % (mod, name)


# ---- the scan ------------------------------------------------------------

def _frame_pairs(targets):
    """(found, frame) for the locals of the running call stack (their
    frames are not in gc.get_objects())."""
    out = []
    f = sys._getframe(1)
    while f is not None:
        if not ours(f):
            out += [(v, f) for v in f.f_locals.values() if type(v) in targets]
        f = f.f_back
    return out


class Found:
    """One untracked generator: .label ("torch.Generator (cpu)"), .obj,
    .places (where it lives, e.g. "DataLoader.generator")."""

    def __init__(self, obj, places):
        self.obj = obj
        self.label = _label(obj)
        self.places = places

    def __repr__(self):
        return "<untracked %s at %s>" % (
            self.label, ", ".join(self.places) or "(unknown)")


def _inner_bit_generator(obj):
    npr = sys.modules.get("numpy.random")
    if npr is None:
        return None
    if isinstance(obj, npr.Generator):
        return obj.bit_generator
    if isinstance(obj, npr.RandomState):
        return obj._bit_generator
    return None


def scan(tracked, globals_held=False):
    """Every untracked generator (a list of Found, places filled in);
    tracked: ids of objects that do not count; globals_held: an open
    context's track() holds torch's, NumPy's and random's globals (else
    each one that drew since seeded is reported)."""
    in_gc, held = target_types()
    if not in_gc and not held:
        return []
    libs = _library_holders()
    objects = gc.get_objects()
    pairs = _rngsnap._find_instances(objects, in_gc + libs, held)
    del objects
    pairs += _frame_pairs(set(in_gc + held))
    skip = (set(tracked) | set(library_generators())
            | process_wide.undrawn_ids(globals_held))
    for obj, _ in pairs:
        if type(obj) in libs:
            skip |= {id(obj), id(getattr(obj, "_rng", None))}
    objs, holders = {}, {}
    for obj, holder in pairs:
        if id(obj) not in skip:
            objs[id(obj)] = obj
            if holder is not None and type(holder) is not Found:
                holders.setdefault(id(obj), []).append(holder)
    del pairs
    # A bit generator inside a Generator/RandomState is that one's state.
    inner = {id(b) for b in map(_inner_bit_generator, objs.values())
             if b is not None}
    found = [o for o in objs.values() if id(o) not in inner]
    del objs  # found is then the only container of ours that holds them
    places = _places(found, holders)
    return sorted((Found(o, places[id(o)]) for o in found),
                  key=lambda f: (f.label, f.places))


# ---- where they live -------------------------------------------------------

def _items(container):
    if isinstance(container, dict):
        return container.items()
    if isinstance(container, (list, tuple)):
        return enumerate(container)
    return ()


def _inside(value, obj):
    """value is obj, or an untracked dict/tuple holding it: the suffix
    ("", "[key]") or None."""
    if value is obj:
        return ""
    if isinstance(value, (dict, tuple)) and not gc.is_tracked(value):
        for k, v in _items(value):
            if v is obj:
                return "[%r]" % (k,)
    return None


def _key_of(container, obj):
    """(key, suffix) of obj in container, directly (suffix "") or inside
    an untracked dict/tuple it holds; (None, None) if neither."""
    for k, v in _items(container):
        suffix = _inside(v, obj)
        if suffix is not None:
            return k, suffix
    return None, None


def _attrs(o):
    """o's __dict__, or None; read past any __getattr__ of o's class."""
    if not getattr(type(o), "__dictoffset__", 0):
        return None
    try:
        d = object.__getattribute__(o, "__dict__")
    except AttributeError:
        return None
    return d if isinstance(d, dict) else None


def _attr_place(holder, obj):
    attrs = _attrs(holder)
    k, suffix = _key_of(attrs, obj) if attrs is not None else (None, None)
    if k is None:
        return None
    return "%s.%s%s" % (type(holder).__qualname__, k, suffix)


def _frame_place(frame, obj):
    k, suffix = _key_of(frame.f_locals, obj)
    if k is None:
        return None
    if frame.f_code.co_name == "<module>":
        return "%s.%s%s" % (frame.f_globals.get("__name__"), k, suffix)
    return "%s() local %s%s" % (frame.f_code.co_qualname, k, suffix)


def _place(holder, obj, modules, names):
    if isinstance(holder, _types.FrameType):
        return _frame_place(holder, obj)
    if isinstance(holder, (_types.GeneratorType, _types.CoroutineType)):
        frame = getattr(holder, "gi_frame", None) or getattr(
            holder, "cr_frame", None)
        return _frame_place(frame, obj) if frame is not None else None
    if type(holder) in (dict, list, tuple):
        k, suffix = _key_of(holder, obj)
        if k is None:  # deeper than rngsnap looks
            return "inside a %s" % type(holder).__name__
        if id(holder) in modules:
            return "%s.%s%s" % (modules[id(holder)], k, suffix)
        name, is_attrs = names.get(id(holder), (None, False))
        if name is None:
            return "a %s, %s %r%s" % (type(holder).__name__, "key" if
                                      type(holder) is dict else "item", k,
                                      suffix)
        return ("%s.%s%s" % (name, k, suffix) if is_attrs
                else "%s[%r]%s" % (name, k, suffix))
    if isinstance(holder, _types.CellType):
        return "a closure variable"
    return _attr_place(holder, obj) or "a %s" % type(holder).__qualname__


def _container_names(containers, modules):
    """{id: (name, is_attrs)} for the dicts, lists and tuples holding a
    found generator: an object's __dict__ ("DataLoader", True), an
    object's attribute ("Holder.gens", False) or a module's global
    ("__main__.gens", False).  One gc.get_referrers walk for all."""
    names = {}
    for r in gc.get_referrers(*containers.values()):
        attrs = _attrs(r)
        if attrs is not None and containers.get(id(attrs)) is attrs:
            names[id(attrs)] = (type(r).__qualname__, True)
        elif attrs is None and id(r) in modules:
            attrs = r
        if attrs is None:
            continue
        prefix = (modules[id(r)] if id(r) in modules
                  else type(r).__qualname__)
        for k, v in attrs.items():
            if containers.get(id(v)) is v:
                names.setdefault(id(v), ("%s.%s" % (prefix, k), False))
    return names


def _referrers(objs, holders):
    """Add to holders (id -> list) what refers to each of objs, in one
    gc.get_referrers walk: the holders of the generators the collector
    tracks (the C scan records only those of torch's).  rngsnap's own
    frames and lists do not count."""
    targets = {id(o) for o in objs}
    # A function frame's f_locals is a snapshot dict (read by
    # _frame_pairs, which names those places already).
    snapshots = set()
    f = sys._getframe(1)
    while f is not None:
        if f.f_locals is not f.f_globals:
            snapshots.add(id(f.f_locals))
        f = f.f_back
    for r in gc.get_referrers(*objs):
        if (r is objs or id(r) in snapshots or type(r) is Found
                or (isinstance(r, _types.FrameType) and ours(r))):
            continue
        for x in gc.get_referents(r):
            if id(x) in targets:
                holders.setdefault(id(x), []).append(r)


def _places(objs, holders):
    """{id: [place, ...]} of each object of objs."""
    if not objs:
        return {}
    _referrers(objs, holders)
    modules = {}
    for name, m in sorted(sys.modules.items(), key=lambda i: -len(i[0])):
        if m is not None and isinstance(getattr(m, "__dict__", None), dict):
            modules[id(vars(m))] = name  # the shortest alias wins
    containers = {id(h): h for hs in holders.values() for h in hs
                  if type(h) in (dict, list, tuple) and id(h) not in modules}
    names = _container_names(containers, modules) if containers else {}
    out = {}
    for obj in objs:
        out[id(obj)] = []
        for h in holders.get(id(obj), ()):
            p = _place(h, obj, modules, names)
            if p and p not in out[id(obj)]:
                out[id(obj)].append(p)
    return out


# ---- the report ------------------------------------------------------------

def report_text(found):
    lines = ["%s at %s" % (f.label, ", ".join(f.places[:3]) or
                          "(no place found)") for f in found]
    n = len(found)
    wide = process_wide.ids()
    if any(id(f.obj) in wide for f in found):
        lines.append("(drawn from since the last save, in no checkpoint: " +
                     process_wide.FIX + ")")
    return ("%d generator%s live%s in this process but %s in no checkpoint, "
            "so a resumed run would not restore %s:\n  %s\n"
            "register each with ctx.register_generator(name, gen), or mark "
            "it deliberate with ctx.ignore_generator(gen) "
            "(Context(untracked=\"ignore\") turns this report off)") % (
                n, "" if n == 1 else "s", "s" if n == 1 else "",
                "is" if n == 1 else "are", "it" if n == 1 else "them",
                "\n  ".join(lines))


# Every open context: what any of them registers or ignores is tracked
# for all (a generator in one checkpoint is not a silent miss).
_contexts = weakref.WeakSet()


class _Schedule:
    """When the last scan of the process ended and what it cost: a scan
    sees the whole process, so "warn" spaces them process-wide (a job
    that opens a context per save pays one scan, not one per context)."""
    last_end = None
    last_cost = 0.0


_schedule = _Schedule()


def _tracked_everywhere():
    ids, held = set(), False
    for c in list(_contexts):
        if c.closed:  # let go of what it kept for the report
            c._watch.ignored.clear()
            c._generators.clear()
            continue
        ids |= c._generators.covered()
        ids |= set(c._watch.ignored)
        held = held or c._watch.holds_globals
    return ids, held


class Watch:
    """A context's report: its mode and its ignored generators."""

    def __init__(self, ctx, mode):
        self.mode = check_mode(mode)
        self.ignored = {}  # id -> object (kept alive: ids stay unique)
        self.holds_globals = False  # set by rngsnap.torch.track(ctx)
        _contexts.add(ctx)

    def ignore(self, gen):
        for o in adapter_for(gen, "ignore_generator").objects:
            self.ignored[id(o)] = o
        return gen

    def scan(self):
        start = _clock()
        found = scan(*_tracked_everywhere())
        _schedule.last_end = _clock()
        _schedule.last_cost = _schedule.last_end - start
        return found

    def due(self):
        if self.mode == "ignore":
            return False
        if self.mode == "error" or _schedule.last_end is None:
            return True
        return (_clock() - _schedule.last_end
                >= RESCAN_FACTOR * _schedule.last_cost)

    def quick(self):
        """Between two scans: the process-wide generators that no open
        context holds and that drew since the previous save (a Found
        each).  Microseconds: a few get_state() calls."""
        skip, held = _tracked_everywhere()
        if held:
            process_wide.forget()
            return []
        return [Found(g.obj, [g.where])
                for g in process_wide.drawn_since_last(skip)]

    def before_save(self, method, collective=None):
        """Scan when due, else compare the process-wide generators with
        the previous save's; warn, or raise UntrackedGeneratorError under
        "error" (which scans at every save).  collective(flag) -> the
        ranks that flagged, a comm.Flagged (a collective save method:
        every rank refuses together)."""
        if self.mode == "ignore":
            return
        found = self.scan() if self.due() else self.quick()
        if self.mode == "error":
            ranks = collective(bool(found)) if collective else None
            if found:
                raise error(UntrackedGeneratorError, (
                    "save refused, nothing written (untracked=\"error\"): "
                    + report_text(found)))
            if ranks:
                raise error(UntrackedGeneratorError, (
                    "%s refused on every rank, nothing written "
                    "(untracked=\"error\"): %s found generators in no "
                    "checkpoint") % (method, ranks))
        elif found:
            warnings.warn("rngsnap: " + report_text(found),
                          UntrackedGeneratorWarning,
                          stacklevel=stacklevel())
