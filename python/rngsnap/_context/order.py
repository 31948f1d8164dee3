"""Layer context: the order check of a resumed context (docs/python.md,
"Drawn before restore"): a load is refused, changing nothing, when a
generator rngsnap.torch.track() or ctx.register_generator() recorded has
changed before it (something drew before the restore), naming each one
and saying where the draw usually comes from.
"""

from . import comm
from .._core.errors import OrderError, error


def awaiting_load(ctx):
    """Is ctx opened with resume=True and still without a load?  The
    core's own resume gate, read by the binding."""
    return ctx._awaiting_load()


TRACKED = "rngsnap.torch.track()"
REGISTERED = "ctx.register_generator()"

# What to do, per call that recorded the generators that moved.  Building
# the model draws from torch.cpu (torch.nn layers' initial weights) as
# surely as a DataLoader does, and is the draw a job makes first.
_ADVICE = {
    TRACKED: "building the model draws from torch.cpu too (torch.nn layers "
             "take their initial weights from it), as do creating a "
             "DataLoader iterator and fetching a batch: call "
             "rngsnap.torch.track(ctx) after the model is built, right "
             "before the load",
    REGISTERED: "a DataLoader iterator created or a batch fetched draws "
                "from its generator: call ctx.register_generator() right "
                "before the load",
}

_ADVICE_UNTORCHED = ("creating a DataLoader iterator or fetching a batch "
                     "draws from them: call rngsnap.torch.track(ctx) right "
                     "before the load")


def _plural(names, one, many):
    return one if len(names) == 1 else many


def order_error(groups, where=""):
    """The OrderError of a load refused because generators changed since
    the call that recorded them: groups is [(names, since)], each group
    non-empty, every generator that moved named."""
    changed = ["generator%s %s changed between %s and load()" % (
        _plural(names, "", "s"), ", ".join(names), since)
        for names, since in groups]
    every = [n for names, _ in groups for n in names]
    advice = [_ADVICE[since] for names, since in groups if since in _ADVICE
              and (since != TRACKED or any(n.startswith("torch.")
                                           for n in names))]
    advice += [_ADVICE_UNTORCHED for names, since in groups
               if since == TRACKED and not any(n.startswith("torch.")
                                               for n in names)]
    return error(OrderError, (
        "load refused, nothing restored%s: %s (something drew from %s "
        "before the restore). %s; load first, then draw") % (
            where, "; ".join(changed), _plural(every, "it", "them"),
            "; ".join(advice)[:1].upper() + "; ".join(advice)[1:]))


def check_order(groups, method, args, kw):
    """Refuse a load (OrderError) when generators changed since the call
    that recorded them; groups is [(names, since, what)], what naming them
    for load_ranks, which decides on every rank together (its group:
    args[1] or group=), naming the ranks where they drew."""
    drawn = [(names, since) for names, since, _ in groups if names]
    if method == "load_ranks":
        # One all_reduce per group, on every rank alike (each rank has the
        # same groups), so that the others can be named group by group.
        group = kw.get("group", args[1] if len(args) > 1 else None)
        elsewhere = []
        for names, since, what in groups:
            ranks = comm.ranks_flagged(bool(names), group)
            if ranks:
                elsewhere.append("%s drew from %s between %s and "
                                 "load_ranks()" % (ranks, what, since))
        if elsewhere and not drawn:
            raise error(OrderError, (
                "load_ranks refused on every rank, nothing restored: %s")
                % "; ".join(elsewhere))
    if drawn:
        raise order_error(drawn)
