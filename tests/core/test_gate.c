/*
 * test_gate.c - the resume gate and resumed contexts (strict by
 * default, issue 31).  A context opened with RNGSNAP_RESUME refuses
 * generate and reserve (RNGSNAP_E_ORDER naming the stream) until a load
 * has succeeded.  EVERY context that has loaded a checkpoint, whatever
 * its flags, is a resumed one: rngsnap_seed_all, a second load once a
 * stream has drawn (test_reload_*) and an app state registered after the
 * load (test_register_after_load) are refused, changing nothing, until
 * rngsnap_branch (test_branch_*).  A RESUME context closed without a
 * load says so on stderr (test_close_*).  Some tests apply a load's
 * effect on the context (rs_mark_loaded, as rngsnap_load does) through
 * the static core; test_with_real_load and the others use the real
 * rngsnap_save / rngsnap_load.
 */
#include <fcntl.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include <rngsnap.h>

#include "context.h"
#include "helpers.h"
#include "internal.h"
#include "words.h"

static char ini[4096];

/* What a successful rngsnap_load does to the gate fields. */
static void as_if_loaded(rngsnap *ctx)
{
    rs_mark_loaded(ctx);
}

/* The refusals' exact words (C). */
#define SEED_REFUSED                                                       \
    "rngsnap_seed_all refused: this context has loaded a checkpoint, so "  \
    "it resumes that run, and seeding now would throw the restored "       \
    "positions away. Leave the seeding out when resuming (the load has "   \
    "set every stream); to start a new run from this checkpoint on "       \
    "purpose, call rngsnap_branch first"
#define RELOAD_REFUSED(what, streams, it)                                  \
    what " refused, nothing restored: this context has loaded a "          \
    "checkpoint and has drawn from " streams " since its load; loading "   \
    "again would rewind " it " to the checkpoint's positions and replay "  \
    "numbers already used. Load once, before the first draw; to go back "  \
    "to a checkpoint on purpose, load it into a new context "              \
    "(rngsnap_open) or call rngsnap_branch first"
#define REGISTER_REFUSED                                                   \
    "rngsnap_register_state late refused: this context has loaded a "      \
    "checkpoint, and that load restored only the app states registered "   \
    "before it, so app state late would keep this run's values, not the "  \
    "checkpoint's; register every app state before the load (to add one "  \
    "to a new run started from this checkpoint on purpose, call "          \
    "rngsnap_branch first)"

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
    assert_string_equal(rngsnap_errmsg(ctx), SEED_REFUSED);
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
    assert_int_equal(ctx->resumed, 0);
    uint32_t w[4];
    assert_int_equal(rngsnap_seed_all(ctx, 1), RNGSNAP_OK); /* test_unseeded.c */
    assert_int_equal(rngsnap_seed_all(ctx, 2), RNGSNAP_OK); /* not loaded */
    assert_int_equal(rngsnap_generate(rngsnap_stream_at(ctx, 0), RNGSNAP_U32,
                                      w, 4), RNGSNAP_OK);
    /* Strict by default: a plain context that has loaded refuses to
     * re-seed as a RESUME one does (it used to allow it, issue 31). */
    as_if_loaded(ctx);
    assert_int_equal(ctx->resumed, 1);
    assert_int_equal(rngsnap_seed_all(ctx, 5), RNGSNAP_E_ORDER);
    assert_string_equal(rngsnap_errmsg(ctx), SEED_REFUSED);
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
    assert_string_equal(rngsnap_errmsg(res), SEED_REFUSED);
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

/* An app state registered after a context's load would keep this run's
 * values (the load restored nothing of it): refused in C words, nothing
 * registered, in a RESUME context and (strict by default) in a plain
 * one alike.  Before the load, or after rngsnap_branch, allowed. */
