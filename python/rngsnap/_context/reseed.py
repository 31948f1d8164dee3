"""Layer context: after the load of a resumed context, re-seeding and a
second load (docs/python.md, "After the load").

A context that has loaded a checkpoint resumes that run (strict by
default, whatever its resume= flag), until ctx.branch().  Once its load
has restored the generators it holds (rngsnap.torch.track()'s torch.*,
numpy.global and python.random; register_generator()'s own), two
mistakes throw the restored positions away with nothing to say so:

- re-seeding one (torch.manual_seed, accelerate's set_seed, ...), most
  often with the very seed the job started with, so that comparing seeds
  tells nothing;
- loading again after draws, which rewinds every generator (the core
  refuses it for its streams; here for the generators).

Re-seeding is refused as OrderError in two places, because neither sees
every re-seed:

1. At the call.  The seeding functions of SEEDERS (below) are wrapped,
   the first time a context holds a generator: a call that would
   re-seed a generator a load restored raises before it seeds anything.
   This catches the common case, whatever the seed and whatever the job
   draws afterwards.  It cannot see methods of C types (torch.Generator.
   manual_seed on torch.default_generator or a registered generator,
   numpy's RandomState.seed: their types cannot be changed), C or C++
   code seeding directly, nor a function bound before the wrap (`from
   torch import manual_seed` run before track()).
2. At the next save (and load).  A generator whose state moved since the
   load and is now one that only seeding leaves (torch: the state a fresh
   generator seeded with its initial_seed() has; MT19937 of NumPy's
   RandomState and of random: pos 624 and a key only init_genrand or
   init_by_array make), or a torch generator whose initial_seed() is no
   longer the one the load set, was re-seeded (or set) on a path the
   wrappers miss: the save is refused, writing nothing.  A torch CPU
   generator re-seeded with the same seed and then drawn from is behind
   where the load left it on its seed's chain of states (mt_chain.py):
   refused too, while it drew fewer words since the re-seed than the
   load's state had since its seeding (and fewer than about 160 000).  For NumPy's and random's generators (no seed in their
   state), a re-seed with the same seed followed by draws on such a path
   looks like draws alone and is not caught.

Not refused: seeding after ctx.branch() (Restored.branched), seeding in
another process than the one that loaded (a forked DataLoader worker
seeds its own copies), and rngsnap's own keyed
seeding (rngsnap.torch.seed_from, KeyedDataset: a pure function of the
restored streams, the same in an uninterrupted run).
"""

import functools
import os
import sys
import threading
import weakref

from . import comm
from .._core.errors import OrderError, error

_live = weakref.WeakSet()     # every Restored that holds a generator
_local = threading.local()    # .keyed: inside rngsnap's own seeding
_installed = set()            # (module name, attribute) already wrapped



def _fix(load_call):
    return ("Seed before %s, or don't re-seed: the checkpoint already holds "
            "the positions (to start a new run from this checkpoint on "
            "purpose, call ctx.branch() first)" % load_call)


# ---- what a seeding call reaches -----------------------------------------

def _torch_defaults(prefix=None):
    """The default generators torch seeds: the CPU one and every
    device's (prefix None), or one device module's."""
    torch = sys.modules.get("torch")
    if torch is None:
        return []
    out = [torch.default_generator] if prefix is None else []
    for p in ([prefix] if prefix else _DEVICES):
        mod = getattr(torch, p, None)
        out += list(getattr(mod, "default_generators", ()) or ())
    return out


def _current(mod, prefix):
    """"torch.<prefix>:<current device>" for a one-device seeding call,
    else the prefix of every device of the module.  Asked only of a
    runtime already started: asking would start it."""
    try:
        if mod.is_initialized():
            return ["torch.%s:%d" % (prefix, mod.current_device())]
    except Exception:  # no such function or runtime: name every device
        pass
    return ["torch.%s:" % prefix]


