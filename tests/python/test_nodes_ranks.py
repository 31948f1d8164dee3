"""One file per node over torch.distributed (issue 32; docs/python.md,
"Multi-rank folders: nodes and coordinates"), gloo at 2 and 8 processes.

One job saves the same state in four layouts: nodes of N = size/2 ranks
emulated by RNGSNAP_RANKS_PER_NODE (2 node files), per_rank_files=True
(one file per rank), nodes by host name (LOCAL_* unset: one host here, so
one node file) and nodes from LOCAL_RANK/LOCAL_WORLD_SIZE = N as torchrun
sets them (2 node files); the test counts each folder's files, and
`rngsnap inspect` shows which one is emulated and every rank's
coordinates.  New
processes load each folder and draw what the uninterrupted job drew after
its save, bit for bit, on every rank.  Then the coordinate check: two
ranks whose coordinates are swapped at load, and a load without the
coordinates the folder was saved with, are MismatchError on every rank,
naming the ranks and both coordinate sets, and nothing is restored on any
rank."""

import json
import os
import re
import subprocess

import pytest

from conftest import spawn_ranks

torch = pytest.importorskip("torch")
if not torch.distributed.is_available():
    pytest.skip("torch.distributed is not available", allow_module_level=True)

CHILD = r"""
import json, os, sys
import torch.distributed as dist
import rngsnap
from rngsnap._context import nodes
rank, size, rdv, base, mode = (int(sys.argv[1]), int(sys.argv[2]),
                               *sys.argv[3:6])
swap = json.loads(sys.argv[6])
for v in ("LOCAL_RANK", "LOCAL_WORLD_SIZE", "RNGSNAP_RANKS_PER_NODE"):
    os.environ.pop(v, None)
dist.init_process_group("gloo", init_method="file://" + rdv, rank=rank,
                        world_size=size)
n = size // 2
LAYOUTS = {  # folder: (environment, per_rank_files)
    "emulated": ({"RNGSNAP_RANKS_PER_NODE": str(n)}, False),
    "per_rank": ({}, True),
    "host": ({}, False),
    "local": ({"LOCAL_RANK": str(rank % n), "LOCAL_WORLD_SIZE": str(n)},
              False),
}

def coords(r):
    return dict(dp=r // 2, tp=r % 2, pp=0, ep=r % 3)

app = {"step": b""}
def context(resume):
    ctx = rngsnap.Context(resume=resume, untracked="ignore")
    ctx.set_rank(rank, size)
    ctx.register_state("step", save=lambda: app["step"],
                       load=lambda b: app.__setitem__("step", b))
    return ctx, ctx.stream("cpu", 0, "dropout")

def in_env(env, fn):  # every rank, every layout: find the nodes again
    nodes.forget()
    os.environ.update(env)
    try:
        return fn()
    finally:
        for k in env:
            os.environ.pop(k)

def after(s):  # what the job draws next, and where the stream then is
    return {"u32": s.generate("u32", 8).tolist(), "step": app["step"].decode()}

out = {"rank": rank}
if mode == "save":
    ctx, s = context(False)
    ctx.seed_all(2032)
    s.generate("u32", 50 + 7 * rank)     # every rank somewhere else
    app["step"] = b"step-%d" % rank
    ctx.set_coords(**coords(rank))
    for name, (env, per_rank) in LAYOUTS.items():
        in_env(env, lambda: ctx.save_ranks(os.path.join(base, name),
                                           per_rank_files=per_rank))
    out["next"] = after(s)
elif mode == "load":
    for name, (env, _) in LAYOUTS.items():
        app["step"] = b""
        ctx, s = context(True)
        ctx.set_coords(**coords(rank))
        in_env(env, lambda: ctx.load_ranks(os.path.join(base, name)))
        out[name] = after(s)
        ctx.close()
else:  # refuse: coordinates swapped between two ranks, then none
    for case in ("swapped", "none"):
        app["step"] = b""
        ctx, s = context(True)
        if case == "swapped":
            ctx.set_coords(**coords(swap.get(str(rank), rank)))
        before = s.position()
        try:
            ctx.load_ranks(os.path.join(base, "emulated"))
            out[case] = "loaded"
        except rngsnap.Error as e:
            out[case] = [type(e).__name__, str(e)]
        out[case + "_unchanged"] = (s.position() == before
                                    and app["step"] == b"")
print(json.dumps(out))
dist.barrier()
dist.destroy_process_group()
"""


