"""Run one framework recipe against the real framework uninterrupted,
then killed at a checkpoint it signalled and resumed, and compare (the
meson tests framework_<recipe>, tests/frameworks/run.sh):

    python3 drive.py RECIPE [--python PY]

RECIPE is accelerate, lightning, dcp or trainer.  The recipe prints
"loss <hex>" per step, "checkpoint <tag> rng <digest>" once a checkpoint
is whole (and holds there when RNGSNAP_HOLD_AT names it; the kill lands
exactly there), and "resumed <tag> rng <digest>" after its restore
(killpoint.py).  A resumed run passes when the killed run's losses
followed by the resumed run's equal the uninterrupted run's bit for bit,
and its generators right after the restore equal those at the checkpoint
(every backend the process has).  The trainer recipe also resumes from a
checkpoint inside an epoch, which must be refused with OrderError
(transformers#39215) and train no step.  The accelerate recipe runs a
second time with stand-in CUDA and HPU generators (standins/: what a CPU
machine cannot show).  Exit 0 when every scenario passed, each printing
one line; 77 (skipped) with one line when the framework does not import
for PY.
"""
import argparse
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading

HERE = os.path.dirname(os.path.abspath(__file__))
# Runs a recipe with stand-in CUDA and HPU generators (standins/).
WITH_DEVICES = os.path.join(HERE, "standins", "with_devices.py")
DEVICES_ENV = {"RNGSNAP_STANDIN_DEVICES": "cuda,hpu",
               "ACCELERATE_USE_CPU": "1"}  # the model stays on the CPU

# recipe: ranks, [(scenario, extra args, checkpoint to kill at, expect,
# stand-in devices)]
SCENARIOS = {
    "accelerate": (1, [("epoch end", [], "1", "exact", False),
                       ("epoch end, stand-in CUDA and HPU generators", [],
                        "1", "exact", True)]),
    "lightning": (1, [("epoch end", [], "1", "exact", False)]),
    "dcp": (2, [("inside an epoch, 2 ranks", [], "4", "exact", False)]),
    "trainer": (1, [("epoch end", ["--save", "epoch"], "6", "exact", False),
                    ("inside an epoch", ["--save", "steps"], "4",
                     "refused", False)]),
}

ENV_HINT = "bash scripts/python-env.sh installs tests/requirements.txt " \
    "(the frameworks, torch 2.13.0) into build/venv"
# What each recipe needs of its framework: what to name, and one check
# that imports it and prints its version.
NEEDS = {
    "accelerate": ("accelerate", "import accelerate; from accelerate import "
                   "Accelerator; Accelerator.register_load_state_pre_hook; "
                   "print('accelerate', accelerate.__version__)"),
    "lightning": ("pytorch-lightning (or lightning)", "try:\n"
                  " import lightning.pytorch as pl\n"
                  "except ImportError:\n import pytorch_lightning as pl\n"
                  "print(pl.__name__, pl.__version__)"),
    "dcp": ("torch.distributed.checkpoint with Stateful (torch >= 2.2)",
            "import torch, torch.distributed.checkpoint as d; d.save; d.load;"
            " from torch.distributed.checkpoint.stateful import Stateful; "
            "print('torch.distributed.checkpoint of torch', "
            "torch.__version__)"),
    "trainer": ("transformers (and accelerate)", "import transformers, "
                "accelerate; from transformers import Trainer, "
                "TrainerCallback; print('transformers', "
                "transformers.__version__, 'accelerate', "
                "accelerate.__version__)"),
}


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


HANG_S = 300  # a job that has not ended by then hangs (a normal one: seconds)
LIVE = []  # the jobs running, killed if the harness is stopped


