"""rngsnap.torch.track (issue 10 item 2): every generator of a PyTorch job
in the same checkpoint as the streams, restored bit-exactly in another
process; a checkpoint with a device generator this process lacks (or
lacking one it has) is MismatchError; a malformed state is refused and
nothing changes."""
import random
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import torch

import rngsnap
import rngsnap.torch
from rngsnap._core import encoding as enc
from rngsnap._core import fingerprint as fp

PRELUDE = """
import random, sys
import numpy as np, torch
import rngsnap, rngsnap.torch
ck = sys.argv[1]
"""

# Pretend torch sees CUDA devices (no GPU here): the same code path as a
# real one, through torch.cuda's own function names.
FAKE_CUDA = """
def fake_cuda(n):
    states = {i: torch.tensor([i] * 16, dtype=torch.uint8) for i in range(n)}
    torch.cuda.is_available = lambda: True
    torch.cuda.device_count = lambda: n
    torch.cuda.get_device_name = lambda i: "Fake GPU %d" % i
    torch.cuda.get_rng_state = lambda i: states[i].clone()
    def put(t, i):
        assert t.dtype == torch.uint8 and t.numel() == 16
        states[i] = t.clone()
    torch.cuda.set_rng_state = put
    return states
"""


def run(code, ck, check=True):
    p = subprocess.run([sys.executable, "-c", PRELUDE + FAKE_CUDA
                        + textwrap.dedent(code), ck],
                       capture_output=True, text=True, timeout=120)
    if check and p.returncode:
        raise AssertionError("subprocess failed:\n" + p.stdout + p.stderr)
    return p


DRAWS = """
def draws():
    s = ctx.stream("cpu", 0, "dropout")
    return [torch.rand(5).numpy().tobytes().hex(),
            np.random.rand(3).tobytes().hex(), np.random.randn(1).tobytes().hex(),
            random.random().hex(), random.gauss(0, 1).hex(),
            s.generate("u64", 4).tobytes().hex()]
"""


def test_resume_is_bit_exact_across_processes(tmp_path):
    ck = str(tmp_path / "ck.rngsnap")
    saved = run(DRAWS + """
ctx = rngsnap.Context()
ctx.seed_all(5)
torch.manual_seed(1); np.random.seed(2); random.seed(3)
rngsnap.torch.track(ctx)
torch.randn(7); np.random.randn(3); random.gauss(0, 1)  # cached Gaussians
ctx.save(ck)
print(draws())
""", ck)
    resumed = run(DRAWS + """
torch.manual_seed(99); np.random.seed(99); random.seed(99)  # overwritten
ctx = rngsnap.Context(resume=True)
rngsnap.torch.track(ctx)
ctx.load(ck)
print(draws())
""", ck)
    assert saved.stdout == resumed.stdout
    assert len(saved.stdout) > 200


def test_names_here():
    with rngsnap.Context() as ctx:
        t = rngsnap.torch.track(ctx)
        assert t.names == ["rngsnap.fingerprint", "torch.cpu",
                           "numpy.global", "python.random"]
        assert t.fingerprint["device.torch.cpu"] == "cpu"


def test_every_device_generator_round_trips(tmp_path):
    ck = str(tmp_path / "ck.rngsnap")
    run("""
states = fake_cuda(2)
ctx = rngsnap.Context()
t = rngsnap.torch.track(ctx)
assert t.names[2:4] == ["torch.cuda:0", "torch.cuda:1"], t.names
states[1][3] = 200
ctx.save(ck)
""", ck)
    p = run("""
states = fake_cuda(2)
ctx = rngsnap.Context(resume=True)
t = rngsnap.torch.track(ctx)
ctx.load(ck)
print(states[0].tolist(), states[1].tolist())
""", ck)
    assert p.stdout.split("]")[1].strip("[ ,").split(", ")[3] == "200"
    assert p.stdout.startswith("[" + ", ".join(["0"] * 16) + "]")


CHECK_UNCHANGED = """
before = (torch.get_rng_state().numpy().tobytes(), np.random.get_state()[1].tobytes(),
          random.getstate())
try:
    ctx.load(ck)
except rngsnap.Error as e:
    print(type(e).__name__, e.code)
    print(e)
after = (torch.get_rng_state().numpy().tobytes(), np.random.get_state()[1].tobytes(),
         random.getstate())
print("unchanged" if before == after else "CHANGED")
"""


@pytest.mark.parametrize("save_n,load_n,has,lacks", [
    (1, 0, "checkpoint has app state torch.cuda:0", None),
    (0, 1, None, "this context has app state torch.cuda:0"),
    (2, 1, "checkpoint has app state torch.cuda:1", None),
])
def test_device_generators_must_match(tmp_path, save_n, load_n, has, lacks):
    ck = str(tmp_path / "ck.rngsnap")
    run("""
if %d: fake_cuda(%d)
ctx = rngsnap.Context()
rngsnap.torch.track(ctx)
ctx.save(ck)
""" % (save_n, save_n), ck)
    p = run("""
if %d: fake_cuda(%d)
torch.manual_seed(5)
ctx = rngsnap.Context(resume=True)
rngsnap.torch.track(ctx)
""" % (load_n, load_n) + CHECK_UNCHANGED, ck)
    out = p.stdout
    assert out.startswith("MismatchError 7\n"), out
    if has:
        assert has in out and "which this context did not register" in out
    if lacks:
        assert lacks in out and "which the checkpoint lacks" in out
    assert ck in out and "nothing restored" in out
    assert "rngsnap.torch: this process tracks torch.cpu" in out
    assert out.endswith("unchanged\n")