static void test_register_after_load(void **state)
{
    (void)state;
    char ckpt[4096], again[4096];
    snprintf(ckpt, sizeof ckpt, "%s/late.ckpt", th_tmpdir());
    snprintf(again, sizeof again, "%s/late-again.ckpt", th_tmpdir());
    save_one(ckpt, 41);

    static const unsigned flags[] = {RNGSNAP_RESUME, 0};
    for (size_t f = 0; f < 2; f++) {
        rngsnap *res = th_open_ok(ini, flags[f]);
        assert_int_equal(rngsnap_load(res, ckpt, 0), RNGSNAP_OK);
        late_calls = 0;
        assert_int_equal(rngsnap_register_state(res, "late", &late_ops,
                                                NULL), RNGSNAP_E_ORDER);
        assert_string_equal(rngsnap_errmsg(res), REGISTER_REFUSED);
        /* Nothing registered: a save does not call it, and the file
         * loads into a context without it. */
        assert_int_equal(rngsnap_save(res, again, RNGSNAP_SAVE_REPLACE),
                         RNGSNAP_OK);
        assert_int_equal(late_calls, 0);
        rngsnap *check = th_open_ok(ini, 0);
        assert_int_equal(rngsnap_load(check, again, 0), RNGSNAP_OK);
        rngsnap_close(check);
        /* A new run off the checkpoint, on purpose: allowed. */
        assert_int_equal(rngsnap_branch(res), RNGSNAP_OK);
        assert_int_equal(rngsnap_register_state(res, "late", &late_ops,
                                                NULL), RNGSNAP_OK);
        rngsnap_close(res);
    }

    /* Registered before the load: the load requires and restores it. */
    rngsnap *res = th_open_ok(ini, RNGSNAP_RESUME);
    assert_int_equal(rngsnap_register_state(res, "late", &late_ops, NULL),
                     RNGSNAP_OK);
    assert_int_equal(rngsnap_load(res, again, 0), RNGSNAP_E_MISMATCH);
    rngsnap_close(res);

    /* A context never loaded registers whenever it likes. */
    rngsnap *plain = th_open_ok(ini, 0);
    assert_int_equal(rngsnap_seed_all(plain, 3), RNGSNAP_OK);
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
    char ck[4096], want[4600];
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
    snprintf(want, sizeof want, RELOAD_REFUSED("load %s",
             "stream good:1/dropout", "it"), ck);
    assert_string_equal(rngsnap_errmsg(ctx), want);
    positions(ctx, after);
    assert_memory_equal(before, after, sizeof before[0]
                        * rngsnap_stream_count(ctx));
    /* The same from bytes: */
    void *img;
    size_t len;
    assert_int_equal(rngsnap_save_mem(ctx, &img, &len, 0), RNGSNAP_OK);
    assert_int_equal(rngsnap_load_mem(ctx, img, len, 0), RNGSNAP_E_ORDER);
    assert_string_equal(rngsnap_errmsg(ctx), RELOAD_REFUSED(
        "load checkpoint bytes", "stream good:1/dropout", "it"));
    positions(ctx, after);
    assert_memory_equal(before, after, sizeof before[0]
                        * rngsnap_stream_count(ctx));
    rngsnap_free(img);
    rngsnap_close(ctx);
}

/* Each stream drawn is named; a reserve is a draw (a keyed draw is not:
 * test_derive). */
static void test_reload_names_each(void **state)
{
    (void)state;
    char ck[4096], want[4600];
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
    snprintf(want, sizeof want, RELOAD_REFUSED("load %s", "streams "
             "good:0/default, good:1/dropout", "them"), ck);
    assert_string_equal(rngsnap_errmsg(ctx), want);
    rngsnap_close(ctx);
}

/* Strict by default: a plain context that has loaded refuses a load
 * after a draw as a RESUME one does (it used to rewind silently, issue
 * 31), and a draw before its first load does not count.  A job that
 * rolls back on purpose calls rngsnap_branch first; a fresh context
 * loads what the first refused. */
static void test_reload_without_resume(void **state)
{
    (void)state;
    char ck[4096], want[4600];
    snprintf(ck, sizeof ck, "%s/reload-plain.ckpt", th_tmpdir());
    save_one(ck, 33);
    rngsnap *ctx = th_open_ok(ini, 0);
    assert_int_equal(rngsnap_seed_all(ctx, 9), RNGSNAP_OK);
    uint32_t w[4], x[4], y[4];
    rngsnap_stream *s = rngsnap_stream_at(ctx, 1);
    /* drawn before the first load: that load is allowed */
    assert_int_equal(rngsnap_generate(s, RNGSNAP_U32, w, 4), RNGSNAP_OK);
    assert_int_equal(rngsnap_load(ctx, ck, 0), RNGSNAP_OK);
    assert_int_equal(rngsnap_generate(s, RNGSNAP_U32, x, 4), RNGSNAP_OK);
    rngsnap_philox before[8], after[8];
    positions(ctx, before);
    assert_int_equal(rngsnap_load(ctx, ck, 0), RNGSNAP_E_ORDER);
    snprintf(want, sizeof want, RELOAD_REFUSED("load %s",
             "stream good:0/dropout", "it"), ck);
    assert_string_equal(rngsnap_errmsg(ctx), want);
    positions(ctx, after);
    assert_memory_equal(before, after, sizeof before[0]
                        * rngsnap_stream_count(ctx));
    /* rolled back on purpose */
    assert_int_equal(rngsnap_branch(ctx), RNGSNAP_OK);
    assert_int_equal(rngsnap_load(ctx, ck, 0), RNGSNAP_OK);
    assert_int_equal(rngsnap_generate(s, RNGSNAP_U32, y, 4), RNGSNAP_OK);
    assert_memory_equal(x, y, sizeof x); /* rewound, as asked */
    /* and that load made it a resumed context again */
    assert_int_equal(rngsnap_load(ctx, ck, 0), RNGSNAP_E_ORDER);
    assert_int_equal(rngsnap_seed_all(ctx, 9), RNGSNAP_E_ORDER);
    rngsnap_close(ctx);

    ctx = th_open_ok(ini, RNGSNAP_RESUME);
    assert_int_equal(rngsnap_load(ctx, ck, 0), RNGSNAP_OK);
    assert_int_equal(rngsnap_generate(rngsnap_stream_at(ctx, 1), RNGSNAP_U32,
                                      w, 4), RNGSNAP_OK);
    assert_memory_equal(w, x, sizeof w);
    rngsnap_close(ctx);
}

