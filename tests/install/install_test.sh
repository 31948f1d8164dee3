#!/usr/bin/env bash
# install_test.sh - rngsnap as a user installs and extends it.
#
# Installs the build into a temporary folder (meson install --destdir),
# checks what landed there (library with a SONAME, headers, versioned plugin
# folder, default rng.ini, rngsnap.pc, the rngsnap command), then builds the
# user guide's training loop (the README's and the user guide's own `cc`
# lines, and docs/examples/Makefile) and the minimal plugin OUT OF TREE
# with pkg-config, and runs the programs from that private prefix with no
# LD_LIBRARY_PATH (their rpath finds the library).  It drops the plugin
# into its own folder, lists it in an rng.ini (plugin_dir = that folder
# and the staged plugin folder: @builtin would name the final prefix's,
# not the staged copy), and checks that the new backend is saved and restored (bit-exact resume) with no change to the
# core; that its words, drawn by the library's engine through the host
# table, equal the cpu backend's and cuRAND's reference words; and that
# `rngsnap diff` says how many words apart two of its checkpoints are.
#
# usage: install_test.sh BUILD_ROOT SOURCE_ROOT
set -u
build=$1 src=$2
tmp=$(mktemp -d "${TMPDIR:-/tmp}/rngsnap-install-XXXXXX") && trap 'rm -rf "$tmp"' EXIT
fails=0
ok()   { echo "ok     $*"; }
bad()  { echo "FAILED $*"; fails=$((fails + 1)); }
need() { if "$@" >/dev/null 2>&1; then :; else echo "FAILED (setup) $*"; exit 1; fi; }

# ---- install ------------------------------------------------------------
dest=$tmp/dest
meson install -C "$build" --destdir "$dest" --no-rebuild >"$tmp/install.log" 2>&1 \
  || { cat "$tmp/install.log"; echo "FAILED meson install"; exit 1; }
ok "meson install --destdir"

pc=$(find "$dest" -name rngsnap.pc | head -n1)
[ -n "$pc" ] || { echo "FAILED rngsnap.pc not installed"; exit 1; }
pcdir=$(dirname "$pc")
export PKG_CONFIG_PATH=$pcdir
orig_prefix=$(pkg-config --variable=prefix rngsnap)
prefix=$dest$orig_prefix
# The .pc names the final prefix; point it at the staged copy.
pkgc() { pkg-config --define-variable=prefix="$prefix" "$@" rngsnap; }
cflags=$(pkgc --cflags) libs=$(pkgc --libs)
libdir=$(pkgc --variable=libdir)
plugindir=$(pkgc --variable=plugindir)
sysconfdir=$(pkgc --variable=sysconfdir)
echo "prefix $prefix; libdir $libdir; plugindir $plugindir"
ok "pkg-config finds rngsnap ($(pkgc --modversion))"

# ---- what landed ----------------------------------------------------------
soname=$(readelf -d "$libdir/librngsnap.so" 2>/dev/null | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
if [ -n "$soname" ] && [ -e "$libdir/$soname" ]; then ok "librngsnap has SONAME $soname"; else bad "librngsnap.so has no SONAME (or $libdir/$soname missing)"; fi
# The library exports the rngsnap_* API and nothing else; a plugin exports
# its one entry point.
leaked=$(nm -D --defined-only "$libdir/librngsnap.so" | awk '{print $3}' | grep -v '^rngsnap_' | tr '\n' ' ')
if [ -z "$leaked" ]; then ok "librngsnap exports only rngsnap_*"; else bad "librngsnap exports more than rngsnap_*: $leaked"; fi
plugsyms=$(nm -D --defined-only "$plugindir/rngsnap_cpu.so" | awk '{print $3}' | tr '\n' ' ')
if [ "$plugsyms" = "rngsnap_backend_v1 " ]; then ok "rngsnap_cpu.so exports only rngsnap_backend_v1"; else bad "rngsnap_cpu.so exports: $plugsyms"; fi
for h in rngsnap.h rngsnap/backend.h; do
  if [ -f "$prefix/include/$h" ]; then ok "header $h installed"; else bad "header $h not installed"; fi
done
if [ -f "$plugindir/rngsnap_cpu.so" ]; then ok "cpu plugin in $plugindir"; else bad "no rngsnap_cpu.so in the plugin folder $plugindir"; fi
case "$plugindir" in */rngsnap-[0-9]*) ok "plugin folder is versioned";; *) bad "plugin folder $plugindir is not versioned";; esac
if [ -f "$sysconfdir/rng.ini" ]; then ok "default rng.ini at $sysconfdir/rng.ini"; else bad "no default rng.ini at $sysconfdir/rng.ini (found: $(ls "$sysconfdir" 2>/dev/null | tr '\n' ' '))"; fi
if [ -x "$prefix/bin/rngsnap" ]; then ok "rngsnap command installed"; else bad "rngsnap command not installed in $prefix/bin"; fi
# The command finds its library from any prefix (RUNPATH $ORIGIN/../<libdir>),
# without LD_LIBRARY_PATH or ldconfig: run the staged copy with neither.
if out=$(env -u LD_LIBRARY_PATH "$prefix/bin/rngsnap" --version 2>&1); then ok "installed rngsnap runs without LD_LIBRARY_PATH ($out)"
else bad "installed rngsnap does not run without LD_LIBRARY_PATH: $out"; fi
# Nothing below runs with LD_LIBRARY_PATH: the programs' rpath must find
# the staged library (and only it).
unset LD_LIBRARY_PATH
# `pkg-config` as the docs' lines call it, answering for the staged prefix.
mkdir -p "$tmp/bin"
printf '#!/bin/sh\nexec %s --define-variable=prefix=%s "$@"\n' "$(command -v pkg-config)" "$prefix" >"$tmp/bin/pkg-config"
chmod +x "$tmp/bin/pkg-config"
# uses_staged PROGRAM: it resolves librngsnap.so.1 to the staged copy.
uses_staged() { ldd "$1" 2>/dev/null | grep -q "librngsnap.so.1 => $libdir/librngsnap.so.1"; }

