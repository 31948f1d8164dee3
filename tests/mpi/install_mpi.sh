#!/usr/bin/env bash
# install_mpi.sh - librngsnap_mpi as a user installs and uses it: install
# the build into a temporary folder, check what landed (library with a
# SONAME exporting only rngsnap_mpi_*, rngsnap/mpi.h, rngsnap-mpi.pc),
# build a small MPI program OUT OF TREE with
# `pkg-config --cflags --libs rngsnap-mpi`, and run it on 2 ranks: save,
# then a new job loads and draws the same numbers.
# usage: install_mpi.sh MPI_BUILT BUILD_ROOT INI   (exit 77 without MPI)
set -u
[ "$1" = yes ] || { echo "skip: librngsnap_mpi not built (Meson found no MPI)"; exit 77; }
command -v mpirun >/dev/null || { echo "skip: no mpirun on PATH"; exit 77; }
build=$2 ini=$3
tmp=$(mktemp -d "${TMPDIR:-/tmp}/rngsnap-mpi-install-XXXXXX") && trap 'rm -rf "$tmp"' EXIT
fails=0
ok()  { echo "ok     $*"; }
bad() { echo "FAILED $*"; fails=$((fails + 1)); }
[ "$(id -u)" = 0 ] && export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

meson install -C "$build" --destdir "$tmp/dest" --no-rebuild >"$tmp/install.log" 2>&1 \
  || { cat "$tmp/install.log"; echo "FAILED meson install"; exit 1; }
pc=$(find "$tmp/dest" -name rngsnap-mpi.pc | head -n1)
[ -n "$pc" ] || { echo "FAILED rngsnap-mpi.pc not installed"; exit 1; }
# The .pc files name the final prefix: copies that name the staged one
# (not --define-variable, which would move MPI's own paths as well).
prefix=$tmp/dest$(PKG_CONFIG_PATH=$(dirname "$pc") pkg-config --variable=prefix rngsnap-mpi)
mkdir -p "$tmp/pc"
for f in "$(dirname "$pc")"/rngsnap*.pc; do
  sed "s|^prefix=.*|prefix=$prefix|" "$f" >"$tmp/pc/$(basename "$f")"
done
export PKG_CONFIG_PATH=$tmp/pc
pkgc() { pkg-config "$@" rngsnap-mpi; }
libdir=$(pkgc --variable=libdir)
ok "pkg-config finds rngsnap-mpi $(pkgc --modversion) (Requires: $(pkgc --print-requires | tr '\n' ' '))"

so=$libdir/librngsnap_mpi.so
soname=$(readelf -d "$so" 2>/dev/null | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
if [ -n "$soname" ] && [ -e "$libdir/$soname" ]; then ok "librngsnap_mpi has SONAME $soname"
else bad "librngsnap_mpi.so has no SONAME (or $libdir/$soname missing)"; fi
syms=$(nm -D --defined-only "$so" | awk '{print $3}' | sort | tr '\n' ' ')
if [ "$syms" = "rngsnap_mpi_load rngsnap_mpi_save " ]; then ok "exports only rngsnap_mpi_save/load"
else bad "librngsnap_mpi exports: $syms"; fi
if [ -f "$prefix/include/rngsnap/mpi.h" ]; then ok "header rngsnap/mpi.h installed"
else bad "rngsnap/mpi.h not installed"; fi

cat >"$tmp/app.c" <<'C'
#include <rngsnap/mpi.h>
#include <stdio.h>
#include <string.h>
/* save DIR: seed, draw, save, print the next draws; load DIR: print them. */
int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    rngsnap *ctx;
    uint32_t w[4];
    int load = strcmp(argv[1], "load") == 0, rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    int rc = rngsnap_open(&ctx, argv[3], load ? RNGSNAP_RESUME : 0);
    if (!rc && !load) {
        rc = rngsnap_seed_all(ctx, 9);
        if (!rc) rc = rngsnap_generate(rngsnap_stream_at(ctx, 0), RNGSNAP_U32, w, 3);
        if (!rc) rc = rngsnap_mpi_save(ctx, MPI_COMM_WORLD, argv[2], 0);
    } else if (!rc) {
        rc = rngsnap_mpi_load(ctx, MPI_COMM_WORLD, argv[2], 0);
    }
    if (!rc) rc = rngsnap_generate(rngsnap_stream_at(ctx, 0), RNGSNAP_U32, w, 4);
    if (rc) fprintf(stderr, "rank %d: %s\n", rank, rngsnap_errmsg(ctx));
    else printf("rank %d: %08x %08x %08x %08x\n", rank, w[0], w[1], w[2], w[3]);
    rngsnap_close(ctx);
    MPI_Finalize();
    return rc;
}
C
if cc -std=c11 -Wall -Wextra -Werror -o "$tmp/app" "$tmp/app.c" $(pkgc --cflags) $(pkgc --libs); then
  ok "an MPI program built out of tree with pkg-config rngsnap-mpi"
else bad "the MPI program does not build out of tree"; echo "$fails failed"; exit 1; fi
export LD_LIBRARY_PATH=$libdir  # the staged libraries, not system ones
a=$(mpirun --oversubscribe -np 2 "$tmp/app" save "$tmp/ck" "$ini" 2>&1 | sort)
b=$(mpirun --oversubscribe -np 2 "$tmp/app" load "$tmp/ck" "$ini" 2>&1 | sort)
echo "$a"
if [ -n "$a" ] && [ "$a" = "$b" ] && [ "$(echo "$a" | grep -c '^rank [01]: [0-9a-f]')" = 2 ]; then
  ok "2 ranks: the installed library saves, a new job resumes bit-exact"
else bad "resume through the installed library: save printed [$a], load printed [$b]"; fi
echo "$fails failed"
[ "$fails" = 0 ]
