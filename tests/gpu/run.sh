#!/usr/bin/env bash
# tests/gpu/run.sh - build rngsnap with CUDA and run the GPU checks on a
# machine with an NVIDIA GPU: cuda == cpu bit for bit, cuRAND device API
# agreement, save/load across processes, 1 GiB fill timing; then the cuda
# and cpu-only clusters of the backend matrix with emulation OFF (real GPU).
# usage: tests/gpu/run.sh [BUILD_DIR]     (GPU_ARCH=sm_90 etc. optional;
#        PYTHON=interpreter to build the Python package for and run the
#        torch check with: default python3 on PATH)
set -uo pipefail
cd "$(dirname "$0")/../.."
B=${1:-build-gpu}
torch_py=${PYTHON:-$(command -v python3)}
nvidia-smi -L || echo "nvidia-smi: not available"
nvcc --version | tail -2
if [ ! -f "$B/build.ninja" ]; then
  meson setup "$B" -Dcuda=enabled -Dgpu_arch="${GPU_ARCH:-}" -Dpython="$torch_py" || exit 1
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
# torch CUDA (issue 10): rngsnap.torch tracks every visible device's
# generator; one process seeds, draws and saves, another loads, and both
# then draw the same numbers on every device (and on the CPU) bit for bit.
# Needs the Python module built in $B and a CUDA build of torch for the
# interpreter $PYTHON (default: python3 on PATH).
export PYTHONPATH="$PWD/python:$B/python${PYTHONPATH:+:$PYTHONPATH}"
if "$torch_py" -c 'import torch, rngsnap.torch, sys; sys.exit(not torch.cuda.is_available())' 2>/dev/null; then
  ck=$(mktemp -d)/torch_cuda.rngsnap
  torch_check() { "$torch_py" tests/gpu/torch_cuda_check.py "$1" "$ck"; }
  a=$(torch_check save) && b=$(torch_check load) && [ -n "$a" ] && [ "$a" = "$b" ] \
    && echo "torch CUDA: $(echo "$a" | grep -c '^cuda') device generator(s) restored bit for bit" \
    || { echo "FAIL: torch CUDA generators not restored"; echo "$a"; echo "$b"; rc=1; }
else
  echo "torch CUDA check: skipped (no CUDA torch for $torch_py, or no rngsnap module in $B/python)"
fi
echo "== gpu run: $([ $rc -eq 0 ] && echo PASSED || echo FAILED)"
exit $rc
