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

builddir=build
if [ ! -f "$builddir/build.ninja" ]; then
  meson setup "$builddir"
fi
ninja -C "$builddir"

echo
exec "$builddir/tools/rngsnap" demo "$@"
