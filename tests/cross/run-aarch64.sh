#!/usr/bin/env bash
# run-aarch64.sh - the engine on aarch64: cross-build tests/cross (the
# engine of plugins/common with its NEON path, and check_paths, a vector
# check without cmocka) with cross/aarch64-linux-gnu.ini into DIR, and run
# it under qemu-user (the cross file's exe_wrapper) as Meson tests with
# log base "cross" (DIR/meson-logs/cross.json, read by scripts/test.sh).
# Needs gcc-aarch64-linux-gnu, libc6-dev-arm64-cross and qemu-user
# (scripts/ci-deps.sh installs them); without them it fails, never skips.
# Usage: bash tests/cross/run-aarch64.sh [--werror] [DIR]   (DIR: build/aarch64)
set -uo pipefail
cd "$(dirname "$0")/../.."

werror=false
if [ "${1:-}" = "--werror" ]; then werror=true; shift; fi
dir="${1:-build/aarch64}"
cross=cross/aarch64-linux-gnu.ini

rm -f "$dir"/meson-logs/cross*.json
missing=()
command -v aarch64-linux-gnu-gcc >/dev/null || missing+=("aarch64-linux-gnu-gcc (gcc-aarch64-linux-gnu)")
command -v qemu-aarch64 >/dev/null || missing+=("qemu-aarch64 (qemu-user)")
[ -e /usr/aarch64-linux-gnu/lib/ld-linux-aarch64.so.1 ] ||
  missing+=("/usr/aarch64-linux-gnu/lib/ld-linux-aarch64.so.1 (libc6-dev-arm64-cross)")
if [ ${#missing[@]} -gt 0 ]; then
  echo "aarch64: FAILED: missing ${missing[*]}; scripts/ci-deps.sh installs them" >&2
  exit 1
fi

if [ -f "$dir/build.ninja" ]; then
  meson configure "$dir" -Dwerror="$werror" >/dev/null
else
  mkdir -p "$(dirname "$dir")"
  meson setup "$dir" tests/cross --cross-file "$cross" -Dwerror="$werror" \
    > "$dir.setup.log" 2>&1 ||
    { cat "$dir.setup.log"; echo "aarch64: FAILED: meson setup" >&2; exit 1; }
fi
ninja -C "$dir" || { echo "aarch64: FAILED: cross build" >&2; exit 1; }
meson test -C "$dir" --no-rebuild --print-errorlogs --num-processes 2 \
  --logbase cross
rc=$?
# The check's own summary lines (what was compared, how many mismatches).
grep -E '^(paths:|KAT:|OK$|FAIL)' "$dir/meson-logs/cross.txt" 2>/dev/null | sort | uniq -c
exit $rc
