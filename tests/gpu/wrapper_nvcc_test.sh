#!/bin/bash
# wrapper_nvcc_test.sh NVCC SOURCE_ROOT - configure the project with nvcc
# reached only through a wrapper script outside its toolkit (as on CI:
# /usr/local/bin/nvcc running /usr/local/cuda-13.0/bin/nvcc) and no CUDA
# folder on PATH.  The build must still find libcudart_static.a in the
# toolkit nvcc reports, and build the GPU kernels.
set -euo pipefail
src=$2
# The real compiler, resolved now: inside the wrapper a bare "nvcc" would
# find the wrapper itself.
nvcc=$(command -v "$1") || { echo "FAIL: $1 not found"; exit 1; }
# meson and ninja resolved now too: they may live beside a Python (a pip
# install in a venv) rather than in /usr/bin; neither is a CUDA folder.
meson=$(command -v meson) || { echo "FAIL: meson not found on PATH"; exit 1; }
ninja=${NINJA:-$(command -v ninja || command -v ninja-build || true)}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/rngsnap-wrapper-nvcc-XXXXXX")
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/bin"
printf '#!/bin/sh\nexec %q "$@"\n' "$nvcc" > "$tmp/bin/nvcc"
chmod +x "$tmp/bin/nvcc"
# No /usr/local/cuda/bin here; the C compiler comes from /usr/bin.
path="$tmp/bin:/usr/sbin:/usr/bin:/sbin:/bin"
log="$tmp/setup.log"
if ! env -u CUDA_PATH -u CUDA_HOME -u CUDA_ROOT PATH="$path" CUDACXX= \
        ${ninja:+NINJA="$ninja"} "$meson" setup "$tmp/build" "$src" -Dcuda=enabled -Dtests=disabled \
        > "$log" 2>&1; then
    cat "$log"
    echo "FAIL: configure with a wrapper nvcc outside its toolkit failed"
    exit 1
fi
grep -E "Program nvcc|cudart_static|CUDA kernels" "$log"
grep -q "Library cudart_static found: YES" "$log" || {
    echo "FAIL: libcudart_static.a not found through the wrapper"; exit 1; }
grep -Eq "CUDA kernels +: yes" "$log" || {
    echo "FAIL: GPU kernels not enabled"; exit 1; }
echo "ok: a wrapper nvcc at $tmp/bin/nvcc finds its toolkit's libcudart_static.a"
