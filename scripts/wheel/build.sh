#!/usr/bin/env bash
# scripts/wheel/build.sh [OUT]: the wheel as a Python user gets it, checked.
#
#  1. <OUT>/venv: the pinned wheel tools (scripts/wheel/requirements.txt),
#     remade when that file changes; exit 77 when it cannot be made (no
#     python3 venv, a package index that cannot be reached), saying why;
#     exit 1 when the index answered and refused a pin (a broken build:
#     scripts/pip_verdict.py tells the two apart from pip's debug log).
#  2. python -m build --wheel with build isolation (pyproject.toml's pinned
#     meson-python, Meson, ninja), Meson's build folder kept in
#     <OUT>/mesonpy-build so that a rerun compiles only what changed.
#  3. auditwheel repair into <OUT>/repaired: a manylinux wheel carrying the
#     libraries the core links (inih, libltdl, xxHash) as rngsnap.libs/
#     name-<hash>.so; `auditwheel show` of the result.
#  4. check.py: every ELF in the wheel resolves what it needs inside the
#     wheel or from the policy's system libraries, the files are there,
#     no vendor runtime was grafted.
#  5. smoke.sh: a fresh venv with only the wheel (and NumPy) draws,
#     saves, verifies, and keeps the plugin trust rules.
# Default OUT: build/wheel.  The repaired wheel's path is the last line.
set -u
cd "$(dirname "$0")/../.." || exit 2
src=$PWD
out=${1:-build/wheel}
mkdir -p "$out" && out=$(cd "$out" && pwd) || exit 2
req=$src/scripts/wheel/requirements.txt
venv=$out/venv
stamp=$venv/.rngsnap-wheel-requirements.sha256
skip() { echo "wheel: SKIP: $*"; exit 77; }
fail() { echo "wheel: FAIL: $*"; exit 1; }

want=$(sha256sum "$req" | cut -d' ' -f1)
if [ -x "$venv/bin/python" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$want" ]; then
  echo "wheel: reusing $venv (scripts/wheel/requirements.txt unchanged)"
else
  base=$(command -v python3) || skip "no python3 on PATH to make $venv from"
  rm -rf "$venv"
  "$base" -m venv "$venv" > "$out/venv.log" 2>&1 ||
    skip "$base cannot make a virtual environment ($(tail -n 1 "$out/venv.log"))"
  rm -f "$out/pip-debug.log"
  if ! "$venv/bin/python" -m pip install --disable-pip-version-check -q \
       --log "$out/pip-debug.log" -r "$req" >> "$out/venv.log" 2>&1; then
    verdict=$("$base" "$src/scripts/pip_verdict.py" "$out/pip-debug.log")
    code=$?
    rm -rf "$venv"
    [ "$code" -eq 77 ] && skip "the package index could not be reached for scripts/wheel/requirements.txt ($verdict)"
    fail "pip install -r scripts/wheel/requirements.txt: $verdict (logs: $out/venv.log, $out/pip-debug.log)"
  fi
  echo "$want" > "$stamp"
  echo "wheel: made $venv from $base"
fi
command -v cc > /dev/null || command -v gcc > /dev/null ||
  skip "no C compiler on this machine (the wheel compiles the project)"

# 2. Build isolation: the wheel tools' venv only runs `build`; meson-python
# comes from the index into build's own environment.
rm -rf "$out/dist" "$out/repaired"
echo "wheel: python -m build --wheel (log: $out/build.log)"
if ! nice "$venv/bin/python" -m build --wheel --outdir "$out/dist" \
     -Cbuild-dir="$out/mesonpy-build" -Csetup-args=-Dwerror=true "$src" > "$out/build.log" 2>&1; then
  tail -n 30 "$out/build.log"
  fail "python -m build --wheel failed (log: $out/build.log)"
fi
built=$(ls "$out"/dist/rngsnap-*.whl 2>/dev/null | head -n 1)
[ -n "$built" ] || fail "python -m build left no rngsnap-*.whl in $out/dist"
echo "wheel: built $(basename "$built")"

# 3. Repair: auditwheel picks the most compatible manylinux tag the
# symbol versions allow and grafts what the policy does not provide.
PATH="$venv/bin:$PATH" "$venv/bin/auditwheel" repair -w "$out/repaired" "$built" > "$out/repair.log" 2>&1 || {
  cat "$out/repair.log"; fail "auditwheel repair failed"; }
wheel=$(ls "$out"/repaired/rngsnap-*.whl 2>/dev/null | head -n 1)
[ -n "$wheel" ] || fail "auditwheel repair left no wheel in $out/repaired"
PATH="$venv/bin:$PATH" "$venv/bin/auditwheel" show "$wheel" | tee "$out/show.txt" ||
  fail "auditwheel show $wheel failed"

# 4. What every ELF needs, resolved.
PATH="$venv/bin:$PATH" "$venv/bin/python" "$src/scripts/wheel/check.py" "$wheel" || fail "check.py: $wheel"

# The check can fail: the same wheel without its grafted inih must be
# refused, naming what the extension then lacks.
broken=$out/broken/$(basename "$wheel")
rm -rf "$out/broken" && mkdir -p "$out/broken" || exit 1
inih=$("$venv/bin/python" - "$wheel" "$broken" <<'EOF'
import sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as a, zipfile.ZipFile(sys.argv[2], "w") as b:
    for i in a.infolist():
        if i.filename.startswith("rngsnap.libs/libinih-"):
            print(i.filename)
        else:
            b.writestr(i, a.read(i))
EOF
) && [ -n "$inih" ] || fail "no grafted libinih in $wheel"
if PATH="$venv/bin:$PATH" "$venv/bin/python" "$src/scripts/wheel/check.py" "$broken" > "$out/broken.log" 2>&1 ||
   ! grep -q "check: FAIL: rngsnap/_rngsnap.cpython-.*needs $(basename "$inih"): neither inside the wheel" "$out/broken.log"; then
  cat "$out/broken.log"; fail "check.py passed a wheel without $inih"
fi
echo "wheel: check.py refuses the wheel without $inih, as it must"

# 5. Installed alone.
bash "$src/scripts/wheel/smoke.sh" "$wheel" "$out/smoke" || fail "smoke.sh: $wheel"
echo "wheel: OK"
echo "$wheel"
