#!/usr/bin/env python3
"""run_mpi.py - drives the mpirun tests of librngsnap_mpi (suite "mpi").

Each scenario starts jobs of tests/mpi/mpi_check (one per mpirun, as a
real job and its resumed successor would be) and checks what they print
and return.  Usage (meson passes the first three):
  run_mpi.py MPI_BUILT MPI_CHECK CHUNK_CHECK SCENARIO [N]
  SCENARIO: resume N | kill N replace|new | fail N | fork | misc | forkcheck
Exit 77 (skipped) when librngsnap_mpi was not built or mpirun is missing.
"""
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile

mpi_built, prog, chunk_prog, scenario = sys.argv[1:5]
nranks = int(sys.argv[5]) if len(sys.argv) > 5 else 0
if mpi_built != "yes":
    print("skip: librngsnap_mpi not built (Meson found no MPI)")
    sys.exit(77)
mpirun = shutil.which("mpirun")
if not mpirun:
    print("skip: no mpirun on PATH (Debian: apt-get install openmpi-bin)")
    sys.exit(77)

env = dict(os.environ)
for var in ("RANK", "WORLD_SIZE", "PMI_RANK", "PMI_SIZE", "RNGSNAP_TEST_KILL",
            "RNGSNAP_CONFIG", "RNGSNAP_PLUGIN_PATH"):
    env.pop(var, None)
if os.geteuid() == 0:  # Open MPI refuses root without these
    env["OMPI_ALLOW_RUN_AS_ROOT"] = "1"
    env["OMPI_ALLOW_RUN_AS_ROOT_CONFIRM"] = "1"
tmp = tempfile.mkdtemp(prefix="rngsnap-mpi-")
# Open MPI keeps its session folder under TMPDIR (/tmp/ompi.<host>.<uid>
# by default); two scenarios' mpiruns starting at once (meson runs tests
# in parallel) can race creating it ("File exists"), so each scenario
# gets its own.
env["TMPDIR"] = os.path.join(tmp, "ompi-session")
os.mkdir(env["TMPDIR"])
failures = []
runs = 0


def job(n, args, kill=None, program=None):
    """One mpirun of n ranks; returns (exit code, output)."""
    global runs
    runs += 1
    e = dict(env)
    if kill:
        e["RNGSNAP_TEST_KILL"] = kill
    cmd = [mpirun, "--oversubscribe", "--bind-to", "none", "-np", str(n),
           program or prog] + [str(a) for a in args]
    p = subprocess.Popen(cmd, env=e, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True,
                         start_new_session=True)
    try:
        out, _ = p.communicate(timeout=90)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        out, _ = p.communicate()
        out += "\n(timed out after 90 s: a rank hung)"
        return 124, out
    return p.returncode, out


def expect_ok(n, args, what, kill=None, program=None):
    rc, out = job(n, args, kill, program)
    if rc != 0:
        failures.append(f"{what}: {n} ranks, mpirun exit {rc}\n{out}")
    return out


def show(what, out):
    """Rank 0's messages, so the log shows what a user would read."""
    for line in out.splitlines():
        if line.startswith(("refused: ", "before MPI_Init", "after MPI_Finalize")):
            print(f"  {what}: {line}")


def loaded_gen(out):
    m = re.search(r"^GEN (\S+)", out, re.M)
    return m.group(1) if m else None


def check(n, d, gens, what, absent=False):
    """A new job loads d; returns the generation it found ('none' if the
    folder was not committed and absent is allowed)."""
    args = ["check", d, "gens=" + ",".join(str(g) for g in gens)]
    if absent:
        args.append("absent")
    out = expect_ok(n, args, what)
    g = loaded_gen(out)
    if g is None:
        failures.append(f"{what}: no generation reported\n{out}")
    return g


def call_counts(out):
    """Each rank's communication calls in a save (mpi_kill.c counts)."""
    return {int(r): int(k) for r, k in re.findall(r"^calls (\d+) (\d+)", out, re.M)}


def resume(n):
    d = os.path.join(tmp, f"ck{n}")
    expect_ok(n, ["save", d, "gen=1"], "save")
    check(n, d, [1], "bit-exact resume")
    expect_ok(n, ["save", d, "gen=2", "expect=RNGSNAP_E_EXISTS"],
              "save over a committed folder without REPLACE")
    check(n, d, [1], "previous checkpoint after EXISTS")
    expect_ok(n, ["save", d, "gen=2", "replace"], "save with REPLACE")
    check(n, d, [2], "resume after REPLACE")
    expect_ok(n, ["save", d, "gen=3", "replace", "nosync"], "save with NO_SYNC")
    check(n, d, [3], "resume after NO_SYNC")
    print(f"{n} ranks: save, resume bit-exact, EXISTS, REPLACE, NO_SYNC: {runs} jobs")


