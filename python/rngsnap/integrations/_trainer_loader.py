"""The transformers Trainer's training loader, keyed (for
integrations/transformers.py).

The Trainer builds its loader as accelerator.prepare(DataLoader(...)) in
get_train_dataloader.  key_train_loader lets it, and swaps that one
DataLoader, on its way into prepare, for a keyed one built by
_keyed_loader.keyed_loader (KeyedDataset fed the SampleKeys of a
KeyedBatchSampler): the Trainer's own choices (collator, columns, workers,
worker_init_fn) stay, and accelerate shards and places it as the plain one.
What differs from Lightning's use of the keyed loader:

- The keys come from a context of their own, seeded from the data seed
  (TrainingArguments data_seed, else seed) as rank 0 of 1: the resumed
  epoch's first batches are fetched before the Trainer restores, so before
  any checkpoint is read; every rank draws the same order, which
  accelerate shards.  The checkpoint records the seed (TrainerRecord) and
  a resume with another one is refused.
- The epoch: accelerate's DataLoaderShard calls set_epoch(epoch) before
  each iter() on the batch sampler, its .sampler, or, when neither has
  one (behind SkipBatchSampler and BatchSamplerShard: a resume with 2
  processes), on the dataset; _EpochBatches takes it by each route and
  reseeds the loader's generator (the workers' base seed) from the keys.
- The Trainer skips the trained batches itself (skip_first_batches over
  the batch sampler, unfetched); the KeyedBatchSampler is built before the
  load, so it yields every epoch from batch 0 and nothing is skipped twice.
- The collator is keyed too (_KeyedCollate): a random one (the masking of
  DataCollatorForLanguageModeling) draws from generators seeded by the
  batch's keys, and with 0 workers puts them back, as the samples do.
"""
import hashlib
import struct

import torch

import rngsnap
from rngsnap.torch import LOADER_KEY, KeyedDataset, SampleKey

from ._keyed_loader import keyed_loader

WHO = "rngsnap.integrations.transformers"

# The DataLoader arguments the keyed loader takes from the Trainer's.
_COPIED = ("num_workers", "pin_memory", "timeout",
           "worker_init_fn", "multiprocessing_context", "persistent_workers",
           "in_order")

# "RSTR" v1: u64 data seed, u64 global step, u64 gradient accumulation.
_MAGIC, _VERSION = b"RSTR", 1
_FORMAT = struct.Struct("<4sHQQQ")


class TrainerRecord:
    """The Trainer's side of a checkpoint (app state): the data seed the
    keys come from, the step, the gradient accumulation; a resume where
    one differs is MismatchError.  Owns the keys' context."""

    def __init__(self, trainer):
        args = trainer.args
        self.trainer = trainer
        self.seed = args.data_seed if args.data_seed is not None \
            else args.seed
        self.keys = rngsnap.Context()
        self.keys.set_rank(0, 1)  # one order for every rank
        self.keys.seed_all(self.seed)
        self.stream = next(s for s in self.keys.streams()
                           if s.backend == "cpu")

    def _live(self):
        return (self.seed, self.trainer.state.global_step,
                self.trainer.args.gradient_accumulation_steps)

    def save(self):
        return _FORMAT.pack(_MAGIC, _VERSION, *self._live())

    def load(self, data):
        if len(data) != _FORMAT.size or data[:4] != _MAGIC:
            raise rngsnap.CorruptError("%s: not a Trainer record" % WHO)
        magic, version, *saved = _FORMAT.unpack(data)
        if version != _VERSION:
            raise rngsnap.CorruptError("%s: Trainer record version %d, not "
                                       "%d" % (WHO, version, _VERSION))
        names = ("data seed (TrainingArguments data_seed, else seed)",
                 "global step (trainer_state.json)",
                 "gradient_accumulation_steps")
        diff = ["  %s: rngsnap state %d, this job %d" % (n, a, b)
                for n, a, b in zip(names, saved, self._live()) if a != b]
        if diff:
            raise rngsnap.MismatchError(
                "%s: the checkpoint's rngsnap state does not fit this run, "
                "which would see other batches; nothing restored, no step "
                "trained: resume with the TrainingArguments and the "
                "checkpoint folder the run was written with:\n%s"
                % (WHO, "\n".join(diff)))

    def close(self):
        self.keys.close()


class _EpochBatches(torch.utils.data.Sampler):
    """The KeyedBatchSampler as the Trainer's loader holds it: set_epoch
    also reseeds the loader's generator, and begun is the epoch its last
    iter() began (checked against the Trainer's after a resume)."""

    def __init__(self, keyed, generator, stream):
        self.keyed, self.generator, self.stream = keyed, generator, stream
        # read by accelerate's BatchSamplerShard
        self.batch_size, self.drop_last = keyed.batch_size, keyed.drop_last
        self.begun = None

    def set_epoch(self, epoch):
        self.keyed.set_epoch(epoch)
        seed = self.stream.derive(epoch, LOADER_KEY).generate("u64", 1)
        self.generator.manual_seed(int(seed[0]))

    def __len__(self):
        return len(self.keyed)

    def __iter__(self):
        self.begun = self.keyed.position.epoch
        return iter(self.keyed)


class _Samples(list):
    """A batch's samples, and the words of their keys (for the collate)."""


