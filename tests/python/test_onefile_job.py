"""tests/python/onefile_job.py, the job docs/python.md ("Stateful") makes
resumable with a diff of at most 6 lines: it keeps rngsnap's state inside
its one torch.save file (temporary file + os.replace).  Killed between any
two statements of its save (SIGKILL at points the job itself signals:
each line of the save function as it is reached, and its return), the
next run resumes from whichever checkpoint is in place and prints exactly
the losses of the uninterrupted job."""
import os
import re
import subprocess
import sys

import pytest

torch = pytest.importorskip("torch")

HERE = os.path.dirname(os.path.abspath(__file__))
JOB = os.path.join(HERE, "onefile_job.py")
DOC = os.path.join(HERE, "..", "..", "docs", "python.md")
STEPS, PAUSE_STEP = 3, 2

# Runs the job with a tracer on its save() of step PAUSE_STEP: before each
# line (and at the return) it prints "point ..." and waits for "go".
TRACED = r"""
import os, sys
sys.path.insert(0, os.path.dirname(sys.argv[1]))
import onefile_job as job
sys.argv = sys.argv[1:]
pause_step = int(os.environ["ONEFILE_PAUSE_STEP"])
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

sys.settrace(calls)
job.main()
"""
LOSS = re.compile(r"^step (\d+) loss (\S+)$")


def _env():
    return dict(os.environ, ONEFILE_PAUSE_STEP=str(PAUSE_STEP))


def _losses(lines):
    return {int(m[1]): m[2] for m in map(LOSS.match, lines) if m}


def _plain(d):
    r = subprocess.run([sys.executable, JOB, "--dir", d, "--steps",
                        str(STEPS)], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    return r.stdout.splitlines()


def _traced(d, kill_at=None):
    """Run the traced job, answering every point; at point number kill_at
    SIGKILL it instead.  Returns (lines, points, returncode)."""
    p = subprocess.Popen([sys.executable, "-c", TRACED, JOB, "--dir", d,
                          "--steps", str(STEPS)], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True, env=_env())
    lines, points = [], []
    for line in p.stdout:
        lines.append(line.rstrip("\n"))
        if not line.startswith("point "):
            continue
        points.append(line.split(" ", 1)[1].strip())
        if len(points) - 1 == kill_at:
            p.kill()  # the job waits for our answer: it is at that point
            break
        p.stdin.write("go\n")
        p.stdin.flush()
    _, err = p.communicate(timeout=300)
    return lines, points, p.returncode, err


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """The uninterrupted losses, and the points of the traced save."""
    plain = _losses(_plain(str(tmp_path_factory.mktemp("plain"))))
    assert sorted(plain) == list(range(1, STEPS + 1))
    lines, points, rc, err = _traced(str(tmp_path_factory.mktemp("probe")))
    assert rc == 0, err
    assert _losses(lines) == plain  # tracing changes nothing
    # the save's three statements (the dict spans two lines) and its end
    assert len(points) >= 4 and points[-1] == "return", points
    return plain, points


def test_killed_at_every_point_of_the_save_resumes(tmp_path, reference):
    plain, points = reference
    for i, point in enumerate(points):
        d = str(tmp_path / ("kill-%d" % i))
        os.mkdir(d)
        lines, seen, rc, err = _traced(d, kill_at=i)
        assert rc == -9 and seen == points[:i + 1], (point, rc, err)
        before = _losses(lines)
        assert before == {s: plain[s] for s in range(1, PAUSE_STEP + 1)}
        again = _plain(d)
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
