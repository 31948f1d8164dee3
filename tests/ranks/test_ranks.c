/*
 * test_ranks.c - rngsnap_save_ranks / rngsnap_load_ranks over an
 * in-process communicator (tests/common/thread_comm.c): N threads, each
 * its own rank with its own context.  What a user sees: bit-exact resume
 * of every rank, the same code and a message naming the first failing
 * rank on every rank, no live state changed by a refused load, the
 * previous checkpoint loadable after a failed save, a deterministic
 * fork onto another world size.  Saves here write one file per rank
 * (RNGSNAP_SAVE_PER_RANK_FILES); test_nodes.c covers one file per node.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <xxhash.h>

#include "rk_test.h"
#include "thread_comm.h"
#include "remove_tree.h"

#define NW 64      /* words drawn per stream to compare */
/* These tests hold the file-per-rank layout (names, sizes and counts of
 * rank files); test_nodes.c holds the node layout. */
#define PER_RANK RNGSNAP_SAVE_PER_RANK_FILES
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
    int no_progress;       /* register only "config"            */
    int fail_save;         /* rank+1 whose app save fails       */
    int fail_load;         /* rank+1 whose app load fails       */
    int keep_words;        /* a save that fails: keep words[]   */
    int branch;            /* body_chain: rngsnap_branch, no reseed */
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

/* Opens of paths that contain count_opens_of (set only while no rank
 * thread runs): rngsnap_manifest_open_rank reads a rank file once. */
static const char *count_opens_of;
static int opens;
int __real_open64(const char *path, int flags, ...);
int __wrap_open64(const char *path, int flags, ...)
{
    int mode = 0;
    if (flags & (O_CREAT | O_TMPFILE)) {
        va_list ap;
        va_start(ap, flags);
        mode = va_arg(ap, int);
        va_end(ap);
    }
    if (count_opens_of && strstr(path, count_opens_of))
        opens++;
    return __real_open64(path, flags, mode);
}

/* The core's clock (its 60 s rule for rank files and temporaries that
 * no save has touched), fixed while fake_now is set (set and cleared
 * only while no rank thread runs): the ages the tests give files are then exact, however
 * long the test takes between setting them and saving. */
static time_t fake_now;
time_t __real_time(time_t *t);
time_t __wrap_time(time_t *t)
{
    time_t now = fake_now ? fake_now : __real_time(NULL);
    if (t)
        *t = now;
    return now;
}

/* Last written `by` seconds from fake_now. */
static void stamp(const char *path, long by)
{
    struct timespec t[2] = {{.tv_sec = fake_now + by}};
    t[1] = t[0];
    assert_int_equal(utimensat(AT_FDCWD, path, t, 0), 0);
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
    progress.fail_save = w->fail_save == rank + 1;
    if (!w->no_progress)
        EXPECT_RC(rk_register(ctx, "progress", &progress), 0, ctx);
    EXPECT_RC(rk_register(ctx, "config", &config), 0, ctx);
    EXPECT_RC(rngsnap_seed_all(ctx, w->seed), 0, ctx);
    free(rk_draw(ctx, 5 + (size_t)rank)); /* positions differ per rank */
    EXPECT_RC(rngsnap_save_ranks(ctx, c, w->dir, w->flags | PER_RANK), w->expect, ctx);
    if (w->msg)
        EXPECT_MSG(ctx, w->msg);
    if (!w->keep_words) {
        memcpy(w->app[rank], progress.bytes, 16);
        free(w->words[rank]);
        w->words[rank] = rk_draw(ctx, NW);
    }
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
    if (!w->no_progress)
        EXPECT_RC(rk_register(ctx, "progress", &progress), 0, ctx);
    EXPECT_RC(rk_register(ctx, "config", &config), 0, ctx);
    EXPECT_RC(rngsnap_load_ranks(ctx, c, w->dir, 0), 0, ctx);
    uint32_t *got = rk_draw(ctx, NW);
    size_t ns = rngsnap_stream_count(ctx);
    EXPECT(w->words[rank]
           && memcmp(got, w->words[rank], ns * NW * sizeof *got) == 0);
    EXPECT(w->no_progress || memcmp(progress.bytes, w->app[rank], 16) == 0);
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
        opens = 0;
        count_opens_of = mr->file;
        int rc = rngsnap_manifest_open_rank(m, r, &f, err, sizeof err);
        count_opens_of = NULL;
        assert_int_equal(rc, 0);
        assert_int_equal(opens, 1);
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
static void test_resume_8(void **state) { (void)state; resume_n(8); }

/* ---- an existing checkpoint, REPLACE ----------------------------------------- */

static void manifest_id(const char *dir, char id[33])
{
    rngsnap_manifest *m;
    char err[1024];
    int rc = rngsnap_manifest_open(dir, &m, err, sizeof err);
    if (rc)
        fail_msg("manifest of %s: %s", dir, err);
    memcpy(id, rngsnap_manifest_info_get(m)->id, 33);
    rngsnap_manifest_close(m);
}

static void test_exists_and_replace(void **state)
{
    (void)state;
    char dir[600], id1[33], id2[33];
    snprintf(dir, sizeof dir, "%s/exists", scratch);
    world w = {.ini = {mixed_ini}, .dir = dir, .seed = 7};
    assert_int_equal(thread_comm_run(2, body_save, &w), 0);
    manifest_id(dir, id1);
    /* without REPLACE: refused on every rank, nothing written */
    world again = {.ini = {mixed_ini}, .dir = dir, .seed = 8,
                   .expect = RNGSNAP_E_EXISTS, .keep_words = 1,
                   .msg = "rank 0 of 2: save_ranks"};
    assert_int_equal(thread_comm_run(2, body_save, &again), 0);
    again.msg = "MANIFEST exists (a committed checkpoint); pass "
                "RNGSNAP_SAVE_REPLACE";
    assert_int_equal(thread_comm_run(2, body_save, &again), 0);
    manifest_id(dir, id2);
    assert_string_equal(id1, id2);
    assert_int_equal(rk_count(dir), 3);
    /* with it: a new checkpoint, the old rank files removed */
    w.flags = RNGSNAP_SAVE_REPLACE;
    w.seed = 9;
    assert_int_equal(thread_comm_run(2, body_save, &w), 0);
    manifest_id(dir, id2);
    assert_string_not_equal(id1, id2);
    assert_int_equal(rk_count(dir), 3);
    assert_int_equal(thread_comm_run(2, body_resume, &w), 0);
    world_free(&w);
}

/* ---- what a commit removes, and what it keeps ------------------------------ */

static int body_resume_order(int rank, const rngsnap_comm *c, void *arg)
{
    world *w = arg;
    int bad = 0;
    rngsnap *ctx = rk_open(ini_of(w, rank), rank, c->size, RNGSNAP_RESUME);
    if (!ctx)
        return 1;
    /* a resumed job saving before its load would overwrite it */
    EXPECT_RC(rngsnap_save_ranks(ctx, c, w->dir, RNGSNAP_SAVE_REPLACE | PER_RANK),
              RNGSNAP_E_ORDER, ctx);
    EXPECT_MSG(ctx, "has not loaded a checkpoint yet (call "
                    "rngsnap_load_ranks first)");
    rngsnap_close(ctx);
    return bad;
}

static void test_cleanup_and_order(void **state)
{
    (void)state;
    char dir[600], id[33];
    snprintf(dir, sizeof dir, "%s/cleanup", scratch);
    world w = {.ini = {mixed_ini}, .dir = dir, .seed = 11,
               .flags = RNGSNAP_SAVE_NO_SYNC};
    assert_int_equal(thread_comm_run(2, body_save, &w), 0);
    manifest_id(dir, id);
    /* what killed saves leave (a rank file of an id never committed, a
     * rank temporary, both untouched for long), what a save in progress
     * may have written (young ones: kept), and a user's own files */
    char young[700];
    snprintf(young, sizeof young, "%s", rk_path(dir, "rank-00001.fedcba9876543210fedcba9876543210.rngsnap"));
    rk_write(young, "x", 1);
    const char *junk = rk_path(dir, "rank-00001.0123456789abcdef0123456789abcdef.rngsnap");
    const char *tmp_old = rk_path(dir, ".rank-00000.0123456789abcdef0123456789abcdef.rngsnap.tmp-1-2-3");
    const char *tmp_new = rk_path(dir, ".rank-00000.00000000000000000000000000000000.rngsnap.tmp-4-5-6");
    char keep1[700], keep2[700];
    snprintf(keep1, sizeof keep1, "%s", rk_path(dir, "notes.txt"));
    snprintf(keep2, sizeof keep2, "%s", rk_path(dir, "rank-7.rngsnap"));
    char junk_c[700], old_c[700], new_c[700];
    snprintf(junk_c, sizeof junk_c, "%s", junk);
    snprintf(old_c, sizeof old_c, "%s", tmp_old);
    snprintf(new_c, sizeof new_c, "%s", tmp_new);
    rk_write(junk_c, "x", 1);
    rk_write(old_c, "x", 1);
    rk_write(new_c, "x", 1);
    rk_write(keep1, "x", 1);
    rk_write(keep2, "x", 1);
    /* ages by a clock that stands still: 61 s is old, 59 s young */
    fake_now = time(NULL);
    stamp(old_c, -61);
    stamp(junk_c, -61);
    stamp(new_c, -59);
    stamp(young, -59);
    w.flags = RNGSNAP_SAVE_REPLACE | RNGSNAP_SAVE_NO_SYNC;
    assert_int_equal(thread_comm_run(2, body_save, &w), 0);
    fake_now = 0;
    assert_int_equal(access(junk_c, F_OK), -1);
    assert_int_equal(access(old_c, F_OK), -1);
    assert_int_equal(access(new_c, F_OK), 0); /* may be a live save's */
    assert_int_equal(access(young, F_OK), 0);
    assert_int_equal(access(keep1, F_OK), 0);
    assert_int_equal(access(keep2, F_OK), 0);
    /* 2 rank files, the manifest, the young temporary and rank file, the
     * user's 2; the previous checkpoint's 2 files are gone */
    assert_int_equal(rk_count(dir), 7);
    assert_int_equal(thread_comm_run(2, body_resume, &w), 0);
    assert_int_equal(thread_comm_run(2, body_resume_order, &w), 0);
    world_free(&w);
}

/* ---- a second load after a draw ------------------------------------------- */

/* Loading again before any draw is harmless; once one rank has drawn, a
 * load_ranks would rewind it, and every rank refuses together (the
 * others would otherwise wait in the collective), changing nothing. */
static int body_reload(int rank, const rngsnap_comm *c, void *arg)
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
    EXPECT_RC(rngsnap_load_ranks(ctx, c, w->dir, 0), 0, ctx);
    rngsnap_stream *s = rngsnap_stream_at(ctx, 0);
    uint32_t word;
    if (rank == 1)
        EXPECT_RC(rngsnap_generate(s, RNGSNAP_U32, &word, 1), 0, ctx);
    size_t n0, n1;
    uint8_t *before = rk_take(ctx, &n0);
    progress.bytes[0] ^= 0x5a; /* what the job did since its load */
    uint8_t app[16];
    memcpy(app, progress.bytes, 16);
    EXPECT_RC(rngsnap_load_ranks(ctx, c, w->dir, 0), RNGSNAP_E_ORDER, ctx);
    char want[700];
    snprintf(want, sizeof want, "rank 1 of 2: load_ranks %s refused, "
             "nothing restored: this context has loaded a checkpoint and "
             "has drawn from stream %s:%d/%s since its load", w->dir,
             rngsnap_stream_backend(s), rngsnap_stream_device(s),
             rngsnap_stream_name(s));
    EXPECT_MSG(ctx, want);
    uint8_t *after = rk_take(ctx, &n1);
    EXPECT(n0 == n1 && memcmp(before, after, n0) == 0);
    EXPECT(memcmp(app, progress.bytes, 16) == 0);
    free(before);
    free(after);
    rngsnap_close(ctx);
    return bad;
}

