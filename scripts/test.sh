#!/usr/bin/env bash
# test.sh - the one command that runs the whole test suite from a fresh machine:
#   installs what is missing (Debian/Ubuntu), configures and builds into build/,
#   runs every Meson test suite (the backend matrix included), then the core,
#   checkpoint and matrix suites again under valgrind, the benchmark in its
#   quick mode (figures only), and ends with "N passed, N failed".
# Usage: bash scripts/test.sh [--werror] [--builddir DIR]
set -uo pipefail
cd "$(dirname "$0")/.."

# CI (the CI variable set) builds with -Werror; so does --werror.
werror=false
[ -n "${CI:-}" ] && werror=true
builddir=build
while [ $# -gt 0 ]; do
  case "$1" in
    --werror) werror=true ;;
    --builddir) builddir="$2"; shift ;;
    *) echo "usage: $0 [--werror] [--builddir DIR]" >&2; exit 2 ;;
  esac
  shift
done

. scripts/ci-deps.sh
rngsnap_install_deps || { echo "could not install dependencies"; echo "0 passed, 1 failed"; exit 1; }

if [ -f "$builddir/build.ninja" ]; then
  meson configure "$builddir" -Dwerror="$werror" >/dev/null
else
  meson setup "$builddir" -Dwerror="$werror" || { echo "0 passed, 1 failed"; exit 1; }
fi
ninja -C "$builddir" || { echo "build failed"; echo "0 passed, 1 failed"; exit 1; }

# Fresh logs only: the closing line must count this run's results.
rm -f "$builddir"/meson-logs/plain*.json "$builddir"/meson-logs/valgrind*.json \
      "$builddir"/meson-logs/bench*.json

# Plain run of every suite, then core, checkpoint and matrix under valgrind.
meson test -C "$builddir" --print-errorlogs --num-processes 2 \
  --logbase plain
meson test -C "$builddir" --print-errorlogs --num-processes 2 \
  --suite core --suite checkpoint --suite matrix --logbase valgrind \
  --wrap 'valgrind --error-exitcode=1 --leak-check=full --errors-for-leak-kinds=definite --quiet' \
  --timeout-multiplier 10

# The benchmark in its quick mode: figures for a person to compare run to
# run (docs/performance.md); no thresholds.  It counts only if it fails to run.
meson test -C "$builddir" --benchmark --verbose --logbase bench

# The closing line, computed from Meson's machine-readable logs.
python3 - "$builddir/meson-logs" <<'PY'
import glob, json, os, sys
passed = failed = skipped = 0
for base in ("plain", "valgrind", "bench"):
    # Meson appends the wrapper's name to the log base (valgrind-valgrind.json).
    paths = glob.glob(os.path.join(sys.argv[1], base + "*.json"))
    if len(paths) != 1:
        failed += 1
        print(f"no single {base}*.json test log in {sys.argv[1]}")
        continue
    path, name = paths[0], base
    for line in open(path):
        r = json.loads(line)
        res = r.get("result")
        if res in ("OK", "EXPECTEDFAIL"):
            passed += 1
        elif res == "SKIP":
            skipped += 1
        else:
            failed += 1
            print(f"FAILED: {r.get('name')} ({res}) [{name}]")
if skipped:
    print(f"{skipped} skipped (hardware not present)")
print(f"{passed} passed, {failed} failed")
sys.exit(1 if failed else 0)
PY
