"""Layer torch: keyed seeding, the keys of a stream and what they seed
(docs/python.md, "Workers and keyed streams").

A keyed stream stream.derive(k0, k1) is a pure function of the stream's
seeding and the key, so what it seeds does not depend on prefetching,
timing or how far the stream itself has drawn.  The keys in use: (epoch,
sample index) for a sample (SampleKey, ResumableSampler), (epoch,
ORDER_KEY) for an epoch's order, (epoch, LOADER_KEY) for the seed of the
loader's generator, (epoch, WORKER_KEY_BASE + worker id) for a DataLoader
worker (worker_init_fn).  seed_words() seeds torch, NumPy and random from
10 words of one, with no re-seed refused (reseed.py: rngsnap's own keyed
seeding gives the same numbers in an uninterrupted run).
"""
import collections
import random

import numpy as np
import torch

from .._context import reseed

# worker_init_fn keys (epoch, WORKER_KEY_BASE + worker id): apart from the
# (epoch, sample index) keys a dataset draws from the same stream.
WORKER_KEY_BASE = 1 << 63

# Keys of the sampler's stream besides (epoch, index): the epoch's order
# and the seed of the loader's generator.  Apart from sample indices and
# from worker_init_fn's (epoch, 2**63 + worker id).
ORDER_KEY = (1 << 64) - 1
LOADER_KEY = (1 << 64) - 2

SampleKey = collections.namedtuple("SampleKey", "epoch index words")
SampleKey.__doc__ = ("What a ResumableSampler yields per sample: epoch, "
                     "dataset index, and words (40 bytes: the first 10 u32 "
                     "of stream.derive(epoch, index)) to seed from.")


def seed_words(words, manual_seed):
    """Seed torch (through manual_seed(seed)), NumPy's global generator and
    Python's random from 10 u32 words; returns the 64-bit torch seed."""
    w = [int(x) for x in words]
    torch_seed = w[0] | (w[1] << 32)
    with reseed.keyed():  # keyed seeding is no re-seed (reseed.py)
        manual_seed(torch_seed)
        np.random.seed(np.array(w[2:6], dtype=np.uint32))
        random.seed(w[6] | (w[7] << 32) | (w[8] << 64) | (w[9] << 96))
    return torch_seed


def seed_from(keyed):
    """Seed torch's default generator, NumPy's global generator and
    Python's random from the next draws of keyed (a stream or a keyed
    stream from Stream.derive).  Returns the 64-bit torch seed.  Allowed
    after the load of a resumed context: a pure function of the restored
    streams, as in the uninterrupted run."""
    words = keyed.generate("u32", 10)
    reseed.note_keyed(["torch.cpu", "numpy.global", "python.random"])
    return seed_words(words, torch.manual_seed)


class _WorkerInit:
    """worker_init_fn for DataLoader: in worker w of epoch e, seeds torch,
    NumPy and random from stream.derive(e, WORKER_KEY_BASE + w).  A pure
    function of the stream's seeding, the epoch and the worker id: not of
    prefetching, timing or how far the stream itself has drawn."""

    def __init__(self, stream, epoch):
        self.stream, self.epoch = stream, int(epoch)

    def __call__(self, worker_id):
        seed_from(self.stream.derive(self.epoch, WORKER_KEY_BASE + worker_id))


def worker_init_fn(stream, epoch):
    """A DataLoader worker_init_fn for this epoch (docs/python.md,
    "Workers").  The worker derives from stream in its own process, so
    the DataLoader must fork its workers (Linux's default)."""
    return _WorkerInit(stream, epoch)