static void test_reload_after_draw(void **state)
{
    (void)state;
    char dir[600];
    snprintf(dir, sizeof dir, "%s/reload", scratch);
    world w = {.ini = {mixed_ini}, .dir = dir, .seed = 21};
    assert_int_equal(thread_comm_run(2, body_save, &w), 0);
    assert_int_equal(thread_comm_run(2, body_reload, &w), 0);
    world_free(&w);
}

/* ---- a save that fails leaves the previous checkpoint --------------------- */

static void test_failed_save_keeps_previous(void **state)
{
    (void)state;
    char dir[600], id1[33], id2[33];
    snprintf(dir, sizeof dir, "%s/keep", scratch);
    world w = {.ini = {mixed_ini}, .dir = dir, .seed = 21};
    assert_int_equal(thread_comm_run(3, body_save, &w), 0);
    manifest_id(dir, id1);

    /* rank 0's commit fails (the manifest's rename): every rank says
     * so, the new rank files are gone, the old checkpoint loads */
    world f = {.ini = {mixed_ini}, .dir = dir, .seed = 22,
               .flags = RNGSNAP_SAVE_REPLACE, .keep_words = 1,
               .expect = RNGSNAP_E_IO, .msg = "rank 0 of 3: save_ranks"};
    fail_manifest_rename = 1;
    int rc = thread_comm_run(3, body_save, &f);
    fail_manifest_rename = 0;
    assert_int_equal(rc, 0);
    manifest_id(dir, id2);
    assert_string_equal(id1, id2);
    assert_int_equal(rk_count(dir), 4);
    assert_int_equal(thread_comm_run(3, body_resume, &w), 0);

    /* an app state's save fails on rank 1: before any commit */
    f.fail_save = 2;
    f.expect = RNGSNAP_E_BACKEND;
    f.msg = "rank 1 of 3: save ";
    assert_int_equal(thread_comm_run(3, body_save, &f), 0);
    f.msg = "app state progress: save callback returned 5";
    assert_int_equal(thread_comm_run(3, body_save, &f), 0);
    manifest_id(dir, id2);
    assert_string_equal(id1, id2);
    assert_int_equal(rk_count(dir), 4);
    assert_int_equal(thread_comm_run(3, body_resume, &w), 0);
    world_free(&w);
}

/* The communicator fails in the last step, after rank 0 renamed the new
 * manifest into place: no rank can tell whether the commit happened, so
 * no rank may remove its new file (the committed manifest names it). */
static void test_comm_fails_after_commit(void **state)
{
    (void)state;
    char dir[600], id1[33], id2[33];
    snprintf(dir, sizeof dir, "%s/lost-step", scratch);
    world w = {.ini = {mixed_ini}, .dir = dir, .seed = 25};
    assert_int_equal(thread_comm_run(2, body_save, &w), 0);
    manifest_id(dir, id1);
    /* broadcasts: the id (0), node files written (1), the commit (2) */
    world f = {.ini = {mixed_ini}, .dir = dir, .seed = 26,
               .flags = RNGSNAP_SAVE_REPLACE, .expect = RNGSNAP_E_BACKEND,
               .msg = "communicator broadcast from rank 0 failed "
                      "(returned 44)"};
    thread_comm_fail(2, 44);
    assert_int_equal(thread_comm_run(2, body_save, &f), 0);
    manifest_id(dir, id2);
    assert_string_not_equal(id1, id2); /* the commit did happen */
    /* ... and the checkpoint it committed loads in full */
    assert_int_equal(thread_comm_run(2, body_resume, &f), 0);
    world_free(&w);
    world_free(&f);
}