def tracked_object(name):
    """The generator object behind a track() name (torch.cpu,
    torch.<device>:<i>, numpy.global, python.random), or None."""
    if name == "numpy.global":
        return sys.modules["numpy.random"].mtrand._rand
    if name == "python.random":
        return sys.modules["random"]._inst
    torch = sys.modules["torch"]
    if name == "torch.cpu":
        return torch.default_generator
    prefix, _, i = name[len("torch."):].partition(":")
    gens = getattr(getattr(torch, prefix, None), "default_generators", ())
    return gens[int(i)] if i.isdigit() and int(i) < len(gens) else None


_DEVICES = ("cuda", "xpu", "mps", "npu", "hpu")


def _torch_all(args):
    return ["torch."], _torch_defaults()


def _device_all(prefix):
    return lambda args: (["torch.%s:" % prefix], _torch_defaults(prefix))


def _device_one(prefix):
    def targets(args):
        mod = getattr(sys.modules["torch"], prefix)
        names = _current(mod, prefix)
        gens = _torch_defaults(prefix)
        if names[0][-1] != ":":
            i = int(names[0].rsplit(":", 1)[1])
            gens = gens[i:i + 1]
        return names, gens
    return targets


def _numpy_global(args):
    npr = sys.modules["numpy.random"]
    return ["numpy.global"], [npr.mtrand._rand]


def _random_global(args):
    rnd = sys.modules["random"]
    return ["python.random"], [rnd._inst]


def _random_method(args):
    rnd = sys.modules["random"]
    me = args[0] if args else None
    return (["python.random"] if me is rnd._inst else []), [me]


# (module, attribute, targets(args) -> (tracked name prefixes, objects)).
# torch.manual_seed also calls torch.cuda.manual_seed_all etc.: checked
# there again, harmlessly.
SEEDERS = [("torch", a, _torch_all) for a in ("manual_seed", "seed")]
SEEDERS += [("torch.random", a, _torch_all) for a in ("manual_seed", "seed")]
for _p in _DEVICES:
    for _m in ("torch.%s" % _p, "torch.%s.random" % _p):
        SEEDERS += [(_m, a, _device_all(_p))
                    for a in ("manual_seed_all", "seed_all")]
        SEEDERS += [(_m, a, _device_one(_p)) for a in ("manual_seed", "seed")]
SEEDERS += [("numpy.random", "seed", _numpy_global),
            ("numpy.random.mtrand", "seed", _numpy_global),
            ("random", "seed", _random_global)]
# random.Random.seed: every Random instance, the global one included
# (random.seed is its bound method, made before any wrap: wrapped above).
_METHODS = [("random", "Random", "seed", _random_method)]


def _label(module, attr):
    return "%s.%s()" % (module, attr)


def _caller():
    """Where the seeding call came from: "set_seed (.../random.py, line
    54)" for accelerate's set_seed, the job's own line otherwise."""
    f = sys._getframe(3)  # _caller, refuse_seeding, seeding: its caller
    return "%s (%s, line %d)" % (f.f_code.co_name, f.f_code.co_filename,
                                 f.f_lineno)


def _wrap(call, label, targets):
    @functools.wraps(call)
    def seeding(*args, **kw):
        if _live and not getattr(_local, "keyed", False):
            refuse_seeding(label, targets, args)
        return call(*args, **kw)
    seeding.rngsnap_reseed_guard = True
    return seeding


def install():
    """Wrap every seeding function of SEEDERS whose module is imported
    (again later for one imported since).  Idempotent."""
    for module, attr, targets in SEEDERS:
        mod = sys.modules.get(module)
        if mod is None or (module, attr) in _installed:
            continue
        call = getattr(mod, attr, None)
        if call is None:
            continue
        _installed.add((module, attr))
        if not getattr(call, "rngsnap_reseed_guard", False):
            setattr(mod, attr, _wrap(call, _label(module, attr), targets))
    for module, cls, attr, targets in _METHODS:
        mod = sys.modules.get(module)
        if mod is None or (module, cls, attr) in _installed:
            continue
        klass = getattr(mod, cls)
        _installed.add((module, cls, attr))
        call = klass.__dict__[attr]
        if not getattr(call, "rngsnap_reseed_guard", False):
            setattr(klass, attr, _wrap(call, "%s.%s.%s()" % (module, cls,
                                                             attr), targets))


