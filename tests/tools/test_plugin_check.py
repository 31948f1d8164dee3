#!/usr/bin/env python3
"""test_plugin_check.py - `rngsnap plugin-check` on every built-in backend
(conformant, exit 0) and on the deliberately broken test backends of
tests/plugins/broken/spareplug.c and "ownconv" of tests/plugins/faults
(exit 1, each with its own finding).

usage: test_plugin_check.py RNGSNAP BROKEN_PLUGIN_DIR FAULTS_PLUGIN_DIR
"""
import os
import struct
import subprocess
import sys
import tempfile

RNGSNAP, BROKEN, FAULTS = sys.argv[1], sys.argv[2], sys.argv[3]
BUILD = os.environ["RNGSNAP_BUILD_ROOT"]
MIXED = os.path.join(BUILD, "config", "clusters", "mixed.ini")
failures = []


def check(cond, what, detail=""):
    print(("ok     " if cond else "FAILED ") + what)
    if not cond:
        failures.append(what)
        if detail:
            print("   " + detail.replace("\n", "\n   "))


def run(*args):
    env = dict(os.environ)
    for var in ("RNGSNAP_CONFIG", "RNGSNAP_NO_EMULATION", "RNGSNAP_PLUGIN_PATH"):
        env.pop(var, None)  # the configs below say what to load, emulated
    p = subprocess.run([RNGSNAP, *args], capture_output=True, text=True,
                       env=env, timeout=600)
    return p.returncode, p.stdout, p.stderr


def fails(out):
    return [l for l in out.splitlines() if l.startswith("FAIL ")]


# ---- every built-in backend passes (device backends emulated) ----------
for backend in ["cpu", "cuda", "hpu", "xpu", "npu"]:
    rc, out, err = run("-c", MIXED, "plugin-check", backend)
    check(rc == 0 and out.splitlines()[-1]
          == f"backend {backend}: conformant (7 of 7 checks passed)",
          f"plugin-check {backend} (mixed.ini, emulated devices) -> 0",
          f"rc {rc}\n{out}{err}")
rc, out, err = run("-c", os.path.join(BUILD, "config", "rng.ini"),
                   "plugin-check", "cpu")
check(rc == 0, "plugin-check cpu (the default rng.ini) -> 0", out + err)

# ---- the test backends ---------------------------------------------------
tmp = tempfile.mkdtemp()


def ini(backend):
    path = os.path.join(tmp, backend + ".ini")
    folder = FAULTS if backend == "ownconv" else BROKEN
    with open(path, "w") as f:
        f.write(f"[rngsnap]\nplugin_dir = {folder}\n"
                f"[backend.{backend}]\nstreams = default, dropout\n")
    return path


# The finding each defect must produce (exact text), and the check it is in.
expect = {
    "spareleak": "FAIL points: a value cached by normal_f32 (a Box-Muller "
    "spare?) is not in the state: saved after normal_f32 x1 on "
    "spareleak:0/default, the restored stream's next normal_f32 differ from "
    "the uninterrupted stream's; put the value and a flag saying whether it "
    "is there into the state, or do not cache it",
    "spareshared": "FAIL points: normal_f32 and normal_f64 share a cached "
    "value that is not in the state: saved after normal_f32 x1 on "
    "spareshared:0/default, the restored stream's next normal_f32 and "
    "normal_f64 differ from the uninterrupted stream's; keep a cached value "
    "per distribution, and in the state",
    "nooffset": "FAIL state: the state does not change when the stream "
    "draws: get_state gave the same bytes before and after generate(u32, 5) "
    "on nooffset:0/default, so the position (the counter or offset) is not "
    "in the state; put it into the state",
    "crashget": "FAIL state: plugin crashget crashed in get_state of "
    "crashget:1/default (SIGSEGV, Segmentation fault)",
    # A PHX1 state whose f32 are not the engine's (23 bits, not 24): the
    # first value whose word has bit 8 set (below: the two differ by 2^-24).
    "ownconv": "FAIL state: state_format is \"PHX1\" but ownconv:0/default "
    "draws other f32 than the engine from the same position: value 1 of 7 "
    "from (seed 0x5eed0f5eed, subsequence 5, offset 3) is 0x3f17986e where "
    "rngsnap_philox_generate gives 0x3f17986f; draw through "
    "host->philox_generate (docs/plugin-guide.md), or give the state a "
    "format id of its own",
}