/* Two jobs saving into one folder at once (not supported, docs say so,
 * but it must not leave a commit naming removed files): job B's ranks
 * have written their files; before B commits, job A saves the folder
 * whole (REPLACE).  A's clean-up must not remove B's young files, so
 * that B's commit, renamed last, loads in full. */
typedef struct hooked {
    const rngsnap_comm *inner;
    int calls;
    world *other; /* saved by rank 0 right after its second broadcast */
} hooked;

/* Broadcast 1 ends the step in which every node's file is written:
 * B's files are in the folder, B's manifest not yet. */
static int hooked_broadcast(void *u, void *b, size_t l, int root)
{
    hooked *h = u;
    int x = h->inner->broadcast(h->inner->user, b, l, root);
    if (h->calls++ == 1 && h->inner->rank == 0 && h->other)
        (void)thread_comm_run(2, body_save, h->other);
    return x;
}

static int hooked_send(void *u, const void *b, size_t l, int dest)
{
    hooked *h = u;
    return h->inner->send(h->inner->user, b, l, dest);
}

static int hooked_recv(void *u, void *b, size_t l, int src, int *from)
{
    hooked *h = u;
    return h->inner->recv(h->inner->user, b, l, src, from);
}

typedef struct two_jobs {
    world *b, *a;
} two_jobs;

static int body_save_hooked(int rank, const rngsnap_comm *c, void *arg)
{
    two_jobs *t = arg;
    hooked h = {c, 0, t->a};
    rngsnap_comm mine = *c;
    mine.user = &h;
    mine.broadcast = hooked_broadcast;
    mine.send = hooked_send;
    mine.recv = hooked_recv;
    return body_save(rank, &mine, t->b);
}

static void test_two_jobs_one_folder(void **state)
{
    (void)state;
    /* B's files stay young (not touched for 60 s) however long this
     * takes: the core's clock stands still */
    fake_now = time(NULL);
    char dir[600];
    snprintf(dir, sizeof dir, "%s/two-jobs", scratch);
    world o = {.ini = {mixed_ini}, .dir = dir, .seed = 27};
    assert_int_equal(thread_comm_run(2, body_save, &o), 0);
    world a = {.ini = {mixed_ini}, .dir = dir, .seed = 28,
               .flags = RNGSNAP_SAVE_REPLACE};
    world b = {.ini = {mixed_ini}, .dir = dir, .seed = 29,
               .flags = RNGSNAP_SAVE_REPLACE};
    two_jobs t = {&b, &a};
    assert_int_equal(thread_comm_run(2, body_save_hooked, &t), 0);
    fake_now = 0;
    /* B renamed its manifest last: B's checkpoint is the one, whole */
    assert_int_equal(thread_comm_run(2, body_resume, &b), 0);
    world_free(&o);
    world_free(&a);
    world_free(&b);
}

/* ---- a load that fails on one rank changes no rank ------------------------- */

/* Seed, draw, note every state; the load must fail with w->expect and
 * w->msg on every rank and leave every state as noted. */
static int body_refused(int rank, const rngsnap_comm *c, void *arg)
{
    world *w = arg;
    int bad = 0;
    rngsnap *ctx = rk_open(ini_of(w, rank), rank, c->size, 0);
    if (!ctx)
        return 1;
    rk_app progress, config;
    memset(&progress, 0, sizeof progress);
    memset(&config, 0, sizeof config);
    memset(progress.bytes, 0x55, 16);
    memset(config.bytes, 0x66, 16);
    progress.fail_load = w->fail_load == rank + 1;
    EXPECT_RC(rk_register(ctx, "progress", &progress), 0, ctx);
    EXPECT_RC(rk_register(ctx, "config", &config), 0, ctx);
    EXPECT_RC(rngsnap_seed_all(ctx, 4242), 0, ctx);
    free(rk_draw(ctx, 3));
    size_t la, lb;
    uint8_t *before = rk_take(ctx, &la);
    EXPECT_RC(rngsnap_load_ranks(ctx, c, w->dir, w->flags), w->expect, ctx);
    if (w->msg)
        EXPECT_MSG(ctx, w->msg);
    uint8_t *after = rk_take(ctx, &lb);
    EXPECT(la == lb && memcmp(before, after, la) == 0);
    uint8_t p55[16], p66[16];
    memset(p55, 0x55, 16);
    memset(p66, 0x66, 16);
    EXPECT(memcmp(progress.bytes, p55, 16) == 0);
    EXPECT(memcmp(config.bytes, p66, 16) == 0);
    free(before);
    free(after);
    rngsnap_close(ctx);
    return bad;
}

/* Run body_refused on n ranks, twice: once for the code and the first
 * failing rank, once for the reason. */
static void refused(world *w, int n, int code, const char *who,
                    const char *why)
{
    w->expect = code;
    w->msg = who;
    assert_int_equal(thread_comm_run(n, body_refused, w), 0);
    w->msg = why;
    assert_int_equal(thread_comm_run(n, body_refused, w), 0);
    w->msg = NULL;
    w->expect = 0;
}

static void swap_files(const char *a, const char *b)
{
    char t[1100];
    snprintf(t, sizeof t, "%s.swap", a);
    assert_int_equal(rename(a, t), 0);
    assert_int_equal(rename(b, a), 0);
    assert_int_equal(rename(t, b), 0);
}

