"""check.py WHEEL: what a repaired rngsnap wheel must hold and need.

- the files: the extension, the five plugins, rng.ini, the rngsnap command
  (executable), __main__.py, the console script;
- every ELF file (extension, plugins, command, grafted libraries): each
  DT_NEEDED is found through its own RUNPATH/RPATH inside the wheel, or is
  a system library of the wheel's manylinux policy (auditwheel's own
  manylinux-policy.json), or is the dynamic loader; no RUNPATH leaves the
  wheel;
- no vendor runtime is needed or grafted: the device plugins dlopen them at
  run time (libcuda, Level Zero, SynapseAI, CANN), which auditwheel cannot
  see, so a wheel that carried or needed one would be wrong everywhere else.
- `auditwheel show` says the wheel is consistent with the tag it carries.
Prints one line per ELF file (what it needs, where each was found) and
exits 1 naming every problem."""
import json
import os
import re
import subprocess
import sys
import tempfile
import zipfile
from importlib import resources

from elftools.elf.dynamic import DynamicSection
from elftools.elf.elffile import ELFFile

PLUGINS = ("cpu", "cuda", "hpu", "xpu", "npu")
# The runtimes the device plugins open with dlopen (plugins/*/): never
# needed at load, never in the wheel.
# The .library names of plugins/{cuda,xpu,hpu,npu}/*.c, and the CUDA
# runtime, which the cuda plugin links statically.
VENDOR = re.compile(r"^lib(cuda|cudart|ze_loader|Synapse|ascendcl)[-.]")
# The ELF interpreter is named by the extension (glibc's libc needs it);
# it is the system's by definition, as auditwheel treats it.
LOADER = re.compile(r"^ld-linux[-.\w]*\.so\.\d+$")


def policy_whitelist(tag):
    """lib_whitelist of the manylinux policy called `tag` (no arch)."""
    text = resources.files("auditwheel.policy").joinpath(
        "manylinux-policy.json").read_text()
    for p in json.loads(text):
        if p["name"] == tag or tag in p.get("aliases", []):
            return set(p["lib_whitelist"])
    raise SystemExit("check.py: auditwheel has no policy %s" % tag)


def elf_needs(path):
    """(DT_NEEDED list, RUNPATH/RPATH dirs) of an ELF file, or None."""
    with open(path, "rb") as f:
        if f.read(4) != b"\x7fELF":
            return None
        f.seek(0)
        elf = ELFFile(f)
        needed, runpath = [], []
        for sec in elf.iter_sections():
            if not isinstance(sec, DynamicSection):
                continue
            for tag in sec.iter_tags():
                if tag.entry.d_tag == "DT_NEEDED":
                    needed.append(tag.needed)
                elif tag.entry.d_tag == "DT_RUNPATH":
                    runpath += tag.runpath.split(":")
                elif tag.entry.d_tag == "DT_RPATH":
                    runpath += tag.rpath.split(":")
        return needed, [d for d in runpath if d]


def main(wheel):
    problems = []
    name = os.path.basename(wheel)
    # rngsnap-0.1.0-cp311-cp311-manylinux_2_34_x86_64[.manylinux_...].whl
    plats = name[:-4].split("-")[-1].split(".")
    tags = [re.sub(r"_(x86_64|aarch64|ppc64le|s390x|i686|armv7l)$", "", p)
            for p in plats if p.startswith("manylinux_")]
    if not tags:
        return ["%s carries no manylinux_X_Y tag (%s)" % (name, ".".join(plats))]
    allowed = policy_whitelist(tags[-1])  # the newest tag: the widest list

    show = subprocess.run([os.path.join(os.path.dirname(sys.executable),
                                        "auditwheel"), "show", wheel],
                          capture_output=True, text=True)
    said = re.search(r"consistent with the following platform tag:\s*\"?"
                     r"([\w.]+)", " ".join(show.stdout.split()))
    if show.returncode != 0 or not said:
        problems.append("auditwheel show: no platform tag (%s)"
                        % (show.stdout + show.stderr).strip()[-300:])
    elif said.group(1) not in plats:
        problems.append("auditwheel show says %s, the file name %s"
                        % (said.group(1), ".".join(plats)))

    with tempfile.TemporaryDirectory() as root, zipfile.ZipFile(wheel) as z:
        z.extractall(root)
        modes = {i.filename: (i.external_attr >> 16) & 0o777
                 for i in z.infolist()}
        names = set(modes)
        want = ["rngsnap/rng.ini", "rngsnap/__main__.py", "rngsnap/_bin/rngsnap"]
        want += ["rngsnap/plugins/rngsnap_%s.so" % p for p in PLUGINS]
        for w in want:
            if w not in names:
                problems.append("%s is missing from the wheel" % w)
        if not any(re.match(r"rngsnap/_rngsnap\.cpython-.*\.so$", n)
                   for n in names):
            problems.append("the extension rngsnap/_rngsnap.*.so is missing")
        if modes.get("rngsnap/_bin/rngsnap", 0) & 0o111 != 0o111:
            problems.append("rngsnap/_bin/rngsnap is not executable in the "
                            "wheel (mode %04o)" % modes.get("rngsnap/_bin/rngsnap", 0))
        eps = [n for n in names if n.endswith(".dist-info/entry_points.txt")]
        ep = z.read(eps[0]).decode() if eps else ""
        if not re.search(r"^rngsnap\s*=\s*rngsnap\.__main__:main\s*$", ep, re.M):
            problems.append("no console script rngsnap = rngsnap.__main__:main"
                            " in entry_points.txt")

        for rel in sorted(names):
            path = os.path.join(root, rel)
            if not os.path.isfile(path):
                continue
            got = elf_needs(path)
            if got is None:
                continue
            needed, runpath = got
            where = []
            dirs = []
            for d in runpath:
                real = os.path.realpath(d.replace("$ORIGIN", os.path.dirname(path)))
                if not (real + "/").startswith(os.path.realpath(root) + "/"):
                    problems.append("%s: RUNPATH %s leaves the wheel" % (rel, d))
                dirs.append(real)
            for lib in needed:
                inside = [d for d in dirs if os.path.isfile(os.path.join(d, lib))]
                if VENDOR.match(lib):
                    problems.append("%s needs the vendor runtime %s at load "
                                    "(it must dlopen it)" % (rel, lib))
                if inside:
                    where.append("%s (wheel: %s)" % (lib, os.path.relpath(
                        os.path.join(inside[0], lib), root)))
                elif lib in allowed:
                    where.append("%s (policy)" % lib)
                elif LOADER.match(lib):
                    where.append("%s (loader)" % lib)
                else:
                    where.append("%s (UNRESOLVED)" % lib)
                    problems.append("%s needs %s: neither inside the wheel "
                                    "through its RUNPATH %s nor a system "
                                    "library of %s" % (rel, lib, runpath or
                                                       "(none)", tags[-1]))
            if rel.startswith("rngsnap.libs/") and VENDOR.match(os.path.basename(rel)):
                problems.append("vendor runtime grafted into the wheel: %s" % rel)
            print("check: %s needs %s" % (rel, ", ".join(where) or "nothing"))
    return problems


if __name__ == "__main__":
    if len(sys.argv) != 2:
        raise SystemExit("usage: check.py WHEEL")
    found = main(sys.argv[1])
    for p in found:
        print("check: FAIL: " + p)
    print("check: %s: %s" % (os.path.basename(sys.argv[1]),
                             "OK" if not found else "%d problems" % len(found)))
    sys.exit(1 if found else 0)
