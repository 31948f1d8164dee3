"""Forgetting rngsnap.torch.track(ctx) (issue 22, item 2): torch's,
NumPy's and random's global generators counted as held by the untracked
report even when nothing tracked them, so a job drawing torch.rand
without track() resumed wrong with no warning.  Now a save reports each
global generator that drew since the previous save (and since seeded),
with the fix; draws at set-up before the first save (building the model)
and a re-seed alone (a set_seed helper) are not reported.  Each job runs
in a fresh interpreter: the globals start as at import."""
import warnings  # noqa: F401  (the jobs use it)

from conftest import run_py

JOB = r"""
import sys, warnings
import numpy as np, random, torch
import rngsnap, rngsnap.torch
warnings.simplefilter("always")
ctx = rngsnap.Context()
if sys.argv[1] == "track":
    rngsnap.torch.track(ctx)
rngsnap._context.untracked.RESCAN_FACTOR = 0  # every save scans
torch.manual_seed(1); np.random.seed(1); random.seed(1)  # a set_seed
torch.nn.Linear(4, 4)  # set-up draws, before the first checkpoint
with warnings.catch_warnings(record=True) as w:
    ctx.save_bytes()
    torch.manual_seed(2)  # a re-seed alone
    for draw in sys.argv[2:]:  # "training"
        {"torch": lambda: torch.rand(3), "numpy": lambda: np.random.rand(3),
         "random": lambda: random.random()}[draw]()
    ctx.save_bytes()
print("\n---\n".join(str(x.message) for x in w
                    if x.category is rngsnap.UntrackedGeneratorWarning))
"""

FIX = ("(drawn from since the last save, in no checkpoint: torch's, NumPy's and "
       "random's global generators are held by rngsnap.torch.track(ctx) "
       "(call it after building the model, before the load))")


def test_torch_rand_without_track_is_reported():
    out = run_py(JOB, "plain", "torch").stdout
    assert "1 generator lives in this process but is in no checkpoint" in out
    assert "torch.Generator (cpu) at torch.default_generator" in out, out
    assert FIX in out
    assert "numpy" not in out and "random.Random" not in out  # only seeded


def test_each_global_drawn_is_reported():
    out = run_py(JOB, "plain", "numpy", "random").stdout
    assert "2 generators live" in out, out
    assert "numpy.random.RandomState(MT19937)" in out
    assert "random.Random" in out
    assert "torch.Generator" not in out
    assert FIX in out


def test_with_track_nothing_is_reported():
    assert run_py(JOB, "track", "torch", "numpy", "random").stdout.strip() \
        == ""


def test_seeded_only_is_not_reported():
    assert run_py(JOB, "plain").stdout.strip() == ""
