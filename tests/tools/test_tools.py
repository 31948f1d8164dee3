#!/usr/bin/env python3
"""test_tools.py - tests of the rngsnap command, one group per Meson test.

usage: test_tools.py GROUP RNGSNAP ADVANCE_HELPER
GROUP: cli | backends | inspect | verify | diff | demo

Checks exit codes (0 ok, 1 a check failed, 2 usage/config/I-O) and the key
output fields; inspect --json is parsed with json.loads and compared with the
positions the library reported when the files were written.
"""
import json
import os
import struct
import subprocess
import sys
import tempfile

GROUP, RNGSNAP, ADVANCE = sys.argv[1], sys.argv[2], sys.argv[3]
BUILD = os.environ["RNGSNAP_BUILD_ROOT"]
INI = os.path.join(BUILD, "config", "rng.ini")
failures = []


def run(*args, env=None, timeout=300):
    e = dict(os.environ)
    e.pop("RNGSNAP_CONFIG", None)
    if env:
        e.update(env)
    p = subprocess.run([RNGSNAP, *args], capture_output=True, text=True,
                       env=e, timeout=timeout)
    return p.returncode, p.stdout, p.stderr


def check(cond, what, detail=""):
    print(("ok     " if cond else "FAILED ") + what)
    if not cond:
        failures.append(what)
        if detail:
            print("   " + detail.replace("\n", "\n   "))


def expect_rc(want, *args, env=None):
    rc, out, err = run(*args, env=env)
    check(rc == want, f"rngsnap {' '.join(args)} -> exit {want}",
          f"got {rc}\nstdout: {out[-2000:]}\nstderr: {err[-2000:]}")
    return rc, out, err


def advance(tmp, backend="cpu", device=0, stream="dropout", n=1000,
            seed=42, tag=""):
    a = os.path.join(tmp, f"a{tag}.rngsnap")
    b = os.path.join(tmp, f"b{tag}.rngsnap")
    p = subprocess.run([ADVANCE, INI, a, b, backend, str(device), stream,
                        str(n), str(seed)], capture_output=True, text=True)
    if p.returncode != 0:
        print(p.stdout, p.stderr)
        raise SystemExit("tools_advance failed")
    pos = {}
    for line in p.stdout.splitlines():
        tag_, be, dev, name, s, sub, off = line.split()
        pos[(tag_, be, int(dev), name)] = (int(s), int(sub), int(off))
    return a, b, pos


def parse_format_md(path, doc):
    """Decode a checkpoint as docs/format.md describes it (checksums are
    XXH3, not in Python's standard library: compared with inspect's)."""
    import struct
    d = open(path, "rb").read()
    try:
        assert d[:8] == b"RNGSNAP\0"
        ver, hsize = struct.unpack_from("<II", d, 8)
        lib = d[16:32].split(b"\0")[0].decode()
        rank, world, created, count, reserved = struct.unpack_from("<iiqII", d, 32)
        h = doc["header"]
        assert (ver, hsize, reserved) == (1, 64, 0)
        assert (lib, rank, world, created, count) == (
            h["library_version"], h["rank"], h["world_size"],
            h["created_unix"], h["section_count"])
        pos = 64
        for sec in doc["sections"]:
            kind, size = struct.unpack_from("<II", d, pos)
            q = pos + 8
            bl, = struct.unpack_from("<H", d, q)
            backend = d[q + 2:q + 2 + bl].decode()
            assert d[q + 2 + bl] == 0
            q += 3 + bl
            device, nl = struct.unpack_from("<iH", d, q)
            name = d[q + 6:q + 6 + nl].decode()
            assert d[q + 6 + nl] == 0
            q += 7 + nl
            fmt, ssize = struct.unpack_from("<II", d, q)
            state = d[q + 8:q + 8 + ssize]
            q += 8 + ssize
            checksum, = struct.unpack_from("<Q", d, q)
            assert q + 8 - pos == size == 34 + bl + nl + ssize
            assert kind == (1 if sec["kind"] == "stream" else 2)
            assert name == sec["name"] and ssize == sec["state_size"]
            assert f"{checksum:016x}" == sec["checksum"]
            if kind == 1:
                assert backend == sec["backend"] and device == sec["device"]
                assert f"0x{fmt:08x}" == sec["state_format"]
                if "philox" in sec:
                    assert fmt == 0x31584850 and ssize == 24
                    ph = sec["philox"]
                    assert struct.unpack("<QQQ", state) == (
                        ph["seed"], ph["subsequence"], ph["offset"])
            else:
                assert (bl, device, fmt) == (0, -1, 0)
            pos += size
        assert d[pos:pos + 8] == b"RNGSEND\0" and pos + 24 == len(d)
        fsize, fsum = struct.unpack_from("<QQ", d, pos + 8)
        assert fsize == len(d) == h["file_size"]
        assert f"{fsum:016x}" == h["file_checksum"]
        return True
    except (AssertionError, struct.error, UnicodeDecodeError, KeyError) as e:
        print(f"   format.md mismatch at {e!r}")
        return False


# ---- groups -------------------------------------------------------------

