"""rngsnap for PyTorch jobs (docs/python.md).

track(ctx) puts every generator a PyTorch job draws from into the same
checkpoint as ctx's streams, as app states (one list, walked for save and
load alike):

    rngsnap.fingerprint   what else changes results (versions, flags, env)
    torch.cpu             torch's default CPU generator
    torch.<acc>:<i>       the generator of device i of every accelerator
                          torch exposes here: cuda, xpu, mps, npu
                          (torch_npu), hpu (habana_frameworks)
    numpy.global          NumPy's legacy global generator (np.random.*)
    python.random         Python's random module

A checkpoint with a device generator this process lacks (or lacking one it
has) fails the load with MismatchError, as for streams: the names carry the
device index and the core matches app states strictly.

worker_init_fn() and seed_from() seed torch, NumPy and random from keyed
streams (Stream.derive), for DataLoader workers and per-sample draws.
"""

import functools
import random as _random
import warnings
import weakref

import numpy as _np
import torch as _torch

from ._context import reseed as _reseed
from ._core import encoding as _enc
from ._core import fingerprint as _fp
from ._core import genstate as _gs
from ._core import ledger_digest as _ld
from ._core.errors import Error, MismatchError, error, raised_by_python
from ._context import seeding as _sd
from ._core.stack import stacklevel
from ._core.tensor_bytes import bytes_tensor as _bytes_tensor
from ._core.tensor_bytes import tensor_bytes as _tensor_bytes
from ._context import order as _order
from ._context.order import awaiting_load as _awaiting_load, check_order
# Mid-epoch resume with a standard DataLoader (_sampler.py).
from ._sampler import (DistributedResumableSampler, KeyedDataset,  # noqa
                       LOADER_KEY, ORDER_KEY, ResumableSampler, SampleKey,
                       seed_words as _seed_words)

__all__ = ["track", "Tracker", "worker_init_fn", "seed_from",
           "WORKER_KEY_BASE", "ResumableSampler",
           "DistributedResumableSampler", "KeyedDataset", "SampleKey",
           "ORDER_KEY", "LOADER_KEY"]

FINGERPRINT_STATE = "rngsnap.fingerprint"
# worker_init_fn keys (epoch, WORKER_KEY_BASE + worker id): apart from the
# (epoch, sample index) keys a dataset draws from the same stream.
WORKER_KEY_BASE = 1 << 63
_MODES = ("warn", "strict", "off")


# ---- the accelerators torch may expose, one table ------------------------
# (prefix, vendor package to import first or None, its torch module).
# Each module offers device_count(), get_rng_state(device) and
# set_rng_state(state, device) (Habana's under .random); mps has one device
# and no index.  A package that is not installed (ImportError), a module
# torch lacks or a runtime without devices adds nothing.

def _module(name):
    try:
        __import__(name)
    except ImportError:  # the vendor package is not installed here
        return None
    import sys
    return sys.modules[name]


def _torch_attr(prefix):
    return lambda: getattr(_torch, prefix, None)


_ACCELERATORS = (
    ("cuda", None, _torch_attr("cuda")),
    ("xpu", None, _torch_attr("xpu")),
    ("mps", None, _torch_attr("mps")),
    ("npu", "torch_npu", _torch_attr("npu")),
    ("hpu", "habana_frameworks.torch", lambda: _module(
        "habana_frameworks.torch.hpu")),
)


def _available(prefix, mod):
    if prefix == "mps":
        return _torch.backends.mps.is_available()
    return mod.is_available()


def _device_generators():
    """[(name, device name, get() -> tensor, set(tensor))] for every visible
    accelerator device, in table order then device order."""
    out = []
    for prefix, package, find in _ACCELERATORS:
        if package is not None and _module(package) is None:
            continue
        mod = find()
        rng = mod if hasattr(mod, "get_rng_state") else getattr(
            mod, "random", None)
        if mod is None or not hasattr(rng, "get_rng_state"):
            continue
        try:
            if not _available(prefix, mod):
                continue
            count = 1 if prefix == "mps" else mod.device_count()
        except (AttributeError, RuntimeError):  # a runtime failing its probe
            continue
        for i in range(count):
            name = "torch.%s:%d" % (prefix, i)
            if prefix == "mps":
                get = (lambda r=rng: r.get_rng_state())
                put = (lambda t, r=rng: r.set_rng_state(t))
                dev = "mps"
            else:
                get = (lambda r=rng, i=i: r.get_rng_state(i))
                put = (lambda t, r=rng, i=i: r.set_rng_state(t, i))
                try:
                    dev = str(mod.get_device_name(i))
                except (AttributeError, RuntimeError):
                    dev = prefix
            out.append((name, dev, get, put))
    return out


