"""The mid-epoch matrix of rngsnap.torch.ResumableSampler (issue 18): a
DataLoader job (loader_job.py) SIGKILLed at a random checkpoint, just after
its save completed, and resumed with another worker count, yields every
batch - the samples, their augmentation and the training loop's own draws -
bit for bit as the job that was never interrupted (run with 0 workers).

Each worker process costs a torch import under spawn, so the runs cover
the factors pairwise rather than as a full product: every pair of worker
count (1, 2, 3) and start method (fork, spawn, forkserver), of worker count
and persistent_workers (on, off), and of start method and persistent
workers occurs in some run; 0 workers is run before and after a kill; the
worker count changes on every resume.  Kill points are drawn at random
(RNGSNAP_TEST_SEED sets the seed; every failure message names it)."""
import os
import random
import signal
import subprocess
import sys

import pytest

from loader_job import batches

HERE = os.path.dirname(os.path.abspath(__file__))
JOB = os.path.join(HERE, "loader_job.py")
BATCHES = 9 * 2  # loader_job: 26 samples in batches of 3, 2 epochs
SEED = int(os.environ.get("RNGSNAP_TEST_SEED") or
           random.SystemRandom().randrange(1 << 32))

# (workers, persistent_workers, start method) before the kill -> on resume.
SCENARIOS = [
    ((0, False, "fork"), (2, False, "fork")),
    ((1, True, "fork"), (3, False, "spawn")),
    ((2, True, "spawn"), (0, False, "fork")),
    ((3, True, "forkserver"), (1, False, "spawn")),
    ((2, False, "forkserver"), (1, True, "forkserver")),
    ((3, True, "fork"), (2, True, "fork")),
]


def start(d, run, *extra):
    workers, persistent, method = run
    args = [sys.executable, JOB, d, "--workers", str(workers), "--method",
            method] + (["--persistent"] if persistent else []) + list(extra)
    return subprocess.Popen(args, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, start_new_session=True)


def finish(p):
    out, err = p.communicate(timeout=600)
    assert p.returncode == 0, out + err
    return out.splitlines()


def kill_at_checkpoint(p, n):
    """Let the job (run with --sync) go on after each checkpoint until the
    n-th, then SIGKILL it and its workers; returns the lines it printed."""
    seen = []
    for line in p.stdout:
        seen.append(line)
        if line.startswith("saved"):
            if len(batches(seen)) == n:
                os.killpg(p.pid, signal.SIGKILL)
                break
            p.stdin.write("go\n")
            p.stdin.flush()
    p.communicate(timeout=120)  # reaps it and closes its pipes
    assert p.returncode == -signal.SIGKILL, "".join(seen)
    return seen


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory):
    d = str(tmp_path_factory.mktemp("whole"))
    return batches(finish(start(d, (0, False, "fork"))))


def global_number(key):
    """Batch (epoch, taken) counted from 1 over the whole job."""
    return key[0] * (BATCHES // 2) + key[1]


@pytest.mark.parametrize("before,after", SCENARIOS, ids=[
    "%d%s%s-to-%d%s%s" % (b[0], "p" if b[1] else "", b[2] if b[0] else "",
                          a[0], "p" if a[1] else "", a[2] if a[0] else "")
    for b, a in SCENARIOS])
def test_killed_at_a_random_batch_resumes_every_batch(tmp_path, uninterrupted,
                                                      before, after):
    assert len(uninterrupted) == BATCHES
    kill = random.Random("%d %r %r" % (SEED, before, after)).randrange(
        1, BATCHES)
    why = "RNGSNAP_TEST_SEED=%d: killed after batch %d of %d" % (
        SEED, kill, BATCHES)
    d = str(tmp_path)
    seen = batches(kill_at_checkpoint(start(d, before, "--sync"), kill))
    resumed = batches(finish(start(d, after, "--resume")))
    assert sorted(map(global_number, seen)) == list(range(1, kill + 1)), why
    # It resumes right after the checkpoint it was killed at...
    assert sorted(map(global_number, resumed)) == list(
        range(kill + 1, BATCHES + 1)), why
    # ...and every batch, before the kill and after, is the uninterrupted
    # job's: the same samples, augmentation and main-process draws.
    for k, v in list(seen.items()) + list(resumed.items()):
        assert v == uninterrupted[k], (why, k)
