/*
 * bench.c - rngsnap-bench: the cpu fill side by side with memset, the
 * straightforward Philox loop, cuRAND's host generator and the thread
 * pool; then (bench_api.c) open, one draw through a handle, save and load.
 * Prints a table and one JSON line per figure ("--json": JSON only).
 * Usage: rngsnap-bench [--quick] [--json] [--runs N] [--cpu-time]
 *                      [--only fill|api-fill|paths|threads|api]
 * ("fill" includes "api-fill": rngsnap_generate against the path.)
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench.h"
#include "philox.h"
#include "philox_isa.h"
#include "stub_host.h"

bench_cfg B = {0, 5, 0.1, 0, 0};
bench_summary S;

double bench_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

double bench_cpu_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* One run: repeat fn until B.min_s of wall time has passed; seconds per
 * call, on the wall clock or (--cpu-time) on this thread's CPU clock,
 * read once per run (it is a system call, not a vDSO read). */
static double bench_run(void (*fn)(void *), void *arg)
{
    long reps = 0;
    double c0 = B.cpu_clock ? bench_cpu_now() : 0;
    double t0 = bench_now(), t1;
    do {
        fn(arg);
        reps++;
        t1 = bench_now();
    } while (t1 - t0 < B.min_s);
    double dt = B.cpu_clock ? bench_cpu_now() - c0 : t1 - t0;
    return dt / (double)reps;
}

double bench_time(void (*fn)(void *), void *arg)
{
    double t[64];
    int runs = B.runs < 64 ? B.runs : 64;
    fn(arg); /* warm up: page faults, caches, lazy binding */
    for (int r = 0; r < runs; r++)
        t[r] = bench_run(fn, arg);
    qsort(t, (size_t)runs, sizeof t[0], cmp_double);
    return t[runs / 2];
}

/* bench_time for n (fn, arg) pairs at once, their runs interleaved
 * (run r of each, then run r+1 of each in the reverse order ...), so that
 * a change of load on a shared machine hits them alike and their ratios
 * hold.  t[i]: median of fn[i]. */
void bench_time_n(void (*const *fn)(void *), void *const *arg, int n,
                  double *t)
{
    bench_time_n_best(fn, arg, n, t, NULL);
}

void bench_time_n_best(void (*const *fn)(void *), void *const *arg, int n,
                       double *t, double *best)
{
    double s[16][64];
    int runs = B.runs < 64 ? B.runs : 64;
    n = n < 16 ? n : 16;
    for (int i = 0; i < n; i++)
        fn[i](arg[i]); /* warm up */
    /* forward, then backward: whichever runs first after the others ran
     * slower by up to 12% on a busy VM (64 MiB fills), so no function
     * keeps one place in the order */
    for (int r = 0; r < runs; r++)
        for (int k = 0; k < n; k++) {
            int i = r % 2 ? n - 1 - k : k;
            s[i][r] = bench_run(fn[i], arg[i]);
        }
    for (int i = 0; i < n; i++) {
        qsort(s[i], (size_t)runs, sizeof s[i][0], cmp_double);
        t[i] = s[i][runs / 2];
        if (best != NULL)
            best[i] = s[i][0];
    }
}

void bench_section(const char *title)
{
    if (!B.json_only)
        printf("\n== %s\n", title);
}

void bench_row(const char *bench, const char *fields, const char *text)
{
    if (!B.json_only)
        printf("%s\n", text);
    printf("{\"bench\":\"%s\",%s}\n", bench, fields);
    fflush(stdout);
}

void bench_note(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    if (B.json_only) {
        char msg[512];
        vsnprintf(msg, sizeof msg, fmt, ap);
        for (char *p = msg; *p; p++)
            if (*p == '"' || *p == '\\')
                *p = '\'';
        printf("{\"bench\":\"note\",\"text\":\"%s\"}\n", msg);
    } else {
        printf("   note: ");
        vprintf(fmt, ap);
        printf("\n");
    }
    va_end(ap);
}