class keyed:
    """with keyed(): rngsnap's own keyed seeding (seed_words), let
    through the wrappers."""

    def __enter__(self):
        self.was = getattr(_local, "keyed", False)
        _local.keyed = True

    def __exit__(self, *exc):
        _local.keyed = self.was


def refuse_seeding(label, targets, args):
    """OrderError, before the call seeds anything, when it would re-seed
    a generator that the load of a live resumed context restored in this
    process."""
    pid = os.getpid()
    if not any(r.pid == pid for r in list(_live)):
        return  # no load yet, or a forked worker: it seeds its own copies
    names, gens = targets(args)
    ids = {id(g) for g in gens}
    hits = [(r, r.reached(names, ids)) for r in list(_live)]
    if any(hit for _, hit in hits):
        # Only a context still in use refuses: one the job dropped without
        # close() may wait in a reference cycle for the collector.
        import gc
        gc.collect()
        hits = [(r, r.reached(names, ids)) for r in list(_live)]
    for r, hit in hits:
        if hit:
            raise error(OrderError, (
                "%s refused, nothing seeded: called from %s, it would "
                "re-seed %s, which %s restored in this context (a context "
                "that has loaded a checkpoint resumes that run), and throw "
                "the restored position%s away. %s"
                % (label, _caller(), ", ".join(hit), r.load_call,
                   "s" if len(hit) > 1 else "", _fix(r.load_call))))


def note_keyed(names):
    """rngsnap.torch.seed_from re-seeded the generators names on purpose:
    the save no longer checks their state."""
    for r in list(_live):
        r.keyed.update(names)


# ---- what seeding leaves: the save's check --------------------------------

def _mt_init_genrand(first):
    """The MT19937 key init_genrand(first) makes (NumPy's seed(int))."""
    key = [first]
    for i in range(1, 624):
        prev = key[-1]
        key.append((1812433253 * (prev ^ (prev >> 30)) + i) & 0xffffffff)
    return key


def numpy_fresh(rs):
    """Is RandomState rs as seed() leaves it, before any draw?"""
    st = rs.get_state(legacy=False)
    inner = st.get("state", {})
    key, pos = inner.get("key"), inner.get("pos")
    if st.get("bit_generator") != "MT19937" or pos != 624 or st["has_gauss"]:
        return False
    key = [int(k) for k in key]
    return key[0] == 0x80000000 or key == _mt_init_genrand(key[0])


def random_fresh(r):
    """Is random.Random r as seed() leaves it (init_by_array), before
    any draw?"""
    version, inner, gauss = r.getstate()
    return (version == 3 and inner[-1] == 624 and inner[0] == 0x80000000
            and gauss is None)


def torch_fresh(gen):
    """Is torch.Generator gen as manual_seed(gen.initial_seed()) leaves
    it, before any draw?"""
    import torch
    try:
        fresh = torch.Generator(device=gen.device)
        fresh.manual_seed(gen.initial_seed())
        return torch.equal(fresh.get_state(), gen.get_state())
    except (RuntimeError, TypeError):  # a device torch cannot make one of
        return False


class Probe:
    """How the save tells a re-seeded generator: fresh() -> bool, seed()
    -> torch's initial_seed() or None, raw() -> a torch CPU generator's
    get_state() bytes (for mt_chain: behind the load on its seed's chain),
    or None for other generators."""

    def __init__(self, fresh, seed=None, raw=None):
        self.fresh, self.seed = fresh, seed or (lambda: None)
        self.raw = raw or (lambda: None)


def torch_probe(gen):
    cpu = getattr(gen.device, "type", None) == "cpu"
    return Probe(lambda: torch_fresh(gen), gen.initial_seed,
                 (lambda: gen.get_state().numpy().tobytes()) if cpu
                 else None)


