"""Layer torch: rngsnap.torch.track(ctx) and the Tracker it returns
(docs/python.md, "rngsnap.torch: every generator, one list").

track() registers every generator a PyTorch job draws from as app states
of ctx (_generators.py, _devices.py), with the determinism fingerprint
first, adds them to ctx.seed_all (_seeding.py) and to the checks of a
resumed context (the load's order check, re-seeding after the load: the
context layer's order.py and reseed.py).
"""

import functools
import warnings
import weakref

import numpy as np
import torch

from . import _generators as _gen
from ._devices import device_generators
from ._seeding import add_seeders
from .._context import order as _order
from .._context import reseed as _reseed
from .._context.order import awaiting_load
from .._core import fingerprint as _fp
from .._core.errors import (Error, InvalidError, MismatchError, error,
                            raised_by_python)
from .._core.stack import stacklevel

FINGERPRINT_STATE = "rngsnap.fingerprint"
_MODES = ("warn", "strict", "off")


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
                   " before the load, after building the model")
        _refuse_twice(ctx)
        self._ctx = weakref.ref(ctx)
        self.fingerprint_mode = fingerprint
        devices = device_generators()
        self.generators = [_gen.torch_generator(
            "torch.cpu", torch.get_rng_state, torch.set_rng_state)]
        self.generators += [_gen.torch_generator(n, g, p)
                            for n, _, g, p in devices]
        self.generators += [_gen.numpy_generator(), _gen.python_generator()]
        self.fingerprint = _fp.collect(
            torch, np, [("torch.cpu", "cpu")]
            + [(n, d) for n, d, _, _ in devices], ctx.world_size)
        # Every generator's state now, for the order check of the load.
        self._awaiting = awaiting_load(ctx) if resume is None else resume
        self._at_track = ({g.name: g.read() for g in self.generators}
                          if self._awaiting else {})
        # Re-seeding after a load, and a second load (reseed.py): any
        # context that loads is a resumed one.
        restored = getattr(ctx, "_restored", None)
        for g in (self.generators if restored is not None else ()):
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
        add_seeders(ctx, self.generators, devices)
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
        if self._awaiting and not awaiting_load(self._ctx()):
            self._awaiting, self._at_track = False, {}
        if not self._awaiting:
            return []
        return [g.name for g in self.generators
                if g.read() != self._at_track[g.name]]

    def _check_order(self, method, args, kw):
        ctx = self._ctx()
        # In a fork() child the core refuses the load: say that, not what
        # the worker's own seeding did to the generators.
        fork_check = getattr(ctx, "_fork_check", None)
        if fork_check is not None:
            fork_check("ctx.%s()" % method, True)
        # Every generator of the context that moved, the registered ones
        # too: the refusal names each, not the first family found.
        groups = getattr(ctx, "_order_groups", None)
        _order.check_order(groups() if groups else [
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
        happens before the C load, so it changes nothing at all.  An
        rngsnap error raised by one of our load callables (the core
        reports it as BackendError, having rolled back) is raised as its
        own class: its own message, then the BackendError's in
        parentheses."""
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
                if isinstance(e, MismatchError) and \
                        "app state torch." in str(e):
                    raise error(MismatchError, str(e) + self._hint()) \
                        from None
                raise
            self._awaiting, self._at_track = False, {}
            return result
        return load

    def _hint(self):
        return ("\nrngsnap.torch: this process tracks %s; a "
                "torch.<device>:<i> state is saved for every device torch "
                "sees, so the saving job saw other devices "
                "(CUDA_VISIBLE_DEVICES, device count, "
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


def _refuse_twice(ctx):
    """InvalidError, before anything is registered, when ctx already holds
    what track() registers (a second track(), or a state of that name)."""
    trackers = [t for t in getattr(ctx, "_trackers", ()) if t._ctx() is ctx]
    if trackers:
        raise error(InvalidError, (
            "rngsnap.torch.track(ctx) refused: this context is already "
            "tracked (an earlier track(ctx) registered %s), and one context "
            "holds each generator once. Call rngsnap.torch.track(ctx) once "
            "per context, after building the model and before the load; "
            "keep the Tracker it returned if you need it again")
            % ", ".join(trackers[0].names))


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
    load (opened with resume=True); False never checks.  Once per
    context: a second track(ctx) is InvalidError, changing nothing."""
    return Tracker(ctx, fingerprint, resume)