/* Every kind of load makes a plain context a resumed one: a file and
 * bytes here (the multi-rank load: tests/ranks, body_chain).  Nothing is
 * changed by the refusals. */
static void test_seed_after_every_load(void **state)
{
    (void)state;
    char ck[4096];
    snprintf(ck, sizeof ck, "%s/every.ckpt", th_tmpdir());
    save_one(ck, 35);
    for (int mem = 0; mem < 2; mem++) {
        rngsnap *ctx = th_open_ok(ini, 0);
        assert_int_equal(rngsnap_seed_all(ctx, 12), RNGSNAP_OK);
        if (mem) {
            rngsnap *src = th_open_ok(ini, 0);
            void *img;
            size_t len;
            assert_int_equal(rngsnap_load(src, ck, 0), RNGSNAP_OK);
            assert_int_equal(rngsnap_save_mem(src, &img, &len, 0),
                             RNGSNAP_OK);
            assert_int_equal(rngsnap_load_mem(ctx, img, len, 0),
                             RNGSNAP_OK);
            rngsnap_free(img);
            rngsnap_close(src);
        } else {
            assert_int_equal(rngsnap_load(ctx, ck, 0), RNGSNAP_OK);
        }
        rngsnap_philox before[8], after[8];
        positions(ctx, before);
        assert_int_equal(rngsnap_seed_all(ctx, 12), RNGSNAP_E_ORDER);
        assert_string_equal(rngsnap_errmsg(ctx), SEED_REFUSED);
        positions(ctx, after);
        assert_memory_equal(before, after, sizeof before[0]
                            * rngsnap_stream_count(ctx));
        rngsnap_close(ctx);
    }
}

/* rngsnap_branch: the deliberate fork of a run ("seeded from a
 * checkpoint").  After it seed_all, a load after draws and a
 * registration are allowed; the loaded positions stay until then; a
 * second call is harmless; the next load makes the context resumed
 * again. */
static void test_branch(void **state)
{
    (void)state;
    char ck[4096];
    snprintf(ck, sizeof ck, "%s/branch.ckpt", th_tmpdir());
    save_one(ck, 36);
    rngsnap *ref = th_open_ok(ini, 0);
    assert_int_equal(rngsnap_load(ref, ck, 0), RNGSNAP_OK);
    rngsnap *ctx = th_open_ok(ini, RNGSNAP_RESUME);
    assert_int_equal(rngsnap_load(ctx, ck, 0), RNGSNAP_OK);
    rngsnap_philox a[8], b[8];
    positions(ref, a);
    assert_int_equal(rngsnap_branch(ctx), RNGSNAP_OK);
    assert_int_equal(rngsnap_branch(ctx), RNGSNAP_OK); /* again: harmless */
    positions(ctx, b); /* the branch moved nothing */
    assert_memory_equal(a, b, sizeof a[0] * rngsnap_stream_count(ctx));
    uint32_t w[4], x[4];
    assert_int_equal(rngsnap_generate(rngsnap_stream_at(ctx, 2), RNGSNAP_U32,
                                      w, 4), RNGSNAP_OK);
    assert_int_equal(rngsnap_generate(rngsnap_stream_at(ref, 2), RNGSNAP_U32,
                                      x, 4), RNGSNAP_OK);
    assert_memory_equal(w, x, sizeof w); /* still the checkpoint's run */
    /* the new run's seed */
    assert_int_equal(rngsnap_seed_all(ctx, 1234), RNGSNAP_OK);
    rngsnap *fresh = th_open_ok(ini, 0);
    assert_int_equal(rngsnap_seed_all(fresh, 1234), RNGSNAP_OK);
    positions(fresh, a);
    positions(ctx, b);
    assert_memory_equal(a, b, sizeof a[0] * rngsnap_stream_count(ctx));
    rngsnap_close(fresh);
    /* a load after draws, on purpose */
    assert_int_equal(rngsnap_generate(rngsnap_stream_at(ctx, 2), RNGSNAP_U32,
                                      w, 4), RNGSNAP_OK);
    assert_int_equal(rngsnap_load(ctx, ck, 0), RNGSNAP_OK);
    /* which made it a resumed context again */
    assert_int_equal(rngsnap_seed_all(ctx, 1234), RNGSNAP_E_ORDER);
    assert_string_equal(rngsnap_errmsg(ctx), SEED_REFUSED);
    rngsnap_close(ctx);
    rngsnap_close(ref);
}

