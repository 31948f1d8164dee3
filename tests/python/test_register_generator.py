"""ctx.register_generator(name, gen): every supported generator round-trips
through a checkpoint (draw, save, draw more, load: the same draws again),
with its cached values; the RSGN encoding refuses every malformed field
with an exact message; another kind of generator is MismatchError; a
generator drawn before the load of a resumed context is OrderError with
nothing changed; ctx.unregister_state removes a registration.

There is no GPU here: a torch.Generator on CUDA is a stand-in object
(FakeCudaGenerator) with torch's two state forms, 816 bytes (torch <= 2.0)
and 16 bytes (>= 2.1), registered through the same adapter."""
import gc
import random
import struct
import weakref

import numpy as np
import pytest
import torch

import rngsnap
from rngsnap._context import generators as _generators
from rngsnap._core import genstate as gs


@pytest.fixture
def quiet():
    """A context whose saves do not report untracked generators (this
    test process has plenty; test_untracked.py checks the report)."""
    c = rngsnap.Context(untracked="ignore")
    c.seed_all(99)
    yield c
    c.close()


def _u32(g, n=3):
    return g.integers(0, 2**32, size=n, dtype=np.uint32).tolist()


# (id, make a generator with its caches set, draw from it, cache check)
CASES = [
    ("torch-cpu", lambda: torch.Generator().manual_seed(3),
     lambda g: torch.rand(3, generator=g).tolist()
     + torch.randn(3, generator=g).tolist(), None),
    ("Generator-PCG64", lambda: np.random.Generator(np.random.PCG64(5)),
     lambda g: _u32(g) + g.standard_normal(3).tolist(),
     lambda g: g.bit_generator.state["has_uint32"] == 1),
    ("Generator-PCG64DXSM",
     lambda: np.random.Generator(np.random.PCG64DXSM(6)),
     lambda g: _u32(g) + g.random(2).tolist(),
     lambda g: g.bit_generator.state["has_uint32"] == 1),
    ("MT19937", lambda: np.random.MT19937(7),
     lambda g: g.random_raw(5).tolist(),
     lambda g: 0 < g.state["state"]["pos"] < 624),
    ("Generator-Philox", lambda: np.random.Generator(np.random.Philox(8)),
     lambda g: _u32(g) + g.bit_generator.random_raw(1).tolist(),
     lambda g: (g.bit_generator.state["has_uint32"] == 1
                and 0 < g.bit_generator.state["buffer_pos"] < 4)),
    ("SFC64", lambda: np.random.SFC64(9),
     lambda g: _u32(np.random.Generator(g)),
     lambda g: g.state["has_uint32"] == 1),
    ("RandomState", lambda: np.random.RandomState(10),
     lambda g: g.standard_normal(3).tolist() + g.randint(0, 99, 2).tolist(),
     lambda g: g.get_state()[3] == 1),
    ("RandomState-PCG64", lambda: np.random.RandomState(np.random.PCG64(11)),
     lambda g: g.standard_normal(3).tolist() + g.randint(0, 99, 2).tolist(),
     lambda g: g.get_state(legacy=False)["has_gauss"] == 1),
    ("random.Random", lambda: random.Random(12),
     lambda g: [g.gauss(0, 1), g.random(), g.getrandbits(40)],
     lambda g: g.getstate()[2] is not None),
]


@pytest.mark.parametrize("make,draw,cached", [c[1:] for c in CASES],
                         ids=[c[0] for c in CASES])
def test_round_trip(quiet, tmp_path, make, draw, cached):
    gen = make()
    assert quiet.register_generator("g", gen) is gen
    draw(gen)  # odd counts: a cached half-word / Gaussian is in the state
    if cached is not None:
        assert cached(gen)
    quiet.save(str(tmp_path / "c"))
    first = draw(gen)
    draw(gen)
    quiet.load(str(tmp_path / "c"))
    assert draw(gen) == first


# ---- the encoding ----------------------------------------------------------

SIZES = [("Generator-PCG64", 16, 40), ("Generator-PCG64DXSM", 17, 40),
         ("MT19937", 18, 2500), ("Generator-Philox", 19, 92),
         ("SFC64", 20, 40), ("RandomState", 0x112, 2512),
         ("RandomState-PCG64", 0x110, 52), ("random.Random", 64, 2512),
         ("torch-cpu", 1, 16 + 5056)]


@pytest.mark.parametrize("case,kind,payload", SIZES,
                         ids=[s[0] for s in SIZES])
