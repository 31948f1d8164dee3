"""bench_ledger.py - what a divergence-ledger mark costs from Python
(docs/performance.md, "Divergence ledger"): a context with 16 cpu streams
and 5 tracked generators - rngsnap.torch.track()'s three (torch's CPU
generator, NumPy's and random's global ones, plus the fingerprint) and
two of register_generator (a torch.Generator and a NumPy Generator) -
marks steps with led.step(n); printed: the median time per mark over
batches, with and without a led.note("loss", float) each step, and the
bytes per record.  Figures only, no thresholds.

    PYTHONPATH=python:build/python RNGSNAP_PLUGIN_BUILD_DIR=build/plugins \\
        python3 tests/bench/bench_ledger.py [--quick]
"""
import os
import random
import statistics
import sys
import tempfile
import time

import numpy as np
import torch

import rngsnap
import rngsnap.torch

STREAMS = 16


def plugin_dir():
    d = os.environ.get("RNGSNAP_PLUGIN_BUILD_DIR")
    if d:
        return os.path.abspath(d)
    return os.path.join(rngsnap._rngsnap.BUILD_ROOT, "plugins")


def measure(work, batches, per, note):
    ini = os.path.join(work, "rng.ini")
    with open(ini, "w") as f:
        f.write("[rngsnap]\nplugin_dir = %s\n[backend.cpu]\nplugin = "
                "rngsnap_cpu\nstreams = %s\n" % (
                    plugin_dir(), ", ".join("s%d" % i for i in range(STREAMS))))
    ctx = rngsnap.Context(config=ini)
    rngsnap.torch.track(ctx, fingerprint="off")
    ctx.register_generator("loader", torch.Generator().manual_seed(1))
    ctx.register_generator("noise", np.random.default_rng(2))
    ctx.seed_all(1)
    path = os.path.join(work, "bench.ledger")
    if os.path.exists(path):
        os.unlink(path)
    led = ctx.ledger(path)
    start = os.path.getsize(path)
    s = ctx.stream("cpu", 0, "s0")
    times, step = [], 0
    for _ in range(batches):
        t0 = time.perf_counter()
        for _ in range(per):
            random.random()  # a generator that moves each step
            s.generate("u32", 1)
            if note:
                led.note("loss", 0.25)
            led.step(step)
            step += 1
        times.append((time.perf_counter() - t0) / per * 1e6)
    record = (os.path.getsize(path) - start) / step
    entries = STREAMS + len(ctx_apps(ctx))
    led.close()
    ctx.close()
    return statistics.median(times), record, entries


def ctx_apps(ctx):
    # track()'s states and the two registered generators
    return ["rngsnap.fingerprint", "torch.cpu", "numpy.global",
            "python.random", "loader", "noise"]


def main():
    quick = "--quick" in sys.argv[1:]
    batches, per = (11, 100) if quick else (51, 1000)
    print("bench_ledger: torch %s, numpy %s, rngsnap %s, python %s" % (
        torch.__version__, np.__version__, rngsnap.__version__,
        sys.version.split()[0]))
    with tempfile.TemporaryDirectory(dir="/dev/shm" if os.path.isdir(
            "/dev/shm") else None) as work:
        for note in (False, True):
            us, rec, entries = measure(work, batches, per, note)
            print("  led.step(n)%s: %.1f us per mark (median of %d batches "
                  "of %d); record %.0f bytes (budget 64 + 16 x %d = %d)" % (
                      " after led.note('loss', float)" if note else "", us,
                      batches, per, rec, entries, 64 + 16 * entries))


if __name__ == "__main__":
    main()
