/*
 * bench_api.c - rngsnap-bench through the public API: rngsnap_open with
 * five backends (cpu + the four device plugins, emulated), one U32 drawn
 * through a stream handle, and save/load of 3, 40 and 160 entries to tmpfs
 * (/dev/shm) and to disk (/var/tmp), with and without the fsyncs, each
 * next to the bare system calls of the same save and load (bench_floor.c).
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <rngsnap.h>

#include "bench.h"

static char ini_dir[256];

static const char *plugin_dir(void)
{
    const char *d = getenv("RNGSNAP_PLUGIN_BUILD_DIR");
    return d ? d : RNGSNAP_PLUGIN_BUILD_DIR_DEFAULT;
}

/* Write <ini_dir>/<name> with body after the [rngsnap] section. */
static const char *write_ini(const char *name, const char *body)
{
    static char path[512];
    snprintf(path, sizeof path, "%s/%s", ini_dir, name);
    FILE *f = fopen(path, "w");
    if (f == NULL)
        return NULL;
    fprintf(f, "[rngsnap]\nplugin_dir = %s\n\n%s", plugin_dir(), body);
    fclose(f);
    return path;
}

/* "s0, s1, ..., s<n-1>" */
static void stream_list(int n, char *buf, size_t len)
{
    buf[0] = '\0';
    for (int i = 0; i < n; i++) {
        size_t l = strlen(buf);
        snprintf(buf + l, len - l, "%ss%d", i ? ", " : "", i);
    }
}

/* cpu with cpu_streams streams, then each device backend in devs with
 * ndev emulated devices of dev_streams streams. */
static const char *registry_ini(const char *name, int cpu_streams,
                                const char *const *devs, int ndevs, int ndev,
                                int dev_streams)
{
    char body[4096], list[512];
    stream_list(cpu_streams, list, sizeof list);
    int len = snprintf(body, sizeof body,
                       "[backend.cpu]\nplugin = rngsnap_cpu\nrequired = true\n"
                       "streams = %s\n", list);
    stream_list(dev_streams, list, sizeof list);
    for (int i = 0; i < ndevs; i++)
        len += snprintf(body + len, sizeof body - (size_t)len,
                        "\n[backend.%s]\nplugin = rngsnap_%s\nrequired = false\n"
                        "emulate_devices = %d\nstreams = %s\n",
                        devs[i], devs[i], ndev, list);
    return write_ini(name, body);
}

static const char *const devices[] = {"cuda", "hpu", "xpu", "npu"};

/* ---- open --------------------------------------------------------------- */

static const char *open_path;
static double open_acc;

static void run_open(void *a)
{
    (void)a;
    rngsnap *ctx;
    double t0 = bench_now();
    if (rngsnap_open(&ctx, open_path, 0) != RNGSNAP_OK)
        abort();
    open_acc += bench_now() - t0;
    rngsnap_close(ctx);
}

static void bench_open(void)
{
    bench_section("rngsnap_open, five backends (cpu + 4 device plugins, "
                  "1 emulated device each)");
    open_path = registry_ini("five.ini", 3, devices, 4, 1, 2);
    rngsnap *ctx;
    if (open_path == NULL || rngsnap_open(&ctx, open_path, 0) != RNGSNAP_OK) {
        bench_note("rngsnap_open failed: %s", rngsnap_errmsg(NULL));
        return;
    }
    size_t nb = rngsnap_backend_count(ctx), avail = 0;
    for (size_t i = 0; i < nb; i++) {
        rngsnap_backend_info bi;
        if (rngsnap_backend_get(ctx, i, &bi) == RNGSNAP_OK && bi.available)
            avail++;
    }
    size_t entries = rngsnap_stream_count(ctx);
    rngsnap_close(ctx);
    /* open+close per call; the open part alone is accumulated */
    double per_pair = bench_time(run_open, NULL);
    char fields[256], text[256];
    snprintf(fields, sizeof fields,
             "\"backends\":%zu,\"available\":%zu,\"entries\":%zu,"
             "\"open_close_us\":%.1f", nb, avail, entries, per_pair * 1e6);
    snprintf(text, sizeof text,
             "  %zu backends (%zu with devices), %zu entries: open + close "
             "%.1f us", nb, avail, entries, per_pair * 1e6);
    bench_row("open", fields, text);
    S.open_us = per_pair * 1e6;

    /* the same with the cpu backend alone, to see what the others cost */
    open_path = registry_ini("cpu.ini", 3, NULL, 0, 0, 0);
    double cpu_only = open_path ? bench_time(run_open, NULL) : 0;
    snprintf(fields, sizeof fields, "\"backends\":1,\"open_close_us\":%.1f",
             cpu_only * 1e6);
    snprintf(text, sizeof text, "  cpu backend alone: open + close %.1f us",
             cpu_only * 1e6);
    bench_row("open", fields, text);
    (void)open_acc;
}