/* ---- the fill --------------------------------------------------------- */

static const char *const dist_names[RNGSNAP_DIST_COUNT] = {
    "u32", "u64", "f32", "f64", "normal_f32", "normal_f64",
    "curand_uniform_f32", "curand_uniform_f64", "curand_normal_f32",
    "curand_normal_f64"};

typedef struct fill_job {
    void *buf;
    size_t bytes;
    rngsnap_dist dist;
    philox_isa isa;
    rngsnap_philox pos;
    int curand_what;
    const rngsnap_backend *be;
    void *stream;
} fill_job;

static void run_memset(void *a)
{
    fill_job *j = a;
    memset(j->buf, 0x5a, j->bytes);
}

static void run_engine(void *a)
{
    fill_job *j = a;
    size_t n = j->bytes / philox_value_size(j->dist);
    if (philox_generate_isa(&j->pos, j->dist, j->buf, n, j->isa) != 0)
        abort();
}

static void run_ref_project(void *a)
{
    fill_job *j = a;
    bench_ref_fill_project(j->pos.seed, 0, j->pos.offset / 4, j->buf,
                           j->bytes / 16);
    j->pos.offset += j->bytes / 4;
}

static void run_ref_native(void *a)
{
    fill_job *j = a;
    bench_ref_fill_native(j->pos.seed, 0, j->pos.offset / 4, j->buf,
                          j->bytes / 16);
    j->pos.offset += j->bytes / 4;
}

static void run_curand(void *a)
{
    fill_job *j = a;
    size_t vs = j->curand_what == 2 || j->curand_what == 4 ? 8 : 4;
    if (bench_curand_fill(j->curand_what, j->buf, j->bytes / vs) != 0)
        abort();
}

static void run_plugin(void *a)
{
    fill_job *j = a;
    size_t n = j->bytes / philox_value_size(j->dist);
    if (j->be->generate(j->stream, j->dist, j->buf, n) != 0)
        abort();
}

static double gbps(size_t bytes, double s)
{
    return (double)bytes / s * 1e-9;
}

static void size_label(size_t bytes, char *buf, size_t len)
{
    if (bytes >= (1u << 20))
        snprintf(buf, len, "%zu MiB", bytes >> 20);
    else
        snprintf(buf, len, "%zu KiB", bytes >> 10);
}

static void fill_row(const char *impl, const char *path, const char *dist,
                     size_t bytes, double s, double memset_s)
{
    char lab[32], fields[256], text[256];
    size_label(bytes, lab, sizeof lab);
    snprintf(fields, sizeof fields,
             "\"impl\":\"%s\",\"path\":\"%s\",\"dist\":\"%s\",\"bytes\":%zu,"
             "\"threads\":1,\"gbps\":%.3f,\"vs_memset\":%.3f",
             impl, path, dist, bytes, gbps(bytes, s), memset_s / s);
    snprintf(text, sizeof text, "%9s  %-22s %-18s %8.2f GB/s  %5.2fx memset",
             lab, impl, dist, gbps(bytes, s), memset_s / s);
    bench_row("fill", fields, text);
}

