#!/usr/bin/env bash
# test.sh - the one command that runs the whole test suite from a fresh machine:
#   installs what is missing (Debian/Ubuntu), configures and builds into build/,
#   runs every Meson test suite (the backend matrix included), then the core,
#   checkpoint and matrix suites again under valgrind, then builds again
#   with ASan + UBSan into <builddir>/asan and runs the core, checkpoint,
#   matrix, engine, fuzz-replay and ranks suites there, then builds the
#   thread and multi-rank tests and the plugins with ThreadSanitizer into
#   <builddir>/tsan and runs the threads and ranks suites there (any
#   report fails it), cross-builds the engine
#   for aarch64 into <builddir>/aarch64 and runs its vector checks (NEON
#   and scalar paths) under qemu-user, the benchmark in its quick mode
#   (figures only), and ends with "N passed, N failed".
#   The Python package is built for the pinned venv that
#   scripts/python-env.sh makes in <builddir>/venv (tests/requirements.txt).
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

# The pinned Python test environment (tests/requirements.txt) in
# <builddir>/venv: the Python package is built for its interpreter, and
# for Debian's (torch 1.13, the oldest stack we keep testing) too.  Where
# the package index cannot be reached, the Python suites run on Debian's
# torch alone and the framework tests report themselves skipped.
. scripts/python-env.sh
rngsnap_python_env "$builddir"
case $? in
  0) py_opts=(-Dpython="$RNGSNAP_VENV_PY" -Dpython_compat=/usr/bin/python3) ;;
  77)
    echo "python-env: no pinned environment: $RNGSNAP_VENV_WHY; the Python suites run on /usr/bin/python3 (Debian's torch) and the framework tests are skipped"
    py_opts=(-Dpython=/usr/bin/python3 -Dpython_compat=) ;;
  *)  # the index refused a pin: a broken requirements file, not a skip
    echo "python-env: FAIL: $RNGSNAP_VENV_WHY"
    echo "0 passed, 1 failed"
    exit 1 ;;
esac

if [ -f "$builddir/build.ninja" ]; then
  meson configure "$builddir" -Dwerror="$werror" "${py_opts[@]}" >/dev/null
else
  meson setup "$builddir" -Dwerror="$werror" "${py_opts[@]}" || { echo "0 passed, 1 failed"; exit 1; }
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

# ASan + UBSan: a second build folder inside the first, the whole project
# built with the sanitizers (plugins are dlopen'ed, hence b_lundef=false).
# Leaks are errors, and any undefined behaviour stops the test.
asandir="$builddir/asan"
rm -f "$asandir"/meson-logs/asan*.json
if [ -f "$asandir/build.ninja" ]; then
  meson configure "$asandir" -Dwerror="$werror" >/dev/null
else
  meson setup "$asandir" -Dwerror="$werror" -Db_sanitize=address,undefined \
    -Db_lundef=false >/dev/null || echo "asan: meson setup failed"
fi
if ninja -C "$asandir" > "$builddir/asan-build.log" 2>&1; then
  ASAN_OPTIONS=detect_leaks=1 \
  UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1" \
  meson test -C "$asandir" --no-rebuild --print-errorlogs --num-processes 2 \
    --suite core --suite checkpoint --suite matrix --suite engine --suite threads \
    --suite fuzz --suite ranks --logbase asan --timeout-multiplier 3
else
  tail -n 40 "$builddir/asan-build.log"
  echo "asan: build failed (log: $builddir/asan-build.log)"
fi

# ThreadSanitizer: the thread contract (tests/threads: many threads
# drawing while one saves, loads and reads messages) with every plugin.
# Only what that test needs is built; any report fails the test.
tsandir="$builddir/tsan"
rm -f "$tsandir"/meson-logs/tsan*.json
if [ -f "$tsandir/build.ninja" ]; then
  meson configure "$tsandir" -Dwerror="$werror" >/dev/null
else
  meson setup "$tsandir" -Dwerror="$werror" -Db_sanitize=thread \
    -Db_lundef=false >/dev/null || echo "tsan: meson setup failed"