class _Generator:
    """One tracked generator: its name, how to read it as bytes (the saved
    encoding), how to set it from those bytes, and what the divergence
    ledger digests of it (_ledger_digest.py; the encoding when None)."""

    def __init__(self, name, read, write, ledger=None):
        self.name, self.read, self.write = name, read, write
        self.ledger = ledger or read


def _torch_generator(name, get, put):
    def read():
        return _enc.encode_torch(_tensor_bytes(get()))

    def write(data):
        live = _tensor_bytes(get())
        forms = None
        if name.startswith("torch.cuda:"):
            # torch <= 2.0 gives 816 bytes, >= 2.1 16: the same seed and
            # offset, set in the live generator's form
            forms = ((_gs.CUDA_OLD_SIZE, _gs.CUDA_NEW_SIZE),
                     lambda raw: _gs.cuda_state_as(name, raw, live))
        raw = _enc.decode_torch(name, data, len(live), forms)
        put(_bytes_tensor(raw))
    return _Generator(name, read, write, _ld.torch_raw(get))


def _numpy_generator():
    name = "numpy.global"

    def write(data):
        _np.random.set_state(_enc.decode_numpy(name, data))
    read = lambda: _enc.encode_numpy(_np.random.get_state())  # noqa: E731
    return _Generator(name, read, write,
                      _ld.numpy_legacy(_np.random.mtrand._rand, read))


def _python_generator():
    name = "python.random"

    def write(data):
        _random.setstate(_enc.decode_python(name, data))
    read = lambda: _enc.encode_python(_random.getstate())  # noqa: E731
    return _Generator(name, read, write, _ld.python_random(_random._inst, read))


