#!/usr/bin/env bash
# tests/gpu/device_check.sh - every GPU check of rngsnap in one bounded run,
# for a borrowed machine with an NVIDIA GPU on which the C build
# dependencies are not installed and nothing can be downloaded.
#
# The Debian packages of scripts/ci-deps.sh that the build needs (inih,
# libltdl, xxhash, cmocka, the Level Zero loader for the xpu plugin, and
# pkgconf to read their .pc files) travel as
# .deb files in $DEPS_DEBS (default .gpudeps/deb, untracked) and are
# unpacked with dpkg -x into a private prefix ($DEPS_PREFIX, default
# /tmp/deps: never /); PKG_CONFIG_PATH, CPATH, LIBRARY_PATH and
# LD_LIBRARY_PATH point there.  Where the interpreter has no Python.h,
# headers of the same Python minor version from $DEPS_DEBS/pyXY are used
# through a python-X.Y.pc in that prefix.  To fill .gpudeps, in the
# repository root of a Debian 12 amd64 machine:
#   echo /.gpudeps/ >> "$(git rev-parse --git-path info/exclude)"
#   mkdir -p .gpudeps/deb && (cd .gpudeps/deb && apt-get download \
#     libinih-dev libinih1 libinireader0 libltdl-dev libltdl7 \
#     libxxhash-dev libxxhash0 libcmocka-dev libcmocka0 libze-dev libze1 \
#     pkgconf pkgconf-bin libpkgconf3)
#   mkdir -p .gpudeps/py312 && cp -r PYTHON312/include/python3.12 .gpudeps/py312/
# (PYTHON312: any CPython 3.12 install with headers, e.g. a pyenv one.)
#
# Parts, each bounded by `timeout` and ending in one line
# "== PART <name>: PASS|FAIL|SKIP (<reason>) [<s>s]", then a summary:
#   info      machine, driver, nvcc, Python, torch, meson
#   deps      the carried packages unpacked, pkg-config finds them
#   setup     meson setup -Dcuda=enabled -Dgpu_arch=sm_90 -Dpython=$PY
#   build     ninja (-k 0: the parts below run with what was built)
#   ldd       rngsnap_cuda.so needs neither libcuda nor libcudart
#   gpu-suite meson test --suite gpu (gpu-cuda: bit-exact cuda == cpu,
#             cuRAND device API, save/load across processes, 1 GiB fill
#             timing; host-side kernel logic; wrapper nvcc)
#   figures   the 1 GiB fill figures gpu-cuda printed (CUDA events)
#   matrix    matrix-cuda and matrix-cpu-only, RNGSNAP_NO_EMULATION=1
#   torch     every CUDA generator of torch saved and loaded across
#             processes through rngsnap.torch (tests/gpu/torch_cuda_check.py)
#   accelerate  accelerate on cuda:0 killed and resumed bit-exact
#             (tests/gpu/accelerate_cuda.py)
#   bench     rngsnap-bench --quick --only fill (its cuRAND rows: cuRAND's
#             host generator, next to the cpu engine)
# The whole run ends within $CHECK_BUDGET_S seconds (default 420): a part
# gets what is left when its own limit would pass it, and is skipped when
# less than 10 s are left.  Everything is also written to $OUT/log ($OUT:
# the device tool's output folder; a new /tmp folder where unset).
#
# usage: tests/gpu/device_check.sh
#   PYTHON=interpreter (default: python3 on PATH)  BUILD_DIR (build-device)
#   DEPS_DEBS (.gpudeps)  DEPS_PREFIX (/tmp/deps)  CHECK_BUDGET_S (420)
#   CHECK_COMMIT (the commit to name, for a copy of the tree without .git)
# tests/gpu/run.sh is the same checks for a machine that has the packages.
set -uo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
export PYTHONUNBUFFERED=1
PY=${PYTHON:-$(command -v python3 || true)}
B=${BUILD_DIR:-build-device}
DEBS=${DEPS_DEBS:-.gpudeps}
D=${DEPS_PREFIX:-/tmp/deps}
BUDGET=${CHECK_BUDGET_S:-420}
OUT=${OUT:-$(mktemp -d /tmp/rngsnap-device-check-XXXXXX)}
ARCH_LIB=lib/x86_64-linux-gnu
NAMES=() STATES=() REASONS=() TIMES=()
CURAND_LIBDIR=

