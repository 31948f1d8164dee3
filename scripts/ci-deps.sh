#!/usr/bin/env bash
# ci-deps.sh - the Debian/Ubuntu packages rngsnap needs to build and test.
# Sourced by scripts/test.sh and scripts/demo.sh; run directly to install.
# nvcc is optional: with it the cuda plugin gets GPU kernels (meson -Dcuda=auto).

RNGSNAP_DEB_PACKAGES=(
  build-essential pkg-config meson ninja-build python3
  libinih-dev      # rng.ini parser
  libltdl-dev      # plugin loader
  libxxhash-dev    # checkpoint checksums
  libcmocka-dev    # tests
  libze1 libze-dev # oneAPI Level Zero loader: the xpu plugin's "no driver" path is tested for real
  valgrind         # leak/memory check of the core suites
  libopenmpi-dev openmpi-bin # librngsnap_mpi and its mpirun tests
  python3-dev python3-mesonpy python3-pytest python3-numpy python3-torch # the Python package and its tests
  patchelf         # meson-python sets the rpath of a wheel's libraries with it (pip install .)
  gcc-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user # aarch64 NEON path: cross-built, run under qemu (tests/cross)
)

rngsnap_install_deps() {
  local missing=()
  local p
  for p in "${RNGSNAP_DEB_PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  echo "rngsnap: installing ${missing[*]}"
  local sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  $sudo apt-get update -qq || return 1
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
  set -e
  rngsnap_install_deps
fi
