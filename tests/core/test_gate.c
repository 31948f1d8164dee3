/*
 * test_gate.c - the resume gate.  A context opened with RNGSNAP_RESUME
 * refuses generate and reserve (RNGSNAP_E_ORDER naming the stream) until
 * a load has succeeded, and refuses rngsnap_seed_all after it, and a
 * second load once a stream has drawn (test_reload_*), and an app state
 * registered after the load (test_register_after_load).  The load
 * itself is the checkpoint engineer's: here its effect on the context
 * (loaded = 1, awaiting_load = 0, as rngsnap_load sets them) is applied
 * through the static core; test_with_real_load then checks the same with
 * the real rngsnap_save / rngsnap_load.
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

#include "context.h"
#include "helpers.h"

static char ini[4096];

/* What a successful rngsnap_load does to the gate fields. */
static void as_if_loaded(rngsnap *ctx)
{
    ctx->loaded = 1;
    ctx->awaiting_load = 0;
}

static void test_draw_before_load(void **state)
{
    (void)state;
    rngsnap *ctx = th_open_ok(ini, RNGSNAP_RESUME);
    rngsnap_stream *s;
    assert_int_equal(rngsnap_stream_find(ctx, "good", 1, "dropout", &s),
                     RNGSNAP_OK);
    uint32_t w[4];
    rngsnap_philox at;
    assert_int_equal(rngsnap_generate(s, RNGSNAP_U32, w, 4), RNGSNAP_E_ORDER);
    th_contains(rngsnap_errmsg(ctx), "good:1/dropout", "RNGSNAP_RESUME",
                "rngsnap_load");
    assert_int_equal(rngsnap_reserve(s, 4, &at), RNGSNAP_E_ORDER);
    th_contains(rngsnap_errmsg(ctx), "rngsnap_reserve", "good:1/dropout");
    /* Even a zero-length draw is refused: it is still out of order. */
    assert_int_equal(rngsnap_generate(s, RNGSNAP_U32, w, 0), RNGSNAP_E_ORDER);
    /* Reading the position does not draw: allowed. */
    assert_int_equal(rngsnap_stream_position(s, &at), RNGSNAP_OK);
    assert_int_equal(at.offset, 0);
    /* Seeding before the load is allowed (the load overwrites it) and
     * does not open the gate. */
    assert_int_equal(rngsnap_seed_all(ctx, 5), RNGSNAP_OK);
    assert_int_equal(rngsnap_generate(s, RNGSNAP_U32, w, 4), RNGSNAP_E_ORDER);

    as_if_loaded(ctx);
    assert_int_equal(rngsnap_generate(s, RNGSNAP_U32, w, 4), RNGSNAP_OK);
    assert_int_equal(rngsnap_reserve(s, 4, &at), RNGSNAP_OK);
    assert_int_equal(at.offset, 4);
    rngsnap_close(ctx);
}

static void test_seed_after_load(void **state)
{
    (void)state;
    rngsnap *ctx = th_open_ok(ini, RNGSNAP_RESUME);
    as_if_loaded(ctx);
    rngsnap_stream *s = rngsnap_stream_at(ctx, 0);
    uint32_t w[4];
    assert_int_equal(rngsnap_generate(s, RNGSNAP_U32, w, 4), RNGSNAP_OK);
    rngsnap_philox before, after;
    assert_int_equal(rngsnap_stream_position(s, &before), RNGSNAP_OK);
    assert_int_equal(rngsnap_seed_all(ctx, 5), RNGSNAP_E_ORDER);
    th_contains(rngsnap_errmsg(ctx), "rngsnap_seed_all", "RNGSNAP_RESUME",
                "loaded");
    assert_int_equal(rngsnap_stream_position(s, &after), RNGSNAP_OK);
    assert_memory_equal(&before, &after, sizeof before); /* untouched */
    rngsnap_close(ctx);
}

static void test_without_resume(void **state)
{
    (void)state;
    rngsnap *ctx = th_open_ok(ini, 0);
    assert_int_equal(ctx->awaiting_load, 0);
    assert_int_equal(ctx->loaded, 0);
    uint32_t w[4];
    assert_int_equal(rngsnap_seed_all(ctx, 1), RNGSNAP_OK); /* test_unseeded.c */
    assert_int_equal(rngsnap_generate(rngsnap_stream_at(ctx, 0), RNGSNAP_U32,
                                      w, 4), RNGSNAP_OK);
    /* A plain context may load and re-seed: only RESUME locks seeding. */
    as_if_loaded(ctx);
    assert_int_equal(rngsnap_seed_all(ctx, 5), RNGSNAP_OK);
    rngsnap_close(ctx);

    ctx = th_open_ok(ini, RNGSNAP_RESUME);
    assert_int_equal(ctx->awaiting_load, 1);
    assert_int_equal(ctx->loaded, 0);
    rngsnap_close(ctx);
}