# Seconds a part may take: its own limit, or what is left of the budget
# (5 s kept for the summary).
limit() {
    local left=$((BUDGET - SECONDS - 5))
    [ "$1" -lt "$left" ] && left=$1
    echo "$left"
}

# result NAME STATE REASON START: the part's line, kept for the summary.
result() {
    local dt=$((SECONDS - $4))
    NAMES+=("$1") STATES+=("$2") REASONS+=("$3") TIMES+=("$dt")
    echo "== PART $1: $2 ($3) [${dt}s]"
}

# run_part NAME LIMIT FUNCTION: FUNCTION gets its time limit as $1 and
# sets STATE and REASON.
run_part() {
    local name=$1 t start=$SECONDS
    t=$(limit "$2")
    echo
    echo "======== $name (limit ${t}s, ${SECONDS}s elapsed)"
    if [ "$t" -lt 10 ]; then
        result "$name" SKIP "no time left in the ${BUDGET}s budget" "$start"
        return
    fi
    STATE=FAIL REASON="no verdict"
    "$3" "$t"
    result "$name" "$STATE" "$REASON" "$start"
}

# The verdict of a timeout-bounded command's exit status.
timed_out() { [ "$1" -eq 124 ] || [ "$1" -eq 137 ]; }

# ---- info ------------------------------------------------------------------
part_info() {
    uname -srm
    grep -m1 PRETTY_NAME /etc/os-release 2>/dev/null
    echo "nproc: $(nproc)"
    if command -v nvidia-smi >/dev/null; then
        timeout 30 nvidia-smi -L
        timeout 30 nvidia-smi --query-gpu=name,driver_version,memory.total \
            --format=csv,noheader
    else
        echo "nvidia-smi: not on PATH"
    fi
    if command -v nvcc >/dev/null; then
        echo "nvcc: $(command -v nvcc)"; timeout 20 nvcc --version | tail -2
    else
        echo "nvcc: not on PATH"
    fi
    timeout 20 gcc --version 2>/dev/null | head -1
    echo "python: $PY"
    [ -n "$PY" ] && timeout 60 "$PY" -c 'import sys; print(sys.version.split()[0])
try:
    import torch
    print("torch", torch.__version__, "cuda", torch.version.cuda,
          "available:", torch.cuda.is_available(),
          "devices:", torch.cuda.device_count())
except Exception as e:
    print("torch: not importable:", e)'
    echo "meson: $(command -v meson) $(timeout 20 meson --version 2>&1)"
    echo "ninja: $(command -v ninja) $(timeout 20 ninja --version 2>&1)"
    echo "pkg-config on the system: $(command -v pkg-config || echo none)," \
         "dpkg: $(command -v dpkg || echo none)"
    STATE=PASS REASON="read"
    if [ -z "$PY" ]; then STATE=FAIL REASON="no python3 (set PYTHON)"; fi
}

# ---- deps ------------------------------------------------------------------
# unpack_deb FILE DIR: dpkg -x, or where there is no dpkg, the data member
# of the ar archive through Python's tarfile.
unpack_deb() {
    if command -v dpkg >/dev/null; then
        timeout 60 dpkg -x "$1" "$2"
    else
        timeout 60 "$PY" - "$1" "$2" <<'PYEOF'
import io, sys, tarfile
data = open(sys.argv[1], "rb").read()
assert data[:8] == b"!<arch>\n", "not a .deb"
pos = 8
while pos + 60 <= len(data):
    name = data[pos:pos + 16].decode().strip().rstrip("/")
    size = int(data[pos + 48:pos + 58])
    if name.startswith("data.tar"):
        body = io.BytesIO(data[pos + 60:pos + 60 + size])
        tarfile.open(fileobj=body, mode="r:*").extractall(sys.argv[2])
    pos += 60 + size + (size & 1)
PYEOF
    fi
}

