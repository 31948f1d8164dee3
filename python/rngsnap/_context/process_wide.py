"""Layer context: the process-wide generators of torch, NumPy and random,
for the untracked report (issue 22, item 2): they count as held only when an
open context's rngsnap.torch.track() holds them; otherwise a scan (a
save's) reports each one that drew between the previous scan of the
process and this one, and since it was last seeded: draws between two
checkpoints are what a resume without them gets wrong.  Draws before the
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
    torch = sys.modules.get("torch")
    if torch is None:
        return []
    out = [getattr(torch, "default_generator", None)]
    for acc in ("cuda", "xpu", "mps", "npu", "hpu"):
        mod = sys.modules.get("torch." + acc)
        out += list(getattr(mod, "default_generators", ()) or ())
    return [g for g in out if g is not None]


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


def generators():
    """[(object, drew since seeded?, inner objects)] of every process-wide
    generator of the modules imported so far."""
    out = [(g, _torch_drawn, ()) for g in _torch_gens()]
    mt = sys.modules.get("numpy.random.mtrand")
    rand = getattr(mt, "_rand", None)
    if rand is not None:
        out.append((rand, _numpy_drawn,
                    (getattr(rand, "_bit_generator", None),)))
    rnd = sys.modules.get("random")
    inst = getattr(rnd, "_inst", None)
    if inst is not None:
        out.append((inst, _random_drawn, ()))
    return out


def _state(obj):
    get = getattr(obj, "get_state", None) or obj.getstate
    st = get()
    if hasattr(st, "numpy"):  # a torch.Generator's ByteTensor
        return st.numpy().tobytes()
    return repr(st)  # NumPy's and random's tuples, arrays included


_last = {}  # id -> state at the previous scan of the process


def undrawn_ids(held):
    """Ids the report skips: every process-wide generator when held (an
    open context tracks them), else those that did not change since the
    previous scan or drew nothing since seeded; with each one's inner bit
    generator.  Records every state for the next scan."""
    ids = set()
    for obj, drawn, inner in generators():
        now = _state(obj)
        before = _last.get(id(obj))
        _last[id(obj)] = now
        if held or before is None or before == now or not drawn(obj):
            ids |= {id(obj)} | {id(o) for o in inner if o is not None}
    return ids


def ids():
    return {id(o) for o, _, _ in generators()}
