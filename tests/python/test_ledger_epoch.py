"""The divergence ledger on the Python training example (issue 25):
epoch_loop_ledger.py (epoch_loop.py plus a ledger and an rngsnap stream)
run whole, and killed right after an epoch's checkpoint and resumed with
the same ledger path (continued): `rngsnap ledger diff` finds every
common step equal (exit 0).  The same resume with one extra debug draw
of 4 words gives exit 1 naming the first step after the resume, rank 0,
and cpu:0/augment 4 words ahead."""
import json
import os
import subprocess
import sys

from test_epoch_loop import RUNNER, _losses

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "epoch_loop_ledger.py")
RNGSNAP = os.path.join(os.environ["RNGSNAP_BUILD_ROOT"], "tools", "rngsnap")
STEPS_PER_EPOCH = 6


def _run(folder, *extra):
    os.makedirs(folder, exist_ok=True)
    r = subprocess.run([sys.executable, SCRIPT, "--dir", str(folder),
                        "--ledger", str(folder / "ledger") + "/", *extra],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    return _losses(r.stdout)


def _killed_after_epoch_0(folder):
    """Run until the first checkpoint is written, then SIGKILL."""
    os.makedirs(folder)
    p = subprocess.Popen([sys.executable, "-c", RUNNER, SCRIPT, "--dir",
                          str(folder), "--ledger", str(folder / "ledger") + "/"],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         text=True)
    out = []
    for line in p.stdout:
        if line.startswith("SAVED"):
            p.kill()
            break
        out.append(line)
    p.wait()
    p.stdout.close()
    p.stdin.close()
    return _losses("".join(out))


def _diff(a, b):
    r = subprocess.run([RNGSNAP, "ledger", "diff", str(a), str(b), "--json"],
                       capture_output=True, text=True, timeout=120)
    return r.returncode, json.loads(r.stdout)


def test_exact_resume_and_a_debug_draw(tmp_path):
    whole = _run(tmp_path / "whole")
    exact = tmp_path / "exact"
    before = _killed_after_epoch_0(exact)
    after = _run(exact, "--resume")
    assert before + after == whole and len(whole) == 18
    rc, res = _diff(tmp_path / "whole" / "ledger", exact / "ledger")
    assert (rc, res["result"], res["common_steps"]) == (0, "match", 18), res

    debug = tmp_path / "debug"
    _killed_after_epoch_0(debug)
    _run(debug, "--resume", "--debug-draw")
    rc, res = _diff(tmp_path / "whole" / "ledger", debug / "ledger")
    assert rc == 1 and res["first_step"] == STEPS_PER_EPOCH, res
    [d] = res["differences"]
    assert (d["rank"], d["step"], d["kind"]) == (0, STEPS_PER_EPOCH, "rng")
    [e] = d["entries"]
    assert (e["entry"], e["how"], e["words"], e["direction"],
            e["last_matched"]) == ("cpu:0/augment", "ahead", 4, "ahead",
                                   STEPS_PER_EPOCH - 1), d