def test_layout(case, kind, payload):
    make = dict((c[0], c[1]) for c in CASES)[case]
    data = _generators.adapter_for(make()).read("g")
    assert data[:8] == b"RSGN\x01\0\0\0"
    assert struct.unpack_from("<II", data, 8) == (kind, payload)
    assert len(data) == 16 + payload


def _encoded(case):
    make = dict((c[0], c[1]) for c in CASES)[case]
    gen = make()
    return gen, _generators.adapter_for(gen)


def _with_payload(data, payload, kind=None):
    kind = struct.unpack_from("<I", data, 8)[0] if kind is None else kind
    return data[:8] + struct.pack("<II", kind, len(payload)) + payload


def _patched(data, fmt, offset, value):
    """data with the payload field at offset (fmt) set to value."""
    p = bytearray(data[16:])
    struct.pack_into(fmt, p, offset, value)
    return _with_payload(data, bytes(p))


def _refused(adapter, data, cls, message):
    with pytest.raises(cls) as e:
        adapter.write("g", data)
    assert str(e.value) == message
    assert e.value.name == {rngsnap.CorruptError: "RNGSNAP_E_CORRUPT",
                            rngsnap.MismatchError: "RNGSNAP_E_MISMATCH"}[cls]


C, M = rngsnap.CorruptError, rngsnap.MismatchError


def test_framing_refused():
    gen, a = _encoded("Generator-PCG64")
    good = a.read("g")
    for data, cls, msg in [
        ("text", C, "g: state is str, not bytes"),
        (good[:4], C, "g: state is 4 bytes, shorter than the 8-byte header"),
        (good[:12], C, "g: state is 12 bytes, truncated before its kind and "
                       "length (16)"),
        (good[:-1], C, "g: state says 40 payload bytes, holds 39"),
        (good + b"\0", C, "g: state says 40 payload bytes, holds 41"),
        (_with_payload(good, good[16:-1]), C,
         "g: numpy PCG64 state: payload is 39 bytes, version 1 is 40"),
        (b"RSGX" + good[4:], C,
         "g: state starts with b'RSGX', expected magic b'RSGN'"),
        (good[:4] + b"\x02" + good[5:], M,
         "g: state encoding version 2, this rngsnap reads version(s) 1"),
        (good[:6] + b"\x01" + good[7:], C,
         "g: reserved header bytes are not zero"),
        (_with_payload(good, good[16:], kind=99), C,
         "g: unknown generator kind 99"),
        (_encoded("Generator-Philox")[1].read("g"), M,
         "g: checkpoint holds a numpy Philox state, the live generator is a "
         "numpy PCG64; nothing restored"),
        (_encoded("RandomState-PCG64")[1].read("g"), M,
         "g: checkpoint holds a numpy RandomState(PCG64) state, the live "
         "generator is a numpy PCG64; nothing restored"),
    ]:
        _refused(a, data, cls, msg)
    # nothing was set on the way
    assert gen.bit_generator.state == np.random.PCG64(5).state


LABELS = {"torch-cpu": "torch.Generator (cpu)",
          "Generator-PCG64": "numpy PCG64",
          "Generator-PCG64DXSM": "numpy PCG64DXSM",
          "MT19937": "numpy MT19937", "Generator-Philox": "numpy Philox",
          "SFC64": "numpy SFC64", "RandomState": "numpy RandomState(MT19937)",
          "RandomState-PCG64": "numpy RandomState(PCG64)",
          "random.Random": "random.Random"}


@pytest.mark.parametrize("case", [c[0] for c in CASES])
def test_every_kind_refuses_bad_framing(case):
    """Truncation, magic, version and kind, for every kind."""
    gen, a = _encoded(case)
    good = a.read("g")
    n = len(good) - 16
    other = "SFC64" if case != "SFC64" else "MT19937"
    for data, cls, msg in [
        (good[:-1], C, "g: state says %d payload bytes, holds %d"
         % (n, n - 1)),
        (good[:7], C, "g: state is 7 bytes, shorter than the 8-byte header"),
        (b"RSTG" + good[4:], C,
         "g: state starts with b'RSTG', expected magic b'RSGN'"),
        (good[:4] + b"\x09" + good[5:], M,
         "g: state encoding version 9, this rngsnap reads version(s) 1"),
        (_encoded(other)[1].read("g"), M,
         "g: checkpoint holds a %s state, the live generator is a %s; "
         "nothing restored" % (LABELS[other], LABELS[case])),
    ]:
        _refused(a, data, cls, msg)


