"""A training DataLoader made resumable at any batch, for the integrations
that cannot hand the loop rngsnap.torch.ResumableSampler.batches().

keyed_loader(loader, stream, position) builds, from the user's DataLoader,
one whose every sample is a pure function of (the stream's seeding, epoch,
index): the dataset wrapped in rngsnap.torch.KeyedDataset, fed the
SampleKeys of a KeyedBatchSampler, and a generator of its own reseeded at
each iter() from stream.derive(e, LOADER_KEY), so iter() draws nothing
from torch's default generator.  Prefetching, worker count and start
method then change nothing.  Epoch e's order (KeyedOrder) is the stable
argsort of stream.derive(e, ORDER_KEY) for shuffle=True, as
ResumableSampler; 0..n-1 for shuffle=False; and this rank's shard of a
DistributedSampler the framework put in (its order is already a pure
function of its seed and the epoch, the same on every rank).  The position
(epoch, batches the loop took) is a LoaderPosition: the framework tells it
when the loop takes a batch and, through
loader.batch_sampler.sampler.set_epoch (where Lightning and torch's
convention put it), which epoch runs; the integration saves it as an app
state of the context.
"""
import itertools
import struct

import numpy as np
import torch

import rngsnap
from rngsnap.torch import LOADER_KEY, ORDER_KEY, KeyedDataset, SampleKey

# "RSLP" v1: u64 dataset length, u64 batch size, u64 epoch, u64 batches
# taken.  v2 (an order from a DistributedSampler): v1, then its u64 seed.
_MAGIC = b"RSLP"
_FORMAT = struct.Struct("<4sHQQQQ")
_SEED = struct.Struct("<Q")


class LoaderPosition:
    """Where the training loop is: epoch, batches taken in it, and the
    loader's shape (dataset length, batch size), saved with the checkpoint
    and checked against the loader that resumes."""

    def __init__(self, name):
        self.name = name
        self.epoch = self.taken = 0
        self.shape = None  # (length, batch_size) once the loader is built
        self.seed = None  # a DistributedSampler's seed: the order's source
        self._loaded = None  # a checkpoint's (shape, seed), checked at build
        self.rolled_over = False  # loaded at an epoch's end

    def save(self):
        length, batch = self.shape or (0, 0)
        head = _FORMAT.pack(_MAGIC, 1 if self.seed is None else 2, length,
                            batch, self.epoch, self.taken)
        return head if self.seed is None else head + _SEED.pack(self.seed)

    def load(self, data):
        version = struct.unpack_from("<H", data, 4)[0] \
            if len(data) >= 6 else 1
        size = _FORMAT.size + (_SEED.size if version == 2 else 0)
        if len(data) != size:
            raise rngsnap.CorruptError(
                "%s: %d bytes, not the %d of a loader position"
                % (self.name, len(data), size))
        magic, version, length, batch, epoch, taken = \
            _FORMAT.unpack_from(data)
        if magic != _MAGIC or version not in (1, 2):
            raise rngsnap.CorruptError("%s: not a loader position (magic %r,"
                                       " version %d)" % (self.name, magic,
                                                         version))
        seed = _SEED.unpack_from(data, _FORMAT.size)[0] if version == 2 \
            else None
        self.epoch, self.taken = epoch, taken
        self._loaded = ((length, batch), seed)
        self.check()

    def end_epoch(self):
        """The framework ended the epoch (it may count fewer batches than
        the loader has): a checkpoint from now on resumes at the next
        epoch's start."""
        self.epoch, self.taken = self.epoch + 1, 0

    def check(self):
        """MismatchError when the loader differs from the checkpoint's."""
        if self.shape is None or self._loaded is None or \
                self._loaded[0] == (0, 0):
            return
        (length, batch), seed = self._loaded
        diff = ["  %s: checkpoint %d, this job %d" % (what, a, b)
                for what, a, b in zip(("dataset length", "batch size"),
                                      (length, batch), self.shape) if a != b]
        if seed != self.seed:  # DistributedSampler(seed=): its order
            diff.append("  DistributedSampler seed: checkpoint %s, this job "
                        "%s (the seed given to seed_everything)"
                        % _seeds(seed, self.seed))
        if diff:
            raise rngsnap.MismatchError(
                "%s: the training loader differs from the checkpoint's, so "
                "the resumed job would see other batches; resume with the "
                "loader the checkpoint was written with:\n%s"
                % (self.name, "\n".join(diff)))


def _seeds(*seeds):
    return tuple("none (the order keyed by rngsnap)" if x is None else x
                 for x in seeds)


