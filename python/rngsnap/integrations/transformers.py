"""rngsnap for the transformers Trainer (docs/integrations/transformers.md).

    from rngsnap.integrations.transformers import RngsnapTrainer
    trainer = RngsnapTrainer(model=model, args=args, train_dataset=data)
    trainer.train(resume_from_checkpoint=ckpt)   # ckpt None on a first run

    class MyTrainer(RngsnapTrainerMixin, SFTTrainer): ...   # your own Trainer

Why a subclass, not a callback: resumed inside an epoch, the Trainer skips
the batches already trained (accelerate's skip_first_batches), starts the
epoch's iterator, fetches the first batches and only then restores its RNG
file (Trainer._load_rng_state); callbacks run later still.  So the mixin
overrides the Trainer's own RNG hooks, as axolotl's RngLoaderMixin does:

- _save_rng_state writes, next to the Trainer's rng_state[_<i>].pth, the
  rngsnap state of every rank (rngsnap.ckpt: a file, or with several
  processes a folder of rank files, ctx.save_ranks); _load_rng_state
  restores it strictly where the Trainer restores its own, or, from a
  checkpoint a plain Trainer wrote, adopts the Trainer's file once
  (integrations/_adopt.py: verified byte by byte, no code run).
- The training loader is keyed (_trainer_loader.py): every sample a pure
  function of the data seed, the epoch and its index, so the fetch before
  the restore draws nothing the restore sets, and the Trainer's own skip
  passes over exactly the batches the checkpoint trained.

What cannot be made exact is refused at train() with the reason and the
fix in TrainingArguments' words (InvalidError), before any step.
"""
import logging
import math
import os

import transformers
from transformers.trainer_utils import get_last_checkpoint

import rngsnap
import rngsnap.torch

from ._adopt import check_framework_states, read_trainer_states, \
    restore_framework_states
from ._keyed_loader import LoaderPosition
from ._trainer_loader import TrainerRecord, key_train_loader

WHO = "rngsnap.integrations.transformers"
STATE_FILE = "rngsnap.ckpt"  # in each checkpoint-<step>/: file or folder
POSITION_STATE = "rngsnap.transformers.loader"
TRAINER_STATE = "rngsnap.transformers.trainer"

logger = logging.getLogger(__name__)

# The Trainer methods the mixin overrides: without them it would silently
# restore nothing, so their absence is an ImportError.
_HOOKS = ("_save_rng_state", "_load_rng_state", "get_train_dataloader",
          "training_step", "train")
_missing = [h for h in _HOOKS if not hasattr(transformers.Trainer, h)]
if _missing:
    raise ImportError(
        "%s overrides Trainer.%s, which transformers %s does not have; "
        "use the transformers version docs/integrations/transformers.md "
        "names" % (WHO, ", Trainer.".join(_missing), transformers.__version__))


class RngsnapTrainerMixin:
    """Mix in FIRST, before the Trainer class: class MyTrainer(
    RngsnapTrainerMixin, SFTTrainer).  Adds nothing to the constructor;
    train(resume_from_checkpoint=...) resumes bit-exact (module docstring).
    """

    _rngsnap = None  # the _Session of the train() call running

    def __init_subclass__(cls, **kw):
        super().__init_subclass__(**kw)
        mro = cls.__mro__
        if transformers.Trainer in mro and \
                mro.index(transformers.Trainer) < mro.index(
                    RngsnapTrainerMixin):
            raise TypeError(
                "%s: %s lists a Trainer class before RngsnapTrainerMixin, so "
                "the Trainer's own RNG hooks would run and rngsnap's never; "
                "put the mixin first: class %s(RngsnapTrainerMixin, <your "
                "Trainer>)" % (WHO, cls.__name__, cls.__name__))

    def train(self, resume_from_checkpoint=None, *args, **kwargs):
        resume = resume_from_checkpoint
        if resume is True:  # as Trainer.train: the last in output_dir
            resume = get_last_checkpoint(self.args.output_dir) or True
        # (True left: no checkpoint there; the Trainer raises, saying so)
        path = os.fspath(resume) if isinstance(resume, (str, os.PathLike)) \
            else None
        self._rngsnap = _Session(self, path)
        try:
            return super().train(resume, *args, **kwargs)
        finally:
            self._rngsnap.close()
            self._rngsnap = None

    def get_train_dataloader(self):
        if self._rngsnap is None:  # outside train(): the Trainer's own
            return super().get_train_dataloader()
        return self._rngsnap.key_loader(super().get_train_dataloader)

    def training_step(self, *args, **kwargs):
        if self._rngsnap is not None:
            self._rngsnap.before_step()
        return super().training_step(*args, **kwargs)

    def _save_rng_state(self, output_dir):
        super()._save_rng_state(output_dir)  # kept: a plain Trainer resumes
        if self._rngsnap is not None:
            self._rngsnap.save(output_dir)

    def _load_rng_state(self, checkpoint):
        if self._rngsnap is None or checkpoint is None:
            return super()._load_rng_state(checkpoint)
        self._rngsnap.restore()


