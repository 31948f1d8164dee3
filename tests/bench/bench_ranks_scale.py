#!/usr/bin/env python3
"""bench_ranks_scale.py - multi-rank checkpoints at 8, 64 and 256 ranks in
both layouts (one file per node, one file per rank), measured, and a model
of the same counts at 10k and 100k ranks (docs/performance.md,
"Multi-rank at scale").

For each (ranks, layout) it starts rngsnap-bench-ranks-scale under
`mpirun --oversubscribe` twice:

  1. timed: a save into a new folder, then --runs saves replacing it and
     --runs loads; the slowest rank's time of each, the files left in the
     folder, the bytes every rank sent and received through the
     communicator (counted in the program's own rngsnap_comm), and the
     ranks' peak memory;
  2. every rank under its own `strace -f -ff -y` (a separate run: strace
     slows every call): one save into a new folder, one replacing save
     and one load, each framed by marker calls, so that only the calls
     the operation made on the checkpoint folder are counted (MPI's own
     start-up opens files and creates shared-memory files: a whole-job
     `strace -c` would count them).  The creates counted must equal the
     files the folder holds after the first save, or the script stops.

Node files use RNGSNAP_RANKS_PER_NODE=8 (emulated nodes of 8 ranks: 32
nodes at 256 ranks); per-rank files add RNGSNAP_SAVE_PER_RANK_FILES.  The
registry is tiny (the cpu backend, one stream), with coordinates set per
rank (dp/ep/pp/tp), so what is measured is the protocol and the file
system calls, not state size.  Figures only, no thresholds.

    python3 tests/bench/bench_ranks_scale.py [--build build] \\
        [--ranks 8,64,256] [--layouts node,rank] [--runs 5] [--dir /tmp] \\
        [--no-strace] [--json FILE] [--quick]

    python3 tests/bench/bench_ranks_scale.py --model FILE.json

prints the model of docs/performance.md from such a run's counts.
256 processes on a small machine: MPI's start-up alone took about a
minute on the 2-vCPU VM of docs/performance.md, the whole matrix 8-11
minutes, and 4.3 GB of memory at 256 ranks.  Exit 77 (skip) without
mpirun or the program.
"""
import argparse
import glob
import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
PROGRAM = "rngsnap-bench-ranks-scale"
RANKS_PER_NODE = 8

# The calls strace reports.  access/faccessat carry the markers.
# close is left out: mpirun's children close every descriptor before
# exec, over a thousand calls each, and every traced call stops the
# process (each open or create here is closed once: count those).
TRACED = ("access,faccessat,faccessat2,open,openat,openat2,creat,"
          "rename,renameat,renameat2,link,linkat,unlink,unlinkat,mkdir,"
          "mkdirat,rmdir,stat,lstat,newfstatat,statx,getdents64,fsync,"
          "fdatasync,syncfs,flock,ftruncate,fallocate")
MARK = re.compile(r'"/rngsnap-bench-mark/([a-z_]+)-(begin|end)/(\d+)"')
OPS = ("save_fresh", "save", "load")
# Kinds of call, in the table's order.  "meta" sums the ones a parallel
# file system's metadata server serves (fsyncs are shown apart).
KINDS = ("create", "open", "open_dir", "rename", "unlink", "mkdir", "stat",
         "readdir", "fsync_file", "fsync_dir", "other")
META = ("create", "open", "open_dir", "rename", "unlink", "mkdir", "stat",
        "readdir")


def classify(call, line, folder):
    """The kind of one traced call on the checkpoint folder, or None for a
    call elsewhere (MPI's files, /proc)."""
    if folder not in line:
        return None
    if call in ("open", "openat", "openat2", "creat"):
        if call == "creat" or "O_CREAT" in line:
            return "create"
        return "open_dir" if "O_DIRECTORY" in line else "open"
    if call in ("rename", "renameat", "renameat2", "link", "linkat"):
        return "rename"
    if call in ("unlink", "unlinkat", "rmdir"):
        return "unlink"
    if call in ("mkdir", "mkdirat"):
        return "mkdir"
    if call in ("stat", "lstat", "newfstatat", "statx"):
        # glibc's fstat is newfstatat(fd, "", AT_EMPTY_PATH): no lookup
        return "other" if "AT_EMPTY_PATH" in line else "stat"
    if call == "getdents64":
        return "readdir"
    if call in ("fsync", "fdatasync", "syncfs"):
        # -y: fsync(5</tmp/x/ckpt>) is the folder itself
        return "fsync_dir" if re.search(re.escape(folder) + r">", line) \
            else "fsync_file"
    return "other"


