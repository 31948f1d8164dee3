"""The torch.distributed communicator of ctx.save_ranks/load_ranks
(rngsnap/_context/comm.py, nodes.py), 4 gloo processes, without a
checkpoint: point-to-point send/recv (from a given rank and from any rank,
the sender's rank in the group's numbering, a message to oneself, the
order of two messages between the same ranks), a group other than the
default one, this rank's node from LOCAL_RANK/LOCAL_WORLD_SIZE or from
the host name (gathered once per process and group), the refusals of
variables that do not describe a node or are set on some ranks only (on
every rank, naming the rank), and ranks_flagged's (count, lowest)."""

import pytest

from conftest import spawn_ranks

torch = pytest.importorskip("torch")
if not torch.distributed.is_available():
    pytest.skip("torch.distributed is not available", allow_module_level=True)

CHILD = r"""
import json, os, sys
import torch.distributed as dist
from rngsnap._context import comm, nodes
rank, size, rdv = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
for v in ("LOCAL_RANK", "LOCAL_WORLD_SIZE", "RANK", "WORLD_SIZE"):
    os.environ.pop(v, None)
dist.init_process_group("gloo", init_method="file://" + rdv, rank=rank,
                        world_size=size)
out = {"rank": rank}

def caught(fn):
    try:
        return fn()
    except Exception as e:
        return [type(e).__name__, str(e)]

# ---- point to point over the default group
link = comm.TorchComm()
link.send(bytes([rank]) * 5, 0)            # rank 0 sends to itself too
if rank == 0:
    got = [link.recv(5, None) for _ in range(size)]
    out["any"] = sorted([d.hex(), s] for d, s in got)
dist.barrier()  # rank 0's any-rank recvs would take the ring's messages
link.send(b"first-%d" % rank, (rank + 1) % size)
link.send(b"again-%d" % rank, (rank + 1) % size)
prev = (rank - 1) % size  # every rank sent before any receives: a ring
out["ordered"] = [link.recv(7, prev), link.recv(7, prev)]
out["ordered"] = [[d.decode(), s] for d, s in out["ordered"]]
link.finish()

# ---- a group of global ranks 1, 2, 3 (every rank makes it)
sub = dist.new_group([1, 2, 3])
if rank != 0:
    g = comm.TorchComm(sub)
    out["sub"] = [g.rank, g.size]
    if g.rank != 0:
        g.send(bytes([g.rank]) * 3, 0)
    else:
        out["sub_any"] = sorted([d.hex(), s] for d, s in
                                (g.recv(3, None) for _ in range(2)))
    out["sub_host"] = list(g.node_ranks)
    nodes.forget()
    os.environ.update(LOCAL_RANK=str(rank % 2), LOCAL_WORLD_SIZE="2")
    out["sub_env"] = list(comm.TorchComm(sub).node_ranks)
    for v in ("LOCAL_RANK", "LOCAL_WORLD_SIZE"):
        os.environ.pop(v)

# ---- nodes of the default group: the host name, gathered once
nodes.forget()
out["host"] = list(comm.TorchComm().node_ranks)
gather = dist.all_gather_object
dist.all_gather_object = None  # a second gather would fail here
out["host_again"] = caught(lambda: list(comm.TorchComm().node_ranks))
dist.all_gather_object = gather

def with_env(**env):  # every rank calls it: forget() on every rank
    nodes.forget()
    os.environ.update({k: str(v) for k, v in env.items()})
    try:
        return caught(lambda: list(comm.TorchComm(
            None, "ctx.load_ranks()").node_ranks))
    finally:
        for k in env:
            os.environ.pop(k)

out["torchrun"] = with_env(LOCAL_RANK=rank % 2, LOCAL_WORLD_SIZE=2,
                           RANK=rank, WORLD_SIZE=size)
out["one_node"] = with_env(LOCAL_RANK=rank, LOCAL_WORLD_SIZE=size)
out["bad_local_rank"] = with_env(LOCAL_RANK=5 if rank == 2 else rank % 2,
                                 LOCAL_WORLD_SIZE=2)
out["two_bad"] = with_env(LOCAL_RANK="x" if rank in (1, 3) else rank % 2,
                          LOCAL_WORLD_SIZE=2)
out["half_set"] = with_env(**({"LOCAL_RANK": 0} if rank == 0 else
                              {"LOCAL_RANK": rank % 2,
                               "LOCAL_WORLD_SIZE": 2}))
out["some_ranks"] = with_env(**({"LOCAL_RANK": rank % 2,
                                 "LOCAL_WORLD_SIZE": 2} if rank < 2 else {}))
out["not_rank"] = with_env(LOCAL_RANK=rank % 2, LOCAL_WORLD_SIZE=2,
                           RANK=(rank + 1) % size)
out["outside"] = with_env(LOCAL_RANK=0, LOCAL_WORLD_SIZE=3 if rank == 3
                          else 1)
out["overlap"] = with_env(**({"LOCAL_RANK": 0, "LOCAL_WORLD_SIZE": 1}
                             if rank == 3 else
                             {"LOCAL_RANK": rank % 2,
                              "LOCAL_WORLD_SIZE": 2}))

# ---- ranks_flagged
f = comm.ranks_flagged(rank in (1, 3), None)
out["flagged"] = [f.count, f.lowest, bool(f), str(f)]
f = comm.ranks_flagged(rank == 2, None)
out["flagged_one"] = [f.count, f.lowest, str(f)]
f = comm.ranks_flagged(False, None)
out["flagged_none"] = [f.count, f.lowest, bool(f)]
print(json.dumps(out))
dist.barrier()
dist.destroy_process_group()
"""