/* The whole gate with the real rngsnap_save / rngsnap_load. */
static void test_with_real_load(void **state)
{
    (void)state;
    char ckpt[4096];
    snprintf(ckpt, sizeof ckpt, "%s/gate.ckpt", th_tmpdir());
    rngsnap *run = th_open_ok(ini, 0);
    assert_int_equal(rngsnap_seed_all(run, 77), RNGSNAP_OK);
    uint32_t w[16];
    for (size_t i = 0; i < rngsnap_stream_count(run); i++)
        assert_int_equal(rngsnap_generate(rngsnap_stream_at(run, i),
                                          RNGSNAP_U32, w, 3 + i), RNGSNAP_OK);
    assert_int_equal(rngsnap_save(run, ckpt, RNGSNAP_SAVE_REPLACE),
                     RNGSNAP_OK);

    rngsnap *res = th_open_ok(ini, RNGSNAP_RESUME);
    rngsnap_stream *s = rngsnap_stream_at(res, 2);
    assert_int_equal(rngsnap_generate(s, RNGSNAP_U32, w, 1), RNGSNAP_E_ORDER);
    th_contains(rngsnap_errmsg(res), "good:1/default");
    /* A failed load keeps the gate shut. */
    char missing[4096];
    snprintf(missing, sizeof missing, "%s/missing.ckpt", th_tmpdir());
    assert_int_not_equal(rngsnap_load(res, missing, 0), RNGSNAP_OK);
    assert_int_equal(rngsnap_generate(s, RNGSNAP_U32, w, 1), RNGSNAP_E_ORDER);

    assert_int_equal(rngsnap_load(res, ckpt, 0), RNGSNAP_OK);
    for (size_t i = 0; i < rngsnap_stream_count(res); i++) {
        rngsnap_philox a, b;
        assert_int_equal(rngsnap_stream_position(rngsnap_stream_at(run, i),
                                                 &a), RNGSNAP_OK);
        assert_int_equal(rngsnap_stream_position(rngsnap_stream_at(res, i),
                                                 &b), RNGSNAP_OK);
        assert_memory_equal(&a, &b, sizeof a);
    }
    uint32_t x[4], y[4];
    assert_int_equal(rngsnap_generate(rngsnap_stream_at(run, 2), RNGSNAP_U32,
                                      x, 4), RNGSNAP_OK);
    assert_int_equal(rngsnap_generate(s, RNGSNAP_U32, y, 4), RNGSNAP_OK);
    assert_memory_equal(x, y, sizeof x);
    assert_int_equal(rngsnap_seed_all(res, 77), RNGSNAP_E_ORDER);
    th_contains(rngsnap_errmsg(res), "rngsnap_seed_all");
    rngsnap_close(res);
    rngsnap_close(run);
}

/* Every stream's position, to show a refusal changed nothing. */
static void positions(rngsnap *ctx, rngsnap_philox *at)
{
    for (size_t i = 0; i < rngsnap_stream_count(ctx); i++)
        assert_int_equal(rngsnap_stream_position(rngsnap_stream_at(ctx, i),
                                                 &at[i]), RNGSNAP_OK);
}

/* A checkpoint of every stream at some position, saved by a plain run. */
static void save_one(const char *path, uint64_t seed)
{
    rngsnap *run = th_open_ok(ini, 0);
    assert_int_equal(rngsnap_seed_all(run, seed), RNGSNAP_OK);
    uint32_t w[8];
    for (size_t i = 0; i < rngsnap_stream_count(run); i++)
        assert_int_equal(rngsnap_generate(rngsnap_stream_at(run, i),
                                          RNGSNAP_U32, w, 1 + i), RNGSNAP_OK);
    assert_int_equal(rngsnap_save(run, path, RNGSNAP_SAVE_REPLACE),
                     RNGSNAP_OK);
    rngsnap_close(run);
}