static void bench_fill(void *buf)
{
    static const size_t full[] = {4096, 65536, 1 << 20, 16 << 20, 64 << 20,
                                  256 << 20};
    static const size_t quick[] = {4096, 65536, 1 << 20, 16 << 20};
    const size_t *sizes = B.quick ? quick : full;
    size_t nsizes = B.quick ? 4 : 6;

    char why[256];
    int have_curand = bench_curand_load(why, sizeof why) == 0;
    philox_isa best;
    philox_isa_resolve(PHILOX_ISA_AUTO, &best, NULL);

    bench_section("fill, one thread (GB/s of output; median of runs)");
    if (!have_curand)
        bench_note("cuRAND host generator skipped: %s", why);
    for (size_t si = 0; si < nsizes; si++) {
        size_t bytes = sizes[si];
        fill_job j = {.buf = buf, .bytes = bytes, .pos = {1234, 0, 0}};
        /* memset and every dist, runs interleaved (bench_time_n) */
        fill_job jd[RNGSNAP_DIST_COUNT + 1];
        void (*fns[RNGSNAP_DIST_COUNT + 1])(void *);
        void *args[RNGSNAP_DIST_COUNT + 1];
        double td[RNGSNAP_DIST_COUNT + 1];
        for (int d = 0; d <= RNGSNAP_DIST_COUNT; d++) {
            jd[d] = j;
            jd[d].dist = (rngsnap_dist)(d < RNGSNAP_DIST_COUNT ? d : 0);
            jd[d].isa = PHILOX_ISA_AUTO;
            fns[d] = d < RNGSNAP_DIST_COUNT ? run_engine : run_memset;
            args[d] = &jd[d];
        }
        bench_time_n(fns, args, RNGSNAP_DIST_COUNT + 1, td);
        double ms = td[RNGSNAP_DIST_COUNT];
        fill_row("memset", "libc", "-", bytes, ms, ms);

        double t_u32 = td[RNGSNAP_U32], t_f32 = td[RNGSNAP_F32],
               t_f64 = td[RNGSNAP_F64];
        for (int d = 0; d < RNGSNAP_DIST_COUNT; d++) {
            char impl[64];
            snprintf(impl, sizeof impl, "rngsnap %s", philox_isa_name(best));
            fill_row(impl, philox_isa_name(best), dist_names[d], bytes, td[d],
                     ms);
        }
        if (bytes >= (64u << 20)) {
            /* non-temporal stores forced (the engine's own choice is
             * measured: see the paths section) */
            px_tuning keep = px_tune;
            px_tune.nt_min = 0;
            px_tune.nt_probe = 0;
            j.dist = RNGSNAP_U32;
            j.isa = PHILOX_ISA_AUTO;
            char impl[64];
            snprintf(impl, sizeof impl, "rngsnap %s nt",
                     philox_isa_name(best));
            fill_row(impl, philox_isa_name(best), "u32", bytes,
                     bench_time(run_engine, &j), ms);
            px_tune = keep;
        }
        for (int isa = PHILOX_ISA_SCALAR; isa < PHILOX_ISA_COUNT; isa++) {
            if (isa == (int)best || !philox_isa_supported((philox_isa)isa))
                continue;
            /* u32, and the cuRAND-exact dists (their own conversion) */
            static const rngsnap_dist other[] = {
                RNGSNAP_U32, RNGSNAP_CURAND_UNIFORM_F32,
                RNGSNAP_CURAND_UNIFORM_F64, RNGSNAP_CURAND_NORMAL_F32,
                RNGSNAP_CURAND_NORMAL_F64};
            j.isa = (philox_isa)isa;
            char impl[64];
            snprintf(impl, sizeof impl, "rngsnap %s", philox_isa_name(j.isa));
            for (size_t k = 0; k < sizeof other / sizeof *other; k++) {
                j.dist = other[k];
                fill_row(impl, philox_isa_name(j.isa), dist_names[j.dist],
                         bytes, bench_time(run_engine, &j), ms);
            }
        }
        double t_ref = bench_time(run_ref_project, &j);
        fill_row("reference loop", "project flags", "u32", bytes, t_ref, ms);
        double t_nat = bench_time(run_ref_native, &j);
        fill_row("reference loop native", "-O3 -march=native", "u32", bytes,
                 t_nat, ms);
        double t_cr = 0;
        if (have_curand) {
            static const char *const cr_names[] = {"u32", "f32", "f64",
                                                   "normal_f32", "normal_f64"};
            for (int w = 0; w < 5; w++) {
                j.curand_what = w;
                double t = bench_time(run_curand, &j);
                if (w == 0)
                    t_cr = t;
                fill_row("cuRAND host", "curandGenerate*", cr_names[w], bytes,
                         t, ms);
            }
        }
        S.big_bytes = bytes; /* the last (largest) size */
        S.u32_memset_big = ms / t_u32;
        if (bytes <= (64u << 20)) { /* the summary uses 64 MiB (or less) */
            S.fill_bytes = bytes;
            S.u32 = gbps(bytes, t_u32);
            S.f32 = gbps(bytes, t_f32);
            S.f64 = gbps(bytes, t_f64);
            S.memset_ = gbps(bytes, ms);
            S.ref = gbps(bytes, t_ref);
            S.ref_native = gbps(bytes, t_nat);
            S.curand = t_cr > 0 ? gbps(bytes, t_cr) : 0;
        }
        char fields[320], text[320];
        snprintf(fields, sizeof fields,
                 "\"bytes\":%zu,\"u32_vs_memset\":%.3f,\"u32_vs_ref\":%.3f,"
                 "\"u32_vs_ref_native\":%.3f,\"u32_vs_curand\":%.3f",
                 bytes, ms / t_u32, t_ref / t_u32, t_nat / t_u32,
                 t_cr > 0 ? t_cr / t_u32 : 0.0);
        snprintf(text, sizeof text,
                 "%11s  ratios: u32 = %.2fx memset, %.2fx reference loop, "
                 "%.2fx native loop, %s%.2fx cuRAND",
                 "", ms / t_u32, t_ref / t_u32, t_nat / t_u32,
                 t_cr > 0 ? "" : "(no) ", t_cr > 0 ? t_cr / t_u32 : 0.0);
        bench_row("fill_ratios", fields, text);
    }
}