class _BatchDataset(KeyedDataset):
    """KeyedDataset fetching a batch at once (torch's __getitems__): the
    samples keep their keys' words for _KeyedCollate."""

    def __getitems__(self, keys):
        samples = _Samples(self[key] for key in keys)
        samples.words = b"".join(key.words for key in keys)
        return samples


class _EpochDataset(_BatchDataset):
    """_BatchDataset with set_epoch: the route by which accelerate's
    DataLoaderShard tells the epoch when the batch sampler is wrapped out
    of its reach.  Workers get a plain _BatchDataset (pickled so)."""

    def __init__(self, dataset, batches):
        super().__init__(dataset)
        self._batches = batches

    def set_epoch(self, epoch):
        self._batches.set_epoch(epoch)
        own = getattr(self.dataset, "set_epoch", None)
        if own is not None:  # the user's dataset's own, as before
            own(epoch)

    def __reduce__(self):
        return _BatchDataset, (self.dataset,)


class _KeyedCollate:
    """The Trainer's collate_fn, drawing from torch, NumPy and random seeded
    by a hash of the batch's keys (KeyedDataset does the seeding, and with
    0 workers puts the generators back): the same draws in every run, with
    any worker count."""

    def __init__(self, collate):
        self.collate = collate

    def __call__(self, samples):
        words = hashlib.blake2b(b"rngsnap collate\0" + samples.words,
                                digest_size=40).digest()
        return KeyedDataset(_CollateCall(self.collate, list(samples)))[
            SampleKey(0, 0, words)]


class _CollateCall:
    """The collate of one batch, as the one item of a dataset."""

    def __init__(self, collate, samples):
        self.collate, self.samples = collate, samples

    def __getitem__(self, index):
        return self.collate(self.samples)


class KeyedTrainLoader:
    """The keyed DataLoader that replaced the Trainer's, and what
    accelerate made of it (prepared)."""

    def __init__(self, plain, stream, position, trainer):
        _check_sampler(plain, trainer)
        keyed = keyed_loader(plain, stream, position)  # its checks, shape
        self.generator = keyed.generator
        self.batches = _EpochBatches(keyed.keyed_sampler, keyed.generator,
                                     stream)
        kw = {k: getattr(plain, k) for k in _COPIED if hasattr(plain, k)}
        kw["collate_fn"] = _KeyedCollate(plain.collate_fn)
        if plain.num_workers:
            kw["prefetch_factor"] = plain.prefetch_factor
        self.loader = torch.utils.data.DataLoader(
            _EpochDataset(plain.dataset, self.batches),
            batch_sampler=self.batches, generator=self.generator, **kw)
        self.prepared = None

    @property
    def begun(self):
        return self.batches.begun


def key_train_loader(trainer, build, record, position):
    """Run build() (the Trainer's get_train_dataloader) with its
    accelerator.prepare(DataLoader) given the keyed loader instead."""
    from accelerate.data_loader import DataLoaderShard
    acc = trainer.accelerator
    real, own = acc.prepare, acc.__dict__.get("prepare")
    made = []

    def prepare(*objects, **kw):
        if not made and len(objects) == 1 and isinstance(
                objects[0], torch.utils.data.DataLoader):
            made.append(KeyedTrainLoader(objects[0], record.stream, position,
                                         trainer))
            objects = (made[0].loader,)
        return real(*objects, **kw)

    acc.prepare = prepare  # this call only
    try:
        prepared = build()
    finally:
        if own is None:
            del acc.prepare
        else:
            acc.prepare = own
    if not made or not isinstance(prepared, DataLoaderShard):
        raise rngsnap.InvalidError(
            "%s: %s.get_train_dataloader() returned a %s %s; rngsnap keys "
            "the DataLoader the Trainer passes to accelerator.prepare and "
            "cannot resume another loader exactly; build it as "
            "Trainer.get_train_dataloader does, or leave it to the Trainer"
            % (WHO, type(trainer).__name__, type(prepared).__name__,
               "not built with accelerator.prepare(DataLoader(...))"
               if not made else "(not accelerate's DataLoaderShard)"))
    made[0].prepared = prepared
    return made[0]


def _check_sampler(plain, trainer):
    """InvalidError unless the Trainer's loader samples as the keyed loader
    does: every sample once an epoch, shuffled or in order."""
    sampler = plain.sampler
    kinds = (torch.utils.data.RandomSampler,
             torch.utils.data.SequentialSampler)
    plain_random = type(sampler) is not torch.utils.data.RandomSampler or (
        not sampler.replacement
        and sampler.num_samples == len(plain.dataset))
    if plain.batch_size is not None and type(sampler) in kinds \
            and plain_random:
        return
    what = sampler if plain.batch_size is not None else plain.batch_sampler
    raise rngsnap.InvalidError(
        "%s: the training loader of %s draws its samples with a %s (from "
        "its get_train_dataloader or _get_train_sampler); rngsnap keys the "
        "order itself, each sample once an epoch, shuffled or in order, and "
        "cannot resume a %s exactly inside an epoch; leave the sampler to "
        "the Trainer (train_sampling_strategy='random' or 'sequential')"
        % (WHO, type(trainer).__name__, type(what).__name__,
           type(what).__name__))