class RngsnapTrainer(RngsnapTrainerMixin, transformers.Trainer):
    """transformers.Trainer, resumable bit-exact from any checkpoint
    (RngsnapTrainerMixin)."""


class _Session:
    """What one train() call needs: the checks, the context that goes into
    the checkpoints (tracked generators, the loader position, the
    Trainer's step), the keyed loader's own context, and how this run
    began: "new", "resume" (rngsnap's state) or "adopt" (the Trainer's
    file of a plain checkpoint)."""

    def __init__(self, trainer, checkpoint):
        self.trainer, self.checkpoint = trainer, checkpoint
        args = trainer.args
        refuse_untrainable(trainer, checkpoint)
        self.world, self.rank = max(args.world_size, 1), args.process_index
        self.group = _gloo_group() if self.world > 1 else None
        self.mode, self.adopt = self._begin_mode()
        self.position = LoaderPosition(POSITION_STATE)
        self.record = TrainerRecord(trainer)
        self.loader = None  # the keyed loader, once built
        self.restored = False  # until the first step after the restore
        self.ctx = rngsnap.Context(resume=self.mode == "resume")
        if self.mode != "resume":
            rngsnap.torch.track(self.ctx)
            self.ctx.seed_all(args.seed)  # the Trainer's seed: this rank's
        self.ctx.register_state(POSITION_STATE, save=self.position.save,
                                load=self.position.load)
        self.ctx.register_state(TRAINER_STATE, save=self.record.save,
                                load=self.record.load)

    # -- how this run begins -----------------------------------------------
    def _begin_mode(self):
        if self.checkpoint is None:
            return "new", None
        path = os.path.join(self.checkpoint, STATE_FILE)
        if os.path.exists(path):
            several = os.path.isdir(path)
            if several != (self.world > 1):
                raise rngsnap.MismatchError(
                    "%s: %s was written by %s, this job has %d; nothing "
                    "restored, no step trained: resume with as many "
                    "processes as the run that wrote the checkpoint"
                    % (WHO, path, "several processes" if several
                       else "one process", self.world))
            return "resume", None
        # A checkpoint of a plain Trainer: its own RNG file, verified now
        # (every rank agrees), restored where the Trainer restores.
        name = "rng_state.pth" if self.world <= 1 \
            else "rng_state_%d.pth" % self.rank
        trainer_file = os.path.join(self.checkpoint, name)
        error, states = None, None
        if not os.path.isfile(trainer_file):
            error = rngsnap.MismatchError(
                "%s: %s holds neither rngsnap's state (%s) nor the Trainer's "
                "own RNG file (%s); nothing restored, no step trained: "
                "resume from a checkpoint written with save_only_model=False"
                " by as many processes as this job, or start a new run "
                "without resume_from_checkpoint"
                % (WHO, self.checkpoint, STATE_FILE, name))
        else:
            try:
                states = read_trainer_states(trainer_file)
                check_framework_states(states, trainer_file)
            except rngsnap.Error as e:
                error = e
        _agree(error, self.group, self.world)
        return "adopt", (states, trainer_file)

    # -- the keyed training loader -------------------------------------------
    def key_loader(self, build):
        self.loader = key_train_loader(self.trainer, build, self.record,
                                       self.position)
        # reseeded from the key stream at every epoch: in no checkpoint
        self.ctx.ignore_generator(self.loader.generator)
        return self.loader.prepared

    def before_step(self):
        """First step after the restore: the keyed loader must be on the
        epoch the Trainer resumes (accelerate's set_epoch reached it)."""
        if self.restored:
            self.restored = False
            running = math.floor(self.trainer.state.epoch)
            if self.loader.begun != running:
                raise rngsnap.OrderError(
                    "%s: the Trainer resumes epoch %d but the keyed loader "
                    "began epoch %s (the epoch did not reach it through "
                    "set_epoch); nothing trained: this transformers/"
                    "accelerate pair is not one the integration was tested "
                    "with (docs/integrations/transformers.md)"
                    % (WHO, running, self.loader.begun))
        self.position.taken += 1

    # -- into and out of the checkpoint --------------------------------------
    def save(self, output_dir):
        path = os.path.join(output_dir, STATE_FILE)
        if self.world > 1:
            self.ctx.save_ranks(path, group=self.group, replace=True)
        else:
            self.ctx.save(path, replace=True)

    def restore(self):
        """Where the Trainer restores its RNG file (_load_rng_state)."""
        if self.mode == "resume":
            # Anything drawn before this point the restore overwrites, as
            # the Trainer's own would: track now, then load.
            rngsnap.torch.track(self.ctx)
            path = os.path.join(self.checkpoint, STATE_FILE)
            try:
                if self.world > 1:
                    self.ctx.load_ranks(path, group=self.group)
                else:
                    self.ctx.load(path)
            except rngsnap.Error as e:
                # A check of ours, in a load callable, failed the load
                # (rolled back): raise that check's own error.
                if isinstance(e.__cause__, rngsnap.MismatchError):
                    raise e.__cause__ from None
                raise
        elif self.mode == "adopt":
            states, trainer_file = self.adopt
            logger.warning(restore_framework_states(states, trainer_file))
        self.restored = True

    def close(self):
        self.ctx.close()
        self.record.close()


