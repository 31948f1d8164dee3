"""The transformers Trainer resumed inside an epoch with a dataset that
draws random augmentation (transformers#39215: the resumed epoch's next
batch is fetched before _load_rng_state): plain, the resumed run is not
the uninterrupted one; rngsnap's callback (trainer_recipe.py) refuses it
with OrderError and trains no step, since no callback runs between that
fetch and that restore (docs/python.md, "transformers Trainer")."""
import pytest

transformers = pytest.importorskip(
    "transformers",
    reason="transformers is not importable for this interpreter")
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
