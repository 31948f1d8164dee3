"""rngsnap for Lightning: one callback (docs/integrations/lightning.md).

    from rngsnap.integrations.lightning import RngsnapCallback
    trainer = Trainer(..., callbacks=[RngsnapCallback(), ModelCheckpoint(...)])
    trainer.fit(model, ckpt_path=ckpt)      # ckpt None on the first run

Every generator rngsnap.torch.track() finds (torch's CPU generator, every
device's, NumPy's, random's) and the position of the training loader go
into checkpoint["callbacks"]; the training DataLoader is keyed (every
sample a pure function of the seeding, the epoch and its index:
integrations/_keyed_loader.py), so a checkpoint written anywhere, inside
an epoch too (ModelCheckpoint(every_n_train_steps=k)), resumes bit-exact.
With strategy="ddp" every rank's state goes into the one checkpoint rank 0
writes (gathered) and each rank takes its own back; the loader keyed is
the one Lightning built, with its DistributedSampler's shard.
Works with lightning.pytorch and pytorch_lightning alike: it imports
neither, it is made a Callback of the package the Trainer comes from.
"""
import os
import warnings

import torch

import rngsnap
import rngsnap.torch

from ._keyed_loader import LoaderPosition, check_loader, keyed_loader

POSITION_STATE = "rngsnap.lightning.loader"


class _Hooks:
    """The callback's hooks; RngsnapCallback(...) mixes them into the
    Callback class of the Lightning package the job imported."""

    def __init__(self, ctx=None, stream=("cpu", 0, "augment")):
        self.ctx, self._own_ctx = ctx, ctx is None
        self.stream_name = stream
        self.position = LoaderPosition(POSITION_STATE)
        self._ready = False
        self._unhook = self._group = None

    @property
    def state_key(self):
        return "RngsnapCallback"

    # -- before the restore: context, tracking, the keyed loader ----------
    def setup(self, trainer, pl_module, stage):
        if stage != "fit" or self._ready:
            return
        _check_strategy(trainer)
        resuming = trainer.ckpt_path is not None
        if self.ctx is None:
            self.ctx = _open_context(resuming, trainer.global_rank)
        self.ctx.set_rank(trainer.global_rank, trainer.world_size)
        self._group = _gather_group(trainer.world_size)
        if self._own_ctx:  # a context of yours: you track() it yourself
            rngsnap.torch.track(self.ctx)
        if not resuming:  # the job's seed (seed_everything, manual_seed)
            self.ctx.seed_all(torch.initial_seed())
        self.ctx.register_state(POSITION_STATE, save=self.position.save,
                                load=self.position.load)
        self._key_train_loader(trainer)
        # Lightning warns that a plain loader restarted inside an epoch is
        # "not resumable"; the keyed loader resumes at its position.  (Made
        # Lightning-stateful instead, the loop skips the taken batches a
        # second time.)
        warnings.filterwarnings(
            "ignore", message="You're resuming from a checkpoint that ended "
            "before the epoch ended and your dataloader is not resumable")
        self._ready = True

    def _key_train_loader(self, trainer):
        # FitLoop.setup_data (after the checkpoint is restored) asks this
        # source for train_dataloader(), then hands each loader to
        # strategy.process_dataloader once Lightning has put its
        # DistributedSampler in: the loader keyed is the one Lightning
        # built, so each rank keeps its shard.
        source, strategy = trainer.fit_loop._data_source, trainer.strategy
        request, process = source.dataloader, strategy.process_dataloader
        stream = self.ctx.stream(*self.stream_name)
        pending = []

        def train_dataloader():
            loader = request()
            check_loader(loader)  # one DataLoader, before Lightning's sampler
            pending.append(loader)
            return loader

        def process_dataloader(loader):
            loader = process(loader)
            if not pending:  # a validation loader
                return loader
            pending.clear()
            keyed = keyed_loader(loader, stream, self.position)
            # reseeded from the stream at each epoch: in no checkpoint
            self.ctx.ignore_generator(keyed.generator)
            return keyed

        source.dataloader = train_dataloader
        strategy.process_dataloader = process_dataloader
        self._unhook = lambda: (setattr(source, "dataloader", request),
                                setattr(strategy, "process_dataloader",
                                        process))

    # -- the position: the batches the loop took -------------------------
    def on_train_batch_start(self, trainer, pl_module, batch, batch_idx):
        self.position.taken += 1

    def on_train_batch_end(self, trainer, pl_module, outputs, batch,
                           batch_idx):
        # Lightning's epoch may be shorter than the loader
        # (limit_train_batches): a checkpoint written now (ModelCheckpoint
        # runs after every other callback) resumes at the next epoch.
        if self.position.taken >= trainer.num_training_batches:
            self.position.end_epoch()

    # -- into and out of Lightning's checkpoint --------------------------
    def state_dict(self):
        # Every rank runs this (dump_checkpoint); rank 0 writes the file:
        # every rank's bytes, gathered (a collective over the ranks).
        if self.ctx is None:
            return {}
        return self.ctx.state_dict(gather=self.ctx.world_size > 1,
                                   group=self._group)

    def on_load_checkpoint(self, trainer, pl_module, checkpoint):
        # Lightning calls load_state_dict only for a state it has.
        if not checkpoint.get("callbacks", {}).get(self.state_key):
            self.load_state_dict({})

    def load_state_dict(self, state_dict):
        if not state_dict:
            raise rngsnap.MismatchError(
                "rngsnap.integrations.lightning: the checkpoint holds no "
                "rngsnap state (it was written without RngsnapCallback); "
                "nothing restored; resume from a checkpoint written with "
                "the callback, or start a new run without ckpt_path")
        self.ctx.load_state_dict(state_dict)

    def teardown(self, trainer, pl_module, stage):
        if stage != "fit" or not self._ready:
            return
        if self._unhook is not None:
            self._unhook()
        self._ready = False
        if self._own_ctx and self.ctx is not None:
            self.ctx.close()
            self.ctx = None