/* Two threads against one, through the cpu plugin's own pool. */
static void bench_threads(void *buf)
{
    bench_section("cpu plugin, threads (64 MiB)");
    const rngsnap_backend *be = stub_load_plugin("cpu");
    if (be == NULL) {
        bench_note("cpu plugin not found (set RNGSNAP_PLUGIN_BUILD_DIR)");
        return;
    }
    size_t bytes = 64u << 20;
    /* memset on one core, same buffer: what two threads are compared to */
    fill_job jm = {.buf = buf, .bytes = bytes};
    double t_ms = bench_time(run_memset, &jm);
    rngsnap_dist dists[] = {RNGSNAP_U32, RNGSNAP_F32, RNGSNAP_NORMAL_F32};
    for (size_t d = 0; d < 3; d++) {
        double t1 = 0;
        for (int th = 1; th <= 2; th++) {
            stub_option o[] = {{"threads", th == 1 ? "1" : "2", 1}};
            stub_host h;
            stub_host_init(&h, "cpu", o, 1);
            void *bctx, *s;
            if (be->open(&h.host, &bctx) != 0 ||
                be->stream_open(bctx, 0, "bench", &s) != 0) {
                bench_note("cpu plugin open failed: %s", h.error);
                return;
            }
            fill_job j = {.buf = buf, .bytes = bytes, .dist = dists[d],
                          .be = be, .stream = s};
            double t = bench_time(run_plugin, &j);
            if (th == 1)
                t1 = t;
            else if (dists[d] == RNGSNAP_U32) {
                S.threads2 = t1 / t;
                S.threads2_memset = t_ms / t;
            }
            char fields[256], text[256];
            snprintf(fields, sizeof fields,
                     "\"impl\":\"cpu plugin\",\"dist\":\"%s\",\"bytes\":%zu,"
                     "\"threads\":%d,\"gbps\":%.3f,\"speedup\":%.3f,"
                     "\"vs_memset\":%.3f",
                     dist_names[dists[d]], bytes, th, gbps(bytes, t), t1 / t,
                     t_ms / t);
            snprintf(text, sizeof text,
                     "%9s  %-22s %-11s %8.2f GB/s  %d thread%s, %.2fx one, "
                     "%.2fx memset (1 core, %.1f GB/s)",
                     "64 MiB", "cpu plugin", dist_names[dists[d]],
                     gbps(bytes, t), th, th == 1 ? " " : "s", t1 / t,
                     t_ms / t, gbps(bytes, t_ms));
            bench_row("threads", fields, text);
            be->stream_close(s);
            be->close(bctx);
        }
    }
}

