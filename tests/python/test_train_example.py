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


# train_example.py as it is, but its stdout stops the job for good right
# after it prints the line that starts with argv[1]: the kill lands
# there, however fast the job runs on.
HOLD = """
import runpy, sys, threading
hold_at = sys.argv.pop(1)
class Hold:
    def __init__(self, out):
        self.out, self.line = out, ""
    def write(self, s):
        n = self.out.write(s)
        self.line += s
        while "\\n" in self.line:
            done, self.line = self.line.split("\\n", 1)
            if done.startswith(hold_at):
                self.out.flush()
                threading.Event().wait()  # until killed
        return n
    def __getattr__(self, name):
        return getattr(self.out, name)
sys.stdout = Hold(sys.stdout)
sys.argv[0] = %r
runpy.run_path(sys.argv[0], run_name="__main__")
""" % EXAMPLE


def _start(d, *extra, hold_at=None):
    run = [EXAMPLE] if hold_at is None else ["-c", HOLD, hold_at]
    return subprocess.Popen([sys.executable, *run, "--dir", d, *extra],
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
    p = _start(d, hold_at=kill_at)
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
    # It resumed mid-epoch, right after the checkpoint it had reported
    # (the job stood still there until the kill)...
    e, s = map(int, kill_at.split()[1:])
    assert first == (e, s + 1), (first, kill_at)
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
