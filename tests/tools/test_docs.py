#!/usr/bin/env python3
"""test_docs.py - the docs stay true to the code.

- docs/user-guide.md embeds docs/examples/train.c verbatim;
- docs/rng-ini.md documents every key the core's rng.ini parser and the
  built-in plugins accept (read from the sources, not from a list here);
- every subcommand of `rngsnap --help` is described in the user guide;
- every relative link of README.md and docs/*.md resolves;
- the README's two quickstart commands name scripts that exist.
"""
import os
import re
import subprocess
import sys

src = os.environ["RNGSNAP_SOURCE_ROOT"]
rngsnap = sys.argv[1]
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
cmds = re.findall(r"^  ([a-z]+) ", out.split("Commands:")[1].split("Options:")[0], re.M)
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

print(f"{len(fails)} failure(s)")
sys.exit(1 if fails else 0)