/* Nothing to branch from before a load: refused in C words (in a RESUME
 * context awaiting its load too), nothing changed; NULL is invalid. */
static void test_branch_without_load(void **state)
{
    (void)state;
    static const unsigned flags[] = {0, RNGSNAP_RESUME};
    for (size_t f = 0; f < 2; f++) {
        rngsnap *ctx = th_open_ok(ini, flags[f]);
        assert_int_equal(rngsnap_branch(ctx), RNGSNAP_E_ORDER);
        assert_string_equal(rngsnap_errmsg(ctx), "rngsnap_branch refused: "
            "this context has not loaded a checkpoint, so there is no run "
            "to branch from (call rngsnap_load, rngsnap_load_mem or "
            "rngsnap_mpi_load first); a run that starts from no checkpoint "
            "needs no branch, only rngsnap_seed_all");
        assert_int_equal(ctx->awaiting_load, flags[f] ? 1 : 0);
        assert_int_equal(ctx->resumed, 0);
        if (flags[f])
            as_if_loaded(ctx); /* not to be reported at close */
        rngsnap_close(ctx);
    }
    assert_int_equal(rngsnap_branch(NULL), RNGSNAP_E_INVALID);
    th_contains(rngsnap_errmsg(NULL), "rngsnap_branch: ctx is NULL");
}

/* A branched context was loaded: the seed gate stays open and
 * rs_seed_default (open, set_rank) never moves its loaded states, as a
 * context seeded once never goes back to the default. */
static void test_branch_keeps_loaded_states(void **state)
{
    (void)state;
    char ck[4096];
    snprintf(ck, sizeof ck, "%s/branch-rank.ckpt", th_tmpdir());
    save_one(ck, 37);
    rngsnap *ctx = th_open_ok(ini, 0);
    assert_int_equal(rngsnap_load(ctx, ck, 0), RNGSNAP_OK);
    assert_int_equal(rngsnap_branch(ctx), RNGSNAP_OK);
    rngsnap_philox a[8], b[8];
    positions(ctx, a);
    assert_int_equal(rngsnap_set_rank(ctx, 1, 2), RNGSNAP_OK);
    positions(ctx, b);
    assert_memory_equal(a, b, sizeof a[0] * rngsnap_stream_count(ctx));
    uint32_t w[2];
    assert_int_equal(rngsnap_generate(rngsnap_stream_at(ctx, 0), RNGSNAP_U32,
                                      w, 2), RNGSNAP_OK);
    rngsnap_close(ctx);
}

/* The refusals in the Python package's words (rs_set_lang), so that its
 * binding can map rngsnap_branch to ctx.branch() with no words of its
 * own. */
