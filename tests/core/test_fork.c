/*
 * test_fork.c - a context after fork() (issue 31, item 4).  The child's
 * copy of a stream sits at the parent's position: a non-keyed draw
 * there would give exactly the parent's numbers, and a save would write
 * the child's copy as the job's state.  In the child, rngsnap_generate,
 * rngsnap_reserve of n > 0, every save and every load are
 * RNGSNAP_E_ORDER naming keyed streams as the fix, and change nothing;
 * keyed draws (rngsnap_derive, rngsnap_generate_at) work and give the
 * numbers the parent's keys give; a context the child opens is its own.
 * The parent is unaffected.
 *
 * The checks in the child count their failures and print them; the
 * child's exit status carries the count, and the parent waits for it
 * with waitpid (no sleeps, no timeouts).
 */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include <rngsnap.h>

#include "helpers.h"

static char cpu_ini[4096];
static char ckpt[4200], child_ckpt[4200];

/* ---- in the child -------------------------------------------------------- */

static int bad; /* the child's failed checks */

#define CHECK(cond, ...)                                                   \
    do {                                                                   \
        if (!(cond)) {                                                     \
            fprintf(stderr, "child: %s:%d: %s: ", __FILE__, __LINE__,     \
                    #cond);                                                \
            fprintf(stderr, __VA_ARGS__);                                  \
            fputc('\n', stderr);                                           \
            bad++;                                                         \
        }                                                                  \
    } while (0)

#define CHECK_MSG(ctx, want)                                               \
    CHECK(strcmp(rngsnap_errmsg(ctx), (want)) == 0, "got:\n  %s\nwant:\n  %s", \
          rngsnap_errmsg(ctx), (want))

/* fn(arg) in a fork() child; the test fails unless it returns 0. */
static void in_child(int (*fn)(void *), void *arg)
{
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        bad = 0;
        int n = fn(arg);
        fflush(stderr);
        _exit(n > 100 ? 100 : n); /* no atexit, no cmocka teardown */
    }
    int st;
    pid_t got;
    while ((got = waitpid(pid, &st, 0)) < 0 && errno == EINTR)
        ;
    assert_int_equal(got, pid);
    if (!WIFEXITED(st))
        fail_msg("child died of signal %d", WTERMSIG(st));
    if (WEXITSTATUS(st) != 0)
        fail_msg("%d check(s) failed in the child (its stderr says which)",
                 WEXITSTATUS(st));
}

static void positions(rngsnap *ctx, rngsnap_philox *at)
{
    for (size_t i = 0; i < rngsnap_stream_count(ctx); i++)
        assert_int_equal(rngsnap_stream_position(rngsnap_stream_at(ctx, i),
                                                 &at[i]), RNGSNAP_OK);
}

/* What the parent set up before the fork, as the child inherits it. */
typedef struct job {
    rngsnap *ctx;
    rngsnap_stream *s;       /* cpu:0/dropout              */
    uint32_t keyed[8];       /* key (7, 3) of s, drawn by the parent */
    rngsnap_philox at[4];    /* every position at the fork */
} job;

#define DRAW_REFUSED(call)                                                 \
    call " on stream cpu:0/dropout refused: this process is a fork() "     \
    "child of the process that opened the context, and its copy of the "   \
    "stream sits at the parent's position, so it would draw exactly the "  \
    "numbers the parent draws. Draw from a keyed stream instead "          \
    "(rngsnap_derive with a key unique to this process, such as the "      \
    "worker's id or the sample's index, then rngsnap_generate_at), or "    \
    "open a context of this process's own (rngsnap_open)"

