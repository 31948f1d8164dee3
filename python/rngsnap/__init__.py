"""rngsnap: checkpoint and restore every random-number stream of a process.

    import rngsnap
    with rngsnap.Context() as ctx:
        ctx.seed_all(1234)
        s = ctx.stream("cpu", 0, "dropout")
        a = s.generate("f32", 1000)
        ctx.register_state("sampler", save=lambda: b"...", load=lambda b: None)
        ctx.save("ck.rngsnap")

See docs/python.md.  The rules this package keeps:

- Errors: every failed C call raises rngsnap.Error or its subclass for the
  code (MismatchError, CorruptError, OrderError, ... one per code), with
  .code, .name ("RNGSNAP_E_MISMATCH") and str() = the library's message.
- Callables of register_state(name, save=, load=) are kept alive by the
  context until close().  An exception raised in one (or a save returning
  something other than bytes: TypeError) fails the C call cleanly: save
  writes nothing, load rolls every state back.  ctx.save/ctx.load then
  raise the rngsnap.Error of the C call *from* that exception: it is the
  Error's __cause__, with its traceback; a KeyboardInterrupt or
  SystemExit in one is raised as itself.  save() is called once per C
  size/save pair (its bytes are kept between the two); a load calls it
  too, for the size hint and for the backup it rolls back to.
- register_generator(name, gen) saves a generator the job owns (torch,
  NumPy, random) as an app state in a versioned, pickle-free encoding;
  unregister_state(name) removes any app state.  Every save method first
  reports the generators of the process that no open context tracks
  (UntrackedGeneratorWarning, or UntrackedGeneratorError under
  Context(untracked="error")); every load method first refuses a load of
  a resumed context after a registered generator was drawn (OrderError).
- Draws, save, load and the multi-rank calls release the GIL; callables
  and collectives take it back.  A Stream keeps its Context alive; after
  close() every call on either raises Error.  A KeyedStream (s.derive)
  keeps its own position: use one per thread.
"""
import os as _os
import pkgutil as _pkgutil

# In the build tree the extension lies in <build>/python/rngsnap and these
# files in <source>/python/rngsnap: one package from both folders.
__path__ = _pkgutil.extend_path(__path__, __name__)

from . import _rngsnap  # noqa: E402
from ._rngsnap import (  # noqa: E402,F401
    BackendError, ConfigError, CorruptError, DurabilityError, Error,
    ExistsError, InvalidError, IOFailedError, KeyedStream, MismatchError,
    NoMemoryError, OrderError, PluginError, Stream, UnavailableError,
    dist_size)

from . import _generators, _hooks, _untracked  # noqa: E402
from ._untracked import (  # noqa: E402,F401
    UntrackedGeneratorError, UntrackedGeneratorWarning)

__version__ = _rngsnap.version

DISTS = ("u32", "u64", "f32", "f64", "normal_f32", "normal_f64",
         "curand_uniform_f32", "curand_uniform_f64",
         "curand_normal_f32", "curand_normal_f64")

# rng.ini shipped inside the package by a pip (meson-python) install, with
# its plugins next to it; absent from a `meson install`.
_PACKAGE_CONFIG = _os.path.join(_os.path.dirname(__file__), "rng.ini")


def _secure_process():
    """True in a setuid/setgid process, where RNGSNAP_CONFIG is ignored."""
    try:
        return _os.getuid() != _os.geteuid() or _os.getgid() != _os.getegid()
    except AttributeError:
        return False


def _in_build_tree():
    """True when this _rngsnap is the one built in <build>/python/rngsnap."""
    root = _os.path.realpath(_rngsnap.BUILD_ROOT)
    here = _os.path.realpath(_os.path.dirname(_rngsnap.__file__))
    return here == _os.path.join(root, "python", "rngsnap")


def find_config():
    """The rng.ini a Context(config=None) opens, and why, in the order the
    rngsnap command uses: RNGSNAP_CONFIG; the build tree's rng.ini for the
    module built there; the package's own rng.ini (pip install); the
    installed default."""
    env = _os.environ.get("RNGSNAP_CONFIG")
    if env and not _secure_process():
        return env, "RNGSNAP_CONFIG"
    if _in_build_tree():
        return _rngsnap.BUILD_CONFIG, "build tree"
    if _os.path.exists(_PACKAGE_CONFIG):
        return _PACKAGE_CONFIG, "package"
    return _rngsnap.DEFAULT_CONFIG, "installed default"


_ORIGINS = {"RNGSNAP_CONFIG": "set by RNGSNAP_CONFIG",
            "build tree": "the build tree's rng.ini",
            "package": "the rng.ini installed inside the package",
            "installed default": "the installed default"}


