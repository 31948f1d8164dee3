/*
 * test_fork_check.c - a fork (RNGSNAP_LOAD_FORK onto another world size)
 * checks every rank file of the checkpoint, not only rank 0's, whose
 * bytes it restores from: a 4-rank folder with rank 3's file damaged,
 * truncated or missing is refused on 1, 2, 3 and 8 ranks alike, with the
 * same code and the same exact message on every rank, and no live state
 * changes (stream positions, the draws that follow, app states).
 * Ranks are threads (tests/common/thread_comm.c).
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

#include "remove_tree.h"
#include "rk_test.h"
#include "thread_comm.h"

#define NW 32       /* words drawn per stream to compare */
#define MAXPOS 64   /* streams per context, at most */

/* One job of the test: what every rank does and must see. */
typedef struct fc {
    const char *ini, *dir;
    int per_rank_app; /* also register "progress", different per rank */
    int expect;       /* the code every rank must get                   */
    char msg[2048];   /* ... and its whole message ("" when expect == 0) */
} fc;

static const char *scratch;
static const char *mixed_ini;

/* App states: "config" the same on every rank (so a fork may restore
 * it), "progress" per rank when asked.  Returns the failures. */
static int register_apps(rngsnap *ctx, const fc *f, int rank,
                         rk_app *config, rk_app *progress, uint8_t fill)
{
    int bad = 0;
    memset(config, 0, sizeof *config);
    memset(progress, 0, sizeof *progress);
    memset(config->bytes, fill, sizeof config->bytes);
    for (int i = 0; i < 16; i++)
        progress->bytes[i] = (uint8_t)(fill + 17 * rank + i);
    EXPECT_RC(rk_register(ctx, "config", config), 0, ctx);
    if (f->per_rank_app)
        EXPECT_RC(rk_register(ctx, "progress", progress), 0, ctx);
    return bad;
}

static int body_save(int rank, const rngsnap_comm *c, void *arg)
{
    fc *f = arg;
    int bad = 0;
    rngsnap *ctx = rk_open(f->ini, rank, c->size, 0);
    if (!ctx)
        return 1;
    rk_app config, progress;
    bad += register_apps(ctx, f, rank, &config, &progress, 0xc0);
    EXPECT_RC(rngsnap_seed_all(ctx, 61), 0, ctx);
    free(rk_draw(ctx, 5 + (size_t)rank));
    EXPECT_RC(rngsnap_save_ranks(ctx, c, f->dir, RNGSNAP_SAVE_PER_RANK_FILES), 0, ctx);
    rngsnap_close(ctx);
    return bad;
}

static size_t positions(rngsnap *ctx, rngsnap_philox *out)
{
    size_t n = rngsnap_stream_count(ctx);
    for (size_t i = 0; i < n && i < MAXPOS; i++)
        if (rngsnap_stream_position(rngsnap_stream_at(ctx, i), &out[i]))
            memset(&out[i], 0xff, sizeof out[i]);
    return n < MAXPOS ? n : MAXPOS;
}

/* A running job (seeded, drawn from) forks f->dir.  Refused (f->expect):
 * every rank gets that code and exactly f->msg, and its streams stay
 * where they were (positions, and the next draws equal those of a twin
 * context that made the same draws and no load), its app states too.
 * Accepted (0): the streams moved to the fork's positions. */
