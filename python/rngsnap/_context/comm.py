"""Layer context: the collectives of rngsnap's multi-rank calls, over
torch.distributed, imported when a collective is called (`import rngsnap`
imports no torch).

TorchComm carries ctx.save_ranks/load_ranks (the C side's rngsnap_comm:
broadcast, point-to-point send/recv, this rank's node from nodes.py),
state_dict(gather=True) and DistributedResumableSampler's epoch order;
ranks_flagged() lets every rank of a collective call refuse together.
No call of a save_ranks/load_ranks moves O(ranks) bytes to every rank
but nodes.py's one host-name gather per process and group; allgather is
state_dict(gather=True)'s, which asks for exactly that.
"""

import collections

from . import nodes

# The tag of rngsnap's point-to-point messages: apart from the job's own
# send/recv on the same group.
TAG = 0x72736E70  # "rsnp"


class Flagged:
    """What ranks_flagged found: count ranks flagged, lowest the lowest
    of them (None when none).  False when none; str(): "rank 3" or "2
    ranks (rank 3 the lowest)", for messages."""

    def __init__(self, count, lowest):
        self.count, self.lowest = count, lowest

    def __bool__(self):
        return self.count > 0

    def __str__(self):
        if self.count == 1:
            return "rank %d" % self.lowest
        return "%d ranks (rank %d the lowest)" % (self.count, self.lowest)

    def __repr__(self):
        return "Flagged(%d, %r)" % (self.count, self.lowest)


class TorchComm:
    """The collectives of a multi-rank save/load on torch.distributed:
    uint8 CPU tensors (gloo).  all_gather with a list of tensors, not
    all_gather_into_tensor: gloo in torch 1.13 has no _allgather_base.
    Every rank passes the same lengths (the rngsnap_comm contract), so a
    zero-length call is skipped on all of them alike.  Ranks are the
    group's (0 .. size-1); torch.distributed's point-to-point calls take
    global ranks, mapped here.  call names the API in messages
    ("ctx.save_ranks()")."""

    def __init__(self, group=None, call="ctx.save_ranks()"):
        import torch
        import torch.distributed as dist
        if not dist.is_available() or not dist.is_initialized():
            raise RuntimeError("torch.distributed is not initialised: call "
                               "torch.distributed.init_process_group first")
        self.torch, self.dist, self.group = torch, dist, group
        self.rank = dist.get_rank(group)
        self.size = dist.get_world_size(group)
        self.call = call
        self._node = None
        self._group_of = None  # global rank -> group rank (group_ranks_of)
        self._to_self = collections.deque()  # send(data, self.rank)
        self._sent = collections.deque()  # (isend's work, its tensor)

    def _tensor(self, data):
        t = self.torch.empty(len(data), dtype=self.torch.uint8)
        t.numpy()[:] = memoryview(data)
        return t

    # ---- ranks: the group's and torch.distributed's global ones ----

    def global_rank(self, r):
        if self.group is None:
            return r
        get = getattr(self.dist, "get_global_rank", None) or \
            self.dist.distributed_c10d._get_global_rank
        return get(self.group, r)

    def group_ranks_of(self, global_ranks):
        """The group ranks of those of global_ranks in the group,
        ascending."""
        if self.group is None:
            return [g for g in global_ranks if 0 <= g < self.size]
        if self._group_of is None:  # once per TorchComm, not per message
            self._group_of = {self.global_rank(r): r
                              for r in range(self.size)}
        return sorted(self._group_of[g] for g in global_ranks
                      if g in self._group_of)

    # ---- rngsnap_comm (python/src/comm.c) ----

    @property
    def node_ranks(self):
        """This rank's node, ascending (nodes.py; collective the first
        time in a process)."""
        if self._node is None:
            self._node = nodes.node_ranks(self, self.call)
        return self._node

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
        self.dist.broadcast(t, src=self.global_rank(root), group=self.group)
        return t.numpy().tobytes()

    def send(self, data, dest):
        """data to group rank dest; returns before dest receives it (an
        isend, kept until finish(): gloo's send would wait for dest's
        recv, and two ranks sending to each other would wait for ever).
        torch.distributed refuses a send to oneself: such a message waits
        here for this rank's recv."""
        if dest == self.rank:
            self._to_self.append(bytes(data))
            return
        t = self._tensor(data)
        work = self.dist.isend(t, dst=self.global_rank(dest),
                               group=self.group, tag=TAG)
        while self._sent and self._sent[0][0].is_completed():
            self._sent.popleft()  # oldest first: O(1) a send, not O(sent)
        self._sent.append((work, t))

    def finish(self):
        """After a call that succeeded on every rank: wait for this
        rank's sends (each has a receiver that took part in the call),
        so that an error in one is raised."""
        while self._sent:
            self._sent.popleft()[0].wait()

    def recv(self, nbytes, src):
        """(nbytes bytes, sender) from group rank src, or from any rank
        when src is None."""
        if self._to_self and src in (None, self.rank):
            data = self._to_self.popleft()
            if len(data) != nbytes:
                raise RuntimeError("recv of %d bytes: this rank sent itself "
                                   "%d" % (nbytes, len(data)))
            return data, self.rank
        if src == self.rank:
            raise RuntimeError("recv from this rank itself, which sent it "
                               "nothing")
        t = self.torch.empty(nbytes, dtype=self.torch.uint8)
        g = self.dist.recv(t, src=None if src is None
                           else self.global_rank(src),
                           group=self.group, tag=TAG)
        # torch.distributed answers the sender's global rank
        sender = src if src is not None else self.group_ranks_of([g])[0]
        return t.numpy().tobytes(), sender

    # ---- agreement: small reductions ----

    def agree(self, flag, *totals):
        """One reduction over the group: (Flagged: the ranks whose flag
        is set, [the sum over the ranks of each of totals]).  Two
        all_reduces of a few int64: no O(ranks) bytes anywhere."""
        return _reduce(self.torch, self.dist, self.group, flag, totals)


def _reduce(torch, dist, group, flag, totals):
    sums = torch.tensor([int(bool(flag))] + [int(t) for t in totals],
                        dtype=torch.int64)
    size = dist.get_world_size(group)
    low = torch.tensor([dist.get_rank(group) if flag else size],
                       dtype=torch.int64)
    dist.all_reduce(sums, op=dist.ReduceOp.SUM, group=group)
    dist.all_reduce(low, op=dist.ReduceOp.MIN, group=group)
    count, lowest = int(sums[0]), int(low[0])
    return (Flagged(count, lowest if count else None),
            [int(s) for s in sums[1:]])


def ranks_flagged(flag, group):
    """save_ranks and load_ranks are collective: every rank must refuse
    together, or the others would wait in the call for ever.  Every rank
    calls this (two all_reduces over group: SUM of the count, MIN of the
    rank) and gets a Flagged: how many ranks' flag is set (generators
    that moved, untracked generators found) and the lowest of them, for
    the message."""
    import torch
    import torch.distributed as dist
    if not (dist.is_available() and dist.is_initialized()):
        return Flagged(1, 0) if flag else Flagged(0, None)
    return _reduce(torch, dist, group, flag, ())[0]
