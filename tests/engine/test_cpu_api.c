/*
 * test_cpu_api.c - the cpu plugin loaded by the core through the public
 * API (rngsnap_open on a temporary rng.ini whose plugin_dir is the build's
 * plugin folder): every dist through a stream handle equals the engine's
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

#include "philox.h"
#include "philox_isa.h"
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
        cmocka_unit_test(test_reserve_through_api),
        cmocka_unit_test(test_unknown_option),
    };
    return cmocka_run_group_tests_name("cpu_api", tests, setup, teardown);
}
