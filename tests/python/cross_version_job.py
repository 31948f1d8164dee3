"""One job of test_cross_version.py, run by either stack's interpreter
(the venv's torch 2.x + NumPy 2.x, or the -Dpython_compat one's torch 1.13
+ NumPy 1.24) with its own rngsnap extension.

    cross_version_job.py write DIR
        seed, track torch/NumPy/random, register a generator of every
        supported kind and an app state, draw, write DIR/ck.rngsnap
        (ctx.save) and DIR/ck.pt (torch.save of ctx.state_dict()); then
        print what it has right after the checkpoint and draws on.
    cross_version_job.py resume DIR file|state_dict|none [warn|strict]
        seed differently, set the same things up in a resumed context,
        load DIR/ck.rngsnap (ctx.load) or DIR/ck.pt (plain torch.load,
        ctx.load_state_dict; "none": no load) and print the same.

The last line of stdout is one JSON object: versions, "state" (every
generator's raw state and the app state, as the library gives them),
"draws" (what each generator draws next), "warnings" and "error" (a
refused load: its class, text, and whether any state changed).
"""
import json
import random
import sys
import warnings

import numpy as np
import torch

import rngsnap
import rngsnap.torch

mode, folder = sys.argv[1], sys.argv[2]
via = sys.argv[3] if mode == "resume" else None
fingerprint = sys.argv[4] if len(sys.argv) > 4 else "warn"
FILE, DICT = folder + "/ck.rngsnap", folder + "/ck.pt"
STREAMS = ("default", "dropout", "augment")
BIT_GENERATORS = ("PCG64", "PCG64DXSM", "MT19937", "Philox", "SFC64")


def plain(v):
    """A state as JSON, exactly: arrays as lists, floats as hex."""
    if isinstance(v, dict):
        return {k: plain(x) for k, x in v.items()}
    if isinstance(v, (list, tuple, np.ndarray)):
        return [plain(x) for x in v]
    if isinstance(v, (float, np.floating)):
        return float(v).hex()
    if isinstance(v, (bool, np.bool_)):
        return bool(v)
    if isinstance(v, (int, np.integer)):
        return int(v)
    return v  # str, None


def hexof(t):
    return t.contiguous().numpy().tobytes().hex()


# Writer and resumer seed differently: a load that restored nothing leaves
# every state and draw different from the writer's.
seed = 2024 if mode == "write" else 77
torch.manual_seed(seed)
np.random.seed(seed)
random.seed(seed)
ctx = rngsnap.Context(resume=(mode == "resume"))
if mode == "write":
    ctx.seed_all(seed)
rngsnap.torch.track(ctx, fingerprint=fingerprint)

own = {"torch": torch.Generator().manual_seed(seed + 1),
       "RandomState": np.random.RandomState(seed + 2),
       "random.Random": random.Random(seed + 3)}
for i, bg in enumerate(BIT_GENERATORS):
    b = getattr(np.random, bg)(seed + 10 + i)
    # Generators over the first three, bare bit generators for the rest
    own[bg] = np.random.Generator(b) if i < 3 else b
for name, g in own.items():
    ctx.register_generator("own." + name, g)
app = {"step": b"(none)"}
ctx.register_state("app", save=lambda: app["step"],
                   load=lambda b: app.__setitem__("step", bytes(b)))


def bit_generator(g):
    return g.bit_generator if isinstance(g, np.random.Generator) else g


def states():
    """Every generator's state as its library gives it."""
    out = {"torch.cpu": hexof(torch.get_rng_state()),
           "numpy.global": plain(np.random.get_state()),
           "python.random": plain(random.getstate()),
           "app": app["step"].hex()}
    for name, g in own.items():
        if name == "torch":
            s = hexof(g.get_state())
        elif name == "RandomState":
            s = plain(g.get_state(legacy=False))
        elif name == "random.Random":
            s = plain(g.getstate())
        else:
            s = plain(bit_generator(g).state)
        out["own." + name] = s
    return out


