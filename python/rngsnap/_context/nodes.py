"""Layer context: which ranks of a torch.distributed group share this
rank's node, for ctx.save_ranks/load_ranks (rngsnap_comm's node_ranks:
the node's leader, its lowest rank, writes one file for them all).

Two sources, in this order (docs/python.md, "Nodes"):

- LOCAL_RANK and LOCAL_WORLD_SIZE, as torchrun sets them: the node of
  global rank R is ranks R - LOCAL_RANK .. R - LOCAL_RANK +
  LOCAL_WORLD_SIZE - 1.  Checked against RANK/WORLD_SIZE and
  torch.distributed's own rank and world size.
- Without them, the host name: ranks on one host are one node.  One
  all_gather_object of the host name over the group (O(ranks) bytes to
  every rank, once per process and group, at its first multi-rank call),
  for launchers that do not set LOCAL_*.

Either way the first call for a group is collective and decides on every
rank together (a rank with inconsistent variables would otherwise leave
the others waiting in the save), and the answer is kept for the
process's later calls.  RNGSNAP_RANKS_PER_NODE, a test aid, replaces the
layout in the core; this module does not read it.
"""

import os
import socket

from .._core.errors import ConfigError, error

# (process group, LOCAL_* and RANK/WORLD_SIZE as read) -> node_ranks.
_known = {}

_VARS = ("LOCAL_RANK", "LOCAL_WORLD_SIZE", "RANK", "WORLD_SIZE")


def node_ranks(link, call):
    """The group ranks of link's node, ascending (link: a TorchComm).
    call names the API in messages ("ctx.save_ranks()").  ConfigError on
    every rank when the LOCAL_* variables of any rank do not describe its
    node."""
    dist = link.dist
    env = tuple(os.environ.get(v) or None for v in _VARS)
    key = (link.group if link.group is not None else dist.group.WORLD, env)
    if key not in _known:
        if env[0] is None and env[1] is None:
            _known[key] = _by_host(link)
        else:
            _known[key] = _from_env(link, call, env)
    return _known[key]


def _by_host(link):
    hosts = [None] * link.size
    link.dist.all_gather_object(hosts, socket.gethostname(),
                                group=link.group)
    mine = hosts[link.rank]
    return [r for r in range(link.size) if hosts[r] == mine]


def _from_env(link, call, env):
    """The node from LOCAL_RANK/LOCAL_WORLD_SIZE, agreed on every rank of
    the group with one reduction: one rank's problem is refused on all,
    and the nodes must cover the group exactly once."""
    problem, first, count = _env_problem(link.dist, env)
    node = [] if problem else link.group_ranks_of(range(first,
                                                        first + count))
    # Each node's leader (its lowest rank in the group) counts its ranks.
    leads = len(node) if node and node[0] == link.rank else 0
    flagged, covered = link.agree(problem is not None, leads)
    if problem:
        raise error(ConfigError, "%s refused on every rank: %s. torchrun "
                    "sets LOCAL_RANK and LOCAL_WORLD_SIZE for every rank; "
                    "with another launcher set both as it does (or unset "
                    "both: ranks are then grouped by host name)"
                    % (call, problem))
    if flagged:
        their = "its" if flagged.count == 1 else "their"
        raise error(ConfigError, "%s refused on every rank: %s found "
                    "LOCAL_RANK/LOCAL_WORLD_SIZE that do not describe %s "
                    "node (%s own error says how)"
                    % (call, flagged, their, their))
    if covered != link.size:
        raise error(ConfigError, "%s refused on every rank: the nodes that "
                    "LOCAL_RANK and LOCAL_WORLD_SIZE describe hold %d ranks "
                    "in all, but the group has %d: every rank of a node "
                    "needs the node's LOCAL_WORLD_SIZE, and its ranks "
                    "consecutive RANKs, as torchrun sets them"
                    % (call, covered, link.size))
    return node


def _int(text):
    try:
        return int(text)
    except (TypeError, ValueError):
        return None


def _env_problem(dist, env):
    """(None, first global rank of the node, its size), or (what is wrong
    with this rank's variables, 0, 0)."""
    lr, lws, rank, world = env
    g, w = dist.get_rank(), dist.get_world_size()
    if lr is None or lws is None:
        have, lack = (("LOCAL_RANK", "LOCAL_WORLD_SIZE") if lws is None
                      else ("LOCAL_WORLD_SIZE", "LOCAL_RANK"))
        return "on rank %d %s is set but %s is not" % (g, have, lack), 0, 0
    for name, text in zip(_VARS, env):
        if text is not None and _int(text) is None:
            return "on rank %d %s=%r is not an integer" % (g, name, text), 0, 0
    if rank is not None and _int(rank) != g:
        return ("on rank %d RANK=%s, another rank (torch.distributed's "
                "rank is the one that counts)" % (g, rank)), 0, 0
    if world is not None and _int(world) != w:
        return ("on rank %d WORLD_SIZE=%s but torch.distributed's world has "
                "%d ranks" % (g, world, w)), 0, 0
    lr, lws = _int(lr), _int(lws)
    if not 0 <= lr < lws:
        return ("on rank %d LOCAL_RANK=%d with LOCAL_WORLD_SIZE=%d (need 0 "
                "<= LOCAL_RANK < LOCAL_WORLD_SIZE)" % (g, lr, lws)), 0, 0
    first = g - lr
    if first < 0 or first + lws > w:
        return ("on rank %d LOCAL_RANK=%d and LOCAL_WORLD_SIZE=%d make its "
                "node ranks %d..%d, outside the job's 0..%d"
                % (g, lr, lws, first, first + lws - 1, w - 1)), 0, 0
    return None, first, lws
