"""bench_python.py - torch CPU + NumPy + random generator states saved and
loaded through rngsnap (rngsnap.torch.track) and through torch.save /
torch.load of a dict of them (the way accelerate does it; and once more
with the temporary file, fsync and rename that rngsnap's save does), side by side in
one run: median time, file size, and what every single-byte flip of each
file does at load; then the same states kept in memory: rngsnap's
save_bytes/load_bytes next to torch.save/torch.load into io.BytesIO.
Figures only, no thresholds (docs/performance.md, "Python").

    PYTHONPATH=python:build/python python3 tests/bench/bench_python.py \
        [--quick] [--dir DIR] [--objects N]

Then what every save of a job without rngsnap.torch.track() pays to
compare torch's, NumPy's and random's global generators with the last
save's (issue 31, item 1), and the untracked-generator scan that a save
runs (docs/python.md, "Untracked generators") in a process holding N more
Python objects (default 1000000), next to torch.save of the same states
into io.BytesIO.

A flip is byte i XOR 0xff.  Before each load the live generators are set
to a baseline B different from the saved states S; after it:
  refused        an rngsnap.Error (rngsnap) / an exception (torch.load) and
                 every generator still B
  half-restored  an exception, but some generator changed
  silent-wrong   no exception, and some generator is neither S
  same           no exception, every generator S (a byte nothing reads)
  crash          the process died (the flips run in forked children)
"""
import argparse
import io
import os
import random
import statistics
import sys
import tempfile
import time

import numpy as np
import torch

try:  # accelerate's own loader: weights_only=True plus its NumPy safe globals
    from accelerate.utils import load as torch_load
except ImportError:  # no accelerate (Debian's torch 1.13): plain torch.load
    torch_load = torch.load

import rngsnap
import rngsnap.torch


def live():
    return (torch.get_rng_state().numpy().tobytes(),
            np.random.get_state()[1].tobytes(), np.random.get_state()[2:],
            random.getstate())


def set_states(seed):
    torch.manual_seed(seed)
    np.random.seed(seed)
    random.seed(seed)
    torch.rand(3)
    np.random.randn(3)  # leaves a cached Gaussian
    random.gauss(0, 1)


class Rngsnap:
    name = "rngsnap"

    def __init__(self):
        self.ctx = rngsnap.Context()
        self.ctx.seed_all(1)
        rngsnap.torch.track(self.ctx, fingerprint="off")

    def save(self, path):
        self.ctx.save(path, replace=True)

    # The bench sets other states before each load on purpose (every load
    # a run of its own): a loaded context resumes its run and would refuse
    # that re-seed and the next load, so each load is followed by
    # ctx.branch().
    def load(self, path):
        self.ctx.load(path)
        self.ctx.branch()

    def save_mem(self):
        return self.ctx.save_bytes()

    def load_mem(self, data):
        self.ctx.load_bytes(data)
        self.ctx.branch()

    def in_child(self):
        """The way for a fork() child: a context of the child's own (one
        the parent opened refuses loads in a child)."""
        return Rngsnap()

    refusal = rngsnap.Error


class TorchSave:
    name = "torch.save"

    def save(self, path):
        torch.save({"random_state": random.getstate(),
                    "numpy_random_seed": np.random.get_state(),
                    "torch_manual_seed": torch.get_rng_state()}, path)

    def load(self, path):
        states = torch_load(path)
        random.setstate(states["random_state"])
        np.random.set_state(states["numpy_random_seed"])
        torch.set_rng_state(states["torch_manual_seed"])

    # in memory: the file's bytes through io.BytesIO
    def save_mem(self):
        buf = io.BytesIO()
        self.save(buf)
        return buf.getvalue()

    def load_mem(self, data):
        self.load(io.BytesIO(data))

    refusal = Exception

    def in_child(self):
        return self


class TorchSaveFsync(TorchSave):
    """torch.save made as durable as rngsnap's save (which writes a
    temporary file, fsyncs it, renames it and fsyncs the folder): the same
    file, so only timed."""
    name = "+fsync"

    def save(self, path):
        tmp = path + ".tmp"
        TorchSave.save(self, tmp)
        fd = os.open(tmp, os.O_RDONLY)
        os.fsync(fd)
        os.close(fd)
        os.rename(tmp, path)
        fd = os.open(os.path.dirname(path), os.O_RDONLY)
        os.fsync(fd)
        os.close(fd)


def median_us(fn, n):
    times = []
    for _ in range(n):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times) * 1e6


def classify(way, path, saved, baseline):
    set_states(baseline)
    b = live()
    try:
        way.load(path)
    except way.refusal:
        return "refused" if live() == b else "half-restored"
    except BaseException:  # torch.load: any exception type at all
        return "refused" if live() == b else "half-restored"
    return "same" if live() == saved else "silent-wrong"


