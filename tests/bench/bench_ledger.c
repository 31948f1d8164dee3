/*
 * bench_ledger.c - rngsnap-bench-ledger: what a divergence-ledger mark
 * costs (docs/performance.md, "Divergence ledger").  A context with 16
 * cpu streams and 5 app states the size of a Mersenne Twister state (2504
 * bytes, the largest common generator state: NumPy's and random's) marks
 * steps into a ledger on tmpfs and on disk; printed: the median time per
 * rngsnap_ledger_step over batches of marks, and the bytes per record
 * against the budget of 64 + 16 per entry.  A benchmark, not a test: its
 * figures go into docs/performance.md, nothing asserts them.
 *
 *   rngsnap-bench-ledger [--quick]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <rngsnap.h>

#define STREAMS 16
#define APPS 5
#define APP_BYTES 2504

static unsigned char app_state[APPS][APP_BYTES];

static size_t app_size(void *u)
{
    (void)u;
    return APP_BYTES;
}
static int app_save(void *u, void *buf, size_t len)
{
    memcpy(buf, u, len);
    return 0;
}
static int app_load(void *u, const void *buf, size_t len)
{
    memcpy(u, buf, len);
    return 0;
}
static const rngsnap_state_ops ops = {app_size, app_save, app_load};

static double now_us(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void die(rngsnap *ctx, const char *what, int rc)
{
    fprintf(stderr, "rngsnap-bench-ledger: %s: %s (%s)\n", what,
            rngsnap_errmsg(ctx), rngsnap_error_name(rc));
    exit(1);
}

/* Median us per mark over `batches` batches of `per` marks into a
 * ledger in folder dir; *record gets the bytes per step record. */
static double measure(const char *ini, const char *dir, int batches, int per,
                      double *record)
{
    rngsnap *ctx;
    int rc = rngsnap_open(&ctx, ini, 0);
    if (rc)
        die(NULL, ini, rc);
    char name[16];
    for (int a = 0; a < APPS; a++) {
        snprintf(name, sizeof name, "gen%d", a);
        if ((rc = rngsnap_register_state(ctx, name, &ops, app_state[a])))
            die(ctx, "register_state", rc);
    }
    if ((rc = rngsnap_seed_all(ctx, 1)))
        die(ctx, "seed_all", rc);
    char path[512];
    snprintf(path, sizeof path, "%s/bench-%d.ledger", dir, (int)getpid());
    unlink(path);
    if ((rc = rngsnap_ledger_open(ctx, path, 0)))
        die(ctx, path, rc);
    struct stat st0, st1;
    stat(path, &st0);
    double *t = malloc(sizeof *t * (size_t)batches);
    uint64_t step = 0;
    uint32_t w;
    rngsnap_stream *s = rngsnap_stream_at(ctx, 0);
    for (int b = 0; b < batches; b++) {
        double t0 = now_us();
        for (int i = 0; i < per; i++) {
            app_state[i % APPS][0]++; /* a state that moves */
            if ((rc = rngsnap_generate(s, RNGSNAP_U32, &w, 1)))
                die(ctx, "generate", rc);
            if ((rc = rngsnap_ledger_step(ctx, step++)))
                die(ctx, "ledger_step", rc);
        }
        t[b] = (now_us() - t0) / per;
    }
    stat(path, &st1);
    *record = (double)(st1.st_size - st0.st_size) / (double)step;
    rngsnap_ledger_close(ctx);
    rngsnap_close(ctx);
    unlink(path);
    qsort(t, (size_t)batches, sizeof *t, cmp);
    double m = t[batches / 2];
    free(t);
    return m;
}

int main(int argc, char **argv)
{
    int quick = argc > 1 && strcmp(argv[1], "--quick") == 0;
    const char *plugins = getenv("RNGSNAP_PLUGIN_BUILD_DIR");
    if (!plugins)
        plugins = RNGSNAP_PLUGIN_BUILD_DIR_DEFAULT;
    char ini[] = "/tmp/rngsnap-bench-ledger-XXXXXX";
    int fd = mkstemp(ini);
    FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
    if (!f) {
        perror("mkstemp");
        return 1;
    }
    fprintf(f, "[rngsnap]\nplugin_dir = %s\n[backend.cpu]\nplugin = "
            "rngsnap_cpu\nstreams = ", plugins);
    for (int i = 0; i < STREAMS; i++)
        fprintf(f, "%ss%d", i ? ", " : "", i);
    fprintf(f, "\n");
    fclose(f);
    int batches = quick ? 11 : 101, per = quick ? 200 : 1000;
    const int entries = STREAMS + APPS;
    printf("divergence ledger: a mark with %d streams and %d app states of "
           "%d bytes\n", STREAMS, APPS, APP_BYTES);
    const char *where[][2] = {{"/dev/shm", "tmpfs"}, {"/var/tmp", "disk"}};
    for (int i = 0; i < 2; i++) {
        struct stat st;
        if (stat(where[i][0], &st) != 0)
            continue;
        double rec;
        double us = measure(ini, where[i][0], batches, per, &rec);
        printf("  %-5s (%s): %.2f us per rngsnap_ledger_step (median of %d "
               "batches of %d); record %.0f bytes (budget 64 + 16 x %d = "
               "%d)\n", where[i][1], where[i][0], us, batches, per, rec,
               entries, 64 + 16 * entries);
    }
    unlink(ini);
    return 0;
}