def _open_context(resume, rank):
    """A Context of the callback's own.  Lightning's launcher (ddp on
    processes it starts) sets WORLD_SIZE but no RANK, which rngsnap refuses
    as half a launcher's pair: the trainer's rank fills it in while the
    context opens."""
    if "WORLD_SIZE" not in os.environ or "RANK" in os.environ:
        return rngsnap.Context(resume=resume)
    os.environ["RANK"] = str(rank)
    try:
        return rngsnap.Context(resume=resume)
    finally:
        del os.environ["RANK"]


def _check_strategy(trainer):
    """One process, or strategy="ddp" (processes Lightning or torchrun
    started: each runs the whole job, so every rank's callback runs every
    hook); other ways of running several processes are not verified."""
    strategy = trainer.strategy
    method = getattr(strategy, "_start_method", None)
    if trainer.world_size == 1 or (type(strategy).__name__ == "DDPStrategy"
                                   and method == "popen"):
        return
    name = type(strategy).__name__ + (
        "(start_method=%r)" % method if method else "")
    raise rngsnap.InvalidError(
        "rngsnap.integrations.lightning: %s on %d processes is not covered;"
        " RngsnapCallback restores every rank of strategy=\"ddp\"; nothing "
        "trained: use strategy=\"ddp\" (or one device)"
        % (name, trainer.world_size))


def _gather_group(world_size):
    """The ranks' group for the gather: the default one on gloo; on
    another backend (NCCL takes no CPU tensors) a gloo group of the same
    ranks, as torch's DataLoader makes for its shared seed."""
    if world_size == 1:
        return None
    import torch.distributed as dist
    if dist.get_backend() == "gloo":
        return None
    return dist.new_group(backend="gloo")


_classes = {}


def _callback_class():
    """_Hooks mixed into the Callback of whichever Lightning package is
    imported (lightning.pytorch first, as Lightning's own docs)."""
    import sys
    names = [n for n in ("lightning.pytorch", "pytorch_lightning")
             if n in sys.modules] or ["lightning.pytorch", "pytorch_lightning"]
    for name in names:
        try:
            module = __import__(name, fromlist=["Callback"])
        except ImportError:
            continue
        if name not in _classes:
            _classes[name] = type("RngsnapCallback", (_Hooks, module.Callback),
                                  {"__module__": __name__,
                                   "__doc__": _Hooks.__doc__})
        return _classes[name]
    raise ImportError("rngsnap.integrations.lightning needs lightning or "
                      "pytorch-lightning: pip install lightning")


def RngsnapCallback(ctx=None, stream=("cpu", 0, "augment")):  # noqa: N802
    """The Callback: ctx=None makes (and closes) a Context of its own,
    tracked and, on a first run, seeded from torch.initial_seed() (the
    seed the job gave seed_everything); pass your own ctx to add app
    states of yours (then call rngsnap.torch.track(ctx) yourself).
    stream: the rngsnap stream the training samples are keyed by."""
    return _callback_class()(ctx, stream)
