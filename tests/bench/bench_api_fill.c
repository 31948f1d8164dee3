/*
 * bench_api_fill.c - a u32 fill through rngsnap_generate (cpu backend,
 * one thread) next to the engine path it runs (philox_generate: the same
 * ISA and store choice) into the same warm buffer, runs interleaved, with
 * the path into a second warm buffer of the same size beside them; then
 * the call into a fresh buffer each time (cold: the first touch of every
 * page, as in a program that allocates per fill).  The ratios say which it
 * is when a fill through the API looks slow: the API (API / path on one
 * buffer below 1), the buffers (path on another buffer: on a VM two
 * buffers of one size ran up to 33% apart), or first touch (cold below
 * warm).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <rngsnap.h>

#include "bench.h"
#include "philox.h"
#include "philox_isa.h"

typedef struct api_job {
    rngsnap_stream *s;
    rngsnap_philox pos;
    void *buf;
    size_t n; /* u32 values */
} api_job;

static void run_api(void *a)
{
    api_job *j = a;
    if (rngsnap_generate(j->s, RNGSNAP_U32, j->buf, j->n) != RNGSNAP_OK)
        abort();
}

static void run_path(void *a)
{
    api_job *j = a;
    if (philox_generate(&j->pos, RNGSNAP_U32, j->buf, j->n) != RNGSNAP_OK)
        abort();
}

static double clock_now(void)
{
    return B.cpu_clock ? bench_cpu_now() : bench_now();
}

/* Median seconds of one rngsnap_generate into a fresh mapping each time
 * (mapping and unmapping not timed); 0 when mmap fails. */
static double time_cold(rngsnap_stream *s, size_t bytes)
{
    double t[64];
    int runs = B.runs < 64 ? B.runs : 64;
    for (int r = 0; r < runs; r++) {
        void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED)
            return 0;
        double t0 = clock_now();
        if (rngsnap_generate(s, RNGSNAP_U32, p, bytes / 4) != RNGSNAP_OK)
            abort();
        t[r] = clock_now() - t0;
        munmap(p, bytes);
    }
    for (int i = 1; i < runs; i++) /* insertion sort: runs <= 64 */
        for (int k = i; k > 0 && t[k - 1] > t[k]; k--) {
            double x = t[k];
            t[k] = t[k - 1];
            t[k - 1] = x;
        }
    return t[runs / 2];
}

static void *warm_buffer(size_t bytes)
{
    void *p = aligned_alloc(4096, (bytes + 4095) & ~(size_t)4095);
    if (p != NULL)
        memset(p, 1, bytes); /* fault every page in */
    return p;
}

static void api_row(const char *what, size_t bytes, double s, double best)
{
    char lab[32], fields[256], text[256];
    if (bytes >= ((size_t)1 << 20))
        snprintf(lab, sizeof lab, "%zu MiB", bytes >> 20);
    else
        snprintf(lab, sizeof lab, "%zu KiB", bytes >> 10);
    double g = (double)bytes / s * 1e-9;
    snprintf(fields, sizeof fields,
             "\"what\":\"%s\",\"dist\":\"u32\",\"bytes\":%zu,\"gbps\":%.3f,"
             "\"best_gbps\":%.3f", what, bytes, g,
             best > 0 ? (double)bytes / best * 1e-9 : 0.0);
    if (best > 0)
        snprintf(text, sizeof text, "%9s  %-36s %7.2f GB/s   best %7.2f",
                 lab, what, g, (double)bytes / best * 1e-9);
    else
        snprintf(text, sizeof text, "%9s  %-36s %7.2f GB/s", lab, what, g);
    bench_row("api_fill", fields, text);
}