# ---- the docs' build lines, verbatim, from a private prefix --------------
# The first `cc -o train docs/examples/train.c` line of each page, with its
# continuation lines, run from a copy of the tree's docs/examples.
for page in README.md docs/user-guide.md; do
  line=$(awk '/^cc -o train docs\/examples\/train.c/ {on=1} on {print} on && !/\\$/ {exit}' "$src/$page")
  d=$tmp/lines/$(basename "$page" .md)
  mkdir -p "$d/docs/examples" && cp "$src/docs/examples/train.c" "$d/docs/examples/"
  if [ -z "$line" ]; then bad "$page has no 'cc -o train docs/examples/train.c' line"; continue; fi
  if (cd "$d" && PATH=$tmp/bin:$PATH eval "$line") >"$tmp/line.log" 2>&1 \
     && out=$("$d/train" --help 2>&1; true) && uses_staged "$d/train" \
     && ! grep -q 'error while loading shared libraries' <<<"$out"; then
    ok "$page's build line builds a program that runs from the private prefix"
  else cat "$tmp/line.log"; ldd "$d/train" 2>&1 | grep rngsnap; bad "$page's build line: $line"; fi
done

# ---- build out of tree ---------------------------------------------------
mkdir -p "$tmp/app" "$tmp/drop-in"
if cc -std=c11 -Wall -Wextra -Werror -o "$tmp/app/train" "$src/docs/examples/train.c" $cflags $libs -Wl,-rpath,"$libdir"; then
  ok "train.c built out of tree with pkg-config"
else bad "train.c does not build out of tree"; fi
if cc -std=c11 -Wall -Wextra -Werror -shared -fPIC -fvisibility=hidden -Wl,--no-undefined \
     -o "$tmp/drop-in/rngsnap_minimal.so" "$src/docs/examples/minimal_plugin.c" $cflags; then
  ok "minimal plugin built out of tree"
else bad "minimal plugin does not build out of tree"; fi
if readelf -d "$tmp/drop-in/rngsnap_minimal.so" | grep -q 'NEEDED.*librngsnap'; then
  bad "the plugin links against librngsnap (it must not)"
else ok "the plugin does not link against the core (it gets the engine from the host table)"; fi
# The examples' Makefile, as docs/plugin-guide.md tells a user to run it.
mkdir -p "$tmp/mk"
cp "$src/docs/examples/"{Makefile,train.c,minimal_plugin.c} "$tmp/mk/"
if PATH=$tmp/bin:$PATH make -s -C "$tmp/mk" CFLAGS="-O2 -Wall -Wextra -Werror" >"$tmp/make.log" 2>&1 \
   && [ -f "$tmp/mk/rngsnap_minimal.so" ] && uses_staged "$tmp/mk/train"; then
  ok "docs/examples/Makefile builds both; its train runs from the private prefix"
else cat "$tmp/make.log"; bad "docs/examples/Makefile fails (or its train does not find the staged library)"; fi
if cc -std=c11 -Wall -Wextra -Werror -o "$tmp/app/engine_check" "$src/tests/install/engine_check.c" \
     $cflags $libs -Wl,-rpath,"$libdir"; then ok "engine_check built out of tree"
else bad "engine_check does not build out of tree"; fi