/* App state callbacks that count their calls. */
static int late_calls;
static size_t late_size(void *u) { (void)u; late_calls++; return 4; }
static int late_save(void *u, void *buf, size_t len)
{
    (void)u, (void)len;
    late_calls++;
    memcpy(buf, "late", 4);
    return 0;
}
static int late_load(void *u, const void *buf, size_t len)
{
    (void)u, (void)buf, (void)len;
    late_calls++;
    return 0;
}
static const rngsnap_state_ops late_ops = {late_size, late_save, late_load};

/* An app state registered after a RESUME context's load would keep this
 * run's values (the load restored nothing of it): refused in C words,
 * nothing registered.  Before the load, or in a plain context, allowed. */
static void test_register_after_load(void **state)
{
    (void)state;
    char ckpt[4096], again[4096];
    snprintf(ckpt, sizeof ckpt, "%s/late.ckpt", th_tmpdir());
    snprintf(again, sizeof again, "%s/late-again.ckpt", th_tmpdir());
    save_one(ckpt, 41);

    rngsnap *res = th_open_ok(ini, RNGSNAP_RESUME);
    assert_int_equal(rngsnap_load(res, ckpt, 0), RNGSNAP_OK);
    late_calls = 0;
    assert_int_equal(rngsnap_register_state(res, "late", &late_ops, NULL),
                     RNGSNAP_E_ORDER);
    assert_string_equal(rngsnap_errmsg(res),
        "rngsnap_register_state late refused: this context was opened with "
        "RNGSNAP_RESUME and its load has already restored it, so app state "
        "late would keep this run's values, not the checkpoint's; register "
        "every app state before rngsnap_load (or rngsnap_load_mem, "
        "rngsnap_mpi_load)");
    /* Nothing registered: a save does not call it, and the file loads
     * into a context without it. */
    assert_int_equal(rngsnap_save(res, again, RNGSNAP_SAVE_REPLACE),
                     RNGSNAP_OK);
    assert_int_equal(late_calls, 0);
    rngsnap *check = th_open_ok(ini, 0);
    assert_int_equal(rngsnap_load(check, again, 0), RNGSNAP_OK);
    rngsnap_close(check);
    rngsnap_close(res);

    /* Registered before the load: the load requires and restores it. */
    res = th_open_ok(ini, RNGSNAP_RESUME);
    assert_int_equal(rngsnap_register_state(res, "late", &late_ops, NULL),
                     RNGSNAP_OK);
    assert_int_equal(rngsnap_load(res, again, 0), RNGSNAP_E_MISMATCH);
    rngsnap_close(res);

    /* A plain context may register whenever it likes. */
    rngsnap *plain = th_open_ok(ini, 0);
    assert_int_equal(rngsnap_load(plain, ckpt, 0), RNGSNAP_OK);
    assert_int_equal(rngsnap_register_state(plain, "late", &late_ops, NULL),
                     RNGSNAP_OK);
    rngsnap_close(plain);
}

/* A resumed job that loads again after drawing would rewind the stream
 * and replay its numbers: refused, naming each stream drawn, with every
 * position as it was.  Loading again before any draw is harmless. */
static void test_reload_after_draw(void **state)
{
    (void)state;
    char ck[4096];
    snprintf(ck, sizeof ck, "%s/reload.ckpt", th_tmpdir());
    save_one(ck, 31);
    rngsnap *ctx = th_open_ok(ini, RNGSNAP_RESUME);
    assert_int_equal(rngsnap_load(ctx, ck, 0), RNGSNAP_OK);
    assert_int_equal(rngsnap_load(ctx, ck, 0), RNGSNAP_OK); /* no draw yet */
    rngsnap_philox at;
    /* Reading the position and a 0-word reserve do not draw. */
    assert_int_equal(rngsnap_reserve(rngsnap_stream_at(ctx, 0), 0, &at),
                     RNGSNAP_OK);
    assert_int_equal(rngsnap_load(ctx, ck, 0), RNGSNAP_OK);

    rngsnap_stream *s;
    assert_int_equal(rngsnap_stream_find(ctx, "good", 1, "dropout", &s),
                     RNGSNAP_OK);
    uint32_t w[4];
    assert_int_equal(rngsnap_generate(s, RNGSNAP_U32, w, 4), RNGSNAP_OK);
    rngsnap_philox before[8], after[8];
    assert_true(rngsnap_stream_count(ctx) <= 8);
    positions(ctx, before);
    assert_int_equal(rngsnap_load(ctx, ck, 0), RNGSNAP_E_ORDER);
    th_contains(rngsnap_errmsg(ctx), "load ", "reload.ckpt", "refused, "
                "nothing restored", "RNGSNAP_RESUME", "stream good:1/dropout "
                "since its load", "rewind it", "Load once, before the first "
                "draw", "rngsnap_open");
    positions(ctx, after);
    assert_memory_equal(before, after, sizeof before[0]
                        * rngsnap_stream_count(ctx));
    /* The same from bytes: */
    void *img;
    size_t len;
    assert_int_equal(rngsnap_save_mem(ctx, &img, &len, 0), RNGSNAP_OK);
    assert_int_equal(rngsnap_load_mem(ctx, img, len, 0), RNGSNAP_E_ORDER);
    th_contains(rngsnap_errmsg(ctx), "load checkpoint bytes refused",
                "good:1/dropout");
    positions(ctx, after);
    assert_memory_equal(before, after, sizeof before[0]
                        * rngsnap_stream_count(ctx));
    rngsnap_free(img);
    /* A draw after the refusal is the job's next number, not a replay. */
    rngsnap_close(ctx);
}

