"""The wheel, installed alone, run from a folder outside the sources
(smoke.sh; scripts/wheel/cleanroom.sh runs it in the clean room too).
Prints one line per check and exits 1 at the first that fails."""
import json
import os
import pwd
import shutil
import subprocess
import sys
import tempfile

import rngsnap

BIN = os.path.dirname(sys.executable)
PKG = os.path.dirname(os.path.abspath(rngsnap.__file__))
PLUGINS = os.path.join(PKG, "plugins")


def check(ok, what):
    print("smoke: %s: %s" % ("ok" if ok else "FAIL", what))
    if not ok:
        sys.exit(1)


def run(*argv, env=None):
    r = subprocess.run(list(argv), capture_output=True, text=True, env=env)
    return r.returncode, r.stdout, r.stderr


def both(*args, env=None):
    """The console script and `python -m rngsnap`: the same rc and output."""
    a = run(os.path.join(BIN, "rngsnap"), *args, env=env)
    b = run(sys.executable, "-m", "rngsnap", *args, env=env)
    check(a == b, "rngsnap %s and python -m rngsnap %s: rc %d, the same "
          "output" % (" ".join(args), " ".join(args), a[0]))
    return a


def refused(path, mode, what):
    """Context() and the command refuse a plugin folder or file of mode."""
    old = os.stat(path).st_mode & 0o7777
    os.chmod(path, mode)
    try:
        cpu = os.path.realpath(os.path.join(PLUGINS, "rngsnap_cpu.so"))
        owner = "%d (%s)" % (os.geteuid(), pwd.getpwuid(os.geteuid()).pw_name)
        core = ("plugin %s for [backend.cpu] refused: %s %s (mode %04o, owner "
                "%s) is writable by its group, who could change the code this "
                "process runs; fix: chmod go-w %s"
                % (cpu, what, os.path.realpath(path), mode, owner,
                   os.path.realpath(path)))
        try:
            rngsnap.Context()
            got = None
        except rngsnap.PluginError as e:
            got = str(e)
        ini = os.path.join(PKG, "rng.ini")
        check(got == "%s (no config given, so %s is the rng.ini installed "
              "inside the package; pass config= or set RNGSNAP_CONFIG to use "
              "another)" % (core, ini),
              "Context() refuses %s of mode %04o: %s" % (what, mode, got))
        rc, out, err = both("backends")
        check(rc != 0 and core in err, "rngsnap backends refuses it too "
              "(rc %d): %s" % (rc, err.strip().splitlines()[0] if err else ""))
    finally:
        os.chmod(path, old)


