"""Layer context: the process-wide generators of torch, NumPy and random,
for the untracked report (issue 22, item 2; issue 31, item 1): they count
as held only when an open context's rngsnap.torch.track() holds them;
otherwise every save reports each one that drew between the previous save
(or scan) of the process and this one, and since it was last seeded:
draws between two checkpoints are what a resume without them gets wrong.
These are a few known objects, so a save compares their states at once
(drawn_since_last: microseconds), apart from the rate-limited scan of
everything else (untracked.py), which compares them too.  Draws before the
first scan (building the model, which a resumed job repeats) are not
reported, nor is a re-seed alone (a set_seed helper), so a job that
draws from them only at set-up gets no warning; the cost is that a job
that saves once is never warned.

"Drew since seeded", read from the state alone (modules already imported
only; nothing is imported here):
- a torch.Generator: its state differs from a new generator's seeded
  with its initial_seed() (torch.manual_seed and torch.seed reset both);
- NumPy's global RandomState (MT19937): a cached gaussian, or a position
  other than where seeding leaves it: 624 after np.random.seed(int)
  (key[1] follows from key[0]) or an array seed (key[0] = 0x80000000),
  623 with key[0] = 0x80000000 after seeding from entropy (import);
- random's instance (MT19937): a cached gaussian, or a position other
  than 624 with key[0] = 0x80000000 (every random.seed).
Not seen: a Mersenne Twister that drew exactly a multiple of 624 words
since its seed (its key is then fresh-looking only by a 2**-32 chance
for random and an int-seeded NumPy; NumPy seeded from entropy that drew
exactly one word looks array-seeded)."""

import sys

MT_N = 624
MT_MSB = 0x80000000

FIX = ("torch's, NumPy's and random's global generators are held by "
       "rngsnap.torch.track(ctx) (call it after building the model, "
       "before the load)")


def _torch_gens():
    """[(generator, where it lives)] of torch's default generators."""
    torch = sys.modules.get("torch")
    if torch is None:
        return []
    out = [(getattr(torch, "default_generator", None),
            "torch.default_generator")]
    for acc in ("cuda", "xpu", "mps", "npu", "hpu"):
        mod = sys.modules.get("torch." + acc)
        out += [(g, "torch.%s.default_generators[%d]" % (acc, i))
                for i, g in enumerate(getattr(mod, "default_generators", ())
                                      or ())]
    return [(g, where) for g, where in out if g is not None]


def _torch_drawn(g):
    torch = sys.modules["torch"]
    try:
        fresh = torch.Generator(device=g.device)
        fresh.manual_seed(g.initial_seed())
        return not torch.equal(fresh.get_state(), g.get_state())
    except (RuntimeError, TypeError):  # cannot tell: report it
        return True


def _numpy_drawn(rs):
    _, key, pos, has_gauss = rs.get_state()[:4]
    k0, k1 = int(key[0]), int(key[1])
    int_seed = k1 == (1812433253 * (k0 ^ (k0 >> 30)) + 1) & 0xffffffff
    fresh = (pos == MT_N and (k0 == MT_MSB or int_seed)) or (
        pos == MT_N - 1 and k0 == MT_MSB)
    return bool(has_gauss) or not fresh


def _random_drawn(r):
    _, internal, gauss = r.getstate()
    return (gauss is not None or internal[-1] != MT_N
            or internal[0] != MT_MSB)


# Each one's state, cheap to read and to compare (every save reads them
# all); before: what the previous save recorded, or None.
def _torch_state(g, before):
    return g.get_state().numpy().tobytes()


_MT_STATE = MT_N * 4 + 4  # mt19937_state: uint32 key[624], int pos


def _numpy_state(rs, before):
    """(key and pos bytes, has_gauss, gauss).  get_state() takes ~50 us
    (it copies the key word by word); the key and position alone are read
    from the bit generator's C struct through its documented ctypes
    interface in ~1 us.  The legacy cached gaussian (has_gauss, gauss)
    lives outside that struct, but it only appears by drawing words: when
    the key and position are unchanged and the previous save saw no cached
    gaussian, the state is unchanged."""
    bg = getattr(rs, "_bit_generator", None)
    raw = None
    if type(bg).__name__ == "MT19937":
        import ctypes
        raw = ctypes.string_at(bg.ctypes.state_address, _MT_STATE)
        if before is not None and before[0] == raw and not before[1]:
            return before
    st = rs.get_state(legacy=False)
    if raw is None:
        raw = st["state"]["key"].tobytes() + repr(st["state"]["pos"]).encode()
    return raw, st["has_gauss"], st["gauss"]


def _random_state(r, before):
    return r.getstate()


class Global:
    """One process-wide generator: .obj, .where (its place in the report),
    .drawn(obj) (drew since seeded?), .state(obj, before) (its state, to
    compare with before, the previous one), .inner (objects it covers:
    NumPy's bit generator)."""

    def __init__(self, obj, where, drawn, state, inner=()):
        self.obj, self.where, self.drawn, self.state = obj, where, drawn, state
        self.inner = tuple(o for o in inner if o is not None)


def generators():
    """[Global] of every process-wide generator of the modules imported
    so far."""
    out = [Global(g, where, _torch_drawn, _torch_state)
           for g, where in _torch_gens()]
    mt = sys.modules.get("numpy.random.mtrand")
    rand = getattr(mt, "_rand", None)
    if rand is not None:
        out.append(Global(rand, "numpy.random (np.random.*)", _numpy_drawn,
                          _numpy_state,
                          (getattr(rand, "_bit_generator", None),)))
    rnd = sys.modules.get("random")
    inst = getattr(rnd, "_inst", None)
    if inst is not None:
        out.append(Global(inst, "random (random.*)", _random_drawn,
                          _random_state))
    return out


_last = {}  # id -> state at the previous save (or scan) of the process


def _moved(g):
    """Did g draw since the previous save or scan, and since it was
    seeded?  Records its state for the next one.  The first time only
    records: draws before the first save are the job's set-up, which a
    resumed job repeats."""
    before = _last.get(id(g.obj))
    now = g.state(g.obj, before)
    _last[id(g.obj)] = now
    return before is not None and before != now and g.drawn(g.obj)


def undrawn_ids(held):
    """Ids the scan skips: every process-wide generator when held (an
    open context tracks them), else those that did not change since the
    previous save or scan or drew nothing since seeded; with each one's
    inner bit generator.  Records every state for the next one."""
    ids = set()
    for g in generators():
        if not _moved(g) or held:
            ids |= {id(g.obj)} | {id(o) for o in g.inner}
    return ids


def drawn_since_last(skip):
    """The process-wide generators (Global), less those whose id is in
    skip (registered or ignored), that drew since the previous save or
    scan and since seeded; records every state.  What every save asks
    between two scans: a few get_state() calls."""
    return [g for g in generators() if id(g.obj) not in skip and _moved(g)]


def forget():
    """An open context holds them now (track()): what they drew is in its
    checkpoints, so the next save without one starts recording again."""
    _last.clear()


def ids():
    return {id(g.obj) for g in generators()}
