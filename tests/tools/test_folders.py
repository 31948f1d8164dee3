#!/usr/bin/env python3
"""test_folders.py - `rngsnap verify/inspect/diff` on multi-rank folders.

usage: test_folders.py GROUP RNGSNAP MAKE_FOLDER
GROUP: verify | inspect | diff

Folders are written by make_folder (N threads, the in-process
communicator, rngsnap_save_ranks), which prints every rank's stream
positions and app states: inspect's output is compared with them field by
field.  Damage is done byte by byte here; a forged manifest (valid
checksum, wrong contents) is built with libxxhash through ctypes, as
docs/format.md describes the manifest.
"""
import ctypes
import ctypes.util
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile

GROUP, RNGSNAP, MAKE = sys.argv[1], sys.argv[2], sys.argv[3]
BUILD = os.environ["RNGSNAP_BUILD_ROOT"]
INI = os.path.join(BUILD, "config", "rng.ini")
failures = []
RANK_OK = re.compile(r"^  rank \d+: \S+ ok \(", re.M)   # verify's rank lines


def run(*args):
    e = dict(os.environ)
    e.pop("RNGSNAP_CONFIG", None)
    p = subprocess.run([RNGSNAP, *args], capture_output=True, text=True,
                       env=e, timeout=120)
    return p.returncode, p.stdout, p.stderr


def check(cond, what, detail=""):
    print(("ok     " if cond else "FAILED ") + what)
    if not cond:
        failures.append(what)
        if detail:
            print("   " + str(detail).replace("\n", "\n   "))


def expect_rc(want, *args):
    rc, out, err = run(*args)
    check(rc == want, f"rngsnap {' '.join(args)} -> exit {want}",
          f"got {rc}\nstdout: {out[-3000:]}\nstderr: {err[-3000:]}")
    return rc, out, err


def parse(what, out):
    try:
        return json.loads(out)
    except ValueError as e:
        check(False, f"{what}: valid JSON", f"{e}\n{out[-3000:]}")
        return None


def make(tmp, name, nranks, seed=42, extra=None, flags=()):
    """Write a folder; return (path, what make_folder printed)."""
    d = os.path.join(tmp, name)
    args = [MAKE, INI, d, str(nranks), str(seed)]
    if extra:
        args += [str(extra[0]), str(extra[1])]
    args += list(flags)
    p = subprocess.run(args, capture_output=True, text=True, timeout=120)
    if p.returncode != 0:
        print(p.stdout, p.stderr)
        raise SystemExit(f"make_folder {nranks} ranks failed")
    streams, apps = {}, {}
    for line in p.stdout.splitlines():
        f = line.split()
        if f[0] == "stream":
            streams[(int(f[1]), f[2], int(f[3]), f[4])] = tuple(map(int, f[5:8]))
        else:
            apps[(int(f[1]), f[2])] = f[3]
    return d, streams, apps


def rank_files(d):
    return sorted(n for n in os.listdir(d) if n.startswith("rank-"))


def flip(path, at):
    data = bytearray(open(path, "rb").read())
    data[at] ^= 0x01
    open(path, "wb").write(bytes(data))


# ---- the manifest, as docs/format.md lays it out --------------------------

def xxh3(data):
    lib = ctypes.CDLL(ctypes.util.find_library("xxhash") or "libxxhash.so.0")
    lib.XXH3_64bits.restype = ctypes.c_uint64
    lib.XXH3_64bits.argtypes = [ctypes.c_char_p, ctypes.c_size_t]
    return lib.XXH3_64bits(data, len(data))


def read_manifest(d):
    b = open(os.path.join(d, "MANIFEST"), "rb").read()
    world, created = struct.unpack_from("<Iq", b, 12)
    napps, = struct.unpack_from("<I", b, 56)
    pos, ranks, apps = 60, [], []
    for _ in range(world):
        n, = struct.unpack_from("<H", b, pos)
        name = b[pos + 2:pos + 2 + n].decode()
        size, csum = struct.unpack_from("<QQ", b, pos + 2 + n)
        ranks.append([name, size, csum])
        pos += 18 + n
    for _ in range(napps):
        n, = struct.unpack_from("<H", b, pos)
        name = b[pos + 2:pos + 2 + n].decode()
        csum, = struct.unpack_from("<Q", b, pos + 2 + n)
        apps.append([name, csum, b[pos + 10 + n]])
        pos += 11 + n
    assert pos + 8 == len(b), "manifest layout"
    return b[:60], ranks, apps