fi
tsan_targets="tests/threads/test_threads config/clusters/mixed.ini"
# the multi-rank suite: one thread per rank (tests/common/thread_comm.c)
tsan_targets="$tsan_targets tests/ranks/test_ranks tests/ranks/test_fork_check"
tsan_targets="$tsan_targets tests/ranks/test_nodes tests/ranks/test_manifest"
tsan_targets="$tsan_targets tests/plugins/multidev/rngsnap_multidev.so"
tsan_targets="$tsan_targets tests/plugins/multidev/rngsnap_multidev2.so"
for p in cpu cuda hpu xpu npu; do tsan_targets="$tsan_targets plugins/rngsnap_$p.so"; done
# shellcheck disable=SC2086  # a list of ninja targets
if ninja -C "$tsandir" $tsan_targets > "$builddir/tsan-build.log" 2>&1; then
  TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1" \
  meson test -C "$tsandir" --no-rebuild --print-errorlogs --suite threads --suite ranks \
    --logbase tsan --timeout-multiplier 3
else
  tail -n 40 "$builddir/tsan-build.log"
  echo "tsan: build failed (log: $builddir/tsan-build.log)"
fi

# aarch64: the engine (plugins/common, NEON path) cross-built with
# gcc-aarch64-linux-gnu and its vector checks run under qemu-user
# (tests/cross/run-aarch64.sh).  Missing tools fail the stage: its log is
# then absent, which the closing line counts as a failure.
crossdir="$builddir/aarch64"
cross_opts=""
[ "$werror" = true ] && cross_opts="--werror"
# shellcheck disable=SC2086  # empty or one option
bash tests/cross/run-aarch64.sh $cross_opts "$crossdir" || echo "aarch64: stage failed"

# The benchmark in its quick mode: figures for a person to compare run to
# run (docs/performance.md); no thresholds.  It counts only if it fails to run.
meson test -C "$builddir" --benchmark --verbose --logbase bench
# The Python side by sides (rngsnap.torch vs torch.save; each dist per
# engine path vs NumPy's Philox), quick mode, with the interpreter the
# package was built for (the venv's, else Debian's); figures only.
py="${py_opts[0]#-Dpython=}"
bench_failures="$builddir/meson-logs/bench-python-failures.txt"
rm -f "$bench_failures"
if PYTHONPATH="$PWD/python:$builddir/python" "$py" -c 'import rngsnap.torch' 2>/dev/null; then
  PYTHONPATH="$PWD/python:$builddir/python" "$py" tests/bench/bench_python.py --quick \
    || { echo "bench_python: failed"; echo bench_python >> "$bench_failures"; }
  PYTHONPATH="$PWD/python:$builddir/python" "$py" tests/bench/bench_numpy.py --quick \
    || { echo "bench_numpy: failed"; echo bench_numpy >> "$bench_failures"; }
else
  echo "bench_python: $py cannot import the built rngsnap.torch; Python figures not printed"
fi

# The closing line, computed from Meson's machine-readable logs.
python3 - "$builddir/meson-logs" "$asandir/meson-logs" "$tsandir/meson-logs" \
  "$crossdir/meson-logs" <<'PY'
import glob, json, os, sys
passed = failed = skipped = 0
logs, asan_logs, tsan_logs, cross_logs = sys.argv[1:5]
for folder, base in ((logs, "plain"), (logs, "valgrind"), (asan_logs, "asan"),
                     (tsan_logs, "tsan"), (cross_logs, "cross"), (logs, "bench")):
    # Meson appends the wrapper's name to the log base (valgrind-valgrind.json).
    paths = glob.glob(os.path.join(folder, base + "*.json"))
    if len(paths) != 1:
        failed += 1
        print(f"no single {base}*.json test log in {folder}")
        continue
    path, name = paths[0], base
    for line in open(path):
        r = json.loads(line)
        res = r.get("result")
        if res in ("OK", "EXPECTEDFAIL"):
            passed += 1
        elif res == "SKIP":
            skipped += 1
            why = (r.get("stdout") or "").strip().splitlines()
            print(f"SKIPPED: {r.get('name')} [{name}]" + (f": {why[-1]}" if why else ""))
        else:
            failed += 1
            print(f"FAILED: {r.get('name')} ({res}) [{name}]")
# The Python benchmarks are no Meson tests: one that did not run to its
# end is a failure all the same (scripts/test.sh lists them here).
extra = os.path.join(logs, "bench-python-failures.txt")
if os.path.exists(extra):
    for name in open(extra).read().split():
        failed += 1
        print(f"FAILED: {name} (did not run to its end) [bench]")
print(f"{passed} passed, {failed} failed, {skipped} skipped")
sys.exit(1 if failed else 0)
PY