static void test_python_words(void **state)
{
    (void)state;
    char ck[4096], want[4600];
    snprintf(ck, sizeof ck, "%s/words.ckpt", th_tmpdir());
    save_one(ck, 38);
    rngsnap *ctx = th_open_ok(ini, 0);
    rs_set_lang(ctx, RS_LANG_PYTHON);
    assert_int_equal(rngsnap_branch(ctx), RNGSNAP_E_ORDER);
    assert_string_equal(rngsnap_errmsg(ctx), "ctx.branch() refused: this "
        "context has not loaded a checkpoint, so there is no run to branch "
        "from (call ctx.load(), ctx.load_state_dict(), ctx.load_bytes() or "
        "ctx.load_ranks(), whichever this job resumes with, first); a run "
        "that starts from no checkpoint needs no branch, only "
        "ctx.seed_all()");
    assert_int_equal(rngsnap_load(ctx, ck, 0), RNGSNAP_OK);
    assert_int_equal(rngsnap_seed_all(ctx, 1), RNGSNAP_E_ORDER);
    assert_string_equal(rngsnap_errmsg(ctx), "ctx.seed_all() refused: this "
        "context has loaded a checkpoint, so it resumes that run, and "
        "seeding now would throw the restored positions away. Leave the "
        "seeding out when resuming (the load has set every stream); to "
        "start a new run from this checkpoint on purpose, call "
        "ctx.branch() first");
    uint32_t w[1];
    assert_int_equal(rngsnap_generate(rngsnap_stream_at(ctx, 0), RNGSNAP_U32,
                                      w, 1), RNGSNAP_OK);
    assert_int_equal(rngsnap_load(ctx, ck, 0), RNGSNAP_E_ORDER);
    snprintf(want, sizeof want, "load %s refused, nothing restored: this "
             "context has loaded a checkpoint and has drawn from stream "
             "good:0/default since its load; loading again would rewind it "
             "to the checkpoint's positions and replay numbers already "
             "used. Load once, before the first draw; to go back to a "
             "checkpoint on purpose, load it into a new context "
             "(rngsnap.Context()) or call ctx.branch() first", ck);
    assert_string_equal(rngsnap_errmsg(ctx), want);
    rngsnap_close(ctx);
}

/* What rngsnap_close(ctx) writes on stderr. */
static void capture_close(rngsnap *ctx, char *out, size_t len)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/stderr.txt", th_tmpdir());
    fflush(stderr);
    int saved = dup(2);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    assert_true(saved >= 0 && fd >= 0);
    assert_int_equal(dup2(fd, 2), 2);
    close(fd);
    rngsnap_close(ctx);
    fflush(stderr);
    assert_int_equal(dup2(saved, 2), 2);
    close(saved);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    size_t n = fread(out, 1, len - 1, f);
    out[n] = '\0';
    fclose(f);
}

/* Issue 31, item 3: a RESUME context that never loaded has resumed
 * nothing; its saves are refused, and its close says so (the core's
 * default-level warning, as for an rng.ini mistake), naming the load.
 * Loaded, or opened without RESUME: nothing is said.  `log = none`
 * silences it, as it silences every warning. */
static void test_close_without_load(void **state)
{
    (void)state;
    char got[2048], ck[4096], want[4600];
    snprintf(ck, sizeof ck, "%s/close.ckpt", th_tmpdir());
    rngsnap *ctx = th_open_ok(ini, RNGSNAP_RESUME);
    assert_int_equal(rngsnap_save(ctx, ck, RNGSNAP_SAVE_REPLACE),
                     RNGSNAP_E_ORDER);
    snprintf(want, sizeof want, "save %s: this context was opened with "
             "RNGSNAP_RESUME and has not loaded a checkpoint yet (call "
             "rngsnap_load, rngsnap_load_mem or rngsnap_mpi_load first). "
             "On a first run, with no checkpoint yet, open the context "
             "without RNGSNAP_RESUME and seed it (rngsnap_seed_all)", ck);
    assert_string_equal(rngsnap_errmsg(ctx), want);
    capture_close(ctx, got, sizeof got);
    assert_string_equal(got, "rngsnap warn: rngsnap_close: this context "
        "was opened with RNGSNAP_RESUME but never loaded a checkpoint, so "
        "this job resumed nothing (its draws and saves, if any, were "
        "refused). Call rngsnap_load, rngsnap_load_mem or rngsnap_mpi_load "
        "right after opening; for a first run, open without "
        "RNGSNAP_RESUME\n");

    save_one(ck, 39);
    ctx = th_open_ok(ini, RNGSNAP_RESUME);
    assert_int_equal(rngsnap_load(ctx, ck, 0), RNGSNAP_OK);
    capture_close(ctx, got, sizeof got);
    assert_string_equal(got, "");
    capture_close(th_open_ok(ini, 0), got, sizeof got);
    assert_string_equal(got, "");

    const char *quiet = th_write("quiet.ini", "[rngsnap]\nplugin_dir = %s\n"
                                 "log = none\n[backend.good]\ndevices = 2\n"
                                 "streams = default, dropout\n",
                                 th_plugin_dir());
    capture_close(th_open_ok(quiet, RNGSNAP_RESUME), got, sizeof got);
    assert_string_equal(got, "");
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
        cmocka_unit_test(test_seed_after_every_load),
        cmocka_unit_test(test_branch),
        cmocka_unit_test(test_branch_without_load),
        cmocka_unit_test(test_branch_keeps_loaded_states),
        cmocka_unit_test(test_python_words),
        cmocka_unit_test(test_close_without_load),
    };
    return cmocka_run_group_tests(tests, setup, th_group_teardown);
}