def sweep(way, data, saved, step, work):
    """Counts per outcome over flips of bytes 0, step, 2*step, ...  Each
    chunk runs in a forked child (a crash costs one chunk, which is then
    rerun one flip per child to find it)."""
    positions = list(range(0, len(data), step))
    counts = {}

    def run(chunk):
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(r)
            out = []
            mine = way.in_child()
            for i in chunk:
                flipped = bytearray(data)
                flipped[i] ^= 0xFF
                p = os.path.join(work, "f%d" % os.getpid())
                with open(p, "wb") as f:
                    f.write(flipped)
                out.append(classify(mine, p, saved, 777))
            os.write(w, " ".join(out).encode())
            os._exit(0)
        os.close(w)
        chunks = []
        while True:
            b = os.read(r, 65536)
            if not b:
                break
            chunks.append(b)
        os.close(r)
        _, status = os.waitpid(pid, 0)
        ok = os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
        return b"".join(chunks).decode().split() if ok else None

    for k in range(0, len(positions), 256):
        chunk = positions[k:k + 256]
        res = run(chunk)
        if res is None:
            res = []
            for i in chunk:
                one = run([i])
                res += one if one is not None else ["crash"]
        for o in res:
            counts[o] = counts.get(o, 0) + 1
    return len(positions), counts


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true",
                    help="5 timing rounds, every 16th byte flipped")
    ap.add_argument("--dir", default=None,
                    help="where the files go (default: the temp folder; "
                    "/dev/shm shows the cost without the disk's fsync)")
    ap.add_argument("--objects", type=int, default=None,
                    help="Python objects for the untracked-generator scan "
                    "(default 1000000; --quick: 200000)")
    args = ap.parse_args()
    n, step = (5, 16) if args.quick else (50, 1)
    torch.set_num_threads(1)
    work = tempfile.mkdtemp(prefix="bench_python.", dir=args.dir)
    ways = [Rngsnap(), TorchSave(), TorchSaveFsync()]
    print("bench_python: torch %s, numpy %s, rngsnap %s, python %s, in %s" % (
        torch.__version__, np.__version__, rngsnap.__version__,
        sys.version.split()[0], work))
    print("%-11s %9s %9s %8s | %s" % ("", "save us", "load us", "bytes",
                                     "byte flips: outcome counts"))
    outcomes = ["refused", "half-restored", "silent-wrong", "same", "crash"]
    for way in ways:
        path = os.path.join(work, way.name + ".ck")
        set_states(42)
        saved = live()
        way.save(path)
        with open(path, "rb") as f:
            data = f.read()
        t_save = median_us(lambda: way.save(path), n)
        set_states(42)
        assert live() == saved
        t_load = median_us(lambda: way.load(path), n)
        assert live() == saved, way.name + ": load did not restore"
        if isinstance(way, TorchSaveFsync):
            print("%-11s %9.0f %9.0f %8d | (torch.save's file: not swept "
                  "again)" % (way.name, t_save, t_load, len(data)))
            continue
        total, counts = sweep(way, data, saved, step, work)
        print("%-11s %9.0f %9.0f %8d | %d flips: %s" % (
            way.name, t_save, t_load, len(data), total,
            ", ".join("%s %d" % (o, counts.get(o, 0)) for o in outcomes)))
    print("in memory   %9s %9s %8s" % ("save us", "load us", "bytes"))
    for way, label in ((ways[0], "save_bytes"), (ways[1], "BytesIO")):
        set_states(42)
        saved = live()
        data = way.save_mem()
        t_save = median_us(way.save_mem, n)
        set_states(42)
        t_load = median_us(lambda: way.load_mem(data), n)
        assert live() == saved, label + ": load did not restore"
        print("%-11s %9.0f %9.0f %8d" % (label, t_save, t_load, len(data)))
    for f in os.listdir(work):
        os.remove(os.path.join(work, f))
    os.rmdir(work)
    print("(rngsnap's file also holds its %d streams and the fingerprint; "
          "times are medians of %d; flips of every %s)" % (
              len(ways[0].ctx.streams()), n,
              "16th byte" if step > 1 else "byte"))
    ways[0].ctx.close()  # its track() would hold the global generators
    globals_check(200 if args.quick else 2000, work=args.dir)
    untracked_scan(args.objects or (200_000 if args.quick else 1_000_000),
                   work=args.dir)


class _Obj:
    """A heap object like a job's: a few attributes, one a container."""

    def __init__(self, i):
        self.i, self.items = i, [i]


