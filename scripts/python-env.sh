#!/usr/bin/env bash
# python-env.sh - the pinned Python test environment (tests/requirements.txt):
# a virtual environment in <build>/venv, made from the first python3 on
# PATH, with torch 2.13, NumPy 2.x, pytest, meson-python and the frameworks
# (accelerate, Lightning, transformers).  A second run reuses it while the
# requirements file is unchanged.  Sourced by scripts/test.sh; run directly
# to make or refresh it:  bash scripts/python-env.sh [BUILD_DIR]
#
# rngsnap_python_env BUILD_DIR returns 0 (made or reused), 77 (it cannot
# be made here: no python3, no venv module, a package index that cannot
# be reached) or 1 (the index answered and refused a pin, or pip failed
# otherwise: a broken requirements file, which a caller must not skip;
# scripts/pip_verdict.py tells them apart from pip's own debug log), and
# sets
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
    return 77
  }
  mkdir -p "$builddir"
  log="$builddir/python-env.log"
  echo "python-env: making $venv from $base ($("$base" -V 2>&1)); pip log: $log"
  rm -rf "$venv"
  if ! "$base" -m venv "$venv" > "$log" 2>&1; then
    RNGSNAP_VENV_WHY="$base cannot make a virtual environment ($(tail -n 1 "$log"))"
    return 77
  fi
  # pip's own retries are enough: a machine without the index answers at
  # once.  Its debug log (--log) says whether an index page could not be
  # fetched, which the console output does not.
  local verdict code
  rm -f "$builddir/pip-debug.log"
  if ! "$venv/bin/python" -m pip install --disable-pip-version-check -q \
       --log "$builddir/pip-debug.log" -r "$req" >> "$log" 2>&1; then
    verdict=$("$base" scripts/pip_verdict.py "$builddir/pip-debug.log")
    code=$?
    rm -rf "$venv"
    if [ "$code" -eq 77 ]; then
      RNGSNAP_VENV_WHY="the package index could not be reached for $req ($verdict)"
      return 77
    fi
    RNGSNAP_VENV_WHY="pip install -r $req failed: $verdict (logs: $log, $builddir/pip-debug.log)"
    return 1
  fi
  echo "$want" > "$stamp"
  RNGSNAP_VENV_PY="$PWD/$venv/bin/python"
  echo "python-env: $("$RNGSNAP_VENV_PY" -c 'import torch, numpy; print("torch", torch.__version__, "numpy", numpy.__version__)') in $venv"
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
  cd "$(dirname "$0")/.." || exit 2
  rngsnap_python_env "${1:-build}"
  rc=$?
  case $rc in
    0) ;;
    77) echo "python-env: SKIP: $RNGSNAP_VENV_WHY"; exit 77 ;;
    *) echo "python-env: FAIL: $RNGSNAP_VENV_WHY"; exit 1 ;;
  esac
fi
