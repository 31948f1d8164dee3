#!/usr/bin/env python3
"""bench_numpy.py - rngsnap's fills next to NumPy's Philox, one core, one run.

Issue 11's yardstick for the distributions: every dist rngsnap shares with
NumPy, per engine path (RNGSNAP_PHILOX_ISA=scalar|avx2|avx512|neon, each
path this CPU runs, measured in a child process of its own), against
numpy.random.Generator(numpy.random.Philox) filling the same output buffer
(`out=`), in the same run, at three output sizes.  Both sides are one core:
the cpu plugin's default is one thread, and NumPy's generators are single
threaded.  Figures only (GB/s of output); no thresholds.

NumPy's counterparts:   u32        Philox.random_raw (uint64 words: 2 of
                                    rngsnap's words each; same bytes out;
                                    it has no out=, so its figure includes
                                    allocating the array)
                        f32 / f64  Generator.random(dtype=..., out=...)
                        normal_*   Generator.standard_normal(dtype=..., out=...)

Usage: PYTHONPATH=python:build/python python3 tests/bench/bench_numpy.py
       [--quick] [--paths scalar,avx2,...]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

import numpy as np

DISTS = ["u32", "f32", "f64", "normal_f32", "normal_f64"]
SIZES = [64 << 10, 1 << 20, 64 << 20]
ITEMSIZE = {"u32": 4, "f32": 4, "f64": 8, "normal_f32": 4, "normal_f64": 8}
DTYPE = {"u32": np.uint32, "f32": np.float32, "f64": np.float64,
         "normal_f32": np.float32, "normal_f64": np.float64}


def rate(fill, nbytes, rounds, min_s):
    """Median and best GB/s of `rounds` timings, each repeating fill until
    min_s seconds have passed (so small sizes are not timer noise)."""
    fill()  # page the buffer in, warm the code
    rates = []
    for _ in range(rounds):
        reps, t0 = 0, time.perf_counter()
        while True:
            fill()
            reps += 1
            dt = time.perf_counter() - t0
            if dt >= min_s:
                break
        rates.append(nbytes * reps / dt / 1e9)
    return statistics.median(rates), max(rates)


def numpy_fills(size):
    gen = np.random.Generator(np.random.Philox(1234))
    fills = {}
    for d in DISTS:
        buf = np.empty(size // ITEMSIZE[d], dtype=DTYPE[d])
        if d == "u32":
            bitgen, words = gen.bit_generator, size // 8
            fills[d] = lambda bg=bitgen, w=words: bg.random_raw(w)
        elif d.startswith("normal"):
            fills[d] = lambda b=buf, t=DTYPE[d]: gen.standard_normal(
                dtype=t, out=b)
        else:
            fills[d] = lambda b=buf, t=DTYPE[d]: gen.random(dtype=t, out=b)
    return fills


def rngsnap_fills(size):
    import rngsnap
    ctx = rngsnap.Context()
    ctx.seed_all(1234)
    s = ctx.stream("cpu", 0, "default")
    fills = {}
    for d in DISTS:
        buf = np.empty(size // ITEMSIZE[d], dtype=DTYPE[d])
        fills[d] = lambda b=buf, dist=d: s.generate(dist, out=b)
    return ctx, fills


def child(args):
    """Measure rngsnap on the path RNGSNAP_PHILOX_ISA names; print JSON."""
    out = {}
    for size in SIZES:
        ctx, fills = rngsnap_fills(size)
        for d in DISTS:
            out[f"{d}/{size}"] = rate(fills[d], size, args.rounds, args.min_s)
        ctx.close()
    print(json.dumps(out))


def runnable_paths():
    """Paths this CPU runs: forcing one it lacks is refused at open."""
    paths = []
    for p in ["scalar", "avx2", "avx512", "neon"]:
        env = dict(os.environ, RNGSNAP_PHILOX_ISA=p)
        r = subprocess.run(
            [sys.executable, "-c",
             "import rngsnap; c = rngsnap.Context(); c.seed_all(1); "
             "c.stream('cpu', 0, 'default').generate('u32', 4)"],
            env=env, capture_output=True)
        if r.returncode == 0:
            paths.append(p)
    return paths


def human(size):
    return f"{size >> 20} MiB" if size >= 1 << 20 else f"{size >> 10} KiB"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true",
                    help="3 rounds of 20 ms (test.sh's bench stage)")
    ap.add_argument("--paths", help="comma-separated; default: every "
                    "path this CPU runs")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    args.rounds, args.min_s = (3, 0.02) if args.quick else (7, 0.1)
    if args.child:
        child(args)
        return 0

    paths = args.paths.split(",") if args.paths else runnable_paths()
    numpy_rates = {}
    for size in SIZES:
        fills = numpy_fills(size)
        for d in DISTS:
            numpy_rates[f"{d}/{size}"] = rate(fills[d], size, args.rounds,
                                              args.min_s)
    path_rates = {}
    for p in paths:
        cmd = [sys.executable, os.path.abspath(__file__), "--child"]
        if args.quick:
            cmd.append("--quick")
        r = subprocess.run(cmd, env=dict(os.environ, RNGSNAP_PHILOX_ISA=p),
                           capture_output=True, text=True)
        if r.returncode != 0:
            print(f"path {p}: failed: {r.stderr.strip()[-300:]}")
            continue
        path_rates[p] = json.loads(r.stdout)

    cpu = "unknown CPU"
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next(l.split(":", 1)[1].strip() for l in f
                       if l.startswith("model name"))
    except (OSError, StopIteration):
        pass
    print(f"bench_numpy: {cpu}; NumPy {np.__version__} Generator(Philox); "
          f"GB/s of output, median/best of {args.rounds} x "
          f"{int(args.min_s * 1000)} ms; ratio = rngsnap median / NumPy "
          "median; one core each")
    head = f"{'dist':<11}{'size':>8}  {'numpy':>11}"
    for p in path_rates:
        head += f"  {p:>11} {'ratio':>6}"
    print(head)
    for d in DISTS:
        for size in SIZES:
            key = f"{d}/{size}"
            nm, nb = numpy_rates[key]
            line = f"{d:<11}{human(size):>8}  {nm:5.2f}/{nb:5.2f}"
            for p, rates in path_rates.items():
                m, b = rates[key]
                line += f"  {m:5.2f}/{b:5.2f} {m / nm:5.1f}x"
            print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
