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
Works with lightning.pytorch and pytorch_lightning alike: it imports
neither, it is made a Callback of the package the Trainer comes from.
"""
import warnings

import torch

import rngsnap
import rngsnap.torch

from ._keyed_loader import LoaderPosition, keyed_loader

POSITION_STATE = "rngsnap.lightning.loader"


class _Hooks:
    """The callback's hooks; RngsnapCallback(...) mixes them into the
    Callback class of the Lightning package the job imported."""

    def __init__(self, ctx=None, stream=("cpu", 0, "augment")):
        self.ctx, self._own_ctx = ctx, ctx is None
        self.stream_name = stream
        self.position = LoaderPosition(POSITION_STATE)
        self._ready = False

    @property
    def state_key(self):
        return "RngsnapCallback"

    # -- before the restore: context, tracking, the keyed loader ----------
    def setup(self, trainer, pl_module, stage):
        if stage != "fit" or self._ready:
            return
        if trainer.world_size > 1:
            raise rngsnap.InvalidError(
                "rngsnap.integrations.lightning: %d processes; this version "
                "resumes a single-process fit exactly and does not yet "
                "restore every rank of a %s job; run on one device, or keep "
                "each rank's state with rngsnap.integrations.dcp.RngState"
                % (trainer.world_size, type(trainer.strategy).__name__))
        resuming = trainer.ckpt_path is not None
        if self.ctx is None:
            self.ctx = rngsnap.Context(resume=resuming)
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
        # FitLoop.setup_data asks this source for the train loader after
        # the checkpoint is restored: the keyed loader starts at the
        # restored position.
        source = trainer.fit_loop._data_source
        request = source.dataloader
        stream = self.ctx.stream(*self.stream_name)

        def keyed():
            loader = keyed_loader(request(), stream, self.position)
            # reseeded from the stream at each epoch: in no checkpoint
            self.ctx.ignore_generator(loader.generator)
            return loader
        source.dataloader = keyed

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
        if self.ctx is None:
            return {}
        return self.ctx.state_dict()

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
        if stage == "fit" and self._own_ctx and self.ctx is not None:
            self.ctx.close()
            self.ctx, self._ready = None, False


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
