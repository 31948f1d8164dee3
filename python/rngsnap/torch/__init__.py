"""rngsnap for PyTorch jobs (docs/python.md).  Layer torch, over rngsnap's
core and context layers; rngsnap.integrations builds on it.

track(ctx) puts every generator a PyTorch job draws from into the same
checkpoint as ctx's streams, as app states (one list, walked for save and
load alike):

    rngsnap.fingerprint   what else changes results (versions, flags, env)
    torch.cpu             torch's default CPU generator
    torch.<acc>:<i>       the generator of device i of every accelerator
                          torch exposes here: cuda, xpu, mps, npu
                          (torch_npu), hpu (habana_frameworks)
    numpy.global          NumPy's legacy global generator (np.random.*)
    python.random         Python's random module

A checkpoint with a device generator this process lacks (or lacking one it
has) fails the load with MismatchError, as for streams: the names carry the
device index and the core matches app states strictly.

worker_init_fn() and seed_from() seed torch, NumPy and random from keyed
streams (Stream.derive), for DataLoader workers and per-sample draws;
ResumableSampler and KeyedDataset resume a standard DataLoader inside an
epoch.

This file holds the public names only: track and Tracker in _tracker.py
(over _generators.py, _devices.py, _seeding.py), keyed seeding in
_keyed.py, the samplers in _sampler.py, KeyedDataset in _dataset.py.
"""
from ._dataset import KeyedDataset
from ._keyed import (LOADER_KEY, ORDER_KEY, WORKER_KEY_BASE, SampleKey,
                     seed_from, worker_init_fn)
from ._sampler import DistributedResumableSampler, ResumableSampler
from ._tracker import FINGERPRINT_STATE, Tracker, track  # noqa: F401

__all__ = ["track", "Tracker", "worker_init_fn", "seed_from",
           "WORKER_KEY_BASE", "ResumableSampler",
           "DistributedResumableSampler", "KeyedDataset", "SampleKey",
           "ORDER_KEY", "LOADER_KEY"]