static int child_draws(void *arg)
{
    job *j = arg;
    uint32_t w[8];
    rngsnap_philox at, pos[4];
    CHECK(rngsnap_generate(j->s, RNGSNAP_U32, w, 8) == RNGSNAP_E_ORDER,
          "generate was not refused");
    CHECK_MSG(j->ctx, DRAW_REFUSED("rngsnap_generate"));
    CHECK(rngsnap_reserve(j->s, 4, &at) == RNGSNAP_E_ORDER,
          "reserve was not refused");
    CHECK_MSG(j->ctx, DRAW_REFUSED("rngsnap_reserve"));
    /* Reading draws nothing: a 0-value draw (what the Python layer asks
     * the resume gate with), a 0-word reserve and the position pass. */
    CHECK(rngsnap_generate(j->s, RNGSNAP_U32, w, 0) == RNGSNAP_OK, "n = 0");
    CHECK(rngsnap_reserve(j->s, 0, &at) == RNGSNAP_OK, "reserve 0");
    /* Keyed draws work, and give what the parent's key gave. */
    CHECK(rngsnap_derive(j->s, 7, 3, &at) == RNGSNAP_OK, "derive: %s",
          rngsnap_errmsg(j->ctx));
    CHECK(rngsnap_generate_at(j->s, &at, RNGSNAP_U32, w, 8) == RNGSNAP_OK,
          "generate_at: %s", rngsnap_errmsg(j->ctx));
    CHECK(memcmp(w, j->keyed, sizeof w) == 0, "keyed words differ");
    /* Every other stream refuses too; nothing moved. */
    for (size_t i = 0; i < rngsnap_stream_count(j->ctx); i++)
        CHECK(rngsnap_generate(rngsnap_stream_at(j->ctx, i), RNGSNAP_F64, w,
                               1) == RNGSNAP_E_ORDER, "stream %zu", i);
    memset(pos, 0, sizeof pos);
    positions(j->ctx, pos);
    CHECK(memcmp(pos, j->at, sizeof pos) == 0, "positions moved");
    return bad;
}

static int child_saves_and_loads(void *arg)
{
    job *j = arg;
    char want[9000];
    snprintf(want, sizeof want, "save %s refused: this process is a fork() "
             "child of the process that opened the context; its streams and "
             "app states are this process's copy, not the job's, so the "
             "checkpoint would be no run's state. Save in the process that "
             "opened the context", child_ckpt);
    CHECK(rngsnap_save(j->ctx, child_ckpt, RNGSNAP_SAVE_REPLACE)
              == RNGSNAP_E_ORDER, "save was not refused");
    CHECK_MSG(j->ctx, want);
    CHECK(access(child_ckpt, F_OK) != 0, "%s was written", child_ckpt);
    void *data = (void *)1;
    size_t size = 1;
    CHECK(rngsnap_save_mem(j->ctx, &data, &size, 0) == RNGSNAP_E_ORDER,
          "save_mem was not refused");
    CHECK(data == NULL && size == 0, "save_mem handed out bytes");
    CHECK_MSG(j->ctx, "save checkpoint bytes refused: this process is a "
              "fork() child of the process that opened the context; its "
              "streams and app states are this process's copy, not the "
              "job's, so the checkpoint would be no run's state. Save in "
              "the process that opened the context");

    snprintf(want, sizeof want, "load %s refused, nothing restored: this "
             "process is a fork() child of the process that opened the "
             "context, so a load here would restore this process's copy "
             "only, never the job's. Load in the process that opened the "
             "context (or open a context of this process's own: "
             "rngsnap_open)", ckpt);
    CHECK(rngsnap_load(j->ctx, ckpt, 0) == RNGSNAP_E_ORDER,
          "load was not refused");
    CHECK_MSG(j->ctx, want);
    CHECK(rngsnap_load_mem(j->ctx, "x", 1, 0) == RNGSNAP_E_ORDER,
          "load_mem was not refused");
    CHECK_MSG(j->ctx, "load checkpoint bytes refused, nothing restored: "
              "this process is a fork() child of the process that opened "
              "the context, so a load here would restore this process's "
              "copy only, never the job's. Load in the process that opened "
              "the context (or open a context of this process's own: "
              "rngsnap_open)");
    rngsnap_philox pos[4];
    memset(pos, 0, sizeof pos);
    positions(j->ctx, pos);
    CHECK(memcmp(pos, j->at, sizeof pos) == 0, "positions moved");

    /* A context opened here is this process's own: all allowed. */
    rngsnap *own = NULL;
    CHECK(rngsnap_open(&own, cpu_ini, 0) == RNGSNAP_OK, "open: %s",
          rngsnap_errmsg(NULL));
    if (own) {
        uint32_t w[4];
        CHECK(rngsnap_seed_all(own, 5) == RNGSNAP_OK, "seed_all");
        CHECK(rngsnap_generate(rngsnap_stream_at(own, 0), RNGSNAP_U32, w, 4)
                  == RNGSNAP_OK, "own draw: %s", rngsnap_errmsg(own));
        CHECK(rngsnap_save(own, child_ckpt, RNGSNAP_SAVE_REPLACE)
                  == RNGSNAP_OK, "own save: %s", rngsnap_errmsg(own));
        CHECK(rngsnap_load(own, child_ckpt, 0) == RNGSNAP_OK, "own load: %s",
              rngsnap_errmsg(own));
        rngsnap_close(own);
    }
    return bad;
}

