"""tests/python/train_example.py, the training loop docs/python.md shows:
killed (SIGKILL, its DataLoader workers too) after a checkpoint in the
middle of an epoch and run again with --resume, it prints exactly the
losses, bit for bit, of the job that was never interrupted."""
import os
import re
import signal
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
EXAMPLE = os.path.join(HERE, "train_example.py")
DOC = os.path.join(HERE, "..", "..", "docs", "python.md")
LOSS = re.compile(r"^epoch (\d+) step (\d+) loss (\S+)$")


def _start(d, *extra):
    return subprocess.Popen([sys.executable, EXAMPLE, "--dir", d, *extra],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, start_new_session=True)


def _losses(lines):
    out = {}
    for line in lines:
        m = LOSS.match(line)
        if m:
            out[(int(m[1]), int(m[2]))] = m[3]
    return out


def _finish(p):
    out, err = p.communicate(timeout=300)
    assert p.returncode == 0, out + err
    return out.splitlines()


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory):
    d = str(tmp_path_factory.mktemp("whole"))
    return _losses(_finish(_start(d)))


@pytest.mark.parametrize("kill_at", ["checkpoint 0 6", "checkpoint 1 3"])
def test_killed_and_resumed_prints_the_same_losses(tmp_path, uninterrupted,
                                                   kill_at):
    assert len(uninterrupted) == 16
    d = str(tmp_path)
    p = _start(d)
    seen = []
    for line in p.stdout:
        seen.append(line.rstrip("\n"))
        if seen[-1] == kill_at:
            os.killpg(p.pid, signal.SIGKILL)  # the job and its workers
            break
    p.communicate(timeout=60)  # reaps it and closes its pipes
    assert p.returncode == -signal.SIGKILL, seen
    before = _losses(seen)
    resumed = _losses(_finish(_start(d, "--resume")))
    first = min(resumed)
    # It resumed mid-epoch, right after a checkpoint it had written...
    assert first[1] > 1 and (first[1] - 1) % 3 == 0, first
    # The file is at least as new as the checkpoint the job reported (newer
    # if it saved again before the kill landed).
    e, s = map(int, kill_at.split()[1:])
    assert first >= (e, s + 1), (first, kill_at)
    # ...and every loss from there to the end is the uninterrupted one.
    assert sorted(resumed) == [k for k in sorted(uninterrupted) if k >= first]
    for k, v in resumed.items():
        assert v == uninterrupted[k], (k, v, uninterrupted[k])
    for k, v in before.items():
        assert v == uninterrupted[k]


def test_doc_shows_this_file():
    with open(EXAMPLE) as f:
        code = f.read()
    with open(DOC) as f:
        doc = f.read()
    assert "```python\n" + code + "```\n" in doc, \
        "docs/python.md must show tests/python/train_example.py as it is"