static void test_load_failures(void **state)
{
    (void)state;
    const char *ini = rk_ini(scratch, "md.ini",
                             "[backend.cpu]\nplugin = rngsnap_cpu\n"
                             "streams = default, dropout\n"
                             "[backend.multidev]\nplugin = rngsnap_multidev\n"
                             "devices = 2\nstreams = a, b\n");
    char ini_c[1100], ini_s[1100], ini_h[1100];
    snprintf(ini_c, sizeof ini_c, "%s", ini);
    snprintf(ini_s, sizeof ini_s, "%s",
             rk_ini(scratch, "md-fail.ini",
                    "[backend.cpu]\nplugin = rngsnap_cpu\n"
                    "streams = default, dropout\n"
                    "[backend.multidev]\nplugin = rngsnap_multidev\n"
                    "devices = 2\nstreams = a, b\n"
                    "fail_set_state_on_device = 1\n"));
    snprintf(ini_h, sizeof ini_h, "%s",
             rk_ini(scratch, "md-half.ini",
                    "[backend.cpu]\nplugin = rngsnap_cpu\n"
                    "streams = default, dropout\n"
                    "[backend.multidev]\nplugin = rngsnap_multidev\n"
                    "devices = 2\nstreams = a, b\n"
                    "half_set_state_on_device = 0\n"));
    char dir[600], other[600], id[33];
    snprintf(dir, sizeof dir, "%s/fail", scratch);
    snprintf(other, sizeof other, "%s/fail-other", scratch);
    world w = {.ini = {ini_c}, .dir = dir, .seed = 31};
    assert_int_equal(thread_comm_run(3, body_save, &w), 0);
    world o = {.ini = {ini_c}, .dir = other, .seed = 32};
    assert_int_equal(thread_comm_run(3, body_save, &o), 0);
    manifest_id(dir, id);
    char f0[1100], f1[1100], f2[1100], n1[64];
    snprintf(n1, sizeof n1, "rank-00001.%s.rngsnap", id);
    snprintf(f0, sizeof f0, "%s/rank-00000.%s.rngsnap", dir, id);
    snprintf(f1, sizeof f1, "%s/%s", dir, n1);
    snprintf(f2, sizeof f2, "%s/rank-00002.%s.rngsnap", dir, id);

    /* a missing rank file */
    size_t len;
    uint8_t *keep = rk_read(f1, &len);
    assert_non_null(keep);
    assert_int_equal(unlink(f1), 0);
    refused(&w, 3, RNGSNAP_E_IO, "rank 1 of 3: load_ranks", n1);
    /* a flipped byte in it */
    keep[len / 2] ^= 0x10;
    rk_write(f1, keep, len);
    refused(&w, 3, RNGSNAP_E_CORRUPT, "rank 1 of 3: load_ranks",
            "(rank 1's file): XXH3-64");
    keep[len / 2] ^= 0x10;
    rk_write(f1, keep, len);
    free(keep);
    /* two rank files swapped: rank 0 is the first to notice */
    swap_files(f0, f1);
    refused(&w, 3, RNGSNAP_E_CORRUPT, "rank 0 of 3: load_ranks",
            "(rank 0's file)");
    swap_files(f0, f1);
    /* another checkpoint's manifest: its rank files are not here */
    char mine[1100], theirs[1100];
    snprintf(mine, sizeof mine, "%s/MANIFEST", dir);
    snprintf(theirs, sizeof theirs, "%s/MANIFEST", other);
    size_t ml, tl;
    uint8_t *mb = rk_read(mine, &ml), *tb = rk_read(theirs, &tl);
    rk_write(mine, tb, tl);
    refused(&w, 3, RNGSNAP_E_IO, "rank 0 of 3: load_ranks", "cannot open");
    rk_write(mine, mb, ml);
    free(mb);
    free(tb);
    /* another job's rank file under this checkpoint's name */
    manifest_id(other, id);
    char of2[1100];
    snprintf(of2, sizeof of2, "%s/rank-00002.%s.rngsnap", other, id);
    keep = rk_read(f2, &len);
    uint8_t *foreign = rk_read(of2, &tl);
    rk_write(f2, foreign, tl);
    refused(&w, 3, RNGSNAP_E_CORRUPT, "rank 2 of 3: load_ranks",
            "another checkpoint's file");
    rk_write(f2, keep, len);
    free(keep);
    free(foreign);
    /* an app state's load callback fails on rank 2, after ranks 0 and 1
     * have committed: they undo */
    w.fail_load = 3;
    refused(&w, 3, RNGSNAP_E_BACKEND, "rank 2 of 3: load ",
            "app state progress: load callback returned 6");
    w.fail_load = 0;
    /* a plugin's set_state fails on rank 1 */
    w.ini[1] = ini_s;
    refused(&w, 3, RNGSNAP_E_BACKEND, "rank 1 of 3: ",
            "test hook: fail_set_state_on_device = 1");
    /* ... or changes the state and then fails, on rank 2 */
    w.ini[1] = NULL;
    w.ini[2] = ini_h;
    refused(&w, 3, RNGSNAP_E_BACKEND, "rank 2 of 3: ",
            "half_set_state_on_device = 0");
    w.ini[2] = NULL;
    /* the checkpoint itself is fine */
    assert_int_equal(thread_comm_run(3, body_resume, &w), 0);
    world_free(&w);
    world_free(&o);
}

/* Resumed where a backend has another number of devices (issue 16): every
 * rank refuses with the counts in the admin's terms, as rngsnap_load
 * does (the same matching), and nothing changes. */
static void test_device_count_differs(void **state)
{
    (void)state;
    const char *saved = rk_ini(scratch, "md2.ini",
                               "[backend.multidev]\n"
                               "plugin = rngsnap_multidev\n"
                               "devices = 2\nstreams = a, b\n");
    char ini2[1100], ini3[1100];
    snprintf(ini2, sizeof ini2, "%s", saved);
    snprintf(ini3, sizeof ini3, "%s",
             rk_ini(scratch, "md3.ini", "[backend.multidev]\n"
                    "plugin = rngsnap_multidev\ndevices = 3\n"
                    "streams = a, b\n"));
    char dir[600], id[33], f0[1100], want[4096];
    snprintf(dir, sizeof dir, "%s/devices", scratch);
    world w = {.ini = {ini2}, .dir = dir, .seed = 77};
    assert_int_equal(thread_comm_run(2, body_save, &w), 0);
    manifest_id(dir, id);
    snprintf(f0, sizeof f0, "%s/rank-00000.%s.rngsnap", dir, id);
    snprintf(want, sizeof want, "rank 0 of 2: %s: the checkpoint has 2 "
             "multidev devices and this configuration 3 (from the driver: "
             "test backend, 3 devices); nothing restored (configuration "
             "%s). Resume where the same devices are present as where the "
             "checkpoint was written; 'rngsnap inspect %s' shows what the "
             "checkpoint holds", f0, ini3, f0);
    w.ini[0] = ini3;
    refused(&w, 2, RNGSNAP_E_MISMATCH, want, want);
    /* the checkpoint itself is fine where the devices are the same */
    w.ini[0] = ini2;
    assert_int_equal(thread_comm_run(2, body_resume, &w), 0);
    world_free(&w);
}

/* ---- another world size: refused, then forked --------------------------------- */

static uint64_t le64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

/* The documented fork seed of one entry (docs/user-guide.md): base from
 * the manifest, then the seed_all mixing function with base as seed. */
static uint64_t fork_seed(const char *dir, const char *backend, int device,
                          const char *stream)
{
    rngsnap_manifest *m;
    char err[1024];
    if (rngsnap_manifest_open(dir, &m, err, sizeof err))
        return 0;
    const rngsnap_manifest_info *info = rngsnap_manifest_info_get(m);
    uint8_t b[16 + 16 + 8 * MAXR];
    memcpy(b, "rngsnap-fork-v1", 16);
    for (int i = 0; i < 16; i++) {
        unsigned x;
        sscanf(info->id + 2 * i, "%2x", &x);
        b[16 + i] = (uint8_t)x;
    }
    size_t n = 32;
    for (int r = 0; r < info->world_size; r++, n += 8) {
        uint64_t s = rngsnap_manifest_rank_at(m, r)->checksum;
        for (int i = 0; i < 8; i++)
            b[n + i] = (uint8_t)(s >> (8 * i));
    }
    rngsnap_manifest_close(m);
    uint64_t base = XXH3_64bits(b, n);
    uint8_t s[700];
    size_t o = 0;
    memcpy(s, "rngsnap-seed-v1", 16);
    o = 16;
    for (int i = 0; i < 8; i++)
        s[o++] = (uint8_t)(base >> (8 * i));
    memcpy(s + o, backend, strlen(backend) + 1);
    o += strlen(backend) + 1;
    for (int i = 0; i < 4; i++)
        s[o++] = (uint8_t)((uint32_t)device >> (8 * i));
    memcpy(s + o, stream, strlen(stream) + 1);
    o += strlen(stream) + 1;
    (void)le64;
    return XXH64(s, o, 0);
}

typedef struct fork_out {
    world *w;
    rngsnap_philox pos[MAXR][64]; /* every stream's position after it */
    size_t ns;
} fork_out;

