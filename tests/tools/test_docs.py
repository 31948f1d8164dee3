#!/usr/bin/env python3
"""test_docs.py - the docs stay true to the code.

- docs/user-guide.md embeds docs/examples/train.c verbatim;
- docs/rng-ini.md documents every key the core's rng.ini parser and the
  built-in plugins accept (read from the sources, not from a list here);
- every subcommand of `rngsnap --help` is described in the user guide;
- every relative link of README.md and docs/*.md resolves;
- the README's two quickstart commands name scripts that exist;
- every ```c block of docs/plugin-guide.md and docs/user-guide.md compiles
  against include/ with -Wall -Wextra -Werror, except a block preceded by
  the line `<!-- fragment -->` (an excerpt; the marker is explained in the
  plugin guide's introduction);
- the plugin guide's `switch (dist)` example has the default: that
  refuses a distribution with host->error and RNGSNAP_E_UNAVAILABLE, and
  fails to build without it (rngsnap_dist grows);
- RNGSNAP_HOST_HAS honours the host table's struct_size and a NULL member;
- the plugin guide's thread contract names every function of the table;
- the user guide's trace of rngsnap_state_ops calls is what the library
  does (tests/tools/state_ops_trace.c prints it);
- the plugin guide's two option-error messages (the core's for an unknown
  key, the plugin's behind the core's prefix for a bad value) are what
  `rngsnap backends` reports, with their RNGSNAP_E_CONFIG code.

usage: test_docs.py RNGSNAP STATE_OPS_TRACE CC [CC ARGS...]
       (CC: the project's compiler)
"""
import json
import os
import re
import subprocess
import sys
import tempfile

src = os.environ["RNGSNAP_SOURCE_ROOT"]
rngsnap = sys.argv[1]
trace_exe = sys.argv[2]
cc = sys.argv[3:] or ["cc"]
fails = []


def check(cond, what, detail=""):
    print(("ok     " if cond else "FAILED ") + what)
    if not cond:
        fails.append(what)
        if detail:
            print("   " + detail)


def read(*p):
    with open(os.path.join(src, *p)) as f:
        return f.read()


guide = read("docs", "user-guide.md")
m = re.search(r"<!-- BEGIN train.c -->\n```c\n(.*?)```\n<!-- END train.c -->",
              guide, re.S)
check(m is not None and m.group(1) == read("docs", "examples", "train.c"),
      "user-guide.md embeds docs/examples/train.c verbatim")

ini_doc = read("docs", "rng-ini.md")
documented = set(re.findall(r"^\| `([a-z_]+)` \|", ini_doc, re.M))
keys = set(re.findall(r'strcmp\(name, "([a-z_]+)"\)', read("core", "config.c")))
cpu = read("plugins", "cpu", "cpu.c")
keys |= set(re.findall(r'\{"([a-z_]+)", cpu_parse_', cpu))
dk = read("plugins", "devicekit", "devicekit.c")
kk = re.search(r"dk_known_keys\[\] = \{(.*?)\};", dk, re.S)
if kk:
    keys |= set(re.findall(r'"([a-z_]+)"', kk.group(1)))
check(len(keys) >= 5, f"found the parser's keys in the sources: {sorted(keys)}")
missing = sorted(keys - documented)
check(not missing, "rng-ini.md has a row for every key", f"missing: {missing}")

out = subprocess.run([rngsnap, "--help"], capture_output=True, text=True).stdout
cmds = re.findall(r"^  ([a-z][a-z-]*) ", out.split("Commands:")[1].split("Options:")[0], re.M)
check(len(cmds) >= 5, f"rngsnap --help lists commands {cmds}")
for c in cmds:
    check(f"`rngsnap {c}" in guide, f"user guide describes `rngsnap {c}`")

# Every relative link of README.md and docs/*.md names a file that exists
# (and a #section that exists, for links into our own pages).
def anchors(md):
    out = set()
    for h in re.findall(r"^#+ (.*)$", md, re.M):
        a = re.sub(r"[^a-z0-9 _-]", "", h.strip().lower()).replace(" ", "-")
        out.add(a)
    return out

pages = ["README.md"] + ["docs/" + f for f in sorted(os.listdir(os.path.join(src, "docs")))
                         if f.endswith(".md")]
broken = []
for page in pages:
    text = read(page)
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"[a-z]+:", target):
            continue
        path, _, frag = target.partition("#")
        full = os.path.normpath(os.path.join(src, os.path.dirname(page), path)) if path \
            else os.path.join(src, page)
        if not os.path.exists(full):
            broken.append(f"{page}: {target}")
        elif frag and full.endswith(".md") and frag not in anchors(open(full).read()):
            broken.append(f"{page}: {target} (no such section)")
check(not broken, f"links of {len(pages)} pages resolve", "; ".join(broken))