def io_counts(out):
    return {int(r): int(k) for r, k in re.findall(r"^io (\d+) (\d+)", out, re.M)}


def kill(n, variant):
    """SIGKILL one rank at every message of a save (before and after each
    send, receive and broadcast), before every fsync/rename/unlink it
    makes, and inside an app-state save callback, in nodes of 2 ranks;
    after each, a new job loads the previous or the new checkpoint,
    whole, on every rank."""
    env["RNGSNAP_RANKS_PER_NODE"] = "2"
    base = os.path.join(tmp, "kill0")
    expect_ok(n, ["save", base, "gen=0"], "first save")
    # Count the calls of a save like the ones killed below.
    if variant == "replace":
        out = expect_ok(n, ["save", base, "gen=0", "replace"], "counting save")
    else:
        out = expect_ok(n, ["save", os.path.join(tmp, "count"), "gen=0"],
                        "counting save")
    calls, io = call_counts(out), io_counts(out)
    if len(calls) != n or min(calls.values()) < 2 or len(io) != n:
        failures.append(f"counting save reported calls {calls}, "
                        f"file system calls {io}\n{out}")
        return
    points = []
    # Nodes of 2 (emulated): rank 0 (root and leader), rank n-2 (another
    # node's leader) and rank n-1 (not a leader) are each killed at every
    # message, before and after.
    for r in sorted({0, max(n - 2, 0), n - 1}):
        points += [(r, f"{r}:{k}:{w}") for k in range(1, calls[r] + 1)
                   for w in ("before", "after")]
        points += [(r, f"{r}:io:{k}") for k in range(1, io[r] + 1)]
        points.append((r, f"app:{r}"))
    io_killed = 0
    g, committed, folder, seq = 0, base, base, 0
    outcomes = {"old": 0, "new": 0}
    for r, point in points:
        seq += 1
        if variant == "new" and folder == committed:
            folder = os.path.join(tmp, f"kill{seq}")
        args = ["save", folder, f"gen={g + 1}"]
        kill_spec = None
        if point.startswith("app:"):
            args.append(f"killapp={r}")
        else:
            kill_spec = point
        if variant == "replace":
            args.append("replace")
        rc, out = job(n, args, kill_spec)
        killed = rc != 0 and "signal 9" in out
        if ":io:" in point:
            # Cleanup of an earlier killed save's debris can change how
            # many calls a save makes: a save that ran out of calls before
            # the kill point must simply have completed.
            io_killed += killed
            if not killed and rc != 0:
                failures.append(f"kill {point}: exit {rc} without the kill\n{out}")
        elif not killed:
            failures.append(f"kill {point}: the rank was not killed (exit {rc})\n{out}")
        what = f"load after kill {point} ({variant})"
        if variant == "replace":
            got = check(n, folder, [g, g + 1], what)
        else:
            got = check(n, folder, [g + 1], what, absent=True)
            if got == "none":
                # Not committed: the previous folder still loads in full.
                got = check(n, committed, [g], what + ", previous folder")
        if got == str(g + 1):
            g, committed = g + 1, folder
            outcomes["new"] += 1
        elif got == str(g):
            outcomes["old"] += 1
        if failures:
            break
    if io_killed == 0:
        failures.append("no rank was killed at a file system call")
    # A save after all these kills, into the last folder, completes.
    flags = ["replace"] if variant == "replace" else []
    if variant == "new" and folder == committed:
        folder = os.path.join(tmp, "kill-final")
    expect_ok(n, ["save", folder, f"gen={g + 1}"] + flags, "save after the kills")
    check(n, folder, [g + 1], "resume after the kills")
    print(f"{n} ranks, {variant}: {len(points)} kill points over {calls} "
          f"communication calls and {io} file system calls ({io_killed} killed "
          f"there): previous checkpoint loaded {outcomes['old']}x, "
          f"new one {outcomes['new']}x; {runs} jobs")