class Job:
    """One run of the recipe: `ranks` processes, their lines per rank.  A
    rank that fails ends the others (they would wait for it in a
    collective), and a job still running after HANG_S is ended as hung."""

    def __init__(self, cmd, ranks, env, folder, dist=None):
        port = str(free_port())
        self.procs, self.errs = [], []
        self.hung, self.ending = False, False
        for r in range(ranks):
            e = dict(env)
            if ranks > 1 if dist is None else dist:  # as torchrun sets them
                e.update(RANK=str(r), LOCAL_RANK=str(r),
                         WORLD_SIZE=str(ranks), LOCAL_WORLD_SIZE=str(ranks),
                         MASTER_ADDR="127.0.0.1", MASTER_PORT=port)
            # stderr to a file: a pipe nobody reads could fill and block
            err = tempfile.TemporaryFile("w+", dir=folder)
            self.errs.append(err)
            self.procs.append(subprocess.Popen(
                cmd, env=e, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                stderr=err, text=True, start_new_session=True))
        LIVE.append(self)
        for p in self.procs:
            threading.Thread(target=self._watch, args=(p,), daemon=True).start()
        self.timer = threading.Timer(HANG_S, self._hang)
        self.timer.daemon = True
        self.timer.start()

    def _watch(self, p):
        if p.wait() != 0 and not self.ending:
            self._signal()  # one rank failed: the others would wait for it

    def _hang(self):
        self.hung, self.ending = True, True
        # Each rank dumps its threads' stacks to its stderr and ends
        # (killpoint.py); a rank not ended soon after is killed as well.
        for p in self.procs:
            try:
                p.send_signal(signal.SIGUSR1)
            except ProcessLookupError:
                pass
        for p in self.procs:
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                pass
        self._signal()

    def _signal(self):
        for p in self.procs:
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass

    def stderr(self, r):
        self.errs[r].seek(0)
        text = self.errs[r].read()
        if self.hung:
            text += "\n(drive.py: the job had not ended after %d s: ended " \
                "as hung, each rank's stacks above)" % HANG_S
        return text

    def until(self, tag):
        """Read every rank until it holds at checkpoint tag, then SIGKILL
        them all.  Returns each rank's lines."""
        lines = []
        for r, p in enumerate(self.procs):
            got = []
            for line in p.stdout:
                got.append(line.rstrip("\n"))
                if line.startswith("checkpoint %s " % tag):
                    break
            else:
                self.kill()
                raise AssertionError("the job ended without checkpoint %s:\n"
                                     "%s\n%s" % (tag, "\n".join(got),
                                                 self.stderr(r)[-3000:]))
            lines.append(got)
        self.kill()
        return lines

    def kill(self):
        self.ending = True
        self._signal()
        self.finish()

    def finish(self):
        """Each rank's (exit code, lines, stderr)."""
        out = []
        for r, p in enumerate(self.procs):
            o, _ = p.communicate()
            out.append((p.returncode, o.splitlines(), self.stderr(r)))
        self.timer.cancel()
        if self in LIVE:
            LIVE.remove(self)
        return out


def stop_all(*_):
    for job in list(LIVE):
        job.ending = True
        job._signal()
    raise SystemExit("drive.py: stopped; every rank of the running job killed")


def losses(lines):
    return [x for x in lines if x.startswith("loss ")]


def rng_at(lines, kind, tag=None):
    for x in lines:
        w = x.split()
        if w[0] == kind and (tag is None or w[1] == tag):
            return " ".join(w[3:])
    return None


def hung(ranks):
    """Each rank of a job ended as hung: its last line and its stacks."""
    return "\n".join("rank %d, last line %r:\n%s" % (
        r, (out or ["(none)"])[-1], err[-4000:])
        for r, (_, out, err) in enumerate(ranks))


def framework(recipe, python):
    """(True, its version line) when the framework imports for python,
    else (False, the one line a skip prints)."""
    what, check = NEEDS[recipe]
    p = subprocess.run([python, "-c", check], capture_output=True,
                       text=True, env=dict(os.environ, HF_HUB_OFFLINE="1"))
    if p.returncode == 0:
        return True, p.stdout.strip()
    last = (p.stderr.strip().splitlines() or ["exit %d" % p.returncode])[-1]
    return False, "%s does not import for %s (%s); %s" % (
        what, python, last, ENV_HINT)


def ledger_diff(a, b, ranks):
    """None when `rngsnap ledger diff A B` finds every common step equal on
    every rank, else why not."""
    tool = os.path.join(os.environ["RNGSNAP_BUILD_ROOT"], "tools", "rngsnap")
    p = subprocess.run([tool, "ledger", "diff", a, b], capture_output=True,
                       text=True)
    want = "on %d rank%s\n" % (ranks, "" if ranks == 1 else "s")
    if p.returncode != 0 or not p.stdout.endswith(want):
        return "ledger diff of the uninterrupted and the resumed run " \
            "(exit %d):\n%s%s" % (p.returncode, p.stdout, p.stderr)
    return None


