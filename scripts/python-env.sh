#!/usr/bin/env bash
# python-env.sh - the pinned Python test environment (tests/requirements.txt):
# a virtual environment in <build>/venv, made from the first python3 on
# PATH, with torch 2.13, NumPy 2.x, pytest, meson-python and the frameworks
# (accelerate, Lightning, transformers).  A second run reuses it while the
# requirements file is unchanged.  Sourced by scripts/test.sh; run directly
# to make or refresh it:  bash scripts/python-env.sh [BUILD_DIR]
#
# rngsnap_python_env BUILD_DIR sets
#   RNGSNAP_VENV_PY   the venv's interpreter, or empty when it could not be
#                     made (then RNGSNAP_VENV_WHY says why, in one line)

rngsnap_python_env() {
  local builddir="$1"
  local venv="$builddir/venv"
  local req="tests/requirements.txt"
  local stamp="$venv/.rngsnap-requirements.sha256"
  local want base log
  RNGSNAP_VENV_PY=""
  RNGSNAP_VENV_WHY=""
  want=$(sha256sum "$req" | cut -d' ' -f1)
  if [ -x "$venv/bin/python" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$want" ]; then
    RNGSNAP_VENV_PY="$PWD/$venv/bin/python"
    echo "python-env: reusing $venv ($req unchanged)"
    return 0
  fi
  base=$(command -v python3) || {
    RNGSNAP_VENV_WHY="no python3 on PATH to make $venv from"
    return 1
  }
  mkdir -p "$builddir"
  log="$builddir/python-env.log"
  echo "python-env: making $venv from $base ($("$base" -V 2>&1)); pip log: $log"
  rm -rf "$venv"
  if ! "$base" -m venv "$venv" > "$log" 2>&1; then
    RNGSNAP_VENV_WHY="$base cannot make a virtual environment ($(tail -n 1 "$log"))"
    return 1
  fi
  # pip's own retries are enough: a machine without the index answers at once.
  if ! "$venv/bin/python" -m pip install --disable-pip-version-check -q \
       -r "$req" >> "$log" 2>&1; then
    RNGSNAP_VENV_WHY="the package index could not be reached or refused a pin of $req (pip: $(grep -m1 -E 'ERROR|error:' "$log" | cut -c1-160))"
    rm -rf "$venv"
    return 1
  fi
  echo "$want" > "$stamp"
  RNGSNAP_VENV_PY="$PWD/$venv/bin/python"
  echo "python-env: $("$RNGSNAP_VENV_PY" -c 'import torch, numpy; print("torch", torch.__version__, "numpy", numpy.__version__)') in $venv"
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
  cd "$(dirname "$0")/.." || exit 2
  rngsnap_python_env "${1:-build}" || { echo "python-env: $RNGSNAP_VENV_WHY"; exit 1; }
fi
