#!/usr/bin/env python3
"""test_ledger_sweep.py - the divergence ledger, proved by injected faults.

usage: test_ledger_sweep.py RNGSNAP LEDGER_JOB

A simulated 3-rank job (ledger_job.c; cpu streams and two emulated npu
devices) runs uninterrupted (A), and again killed after step KILL and
resumed from its checkpoint after step SAVE (B, the same per-rank ledger
folder continued).  An exact resume must give `rngsnap ledger diff A B`
exit 0.  Then every fault below, injected into the resumed half at step k
on rank r, must be named exactly - that step, that rank, that entry and
nothing else, and for an extra draw its n - with exit 1:
  one extra draw of n words on stream s (every stream, several k, r, n);
  the sampler skipping one batch (state "sampler" differs);
  a re-seed of the app's private generator (state "private" differs);
  a noted loss that differs while the RNG does not (compute drift).
Also: the text form, show, a torn last record (dropped and reported),
usage errors (exit 2), and `rngsnap demo --ledger`.
"""
import itertools
import json
import os
import shutil
import subprocess
import sys
import tempfile

RNGSNAP, JOB = sys.argv[1], sys.argv[2]
PLUGINS = os.environ["RNGSNAP_PLUGIN_BUILD_DIR"]
RANKS, LAST, SAVE, KILL = 3, 11, 4, 7
failures = []


def check(cond, what, detail=""):
    print(("ok     " if cond else "FAILED ") + what)
    if not cond:
        failures.append(what)
        if detail:
            print("   " + str(detail).replace("\n", "\n   "))


def run(*args):
    p = subprocess.run(list(args), capture_output=True, text=True,
                       timeout=120)
    return p.returncode, p.stdout, p.stderr


def job(ini, ledger, ckpt, first, last, *faults):
    rc, out, err = run(JOB, ini, ledger + "/", ckpt, str(RANKS), str(first),
                       str(last), str(SAVE), *faults)
    if rc != 0:
        sys.exit("ledger_job failed: " + err)


def diff(a, b, json_out=True):
    args = [RNGSNAP, "ledger", "diff", a, b] + (["--json"] if json_out else [])
    rc, out, err = run(*args)
    return rc, (json.loads(out) if json_out and out else out), err


def resumed(tmp, base, name, *faults):
    """B: the killed run's ledgers and checkpoint (copied), resumed with
    faults."""
    d = os.path.join(tmp, name)
    shutil.copytree(base, d)
    job(INI, os.path.join(d, "ledger"), os.path.join(d, "ckpt"), SAVE + 1,
        LAST, *faults)
    return os.path.join(d, "ledger")


def expect_one(res, rc, step, rank, entry, kind, how, words=None):
    """rc 1 and exactly one rank, one entry named at step."""
    what = "%s at step %d rank %d -> %s" % (how, step, rank, entry)
    ok = (rc == 1 and res.get("first_step") == step
          and len(res["differences"]) == 1)
    d = res["differences"][0] if ok else {}
    ok = ok and d["rank"] == rank and d["step"] == step and d["kind"] == kind
    if kind == "compute":
        ok = ok and d["entries"] == [] and [n["name"] for n in d["notes"]] \
            == [entry]
    else:
        e = d.get("entries", [])
        ok = ok and len(e) == 1 and e[0]["entry"] == entry \
            and e[0]["how"] == how and e[0]["last_matched"] == step - 1
        if words is not None:
            ok = ok and e[0].get("words") == words \
                and e[0].get("direction") == "ahead"
    return ok, what


