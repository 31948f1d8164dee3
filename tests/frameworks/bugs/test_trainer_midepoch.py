"""The transformers Trainer resumed inside an epoch with a dataset that
draws random augmentation (transformers#39215: the resumed epoch's next
batch is fetched before _load_rng_state): plain, the resumed run is not
the uninterrupted one.  With rngsnap's callback (trainer_recipe.py) the
resume is refused with OrderError and trains no step: no callback runs
between that fetch and that restore, and the batch after the checkpoint
was augmented before it was written (accelerate's loader fetches one
batch ahead), so no generator state in any checkpoint reproduces it.
With the augmentation keyed by (epoch, index) (EpochKeyed), the fetch
moves no generator a checkpoint holds and the resume is bit for bit."""
import sys

import pytest

transformers = pytest.importorskip(
    "transformers",
    reason="transformers is not importable for %s" % sys.executable)
import bugrun  # noqa: E402

JOB, KILL_AT = "trainer_midepoch_job.py", 4  # step 4 of 6 in epoch 0


def test_plain_resume_inside_an_epoch_differs():
    r = bugrun.Runs(JOB, KILL_AT).ok()
    diff = bugrun.resumed_differing(r)
    print("\ntransformers %s, plain, resumed at step %d (inside epoch 0): "
          "%d of %d resumed steps differ (samples taken: %d, their "
          "augmentation: %d, loss: %d)" % (
              transformers.__version__, KILL_AT, diff["steps"],
              len(bugrun.steps(r.resumed)), diff["order"], diff["batch"],
              diff["loss"]))
    # The order is the Trainer's seeded sampler's, and right; the
    # augmentation and dropout draws are not.
    assert diff["order"] == 0, diff
    assert diff["batch"] > 0 and diff["loss"] > 0, diff  # fixed: say so


def test_rngsnap_refuses_resume_inside_an_epoch():
    r = bugrun.Runs(JOB, KILL_AT, "--rngsnap")
    trained = len(bugrun.steps(r.resumed))
    print("\ntransformers %s, rngsnap, resumed at step %d: exit %d, "
          "OrderError %s, %d steps trained" % (
              transformers.__version__, KILL_AT, r.rc,
              "raised" if "rngsnap.OrderError" in r.stderr else "not raised",
              trained))
    assert r.rc != 0 and "rngsnap.OrderError: load refused, nothing " \
        "restored" in r.stderr and "transformers#39215" in r.stderr, \
        r.stderr[-3000:]
    assert trained == 0


def test_rngsnap_keyed_augmentation_resumes_inside_an_epoch_exactly():
    r = bugrun.Runs(JOB, KILL_AT, "--rngsnap", "--keyed").ok()
    diff = bugrun.resumed_differing(r)
    print("\ntransformers %s, rngsnap with EpochKeyed, resumed at step %d: "
          "%d of %d resumed steps differ" % (
              transformers.__version__, KILL_AT, diff["steps"],
              len(bugrun.steps(r.resumed))))
    assert diff["steps"] == 0 and bugrun.steps(r.resumed), diff