RNGSNAP = os.path.join(os.environ["RNGSNAP_BUILD_ROOT"], "tools", "rngsnap")


def _inspect(folder):
    return subprocess.run([RNGSNAP, "inspect", str(folder)], check=True,
                          capture_output=True, text=True).stdout


def _files(folder):
    """The folder's files, each name with its checkpoint id as <id>."""
    return sorted(re.sub(r"\.[0-9a-f]{32}\.", ".<id>.", f)
                  for f in os.listdir(folder))


def text(r):
    """Rank r's coordinates as the core writes them (CHILD's coords(r))."""
    return "dp=%d,ep=%d,pp=0,tp=%d" % (r // 2, r % 3, r % 2)


@pytest.mark.parametrize("size, swap", [(2, (0, 1)), (8, (1, 2))])
def test_nodes_save_load_and_coordinates(tmp_path, size, swap):
    base = tmp_path / "ck"
    base.mkdir()
    swapped = json.dumps({str(swap[0]): swap[1], str(swap[1]): swap[0]})

    def run(mode):
        return spawn_ranks(CHILD, size, tmp_path / ("rdv-" + mode), base,
                           mode, swapped)
    saved = run("save")
    assert len({json.dumps(o["next"]) for o in saved}) == size

    # a node's file is named by its first rank
    node_files = ["MANIFEST", "node-00000.<id>.rngsnap",
                  "node-%05d.<id>.rngsnap" % (size // 2)]
    assert _files(base / "emulated") == node_files
    assert _files(base / "local") == node_files
    assert _files(base / "host") == ["MANIFEST", "node-00000.<id>.rngsnap"]
    assert _files(base / "per_rank") == ["MANIFEST"] + [
        "rank-%05d.<id>.rngsnap" % r for r in range(size)]
    # the manifest says which layout is emulated, and holds every rank's
    # coordinates
    emulated = ("emulated nodes (RNGSNAP_RANKS_PER_NODE=%d at save, a test "
                "aid)" % (size // 2))
    for layout in ("emulated", "per_rank", "host", "local"):
        shown = _inspect(base / layout)
        assert (emulated in shown) == (layout == "emulated"), layout
        assert re.findall(r"coordinates: +(\S+)", shown) == [
            text(r) for r in range(size)], layout

    loaded = run("load")
    for r in range(size):
        for layout in ("emulated", "per_rank", "host", "local"):
            assert loaded[r][layout] == saved[r]["next"], (r, layout)

    refused = run("refuse")
    a, b = swap
    folder = os.path.join(str(base), "emulated")
    # rank 0 checks every rank's coordinates; every rank says what it found
    swapped = (
        "rank 0 of %d: load_ranks %s: rank %d has coordinates (%s) but the "
        "checkpoint's rank %d was saved with (%s); the checkpoint's rank %d "
        "was saved with (%s); this job's rank %d has (%s) (2 of %d ranks "
        "differ): this job maps its ranks to other parallel groups than the "
        "saved job did, so rank %d would resume another rank's random "
        "streams; launch with the saved mapping; nothing restored" % (
            size, folder, a, text(b), a, text(a), b, text(b), b, text(a),
            size, a))
    none = (
        "rank 0 of %d: load_ranks %s: rank 0 has no coordinates, but the "
        "checkpoint's rank 0 was saved with (%s); call ctx.set_coords(...) "
        "with each rank's coordinates before the load; nothing restored" % (
            size, folder, text(0)))
    for r, o in enumerate(refused):
        assert o["swapped"] == ["MismatchError", swapped], r
        assert o["swapped_unchanged"], r
        assert o["none"] == ["MismatchError", none], r
        assert o["none_unchanged"], r
