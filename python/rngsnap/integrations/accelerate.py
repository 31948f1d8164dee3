"""rngsnap for accelerate: one line after prepare()
(docs/integrations/accelerate.md).

    model, opt, loader = accelerator.prepare(model, opt, loader)
    rngsnap.integrations.accelerate.attach(accelerator)
    if resuming:
        accelerator.load_state(folder)
        rngsnap.integrations.accelerate.resume_at(loader, epoch, batch)
    for epoch in range(epoch, epochs):
        for batch in loader:        # resumes at the checkpoint's batch
            ...
            accelerator.save_state(folder)   # anywhere: every rank, exact

attach() keys every loader prepare() made (_prepared_loader.py: every
sample a pure function of the seeding, the epoch and its index, so the
batch accelerate fetches ahead of a checkpoint changes nothing), tracks
torch's (every device's), NumPy's and random's generators on every rank
and saves them, with each loader's position, as one object registered for
checkpointing: accelerate restores it last, after its own
random_states_<i>.pkl, so rngsnap has the last word, all or nothing.  A
folder written without rngsnap is adopted: its random_states_<i>.pkl is
read verified and restored once (_adopt.py).  A path that cannot be exact
is refused (rngsnap.InvalidError, OrderError, MismatchError, CorruptError).
"""
import json
import os
import sys

import torch

import rngsnap
import rngsnap.torch

from . import _adopt
from ._keyed_loader import LoaderPosition
from ._prepared_loader import WHO, PreparedLoader, inspect, key

# Written next to accelerate's files by the main process: which
# custom_checkpoint_<k>.pkl holds rngsnap's state.  No such file: the
# folder was written without rngsnap (adopted).
MARKER = "rngsnap_accelerate.json"
_FORMAT, _VERSION = "rngsnap-accelerate", 1
_MARKER_MAX = 4096  # bytes: the marker is one short line


def attach(accelerator, ctx=None):
    """Make accelerator.save_state/load_state save and restore every
    rank's generators and loader positions exactly; call it once, right
    after accelerator.prepare(...), before load_state and the first step.
    ctx None: a Context of its own, tracked (rngsnap.torch.track) and, for
    a first run, seeded from torch.initial_seed() (the seed set_seed
    gave); a ctx of yours must be tracked and seeded by you.  Returns
    the context."""
    if getattr(accelerator, "_rngsnap_attached", None) is not None:
        raise rngsnap.InvalidError("%s: attach() was already called for "
                                   "this Accelerator" % WHO)
    _refuse_late(accelerator)
    for shard in accelerator._dataloaders:  # every refusal before a change
        inspect(shard, accelerator.num_processes)
    own = ctx is None
    if own:
        ctx = rngsnap.Context()
        ctx.set_rank(accelerator.process_index, accelerator.num_processes)
    else:
        _check_context(ctx, accelerator)
    accelerator._rngsnap_attached = _Attached(accelerator, ctx, own)
    return ctx


def resume_at(loader, epoch, batch):
    """After load_state: the loop resumes epoch `epoch` at batch `batch`
    (the batches of it taken before the checkpoint).  For an rngsnap
    checkpoint it checks the job's count against the checkpoint's
    position (MismatchError); for an adopted folder (written without
    rngsnap, so without a position) it sets the position."""
    keyed = getattr(loader, "base_dataloader", None)
    if not isinstance(keyed, PreparedLoader):
        raise rngsnap.InvalidError(
            "%s: resume_at() takes a loader that accelerator.prepare() "
            "returned before attach(accelerator), not a %s"
            % (WHO, type(loader).__name__))
    keyed.attached.resume_at(loader, keyed, epoch, batch)


def _refuse_late(accelerator):
    """attach() after a step or a load_state: what ran before it is in no
    checkpoint, and such a load restored no rngsnap state."""
    late = ["optimizer %d has state" % i
            for i, opt in enumerate(accelerator._optimizers) if opt.state]
    late += ["loader %d was iterated" % i
             for i, shard in enumerate(accelerator._dataloaders)
             if getattr(shard, "iteration", 0)]
    if late:
        raise rngsnap.InvalidError(
            "%s: attach() came after the job trained or loaded a checkpoint"
            " (%s); call attach(accelerator) right after "
            "accelerator.prepare(...), before load_state and the first step"
            % (WHO, ", ".join(late)))


def _check_context(ctx, accelerator):
    if (ctx.rank, ctx.world_size) != (accelerator.process_index,
                                      accelerator.num_processes):
        raise rngsnap.MismatchError(
            "%s: the context is rank %d of %d, this process is %d of %d; "
            "ctx.set_rank(accelerator.process_index, accelerator."
            "num_processes) before seeding it" % (
                WHO, ctx.rank, ctx.world_size, accelerator.process_index,
                accelerator.num_processes))
    if not getattr(ctx, "_trackers", None):
        raise rngsnap.InvalidError(
            "%s: the context tracks no torch, NumPy or random generator; "
            "call rngsnap.torch.track(ctx) before attach(accelerator, ctx)"
            % WHO)