def parse_traces(prefix, folder):
    """Counts per operation and kind: {op: {"sum": {kind: n}, "r0": {...},
    "maxother": {...}, "calls": {name: n}}} from strace -ff files."""
    per_rank = {op: {} for op in OPS}
    calls = {op: {} for op in OPS}
    for path in glob.glob(prefix + ".*"):
        op = rank = None
        with open(path, encoding="utf-8", errors="replace") as f:
            for line in f:
                m = MARK.search(line)
                if m:
                    op, rank = (m.group(1), int(m.group(3))) \
                        if m.group(2) == "begin" else (None, None)
                    if op:  # a rank may make no call at all (a node's
                        # non-leader during a save)
                        per_rank[op].setdefault(rank, dict.fromkeys(KINDS, 0))
                    continue
                if op is None:
                    continue
                name = line.split("(", 1)[0].strip()
                kind = classify(name, line, folder)
                if kind is None:
                    continue
                per_rank[op][rank][kind] += 1
                calls[op][name] = calls[op].get(name, 0) + 1
    out = {}
    for op in OPS:
        ranks_seen = per_rank[op]
        zero = dict.fromkeys(KINDS, 0)
        out[op] = {
            "sum": {k: sum(c[k] for c in ranks_seen.values()) for k in KINDS},
            "r0": ranks_seen.get(0, zero),
            "maxother": {k: max([c[k] for r, c in ranks_seen.items() if r]
                                or [0]) for k in KINDS},
            "calls": calls[op],
            "ranks_marked": len(ranks_seen),
        }
        for who in ("sum", "r0", "maxother"):
            out[op][who]["meta"] = sum(out[op][who][k] for k in META)
    return out


def mpirun(n, program, work, ini, layout, runs, extra=(), wrap=()):
    cmd = ["mpirun", "--oversubscribe", "--bind-to", "none", "-np", str(n),
           *wrap, program, "--dir", work, "--ini", ini, "--runs", str(runs),
           "--coords", *extra]
    if layout == "rank":
        cmd.append("--per-rank-files")
    return cmd


def run_result(cmd, env, timeout):
    r = subprocess.run(cmd, env=env, capture_output=True, text=True,
                       timeout=timeout)
    lines = [l for l in r.stdout.splitlines() if l.startswith("RESULT ")]
    if r.returncode != 0 or len(lines) != 1:
        sys.stderr.write(r.stdout[-4000:] + r.stderr[-4000:])
        raise SystemExit("%s: exit %d" % (" ".join(cmd[:8]), r.returncode))
    res = {}
    for kv in lines[0].split()[1:]:
        k, _, v = kv.partition("=")
        try:
            res[k] = float(v) if "." in v else int(v)
        except ValueError:
            res[k] = v
    return res