void bench_api_fill(const char *ini)
{
    static const size_t full[] = {4096, 64u << 20, 256u << 20};
    static const size_t quick[] = {4096, 16u << 20};
    const size_t *sizes = B.quick ? quick : full;
    size_t nsizes = B.quick ? 2 : 3;
    bench_section("fill through rngsnap_generate (cpu backend, 1 thread) "
                  "against the engine path, u32, runs interleaved; warm: "
                  "a buffer filled again; cold: a fresh one each call");
    rngsnap *ctx;
    rngsnap_stream *s;
    if (ini == NULL || rngsnap_open(&ctx, ini, 0) != RNGSNAP_OK ||
        rngsnap_seed_all(ctx, 1) != RNGSNAP_OK ||
        rngsnap_stream_find(ctx, "cpu", 0, "s0", &s) != RNGSNAP_OK) {
        bench_note("setup failed: %s", rngsnap_errmsg(NULL));
        return;
    }
    for (size_t si = 0; si < nsizes; si++) {
        size_t bytes = sizes[si];
        void *wb = warm_buffer(bytes), *wb2 = warm_buffer(bytes);
        if (wb == NULL || wb2 == NULL) {
            bench_note("cannot allocate 2 x %zu bytes", bytes);
            free(wb);
            free(wb2);
            break;
        }
        api_job j[3] = {{s, {0}, wb, bytes / 4},
                        {NULL, {1, 0, 0}, wb, bytes / 4},
                        {NULL, {2, 0, 0}, wb2, bytes / 4}};
        /* two functions at a time: the order alternates A B, B A, so each
         * follows itself and the other equally often */
        void (*const fns[2])(void *) = {run_api, run_path};
        void *const args[2] = {&j[0], &j[1]};
        void *const args2[2] = {&j[1], &j[2]};
        void (*const fns2[2])(void *) = {run_path, run_path};
        double t[3], tb[3], t2[2], tb2[2];
        bench_time_n_best(fns, args, 2, t, tb);
        bench_time_n_best(fns2, args2, 2, t2, tb2);
        /* the other buffer against the path's own, from the second runs */
        t[2] = t[1] * t2[1] / t2[0];
        tb[2] = tb[1] * tb2[1] / tb2[0];
        double cold = time_cold(s, bytes);
        api_row("rngsnap_generate, warm buffer", bytes, t[0], tb[0]);
        api_row("engine path, same buffer", bytes, t[1], tb[1]);
        api_row("engine path, another warm buffer (scaled)", bytes, t[2],
                tb[2]);
        if (cold > 0)
            api_row("rngsnap_generate, cold buffer", bytes, cold, 0);
        double warm = t[1] / t[0], other = t2[0] / t2[1];
        double cw = cold > 0 ? t[0] / cold : 0;
        philox_isa isa;
        philox_isa_resolve(PHILOX_ISA_AUTO, &isa, NULL);
        const char *stores = bytes < px_tune.nt_min ? "plain (small fill)"
                             : !px_tune.nt_probe   ? "non-temporal stores"
                                          : px_nt_verdict_name(isa, bytes);
        double med[2];
        char saw[96] = "";
        if (bytes >= px_tune.nt_min && px_tune.nt_probe &&
            px_nt_probe_medians(isa, bytes, med) > 0)
            snprintf(saw, sizeof saw, " (measured: plain %.2f, "
                     "non-temporal %.2f GB/s)", 16 / med[0] * 1e-9,
                     16 / med[1] * 1e-9);
        char fields[300], text[600];
        snprintf(fields, sizeof fields,
                 "\"bytes\":%zu,\"api_vs_path\":%.3f,"
                 "\"other_buffer_vs_same\":%.3f,\"cold_vs_warm\":%.3f,"
                 "\"stores\":\"%s\"", bytes, warm, other, cw, stores);
        snprintf(text, sizeof text,
                 "%11s  API / path, one buffer: %.2fx (%s); path on another "
                 "buffer: %.2fx; cold / warm: %.2fx (%s); stores: %s%s", "",
                 warm, warm >= (bytes <= 4096 ? 0.8 : 0.95)
                           ? "the API costs nothing measurable"
                           : "the API costs this",
                 other, cw, cw < 0.9 ? "first touch of the pages" : "no cost",
                 stores, saw);
        bench_row("api_fill_ratio", fields, text);
        free(wb);
        free(wb2);
    }
    rngsnap_close(ctx);
}