/* Load with FORK: positions and draws recorded in w->words. */
static int body_fork(int rank, const rngsnap_comm *c, void *arg)
{
    fork_out *fo = arg;
    world *w = fo->w;
    int bad = 0;
    rngsnap *ctx = rk_open(ini_of(w, rank), rank, c->size, RNGSNAP_RESUME);
    if (!ctx)
        return 1;
    rk_app progress, config;
    memset(&progress, 0, sizeof progress);
    memset(&config, 0, sizeof config);
    if (!w->no_progress)
        EXPECT_RC(rk_register(ctx, "progress", &progress), 0, ctx);
    EXPECT_RC(rk_register(ctx, "config", &config), 0, ctx);
    EXPECT_RC(rngsnap_load_ranks(ctx, c, w->dir, w->flags), w->expect, ctx);
    if (w->msg)
        EXPECT_MSG(ctx, w->msg);
    size_t ns = rngsnap_stream_count(ctx); /* the same on every rank */
    if (rank == 0)
        fo->ns = ns;
    if (w->expect == 0) {
        EXPECT(config.bytes[0] == 0xc0 && config.bytes[15] == 0xc0);
        for (size_t i = 0; i < ns && i < 64; i++) {
            rngsnap_stream *s = rngsnap_stream_at(ctx, i);
            EXPECT_RC(rngsnap_stream_position(s, &fo->pos[rank][i]), 0, ctx);
            EXPECT(fo->pos[rank][i].seed
                   == fork_seed(w->dir, rngsnap_stream_backend(s),
                                rngsnap_stream_device(s),
                                rngsnap_stream_name(s)));
            EXPECT(fo->pos[rank][i].subsequence == (uint64_t)rank);
            EXPECT(fo->pos[rank][i].offset == 0);
        }
        free(w->words[rank]);
        w->words[rank] = rk_draw(ctx, NW);
    } else {
        /* refused: the gate stays shut */
        uint32_t x;
        EXPECT(rngsnap_generate(rngsnap_stream_at(ctx, 0), RNGSNAP_U32, &x,
                                1) == RNGSNAP_E_ORDER);
    }
    rngsnap_close(ctx);
    return bad;
}

static void fork_case(int from, int to)
{
    char dir[600], msg[200];
    snprintf(dir, sizeof dir, "%s/fork-%d-%d", scratch, from, to);
    world w = {.ini = {mixed_ini}, .dir = dir, .seed = 50 + (uint64_t)from};
    assert_int_equal(thread_comm_run(from, body_save, &w), 0);
    world_free(&w);

    fork_out *fo = calloc(1, sizeof *fo);
    fo->w = &w;
    /* refused without the flag, naming both sizes and the way out */
    snprintf(msg, sizeof msg, "was saved by %d ranks, this job has %d; "
             "pass RNGSNAP_LOAD_FORK", from, to);
    w.expect = RNGSNAP_E_MISMATCH;
    w.msg = msg;
    assert_int_equal(thread_comm_run(to, body_fork, fo), 0);
    /* an app state that differed between the saved ranks refuses it */
    w.flags = RNGSNAP_LOAD_FORK;
    w.msg = "app state progress differs between saved ranks";
    assert_int_equal(thread_comm_run(to, body_fork, fo), 0);
    /* without it: forked, twice, identically */
    w.no_progress = 1;
    w.expect = 0;
    w.msg = NULL;
    assert_int_equal(thread_comm_run(to, body_fork, fo), 0);
    uint32_t *first[MAXR];
    for (int r = 0; r < to; r++) {
        first[r] = w.words[r];
        w.words[r] = NULL;
    }
    assert_int_equal(thread_comm_run(to, body_fork, fo), 0);
    for (int r = 0; r < to; r++) {
        assert_memory_equal(first[r], w.words[r], fo->ns * NW * 4);
        free(first[r]);
    }
    /* no two streams of the new job share a Philox stream */
    for (int r = 0; r < to; r++)
        for (size_t i = 0; i < fo->ns; i++)
            for (int q = 0; q < to; q++)
                for (size_t k = 0; k < fo->ns; k++)
                    if (q != r || k != i)
                        assert_false(fo->pos[r][i].seed == fo->pos[q][k].seed
                                     && fo->pos[r][i].subsequence
                                            == fo->pos[q][k].subsequence);
    /* the same world size with the flag: an exact resume */
    free(fo);
    world_free(&w);
}

static void test_world_size_and_fork(void **state)
{
    (void)state;
    fork_case(4, 2);
    fork_case(2, 4);
}

/* ---- forked_from ------------------------------------------------------------- */

static int body_chain(int rank, const rngsnap_comm *c, void *arg)
{
    /* dir: load from; msg: save to; seed: branch and reseed if set;
     * branch: branch only (a run branched off, not reseeded) */
    world *w = arg;
    int bad = 0;
    rngsnap *ctx = rk_open(ini_of(w, rank), rank, c->size, 0);
    if (!ctx)
        return 1;
    rk_app config;
    memset(&config, 0, sizeof config);
    EXPECT_RC(rk_register(ctx, "config", &config), 0, ctx);
    EXPECT_RC(rngsnap_load_ranks(ctx, c, w->dir, RNGSNAP_LOAD_FORK), 0,
              ctx);
    /* a multi-rank load (a fork onto another world size too) makes the
     * context a resumed one: seed_all refused until rngsnap_branch */
    if (w->seed)
        EXPECT_RC(rngsnap_seed_all(ctx, w->seed), RNGSNAP_E_ORDER, ctx);
    if (w->seed || w->branch) /* a new run off the checkpoint, on purpose */
        EXPECT_RC(rngsnap_branch(ctx), 0, ctx);
    if (w->seed)
        EXPECT_RC(rngsnap_seed_all(ctx, w->seed), 0, ctx);
    EXPECT_RC(rngsnap_save_ranks(ctx, c, w->msg, PER_RANK), 0, ctx);
    rngsnap_close(ctx);
    return bad;
}

static void forked_from(const char *dir, char out[33])
{
    rngsnap_manifest *m;
    char err[1024];
    if (rngsnap_manifest_open(dir, &m, err, sizeof err))
        fail_msg("%s", err);
    memcpy(out, rngsnap_manifest_info_get(m)->forked_from, 33);
    rngsnap_manifest_close(m);
}

static void test_forked_from(void **state)
{
    (void)state;
    char a[600], b[600], cdir[600], d[600], ida[33], got[33];
    snprintf(a, sizeof a, "%s/chain-a", scratch);
    snprintf(b, sizeof b, "%s/chain-b", scratch);
    snprintf(cdir, sizeof cdir, "%s/chain-c", scratch);
    snprintf(d, sizeof d, "%s/chain-d", scratch);
    world w = {.ini = {mixed_ini}, .dir = a, .seed = 70, .no_progress = 1};
    assert_int_equal(thread_comm_run(3, body_save, &w), 0);
    world_free(&w);
    manifest_id(a, ida);
    /* a fork (3 -> 2), then a save: it records where it came from */
    world x = {.ini = {mixed_ini}, .dir = a, .msg = b};
    assert_int_equal(thread_comm_run(2, body_chain, &x), 0);
    forked_from(b, got);
    assert_string_equal(got, ida);
    /* an exact load of that, then a save: carried forward */
    x.dir = b;
    x.msg = cdir;
    assert_int_equal(thread_comm_run(2, body_chain, &x), 0);
    forked_from(cdir, got);
    assert_string_equal(got, ida);
    /* branched but not reseeded: the streams still descend from the
     * fork, so the history is carried (rngsnap_branch records nothing) */
    char e[700];
    snprintf(e, sizeof e, "%s/chain-e", scratch);
    x.msg = e;
    x.branch = 1;
    assert_int_equal(thread_comm_run(2, body_chain, &x), 0);
    forked_from(e, got);
    assert_string_equal(got, ida);
    x.branch = 0;
    /* branched and reseeded: no fork in the history any more */
    x.dir = cdir;
    x.msg = d;
    x.seed = 5;
    assert_int_equal(thread_comm_run(2, body_chain, &x), 0);
    forked_from(d, got);
    assert_string_equal(got, "");
}

/* ---- a damaged manifest --------------------------------------------------------- */

typedef struct flips {
    world *w;
    uint8_t *good;
    size_t len;
    const char *path;
} flips;

/* Every one-bit flip and every truncation of the manifest, on both
 * ranks: refused with CORRUPT from rank 0, states unchanged. */
