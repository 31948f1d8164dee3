"""Lightning resumed with Trainer.fit(ckpt_path=...) (its checkpoint holds
no generator, Lightning#18780): plain, the resumed epochs are not the
uninterrupted run's; with rngsnap's callback, bit for bit."""
import importlib
import sys

import pytest

import bugrun

for name in ("lightning", "pytorch_lightning"):
    try:
        lightning = importlib.import_module(name)
        break
    except ImportError:
        lightning = None
if lightning is None:
    pytest.skip("neither lightning nor pytorch_lightning is importable for "
                "%s" % sys.executable, allow_module_level=True)

JOB, KILL_AT = "lightning_ckpt_job.py", 1  # the end of epoch 1 of 3


def report(what, r, diff):
    print("\n%s %s, %s, resumed from epoch-%d.ckpt: %d of %d resumed steps "
          "differ (samples taken: %d, their augmentation: %d, loss: %d)" % (
              lightning.__name__, lightning.__version__, what, KILL_AT,
              diff["steps"], len(bugrun.steps(r.resumed)), diff["order"],
              diff["batch"], diff["loss"]))


def test_plain_ckpt_path_resume_differs():
    r = bugrun.Runs(JOB, KILL_AT).ok()
    diff = bugrun.resumed_differing(r)
    report("plain", r, diff)
    assert diff["steps"] > 0, diff  # Lightning restores RNG now: say so


def test_rngsnap_ckpt_path_resume_is_exact():
    r = bugrun.Runs(JOB, KILL_AT, "--rngsnap").ok()
    diff = bugrun.resumed_differing(r)
    report("rngsnap", r, diff)
    assert diff["steps"] == 0 and bugrun.steps(r.resumed), diff