# The README's two quickstart commands are the scripts that exist.
readme = read("README.md")
for cmd in ("bash scripts/demo.sh", "bash scripts/test.sh"):
    check(f"\n{cmd}\n" in readme and os.path.exists(os.path.join(src, cmd.split()[1])),
          f"README quickstart: {cmd}")


# ---- C in the docs compiles -------------------------------------------

CFLAGS = ["-std=c11", "-D_GNU_SOURCE", "-Wall", "-Wextra", "-Werror", "-O1",
          "-I", os.path.join(src, "include")]


def compile_c(code, run=False):
    """Compile code (and run it when run); (ok, compiler/program output)."""
    with tempfile.TemporaryDirectory() as tmp:
        c = os.path.join(tmp, "block.c")
        exe = os.path.join(tmp, "block")
        with open(c, "w") as f:
            f.write(code)
        args = [c, "-o", exe] if run else ["-c", c, "-o", exe + ".o"]
        p = subprocess.run(cc + CFLAGS + args, capture_output=True, text=True)
        if p.returncode != 0 or not run:
            return p.returncode == 0, p.stderr
        p = subprocess.run([exe], capture_output=True, text=True)
        return p.returncode == 0, p.stdout + p.stderr


def c_blocks(md):
    """(line, code, is_fragment) of every ```c block of md."""
    out = []
    for m in re.finditer(r"^```c\n(.*?)^```$", md, re.M | re.S):
        line = md.count("\n", 0, m.start()) + 1
        before = md[:m.start()].rstrip("\n").rsplit("\n", 1)[-1]
        out.append((line, m.group(1), before.strip() == "<!-- fragment -->"))
    return out


for page in ("docs/plugin-guide.md", "docs/user-guide.md"):
    blocks = c_blocks(read(page))
    compiled = 0
    for line, code, fragment in blocks:
        if fragment:
            continue
        ok, err = compile_c(code)
        compiled += 1
        check(ok, f"{page}:{line}: the C block compiles", err[-3000:])
    check(compiled >= 1 if page.endswith("plugin-guide.md") else True,
          f"{page}: {compiled} of {len(blocks)} C blocks compiled")

# rngsnap_dist grows: the guide's generate example switches on dist with a
# default: that refuses through host->error with RNGSNAP_E_UNAVAILABLE, is
# compiled above, and without its default: does not compile (-Wswitch
# under -Wall -Werror), which is what a plugin author meets as the enum
# grows.
def without_default(code):
    """code with the default: branch of its switch removed (up to the
    brace that closes the switch, at the indentation of `default:`)."""
    lines = code.split("\n")
    for i, line in enumerate(lines):
        if line.strip() == "default:":
            ind = line[:len(line) - len(line.lstrip())]
            for j in range(i + 1, len(lines)):
                if lines[j] == ind + "}":
                    return "\n".join(lines[:i] + lines[j:])
    return None


dist_blocks = [code for _, code, frag in c_blocks(read("docs", "plugin-guide.md"))
               if not frag and "switch (dist)" in code]
dist_ok = len(dist_blocks) == 1 and all(
    w in dist_blocks[0] for w in ("default:", "host->error(",
                                  "return RNGSNAP_E_UNAVAILABLE;"))
check(dist_ok, "plugin-guide.md has one compiled switch (dist) example whose "
      "default: refuses with host->error and RNGSNAP_E_UNAVAILABLE",
      f"{len(dist_blocks)} block(s)")
if dist_ok:
    mutant = without_default(dist_blocks[0])
    ok, err = compile_c(mutant) if mutant else (True, "no default: found")
    check(not ok and "not handled in switch" in err,
          "the guide's switch (dist) without its default: fails to build "
          "with -Wall -Wextra -Werror", err[-2000:])

# RNGSNAP_HOST_HAS: false for a member past struct_size (a core older than
# the plugin's header) and for a NULL member; true otherwise.
ok, out = compile_c(r"""
#include <stdio.h>
#include <rngsnap/backend.h>
static void lg(const rngsnap_host *h, int l, const char *f, ...)
{ (void)h; (void)l; (void)f; }
int main(void)
{
    rngsnap_host h = {0};
    h.struct_size = sizeof h;
    h.log = lg;
    int full = RNGSNAP_HOST_HAS(&h, log);
    h.struct_size = (uint32_t)offsetof(rngsnap_host, log);
    int short_table = RNGSNAP_HOST_HAS(&h, log);
    h.struct_size = sizeof h;
    int null_member = RNGSNAP_HOST_HAS(&h, error);
    printf("%d %d %d\n", full, short_table, null_member);
    return !(full && !short_table && !null_member);
}
""", run=True)
check(ok, "RNGSNAP_HOST_HAS: struct_size and NULL are honoured", out)