def main():
    cfg, origin = rngsnap.find_config()
    check(origin == "package" and cfg == os.path.join(PKG, "rng.ini"),
          "find_config() -> %s (%s)" % (cfg, origin))
    work = tempfile.mkdtemp(prefix="rngsnap-smoke-")
    ck = os.path.join(work, "ck.rngsnap")
    with rngsnap.Context() as ctx:
        ctx.seed_all(2024)
        s = ctx.stream("cpu", 0, "dropout")
        s.generate("u64", 5)
        ctx.save(ck)
        after = s.generate("f64", 4).tolist()
    with rngsnap.Context(resume=True) as ctx:
        ctx.load(ck)
        again = ctx.stream("cpu", 0, "dropout").generate("f64", 4).tolist()
    check(after == again, "seed, draw, save, load: the same next draws %s"
          % after[:2])

    rc, out, err = both("verify", ck)
    check(rc == 0, "rngsnap verify %s: rc 0 (%s)" % (ck, out.strip().splitlines()[-1]))
    rc, out, err = both("verify", os.path.join(work, "absent.rngsnap"))
    check(rc != 0, "rngsnap verify of a missing file: rc %d, %s"
          % (rc, err.strip().splitlines()[0]))
    rc, out, err = both("backends", "--json")
    j = json.loads(out)
    paths = {b["name"]: b["plugin_path"] for b in j["backends"]}
    check(rc == 0 and j["config_origin"] == "package"
          and paths["cpu"] == os.path.realpath(os.path.join(PLUGINS, "rngsnap_cpu.so")),
          "rngsnap backends: config %s (%s), cpu plugin %s"
          % (j["config"], j["config_origin"], paths["cpu"]))
    rc, out, err = both("inspect", ck)
    check(rc == 0, "rngsnap inspect: rc 0")
    rc, out, err = both("--help")
    check(rc == 0 and os.path.join(PKG, "_bin", "..") not in out
          and os.path.realpath(os.path.join(PKG, "rng.ini")) in out,
          "rngsnap --help names the package's rng.ini")

    a = run(os.path.join(BIN, "rngsnap"), "demo")
    b = run(sys.executable, "-m", "rngsnap", "demo")
    last = "resume is bit-exact on 3 of 3 streams"
    check(a[0] == b[0] == 0 and a[1].splitlines()[-1] == last
          and b[1].splitlines()[-1] == last,
          "rngsnap demo and python -m rngsnap demo: rc 0, '%s'" % last)

    # Trust rules hold in site-packages as in any plugin folder.
    refused(PLUGINS, 0o775, "its folder")
    refused(os.path.join(PLUGINS, "rngsnap_cpu.so"), 0o775, "the file")

    # A user's own plugin folder, searched before the package's, as
    # docs/rng-ini.md says: RNGSNAP_PLUGIN_PATH or plugin_dir with the
    # entry @builtin, which is the package's plugins folder in the wheel.
    mine = os.path.join(work, "my-plugins")
    os.mkdir(mine, 0o755)
    shutil.copy(os.path.join(PLUGINS, "rngsnap_cpu.so"), mine)
    env = dict(os.environ, RNGSNAP_PLUGIN_PATH=mine + ":@builtin")
    rc, out, err = both("backends", "--json", env=env)
    paths = {b["name"]: b["plugin_path"] for b in json.loads(out)["backends"]}
    check(rc == 0 and paths["cpu"] == os.path.realpath(os.path.join(mine, "rngsnap_cpu.so")),
          "RNGSNAP_PLUGIN_PATH=MINE:@builtin: cpu from %s" % paths["cpu"])
    ini = os.path.join(work, "my-rng.ini")
    with open(ini, "w") as f:
        f.write("[rngsnap]\nplugin_dir = my-plugins:@builtin\n"
                "[backend.cpu]\nplugin = rngsnap_cpu\nrequired = true\n"
                "streams = default\n"
                "[backend.hpu]\nplugin = rngsnap_hpu\nrequired = false\n"
                "emulate_devices = 2\nstreams = default\n")
    rc, out, err = both("-c", ini, "backends", "--json")
    paths = {b["name"]: b["plugin_path"] for b in json.loads(out)["backends"]}
    with rngsnap.Context(config=ini) as ctx:
        ctx.seed_all(5)
        hpu = ctx.stream("hpu", 1, "default").generate("u32", 2).tolist()
    check(rc == 0 and paths["cpu"] == os.path.realpath(os.path.join(mine, "rngsnap_cpu.so"))
          and paths["hpu"] == os.path.realpath(os.path.join(PLUGINS, "rngsnap_hpu.so")),
          "plugin_dir = my-plugins:@builtin: cpu from %s, hpu from %s, "
          "emulated hpu 1 draws %s" % (paths["cpu"], paths["hpu"], hpu))
    # Without @builtin the package's plugins are left out, and the
    # message says where they are and how to keep them.
    with open(ini, "w") as f:
        f.write("[rngsnap]\nplugin_dir = my-plugins\n"
                "[backend.hpu]\nplugin = rngsnap_hpu\nrequired = true\n"
                "emulate_devices = 1\nstreams = default\n")
    try:
        rngsnap.Context(config=ini)
        got = None
    except rngsnap.PluginError as e:
        got = str(e)
    hint = ("; rngsnap_hpu is in the built-in plugin folder %s (the plugins "
            "folder of the rngsnap Python package), a folder plugin_dir "
            "leaves out: add @builtin to plugin_dir to search it too"
            % os.path.realpath(PLUGINS))
    check(got is not None and hint in got,
          "plugin_dir without @builtin: PluginError ending '%s'"
          % (got[got.find("; rngsnap_hpu is"):] if got else None))
    shutil.rmtree(work)
    print("smoke: OK")


if __name__ == "__main__":
    main()
