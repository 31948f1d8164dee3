/*
 * test_ranks.c - rngsnap_save_ranks / rngsnap_load_ranks over an
 * in-process communicator (tests/common/thread_comm.c): N threads, each
 * its own rank with its own context.  What a user sees: bit-exact resume
 * of every rank, the same code and a message naming the first failing
 * rank on every rank, no live state changed by a refused load, the
 * previous checkpoint loadable after a failed save, a deterministic
 * fork onto another world size.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "rk_test.h"
#include "thread_comm.h"

#define NW 64      /* words drawn per stream to compare */
#define MAXR 8

/* What the ranks of one test share. */
typedef struct world {
    const char *ini[MAXR]; /* per rank; NULL: ini[0] */
    const char *dir;
    unsigned flags;
    int expect;            /* code every rank must get         */
    const char *msg;       /* text its message must contain     */
    uint32_t *words[MAXR]; /* draws right after a save          */
    uint8_t app[MAXR][16]; /* "progress" at the save            */
    uint64_t seed;
} world;

static const char *scratch;
static const char *mixed_ini;

/* rank 0's commit made to fail: the rename of a new MANIFEST into
 * place (a save with RNGSNAP_SAVE_REPLACE renames by full path). */
static volatile int fail_manifest_rename;
int __real_rename(const char *a, const char *b);
int __wrap_rename(const char *a, const char *b)
{
    size_t n = strlen(b);
    if (fail_manifest_rename && n >= 9 && !strcmp(b + n - 9, "/MANIFEST")) {
        errno = EIO;
        return -1;
    }
    return __real_rename(a, b);
}

/* Rank r's ini. */
static const char *ini_of(const world *w, int r)
{
    return w->ini[r] ? w->ini[r] : w->ini[0];
}

/* Seed, draw, set the app states (progress differs per rank, config is
 * the same on all), save, then record the next NW words of every
 * stream: what a resumed job must draw. */
static int body_save(int rank, const rngsnap_comm *c, void *arg)
{
    world *w = arg;
    int bad = 0;
    rngsnap *ctx = rk_open(ini_of(w, rank), rank, c->size, 0);
    if (!ctx)
        return 1;
    rk_app progress, config;
    memset(&progress, 0, sizeof progress);
    memset(&config, 0, sizeof config);
    memset(config.bytes, 0xc0, sizeof config.bytes);
    for (int i = 0; i < 16; i++)
        progress.bytes[i] = (uint8_t)(w->seed + 17 * rank + i);
    EXPECT_RC(rk_register(ctx, "progress", &progress), 0, ctx);
    EXPECT_RC(rk_register(ctx, "config", &config), 0, ctx);
    EXPECT_RC(rngsnap_seed_all(ctx, w->seed), 0, ctx);
    free(rk_draw(ctx, 5 + (size_t)rank)); /* positions differ per rank */
    EXPECT_RC(rngsnap_save_ranks(ctx, c, w->dir, w->flags), w->expect, ctx);
    if (w->msg)
        EXPECT_MSG(ctx, w->msg);
    memcpy(w->app[rank], progress.bytes, 16);
    free(w->words[rank]);
    w->words[rank] = rk_draw(ctx, NW);
    rngsnap_close(ctx);
    return bad;
}

/* A resumed job: fresh contexts (RESUME), app states with other bytes,
 * load, then draw: equal to the words recorded after the save. */
static int body_resume(int rank, const rngsnap_comm *c, void *arg)
{
    world *w = arg;
    int bad = 0;
    rngsnap *ctx = rk_open(ini_of(w, rank), rank, c->size, RNGSNAP_RESUME);
    if (!ctx)
        return 1;
    rk_app progress, config;
    memset(&progress, 0, sizeof progress);
    memset(&config, 0, sizeof config);
    EXPECT_RC(rk_register(ctx, "progress", &progress), 0, ctx);
    EXPECT_RC(rk_register(ctx, "config", &config), 0, ctx);
    EXPECT_RC(rngsnap_load_ranks(ctx, c, w->dir, 0), 0, ctx);
    uint32_t *got = rk_draw(ctx, NW);
    size_t ns = rngsnap_stream_count(ctx);
    EXPECT(w->words[rank]
           && memcmp(got, w->words[rank], ns * NW * sizeof *got) == 0);
    EXPECT(memcmp(progress.bytes, w->app[rank], 16) == 0);
    EXPECT(config.bytes[0] == 0xc0 && config.bytes[15] == 0xc0);
    /* the gate is open, and seeding now is refused */
    EXPECT_RC(rngsnap_seed_all(ctx, 1), RNGSNAP_E_ORDER, ctx);
    free(got);
    rngsnap_close(ctx);
    return bad;
}

static void world_free(world *w)
{
    for (int r = 0; r < MAXR; r++) {
        free(w->words[r]);
        w->words[r] = NULL;
    }
}

/* ---- bit-exact resume ------------------------------------------------------ */

static void resume_n(int n)
{
    char dir[600];
    snprintf(dir, sizeof dir, "%s/resume-%d", scratch, n);
    world w = {.ini = {mixed_ini}, .dir = dir, .seed = 1000 + (uint64_t)n};
    assert_int_equal(thread_comm_run(n, body_save, &w), 0);
    assert_int_equal(thread_comm_run(n, body_resume, &w), 0);

    /* The manifest, read as a tool reads it. */
    rngsnap_manifest *m;
    char err[1024];
    assert_int_equal(rngsnap_manifest_open(dir, &m, err, sizeof err), 0);
    const rngsnap_manifest_info *info = rngsnap_manifest_info_get(m);
    assert_int_equal(info->world_size, n);
    assert_int_equal(strlen(info->id), 32);
    assert_string_equal(info->forked_from, "");
    assert_int_equal(info->app_count, 2);
    const rngsnap_manifest_app *a0 = rngsnap_manifest_app_at(m, 0);
    const rngsnap_manifest_app *a1 = rngsnap_manifest_app_at(m, 1);
    assert_string_equal(a0->name, "progress");
    assert_int_equal(a0->same_on_all_ranks, n == 1);
    assert_string_equal(a1->name, "config");
    assert_int_equal(a1->same_on_all_ranks, 1);
    assert_null(rngsnap_manifest_rank_at(m, n));
    for (int r = 0; r < n; r++) {
        const rngsnap_manifest_rank *mr = rngsnap_manifest_rank_at(m, r);
        char want[64];
        snprintf(want, sizeof want, "rank-%05d.%s.rngsnap", r, info->id);
        assert_string_equal(mr->file, want);
        rngsnap_file *f;
        assert_int_equal(rngsnap_manifest_open_rank(m, r, &f, err,
                                                    sizeof err), 0);
        assert_int_equal(rngsnap_file_header_get(f)->rank, r);
        assert_int_equal(rngsnap_file_header_get(f)->file_size, mr->size);
        rngsnap_file_close(f);
    }
    rngsnap_manifest_close(m);
    /* n rank files and the manifest, nothing else */
    assert_int_equal(rk_count(dir), (size_t)n + 1);
    world_free(&w);
}

static void test_resume_1(void **state) { (void)state; resume_n(1); }
static void test_resume_2(void **state) { (void)state; resume_n(2); }
static void test_resume_4(void **state) { (void)state; resume_n(4); }

static int setup(void **state)
{
    (void)state;
    scratch = rk_setup();
    mixed_ini = getenv("RNGSNAP_MIXED_INI");
    return mixed_ini ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    rk_remove_tree(scratch);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_resume_1),
        cmocka_unit_test(test_resume_2),
        cmocka_unit_test(test_resume_4),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