# ---- the new backend, saved and restored ---------------------------------
ini=$tmp/rng.ini
cat >"$ini" <<INI
; the drop-in folder first, then the installed plugins
[rngsnap]
plugin_dir = $tmp/drop-in:$plugindir

[backend.cpu]
plugin = rngsnap_cpu
streams = default, dropout

[backend.minimal]
plugin = rngsnap_minimal
streams = default, noise
devices = 2
INI
train=$tmp/app/train ck=$tmp/ck.rngsnap
fresh=$("$train" -c "$ini" --checkpoint "$ck" --steps 20 --save-at 8 2>&1) || bad "fresh run: $fresh"
resumed=$("$train" -c "$ini" --checkpoint "$ck" --steps 20 --resume 2>&1) || bad "resume: $resumed"
echo "$fresh"; echo "$resumed"
f=$(grep '^final ' <<<"$fresh"); r=$(grep '^final ' <<<"$resumed")
if [ -n "$f" ] && [ "$f" = "$r" ] && grep -q 'with 6 streams' <<<"$resumed"; then
  ok "resume over cpu + minimal (6 streams) is bit-exact: $f"
else bad "resumed '$r' != fresh '$f' (or not 6 streams)"; fi

json=$("$prefix/bin/rngsnap" inspect --json "$ck" 2>&1)
if python3 -c '
import json, sys
d = json.loads(sys.stdin.read())
m = [s for s in d["sections"] if s["kind"] == "stream" and s["backend"] == "minimal"]
want = {(0, "default"), (0, "noise"), (1, "default"), (1, "noise")}
assert {(s["device"], s["name"]) for s in m} == want, m
assert all(s["state_format"] == "0x31584850" and s["state_size"] == 24 for s in m), m
' <<<"$json"; then ok "checkpoint holds the 4 minimal sections as Philox positions (PHX1)"
else echo "$json"; bad "checkpoint lacks the minimal sections"; fi

# Its words: the engine's, through the host table, from the installed files
# only: equal to the cpu backend's and to cuRAND's reference words.
if out=$("$tmp/app/engine_check" words "$ini" "$src/tests/data/curand_philox4x32_10_streams.txt" 2>&1) \
   && uses_staged "$tmp/app/engine_check"; then ok "minimal's words = cpu backend's = cuRAND's ($out)"
else echo "$out"; bad "minimal's words differ from the cpu backend's or cuRAND's"; fi
# Positions are understood by the core and the tools: diff says how far.
if "$tmp/app/engine_check" advance "$ini" "$tmp/a.rngsnap" "$tmp/b.rngsnap" 5 >"$tmp/adv.log" 2>&1 \
   && out=$("$prefix/bin/rngsnap" diff "$tmp/a.rngsnap" "$tmp/b.rngsnap" 2>&1; true) \
   && grep -q 'minimal:1/noise.*same Philox stream, B is 5 words ahead' <<<"$out"; then
  ok "rngsnap diff: minimal:1/noise is 5 words ahead"
else cat "$tmp/adv.log"; echo "$out"; bad "rngsnap diff does not say how far the minimal stream moved"; fi

# The conformance check an author runs, from the installed command.
out=$("$prefix/bin/rngsnap" -c "$ini" plugin-check minimal 2>&1); rc=$?
if [ "$rc" -eq 0 ] && [ "$(tail -n1 <<<"$out")" = "backend minimal: conformant (7 of 7 checks passed)" ]; then
  ok "rngsnap plugin-check: the out-of-tree plugin is conformant"
else echo "$out"; bad "rngsnap plugin-check minimal: exit $rc"; fi

# Strict load: a configuration without the new backend refuses that file.
grep -v -e minimal -e 'noise' -e 'devices' "$ini" >"$tmp/cpu-only.ini"
if out=$("$train" -c "$tmp/cpu-only.ini" --checkpoint "$ck" --steps 20 --resume 2>&1); then
  bad "a config without minimal loaded a checkpoint that has it: $out"
elif grep -q 'minimal' <<<"$out"; then ok "without the plugin the load is refused, naming it"
else bad "refusal does not name the minimal backend: $out"; fi

out=$("$prefix/bin/rngsnap" -c "$ini" backends 2>&1)
if grep -q "^minimal .*available .*$tmp/drop-in/rngsnap_minimal.so" <<<"$out"; then ok "installed rngsnap lists the drop-in backend"
else echo "$out"; bad "rngsnap backends does not list the drop-in backend"; fi
out=$("$prefix/bin/rngsnap" -c "$ini" demo 2>&1)
if [ "$(tail -n1 <<<"$out")" = "resume is bit-exact on 6 of 6 streams" ]; then ok "installed rngsnap demo: 6 of 6"
else echo "$out"; bad "installed rngsnap demo failed"; fi

echo "$fails failure(s)"
[ "$fails" -eq 0 ]