def measure(args, program, ini, n, layout):
    env = dict(os.environ, RNGSNAP_RANKS_PER_NODE=str(RANKS_PER_NODE))
    env.setdefault("OMPI_ALLOW_RUN_AS_ROOT", "1")
    env.setdefault("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
    row = {"ranks": n, "layout": layout}
    work = tempfile.mkdtemp(prefix="rngsnap-scale-", dir=args.dir)
    try:
        row["timed"] = run_result(mpirun(n, program, work, ini, layout,
                                         args.runs), env, args.timeout)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if args.strace:
        work = tempfile.mkdtemp(prefix="rngsnap-scale-", dir=args.dir)
        try:
            prefix = os.path.join(work, "trace")
            # One strace per rank (mpirun starts strace, strace the
            # rank): one tracer for the whole job serves every stop of
            # 256 starting ranks in turn and took over 12 minutes here.
            strace = ["strace", "-f", "-ff", "-qq", "-y", "--seccomp-bpf",
                      "-e", "trace=" + TRACED, "-o", prefix]
            cmd = mpirun(n, program, os.path.join(work, "job"), ini, layout,
                         1, ["--mark"], strace)
            os.mkdir(os.path.join(work, "job"))
            row["straced"] = run_result(cmd, env, args.timeout)
            row["syscalls"] = parse_traces(
                prefix, os.path.join(work, "job", "ckpt"))
            for op in OPS:
                if row["syscalls"][op]["ranks_marked"] != n:
                    raise SystemExit("%d ranks, %s: markers of %d ranks in "
                                     "the trace" % (n, op, row["syscalls"][op]
                                                    ["ranks_marked"]))
            # Two ways of counting the same thing must agree.
            creates = row["syscalls"]["save_fresh"]["sum"]["create"]
            if creates != row["straced"]["files_fresh"]:
                raise SystemExit("%d ranks, %s: strace counted %d creates, "
                                 "the folder holds %d files" % (
                                     n, layout, creates,
                                     row["straced"]["files_fresh"]))
        finally:
            shutil.rmtree(work, ignore_errors=True)
    return row


# ---- the tables -------------------------------------------------------------

def ms(us):
    return "%.1f" % (us / 1000.0)


def print_tables(rows, out):
    w = out.write
    w("\nTime in ms on the slowest rank: save new = one save into a new "
      "folder; save, load = rngsnap_mpi_save (replacing the folder) and "
      "rngsnap_mpi_load, median/best of %d; counted = one more of each "
      "through the counting communicator.  Files and bytes in the folder "
      "after the first save; peak memory of all ranks and of the largest\n"
      % rows[0]["timed"]["runs"])
    w("%6s %-6s %6s %8s %9s %15s %15s %8s %8s %9s %8s\n" % (
        "ranks", "layout", "files", "bytes", "save new", "save", "load",
        "save cnt", "load cnt", "rss MiB", "max MiB"))
    for r in rows:
        t = r["timed"]
        w("%6d %-6s %6d %8d %9s %15s %15s %8s %8s %9.0f %8.1f\n" % (
            r["ranks"], r["layout"], t["files_fresh"], t["folder_bytes_fresh"],
            ms(t["save_fresh_us"]),
            ms(t["save_median_us"]) + "/" + ms(t["save_best_us"]),
            ms(t["load_median_us"]) + "/" + ms(t["load_best_us"]),
            ms(t["save_counted_us"]), ms(t["load_counted_us"]),
            t["peak_rss_kib_sum"] / 1024.0, t["peak_rss_kib_max"] / 1024.0))
    if any("syscalls" in r for r in rows):
        w("\nFile system calls on the folder per operation, all ranks "
          "together (strace); meta = create+open+open_dir+rename+unlink+"
          "mkdir+stat+readdir; r0 = rank 0's meta\n")
        w("%6s %-6s %-10s" % ("ranks", "layout", "op")
          + "".join(" %8s" % k for k in KINDS + ("meta", "r0 meta")) + "\n")
        for r in rows:
            for op in OPS if "syscalls" in r else ():
                s = r["syscalls"][op]
                w("%6d %-6s %-10s" % (r["ranks"], r["layout"], op)
                  + "".join(" %8d" % s["sum"][k] for k in KINDS + ("meta",))
                  + " %8d\n" % s["r0"]["meta"])
    w("\nBytes through the communicator per operation (payload: a "
      "broadcast counts once out at its root and once in at every other "
      "rank; in = received, out = sent); max other = the largest of any "
      "rank but 0\n")
    w("%6s %-6s %-10s %10s %8s %10s %12s %12s %12s %6s\n" % (
        "ranks", "layout", "op", "r0 in", "r0 msgs", "r0 out", "max in oth",
        "max out oth", "all ranks", "bcasts"))
    for r in rows:
        t = r["timed"]
        for op in OPS:
            def g(name, who):
                return t["%s_%s_%s" % (op, name, who)]
            w("%6d %-6s %-10s %10d %8d %10d %12d %12d %12d %6d\n" % (
                r["ranks"], r["layout"], op, g("in_bytes", "r0"),
                g("recv_msgs", "r0"), g("out_bytes", "r0"),
                g("in_bytes", "maxother"), g("out_bytes", "maxother"),
                g("in_bytes", "sum"), g("bcast_calls", "r0")))


# ---- the model ----------------------------------------------------------------

# The assumptions of docs/performance.md, "Multi-rank at scale" (say there
# why each holds; change them there and here together).
MDS_RATE = 15000.0      # metadata ops/s one Lustre MDS serves, all clients
SERIAL_RATE = 2000.0    # ops/s of one process's synchronous metadata calls
ALPHA_S = 2e-6          # seconds per message rank 0 receives or sends
BETA = 10e9             # bytes/s into or out of rank 0
MODEL_RANKS = (10000, 100000)


def model_counts(row):
    """The counted figures the model scales, for one measured row."""
    t, sc = row["timed"], row["syscalls"]

    def b(op, name, who):
        return t["%s_%s_%s" % (op, name, who)]
    return {
        "files": t["files_fresh"],
        "creates": sc["save_fresh"]["sum"]["create"],
        "save_meta": sc["save_fresh"]["sum"]["meta"],
        "save_fsync": sc["save_fresh"]["sum"]["fsync_file"]
        + sc["save_fresh"]["sum"]["fsync_dir"],
        "replace_r0_meta": sc["save"]["r0"]["meta"],
        "load_meta": sc["load"]["sum"]["meta"],
        "save_r0_in": b("save_fresh", "in_bytes", "r0"),
        "save_r0_msgs": b("save_fresh", "recv_msgs", "r0")
        + b("save_fresh", "send_msgs", "r0"),
        "save_bcasts": b("save_fresh", "bcast_calls", "r0"),
        "save_other_in": b("save_fresh", "in_bytes", "maxother"),
        "load_r0_out": b("load", "out_bytes", "r0"),
        "load_r0_msgs": b("load", "recv_msgs", "r0")
        + b("load", "send_msgs", "r0"),
        "load_bcasts": b("load", "bcast_calls", "r0"),
        "load_other_in": b("load", "in_bytes", "maxother"),
    }


def fit(points):
    """c = a + b * ranks through the two largest measured rank counts;
    returns (a, b, the largest miss at the other points)."""
    pts = sorted(points)
    (n1, c1), (n2, c2) = pts[-2], pts[-1]
    slope = (c2 - c1) / float(n2 - n1)
    a = c1 - slope * n1
    miss = max([abs(a + slope * n - c) for n, c in pts[:-2]] or [0.0])
    return a, slope, miss


def model_row(c, ranks):
    """Modelled seconds from counts c at ranks."""
    log2 = max(1.0, math.log2(ranks))
    return {
        "creates_s": c["creates"] / MDS_RATE,
        "save_meta_s": c["save_meta"] / MDS_RATE,
        "replace_r0_s": c["replace_r0_meta"] / SERIAL_RATE,
        "load_meta_s": c["load_meta"] / MDS_RATE,
        "save_net_s": c["save_r0_msgs"] * ALPHA_S + c["save_r0_in"] / BETA
        + c["save_bcasts"] * log2 * ALPHA_S,
        "load_net_s": c["load_r0_msgs"] * ALPHA_S + c["load_r0_out"] / BETA
        + c["load_bcasts"] * log2 * ALPHA_S,
    }


def print_model(rows, out):
    """The measured rows and the model at MODEL_RANKS as a Markdown table."""
    w = out.write
    rows = [r for r in rows if "syscalls" in r]
    by_layout = {}
    for r in rows:
        by_layout.setdefault(r["layout"], []).append(
            (r["ranks"], model_counts(r)))
    w("| ranks | layout | how | files created | metadata ops save / load "
      "| fsyncs | rank 0 serial ops (replace) | creates at 15k/s | all "
      "metadata ops at 15k/s, save / load | rank 0 serial at 2k/s "
      "| bytes to rank 0 (msgs) | rank 0 network, save / load "
      "| max bytes to another rank, save / load |\n")
    w("|---:|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
    fits = {}
    for layout, pts in sorted(by_layout.items()):
        keys = pts[0][1].keys()
        fits[layout] = {k: fit([(n, c[k]) for n, c in pts]) for k in keys}
        scaled = [(n, c, "measured") for n, c in sorted(pts)]
        for n in MODEL_RANKS:
            scaled.append((n, {k: max(0.0, a + b * n) for k, (a, b, _)
                               in fits[layout].items()}, "modelled"))
        for n, c, how in scaled:
            m = model_row(c, n)
            w("| %d | %s | %s | %.0f | %.0f / %.0f | %.0f | %.0f | %.2f s "
              "| %.2f / %.2f s | %.2f s | %.0f (%.0f) | %.3f / %.3f s "
              "| %.0f / %.0f |\n" % (
                  n, layout, how, c["creates"], c["save_meta"],
                  c["load_meta"], c["save_fsync"], c["replace_r0_meta"],
                  m["creates_s"], m["save_meta_s"], m["load_meta_s"],
                  m["replace_r0_s"], c["save_r0_in"], c["save_r0_msgs"],
                  m["save_net_s"], m["load_net_s"], c["save_other_in"],
                  c["load_other_in"]))
    w("\nThe lines (count = a + b x ranks, through the two largest "
      "measured rank counts; miss = the largest difference at the others):\n")
    for layout, f in sorted(fits.items()):
        for k, (a, b, miss) in f.items():
            w("  %-5s %-16s a = %10.1f  b = %9.4f  miss = %.1f\n"
              % (layout, k, a, b, miss))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default=None,
                    help="build folder (default: the one holding this "
                    "checkout's build/)")
    ap.add_argument("--ranks", default="8,64,256")
    ap.add_argument("--layouts", default="node,rank")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--dir", default="/tmp",
                    help="where the folders go (default /tmp: disk here)")
    ap.add_argument("--no-strace", dest="strace", action="store_false")
    ap.add_argument("--timeout", type=int, default=1800,
                    help="seconds one mpirun may take")
    ap.add_argument("--json", help="also write every figure to this file")
    ap.add_argument("--model", metavar="JSON",
                    help="print the model from a --json file of a run "
                    "with strace, and exit")
    ap.add_argument("--quick", action="store_true",
                    help="8 ranks, 2 runs, no strace (the benchmark stage)")
    args = ap.parse_args()
    if args.model:
        with open(args.model, encoding="utf-8") as f:
            print_model(json.load(f), sys.stdout)
        return 0
    if args.quick:
        args.ranks, args.runs, args.strace = "8", 2, False
    build = os.path.abspath(args.build or os.path.join(HERE, "..", "..",
                                                      "build"))
    program = os.path.join(build, "tests", "bench", PROGRAM)
    if not shutil.which("mpirun") or not os.access(program, os.X_OK):
        print("skip: %s" % ("no mpirun on PATH" if not shutil.which("mpirun")
                            else program + " not built (MPI not found?)"))
        return 77
    if args.strace and not shutil.which("strace"):
        print("skip: no strace on PATH (or pass --no-strace)")
        return 77
    plugins = os.path.join(build, "plugins")
    ini_dir = tempfile.mkdtemp(prefix="rngsnap-scale-ini-", dir=args.dir)
    ini = os.path.join(ini_dir, "rng.ini")
    with open(ini, "w", encoding="utf-8") as f:
        f.write("[rngsnap]\nplugin_dir = %s\n[backend.cpu]\nplugin = "
                "rngsnap_cpu\nrequired = true\nstreams = default\n" % plugins)
    print("multi-rank checkpoints at scale: registry = the cpu backend, one "
          "stream, coordinates per rank; node files = %d ranks per "
          "emulated node; folders in %s; mpirun --oversubscribe on %d CPUs"
          % (RANKS_PER_NODE, args.dir, os.cpu_count()))
    sys.stdout.flush()
    rows = []
    try:
        for n in [int(x) for x in args.ranks.split(",")]:
            for layout in args.layouts.split(","):
                t0 = time.monotonic()
                rows.append(measure(args, program, ini, n, layout))
                print("  done: %d ranks, %s files (%.0f s)"
                      % (n, layout, time.monotonic() - t0))
                sys.stdout.flush()
                if args.json:  # after every row: a long matrix keeps its rows
                    with open(args.json, "w", encoding="utf-8") as f:
                        json.dump(rows, f, indent=1)
    finally:
        shutil.rmtree(ini_dir, ignore_errors=True)
    print_tables(rows, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
