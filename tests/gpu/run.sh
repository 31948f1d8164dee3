#!/usr/bin/env bash
# tests/gpu/run.sh - build rngsnap with CUDA and run the GPU checks on a
# machine with an NVIDIA GPU: cuda == cpu bit for bit, cuRAND device API
# agreement, save/load across processes, 1 GiB fill timing; then the cuda
# and cpu-only clusters of the backend matrix with emulation OFF (real GPU).
# usage: tests/gpu/run.sh [BUILD_DIR]     (GPU_ARCH=sm_90 etc. optional)
set -uo pipefail
cd "$(dirname "$0")/../.."
B=${1:-build-gpu}
nvidia-smi -L || echo "nvidia-smi: not available"
nvcc --version | tail -2
if [ ! -f "$B/build.ninja" ]; then
  meson setup "$B" -Dcuda=enabled -Dgpu_arch="${GPU_ARCH:-}" || exit 1
fi
ninja -C "$B" -j"$(nproc)" || exit 1
echo "== ldd rngsnap_cuda.so (must not need libcuda/libcudart):"
ldd "$B/plugins/rngsnap_cuda.so"
if ldd "$B/plugins/rngsnap_cuda.so" | grep -Eq 'libcuda\.so|libcudart'; then
  echo "FAIL: rngsnap_cuda.so has a hard dependency on the CUDA driver/runtime"; exit 1
fi
rc=0
meson test -C "$B" --suite gpu --print-errorlogs -v || rc=1
RNGSNAP_NO_EMULATION=1 meson test -C "$B" --print-errorlogs -v matrix-cuda matrix-cpu-only || rc=1
echo "== gpu run: $([ $rc -eq 0 ] && echo PASSED || echo FAILED)"
exit $rc