/* One goal of issue 5 and this run's figure; goal NULL: a figure shown
 * for context, with no goal of its own. */
static void target(const char *what, double got, const char *unit,
                   const char *goal, int met)
{
    char fields[256], text[256];
    const char *verdict = got == 0 ? "not measured"
                          : goal == NULL ? "(for context)"
                          : met ? "met" : "NOT met";
    snprintf(fields, sizeof fields,
             "\"target\":\"%s\",\"measured\":%.3f,\"unit\":\"%s\","
             "\"goal\":%s%s%s,\"met\":%s",
             what, got, unit, goal ? "\"" : "", goal ? goal : "null",
             goal ? "\"" : "",
             got == 0 || goal == NULL ? "null" : met ? "true" : "false");
    snprintf(text, sizeof text, "  %-36s %9.2f %-5s goal %-9s %s", what,
             got, unit, goal ? goal : "-", verdict);
    bench_row("target", fields, text);
}

/* Issue 5's goals next to what this run measured (information only). */
static void bench_targets(void)
{
    char title[128];
    snprintf(title, sizeof title,
             "targets (fill figures at %zu MiB, one thread; information only)",
             S.fill_bytes >> 20);
    bench_section(title);
    target("u32 fill", S.u32, "GB/s", ">= 9", S.u32 >= 9);
    target("u32 / reference loop", S.ref > 0 ? S.u32 / S.ref : 0, "x",
           ">= 2.5", S.ref > 0 && S.u32 / S.ref >= 2.5);
    target("u32 / reference loop -march=native",
           S.ref_native > 0 ? S.u32 / S.ref_native : 0, "x", ">= 2.5",
           S.ref_native > 0 && S.u32 / S.ref_native >= 2.5);
    target("u32 / cuRAND host", S.curand > 0 ? S.u32 / S.curand : 0, "x",
           ">= 8", S.curand > 0 && S.u32 / S.curand >= 8);
    target("u32 / memset", S.memset_ > 0 ? S.u32 / S.memset_ : 0, "x",
           ">= 1", S.memset_ > 0 && S.u32 >= S.memset_);
    if (S.big_bytes > S.fill_bytes) {
        char what[64];
        snprintf(what, sizeof what, "u32 / memset at %zu MiB",
                 S.big_bytes >> 20);
        target(what, S.u32_memset_big, "x", ">= 1", S.u32_memset_big >= 1);
    }
    target("u32 two threads / memset one core", S.threads2_memset, "x",
           ">= 1", S.threads2_memset >= 1);
    target("f32 / u32", S.u32 > 0 ? S.f32 / S.u32 : 0, "x", ">= 0.9",
           S.u32 > 0 && S.f32 >= 0.9 * S.u32);
    target("f64 / u32", S.u32 > 0 ? S.f64 / S.u32 : 0, "x", ">= 0.9",
           S.u32 > 0 && S.f64 >= 0.9 * S.u32);
    target("two threads / one, u32 64 MiB", S.threads2, "x", ">= 1.7",
           S.threads2 >= 1.7);
    target("one u32 through a handle", S.draw_ns, "ns", "<= 30",
           S.draw_ns <= 30);
    target("rngsnap_open, five backends", S.open_us / 1000, "ms", "<= 5",
           S.open_us <= 5000);
    target("save, 3 entries, tmpfs, fsync", S.save3_us, "us", "<= 15",
           S.save3_us <= 15);
    target("load, 3 entries, tmpfs", S.load3_us, "us", "<= 5",
           S.load3_us <= 5);
    /* Context for the two above: what the kernel alone takes for the
     * same system calls on this machine (no goal of their own). */
    target("syscalls alone: save, 3, tmpfs", S.floor_save3_us, "us",
           NULL, 0);
    target("syscalls alone: load, 3, tmpfs", S.floor_load3_us, "us",
           NULL, 0);
    target("save, 160 entries, tmpfs, fsync", S.save160_us, "us", "<= 50",
           S.save160_us <= 50);
    target("load, 160 entries, tmpfs", S.load160_us, "us", "<= 30",
           S.load160_us <= 30);
    target("checkpoint file, 160 entries", (double)S.file160 / 1024, "KiB",
           "<= 16", S.file160 > 0 && S.file160 <= 16 * 1024);
}