def probe_for(obj):
    """The Probe of a generator object, or None for one that cannot be
    re-seeded in place (a numpy Generator or bit generator)."""
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(obj, torch.Generator):
        return torch_probe(obj)
    npr = sys.modules.get("numpy.random")
    if npr is not None and isinstance(obj, npr.RandomState):
        return Probe(lambda: numpy_fresh(obj))
    rnd = sys.modules.get("random")
    if rnd is not None and isinstance(obj, rnd.Random):
        return Probe(lambda: random_fresh(obj))
    return None


# ---- one context's record ---------------------------------------------------

class _Entry:
    def __init__(self, name, read, probe, objects, tracked):
        self.name, self.read, self.probe = name, read, probe
        self.ids = {id(o) for o in objects}
        self.tracked = tracked   # a track() name: seeding calls match it
        # (state bytes, initial seed, raw torch CPU state) after a load
        self.at_load = None


class Restored:
    """A context's generators and what its last load left in them: every
    context, since any load makes it a resumed one (until ctx.branch())."""

    def __init__(self, ctx):
        self._ctx = weakref.ref(ctx)
        self._entries = {}
        self.pid = None          # the process that loaded; None: not resumed
        self.load_call = "ctx.load()"
        self.keyed = set()       # re-seeded by seed_from since the load

    def add(self, name, read, probe, objects, tracked=False):
        """Hold generator name (read() -> its state as bytes) for the
        checks after a load."""
        self._entries[name] = _Entry(name, read, probe, objects, tracked)
        install()
        _live.add(self)

    def forget(self, name):
        self._entries.pop(name, None)

    def clear(self):
        """Let go of every generator (the context is closed)."""
        self._entries.clear()

    def loaded(self, method):
        """A load succeeded: what it left in every generator."""
        self.pid = os.getpid()
        self.load_call = "ctx.%s()" % method
        self.keyed.clear()
        for e in self._entries.values():
            e.at_load = (e.read(), e.probe.seed() if e.probe else None,
                         e.probe.raw() if e.probe else None)

    def branched(self):
        """ctx.branch(): no longer a resumed run; the next load is one
        again."""
        self.pid = None
        self.keyed.clear()
        for e in self._entries.values():
            e.at_load = None

    @property
    def resumed(self):
        """Has a load (not branched since) made this a resumed context,
        in this process?"""
        return self.pid == os.getpid()

    def _restored(self):
        """The entries a load restored, in this process, while the context
        is open; else []."""
        ctx = self._ctx()
        if self.pid != os.getpid() or ctx is None or ctx.closed:
            return []
        return [e for e in self._entries.values() if e.at_load is not None]

    def reached(self, prefixes, ids):
        return [e.name for e in self._restored()
                if (e.tracked and any(e.name.startswith(p) for p in prefixes))
                or e.ids & ids]

    def reseeded(self):
        """[(name, how)] of generators re-seeded (or set) since the load
        where no wrapper saw it."""
        out = []
        for e in self._restored():
            if e.probe is None or e.name in self.keyed:
                continue
            state, seed, raw = e.at_load
            now = e.probe.seed()
            if seed is not None and now != seed:
                out.append((e.name, "its initial_seed() is now %d, the one "
                            "%s set was %d" % (now, self.load_call, seed)))
            elif e.read() == state:
                continue
            elif e.probe.fresh():
                out.append((e.name, "its state is one that seeding leaves, "
                            "with no draw since"))
            elif raw is not None:
                back = _went_back(raw, e.probe.raw())
                if back is not None:
                    out.append((e.name, back))
        return out

    def moved(self):
        """Names of the generators whose state changed since the load."""
        return [e.name for e in self._restored() if e.read() != e.at_load[0]]