static int body_flips(int rank, const rngsnap_comm *c, void *arg)
{
    flips *fl = arg;
    int bad = 0;
    rngsnap *ctx = rk_open(ini_of(fl->w, rank), rank, c->size, 0);
    if (!ctx)
        return 1;
    rk_app config;
    memset(&config, 0, sizeof config);
    memset(config.bytes, 0x77, 16);
    EXPECT_RC(rk_register(ctx, "config", &config), 0, ctx);
    EXPECT_RC(rngsnap_seed_all(ctx, 99), 0, ctx);
    size_t la, lb;
    uint8_t *before = rk_take(ctx, &la);
    uint8_t *b = malloc(fl->len);
    for (size_t i = 0; i < 2 * fl->len; i++) {
        if (rank == 0) {
            memcpy(b, fl->good, fl->len);
            size_t n = fl->len;
            if (i < fl->len)
                b[i] ^= 0x01;
            else
                n = i - fl->len; /* truncated to 0..len-1 bytes */
            rk_write(fl->path, b, n);
        }
        int rc = rngsnap_load_ranks(ctx, c, fl->w->dir, 0);
        if (rc != RNGSNAP_E_CORRUPT
            || !strstr(rngsnap_errmsg(ctx), "rank 0 of 2: load_ranks")) {
            fprintf(stderr, "rank %d: case %zu: %s: %s\n", rank, i,
                    rngsnap_error_name(rc), rngsnap_errmsg(ctx));
            bad++;
        }
    }
    uint8_t *after = rk_take(ctx, &lb);
    EXPECT(la == lb && memcmp(before, after, la) == 0);
    EXPECT(config.bytes[0] == 0x77);
    free(b);
    free(before);
    free(after);
    rngsnap_close(ctx);
    return bad;
}

static void test_corrupt_manifest(void **state)
{
    (void)state;
    char dir[600], path[700], err[1024];
    snprintf(dir, sizeof dir, "%s/flips", scratch);
    snprintf(path, sizeof path, "%s/MANIFEST", dir);
    world w = {.ini = {mixed_ini}, .dir = dir, .seed = 80, .no_progress = 1};
    assert_int_equal(thread_comm_run(2, body_save, &w), 0);
    world_free(&w);
    flips fl = {.w = &w, .path = path};
    fl.good = rk_read(path, &fl.len);
    assert_non_null(fl.good);
    /* the reader: every flipped byte and every truncation refused */
    uint8_t *b = malloc(fl.len);
    for (size_t i = 0; i < fl.len; i++) {
        for (int bit = 0; bit < 8; bit++) {
            memcpy(b, fl.good, fl.len);
            b[i] ^= (uint8_t)(1u << bit);
            rk_write(path, b, fl.len);
            rngsnap_manifest *m = NULL;
            assert_int_equal(rngsnap_manifest_open(dir, &m, err, sizeof err),
                             RNGSNAP_E_CORRUPT);
            assert_null(m);
        }
        rk_write(path, fl.good, i);
        rngsnap_manifest *m = NULL;
        assert_int_equal(rngsnap_manifest_open(dir, &m, err, sizeof err),
                         RNGSNAP_E_CORRUPT);
    }
    free(b);
    /* the load, on two ranks */
    assert_int_equal(thread_comm_run(2, body_flips, &fl), 0);
    rk_write(path, fl.good, fl.len);
    free(fl.good);
}

/* Every single-byte flip (0xff) and every truncation of a 3-rank
 * manifest, loaded by a 1-rank job with RNGSNAP_LOAD_FORK (which the
 * sound manifest would fork): each refused with CORRUPT naming the
 * manifest, nothing changed.  Then every byte changed with the checksum
 * made valid again (what the field checks must catch): never a crash,
 * and a refused load changes nothing. */
static int body_fuzz3(int rank, const rngsnap_comm *c, void *arg)
{
    flips *fl = arg;
    int bad = 0;
    rngsnap *ctx = rk_open(ini_of(fl->w, rank), rank, c->size, 0);
    if (!ctx)
        return 1;
    rk_app config;
    memset(&config, 0, sizeof config);
    memset(config.bytes, 0x77, 16);
    EXPECT_RC(rk_register(ctx, "config", &config), 0, ctx);
    EXPECT_RC(rngsnap_seed_all(ctx, 99), 0, ctx);
    uint8_t *b = malloc(fl->len);
    size_t la, lb, refused = 0, loaded = 0;
    for (size_t i = 0; i < 3 * fl->len; i++) {
        memcpy(b, fl->good, fl->len);
        size_t n = fl->len, at = i % fl->len;
        if (i < fl->len) {
            b[at] ^= 0xff;
        } else if (i < 2 * fl->len) {
            n = at; /* 0..len-1 bytes */
        } else {
            b[at] ^= 0xff;
            uint64_t h = XXH3_64bits(b, n - 8);
            for (int k = 0; k < 8; k++)
                b[n - 8 + k] = (uint8_t)(h >> (8 * k));
        }
        rk_write(fl->path, b, n);
        uint8_t *before = rk_take(ctx, &la);
        uint8_t cfg = config.bytes[0];
        int rc = rngsnap_load_ranks(ctx, c, fl->w->dir, RNGSNAP_LOAD_FORK);
        if (rc == RNGSNAP_OK) {
            loaded++;
        } else {
            refused++;
            uint8_t *after = rk_take(ctx, &lb);
            if (la != lb || memcmp(before, after, la) != 0
                || config.bytes[0] != cfg) {
                fprintf(stderr, "case %zu: refused (%s) but changed\n", i,
                        rngsnap_errmsg(ctx));
                bad++;
            }
            free(after);
        }
        if (i < 2 * fl->len
            && (rc != RNGSNAP_E_CORRUPT
                || !strstr(rngsnap_errmsg(ctx), "rank 0 of 1: load_ranks")
                || !strstr(rngsnap_errmsg(ctx), "/MANIFEST: "))) {
            fprintf(stderr, "case %zu: %s: %s\n", i, rngsnap_error_name(rc),
                    rngsnap_errmsg(ctx));
            bad++;
        }
        free(before);
    }
    printf("# 3-rank manifest of %zu bytes, 1-rank fork: %zu loads refused, "
           "%zu accepted (bytes with a valid checksum that no check "
           "needs)\n", fl->len, refused, loaded);
    /* the sound manifest forks (from freshly seeded states: an accepted
     * case above may have left the fork's own, and made the context a
     * resumed one, which refuses seed_all until rngsnap_branch) */
    rk_write(fl->path, fl->good, fl->len);
    if (loaded)
        EXPECT_RC(rngsnap_branch(ctx), 0, ctx);
    EXPECT_RC(rngsnap_seed_all(ctx, 99), 0, ctx);
    uint8_t *before = rk_take(ctx, &la);
    memset(config.bytes, 0x77, 16);
    EXPECT_RC(rngsnap_load_ranks(ctx, c, fl->w->dir, RNGSNAP_LOAD_FORK), 0,
              ctx);
    uint8_t *after = rk_take(ctx, &lb);
    EXPECT(la == lb && memcmp(before, after, la) != 0);
    EXPECT(config.bytes[0] == 0xc0);
    free(before);
    free(after);
    free(b);
    rngsnap_close(ctx);
    return bad;
}

static void test_fuzz_manifest_fork(void **state)
{
    (void)state;
    char dir[600], path[700];
    snprintf(dir, sizeof dir, "%s/fuzz3", scratch);
    snprintf(path, sizeof path, "%s/MANIFEST", dir);
    world w = {.ini = {mixed_ini}, .dir = dir, .seed = 85, .no_progress = 1};
    assert_int_equal(thread_comm_run(3, body_save, &w), 0);
    world_free(&w);
    flips fl = {.w = &w, .path = path};
    fl.good = rk_read(path, &fl.len);
    assert_non_null(fl.good);
    assert_int_equal(thread_comm_run(1, body_fuzz3, &fl), 0);
    free(fl.good);
}

/* ---- manifests with a valid checksum and a bad field ----------------------- */

/* A manifest built by hand from docs/format.md. */
typedef struct mb {
    uint8_t *b; /* room enough: the caller's */
    size_t n;
} mb;

