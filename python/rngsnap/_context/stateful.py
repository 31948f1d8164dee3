"""Layer context: ctx.state_dict() / ctx.load_state_dict(state), the
Stateful protocol of torch.save, DCP, accelerate and Lightning
(docs/python.md, "Stateful").

The dict holds save_bytes() (the C method, docs/python.md "Bytes") under
one key per rank, "rank/<r>": DCP keeps one value of a key that every rank
has, accelerate and Lightning write rank 0's dict only (hence
gather=True, every rank's bytes on every rank).
"""
import collections.abc
import struct

from .comm import TorchComm
from .._core.errors import (BY_NAME, CorruptError, Error, MismatchError,
                            error)

FORMAT = "rngsnap-state-dict"
VERSION = 1


def save(ctx, gather=False, group=None):
    """{"format": "rngsnap-state-dict", "version": 1, "world_size": W,
    "rank/<r>": save_bytes()}: this rank's checkpoint under its own
    key.  gather=True (collective over torch.distributed, every rank
    of group calls it): every rank's bytes, "rank/0" .. "rank/<W-1>",
    on every rank, for frameworks that write rank 0's dict only."""
    state = {"format": FORMAT, "version": VERSION,
             "world_size": ctx.world_size}
    if not gather:
        state["rank/%d" % ctx.rank] = ctx.save_bytes()
        return state
    for r, blob in enumerate(gather_bytes(ctx, TorchComm(group))):
        state["rank/%d" % r] = blob
    return state


def load(ctx, state):
    """Restore this rank from a dict of state_dict(): its own
    "rank/<r>" bytes, all or nothing (load_bytes).  MismatchError when
    the dict has another world size or no bytes of this rank (never
    another rank's state); CorruptError when it is not such a dict."""
    if not isinstance(state, collections.abc.Mapping):
        raise TypeError("load_state_dict: state is %s, not the dict "
                        "ctx.state_dict() returns"
                        % type(state).__name__)
    head = "load_state_dict"
    if state.get("format") != FORMAT:
        raise error(CorruptError, "%s: not an rngsnap state dict (its "
                    "\"format\" is %r, expected %r); nothing restored"
                    % (head, state.get("format"), FORMAT))
    version = state.get("version")
    if version != VERSION:
        raise error(MismatchError, "%s: state dict version %r, this "
                    "rngsnap reads version %d; nothing restored"
                    % (head, version, VERSION))
    world = state.get("world_size")
    if type(world) is not int or world < 1:
        raise error(CorruptError, "%s: \"world_size\" is %r, not a "
                    "positive int; nothing restored" % (head, world))
    ranks = []
    for key in state:
        r = rank_of_key(key)
        if r is None and key not in ("format", "version", "world_size"):
            raise error(CorruptError, "%s: unknown key %r (an rngsnap "
                        "state dict holds format, version, world_size and "
                        "rank/<r>); nothing restored" % (head, key))
        if r is not None and r >= world:
            raise error(CorruptError, "%s: key %r is past world_size %d;"
                        " nothing restored" % (head, key, world))
        if r is not None:
            ranks.append(r)
    if world != ctx.world_size:
        raise error(MismatchError, "%s: the state dict was saved by %d "
                    "rank%s, this job has %d (this is rank %d); nothing "
                    "restored. Resume with the world size that saved"
                    % (head, world, "" if world == 1 else "s",
                       ctx.world_size, ctx.rank))
    key = "rank/%d" % ctx.rank
    if key not in state:
        held = ", ".join("rank/%d" % r for r in sorted(ranks))
        raise error(MismatchError, "%s: no %r in the state dict (it "
                    "holds %s of world size %d); nothing restored. A "
                    "framework that writes rank 0's dict only "
                    "(accelerate, Lightning) needs "
                    "state_dict(gather=True) on every rank"
                    % (head, key, held or "no rank's bytes", world))
    blob = state[key]
    if not isinstance(blob, (bytes, bytearray, memoryview)):
        raise error(CorruptError, "%s: %r is %s, not bytes; nothing "
                    "restored" % (head, key, type(blob).__name__))
    ctx.load_bytes(blob)


def rank_of_key(key):
    """r of a "rank/<r>" key of a state dict (no sign, no leading
    zero), else None."""
    if not isinstance(key, str) or not key.startswith("rank/"):
        return None
    digits = key[5:]
    if not digits.isdigit() or not digits.isascii() or \
            (digits[0] == "0" and digits != "0"):
        return None
    return int(digits)


def gather_bytes(ctx, comm):
    """Every rank's save_bytes(), in rank order, on every rank.  First
    every rank tells its rank, world size, length and how its save
    failed, if it did: then every rank raises together instead of
    leaving the others waiting in the next collective."""
    try:
        blob, failed = ctx.save_bytes(), None
    except Error as e:
        blob, failed = b"", e
    rec = struct.Struct("<iiQi24s24s")  # the last two: class, .name
    mine = rec.pack(ctx.rank, ctx.world_size, len(blob),
                    getattr(failed, "code", 0) or 0,
                    type(failed).__name__.encode() if failed else b"",
                    (getattr(failed, "name", "") or "").encode())
    raw = comm.allgather(mine)
    recs = [rec.unpack_from(raw, i * rec.size) for i in range(comm.size)]
    bad = [i for i, r in enumerate(recs) if r[4].rstrip(b"\0")]
    if failed:
        raise failed
    if bad:
        code, cls, name = recs[bad[0]][3:]
        cls = cls.rstrip(b"\0").decode()
        e = BY_NAME.get(cls, Error)(
            "state_dict(gather=True): rank%s %s could not save (%s there); "
            "no rank's state dict is complete" % (
                "s" if len(bad) > 1 else "", ", ".join(map(str, bad)), cls))
        e.code, e.name = code, name.rstrip(b"\0").decode()
        raise e
    wrong = [i for i, r in enumerate(recs)
             if (r[0], r[1]) != (i, comm.size)]
    if wrong:
        i = wrong[0]
        raise error(MismatchError, "state_dict(gather=True): group rank "
                    "%d of %d has a context of rank %d of %d (set_rank, "
                    "or RANK/WORLD_SIZE); each rank's context must be its "
                    "group rank" % (i, comm.size, recs[i][0], recs[i][1]))
    most = max(r[2] for r in recs)
    raw = comm.allgather(blob + b"\0" * (most - len(blob)))
    return [raw[i * most:i * most + r[2]] for i, r in enumerate(recs)]