/* A grandchild: the fork of a fork is refused the same way, and so is a
 * context the child opened, once the child forks in turn. */
static int grandchild(void *arg)
{
    rngsnap *own = arg;
    uint32_t w[2];
    CHECK(rngsnap_generate(rngsnap_stream_at(own, 0), RNGSNAP_U32, w, 2)
              == RNGSNAP_E_ORDER, "grandchild draw was not refused");
    return bad;
}

static int child_forks_again(void *arg)
{
    job *j = arg;
    rngsnap *own = NULL;
    CHECK(rngsnap_open(&own, cpu_ini, 0) == RNGSNAP_OK, "open");
    if (!own)
        return bad;
    CHECK(rngsnap_seed_all(own, 6) == RNGSNAP_OK, "seed_all");
    pid_t pid = fork();
    if (pid == 0) {
        bad = 0;
        int n = grandchild(own) + (rngsnap_generate(j->s, RNGSNAP_U32,
                                                    j->keyed, 1)
                                   != RNGSNAP_E_ORDER);
        _exit(n);
    }
    int st = 0;
    CHECK(pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st)
              && WEXITSTATUS(st) == 0, "grandchild failed");
    uint32_t w[2]; /* the child's own context still draws in the child */
    CHECK(rngsnap_generate(rngsnap_stream_at(own, 0), RNGSNAP_U32, w, 2)
              == RNGSNAP_OK, "own draw: %s", rngsnap_errmsg(own));
    rngsnap_close(own);
    return bad;
}

/* ---- the parent ----------------------------------------------------------- */

static void setup_job(job *j, rngsnap **twin)
{
    memset(j, 0, sizeof *j);
    j->ctx = th_open_ok(cpu_ini, 0);
    *twin = th_open_ok(cpu_ini, 0);
    assert_int_equal(rngsnap_seed_all(j->ctx, 42), RNGSNAP_OK);
    assert_int_equal(rngsnap_seed_all(*twin, 42), RNGSNAP_OK);
    assert_int_equal(rngsnap_stream_find(j->ctx, "cpu", 0, "dropout", &j->s),
                     RNGSNAP_OK);
    uint32_t w[5];
    assert_int_equal(rngsnap_generate(j->s, RNGSNAP_U32, w, 5), RNGSNAP_OK);
    assert_int_equal(rngsnap_generate(rngsnap_stream_at(*twin, 1),
                                      RNGSNAP_U32, w, 5), RNGSNAP_OK);
    rngsnap_philox at;
    assert_int_equal(rngsnap_derive(j->s, 7, 3, &at), RNGSNAP_OK);
    assert_int_equal(rngsnap_generate_at(j->s, &at, RNGSNAP_U32, j->keyed, 8),
                     RNGSNAP_OK);
    assert_true(rngsnap_stream_count(j->ctx) <= 4);
    positions(j->ctx, j->at);
    assert_int_equal(rngsnap_save(j->ctx, ckpt, RNGSNAP_SAVE_REPLACE),
                     RNGSNAP_OK);
}

/* After the child: the parent draws on, exactly as its twin that never
 * forked, and saves and loads as before. */