static int body_fork(int rank, const rngsnap_comm *c, void *arg)
{
    fc *f = arg;
    int bad = 0;
    rngsnap *ctx = rk_open(f->ini, rank, c->size, 0);
    rngsnap *twin = rk_open(f->ini, rank, c->size, 0);
    if (!ctx || !twin) {
        rngsnap_close(ctx);
        rngsnap_close(twin);
        return 1;
    }
    rk_app config, progress;
    bad += register_apps(ctx, f, rank, &config, &progress, 0x66);
    EXPECT_RC(rngsnap_seed_all(ctx, 4242), 0, ctx);
    EXPECT_RC(rngsnap_seed_all(twin, 4242), 0, twin);
    free(rk_draw(ctx, 3));
    free(rk_draw(twin, 3));
    rngsnap_philox before[MAXPOS], after[MAXPOS];
    size_t nb = positions(ctx, before);

    int rc = rngsnap_load_ranks(ctx, c, f->dir, RNGSNAP_LOAD_FORK);
    EXPECT_RC(rc, f->expect, ctx);
    size_t na = positions(ctx, after);
    EXPECT(nb == na);
    if (f->expect == 0) {
        EXPECT(memcmp(before, after, nb * sizeof *before) != 0);
        EXPECT(config.bytes[0] == 0xc0);
    } else {
        if (strcmp(rngsnap_errmsg(ctx), f->msg) != 0) {
            fprintf(stderr, "rank %d: message\n  %s\nexpected\n  %s\n", rank,
                    rngsnap_errmsg(ctx), f->msg);
            bad++;
        }
        EXPECT(memcmp(before, after, nb * sizeof *before) == 0);
        uint32_t *got = rk_draw(ctx, NW), *want = rk_draw(twin, NW);
        EXPECT(memcmp(got, want, nb * NW * sizeof *got) == 0);
        free(got);
        free(want);
        uint8_t p66[16];
        memset(p66, 0x66, 16);
        EXPECT(memcmp(config.bytes, p66, 16) == 0);
        for (int i = 0; i < 16; i++)
            EXPECT(progress.bytes[i] == (uint8_t)(0x66 + 17 * rank + i));
    }
    rngsnap_close(twin);
    rngsnap_close(ctx);
    return bad;
}

/* The checkpoint's id and saved rank r's file and recorded checksum. */
typedef struct saved {
    char id[33], file[1024];
    uint64_t sum, size;
} saved;

static void saved_rank(const char *dir, int r, saved *s)
{
    rngsnap_manifest *m;
    char err[1024];
    if (rngsnap_manifest_open(dir, &m, err, sizeof err))
        fail_msg("%s", err);
    const rngsnap_manifest_rank *mr = rngsnap_manifest_rank_at(m, r);
    memcpy(s->id, rngsnap_manifest_info_get(m)->id, 33);
    snprintf(s->file, sizeof s->file, "%s/%s", dir, mr->file);
    s->sum = mr->checksum;
    s->size = mr->size;
    rngsnap_manifest_close(m);
}

/* Fork f->dir (saved by 4 ranks) onto each world size in `onto`: each
 * must give f->expect, with the message that new rank 3 % n (the one
 * that reads saved rank 3's file) reports: "rank R of N: load_ranks
 * DIR: fork of 4 ranks onto N: " + why. */
static void fork_onto_all(fc *f, const char *why)
{
    static const int onto[] = {1, 2, 3, 8};
    char failed[64] = "";
    for (size_t i = 0; i < sizeof onto / sizeof onto[0]; i++) {
        int n = onto[i];
        snprintf(f->msg, sizeof f->msg,
                 "rank %d of %d: load_ranks %s: fork of 4 ranks onto %d: %s",
                 3 % n, n, f->dir, n, why);
        if (thread_comm_run(n, body_fork, f) != 0)
            snprintf(failed + strlen(failed), sizeof failed - strlen(failed),
                     " %d", n);
    }
    if (failed[0])
        fail_msg("fork of 4 ranks onto%s: see the ranks' lines above",
                 failed);
}

/* A 4-rank checkpoint in scratch/name, rank 3's file and its bytes. */
typedef struct folder {
    fc f;
    saved s;
    uint8_t *keep; /* rank 3's file as saved */
    size_t len;
    char why[1600]; /* what the refusal says of that file */
} folder;

static folder *save4(const char *name, int per_rank_app)
{
    static char dir[600];
    folder *d = calloc(1, sizeof *d);
    assert_non_null(d);
    snprintf(dir, sizeof dir, "%s/%s", scratch, name);
    d->f.ini = mixed_ini;
    d->f.dir = dir;
    d->f.per_rank_app = per_rank_app;
    assert_int_equal(thread_comm_run(4, body_save, &d->f), 0);
    saved_rank(dir, 3, &d->s);
    d->keep = rk_read(d->s.file, &d->len);
    assert_non_null(d->keep);
    assert_int_equal(d->len, d->s.size);
    return d;
}

