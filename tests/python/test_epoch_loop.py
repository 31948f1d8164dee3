"""The epoch loop with the job's own generators (issue 17): epoch_loop.py,
which is epoch_loop_plain.py plus six rngsnap lines, killed right after an
epoch's checkpoint and resumed, prints every loss of the uninterrupted
run bit for bit; the plain script, killed and resumed the same way, does
not.  docs/python.md shows the diff between the two files as it is.

The child is killed at a point it announces: a runner wraps torch.save
(the last save of each epoch) to print SAVED and wait for a line on
stdin, so the kill never races the job."""
import difflib
import os
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
PLAIN = os.path.join(HERE, "epoch_loop_plain.py")
WITH = os.path.join(HERE, "epoch_loop.py")
TWO = os.path.join(HERE, "epoch_loop_two_files.py")
DOC = os.path.join(os.environ.get("RNGSNAP_SOURCE_ROOT",
                                  os.path.join(HERE, "..", "..")),
                   "docs", "python.md")

RUNNER = r"""
import runpy, sys, torch
save = torch.save
def announced_save(*args, **kw):
    save(*args, **kw)
    print("SAVED", flush=True)
    sys.stdin.readline()  # killed here, or told to go on
torch.save = announced_save
sys.argv = sys.argv[1:]
runpy.run_path(sys.argv[0], run_name="__main__")
"""


# The same, at the rngsnap file's write: between the two writes of
# epoch_loop_two_files.py.
BETWEEN = RUNNER.replace("import runpy, sys, torch", "import runpy, sys, torch\n"
                         "import rngsnap").replace(
    "save = torch.save", "save = rngsnap.Context.save").replace(
    "torch.save = announced_save", "rngsnap.Context.save = announced_save")


def _losses(out):
    return [line for line in out.splitlines() if line.startswith("loss ")]


def _run(script, folder, resume=False):
    os.makedirs(folder, exist_ok=True)
    args = [sys.executable, script, "--dir", str(folder)]
    r = subprocess.run(args + (["--resume"] if resume else []),
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    assert "UntrackedGeneratorWarning" not in r.stderr, r.stderr
    return _losses(r.stdout)


def _run_killed(script, folder, after_saves, runner=RUNNER):
    """Run script until its after_saves-th checkpoint is written, then
    SIGKILL it; its losses so far."""
    p = subprocess.Popen([sys.executable, "-c", runner, script, "--dir",
                          str(folder)], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, text=True)
    out, saves = [], 0
    for line in p.stdout:
        if line.startswith("SAVED"):
            saves += 1
            if saves == after_saves:
                p.kill()
                break
            p.stdin.write("\n")
            p.stdin.flush()
        else:
            out.append(line)
    p.wait()
    p.stdout.close()
    p.stdin.close()
    assert saves == after_saves, "the job ended before checkpoint %d" % (
        after_saves)
    return _losses("".join(out))


@pytest.mark.parametrize("script,after_saves", [(WITH, 1), (WITH, 2),
                                                (TWO, 1)])
def test_resumed_epoch_loop_is_bit_exact(tmp_path, script, after_saves):
    whole = _run(script, tmp_path / "whole")
    assert len(whole) == 18 and len(set(whole)) == 18
    folder = tmp_path / "killed"
    os.makedirs(folder)
    before = _run_killed(script, folder, after_saves)
    after = _run(script, folder, resume=True)
    assert before == whole[:len(before)] and len(before) == 6 * after_saves
    assert after == whole[len(before):]


def test_two_files_killed_between_the_writes_is_refused(tmp_path,
                                                        script=TWO):
    """Killed after epoch 1's rngsnap file and before its model.pt, the
    pair is epoch 1's generators and epoch 0's model: the resume is
    refused, naming both tags, and trains nothing (with the old two-file
    recipe, no tag, it resumed silently from the mismatched pair)."""
    folder = tmp_path / "killed"
    os.makedirs(folder)
    before = _run_killed(script, folder, 2, runner=BETWEEN)
    assert len(before) == 12
    r = subprocess.run([sys.executable, script, "--dir", str(folder),
                        "--resume"], capture_output=True, text=True,
                       timeout=600)
    assert r.returncode != 0 and not _losses(r.stdout), r.stdout
    assert "rngsnap.MismatchError: ctx.load(" in r.stderr, r.stderr
    assert ("saved with tag=1, not 0: it and the job's other file were "
            "written at different steps") in r.stderr
    assert "nothing restored" in r.stderr


def test_plain_loop_does_not_resume(tmp_path):
    """Without the rngsnap lines the same kill and resume gives other
    losses: what the test above checks is not a given."""
    whole = _run(PLAIN, tmp_path / "whole")
    folder = tmp_path / "killed"
    os.makedirs(folder)
    before = _run_killed(PLAIN, folder, 1)
    after = _run(PLAIN, folder, resume=True)
    assert before == whole[:6]
    assert len(after) == 12
    assert sum(a != b for a, b in zip(after, whole[6:])) >= 10


def _diff():
    with open(PLAIN) as a, open(WITH) as b:
        return "".join(difflib.unified_diff(
            a.readlines(), b.readlines(), "epoch_loop_plain.py",
            "epoch_loop.py", n=1))


def test_six_lines_added_and_shown_in_the_docs():
    diff = _diff()
    body = diff.splitlines()[2:]
    assert sum(line.startswith("+") for line in body) == 6
    assert not any(line.startswith("-") for line in body)
    with open(DOC) as f:
        assert "```diff\n" + diff + "```\n" in f.read()