def t_cli():
    for sub in ["", "backends", "inspect", "verify", "diff", "demo"]:
        args = [sub, "--help"] if sub else ["--help"]
        rc, out, _ = expect_rc(0, *args)
        check("Exit status" in out, f"{' '.join(args)} documents exit codes")
    rc, out, _ = expect_rc(0, "help", "diff")
    check(out.startswith("usage: rngsnap diff"), "help diff == diff --help", out)
    expect_rc(2, "help", "nosuchcommand")
    rc, out, _ = expect_rc(0, "--version")
    check(out.startswith("rngsnap "), "--version prints the version", out)
    expect_rc(2)                                   # no command
    expect_rc(2, "nosuchcommand")
    expect_rc(2, "--nosuchoption", "backends")
    expect_rc(2, "-c")                             # -c without FILE
    expect_rc(2, "inspect")                        # missing FILE
    expect_rc(2, "inspect", "--bogus", "x")
    expect_rc(2, "verify")
    expect_rc(2, "verify", "a", "b")
    expect_rc(2, "diff", "only-one")
    expect_rc(2, "diff", "a", "b", "c")
    expect_rc(2, "backends", "extra")
    expect_rc(2, "demo", "--steps", "many")
    expect_rc(2, "demo", "--save-at", "9", "--kill-at", "5")
    rc, _, err = expect_rc(2, "demo", "--steps")
    check("--steps needs a value" in err, "demo --steps without N says so", err)
    # 2^32 + 1 must not wrap to 1 step.
    rc, _, err = expect_rc(2, "demo", "--steps", str(2**32 + 1))
    check("too large" in err, "demo --steps 2^32+1 is refused as too large", err)
    expect_rc(2, "verify", "/nonexistent/file.rngsnap")  # I/O error
    # -c/--config/--config=FILE work after every command too (inspect,
    # verify and diff need no config and ignore it); -c without FILE is usage.
    for args in (["backends", "--config=" + INI], ["backends", "--config", INI],
                 ["--config=" + INI, "backends"]):
        expect_rc(0, *args)
    for sub in ("inspect", "verify", "diff", "demo", "backends"):
        rc, _, err = expect_rc(2, sub, "-c")
        check("-c needs a FILE" in err, f"{sub} -c without FILE says so", err)
    expect_rc(2, "--config=", "backends")
    rc, _, err = expect_rc(2, "demo", "--keep", INI)   # a file, not a folder
    check("not a folder" in err and INI in err, "demo --keep FILE says so", err)
    with tempfile.TemporaryDirectory() as tmp:
        a, b, _ = advance(tmp, n=3)
        expect_rc(0, "inspect", "-c", INI, a)
        expect_rc(0, "verify", "--config", INI, a)
        expect_rc(1, "diff", "--config=" + INI, a, b)


