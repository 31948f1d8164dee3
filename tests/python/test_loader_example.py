"""The loop of docs/python.md, "Mid-epoch resume with a standard
DataLoader": the page shows loader_example.py as a diff from the loop a job
has (shuffle=True); the diff changes at most 6 lines, and
loader_example.py, SIGKILLed (with its workers) when it reports a
checkpoint and run again with --resume, prints the losses of the
uninterrupted job bit for bit, where the loop before the diff does not."""
import difflib
import os
import random
import re
import signal
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
DOC = os.path.join(HERE, "..", "..", "docs", "python.md")
EXAMPLE = os.path.join(HERE, "loader_example.py")
NAMES = ["a/tests/python/loader_example.py", "b/tests/python/loader_example.py"]
LOSS = re.compile(r"^epoch (\d+) step (\d+) loss (\S+)$")
SEED = int(os.environ.get("RNGSNAP_TEST_SEED") or
           random.SystemRandom().randrange(1 << 32))


def doc_diff():
    with open(DOC) as f:
        text = f.read()
    head = "## Mid-epoch resume with a standard DataLoader"
    section = text[text.index(head):]
    m = re.search(r"```diff\n(.*?)```", section, re.S)
    return m.group(1)


def undo(diff, after):
    """The lines of the file that diff (unified) turned into after."""
    before, i = [], 0
    for line in diff.splitlines(keepends=True)[2:]:
        if line.startswith("@@"):
            start = int(re.match(r"@@ -\d+,\d+ \+(\d+),\d+ @@", line)[1]) - 1
            before += after[i:start]
            i = start
        elif line[0] in " +":
            i += 1
        if line[0] in " -":
            before.append(line[1:])
    return before + after[i:]


@pytest.fixture(scope="module")
def before_file(tmp_path_factory):
    """The loop before the diff (loader_example.py with the diff undone),
    as a file to run; the diff must be exactly the one between the two."""
    with open(EXAMPLE) as f:
        after = f.readlines()
    diff = doc_diff()
    before = undo(diff, after)
    assert "".join(difflib.unified_diff(before, after, *NAMES)) == diff
    path = tmp_path_factory.mktemp("before") / "loader_example_before.py"
    path.write_text("".join(before))
    return str(path)


def test_doc_diff_is_the_change_and_at_most_6_lines(before_file):
    body = doc_diff().splitlines()[2:]
    added = [x for x in body if x.startswith("+")]
    removed = [x for x in body if x.startswith("-")]
    assert 0 < len(added) <= 6 and 0 < len(removed) <= 6, body
    assert any("shuffle=True" in x for x in removed)


def run(path, d, *extra):
    return subprocess.Popen([sys.executable, path, d, *extra],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, start_new_session=True)


def losses(lines):
    return {int(m[2]): m[3] for m in map(LOSS.match, lines) if m}


def finish(p):
    out, err = p.communicate(timeout=600)
    assert p.returncode == 0, out + err
    return out.splitlines()


def killed_and_resumed(name, d, kill_at):
    """Losses of name killed when it reports checkpoint kill_at, then of
    the run resumed from its folder."""
    p = run(name, d)
    seen = []
    for line in p.stdout:
        seen.append(line.rstrip("\n"))
        if seen[-1] == "checkpoint %d" % kill_at:
            os.killpg(p.pid, signal.SIGKILL)  # the job and its workers
            break
    p.communicate(timeout=120)
    assert p.returncode == -signal.SIGKILL, seen
    return losses(seen), losses(finish(run(name, d, "--resume")))


@pytest.mark.parametrize("exact", [True, False], ids=["with", "without"])
def test_killed_and_resumed(tmp_path, before_file, exact):
    name = EXAMPLE if exact else before_file
    os.mkdir(tmp_path / "whole")
    whole = losses(finish(run(name, str(tmp_path / "whole"))))
    assert sorted(whole) == list(range(1, 17))  # 2 epochs of 8 batches
    kill_at = random.Random(SEED).choice([3, 6, 9, 12, 15])
    why = "RNGSNAP_TEST_SEED=%d: killed at checkpoint %d" % (SEED, kill_at)
    before, resumed = killed_and_resumed(name, str(tmp_path), kill_at)
    for k, v in before.items():
        assert v == whole[k], why
    if not exact:  # it restarts the epoch: other batches, other losses
        assert any(resumed[k] != whole.get(k) for k in resumed), why
        return
    # It resumes after a checkpoint at least as new as the one it
    # reported (newer if it saved again before the kill landed)...
    first = min(resumed)
    assert first > kill_at and (first - 1) % 3 == 0, (why, first)
    assert sorted(resumed) == list(range(first, 17)), why
    # ...and prints the uninterrupted job's losses from there.
    for k, v in resumed.items():
        assert v == whole[k], (why, k)
