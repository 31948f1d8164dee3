#!/usr/bin/env bash
# tests/frameworks/run.sh - run each framework recipe (accelerate, Lightning,
# DCP on 2 ranks, the transformers Trainer) uninterrupted, then killed at a
# checkpoint it signalled and resumed, and compare the losses bit for bit
# and every generator right after the restore (drive.py); wherever the
# framework imports, and says what it skipped elsewhere.
#
# usage: [PYTHON=python3] [STANDINS=1] tests/frameworks/run.sh [BUILD_DIR]
#   PYTHON    the interpreter that has the frameworks (default: python3 on
#             PATH; on the CPU machines /usr/bin/python3, which has none)
#   STANDINS  1: run every recipe against the CPU stand-ins of its
#             framework instead (tests/frameworks/standins: torch only)
#   BUILD_DIR a Meson build whose python/ holds the rngsnap module built for
#             PYTHON (default: build); not needed when PYTHON imports an
#             installed rngsnap
set -uo pipefail
cd "$(dirname "$0")/../.."
PYTHON=${PYTHON:-python3}
STANDINS=${STANDINS:-0}
B=${1:-build}
if [ -d "$B/python/rngsnap" ]; then
  export PYTHONPATH="$PWD/python:$PWD/$B/python${PYTHONPATH:+:$PYTHONPATH}"
fi
if ! "$PYTHON" -c 'import rngsnap.torch' 2>/dev/null; then
  echo "FAIL: $PYTHON ($(command -v "$PYTHON")) cannot import rngsnap.torch;" \
       "build the module for it (docs/python.md, Install) and pass its build folder"
  exit 1
fi
echo "== $("$PYTHON" -c 'import sys, torch, rngsnap
print(sys.executable, "torch", torch.__version__, "cuda" if torch.cuda.is_available() else "no cuda", "rngsnap", rngsnap.__version__)')"

# What each recipe needs of the real framework: one import line each.
declare -A NEEDS=(
  [accelerate]='import accelerate; from accelerate import Accelerator; Accelerator.register_load_state_pre_hook; print("accelerate", accelerate.__version__)'
  [lightning]='import lightning, lightning.pytorch; print("lightning", lightning.__version__)'
  [dcp]='import torch, torch.distributed.checkpoint as d; d.save; d.load; from torch.distributed.checkpoint.stateful import Stateful; print("torch.distributed.checkpoint of torch", torch.__version__)'
  [trainer]='import transformers, accelerate; from transformers import Trainer, TrainerCallback; print("transformers", transformers.__version__)'
)
rc=0
ran=0
for recipe in accelerate lightning dcp trainer; do
  if [ "$STANDINS" = 1 ]; then
    "$PYTHON" tests/frameworks/drive.py "$recipe" --standins --python "$PYTHON" || rc=1
    ran=$((ran + 1))
  elif what=$("$PYTHON" -c "${NEEDS[$recipe]}" 2>&1); then
    echo "== $recipe: $what"
    "$PYTHON" tests/frameworks/drive.py "$recipe" --python "$PYTHON" || rc=1
    ran=$((ran + 1))
  else
    echo "skipped $recipe: $PYTHON cannot run it ($(echo "$what" | tail -1))"
  fi
done
echo "== frameworks: $ran of 4 recipes run$([ "$STANDINS" = 1 ] && echo " against CPU stand-ins"), $([ $rc -eq 0 ] && echo PASSED || echo FAILED)"
exit $rc