def _forged(tmp_path, name, data):
    """A checkpoint like track()'s, with the state `name` replaced."""
    ck = str(tmp_path / "forged.rngsnap")
    with rngsnap.Context() as ctx:
        t = rngsnap.torch.track(ctx)
    with rngsnap.Context() as ctx:
        ctx.register_state("rngsnap.fingerprint",
                           save=lambda: fp.encode(t.fingerprint),
                           load=lambda b: None)
        for g in t.generators:
            raw = data if g.name == name else g.read()
            ctx.register_state(g.name, save=lambda raw=raw: raw,
                               load=lambda b: None)
        ctx.register_state("zz", save=lambda: b"zz", load=lambda b: None)
        ctx.save(ck)
    return ck


@pytest.mark.parametrize("name,mutate,cls,what", [
    ("numpy.global", lambda d: d[:4] + b"\x02" + d[5:], "MismatchError",
     "numpy.global: state encoding version 2"),
    ("numpy.global", lambda d: d[:-1], "CorruptError",
     "numpy.global: state is 2519 bytes"),
    ("python.random", lambda d: d + b"\0", "CorruptError",
     "python.random: state is 2521 bytes"),
    ("torch.cpu", lambda d: d[:8] + b"\x10\0\0\0" + d[12:28], "MismatchError",
     "torch.cpu: checkpoint holds a 16-byte"),
], ids=["np-version", "np-short", "py-long", "torch-size"])
def test_malformed_state_is_refused_and_nothing_changes(tmp_path, name,
                                                        mutate, cls, what):
    if name == "torch.cpu":
        good = enc.encode_torch(torch.get_rng_state().numpy().tobytes())
    elif name == "numpy.global":
        good = enc.encode_numpy(np.random.get_state())
    else:
        good = enc.encode_python(random.getstate())
    ck = _forged(tmp_path, name, mutate(good))
    p = run("""
ctx = rngsnap.Context(resume=True)
rngsnap.torch.track(ctx)
job = []
ctx.register_state("zz", save=lambda: b"", load=job.append)
""" + CHECK_UNCHANGED + "print('job', job)\n", ck)
    out = p.stdout
    assert out.startswith("%s %d\n" % (cls, {"MismatchError": 7,
                                             "CorruptError": 6}[cls])), out
    assert what in out, out
    assert "everything rolled back" in out  # the core's words, kept
    assert out.endswith("unchanged\njob []\n"), out


def test_tracked_context_is_freed_when_dropped():
    """track() keeps no reference cycle through the context: dropping the
    last reference closes it at once, not at the next cycle collection."""
    import gc
    import weakref
    gc.disable()
    try:
        ctx = rngsnap.Context()
        rngsnap.torch.track(ctx)
        ref = weakref.ref(ctx)
        del ctx
        assert ref() is None
    finally:
        gc.enable()


# torch.cuda.get_rng_state(i) in torch's two forms: 816 bytes up to torch
# 2.0 (800 unused bytes of 0xff, seed u64, Philox offset u64), 16 from 2.1
# (seed, offset).  A checkpoint of one moves to the other.
CUDA_FORMS = """
import struct
def cuda_form(size, seed, offset):
    body = struct.pack("<QQ", seed, offset)
    return (b"\\xff" * 800 + body) if size == 816 else body
def fake_cuda_form(size, seed, offset):
    states = fake_cuda(1)
    raw = cuda_form(size, seed, offset)
    states[0] = torch.tensor(list(raw), dtype=torch.uint8)
    def put(t, i):
        assert t.dtype == torch.uint8 and t.numel() == size, t.numel()
        states[i] = t.clone()
    torch.cuda.set_rng_state = put
    return states
"""


@pytest.mark.parametrize("saved,live", [(816, 16), (16, 816)])
def test_cuda_state_moves_between_torch_forms(tmp_path, saved, live):
    ck = str(tmp_path / "ck.rngsnap")
    run(CUDA_FORMS + """
fake_cuda_form(%d, 1234, 4 * 10**9)
ctx = rngsnap.Context()
rngsnap.torch.track(ctx)
ctx.save(ck)
""" % saved, ck)
    p = run(CUDA_FORMS + """
states = fake_cuda_form(%d, 7, 8)
ctx = rngsnap.Context(resume=True)
rngsnap.torch.track(ctx)
ctx.load(ck)
want = cuda_form(%d, 1234, 4 * 10**9)
print(bytes(states[0].tolist()) == want)
""" % (live, live), ck)
    assert p.stdout == "True\n", p.stdout + p.stderr


def test_cuda_state_of_another_size_is_refused(tmp_path):
    # Neither of torch's forms: refused, naming both sizes, nothing set.
    ck = str(tmp_path / "ck.rngsnap")
    run(CUDA_FORMS + """
states = fake_cuda(1)
states[0] = torch.zeros(32, dtype=torch.uint8)
ctx = rngsnap.Context()
rngsnap.torch.track(ctx)
ctx.save(ck)
""", ck)
    p = run(CUDA_FORMS + """
states = fake_cuda_form(16, 7, 8)
ctx = rngsnap.Context(resume=True)
rngsnap.torch.track(ctx)
""" + CHECK_UNCHANGED
            + "print(bytes(states[0].tolist()) == cuda_form(16, 7, 8))\n", ck)
    out = p.stdout
    assert out.startswith("MismatchError 7\n"), out
    assert ("torch.cuda:0: checkpoint holds a 32-byte generator state, this "
            "process's generator has 16 bytes") in out, out
    assert out.endswith("unchanged\nTrue\n"), out
