"""Layer torch: ResumableSampler and DistributedResumableSampler, mid-epoch
resume with a standard DataLoader (docs/python.md, "Mid-epoch resume with
a standard DataLoader").

ResumableSampler is a batch sampler.  Each epoch's order is keyed by the
epoch (stream.derive(epoch, ORDER_KEY)); each sample is a SampleKey(epoch,
index, words), words being the first 10 u32 of stream.derive(epoch, index),
drawn here, in the main process.  KeyedDataset, the user's dataset wrapped,
seeds torch's CPU generator, NumPy's and random from the words and returns
dataset[index].  A sample is then a pure function of (the stream's seeding,
epoch, index), and only integers and bytes cross into a worker: any worker
count, persistent workers and every start method give the same batches.

The position (epoch, batches taken) is the sampler's own app state.  It
counts the batches the loop took from sampler.batches(loader), not those
the loader fetched ahead of it.
"""

import operator
import struct
import weakref

import numpy as np
import torch

from ._keyed import LOADER_KEY, ORDER_KEY, SampleKey
from .._context.comm import TorchComm
from .._core import encoding as _enc
from .._core.errors import CorruptError, MismatchError, OrderError, error

# ---- the saved position ------------------------------------------------
# "RSSM" v1: header, then u64 dataset length, u64 batch size, u64 epochs,
# u8 shuffle, u8 drop_last, 2 zero bytes, u32 rank, u32 world size, u64
# epoch, u64 batches taken in it.  60 bytes.
SAMPLER_MAGIC = b"RSSM"
_BODY = struct.Struct("<QQQBB2sIIQQ")
_FIELDS = (("length", "dataset length"), ("batch_size", "batch size"),
           ("num_epochs", "epochs"), ("shuffle", "shuffle"),
           ("drop_last", "drop_last"), ("rank", "rank"),
           ("world_size", "world size"))


