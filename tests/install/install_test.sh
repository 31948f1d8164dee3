#!/usr/bin/env bash
# install_test.sh - rngsnap as a user installs and extends it.
#
# Installs the build into a temporary folder (meson install --destdir),
# checks what landed there (library with a SONAME, headers, versioned plugin
# folder, default rng.ini, rngsnap.pc, the rngsnap command), then builds the
# user guide's training loop and the minimal plugin OUT OF TREE with
# `pkg-config --cflags --libs rngsnap`, drops the plugin into its own
# folder, lists it in an rng.ini, and checks that the new backend is saved
# and restored (bit-exact resume) with no change to the core.
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
export LD_LIBRARY_PATH=$libdir  # the staged library, not a system one

# ---- build out of tree ---------------------------------------------------
mkdir -p "$tmp/app" "$tmp/drop-in"
if cc -std=c11 -Wall -Wextra -Werror -o "$tmp/app/train" "$src/docs/examples/train.c" $cflags $libs; then
  ok "train.c built out of tree with pkg-config"
else bad "train.c does not build out of tree"; fi
if cc -std=c11 -Wall -Wextra -Werror -shared -fPIC -fvisibility=hidden -Wl,--no-undefined \
     -o "$tmp/drop-in/rngsnap_minimal.so" "$src/docs/examples/minimal_plugin.c" $cflags -lm; then
  ok "minimal plugin built out of tree"
else bad "minimal plugin does not build out of tree"; fi
if readelf -d "$tmp/drop-in/rngsnap_minimal.so" | grep -q 'NEEDED.*librngsnap'; then
  bad "the plugin links against librngsnap (it must not)"
else ok "the plugin does not link against the core"; fi
# The examples' Makefile, as docs/plugin-guide.md tells a user to run it.
cp "$src/docs/examples/"{Makefile,train.c,minimal_plugin.c} "$tmp/app/"
if make -s -C "$tmp/app" PKG_CONFIG="pkg-config --define-variable=prefix=$prefix" \
     CFLAGS="-O2 -Wall -Wextra -Werror" >"$tmp/make.log" 2>&1 \
   && [ -f "$tmp/app/rngsnap_minimal.so" ]; then ok "docs/examples/Makefile builds both"
else cat "$tmp/make.log"; bad "docs/examples/Makefile fails"; fi

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
assert all(s["state_format"] == "0x314e494d" and s["state_size"] == 8 for s in m), m
' <<<"$json"; then ok "checkpoint holds the 4 minimal sections in their own format"
else echo "$json"; bad "checkpoint lacks the minimal sections"; fi

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
