#!/usr/bin/env bash
# tests/frameworks/run.sh - run each framework recipe (accelerate, Lightning,
# DCP on 2 ranks, the transformers Trainer) against the real framework:
# uninterrupted, then killed at a checkpoint it signalled and resumed,
# compared bit for bit, losses and every generator right after the restore
# (drive.py, as the meson tests framework_<recipe> run it); a recipe whose
# framework does not import for PYTHON is reported skipped, with why.
#
# usage: [PYTHON=python3] tests/frameworks/run.sh [BUILD_DIR]
#   PYTHON    the interpreter that has the frameworks (default: BUILD_DIR's
#             venv, made by scripts/python-env.sh, else python3 on PATH)
#   BUILD_DIR a Meson build whose python/ holds the rngsnap module built for
#             PYTHON (default: build); not needed when PYTHON imports an
#             installed rngsnap
set -uo pipefail
cd "$(dirname "$0")/../.."
B=${1:-build}
if [ -z "${PYTHON:-}" ]; then
  if [ -x "$B/venv/bin/python" ]; then PYTHON="$PWD/$B/venv/bin/python"; else PYTHON=python3; fi
fi
if [ -d "$B/python/rngsnap" ]; then
  export PYTHONPATH="$PWD/python:$PWD/$B/python${PYTHONPATH:+:$PYTHONPATH}"
  export RNGSNAP_CONFIG="${RNGSNAP_CONFIG:-$PWD/$B/config/rng.ini}"
  export RNGSNAP_BUILD_ROOT="${RNGSNAP_BUILD_ROOT:-$PWD/$B}"  # rngsnap ledger diff
fi
if ! "$PYTHON" -c 'import rngsnap.torch' 2>/dev/null; then
  echo "FAIL: $PYTHON ($(command -v "$PYTHON")) cannot import rngsnap.torch;" \
       "build the module for it (docs/python.md, Install) and pass its build folder"
  exit 1
fi
echo "== $("$PYTHON" -c 'import sys, torch, rngsnap
print(sys.executable, "torch", torch.__version__, "cuda" if torch.cuda.is_available() else "no cuda", "rngsnap", rngsnap.__version__)')"

failed=0 ran=0 skipped=0
for recipe in accelerate lightning dcp trainer; do
  start=$SECONDS
  "$PYTHON" tests/frameworks/drive.py "$recipe" --python "$PYTHON"
  case $? in
    0) ran=$((ran + 1)); echo "   ($recipe: $((SECONDS - start)) s)" ;;
    77) skipped=$((skipped + 1)) ;;
    *) ran=$((ran + 1)); failed=$((failed + 1)) ;;
  esac
done
echo "== frameworks: $ran of 4 recipes run, $skipped skipped, $failed failed"
[ $failed -eq 0 ]