int main(int argc, char **argv)
{
    const char *only = NULL; /* --only fill|api-fill|paths|threads|api */
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--quick") == 0) {
            B.quick = 1;
            B.runs = 3;
            B.min_s = 0.01;
        } else if (strcmp(argv[i], "--only") == 0 && i + 1 < argc) {
            only = argv[++i];
            if (strcmp(only, "fill") != 0 && strcmp(only, "paths") != 0 &&
                strcmp(only, "threads") != 0 && strcmp(only, "api") != 0 &&
                strcmp(only, "api-fill") != 0) {
                fprintf(stderr, "%s: --only %s: unknown section "
                        "(fill, api-fill, paths, threads or api)\n", argv[0],
                        only);
                return 2;
            }
        } else if (strcmp(argv[i], "--json") == 0) {
            B.json_only = 1;
        } else if (strcmp(argv[i], "--cpu-time") == 0) {
            B.cpu_clock = 1;
        } else if (strcmp(argv[i], "--runs") == 0 && i + 1 < argc) {
            B.runs = atoi(argv[++i]);
            if (B.runs < 1)
                B.runs = 1;
        } else {
            fprintf(stderr,
                    "usage: %s [--quick] [--json] [--runs N] [--cpu-time] "
                    "[--only fill|api-fill|paths|threads|api]\n",
                    argv[0]);
            return 2;
        }
    }
    /* the cpu plugin for the threads section: the build's, unless set */
    setenv("RNGSNAP_PLUGIN_BUILD_DIR", RNGSNAP_PLUGIN_BUILD_DIR_DEFAULT, 0);
    size_t cap = B.quick ? (64u << 20) : (256u << 20); /* threads: 64 MiB */
    void *buf = aligned_alloc(4096, cap);
    if (buf == NULL) {
        fprintf(stderr, "cannot allocate %zu bytes\n", cap);
        return 1;
    }
    memset(buf, 1, cap); /* fault every page in before timing */
    if (!B.json_only)
        printf("rngsnap-bench%s: median of %d runs, each >= %.0f ms\n",
               B.quick ? " --quick" : "", B.runs, B.min_s * 1e3);
    if (B.cpu_clock)
        bench_note("--cpu-time: the fill and paths sections count only the "
                   "time this thread ran (CLOCK_THREAD_CPUTIME_ID), not the "
                   "time other jobs held its core; threads and api: wall "
                   "clock");
    if (only == NULL || strcmp(only, "fill") == 0)
        bench_fill(buf);
    if (only == NULL || strcmp(only, "fill") == 0 ||
        strcmp(only, "api-fill") == 0)
        bench_api_fills();
    if (only == NULL || strcmp(only, "paths") == 0)
        bench_paths(buf, cap);
    /* the pool's work is on other threads, and a save waits on the
     * kernel: both are wall-clock figures whatever --cpu-time says */
    B.cpu_clock = 0;
    if (only == NULL || strcmp(only, "threads") == 0)
        bench_threads(buf);
    if (only == NULL || strcmp(only, "api") == 0)
        bench_api();
    if (only == NULL)
        bench_targets();
    free(buf);
    return 0;
}
