/*
 * rk_test.c - helpers of the multi-rank tests (see rk_test.h).
 */
#include "rk_test.h"

#include <dirent.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "clean_env.h"
#include "context.h"
#include "remove_tree.h"

#ifndef MULTIDEV_DIR
#error "MULTIDEV_DIR must be defined by the build"
#endif

const char *rk_path(const char *dir, const char *name)
{
    static _Thread_local char ring[8][1024];
    static _Thread_local int next;
    char *p = ring[next++ % 8];
    snprintf(p, sizeof ring[0], "%s/%s", dir, name);
    return p;
}

static void link_plugin(const char *from, const char *file,
                        const char *plugins)
{
    char src[1024];
    snprintf(src, sizeof src, "%s/%s", from, file);
    if (symlink(src, rk_path(plugins, file)) != 0) {
        perror(src);
        abort();
    }
}

const char *rk_setup(void)
{
    static char scratch[512];
    test_clean_env();
    const char *tmp = getenv("TMPDIR");
    snprintf(scratch, sizeof scratch, "%s/rngsnap-ranks-XXXXXX",
             tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(scratch))
        abort();
    char plugins[600];
    snprintf(plugins, sizeof plugins, "%s/plugins", scratch);
    if (mkdir(plugins, 0755) != 0)
        abort();
    link_plugin(MULTIDEV_DIR, "rngsnap_multidev.so", plugins);
    link_plugin(MULTIDEV_DIR, "rngsnap_multidev2.so", plugins);
    const char *pdir = getenv("RNGSNAP_PLUGIN_BUILD_DIR");
    if (!pdir)
        abort();
    link_plugin(pdir, "rngsnap_cpu.so", plugins);
    return scratch;
}


const char *rk_ini(const char *dir, const char *name, const char *body)
{
    const char *path = rk_path(dir, name);
    FILE *f = fopen(path, "w");
    if (!f)
        abort();
    fprintf(f, "[rngsnap]\nplugin_dir = plugins\n%s", body);
    fclose(f);
    return path;
}

static size_t app_size(void *u)
{
    (void)u;
    return sizeof ((rk_app *)0)->bytes;
}

static int app_save(void *u, void *buf, size_t len)
{
    rk_app *a = u;
    if (a->fail_save || len != sizeof a->bytes)
        return 5;
    memcpy(buf, a->bytes, len);
    return 0;
}

static int app_load(void *u, const void *buf, size_t len)
{
    rk_app *a = u;
    /* a restore of the backup (after a refused load) always works */
    if (a->fail_load > 0) {
        a->fail_load = -1;
        return 6;
    }
    if (len != sizeof a->bytes)
        return 7;
    memcpy(a->bytes, buf, len);
    return 0;
}

int rk_register(rngsnap *ctx, const char *name, rk_app *a)
{
    static const rngsnap_state_ops ops = {app_size, app_save, app_load};
    return rngsnap_register_state(ctx, name, &ops, a);
}

/* Ranks open their contexts at the same time, as the processes of a
 * real job do (and rngsnap.h promises that concurrent opens are safe;
 * the TSan run of this suite checks it). */
rngsnap *rk_open(const char *ini, int rank, int size, unsigned flags)
{
    rngsnap *ctx;
    int rc = rngsnap_open(&ctx, ini, flags);
    if (rc) {
        fprintf(stderr, "rank %d: open %s: %s\n", rank, ini,
                rngsnap_errmsg(NULL));
        return NULL;
    }
    if (rngsnap_set_rank(ctx, rank, size) != 0) {
        fprintf(stderr, "rank %d: set_rank: %s\n", rank,
                rngsnap_errmsg(ctx));
        rngsnap_close(ctx);
        return NULL;
    }
    return ctx;
}

uint8_t *rk_take(rngsnap *ctx, size_t *len)
{
    size_t total = 0;
    for (size_t i = 0; i < ctx->nstreams; i++)
        total += ctx->streams[i].backend->vt->state_size;
    uint8_t *b = malloc(total + 1), *p = b;
    for (size_t i = 0; i < ctx->nstreams; i++) {
        const struct rngsnap_stream *s = &ctx->streams[i];
        s->backend->vt->get_state(s->handle, p, s->backend->vt->state_size);
        p += s->backend->vt->state_size;
    }
    *len = total;
    return b;
}

uint32_t *rk_draw(rngsnap *ctx, size_t n)
{
    size_t ns = rngsnap_stream_count(ctx);
    uint32_t *w = calloc(ns * n + 1, sizeof *w);
    for (size_t i = 0; i < ns; i++)
        if (rngsnap_generate(rngsnap_stream_at(ctx, i), RNGSNAP_U32,
                             w + i * n, n) != 0)
            memset(w + i * n, 0xff, n * sizeof *w);
    return w;
}

uint8_t *rk_read(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *b = malloc((size_t)n + 1);
    *len = fread(b, 1, (size_t)n, f);
    fclose(f);
    return b;
}

void rk_write(const char *path, const void *buf, size_t len)
{
    FILE *f = fopen(path, "wb");
    if (!f)
        abort();
    fwrite(buf, 1, len, f);
    fclose(f);
}

size_t rk_count(const char *dir)
{
    DIR *d = opendir(dir);
    size_t n = 0;
    if (!d)
        return 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
            n++;
    closedir(d);
    return n;
}