def _went_back(at_load, now):
    """How a torch CPU generator's state now is behind where the load left
    it on its own seed's chain (re-seeded with the same seed, then drawn
    from), or None."""
    from . import mt_chain
    back = mt_chain.went_back(at_load, now)
    if back is None:
        return None
    words, loaded = back
    seed = mt_chain.parse(now)[0]
    return ("its state is %d word%s past a fresh manual_seed(%d), behind "
            "the %s where the load left it: re-seeded with the same seed, "
            "then drawn from" % (
                words, "" if words == 1 else "s", seed,
                "%d words" % loaded if loaded is not None else
                "more than %d words" % (mt_chain.LIMIT * 624)))


# ---- the refusals of a save and of a second load ---------------------------

def _collective(method, args, kw):
    """The group of a collective save/load (save_ranks, load_ranks,
    state_dict(gather=True)), or False for a call of one rank."""
    if method in ("save_ranks", "load_ranks"):
        return kw.get("group", args[1] if len(args) > 1 else None)
    if method == "state_dict" and kw.get("gather",
                                          args[0] if args else False):
        return kw.get("group", args[1] if len(args) > 1 else None)
    return False


def _together(restored, flag, method, args, kw):
    """Ranks whose flag is set (a comm.Flagged), asked of every rank of
    a collective call (every rank refuses together, or the others wait
    for ever); None for a call of one rank.  Asked only once this resumed
    context has loaded: the ranks of a job load together (load_ranks, or
    each its load_state_dict before any collective save), so all ask or
    none does, and no other save or load pays a collective."""
    group = _collective(method, args, kw)
    if group is False or restored.pid is None:
        return None
    return comm.ranks_flagged(flag, group)


def check_save(restored, method, args, kw):
    """Before a save: OrderError, nothing written, when a generator the
    load restored was re-seeded since."""
    found = restored.reseeded()
    ranks = _together(restored, bool(found), method, args, kw)
    if found:
        raise error(OrderError, (
            "ctx.%s() refused, nothing written: %s since %s restored %s in "
            "this context (a context that has loaded a checkpoint resumes "
            "that run), so the checkpoint would not continue the resumed "
            "run. %s" % (
                method, "; ".join("%s was re-seeded or set (%s)" % nh
                                  for nh in found),
                restored.load_call, "them" if len(found) > 1 else "it",
                _fix(restored.load_call))))
    if ranks:
        raise error(OrderError, (
            "ctx.%s() refused on every rank, nothing written: %s "
            "re-seeded a generator that %s restored. %s" % (
                method, ranks, restored.load_call,
                _fix(restored.load_call))))


def check_reload(ctx, restored, method, args, kw):
    """Before a load: OrderError, nothing restored, when a resumed context
    has drawn since its load (a generator it holds moved, or a stream drew):
    loading again would rewind them."""
    # The core clears its streams' drawn flags at every load: drawn since.
    gens, streams = ((restored.moved(), ctx._streams_drawn())
                     if restored.resumed else ([], []))
    moved = []
    if gens:
        moved.append("generator%s %s changed (drawn from, re-seeded or set)"
                     % ("s" if len(gens) > 1 else "", ", ".join(gens)))
    if streams:
        moved.append("stream%s %s drew" % ("s" if len(streams) > 1 else "",
                                           ", ".join(streams)))
    many = len(gens) + len(streams) > 1
    ranks = _together(restored, bool(moved), method, args, kw)
    tail = ("; loading again would rewind %s to the checkpoint's positions "
            "and replay numbers already used. Load once, before the first "
            "draw; to go back to a checkpoint on purpose, load it into a "
            "new rngsnap.Context() or call ctx.branch() first")
    if moved:
        raise error(OrderError, (
            "ctx.%s() refused, nothing restored: this context has loaded a "
            "checkpoint and since %s, %s" % (
                method, restored.load_call, " and ".join(moved)))
            + tail % ("them" if many else "it"))
    if ranks:
        raise error(OrderError, (
            "ctx.%s() refused on every rank, nothing restored: %s drew "
            "since %s" % (method, ranks, restored.load_call))
            + tail % "them")