def refuse_untrainable(trainer, checkpoint):
    """InvalidError, in TrainingArguments' words, for a run that cannot
    resume exactly inside an epoch: before any context, any step."""
    import torch
    args, data = trainer.args, trainer.train_dataset
    if isinstance(data, torch.utils.data.IterableDataset) or (
            data is not None and not hasattr(data, "__len__")):
        raise rngsnap.InvalidError(
            "%s: train_dataset is a %s, an iterable dataset: its samples "
            "have no index to key, so a resume inside an epoch cannot be "
            "exact; pass a map-style dataset (a datasets.Dataset, or a torch"
            " Dataset with __getitem__ and __len__)"
            % (WHO, type(data).__name__))
    strategy = getattr(args, "train_sampling_strategy", "random")
    if strategy not in ("random", "sequential"):
        raise rngsnap.InvalidError(
            "%s: TrainingArguments(train_sampling_strategy=%r) orders the "
            "samples with a sampler of the Trainer's own that rngsnap does "
            "not key, so a resume inside an epoch cannot be exact; use "
            "train_sampling_strategy='random' (the default) or 'sequential'"
            % (WHO, strategy))
    if args.auto_find_batch_size:
        raise rngsnap.InvalidError(
            "%s: TrainingArguments(auto_find_batch_size=True) restarts the "
            "training loop with a smaller batch after an out-of-memory "
            "error, a run other than the one its checkpoints record; set "
            "per_device_train_batch_size to a size that fits instead" % WHO)
    if args.accelerator_config.dispatch_batches:
        raise rngsnap.InvalidError(
            "%s: TrainingArguments(accelerator_config={'dispatch_batches': "
            "True}) has the main process fetch every batch for all; rngsnap "
            "keys the loader each process iterates and was not made exact "
            "with dispatching; leave dispatch_batches unset" % WHO)
    if checkpoint is not None and args.ignore_data_skip:
        raise rngsnap.InvalidError(
            "%s: TrainingArguments(ignore_data_skip=True) starts the resumed"
            " epoch again from its first batch, a run other than the "
            "uninterrupted one; nothing restored, no step trained: resume "
            "with ignore_data_skip=False (the default)" % WHO)


def _gloo_group():
    """The group of rngsnap's collectives: its CPU tensors need gloo (a
    group of its own when the job's default backend is another)."""
    import torch.distributed as dist
    if dist.get_backend() == "gloo":
        return None
    return dist.new_group(backend="gloo")


_AGREE = (None, rngsnap.CorruptError, rngsnap.MismatchError,
          rngsnap.InvalidError, rngsnap.Error)


def _agree(error, group, world):
    """Every rank raises when one refused its checkpoint (a rank going on
    alone would wait for it in the first collective)."""
    if world > 1:
        import torch
        import torch.distributed as dist
        code = 0 if error is None else next(
            (i for i, c in enumerate(_AGREE) if c and isinstance(error, c)),
            len(_AGREE) - 1)
        worst = torch.tensor([code])
        dist.all_reduce(worst, op=dist.ReduceOp.MAX, group=group)
        if error is None and worst.item():
            raise _AGREE[worst.item()](
                "%s: another rank refused its part of the checkpoint (its "
                "error says why); nothing restored, no step trained" % WHO)
    if error is not None:
        raise error
