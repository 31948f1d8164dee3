"""Layer context: ctx.seed_all(seed) for the generators that
rngsnap.torch.track() puts in the checkpoint (docs/python.md, "Seeding"):
the streams and these generators are one list, so one seed sets them all.

Each generator gets its own seed from the core's keyed derivation: the
keyed stream (SEED_K0, name_key(name)) of the registry's first cpu stream,
whose seeding is derived from (seed, rank, backend, device, name); so the
seed and the rank both enter, and two names never share a seed.
"""
import hashlib

from .order import awaiting_load

# k0 of the seeding keys: far from the (epoch, index) keys jobs derive.
SEED_K0 = int.from_bytes(b"rs-seed!", "little")


def name_key(name):
    """k1: 64 bits of BLAKE2b over the app state's name (stable across
    processes, unlike hash())."""
    return int.from_bytes(hashlib.blake2b(name.encode(), digest_size=8)
                          .digest(), "little")


def keyed(ctx, name):
    streams = ctx.streams()
    s = next((s for s in streams if s.backend == "cpu"), streams[0])
    return s.derive(SEED_K0, name_key(name))


def words(ctx, name, n):
    return [int(w) for w in keyed(ctx, name).generate("u32", n)]


def u64(ctx, name):
    w = words(ctx, name, 2)
    return w[0] | (w[1] << 32)


class Seeders:
    """name -> seed(ctx) of the app states seed_all sets, in registration
    order; .seed is the last seed_all's (None after a load), so one
    added while it is set is seeded at once."""

    def __init__(self):
        self.by_name = {}
        self.seed = None  # the last seed_all's, until a load

    def add(self, ctx, name, fn):
        self.by_name[name] = fn
        if self.seed is not None and not awaiting_load(ctx):
            fn(ctx)

    def run(self, ctx, seed):
        self.seed = seed
        # Asked only when there is something to seed: a job without
        # track() never imports NumPy here.
        if self.by_name and not awaiting_load(ctx):
            for fn in list(self.by_name.values()):
                fn(ctx)