static void folder_done(folder *d)
{
    remove_tree(d->f.dir);
    free(d->keep);
    free(d);
}

/* Rank 3's file with byte `at` flipped (again: put back), and what a
 * load says of it. */
static void flip(folder *d, size_t at)
{
    d->keep[at] ^= 0x10;
    rk_write(d->s.file, d->keep, d->len);
    snprintf(d->why, sizeof d->why,
             "%s (rank 3's file): XXH3-64 0x%016llx, the manifest of "
             "checkpoint %s records 0x%016llx (damaged, swapped, or another "
             "checkpoint's file); nothing restored",
             d->s.file, (unsigned long long)XXH3_64bits(d->keep, d->len),
             d->s.id, (unsigned long long)d->s.sum);
}

static void test_fork_damaged_rank_file(void **state)
{
    (void)state;
    folder *d = save4("fork-damaged", 0);
    flip(d, d->len / 2);
    d->f.expect = RNGSNAP_E_CORRUPT;
    fork_onto_all(&d->f, d->why);
    /* the same folder with the byte put back forks */
    flip(d, d->len / 2);
    d->f.expect = 0;
    assert_int_equal(thread_comm_run(2, body_fork, &d->f), 0);
    folder_done(d);
}

static void test_fork_truncated_rank_file(void **state)
{
    (void)state;
    folder *d = save4("fork-truncated", 0);
    rk_write(d->s.file, d->keep, d->len / 2);
    snprintf(d->why, sizeof d->why,
             "%s: %zu bytes, the manifest records %zu (truncated, grown, "
             "or another checkpoint's file); nothing restored",
             d->s.file, d->len / 2, d->len);
    d->f.expect = RNGSNAP_E_CORRUPT;
    fork_onto_all(&d->f, d->why);
    folder_done(d);
}

/* A missing file is RNGSNAP_E_IO, as an exact resume of the folder
 * says (and as any rank file that cannot be opened). */
static void test_fork_missing_rank_file(void **state)
{
    (void)state;
    folder *d = save4("fork-missing", 0);
    assert_int_equal(unlink(d->s.file), 0);
    snprintf(d->why, sizeof d->why,
             "%s: cannot open: No such file or directory; nothing restored",
             d->s.file);
    d->f.expect = RNGSNAP_E_IO;
    fork_onto_all(&d->f, d->why);
    folder_done(d);
}

/* A damaged folder is refused as damaged before anything else is
 * judged: here the fork would also be refused for an app state that
 * differs between the saved ranks (rank 0 finds that, rank 1 the
 * damage), and every rank reports the damage. */
static void test_fork_damage_before_mismatch(void **state)
{
    (void)state;
    folder *d = save4("fork-damage-first", 1);
    flip(d, d->len - 1);
    d->f.expect = RNGSNAP_E_CORRUPT;
    snprintf(d->f.msg, sizeof d->f.msg,
             "rank 1 of 2: load_ranks %s: fork of 4 ranks onto 2: %s",
             d->f.dir, d->why);
    assert_int_equal(thread_comm_run(2, body_fork, &d->f), 0);
    /* undamaged, the app state is what refuses it */
    flip(d, d->len - 1);
    d->f.expect = RNGSNAP_E_MISMATCH;
    snprintf(d->f.msg, sizeof d->f.msg,
             "rank 0 of 2: load_ranks %s: fork refused: app state progress "
             "differs between saved ranks, so no one copy of it belongs on "
             "every new rank; nothing restored",
             d->f.dir);
    assert_int_equal(thread_comm_run(2, body_fork, &d->f), 0);
    folder_done(d);
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
        cmocka_unit_test(test_fork_damaged_rank_file),
        cmocka_unit_test(test_fork_truncated_rank_file),
        cmocka_unit_test(test_fork_missing_rank_file),
        cmocka_unit_test(test_fork_damage_before_mismatch),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
