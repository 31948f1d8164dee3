/*
 * bench_paths.c - each SIMD path this CPU runs, forced, against the
 * straightforward Philox loop built with -O3 -march=native (issue 11's
 * yardstick), and each way of writing a large fill.
 *
 * Every figure of a size is timed interleaved with the native loop
 * (bench_time_n), so a change of load on a shared machine hits both and
 * the ratio printed next to it holds within the run.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "philox.h"
#include "philox_isa.h"

typedef struct path_job {
    void *buf;
    size_t bytes;
    rngsnap_dist dist;
    philox_isa isa;
    px_tuning tune; /* set for the fill, then put back */
    rngsnap_philox pos;
} path_job;

static void run_path(void *a)
{
    path_job *j = a;
    px_tuning keep = px_tune;
    px_tune = j->tune;
    size_t n = j->bytes / philox_value_size(j->dist);
    int rc = philox_generate_isa(&j->pos, j->dist, j->buf, n, j->isa);
    px_tune = keep;
    if (rc != 0)
        abort();
}

static void run_native(void *a)
{
    path_job *j = a;
    bench_ref_fill_native(j->pos.seed, 0, j->pos.offset / 4, j->buf,
                          j->bytes / 16);
    j->pos.offset += j->bytes / 4;
}

static void size_text(size_t bytes, char *buf, size_t len)
{
    if (bytes >= ((size_t)1 << 20))
        snprintf(buf, len, "%zu MiB", bytes >> 20);
    else
        snprintf(buf, len, "%zu KiB", bytes >> 10);
}

/* One row: median (s) and best (b) seconds, next to the native loop's
 * median and best of the same interleaved runs. */
static void path_row(const char *bench, const char *path, const char *what,
                     size_t bytes, double s, double b, double native_s,
                     double native_b)
{
    char lab[32], fields[400], text[256];
    size_text(bytes, lab, sizeof lab);
    double g = (double)bytes / s * 1e-9, gb = (double)bytes / b * 1e-9;
    snprintf(fields, sizeof fields,
             "\"path\":\"%s\",\"what\":\"%s\",\"bytes\":%zu,\"gbps\":%.3f,"
             "\"vs_native_loop\":%.3f,\"best_gbps\":%.3f,"
             "\"best_vs_native_best\":%.3f",
             path, what, bytes, g, native_s / s, gb, native_b / b);
    snprintf(text, sizeof text,
             "%9s  %-7s %-24s %6.2f GB/s %5.2fx   best %6.2f GB/s %5.2fx",
             lab, path, what, g, native_s / s, gb, native_b / b);
    bench_row(bench, fields, text);
}

/* SIMD paths this CPU runs (scalar is the fallback, not measured here). */
static int simd_paths(philox_isa *out)
{
    int n = 0;
    for (int isa = PHILOX_ISA_AVX2; isa < PHILOX_ISA_COUNT; isa++)
        if (philox_isa_supported((philox_isa)isa) &&
            px_fill_for((philox_isa)isa) != NULL)
            out[n++] = (philox_isa)isa;
    return n;
}

static void tuning_text(const px_tuning *t, char *buf, size_t len)
{
    char nt[32], pf[32], lg[32];
    if (t->nt_min == SIZE_MAX)
        snprintf(nt, sizeof nt, "never");
    else
        size_text(t->nt_min, nt, sizeof nt);
    if (t->prefetch_min == SIZE_MAX)
        snprintf(pf, sizeof pf, "never");
    else
        size_text(t->prefetch_min, pf, sizeof pf);
    if (t->large_min == SIZE_MAX)
        snprintf(lg, sizeof lg, "never");
    else
        size_text(t->large_min, lg, sizeof lg);
    snprintf(buf, len,
             "row \"%s\": non-temporal from %s%s, prefetchw from %s, "
             "%d groups (avx2) from %s",
             t->family, nt,
             t->nt_probe ? " if the first such fill measures it faster" : "",
             pf, t->large_groups, lg);
}

/* U32, F32, F64 (and the normals) of each path next to the native loop,
 * at 64 KiB, 1 MiB and 64 MiB, with this CPU family's tuning. */
static void bench_paths_vs_native(void *buf, const philox_isa *paths,
                                  int npaths)
{
    static const size_t sizes[] = {65536, 1 << 20, 64 << 20};
    static const rngsnap_dist dists[] = {RNGSNAP_U32, RNGSNAP_F32,
                                         RNGSNAP_F64, RNGSNAP_NORMAL_F32,
                                         RNGSNAP_NORMAL_F64};
    enum { ND = sizeof dists / sizeof dists[0] };
    bench_section("each SIMD path against the -O3 -march=native loop "
                  "(interleaved: medians, and best runs; issue 11 asks >= 4x "
                  "for u32/f32/f64)");
    for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++) {
        for (int p = 0; p < npaths; p++) {
            path_job j[ND + 1];
            void (*fns[ND + 1])(void *);
            void *args[ND + 1];
            double t[ND + 1], tb[ND + 1];
            for (int k = 0; k <= ND; k++) {
                j[k] = (path_job){buf, sizes[si], k < ND ? dists[k] : 0,
                                  paths[p], px_tune, {1234, 0, 0}};
                fns[k] = k < ND ? run_path : run_native;
                args[k] = &j[k];
            }
            bench_time_n_best(fns, args, ND + 1, t, tb);
            const char *name = philox_isa_name(paths[p]);
            for (int k = 0; k < ND; k++)
                path_row("path_fill", name, rngsnap_dist_name(dists[k]),
                         sizes[si], t[k], tb[k], t[ND], tb[ND]);
            path_row("path_fill", name, "(native loop, u32)", sizes[si],
                     t[ND], tb[ND], t[ND], tb[ND]);
        }
    }
}

