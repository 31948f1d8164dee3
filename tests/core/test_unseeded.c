/*
 * test_unseeded.c - a context never seeded nor loaded (issue 22): every
 * entry of a fresh context once sat at Philox (0, 0, 0), so cpu:0/default,
 * cpu:0/dropout, cpu:0/augment and cuda:0/default drew the same words
 * and derived the same keys.  Now its draws, reserves and keys are
 * refused (RNGSNAP_E_ORDER naming rngsnap_seed_all and rngsnap_load),
 * and its entries still start apart, where rngsnap_seed_all(ctx, 0) puts
 * them, so that even a checkpoint saved before any seeding, once loaded,
 * draws no sequence twice.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <rngsnap.h>

#include "helpers.h"

#define WORDS 8
#define MAXN 16

static const char *ini_path(void)
{
    const char *pd = getenv("RNGSNAP_PLUGIN_BUILD_DIR");
    assert_non_null(pd);
    return th_write("unseeded.ini", "[rngsnap]\nplugin_dir = %s\n"
                    "[backend.cpu]\nplugin = rngsnap_cpu\n"
                    "streams = default, dropout, augment\n"
                    "[backend.cuda]\nplugin = rngsnap_cuda\n"
                    "emulate_devices = 2\nstreams = default, dropout\n", pd);
}

/* Every pair of entries draws other words and derives other keys. */
static void check_pairs_differ(rngsnap *ctx)
{
    size_t n = rngsnap_stream_count(ctx);
    assert_true(n >= 4 && n <= MAXN);
    uint32_t w[MAXN][WORDS];
    rngsnap_philox key[MAXN];
    for (size_t i = 0; i < n; i++) {
        rngsnap_stream *s = rngsnap_stream_at(ctx, i);
        assert_int_equal(rngsnap_derive(s, 7, 9, &key[i]), RNGSNAP_OK);
        assert_int_equal(rngsnap_generate(s, RNGSNAP_U32, w[i], WORDS),
                         RNGSNAP_OK);
    }
    for (size_t i = 0; i < n; i++)
        for (size_t j = i + 1; j < n; j++) {
            if (memcmp(w[i], w[j], sizeof w[i]) == 0)
                fail_msg("entries %zu and %zu draw the same words", i, j);
            if (memcmp(&key[i], &key[j], sizeof key[i]) == 0)
                fail_msg("entries %zu and %zu derive the same key", i, j);
        }
}

static void test_unseeded_draws_refused(void **state)
{
    (void)state;
    rngsnap *ctx = th_open_ok(ini_path(), 0);
    rngsnap_stream *s;
    assert_int_equal(rngsnap_stream_find(ctx, "cuda", 1, "dropout", &s),
                     RNGSNAP_OK);
    uint32_t w[4];
    rngsnap_philox at, before;
    assert_int_equal(rngsnap_stream_position(s, &before), RNGSNAP_OK);
    assert_int_equal(rngsnap_generate(s, RNGSNAP_U32, w, 4), RNGSNAP_E_ORDER);
    th_contains(rngsnap_errmsg(ctx), "rngsnap_generate", "cuda:1/dropout",
                "neither seeded nor loaded", "rngsnap_seed_all",
                "rngsnap_load");
    assert_int_equal(rngsnap_reserve(s, 4, &at), RNGSNAP_E_ORDER);
    th_contains(rngsnap_errmsg(ctx), "rngsnap_reserve", "rngsnap_seed_all");
    assert_int_equal(rngsnap_derive(s, 1, 2, &at), RNGSNAP_E_ORDER);
    th_contains(rngsnap_errmsg(ctx), "rngsnap_derive", "rngsnap_seed_all");
    /* Nothing drawn: a draw of 0 values and a reserve of 0 words pass. */
    assert_int_equal(rngsnap_generate(s, RNGSNAP_U32, w, 0), RNGSNAP_OK);
    assert_int_equal(rngsnap_reserve(s, 0, &at), RNGSNAP_OK);
    assert_memory_equal(&at, &before, sizeof at);
    assert_int_equal(rngsnap_seed_all(ctx, 42), RNGSNAP_OK);
    check_pairs_differ(ctx);
    rngsnap_close(ctx);
}

/* The documented default: seed_all(0)'s positions, for the rank in
 * effect (set_rank moves them), all different. */
static void test_default_positions(void **state)
{
    (void)state;
    rngsnap *a = th_open_ok(ini_path(), 0), *b = th_open_ok(ini_path(), 0);
    assert_int_equal(rngsnap_set_rank(a, 1, 2), RNGSNAP_OK);
    assert_int_equal(rngsnap_set_rank(b, 1, 2), RNGSNAP_OK);
    assert_int_equal(rngsnap_seed_all(b, 0), RNGSNAP_OK);
    size_t n = rngsnap_stream_count(a);
    rngsnap_philox pa[MAXN], pb;
    for (size_t i = 0; i < n; i++) {
        assert_int_equal(rngsnap_stream_position(rngsnap_stream_at(a, i),
                                                 &pa[i]), RNGSNAP_OK);
        assert_int_equal(rngsnap_stream_position(rngsnap_stream_at(b, i),
                                                 &pb), RNGSNAP_OK);
        assert_memory_equal(&pa[i], &pb, sizeof pb);
        assert_int_equal(pa[i].subsequence, 1);
        for (size_t j = 0; j < i; j++)
            assert_memory_not_equal(&pa[i], &pa[j], sizeof pb);
    }
    rngsnap_close(a);
    rngsnap_close(b);
}

/* A checkpoint saved before any seeding, loaded: every pair differs. */
static void test_unseeded_checkpoint_loaded(void **state)
{
    (void)state;
    char path[4200];
    snprintf(path, sizeof path, "%s/unseeded.rngsnap", th_tmpdir());
    rngsnap *a = th_open_ok(ini_path(), 0);
    assert_int_equal(rngsnap_save(a, path, RNGSNAP_SAVE_REPLACE), RNGSNAP_OK);
    rngsnap_close(a);
    rngsnap *r = th_open_ok(ini_path(), 0);
    assert_int_equal(rngsnap_load(r, path, 0), RNGSNAP_OK);
    check_pairs_differ(r);
    rngsnap_close(r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_unseeded_draws_refused),
        cmocka_unit_test(test_default_positions),
        cmocka_unit_test(test_unseeded_checkpoint_loaded),
    };
    return cmocka_run_group_tests(tests, th_group_setup, th_group_teardown);
}
