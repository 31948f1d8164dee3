/*
 * matrix_util.c - the draw sequence and small file helpers of the backend
 * matrix programs (see matrix_util.h).
 */
#include "matrix_util.h"

#include <dirent.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void mx_put(mx_buf *b, const void *data, size_t len)
{
    if (b->len + len > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < b->len + len)
            cap *= 2;
        unsigned char *p = realloc(b->p, cap);
        if (p == NULL) {
            fprintf(stderr, "out of memory\n");
            exit(2);
        }
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->len, data, len);
    b->len += len;
}

void mx_free(mx_buf *b)
{
    free(b->p);
    b->p = NULL;
    b->len = b->cap = 0;
}

/* A recording is a list of records, one per stream and round:
 * uint32 label length, label "backend/device/name", uint64 data length,
 * data (values drawn, then the position after the round). */
static void mx_put_record(mx_buf *rec, rngsnap_stream *s, const mx_buf *data)
{
    char label[300];
    int n = snprintf(label, sizeof label, "%s/%d/%s",
                     rngsnap_stream_backend(s), rngsnap_stream_device(s),
                     rngsnap_stream_name(s));
    uint32_t ll = (uint32_t)n;
    uint64_t dl = data->len;
    mx_put(rec, &ll, sizeof ll);
    mx_put(rec, label, ll);
    mx_put(rec, &dl, sizeof dl);
    mx_put(rec, data->p, data->len);
}

static int mx_fail(rngsnap *ctx, rngsnap_stream *s, const char *what, int rc)
{
    fprintf(stderr, "%s on %s/%d/%s: %s: %s\n", what,
            rngsnap_stream_backend(s), rngsnap_stream_device(s),
            rngsnap_stream_name(s), rngsnap_error_name(rc),
            rngsnap_errmsg(ctx));
    return rc;
}

int mx_draw_round(rngsnap *ctx, int r, mx_buf *rec)
{
    size_t count = rngsnap_stream_count(ctx);
    for (size_t i = 0; i < count; i++) {
        rngsnap_stream *s = rngsnap_stream_at(ctx, i);
        int device_mem = rngsnap_stream_memory(s) == RNGSNAP_MEMORY_DEVICE;
        mx_buf data = {0};
        rngsnap_philox at;
        for (int d = 0; d < RNGSNAP_DIST_COUNT; d++) {
            size_t n = (size_t)(3 + 2 * d + r); /* odd and even counts */
            unsigned char buf[64 * 8];
            int rc = device_mem
                         ? rngsnap_reserve(s, (uint64_t)n, &at)
                         : rngsnap_generate(s, (rngsnap_dist)d, buf, n);
            if (rc != RNGSNAP_OK) {
                mx_free(&data);
                return mx_fail(ctx, s, rngsnap_dist_name((rngsnap_dist)d),
                               rc);
            }
            if (!device_mem)
                mx_put(&data, buf, n * rngsnap_dist_size((rngsnap_dist)d));
        }
        int rc = rngsnap_reserve(s, (uint64_t)(2 * r + 1), &at);
        if (rc == RNGSNAP_OK)
            rc = rngsnap_stream_position(s, &at);
        if (rc != RNGSNAP_OK) {
            mx_free(&data);
            return mx_fail(ctx, s, "reserve/position", rc);
        }
        mx_put(&data, &at, sizeof at);
        mx_put_record(rec, s, &data);
        mx_free(&data);
    }
    return RNGSNAP_OK;
}

int mx_compare(const mx_buf *want, const mx_buf *got)
{
    size_t i = 0, records = 0;
    while (i < want->len && i < got->len) {
        uint32_t ll;
        uint64_t dl;
        if (want->len - i < sizeof ll)
            break;
        memcpy(&ll, want->p + i, sizeof ll);
        if (want->len - i < sizeof ll + ll + sizeof dl)
            break;
        memcpy(&dl, want->p + i + sizeof ll + ll, sizeof dl);
        size_t rl = sizeof ll + ll + sizeof dl + (size_t)dl;
        if (want->len - i < rl)
            break;
        if (got->len - i < rl || memcmp(want->p + i, got->p + i, rl) != 0) {
            fprintf(stderr, "recordings differ in record %zu, stream %.*s "
                    "(expected %llu bytes of values)\n", records, (int)ll,
                    (const char *)want->p + i + sizeof ll,
                    (unsigned long long)dl);
            return 1;
        }
        i += rl;
        records++;
    }
    if (want->len != got->len || i != want->len) {
        fprintf(stderr, "recordings differ after %zu equal records "
                "(%zu vs %zu bytes)\n", records, want->len, got->len);
        return 1;
    }
    return 0;
}

int mx_write_file(const char *path, const void *data, size_t len)
{
    FILE *f = fopen(path, "wb");
    if (f == NULL)
        return -1;
    size_t w = fwrite(data, 1, len, f);
    return (fclose(f) == 0 && w == len) ? 0 : -1;
}

int mx_read_file(const char *path, mx_buf *out)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return -1;
    unsigned char chunk[65536];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0)
        mx_put(out, chunk, n);
    int bad = ferror(f);
    fclose(f);
    return bad ? -1 : 0;
}

void mx_tempdir(char *out, size_t len, const char *tag)
{
    const char *t = getenv("TMPDIR");
    snprintf(out, len, "%s/rngsnap-%s-XXXXXX", t && *t ? t : "/tmp", tag);
    if (mkdtemp(out) == NULL) {
        perror("mkdtemp");
        exit(2);
    }
}

void mx_rmdir(const char *dir)
{
    DIR *d = opendir(dir);
    if (d == NULL)
        return;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        char p[4096];
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        unlink(p);
    }
    closedir(d);
    rmdir(dir);
}

const char *mx_plugin_dir(void)
{
    const char *p = getenv("RNGSNAP_PLUGIN_BUILD_DIR");
    if (p == NULL || *p == '\0') {
        fprintf(stderr, "RNGSNAP_PLUGIN_BUILD_DIR is not set (run under "
                "meson test)\n");
        exit(2);
    }
    return p;
}
