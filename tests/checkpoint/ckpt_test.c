/*
 * ckpt_test.c - helpers of the checkpoint tests (see ckpt_test.h).
 */
#include "ckpt_test.h"

#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "clean_env.h"
#include "context.h"
#include "remove_tree.h"

#ifndef MULTIDEV_DIR
#error "MULTIDEV_DIR must be defined by the build"
#endif

static char scratch[512];
static int have_cpu;

const char *ct_path(const char *dir, const char *name)
{
    static char ring[8][1024];
    static int next;
    char *p = ring[next++ % 8];
    snprintf(p, sizeof ring[0], "%s/%s", dir, name);
    return p;
}

static void link_plugin(const char *from_dir, const char *file,
                        const char *plugins)
{
    char src[1024];
    snprintf(src, sizeof src, "%s/%s", from_dir, file);
    if (symlink(src, ct_path(plugins, file)) != 0)
        fail_msg("symlink %s: %m", src);
}

const char *ct_setup_dir(void)
{
    test_clean_env();
    const char *tmp = getenv("TMPDIR");
    snprintf(scratch, sizeof scratch, "%s/rngsnap-ckpt-XXXXXX",
             tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(scratch))
        fail_msg("mkdtemp: %m");
    char plugins[600];
    snprintf(plugins, sizeof plugins, "%s/plugins", scratch);
    if (mkdir(plugins, 0755) != 0)
        fail_msg("mkdir %s: %m", plugins);
    link_plugin(MULTIDEV_DIR, "rngsnap_multidev.so", plugins);
    link_plugin(MULTIDEV_DIR, "rngsnap_multidev2.so", plugins);
    const char *pdir = getenv("RNGSNAP_PLUGIN_BUILD_DIR");
    have_cpu = 0;
    if (pdir && access(ct_path(pdir, "rngsnap_cpu.so"), R_OK) == 0) {
        link_plugin(pdir, "rngsnap_cpu.so", plugins);
        have_cpu = 1;
    }
    /* A device plugin (always built) for emulate_devices. */
    if (pdir && access(ct_path(pdir, "rngsnap_cuda.so"), R_OK) == 0)
        link_plugin(pdir, "rngsnap_cuda.so", plugins);
    return scratch;
}

int ct_have_cpu(void) { return have_cpu; }


void ct_remove_dir(const char *dir)
{
    if (dir && *dir)
        remove_tree(dir);
}

char *ct_write_ini(const char *dir, const char *name, const char *body)
{
    static char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    if (!f)
        fail_msg("fopen %s: %m", path);
    fprintf(f, "[rngsnap]\nplugin_dir = plugins\n\n%s", body);
    fclose(f);
    return path;
}

rngsnap *ct_open(const char *ini, unsigned flags)
{
    rngsnap *ctx = NULL;
    int rc = rngsnap_open(&ctx, ini, flags);
    if (rc != RNGSNAP_OK)
        fail_msg("rngsnap_open(%s) = %s: %s", ini, rngsnap_error_name(rc),
                 rngsnap_errmsg(NULL));
    return ctx;
}

ct_snap ct_take(rngsnap *ctx)
{
    ct_snap s = {NULL, 0};
    for (size_t i = 0; i < ctx->nstreams; i++)
        s.len += ctx->streams[i].backend->vt->state_size;
    for (size_t i = 0; i < ctx->napps; i++)
        s.len += ctx->apps[i].ops.size(ctx->apps[i].user) + sizeof(size_t);
    s.bytes = malloc(s.len ? s.len : 1);
    assert_non_null(s.bytes);
    uint8_t *p = s.bytes;
    for (size_t i = 0; i < ctx->nstreams; i++) {
        struct rngsnap_stream *e = &ctx->streams[i];
        uint32_t n = e->backend->vt->state_size;
        assert_int_equal(e->backend->vt->get_state(e->handle, p, n), 0);
        p += n;
    }
    for (size_t i = 0; i < ctx->napps; i++) {
        size_t n = ctx->apps[i].ops.size(ctx->apps[i].user);
        memcpy(p, &n, sizeof n);
        p += sizeof n;
        assert_int_equal(ctx->apps[i].ops.save(ctx->apps[i].user, p, n), 0);
        p += n;
    }
    return s;
}

int ct_snap_equal(ct_snap a, ct_snap b)
{
    return a.len == b.len && memcmp(a.bytes, b.bytes, a.len) == 0;
}

void ct_snap_free(ct_snap *s)
{
    free(s->bytes);
    s->bytes = NULL;
    s->len = 0;
}

uint32_t *ct_draw_all(rngsnap *ctx, size_t n)
{
    size_t count = rngsnap_stream_count(ctx);
    uint32_t *out = malloc((count && n ? count * n : 1) * sizeof *out);
    assert_non_null(out);
    for (size_t i = 0; i < count; i++) {
        rngsnap_stream *s = rngsnap_stream_at(ctx, i);
        int rc = rngsnap_generate(s, RNGSNAP_U32, out + i * n, n);
        if (rc)
            fail_msg("generate on %s:%d/%s: %s", rngsnap_stream_backend(s),
                     rngsnap_stream_device(s), rngsnap_stream_name(s),
                     rngsnap_errmsg(ctx));
    }
    return out;
}

uint8_t *ct_read(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    *len = 0;
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *b = malloc(n > 0 ? (size_t)n : 1);
    assert_non_null(b);
    *len = fread(b, 1, (size_t)n, f);
    fclose(f);
    return b;
}

void ct_write(const char *path, const void *buf, size_t len)
{
    FILE *f = fopen(path, "wb");
    if (!f)
        fail_msg("fopen %s: %m", path);
    if (len)
        assert_int_equal(fwrite(buf, 1, len, f), len);
    assert_int_equal(fclose(f), 0);
}

size_t ct_count_entries(const char *dir, int *has_tmp)
{
    DIR *d = opendir(dir);
    assert_non_null(d);
    size_t n = 0;
    if (has_tmp)
        *has_tmp = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
            continue;
        n++;
        if (has_tmp && strstr(e->d_name, "tmp"))
            *has_tmp = 1;
    }
    closedir(d);
    return n;
}