static void put(mb *m, uint64_t v, int bytes)
{
    for (int i = 0; i < bytes; i++)
        m->b[m->n++] = (uint8_t)(v >> (8 * i));
}

static void put_name(mb *m, const char *s, size_t len)
{
    put(m, len, 2);
    memcpy(m->b + m->n, s, len);
    m->n += len;
}

static const uint8_t hand_id[16] = {0xab, 1, 2, 3, 4, 5, 6, 7,
                                    8, 9, 10, 11, 12, 13, 14, 0xcd};
#define HAND_HEX "ab0102030405060708090a0b0c0d0ecd"

/* XXH3-64 that the hand-made manifest records for each rank file. */
static uint64_t hand_sum = 0x1234;

/* kind: which field to spoil (0: none). */
static void hand_manifest(mb *m, int kind)
{
    int world = kind == 1 ? 0 : kind == 2 ? (1 << 20) + 1 : 2;
    m->n = 0;
    memcpy(m->b, "RSNPMAN", 8);
    m->n = 8;
    put(m, kind == 3 ? 3 : 1, 4);
    put(m, (uint32_t)world, 4);
    put(m, 1700000000, 8);
    memcpy(m->b + m->n, hand_id, 16);
    m->n += 16;
    memset(m->b + m->n, 0, 16);
    m->n += 16;
    put(m, kind == 4 ? 70000 : 2, 4);
    for (int r = 0; r < 2; r++) {
        char name[256] = {0};
        snprintf(name, sizeof name, "rank-%05d.%s.rngsnap", r, HAND_HEX);
        if (kind == 5 && r == 1) /* another rank's file */
            snprintf(name, sizeof name, "rank-00000.%s.rngsnap", HAND_HEX);
        if (kind == 6 && r == 1)
            snprintf(name, sizeof name, "../rank-00001.%s.rngsnap",
                     HAND_HEX);
        if (kind == 7 && r == 1) /* another checkpoint's file */
            snprintf(name, sizeof name,
                     "rank-00001.00000000000000000000000000000000.rngsnap");
        put_name(m, name, kind == 8 && r == 1 ? 200 : strlen(name));
        put(m, kind == 9 ? 10 : 1000, 8);
        put(m, hand_sum, 8);
    }
    put_name(m, kind == 10 ? "pro\0gress" : "progress",
             kind == 10 ? 9 : 8);
    put(m, 0x99, 8);
    put(m, kind == 11 ? 2 : 1, 1);
    put_name(m, kind == 12 ? "progress" : "config", kind == 12 ? 8 : 6);
    put(m, 0x98, 8);
    put(m, 0, 1);
    if (kind == 13)
        put(m, 0, 1); /* a byte after the last record */
    put(m, XXH3_64bits(m->b, m->n), 8);
}

static void test_manifest_fields(void **state)
{
    (void)state;
    static const char *const why[] = {
        "",
        "world size 0 outside 1..1048576",
        "world size 1048577 outside",
        "manifest format version 3, this library reads 1 and 2",
        "70000 app states, at most 65536",
        "rank 1's file is not named rank-00001." HAND_HEX ".rngsnap",
        "rank 1's file is not named",
        "rank 1's file is not named",
        "rank 1's record is truncated or its name length",
        "rank 0's file size 10 is outside",
        "app state record 0 is truncated or malformed",
        "app state record 0 is truncated or malformed",
        "app state progress recorded twice",
        "1 bytes after the last record",
    };
    char dir[600], err[1024];
    snprintf(dir, sizeof dir, "%s/hand", scratch);
    assert_int_equal(mkdir(dir, 0755), 0);
    const char *path = rk_path(dir, "MANIFEST");
    char p[700];
    snprintf(p, sizeof p, "%s", path);
    uint8_t space[4096];
    mb m = {space, 0};
    /* the unspoilt one is read, field by field */
    hand_manifest(&m, 0);
    rk_write(p, m.b, m.n);
    rngsnap_manifest *man;
    assert_int_equal(rngsnap_manifest_open(dir, &man, err, sizeof err), 0);
    const rngsnap_manifest_info *info = rngsnap_manifest_info_get(man);
    assert_string_equal(info->id, HAND_HEX);
    assert_int_equal(info->world_size, 2);
    assert_int_equal(info->created_unix, 1700000000);
    assert_string_equal(rngsnap_manifest_app_at(man, 1)->name, "config");
    assert_int_equal(rngsnap_manifest_app_at(man, 0)->same_on_all_ranks, 1);
    assert_int_equal(rngsnap_manifest_rank_at(man, 1)->size, 1000);
    assert_null(rngsnap_manifest_app_at(man, 2));
    /* its rank files are absent: open_rank says so */
    rngsnap_file *f;
    assert_int_equal(rngsnap_manifest_open_rank(man, 1, &f, err, sizeof err),
                     RNGSNAP_E_IO);
    assert_null(f);
    rngsnap_manifest_close(man);
    /* a rank file the manifest vouches for (size, XXH3) that is no
     * checkpoint: decoded from the bytes read once, refused, freed */
    uint8_t junk[1000];
    memset(junk, 0x5a, sizeof junk);
    char jp[800];
    snprintf(jp, sizeof jp, "%s/rank-00001." HAND_HEX ".rngsnap", dir);
    rk_write(jp, junk, sizeof junk);
    hand_sum = XXH3_64bits(junk, sizeof junk);
    hand_manifest(&m, 0);
    hand_sum = 0x1234;
    rk_write(p, m.b, m.n);
    assert_int_equal(rngsnap_manifest_open(dir, &man, err, sizeof err), 0);
    assert_int_equal(rngsnap_manifest_open_rank(man, 1, &f, err, sizeof err),
                     RNGSNAP_E_CORRUPT);
    assert_null(f);
    assert_non_null(strstr(err, "rank-00001." HAND_HEX ".rngsnap: not an "
                                "rngsnap checkpoint (bad magic)"));
    rngsnap_manifest_close(man);
    unlink(jp);
    for (int k = 1; k < (int)(sizeof why / sizeof why[0]); k++) {
        hand_manifest(&m, k);
        rk_write(p, m.b, m.n);
        man = NULL;
        int rc = rngsnap_manifest_open(dir, &man, err, sizeof err);
        if (rc != RNGSNAP_E_CORRUPT || !strstr(err, why[k]))
            fail_msg("kind %d: %s: %s (expected \"%s\")", k,
                     rngsnap_error_name(rc), err, why[k]);
        assert_null(man);
        assert_non_null(strstr(err, "/MANIFEST: "));
    }
    remove_tree(dir);
}

/* The most app records a manifest may hold, with names of the longest
 * length that differ only in their last bytes: read whole (and fast: the
 * figure is printed), and a repeat of the first name as the last record
 * is found.  Pairwise comparison took 62 s here on every loading rank. */