class Context(_rngsnap.Context):
    """Context(config=None, resume=False, untracked="warn"): one rngsnap
    context.

    config None: see find_config().  resume=True: draws raise OrderError
    until load() succeeds, and seed_all after it.  untracked: what a save
    does about generators in no checkpoint ("warn", "error", "ignore"; see
    the untracked attribute).  A context manager; close() ends it, after
    which it and its streams raise Error."""

    def __init__(self, config=None, resume=False, untracked="warn"):
        self._generators = _generators.Registry(self)
        self._watch = _untracked.Watch(self, untracked)
        if config is not None:
            super().__init__(config, resume)
            return
        config, origin = find_config()
        try:
            super().__init__(config, resume)
        except Error as e:
            # As the rngsnap command does: say where the file came from.
            e.args = ("%s (no config given, so %s is %s; pass config= or "
                      "set RNGSNAP_CONFIG to use another)"
                      % (e.args[0] if e.args else "", config,
                         _ORIGINS[origin]),)
            raise

    def __repr__(self):
        state = "closed" if self.closed else "open"
        return "<rngsnap.Context %s>" % state

    def save_ranks(self, dir, group=None, replace=False):
        """Collective over torch.distributed (every rank of group calls
        it): write this rank's file into folder dir, then rank 0 commits
        the manifest.  The context's rank and world size must be the
        group's (RANK/WORLD_SIZE as torchrun sets them, or set_rank)."""
        comm = _TorchComm(group)
        self._save_ranks(dir, comm, comm.rank, comm.size, replace)

    def load_ranks(self, dir, group=None, fork=False):
        """Collective: restore every rank from folder dir, all or nothing
        on every rank.  fork=True accepts a folder saved by another world
        size (a deterministic fork, docs/user-guide.md)."""
        comm = _TorchComm(group)
        self._load_ranks(dir, comm, comm.rank, comm.size, fork)

    # ---- generators the job owns, and the checks of every save and load
    # (docs/python.md: "register_generator", "Untracked generators";
    # _hooks.install puts _before_save/_before_load/_after_load in front
    # of each save and load method, below the class).

    def register_generator(self, name, gen):
        """Save and restore gen, a generator the job owns, as the app
        state name, in a versioned, pickle-free encoding: a torch.Generator
        (any device), a numpy.random Generator, bit generator (PCG64,
        PCG64DXSM, MT19937, Philox, SFC64) or RandomState, a random.Random.
        Another type is TypeError.  A checkpoint holding another kind of
        generator under name is MismatchError.  In a context opened with
        resume=True, a load refuses with OrderError, changing nothing, if
        gen was drawn from between this call and the load.  Returns gen."""
        self._generators.register(name, gen)
        return gen

    def unregister_state(self, name):
        """Remove the app state name (register_state's or
        register_generator's): later saves leave it out, later loads no
        longer require it."""
        super().unregister_state(name)
        self._generators.forget(name)

    def ignore_generator(self, gen):
        """Mark gen as deliberately in no checkpoint: the untracked
        report leaves it out.  Returns gen.  The context keeps it alive."""
        return self._watch.ignore(gen)

    def untracked_generators(self):
        """Scan now: the generators of the process that no open context
        tracks, each with .label, .places (where it lives) and .obj."""
        return self._watch.scan()

    @property
    def untracked(self):
        """What a save does about generators in no checkpoint: "warn"
        (default: an UntrackedGeneratorWarning; the process's first save
        scans, a later one once 100 times the last scan's time has passed),
        "error" (every save scans; UntrackedGeneratorError, nothing
        written) or "ignore" (no scan)."""
        return self._watch.mode

    @untracked.setter
    def untracked(self, mode):
        self._watch.mode = _untracked.check_mode(mode)

    def _before_save(self, method, args, kw):
        collective = None
        if method == "save_ranks":
            group = kw.get("group", args[1] if len(args) > 1 else None)
            collective = (lambda flag: _generators.ranks_flagged(flag,
                                                                   group))
        self._watch.before_save(collective)

    def _before_load(self, method, args, kw):
        _generators.check_order(self._generators.drawn(), method, args, kw,
                                "ctx.register_generator()",
                                "registered generators")

    def _after_load(self):
        self._generators.loaded()


_hooks.install(Context)


class _TorchComm:
    """The collectives of a multi-rank save/load on torch.distributed:
    uint8 CPU tensors (gloo).  all_gather with a list of tensors, not
    all_gather_into_tensor: gloo in torch 1.13 has no _allgather_base.
    Every rank passes the same lengths (the rngsnap_comm contract), so a
    zero-length call is skipped on all of them alike."""

    def __init__(self, group=None):
        import torch
        import torch.distributed as dist
        if not dist.is_available() or not dist.is_initialized():
            raise RuntimeError("torch.distributed is not initialised: call "
                               "torch.distributed.init_process_group first")
        self.torch, self.dist, self.group = torch, dist, group
        self.rank = dist.get_rank(group)
        self.size = dist.get_world_size(group)

    def _tensor(self, data):
        t = self.torch.empty(len(data), dtype=self.torch.uint8)
        t.numpy()[:] = memoryview(data)
        return t

    def allgather(self, data):
        if not data:
            return b""
        parts = [self.torch.empty(len(data), dtype=self.torch.uint8)
                 for _ in range(self.size)]
        self.dist.all_gather(parts, self._tensor(data), group=self.group)
        return b"".join(p.numpy().tobytes() for p in parts)

    def broadcast(self, data, root):
        if not data:
            return b""
        t = self._tensor(data)
        src = root
        if self.group is not None:  # src is a global rank
            get = getattr(self.dist, "get_global_rank", None) or \
                self.dist.distributed_c10d._get_global_rank
            src = get(self.group, root)
        self.dist.broadcast(t, src=src, group=self.group)
        return t.numpy().tobytes()
