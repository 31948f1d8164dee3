"""rngsnap.torch with ctx.save_ranks/load_ranks (gloo, 2 processes): every
rank's torch, NumPy and random generators resume bit-exactly, and when one
rank drew before the restore, every rank refuses (OrderError; the ranks
that did not draw name the rank that did) instead of hanging in the
collective load, and nothing changes on any rank."""

import pytest

from conftest import spawn_ranks

torch = pytest.importorskip("torch")
if not torch.distributed.is_available():
    pytest.skip("torch.distributed is not available", allow_module_level=True)

CHILD = r"""
import json, random, sys
import numpy as np, torch, torch.distributed as dist
import rngsnap, rngsnap.torch
rank, size, rdv, ck, mode = int(sys.argv[1]), int(sys.argv[2]), *sys.argv[3:6]
dist.init_process_group("gloo", init_method="file://" + rdv, rank=rank,
                        world_size=size)
def states():
    return [torch.get_rng_state().numpy().tobytes().hex(),
            np.random.get_state()[1].tobytes().hex(), repr(random.getstate())]
ctx = rngsnap.Context(resume=(mode != "save"))
ctx.set_rank(rank, size)
if mode == "save":
    ctx.seed_all(3)
    torch.manual_seed(10 + rank); np.random.seed(20 + rank); random.seed(30 + rank)
rngsnap.torch.track(ctx)
out = {"rank": rank}
if mode == "save":
    ctx.save_ranks(ck)
elif mode == "draw":
    if rank == 1:
        torch.rand(1)
    before = states()
    try:
        ctx.load_ranks(ck)
    except rngsnap.Error as e:
        out["error"] = [type(e).__name__, str(e)]
    out["unchanged"] = states() == before
else:
    ctx.load_ranks(ck)
out["next"] = [torch.rand(3).numpy().tobytes().hex(), np.random.rand(2).tobytes().hex(),
               random.random().hex()]
print(json.dumps(out))
dist.barrier()
dist.destroy_process_group()
"""


def run_ranks(tmp_path, ck, mode):
    return spawn_ranks(CHILD, 2, tmp_path / ("rdv-" + mode), ck, mode)


def test_ranks_resume_and_refuse_together(tmp_path):
    ck = tmp_path / "ck"
    saved = run_ranks(tmp_path, ck, "save")
    assert saved[0]["next"] != saved[1]["next"]
    loaded = run_ranks(tmp_path, ck, "load")
    assert [x["next"] for x in loaded] == [x["next"] for x in saved]

    drew = run_ranks(tmp_path, ck, "draw")
    for r in drew:
        assert r["error"][0] == "OrderError", r
        assert r["unchanged"], r
    assert "generator torch.cpu changed" in drew[1]["error"][1]
    assert "rank 1 drew from tracked generators" in drew[0]["error"][1]