static void test_manifest_many_apps(void **state)
{
    (void)state;
    const uint32_t n = 65536;
    char dir[600], err[1024], name[300];
    snprintf(dir, sizeof dir, "%s/many-apps", scratch);
    assert_int_equal(mkdir(dir, 0755), 0);
    size_t cap = 200 + (size_t)n * (2 + 255 + 9);
    mb room = {malloc(cap), 0}, *m = &room;
    assert_non_null(m->b);
    for (int dup = 0; dup < 2; dup++) {
        m->n = 0;
        memcpy(m->b, "RSNPMAN", 8);
        m->n = 8;
        put(m, 1, 4);
        put(m, 1, 4);
        put(m, 1700000000, 8);
        memcpy(m->b + m->n, hand_id, 16);
        m->n += 16;
        memset(m->b + m->n, 0, 16);
        m->n += 16;
        put(m, n, 4);
        put_name(m, "rank-00000." HAND_HEX ".rngsnap", 51);
        put(m, 1000, 8);
        put(m, 0x1234, 8);
        for (uint32_t i = 0; i < n; i++) {
            memset(name, 'x', 255);
            snprintf(name + 249, 7, "%06u", dup && i == n - 1 ? 0 : i);
            put_name(m, name, 255);
            put(m, i, 8);
            put(m, 1, 1);
        }
        put(m, XXH3_64bits(m->b, m->n), 8);
        rk_write(rk_path(dir, "MANIFEST"), m->b, m->n);
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        rngsnap_manifest *man = NULL;
        int rc = rngsnap_manifest_open(dir, &man, err, sizeof err);
        clock_gettime(CLOCK_MONOTONIC, &t1);
        printf("# manifest of %u app records (%zu bytes)%s: read in %.3f s\n",
               n, m->n, dup ? ", one repeated" : "",
               (double)(t1.tv_sec - t0.tv_sec)
                   + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9);
        if (!dup) {
            assert_int_equal(rc, 0);
            assert_int_equal(rngsnap_manifest_info_get(man)->app_count, n);
            rngsnap_manifest_close(man);
        } else {
            assert_int_equal(rc, RNGSNAP_E_CORRUPT);
            assert_null(man);
            assert_non_null(strstr(err, "xxxxx000000 recorded twice"));
        }
    }
    free(m->b);
    remove_tree(dir);
}

/* ---- the communicator ----------------------------------------------------------- */

static int body_comm(int rank, const rngsnap_comm *c, void *arg)
{
    world *w = arg;
    int bad = 0;
    /* seed is the context's world size here */
    rngsnap *ctx = rk_open(ini_of(w, rank), rank, (int)w->seed, 0);
    if (!ctx)
        return 1;
    EXPECT_RC(rngsnap_seed_all(ctx, 3), 0, ctx);
    EXPECT_RC(rngsnap_save_ranks(ctx, c, w->dir, PER_RANK), w->expect, ctx);
    if (w->msg)
        EXPECT_MSG(ctx, w->msg);
    EXPECT_RC(rngsnap_load_ranks(ctx, c, w->dir, 0), w->expect, ctx);
    if (w->msg)
        EXPECT_MSG(ctx, w->msg);
    rngsnap_close(ctx);
    return bad;
}

static int no_broadcast(void *u, void *b, size_t l, int root)
{
    (void)u, (void)b, (void)l, (void)root;
    return 0;
}

static int collectives_called;
static int counting_send(void *u, const void *b, size_t l, int dest)
{
    (void)u, (void)b, (void)l, (void)dest;
    collectives_called++;
    return 1;
}

static int counting_recv(void *u, void *b, size_t l, int src, int *from)
{
    (void)u, (void)b, (void)l, (void)src, (void)from;
    collectives_called++;
    return 1;
}

static int counting_broadcast(void *u, void *b, size_t l, int root)
{
    (void)u, (void)b, (void)l, (void)root;
    collectives_called++;
    return 1;
}

static void test_comm_checks(void **state)
{
    (void)state;
    char dir[600];
    snprintf(dir, sizeof dir, "%s/comm", scratch);
    /* the context thinks the job has 3 ranks, the communicator 2 */
    world w = {.ini = {mixed_ini}, .dir = dir, .seed = 3,
               .expect = RNGSNAP_E_INVALID,
               .msg = "rank 0 of 2: "};
    assert_int_equal(thread_comm_run(2, body_comm, &w), 0);
    w.msg = "the communicator is rank 0 of 2 but the context is rank 0 of 3";
    assert_int_equal(thread_comm_run(2, body_comm, &w), 0);
    assert_int_equal(rk_count(dir), 0);
    /* a failing collective */
    world f = {.ini = {mixed_ini}, .dir = dir};
    thread_comm_fail(0, 42);
    f.expect = RNGSNAP_E_BACKEND;
    f.msg = "communicator broadcast from rank 0 failed (returned 42)";
    assert_int_equal(thread_comm_run(2, body_refused, &f), 0);
    thread_comm_fail(1, 43); /* the broadcast of rank 0's message */
    f.msg = "communicator broadcast failed (returned 43) after rank 0 "
            "failed with code 4";
    assert_int_equal(thread_comm_run(2, body_refused, &f), 0);
    /* no committed checkpoint in the folder */
    rngsnap *ctx = rk_open(mixed_ini, 0, 1, 0);
    assert_non_null(ctx);
    rngsnap_comm bad = {.rank = 0, .size = 1, .broadcast = no_broadcast};
    assert_int_equal(rngsnap_save_ranks(ctx, &bad, dir, 0),
                     RNGSNAP_E_INVALID);
    assert_int_equal(rngsnap_load_ranks(ctx, NULL, dir, 0),
                     RNGSNAP_E_INVALID);
    /* more ranks than a manifest records: every rank refuses alike,
     * before any collective (and before sizing a step by them) */
    rngsnap_comm huge = {.rank = 0, .size = (1 << 20) + 1,
                         .broadcast = counting_broadcast,
                         .send = counting_send, .recv = counting_recv};
    collectives_called = 0;
    assert_int_equal(rngsnap_save_ranks(ctx, &huge, dir, 0),
                     RNGSNAP_E_INVALID);
    assert_non_null(strstr(rngsnap_errmsg(ctx), "a communicator of 1048577 "
                                                "ranks; a manifest records "
                                                "at most 1048576"));
    assert_int_equal(rngsnap_load_ranks(ctx, &huge, dir, 0),
                     RNGSNAP_E_INVALID);
    assert_int_equal(collectives_called, 0);
    /* an adapter that could not make a communicator says why */
    rngsnap_comm none = {.unusable = "the launcher gave no group"};
    assert_int_equal(rngsnap_save_ranks(ctx, &none, dir, 0),
                     RNGSNAP_E_INVALID);
    assert_non_null(strstr(rngsnap_errmsg(ctx), "save_ranks: no communicator: "
                                                "the launcher gave no group"));
    assert_int_equal(rngsnap_load_ranks(ctx, &none, dir, 0),
                     RNGSNAP_E_INVALID);
    assert_non_null(strstr(rngsnap_errmsg(ctx), "no communicator: the "
                                                "launcher gave no group"));
    /* a single-file load has nothing to fork */
    assert_int_equal(rngsnap_load(ctx, rk_path(dir, "x"), RNGSNAP_LOAD_FORK),
                     RNGSNAP_E_INVALID);
    assert_non_null(strstr(rngsnap_errmsg(ctx), "fork applies to multi-rank "
                                                "folders (rngsnap_load_ranks)"));
    rngsnap_close(ctx);
    world e = {.ini = {mixed_ini}, .dir = dir};
    refused(&e, 1, RNGSNAP_E_IO, "rank 0 of 1: load_ranks",
            "not a committed multi-rank checkpoint");
}

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
    remove_tree(scratch);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_resume_1),
        cmocka_unit_test(test_resume_2),
        cmocka_unit_test(test_resume_4),
        cmocka_unit_test(test_resume_8),
        cmocka_unit_test(test_cleanup_and_order),
        cmocka_unit_test(test_reload_after_draw),
        cmocka_unit_test(test_exists_and_replace),
        cmocka_unit_test(test_failed_save_keeps_previous),
        cmocka_unit_test(test_comm_fails_after_commit),
        cmocka_unit_test(test_two_jobs_one_folder),
        cmocka_unit_test(test_load_failures),
        cmocka_unit_test(test_device_count_differs),
        cmocka_unit_test(test_world_size_and_fork),
        cmocka_unit_test(test_forked_from),
        cmocka_unit_test(test_corrupt_manifest),
        cmocka_unit_test(test_fuzz_manifest_fork),
        cmocka_unit_test(test_manifest_fields),
        cmocka_unit_test(test_manifest_many_apps),
        cmocka_unit_test(test_comm_checks),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
