"""Layer context: the collectives of rngsnap's multi-rank calls, over
torch.distributed, imported when a collective is called (`import rngsnap`
imports no torch).

TorchComm carries ctx.save_ranks/load_ranks (the C side's rngsnap_comm),
state_dict(gather=True) and DistributedResumableSampler's epoch order;
ranks_flagged() lets every rank of a collective call refuse together.
"""


class TorchComm:
    """The collectives of a multi-rank save/load on torch.distributed:
    uint8 CPU tensors (gloo).  all_gather with a list of tensors, not
    all_gather_into_tensor: gloo in torch 1.13 has no _allgather_base.
    Every rank passes the same lengths (the rngsnap_comm contract), so a
    zero-length call is skipped on all of them alike."""

    def __init__(self, group=None):
        import torch
        import torch.distributed as dist
        if not dist.is_available() or not dist.is_initialized():
            raise RuntimeError("torch.distributed is not initialised: call "
                               "torch.distributed.init_process_group first")
        self.torch, self.dist, self.group = torch, dist, group
        self.rank = dist.get_rank(group)
        self.size = dist.get_world_size(group)

    def _tensor(self, data):
        t = self.torch.empty(len(data), dtype=self.torch.uint8)
        t.numpy()[:] = memoryview(data)
        return t

    def allgather(self, data):
        if not data:
            return b""
        parts = [self.torch.empty(len(data), dtype=self.torch.uint8)
                 for _ in range(self.size)]
        self.dist.all_gather(parts, self._tensor(data), group=self.group)
        return b"".join(p.numpy().tobytes() for p in parts)

    def broadcast(self, data, root):
        if not data:
            return b""
        t = self._tensor(data)
        src = root
        if self.group is not None:  # src is a global rank
            get = getattr(self.dist, "get_global_rank", None) or \
                self.dist.distributed_c10d._get_global_rank
            src = get(self.group, root)
        self.dist.broadcast(t, src=src, group=self.group)
        return t.numpy().tobytes()


def ranks_flagged(flag, group):
    """save_ranks and load_ranks are collective: every rank must refuse
    together, or the others would wait in the call for ever.  Every rank
    calls this (one all_reduce over group) and gets the ranks whose flag
    is set (generators that moved, untracked generators found)."""
    import torch
    import torch.distributed as dist
    if not (dist.is_available() and dist.is_initialized()):
        return [0] if flag else []
    flags = torch.zeros(dist.get_world_size(group), dtype=torch.int32)
    flags[dist.get_rank(group)] = int(flag)
    dist.all_reduce(flags, group=group)
    return [r for r in range(len(flags)) if flags[r]]
