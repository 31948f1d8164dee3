/*
 * test_cpu_api.c - the cpu plugin loaded by the core through the public
 * API (rngsnap_open on a temporary rng.ini whose plugin_dir is the build's
 * plugin folder): every cuRAND vector through rngsnap_load and a handle;
 * every dist through a stream handle equals the engine's
 * scalar reference at the stream's position, on every isa option and
 * thread count, across the counter carry; reserve; option errors.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include <xxhash.h>

#include "philox.h"
#include "philox_isa.h"
#include "vectors.h"
#include <rngsnap.h>

static char dir[256];

static int setup(void **state)
{
    (void)state;
    snprintf(dir, sizeof dir, "/tmp/rngsnap-engine-XXXXXX");
    return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    char p[512];
    snprintf(p, sizeof p, "%s/rng.ini", dir);
    unlink(p);
    rmdir(dir);
    return 0;
}

/* Write rng.ini with the given extra [backend.cpu] lines; return path. */
static const char *write_ini(const char *extra)
{
    static char path[512];
    snprintf(path, sizeof path, "%s/rng.ini", dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    const char *pd = getenv("RNGSNAP_PLUGIN_BUILD_DIR");
    fprintf(f, "[rngsnap]\nplugin_dir = %s\n\n[backend.cpu]\n"
               "plugin = rngsnap_cpu\nrequired = true\n"
               "streams = default, other\n%s",
            pd ? pd : "plugins", extra);
    fclose(f);
    return path;
}

static rngsnap *open_ini(const char *extra)
{
    rngsnap *ctx = NULL;
    int rc = rngsnap_open(&ctx, write_ini(extra), 0);
    if (rc != RNGSNAP_OK)
        print_error("rngsnap_open: %s\n", rngsnap_errmsg(NULL));
    assert_int_equal(rc, RNGSNAP_OK);
    return ctx;
}

/* Draw every dist through the handle and compare with the engine. */
static void check_stream(rngsnap_stream *s, size_t n)
{
    unsigned char *got = malloc(n * 8), *ref = malloc(n * 8);
    assert_non_null(got);
    assert_non_null(ref);
    for (int d = 0; d < RNGSNAP_DIST_COUNT; d++) {
        rngsnap_philox p, after;
        assert_int_equal(rngsnap_stream_position(s, &p), RNGSNAP_OK);
        assert_int_equal(rngsnap_generate(s, (rngsnap_dist)d, got, n),
                         RNGSNAP_OK);
        assert_int_equal(philox_generate_isa(&p, (rngsnap_dist)d, ref, n,
                                             PHILOX_ISA_SCALAR), RNGSNAP_OK);
        assert_memory_equal(got, ref, n * philox_value_size((rngsnap_dist)d));
        assert_int_equal(rngsnap_stream_position(s, &after), RNGSNAP_OK);
        assert_true(after.offset == p.offset);
        /* an odd number of words in between: the next start is mid-block */
        assert_int_equal(rngsnap_reserve(s, 3, &after), RNGSNAP_OK);
    }
    free(got);
    free(ref);
}

static void test_every_isa_and_thread_count(void **state)
{
    (void)state;
    const char *threads[] = {"1", "2", "3", "7"};
    for (int isa = PHILOX_ISA_AUTO; isa < PHILOX_ISA_COUNT; isa++) {
        if (!philox_isa_supported((philox_isa)isa))
            continue;
        for (size_t t = 0; t < 4; t++) {
            char extra[128];
            snprintf(extra, sizeof extra, "isa = %s\nthreads = %s\n",
                     philox_isa_name((philox_isa)isa), threads[t]);
            rngsnap *ctx = open_ini(extra);
            rngsnap_backend_info bi;
            assert_int_equal(rngsnap_backend_get(ctx, 0, &bi), RNGSNAP_OK);
            assert_non_null(bi.status);
            assert_non_null(strstr(bi.status, "Philox4x32-10"));
            assert_int_equal(rngsnap_seed_all(ctx, 1234), RNGSNAP_OK);
            rngsnap_stream *s;
            assert_int_equal(rngsnap_stream_find(ctx, "cpu", 0, "other", &s),
                             RNGSNAP_OK);
            check_stream(s, 1000 + 7 * t);
            check_stream(s, (2u << 20) / 4 + 5); /* the split path */
            /* past 2^32 blocks: the carry into the counter's 2nd word */
            rngsnap_philox at;
            assert_int_equal(rngsnap_reserve(s, 0, &at), RNGSNAP_OK);
            assert_int_equal(rngsnap_reserve(s, ((uint64_t)1 << 34) -
                                                    at.offset - 4001, &at),
                             RNGSNAP_OK);
            check_stream(s, 3001);
            check_stream(s, (2u << 20) / 4 + 5);
            rngsnap_close(ctx);
        }
    }
}

/* ---- every cuRAND vector through rngsnap_load ---------------------------
 * The public API has no call that sets an arbitrary (seed, subsequence,
 * offset), but a checkpoint does: save once, then for each vector write its
 * position into the cpu section's state, fix the two checksums
 * (docs/format.md: XXH3-64 of the section, and of the file before its last
 * 8 bytes), rngsnap_load it and draw through the handle. */

static unsigned char *read_all(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *b = malloc((size_t)n);
    assert_non_null(b);
    assert_int_equal(fread(b, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    *len = (size_t)n;
    return b;
}

static uint32_t get32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
           (uint32_t)p[3] << 24;
}

static void put64(unsigned char *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

static void test_curand_vectors_through_load(void **state)
{
    (void)state;
    stream_vec *v = NULL;
    int nv = read_streams(&v);
    assert_true(nv > 0);
    char ckpt[512];
    snprintf(ckpt, sizeof ckpt, "%s/vec.ckpt", dir);
    for (int isa = PHILOX_ISA_AUTO; isa < PHILOX_ISA_COUNT; isa++) {
        if (!philox_isa_supported((philox_isa)isa))
            continue;
        char extra[64];
        snprintf(extra, sizeof extra, "isa = %s\n",
                 philox_isa_name((philox_isa)isa));
        rngsnap *ctx = open_ini(extra);
        assert_int_equal(rngsnap_seed_all(ctx, 1), RNGSNAP_OK);
        assert_int_equal(rngsnap_save(ctx, ckpt, RNGSNAP_SAVE_REPLACE |
                                                     RNGSNAP_SAVE_NO_SYNC),
                         RNGSNAP_OK);
        size_t len;
        unsigned char *file = read_all(ckpt, &len);
        /* the section of cpu:0/other: its state is its last 32..8 bytes */
        size_t at = 64, sec = 0, size = 0;
        uint32_t count = get32(file + 48);
        for (uint32_t i = 0; i < count; i++, at += size) {
            size = get32(file + at + 4);
            const unsigned char *name = file + at + 8 + 2 + 3 + 1 + 4;
            if (get32(file + at) == 1 && memcmp(file + at + 10, "cpu", 3) == 0 &&
                memcmp(name + 2, "other", 6) == 0)
                sec = at;
        }
        assert_true(sec != 0);
        size = get32(file + sec + 4);
        unsigned char *st = file + sec + size - 8 - 24;
        rngsnap_stream *s;
        assert_int_equal(rngsnap_stream_find(ctx, "cpu", 0, "other", &s),
                         RNGSNAP_OK);
        for (int i = 0; i < nv; i++) {
            put64(st, v[i].seed);
            put64(st + 8, v[i].subsequence);
            put64(st + 16, v[i].offset);
            put64(file + sec + size - 8, XXH3_64bits(file + sec, size - 8));
            put64(file + len - 8, XXH3_64bits(file, len - 8));
            FILE *f = fopen(ckpt, "wb");
            assert_non_null(f);
            assert_int_equal(fwrite(file, 1, len, f), len);
            fclose(f);
            int rc = rngsnap_load(ctx, ckpt, 0);
            if (rc != RNGSNAP_OK)
                print_error("load: %s\n", rngsnap_errmsg(ctx));
            assert_int_equal(rc, RNGSNAP_OK);
            uint32_t w[4];
            assert_int_equal(rngsnap_generate(s, RNGSNAP_U32, w, 4),
                             RNGSNAP_OK);
            assert_memory_equal(w, v[i].expect, 16);
            rngsnap_philox p;
            assert_int_equal(rngsnap_stream_position(s, &p), RNGSNAP_OK);
            assert_true(p.seed == v[i].seed &&
                        p.subsequence == v[i].subsequence &&
                        p.offset == v[i].offset + 4);
            /* The next vector is another load after this draw: on
             * purpose, so leave the resumed run first. */
            assert_int_equal(rngsnap_branch(ctx), RNGSNAP_OK);
        }
        free(file);
        unlink(ckpt);
        rngsnap_close(ctx);
    }
    free(v);
}

static void test_reserve_through_api(void **state)
{
    (void)state;
    rngsnap *ctx = open_ini("");
    assert_int_equal(rngsnap_seed_all(ctx, 7), RNGSNAP_OK);
    rngsnap_stream *s;
    assert_int_equal(rngsnap_stream_find(ctx, "cpu", 0, "default", &s),
                     RNGSNAP_OK);
    rngsnap_philox a, b;
    assert_int_equal(rngsnap_reserve(s, 0, &a), RNGSNAP_OK);
    assert_true(a.offset == 0);
    assert_int_equal(rngsnap_reserve(s, 0, &b), RNGSNAP_OK);
    assert_memory_equal(&a, &b, sizeof a);
    assert_int_equal(rngsnap_reserve(s, 12345, &b), RNGSNAP_OK);
    assert_true(b.offset == 0);
    assert_int_equal(rngsnap_reserve(s, 0, &b), RNGSNAP_OK);
    assert_true(b.offset == 12345);
    uint32_t w, r[12346];
    assert_int_equal(rngsnap_generate(s, RNGSNAP_U32, &w, 1), RNGSNAP_OK);
    philox_generate(&a, RNGSNAP_U32, r, 12346);
    assert_int_equal(w, r[12345]);
    rngsnap_close(ctx);
}

static void test_unknown_option(void **state)
{
    (void)state;
    rngsnap *ctx = (rngsnap *)1;
    int rc = rngsnap_open(&ctx, write_ini("threads = 2\nthreds = 4\n"), 0);
    const char *msg = rngsnap_errmsg(NULL);
    print_message("# %s\n", msg);
    assert_int_equal(rc, RNGSNAP_E_CONFIG);
    assert_null(ctx);
    assert_non_null(strstr(msg, "threds"));
    assert_non_null(strstr(msg, "rng.ini:9:")); /* its line in the file */
    rc = rngsnap_open(&ctx, write_ini("isa = avx9000\n"), 0);
    assert_int_equal(rc, RNGSNAP_E_CONFIG);
    assert_non_null(strstr(rngsnap_errmsg(NULL), "avx9000"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_isa_and_thread_count),
        cmocka_unit_test(test_curand_vectors_through_load),
        cmocka_unit_test(test_reserve_through_api),
        cmocka_unit_test(test_unknown_option),
    };
    return cmocka_run_group_tests_name("cpu_api", tests, setup, teardown);
}
