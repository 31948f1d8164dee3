"""accelerate resumed inside an epoch with shuffle=True and
skip_first_batches (a user measured 15 of 64 samples seen twice and 15
never, accelerate 1.14): plain, samples seen twice and never in the
resumed epoch; rngsnap's ResumableSampler, none, bit for bit."""
import sys

import pytest

accelerate = pytest.importorskip(
    "accelerate",
    reason="accelerate is not importable for %s" % sys.executable)
import bugrun  # noqa: E402

JOB, SAMPLES, STEPS_PER_EPOCH, KILL_AT = "accelerate_skip_job.py", 64, 16, 5


def report(what, counts, diff):
    print("\naccelerate %s, killed at step %d of %d, %s: %s; resumed steps "
          "differing from the uninterrupted run: %d" % (
              accelerate.__version__, KILL_AT, STEPS_PER_EPOCH, what,
              ", ".join("epoch %d: %d seen twice, %d never" % (e, d, m)
                        for e, (d, m) in counts.items()), diff["steps"]))


def test_plain_skip_first_batches_sees_samples_twice_and_never():
    r = bugrun.Runs(JOB, KILL_AT).ok()
    counts = bugrun.seen_twice_and_never(r, SAMPLES)
    report("plain", counts, bugrun.resumed_differing(r))
    assert len(bugrun.steps(r.killed)) == KILL_AT
    twice, never = counts[0]
    assert twice > 0 and never > 0, counts  # accelerate fixed it: say so
    assert counts[1] == (0, 0), counts  # the next epoch is whole again


def test_rngsnap_sampler_sees_each_sample_once_bit_for_bit():
    r = bugrun.Runs(JOB, KILL_AT, "--rngsnap").ok()
    counts, diff = bugrun.seen_twice_and_never(r, SAMPLES), \
        bugrun.resumed_differing(r)
    report("rngsnap", counts, diff)
    assert counts == {0: (0, 0), 1: (0, 0)}, counts
    assert diff["steps"] == 0, diff