class Tracker:
    """What track() returns: the generators it registered (names), the
    fingerprint mode, and the order check of a resumed context."""

    def __init__(self, ctx, fingerprint, resume):
        if fingerprint not in _MODES:
            raise ValueError("fingerprint must be one of %s, not %r"
                             % (", ".join(_MODES), fingerprint))
        # Weak: ctx holds our callables and wrappers, which hold us; a
        # strong reference would keep a dropped context alive until the
        # cycle collector runs.
        refuse = getattr(ctx, "_refuse_late", None)
        if refuse is not None:
            refuse("rngsnap.torch.track(ctx)", "Call rngsnap.torch.track(ctx)"
                   " before the load (after building the model)")
        self._ctx = weakref.ref(ctx)
        self.fingerprint_mode = fingerprint
        devices = _device_generators()
        self.generators = [_torch_generator("torch.cpu", _torch.get_rng_state,
                                            _torch.set_rng_state)]
        self.generators += [_torch_generator(n, g, p)
                            for n, _, g, p in devices]
        self.generators += [_numpy_generator(), _python_generator()]
        self.fingerprint = _fp.collect(
            _torch, _np, [("torch.cpu", "cpu")]
            + [(n, d) for n, d, _, _ in devices], ctx.world_size)
        # Every generator's state now, for the order check of the load.
        self._awaiting = _awaiting_load(ctx) if resume is None else resume
        self._at_track = ({g.name: g.read() for g in self.generators}
                          if self._awaiting else {})
        # Re-seeding after the load, and a second load (_reseed.py).
        restored = getattr(ctx, "_restored", None)
        for g in (self.generators if self._awaiting and restored else ()):
            obj = _reseed.tracked_object(g.name)
            restored.add(g.name, g.read, obj is not None and
                         _reseed.probe_for(obj) or None,
                         [obj] if obj is not None else [], tracked=True)

        # The fingerprint first: under "strict" its load fails before any
        # generator is set (the core rolls back the streams it set).
        ctx.register_state(FINGERPRINT_STATE, save=self._save_fingerprint,
                           load=self._load_fingerprint,
                           ledger=self._ledger_fingerprint)
        for g in self.generators:
            ctx.register_state(g.name, save=g.read, load=g.write,
                               ledger=g.ledger)
        ctx._watch.holds_globals = True  # the untracked report's "held"
        trackers = getattr(ctx, "_trackers", None)
        if trackers is not None:  # the load's order check asks each
            trackers.append(self)
        _add_seeders(ctx, self.generators, devices)
        # load_bytes also serves load_state_dict, which calls it
        for method in ("load", "load_bytes", "load_ranks"):
            if hasattr(ctx, method):
                setattr(ctx, method, self._wrap(method))

    @property
    def names(self):
        return [FINGERPRINT_STATE] + [g.name for g in self.generators]

    # -- drawn before restore ------------------------------------------
    def _drawn(self):
        """Names of the generators that changed since track(), while the
        context still awaits its first load; else []."""
        if self._awaiting and not _awaiting_load(self._ctx()):
            self._awaiting, self._at_track = False, {}
        if not self._awaiting:
            return []
        return [g.name for g in self.generators
                if g.read() != self._at_track[g.name]]

    def _check_order(self, method, args, kw):
        # Every generator of the context that moved, the registered ones
        # too: the refusal names each, not the first family found.
        ctx = self._ctx()
        groups = getattr(ctx, "_order_groups", None)
        check_order(groups() if groups else [
            (self._drawn(), _order.TRACKED, "tracked generators")],
            method, args, kw)

    def check_order(self):
        """The load's order check, now: OrderError (nothing changed) if
        a tracked generator changed since track() while the context
        awaits its first load; else the load no longer checks.  For a
        framework that restores its own copy of these generators just
        before rngsnap's load (accelerate's load_state restores its
        random_states file, then the objects registered for
        checkpointing): call it where that restore begins, e.g.
        accelerator.register_load_state_pre_hook(lambda models, d:
        tracker.check_order())."""
        self._check_order("load", (), {})
        self._awaiting, self._at_track = False, {}

    def _wrap(self, method):
        """ctx.load / load_bytes / load_ranks, checked first: a refusal
        happens before the C load, so it changes nothing at all.  An rngsnap error
        raised by one of our load callables (the core reports it as
        BackendError, having rolled back) is raised as its own class: its
        own message, then the BackendError's in parentheses."""
        call = getattr(type(self._ctx()), method)

        @functools.wraps(call)
        def load(*args, **kw):
            self._check_order(method, args, kw)
            try:
                result = call(self._ctx(), *args, **kw)
            except Error as e:
                if getattr(e, "rngsnap_python", False):
                    raise  # the context's own load raised it as itself
                own = raised_by_python(e)
                if own is not None:
                    raise own from e
                if isinstance(e, MismatchError) and "app state torch." in str(e):
                    raise error(MismatchError, str(e) + self._hint()) \
                        from None
                raise
            self._awaiting, self._at_track = False, {}
            return result
        return load

    def _hint(self):
        return ("\nrngsnap.torch: this process tracks %s; a torch.<device>:<i> "
                "state is saved for every device torch sees, so the saving "
                "job saw other devices (CUDA_VISIBLE_DEVICES, device count, "
                "torch_npu / habana_frameworks installed?)"
                % ", ".join(g.name for g in self.generators))

    # -- fingerprint ---------------------------------------------------
    def _save_fingerprint(self):
        return _fp.encode(self.fingerprint)

    def _ledger_fingerprint(self):
        """The encoding, kept while the fingerprint is the same object (a
        ledger step digests it at every step)."""
        fp, data = getattr(self, "_fp_cache", (None, None))
        if fp is not self.fingerprint:
            data = _fp.encode(self.fingerprint)
            self._fp_cache = (self.fingerprint, data)
        return data

    def _load_fingerprint(self, data):
        saved = _fp.decode(FINGERPRINT_STATE, data)
        if self.fingerprint_mode == "off":
            return
        diffs = _fp.differences(saved, self.fingerprint)
        if not diffs:
            return
        head = ("rngsnap: this process differs from the checkpoint's "
                "determinism fingerprint (%d difference%s); a resumed run "
                "may not reproduce the original:" % (
                    len(diffs), "" if len(diffs) == 1 else "s"))
        text = "\n".join([head] + ["  " + d for d in diffs])
        if self.fingerprint_mode == "strict":
            raise error(MismatchError, text + "\n(fingerprint=\"strict\""
                             ": nothing restored)")
        # At the job's own line (its load), not at rngsnap's frames
        # between it and this callable.
        warnings.warn(text, RuntimeWarning, stacklevel=stacklevel())