static void parent_unaffected(job *j, rngsnap *twin)
{
    rngsnap_philox now[4];
    positions(j->ctx, now);
    assert_memory_equal(now, j->at, sizeof now[0]
                        * rngsnap_stream_count(j->ctx));
    for (size_t i = 0; i < rngsnap_stream_count(j->ctx); i++) {
        uint32_t a[16], b[16];
        assert_int_equal(rngsnap_generate(rngsnap_stream_at(j->ctx, i),
                                          RNGSNAP_U32, a, 16), RNGSNAP_OK);
        assert_int_equal(rngsnap_generate(rngsnap_stream_at(twin, i),
                                          RNGSNAP_U32, b, 16), RNGSNAP_OK);
        assert_memory_equal(a, b, sizeof a);
    }
    rngsnap_philox at;
    assert_int_equal(rngsnap_reserve(j->s, 4, &at), RNGSNAP_OK);
    assert_int_equal(rngsnap_save(j->ctx, ckpt, RNGSNAP_SAVE_REPLACE),
                     RNGSNAP_OK);
    rngsnap *res = th_open_ok(cpu_ini, RNGSNAP_RESUME);
    assert_int_equal(rngsnap_load(res, ckpt, 0), RNGSNAP_OK);
    rngsnap_close(res);
}

static void test_child_draws(void **state)
{
    (void)state;
    job j;
    rngsnap *twin;
    setup_job(&j, &twin);
    in_child(child_draws, &j);
    parent_unaffected(&j, twin);
    rngsnap_close(twin);
    rngsnap_close(j.ctx);
}

static void test_child_saves_and_loads(void **state)
{
    (void)state;
    job j;
    rngsnap *twin;
    setup_job(&j, &twin);
    unlink(child_ckpt); /* the child checks that its save wrote nothing */
    in_child(child_saves_and_loads, &j);
    parent_unaffected(&j, twin);
    rngsnap_close(twin);
    rngsnap_close(j.ctx);
}

static void test_fork_of_a_fork(void **state)
{
    (void)state;
    job j;
    rngsnap *twin;
    setup_job(&j, &twin);
    in_child(child_forks_again, &j);
    parent_unaffected(&j, twin);
    rngsnap_close(twin);
    rngsnap_close(j.ctx);
}

/* A RESUME context awaiting its load: the child's draw is refused by the
 * resume gate first (its own words), as in the parent. */
static int child_awaiting(void *arg)
{
    rngsnap *ctx = arg;
    uint32_t w[1];
    CHECK(rngsnap_generate(rngsnap_stream_at(ctx, 0), RNGSNAP_U32, w, 1)
              == RNGSNAP_E_ORDER, "not refused");
    CHECK(strstr(rngsnap_errmsg(ctx), "no checkpoint has been loaded yet")
              != NULL, "%s", rngsnap_errmsg(ctx));
    return bad;
}

static void test_child_of_resume_context(void **state)
{
    (void)state;
    rngsnap *run = th_open_ok(cpu_ini, 0);
    assert_int_equal(rngsnap_seed_all(run, 8), RNGSNAP_OK);
    assert_int_equal(rngsnap_save(run, ckpt, RNGSNAP_SAVE_REPLACE),
                     RNGSNAP_OK);
    rngsnap_close(run);
    rngsnap *ctx = th_open_ok(cpu_ini, RNGSNAP_RESUME);
    in_child(child_awaiting, ctx);
    assert_int_equal(rngsnap_load(ctx, ckpt, 0), RNGSNAP_OK);
    uint32_t w[1];
    assert_int_equal(rngsnap_generate(rngsnap_stream_at(ctx, 0), RNGSNAP_U32,
                                      w, 1), RNGSNAP_OK);
    rngsnap_close(ctx);
}

static int setup(void **state)
{
    th_group_setup(state);
    const char *dir = getenv("RNGSNAP_PLUGIN_BUILD_DIR");
    if (!dir)
        return -1;
    snprintf(cpu_ini, sizeof cpu_ini, "%s", th_write("cpu.ini",
             "[rngsnap]\nplugin_dir = %s\n[backend.cpu]\nplugin = "
             "rngsnap_cpu\nstreams = default, dropout\n", dir));
    snprintf(ckpt, sizeof ckpt, "%s/parent.ckpt", th_tmpdir());
    snprintf(child_ckpt, sizeof child_ckpt, "%s/child.ckpt", th_tmpdir());
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_child_draws),
        cmocka_unit_test(test_child_saves_and_loads),
        cmocka_unit_test(test_fork_of_a_fork),
        cmocka_unit_test(test_child_of_resume_context),
    };
    return cmocka_run_group_tests(tests, setup, th_group_teardown);
}
