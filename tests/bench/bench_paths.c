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
    char nt[32], pf[32], lg[32], l2[32];
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
    size_t l2b = px_cache_bytes(2);
    if (l2b > 0)
        size_text(l2b, l2, sizeof l2);
    else
        snprintf(l2, sizeof l2, "unknown");
    snprintf(buf, len,
             "row \"%s\"; L2 %s, L3 %zu MiB (OS); non-temporal stores %s "
             "%s%s; prefetchw from %s, %d groups (avx2) from %s",
             t->family, l2, px_cache_bytes(3) >> 20,
             t->nt_probe ? "measured per size class from" : "from", nt,
             t->nt_probe ? "" : " (not measured)", pf, t->large_groups, lg);
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
 * non-temporal with the path's own kernel), not to avx2 only (group
 * counts and prefetchw are the avx2 kernel's). */
static int way_for_every_path(int k)
{
    return k == 0 || k == 5;
}

static double clock_now(void)
{
    return B.cpu_clock ? bench_cpu_now() : bench_now();
}

/* Seconds of k fills of j (one call each), on the bench's clock. */
static double time_fills(path_job *j, int k)
{
    double t0 = clock_now();
    for (int i = 0; i < k; i++)
        run_path(j);
    return clock_now() - t0;
}

/* What the engine's measuring costs at this size: the fills of one size
 * class that it writes half plain, half non-temporal (from a fresh
 * verdict), against as many fills of plain and of non-temporal stores,
 * each on its own buffer. */
static void probe_cost(path_job *choice, path_job *plain, path_job *nt)
{
    px_nt_probe_reset(); /* later fills decide again, as a new process */
    int k = 0;
    double tc = clock_now();
    while (k < PX_PROBE_TRIES &&
           (k == 0 || strcmp(px_nt_verdict_name(choice->isa, choice->bytes),
                             "being measured") == 0)) {
        run_path(choice);
        k++;
    }
    tc = clock_now() - tc;
    double tp = time_fills(plain, k), tn = time_fills(nt, k);
    char lab[32], fields[300], text[300];
    size_text(choice->bytes, lab, sizeof lab);
    snprintf(fields, sizeof fields,
             "\"path\":\"%s\",\"bytes\":%zu,\"fills\":%d,\"probe_ms\":%.3f,"
             "\"plain_ms\":%.3f,\"nt_ms\":%.3f,\"cost_vs_plain_ms\":%.3f",
             philox_isa_name(choice->isa), choice->bytes, k, tc * 1e3,
             tp * 1e3, tn * 1e3, (tc - tp) * 1e3);
    snprintf(text, sizeof text,
             "%9s  %-7s measuring: its %d fills took %.1f ms; plain %.1f, "
             "non-temporal %.1f: once per process, %+.1f ms against plain",
             lab, philox_isa_name(choice->isa), k, tc * 1e3, tp * 1e3,
             tn * 1e3, (tc - tp) * 1e3);
    bench_row("probe_cost", fields, text);
}

/* Whether the engine writes fills of `bytes` on isa non-temporally. */
static int chose_streams(philox_isa isa, size_t bytes)
{
    if (bytes < px_tune.nt_min)
        return 0;
    return !px_tune.nt_probe ||
           strcmp(px_nt_verdict_name(isa, bytes), "non-temporal stores") == 0;
}

/* The line a person on a new CPU reads: what the engine chose, how fast
 * that ran here, and the best of the other ways in the same runs. */
static void choice_row(philox_isa isa, size_t bytes, double choice_s,
                       const char *best_name, double best_s)
{
    char lab[32], fields[400], text[400], why[160] = "";
    size_text(bytes, lab, sizeof lab);
    const char *chose = px_tune.nt_probe ? px_nt_verdict_name(isa, bytes)
                        : bytes >= px_tune.nt_min ? "non-temporal stores"
                                                  : "plain stores";
    double med[2];
    if (px_tune.nt_probe && px_nt_probe_medians(isa, bytes, med) > 0)
        snprintf(why, sizeof why, " (its measurement: plain %.2f, "
                 "non-temporal %.2f GB/s)", 16 / med[0] * 1e-9,
                 16 / med[1] * 1e-9);
    else if (px_tune.nt_probe && bytes < px_tune.nt_min)
        snprintf(why, sizeof why, " (below the measuring size: plain)");
    double r = best_s / choice_s;
    snprintf(fields, sizeof fields,
             "\"path\":\"%s\",\"bytes\":%zu,\"chose\":\"%s\","
             "\"choice_gbps\":%.3f,\"best_other\":\"%s\","
             "\"best_other_gbps\":%.3f,\"choice_vs_best\":%.3f",
             philox_isa_name(isa), bytes, chose, (double)bytes / choice_s * 1e-9,
             best_name, (double)bytes / best_s * 1e-9, r > 1 ? 1.0 : r);
    snprintf(text, sizeof text,
             "%9s  %-7s engine chose %s%s: %.2f GB/s; best other way: %s "
             "%.2f GB/s; choice = %.2fx best", lab, philox_isa_name(isa),
             chose, why, (double)bytes / choice_s * 1e-9, best_name,
             (double)bytes / best_s * 1e-9, r > 1 ? 1.0 : r);
    bench_row("large_choice", fields, text);
}