def _fields_refused(case, cases):
    gen, a = _encoded(case)
    good = a.read("g")
    before = a.read("g")
    for fmt, offset, value, msg in cases:
        _refused(a, _patched(good, fmt, offset, value), C, msg)
    assert a.read("g") == before


def test_pcg64_fields_refused():
    for case, label in (("Generator-PCG64", "PCG64"),
                        ("Generator-PCG64DXSM", "PCG64DXSM")):
        _fields_refused(case, [
            ("<I", 32, 2, "g: numpy %s state: has_uint32 is 2, expected 0 "
                          "or 1" % label),
            ("<Q", 16, 6, "g: numpy %s state: inc is even (a PCG increment "
                          "is odd)" % label)])


def test_mt19937_philox_sfc64_fields_refused():
    _fields_refused("MT19937", [
        ("<I", 2496, 625, "g: numpy MT19937 state: pos is 625, at most 624")])
    _fields_refused("Generator-Philox", [
        ("<I", 80, 5, "g: numpy Philox state: buffer_pos is 5, at most 4"),
        ("<I", 84, 2, "g: numpy Philox state: has_uint32 is 2, expected 0 "
                      "or 1")])
    _fields_refused("SFC64", [
        ("<I", 32, 7, "g: numpy SFC64 state: has_uint32 is 7, expected 0 "
                      "or 1")])


def test_random_state_fields_refused():
    label = "g: numpy RandomState(MT19937) state: "
    _fields_refused("RandomState", [
        ("<I", 2496, 625, label + "pos is 625, at most 624"),
        ("<I", 2500, 2, label + "has_gauss is 2, expected 0 or 1")])
    gen, a = _encoded("RandomState")
    gen.standard_normal(1)  # a Gaussian cached
    good = _patched(a.read("g"), "<I", 2500, 0)  # has_gauss 0, gauss kept
    _refused(a, good, C, label + "gauss is set while has_gauss is 0")


def test_random_fields_refused():
    gen, a = _encoded("random.Random")  # seeded: index 624, no gauss_next
    good = a.read("g")
    _refused(a, _patched(good, "<I", 2496, 625), C,
             "g: position 625 (at most 624) or has_gauss 0 (0 or 1) out of "
             "range")
    _refused(a, _patched(good, "<I", 2500, 2), C,
             "g: position 624 (at most 624) or has_gauss 2 (0 or 1) out of "
             "range")
    _refused(a, _patched(good, "<d", 2504, 0.5), C,
             "g: gauss_next set without has_gauss")


def test_torch_cpu_fields_refused():
    gen, a = _encoded("torch-cpu")
    good = a.read("g")
    raw = good[32:]
    tag = b"CPU" + b"\0" * 13
    for data, cls, msg in [
        (_with_payload(good, tag + raw), C,
         "g: torch.Generator (cpu) state: device type %r is not NUL-padded "
         "lowercase ASCII" % tag),
        (_with_payload(good, b"c\0pu" + b"\0" * 12 + raw), C,
         "g: torch.Generator (cpu) state: device type %r is not NUL-padded "
         "lowercase ASCII" % (b"c\0pu" + b"\0" * 12)),
        (_with_payload(good, b"cpu"), C,
         "g: torch.Generator (cpu) state: payload is 3 bytes, shorter than "
         "its 16-byte device type"),
        (_with_payload(good, b"mps".ljust(16, b"\0") + raw), M,
         "g: checkpoint holds a torch.Generator (mps) state, the live "
         "generator is a torch.Generator (cpu); nothing restored"),
        (_with_payload(good, good[16:-1]), M,
         "g: checkpoint holds a 5055-byte torch.Generator (cpu) state, the "
         "live generator's has 5056 bytes (another torch version?)"),
        (gs.encode_torch("g", "cuda", struct.pack("<QQ", 1, 8)), M,
         "g: checkpoint holds a torch.Generator (cuda) state, the live "
         "generator is a torch.Generator (cpu); nothing restored"),
    ]:
        _refused(a, data, cls, msg)


# ---- torch.Generator on CUDA, without a GPU --------------------------------