def t_backends():
    # Default config from the build tree, no -c and no RNGSNAP_CONFIG.
    rc, out, err = expect_rc(0, "backends")
    check(f"config: {INI} (build tree)" in out or
          f"config: {os.path.realpath(INI)} (build tree)" in out,
          "build-tree binary defaults to <build>/config/rng.ini", out[:300])
    rows = [l.split() for l in out.splitlines() if l.startswith("cpu ")]
    check(len(rows) == 1 and rows[0][1] == "yes" and
          rows[0][2] in ("available", "emulated"),
          "cpu row: required, available", out)
    check(len(rows) == 1 and rows[0][4] == "3" and
          rows[0][-1].endswith("rngsnap_cpu.so"),
          "cpu row: 3 streams and the plugin path", out)
    check("default, dropout, augment" in out, "stream names listed", out)
    rc, out, err = expect_rc(0, "backends", "--json")
    try:
        d = json.loads(out)
        cpu = d["backends"][0]
        check(d["stream_count"] == 3 and cpu["name"] == "cpu" and
              cpu["state"] == "available" and cpu["required"] is True and
              cpu["streams"] == ["default", "dropout", "augment"] and
              len(cpu["devices"]) == 1 and cpu["reason"] is None and
              cpu["plugin_path"].endswith("/rngsnap_cpu.so"),
              "backends --json fields", out)
    except (ValueError, KeyError, IndexError) as e:
        check(False, "backends --json is valid JSON with the fields", f"{e}\n{out}")
    # -c, and RNGSNAP_CONFIG, are honoured and -c wins.
    with tempfile.TemporaryDirectory() as tmp:
        bad = os.path.join(tmp, "bad.ini")
        with open(bad, "w") as f:
            f.write("[rngsnap]\nno_such_key = 1\n")
        rc, out, err = expect_rc(2, "-c", bad, "backends")
        check("no_such_key" in err, "config error names the key", err)
        expect_rc(2, "backends", "-c", bad)
        expect_rc(2, "backends", env={"RNGSNAP_CONFIG": bad})
        expect_rc(0, "-c", INI, "backends", env={"RNGSNAP_CONFIG": bad})
        # --json stays JSON when the config cannot be used.
        rc, out, err = expect_rc(2, "-c", bad, "backends", "--json")
        try:
            d = json.loads(out)
            check(d["config"] == bad and "no_such_key" in d["error"] and
                  d["error_code"] == "RNGSNAP_E_CONFIG",
                  "backends --json on a bad rng.ini: an error object", out)
        except (ValueError, KeyError) as e:
            check(False, "backends --json on a bad rng.ini is JSON", f"{e}\n{out}")
        # A required backend whose plugin has no device -> listed, exit 1.
        nodev = os.path.join(tmp, "nodev.ini")
        plugdir = os.environ["RNGSNAP_PLUGIN_BUILD_DIR"]
        if os.path.exists(os.path.join(plugdir, "rngsnap_hpu.so")):
            with open(nodev, "w") as f:
                f.write(f"[rngsnap]\nplugin_dir = {plugdir}\n"
                        "[backend.cpu]\nplugin = rngsnap_cpu\n"
                        "[backend.hpu]\nplugin = rngsnap_hpu\nrequired = false\n")
            rc, out, err = run("-c", nodev, "backends")
            hpu = [l.split() for l in out.splitlines() if l.startswith("hpu ")]
            check(rc == 0 and hpu and hpu[0][2] == "skipped" and "reason:" in out,
                  "optional backend without a device is shown as skipped "
                  "with its reason", out + err)
            rc, out, err = run("-c", nodev, "backends", "--json")
            try:
                h = [b for b in json.loads(out)["backends"] if b["name"] == "hpu"]
                check(rc == 0 and h[0]["skipped"] and h[0]["reason"],
                      "backends --json: skipped with reason", out)
            except (ValueError, KeyError, IndexError) as e:
                check(False, "backends --json: skipped with reason", f"{e}\n{out}")
            with open(nodev, "w") as f:
                f.write(f"[rngsnap]\nplugin_dir = {plugdir}\n"
                        "[backend.hpu]\nplugin = rngsnap_hpu\n")
            rc, out, err = run("-c", nodev, "backends")
            check(rc == 1 and "unavailable" in out,
                  "required backend without a device: unavailable, exit 1",
                  f"rc={rc}\n{out}{err}")
    # Cluster files: emulation is always visible, and RNGSNAP_NO_EMULATION
    # turns it off (hardware or an actionable reason, never "emulated").
    cdir = os.path.join(BUILD, "config", "clusters")
    for name in ("cuda.ini", "gaudi.ini", "intel.ini", "ascend.ini"):
        path = os.path.join(cdir, name)
        if not os.path.exists(path):
            continue
        rc, out, err = run("-c", path, "backends", "--json")
        rc2, out2, err2 = run("-c", path, "backends", "--json",
                              env={"RNGSNAP_NO_EMULATION": "1"})
        try:
            dev = json.loads(out)["backends"][1]
            dev2 = json.loads(out2)["backends"][1]
        except (ValueError, KeyError, IndexError) as e:
            check(False, f"backends --json -c clusters/{name}", f"{e}\n{out}{out2}")
            continue
        check(rc == 0 and dev["emulated"] and dev["state"] == "emulated" and
              "emulat" in dev["status"] and
              all("(emulated)" in d for d in dev["devices"]),
              f"clusters/{name}: {dev['name']} shown as emulated", out)
        if dev2["available"]:   # real hardware on this machine
            check(rc2 == 0 and not dev2["emulated"],
                  f"clusters/{name} with RNGSNAP_NO_EMULATION: real devices", out2)
        else:
            check(rc2 == 1 and dev2["state"] == "unavailable" and
                  dev2["reason"] and "RNGSNAP_NO_EMULATION" in dev2["status"],
                  f"clusters/{name} with RNGSNAP_NO_EMULATION: unavailable, "
                  "reason, exit 1", f"rc={rc2}\n{out2}")


