"""A re-seed after the restore: accelerate.utils.set_seed called after
Accelerator.load_state.  Plain, the resume is exact without it and
silently different with it; rngsnap must report it (issue 22: OrderError
at the re-seed or at the next save, in a resumed context)."""
import sys

import pytest

accelerate = pytest.importorskip(
    "accelerate",
    reason="accelerate is not importable for %s" % sys.executable)
import bugrun  # noqa: E402

JOB, KILL_AT = "accelerate_reseed_job.py", 1  # the end of epoch 1 of 3


def test_plain_reseed_after_load_state_diverges_silently():
    exact = bugrun.resumed_differing(bugrun.Runs(JOB, KILL_AT).ok())
    r = bugrun.Runs(JOB, KILL_AT, "--reseed").ok()  # exit 0: nothing said
    diff = bugrun.resumed_differing(r)
    print("\naccelerate %s, plain, resumed from epoch-%d: %d resumed steps "
          "differ without a re-seed, %d of %d with set_seed after load_state "
          "(samples taken: %d, augmentation: %d, loss: %d), exit %d" % (
              accelerate.__version__, KILL_AT, exact["steps"], diff["steps"],
              len(bugrun.steps(r.resumed)), diff["order"], diff["batch"],
              diff["loss"], r.rc))
    assert exact["steps"] == 0, exact  # accelerate's own restore is exact
    assert diff["steps"] > 0, diff


def test_rngsnap_reports_reseed_after_load_state():
    r = bugrun.Runs(JOB, KILL_AT, "--rngsnap", "--reseed")
    print("\naccelerate %s, rngsnap, set_seed after load_state: exit %d, "
          "OrderError %s, %d steps trained, %d checkpoints saved" % (
              accelerate.__version__, r.rc,
              "raised" if "rngsnap.OrderError" in r.stderr else "not raised",
              len(bugrun.steps(r.resumed)),
              sum(x.startswith("checkpoint ") for x in r.resumed)))
    assert r.rc != 0 and "rngsnap.OrderError" in r.stderr, r.stderr[-3000:]
    # reported at the re-seed or at the next save: no checkpoint after it
    assert not any(x.startswith("checkpoint ") for x in r.resumed)
