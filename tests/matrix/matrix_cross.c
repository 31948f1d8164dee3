/*
 * matrix_cross.c - cross-cluster safety.  A checkpoint written on the
 * "cuda" cluster, loaded on the "gaudi" cluster, fails with
 * RNGSNAP_E_MISMATCH naming what is missing (hpu) and what is extra (cuda)
 * and changes nothing; the same checkpoint loads on a second configuration
 * with the same backends and devices (written differently) and continues
 * bit for bit; one with another device count is refused.
 *
 * usage: matrix_cross CLUSTER_DIR   (the build tree's config/clusters)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rngsnap.h>

#include "matrix_util.h"

static int open_seeded(rngsnap **ctx, const char *ini, uint64_t seed)
{
    int rc = rngsnap_open(ctx, ini, 0);
    if (rc != RNGSNAP_OK) {
        fprintf(stderr, "open %s: %s\n", ini, rngsnap_errmsg(NULL));
        return rc;
    }
    rngsnap_set_rank(*ctx, 0, 1);
    return rngsnap_seed_all(*ctx, seed);
}

/* Positions of every stream, to show a failed load changed nothing. */
static void positions(rngsnap *ctx, mx_buf *out)
{
    for (size_t i = 0; i < rngsnap_stream_count(ctx); i++) {
        rngsnap_philox at = {0, 0, 0};
        rngsnap_stream_position(rngsnap_stream_at(ctx, i), &at);
        mx_put(out, &at, sizeof at);
    }
}

static void write_twin(const char *path, int cuda_devices)
{
    /* Same backends, devices and streams as clusters/cuda.ini, but
     * written another way: absolute plugin_dir, keys in another order,
     * cuda optional, extra spaces. */
    FILE *f = fopen(path, "w");
    if (f == NULL) {
        perror(path);
        exit(2);
    }
    fprintf(f, "; twin of clusters/cuda.ini written by matrix_cross\n"
               "[rngsnap]\nplugin_dir = %s\n\n"
               "[backend.cpu]\nstreams = default,dropout,  augment\n"
               "plugin = rngsnap_cpu.so\nrequired = true\n\n"
               "[backend.cuda]\nemulate_devices = %d\nrequired = false\n"
               "streams = default, dropout\nplugin = rngsnap_cuda\n",
            mx_plugin_dir(), cuda_devices);
    fclose(f);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s CLUSTER_DIR\n", argv[0]);
        return 2;
    }
    char cuda_ini[600], gaudi_ini[600], dir[512], ckpt[600], twin[600],
        twin3[600];
    snprintf(cuda_ini, sizeof cuda_ini, "%s/cuda.ini", argv[1]);
    snprintf(gaudi_ini, sizeof gaudi_ini, "%s/gaudi.ini", argv[1]);
    mx_tempdir(dir, sizeof dir, "cross");
    snprintf(ckpt, sizeof ckpt, "%s/cuda.ckpt", dir);
    snprintf(twin, sizeof twin, "%s/twin.ini", dir);
    snprintf(twin3, sizeof twin3, "%s/twin3.ini", dir);

    /* Written on the cuda cluster. */
    rngsnap *src = NULL;
    MX_CHECK(open_seeded(&src, cuda_ini, 7) == RNGSNAP_OK, "cuda cluster");
    mx_buf warm = {0}, want = {0};
    MX_CHECK(mx_draw_round(src, 0, &warm) == RNGSNAP_OK, "draw");
    MX_CHECK(rngsnap_save(src, ckpt, 0) == RNGSNAP_OK, "save: %s",
             rngsnap_errmsg(src));
    MX_CHECK(mx_draw_round(src, 1, &want) == RNGSNAP_OK, "draw");
    rngsnap_close(src);

    /* Loaded on the gaudi cluster: refused, nothing changes. */
    rngsnap *g = NULL;
    MX_CHECK(open_seeded(&g, gaudi_ini, 99) == RNGSNAP_OK, "gaudi cluster");
    mx_buf before = {0}, after = {0};
    positions(g, &before);
    int rc = rngsnap_load(g, ckpt, 0);
    const char *msg = rngsnap_errmsg(g);
    printf("cuda checkpoint on gaudi: %s: %s\n", rngsnap_error_name(rc), msg);
    MX_CHECK(rc == RNGSNAP_E_MISMATCH, "expected RNGSNAP_E_MISMATCH, got %s",
             rngsnap_error_name(rc));
    MX_CHECK(strstr(msg, "cuda") != NULL,
             "message does not name the extra backend cuda: %s", msg);
    MX_CHECK(strstr(msg, "hpu") != NULL,
             "message does not name the missing backend hpu: %s", msg);
    positions(g, &after);
    MX_CHECK(before.len == after.len
             && memcmp(before.p, after.p, before.len) == 0,
             "a refused load changed live state");
    rngsnap_close(g);

    /* Loaded on a twin configuration: accepted, continues bit for bit. */
    write_twin(twin, 2);
    rngsnap *t = NULL;
    MX_CHECK(open_seeded(&t, twin, 12345) == RNGSNAP_OK, "twin");
    rc = rngsnap_load(t, ckpt, 0);
    MX_CHECK(rc == RNGSNAP_OK, "twin load: %s: %s", rngsnap_error_name(rc),
             rngsnap_errmsg(t));
    mx_buf got = {0};
    MX_CHECK(mx_draw_round(t, 1, &got) == RNGSNAP_OK, "draw");
    MX_CHECK(mx_compare(&want, &got) == 0, "twin did not continue the "
             "cuda cluster's streams");
    rngsnap_close(t);
    printf("twin configuration: loaded and continued bit for bit\n");

    /* Same backends, another device count: refused. */
    write_twin(twin3, 3);
    MX_CHECK(open_seeded(&t, twin3, 1) == RNGSNAP_OK, "twin3");
    rc = rngsnap_load(t, ckpt, 0);
    printf("cuda checkpoint with 3 cuda devices: %s: %s\n",
           rngsnap_error_name(rc), rngsnap_errmsg(t));
    MX_CHECK(rc == RNGSNAP_E_MISMATCH, "3 devices: expected "
             "RNGSNAP_E_MISMATCH, got %s", rngsnap_error_name(rc));
    MX_CHECK(strstr(rngsnap_errmsg(t), "cuda") != NULL,
             "message does not name cuda");
    /* In the admin's terms: both counts, and the twin's emulate_devices
     * line (line 11 of write_twin's file) that makes the 3. */
    const char *ne = getenv("RNGSNAP_NO_EMULATION");
    if (ne == NULL || ne[0] == '\0' || strcmp(ne, "0") == 0)
        MX_CHECK(strstr(rngsnap_errmsg(t), "the checkpoint has 2 cuda "
                        "devices and this configuration 3 (emulate_devices "
                        "= 3 at ") != NULL
                     && strstr(rngsnap_errmsg(t), "twin3.ini:11); nothing "
                               "restored") != NULL,
                 "message does not give the device counts and the "
                 "emulate_devices line");
    rngsnap_close(t);

    mx_free(&warm);
    mx_free(&want);
    mx_free(&got);
    mx_free(&before);
    mx_free(&after);
    mx_rmdir(dir);
    return 0;
}