def write_manifest(d, head, ranks, apps):
    b = bytearray(head)
    for name, size, csum in ranks:
        b += struct.pack("<H", len(name)) + name.encode() + struct.pack("<QQ", size, csum)
    for name, csum, same in apps:
        b += struct.pack("<H", len(name)) + name.encode() + struct.pack("<QB", csum, same)
    b += struct.pack("<Q", xxh3(bytes(b)))
    open(os.path.join(d, "MANIFEST"), "wb").write(bytes(b))


# ---- the user guide's examples ---------------------------------------------

def guide_json(tag):
    """The JSON example marked <!-- json: TAG --> in docs/user-guide.md."""
    path = os.path.join(os.environ["RNGSNAP_SOURCE_ROOT"], "docs", "user-guide.md")
    m = re.search(r"<!-- json: " + re.escape(tag) + r" -->\n```json\n(.*?)```",
                  open(path).read(), re.S)
    return json.loads(m.group(1)) if m else None


def shape(v):
    """Members in order and value types; a list by the set of its items'
    shapes (an example may show one item of each kind)."""
    if isinstance(v, dict):
        return [(k, shape(x)) for k, x in v.items()]
    if isinstance(v, list):
        return sorted({json.dumps(shape(x)) for x in v})
    return type(v).__name__


def same_shape_as_guide(what, d, tag):
    doc = guide_json(tag)
    check(d is not None and doc is not None and shape(d) == shape(doc),
          f"{what}: the members and types of user-guide.md's '{tag}' example",
          f"program: {shape(d)}\nguide:   {shape(doc) if doc else None}")


# ---- groups -----------------------------------------------------------------