def t_inspect():
    with tempfile.TemporaryDirectory() as tmp:
        a, b, pos = advance(tmp, n=1000)
        rc, out, err = expect_rc(0, "inspect", b, "--json")
        try:
            doc = json.loads(out)
        except ValueError as e:
            check(False, "inspect --json is valid JSON", f"{e}\n{out}")
            return
        check(True, "inspect --json is valid JSON")
        h = doc["header"]
        check(h["rank"] == 0 and h["world_size"] == 1, "header rank 0 of 1", str(h))
        check(h["file_size"] == os.path.getsize(b), "header file_size", str(h))
        check(h["section_count"] == len(doc["sections"]) == 4,
              "3 stream sections + 1 app state", str(h))
        streams = [s for s in doc["sections"] if s["kind"] == "stream"]
        apps = [s for s in doc["sections"] if s["kind"] == "app"]
        check([s["name"] for s in streams] == ["default", "dropout", "augment"],
              "stream sections in registry order", str(streams))
        check(len(apps) == 1 and apps[0]["name"] == "test.counter" and
              apps[0]["state_size"] == 8, "app state name and size", str(apps))
        for s in streams:
            want = pos[("B", s["backend"], s["device"], s["name"])]
            got = (s["philox"]["seed"], s["philox"]["subsequence"],
                   s["philox"]["offset"])
            check(got == want and s["state_format_name"] == "philox4x32-10",
                  f"inspect shows {s['name']}'s Philox position", f"{got} != {want}")
            check(len(s["checksum"]) == 16 and s["checksum_ok"],
                  f"{s['name']} checksum shown")
        # docs/format.md, read byte by byte here (no library), agrees with
        # what inspect reports: header fields, section layout, trailer.
        check(parse_format_md(b, doc), "file layout matches docs/format.md")
        # Text mode shows the same things.
        rc, out, err = expect_rc(0, "inspect", a)
        check("cpu:0/dropout" in out and "offset=0" in out and
              "app:test.counter" in out, "inspect text lists entries", out)
        # A name that needs escaping: the JSON must still parse.
        odd = os.path.join(tmp, 'we"ird\\name\t.rngsnap')
        os.link(a, odd)
        rc, out, err = expect_rc(0, "inspect", "--json", odd)
        try:
            check(json.loads(out)["file"] == odd, "file name escaped in JSON")
        except ValueError as e:
            check(False, "file name escaped in JSON", str(e))
        # Bytes that are not UTF-8 (overlong, surrogate, stray) in the name:
        # the output must still be strict UTF-8 and JSON.
        raw = os.path.join(os.fsencode(tmp), b"x\xe0\x80\x80\xed\xa0\x80\xff.rngsnap")
        os.link(a, raw)
        p = subprocess.run([RNGSNAP, "inspect", "--json", raw], capture_output=True)
        try:
            check(p.returncode == 0 and
                  json.loads(p.stdout.decode("utf-8"))["sections"],
                  "inspect --json: a non-UTF-8 file name gives strict UTF-8 JSON")
        except (ValueError, KeyError) as e:
            check(False, "inspect --json: non-UTF-8 file name", f"{e}\n{p.stdout!r}")
        # A file that cannot be shown: still one JSON object, same exit codes.
        bad = os.path.join(tmp, "torn.rngsnap")
        with open(bad, "wb") as f:
            f.write(open(a, "rb").read()[:100])
        for path, want_rc, code in ((bad, 1, "RNGSNAP_E_CORRUPT"),
                                    (os.path.join(tmp, "none"), 2, "RNGSNAP_E_IO"),
                                    (tmp, 2, "RNGSNAP_E_IO")):
            rc, out, err = expect_rc(want_rc, "inspect", "--json", path)
            try:
                d = json.loads(out)
                check(d["file"] == path and d["error_code"] == code and
                      d["error"] and path in err,
                      f"inspect --json {os.path.basename(path)}: error object {code}",
                      out + err)
            except (ValueError, KeyError) as e:
                check(False, f"inspect --json {path}: JSON error object", f"{e}\n{out}")


