"""Layer torch: ctx.seed_all(seed) seeds the generators
rngsnap.torch.track() holds too, each from its own keyed stream, named by
its app state (the derivation is the context layer's, seeding.py).
"""
import random

import numpy as np
import torch

from ._devices import seed_device
from .._context import seeding as _sd


def add_seeders(ctx, generators, devices):
    """Each tracked generator's seed(ctx) for ctx.seed_all, from its own
    keyed stream (its app state's name)."""
    add = getattr(ctx, "_add_seeder", None)
    if add is None:
        return
    gets = {n: g for n, _, g, _ in devices}
    seeders = {
        "torch.cpu": lambda c: torch.default_generator.manual_seed(
            _sd.u64(c, "torch.cpu")),
        "numpy.global": lambda c: np.random.seed(np.array(
            _sd.words(c, "numpy.global", 4), dtype=np.uint32)),
        "python.random": lambda c: random.seed(sum(
            w << (32 * k) for k, w in enumerate(
                _sd.words(c, "python.random", 4)))),
    }
    for g in generators:
        fn = seeders.get(g.name) or (
            lambda c, n=g.name: seed_device(n, gets[n], _sd.u64(c, n)))
        add(g.name, fn)
