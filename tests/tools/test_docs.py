#!/usr/bin/env python3
"""test_docs.py - the docs stay true to the code.

- docs/user-guide.md embeds docs/examples/train.c verbatim;
- docs/rng-ini.md documents every key the core's rng.ini parser and the
  built-in plugins accept (read from the sources, not from a list here);
- every subcommand of `rngsnap --help` is described in the user guide.
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

print(f"{len(fails)} failure(s)")
sys.exit(1 if fails else 0)