def t_verify():
    with tempfile.TemporaryDirectory() as tmp:
        for n in (1, 2, 4):
            d, streams, apps = make(tmp, f"w{n}", n)
            rc, out, err = expect_rc(0, "verify", d)
            check(f"{d}: ok ({n} rank files, every checksum verified)" in out
                  and len(RANK_OK.findall(out)) == n and err == "",
                  f"verify {n}-rank folder: every rank ok", out + err)
            rc, out, err = expect_rc(0, "verify", "--json", d)
            v = parse(f"verify --json {n} ranks", out)
            if not v:
                continue
            same_shape_as_guide(f"verify --json {n} ranks", v, "verify folder")
            files = rank_files(d)
            check(v["dir"] == d and v["ok"] is True and v["world_size"] == n
                  and re.fullmatch(r"[0-9a-f]{32}", v["id"])
                  and v["forked_from"] is None and v["format_version"] == 1,
                  f"verify --json {n} ranks: dir, ok, world size, id, "
                  "no fork", out)
            check([r["rank"] for r in v["ranks"]] == list(range(n)) and
                  [r["file"] for r in v["ranks"]] == files and
                  files == [f"rank-{r:05d}.{v['id']}.rngsnap" for r in range(n)]
                  and all(r["ok"] is True and r["error"] is None and
                          r["error_code"] is None and
                          r["size"] == os.path.getsize(os.path.join(d, r["file"]))
                          and re.fullmatch(r"[0-9a-f]{16}", r["checksum"])
                          for r in v["ranks"]),
                  f"verify --json {n} ranks: one sound entry per rank, "
                  "named rank-%05d.<id>.rngsnap, with its size", out)
            a = {x["name"]: x for x in v["apps"]}
            check(list(a) == ["test.step", "test.rank"] and
                  a["test.step"]["same_on_all_ranks"] is True and
                  a["test.rank"]["same_on_all_ranks"] is (n == 1),
                  f"verify --json {n} ranks: test.step identical on all "
                  f"ranks, test.rank {'too' if n == 1 else 'not'}", out)
        # Damage, on copies of the 4-rank folder.
        good = os.path.join(tmp, "w4")
        _, out, _ = run("verify", "--json", good)
        gv = json.loads(out)
        files = rank_files(good)

        # Files of an earlier or interrupted save: named, not checked.
        d = os.path.join(tmp, "other")
        shutil.copytree(good, d)
        other = sorted([".MANIFEST.tmp-1-2-3", "rank-00001.%032x.rngsnap" % 7,
                        "rank-00009." + gv["id"] + ".rngsnap"])
        for n in other:
            open(os.path.join(d, n), "wb").close()
        rc, out, err = expect_rc(0, "verify", d)
        check("not part of this checkpoint" in out and
              all(n in out for n in other) and len(RANK_OK.findall(out)) == 4,
              "verify names files that are not part of the checkpoint, "
              "exit 0", out)
        rc, out, err = expect_rc(0, "verify", "--json", d)
        v = parse("verify --json, other files", out)
        check(v is not None and v["other_files"] == other and
              gv["other_files"] == [],
              "verify --json: other_files lists exactly them", out)

        d = os.path.join(tmp, "flip")
        shutil.copytree(good, d)
        flip(os.path.join(d, files[2]), 100)
        rc, out, err = expect_rc(1, "verify", d)
        bad = [l for l in out.splitlines() if "FAILED" in l]
        check(len(bad) == 1 and bad[0].startswith(f"  rank 2: {files[2]} FAILED")
              and "XXH3" in bad[0] and f"{d}: 1 of 4 rank files failed" in out
              and "rank 2" in err and files[2] in err,
              "a flipped byte in rank 2's file: rank 2 and its file named, "
              "exit 1, the other ranks ok", out + err)
        rc, out, err = expect_rc(1, "verify", "--json", d)
        v = parse("verify --json, flipped rank 2", out)
        if v:
            r2 = v["ranks"][2]
            check(v["ok"] is False and r2["ok"] is False and
                  r2["error_code"] == "RNGSNAP_E_CORRUPT" and
                  files[2] in r2["error"] and "rank 2" in r2["error"] and
                  [r["ok"] for r in v["ranks"]] == [True, True, False, True],
                  "verify --json: rank 2 not ok, RNGSNAP_E_CORRUPT, the "
                  "others ok", out)

        d = os.path.join(tmp, "gone")
        shutil.copytree(good, d)
        os.unlink(os.path.join(d, files[1]))
        rc, out, err = expect_rc(1, "verify", "--json", d)
        v = parse("verify --json, rank 1 deleted", out)
        if v:
            r1 = v["ranks"][1]
            check(r1["ok"] is False and r1["error_code"] == "RNGSNAP_E_IO" and
                  files[1] in r1["error"] and
                  [r["ok"] for r in v["ranks"]] == [True, False, True, True]
                  and "rank 1" in err,
                  "a deleted rank file: that rank, RNGSNAP_E_IO, exit 1", out + err)

        # Every byte flip and every truncation of the MANIFEST: exit 1.
        man = open(os.path.join(good, "MANIFEST"), "rb").read()
        d = os.path.join(tmp, "man")
        shutil.copytree(good, d)
        mp = os.path.join(d, "MANIFEST")
        first = ""
        for i in range(len(man)):
            open(mp, "wb").write(man[:i] + bytes([man[i] ^ 0x10]) + man[i + 1:])
            rc, out, err = run("verify", d)
            if rc != 1 or "MANIFEST" not in err or "RNGSNAP_E_CORRUPT" not in err:
                first = first or f"flip at {i}: rc={rc} {out} {err}"
        check(not first, f"verify refuses each of {len(man)} MANIFEST byte "
              "flips (exit 1, RNGSNAP_E_CORRUPT, MANIFEST named)", first)
        for n in range(len(man)):
            open(mp, "wb").write(man[:n])
            rc, out, err = run("verify", d)
            if rc != 1 or "RNGSNAP_E_CORRUPT" not in err:
                first = first or f"truncated to {n}: rc={rc} {out} {err}"
        check(not first, "verify refuses every truncation of the MANIFEST", first)
        open(mp, "wb").write(man[:len(man) // 2])
        rc, out, err = expect_rc(1, "verify", "--json", d)
        v = parse("verify --json, torn MANIFEST", out)
        check(v is not None and v["file"] == d and v["ok"] is False and
              v["error_code"] == "RNGSNAP_E_CORRUPT" and mp in v["error"] and
              "stray_files" not in v,
              "verify --json, torn MANIFEST: an error object naming it", out)

        # No MANIFEST: an interrupted save, its rank files listed.
        os.unlink(mp)
        tmpname = f".rank-00001.{gv['id']}.rngsnap.tmp-1-2-3"   # a killed save's
        open(os.path.join(d, tmpname), "wb").close()
        want = (f"{d}: not a committed multi-rank checkpoint (no MANIFEST): "
                "a save was interrupted or this is not a checkpoint folder")
        rc, out, err = expect_rc(1, "verify", d)
        check(want in err and all(f in err for f in files),
              "no MANIFEST: exit 1, not committed, the stray rank files "
              "listed", err)
        rc, out, err = expect_rc(1, "verify", "--json", d)
        v = parse("verify --json, no MANIFEST", out)
        check(v is not None and v["ok"] is False and v["error"].startswith(want)
              and v["error_code"] == "RNGSNAP_E_IO" and
              v["stray_files"] == sorted(files + [tmpname]),
              "verify --json, no MANIFEST: stray_files are the rank files "
              "and the temporary", out)
        empty = os.path.join(tmp, "empty")
        os.mkdir(empty)
        rc, out, err = expect_rc(1, "verify", "--json", empty)
        v = parse("verify --json, an empty folder", out)
        check(v is not None and v["stray_files"] == [] and
              v["error"] == want.replace(d, empty),
              "verify --json, an empty folder: no stray files", out)

        # Forged manifests (valid checksum, wrong contents): what the file
        # checksums cannot catch, the slot and app checks do.
        head, ranks, apps = read_manifest(good)
        d = os.path.join(tmp, "swap")
        shutil.copytree(good, d)
        # rank 0's slot names rank 0's file, whose bytes are rank 1's.
        shutil.copy(os.path.join(good, files[1]), os.path.join(d, files[0]))
        data = open(os.path.join(d, files[0]), "rb").read()
        ranks[0][1:] = [len(data), xxh3(data)]
        write_manifest(d, head, ranks, apps)
        rc, out, err = expect_rc(1, "verify", d)
        check(f"rank 0: {d}/{files[0]} records rank 1 of world size 4, but "
              "the manifest lists it as rank 0 of 4" in out and
              "RNGSNAP_E_MISMATCH" in err and len(RANK_OK.findall(out)) == 3,
              "rank 1's file in rank 0's slot (manifest rewritten to match): "
              "the header's rank is checked", out + err)
        head, ranks, apps = read_manifest(good)
        d = os.path.join(tmp, "apps")
        shutil.copytree(good, d)
        for a in apps:
            a[2] = 1       # test.rank claimed identical on all ranks
        write_manifest(d, head, ranks, apps)
        rc, out, err = expect_rc(1, "verify", "--json", d)
        v = parse("verify --json, forged app record", out)
        check(v is not None and [r["ok"] for r in v["ranks"]] ==
              [True, False, False, False] and
              all("app state 'test.rank'" in r["error"]
                  for r in v["ranks"][1:]),
              "an app state recorded identical on all ranks that is not: "
              "ranks 1-3 named", out)


def t_inspect():
    with tempfile.TemporaryDirectory() as tmp:
        for n in (1, 2, 4):
            d, streams, apps = make(tmp, f"w{n}", n, seed=1234567)
            rc, out, err = expect_rc(0, "inspect", "--json", d)
            v = parse(f"inspect --json {n} ranks", out)
            if not v:
                continue
            same_shape_as_guide(f"inspect --json {n} ranks", v, "inspect folder")
            _, vout, _ = run("verify", "--json", d)
            ver = json.loads(vout)
            check(v["dir"] == d and v["world_size"] == n and
                  v["id"] == ver["id"] and v["forked_from"] is None and
                  v["apps"] == ver["apps"] and
                  isinstance(v["created_unix"], int) and v["created"].endswith("Z"),
                  f"inspect --json {n} ranks: the manifest's fields", out[:2000])
            check(len(v["ranks"]) == n, f"inspect --json: {n} ranks", out[:2000])
            seen = 0
            for r, rk in enumerate(v["ranks"]):
                f = rk["inspect"]
                h = f["header"]
                check(rk["rank"] == r and rk["error"] is None and
                      f["file"] == os.path.join(d, rk["file"]) and
                      h["rank"] == r and h["world_size"] == n and
                      h["file_size"] == rk["size"] and
                      rk["checksum"] == "%016x" % xxh3(open(f["file"], "rb").read()),
                      f"inspect --json rank {r} of {n}: slot and header agree",
                      json.dumps(rk)[:2000])
                for s in f["sections"]:
                    if s["kind"] == "stream":
                        key = (r, s["backend"], s["device"], s["name"])
                        p = s["philox"]
                        ok = key in streams and streams[key] == (
                            p["seed"], p["subsequence"], p["offset"])
                        if s["name"] == "dropout":
                            ok = ok and p["offset"] == 100 * r + 7
                    else:
                        ok = s["state_hex"] == apps.get((r, s["name"]))
                    seen += 1
                    check(ok, f"inspect --json rank {r}: {s['name']} as saved",
                          f"{s} vs {streams} {apps}")
            check(seen == n * 5, f"inspect --json {n} ranks: 3 streams and 2 "
                  "app states per rank", str(seen))
            # Text: the manifest, then each rank as `inspect FILE` shows it.
            rc, out, err = expect_rc(0, "inspect", d)
            for r in range(n):
                _, one, _ = run("inspect", os.path.join(d, v["ranks"][r]["file"]))
                check(f"== rank {r} of {n}: {v['ranks'][r]['file']}" in out and
                      one in out,
                      f"inspect {n}-rank folder text: rank {r} is inspect "
                      "FILE's output", out[-2000:])
            check(f"checkpoint id:   {v['id']}" in out and
                  f"world size:      {n}" in out and
                  ("differs between ranks" in out) == (n > 1),
                  f"inspect {n}-rank folder text: the manifest", out[:1500])
        # A fork (4 ranks onto 2, twice): the manifest names the source,
        # inspect shows the forked positions and the restored app states.
        src, _, _ = make(tmp, "src", 4, seed=7, flags=["--same-apps"])
        _, out, _ = run("verify", "--json", src)
        sid = json.loads(out)["id"]
        for name in ("fork1", "fork2"):
            d, streams, apps = make(tmp, name, 2, flags=["--same-apps",
                                                         "--fork", src])
            rc, out, err = expect_rc(0, "inspect", "--json", d)
            v = parse(f"inspect --json {name}", out)
            if not v:
                continue
            got = {(r, s["name"]): s for r, rk in enumerate(v["ranks"])
                   for s in rk["inspect"]["sections"]}
            check(v["forked_from"] == sid and v["world_size"] == 2 and
                  v["id"] != sid and
                  all(got[(r, n)]["philox"]["offset"] == off
                      and (got[(r, n)]["philox"]["seed"],
                           got[(r, n)]["philox"]["subsequence"])
                      == streams[(r, "cpu", 0, n)][:2]
                      for (r, _, _, n), (_, _, off) in streams.items()) and
                  all(got[(r, "test.rank")]["state_hex"] == "0001020304050607"
                      and got[(r, "test.step")]["state_hex"] == apps[(r, "test.step")]
                      for r in range(2)),
                  f"inspect --json {name}: forked_from is the source's id, "
                  "positions as drawn after the fork, app states from the "
                  "source", out[:3000])
            rc, out, err = expect_rc(0, "inspect", d)
            check(f"forked from:     {sid}" in out,
                  f"inspect {name} text: forked from the source", out[:800])
        rc, out, err = expect_rc(0, "diff", os.path.join(tmp, "fork1"),
                                 os.path.join(tmp, "fork2"))
        check("0 of 2 ranks differ" in out,
              "two forks of one checkpoint onto 2 ranks: diff identical", out)
        # One damaged rank file: reported in its place, exit 1.
        d = os.path.join(tmp, "w4")
        files = rank_files(d)
        flip(os.path.join(d, files[3]), 100)
        rc, out, err = expect_rc(1, "inspect", "--json", d)
        v = parse("inspect --json, damaged rank 3", out)
        check(v is not None and v["ranks"][3]["inspect"] is None and
              v["ranks"][3]["error_code"] == "RNGSNAP_E_CORRUPT" and
              files[3] in v["ranks"][3]["error"] and
              all(r["inspect"] for r in v["ranks"][:3]) and "rank 3" in err,
              "inspect --json, damaged rank 3: its error, the others shown", out)
        # No MANIFEST: nothing committed to show (exit 2, as any folder).
        os.unlink(os.path.join(d, "MANIFEST"))
        rc, out, err = expect_rc(2, "inspect", "--json", d)
        v = parse("inspect --json, no MANIFEST", out)
        check(v is not None and v["file"] == d and
              v["error_code"] == "RNGSNAP_E_IO" and
              "not a committed multi-rank checkpoint" in v["error"],
              "inspect --json, no MANIFEST: error object, exit 2", out)


def t_diff():
    with tempfile.TemporaryDirectory() as tmp:
        a, _, _ = make(tmp, "a", 4)
        b, _, _ = make(tmp, "b", 4)             # same seed and draws
        c, _, _ = make(tmp, "c", 4, extra=(2, 555))
        two, _, _ = make(tmp, "two", 2)
        rc, out, err = expect_rc(0, "diff", a, b)
        check(out.count("== rank ") == 4 and "0 of 4 ranks differ" in out,
              "diff of two folders of the same job: identical, exit 0", out)
        rc, out, err = expect_rc(1, "diff", a, c)
        r2 = out.split("== rank 2 ==")[-1].split("== rank 3 ==")[0]
        check("1 of 4 ranks differ: rank 2" in out and
              "cpu:0/augment" in r2 and "B is 555 words ahead" in r2 and
              out.count("differs:") == 1,
              "after drawing on rank 2: rank 2 named, augment 555 words "
              "ahead, exit 1", out)
        rc, out, err = expect_rc(1, "diff", "--json", a, c)
        v = parse("diff --json A C", out)
        same_shape_as_guide("diff --json, rank 2 differs", v, "diff folders")
        if v:
            sec = v["ranks"][2]["sections"]
            check(v["a"] == a and v["b"] == c and v["identical"] is False and
                  v["differing_ranks"] == [2] and
                  v["world_size"] == {"a": 4, "b": 4} and
                  [r["identical"] for r in v["ranks"]] == [True, True, False, True]
                  and [r["rank"] for r in v["ranks"]] ==
                  [{"a": r, "b": r} for r in range(4)] and
                  len(sec) == 1 and sec[0]["label"] == "cpu:0/augment" and
                  sec[0]["ahead"] == "B" and sec[0]["words"] == 555,
                  "diff --json: differing_ranks [2], augment B 555 words ahead",
                  out[:3000])
        rc, out, err = expect_rc(1, "diff", a, two)
        check("world sizes differ: A 4, B 2" in out and "== rank" not in out,
              "diff of 4 and 2 ranks: world sizes differ, exit 1", out)
        rc, out, err = expect_rc(1, "diff", "--json", two, a)
        v = parse("diff --json 2 vs 4 ranks", out)
        check(v is not None and v["world_size"] == {"a": 2, "b": 4} and
              v["ranks"] == [] and v["identical"] is False,
              "diff --json of 2 and 4 ranks: world_size, not identical", out)
        f0 = os.path.join(a, rank_files(a)[0])
        for x, y in ((a, f0), (f0, a)):
            rc, out, err = expect_rc(2, "diff", x, y)
            check(f"{a} is a folder and {f0} is not" in err,
                  "diff of a folder and a file: usage error", err)
        flip(os.path.join(c, rank_files(c)[1]), 100)
        rc, out, err = expect_rc(2, "diff", "--json", a, c)
        v = parse("diff --json, damaged rank 1 in B", out)
        check(v is not None and v["file"] == c and
              v["error_code"] == "RNGSNAP_E_CORRUPT" and "rank 1" in v["error"]
              and "rank 1" in err,
              "diff with a damaged rank file: exit 2 naming folder and rank", out)
        os.unlink(os.path.join(b, "MANIFEST"))
        rc, out, err = expect_rc(2, "diff", a, b)
        check("not a committed multi-rank checkpoint" in err,
              "diff with a folder without MANIFEST: exit 2", err)


GROUPS = {"verify": t_verify, "inspect": t_inspect, "diff": t_diff}
GROUPS[GROUP]()
print(f"folders-{GROUP}: {len(failures)} failure(s)")
sys.exit(1 if failures else 0)