# The thread contract covers every function of rngsnap_backend (a member
# appended later needs its rule written down), and the old promise that
# the core serialises every call on a context is gone.
plugin_guide = read("docs", "plugin-guide.md")
backend_h = read("include", "rngsnap", "backend.h")
table = re.search(r"typedef struct rngsnap_backend \{(.*?)\} rngsnap_backend;",
                  backend_h, re.S)
funcs = re.findall(r"\(\*([a-z_]+)\)\(", table.group(1)) if table else []
threads = plugin_guide.split("## Threads", 1)[-1].split("\n## ", 1)[0]
unnamed = [f for f in funcs if f"`{f}`" not in threads]
check(len(funcs) >= 15 and "## Threads" in plugin_guide and not unnamed,
      f"plugin-guide.md's Threads section names all {len(funcs)} table functions",
      f"not named: {unnamed}")
for name, text in (("plugin-guide.md", plugin_guide), ("backend.h", backend_h)):
    check("serialises all calls" not in text and "Calls on one context are "
          "serialised" not in text,
          f"{name} no longer promises that every call on a context is serialised")

# The state_ops call pattern the user guide shows is the library's.
m = re.search(r"<!-- BEGIN state_ops trace -->\n```text\n(.*?)```\n"
              r"<!-- END state_ops trace -->", guide, re.S)
p = subprocess.run([trace_exe, os.path.join(os.environ["RNGSNAP_BUILD_ROOT"],
                                            "config", "rng.ini")],
                   capture_output=True, text=True)
check(m is not None and p.returncode == 0 and m.group(1) == p.stdout,
      "user-guide.md's state_ops trace is what the library calls",
      f"rc={p.returncode}\nlibrary:\n{p.stdout}{p.stderr}\nguide:\n"
      f"{m.group(1) if m else '(no trace block)'}")

# The option-error contract of the plugin guide, shown with the built-in
# hpu plugin: its example lines are the real messages (paths replaced).
plugdir = os.environ["RNGSNAP_PLUGIN_BUILD_DIR"]
for bad_line, what in (("emulate_devices = 1\nemulate_device = 1\n",
                        "an unknown key: the core's message"),
                       ("emulate_devices = x\n",
                        "a bad value: the plugin's FILE:LINE behind the core's prefix")):
    with tempfile.TemporaryDirectory() as tmp:
        ini = os.path.join(tmp, "rng.ini")
        with open(ini, "w") as f:
            f.write(f"[rngsnap]\nplugin_dir = {plugdir}\n[backend.cpu]\n"
                    "plugin = rngsnap_cpu\n[backend.hpu]\nplugin = rngsnap_hpu\n"
                    + bad_line)
        p = subprocess.run([rngsnap, "-c", ini, "backends", "--json"],
                           capture_output=True, text=True)
        try:
            d = json.loads(p.stdout)
        except ValueError:
            d = {}
        msg = d.get("error", "")
        for so in (os.path.join(plugdir, "rngsnap_hpu.so"),
                   os.path.realpath(os.path.join(plugdir, "rngsnap_hpu.so"))):
            msg = msg.replace(so, "/usr/lib/x86_64-linux-gnu/rngsnap-1/rngsnap_hpu.so")
        msg = msg.replace(ini, "/etc/rngsnap/rng.ini")
        check(p.returncode == 2 and d.get("error_code") == "RNGSNAP_E_CONFIG"
              and msg and f"  {msg}\n" in plugin_guide,
              f"plugin-guide.md shows the real RNGSNAP_E_CONFIG message for {what}",
              f"rc={p.returncode} message: {msg!r}")

# rng-ini.md's "A plugin that is not found" example is the real message
# (paths replaced): a typo of the cuda plugin in the built plugin folder.
with tempfile.TemporaryDirectory() as tmp:
    ini = os.path.join(tmp, "rng.ini")
    with open(ini, "w") as f:
        f.write(f"[rngsnap]\nplugin_dir = {plugdir}\n[backend.cpu]\n"
                "plugin = rngsnap_cpu\n\n\n\n\n[backend.cuda]\n"
                "plugin = rngsnap_cdua\n")
    p = subprocess.run([rngsnap, "-c", ini, "backends", "--json"],
                       capture_output=True, text=True)
    try:
        msg = {b["name"]: b for b in json.loads(p.stdout)["backends"]}[
            "cuda"]["reason"]
    except (ValueError, KeyError):
        msg = ""
    for d in (plugdir, os.path.realpath(plugdir)):
        msg = msg.replace(d, "/usr/lib/x86_64-linux-gnu/rngsnap-1")
    msg = msg.replace(ini, "/etc/rngsnap/rng.ini")
    check(p.returncode == 2 and msg and f"\n{msg}\n" in ini_doc,
          "rng-ini.md shows the real message of a plugin typo",
          f"rc={p.returncode} message: {msg!r}")

print(f"{len(fails)} failure(s)")
sys.exit(1 if fails else 0)