rc, out, err = run("-c", ini("spareok"), "plugin-check", "spareok")
check(rc == 0 and not fails(out),
      "spareok (spares inside its state) is conformant -> 0", out + err)
check("not drawn (RNGSNAP_E_UNAVAILABLE, so not checked further): "
      "curand_uniform_f32, curand_uniform_f64, curand_normal_f32, "
      "curand_normal_f64" in out,
      "spareok: the distributions it does not draw are listed", out)

found = {}
for backend, line in expect.items():
    rc, out, err = run("-c", ini(backend), "plugin-check", backend)
    found[backend] = set(fails(out))
    check(rc == 1, f"{backend} -> exit 1", f"rc {rc}\n{out}{err}")
    check(line in out.splitlines(), f"{backend}: its own finding", out + err)
    check(out.splitlines()[-1].startswith(f"backend {backend}: ")
          and "checks failed" in out.splitlines()[-1],
          f"{backend}: the last line counts the failed checks", out)
# Each finding belongs to its defect only.
for backend, line in expect.items():
    others = [b for b in expect if b != backend and line.replace(backend, b)
              in found[b]]
    check(not others, f"{backend}'s finding is not given for {others}")
check(not any("share a cached value" in l for l in found["spareleak"]),
      "spareleak (a spare per distribution) is not called shared",
      "\n".join(found["spareleak"]))
check(not any("a value cached by normal_f32 " in l
              for l in found["spareshared"]),
      "spareshared is not called a per-distribution leak",
      "\n".join(found["spareshared"]))
check(any(l.startswith("FAIL points: set_state does not restore the "
                       "stream's position") for l in found["nooffset"]),
      "nooffset: the save points name the position", "\n".join(found["nooffset"]))
# ownconv's two values: the engine's 24-bit float and the same word's
# 23-bit one, so they differ by exactly 2^-24 (the defect, not chance).
own, eng = (struct.unpack("<f", struct.pack("<I", int(h, 16)))[0]
            for h in ("3f17986e", "3f17986f"))
check(eng - own == 2.0 ** -24 and 0 <= own < eng < 1,
      "ownconv: the two f32 named differ by the bit its conversion drops")
rc, out, err = run("-c", ini("crashget"), "plugin-check", "crashget")
check(out.count("crashed in get_state of crashget:1/default") == 7,
      "crashget: every check survives the crash and names it", out)

# ---- usage and config: exit 2 --------------------------------------------
rc, out, err = run("plugin-check")
check(rc == 2 and "which backend?" in err, "no BACKEND -> 2", err)
rc, out, err = run("plugin-check", "cpu", "cuda")
check(rc == 2 and "one BACKEND at a time" in err, "two BACKENDs -> 2", err)
rc, out, err = run("plugin-check", "--bogus", "cpu")
check(rc == 2 and "unknown option '--bogus'" in err, "unknown option -> 2", err)
rc, out, err = run("-c", MIXED, "plugin-check", "rocm")
check(rc == 2 and "has no [backend.rocm] (it has cpu, cuda, hpu, xpu, npu)"
      in err, "a backend not in the ini -> 2, naming those there", err)
noemu = os.path.join(tmp, "noemu.ini")
with open(noemu, "w") as f:
    f.write(f"[rngsnap]\nplugin_dir = {os.environ['RNGSNAP_PLUGIN_BUILD_DIR']}"
            "\n[backend.cpu]\n[backend.hpu]\nrequired = false\n")
rc, out, err = run("-c", noemu, "plugin-check", "hpu")
check(rc == 2 and "backend hpu has nothing to check: " in err
      and "emulate_devices = 2" in err,
      "a device backend without devices -> 2, saying how to emulate", err)
rc, out, err = run("plugin-check", "--help")
check(rc == 0 and "Exit status" in out, "plugin-check --help -> 0", out)

print(f"{len(failures)} failed")
sys.exit(1 if failures else 0)
