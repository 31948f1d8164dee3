"""What the four recipes' drive.py runs (the meson tests framework_*) do
not show, against the real frameworks: accelerate's own restore of a
process with CUDA and HPU generators (stand-in generators: a CPU machine
has neither), DCP's rule for a key every rank holds, DCP resumed by
another world size, and that docs/python.md shows the recipes' own lines.
Each test needing a framework is skipped, with the import that failed,
where it does not import."""
import os
import subprocess
import sys
import textwrap

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
STANDINS = os.path.join(HERE, "standins")
sys.path.insert(0, HERE)
import drive  # noqa: E402


def needs(recipe):
    found, line = drive.framework(recipe, sys.executable)
    if not found:
        pytest.skip(line)
    return line


def run(code, *args, env=None):
    p = subprocess.run(
        [sys.executable, "-c", "import sys; sys.path.insert(0, %r)\n" % STANDINS
         + textwrap.dedent(code), *args], capture_output=True, text=True,
        timeout=300, env=dict(os.environ, **(env or {})))
    assert p.returncode == 0, p.stdout + p.stderr
    return p.stdout.split()


ACCELERATE = """
import devices_standin, torch
devices_standin.install_from_env()
from accelerate import Accelerator
acc = Accelerator(cpu=True)  # no tensor on the stand-in devices
phase, folder = sys.argv[1], sys.argv[2]
if phase == "save":
    devices_standin.kernel_draws(12)  # both move on from their seeds
    acc.save_state(folder)
elif phase == "load":
    acc.load_state(folder)
print(bytes(torch.cuda.get_rng_state(0).numpy()).hex(),
      bytes(torch.hpu.get_rng_state(0).numpy()).hex())
"""


def test_accelerate_alone_restores_cuda_and_hpu(tmp_path):
    """accelerate#3960: save_accelerator_state saves CUDA and HPU, and the
    load_accelerator_state of accelerate <= 1.14 restored one of them (an
    elif chain).  accelerate 1.15.0 restores both (#4217); the stand-in
    device generators show it: a fresh process's generators are at their
    seeds, so both equal the saved ones only if load_state set both."""
    version = needs("accelerate")
    env = {"RNGSNAP_STANDIN_DEVICES": "cuda,hpu"}
    saved = run(ACCELERATE, "save", str(tmp_path), env=env)
    fresh = run(ACCELERATE, "fresh", str(tmp_path), env=env)
    assert all(f != s for f, s in zip(fresh, saved)), (fresh, saved)
    loaded = run(ACCELERATE, "load", str(tmp_path), env=env)
    assert loaded == saved, "%s: CUDA, HPU saved %s, after load_state %s" % (
        version, saved, loaded)


DCP = """
import json, sys, torch.distributed as dist
import torch.distributed.checkpoint as dcp
rank, folder, rdv = int(sys.argv[1]), sys.argv[2], sys.argv[3]
dist.init_process_group("gloo", init_method="file://" + rdv, rank=rank,
                        world_size=2)
dcp.save({"shared": b"rank%d" % rank, "own": {"rank/%d" % rank: rank}},
         checkpoint_id=folder)
state = {"shared": b"", "own": {"rank/%d" % rank: -1}}
dcp.load(state, checkpoint_id=folder)
print(json.dumps([state["shared"].decode(), state["own"]]))
dist.barrier()  # both ranks done before either tears gloo down
dist.destroy_process_group()
"""


def test_dcp_keeps_one_rank_of_a_shared_key(tmp_path):
    """_dedup_save_plans: a key every rank holds is written by one rank
    (the one whose plan is smallest so far), and every rank loads that
    value; a key of its own comes back to each rank."""
    needs("dcp")
    folder, rdv = str(tmp_path / "ck"), str(tmp_path / "rdv")
    procs = [subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(DCP), str(r), folder, rdv],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for r in range(2)]
    outs = []
    try:
        for p in procs:
            o, e = p.communicate(timeout=300)
            assert p.returncode == 0, e
            outs.append(o.strip())
    finally:
        for p in procs:
            p.kill()
    shared = outs[0].split('"')[1]
    assert shared in ("rank0", "rank1")
    assert outs == ['["%s", {"rank/0": 0}]' % shared,
                    '["%s", {"rank/1": 1}]' % shared], outs


def test_dcp_recipe_refuses_another_world_size(tmp_path):
    """A checkpoint of 2 ranks resumed by 1: MismatchError naming both
    world sizes, before any step."""
    needs("dcp")
    cmd = [sys.executable, os.path.join(HERE, "dcp_recipe.py"),
           "--dir", str(tmp_path / "job")]
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    drive.Job(cmd, 2, dict(env, RNGSNAP_HOLD_AT="2"), str(tmp_path)).until("2")
    [(rc, out, err)] = drive.Job(cmd + ["--resume"], 1, env, str(tmp_path),
                                 dist=True).finish()
    assert rc != 0 and drive.losses(out) == [], out
    assert "rngsnap.MismatchError: load_state_dict: the state dict was saved " \
        "by 2 ranks, this job has 1 (this is rank 0); nothing restored" in err, err


def _code_lines(text):
    """Lines without comments and indentation; no blank ones."""
    out = []
    for line in text.splitlines():
        line = line.split("  #")[0].split("# ")[0].strip() \
            if not line.strip().startswith("#") else ""
        if line:
            out.append(line)
    return out


def test_docs_show_the_recipes_own_lines():
    """Every code line python.md shows of a recipe is a line of that file
    (comments and lines with ... aside), so the page cannot drift."""
    root = os.path.dirname(os.path.dirname(HERE))
    page = open(os.path.join(root, "docs", "python.md")).read()
    part = page.split("## Reference: how each framework restores")[1].split(
        "\n## ")[0]
    shown = 0
    for title, recipe in [("accelerate", "accelerate"),
                          ("Lightning", "lightning"),
                          ("DCP (torch.distributed.checkpoint)", "dcp")]:
        section = part.split("\n### %s\n" % title)[1].split("\n### ")[0]
        blocks = section.split("```python\n")[1:]
        assert blocks, title
        have = set(_code_lines(open(os.path.join(
            HERE, recipe + "_recipe.py")).read()))
        for block in blocks:
            for line in _code_lines(block.split("```")[0]):
                if "..." not in line:
                    assert line in have, "%s: %r" % (title, line)
                    shown += 1
    assert shown > 40