with tempfile.TemporaryDirectory() as tmp:
    INI = os.path.join(tmp, "rng.ini")
    with open(INI, "w") as f:
        f.write("[rngsnap]\nplugin_dir = %s\n"
                "[backend.cpu]\nplugin = rngsnap_cpu\n"
                "streams = default, dropout, augment\n"
                "[backend.npu]\nplugin = rngsnap_npu\nrequired = true\n"
                "streams = default, dropout\nemulate_devices = 2\n" % PLUGINS)
    STREAMS = ["cpu:0/default", "cpu:0/dropout", "cpu:0/augment",
               "npu:0/default", "npu:0/dropout", "npu:1/default",
               "npu:1/dropout"]

    # A: uninterrupted.  Base of B: killed after KILL (ledgers, checkpoint).
    A = os.path.join(tmp, "A")
    os.makedirs(os.path.join(A, "ckpt"))
    job(INI, os.path.join(A, "ledger"), os.path.join(A, "ckpt"), 0, LAST)
    base = os.path.join(tmp, "killed")
    os.makedirs(os.path.join(base, "ckpt"))
    job(INI, os.path.join(base, "ledger"), os.path.join(base, "ckpt"), 0,
        KILL)
    A = os.path.join(A, "ledger")
    check(sorted(os.listdir(A)) == ["rank-%05d.ledger" % r
                                    for r in range(RANKS)],
          "a folder path gives one ledger per rank",
          sorted(os.listdir(A)))

    # The exact resume: nothing to report.
    B = resumed(tmp, base, "exact")
    rc, res, err = diff(A, B)
    check(rc == 0 and res["result"] == "match"
          and res["common_steps"] == RANKS * (LAST + 1)
          and res["differences"] == [],
          "exact kill/resume: exit 0, every step of every rank compared",
          (rc, res, err))
    rc, out, err = diff(A, B, json_out=False)
    check(rc == 0 and out == "ledger diff: every one of the %d common steps "
          "matches on %d ranks\n" % (RANKS * (LAST + 1), RANKS),
          "exact kill/resume, text form", (rc, out, err))
    # A rank missing on one side: said, the others compared.
    two = os.path.join(tmp, "two-ranks")
    shutil.copytree(B, two)
    os.unlink(os.path.join(two, "rank-00002.ledger"))
    rc, res, err = diff(A, two)
    check(rc == 0 and res["only_in_a"] == [2] and res["only_in_b"] == []
          and res["common_steps"] == 2 * (LAST + 1),
          "a rank only in A: listed, the other ranks compared", (rc, res))
    rc, out, err = diff(A, two, json_out=False)
    check(rc == 0 and err == "rngsnap ledger diff: rank 2 is only in A "
          "(%s/rank-00002.ledger): not compared\n" % A,
          "a rank only in A: said on stderr", err)
    rc, out, err = run(RNGSNAP, "ledger", "show",
                       os.path.join(B, "rank-00001.ledger"))
    check(rc == 0 and "rank 1 of 3" in out and "2 segments" in out
          and "continuing the ledger" in out
          and "by a resumed (RNGSNAP_RESUME) context" in out
          and "(recorded again later: the later record counts)" in out
          and "note loss" in out,
          "show: rank, the resumed segment, steps recorded again", out)

    rc, out, err = run(RNGSNAP, "ledger", "show", B)
    heads = [ln.split(":")[0] for ln in out.splitlines()
             if ln.startswith("ledger ")]
    check(rc == 0 and heads == ["ledger %s/rank-%05d.ledger" % (B, r)
                                for r in range(RANKS)],
          "show of a folder: every rank's ledger, in rank order", heads)

    # One extra draw of n words on stream s at step k on rank r.
    cases = list(itertools.product([SAVE + 1, KILL, KILL + 1, LAST],
                                   range(len(STREAMS)), range(RANKS),
                                   [1, 3, 4096]))
    # Every (k, s, r) with one n each, rotating n: 84 runs.
    cases = [c for i, c in enumerate(cases) if i % 3 == (i // 3) % 3]
    bad = []
    for k, s, r, n in cases:
        B = resumed(tmp, base, "x%d-%d-%d-%d" % (k, s, r, n),
                    "extra:%d:%d:%d:%d" % (r, k, s, n))
        rc, res, err = diff(A, B)
        ok, what = expect_one(res, rc, k, r, STREAMS[s], "rng", "ahead", n)
        if not ok:
            bad.append((what, rc, res))
        shutil.rmtree(os.path.dirname(B))
    check(not bad, "extra draw: %d cases (k, s, r, n) each named exactly"
          % len(cases), bad[:3])

    # A sampler skipping one batch, a re-seeded private generator, a loss.
    for kind, entry, ekind, how in [("skip", "sampler", "rng", "state"),
                                    ("reseed", "private", "rng", "state"),
                                    ("loss", "loss", "compute", None)]:
        bad = []
        for k, r in itertools.product([SAVE + 1, KILL + 1, LAST],
                                      range(RANKS)):
            B = resumed(tmp, base, "%s%d-%d" % (kind, k, r),
                        "%s:%d:%d" % (kind, r, k))
            rc, res, err = diff(A, B)
            ok, what = expect_one(res, rc, k, r, entry, ekind, how)
            if not ok:
                bad.append((what, rc, res))
            shutil.rmtree(os.path.dirname(B))
        check(not bad, "%s: 9 cases (k, r) each named exactly" % kind,
              bad[:3])

    # The text form of each kind.
    B = resumed(tmp, base, "t1", "extra:2:9:4:4096", "skip:2:9")
    rc, out, err = diff(A, B, json_out=False)
    check(rc == 1 and out.startswith(
        "ledger diff: the runs part at step 9 (A %s, B %s)\n"
        "rank 2, step 9\n"
        "  npu:0/dropout: 4096 words ahead in B (offset " % (A, B))
        and "; last matched at step 8; still differs at step 11 (the last "
        "common step)\n" in out
        and "  state sampler: state differs; last matched at step 8; still "
        "differs at step 11 (the last common step)\n" in out,
        "text: words ahead, state differs, last matched", out)
    B = resumed(tmp, base, "t2", "loss:0:6")
    rc, out, err = diff(A, B, json_out=False)
    check(rc == 1 and "rank 0, step 6: compute drift, not RNG (every stream "
          "and state matched; noted values differ)\n  note loss: " in out,
          "text: compute drift, not RNG", out)

    # A torn last record: dropped by show and diff, and said so.
    f = os.path.join(A, "rank-00002.ledger")
    with open(f, "r+b") as fp:
        fp.truncate(os.path.getsize(f) - 5)
    rc, out, err = run(RNGSNAP, "ledger", "show", f)
    check(rc == 0 and "torn last record at byte" in out
          and "step %d" % LAST not in out.split("step %d\n" % (LAST - 1))[-1],
          "show: a torn last record is dropped and reported", out)
    rc, res, err = diff(A, os.path.join(tmp, "exact", "ledger"))
    check(rc == 0 and res["torn"] and res["torn"][0]["side"] == "A"
          and res["common_steps"] == RANKS * (LAST + 1) - 1,
          "diff: the torn record is dropped, the rest compared", res)
    # A damaged record with others after it is an error.
    with open(f, "r+b") as fp:
        fp.seek(200)
        b = fp.read(1)
        fp.seek(200)
        fp.write(bytes([b[0] ^ 1]))
    rc, out, err = run(RNGSNAP, "ledger", "show", f)
    check(rc == 2 and "is damaged (checksum mismatch) and more follow" in err,
          "a damaged record in the middle: exit 2, named", err)

    # Usage and I/O.
    rc, out, err = run(RNGSNAP, "ledger", "diff", A)
    check(rc == 2 and err == "rngsnap ledger: needs 'show FILE' or 'diff A B "
          "[--json]' (see --help)\n", "usage: exit 2", err)
    rc, out, err = run(RNGSNAP, "ledger", "show", INI)
    check(rc == 2 and err == "rngsnap ledger show: %s: not a ledger (it does "
          "not begin with RNGSNAPL)\n" % INI, "not a ledger: exit 2", err)

# The demo's --ledger run: a stray draw in the resumed run, found.
rc, out, err = run(RNGSNAP, "-c", os.path.join(os.environ["RNGSNAP_BUILD_ROOT"],
                                               "config", "rng.ini"),
                   "demo", "--ledger")
check(rc == 0 and "resume is bit-exact on 2 of 3 streams\n" in out
      and "A stray draw of 4 words was made on the last stream at step 6 of "
      "the resumed run.\n" in out
      and "rank 0, step 6\n  cpu:0/augment: 4 words ahead in B (offset 2664 "
      "in A, 2668 in B); last matched at step 5; still differs at step 12 "
      "(the last common step)\n" in out,
      "demo --ledger: the stray draw named (step, stream, words)", out + err)

print("%d failed" % len(failures))
sys.exit(1 if failures else 0)