class KeyedOrder(torch.utils.data.Sampler):
    """The indices of an epoch for this process, a pure function of the
    epoch: keyed by the stream (shuffle), 0..n-1, or a DistributedSampler's
    shard.  It is the batch sampler's .sampler, where frameworks call
    set_epoch (Lightning's _set_sampler_epoch, as for torch's
    BatchSampler)."""

    def __init__(self, batches, stream, length, shuffle, distributed=None):
        self.batches, self.stream = batches, stream
        self.length, self.shuffle = length, shuffle
        self.distributed = distributed

    def set_epoch(self, epoch):
        self.batches.set_epoch(epoch)

    def indices(self, epoch):
        return self.batches.order(epoch)

    def __len__(self):
        if self.distributed is not None:
            return len(self.distributed)
        return self.length

    def __iter__(self):
        return iter(self.indices(self.batches.position.epoch).tolist())


class KeyedBatchSampler(torch.utils.data.Sampler):
    """Batches of SampleKeys for the position's epoch, from the batch the
    position says on (the first iter() after a resume) or from the start.
    key0 sets apart the keys of several loaders keyed by one stream (loader
    i: key0 = i << 32, epochs being far below 2**32)."""

    def __init__(self, stream, position, length, batch_size, shuffle,
                 drop_last, key0=0, distributed=None):
        self.stream, self.position = stream, position
        self.length, self.batch_size = length, batch_size
        self.shuffle, self.drop_last = shuffle, drop_last
        self.key0 = key0
        self.distributed = distributed
        self.sampler = KeyedOrder(self, stream, length, shuffle, distributed)
        self._resume_at = 0
        self._begun = None  # (epoch, first batch) of an unfinished iter
        self.resume_from_position()

    def resume_from_position(self):
        """The next iter() starts at the position's batch; a position at an
        epoch's end (saved there) is the next epoch's first batch."""
        if self.position.taken >= len(self):
            self.position.epoch += 1
            self.position.taken = 0
            self.position.rolled_over = True
        self._resume_at = self.position.taken  # batches to pass over, once

    def set_epoch(self, epoch):
        """The framework's epoch counter; a new epoch starts at batch 0.
        OrderError when an iterator resumed inside another epoch has
        already begun: its batches (prefetched by workers) would be that
        epoch's, silently."""
        if epoch == self.position.epoch:
            return
        if self._begun is not None and self._begun[1] > 0:
            raise rngsnap.OrderError(
                "%s: the framework starts epoch %d, but the loader resumed "
                "at batch %d of epoch %d and has begun fetching it; nothing "
                "of epoch %d is fetched.  The checkpoint's position and the "
                "framework's epoch counter disagree: resume from a "
                "checkpoint written by the same job and integration"
                % (self.position.name, epoch, self._begun[1], self._begun[0],
                   epoch))
        self.position.epoch, self.position.taken = epoch, 0
        self._resume_at = 0

    def __len__(self):  # the whole epoch's batches: the framework counts
        return self.batches_per_epoch()

    def batches_per_epoch(self):
        if self.drop_last:
            return len(self.sampler) // self.batch_size
        return -(-len(self.sampler) // self.batch_size)

    def __iter__(self):
        # Read at the first batch drawn, not at iter(): a DataLoader with
        # workers makes a second iterator (_reset) and draws from that one.
        epoch, start = self.position.epoch, self._resume_at
        self._resume_at = 0
        self._begun = (epoch, start)
        try:
            yield from itertools.islice(self.epoch_batches(epoch), start,
                                        None)
        finally:
            if self._begun == (epoch, start):
                self._begun = None

    def order(self, epoch):
        """The epoch's order of the dataset's indices (this rank's shard
        of a DistributedSampler's)."""
        if self.distributed is not None:  # seed + epoch: every rank's shard
            self.distributed.set_epoch(epoch)
            return np.fromiter(iter(self.distributed), dtype=np.int64)
        if not self.shuffle:
            return np.arange(self.length)
        keys = self.stream.derive(self.key0 + epoch, ORDER_KEY).generate(
            "u64", self.length)
        return np.argsort(keys, kind="stable")

    def epoch_batches(self, epoch):
        """Every batch of the epoch, from its first (the words of a batch
        passed over are drawn and dropped: a keyed draw moves nothing)."""
        order = self.order(epoch)
        words = np.empty(10, dtype=np.uint32)
        for b in range(self.batches_per_epoch()):
            batch = []
            for i in order[b * self.batch_size:(b + 1) * self.batch_size]:
                self.stream.derive(self.key0 + epoch, int(i)).generate(
                    "u32", out=words)
                batch.append(SampleKey(epoch, int(i), words.tobytes()))
            yield batch


class KeyedLoader(torch.utils.data.DataLoader):
    """The user's DataLoader, keyed (see the module's docstring)."""

    def __init__(self, loader, stream, position, batch_sampler=None):
        # batch_sampler: a KeyedBatchSampler of the caller's (accelerate's
        # prepared loaders carry their batching in their batch sampler)
        if batch_sampler is None:
            distributed = loader.sampler if isinstance(
                loader.sampler, torch.utils.data.DistributedSampler) else None
            batch_sampler = KeyedBatchSampler(
                stream, position, len(loader.dataset), loader.batch_size,
                shuffle=_shuffles(loader), drop_last=loader.drop_last,
                distributed=distributed)
        self.keyed_sampler = sampler = batch_sampler
        self._stream, self._position = stream, position
        kw = dict(num_workers=loader.num_workers,
                  collate_fn=loader.collate_fn,
                  pin_memory=loader.pin_memory, timeout=loader.timeout,
                  worker_init_fn=loader.worker_init_fn,
                  multiprocessing_context=loader.multiprocessing_context,
                  persistent_workers=loader.persistent_workers)
        if loader.num_workers:
            kw["prefetch_factor"] = loader.prefetch_factor
        super().__init__(KeyedDataset(loader.dataset), batch_sampler=sampler,
                         generator=torch.Generator(), **kw)

    def __iter__(self):
        # The workers' base seed comes from the loader's own generator,
        # keyed by the epoch: nothing drawn from torch's default one.
        seed = self._stream.derive(self.keyed_sampler.key0 +
                                   self._position.epoch,
                                   LOADER_KEY).generate("u64", 1)
        self.generator.manual_seed(int(seed[0]))
        return super().__iter__()


def _shuffles(loader):
    return sampler_shuffles(loader.sampler)


def sampler_shuffles(sampler):
    """True for shuffle=True's sampler, False for shuffle=False's, a
    DistributedSampler's own shuffle; InvalidError for a sampler of the
    user's own (or a RandomSampler that draws with replacement)."""
    if isinstance(sampler, torch.utils.data.SequentialSampler):
        return False
    if isinstance(sampler, torch.utils.data.RandomSampler) and \
            not sampler.replacement and \
            sampler.num_samples == len(sampler.data_source):
        return True  # accelerate's SeedableRandomSampler too
    if type(sampler) is torch.utils.data.DistributedSampler:
        return sampler.shuffle  # its own order, pure in (seed, epoch)
    raise rngsnap.InvalidError(
        "rngsnap: the training DataLoader has a sampler of its own (%s); "
        "the integration keys the order itself (shuffle=True or False) "
        "and cannot resume %s exactly inside an epoch; build the loader "
        "with shuffle=True (or False) and no sampler= (a DistributedSampler "
        "the framework puts in is kept)"
        % (type(sampler).__name__, type(sampler).__name__))


def check_dataset(dataset):
    """InvalidError for a dataset whose samples have no index to key."""
    if isinstance(dataset, torch.utils.data.IterableDataset):
        raise rngsnap.InvalidError(
            "rngsnap: the training DataLoader reads an IterableDataset; "
            "its samples have no index to key, so a resume inside an epoch "
            "cannot be exact; use a map-style dataset (__getitem__, "
            "__len__)")


def check_loader(loader):
    """InvalidError saying why the loader cannot be keyed exactly, if so."""
    if not isinstance(loader, torch.utils.data.DataLoader):
        raise rngsnap.InvalidError(
            "rngsnap: the training data is a %s, not a torch DataLoader; "
            "the integration resumes a DataLoader over a map-style dataset "
            "exactly, return one from train_dataloader()"
            % type(loader).__name__)
    check_dataset(loader.dataset)
    if loader.batch_size is None:  # batch_sampler= of the user's
        raise rngsnap.InvalidError(
            "rngsnap: the training DataLoader has a batch_sampler of its own"
            " (%s); the integration keys the batches itself and cannot "
            "resume it exactly; use batch_size= and shuffle= instead"
            % type(loader.batch_sampler).__name__)
    _shuffles(loader)


def keyed_loader(loader, stream, position):
    """The keyed, resumable form of the user's training DataLoader, or
    InvalidError saying why it cannot be made exact."""
    check_loader(loader)
    position.shape = (len(loader.dataset), loader.batch_size)
    if isinstance(loader.sampler, torch.utils.data.DistributedSampler):
        position.seed = loader.sampler.seed
    position.check()
    return KeyedLoader(loader, stream, position)
