"""The determinism fingerprint (issue 10 item 5): saved by track(), and at
load every difference listed, one line each: a warning under "warn",
MismatchError with nothing restored under "strict", nothing under "off".
Each side runs in its own process with its own environment."""
import os
import subprocess
import sys

import pytest

SAVE = """
import sys, torch, rngsnap, rngsnap.torch
ctx = rngsnap.Context()
ctx.seed_all(1)
torch.manual_seed(11)
rngsnap.torch.track(ctx)
ctx.save(sys.argv[1])
"""

LOAD = """
import sys, warnings, torch, rngsnap, rngsnap.torch
if len(sys.argv) > 3: torch.use_deterministic_algorithms(True)
if len(sys.argv) > 4: torch.backends.cuda.matmul.allow_tf32 = True
torch.manual_seed(22)
before = torch.get_rng_state()
ctx = rngsnap.Context(resume=True)
rngsnap.torch.track(ctx, fingerprint=sys.argv[2])
with warnings.catch_warnings(record=True) as w:
    warnings.simplefilter("always")
    try:
        ctx.load(sys.argv[1])
        print("loaded")
    except rngsnap.MismatchError as e:
        print("MismatchError", e.code)
        print(e)
for x in w:
    print("WARNING", x.category.__name__, x.message)
print("torch.cpu", "restored" if not torch.equal(torch.get_rng_state(), before)
      else "unchanged")
"""


def _run(code, args, env):
    e = dict(os.environ)
    for k, v in env.items():
        if v is None:
            e.pop(k, None)
        else:
            e[k] = v
    p = subprocess.run([sys.executable, "-c", code] + args, env=e,
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stdout + p.stderr
    return p.stdout


SAVED_ENV = {"PYTHONHASHSEED": "1", "CUBLAS_WORKSPACE_CONFIG": ":4096:8"}
OTHER_ENV = {"PYTHONHASHSEED": "2", "CUBLAS_WORKSPACE_CONFIG": None}
LINES = ["  env.CUBLAS_WORKSPACE_CONFIG: checkpoint :4096:8, this process "
         "(unset)",
         "  env.PYTHONHASHSEED: checkpoint 1, this process 2"]


@pytest.fixture
def ck(tmp_path):
    path = str(tmp_path / "ck.rngsnap")
    _run(SAVE, [path], SAVED_ENV)
    return path


def test_warn_lists_every_difference_and_restores(ck):
    out = _run(LOAD, [ck, "warn"], OTHER_ENV)
    assert out.startswith("loaded\nWARNING RuntimeWarning rngsnap: this "
                          "process differs from the checkpoint's determinism "
                          "fingerprint (2 differences)"), out
    lines = out.splitlines()
    i = lines.index(LINES[0])
    assert lines[i:i + 2] == LINES
    assert "torch.cpu restored" in out


def test_strict_refuses_and_changes_nothing(ck):
    out = _run(LOAD, [ck, "strict"], OTHER_ENV)
    assert out.startswith("MismatchError 7\n"), out
    assert all(line in out.splitlines() for line in LINES)
    assert 'fingerprint="strict": nothing restored' in out
    assert "WARNING" not in out
    assert "torch.cpu unchanged" in out


def test_off_does_not_compare(ck):
    out = _run(LOAD, [ck, "off"], OTHER_ENV)
    assert out.startswith("loaded\n") and "WARNING" not in out, out
    assert "torch.cpu restored" in out


def test_same_environment_is_silent_even_strict(ck):
    out = _run(LOAD, [ck, "strict"], SAVED_ENV)
    assert out.startswith("loaded\n") and "WARNING" not in out, out


def test_deterministic_algorithms_flag_is_a_difference(ck):
    out = _run(LOAD, [ck, "warn", "det"], SAVED_ENV)
    assert ("  torch.deterministic_algorithms: checkpoint False, this "
            "process True") in out.splitlines(), out
    assert "(1 difference)" in out


def test_tf32_flag_is_a_difference(ck):
    out = _run(LOAD, [ck, "warn", "det", "tf32"], SAVED_ENV)
    lines = out.splitlines()
    assert ("  torch.cuda.matmul.allow_tf32: checkpoint False, this process "
            "True") in lines, out
    assert "(2 differences)" in out