/* Each stream drawn is named; a reserve is a draw (a keyed draw is not:
 * test_derive). */
static void test_reload_names_each(void **state)
{
    (void)state;
    char ck[4096];
    snprintf(ck, sizeof ck, "%s/reload-each.ckpt", th_tmpdir());
    save_one(ck, 32);
    rngsnap *ctx = th_open_ok(ini, RNGSNAP_RESUME);
    assert_int_equal(rngsnap_load(ctx, ck, 0), RNGSNAP_OK);
    uint32_t w[4];
    rngsnap_philox at;
    assert_int_equal(rngsnap_reserve(rngsnap_stream_at(ctx, 0), 4, &at),
                     RNGSNAP_OK);
    assert_int_equal(rngsnap_generate(rngsnap_stream_at(ctx, 3),
                                      RNGSNAP_U32, w, 1), RNGSNAP_OK);
    assert_int_equal(rngsnap_load(ctx, ck, 0), RNGSNAP_E_ORDER);
    th_contains(rngsnap_errmsg(ctx), "streams good:0/default, "
                "good:1/dropout since its load", "rewind them");
    rngsnap_close(ctx);
}

/* Only RESUME refuses: a plain context may load whenever it likes (a job
 * that rolls back on purpose), and a fresh context loads what the first
 * refused. */
static void test_reload_without_resume(void **state)
{
    (void)state;
    char ck[4096];
    snprintf(ck, sizeof ck, "%s/reload-plain.ckpt", th_tmpdir());
    save_one(ck, 33);
    rngsnap *ctx = th_open_ok(ini, 0);
    assert_int_equal(rngsnap_load(ctx, ck, 0), RNGSNAP_OK);
    uint32_t w[4], x[4], y[4];
    rngsnap_stream *s = rngsnap_stream_at(ctx, 1);
    assert_int_equal(rngsnap_generate(s, RNGSNAP_U32, x, 4), RNGSNAP_OK);
    assert_int_equal(rngsnap_load(ctx, ck, 0), RNGSNAP_OK);
    assert_int_equal(rngsnap_generate(s, RNGSNAP_U32, y, 4), RNGSNAP_OK);
    assert_memory_equal(x, y, sizeof x); /* rewound, as asked */
    rngsnap_close(ctx);

    ctx = th_open_ok(ini, RNGSNAP_RESUME);
    assert_int_equal(rngsnap_load(ctx, ck, 0), RNGSNAP_OK);
    assert_int_equal(rngsnap_generate(rngsnap_stream_at(ctx, 1), RNGSNAP_U32,
                                      w, 4), RNGSNAP_OK);
    assert_memory_equal(w, x, sizeof w);
    rngsnap_close(ctx);
}

static int setup(void **state)
{
    (void)state;
    test_clean_env();
    snprintf(ini, sizeof ini, "%s",
             th_ini("[backend.good]\ndevices = 2\n"
                    "streams = default, dropout\n"));
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_draw_before_load),
        cmocka_unit_test(test_seed_after_load),
        cmocka_unit_test(test_without_resume),
        cmocka_unit_test(test_with_real_load),
        cmocka_unit_test(test_reload_after_draw),
        cmocka_unit_test(test_reload_names_each),
        cmocka_unit_test(test_reload_without_resume),
        cmocka_unit_test(test_register_after_load),
    };
    return cmocka_run_group_tests(tests, setup, th_group_teardown);
}