class FakeCudaGenerator:
    """Stands in for torch.Generator(device="cuda"): get_state() and
    set_state() in torch's form of `size` bytes, 816 (torch <= 2.0: 800
    bytes of 0xff, seed, offset) or 16 (>= 2.1: seed, offset), refusing
    another size as torch does."""

    def __init__(self, size, seed=42, offset=0):
        self.device = torch.device("cuda", 0)
        self.size, self.seed, self.offset = size, seed, offset

    def get_state(self):
        body = struct.pack("<Qq", self.seed, self.offset)
        raw = b"\xff" * 800 + body if self.size == 816 else body
        return torch.frombuffer(bytearray(raw), dtype=torch.uint8)

    def set_state(self, t):
        raw = t.numpy().tobytes()
        assert len(raw) == self.size
        assert self.size == 16 or raw[:800] == b"\xff" * 800
        self.seed, self.offset = struct.unpack_from("<Qq", raw,
                                                    self.size - 16)

    def draw(self, n):
        self.offset += 4 * ((n + 3) // 4)  # as philox_cuda_state rounds


def _register_fake(ctx, fake, name="g"):
    ctx._generators.register_adapter(name, _generators._Torch(fake))


@pytest.mark.parametrize("size", [816, 16])
def test_cuda_round_trip(quiet, tmp_path, size):
    fake = FakeCudaGenerator(size, seed=2**64 - 5)
    _register_fake(quiet, fake)
    fake.draw(10)
    quiet.save(str(tmp_path / "c"))
    assert fake.offset == 12
    fake.draw(100)
    quiet.load(str(tmp_path / "c"))
    assert (fake.seed, fake.offset) == (2**64 - 5, 12)


@pytest.mark.parametrize("saved,live", [(816, 16), (16, 816)])
def test_cuda_state_moves_between_torch_forms(tmp_path, saved, live):
    old, new = FakeCudaGenerator(saved, 7, 40), FakeCudaGenerator(live, 1)
    a = _generators._Torch(old).read("g")
    assert a == _generators._Torch(FakeCudaGenerator(16, 7, 40)).read("g")
    assert a[8:16] == struct.pack("<II", 2, 16) and len(a) == 32
    with rngsnap.Context(untracked="ignore") as c:
        c.seed_all(1)
        _register_fake(c, old)
        c.save(str(tmp_path / "c"))
    with rngsnap.Context(untracked="ignore") as c:
        _register_fake(c, new)
        c.load(str(tmp_path / "c"))
    assert (new.seed, new.offset) == (7, 40)


def test_cuda_fields_refused():
    fake = FakeCudaGenerator(16, 3, 8)
    a = _generators._Torch(fake)
    good = a.read("g")
    for data, cls, msg in [
        (_patched(good, "<Q", 8, 6), C,
         "g: torch.Generator (cuda) state: offset 6 is not a multiple of 4"),
        (_patched(good, "<Q", 8, 2**63), C,
         "g: torch.Generator (cuda) state: offset 9223372036854775808 is "
         "above 2**63 - 1"),
        (_with_payload(good, good[16:-1]), C,
         "g: torch.Generator (cuda) state: payload is 15 bytes, version 1 "
         "is 16"),
        (_generators._Torch(torch.Generator()).read("g"), M,
         "g: checkpoint holds a torch.Generator (cpu) state, the live "
         "generator is a torch.Generator (cuda); nothing restored"),
    ]:
        _refused(a, data, cls, msg)
    assert (fake.seed, fake.offset) == (3, 8)
    odd = FakeCudaGenerator(16)
    odd.get_state = lambda: torch.zeros(100, dtype=torch.uint8)
    _refused(_generators._Torch(odd), good, M,
             "g: a CUDA generator state of 100 bytes; rngsnap knows torch's "
             "816-byte (<= 2.0) and 16-byte (>= 2.1) forms")


def test_cpu_checkpoint_into_cuda_generator_refused_nothing_changed(
        tmp_path):
    with rngsnap.Context(untracked="ignore") as c:
        c.seed_all(1)
        c.register_generator("g", torch.Generator().manual_seed(1))
        c.save(str(tmp_path / "c"))
    with rngsnap.Context(untracked="ignore") as c:
        c.seed_all(2)
        fake = FakeCudaGenerator(816, 5, 20)
        _register_fake(c, fake)
        s = c.stream("cpu", 0, "default")
        pos = s.position()
        with pytest.raises(rngsnap.MismatchError) as e:
            c.load(str(tmp_path / "c"))
        assert str(e.value).splitlines()[0] == (
            "g: checkpoint holds a torch.Generator (cpu) state, the live "
            "generator is a torch.Generator (cuda); nothing restored")
        assert (fake.seed, fake.offset) == (5, 20)
        assert s.position() == pos


# ---- through ctx.load: the error raised as itself, nothing changed --------

def test_malformed_state_in_a_file_refused_nothing_changed(tmp_path):
    gen, a = _encoded("Generator-PCG64")
    bad = _patched(a.read("g"), "<I", 32, 2)
    with rngsnap.Context(untracked="ignore") as c:
        c.seed_all(1)
        c.register_state("g", save=lambda: bad, load=lambda data: None)
        c.save(str(tmp_path / "c"))
    with rngsnap.Context(untracked="ignore") as c:
        c.seed_all(2)
        live = np.random.Generator(np.random.PCG64(3))
        c.register_generator("g", live)
        before = live.bit_generator.state
        s = c.stream("cpu", 0, "default")
        pos = s.position()
        with pytest.raises(rngsnap.CorruptError) as e:
            c.load(str(tmp_path / "c"))
        lines = str(e.value).splitlines()
        assert lines[0] == ("g: numpy PCG64 state: has_uint32 is 2, "
                            "expected 0 or 1")
        assert lines[1] == ("(load %s: app state g: its load callable "
                            "failed; everything rolled back)"
                            % (tmp_path / "c"))
        assert e.value.name == "RNGSNAP_E_CORRUPT"
        assert live.bit_generator.state == before
        assert s.position() == pos


def test_other_kind_in_checkpoint_is_mismatch(tmp_path):
    with rngsnap.Context(untracked="ignore") as c:
        c.seed_all(1)
        c.register_generator("g", np.random.default_rng(1))
        c.save(str(tmp_path / "c"))
    with rngsnap.Context(untracked="ignore") as c:
        live = np.random.Generator(np.random.Philox(2))
        c.register_generator("g", live)
        before = live.bit_generator.state
        with pytest.raises(rngsnap.MismatchError) as e:
            c.load(str(tmp_path / "c"))
        assert str(e.value).splitlines()[0] == (
            "g: checkpoint holds a numpy PCG64 state, the live generator is "
            "a numpy Philox; nothing restored")
        assert str(live.bit_generator.state) == str(before)


# ---- what can be registered ------------------------------------------------

SUPPORTED = ("supported: torch.Generator (any device); numpy.random."
             "Generator or its bit generator (PCG64, PCG64DXSM, MT19937, "
             "Philox, SFC64); numpy.random.RandomState; random.Random (not "
             "SystemRandom)")


@pytest.mark.parametrize("gen,what", [
    (object(), "object"), (random.SystemRandom(), "SystemRandom"),
    (np.random.SeedSequence(1), "SeedSequence"), (3, "int")])
def test_unsupported_type(quiet, gen, what):
    with pytest.raises(TypeError) as e:
        quiet.register_generator("g", gen)
    assert str(e.value) == ("register_generator: %s is not a supported "
                            "generator; %s" % (what, SUPPORTED))


def test_name_taken(quiet):
    quiet.register_generator("g", random.Random(1))
    with pytest.raises(rngsnap.InvalidError) as e:
        quiet.register_generator("g", random.Random(2))
    assert str(e.value) == ("ctx.register_state(): app state g is already "
                            "registered")


# ---- drawn before the load of a resumed context ----------------------------

def _checkpoint(path, **gens):
    with rngsnap.Context(untracked="ignore") as c:
        c.seed_all(1)
        for name, gen in gens.items():
            c.register_generator(name, gen)
        c.save(str(path))


def test_drawn_before_load_refused_nothing_changed(tmp_path):
    _checkpoint(tmp_path / "c", g=np.random.default_rng(1),
                t=torch.Generator().manual_seed(1))
    r = rngsnap.Context(resume=True, untracked="ignore")
    g, t = np.random.default_rng(2), torch.Generator().manual_seed(2)
    r.register_generator("g", g)
    r.register_generator("t", t)
    g.random()
    state = g.bit_generator.state
    with pytest.raises(rngsnap.OrderError) as e:
        r.load(str(tmp_path / "c"))
    assert str(e.value) == (
        "load refused, nothing restored: generator g changed between "
        "ctx.register_generator() and load() (something drew from it before "
        "the restore). A DataLoader iterator created or a batch fetched "
        "draws from its generator: call ctx.register_generator() right "
        "before the load; load first, then draw")
    assert e.value.name == "RNGSNAP_E_ORDER"
    assert g.bit_generator.state == state
    with pytest.raises(rngsnap.OrderError):  # the gate is still shut
        r.stream("cpu", 0, "default").generate("u32", 1)
    torch.rand(1, generator=t)
    with pytest.raises(rngsnap.OrderError) as e:
        r.load(str(tmp_path / "c"))
    assert "generators g, t changed" in str(e.value)
    r.close()


def test_drawn_before_load_bytes_or_state_dict_refused(tmp_path):
    """The check is in front of every load method."""
    with rngsnap.Context(untracked="ignore") as c:
        c.seed_all(1)
        c.register_generator("g", random.Random(1))
        blob, state = c.save_bytes(), c.state_dict()
    r = rngsnap.Context(resume=True, untracked="ignore")
    g = random.Random(2)
    r.register_generator("g", g)
    g.random()
    before = g.getstate()
    for load in (lambda: r.load_bytes(blob), lambda: r.load_state_dict(state)):
        with pytest.raises(rngsnap.OrderError) as e:
            load()
        assert str(e.value).startswith("load refused, nothing restored: "
                                       "generator g changed between "
                                       "ctx.register_generator() and load()")
        assert g.getstate() == before
    r.close()


def test_not_drawn_loads_and_check_ends_with_the_load(tmp_path):
    _checkpoint(tmp_path / "c", g=np.random.default_rng(1))
    r = rngsnap.Context(resume=True, untracked="ignore")
    g = np.random.default_rng(2)
    r.register_generator("g", g)
    r.load(str(tmp_path / "c"))
    assert g.bit_generator.state == np.random.default_rng(1).bit_generator.state
    r.load(str(tmp_path / "c"))  # again before any draw: harmless
    g.random()  # after the load: drawing is the job's business
    drawn = g.bit_generator.state
    # but a second load now would rewind g (issue 22 item 4): refused,
    # changing nothing
    with pytest.raises(rngsnap.OrderError, match="generator g changed"):
        r.load(str(tmp_path / "c"))
    assert g.bit_generator.state == drawn
    r.close()


def test_no_order_check_without_resume(tmp_path):
    _checkpoint(tmp_path / "c", g=np.random.default_rng(1))
    with rngsnap.Context(untracked="ignore") as c:
        g = np.random.default_rng(2)
        c.register_generator("g", g)
        g.random()
        c.load(str(tmp_path / "c"))


# ---- unregister_state ------------------------------------------------------

def test_unregister_generator(tmp_path):
    _checkpoint(tmp_path / "with", g=random.Random(1))
    r = rngsnap.Context(resume=True, untracked="ignore")
    g = random.Random(2)
    r.register_generator("g", g)
    g.random()
    r.unregister_state("g")  # no longer saved, loaded or order-checked
    with pytest.raises(rngsnap.MismatchError) as e:
        r.load(str(tmp_path / "with"))
    assert "checkpoint has app state g, which this context did not " \
           "register (ctx.register_state() or ctx.register_generator() " \
           "before the load); nothing restored" in str(e.value)
    _checkpoint(tmp_path / "without")
    r.load(str(tmp_path / "without"))
    r.close()


class _Callable:
    def __call__(self, *args):
        return b"x"


def test_unregister_state_lets_the_callables_go(quiet):
    save, load = _Callable(), _Callable()
    refs = weakref.ref(save), weakref.ref(load)
    quiet.register_state("s", save=save, load=load)
    del save, load
    gc.collect()
    assert refs[0]() is not None
    quiet.unregister_state("s")
    assert refs[0]() is None and refs[1]() is None
    quiet.register_state("s", save=lambda: b"", load=lambda d: None)


def test_unregister_unknown_and_from_a_callable(quiet, tmp_path):
    with pytest.raises(rngsnap.InvalidError) as e:
        quiet.unregister_state("nope")
    assert str(e.value) == ("ctx.unregister_state(): no app state nope is "
                            "registered")
    seen = []

    def save():
        try:
            quiet.unregister_state("s")
        except rngsnap.InvalidError as err:
            seen.append(str(err))
        return b"1"
    quiet.register_state("s", save=save, load=lambda d: None)
    quiet.save(str(tmp_path / "c"))
    assert seen == ["rngsnap.Context used from inside one of its own "
                    "save/load callables or collectives (the context is "
                    "locked while they run)"]
