#!/usr/bin/env bash
# scripts/wheel/cleanroom.sh [BUILD_DIR]: the repaired wheel on a machine
# that has nothing but Python.  Run as root (chroot, mounts); needs
# debootstrap (apt-get install debootstrap) and, for the build-tree half, a
# normal build in BUILD_DIR (default: build) with the Python package built.
#
# The clean room is a Debian 12 root made by debootstrap --variant=minbase
# with python3 and python3-venv only (cached in BUILD_DIR/cleanroom/root: a
# rerun reuses it): no compiler, no -dev package, no libinih, no libltdl
# (both checked below).  It runs in its own mount namespace (unshare -m),
# with /proc, /dev and the machine's local package folders bound in
# read-only, and an empty environment.  There:
#   - a fresh venv installs the wheel and torch==2.13.0 (CPU; the wheel on
#     this machine's disk) with pip;
#   - smoke_job.py: find_config, seed/draw/save/load, the command both
#     ways (rngsnap and python -m rngsnap, verify/inspect/backends), the
#     trust refusals, a user's plugin folder;
#   - cleanroom_job.py write: a small torch job (rngsnap.torch.track, SGD
#     with dropout) saves a checkpoint (a file and the state dict inside
#     torch.save) mid-way and records what comes next.
# Then the build tree (BUILD_DIR's module and command) loads those and must
# draw and train the same, and writes its own, which the clean room loads;
# both `rngsnap verify` each other's files.  Ends with `cleanroom: OK` or
# FAIL; exit 77 (saying why) where it cannot run.
set -u
cd "$(dirname "$0")/../.." || exit 2
src=$PWD
build=${1:-build}
build=$(cd "$build" 2>/dev/null && pwd) || { echo "cleanroom: FAIL: no build folder $1"; exit 1; }
here=$src/scripts/wheel
room=$build/cleanroom
root=$room/root
mirror=${RNGSNAP_DEBIAN_MIRROR:-http://deb.debian.org/debian}
skip() { echo "cleanroom: SKIP: $*"; exit 77; }
fail() { echo "cleanroom: FAIL: $*"; exit 1; }

[ "$(id -u)" = 0 ] || skip "needs root (debootstrap, chroot, mount)"
command -v unshare > /dev/null || skip "no unshare (util-linux)"
tree_py=$(python3 -c 'import json,sys; o={x["name"]:x["value"] for x in json.load(open(sys.argv[1]))}; print(o.get("python") or "python3")' \
  "$build/meson-info/intro-buildoptions.json" 2>/dev/null) || fail "$build is not a configured Meson build"
[ -e "$build/python/rngsnap/__init__.py" ] || [ -n "$(ls "$build"/python/rngsnap/_rngsnap*.so 2>/dev/null)" ] ||
  fail "$build has no Python package (meson setup printed 'Python package: no')"
[ -x "$build/tools/rngsnap" ] || fail "$build/tools/rngsnap is not built (ninja -C $build)"

wheel=$(ls "$build"/wheel/repaired/rngsnap-*.whl 2>/dev/null | head -n 1)
if [ -z "$wheel" ]; then
  echo "cleanroom: no repaired wheel in $build/wheel/repaired: scripts/wheel/build.sh first"
  bash "$here/build.sh" "$build/wheel" || exit $?
  wheel=$(ls "$build"/wheel/repaired/rngsnap-*.whl | head -n 1)
fi
echo "cleanroom: wheel $wheel"

# The root, made once.
if [ ! -e "$root/.rngsnap-cleanroom" ]; then
  command -v debootstrap > /dev/null || skip "no debootstrap (apt-get install debootstrap)"
  rm -rf "$root" "$root.tmp"
  mkdir -p "$room"
  echo "cleanroom: debootstrap bookworm from $mirror (log: $room/debootstrap.log)"
  debootstrap --variant=minbase --include=python3,python3-venv bookworm \
    "$root.tmp" "$mirror" > "$room/debootstrap.log" 2>&1 ||
    skip "debootstrap failed (no network or mirror?): $(tail -n 1 "$room/debootstrap.log")"
  mv "$root.tmp" "$root" && date -u > "$root/.rngsnap-cleanroom"
fi

# What the root must lack.
devs=$(chroot "$root" dpkg-query -W -f '${Package}\n' | grep -E -- '-dev$|^(gcc|g\+\+|cpp|clang|tcc)(-[0-9]+)?$|^libinih|^libltdl' | tr '\n' ' ')
[ -z "$devs" ] || fail "the clean room has $devs"
for c in cc gcc c++ cpp clang tcc ld; do
  [ ! -e "$root/usr/bin/$c" ] || fail "the clean room has /usr/bin/$c"
done
echo "cleanroom: root $root: Debian $(cat "$root/etc/debian_version"), $(chroot "$root" python3 -V), no compiler, no -dev package, no libinih/libltdl"

# The work area, fresh each run, and pip's configuration (the machine's
# local index folders; PyPI for the rest, as a user's pip would).
work=$root/cleanroom
rm -rf "$work" "$room/out" && mkdir -p "$work/from-tree" "$room/out" || exit 1
cp "$wheel" "$here/smoke_job.py" "$here/cleanroom_job.py" "$work/" || exit 1
for d in /opt/wheels /opt/pypi /opt/pypi-more; do mkdir -p "$root$d"; done
cat > "$work/pip.conf" <<EOF
[global]
find-links = /opt/wheels
extra-index-url = file:///opt/pypi/simple file:///opt/pypi-more/simple
EOF
cp /etc/resolv.conf "$root/etc/resolv.conf" 2>/dev/null

# Run "$@" (a shell line) inside the root, in a private mount namespace.
in_room() {
  unshare -m --propagation private sh -c '
    set -e
    r=$1; shift
    mount -t proc proc "$r/proc"
    mount --rbind /dev "$r/dev"
    for d in /opt/wheels /opt/pypi /opt/pypi-more; do
      [ -d "$d" ] && mount --bind -o ro "$d" "$r$d" || true
    done
    exec chroot "$r" /usr/bin/env -i PATH=/usr/bin:/bin HOME=/root \
      LANG=C.UTF-8 PIP_CONFIG_FILE=/cleanroom/pip.conf \
      PIP_DISABLE_PIP_VERSION_CHECK=1 /bin/sh -c "cd /cleanroom && $1"
  ' sh "$root" "$1"
}

wname=$(basename "$wheel")
echo "cleanroom: python3 -m venv; pip install $wname torch==2.13.0"
in_room "python3 -m venv venv && venv/bin/pip install -q ./$wname torch==2.13.0 > pip.log 2>&1 || { tail -n 20 pip.log; exit 1; }" ||
  fail "pip install in the clean room"
in_room "venv/bin/python -c 'import rngsnap, torch, numpy; print(\"cleanroom: installed rngsnap\", rngsnap.__version__, \"torch\", torch.__version__, \"numpy\", numpy.__version__)'" ||
  fail "import in the clean room"
in_room "venv/bin/python smoke_job.py" || fail "smoke_job.py in the clean room"

# Clean room -> build tree.
in_room "venv/bin/python cleanroom_job.py write out && venv/bin/rngsnap verify out/ck.rngsnap" ||
  fail "the torch job in the clean room"
cp -r "$work/out/." "$room/out/" || exit 1
tree() {
  env -u RNGSNAP_CONFIG -u RNGSNAP_PLUGIN_PATH PYTHONPATH="$src/python:$build/python" \
    "$tree_py" "$@"
}
(cd "$room" && tree "$here/cleanroom_job.py" check out file &&
  tree "$here/cleanroom_job.py" check out bytes) ||
  fail "the build tree could not resume the clean room's checkpoint"
"$build/tools/rngsnap" verify "$room/out/ck.rngsnap" || fail "build tree rngsnap verify"

# Build tree -> clean room.
rm -rf "$room/tree-out"
(cd "$room" && tree "$here/cleanroom_job.py" write tree-out) || fail "the torch job in the build tree"
"$build/tools/rngsnap" verify "$room/tree-out/ck.rngsnap" || fail "build tree rngsnap verify"
cp -r "$room/tree-out/." "$work/from-tree/" || exit 1
in_room "venv/bin/rngsnap verify from-tree/ck.rngsnap && venv/bin/python cleanroom_job.py check from-tree file && venv/bin/python cleanroom_job.py check from-tree bytes" ||
  fail "the clean room could not resume the build tree's checkpoint"
# The wheel's command and the build tree's C command: the same output and
# exit status, run on the same two files by the same relative paths.
mkdir -p "$room/cmp" "$work/cmp"
for d in "$room/cmp" "$work/cmp"; do
  cp "$room/out/ck.rngsnap" "$d/clean.rngsnap" && cp "$room/tree-out/ck.rngsnap" "$d/tree.rngsnap" || exit 1
  printf 'not a checkpoint\n' > "$d/junk.rngsnap"
done
for args in "verify cmp/clean.rngsnap" "verify cmp/junk.rngsnap" "inspect cmp/tree.rngsnap" \
            "inspect --json cmp/clean.rngsnap" "diff cmp/clean.rngsnap cmp/tree.rngsnap" \
            "diff cmp/clean.rngsnap cmp/clean.rngsnap" "nosuchcommand" "--version"; do
  (cd "$room" && "$build/tools/rngsnap" $args > cmp/tree.out 2> cmp/tree.err; echo "rc $?" >> cmp/tree.out)
  in_room "venv/bin/rngsnap $args > cmp/room.out 2> cmp/room.err; echo \"rc \$?\" >> cmp/room.out" || true
  if cmp -s "$room/cmp/tree.out" "$work/cmp/room.out" && cmp -s "$room/cmp/tree.err" "$work/cmp/room.err"; then
    echo "cleanroom: rngsnap $args: the same output and $(tail -n 1 "$room/cmp/tree.out") in the clean room (wheel) and the build tree"
  else
    diff "$room/cmp/tree.out" "$work/cmp/room.out"; diff "$room/cmp/tree.err" "$work/cmp/room.err"
    fail "rngsnap $args: the wheel's command and the build tree's differ"
  fi
done
# The root stays cached; the venv (torch: about 1 GB) goes.
rm -rf "$work/venv"
echo "cleanroom: OK"
