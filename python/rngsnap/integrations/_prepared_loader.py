"""accelerate's prepared DataLoaders, keyed in place (for accelerate.py).

prepare() returns a DataLoaderShard whose base_dataloader is a torch
DataLoader over the user's dataset, batched by the user's BatchSampler
(one process) or by accelerate's BatchSamplerShard around it (several).
key() swaps that base loader for a KeyedLoader (_keyed_loader.py) with the
same shape: every sample a pure function of (the stream's seeding, epoch,
index), the epoch's global batches cut for this rank by accelerate's own
BatchSamplerShard, and the epoch's order rank 0's (broadcast), as
prepare() shares one shuffle between the ranks.  The user's `loader`
stays the object prepare() returned.

The position (epoch, batches the loop took) is counted through
accelerate's own hook: DataLoaderShard fetches one batch ahead and calls
base_dataloader.state_dict() (DataLoaderAdapter._update_state_dict) right
before fetching the batch after the one it hands the loop, so that call
sees exactly the batches the loop has taken.
"""
import torch
from accelerate.data_loader import BatchSamplerShard, DataLoaderShard

import rngsnap

from ._keyed_loader import (KeyedBatchSampler, KeyedLoader, check_dataset,
                            sampler_shuffles)

WHO = "rngsnap.integrations.accelerate"


def inspect(shard, num_processes):
    """(length, batch_size, shuffle, drop_last, shard arguments or None)
    of a prepared loader; InvalidError when it cannot be keyed exactly."""
    if type(shard) is not DataLoaderShard:  # its __class__ is the base's
        raise rngsnap.InvalidError(
            "%s: a prepared loader is a %s, not the DataLoaderShard that "
            "prepare() makes of a map-style DataLoader (dispatch_batches="
            "True, an IterableDataset or XLA); its batches cannot be keyed "
            "by index, so a resume inside an epoch cannot be exact; prepare "
            "a DataLoader over a map-style dataset, without dispatch_batches"
            % (WHO, type(shard).__name__))
    if shard.use_stateful_dataloader:
        raise rngsnap.InvalidError(
            "%s: the loader was prepared with use_stateful_dataloader=True; "
            "accelerate then saves and restores its position itself, and "
            "rngsnap keys the loader's position; use the default "
            "DataLoaderConfiguration" % WHO)
    base = shard.base_dataloader
    check_dataset(base.dataset)
    extra = [t for t in (shard.rng_types or ()) if str(t) != "generator"]
    if extra and num_processes > 1:
        raise rngsnap.InvalidError(
            "%s: Accelerator(rng_types=%r) copies rank 0's generators to "
            "every rank at each iter() of the loader, so an iter() at a "
            "resume inside an epoch would copy them where the uninterrupted "
            "run did not; use the default rng_types (rngsnap keeps every "
            "rank's generators)" % (WHO, [str(t) for t in shard.rng_types]))
    batches, cut = base.batch_sampler, None
    if isinstance(batches, BatchSamplerShard):
        cut = dict(num_processes=batches.num_processes,
                   process_index=batches.process_index,
                   split_batches=batches.split_batches,
                   even_batches=batches.even_batches)
        batches = batches.batch_sampler
    if type(batches) is not torch.utils.data.BatchSampler:
        raise rngsnap.InvalidError(
            "rngsnap: the training DataLoader has a batch_sampler of its own"
            " (%s); the integration keys the batches itself and cannot "
            "resume it exactly; use batch_size= and shuffle= instead"
            % type(batches).__name__)
    shuffle = sampler_shuffles(batches.sampler)
    return len(base.dataset), batches.batch_size, shuffle, \
        batches.drop_last, cut


class _Epoch:
    """One epoch of a RankBatches' global batches, for BatchSamplerShard
    (it reads batch_size, drop_last, len() and iterates)."""

    def __init__(self, keyed, epoch):
        self.keyed, self.epoch = keyed, epoch
        self.batch_size, self.drop_last = keyed.batch_size, keyed.drop_last

    def __len__(self):
        return self.keyed.batches_per_epoch()

    def __iter__(self):
        return KeyedBatchSampler.epoch_batches(self.keyed, self.epoch)


