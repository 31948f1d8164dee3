"""A checkpoint written under the oldest supported stack resumes bit-exactly
under the newest, and the other way round (issue 21): the pickle-free
encodings are the same bytes on both.

The old stack is the -Dpython_compat interpreter (Debian's torch 1.13 and
NumPy 1.24) with its own extension, the new one this interpreter (the
venv's torch 2.x and NumPy 2.x); meson passes the first in
RNGSNAP_COMPAT_PYTHON and RNGSNAP_COMPAT_PYTHONPATH, or why there is none
in RNGSNAP_COMPAT_WHY.  Each job is cross_version_job.py: the writer draws,
checkpoints (ctx.save and torch.save of ctx.state_dict()) and records its
states and draws right after; the reader, seeded otherwise, loads and
records the same.
"""
import json
import os
import subprocess
import sys

import pytest

JOB = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                   "cross_version_job.py")


def _stack(which):
    if which == "new":
        return sys.executable, os.environ.copy()
    env = os.environ.copy()
    env["PYTHONPATH"] = os.environ["RNGSNAP_COMPAT_PYTHONPATH"]
    return os.environ["RNGSNAP_COMPAT_PYTHON"], env


def job(which, *args):
    python, env = _stack(which)
    p = subprocess.run([python, JOB] + [str(a) for a in args], env=env,
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, "%s job %s failed:\n%s%s" % (
        which, args, p.stdout, p.stderr)
    return json.loads(p.stdout.splitlines()[-1])


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    """{"old": (folder, record), "new": (folder, record)}: each stack's
    checkpoint and what it had and drew right after it."""
    if not os.environ.get("RNGSNAP_COMPAT_PYTHON"):
        pytest.skip("no second (older) interpreter to compare with: %s" % (
            os.environ.get("RNGSNAP_COMPAT_WHY")
            or "RNGSNAP_COMPAT_PYTHON is not set (meson test sets it "
               "with -Dpython_compat=/usr/bin/python3)"))
    out = {}
    for which in ("old", "new"):
        folder = tmp_path_factory.mktemp(which)
        out[which] = folder, job(which, "write", folder)
    old, new = out["old"][1], out["new"][1]
    if (old["torch"], old["numpy"]) == (new["torch"], new["numpy"]):
        pytest.skip("both interpreters run torch %s and NumPy %s: no "
                    "second version to compare with"
                    % (old["torch"], old["numpy"]))
    return out


def differing(a, b):
    return sorted(k for k in set(a) | set(b) if a.get(k) != b.get(k))


def version_lines(saved, here):
    """The fingerprint lines a load across these two stacks must print."""
    return ["%s.version: checkpoint %s, this process %s"
            % (lib, saved[lib], here[lib])
            for lib in ("numpy", "torch") if saved[lib] != here[lib]]


@pytest.mark.parametrize("via", ["file", "state_dict"])
@pytest.mark.parametrize("writer,reader", [("old", "new"), ("new", "old")],
                         ids=["old-writes-new-loads", "new-writes-old-loads"])
def test_resume_is_bit_exact_across_versions(written, writer, reader, via):
    folder, saved = written[writer]
    got = job(reader, "resume", folder, via)
    assert got["error"] is None, got["error"]
    assert (got["torch"], got["numpy"]) != (saved["torch"], saved["numpy"])
    # Every generator's raw state right after the load is the writer's
    # right after its checkpoint, and so is everything drawn next.
    assert differing(got["state"], saved["state"]) == []
    assert differing(got["draws"], saved["draws"]) == []
    # The load says the versions differ (the default fingerprint="warn"):
    # the states are exact, a draw whose algorithm changed is not.
    assert len(got["warnings"]) == 1, got["warnings"]
    warning = got["warnings"][0]
    assert warning.startswith("RuntimeWarning: rngsnap: this process "
                              "differs from the checkpoint's determinism "
                              "fingerprint"), warning
    for line in version_lines(saved, got):
        assert line in warning, (line, warning)


def test_without_the_load_every_state_differs(written):
    # The comparison above can fail: the reader's own seeding gives other
    # states for every generator and the app state; only the load makes
    # them the writer's.
    folder, saved = written["old"]
    got = job("new", "resume", folder, "none")
    assert differing(got["state"], saved["state"]) == sorted(saved["state"])


@pytest.mark.parametrize("writer,reader", [("old", "new"), ("new", "old")],
                         ids=["old-writes-new-loads", "new-writes-old-loads"])
def test_strict_fingerprint_refuses_another_version(written, writer, reader):
    # fingerprint="strict": a checkpoint of other torch/NumPy versions is
    # refused, naming them, and nothing is restored.
    folder, saved = written[writer]
    got = job(reader, "resume", folder, "file", "strict")
    err = got["error"]
    assert err is not None and err["class"] == "MismatchError", got
    assert 'fingerprint="strict": nothing restored' in err["text"]
    for line in version_lines(saved, got):
        assert line in err["text"], (line, err["text"])
    assert err["changed"] == []