def _batches(length, batch_size, drop_last, world_size):
    """Batches per epoch of one rank: its shard (the dataset padded to a
    multiple of world_size, as DistributedSampler does) cut in batches."""
    shard = -(-length // world_size)
    return shard // batch_size if drop_last else -(-shard // batch_size)


class ResumableSampler(torch.utils.data.Sampler):
    """A batch sampler replacing shuffle=True, resumable at any batch:

        sampler = ResumableSampler(ctx, stream, len(data), batch_size, epochs)
        loader = DataLoader(KeyedDataset(data), batch_sampler=sampler, ...)
        for epoch in sampler.epochs():
            for batch in sampler.batches(loader):
                ...

    Registers its position (epoch, batches taken) with ctx as the app state
    `name`; a checkpoint of another dataset length, batch size, epoch
    count, shuffle, drop_last or world size is refused (MismatchError)."""

    def __init__(self, ctx, stream, length, batch_size, epochs, *,
                 shuffle=True, drop_last=False, name="rngsnap.sampler"):
        self._init(ctx, stream, length, batch_size, epochs, shuffle,
                   drop_last, name, 0, 1)

    def _init(self, ctx, stream, length, batch_size, epochs, shuffle,
              drop_last, name, rank, world_size):
        args = {"length": length, "batch_size": batch_size, "epochs": epochs,
                "rank": rank, "world_size": world_size}
        for what, v in args.items():
            low = 0 if what == "rank" else 1
            if isinstance(v, bool) or not hasattr(v, "__index__") \
                    or operator.index(v) < low:
                raise ValueError("%s must be an int >= %d, not %r"
                                 % (what, low, v))
        length, batch_size, epochs, rank, world_size = (
            operator.index(args[k]) for k in args)
        if rank >= world_size:
            raise ValueError("rank %d is not below world_size %d"
                             % (rank, world_size))
        loaded_by = getattr(ctx, "_loaded_by", None)
        if loaded_by:
            # Its position is an app state: a load before it restored none,
            # and the sampler would start the job over at epoch 0.
            raise error(OrderError, (
                "%s: %s built after %s; it registers its position with "
                "the context when it is built, so that load restored none "
                "and the resumed job would start again at epoch 0, batch "
                "0. Build the sampler before the load") % (
                    name, type(self).__name__, loaded_by))
        self.stream, self.name = stream, name
        self.length, self.batch_size, self.num_epochs = (length, batch_size,
                                                         epochs)
        self.shuffle, self.drop_last = bool(shuffle), bool(drop_last)
        self.rank, self.world_size = rank, world_size
        self.batches_per_epoch = _batches(length, batch_size, drop_last,
                                          world_size)
        self._epoch = self._taken = 0
        self._in_batches = False  # iter() comes from batches(): see __iter__
        self._generator = None    # the loader's generator, when we gave it
        self._ctx = weakref.ref(ctx)  # ctx holds our callables: no cycle
        self._order_of = (None, None)  # (epoch, this rank's indices)
        ctx.register_state(name, save=self._save, load=self._load)

    # -- position -------------------------------------------------------
    @property
    def position(self):
        """(epoch, batches of it the loop took)."""
        return self._epoch, self._taken

    def __len__(self):
        """Batches of the current epoch the loop has not taken yet."""
        return self.batches_per_epoch - self._taken

    def epochs(self):
        """The epochs from the position to the last, in order; iterate
        sampler.batches(loader) to its end in each."""
        while self._epoch < self.num_epochs:
            at = self.position
            yield self._epoch
            if self.position == at:
                raise RuntimeError(
                    "%s: epoch %d ended with no batch taken; iterate "
                    "sampler.batches(loader) inside sampler.epochs()"
                    % (self.name, at[0]))

    def batches(self, loader):
        """loader's batches from the position on; counts each one the loop
        takes, and moves to the next epoch when the loader is exhausted."""
        if loader.batch_sampler is not self:
            raise ValueError(
                "%s: this loader does not draw from this sampler; build it "
                "as DataLoader(KeyedDataset(data), batch_sampler=sampler, ...)"
                % self.name)
        if not getattr(loader, "in_order", True):
            raise ValueError("%s: the loader has in_order=False; the batches "
                             "taken must be the first ones" % self.name)
        # The DataLoader that iterates: accelerate's prepare() wraps it
        # (DataLoaderShard.base_dataloader), and a generator set on the
        # wrapper would not be the one iter() draws its base seed from.
        base = getattr(loader, "base_dataloader", loader)
        if base.generator is None:
            # Else iter(loader) draws its workers' base seed from torch's
            # default generator, which the checkpoint holds.
            self._generator = base.generator = torch.Generator()
            # Seeded from the stream at each epoch, so in no checkpoint:
            # not one for the untracked-generator report.
            ignore = getattr(self._ctx(), "ignore_generator", None)
            if ignore is not None:
                ignore(self._generator)
        if self._epoch >= self.num_epochs:  # the job is done
            return
        if len(self):
            if base.generator is self._generator:
                seed = self.stream.derive(self._epoch, LOADER_KEY).generate(
                    "u64", 1)
                self._generator.manual_seed(int(seed[0]))
            # Ours is iterated at iter(loader) by a DataLoader, at the
            # first next() by a wrapper whose __iter__ is a generator
            # (accelerate's DataLoaderShard): allowed in both, and only
            # there, not in the loop's body.
            it = self._inside(iter, loader)
            while True:
                try:
                    batch = self._inside(next, it)
                except StopIteration:
                    break
                self._taken += 1
                yield batch
        self._epoch, self._taken = self._epoch + 1, 0

    def _inside(self, call, arg):
        self._in_batches = True
        try:
            return call(arg)
        finally:
            self._in_batches = False

    # -- what the DataLoader iterates ----------------------------------
    def __iter__(self):
        if not self._in_batches:
            raise RuntimeError(
                "%s: iterated outside sampler.batches(loader); its position "
                "counts the batches the loop takes, so iterate "
                "`for batch in sampler.batches(loader)`" % self.name)
        epoch, start = self.position
        order = self._order(epoch)
        return self._keys(epoch, order, start)

    def _shuffled(self, epoch):
        """The epoch's order of the whole dataset."""
        if not self.shuffle:
            return np.arange(self.length)
        keys = self.stream.derive(epoch, ORDER_KEY).generate("u64",
                                                             self.length)
        return np.argsort(keys, kind="stable")

    def _order(self, epoch):
        """This rank's indices of the epoch, in order."""
        if self._order_of[0] != epoch:
            order = self._shuffled(epoch)
            total = -(-self.length // self.world_size) * self.world_size
            pad = total - self.length
            if pad:  # DistributedSampler's padding: the order, repeated
                order = np.concatenate(
                    [order, np.resize(order, pad)])
            self._order_of = (epoch, order[self.rank:total:self.world_size])
        return self._order_of[1]

    def _keys(self, epoch, order, start):
        words = np.empty(10, dtype=np.uint32)
        for b in range(start, self.batches_per_epoch):
            batch = []
            for i in order[b * self.batch_size:(b + 1) * self.batch_size]:
                i = int(i)
                self.stream.derive(epoch, i).generate("u32", out=words)
                batch.append(SampleKey(epoch, i, words.tobytes()))
            yield batch

    # -- app state -----------------------------------------------------
    def _config(self):
        return [int(getattr(self, f)) for f, _ in _FIELDS]

    def _save(self):
        length, bs, epochs, shuffle, drop, rank, world = self._config()
        return _enc.head(SAMPLER_MAGIC) + _BODY.pack(
            length, bs, epochs, shuffle, drop, b"\0\0", rank, world,
            self._epoch, self._taken)

    def _load(self, data):
        data = _enc.check_head(self.name, data, SAMPLER_MAGIC, (1,))
        want = _enc.HEAD_SIZE + _BODY.size
        if len(data) != want:
            raise error(CorruptError, "%s: state is %d bytes, version 1 "
                        "is %d" % (self.name, len(data), want))
        v = _BODY.unpack_from(data, _enc.HEAD_SIZE)
        saved = list(v[:5]) + list(v[6:8])
        epoch, taken = v[8], v[9]
        length, bs, epochs, shuffle, drop, rank, world = saved
        if (0 in (length, bs, epochs, world) or shuffle > 1 or drop > 1
                or v[5] != b"\0\0" or rank >= world):
            raise error(CorruptError, "%s: malformed sampler state "
                        "(dataset length %d, batch size %d, epochs %d, "
                        "shuffle %d, drop_last %d, rank %d of %d)" % (
                                 self.name, length, bs, epochs, shuffle,
                                 drop, rank, world))
        per_epoch = _batches(length, bs, drop, world)
        if epoch > epochs or taken > per_epoch or (epoch == epochs and taken):
            raise error(CorruptError, "%s: position epoch %d batch %d "
                        "is out of range (%d epochs of %d batches)" % (
                                 self.name, epoch, taken, epochs, per_epoch))
        diffs = ["  %s: checkpoint %s, this job %s" % (
            (label, a, b) if label not in ("shuffle", "drop_last")
            else (label, bool(a), bool(b)))
            for (_, label), a, b in zip(_FIELDS, saved, self._config())
            if a != b]
        if diffs:
            raise error(MismatchError, "\n".join(
                ["%s: this sampler differs from the checkpoint's, so the "
                 "resumed job would see other batches; nothing restored:"
                 % self.name] + diffs))
        self._epoch, self._taken = epoch, taken


class DistributedResumableSampler(ResumableSampler):
    """ResumableSampler for DistributedSampler's job: every rank takes its
    shard of one order (padded to a multiple of world_size by repeating its
    start, then every world_size-th index from rank), in batches.  Ranks
    are seeded apart (seed_all: subsequence = rank), so the epoch's order
    is rank 0's of group, broadcast over torch.distributed at the start of
    the epoch.  rank and world_size default to ctx's; each rank saves its
    own position (ctx.save_ranks)."""

    def __init__(self, ctx, stream, length, batch_size, epochs, *,
                 rank=None, world_size=None, group=None, shuffle=True,
                 drop_last=False, name="rngsnap.sampler"):
        self.group = group
        self._init(ctx, stream, length, batch_size, epochs, shuffle,
                   drop_last, name, ctx.rank if rank is None else rank,
                   ctx.world_size if world_size is None else world_size)

    def _shuffled(self, epoch):
        if not self.shuffle or self.world_size == 1:
            return super()._shuffled(epoch)
        try:
            comm = TorchComm(self.group)
        except RuntimeError as e:
            raise RuntimeError("%s: %s (every rank takes its shard of rank "
                               "0's order)" % (self.name, e)) from None
        size = 8 * self.length
        mine = (super()._shuffled(epoch).astype("<i8").tobytes()
                if comm.rank == 0 else bytes(size))
        return np.frombuffer(comm.broadcast(mine, 0), dtype="<i8")