/* ---- one draw ------------------------------------------------------------ */

static rngsnap_stream *draw_stream;

static void run_draw(void *a)
{
    (void)a;
    uint32_t w;
    for (int i = 0; i < 1000; i++)
        if (rngsnap_generate(draw_stream, RNGSNAP_U32, &w, 1) != RNGSNAP_OK)
            abort();
}

static void bench_draw(void)
{
    bench_section("one U32 through a stream handle");
    rngsnap *ctx;
    const char *p = registry_ini("draw.ini", 3, NULL, 0, 0, 0);
    if (p == NULL || rngsnap_open(&ctx, p, 0) != RNGSNAP_OK ||
        rngsnap_seed_all(ctx, 1) != RNGSNAP_OK ||
        rngsnap_stream_find(ctx, "cpu", 0, "s0", &draw_stream) != RNGSNAP_OK) {
        bench_note("setup failed: %s", rngsnap_errmsg(NULL));
        return;
    }
    double ns = bench_time(run_draw, NULL) / 1000 * 1e9;
    char fields[128], text[128];
    snprintf(fields, sizeof fields, "\"dist\":\"u32\",\"n\":1,\"ns\":%.1f", ns);
    snprintf(text, sizeof text, "  rngsnap_generate(s, RNGSNAP_U32, &w, 1): "
                                "%.1f ns", ns);
    bench_row("draw_one", fields, text);
    S.draw_ns = ns;
    rngsnap_close(ctx);
}

/* ---- one draw, two threads ------------------------------------------- */

#define THREAD_DRAWS 200000

typedef struct draw_pair {
    rngsnap_stream *s[2]; /* the stream of each thread (maybe the same) */
} draw_pair;

static void *draw_many(void *a)
{
    rngsnap_stream *s = a;
    uint32_t w;
    for (int i = 0; i < THREAD_DRAWS; i++)
        if (rngsnap_generate(s, RNGSNAP_U32, &w, 1) != RNGSNAP_OK)
            abort();
    return NULL;
}

static void run_draw_pair(void *a)
{
    draw_pair *p = a;
    pthread_t t;
    if (pthread_create(&t, NULL, draw_many, p->s[1]) != 0)
        abort();
    draw_many(p->s[0]);
    pthread_join(t, NULL);
}

/* The thread contract's cost: two threads on their own streams of one
 * context should each draw at the one-thread speed (no shared lock); two
 * on one stream wait for each other (its lock serialises them). */