part_deps() {
    local f n=0 pcdir=$D/usr/$ARCH_LIB/pkgconfig
    if ! ls "$DEBS"/deb/*.deb >/dev/null 2>&1; then
        STATE=FAIL REASON="no .deb files in $DEBS/deb (carry .gpudeps)"; return
    fi
    rm -rf "$D" && mkdir -p "$D"
    for f in "$DEBS"/deb/*.deb; do
        unpack_deb "$f" "$D" || { STATE=FAIL REASON="cannot unpack $f"; return; }
        n=$((n + 1))
    done
    # Debian's .pc files name /usr (cmocka.pc in -L/-I too): the prefix.
    sed -i -e "s#\([=LI]\)/usr#\1$D/usr#g" "$pcdir"/*.pc
    export PKG_CONFIG_PATH="$pcdir${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
    export CPATH="$D/usr/include${CPATH:+:$CPATH}"
    export LIBRARY_PATH="$D/usr/$ARCH_LIB${LIBRARY_PATH:+:$LIBRARY_PATH}"
    export LD_LIBRARY_PATH="$D/usr/$ARCH_LIB${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    export PATH="$D/usr/bin:$PATH"
    if "$D/usr/bin/pkgconf" --version >/dev/null 2>&1; then
        export PKG_CONFIG="$D/usr/bin/pkgconf"
    fi
    echo "unpacked $n packages into $D; pkg-config: ${PKG_CONFIG:-$(command -v pkg-config)}"
    # Python headers where the interpreter has none.
    local pyinc pyver
    pyinc=$(timeout 30 "$PY" -c 'import sysconfig; print(sysconfig.get_paths()["include"])')
    pyver=$(timeout 30 "$PY" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
    if [ -f "$pyinc/Python.h" ]; then
        echo "Python.h: $pyinc (the interpreter's own)"
    elif [ -f "$DEBS/py${pyver/./}/python$pyver/Python.h" ]; then
        mkdir -p "$D/py/include"
        cp -r "$DEBS/py${pyver/./}/python$pyver" "$D/py/include/"
        printf 'prefix=%s\nincludedir=${prefix}/include\n\nName: Python\nDescription: carried CPython %s headers (tests/gpu/device_check.sh)\nVersion: %s\nLibs:\nCflags: -I${includedir}/python%s\n' \
            "$D/py" "$pyver" "$pyver" "$pyver" > "$pcdir/python-$pyver.pc"
        echo "Python.h: none in $pyinc; carried python$pyver headers ($DEBS/py${pyver/./}) through $pcdir/python-$pyver.pc"
    else
        echo "Python.h: none in $pyinc and none carried for $pyver: the Python package will not build"
    fi
    # cuRAND: gpu-cuda compares with it (headers at build time, libcurand
    # at run time); a pip toolkit keeps them under site-packages/nvidia.
    local probe
    probe=$(mktemp -d)
    printf '#include <curand.h>\n#include <curand_kernel.h>\n' > "$probe/p.cu"
    if ! timeout 60 nvcc -E "$probe/p.cu" -o /dev/null >/dev/null 2>&1; then
        local inc
        inc=$(timeout 60 "$PY" -c 'import glob, site, os
for s in site.getsitepackages():
    for h in glob.glob(os.path.join(s, "nvidia", "**", "curand.h"), recursive=True):
        print(os.path.dirname(h)); raise SystemExit' 2>/dev/null)
        if [ -n "$inc" ]; then
            # its curand*.h alone: the folder's other CUDA headers must not
            # come before the toolkit's own
            mkdir -p "$D/curand/include"
            ln -sf "$inc"/curand*.h "$D/curand/include/"
            export CPATH="$CPATH:$D/curand/include"
            echo "curand.h: not beside nvcc; using the curand*.h of $inc"
        else
            echo "curand.h: not beside nvcc and not under site-packages/nvidia"
        fi
    else
        echo "curand.h: beside nvcc"
    fi
    rm -rf "$probe"
    # libcurand.so.10 for gpu-cuda and rngsnap-bench (they dlopen it, then
    # /usr/local/cuda/lib64's): from nvcc's toolkit or a pip package where
    # the loader does not find it; only those two get it on
    # LD_LIBRARY_PATH (torch keeps its own CUDA libraries).
    CURAND_LIBDIR=
    if ! timeout 20 ldconfig -p 2>/dev/null | grep -q 'libcurand\.so\.10 ' &&
       [ ! -e /usr/local/cuda/lib64/libcurand.so.10 ]; then
        local top l
        top=$(dirname "$(dirname "$(readlink -f "$(command -v nvcc)")")")
        for l in "$top/lib64" "$top/targets/x86_64-linux/lib"; do
            [ -e "$l/libcurand.so.10" ] && CURAND_LIBDIR=$l && break
        done
        [ -n "$CURAND_LIBDIR" ] || CURAND_LIBDIR=$(timeout 60 "$PY" -c 'import glob, site, os
for s in site.getsitepackages():
    for l in glob.glob(os.path.join(s, "nvidia", "**", "libcurand.so.10"), recursive=True):
        print(os.path.dirname(l)); raise SystemExit' 2>/dev/null)
        echo "libcurand.so.10: not where the loader looks; ${CURAND_LIBDIR:-none found (cuRAND timings will say so)}"
    else
        echo "libcurand.so.10: found by the loader or in /usr/local/cuda/lib64"
    fi
    local mods
    if ! mods=$(timeout 20 pkg-config --modversion inih libxxhash cmocka 2>&1); then
        STATE=FAIL REASON="pkg-config does not find the carried packages: $mods"
        return
    fi
    if [ ! -f "$D/usr/include/ltdl.h" ] || [ ! -e "$D/usr/$ARCH_LIB/libltdl.so" ]; then
        STATE=FAIL REASON="ltdl.h or libltdl.so missing after unpacking"; return
    fi
    # the xpu plugin and a matrix test include it; nothing on the GPU path
    local ze="level_zero/ze_api.h carried"
    [ -f "$D/usr/include/level_zero/ze_api.h" ] ||
        ze="no level_zero/ze_api.h (libze-dev): the xpu plugin will not build"
    STATE=PASS REASON="$n packages in $D; inih, libxxhash, cmocka: $(echo $mods); $ze"
}

# ---- setup, build ----------------------------------------------------------
part_setup() {
    rm -rf "$B"
    timeout -k 5 "$1" meson setup "$B" -Dcuda=enabled -Dgpu_arch=sm_90 \
        -Dpython="$PY" -Dpython_compat= > "$OUT/setup.txt" 2>&1
    local rc=$?
    sed -n '/^rngsnap [0-9]/,$p' "$OUT/setup.txt" | grep -v '^ *$' | tail -40
    if [ $rc -ne 0 ]; then
        tail -30 "$OUT/setup.txt"
        [ -f "$B/meson-logs/meson-log.txt" ] && cp "$B/meson-logs/meson-log.txt" "$OUT/meson-log.txt"
        STATE=FAIL REASON="meson setup exited $rc$(timed_out $rc && echo ': timed out')"
        return
    fi
    if ! grep -Eq 'CUDA kernels +: yes' "$OUT/setup.txt"; then
        STATE=FAIL REASON="configured without CUDA kernels"; return
    fi
    STATE=PASS REASON="CUDA kernels for sm_90; $(grep -Eo 'nvcc +: .*' "$OUT/setup.txt" | tail -1)"
    rm -f "$OUT/setup.txt"
}

part_build() {
    if [ ! -f "$B/build.ninja" ]; then STATE=SKIP REASON="not configured"; return; fi
    timeout -k 5 "$1" ninja -C "$B" -k 0 -j"$(nproc)" > "$OUT/build.txt" 2>&1
    local rc=$?
    tail -3 "$OUT/build.txt"
    if [ $rc -ne 0 ]; then
        grep -E '^FAILED|error' "$OUT/build.txt" | head -40
        STATE=FAIL REASON="ninja exited $rc$(timed_out $rc && echo ': timed out'); the parts below use what was built"
        return
    fi
    rm -f "$OUT/build.txt"
    local ext
    ext=$(ls "$B"/python/rngsnap/_rngsnap*.so 2>/dev/null | head -1)
    STATE=PASS REASON="everything built; Python module: ${ext:-not built}"
}

part_ldd() {
    local so=$B/plugins/rngsnap_cuda.so
    if [ ! -f "$so" ]; then STATE=FAIL REASON="$so not built"; return; fi
    timeout 20 ldd "$so"
    if timeout 20 ldd "$so" | grep -Eq 'libcuda\.so|libcudart'; then
        STATE=FAIL REASON="rngsnap_cuda.so has a hard dependency on the CUDA driver/runtime"
    else
        STATE=PASS REASON="no libcuda/libcudart among its NEEDED libraries"
    fi
}

# ---- meson tests -----------------------------------------------------------
# mtest LIMIT LOGNAME ARGS...: meson test, its log kept in $OUT/LOGNAME.
mtest() {
    local t=$1 log=$2; shift 2
    timeout -k 5 "$t" meson test -C "$B" --no-rebuild --print-errorlogs -v "$@"
    local rc=$?
    cp "$B/meson-logs/testlog.txt" "$OUT/$log" 2>/dev/null
    return $rc
}

# The status meson gave test NAME in the last run (OK, FAIL, SKIP, ...;
# testlog.json names a test "<suites> - <project>:<name>"); no NAME: every
# test's "name STATUS", comma-separated.
test_status() {
    timeout 30 "$PY" - "$B/meson-logs/testlog.json" "${1:-}" <<'PYEOF'
import json, sys
try:
    runs = [json.loads(line) for line in open(sys.argv[1])]
except OSError:
    runs = []
got = {r.get("name", "").rsplit(":", 1)[-1]: r.get("result", "?") for r in runs}
if sys.argv[2]:
    print(got.get(sys.argv[2], "NOT RUN"))
else:
    print(", ".join("%s %s" % kv for kv in got.items()) or "no test ran")
PYEOF
}

part_gpu_suite() {
    if [ ! -f "$B/build.ninja" ]; then STATE=SKIP REASON="not configured"; return; fi
    LD_LIBRARY_PATH=$LD_LIBRARY_PATH${CURAND_LIBDIR:+:$CURAND_LIBDIR} \
        mtest "$1" testlog-gpu.txt --suite gpu
    local rc=$? gpu each
    gpu=$(test_status gpu-cuda)
    each=$(test_status)
    if [ $rc -ne 0 ]; then
        STATE=FAIL REASON="meson test exited $rc$(timed_out $rc && echo ': timed out'): $each"
    elif [ "$gpu" != OK ]; then
        STATE=SKIP REASON="gpu-cuda $gpu (its output above says why): $each"
    else
        STATE=PASS REASON="$each"
    fi
}

part_figures() {
    local log=$OUT/testlog-gpu.txt
    if [ ! -f "$log" ] || ! grep -q '^4\. 1 GiB fill' "$log"; then
        STATE=SKIP REASON="gpu-cuda did not reach its timing section"; return
    fi
    grep -E '^GPU 0:' "$log" | head -1
    sed -n '/^4\. 1 GiB fill/,/^\(PASSED\|FAILED\)/p' "$log"
    STATE=PASS REASON="the figures above, from gpu-cuda's section 4"
}

part_matrix() {
    if [ ! -f "$B/build.ninja" ]; then STATE=SKIP REASON="not configured"; return; fi
    RNGSNAP_NO_EMULATION=1 mtest "$1" testlog-matrix.txt matrix-cuda matrix-cpu-only
    local rc=$?
    local each="matrix-cuda $(test_status matrix-cuda), matrix-cpu-only $(test_status matrix-cpu-only)"
    if [ $rc -eq 0 ]; then
        case $each in
            *SKIP*) STATE=SKIP REASON="$each" ;;
            *) STATE=PASS REASON="$each (RNGSNAP_NO_EMULATION=1)" ;;
        esac
    else
        STATE=FAIL REASON="meson test exited $rc$(timed_out $rc && echo ': timed out'): $each"
    fi
}

# ---- Python ----------------------------------------------------------------
py_ready() {
    if ! ls "$B"/python/rngsnap/_rngsnap*.so >/dev/null 2>&1; then
        REASON="the Python module was not built in $B/python"; return 1
    fi
    if ! timeout 60 "$PY" -c 'import torch, sys; sys.exit(not torch.cuda.is_available())' 2>/dev/null; then
        REASON="no CUDA torch for $PY (torch.cuda.is_available() false or no torch)"
        return 1
    fi
}

part_torch() {
    if ! py_ready; then STATE=SKIP; return; fi
    local ck a b rc
    ck=$(mktemp -d)/torch_cuda.rngsnap
    a=$(timeout -k 5 $(($1 / 2)) "$PY" tests/gpu/torch_cuda_check.py save "$ck" 2>&1)
    rc=$?
    echo "save: $a"
    if [ $rc -ne 0 ]; then STATE=FAIL REASON="the save process exited $rc"; return; fi
    b=$(timeout -k 5 $(($1 / 2)) "$PY" tests/gpu/torch_cuda_check.py load "$ck" 2>&1)
    rc=$?
    echo "load: $b"
    if [ $rc -ne 0 ]; then STATE=FAIL REASON="the load process exited $rc"; return; fi
    if [ -n "$a" ] && [ "$a" = "$b" ]; then
        STATE=PASS REASON="$(echo "$a" | grep -c '^cuda') CUDA generator(s) and the CPU's restored bit for bit in a new process"
    else
        STATE=FAIL REASON="the loading process drew other numbers"
    fi
}

part_accelerate() {
    if ! py_ready; then STATE=SKIP; return; fi
    timeout -k 5 "$1" "$PY" tests/gpu/accelerate_cuda.py
    local rc=$?
    case $rc in
        0) STATE=PASS REASON="killed after save_state at step 4, resumed: the 12 losses and the final parameters of the uninterrupted run, torch.cuda:0 restored" ;;
        77) STATE=SKIP REASON="see the line above" ;;
        *) STATE=FAIL REASON="tests/gpu/accelerate_cuda.py exited $rc$(timed_out $rc && echo ': timed out')" ;;
    esac
}

# ---- bench -----------------------------------------------------------------
part_bench() {
    local exe=$B/tests/bench/rngsnap-bench
    if [ ! -x "$exe" ]; then STATE=SKIP REASON="$exe not built"; return; fi
    LD_LIBRARY_PATH=$LD_LIBRARY_PATH${CURAND_LIBDIR:+:$CURAND_LIBDIR} \
        timeout -k 5 "$1" "$exe" --quick --only fill > "$OUT/bench.txt" 2>&1
    local rc=$?
    # the cuRAND rows and what they are measured against; the whole
    # table is in $OUT/bench.txt
    grep -E 'note:|^== |memset +-|rngsnap [a-z0-9]+ +u32 |cuRAND host|ratios:' "$OUT/bench.txt"
    if [ $rc -ne 0 ]; then
        STATE=FAIL REASON="rngsnap-bench exited $rc$(timed_out $rc && echo ': timed out')"
    elif grep -q 'cuRAND host  ' "$OUT/bench.txt"; then
        STATE=PASS REASON="table above (cuRAND host rows: curandGenerate* on the CPU)"
    else
        STATE=PASS REASON="table above; no cuRAND rows (libcurand.so.10 not found: see its note)"
    fi
}

main() {
    echo "rngsnap device check: $(date -u '+%Y-%m-%d %H:%M:%S UTC'), commit ${CHECK_COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo '?')}, budget ${BUDGET}s, log $OUT/log"
    # meson and ninja may be pip installs beside the interpreter
    if [ -n "$PY" ]; then export PATH="$PATH:$(dirname "$PY")"; fi
    if ! command -v meson >/dev/null && [ -n "$PY" ] &&
       timeout 30 "$PY" -c 'import mesonbuild' 2>/dev/null; then
        mkdir -p "$D.bin"
        printf '#!/bin/sh\nexec %q -m mesonbuild.mesonmain "$@"\n' "$PY" > "$D.bin/meson"
        chmod +x "$D.bin/meson"
        export PATH="$D.bin:$PATH"
    fi
    export PYTHONPATH="$ROOT/python:$ROOT/$B/python${PYTHONPATH:+:$PYTHONPATH}"
    run_part info 60 part_info
    run_part deps 60 part_deps
    if [ "${STATES[1]}" = PASS ]; then
        run_part setup 150 part_setup
    else
        result setup SKIP "the build dependencies are missing" "$SECONDS"
    fi
    run_part build 240 part_build
    run_part ldd 20 part_ldd
    run_part gpu-suite 150 part_gpu_suite
    run_part figures 10 part_figures
    run_part torch 90 part_torch
    run_part accelerate 150 part_accelerate
    run_part matrix 90 part_matrix
    run_part bench 60 part_bench

    echo
    echo "======== summary (${SECONDS}s of ${BUDGET}s)"
    local i fails=0
    for i in "${!NAMES[@]}"; do
        printf '%-10s %-4s %4ss  %s\n' "${NAMES[$i]}" "${STATES[$i]}" \
            "${TIMES[$i]}" "${REASONS[$i]}"
        [ "${STATES[$i]}" = FAIL ] && fails=$((fails + 1))
    done
    echo "device check: $([ $fails -eq 0 ] && echo PASSED || echo "FAILED ($fails part(s))")"
    [ $fails -eq 0 ]
}

mkdir -p "$OUT"
main 2>&1 | tee "$OUT/log"
exit "${PIPESTATUS[0]}"