class _Attached:
    """What attach() hooks into one Accelerator: a save and a load
    pre-hook (every rank runs them), and the object registered for
    checkpointing (state_dict/load_state_dict: accelerate calls them on
    every rank, writes the main process's dict, and loads it after its
    own RNG restore)."""

    def __init__(self, accelerator, ctx, own):
        self.acc, self.ctx = accelerator, ctx
        self.ranks = accelerator.num_processes
        stream = ctx.stream("cpu", 0, "augment")
        self.loaders = []  # (shard, its PreparedLoader)
        for i, shard in enumerate(accelerator._dataloaders):
            pos = LoaderPosition("rngsnap.accelerate.loader.%d" % i)
            ctx.register_state(pos.name, save=pos.save, load=pos.load)
            keyed = key(shard, ctx, stream, pos, i, accelerator)
            keyed.attached = self
            self.loaders.append((shard, keyed))
        self.tracker = None
        if own:
            self.tracker = rngsnap.torch.track(ctx)
            ctx.seed_all(torch.initial_seed())
        self.at_attach = self._generators()
        self.registered = False  # for checkpointing, at the first need
        self.done = None  # "save_state", "load_state": the load's check
        self.loaded = None  # "checkpoint" or the adopted file
        accelerator.register_save_state_pre_hook(self._before_save)
        accelerator.register_load_state_pre_hook(self._before_load)

    # -- save_state ------------------------------------------------------
    def _before_save(self, models, weights, output_dir):
        self._check_loaders("save_state", "nothing saved")
        for _, keyed in self.loaders:
            if keyed.blocked:
                raise rngsnap.OrderError(keyed.blocked)
            keyed.check_counted()
        index = self._register()
        self.done = "save_state"
        save_on_each_node = self.acc.project_configuration.save_on_each_node
        if (self.acc.is_main_process and not save_on_each_node) or (
                self.acc.is_local_main_process and save_on_each_node):
            _write_marker(output_dir, index, self.ranks)

    def state_dict(self):
        # accelerate writes the main process's dict only: every rank's
        # bytes in it (a collective: save_state calls this on every rank)
        return self.ctx.state_dict(gather=self.ranks > 1)

    # -- load_state ------------------------------------------------------
    def _before_load(self, models, input_dir):
        head = "%s: load_state(%r) refused, nothing restored" % (WHO,
                                                                  input_dir)
        if self.done or any(k.iterated for _, k in self.loaders):
            raise rngsnap.OrderError(
                "%s: it came after %s in this process; load_state once, "
                "right after attach(accelerator), before the first step"
                % (head, self.done or "an iteration of a prepared loader"))
        self._check_loaders("load_state", "nothing restored")
        moved = [n for n, s in self._generators().items()
                 if self.at_attach[n] != s]
        if moved:
            raise rngsnap.OrderError(
                "%s: %s drew since attach(), and the load would throw those "
                "draws away (a batch fetched, a model built?); call "
                "attach(accelerator) right before load_state"
                % (head, ", ".join(moved)))
        marker = _read_marker(input_dir)
        if marker is None:
            self._adopt(input_dir)
            self.done = "load_state"
            return
        if marker["world_size"] != self.ranks:
            raise rngsnap.MismatchError(
                "%s: it was saved by %d processes, this job has %d; resume "
                "with the process count that saved"
                % (head, marker["world_size"], self.ranks))
        index = self._register()
        if index != marker["custom_checkpoint"]:
            raise rngsnap.MismatchError(
                "%s: rngsnap's state is custom_checkpoint_%d.pkl there, and "
                "this job would load custom_checkpoint_%d.pkl into it; "
                "register_for_checkpointing the same objects, in the same "
                "order, before load_state as before save_state"
                % (head, marker["custom_checkpoint"], index))
        self.done = "load_state"

    def load_state_dict(self, state):
        self.ctx.load_state_dict(state)  # all or nothing, every generator
        for shard, keyed in self.loaders:
            keyed.keyed_sampler.resume_from_position()
            shard.set_epoch(keyed.position.epoch)  # accelerate's epoch too
        self.loaded = "checkpoint"

    def _adopt(self, input_dir):
        if _awaits_load(self.ctx):
            raise rngsnap.InvalidError(
                "%s: load_state(%r) refused, nothing restored: the folder "
                "was written without rngsnap, and your context, opened with "
                "resume=True, awaits an rngsnap load that this folder cannot"
                " give; adopt it with a context opened with resume=False"
                % (WHO, input_dir))
        line = _adopt.adopt_accelerate(input_dir, self.acc.process_index)
        print(line, file=sys.stderr, flush=True)
        self.loaded = os.path.join(
            input_dir, "random_states_%d.pkl" % self.acc.process_index)
        for _, keyed in self.loaders:
            keyed.blocked = (
                "%s: load_state adopted %s, written without rngsnap: "
                "accelerate's checkpoint holds no loader position, so rngsnap"
                " cannot tell which batch the job stopped at; nothing "
                "trained: after load_state call rngsnap.integrations."
                "accelerate.resume_at(loader, epoch, batch) with the epoch and"
                " the batches of it the job had taken" % (WHO, self.loaded))

    # -- resume_at -------------------------------------------------------
    def resume_at(self, shard, keyed, epoch, batch):
        if self.loaded is None:
            raise rngsnap.OrderError(
                "%s: resume_at() comes after accelerator.load_state(...); "
                "this job loaded nothing" % WHO)
        if keyed.iterated:
            raise rngsnap.OrderError(
                "%s: resume_at() after the loader was iterated; call it "
                "right after load_state" % WHO)
        per_epoch = len(keyed.keyed_sampler)
        for what, v, top in (("epoch", epoch, None), ("batch", batch,
                                                      per_epoch)):
            if type(v) is not int or v < 0 or (top is not None and v > top):
                raise ValueError("resume_at: %s must be an int in 0..%s, "
                                 "not %r" % (what, top if top is not None
                                             else "", v))
        pos = keyed.position
        if keyed.blocked:  # adopted: the job says where it was
            pos.epoch, pos.taken = epoch, batch
            keyed.keyed_sampler.resume_from_position()
            shard.set_epoch(pos.epoch)
            keyed.blocked = None
            return
        if batch == per_epoch:  # as the position: the next epoch's start
            epoch, batch = epoch + 1, 0
        if (epoch, batch) != (pos.epoch, pos.taken):
            raise rngsnap.MismatchError(
                "%s: the job resumes epoch %d at batch %d, the checkpoint's "
                "loader position is epoch %d, batch %d; the loop would count"
                " other batches than the loader serves; resume from the "
                "folder the job's step count belongs to"
                % (WHO, epoch, batch, pos.epoch, pos.taken))

    # -- shared ------------------------------------------------------------
    def _register(self):
        """Register for checkpointing at the first save/load (a folder
        written without rngsnap has no file of ours for accelerate to
        count); returns our custom_checkpoint index."""
        objects = self.acc._custom_objects
        if not self.registered:
            self.acc.register_for_checkpointing(self)
            self.registered = True
        return next(i for i, o in enumerate(objects) if o is self)

    def _check_loaders(self, call, what):
        ours = {id(k) for _, k in self.loaders}
        for i, shard in enumerate(self.acc._dataloaders):
            if id(getattr(shard, "base_dataloader", None)) not in ours:
                raise rngsnap.InvalidError(
                    "%s: %s refused, %s: loader %d was prepared after "
                    "attach(), so its batches are in no rngsnap checkpoint "
                    "and would not resume exactly; prepare every DataLoader "
                    "before attach(accelerator)" % (WHO, call, what, i))

    def _generators(self):
        if self.tracker is None:  # a context of yours checks its own order
            return {}
        return {g.name: g.read() for g in self.tracker.generators}


