"""rngsnap for torch.distributed.checkpoint (DCP): RngState(ctx), the
Stateful entry of the state dict (docs/integrations/dcp.md).

    state = {"model": model.state_dict(), "rng": RngState(ctx)}
    dcp.save(state, checkpoint_id=path)     # every rank
    dcp.load(state, checkpoint_id=path)     # every rank, before its loop

Rank-keyed: dcp.save writes one value of a key that several ranks hold
(torch's _dedup_save_plans keeps one rank's), so each rank's bytes are
under their own key, "rank/<r>" (ctx.state_dict()), and each rank loads
its own.  dcp.load asks state_dict() first, for the keys to read, when a
resumed context cannot save yet: until its load, RngState gives this
rank's keys with no values, and the values read replace them.
"""
from torch.distributed.checkpoint.stateful import Stateful

import rngsnap

__all__ = ["RngState"]


class RngState(Stateful):
    """A context as DCP's Stateful: this rank's rngsnap checkpoint (every
    stream, every tracked generator, every app state) in the DCP
    checkpoint, restored all or nothing by dcp.load."""

    def __init__(self, ctx):
        if not isinstance(ctx, rngsnap.Context):
            raise TypeError("RngState(ctx): ctx is %s, not an "
                            "rngsnap.Context" % type(ctx).__name__)
        self.ctx = ctx

    def state_dict(self):
        awaiting = _awaiting_load(self.ctx)
        if not getattr(self.ctx, "_trackers", True):
            # Saved, it would hold none of them (dropout, the job's
            # sampling), and the resumed run would differ, silently.
            raise rngsnap.InvalidError(
                "rngsnap.integrations.dcp.RngState: the context tracks none "
                "of torch's, NumPy's and random's generators; nothing %s: "
                "call rngsnap.torch.track(ctx) once, after building the "
                "model and before dcp.save or dcp.load"
                % ("restored" if awaiting else "saved"))
        if awaiting:  # dcp.load's template: the keys
            return dict.fromkeys(
                ("format", "version", "world_size",
                 "rank/%d" % self.ctx.rank))
        return self.ctx.state_dict()

    def load_state_dict(self, state_dict):
        # A key the checkpoint lacks keeps the template's None (only a
        # planner with allow_partial_load lets dcp.load go on without it).
        state = {k: v for k, v in state_dict.items() if v is not None}
        if not state:
            raise rngsnap.MismatchError(
                "rngsnap.integrations.dcp.RngState: the checkpoint holds no "
                "rngsnap state under this entry (it was saved without "
                "RngState); nothing restored; resume from a checkpoint "
                "saved with RngState(ctx) under the same key")
        self.ctx.load_state_dict(state)


def _awaiting_load(ctx):
    """Opened with resume=True and not loaded yet: the core's resume gate
    refuses a draw then (a draw of 0 values draws nothing otherwise)."""
    for stream in ctx.streams():
        try:
            stream.generate("u32", 0)
        except rngsnap.OrderError:
            return True
        return False
    return False
