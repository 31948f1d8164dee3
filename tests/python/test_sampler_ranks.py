"""rngsnap.torch.DistributedResumableSampler on 2 gloo ranks (loader_job.py
--rank): each rank takes its shard of one keyed order (together every
sample once per epoch), and a job SIGKILLed on both ranks at a random
checkpoint (ctx.save_ranks committed) and resumed with another worker
count yields, on every rank, the batches of the uninterrupted job."""
import os
import random
import signal
import subprocess
import sys

import pytest

from loader_job import batches

torch = pytest.importorskip("torch")
if not torch.distributed.is_available():
    pytest.skip("torch.distributed is not available", allow_module_level=True)

JOB = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                   "loader_job.py")
SEED = int(os.environ.get("RNGSNAP_TEST_SEED") or
           random.SystemRandom().randrange(1 << 32))
PER_EPOCH = 5  # 26 samples, 13 a rank in batches of 3
PER_RANK = PER_EPOCH * 2  # 2 epochs


def number(key):
    return key[0] * PER_EPOCH + key[1]


def start_ranks(d, rdv, workers, *extra):
    os.makedirs(d, exist_ok=True)
    return [subprocess.Popen(
        [sys.executable, JOB, d, "--rank", str(r), "--world", "2", "--rdv",
         rdv, "--workers", str(workers)] + list(extra)
        + (["--sync"] if r == 0 and "--resume" not in extra else []),
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True, start_new_session=True) for r in range(2)]


def finish(procs):
    outs = []
    for p in procs:
        out, err = p.communicate(timeout=600)
        assert p.returncode == 0, out + err
        outs.append(batches(out.splitlines()))
    return outs


def test_ranks_shard_the_epoch_and_resume_exactly(tmp_path):
    whole = finish(start_ranks(str(tmp_path / "whole"), str(tmp_path / "r0"),
                               0))
    assert [len(w) for w in whole] == [PER_RANK, PER_RANK]
    for epoch in (0, 1):
        shards = [[int(i) for k, v in sorted(w.items()) if k[0] == epoch
                   for i in v.split()[1].split(",")] for w in whole]
        assert not set(shards[0]) & set(shards[1])
        assert sorted(shards[0] + shards[1]) == list(range(26))

    kill = random.Random("%d ranks" % SEED).randrange(
        1, PER_RANK)
    why = "RNGSNAP_TEST_SEED=%d: killed after batch %d of %d" % (
        SEED, kill, PER_RANK)
    d = str(tmp_path / "job")
    procs = start_ranks(d, str(tmp_path / "r1"), 2, "--persistent")
    seen = []
    for line in procs[0].stdout:  # rank 0 waits after each committed save
        seen.append(line)
        if line.startswith("saved"):
            if len(batches(seen)) == kill:
                for p in procs:
                    os.killpg(p.pid, signal.SIGKILL)
                break
            procs[0].stdin.write("go\n")
            procs[0].stdin.flush()
    before = [batches(seen), batches(procs[1].communicate(timeout=120)[0]
                                     .splitlines())]
    procs[0].communicate(timeout=120)
    assert [p.returncode for p in procs] == [-signal.SIGKILL] * 2, why
    resumed = finish(start_ranks(d, str(tmp_path / "r2"), 1, "--resume"))
    for r in (0, 1):
        assert sorted(map(number, resumed[r])) == list(
            range(kill + 1, PER_RANK + 1)), (why, r)
        for k, v in list(before[r].items()) + list(resumed[r].items()):
            assert v == whole[r][k], (why, r, k)
