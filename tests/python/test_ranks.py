"""save_ranks/load_ranks over torch.distributed (gloo, file:// rendezvous),
4 processes: bit-exact resume, the all-ranks refusal of another world
size, and the deterministic fork 4 -> 2."""

import pytest

from conftest import spawn_ranks

torch = pytest.importorskip("torch")
if not torch.distributed.is_available():
    pytest.skip("torch.distributed is not available", allow_module_level=True)

CHILD = r"""
import json, sys, rngsnap, torch.distributed as dist
rank, size, rdv, ck, mode = int(sys.argv[1]), int(sys.argv[2]), *sys.argv[3:6]
dist.init_process_group("gloo", init_method="file://" + rdv, rank=rank,
                        world_size=size)
app = {"step": b""}
ctx = rngsnap.Context(resume=(mode != "save"))
ctx.set_rank(rank, size)
ctx.register_state("step", save=lambda: app["step"],
                   load=lambda b: app.__setitem__("step", b))
s = ctx.stream("cpu", 0, "dropout")
out = {"rank": rank}
if mode == "save":
    ctx.seed_all(2024)
    s.generate("u32", 100 + rank)          # ranks at different positions
    app["step"] = b"step-7"   # equal on every rank: a fork may restore it
    ctx.save_ranks(ck)
elif mode == "refuse":
    try:
        ctx.load_ranks(ck)
    except rngsnap.Error as e:
        out["error"] = [e.name, str(e)]
    # the barrier: a rank that leaves while another still reads the
    # refusal's broadcast makes that rank's gloo abort the process
    print(json.dumps(out)); dist.barrier(); dist.destroy_process_group()
    sys.exit(0)
else:
    ctx.load_ranks(ck, fork=(mode == "fork"))
out["step"] = app["step"].decode()
out["u32"] = s.generate("u32", 8).tolist()
out["pos"] = list(s.position())
print(json.dumps(out))
dist.barrier()
dist.destroy_process_group()
"""


def run_ranks(tmp_path, n, ck, mode, tag):
    return spawn_ranks(CHILD, n, tmp_path / ("rdv-" + tag), ck, mode)


def test_save_load_fork(tmp_path):
    ck = tmp_path / "ck"
    saved = run_ranks(tmp_path, 4, ck, "save", "save")
    assert (ck / "MANIFEST").exists() or any(ck.iterdir())
    loaded = run_ranks(tmp_path, 4, ck, "load", "load")
    assert loaded == saved  # every rank: app state, next words, position
    assert len({tuple(x["u32"]) for x in saved}) == 4

    refused = run_ranks(tmp_path, 2, ck, "refuse", "refuse")
    for r in refused:
        assert r["error"][0] == "RNGSNAP_E_MISMATCH", r

    fork1 = run_ranks(tmp_path, 2, ck, "fork", "fork1")
    fork2 = run_ranks(tmp_path, 2, ck, "fork", "fork2")
    assert fork1 == fork2                    # deterministic
    assert all(f["step"] == "step-7" for f in fork1)
    assert fork1[0]["u32"] != fork1[1]["u32"]  # ranks differ
    assert all(f["u32"] not in [s["u32"] for s in saved] for f in fork1)
