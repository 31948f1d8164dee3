"""Data-loader workers and keyed streams (issue 10 item 4): a real
torch.utils.data.DataLoader with worker processes, random augmentation
drawn from torch, NumPy and random inside __getitem__, each sample seeded
from derive(epoch, index).  A job SIGKILLed mid-epoch (its checkpoint
holding the sampler position as an app state) and resumed - even with
another number of workers - yields exactly the batches, bit for bit, of
the job that was never interrupted."""
import os
import signal
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))

# The dataset and sampler of train_example.py, without the model: every
# batch printed as the hex of its tensors' bytes.
JOB = """
import os, struct, sys
sys.path.insert(0, %r)
import torch, rngsnap, rngsnap.torch
from train_example import Augmented, Shuffle, BATCH
d, workers, resume = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "resume"
hold = int(sys.argv[4])  # after this many batches, stand still (0: never)
printed = 0
ck = os.path.join(d, "ck.rngsnap")
ctx = rngsnap.Context(resume=resume)
if not resume:
    ctx.seed_all(99)
data = Augmented(ctx.stream("cpu", 0, "augment"))
sampler = Shuffle(ctx.stream("cpu", 0, "default"))
pos = [0, 0]  # epoch, batches done: the sampler position
rngsnap.torch.track(ctx)
ctx.register_state("loader.position", save=lambda: struct.pack("<II", *pos),
                   load=lambda b: pos.__setitem__(slice(None), struct.unpack("<II", b)))
if resume:
    ctx.load(ck)
while pos[0] < 2:
    data.epoch = sampler.epoch = pos[0]
    sampler.start = pos[1] * BATCH
    loader = torch.utils.data.DataLoader(
        data, batch_size=BATCH, sampler=sampler, num_workers=workers,
        prefetch_factor=4, generator=torch.Generator(),
        worker_init_fn=rngsnap.torch.worker_init_fn(
            ctx.stream("cpu", 0, "default"), pos[0]))
    for x, y in loader:
        pos[1] += 1
        ctx.save(ck, replace=True)
        print("batch", pos[0], pos[1], x.numpy().tobytes().hex(),
              y.numpy().tobytes().hex(), flush=True)
        printed += 1
        if printed == hold:
            import threading
            threading.Event().wait()  # until killed, workers running
    pos[:] = [pos[0] + 1, 0]
""" % HERE


def _start(d, workers, mode, hold=0):
    return subprocess.Popen([sys.executable, "-c", JOB, d, str(workers), mode,
                             str(hold)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, start_new_session=True)


def _batches(lines):
    return {(int(w[1]), int(w[2])): (w[3], w[4])
            for w in (line.split() for line in lines) if w[0] == "batch"}


def _finish(p):
    out, err = p.communicate(timeout=300)
    assert p.returncode == 0, out + err
    return out.splitlines()


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory):
    return _batches(_finish(_start(str(tmp_path_factory.mktemp("whole")), 2,
                                   "fresh")))


@pytest.mark.parametrize("kill_after,workers_after", [(3, 2), (5, 3), (10, 1)])
def test_killed_mid_epoch_resumes_the_same_batches(tmp_path, uninterrupted,
                                                   kill_after, workers_after):
    assert len(uninterrupted) == 16
    d = str(tmp_path)
    p = _start(d, 2, "fresh", hold=kill_after)  # stands still there
    seen = []
    for line in p.stdout:
        seen.append(line)
        if len(seen) == kill_after:
            os.killpg(p.pid, signal.SIGKILL)  # job and workers, mid-epoch
            break
    p.communicate(timeout=60)  # reaps it and closes its pipes
    assert p.returncode == -signal.SIGKILL
    before = _batches(seen)
    resumed = _batches(_finish(_start(d, workers_after, "resume")))
    first = min(resumed)
    assert first[1] > 1, first  # mid-epoch: the sampler skipped ahead
    # Batch k is printed after its checkpoint is saved, and the job stood
    # still after the last one it printed: it resumes right after it.
    assert first == (max(before)[0], max(before)[1] + 1), (first, before)
    assert sorted(resumed) == [k for k in sorted(uninterrupted) if k >= first]
    for k in resumed:
        assert resumed[k] == uninterrupted[k], k
    for k in before:
        assert before[k] == uninterrupted[k], k


def test_batches_differ_by_epoch_and_sample():
    """The keys matter: were the augmentation not keyed, the check above
    could pass with constant data."""
    import rngsnap
    with rngsnap.Context() as ctx:
        ctx.seed_all(99)
        s = ctx.stream("cpu", 0, "augment")
        a = s.derive(0, 1).generate("u32", 4).tobytes()
        assert a == s.derive(0, 1).generate("u32", 4).tobytes()
        assert a != s.derive(0, 2).generate("u32", 4).tobytes()
        assert a != s.derive(1, 1).generate("u32", 4).tobytes()
        s.generate("u32", 100)  # the stream's own draws do not move keys
        assert a == s.derive(0, 1).generate("u32", 4).tobytes()


def test_worker_init_fn_seeds_all_three_from_the_key():
    import random
    import numpy as np
    import torch
    import rngsnap
    import rngsnap.torch
    with rngsnap.Context() as ctx:
        ctx.seed_all(5)
        s = ctx.stream("cpu", 0, "default")
        init = rngsnap.torch.worker_init_fn(s, 3)
        out = []
        for wid in (0, 1, 0):
            init(wid)
            out.append((torch.rand(2).numpy().tobytes(),
                        np.random.rand(2).tobytes(), random.random()))
        assert out[0] == out[2] and out[0] != out[1]
        for a, b in zip(out[0], out[1]):
            assert a != b
        init_e4 = rngsnap.torch.worker_init_fn(s, 4)
        init_e4(0)
        assert torch.rand(2).numpy().tobytes() != out[0][0]