# ---- ctx.seed_all seeds the tracked generators too (_seeding.py) --------

def _seed_device(name, get, seed):
    """Seed device generator name ("torch.<acc>:<i>") with seed."""
    prefix, i = name[len("torch."):].split(":")
    i = int(i)
    get()  # the device's runtime is initialised (lazily) first
    mod = _module("habana_frameworks.torch.hpu") if prefix == "hpu" else \
        getattr(_torch, prefix)
    rng = mod if hasattr(mod, "manual_seed") else getattr(mod, "random")
    gens = getattr(rng, "default_generators", None) or ()
    if i < len(gens):  # cuda, xpu: one generator per device
        gens[i].manual_seed(seed)
    elif prefix == "mps":
        rng.manual_seed(seed)
    else:
        with mod.device(i):
            rng.manual_seed(seed)


def _add_seeders(ctx, generators, devices):
    """Each tracked generator's seed(ctx) for ctx.seed_all, from its own
    keyed stream (its app state's name)."""
    add = getattr(ctx, "_add_seeder", None)
    if add is None:
        return
    gets = {n: g for n, _, g, _ in devices}
    seeders = {
        "torch.cpu": lambda c: _torch.default_generator.manual_seed(
            _sd.u64(c, "torch.cpu")),
        "numpy.global": lambda c: _np.random.seed(_np.array(
            _sd.words(c, "numpy.global", 4), dtype=_np.uint32)),
        "python.random": lambda c: _random.seed(sum(
            w << (32 * k) for k, w in enumerate(
                _sd.words(c, "python.random", 4)))),
    }
    for g in generators:
        fn = seeders.get(g.name) or (
            lambda c, n=g.name: _seed_device(n, gets[n], _sd.u64(c, n)))
        add(g.name, fn)


def track(ctx, fingerprint="warn", resume=None):
    """Register torch's, NumPy's and Python's generators (and the
    fingerprint) as app states of ctx.  Call it once per context, before
    the load of a resumed job and after anything that may draw before the
    restore (building the model): in a context opened with resume=True,
    ctx.load refuses with OrderError, changing nothing, when a tracked
    generator changed between track() and load().

    fingerprint: "warn" (a RuntimeWarning listing every difference),
    "strict" (MismatchError, nothing restored) or "off" (not compared; it
    is still saved, so checkpoints load under every mode).
    resume: None (default) checks the order when ctx awaits its first
    load (opened with resume=True); False never checks."""
    return Tracker(ctx, fingerprint, resume)


# ---- keyed seeding: data-loader workers and per-sample draws --------------

def seed_from(keyed):
    """Seed torch's default generator, NumPy's global generator and
    Python's random from the next draws of keyed (a stream or a keyed
    stream from Stream.derive).  Returns the 64-bit torch seed.  Allowed
    after the load of a resumed context: a pure function of the restored
    streams, as in the uninterrupted run."""
    words = keyed.generate("u32", 10)
    _reseed.note_keyed(["torch.cpu", "numpy.global", "python.random"])
    return _seed_words(words, _torch.manual_seed)


class _WorkerInit:
    """worker_init_fn for DataLoader: in worker w of epoch e, seeds torch,
    NumPy and random from stream.derive(e, WORKER_KEY_BASE + w).  A pure
    function of the stream's seeding, the epoch and the worker id: not of
    prefetching, timing or how far the stream itself has drawn."""

    def __init__(self, stream, epoch):
        self.stream, self.epoch = stream, int(epoch)

    def __call__(self, worker_id):
        seed_from(self.stream.derive(self.epoch, WORKER_KEY_BASE + worker_id))


def worker_init_fn(stream, epoch):
    """A DataLoader worker_init_fn for this epoch (docs/python.md,
    "Workers").  The worker derives from stream in its own process, so
    the DataLoader must fork its workers (Linux's default)."""
    return _WorkerInit(stream, epoch)