LOAD = "ctx.load_ranks() refused on every rank: "
FIX = (". torchrun sets LOCAL_RANK and LOCAL_WORLD_SIZE for every rank; "
       "with another launcher set both as it does (or unset both: ranks "
       "are then grouped by host name)")


def test_torch_comm(tmp_path):
    out = spawn_ranks(CHILD, 4, tmp_path / "rdv")
    # rank 0 heard every rank once, itself included, from any rank
    assert out[0]["any"] == [[bytes([r] * 5).hex(), r] for r in range(4)]
    for r, o in enumerate(out):
        prev = (r - 1) % 4
        assert o["ordered"] == [["first-%d" % prev, prev],
                                ["again-%d" % prev, prev]]
    # the group's own numbering: global 1, 2, 3 are its 0, 1, 2
    assert [o.get("sub") for o in out] == [None, [0, 3], [1, 3], [2, 3]]
    assert out[1]["sub_any"] == [["010101", 1], ["020202", 2]]
    assert [o.get("sub_host") for o in out[1:]] == [[0, 1, 2]] * 3
    # LOCAL_WORLD_SIZE=2: global nodes {0, 1} and {2, 3}; in the group,
    # global 1 alone, then global 2 and 3
    assert [o["sub_env"] for o in out[1:]] == [[0], [1, 2], [1, 2]]

    for o in out:
        assert o["host"] == [0, 1, 2, 3]          # one host here
        assert o["host_again"] == [0, 1, 2, 3]    # kept: no second gather
        assert o["one_node"] == [0, 1, 2, 3]
    assert [o["torchrun"] for o in out] == [[0, 1], [0, 1], [2, 3], [2, 3]]

    def refused(key, own_rank, own, others):
        for r, o in enumerate(out):
            want = own if r == own_rank else others
            assert o[key] == ["ConfigError", want], (key, r, o[key])

    refused("bad_local_rank", 2,
            LOAD + "on rank 2 LOCAL_RANK=5 with LOCAL_WORLD_SIZE=2 (need 0 "
            "<= LOCAL_RANK < LOCAL_WORLD_SIZE)" + FIX,
            LOAD + "rank 2 found LOCAL_RANK/LOCAL_WORLD_SIZE that do not "
            "describe its node (its own error says how)")
    for r in (1, 3):
        assert out[r]["two_bad"] == [
            "ConfigError", LOAD + "on rank %d LOCAL_RANK='x' is not an "
            "integer" % r + FIX]
    for r in (0, 2):
        assert out[r]["two_bad"] == [
            "ConfigError", LOAD + "2 ranks (rank 1 the lowest) found "
            "LOCAL_RANK/LOCAL_WORLD_SIZE that do not describe their node "
            "(their own error says how)"]
    refused("half_set", 0,
            LOAD + "on rank 0 LOCAL_RANK is set but LOCAL_WORLD_SIZE is "
            "not" + FIX,
            LOAD + "rank 0 found LOCAL_RANK/LOCAL_WORLD_SIZE that do not "
            "describe its node (its own error says how)")
    for r, o in enumerate(out):
        assert o["some_ranks"] == [
            "ConfigError", LOAD + "LOCAL_RANK and LOCAL_WORLD_SIZE are set "
            "on 2 of the group's 4 ranks (rank %d: %s): set them on every "
            "rank, as torchrun does, or on none (ranks are then grouped by "
            "host name)" % (r, "set" if r < 2 else "not set")]
    for r, o in enumerate(out):
        assert o["not_rank"] == [
            "ConfigError", LOAD + "on rank %d RANK=%d, another rank "
            "(torch.distributed's rank is the one that counts)"
            % (r, (r + 1) % 4) + FIX]
    refused("outside", 3,
            LOAD + "on rank 3 LOCAL_RANK=0 and LOCAL_WORLD_SIZE=3 make its "
            "node ranks 3..5, outside the job's 0..3" + FIX,
            LOAD + "rank 3 found LOCAL_RANK/LOCAL_WORLD_SIZE that do not "
            "describe its node (its own error says how)")
    # rank 3 says it is a node of one, rank 2 that 3 is in its node: the
    # leaders 0, 2 and 3 count 2 + 2 + 1 ranks
    for o in out:
        assert o["overlap"] == [
            "ConfigError", LOAD + "the nodes that LOCAL_RANK and "
            "LOCAL_WORLD_SIZE describe hold 5 ranks in all, but the group "
            "has 4: every rank of a node needs the node's "
            "LOCAL_WORLD_SIZE, and its ranks consecutive RANKs, as "
            "torchrun sets them"]

    for o in out:
        assert o["flagged"] == [2, 1, True, "2 ranks (rank 1 the lowest)"]
        assert o["flagged_one"] == [1, 2, "rank 2"]
        assert o["flagged_none"] == [0, None, False]
