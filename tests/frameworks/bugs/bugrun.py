"""Run a bug job uninterrupted, then SIGKILLed where it signalled a
checkpoint (killpoint.committed) and resumed, with drive.py's Job (one
process); and count what the resumed run got wrong."""
import collections
import os
import shutil
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
FRAMEWORKS = os.path.dirname(HERE)
sys.path.insert(0, FRAMEWORKS)
from drive import Job  # noqa: E402


def env():
    """The job's environment: tests/frameworks (killpoint, toyjob) and
    this folder on its path, besides the test's own."""
    e = dict(os.environ, PYTHONUNBUFFERED="1")
    e["PYTHONPATH"] = os.pathsep.join(
        [HERE, FRAMEWORKS] + [p for p in [e.get("PYTHONPATH")] if p])
    return e


class Runs:
    """whole: the uninterrupted run's lines; killed: the lines up to the
    checkpoint `tag` it was killed at; resumed: the resumed run's
    (rc, lines, stderr)."""

    def __init__(self, job, tag, *args):
        cmd = [sys.executable, os.path.join(HERE, job)] + list(args)
        work = tempfile.mkdtemp(prefix="rngsnap-bug-")
        try:
            def run(name, more, extra=None):
                d = os.path.join(work, name)
                os.makedirs(d, exist_ok=True)
                return Job(cmd + ["--dir", d] + more, 1,
                           dict(env(), **(extra or {})), work, dist=False)

            rc, self.whole, err = run("whole", []).finish()[0]
            assert rc == 0, "uninterrupted run failed (%d):\n%s" % (rc, err)
            self.killed = run("job", [], {"RNGSNAP_HOLD_AT": str(tag)}
                              ).until(str(tag))[0]
            self.rc, self.resumed, self.stderr = run(
                "job", ["--resume"]).finish()[0]
        finally:
            shutil.rmtree(work, ignore_errors=True)

    def ok(self):
        assert self.rc == 0, "resumed run failed (%d):\n%s" % (
            self.rc, self.stderr[-3000:])
        return self


def steps(lines):
    """The 'step <epoch> <indices> <digest> <loss>' lines, split."""
    return [x.split()[1:] for x in lines if x.startswith("step ")]


def differing(want, got):
    """How many of the resumed run's steps differ from the uninterrupted
    run's same steps, in: "order" (the samples taken), "batch" (the
    bytes they came as: augmentation), "loss", "steps" (any of these); a
    step missing on one side differs in all."""
    n = max(len(want), len(got))
    pad = [None] * 4
    pairs = [(want[i] if i < len(want) else pad,
              got[i] if i < len(got) else pad) for i in range(n)]
    return {"steps": sum(a != b for a, b in pairs),
            "order": sum(a[:2] != b[:2] for a, b in pairs),
            "batch": sum(a[2] != b[2] for a, b in pairs),
            "loss": sum(a[3] != b[3] for a, b in pairs)}


def resumed_differing(r):
    """differing() of the steps after the kill: the uninterrupted run's
    against the resumed run's."""
    return differing(steps(r.whole)[len(steps(r.killed)):], steps(r.resumed))


def seen_twice_and_never(r, samples):
    """Per epoch, over the killed run's steps then the resumed run's:
    (samples seen more than once, samples never seen)."""
    seen = collections.defaultdict(collections.Counter)
    for epoch, ids, _, _ in steps(r.killed) + steps(r.resumed):
        seen[int(epoch)].update(int(i) for i in ids.split(","))
    return {e: (sum(1 for n in c.values() if n > 1),
                samples - len(c)) for e, c in sorted(seen.items())}
