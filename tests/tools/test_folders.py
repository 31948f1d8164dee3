#!/usr/bin/env python3
"""test_folders.py - `rngsnap verify/inspect/diff` on multi-rank folders.

usage: test_folders.py GROUP RNGSNAP MAKE_FOLDER
GROUP: verify | inspect | diff

Folders are written by make_folder (N threads, the in-process
communicator, rngsnap_save_ranks), which prints every rank's stream
positions and app states: inspect's output is compared with them field by
field.  Damage is done byte by byte here; a forged manifest (valid
checksum, wrong contents) is built with libxxhash through ctypes, as
docs/format.md describes the manifest (versions 1 and 2).  A node-layout
folder (node-NNNNN files, images end to end) is built here from a saved
folder's images with a version-2 manifest written from docs/format.md,
and tests/data/v1-folder (written by the pre-node build) is read as it
is.
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
V1 = os.path.join(os.environ["RNGSNAP_SOURCE_ROOT"], "tests", "data", "v1-folder")
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


def failed_lines(out):
    return [l for l in out.splitlines() if "FAILED" in l]


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
    """The MANIFEST as a dict (docs/format.md, versions 1 and 2)."""
    b = open(os.path.join(d, "MANIFEST"), "rb").read()
    version, world, created = struct.unpack_from("<IIq", b, 8)
    m = {"version": version, "world": world, "created": created,
         "id": b[24:40], "forked": b[40:56], "flags": 0, "emulated": 0,
         "files": [], "ranks": [], "apps": []}
    napps, = struct.unpack_from("<I", b, 56)

    def name(pos):
        n, = struct.unpack_from("<H", b, pos)
        return b[pos + 2:pos + 2 + n].decode(), pos + 2 + n

    if version == 1:
        pos = 60
        for r in range(world):
            nm, pos = name(pos)
            size, csum = struct.unpack_from("<QQ", b, pos)
            pos += 16
            m["files"].append([nm, r, 1, size, csum])
            m["ranks"].append([r, 0, size, csum, ""])
    else:
        nfiles, m["flags"], m["emulated"] = struct.unpack_from("<III", b, 60)
        pos = 72
        for _ in range(nfiles):
            nm, pos = name(pos)
            m["files"].append([nm, *struct.unpack_from("<iIQQ", b, pos)])
            pos += 24
        for _ in range(world):
            fi, off, ln, csum, cl = struct.unpack_from("<IQQQH", b, pos)
            m["ranks"].append([fi, off, ln, csum, b[pos + 30:pos + 30 + cl].decode()])
            pos += 30 + cl
    for _ in range(napps):
        nm, pos = name(pos)
        csum, = struct.unpack_from("<Q", b, pos)
        m["apps"].append([nm, csum, b[pos + 8]])
        pos += 9
    assert pos + 8 == len(b), "manifest layout"
    return m


def write_manifest(d, m):
    """Write m as a version-2 MANIFEST (file names as given)."""
    b = bytearray(b"RSNPMAN\0")
    b += struct.pack("<IIq", 2, m["world"], m["created"]) + m["id"] + m["forked"]
    b += struct.pack("<IIII", len(m["apps"]), len(m["files"]), m["flags"],
                     m["emulated"])
    for nm, first, count, size, csum in m["files"]:
        b += struct.pack("<H", len(nm)) + nm.encode()
        b += struct.pack("<iIQQ", first, count, size, csum)
    for fi, off, ln, csum, coords in m["ranks"]:
        b += struct.pack("<IQQQH", fi, off, ln, csum, len(coords)) + coords.encode()
    for nm, csum, same in m["apps"]:
        b += struct.pack("<H", len(nm)) + nm.encode() + struct.pack("<QB", csum, same)
    b += struct.pack("<Q", xxh3(bytes(b)))
    open(os.path.join(d, "MANIFEST"), "wb").write(bytes(b))


def node_folder(src, dst, per_node):
    """dst: src's rank images, per_node to a node-NNNNN file (the last
    node may hold fewer), with a version-2 manifest recording emulated
    nodes of per_node and coordinates dp=r//2,tp=r%2.  Returns the
    manifest written."""
    m = read_manifest(src)
    hexid = m["id"].hex()
    imgs = []
    for fi, off, ln, _, _ in m["ranks"]:
        data = open(os.path.join(src, m["files"][fi][0]), "rb").read()
        imgs.append(data[off:off + ln])
    os.mkdir(dst)
    files, ranks = [], []
    for node, first in enumerate(range(0, m["world"], per_node)):
        mine = imgs[first:first + per_node]
        data = b"".join(mine)
        nm = f"node-{first:05d}.{hexid}.rngsnap"
        open(os.path.join(dst, nm), "wb").write(data)
        files.append([nm, first, len(mine), len(data), xxh3(data)])
        off = 0
        for k, img in enumerate(mine):
            r = first + k
            ranks.append([node, off, len(img), xxh3(img), f"dp={r // 2},tp={r % 2}"])
            off += len(img)
    n = dict(m, version=2, flags=0, emulated=per_node, files=files, ranks=ranks)
    write_manifest(dst, n)
    return n


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
            check(f"{d}: ok ({n} files, {n} ranks, every checksum verified)" in out
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
                  and v["forked_from"] is None and v["format_version"] == 2
                  and v["emulated_ranks_per_node"] == 0,
                  f"verify --json {n} ranks: dir, ok, world size, id, "
                  "no fork", out)
            check([[f["name"], f["first_rank"], f["rank_count"], f["ok"]]
                   for f in v["files"]] == [[files[r], r, 1, True]
                                            for r in range(n)] and
                  all(f["size"] == os.path.getsize(os.path.join(d, f["name"]))
                      and f["checksum"] == "%016x" % xxh3(open(
                          os.path.join(d, f["name"]), "rb").read())
                      for f in v["files"]),
                  f"verify --json {n} ranks: one file per rank (the "
                  "RNGSNAP_SAVE_PER_RANK_FILES layout the save writes for "
                  "now), its size and XXH3-64", out)
            check([r["rank"] for r in v["ranks"]] == list(range(n)) and
                  [r["file"] for r in v["ranks"]] == files and
                  all(r["offset"] == 0 and r["coords"] is None
                      for r in v["ranks"]) and
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
        check(len(bad) == 2 and
              bad[0].startswith(f"  file {files[2]} FAILED: {d}/{files[2]}: XXH3-64")
              and bad[1].startswith(f"  rank 2: {files[2]} FAILED")
              and f"(rank 2's file): XXH3-64" in bad[1]
              and f"{d}: 1 of 4 files and 1 of 4 ranks failed" in out
              and "rank 2" in err and files[2] in err,
              "a flipped byte in rank 2's file: the file, then rank 2, "
              "named, exit 1, the other ranks ok", out + err)
        rc, out, err = expect_rc(1, "verify", "--json", d)
        v = parse("verify --json, flipped rank 2", out)
        if v:
            r2 = v["ranks"][2]
            check(v["ok"] is False and r2["ok"] is False and
                  r2["error_code"] == "RNGSNAP_E_CORRUPT" and
                  files[2] in r2["error"] and "rank 2" in r2["error"] and
                  [r["ok"] for r in v["ranks"]] == [True, True, False, True]
                  and [f["ok"] for f in v["files"]] == [True, True, False, True]
                  and v["files"][2]["error_code"] == "RNGSNAP_E_CORRUPT",
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
                  and v["files"][1]["error_code"] == "RNGSNAP_E_IO"
                  and "cannot open" in v["files"][1]["error"]
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
        m = read_manifest(good)
        d = os.path.join(tmp, "swap")
        shutil.copytree(good, d)
        # rank 0's slot names rank 0's file, whose bytes are rank 1's.
        shutil.copy(os.path.join(good, files[1]), os.path.join(d, files[0]))
        data = open(os.path.join(d, files[0]), "rb").read()
        m["files"][0][3:] = [len(data), xxh3(data)]
        m["ranks"][0][2:4] = [len(data), xxh3(data)]
        write_manifest(d, m)
        rc, out, err = expect_rc(1, "verify", d)
        check(f"rank 0: {d}/{files[0]} records rank 1 of world size 4, but "
              "the manifest lists it as rank 0 of 4" in out and
              "RNGSNAP_E_MISMATCH" in err and len(RANK_OK.findall(out)) == 3,
              "rank 1's file in rank 0's slot (manifest rewritten to match): "
              "the header's rank is checked", out + err)
        m = read_manifest(good)
        d = os.path.join(tmp, "apps")
        shutil.copytree(good, d)
        for a in m["apps"]:
            a[2] = 1       # test.rank claimed identical on all ranks
        write_manifest(d, m)
        rc, out, err = expect_rc(1, "verify", "--json", d)
        v = parse("verify --json, forged app record", out)
        check(v is not None and [r["ok"] for r in v["ranks"]] ==
              [True, False, False, False] and
              all("app state 'test.rank'" in r["error"]
                  for r in v["ranks"][1:]),
              "an app state recorded identical on all ranks that is not: "
              "ranks 1-3 named", out)

        verify_nodes(tmp, good)
        verify_v1(tmp)


def verify_nodes(tmp, good):
    """A node-layout folder (two ranks to a file, emulated): every file
    whole and every image checked; damage named by file and by rank."""
    nd = os.path.join(tmp, "nodes")
    nm = node_folder(good, nd, 2)
    nf = [f[0] for f in nm["files"]]
    rc, out, err = expect_rc(0, "verify", nd)
    check(f"{nd}: ok (2 files, 4 ranks, every checksum verified)" in out and
          len(RANK_OK.findall(out)) == 4 and err == "" and
          all(f"  file {f} ok (ranks {2 * i}-{2 * i + 1}, {nm['files'][i][3]} "
              f"bytes, XXH3-64 {nm['files'][i][4]:016x} as recorded)" in out
              for i, f in enumerate(nf)) and
          f"  rank 3: {nf[1]} ok (5 sections, {nm['ranks'][3][2]} bytes at "
          f"offset {nm['ranks'][3][1]}, " in out,
          "verify a node-layout folder: 2 files and 4 images ok", out + err)
    stray = f"node-00000.{'7' * 32}.rngsnap"
    open(os.path.join(nd, stray), "wb").close()
    rc, out, err = expect_rc(0, "verify", "--json", nd)
    v = parse("verify --json, node layout", out)
    check(v is not None and v["ok"] and v["format_version"] == 2 and
          v["emulated_ranks_per_node"] == 2 and
          [[f["name"], f["first_rank"], f["rank_count"], f["size"],
            int(f["checksum"], 16), f["ok"]] for f in v["files"]] ==
          [f + [True] for f in nm["files"]] and
          [[r["file"], r["offset"], r["size"], int(r["checksum"], 16),
            r["coords"], r["ok"]] for r in v["ranks"]] ==
          [[nf[fi], off, ln, cs, c, True] for fi, off, ln, cs, c in nm["ranks"]]
          and v["other_files"] == [stray],
          "verify --json, node layout: the files, each rank's file, offset, "
          "length and coordinates as written; another id's node file is "
          "another file", out)
    os.unlink(os.path.join(nd, stray))

    # A flipped byte inside rank 3's image, in node-00002.
    d = os.path.join(tmp, "nflip")
    shutil.copytree(nd, d)
    off3 = nm["ranks"][3][1]
    flip(os.path.join(d, nf[1]), off3 + 100)
    rc, out, err = expect_rc(1, "verify", d)
    bad = failed_lines(out)
    check(len(bad) == 2 and
          bad[0].startswith(f"  file {nf[1]} FAILED: {d}/{nf[1]}: XXH3-64") and
          bad[1].startswith(f"  rank 3: {nf[1]} FAILED: rank 3: {d}/{nf[1]} "
                            f"(rank 3's image at offset {off3}): XXH3-64") and
          f"{d}: 1 of 2 files and 1 of 4 ranks failed" in out and
          len(RANK_OK.findall(out)) == 3 and "rank 3" in err,
          "a flipped byte in rank 3's image: its node file and rank 3 "
          "named, ranks 0-2 ok, exit 1", out + err)
    # The same node file one byte short: its size named, both its ranks.
    d = os.path.join(tmp, "ncut")
    shutil.copytree(nd, d)
    p = os.path.join(d, nf[0])
    data = open(p, "rb").read()
    open(p, "wb").write(data[:-1])
    rc, out, err = expect_rc(1, "verify", "--json", d)
    v = parse("verify --json, a node file cut short", out)
    want = (f"{d}/{nf[0]}: {len(data) - 1} bytes, the manifest records "
            f"{len(data)}")
    check(v is not None and v["files"][0]["error"].startswith(want) and
          [f["ok"] for f in v["files"]] == [False, True] and
          [r["ok"] for r in v["ranks"]] == [False, False, True, True] and
          all(want in r["error"] and r["error_code"] == "RNGSNAP_E_CORRUPT"
              for r in v["ranks"][:2]),
          "a node file one byte short: the file and its two ranks refused "
          "naming both sizes, the other node's ranks ok", out)
    # Flipped bytes of the version-2 MANIFEST: one in every 7, so that
    # every field of the header and every record gets one (ranks-manifest
    # flips every bit of every byte in-process, without a run each).
    d = os.path.join(tmp, "nman")
    shutil.copytree(nd, d)
    mp = os.path.join(d, "MANIFEST")
    man = open(mp, "rb").read()
    first = ""
    at = list(range(0, len(man), 7))
    for i in at:
        open(mp, "wb").write(man[:i] + bytes([man[i] ^ 0x04]) + man[i + 1:])
        rc, out, err = run("verify", d)
        if rc != 1 or mp not in err or "RNGSNAP_E_CORRUPT" not in err:
            first = first or f"flip at {i}: rc={rc} {out} {err}"
    check(not first, f"verify refuses each of {len(at)} byte flips (one in "
          f"7 of {len(man)} bytes) of a node folder's version-2 MANIFEST, "
          "naming it", first)
    # A layout with a gap, under a valid checksum: named by rank.
    m = read_manifest(nd)
    m["ranks"][1][1] += 1
    write_manifest(d, m)
    rc, out, err = expect_rc(1, "verify", d)
    check(f"{mp}: rank 1: offset {m['ranks'][1][1]}, expected "
          f"{m['ranks'][1][1] - 1} (images lie end to end" in err,
          "a manifest whose rank 1 leaves a gap: refused naming the rank and "
          "the field", err)


def verify_v1(tmp):
    """tests/data/v1-folder, written by the pre-node build, as it is."""
    m = read_manifest(V1)
    names = [f[0] for f in m["files"]]
    rc, out, err = expect_rc(0, "verify", V1)
    check(f"{V1}: manifest ok (format 1, checkpoint {m['id'].hex()}, world "
          "size 4, 4 files, 1 app states)" in out and
          f"{V1}: ok (4 files, 4 ranks, every checksum verified)" in out and
          len(RANK_OK.findall(out)) == 4,
          "verify v1-folder: format 1, 4 files and 4 ranks ok", out + err)
    rc, out, err = expect_rc(0, "verify", "--json", V1)
    v = parse("verify --json v1-folder", out)
    check(v is not None and v["format_version"] == 1 and
          v["emulated_ranks_per_node"] == 0 and
          [f["name"] for f in v["files"]] == names ==
          [f"rank-{r:05d}.{m['id'].hex()}.rngsnap" for r in range(4)] and
          [(r["file"], r["offset"], r["coords"]) for r in v["ranks"]] ==
          [(n, 0, None) for n in names],
          "verify --json v1-folder: one file per rank, offset 0, no "
          "coordinates", out)
    d = os.path.join(tmp, "v1flip")
    shutil.copytree(V1, d)
    flip(os.path.join(d, names[1]), 200)
    rc, out, err = expect_rc(1, "verify", d)
    bad = failed_lines(out)
    check(len(bad) == 2 and names[1] in bad[0] and
          bad[1].startswith(f"  rank 1: {names[1]} FAILED") and
          "(rank 1's file): XXH3-64" in bad[1],
          "a flipped byte in a v1 folder's rank 1 file: the file and rank 1 "
          "named", out)


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
        inspect_nodes(tmp, os.path.join(tmp, "w4"))
        inspect_v1()
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


def inspect_nodes(tmp, src):
    """src's images, three to a node file (files of 3 and 1 ranks): the
    same sections, shown with their file, offset and coordinates."""
    nd = os.path.join(tmp, "nodes")
    nm = node_folder(src, nd, 3)
    nf = [f[0] for f in nm["files"]]
    _, out, _ = run("inspect", "--json", src)
    pv = json.loads(out)
    rc, out, err = expect_rc(0, "inspect", "--json", nd)
    v = parse("inspect --json, node layout", out)
    if not v:
        return
    check(v["format_version"] == 2 and v["emulated_ranks_per_node"] == 3 and
          [[f["name"], f["first_rank"], f["rank_count"], f["size"],
            int(f["checksum"], 16)] for f in v["files"]] == nm["files"],
          "inspect --json, node layout: the files as written", out[:2000])
    for r, rk in enumerate(v["ranks"]):
        fi, off, ln, cs, coords = nm["ranks"][r]
        where = (f"{nd}/{nf[fi]} (rank {r}'s image at offset {off})" if fi == 0
                 else f"{nd}/{nf[fi]}")
        check([rk["file"], rk["offset"], rk["size"], int(rk["checksum"], 16),
               rk["coords"]] == [nf[fi], off, ln, cs, coords] and
              rk["inspect"]["file"] == where and
              rk["inspect"]["sections"] == pv["ranks"][r]["inspect"]["sections"]
              and rk["inspect"]["header"]["rank"] == r,
              f"inspect --json, node layout, rank {r}: its file, offset, "
              "coordinates, and the per-rank folder's sections",
              json.dumps(rk)[:1500])
    rc, out, err = expect_rc(0, "inspect", nd)
    f0 = nm["files"][0]
    r1 = nm["ranks"][1]
    check("manifest:        format 2, checksum ok" in out and
          "files:           2, one per node; emulated nodes "
          "(RNGSNAP_RANKS_PER_NODE=3 at save, a test aid)" in out and
          f"  {nf[0]}  ranks 0-2, {f0[3]} bytes, XXH3-64 {f0[4]:016x}" in out and
          f"  {nf[1]}  rank 3, " in out and
          f"== rank 1 of 4: {nf[0]} ({r1[2]} bytes at offset {r1[1]}, "
          f"XXH3-64 {r1[3]:016x}) ==\ncoordinates:     dp=0,tp=1\n" in out,
          "inspect, node layout: format, files, emulated nodes, each rank's "
          "place and coordinates", out[:3000])
    rc, out, err = expect_rc(0, "inspect", src)
    check("files:           4, one per rank\n" in out and
          "emulated" not in out and "coordinates:     -" in out,
          "inspect, per-rank layout: no emulated nodes, no coordinates",
          out[:1500])


def inspect_v1():
    """tests/data/v1-folder, as written by the pre-node build."""
    rc, out, err = expect_rc(0, "inspect", "--json", V1)
    v = parse("inspect --json v1-folder", out)
    check(v is not None and v["format_version"] == 1 and
          len(v["files"]) == 4 and
          all(rk["inspect"]["header"]["rank"] == r and rk["offset"] == 0 and
              rk["inspect"]["file"] == os.path.join(V1, rk["file"])
              for r, rk in enumerate(v["ranks"])) and
          v["apps"][0]["name"] == "app.step",
          "inspect --json v1-folder: format 1, 4 ranks shown", out[:2000])
    rc, out, err = expect_rc(0, "inspect", V1)
    check("manifest:        format 1, checksum ok" in out and
          "files:           4, one per rank" in out,
          "inspect v1-folder text: format 1, one file per rank", out[:1500])


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
        # The same images laid out in node files compare rank by rank.
        an = os.path.join(tmp, "a-nodes")
        node_folder(a, an, 2)
        rc, out, err = expect_rc(0, "diff", a, an)
        check("0 of 4 ranks differ" in out,
              "diff of a folder and its images in node files: identical", out)
        cn = os.path.join(tmp, "c-nodes")
        node_folder(c, cn, 4)
        rc, out, err = expect_rc(1, "diff", an, cn)
        check("1 of 4 ranks differ: rank 2" in out,
              "diff of two node-layout folders: rank 2 differs", out)
        v1n = os.path.join(tmp, "v1-nodes")
        node_folder(V1, v1n, 3)
        rc, out, err = expect_rc(0, "diff", "--json", V1, v1n)
        v = parse("diff --json v1-folder and its node layout", out)
        check(v is not None and v["identical"] is True and
              v["world_size"] == {"a": 4, "b": 4},
              "diff of v1-folder (format 1) and its images in node files "
              "(format 2): identical", out[:2000])
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
