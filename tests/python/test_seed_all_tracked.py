"""ctx.seed_all(seed) seeds the generators track() puts in the checkpoint
(issue 22 item 6): a tracked job seeded only by seed_all draws the same
torch, np.random and random numbers in two fresh processes, whichever of
track() and seed_all comes first; other ranks and other seeds draw other
numbers; each generator has its own seed; register_generator's keep
theirs; a resumed context's load is not refused for it."""
import json

import pytest

from conftest import run_py

JOB = """
import json, random, sys
import numpy as np, torch
import rngsnap, rngsnap.torch
rank, seed, order = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
ctx = rngsnap.Context()
ctx.set_rank(rank, 4)
own = np.random.default_rng(5)
ctx.register_generator("own", own)
if order == "first":
    ctx.seed_all(seed)
rngsnap.torch.track(ctx)
if order == "last":
    ctx.seed_all(seed)
print(json.dumps({"torch": torch.rand(4).tolist(),
                  "numpy": np.random.rand(4).tolist(),
                  "random": [random.random() for _ in range(4)],
                  "own": own.random(2).tolist()}))
"""


def _run(rank=0, seed=11, order="last"):
    return json.loads(run_py(JOB, rank, seed, order).stdout)


@pytest.mark.parametrize("order", ["first", "last"])
def test_two_runs_seeded_by_seed_all_draw_the_same(order):
    a, b = _run(order=order), _run(order=order)
    assert a == b
    assert _run(order="first") == _run(order="last")


def test_ranks_seeds_and_generators_differ():
    base = _run()
    for other in (_run(rank=1), _run(rank=3), _run(seed=12)):
        for k in ("torch", "numpy", "random"):
            assert other[k] != base[k], k
    # three generators, three seeds: no two draw alike
    assert len({tuple(base[k]) for k in ("torch", "numpy", "random")}) == 3
    # the job's own generator keeps the state it was given (default_rng(5))
    import numpy as np
    assert base["own"] == np.random.default_rng(5).random(2).tolist()


def test_every_tracked_device_gets_its_own_seed():
    out = run_py("""
import torch, rngsnap, rngsnap.torch
states = {}
class Gen:
    def __init__(self, i): self.i = i
    def manual_seed(self, s):
        states[self.i] = torch.tensor(list(s.to_bytes(8, "little")) + [0] * 8,
                                      dtype=torch.uint8)
for i in range(2):
    states[i] = torch.zeros(16, dtype=torch.uint8)
torch.cuda.is_available = lambda: True
torch.cuda.device_count = lambda: 2
torch.cuda.get_device_name = lambda i: "Fake GPU %d" % i
torch.cuda.get_rng_state = lambda i: states[i].clone()
torch.cuda.set_rng_state = lambda t, i: states.__setitem__(i, t.clone())
torch.cuda.default_generators = (Gen(0), Gen(1))
ctx = rngsnap.Context()
t = rngsnap.torch.track(ctx)
assert "torch.cuda:1" in t.names, t.names
ctx.seed_all(3)
print(bytes(states[0].tolist()).hex(), bytes(states[1].tolist()).hex())
""").stdout.split()
    assert out[0] != out[1] and "00" * 16 not in out


def test_seed_all_before_the_load_of_a_resumed_context(tmp_path):
    """Awaiting its load, seed_all seeds the streams only: the tracked
    generators are the load's to set, so the load is not refused as
    'drawn before the restore'."""
    ck = tmp_path / "ck.rngsnap"
    out = run_py("""
import sys, torch, rngsnap, rngsnap.torch
ck = sys.argv[1]
with rngsnap.Context() as ctx:
    rngsnap.torch.track(ctx)
    ctx.seed_all(1)
    ctx.save(ck)
    want = torch.rand(3).tolist()
ctx = rngsnap.Context(resume=True)
rngsnap.torch.track(ctx)
ctx.seed_all(2)
ctx.load(ck)
print(torch.rand(3).tolist() == want)
""", ck).stdout
    assert out.strip() == "True"
