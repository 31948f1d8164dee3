#!/usr/bin/env bash
# demo.sh - the README's first command: on a fresh Debian/Ubuntu machine,
# install what is missing, configure and build into build/, and run
# `rngsnap demo` (a job killed with SIGKILL resumes bit for bit).
# Usage: bash scripts/demo.sh [ARGS for rngsnap demo, e.g. --steps 20]
#        RNGSNAP_CONFIG=build/config/clusters/mixed.ini bash scripts/demo.sh
set -euo pipefail
cd "$(dirname "$0")/.."

# The dependency list lives in one place (scripts/ci-deps.sh).
if [ -f scripts/ci-deps.sh ]; then
  # shellcheck source=ci-deps.sh
  . scripts/ci-deps.sh
fi
if declare -F rngsnap_install_deps >/dev/null; then
  rngsnap_install_deps || { echo "demo.sh: could not install the dependencies" >&2; exit 2; }
fi

# Build quietly (the demo's output is what matters); a failure shows the log.
builddir=build
if [ ! -f "$builddir/build.ninja" ]; then
  echo "demo.sh: configuring $builddir/ (log: $builddir/meson-logs/meson-log.txt)"
  if ! out=$(meson setup "$builddir" 2>&1); then
    echo "$out" >&2
    echo "demo.sh: meson setup failed" >&2
    exit 2
  fi
fi
log=$builddir/meson-logs/demo-build.log
echo "demo.sh: building $builddir/ (a minute or two the first time; log: $log)"
if ! ninja -C "$builddir" >"$log" 2>&1; then
  tail -n 40 "$log" >&2
  echo "demo.sh: build failed (whole log: $log)" >&2
  exit 2
fi

echo
exec "$builddir/tools/rngsnap" demo "$@"