def globals_check(n, work=None):
    """What a save adds to compare the three process-wide generators with
    the last save's (issue 31, item 1): the check alone (medians of n, wall
    and CPU), then a save of a context without track() next to the same
    save with the report off (untracked="ignore").  No scan is due in
    between (the schedule is set as after a scan that took a second)."""
    from rngsnap._context import untracked
    folder = tempfile.mkdtemp(prefix="bench_globals.", dir=work)
    path = os.path.join(folder, "ck")
    ctx = rngsnap.Context(untracked="warn")
    ctx.seed_all(1)
    # no open context may track the globals: the check would be skipped
    assert not untracked._tracked_everywhere()[1], "a context tracks them"
    untracked._schedule.last_end = untracked._clock()
    untracked._schedule.last_cost = 1.0  # no scan for the next 100 s
    print("per-save check of the global generators, no track() (wall / "
          "CPU us, medians of %d)" % n)

    def row(what, fn, draw=False, note=""):
        for _ in range(n // 10):  # warm up: caches, the first-time reads
            fn()
        wall, cpu = [], []
        for _ in range(n):
            if draw:  # changed since the last save: a report to build
                torch.rand(1), np.random.rand(), random.random()
            t, c = time.perf_counter(), time.process_time()
            fn()
            wall.append(time.perf_counter() - t)
            cpu.append(time.process_time() - c)
        print("  %-44s %9.1f %9.1f%s" % (what, statistics.median(wall) * 1e6,
                                         statistics.median(cpu) * 1e6, note))
    np.random.seed(0)  # no cached gaussian: the check reads NumPy's key only
    np.random.rand()
    row("the check, nothing drawn since the last", ctx._watch.quick)
    np.random.standard_normal()  # caches the second gaussian of the pair
    row("the same, NumPy's cached gaussian set", ctx._watch.quick,
        note="  (reads np.random.get_state())")
    row("the check, all three drawn since the last", ctx._watch.quick,
        draw=True)
    np.random.seed(0)
    np.random.rand()
    ctx.untracked = "ignore"
    row('ctx.save_bytes(), untracked="ignore"', ctx.save_bytes)
    ctx.untracked = "warn"
    row('ctx.save_bytes(), untracked="warn" (checks)', ctx.save_bytes)
    held = rngsnap.Context(untracked="ignore")
    rngsnap.torch.track(held, fingerprint="off")
    row("the check, an open context's track() holds them",
        ctx._watch.quick)
    held.close()
    ctx.close()
    untracked._schedule.last_end = None
    os.rmdir(folder)


def untracked_scan(n_objects, work=None):
    """The untracked-generator report (docs/python.md, "Untracked
    generators") in a process holding about n_objects more Python objects
    that the cycle collector tracks, next to torch.save of the same
    generator states into io.BytesIO.  Wall and CPU time (the process's,
    which a busy machine inflates less), medians."""
    import gc
    import io
    heap = [_Obj(i) for i in range(n_objects // 2)]  # an _Obj and its list
    loader_gen = torch.Generator().manual_seed(1)
    noise = np.random.default_rng(2)
    heap[len(heap) // 2].gen = loader_gen  # somewhere in the heap
    heap.append([noise])
    ctx = rngsnap.Context(untracked="ignore")
    ctx.seed_all(1)
    rngsnap.torch.track(ctx, fingerprint="off")
    ctx.register_generator("loader", loader_gen)
    ctx.register_generator("noise", noise)
    folder = tempfile.mkdtemp(prefix="bench_scan.", dir=work)
    path = os.path.join(folder, "ck")
    print("untracked-generator scan: %d objects tracked by gc "
          "(wall / CPU us, medians of 5)" % len(gc.get_objects()))

    def row(what, fn, n=5, note=""):
        wall, cpu = [], []
        for _ in range(n):
            t, c = time.perf_counter(), time.process_time()
            fn()
            wall.append(time.perf_counter() - t)
            cpu.append(time.process_time() - c)
        print("  %-42s %9.0f %9.0f%s" % (what, statistics.median(wall) * 1e6,
                                         statistics.median(cpu) * 1e6, note))
    row("scan, nothing untracked", ctx.untracked_generators)
    stray = torch.Generator()
    heap[len(heap) // 3].stray = stray
    assert len(ctx.untracked_generators()) == 1
    row("scan + where it lives, 1 untracked", ctx.untracked_generators)
    ctx.ignore_generator(stray)

    def save():
        ctx.save(path, replace=True)
    row('ctx.save, untracked="ignore"', save)
    ctx.untracked = "error"
    row('ctx.save, untracked="error"', save, note="  (every save scans)")
    ctx.untracked = "warn"
    rngsnap._context.untracked._schedule.last_end = None  # as in a new process
    row('ctx.save, untracked="warn", first save', save, n=1,
        note="  (scans)")
    row('ctx.save, untracked="warn", next saves', save,
        note="  (no scan until %dx the scan's time has passed)"
        % rngsnap._context.untracked.RESCAN_FACTOR)
    row('ctx.save_bytes(), untracked="warn", next', ctx.save_bytes)

    def torch_save():
        torch.save({"random_state": random.getstate(),
                    "numpy_random_seed": np.random.get_state(),
                    "torch_manual_seed": torch.get_rng_state(),
                    "loader": loader_gen.get_state(),
                    "noise": noise.bit_generator.state}, io.BytesIO())
    row("torch.save of the same states, io.BytesIO", torch_save)
    ctx.close()
    os.remove(path)
    os.rmdir(folder)
    del heap


if __name__ == "__main__":
    main()