class RankBatches(KeyedBatchSampler):
    """This rank's keyed batches, cut as prepare() cut the user's; only its
    KeyedLoader may iterate it (see __iter__)."""

    def __init__(self, stream, position, length, batch_size, shuffle,
                 drop_last, cut, key0, device):
        self.cut, self.device = cut, device
        # what DataLoaderShard.total_batch_size reads
        self.num_processes = cut["num_processes"] if cut else 1
        self.split_batches = cut["split_batches"] if cut else False
        self.owner_iterating = False  # set by PreparedLoader around it
        self.started_at = 0  # the batch the running iteration began at
        super().__init__(stream, position, length, batch_size, shuffle,
                         drop_last, key0)

    def __len__(self):
        if self.cut is None:
            return self.batches_per_epoch()
        return len(BatchSamplerShard(_Epoch(self, 0), **self.cut))

    def order(self, epoch):
        order = super().order(epoch)
        if self.shuffle and self.num_processes > 1:
            # every rank takes its cut of one order: rank 0's (on the
            # accelerator's device, as accelerate broadcasts: NCCL)
            t = torch.from_numpy(order.astype("int64")).to(self.device)
            torch.distributed.broadcast(t, src=0)
            order = t.cpu().numpy()
        return order

    def epoch_batches(self, epoch):
        if self.cut is None:
            return super().epoch_batches(epoch)
        return iter(BatchSamplerShard(_Epoch(self, epoch), **self.cut))

    def __iter__(self):
        if not self.owner_iterating:
            # accelerator.skip_first_batches(loader, n) builds a DataLoader
            # of its own around this sampler: it would skip the batches a
            # second time, and count none of them.
            raise rngsnap.InvalidError(
                "%s: the prepared loader's batches are iterated by another "
                "DataLoader (accelerator.skip_first_batches?); with attach() "
                "the prepared loader itself resumes at the checkpoint's "
                "batch, and skip_first_batches would skip batches a second "
                "time; iterate the prepared loader after load_state, without"
                " skip_first_batches (rngsnap.integrations.accelerate."
                "resume_at(loader, epoch, batch) checks where it resumes)"
                % WHO)
        return self._recorded(super().__iter__())

    def _recorded(self, batches):
        # at the first batch drawn, before the base generator reads it
        self.started_at = self._resume_at
        yield from batches


class PreparedLoader(KeyedLoader):
    """The keyed base loader of a DataLoaderShard; counts the batches it
    hands accelerate and reports them through state_dict()."""

    def __init__(self, loader, stream, position, batch_sampler):
        super().__init__(loader, stream, position, batch_sampler)
        self.position = position
        self.fetched = 0  # batches handed out since this iteration began
        self.reported = False  # accelerate called state_dict()
        self.iterated = False  # since attach (the load's order check)
        self.blocked = None  # why it may not iterate now (OrderError)

    def __iter__(self):
        if self.blocked:
            raise rngsnap.OrderError(self.blocked)
        self.iterated, self.fetched, self.reported = True, 0, False
        it = self._owned(super().__iter__)
        return self._counted(it)

    def _owned(self, call, *args):
        # the batch sampler is iterated inside these calls only (workers
        # take their indices when the iterator is made and at each next)
        self.keyed_sampler.owner_iterating = True
        try:
            return call(*args)
        finally:
            self.keyed_sampler.owner_iterating = False

    def _counted(self, it):
        while True:
            try:
                batch = self._owned(next, it)
            except StopIteration:
                return
            self.fetched += 1
            yield batch

    def state_dict(self):
        """Called by accelerate's DataLoaderShard before each fetch after
        the first: the position the loop has reached once it takes the
        batch the shard holds."""
        self.reported = True
        self.position.taken = self.keyed_sampler.started_at + self.fetched
        return {"epoch": self.position.epoch, "taken": self.position.taken}

    def check_counted(self):
        """InvalidError when batches were handed out but accelerate never
        reported one taken (an accelerate whose DataLoaderShard no longer
        calls state_dict()): the position would be wrong."""
        if self.fetched and not self.reported:
            raise rngsnap.InvalidError(
                "%s: this accelerate's DataLoaderShard did not report the "
                "batches the loop took (DataLoaderAdapter._update_state_dict"
                "), so the loader's position is unknown; nothing saved; use "
                "accelerate 1.15 or tell rngsnap's maintainers" % WHO)


def key(shard, ctx, stream, position, index, accelerator):
    """Key prepared loader number index in place; returns its
    PreparedLoader.  InvalidError (nothing changed) when it cannot be."""
    length, batch_size, shuffle, drop_last, cut = inspect(
        shard, accelerator.num_processes)
    base = shard.base_dataloader
    sampler = RankBatches(stream, position, length, batch_size, shuffle,
                          drop_last, cut, index << 32, accelerator.device)
    keyed = PreparedLoader(base, stream, position, sampler)
    position.shape = (length, batch_size)
    shard.base_dataloader = keyed
    # Reseeded from the stream at each epoch: in no checkpoint.  The
    # generators of the loader it replaced drive nothing now (accelerate
    # still synchronises the sampler's between the ranks).
    old = getattr(base.batch_sampler, "batch_sampler", base.batch_sampler)
    for g in (keyed.generator, base.generator, shard.synchronized_generator,
              getattr(old.sampler, "generator", None)):
        if isinstance(g, torch.Generator):
            ctx.ignore_generator(g)
    return keyed