def draws():
    """Draws whose algorithm torch 1.13 and 2.13, NumPy 1.24 and 2.4 share
    (docs/python.md, "Supported versions"): the streams' words; torch's
    rand, randn (float32; float64 from 16 values: below, torch 2.x's
    Box-Muller differs from 1.13's by an ulp now and then), randint,
    randperm, dropout; NumPy's raw bit-generator output and the legacy
    (frozen) RandomState and np.random.* draws; random's."""
    out = {}
    for s in STREAMS:
        st = ctx.stream("cpu", 0, s)
        out["stream." + s] = [st.generate("u64", 8).tolist(),
                              hexof(torch.from_numpy(
                                  st.generate("normal_f64", 3)))]
    out["stream.keyed"] = ctx.stream("cpu", 0, "dropout").derive(
        3, 5).generate("u32", 4).tolist()
    out["torch.cpu"] = [hexof(torch.rand(5)), hexof(torch.randn(17)),
                        hexof(torch.randn(5)),
                        hexof(torch.randn(16, dtype=torch.float64)),
                        hexof(torch.randint(0, 2 ** 40, (6,))),
                        hexof(torch.randperm(20)),
                        hexof(torch.nn.functional.dropout(torch.ones(64),
                                                          0.5))]
    g = own["torch"]
    out["own.torch"] = [hexof(torch.rand(5, generator=g)),
                        hexof(torch.randn(3, generator=g)),
                        hexof(torch.randperm(10, generator=g))]
    out["numpy.global"] = [plain(np.random.random_sample(3)),
                           plain(np.random.standard_normal(3)),
                           plain(np.random.randint(0, 10 ** 9, 3))]
    rs = own["RandomState"]
    out["own.RandomState"] = [plain(rs.random_sample(2)),
                              plain(rs.standard_normal(3)),
                              plain(rs.randint(0, 10 ** 9, 2))]
    for bg in BIT_GENERATORS:
        out["own." + bg] = plain(bit_generator(own[bg]).random_raw(4))
    out["python.random"] = [random.random().hex(), random.getrandbits(64),
                            random.gauss(0, 1).hex()]
    r = own["random.Random"]
    out["own.random.Random"] = [r.random().hex(), r.gauss(0, 1).hex()]
    return out


result = {"torch": torch.__version__, "numpy": np.__version__,
          "warnings": [], "error": None}
if mode == "write":
    app["step"] = b"step 3"
    for s in STREAMS:
        ctx.stream("cpu", 0, s).generate("u32", 1001)
    # Leave every cache a state holds half used: torch's and NumPy's
    # cached Gaussians, random's gauss_next, a 64-bit word of which a
    # 32-bit draw took half, Philox's buffer partly read.
    torch.randn(7)
    torch.randn(5, generator=own["torch"])
    np.random.randn(3)
    own["RandomState"].standard_normal(3)
    random.gauss(0, 1)
    own["random.Random"].gauss(0, 1)
    for bg in BIT_GENERATORS:
        b = bit_generator(own[bg])
        b.random_raw(5)
        np.random.Generator(b).integers(0, 2 ** 32, 1, dtype=np.uint32)
    ctx.save(FILE)
    torch.save({"rng": ctx.state_dict(), "step": 3,
                "weight": torch.arange(4.0)}, DICT)
    result["state"] = states()
    result["draws"] = draws()
else:
    before = states()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            if via == "file":
                ctx.load(FILE)
            elif via == "state_dict":
                ck = torch.load(DICT)  # as users call it: no weights_only=
                assert ck["step"] == 3 and ck["weight"].tolist() == [
                    0.0, 1.0, 2.0, 3.0], ck
                ctx.load_state_dict(ck["rng"])
        except rngsnap.Error as e:
            result["error"] = {"class": type(e).__name__, "text": str(e),
                               "changed": sorted(
                                   k for k, v in states().items()
                                   if v != before[k])}
    result["warnings"] = ["%s: %s" % (w.category.__name__, w.message)
                          for w in caught]
    if result["error"] is None:
        result["state"] = states()
        # a resumed context draws from no stream before its load
        result["draws"] = draws() if via != "none" else None
print(json.dumps(result))