def scenario(cmd, ranks, extra, tag, expect, base_env):
    work = tempfile.mkdtemp(prefix="rngsnap-recipe-")
    try:
        def run(name, more, env=None):
            d = os.path.join(work, name)
            os.makedirs(d, exist_ok=True)
            return Job(cmd + ["--dir", d] + extra + more, ranks,
                       dict(base_env, **(env or {})), work)

        job = run("whole", [])
        whole = job.finish()
        if job.hung:
            return "uninterrupted run hung:\n" + hung(whole)
        # a rank that failed by itself first, then one ended for it
        failed = sorted((rc < 0, r, rc, err) for r, (rc, _, err)
                        in enumerate(whole) if rc)
        if failed:
            _, r, rc, err = failed[0]
            return "uninterrupted run failed on rank %d (%d):\n%s" % (
                r, rc, err[-3000:])
        try:
            before = run("job", [], {"RNGSNAP_HOLD_AT": tag}).until(tag)
        except AssertionError as e:  # no such checkpoint: its text says why
            return str(e)
        job = run("job", ["--resume"])
        after = job.finish()
        if job.hung:
            return "resumed run hung:\n" + hung(after)
        for r, ((_, want, _), seen, (rc, out, err)) in enumerate(
                zip(whole, before, after)):
            if expect == "refused":
                if rc == 0 or "OrderError" not in err or \
                        "transformers#39215" not in err:
                    return "rank %d: resume not refused (exit %d):\n%s" % (
                        r, rc, err[-3000:])
                if losses(out):
                    return "rank %d: refused resume trained %d steps" % (
                        r, len(losses(out)))
                continue
            if rc:
                return "rank %d: resumed run failed (%d):\n%s" % (
                    r, rc, err[-3000:])
            saved = rng_at(seen, "checkpoint", tag)
            got = rng_at(out, "resumed")
            if got != saved:
                differ = sorted(set((got or "").split()) ^ set(saved.split()))
                names = sorted(set(x.split("=")[0] for x in differ))
                return "rank %d: after the restore, generators %s differ " \
                    "from the checkpoint's (%s)" % (r, ", ".join(names), got)
            if losses(seen) + losses(out) != losses(want):
                n = len(losses(seen))
                return "rank %d: losses differ (killed after %d of %d; " \
                    "resumed %s, uninterrupted %s)" % (
                        r, n, len(losses(want)), losses(out)[:2],
                        losses(want)[n:n + 2])
        if expect == "exact":  # the recipes' divergence ledgers agree too
            return ledger_diff(os.path.join(work, "whole", "ledger"),
                               os.path.join(work, "job", "ledger"), ranks)
        return None
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("recipe", choices=sorted(SCENARIOS))
    ap.add_argument("--python", default=sys.executable)
    args = ap.parse_args()
    signal.signal(signal.SIGTERM, stop_all)  # meson's timeout, a ^C
    signal.signal(signal.SIGINT, stop_all)
    found, line = framework(args.recipe, args.python)
    if not found:
        print("SKIP %s: %s" % (args.recipe, line), flush=True)
        return 77
    print("== %s on %s" % (line, args.python), flush=True)
    recipe = os.path.join(HERE, "%s_recipe.py" % args.recipe)
    # no hub access: the trainer's model is built in code
    env = dict(os.environ, PYTHONUNBUFFERED="1", HF_HUB_OFFLINE="1")
    ranks, cases = SCENARIOS[args.recipe]
    failed = 0
    for name, extra, tag, expect, devices in cases:
        cmd = [args.python] + ([WITH_DEVICES] if devices else []) + [recipe]
        why = scenario(cmd, ranks, extra, tag, expect,
                       dict(env, **DEVICES_ENV) if devices else env)
        verdict = {"exact": "resumed bit for bit",
                   "refused": "resume refused (OrderError)"}[expect]
        print("%s %s, killed at checkpoint %s: %s" % (
            "FAIL" if why else "ok", args.recipe, tag,
            why or "%s; %s" % (name, verdict)), flush=True)
        failed += bool(why)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