def _awaits_load(ctx):
    """A context opened with resume=True and not loaded yet: its streams
    refuse even a draw of nothing."""
    try:
        ctx.streams()[0].generate("u32", 0)
    except rngsnap.OrderError:
        return True
    return False


def _write_marker(folder, index, ranks):
    path = os.path.join(folder, MARKER)
    with open(path + ".tmp", "w") as f:
        json.dump({"format": _FORMAT, "version": _VERSION,
                   "custom_checkpoint": index, "world_size": ranks}, f)
        f.write("\n")
    os.replace(path + ".tmp", path)


def _read_marker(folder):
    """The marker's dict, None where the folder has none; CorruptError
    for one that is not ours."""
    path = os.path.join(folder, MARKER)
    try:
        with open(path, "rb") as f:
            raw = f.read(_MARKER_MAX + 1)
    except FileNotFoundError:
        return None
    try:
        m = json.loads(raw.decode()) if len(raw) <= _MARKER_MAX else None
    except (UnicodeDecodeError, ValueError):
        m = None
    ok = (isinstance(m, dict) and m.get("format") == _FORMAT
          and m.get("version") == _VERSION
          and all(type(m.get(k)) is int and m[k] >= low for k, low in
                  (("custom_checkpoint", 0), ("world_size", 1))))
    if not ok:
        raise rngsnap.CorruptError(
            "%s: %s is not rngsnap's marker (format %r version %d with "
            "custom_checkpoint and world_size); nothing restored"
            % (WHO, path, _FORMAT, _VERSION))
    return m