/* Whether way k of bench_large_fills applies to every path (plain or
 * non-temporal with the path's own kernel, and the row), not to avx2 only
 * (group counts and prefetchw are the avx2 kernel's). */
static int way_for_every_path(int k, int nways)
{
    return k == 0 || k == 5 || k == nways - 1;
}

/* U32 at 16, 64 and 256 MiB written each way a path can: plain stores,
 * prefetchw ahead of them, non-temporal stores, with 6, 4 or 3 groups per
 * step (avx2), and the way this CPU family's row picks.  Paths other than
 * avx2 have no group counts or prefetchw: their rows say only "plain" or
 * "non-temporal". */
static void bench_large_fills(void *buf, size_t cap, const philox_isa *paths,
                              int npaths)
{
    static const size_t sizes[] = {16 << 20, 64 << 20, 256 << 20};
    const size_t M = SIZE_MAX;
    static const char *const names[] = {
        "plain, 6 groups",        "plain, 3 groups",
        "prefetchw, 6 groups",    "prefetchw, 3 groups",
        "prefetchw, 4 groups",    "non-temporal, 6 groups",
        "non-temporal, 3 groups", "non-temporal, 4 groups",
        "this family's row"};
    const px_tuning ways[] = {
        {"", M, M, M, 3, 0}, {"", M, M, 0, 3, 0}, {"", M, 0, M, 3, 0},
        {"", M, 0, 0, 3, 0}, {"", M, 0, 0, 4, 0}, {"", 0, M, M, 3, 0},
        {"", 0, M, 0, 3, 0}, {"", 0, M, 0, 4, 0}, px_tune};
    enum { NW = sizeof ways / sizeof ways[0] };
    char title[400], row[300];
    tuning_text(&px_tune, row, sizeof row);
    snprintf(title, sizeof title, "large fills, u32, each way (%s)", row);
    bench_section(title);
    for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++) {
        if (sizes[si] > cap)
            continue;
        for (int p = 0; p < npaths; p++) {
            path_job j[NW + 1];
            void (*fns[NW + 1])(void *);
            void *args[NW + 1];
            double t[NW + 1], tb[NW + 1];
            int n = 0;
            for (int k = 0; k < NW; k++) {
                /* groups and prefetch are the avx2 kernel's; the others
                 * only choose non-temporal or plain */
                if (paths[p] != PHILOX_ISA_AVX2 && !way_for_every_path(k, NW))
                    continue;
                j[n] = (path_job){buf, sizes[si], RNGSNAP_U32, paths[p],
                                  ways[k], {1234, 0, 0}};
                fns[n] = run_path;
                args[n] = &j[n];
                n++;
            }
            j[n] = (path_job){buf, sizes[si], RNGSNAP_U32, paths[p], px_tune,
                              {1234, 0, 0}};
            fns[n] = run_native;
            args[n] = &j[n];
            bench_time_n_best(fns, args, n + 1, t, tb);
            const char *name = philox_isa_name(paths[p]);
            for (int k = 0, i = 0; k < NW; k++) {
                if (paths[p] != PHILOX_ISA_AVX2 && !way_for_every_path(k, NW))
                    continue;
                const char *what = names[k];
                if (paths[p] != PHILOX_ISA_AVX2 && k == 0)
                    what = "plain";
                else if (paths[p] != PHILOX_ISA_AVX2 && k == 5)
                    what = "non-temporal";
                path_row("large_fill", name, what, sizes[si], t[i], tb[i],
                         t[n], tb[n]);
                i++;
            }
            path_row("large_fill", name, "(native loop, u32)", sizes[si],
                     t[n], tb[n], t[n], tb[n]);
        }
    }
    if (px_tune.nt_probe)
        for (int p = 0; p < npaths; p++)
            bench_note("%s: the row's first fill of %zu MiB or more chose "
                       "%s", philox_isa_name(paths[p]), px_tune.nt_min >> 20,
                       px_nt_verdict_name(paths[p]));
}

void bench_paths(void *buf, size_t cap)
{
    philox_isa paths[PHILOX_ISA_COUNT];
    int npaths = simd_paths(paths);
    philox_isa best;
    philox_isa_resolve(PHILOX_ISA_AUTO, &best, NULL); /* sets px_tune */
    if (npaths == 0) {
        bench_section("SIMD paths");
        bench_note("no SIMD path on this CPU: nothing to compare");
        return;
    }
    bench_paths_vs_native(buf, paths, npaths);
    bench_large_fills(buf, cap, paths, npaths);
}
