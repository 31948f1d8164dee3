"""Layer torch: KeyedDataset, the user's dataset indexed by the
SampleKeys of a ResumableSampler (docs/python.md, "Mid-epoch resume with a
standard DataLoader"): each sample is drawn from generators seeded from
its key, so it is a pure function of (the stream's seeding, epoch, index)
in any worker and with any worker count.
"""
import random
import struct

import numpy as np
import torch

from ._keyed import SampleKey, seed_words


class KeyedDataset(torch.utils.data.Dataset):
    """The user's dataset, indexed by the SampleKeys of a ResumableSampler:
    seeds torch's CPU generator, NumPy's global generator and random from
    the key's words, then returns dataset[key.index].  In the main process
    (num_workers=0) it puts the three generators back afterwards, so the
    training loop draws the same numbers whatever the worker count."""

    def __init__(self, dataset):
        self.dataset = dataset

    def __len__(self):
        return len(self.dataset)

    def __getattr__(self, name):  # the dataset's own attributes, not dunders
        if name.startswith("_") or name == "dataset":
            raise AttributeError(name)
        return getattr(self.dataset, name)

    def __getitem__(self, key):
        if not isinstance(key, SampleKey):
            raise TypeError(
                "KeyedDataset takes the SampleKeys a ResumableSampler yields, "
                "not %s; build the loader as DataLoader(KeyedDataset(data), "
                "batch_sampler=sampler, ...)" % type(key).__name__)
        words = struct.unpack("<10I", key.words)
        if torch.utils.data.get_worker_info() is not None:
            seed_words(words, torch.default_generator.manual_seed)
            return self.dataset[key.index]
        saved = (torch.get_rng_state(), np.random.get_state(),
                 random.getstate())
        try:
            seed_words(words, torch.default_generator.manual_seed)
            return self.dataset[key.index]
        finally:
            torch.set_rng_state(saved[0])
            np.random.set_state(saved[1])
            random.setstate(saved[2])