def nodes64():
    """64 ranks in 8 emulated nodes of 8 (RNGSNAP_RANKS_PER_NODE=8, the
    cpu backend alone to keep 64 processes light): the save writes 8 node
    files and the manifest, and a new job of 64 resumes bit-exact."""
    d = os.path.join(tmp, "nodes64")
    env["RNGSNAP_MPI_INI"] = os.environ["RNGSNAP_CPU_INI"]
    env["RNGSNAP_RANKS_PER_NODE"] = "8"
    expect_ok(64, ["save", d, "gen=1"], "save on 64 ranks in nodes of 8")
    del env["RNGSNAP_RANKS_PER_NODE"]
    names = sorted(os.listdir(d)) if os.path.isdir(d) else []
    want = [f"node-{8 * k:05d}." for k in range(8)]
    if len(names) != 9 or names[0] != "MANIFEST" or \
            [n[:11] for n in names[1:]] != want:
        failures.append(f"64 ranks in nodes of 8: files {names}")
    check(64, d, [1], "64 ranks resume bit-exact")
    print(f"64 ranks in nodes of 8: {len(names)} files, resumed bit-exact; "
          f"{runs} jobs")


def copy_case(src, name):
    dst = os.path.join(tmp, name)
    shutil.copytree(src, dst)
    return dst


def rank_file(d, r):
    names = [f for f in os.listdir(d) if f.startswith(f"rank-{r:05d}.")]
    if len(names) != 1:
        failures.append(f"{d}: expected one file of rank {r}, found {names}")
        return os.path.join(d, f"rank-{r:05d}.missing")
    return os.path.join(d, names[0])


def node_file(d, first):
    names = [f for f in os.listdir(d) if f.startswith(f"node-{first:05d}.")]
    if len(names) != 1:
        failures.append(f"{d}: expected one node file of rank {first}, found {names}")
        return os.path.join(d, f"node-{first:05d}.missing")
    return os.path.join(d, names[0])


