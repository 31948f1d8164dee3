"""Layer context: what rngsnap.Context adds in Python to the binding's
context (context.py): the generators a job owns (generators.py), seeding
them (seeding.py), tags (tag.py), the Stateful protocol (state_dict.py),
and the checks in front of every save and load (hooks.py: the order of a
resumed job, order.py; re-seeding after the load, reseed.py and
mt_chain.py; generators in no checkpoint, untracked.py and
process_wide.py).  Over rngsnap._core; imports
no torch, NumPy or framework at import time (comm.py imports
torch.distributed when a collective is called)."""
