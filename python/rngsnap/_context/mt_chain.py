"""Layer context: how far a torch CPU generator is from a fresh seeding,
for the save's re-seed check (reseed.py).

torch's CPU generator is an MT19937: manual_seed(s) fills its 624-word
array by init_genrand(s) and every 624 draws twist the array once.  Its
state (get_state()) holds the seed, the array and the index of the next
word in it.  So the arrays a generator seeded with s goes through are one
chain, c0 (the seeding), c1 = twist(c0), c2, ...; a generator that only
drew since the load is at or past the array the load left it at, and
one that is *behind* it on its own seed's chain went back: it was
re-seeded with the same seed (`g.manual_seed(42)` on the loader's
generator, which torch's C type lets no wrapper see) and then drew.

chain(seed) computes the first LIMIT arrays of a seed's chain once (a
few milliseconds, numpy-vectorized) and keeps a 32-byte prefix of each:
a look-up is then a dict access.  A state more than LIMIT twists (about
160 000 words) past its seeding is not on the computed chain, so a
re-seed followed by that many draws before the save is not seen.
"""

import struct

LIMIT = 256                  # twists kept per seed
_N, _M = 624, 397
_HEAD = struct.Struct("<QiiQ")  # seed, left, seeded, next (THGeneratorState)
_STATE_BYTES = 5056          # torch's CPU generator state (CPUGeneratorImplState)
_cache = {}                  # seed -> {array prefix: twists}, a few seeds


def _twist(mt):
    """MT19937's next array (genrand's refill), numpy-vectorized in the
    three runs whose inputs are all known."""
    import numpy as np
    upper, lower = np.uint32(0x80000000), np.uint32(0x7fffffff)
    matrix = np.uint32(0x9908b0df)
    new = np.empty_like(mt)

    def mix(hi, lo, far):
        y = (hi & upper) | (lo & lower)
        return far ^ (y >> np.uint32(1)) ^ ((y & np.uint32(1)) * matrix)
    new[0:227] = mix(mt[0:227], mt[1:228], mt[397:624])
    new[227:454] = mix(mt[227:454], mt[228:455], new[0:227])
    new[454:623] = mix(mt[454:623], mt[455:624], new[227:396])
    new[623:624] = mix(mt[623:624], new[0:1], new[396:397])
    return new


def _init(seed):
    import numpy as np
    key = [seed & 0xffffffff]
    for i in range(1, _N):
        prev = key[-1]
        key.append((1812433253 * (prev ^ (prev >> 30)) + i) & 0xffffffff)
    return np.array(key, dtype=np.uint32)


def _key(arr):
    return arr[:8].tobytes()


def chain(seed):
    """{prefix of c_k: k} for k in 0..LIMIT of seed's chain."""
    got = _cache.get(seed)
    if got is None:
        if len(_cache) >= 8:
            _cache.pop(next(iter(_cache)))
        arr, got = _init(seed), {}
        for k in range(LIMIT + 1):
            got.setdefault(_key(arr), k)
            arr = _twist(arr)
        _cache[seed] = got
    return got


def parse(state):
    """(seed, array, next) of a CPU torch.Generator's state bytes, or None
    for another layout."""
    if len(state) != _STATE_BYTES:
        return None
    import numpy as np
    seed, left, seeded, nxt = _HEAD.unpack_from(state, 0)
    arr = np.frombuffer(state, dtype="<u8", count=_N,
                        offset=_HEAD.size).astype(np.uint32)
    return seed, arr, nxt


def words_since_seeding(state):
    """Words drawn since the generator was seeded, when its state lies
    within LIMIT twists of its seed's seeding; else None."""
    parsed = parse(state)
    if parsed is None:
        return None
    seed, arr, nxt = parsed
    k = chain(seed).get(_key(arr))
    if k is None:
        return None
    return 0 if k == 0 else (k - 1) * _N + nxt


def went_back(at_load, now):
    """(words since seeding now, at the load or None: farther) when
    torch CPU state now is behind at_load on their common seed's chain;
    else None."""
    a, b = parse(at_load), parse(now)
    if a is None or b is None or a[0] != b[0]:
        return None
    before, after = words_since_seeding(at_load), words_since_seeding(now)
    if after is None:
        return None
    if before is None or after < before:
        return after, before
    return None