def t_verify():
    with tempfile.TemporaryDirectory() as tmp:
        a, b, pos = advance(tmp)
        rc, out, err = expect_rc(0, "verify", a)
        check("ok" in out, "verify prints ok", out)
        data = open(a, "rb").read()
        bad = os.path.join(tmp, "bad.rngsnap")
        # Every single-byte flip and every truncation is refused (exit 1).
        flips_ok = truncs_ok = True
        first_err = ""
        for i in range(len(data)):
            with open(bad, "wb") as f:
                f.write(data[:i] + bytes([data[i] ^ 0x01]) + data[i + 1:])
            rc, out, err = run("verify", bad)
            if rc != 1 or not err.strip():
                flips_ok = False
                first_err = f"flip at {i}: rc={rc} {out} {err}"
                break
        check(flips_ok, f"verify refuses every one of {len(data)} byte flips",
              first_err)
        for n in range(len(data)):
            with open(bad, "wb") as f:
                f.write(data[:n])
            rc, out, err = run("verify", bad)
            if rc != 1 or not err.strip():
                truncs_ok = False
                first_err = f"truncated to {n}: rc={rc} {out} {err}"
                break
        check(truncs_ok, f"verify refuses every truncation (0..{len(data)-1})",
              first_err)
        # A flipped device byte: the section is named by its place, and
        # what its damaged header reads is given as such (issue 31: it
        # said "section 1 (cpu:16/dropout)" for the stream saved as
        # cpu:0/dropout).
        at, index = 64, 0
        while True:
            size = struct.unpack_from("<I", data, at + 4)[0]
            bl = struct.unpack_from("<H", data, at + 8)[0]
            dev_at = at + 10 + bl + 1
            nl = struct.unpack_from("<H", data, dev_at + 4)[0]
            if (data[at + 10:at + 10 + bl] == b"cpu"
                    and data[dev_at + 6:dev_at + 6 + nl] == b"dropout"
                    and struct.unpack_from("<i", data, dev_at)[0] == 0):
                break
            at, index = at + size, index + 1
        with open(bad, "wb") as f:
            f.write(data[:dev_at] + bytes([data[dev_at] ^ 16])
                    + data[dev_at + 1:])
        rc, out, err = run("verify", bad)
        want = (f"section {index} at byte {at}: checksum mismatch (its label "
                f"as read from the damaged bytes: cpu:16/dropout)")
        check(rc == 1 and want in err and "(cpu:16/dropout) at" not in err,
              "verify names a damaged section by its place, its label as "
              "read from the damaged bytes", err)
        with open(bad, "wb") as f:
            f.write(data[: len(data) // 2])
        rc, out, err = run("verify", bad)
        check(rc == 1 and bad in err, "verify names the file and the reason", err)
        rc, out, err = run("inspect", bad)
        check(rc == 1, "inspect of a corrupt file exits 1", f"rc={rc}")
        # What is not a regular file is an I/O error (exit 2), whether it
        # reads as empty (/dev/null, a FIFO) or endless (/dev/zero).
        fifo = os.path.join(tmp, "fifo")
        os.mkfifo(fifo)
        for dev in ("/dev/null", "/dev/zero", fifo):
            rc, out, err = run("verify", dev)
            check(rc == 2 and "not a regular file" in err and dev in err,
                  f"verify {dev}: not a regular file, exit 2",
                  f"rc={rc} {err}")


def t_diff():
    with tempfile.TemporaryDirectory() as tmp:
        n = 1237
        a, b, pos = advance(tmp, stream="dropout", n=n)
        rc, out, err = expect_rc(0, "diff", a, a)
        check("0 of 4 entries differ" in out, "diff A A: identical", out)
        rc, out, err = expect_rc(1, "diff", a, b)
        lines = [l for l in out.splitlines() if "differs" in l or "only in" in l]
        drop = [l for l in lines if "cpu:0/dropout" in l]
        check(len(drop) == 1 and f"B is {n} words ahead" in drop[0],
              f"diff finds dropout {n} words ahead", out)
        check(any("app:test.counter" in l for l in lines) and len(lines) == 2,
              "only dropout and the app state differ", out)
        rc, out, err = expect_rc(1, "diff", b, a)
        check(f"A is {n} words ahead" in out, "diff B A: A ahead", out)
        # Another seed: other Philox streams, not a distance.
        a2, b2, _ = advance(tmp, n=5, seed=43, tag="2")
        rc, out, err = expect_rc(1, "diff", a, a2)
        check("different Philox streams" in out, "other seed: different streams", out)
        # Streams on one side only: a config with one more stream.
        ini2 = os.path.join(tmp, "more.ini")
        plugdir = os.environ["RNGSNAP_PLUGIN_BUILD_DIR"]
        with open(ini2, "w") as f:
            f.write(f"[rngsnap]\nplugin_dir = {plugdir}\n[backend.cpu]\n"
                    "plugin = rngsnap_cpu\nstreams = default, dropout, augment, extra\n")
        c = os.path.join(tmp, "c.rngsnap")
        p = subprocess.run([ADVANCE, ini2, c, os.path.join(tmp, "d.rngsnap"),
                            "cpu", "0", "default", "0", "42"], capture_output=True)
        check(p.returncode == 0, "helper with 4 streams")
        rc, out, err = expect_rc(1, "diff", a, c)
        check("cpu:0/extra" in out and "only in B" in out, "entry only in B", out)
        expect_rc(2, "diff", a, os.path.join(tmp, "missing.rngsnap"))


def t_demo():
    rc, out, err = run("demo", timeout=600)
    last = out.strip().splitlines()[-1] if out.strip() else ""
    check(rc == 0 and last == "resume is bit-exact on 3 of 3 streams",
          "demo (default config) passes on 3 of 3 streams",
          f"rc={rc}\n{out}\n{err}")
    check("SIGKILL" in out, "demo kills the job with SIGKILL", out)
    rows = [l.split() for l in out.splitlines() if l.startswith("cpu ")]
    check(len(rows) == 3 and all(r[-1] == "yes" and int(r[4]) > 0 for r in rows),
          "demo table: 3 cpu rows, words drawn, match yes", out)
    # Streams in device memory: the demo reserves words for "its kernels"
    # instead of generating into host buffers (the test plugin's generate
    # fails on purpose).
    with tempfile.TemporaryDirectory() as tmp:
        ini = os.path.join(tmp, "devmem.ini")
        here = os.path.join(BUILD, "tests", "tools")
        with open(ini, "w") as f:
            f.write(f"[rngsnap]\nplugin_dir = {os.environ['RNGSNAP_PLUGIN_BUILD_DIR']}:{here}\n"
                    "[backend.cpu]\nplugin = rngsnap_cpu\nstreams = default\n"
                    "[backend.devmem]\nstreams = default, dropout\ndevices = 2\n")
        rc, out, err = run("-c", ini, "demo")
        last = out.strip().splitlines()[-1] if out.strip() else ""
        dev = [l.split() for l in out.splitlines() if l.startswith("devmem ")]
        check(rc == 0 and last == "resume is bit-exact on 5 of 5 streams",
              "demo over device-memory streams: 5 of 5", f"rc={rc}\n{out}\n{err}")
        # 12 steps, 8 after the checkpoint, 1024+333+4096 words reserved each.
        check(len(dev) == 4 and all(r[3] == "device" and r[4] == str(8 * 5453)
                                    and r[-1] == "yes" for r in dev),
              "device streams: reserved words counted, match yes", out)
        # A backend that quietly ignores set_state: the demo must notice.
        with open(ini, "a") as f:
            f.write("forget_state = 1\n")
        rc, out, err = run("-c", ini, "demo")
        last = out.strip().splitlines()[-1] if out.strip() else ""
        bad = [l.split() for l in out.splitlines() if l.startswith("devmem ")]
        check(rc == 1 and last == "resume is bit-exact on 1 of 5 streams"
              and len(bad) == 4 and all(r[-1] == "NO" for r in bad),
              "demo catches a backend that is not restored (exit 1, NO)",
              f"rc={rc}\n{out}\n{err}")
    # Every cluster file of the build tree, where its backends are usable.
    cdir = os.path.join(BUILD, "config", "clusters")
    for name in sorted(os.listdir(cdir)) if os.path.isdir(cdir) else []:
        if not name.endswith(".ini"):
            continue
        path = os.path.join(cdir, name)
        rc, out, err = run("-c", path, "demo", "--steps", "8", "--save-at",
                           "3", "--kill-at", "5", timeout=600)
        last = out.strip().splitlines()[-1] if out.strip() else ""
        ok = rc == 0 and last.startswith("resume is bit-exact on ")
        if ok:
            n = last.split()[4]
            ok = last == f"resume is bit-exact on {n} of {n} streams"
        check(ok, f"demo -c clusters/{name}", f"rc={rc}\n{out[-3000:]}\n{err[-2000:]}")


def t_backends_broken():
    """A refused or missing plugin: `rngsnap backends` lists every backend,
    marks the broken ones with the loader's reason, exit 2 (issue 8)."""
    import shutil
    plugdir = os.environ["RNGSNAP_PLUGIN_BUILD_DIR"]
    with tempfile.TemporaryDirectory() as tmp:
        tmp = os.path.realpath(tmp)
        opendir = os.path.join(tmp, "open")
        os.mkdir(opendir)
        so = os.path.join(opendir, "rngsnap_hpu.so")
        shutil.copy(os.path.join(plugdir, "rngsnap_hpu.so"), so)
        os.chmod(so, 0o666)
        ini = os.path.join(tmp, "rng.ini")
        with open(ini, "w") as f:
            f.write(f"[rngsnap]\nplugin_dir = {plugdir}\n"
                    "[backend.cpu]\nplugin = rngsnap_cpu\n"
                    f"[backend.hpu]\nplugin = {so}\nrequired = false\n"
                    "emulate_devices = 1\n"
                    "[backend.npu]\nplugin = rngsnap_nonesuch\n"
                    "[backend.xpu]\nplugin = rngsnap_gone\nrequired = false\n")
        import pwd
        uid = os.stat(so).st_uid
        try:
            owner = f"{uid} ({pwd.getpwuid(uid).pw_name})"
        except KeyError:
            owner = str(uid)
        refused = (f"plugin {so} for [backend.hpu] refused: the file {so} "
                   f"(mode 0666, owner {owner}) is writable by group and "
                   "others, who could change the code this process runs; "
                   f"fix: chmod go-w {so}")
        elsewhere = ("; to search other folders, change plugin_dir in "
                     f"[rngsnap] ({ini}:2) or set RNGSNAP_PLUGIN_PATH "
                     "(folders separated by ':', searched instead)")
        missing = ("plugin 'rngsnap_nonesuch' for [backend.npu] "
                   f"({ini}:9) not found; tried (folders from plugin_dir): "
                   f"{plugdir}/rngsnap_nonesuch.so{elsewhere}")
        gone = ("plugin 'rngsnap_gone' for [backend.xpu] "
                f"({ini}:11) not found; tried (folders from plugin_dir): "
                f"{plugdir}/rngsnap_gone.so{elsewhere}")
        rc, out, err = run("-c", ini, "backends")
        rows = {l.split()[0]: l.split() for l in out.splitlines()
                if l.split() and l.split()[0] in ("cpu", "hpu", "npu", "xpu")
                and len(l.split()) >= 6}
        check(rc == 2 and sorted(rows) == ["cpu", "hpu", "npu", "xpu"],
              "backends with a refused plugin lists every backend, exit 2",
              f"rc={rc}\n{out}{err}")
        check(rows.get("cpu", [""] * 3)[2] == "available" and
              rows.get("hpu", [""] * 3)[2] == "broken" and
              rows.get("npu", [""] * 3)[2] == "broken" and
              rows.get("xpu", [""] * 3)[2] == "skipped",
              "states: cpu available, hpu/npu broken, optional xpu skipped",
              out)
        check(f"  reason:  {refused}\n" in out and
              f"  reason:  {missing}\n" in out and
              f"  reason:  {gone}\n" in out,
              "each backend not in use shows the loader's exact reason", out)
        check(err == f"rngsnap backends: backend hpu is broken: {refused}\n"
              f"rngsnap backends: backend npu is broken: {missing}\n",
              "stderr names each broken backend", err)
        rc, out, err = run("-c", ini, "backends", "--json")
        try:
            d = {b["name"]: b for b in json.loads(out)["backends"]}
            check(rc == 2 and list(d) == ["cpu", "hpu", "npu", "xpu"] and
                  d["hpu"]["state"] == "broken" and
                  d["hpu"]["reason"] == refused and
                  d["hpu"]["available"] is False and
                  d["npu"]["state"] == "broken" and
                  d["npu"]["reason"] == missing and
                  d["xpu"]["state"] == "skipped" and
                  d["xpu"]["reason"] == gone and
                  d["cpu"]["state"] == "available",
                  "backends --json: every backend, broken ones with reasons, "
                  "exit 2", f"rc={rc}\n{out}")
        except (ValueError, KeyError) as e:
            check(False, "backends --json with a refused plugin is JSON",
                  f"{e}\n{out}")
        # Fixed: the optional backend with no plugin file stays skipped.
        os.chmod(so, 0o755)
        with open(ini, "w") as f:
            f.write(f"[rngsnap]\nplugin_dir = {plugdir}\n"
                    "[backend.cpu]\nplugin = rngsnap_cpu\n"
                    f"[backend.hpu]\nplugin = {so}\nrequired = false\n"
                    "emulate_devices = 1\n"
                    "[backend.xpu]\nplugin = rngsnap_gone\nrequired = false\n")
        rc, out, err = run("-c", ini, "backends")
        check(rc == 0 and " emulated " in out and " skipped " in out,
              "fixed plugin mode and an optional missing plugin: exit 0",
              f"rc={rc}\n{out}{err}")
        # A typo of the cuda plugin (issue 16): the file that is there,
        # and where else to look, in the skip reason and the open error.
        with open(ini, "w") as f:
            f.write(f"[rngsnap]\nplugin_dir = {plugdir}\n"
                    "[backend.cpu]\nplugin = rngsnap_cpu\n"
                    "[backend.cuda]\nplugin = rngsnap_cdua\n"
                    "required = false\n")
        typo = ("plugin 'rngsnap_cdua' for [backend.cuda] "
                f"({ini}:5) not found (did you mean 'rngsnap_cuda'?); tried "
                f"(folders from plugin_dir): {plugdir}/rngsnap_cdua.so"
                f"{elsewhere}")
        rc, out, err = run("-c", ini, "backends")
        check(rc == 0 and f"  reason:  {typo}\n" in out,
              "backends: an optional backend with a plugin typo is skipped "
              "with the near miss and where else to look", f"rc={rc}\n{out}")
        with open(ini, "w") as f:
            f.write(f"[rngsnap]\nplugin_dir = {plugdir}\n"
                    "[backend.cpu]\nplugin = rngsnap_cpu\n"
                    "[backend.cuda]\nplugin = rngsnap_cdua\n")
        rc, out, err = run("-c", ini, "backends", "--json")
        try:
            d = {b["name"]: b for b in json.loads(out)["backends"]}
            ok = rc == 2 and d["cuda"]["state"] == "broken" and \
                d["cuda"]["reason"] == typo
        except (ValueError, KeyError):
            ok = False
        check(ok, "backends --json: a required backend with a plugin typo "
              "is broken, with the same reason", f"rc={rc}\n{out}")


# ---- --json of inspect, verify and diff against the user guide -----------

def guide_json(tag):
    """The JSON example marked <!-- json: TAG --> in docs/user-guide.md."""
    import re
    path = os.path.join(os.environ["RNGSNAP_SOURCE_ROOT"], "docs", "user-guide.md")
    m = re.search(r"<!-- json: " + re.escape(tag) + r" -->\n```json\n(.*?)```",
                  open(path).read(), re.S)
    return json.loads(m.group(1)) if m else None


def shape(v):
    """Members in order and value types; a list by the set of its items'
    shapes (so an example may show one item of each kind)."""
    if isinstance(v, dict):
        return [(k, shape(x)) for k, x in v.items()]
    if isinstance(v, list):
        return sorted({json.dumps(shape(x)) for x in v})
    return type(v).__name__


def check_json(what, out, tag=None):
    """Parse out; when tag, its shape must be the guide's example's."""
    try:
        d = json.loads(out)
    except ValueError as e:
        check(False, f"{what}: valid JSON", f"{e}\n{out}")
        return None
    if tag:
        doc = guide_json(tag)
        check(doc is not None and shape(d) == shape(doc),
              f"{what}: the members and types of user-guide.md's '{tag}' example",
              f"program: {shape(d)}\nguide:   {shape(doc) if doc else None}")
    return d


def t_inspect_json_doc():
    with tempfile.TemporaryDirectory() as tmp:
        a, b, pos = advance(tmp, n=1237)
        rc, out, err = expect_rc(0, "inspect", "--json", b)
        d = check_json("inspect --json", out, "inspect")
        apps = [s for s in d["sections"] if s["kind"] == "app"] if d else []
        check(len(apps) == 1 and not {"backend", "device", "state_format",
                                      "state_format_name"} & set(apps[0]),
              "inspect --json: an app section has no backend, device or "
              "state format (as the guide says)", out)


def t_verify_json():
    with tempfile.TemporaryDirectory() as tmp:
        a, b, pos = advance(tmp)
        rc, out, err = expect_rc(0, "verify", "--json", a)
        d = check_json("verify --json, a sound file", out, "verify")
        _, iout, _ = run("inspect", "--json", a)
        h = json.loads(iout)["header"]
        check(d is not None and d["file"] == a and d["ok"] is True and
              d["format_version"] == 1 and d["section_count"] == 4 and
              d["file_size"] == os.path.getsize(a) and
              d["file_checksum"] == h["file_checksum"] and
              d["library_version"] == h["library_version"] and err == "",
              "verify --json, a sound file: ok, size, sections, checksum",
              out + err)
        data = open(a, "rb").read()
        cases = (("torn", data[:100], 1, "RNGSNAP_E_CORRUPT", "truncated"),
                 # byte 100: in the first section's state (format.md)
                 ("flipped", data[:100] + bytes([data[100] ^ 1]) + data[101:], 1,
                  "RNGSNAP_E_CORRUPT", "checksum"))
        for name, content, want, code, word in cases:
            bad = os.path.join(tmp, name + ".rngsnap")
            with open(bad, "wb") as f:
                f.write(content)
            rc, out, err = expect_rc(want, "verify", bad, "--json")
            d = check_json(f"verify --json, a {name} file", out, "verify error")
            check(d is not None and d["file"] == bad and d["ok"] is False and
                  d["error_code"] == code and word in d["error"] and
                  d["error"] in err,
                  f"verify --json, a {name} file: exit {want}, ok false, "
                  f"{code}, the reason (also on stderr)", out + err)
        missing = os.path.join(tmp, "none.rngsnap")
        rc, out, err = expect_rc(2, "verify", "--json", missing)
        d = check_json("verify --json, no such file", out, "verify error")
        check(d is not None and d["ok"] is False and
              d["error_code"] == "RNGSNAP_E_IO" and missing in d["error"],
              "verify --json, no such file: exit 2, RNGSNAP_E_IO", out)


def t_diff_json():
    with tempfile.TemporaryDirectory() as tmp:
        n = 1237
        a, b, pos = advance(tmp, stream="dropout", n=n)
        rc, out, err = expect_rc(1, "diff", "--json", a, b)
        d = check_json("diff --json A B", out, "diff")
        if d:
            s = {e["label"]: e for e in d["sections"]}
            drop = s.get("cpu:0/dropout", {})
            check(d["a"] == a and d["b"] == b and d["identical"] is False and
                  d["entries"] == 4 and d["differing"] == 2 and
                  d["header_differs"] is False and
                  d["rank"] == {"a": 0, "b": 0} and
                  d["world_size"] == {"a": 1, "b": 1} and
                  list(s) == ["cpu:0/dropout", "app:test.counter"],
                  "diff --json A B: 2 of 4 entries differ", out)
            check(drop.get("status") == "differs" and
                  drop.get("difference") == "philox_offset" and
                  drop.get("ahead") == "B" and drop.get("words") == n and
                  drop.get("backend") == "cpu" and drop.get("device") == 0 and
                  f"B is {n} words ahead" in drop.get("detail", ""),
                  f"diff --json: dropout is the same Philox stream, B {n} "
                  "words ahead", out)
            app = s.get("app:test.counter", {})
            check(app.get("kind") == "app" and app.get("difference") == "contents"
                  and "backend" not in app and "ahead" not in app,
                  "diff --json: the app state's contents differ", out)
        rc, out, err = expect_rc(1, "diff", a, b, "--json")
        d = check_json("diff --json B A", run("diff", "--json", b, a)[1])
        check(d is not None and d["sections"][0]["ahead"] == "A",
              "diff --json B A: A is ahead", str(d))
        rc, out, err = expect_rc(0, "diff", "--json", a, a)
        d = check_json("diff --json A A", out)
        check(d is not None and d["identical"] is True and d["sections"] == []
              and d["differing"] == 0 and d["entries"] == 4,
              "diff --json A A: identical, no sections listed", out)
        rc, out, err = expect_rc(0, "diff", "--json", "--all", a, a)
        d = check_json("diff --json --all A A", out)
        check(d is not None and len(d["sections"]) == 4 and
              all(e["status"] == "identical" and e["difference"] is None and
                  e["detail"] is None for e in d["sections"]),
              "diff --json --all: every entry, identical, difference null", out)
        a2, _, _ = advance(tmp, n=5, seed=43, tag="2")
        rc, out, err = expect_rc(1, "diff", "--json", a, a2)
        d = check_json("diff --json, another seed", out)
        check(d is not None and all(e["difference"] == "philox_stream"
                                    for e in d["sections"] if e["kind"] == "stream")
              and len(d["sections"]) == 3,
              "diff --json, another seed: three philox_stream entries", out)
        ini2 = os.path.join(tmp, "more.ini")
        with open(ini2, "w") as f:
            f.write(f"[rngsnap]\nplugin_dir = {os.environ['RNGSNAP_PLUGIN_BUILD_DIR']}"
                    "\n[backend.cpu]\nplugin = rngsnap_cpu\n"
                    "streams = default, dropout, augment, extra\n")
        c = os.path.join(tmp, "c.rngsnap")
        subprocess.run([ADVANCE, ini2, c, os.path.join(tmp, "d.rngsnap"), "cpu",
                        "0", "default", "0", "42"], capture_output=True)
        rc, out, err = expect_rc(1, "diff", "--json", a, c)
        d = check_json("diff --json, a stream only in B", out)
        only = [e for e in d["sections"] if e["status"] == "only_in_b"] if d else []
        check(len(only) == 1 and only[0]["label"] == "cpu:0/extra" and
              only[0]["difference"] is None and d["entries"] == 5,
              "diff --json: cpu:0/extra only_in_b", out)
        missing = os.path.join(tmp, "missing.rngsnap")
        rc, out, err = expect_rc(2, "diff", "--json", a, missing)
        d = check_json("diff --json, B missing", out)
        check(d is not None and d["file"] == missing and
              d["error_code"] == "RNGSNAP_E_IO" and d["error"],
              "diff --json, B missing: exit 2, an error object naming B", out)


GROUPS = {"cli": t_cli, "backends": t_backends, "inspect": t_inspect,
          "verify": t_verify, "diff": t_diff, "demo": t_demo}
GROUPS["backends"] = lambda: (t_backends(), t_backends_broken())
GROUPS["inspect"] = lambda: (t_inspect(), t_inspect_json_doc())
GROUPS["verify"] = lambda: (t_verify(), t_verify_json())
GROUPS["diff"] = lambda: (t_diff(), t_diff_json())
GROUPS[GROUP]()
print(f"{GROUP}: {len(failures)} failure(s)")
sys.exit(1 if failures else 0)
