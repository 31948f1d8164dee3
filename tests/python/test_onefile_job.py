"""tests/python/onefile_job.py, the job docs/python.md ("Stateful") makes
resumable with a diff of at most 6 lines: it keeps rngsnap's state inside
its one torch.save file (temporary file + os.replace).  Killed between any
two statements of its save (SIGKILL at points the job itself signals:
each line of the save function as it is reached, and its return), the
next run resumes from whichever checkpoint is in place and prints exactly
the losses of the uninterrupted job.  (Killing between statements cannot
tell an atomic write from a plain one: torch.save is one statement.)"""
import os
import re
import signal
import subprocess
import sys

import pytest

torch = pytest.importorskip("torch")

HERE = os.path.dirname(os.path.abspath(__file__))
JOB = os.path.join(HERE, "onefile_job.py")
DOC = os.path.join(HERE, "..", "..", "docs", "python.md")
STEPS, PAUSE_STEP = 3, 2

# One interpreter imports torch and the job once, then runs each job in a
# child of its own (fork): "run DIR TRACE" starts one, which prints its
# pid; with TRACE 1 the child traces its save() of step PAUSE_STEP, and
# before each line (and at the return) prints "point ..." and waits for
# "go".  When the child ends the server prints "exit <status>".  A run
# costs a fork instead of a torch import (seconds on a loaded machine).
SERVER = r"""
import os, sys
sys.path.insert(0, os.path.dirname(sys.argv[1]))
import onefile_job as job
steps, pause_step = sys.argv[2], int(sys.argv[3])
save = next(c for c in job.main.__code__.co_consts
            if getattr(c, "co_name", "") == "save")

def pause(what):
    print("point", what, flush=True)
    if sys.stdin.readline() != "go\n":
        os._exit(3)

def local(frame, event, arg):
    if event == "line":
        pause("line %d" % frame.f_lineno)
    elif event == "return":
        pause("return")
    return local

def calls(frame, event, arg):
    if frame.f_code is save and frame.f_locals.get("step") == pause_step:
        return local
    return None

for command in iter(sys.stdin.readline, ""):
    _, d, trace = command.split()
    pid = os.fork()
    if pid == 0:
        print("pid", os.getpid(), flush=True)
        sys.argv = ["onefile_job.py", "--dir", d, "--steps", steps]
        if trace == "1":
            sys.settrace(calls)
        try:
            job.main()
        except BaseException:
            import traceback
            traceback.print_exc()
            sys.stdout.flush()
            os._exit(1)
        sys.stdout.flush()
        os._exit(0)
    _, status = os.waitpid(pid, 0)
    print("exit", os.waitstatus_to_exitcode(status), flush=True)
"""
LOSS = re.compile(r"^step (\d+) loss (\S+)$")


def _losses(lines):
    return {int(m[1]): m[2] for m in map(LOSS.match, lines) if m}


class Server:
    def __init__(self):
        self.p = subprocess.Popen([sys.executable, "-c", SERVER, JOB,
                                   str(STEPS), str(PAUSE_STEP)],
                                  stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, text=True)

    def run(self, d, trace=False, kill_at=None):
        """Run the job on folder d, answering every point; at point number
        kill_at SIGKILL it instead.  Returns (lines, points, exit code)."""
        self.p.stdin.write("run %s %d\n" % (d, trace))
        self.p.stdin.flush()
        lines, points, pid = [], [], None
        for line in self.p.stdout:
            line = line.rstrip("\n")
            if line.startswith("exit "):
                return lines, points, int(line.split()[1])
            if line.startswith("pid "):
                pid = int(line.split()[1])
                continue
            lines.append(line)
            if not line.startswith("point "):
                continue
            points.append(line.split(" ", 1)[1])
            if len(points) - 1 == kill_at:
                os.kill(pid, signal.SIGKILL)  # it waits at that point
                continue
            self.p.stdin.write("go\n")
            self.p.stdin.flush()
        raise AssertionError("job server ended: %s" % lines)

    def close(self):
        self.p.stdin.close()
        assert self.p.wait(timeout=60) == 0


@pytest.fixture(scope="module")
def server():
    s = Server()
    yield s
    s.close()


@pytest.fixture(scope="module")
def reference(tmp_path_factory, server):
    """The uninterrupted losses (a fresh interpreter, and a run of the
    server), and the points of the traced save."""
    d = str(tmp_path_factory.mktemp("plain"))
    r = subprocess.run([sys.executable, JOB, "--dir", d, "--steps",
                        str(STEPS)], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    plain = _losses(r.stdout.splitlines())
    assert sorted(plain) == list(range(1, STEPS + 1))
    lines, points, rc = server.run(str(tmp_path_factory.mktemp("probe")),
                                   trace=True)
    assert rc == 0, lines
    assert _losses(lines) == plain  # neither fork nor tracing changes it
    # the save's three statements (the dict spans two lines) and its end
    assert len(points) >= 4 and points[-1] == "return", points
    return plain, points


def test_killed_at_every_point_of_the_save_resumes(tmp_path, reference,
                                                   server):
    plain, points = reference
    for i, point in enumerate(points):
        d = str(tmp_path / ("kill-%d" % i))
        os.mkdir(d)
        lines, seen, rc = server.run(d, trace=True, kill_at=i)
        assert rc == -signal.SIGKILL and seen == points[:i + 1], (point, rc)
        before = _losses(lines)
        assert before == {s: plain[s] for s in range(1, PAUSE_STEP + 1)}
        again, _, rc = server.run(d)
        assert rc == 0, again
        # the checkpoint of this step is in place only once os.replace ran
        resumed = PAUSE_STEP if point == "return" else PAUSE_STEP - 1
        assert again[0] == "resumed after step %d" % resumed, (point, again)
        assert _losses(again) == {s: plain[s]
                                  for s in range(resumed + 1, STEPS + 1)}, \
            point


def test_docs_diff_is_the_job():
    """docs/python.md shows the rngsnap lines of onefile_job.py as a diff
    of at most 6 changed lines: its + lines are the job's lines marked
    "# rngsnap" (without the marker), in order."""
    doc = open(DOC).read()
    m = re.search(r"<!-- onefile_job diff -->\n```diff\n(.*?)```", doc, re.S)
    assert m, "docs/python.md lacks the onefile_job diff"
    diff = m.group(1).splitlines()
    changed = [l for l in diff if l[:1] in "+-"]
    assert len(changed) <= 6, changed
    marked = [l.split("  # rngsnap")[0] for l in open(JOB).read().splitlines()
              if l.endswith("# rngsnap")]
    assert [l[1:] for l in diff if l[:1] == "+"] == marked
    # and the - lines are those lines without rngsnap
    for old in (l[1:] for l in diff if l[:1] == "-"):
        assert "rngsnap" not in old and "ctx" not in old
