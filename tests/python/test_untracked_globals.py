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


# ---- issue 31, item 1: a job that saves often --------------------------------
# The scan of the whole process is rate-limited (a save scans again once
# 100 times the last scan's time has passed), so a job saving every few
# seconds was never warned.  The three process-wide generators are
# compared at every save instead.  The clock here advances one tick per
# reading, so the first save's scan costs a tick and no later save (a
# tick or so after it, far below 100 ticks) is due another: what is
# reported comes from the per-save comparison alone, whatever the
# machine's speed.

OFTEN = r"""
import itertools, sys, warnings
import numpy as np, random, torch
import rngsnap, rngsnap.torch
from rngsnap._context import untracked
warnings.simplefilter("always")
untracked._clock = itertools.count().__next__  # no second scan is due
mode = sys.argv[1]
ctx = rngsnap.Context(untracked="warn")
ctx.seed_all(1)
if mode == "ignore-torch":
    ctx.ignore_generator(torch.default_generator)
if mode == "other-context-tracks":
    other = rngsnap.Context(untracked="ignore")
    rngsnap.torch.track(other)
torch.nn.Linear(4, 4)  # set-up draws
counts = []
for step in range(5):
    with warnings.catch_warnings(record=True) as w:
        for draw in sys.argv[2:]:
            {"torch": lambda: torch.rand(3),
             "numpy": lambda: np.random.rand(3),
             # one normal a step: every other one only takes the cached
             # gaussian, which moves no word of the Mersenne Twister
             "gauss": lambda: np.random.standard_normal(),
             "random": lambda: random.random()}[draw]()
        ctx.save_bytes()
    found = [str(x.message) for x in w
             if x.category is rngsnap.UntrackedGeneratorWarning]
    counts.append(len(found))
    if found and step == 1:
        print(found[0])
print("warnings per save:", counts)
print("scans:", untracked._schedule.last_end)
"""


def test_every_save_reports_the_globals_drawn_since_the_last():
    out = run_py(OFTEN, "plain", "torch", "numpy", "random").stdout
    # the first save only records (set-up draws are repeated on resume)
    assert "warnings per save: [0, 1, 1, 1, 1]" in out, out
    assert "scans: 1\n" in out  # the first save's only: ended at tick 1
    assert ("3 generators live in this process but are in no checkpoint, "
            "so a resumed run would not restore them:\n"
            "  torch.Generator (cpu) at torch.default_generator\n"
            "  numpy.random.RandomState(MT19937) at numpy.random "
            "(np.random.*)\n"
            "  random.Random at random (random.*)\n"
            "  " + FIX) in out, out


def test_every_save_reports_only_what_drew():
    out = run_py(OFTEN, "plain", "random").stdout
    assert "warnings per save: [0, 1, 1, 1, 1]" in out, out
    assert "1 generator lives" in out and "random.Random at random" in out
    assert "torch.Generator" not in out and "numpy.random" not in out


def test_a_draw_of_the_cached_gaussian_alone_is_reported():
    """NumPy's legacy normal draws two values and caches one: the next
    normal takes the cache and moves no word of the key (the per-save
    check reads the key cheaply, and the cached gaussian when one was
    there at the previous save)."""
    out = run_py(OFTEN, "plain", "gauss").stdout
    assert "warnings per save: [0, 1, 1, 1, 1]" in out, out
    assert "numpy.random.RandomState(MT19937) at numpy.random" in out


def test_no_draws_between_saves_no_report():
    out = run_py(OFTEN, "plain").stdout
    assert "warnings per save: [0, 0, 0, 0, 0]" in out, out


def test_an_ignored_global_is_not_reported():
    out = run_py(OFTEN, "ignore-torch", "torch").stdout
    assert "warnings per save: [0, 0, 0, 0, 0]" in out, out


def test_globals_another_open_context_tracks_are_held():
    out = run_py(OFTEN, "other-context-tracks", "torch", "numpy").stdout
    assert "warnings per save: [0, 0, 0, 0, 0]" in out, out


ERROR_OFTEN = r"""
import itertools, sys
import torch
import rngsnap
from rngsnap._context import untracked
untracked._clock = itertools.count().__next__
ctx = rngsnap.Context(untracked="error")
ctx.seed_all(1)
for f in ctx.untracked_generators():  # the interpreter's own, if any
    ctx.ignore_generator(f.obj)
ctx.save(sys.argv[1] + "/a")
torch.rand(2)
try:
    ctx.save(sys.argv[1] + "/b")
except rngsnap.UntrackedGeneratorError as e:
    print("refused:", str(e).splitlines()[0])
import os
print("written:", os.path.exists(sys.argv[1] + "/b"))
"""


def test_error_mode_refuses_at_every_save(tmp_path):
    out = run_py(ERROR_OFTEN, str(tmp_path)).stdout
    assert ("refused: save refused, nothing written (untracked=\"error\"): "
            "1 generator lives in this process but is in no checkpoint, so "
            "a resumed run would not restore it:") in out, out
    assert "written: False" in out