/* U32 at 16, 64 and 256 MiB written each way a path can: plain stores,
 * prefetchw ahead of them, non-temporal stores, with 6, 4 or 3 groups per
 * step (avx2), and the engine's own choice.  Paths other than avx2 have
 * no group counts or prefetchw: their rows say only "plain" or
 * "non-temporal".  Plain-store ways share one buffer, non-temporal ways
 * another: a way that follows another on one buffer pays for the other's
 * leftovers (plain stores after streaming refill the cache over several
 * fills; a first streaming pass over lines left dirty evicts them), which
 * a program filling one buffer one way does not.  The engine measures on
 * a third buffer (probe_cost), then fills the buffer of the kind it
 * chose. */
static void bench_large_fills(void *buf, size_t cap, const philox_isa *paths,
                              int npaths)
{
    static const size_t sizes[] = {16 << 20, 64 << 20, 256 << 20};
    const size_t M = SIZE_MAX;
    static const char *const names[] = {
        "plain, 6 groups",        "plain, 3 groups",
        "prefetchw, 6 groups",    "prefetchw, 3 groups",
        "prefetchw, 4 groups",    "non-temporal, 6 groups",
        "non-temporal, 3 groups", "non-temporal, 4 groups"};
    const px_tuning ways[] = {
        {"", M, M, M, 3, 0}, {"", M, M, 0, 3, 0}, {"", M, 0, M, 3, 0},
        {"", M, 0, 0, 3, 0}, {"", M, 0, 0, 4, 0}, {"", 0, M, M, 3, 0},
        {"", 0, M, 0, 3, 0}, {"", 0, M, 0, 4, 0}};
    enum { NW = sizeof ways / sizeof ways[0] };
    char title[500], row[300];
    tuning_text(&px_tune, row, sizeof row);
    snprintf(title, sizeof title, "large fills, u32, each way (%s)", row);
    bench_section(title);
    size_t big = 0;
    for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++)
        if (sizes[si] <= cap)
            big = sizes[si];
    void *ntbuf = aligned_alloc(4096, cap), *chbuf = aligned_alloc(4096, cap);
    if (ntbuf == NULL || chbuf == NULL) {
        bench_note("cannot allocate 2 x %zu bytes: one buffer for all", cap);
        free(ntbuf);
        free(chbuf);
        ntbuf = chbuf = NULL;
    } else {
        memset(ntbuf, 1, big);
        memset(chbuf, 1, big);
    }
    for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++) {
        if (sizes[si] > cap)
            continue;
        for (int p = 0; p < npaths; p++) {
            path_job j[NW + 2];
            void (*fns[NW + 2])(void *);
            void *args[NW + 2];
            double t[NW + 2], tb[NW + 2];
            const char *what[NW + 2];
            int n = 0;
            for (int k = 0; k < NW; k++) {
                /* groups and prefetch are the avx2 kernel's; the others
                 * only choose non-temporal or plain */
                if (paths[p] != PHILOX_ISA_AVX2 && !way_for_every_path(k))
                    continue;
                void *b = ways[k].nt_min == 0 && ntbuf ? ntbuf : buf;
                j[n] = (path_job){b, sizes[si], RNGSNAP_U32, paths[p],
                                  ways[k], {1234, 0, 0}};
                what[n] = paths[p] != PHILOX_ISA_AVX2
                              ? (k == 0 ? "plain" : "non-temporal")
                              : names[k];
                n++;
            }
            int ch = n; /* the engine's choice, then the native loop */
            j[n] = (path_job){chbuf ? chbuf : buf, sizes[si], RNGSNAP_U32,
                              paths[p], px_tune, {1234, 0, 0}};
            what[n++] = "the engine's choice";
            j[n] = (path_job){buf, sizes[si], RNGSNAP_U32, paths[p], px_tune,
                              {1234, 0, 0}};
            for (int i = 0; i <= n; i++) {
                fns[i] = i == n ? run_native : run_path;
                args[i] = &j[i];
            }
            probe_cost(&j[ch], &j[0], &j[paths[p] == PHILOX_ISA_AVX2 ? 5 : 1]);
            /* decided: from now on the choice fills the buffer of the
             * store kind it chose, beside the ways of that kind (on one
             * VM, buffers of one size ran up to 33% apart) */
            if (ntbuf != NULL)
                j[ch].buf = chose_streams(paths[p], sizes[si]) ? ntbuf : buf;
            bench_time_n_best(fns, args, n + 1, t, tb);
            const char *name = philox_isa_name(paths[p]);
            int bi = 0;
            for (int i = 0; i < n; i++) {
                path_row("large_fill", name, what[i], sizes[si], t[i], tb[i],
                         t[n], tb[n]);
                if (i != ch && t[i] < t[bi])
                    bi = i;
            }
            path_row("large_fill", name, "(native loop, u32)", sizes[si],
                     t[n], tb[n], t[n], tb[n]);
            choice_row(paths[p], sizes[si], t[ch], what[bi], t[bi]);
        }
    }
    free(ntbuf);
    free(chbuf);
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