static void bench_draw_threads(void)
{
    bench_section("one U32 through a stream handle, two threads");
    rngsnap *ctx;
    const char *p = registry_ini("draw.ini", 3, NULL, 0, 0, 0);
    draw_pair own, same;
    if (p == NULL || rngsnap_open(&ctx, p, 0) != RNGSNAP_OK ||
        rngsnap_seed_all(ctx, 1) != RNGSNAP_OK ||
        rngsnap_stream_find(ctx, "cpu", 0, "s0", &own.s[0]) != RNGSNAP_OK ||
        rngsnap_stream_find(ctx, "cpu", 0, "s1", &own.s[1]) != RNGSNAP_OK) {
        bench_note("setup failed: %s", rngsnap_errmsg(NULL));
        return;
    }
    same.s[0] = same.s[1] = own.s[0];
    static const char *const what[2] = {"own stream each", "one stream"};
    draw_pair *pairs[2] = {&own, &same};
    for (int k = 0; k < 2; k++) {
        /* Wall time of the pair over the draws of one thread: what each
         * thread's call costs while the other one runs. */
        double ns = bench_time(run_draw_pair, pairs[k]) / THREAD_DRAWS * 1e9;
        char fields[160], text[160];
        snprintf(fields, sizeof fields, "\"dist\":\"u32\",\"n\":1,"
                 "\"threads\":2,\"streams\":\"%s\",\"ns\":%.1f",
                 what[k], ns);
        snprintf(text, sizeof text, "  2 threads, %-15s: %.1f ns per call "
                 "per thread", what[k], ns);
        bench_row("draw_one_threads", fields, text);
    }
    rngsnap_close(ctx);
}

/* ---- save / load ----------------------------------------------------------- */

typedef struct ckpt_job {
    rngsnap *ctx;
    const char *path;
    unsigned flags;
} ckpt_job;

static void run_save(void *a)
{
    ckpt_job *j = a;
    if (rngsnap_save(j->ctx, j->path, j->flags | RNGSNAP_SAVE_REPLACE) != 0) {
        fprintf(stderr, "save: %s\n", rngsnap_errmsg(j->ctx));
        abort();
    }
}

static void run_load(void *a)
{
    ckpt_job *j = a;
    if (rngsnap_load(j->ctx, j->path, 0) != 0) {
        fprintf(stderr, "load: %s\n", rngsnap_errmsg(j->ctx));
        abort();
    }
}

