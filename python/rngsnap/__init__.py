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

from . import _generators, _hooks, _reseed, _seeding, _tag, _untracked  # noqa: E402,E501
from ._core.errors import (  # noqa: E402,F401
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
    """True when this _rngsnap is one built in <build>/python/rngsnap (or
    <build>/python/compat/rngsnap, for the -Dpython_compat interpreter)."""
    root = _os.path.realpath(_rngsnap.BUILD_ROOT)
    here = _os.path.realpath(_os.path.dirname(_rngsnap.__file__))
    return here in (_os.path.join(root, "python", "rngsnap"),
                    _os.path.join(root, "python", "compat", "rngsnap"))


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
        self._trackers = []  # rngsnap.torch.track()'s Trackers
        self._loaded_by = None  # "ctx.load()" etc. once a load succeeded
        # What the load of a resumed context restored (_reseed.py).
        self._restored = _reseed.Restored(self, resume)
        self._seeders = _seeding.Seeders()
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

    # ---- bytes and the Stateful protocol (torch.save, DCP, accelerate,
    # Lightning).  save_bytes()/load_bytes(data) are the C methods
    # (docs/python.md, "Bytes"); these put the bytes into a state dict
    # ("Stateful").  One key per rank: DCP keeps one value of a key that
    # every rank has, accelerate and Lightning write rank 0's dict only.
    STATE_DICT_FORMAT = "rngsnap-state-dict"
    STATE_DICT_VERSION = 1

    def state_dict(self, gather=False, group=None):
        """{"format": "rngsnap-state-dict", "version": 1, "world_size": W,
        "rank/<r>": save_bytes()}: this rank's checkpoint under its own
        key.  gather=True (collective over torch.distributed, every rank
        of group calls it): every rank's bytes, "rank/0" .. "rank/<W-1>",
        on every rank, for frameworks that write rank 0's dict only."""
        state = {"format": self.STATE_DICT_FORMAT,
                 "version": self.STATE_DICT_VERSION,
                 "world_size": self.world_size}
        if not gather:
            state["rank/%d" % self.rank] = self.save_bytes()
            return state
        for r, blob in enumerate(self._gather_bytes(_TorchComm(group))):
            state["rank/%d" % r] = blob
        return state

    def load_state_dict(self, state):
        """Restore this rank from a dict of state_dict(): its own
        "rank/<r>" bytes, all or nothing (load_bytes).  MismatchError when
        the dict has another world size or no bytes of this rank (never
        another rank's state); CorruptError when it is not such a dict."""
        import collections.abc
        from ._core.errors import error
        if not isinstance(state, collections.abc.Mapping):
            raise TypeError("load_state_dict: state is %s, not the dict "
                            "ctx.state_dict() returns"
                            % type(state).__name__)
        head = "load_state_dict"
        if state.get("format") != self.STATE_DICT_FORMAT:
            raise error(CorruptError, "%s: not an rngsnap state dict (its "
                        "\"format\" is %r, expected %r); nothing restored"
                        % (head, state.get("format"), self.STATE_DICT_FORMAT))
        version = state.get("version")
        if version != self.STATE_DICT_VERSION:
            raise error(MismatchError, "%s: state dict version %r, this "
                        "rngsnap reads version %d; nothing restored"
                        % (head, version, self.STATE_DICT_VERSION))
        world = state.get("world_size")
        if type(world) is not int or world < 1:
            raise error(CorruptError, "%s: \"world_size\" is %r, not a "
                        "positive int; nothing restored" % (head, world))
        ranks = []
        for key in state:
            r = self._rank_of_key(key)
            if r is None and key not in ("format", "version", "world_size"):
                raise error(CorruptError, "%s: unknown key %r (an rngsnap "
                            "state dict holds format, version, world_size and "
                            "rank/<r>); nothing restored" % (head, key))
            if r is not None and r >= world:
                raise error(CorruptError, "%s: key %r is past world_size %d;"
                            " nothing restored" % (head, key, world))
            if r is not None:
                ranks.append(r)
        if world != self.world_size:
            raise error(MismatchError, "%s: the state dict was saved by %d "
                        "rank%s, this job has %d (this is rank %d); nothing "
                        "restored. Resume with the world size that saved"
                        % (head, world, "" if world == 1 else "s",
                           self.world_size, self.rank))
        key = "rank/%d" % self.rank
        if key not in state:
            held = ", ".join("rank/%d" % r for r in sorted(ranks))
            raise error(MismatchError, "%s: no %r in the state dict (it "
                        "holds %s of world size %d); nothing restored. A "
                        "framework that writes rank 0's dict only "
                        "(accelerate, Lightning) needs "
                        "state_dict(gather=True) on every rank"
                        % (head, key, held or "no rank's bytes", world))
        blob = state[key]
        if not isinstance(blob, (bytes, bytearray, memoryview)):
            raise error(CorruptError, "%s: %r is %s, not bytes; nothing "
                        "restored" % (head, key, type(blob).__name__))
        self.load_bytes(blob)

    @staticmethod
    def _rank_of_key(key):
        """r of a "rank/<r>" key of a state dict (no sign, no leading
        zero), else None."""
        if not isinstance(key, str) or not key.startswith("rank/"):
            return None
        digits = key[5:]
        if not digits.isdigit() or not digits.isascii() or \
                (digits[0] == "0" and digits != "0"):
            return None
        return int(digits)

    def _gather_bytes(self, comm):
        """Every rank's save_bytes(), in rank order, on every rank.  First
        every rank tells its rank, world size, length and how its save
        failed, if it did: then every rank raises together instead of
        leaving the others waiting in the next collective."""
        import struct
        from ._core.errors import error
        try:
            blob, failed = self.save_bytes(), None
        except Error as e:
            blob, failed = b"", e
        rec = struct.Struct("<iiQi24s24s")  # the last two: class, .name
        mine = rec.pack(self.rank, self.world_size, len(blob),
                        getattr(failed, "code", 0) or 0,
                        type(failed).__name__.encode() if failed else b"",
                        (getattr(failed, "name", "") or "").encode())
        raw = comm.allgather(mine)
        recs = [rec.unpack_from(raw, i * rec.size) for i in range(comm.size)]
        bad = [i for i, r in enumerate(recs) if r[4].rstrip(b"\0")]
        if failed:
            raise failed
        if bad:
            code, cls, name = recs[bad[0]][3:]
            cls = cls.rstrip(b"\0").decode()
            e = globals().get(cls, Error)
            e = (e if isinstance(e, type) and issubclass(e, Error)
                 else Error)("state_dict(gather=True): rank%s %s could not "
                             "save (%s there); no rank's state dict is "
                             "complete" % ("s" if len(bad) > 1 else "",
                                           ", ".join(map(str, bad)), cls))
            e.code, e.name = code, name.rstrip(b"\0").decode()
            raise e
        wrong = [i for i, r in enumerate(recs)
                 if (r[0], r[1]) != (i, comm.size)]
        if wrong:
            i = wrong[0]
            raise error(MismatchError, "state_dict(gather=True): group rank "
                        "%d of %d has a context of rank %d of %d (set_rank, "
                        "or RANK/WORLD_SIZE); each rank's context must be its "
                        "group rank" % (i, comm.size, recs[i][0], recs[i][1]))
        most = max(r[2] for r in recs)
        raw = comm.allgather(blob + b"\0" * (most - len(blob)))
        return [raw[i * most:i * most + r[2]] for i, r in enumerate(recs)]

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

    def register_state(self, name, save, load, ledger=None):
        """register_state(name, save=, load=, ledger=None): save() -> bytes
        is written into every checkpoint as app state name, load(bytes)
        restores it; ledger() -> bytes, when given, is what the divergence
        ledger digests instead of save() (a cheaper reader of the same
        state).  In a context opened with resume=True, OrderError after
        its load (that load restored nothing of it)."""
        self._refuse_late("ctx.register_state(%r)" % (name,),
                          "Register every app state before the load")
        return super().register_state(name, save=save, load=load,
                                      ledger=ledger)

    def _refuse_late(self, call, fix):
        """A resumed context's load restores what was registered before
        it: anything registered after would silently keep this run's
        state.  OrderError naming call, then fix."""
        if self._restored.resume and self._loaded_by and not self.closed:
            from ._core.errors import error
            raise error(OrderError, (
                "%s refused: this context was opened with resume=True and "
                "%s has already restored it, so what this registers would "
                "keep this run's state, not the checkpoint's. %s") % (
                    call, self._loaded_by, fix))

    def register_generator(self, name, gen):
        """Save and restore gen, a generator the job owns, as the app
        state name, in a versioned, pickle-free encoding: a torch.Generator
        (any device), a numpy.random Generator, bit generator (PCG64,
        PCG64DXSM, MT19937, Philox, SFC64) or RandomState, a random.Random.
        Another type is TypeError.  A checkpoint holding another kind of
        generator under name is MismatchError.  In a context opened with
        resume=True, a load refuses with OrderError, changing nothing, if
        gen was drawn from between this call and the load.  Returns gen."""
        self._refuse_late("ctx.register_generator(%r)" % (name,),
                          "Register every generator before the load")
        self._generators.register(name, gen)
        return gen

    def unregister_state(self, name):
        """Remove the app state name (register_state's or
        register_generator's): later saves leave it out, later loads no
        longer require it."""
        super().unregister_state(name)
        self._generators.forget(name)
        self._seeders.by_name.pop(name, None)

    def seed_all(self, seed):
        """Seed every stream from (seed, rank, backend, device, name) and
        every generator rngsnap.torch.track() put in this context (torch,
        NumPy, random), each from its own keyed stream; one tracked after
        this call is seeded when tracked.  Generators of register_generator
        keep the state the job gave them (docs/python.md, "Seeding").  In a
        context awaiting its load only the streams: the load sets the
        rest."""
        super().seed_all(seed)
        self._seeders.run(self, seed)

    def _add_seeder(self, name, fn):
        """fn(ctx) seeds app state name at every seed_all (now too, if
        this context was seeded and not loaded since)."""
        self._seeders.add(self, name, fn)

    def save(self, path, replace=False, tag=None):
        """save(path, replace=False, tag=None): write every stream and app
        state, atomically.  tag (an int or str, e.g. the step) is written
        in too, for a job that keeps a second file: ctx.load(path, tag=)
        then refuses a checkpoint of another tag."""
        if tag is None:
            return super().save(path, replace)
        with _tag.Tagged(self, tag):
            return super().save(path, replace)

    def load(self, path, tag=None):
        """load(path, tag=None): restore all or nothing.  tag: what the
        job's other file holds (its step); a checkpoint saved with another
        tag, or with none, is MismatchError and nothing is restored."""
        return _tag.load(self, super().load, path, tag)

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
        # A generator the load restored, re-seeded since: refused first
        # (an error, where the untracked report may only warn).
        _reseed.check_save(self._restored, method, args, kw)
        # save_ranks(dir, group) and state_dict(gather=True, group) are
        # collective: under "error" every rank refuses together.
        collective = None
        if method == "save_ranks" or (method == "state_dict" and kw.get(
                "gather", args[0] if args else False)):
            group = kw.get("group", args[1] if len(args) > 1 else None)
            collective = (lambda flag: _generators.ranks_flagged(flag,
                                                                   group))
        self._watch.before_save(method, collective)

    def _before_load(self, method, args, kw):
        _generators.check_order(self._order_groups(), method, args, kw)
        # A resumed context that drew since its load: refused (the core
        # refuses it for its streams, but names no generator).
        _reseed.check_reload(self, self._restored, method, args, kw)
        self._loading = method

    def _order_groups(self):
        """Every generator of this context that moved before its first
        load, by the call that recorded it (the load's order check names
        each one): [(names, since, what)]."""
        groups = [(t._drawn(), _generators.TRACKED, "tracked generators")
                  for t in self._trackers]
        return groups + [(self._generators.drawn(), _generators.REGISTERED,
                          "registered generators")]

    def _after_load(self):
        self._loaded_by = "ctx.%s()" % self._loading
        self._generators.loaded()
        self._restored.loaded(self._loading)
        self._seeders.seed = None  # a later track() keeps the loaded state


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
