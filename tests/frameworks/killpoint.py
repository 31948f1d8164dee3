"""The test harness's side of a recipe (tests/frameworks/drive.py).

A recipe calls committed(tag) once a checkpoint is whole on disk and
resumed(tag) right after its restore.  Each prints one line with a digest
of every generator the process has (torch's CPU generator, each device
generator torch exposes, NumPy's and random's global ones, and the
generators passed in), so the harness can compare the state saved with
the state restored, and holds at the checkpoint the harness chose
(RNGSNAP_HOLD_AT) until it is killed there: the kill lands where the job
signalled, never after a delay.  A job of yours leaves these calls out.
"""
import faulthandler
import hashlib
import os
import random
import signal
import sys

import numpy as np
import torch

DEVICES = ("cuda", "xpu", "hpu", "npu")

# On SIGUSR1, every thread's stack to stderr, then the signal's default
# (the process ends): what drive.py asks of a job it ends as hung, so its
# log says where each rank was.
faulthandler.register(signal.SIGUSR1, all_threads=True, chain=True)


def _device_states():
    for name in DEVICES:
        mod = getattr(torch, name, None)
        if mod is None or not hasattr(mod, "get_rng_state"):
            continue
        try:
            if not mod.is_available():
                continue
            count = mod.device_count()
        except (AttributeError, RuntimeError):
            continue
        for i in range(count):
            yield "%s:%d" % (name, i), mod.get_rng_state(i).cpu()


def _short(data):
    return hashlib.sha256(data).hexdigest()[:8]


def digest(*generators):
    """name=hash of every generator's state: cpu, each device, numpy,
    random, then gen0, gen1, ... for the generators passed in."""
    parts = ["cpu=" + _short(torch.get_rng_state().numpy().tobytes())]
    parts += ["%s=%s" % (n, _short(t.numpy().tobytes()))
              for n, t in _device_states()]
    kind, key, pos, has_gauss, gauss = np.random.get_state()
    parts.append("numpy=" + _short(key.tobytes() + repr(
        (kind, pos, has_gauss, gauss)).encode()))
    parts.append("random=" + _short(repr(random.getstate()).encode()))
    parts += ["gen%d=%s" % (i, _short(g.get_state().numpy().tobytes()))
              for i, g in enumerate(generators)]
    return " ".join(parts)


def _line(text):
    # One write: ranks that share stdout (a launcher's children) cannot
    # cut it (print() writes the text and its newline apart).
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


def committed(tag, *generators):
    _line("checkpoint %s rng %s" % (tag, digest(*generators)))
    if os.environ.get("RNGSNAP_HOLD_AT") == str(tag):
        sys.stdin.readline()  # the harness kills the job here
        raise SystemExit("killpoint: stdin closed while held at %s" % tag)


def resumed(tag, *generators):
    _line("resumed %s rng %s" % (tag, digest(*generators)))
