"""Layer context: rngsnap.Context, the binding's context with what
rngsnap adds in Python (docs/python.md): configuration lookup
(config.py), tags (tag.py), the Stateful protocol (stateful.py),
generators the job owns (generators.py) and their seeding (seeding.py),
and the checks hooks.py puts in front of every save and load: the order
of a resumed job (order.py), re-seeding after the load (reseed.py) and
generators in no checkpoint (untracked.py).  rngsnap re-exports it.
"""

import os

from . import comm, generators, hooks, order, reseed, seeding, stateful
from .comm import TorchComm
from .config import ORIGINS, find_config
from .coords import parse as parse_coords, text as coords_text
from .tag import Tagged, load as load_tagged
from .untracked import Watch, check_mode
from .. import _rngsnap
from .._core.errors import Error, IOFailedError, OrderError, error


class Context(_rngsnap.Context):
    """Context(config=None, resume=False, untracked="warn"): one rngsnap
    context.

    config None: see find_config().  resume=True: draws and saves raise
    OrderError until a load succeeds (and close() reports a context that
    never loaded).  Whatever resume says, a context that has loaded a
    checkpoint resumes that run: seed_all, re-seeding a generator the
    load restored, a second load after draws and registering more state
    raise OrderError, until branch().  untracked: what a save does about
    generators in no checkpoint ("warn", "error", "ignore"; see the
    untracked attribute).  A context manager; close() ends it, after
    which it and its streams raise Error.  In a fork() child of the
    process that opened it, its non-keyed draws, saves and loads raise
    OrderError (docs/python.md, "Processes: fork()")."""

    __module__ = "rngsnap"  # where users find it

    def __init__(self, config=None, resume=False, untracked="warn"):
        self._generators = generators.Registry(self)
        self._trackers = []  # rngsnap.torch.track()'s Trackers
        self._loaded_by = None  # "ctx.load()" etc. since a load, until branch()
        # What the last load restored in each generator (reseed.py).
        self._restored = reseed.Restored(self)
        self._seeders = seeding.Seeders()
        self._watch = Watch(self, untracked)
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
                         ORIGINS[origin]),)
            raise

    def __repr__(self):
        state = "closed" if self.closed else "open"
        return "<rngsnap.Context %s>" % state

    def __reduce__(self):
        # A DataLoader worker started by spawn or forkserver gets its
        # dataset pickled: a context in it is refused, saying why.
        raise TypeError(
            "cannot pickle an rngsnap.Context: its streams and app states "
            "belong to the process that opened it, and a copy in another "
            "process (a DataLoader worker started by spawn or forkserver) "
            "would draw the same numbers and save a state that is not the "
            "job's. Save in the process that opened it; in workers, draw "
            "from keys (rngsnap.torch.ResumableSampler with KeyedDataset)")

    # ---- bytes and the Stateful protocol (torch.save, DCP, accelerate,
    # Lightning).  save_bytes()/load_bytes(data) are the C methods
    # (docs/python.md, "Bytes"); these put the bytes into a state dict
    # ("Stateful", stateful.py).
    STATE_DICT_FORMAT = stateful.FORMAT
    STATE_DICT_VERSION = stateful.VERSION

    def state_dict(self, gather=False, group=None):
        """{"format": "rngsnap-state-dict", "version": 1, "world_size": W,
        "rank/<r>": save_bytes()}: this rank's checkpoint under its own
        key.  gather=True (collective over torch.distributed, every rank
        of group calls it): every rank's bytes, "rank/0" .. "rank/<W-1>",
        on every rank, for frameworks that write rank 0's dict only."""
        return stateful.save(self, gather, group)

    def load_state_dict(self, state):
        """Restore this rank from a dict of state_dict(): its own
        "rank/<r>" bytes, all or nothing (load_bytes).  MismatchError when
        the dict has another world size or no bytes of this rank (never
        another rank's state); CorruptError when it is not such a dict."""
        stateful.load(self, state)

    def save_ranks(self, dir, group=None, replace=False,
                   per_rank_files=False):
        """Collective over torch.distributed (every rank of group calls
        it): each rank sends its checkpoint to its node's leader, which
        writes one file for the node into folder dir, then rank 0 commits
        the manifest.  per_rank_files=True: one file per rank instead.
        The context's rank and world size must be the group's
        (RANK/WORLD_SIZE as torchrun sets them, or set_rank).  A node is
        LOCAL_RANK/LOCAL_WORLD_SIZE's, else a host's (docs/python.md,
        "Multi-rank folders: nodes")."""
        link = TorchComm(group, "ctx.save_ranks()")
        self._save_ranks(dir, link, link.rank, link.size, replace,
                         per_rank_files)

    def load_ranks(self, dir, group=None, fork=False):
        """Collective: restore every rank from folder dir, all or nothing
        on every rank.  fork=True accepts a folder saved by another world
        size (a deterministic fork, docs/user-guide.md).  Without fork,
        each rank's coordinates (set_coords) must be those its rank saved
        (MismatchError naming both otherwise)."""
        link = TorchComm(group, "ctx.load_ranks()")
        with _first_run(self, dir):
            self._load_ranks(dir, link, link.rank, link.size, fork)

    def set_coords(self, **coords):
        """This rank's parallel coordinates, e.g. set_coords(dp=3, tp=1,
        pp=0, ep=2): up to 16 names of 1..15 characters [a-z0-9_]
        starting with a letter, each an int in 0 .. 2**31 - 1.  save_ranks
        records them for this rank and an exact load_ranks refuses
        (MismatchError) a rank whose coordinates differ from its saved
        rank's.  No arguments: clear them.  TypeError for a value that is
        not an int (bool included); InvalidError for a bad name, a
        negative or too large value, more than 16."""
        self._set_coords(coords_text(coords))

    @property
    def coords(self):
        """The coordinates set_coords set, sorted by name, read-only
        ({} when none)."""
        return parse_coords(self._coords())

    # ---- generators the job owns, and the checks of every save and load
    # (docs/python.md: "register_generator", "Untracked generators";
    # hooks.install puts _before_save/_before_load/_after_load in front
    # of each save and load method, below the class).

    def register_state(self, name, save, load, ledger=None):
        """register_state(name, save=, load=, ledger=None): save() -> bytes
        is written into every checkpoint as app state name, load(bytes)
        restores it; ledger() -> bytes, when given, is what the divergence
        ledger digests instead of save() (a cheaper reader of the same
        state).  OrderError after a load (that load restored nothing of
        it), until branch()."""
        self._refuse_late("ctx.register_state(%r)" % (name,),
                          "Register every app state before the load")
        return super().register_state(name, save=save, load=load,
                                      ledger=ledger)

    def _refuse_late(self, call, fix):
        """A resumed context's load restores what was registered before
        it: anything registered after would silently keep this run's
        state.  OrderError naming call, then fix."""
        if self._loaded_by and self._restored.resumed and not self.closed:
            raise error(OrderError, (
                "%s refused: this context has loaded a checkpoint (%s "
                "restored it), so it resumes that run, and what this "
                "registers would keep this run's state, not the "
                "checkpoint's. %s (to add it to a new run started from "
                "this checkpoint on purpose, call ctx.branch() first)") % (
                    call, self._loaded_by, fix))

    def branch(self):
        """Leave the resumed run on purpose: a new run started from the
        checkpoint this context loaded ("seeded from a checkpoint": load,
        branch(), then seed_all(new_seed), or load another checkpoint).
        seed_all, a load, re-seeding the generators and registering state
        are allowed again, until the next load; the streams and generators
        keep the positions the load set until then.  OrderError when this
        context has loaded no checkpoint (nothing to branch from)."""
        super().branch()
        self._loaded_by = None
        self._restored.branched()

    def register_generator(self, name, gen):
        """Save and restore gen, a generator the job owns, as the app
        state name, in a versioned, pickle-free encoding: a torch.Generator
        (any device), a numpy.random Generator, bit generator (PCG64,
        PCG64DXSM, MT19937, Philox, SFC64) or RandomState, a random.Random.
        Another type is TypeError.  A checkpoint holding another kind of
        generator under name is MismatchError.  In a context opened with
        resume=True, a load refuses with OrderError, changing nothing, if
        gen was drawn from between this call and the load; after any load,
        a save refuses gen re-seeded since (docs/python.md, "After the
        load").  Returns gen."""
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
        with Tagged(self, tag):
            return super().save(path, replace)

    def load(self, path, tag=None):
        """load(path, tag=None): restore all or nothing.  tag: what the
        job's other file holds (its step); a checkpoint saved with another
        tag, or with none, is MismatchError and nothing is restored."""
        with _first_run(self, path):
            return load_tagged(self, super().load, path, tag)

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
        self._watch.mode = check_mode(mode)

    def _before_save(self, method, args, kw):
        # In a fork() child: the core's refusal, before any check of ours
        # (a scan, the re-seed check) could say something else.
        self._fork_check("ctx.%s()" % method, False)
        # Opened with resume=True and not loaded: the core refuses the save
        # naming the missing load; nothing of ours to say first.
        if order.awaiting_load(self):
            return
        # A generator the load restored, re-seeded since: refused first
        # (an error, where the untracked report may only warn).
        reseed.check_save(self._restored, method, args, kw)
        # save_ranks(dir, group) and state_dict(gather=True, group) are
        # collective: under "error" every rank refuses together.
        collective = None
        if method == "save_ranks" or (method == "state_dict" and kw.get(
                "gather", args[0] if args else False)):
            group = kw.get("group", args[1] if len(args) > 1 else None)
            collective = (lambda flag: comm.ranks_flagged(flag, group))
        self._watch.before_save(method, collective)

    def _before_load(self, method, args, kw):
        self._fork_check("ctx.%s()" % method, True)
        order.check_order(self._order_groups(), method, args, kw)
        # A resumed context that drew since its load: refused (the core
        # refuses it for its streams, but names no generator).
        reseed.check_reload(self, self._restored, method, args, kw)
        self._loading = method

    def _order_groups(self):
        """Every generator of this context that moved before its first
        load, by the call that recorded it (the load's order check names
        each one): [(names, since, what)]."""
        groups = [(t._drawn(), order.TRACKED, "tracked generators")
                  for t in self._trackers]
        return groups + [(self._generators.drawn(), order.REGISTERED,
                          "registered generators")]

    def _after_load(self):
        self._loaded_by = "ctx.%s()" % self._loading
        self._generators.loaded()
        self._restored.loaded(self._loading)
        self._seeders.seed = None  # a later track() keeps the loaded state


class _first_run:
    """with _first_run(ctx, path): a load of a path that does not exist,
    in a context opened with resume=True that never loaded, is most often
    a first run opened as a resumed one: its IOFailedError says how to
    start a first run."""

    def __init__(self, ctx, path):
        self.ctx, self.path = ctx, path

    def __enter__(self):
        return self

    def __exit__(self, kind, e, tb):
        if (isinstance(e, IOFailedError) and e.args
                and not os.path.exists(self.path)
                and order.awaiting_load(self.ctx)):
            e.args = ("%s. This context was opened with resume=True: on a "
                      "first run, with no checkpoint yet, open it without "
                      "resume=True and seed it (ctx.seed_all())"
                      % e.args[0],)
        return False


hooks.install(Context)
