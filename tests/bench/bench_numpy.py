#!/usr/bin/env python3
"""bench_numpy.py - rngsnap's fills next to NumPy's Philox and torch's CPU
generator, one core, one run.

Every dist rngsnap shares with NumPy, per engine path
(RNGSNAP_PHILOX_ISA=scalar|avx2|avx512|neon, each path this CPU runs,
measured in a child process of its own), against
numpy.random.Generator(numpy.random.Philox) filling the same output buffer
(`out=`) and, where torch imports, torch's default CPU generator filling a
preallocated tensor in place, in the same run, at three output sizes.
Every side is one core: the cpu plugin's default is one thread, NumPy's
generators are single threaded, and torch runs with set_num_threads(1).
Figures only (GB/s of output); no thresholds.

Counterparts     NumPy                                torch
    u32          Philox.random_raw (uint64 words: 2   int64 Tensor.random_()
                 of rngsnap's words each; same bytes  (63-bit values; same
                 out; no out=, so its figure includes  bytes out)
                 allocating the array)
    f32 / f64    Generator.random(dtype=, out=)       Tensor.uniform_()
    normal_*     Generator.standard_normal(dtype=,    Tensor.normal_()
                 out=)

Prints a table (median/best GB/s, and rngsnap's median over NumPy's and
torch's) and one JSON line per figure, which tests/bench/spread.py reads
to sum up several runs.

Usage: PYTHONPATH=python:build/python python3 tests/bench/bench_numpy.py
       [--quick] [--cpu-time] [--paths scalar,avx2,...] [--no-torch]
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


CPU_TIME = False  # --cpu-time: count only the time this thread ran


def rate(fill, nbytes, rounds, min_s):
    """Median and best GB/s of `rounds` timings, each repeating fill until
    min_s seconds have passed (so small sizes are not timer noise); with
    --cpu-time each timing is the thread's CPU time over those reps (every
    side fills on the calling thread), so other jobs' turns on the core
    drop out."""
    fill()  # page the buffer in, warm the code
    rates = []
    for _ in range(rounds):
        reps, t0, c0 = 0, time.perf_counter(), time.thread_time()
        while True:
            fill()
            reps += 1
            dt = time.perf_counter() - t0
            if dt >= min_s:
                break
        if CPU_TIME:
            dt = time.thread_time() - c0
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


def torch_fills(size):
    import torch
    torch.set_num_threads(1)
    torch.manual_seed(1234)
    fills = {}
    for d in DISTS:
        if d == "u32":
            t = torch.empty(size // 8, dtype=torch.int64)
            fills[d] = t.random_
        else:
            dt = torch.float32 if ITEMSIZE[d] == 4 else torch.float64
            t = torch.empty(size // ITEMSIZE[d], dtype=dt)
            fills[d] = t.normal_ if d.startswith("normal") else t.uniform_
    return fills


def have_torch():
    try:
        import torch  # noqa: F401
        return True
    except ImportError:
        return False


def json_line(impl, d, size, median, best):
    print(json.dumps({"bench": "numpy_side", "impl": impl, "dist": d,
                      "bytes": size, "gbps": round(median, 3),
                      "best_gbps": round(best, 3)}))


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
    ap.add_argument("--cpu-time", action="store_true",
                    help="time on the thread's CPU clock (shared machines)")
    ap.add_argument("--no-torch", action="store_true",
                    help="leave torch out even where it imports")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    args.rounds, args.min_s = (3, 0.02) if args.quick else (7, 0.1)
    global CPU_TIME
    CPU_TIME = args.cpu_time
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
    torch_rates = {}
    if not args.no_torch and have_torch():
        for size in SIZES:
            fills = torch_fills(size)
            for d in DISTS:
                torch_rates[f"{d}/{size}"] = rate(fills[d], size,
                                                  args.rounds, args.min_s)
    path_rates = {}
    for p in paths:
        cmd = [sys.executable, os.path.abspath(__file__), "--child"]
        if args.quick:
            cmd.append("--quick")
        if args.cpu_time:
            cmd.append("--cpu-time")
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
    torch_text = ""
    if torch_rates:
        import torch
        torch_text = f", torch {torch.__version__} CPU generator"
    print(f"bench_numpy: {cpu}; NumPy {np.__version__} Generator(Philox)"
          f"{torch_text}; GB/s of output, median/best of {args.rounds} x "
          f"{int(args.min_s * 1000)} ms"
          f"{' of thread CPU time' if CPU_TIME else ''}; xnp, xtorch = "
          "rngsnap median / "
          "NumPy's, torch's median; one core each")
    head = f"{'dist':<11}{'size':>8}  {'numpy':>11}"
    if torch_rates:
        head += f"  {'torch':>11}"
    for p in path_rates:
        head += f"  {p:>11} {'xnp':>6}"
        if torch_rates:
            head += f" {'xtorch':>6}"
    print(head)
    for d in DISTS:
        for size in SIZES:
            key = f"{d}/{size}"
            nm, nb = numpy_rates[key]
            line = f"{d:<11}{human(size):>8}  {nm:5.2f}/{nb:5.2f}"
            if torch_rates:
                tm, tb = torch_rates[key]
                line += f"  {tm:5.2f}/{tb:5.2f}"
            for p, rates in path_rates.items():
                m, b = rates[key]
                line += f"  {m:5.2f}/{b:5.2f} {m / nm:5.1f}x"
                if torch_rates:
                    line += f" {m / tm:5.1f}x"
            print(line)
    for d in DISTS:
        for size in SIZES:
            key = f"{d}/{size}"
            json_line("numpy", d, size, *numpy_rates[key])
            if torch_rates:
                json_line("torch", d, size, *torch_rates[key])
            for p, rates in path_rates.items():
                json_line(f"rngsnap {p}", d, size, *rates[key])
    return 0


if __name__ == "__main__":
    sys.exit(main())