static void bench_checkpoint(void)
{
    bench_section("checkpoint save/load (us, median)");
    struct {
        int cpu, ndevs, ndev, dev_streams;
    } regs[] = {{3, 0, 0, 0},   /* 3 entries   */
                {8, 1, 4, 8},   /* 8 + 32 = 40 */
                {10, 3, 5, 10}}; /* 10 + 150 = 160 */
    const char *dirs[][2] = {{"tmpfs", "/dev/shm"}, {"disk", "/var/tmp"}};
    for (size_t r = 0; r < 3; r++) {
        rngsnap *ctx;
        const char *p = registry_ini("ckpt.ini", regs[r].cpu, devices + 1,
                                     regs[r].ndevs, regs[r].ndev,
                                     regs[r].dev_streams);
        if (p == NULL || rngsnap_open(&ctx, p, 0) != RNGSNAP_OK ||
            rngsnap_seed_all(ctx, 7) != RNGSNAP_OK) {
            bench_note("setup failed: %s", rngsnap_errmsg(NULL));
            return;
        }
        size_t entries = rngsnap_stream_count(ctx);
        for (size_t d = 0; d < 2; d++) {
            if (access(dirs[d][1], W_OK) != 0) { /* a container without it */
                bench_note("%s: no writable %s here, skipped", dirs[d][0],
                           dirs[d][1]);
                continue;
            }
            char path[256];
            snprintf(path, sizeof path, "%s/rngsnap-bench-%d.ckpt", dirs[d][1],
                     (int)getpid());
            ckpt_job js = {ctx, path, 0}, jn = {ctx, path, RNGSNAP_SAVE_NO_SYNC};
            run_save(&js);
            struct stat st;
            long long size = stat(path, &st) == 0 ? (long long)st.st_size : -1;
            /* The library and the bare system calls of the same save and
             * load, their runs interleaved so that both see the same
             * machine. */
            floor_job *fj = size > 0 ? bench_floor_job(dirs[d][1], (size_t)size)
                                     : NULL;
            if (fj == NULL) {
                bench_note("cannot write %s", path);
                unlink(path);
                continue;
            }
            void (*const fns[6])(void *) = {
                run_save, run_save, run_load, bench_floor_save_sync,
                bench_floor_save_nosync, bench_floor_load};
            void *const args[6] = {&js, &jn, &js, fj, fj, fj};
            double t[6];
            bench_time_n(fns, args, 6, t);
            double save_sync = t[0], save_nosync = t[1], load = t[2];
            double f_sync = t[3], f_nosync = t[4], f_load = t[5];
            unlink(path);
            bench_floor_done(fj);
            char fields[320], text[320];
            snprintf(fields, sizeof fields,
                     "\"entries\":%zu,\"fs\":\"%s\",\"dir\":\"%s\","
                     "\"save_fsync_us\":%.2f,\"save_nosync_us\":%.2f,"
                     "\"load_us\":%.2f,\"file_bytes\":%lld",
                     entries, dirs[d][0], dirs[d][1], save_sync * 1e6,
                     save_nosync * 1e6, load * 1e6, size);
            snprintf(text, sizeof text,
                     "  %3zu entries, %-5s: save %8.1f us (fsync) %7.1f us "
                     "(no sync), load %6.1f us, file %lld bytes",
                     entries, dirs[d][0], save_sync * 1e6, save_nosync * 1e6,
                     load * 1e6, size);
            bench_row("checkpoint", fields, text);
            snprintf(fields, sizeof fields,
                     "\"entries\":%zu,\"fs\":\"%s\",\"file_bytes\":%lld,"
                     "\"save_fsync_us\":%.2f,\"save_nosync_us\":%.2f,"
                     "\"load_us\":%.2f",
                     entries, dirs[d][0], size, f_sync * 1e6, f_nosync * 1e6,
                     f_load * 1e6);
            snprintf(text, sizeof text,
                     "  %-15s system calls alone: save %6.1f us (fsync) %7.1f "
                     "us (no sync), load %6.1f us",
                     "", f_sync * 1e6, f_nosync * 1e6, f_load * 1e6);
            bench_row("checkpoint_syscalls", fields, text);
            if (d == 0 && entries == 3) {
                S.save3_us = save_sync * 1e6;
                S.load3_us = load * 1e6;
                S.floor_save3_us = f_sync * 1e6;
                S.floor_load3_us = f_load * 1e6;
            }
            if (d == 0 && entries == 160) {
                S.save160_us = save_sync * 1e6;
                S.load160_us = load * 1e6;
                S.file160 = size;
            }
        }
        rngsnap_close(ctx);
    }
}

void bench_api_fills(void)
{
    snprintf(ini_dir, sizeof ini_dir, "/tmp/rngsnap-bench-XXXXXX");
    if (mkdtemp(ini_dir) == NULL) {
        bench_note("cannot create a temporary folder for rng.ini files");
        return;
    }
    const char *p = registry_ini("fill.ini", 1, NULL, 0, 0, 0);
    bench_api_fill(p);
    if (p != NULL)
        unlink(p);
    rmdir(ini_dir);
}

void bench_api(void)
{
    snprintf(ini_dir, sizeof ini_dir, "/tmp/rngsnap-bench-XXXXXX");
    if (mkdtemp(ini_dir) == NULL) {
        bench_note("cannot create a temporary folder for rng.ini files");
        return;
    }
    bench_open();
    bench_draw();
    bench_draw_threads();
    bench_checkpoint();
    const char *names[] = {"five.ini", "cpu.ini", "draw.ini", "ckpt.ini"};
    for (size_t i = 0; i < 4; i++) {
        char p[512];
        snprintf(p, sizeof p, "%s/%s", ini_dir, names[i]);
        unlink(p);
    }
    rmdir(ini_dir);
}