def fail_cases(n):
    """One failure injected on one rank: every rank returns the same code,
    names the first failing rank, and keeps its live state."""
    d = os.path.join(tmp, "good")
    other = os.path.join(tmp, "other")
    expect_ok(n, ["save", d, "gen=5", "perrank"], "save")
    expect_ok(n, ["save", other, "gen=6", "perrank"], "save of another job")
    bad = 2 if n > 2 else n - 1
    cases = []
    c = copy_case(d, "damaged")
    f = rank_file(c, bad)
    data = bytearray(open(f, "rb").read())
    data[len(data) // 2] ^= 0x10
    open(f, "wb").write(data)
    cases.append(("damaged rank file", c, "RNGSNAP_E_CORRUPT", bad, []))
    c = copy_case(d, "missing")
    os.unlink(rank_file(c, bad))
    cases.append(("missing rank file", c, "RNGSNAP_E_IO", bad, []))
    if n > 1:
        c = copy_case(d, "swapped")
        a, b = rank_file(c, bad - 1), rank_file(c, bad)
        os.rename(a, a + ".x")
        os.rename(b, a)
        os.rename(a + ".x", b)
        cases.append(("swapped rank files", c, "RNGSNAP_E_CORRUPT", bad - 1, []))
    c = copy_case(d, "foreign-file")
    shutil.copyfile(rank_file(other, bad), rank_file(c, bad))
    cases.append(("another job's rank file", c, "RNGSNAP_E_CORRUPT", bad, []))
    c = copy_case(d, "foreign-manifest")
    shutil.copyfile(os.path.join(other, "MANIFEST"), os.path.join(c, "MANIFEST"))
    cases.append(("another job's manifest", c, "RNGSNAP_E_IO", 0, []))
    cases.append(("app load callback fails", d, "RNGSNAP_E_BACKEND", bad, ["appfail"]))
    # One file per node of 2 (emulated): a flipped byte in rank bad's
    # image is refused by rank bad; a missing node file by its first rank.
    nodes = os.path.join(tmp, "nodes")
    env["RNGSNAP_RANKS_PER_NODE"] = "2"
    expect_ok(n, ["save", nodes, "gen=5"], "save in nodes of 2")
    del env["RNGSNAP_RANKS_PER_NODE"]
    first = bad - bad % 2
    c = copy_case(nodes, "damaged-node")
    f = node_file(c, first)
    data = bytearray(open(f, "rb").read())
    data[-1 if bad % 2 else 100] ^= 0x10
    open(f, "wb").write(data)
    cases.append(("damaged node file", c, "RNGSNAP_E_CORRUPT", bad, []))
    c = copy_case(nodes, "missing-node")
    os.unlink(node_file(c, first))
    cases.append(("missing node file", c, "RNGSNAP_E_IO", first, []))
    for what, c, code, r, extra in cases:
        show(what, expect_ok(n, ["fail", c, "gen=9", f"code={code}", f"rank={r}"]
                             + extra, what))
    check(n, d, [5], "the intact checkpoint still loads")
    print(f"{n} ranks: {len(cases)} injected failures refused alike, live states "
          f"unchanged; {runs} jobs")


def fork():
    for saved, now in ((4, 2), (2, 4)):
        d = os.path.join(tmp, f"fork{saved}")
        expect_ok(saved, ["save", d, "gen=7", "shared"], f"save on {saved} ranks")
        outs = []
        for run in ("a", "b"):
            o = os.path.join(tmp, f"fork{saved}to{now}{run}")
            out = expect_ok(now, ["fork", d, "gen=7", f"saved={saved}", f"out={o}"],
                            f"{saved} -> {now} ranks, fork {run}")
            if run == "a":
                show(f"{saved} -> {now} ranks", out)
            outs.append(o)
        for r in range(now):
            a = open(f"{outs[0]}.{r}").read() if os.path.exists(f"{outs[0]}.{r}") else None
            b = open(f"{outs[1]}.{r}").read() if os.path.exists(f"{outs[1]}.{r}") else None
            if not a or a != b:
                failures.append(f"{saved} -> {now}: rank {r}'s forked draws differ "
                                f"between two forks (or are missing)")
    d = os.path.join(tmp, "forkapps")
    expect_ok(2, ["save", d, "gen=3"], "save with per-rank app states")
    show("fork with per-rank app states",
         expect_ok(4, ["forkapps", d], "fork refused for per-rank app states"))
    print(f"4 -> 2 and 2 -> 4: refused without the flag, forked twice identically; "
          f"{runs} jobs")


def misc():
    d = os.path.join(tmp, "misc")
    for n in (1, 2):
        show(f"{n} ranks", expect_ok(n, ["invalid", d],
                                     "context rank/world unlike the communicator's"))
    show("1 rank", expect_ok(1, ["noinit", d], "MPI not initialised"))
    print(expect_ok(4, ["split", d], "split and inter-communicators").strip())
    out = expect_ok(4, [os.path.join(tmp, "chunk")], "chunked collectives",
                    program=chunk_prog)
    print(out.strip())
    print(f"wrong rank/world, bad arguments, MPI not initialised, split and "
          f"inter-communicators, chunked collectives; {runs} jobs")


def fork_check():
    """A fork checks every saved rank file, not only rank 0's: a folder
    whose last rank's file is damaged, truncated or missing is refused on
    every rank of a fork 4 -> 2 and 2 -> 4, with the same code and exact
    message, every live state unchanged."""
    cases = 0
    for saved, now in ((4, 2), (2, 4)):
        d = os.path.join(tmp, f"forkcheck{saved}")
        expect_ok(saved, ["save", d, "gen=7", "shared", "perrank"],
                  f"save on {saved} ranks")
        bad = saved - 1
        for kind in ("damaged", "truncated", "missing"):
            c = copy_case(d, f"forkcheck{saved}-{kind}")
            f = rank_file(c, bad)
            data = bytearray(open(f, "rb").read())
            if kind == "damaged":
                data[len(data) // 2] ^= 0x10
                open(f, "wb").write(data)
            elif kind == "truncated":
                open(f, "wb").write(data[:len(data) // 2])
            else:
                os.unlink(f)
            what = f"{saved} -> {now} ranks, rank {bad}'s file {kind}"
            show(what, expect_ok(now, ["forkbad", c, "gen=9", f"bad={bad}",
                                       f"kind={kind}"], what))
            cases += 1
        # the intact folder forks
        expect_ok(now, ["fork", d, "gen=7", f"saved={saved}",
                        f"out={os.path.join(tmp, f'forkcheck{saved}to{now}')}"],
                  f"{saved} -> {now} ranks, intact folder")
    print(f"4 -> 2 and 2 -> 4: {cases} folders with a bad rank file refused "
          f"alike on every rank, live states unchanged; intact ones forked; "
          f"{runs} jobs")


try:
    if scenario == "resume":
        resume(nranks)
    elif scenario == "kill":
        kill(nranks, sys.argv[6])
    elif scenario == "fail":
        fail_cases(nranks)
    elif scenario == "fork":
        fork()
    elif scenario == "misc":
        misc()
    elif scenario == "forkcheck":
        fork_check()
    elif scenario == "nodes64":
        nodes64()
    else:
        failures.append(f"unknown scenario {scenario}")
finally:
    if failures:
        print(f"FAILED ({len(failures)}); files kept in {tmp}")
        for f in failures:
            print("----\n" + f)
    else:
        shutil.rmtree(tmp, ignore_errors=True)
sys.exit(1 if failures else 0)
