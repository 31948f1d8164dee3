/*
 * test_threads.c - the thread contract of rngsnap.h, tested as a job uses
 * it: data-loader threads drawing while a checkpoint thread saves.
 *
 * Every test uses <build>/config/clusters/mixed.ini: all five backends,
 * the device ones emulated, 18 streams.  Threads never call cmocka's
 * assert_* (it longjmps); they record what they saw and the main thread
 * asserts.  The same program runs under ThreadSanitizer in the test
 * command's sanitizer stage (scripts/test.sh), which must report nothing.
 * fork_while_drawing forks while threads draw (issue 31, item 4; the
 * single-threaded fork rules are tests/core/test_fork.c).
 */
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>
#include <rngsnap.h>

#include "clean_env.h"

#define NTHREADS 4
#define SEED 20261130u

static const char *mixed_ini(void)
{
    const char *p = getenv("RNGSNAP_MIXED_INI");
    if (!p || !*p) {
        fprintf(stderr, "RNGSNAP_MIXED_INI is not set\n");
        abort();
    }
    return p;
}

static rngsnap *open_seeded(unsigned flags)
{
    rngsnap *ctx = NULL;
    int rc = rngsnap_open(&ctx, mixed_ini(), flags);
    if (rc) {
        fprintf(stderr, "open: %s\n", rngsnap_errmsg(NULL));
        abort();
    }
    if (!(flags & RNGSNAP_RESUME) && rngsnap_seed_all(ctx, SEED)) {
        fprintf(stderr, "seed: %s\n", rngsnap_errmsg(ctx));
        abort();
    }
    return ctx;
}

static char tmpdir[256];

static int setup(void **state)
{
    (void)state;
    test_clean_env();
    snprintf(tmpdir, sizeof tmpdir, "/tmp/rngsnap-threads-XXXXXX");
    return mkdtemp(tmpdir) ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    return system(cmd) == 0 ? 0 : -1;
}

static const char *tmpfile_named(const char *name, char *buf, size_t len)
{
    snprintf(buf, len, "%s/%s", tmpdir, name);
    return buf;
}

/* ---- 1. different streams from many threads ------------------------------ */

/* A stream's schedule of calls depends on the stream alone, so the values
 * it yields do not depend on how threads interleave. */
typedef struct schedule {
    uint64_t x;
} schedule;

static uint64_t next_step(schedule *s)
{
    s->x = s->x * 6364136223846793005ull + 1442695040888963407ull;
    return s->x >> 33;
}

#define BIG_FILL (((size_t)1 << 18) + 5) /* U32s: over the cpu plugin's
                                             split size (its thread pool) */

static uint64_t fold(uint64_t h, const void *p, size_t len)
{
    const unsigned char *b = p;
    for (size_t k = 0; k < len; k++)
        h = (h ^ b[k]) * 1099511628211ull;
    return h;
}

/* Run `calls` steps of stream i's schedule: a draw of 1..300 values of a
 * distribution taken in turn, now and then a fill big enough for the cpu
 * plugin's thread pool, or a reserve.  Folds every output (and every
 * reserved position) into *digest. */
static int run_schedule(rngsnap_stream *s, size_t i, int calls,
                        uint64_t *digest)
{
    schedule sch = {i + 1};
    static const rngsnap_dist dists[] = {
        RNGSNAP_U32, RNGSNAP_U64, RNGSNAP_F32,
        RNGSNAP_F64, RNGSNAP_NORMAL_F32, RNGSNAP_NORMAL_F64};
    uint64_t buf[300];
    uint32_t *big = malloc(BIG_FILL * sizeof *big);
    if (!big)
        return -1;
    uint64_t h = 1469598103934665603ull;
    int rc = 0;
    for (int c = 0; c < calls && !rc; c++) {
        uint64_t step = next_step(&sch);
        size_t n = 1 + step % 300;
        if (step % 61 == 0) {
            rc = rngsnap_generate(s, RNGSNAP_U32, big, BIG_FILL);
            h = fold(h, big, BIG_FILL * sizeof *big);
        } else if (step % 7 == 0) {
            rngsnap_philox at;
            rc = rngsnap_reserve(s, n, &at);
            h = fold(h, &at, sizeof at);
        } else {
            rngsnap_dist d = dists[step % 6];
            rc = rngsnap_generate(s, d, buf, n);
            h = fold(h, buf, n * rngsnap_dist_size(d));
        }
    }
    free(big);
    *digest = h;
    return rc ? -1 : 0;
}

typedef struct owner_job {
    rngsnap *ctx;
    int thread;
    int calls;
    uint64_t digest[64];
    int failed;
} owner_job;

static void *draw_owned(void *arg)
{
    owner_job *j = arg;
    size_t n = rngsnap_stream_count(j->ctx);
    for (size_t i = (size_t)j->thread; i < n; i += NTHREADS)
        if (run_schedule(rngsnap_stream_at(j->ctx, i), i, j->calls,
                         &j->digest[i]))
            j->failed = 1;
    return NULL;
}

static void different_streams_equal_one_thread(void **state)
{
    (void)state;
    rngsnap *par = open_seeded(0), *seq = open_seeded(0);
    size_t n = rngsnap_stream_count(par);
    assert_int_equal(n, 18);
    owner_job jobs[NTHREADS];
    pthread_t tid[NTHREADS];
    for (int t = 0; t < NTHREADS; t++) {
        jobs[t] = (owner_job){.ctx = par, .thread = t, .calls = 400};
        assert_int_equal(pthread_create(&tid[t], NULL, draw_owned, &jobs[t]),
                         0);
    }
    for (int t = 0; t < NTHREADS; t++) {
        pthread_join(tid[t], NULL);
        assert_int_equal(jobs[t].failed, 0);
    }
    for (size_t i = 0; i < n; i++) {
        uint64_t want;
        assert_int_equal(run_schedule(rngsnap_stream_at(seq, i), i, 400,
                                      &want), 0);
        assert_true(jobs[i % NTHREADS].digest[i] == want);
    }
    rngsnap_close(par);
    rngsnap_close(seq);
}

/* ---- 2. the same stream from two threads -------------------------------- */

#define SAME_CALLS 200000

typedef struct same_job {
    rngsnap_stream *s;
    pthread_barrier_t *go; /* both start together: the calls overlap */
    uint32_t got[SAME_CALLS];
    int failed;
} same_job;

static void *draw_one_at_a_time(void *arg)
{
    same_job *j = arg;
    pthread_barrier_wait(j->go);
    for (int c = 0; c < SAME_CALLS; c++)
        if (rngsnap_generate(j->s, RNGSNAP_U32, &j->got[c], 1))
            j->failed = 1;
    return NULL;
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

/* Serialised: together the two threads got exactly the first 2N words of
 * the stream, each once (a lost offset update would repeat words). */
static void same_stream_is_serialised(void **state)
{
    (void)state;
    rngsnap *ctx = open_seeded(0), *ref = open_seeded(0);
    rngsnap_stream *s, *r;
    assert_int_equal(rngsnap_stream_find(ctx, "cpu", 0, "default", &s), 0);
    assert_int_equal(rngsnap_stream_find(ref, "cpu", 0, "default", &r), 0);
    same_job *a = calloc(1, sizeof *a), *b = calloc(1, sizeof *b);
    assert_non_null(a);
    assert_non_null(b);
    a->s = b->s = s;
    pthread_barrier_t go;
    pthread_barrier_init(&go, NULL, 2);
    a->go = b->go = &go;
    pthread_t ta, tb;
    assert_int_equal(pthread_create(&ta, NULL, draw_one_at_a_time, a), 0);
    assert_int_equal(pthread_create(&tb, NULL, draw_one_at_a_time, b), 0);
    pthread_join(ta, NULL);
    pthread_join(tb, NULL);
    pthread_barrier_destroy(&go);
    assert_int_equal(a->failed + b->failed, 0);

    uint32_t *got = malloc(2 * SAME_CALLS * sizeof *got);
    uint32_t *want = malloc(2 * SAME_CALLS * sizeof *want);
    assert_non_null(got);
    assert_non_null(want);
    memcpy(got, a->got, sizeof a->got);
    memcpy(got + SAME_CALLS, b->got, sizeof b->got);
    assert_int_equal(rngsnap_generate(r, RNGSNAP_U32, want, 2 * SAME_CALLS),
                     0);
    qsort(got, 2 * SAME_CALLS, sizeof *got, cmp_u32);
    qsort(want, 2 * SAME_CALLS, sizeof *want, cmp_u32);
    assert_memory_equal(got, want, 2 * SAME_CALLS * sizeof *got);
    /* And the stream's position is exactly 2N words on. */
    rngsnap_philox ps, pr;
    assert_int_equal(rngsnap_stream_position(s, &ps), 0);
    assert_int_equal(rngsnap_stream_position(r, &pr), 0);
    assert_true(ps.offset == pr.offset && ps.offset == 2 * SAME_CALLS);
    free(got);
    free(want);
    free(a);
    free(b);
    rngsnap_close(ctx);
    rngsnap_close(ref);
}

/* ---- 3. save while other threads draw ----------------------------------- */

/* Saves alternate between rngsnap_save and rngsnap_save_mem: the same
 * locks, the same promise. */

/* Drawers draw until told to stop, each going round its own streams
 * (t, t + NTHREADS, ...) one call each.  After every save the saver
 * waits until each drawer has done two more whole rounds, so the next
 * save comes after every stream has moved, and the drawer's next call
 * after the saved position has been drawn: every save catches every
 * stream mid-run and is compared, on a machine of any speed.
 *
 * A round takes a drawer's streams from both ends of the registry
 * inwards (the first, the last, the second, ...): a save that read the
 * streams one at a time without their locks would see a drawer that
 * moved while it read as one that drew a late stream before an early
 * one, which no moment of its round has.  (In registry order a drawer
 * would have to overtake the reading to show it.)
 *
 * Each drawer keeps the words of its last RING rounds per stream; it
 * never starts a round that would overwrite one the saver may still
 * compare (it waits for the allowance instead), so the record is bounded
 * however fast it draws: during a save it may run to RING - 2 rounds
 * past where it was when the save began, then to RING (room for the two
 * rounds the saver waits for).  An allowance never goes down. */
#define CALL_WORDS 7 /* u32 words per draw call */
#define SAVES 50
#define RING 8192    /* rounds kept per stream (224 KiB) */

typedef struct pace {
    pthread_mutex_t lock;
    pthread_cond_t more;          /* an allowance went up, or stop */
    atomic_int rounds[NTHREADS];  /* whole rounds each drawer has done */
    atomic_int allow[NTHREADS];   /* a drawer waits before this round */
    atomic_int stop;
} pace;

typedef struct record_job {
    rngsnap *ctx;
    int thread;
    pace *pace;
    size_t order[64]; /* its streams, in the order of its rounds */
    size_t norder;
    uint32_t *words[64]; /* per owned stream: the last RING calls' words */
    int failed;
} record_job;

/* Drawer t's streams: t, t + NTHREADS, ... taken from both ends. */
static void round_order(record_job *j, size_t n)
{
    size_t own[64], m = 0;
    for (size_t i = (size_t)j->thread; i < n; i += NTHREADS)
        own[m++] = i;
    for (size_t k = 0; k < m; k++)
        j->order[k] = k % 2 ? own[m - 1 - k / 2] : own[k / 2];
    j->norder = m;
}

/* Where call c of stream i was recorded. */
static uint32_t *call_words(const record_job *j, size_t i, uint64_t c)
{
    return j->words[i] + (size_t)(c % RING) * CALL_WORDS;
}

static void *draw_and_record(void *arg)
{
    record_job *j = arg;
    pace *p = j->pace;
    atomic_int *allow = &p->allow[j->thread];
    for (int r = 0;; r++) {
        if (r >= atomic_load(allow)) {
            pthread_mutex_lock(&p->lock);
            while (r >= atomic_load(allow) && !atomic_load(&p->stop))
                pthread_cond_wait(&p->more, &p->lock);
            pthread_mutex_unlock(&p->lock);
        }
        if (atomic_load(&p->stop))
            return NULL;
        for (size_t k = 0; k < j->norder; k++) {
            size_t i = j->order[k];
            if (rngsnap_generate(rngsnap_stream_at(j->ctx, i), RNGSNAP_U32,
                                 call_words(j, i, (uint64_t)r), CALL_WORDS))
                j->failed = 1;
        }
        atomic_store(&p->rounds[j->thread], r + 1);
    }
}

static void rounds_now(pace *p, int now[NTHREADS])
{
    for (int t = 0; t < NTHREADS; t++)
        now[t] = atomic_load(&p->rounds[t]);
}

/* Wait until each drawer has done `more` rounds past seen[]: an event,
 * however long it takes. */
static void wait_past(pace *p, const int seen[NTHREADS], int more)
{
    for (int t = 0; t < NTHREADS; t++)
        while (atomic_load(&p->rounds[t]) < seen[t] + more)
            sched_yield();
}

/* Return once this thread has seen drawers move twice while it ran, so
 * that a save that follows at once most likely overlaps their draws (on
 * one core it returns after they have had the processor), or at once if
 * every drawer waits for its allowance. */
static void catch_drawing(pace *p)
{
    for (int moves = 0; moves < 2; moves++) {
        int was[NTHREADS];
        rounds_now(p, was);
        for (int moved = 0; !moved;) {
            int can = 0;
            for (int t = 0; t < NTHREADS; t++) {
                int r = atomic_load(&p->rounds[t]);
                moved |= r != was[t];
                can |= r < atomic_load(&p->allow[t]);
            }
            if (!moved && !can)
                return;
        }
    }
}

/* Let each drawer run until round from[t] + ahead (ahead <= RING: the
 * records of rounds from from[t] on are kept), or stop it. */
static void set_allowance(pace *p, const int from[NTHREADS], int ahead,
                          int stop)
{
    pthread_mutex_lock(&p->lock);
    for (int t = 0; t < NTHREADS; t++)
        atomic_store(&p->allow[t], from[t] + ahead);
    atomic_store(&p->stop, stop);
    pthread_cond_broadcast(&p->more);
    pthread_mutex_unlock(&p->lock);
}

/* Saved stream i's position as a number of calls from its seeded start:
 * the same seed and subsequence (no torn 24-byte state), a whole number
 * of calls on. */
static uint64_t saved_calls(const rngsnap_file *f, size_t i,
                            const rngsnap_philox *start)
{
    rngsnap_philox at;
    assert_int_equal(rngsnap_philox_decode(rngsnap_file_section_at(f, i),
                                           &at), 0);
    assert_true(at.seed == start[i].seed);
    assert_true(at.subsequence == start[i].subsequence);
    assert_true(at.offset >= start[i].offset);
    assert_int_equal((at.offset - start[i].offset) % CALL_WORDS, 0);
    return (at.offset - start[i].offset) / CALL_WORDS;
}

/* One save against the draws around it.  Before[t] and after[t] are the
 * rounds drawer t had done when the save began and, a little later, when
 * it had ended.  Every stream moved since the previous save (prev[],
 * updated) and sits between before and after + 1; each drawer's streams sit
 * at one moment of its round (the first k in its order one call ahead of
 * the rest: a snapshot taken while every stream's lock is held, not one
 * stream at a time); and a context loaded from the file draws next
 * exactly what the drawer drew next.  Returns the number of streams so
 * compared. */
static int check_saved(const char *path, rngsnap *fresh,
                       const rngsnap_philox *start, const record_job *jobs,
                       const int *before, const int *after, uint64_t *prev)
{
    rngsnap_file *f;
    char err[512];
    assert_int_equal(rngsnap_file_open(path, &f, err, sizeof err), 0);
    size_t n = rngsnap_stream_count(fresh);
    uint64_t calls[64];
    for (size_t i = 0; i < n; i++) {
        calls[i] = saved_calls(f, i, start);
        assert_true(calls[i] > prev[i]);
        assert_true(calls[i] >= (uint64_t)before[i % NTHREADS]);
        assert_true(calls[i] <= (uint64_t)after[i % NTHREADS] + 1);
        prev[i] = calls[i];
    }
    rngsnap_file_close(f);
    for (size_t t = 0; t < NTHREADS; t++) {
        const size_t *o = jobs[t].order;
        int torn = 0;
        char seen[300] = "";
        for (size_t k = 0; k < jobs[t].norder; k++) {
            size_t i = o[k];
            if (k > 0 && (calls[i] > calls[o[k - 1]]
                          || calls[i] + 1 < calls[o[0]]))
                torn = 1;
            size_t len = strlen(seen);
            snprintf(seen + len, sizeof seen - len, " %zu:%llu", i,
                     (unsigned long long)calls[i]);
        }
        if (torn)
            fail_msg("%s: drawer %zu's streams at calls%s (stream:calls, "
                     "in the order it draws them), which no moment of its "
                     "rounds had: the save did not hold every stream's "
                     "lock at once",
                     path, t, seen);
    }

    assert_int_equal(rngsnap_load(fresh, path, 0), 0);
    int checked = 0;
    for (size_t i = 0; i < n; i++) {
        uint32_t next[CALL_WORDS];
        assert_int_equal(rngsnap_generate(rngsnap_stream_at(fresh, i),
                                          RNGSNAP_U32, next, CALL_WORDS),
                         0);
        assert_memory_equal(next, call_words(&jobs[i % NTHREADS], i,
                                             calls[i]),
                            sizeof next);
        checked++;
    }
    /* fresh checks the next saved file too: that load after these draws
     * is on purpose, so it leaves this loaded run (rngsnap.h) */
    assert_int_equal(rngsnap_branch(fresh), 0);
    return checked;
}

static void save_while_drawing(void **state)
{
    (void)state;
    rngsnap *ctx = open_seeded(0), *fresh = open_seeded(0);
    size_t n = rngsnap_stream_count(ctx);
    rngsnap_philox start[64];
    for (size_t i = 0; i < n; i++)
        assert_int_equal(rngsnap_stream_position(rngsnap_stream_at(ctx, i),
                                                 &start[i]), 0);
    pace *p = calloc(1, sizeof *p);
    record_job *jobs = calloc(NTHREADS, sizeof *jobs);
    assert_non_null(p);
    assert_non_null(jobs);
    pthread_mutex_init(&p->lock, NULL);
    pthread_cond_init(&p->more, NULL);
    for (int t = 0; t < NTHREADS; t++) {
        atomic_init(&p->rounds[t], 0);
        atomic_init(&p->allow[t], RING - 2); /* <= the first save's */
    }
    atomic_init(&p->stop, 0);
    pthread_t tid[NTHREADS];
    for (int t = 0; t < NTHREADS; t++) {
        jobs[t].ctx = ctx;
        jobs[t].thread = t;
        jobs[t].pace = p;
        round_order(&jobs[t], n);
        for (size_t i = (size_t)t; i < n; i += NTHREADS) {
            jobs[t].words[i] = malloc((size_t)RING * CALL_WORDS
                                      * sizeof(uint32_t));
            assert_non_null(jobs[t].words[i]);
        }
    }
    for (int t = 0; t < NTHREADS; t++)
        assert_int_equal(pthread_create(&tid[t], NULL, draw_and_record,
                                        &jobs[t]), 0);
    int before[NTHREADS], after[NTHREADS], checked = 0;
    uint64_t prev[64] = {0};
    int zero[NTHREADS] = {0};
    wait_past(p, zero, 1); /* every stream has moved from its start */
    for (int k = 0; k < SAVES; k++) {
        char name[32], path[300];
        snprintf(name, sizeof name, "during-%03d.ckpt", k);
        tmpfile_named(name, path, sizeof path);
        rounds_now(p, before);
        /* Records of rounds from `before` on stay until compared (this
         * raises the allowance: before >= the last save's before + 2). */
        set_allowance(p, before, RING - 2, 0);
        catch_drawing(p);
        if (k % 2) {
            /* the same locking for bytes: written out, then checked as
             * the files are */
            void *data;
            size_t size;
            assert_int_equal(rngsnap_save_mem(ctx, &data, &size, 0), 0);
            FILE *f = fopen(path, "wb");
            assert_non_null(f);
            assert_int_equal(fwrite(data, 1, size, f), size);
            assert_int_equal(fclose(f), 0);
            rngsnap_free(data);
        } else {
            assert_int_equal(rngsnap_save(ctx, path, RNGSNAP_SAVE_NO_SYNC),
                             0);
        }
        /* after <= before + RING - 2: two more rounds fit in the ring */
        rounds_now(p, after);
        set_allowance(p, before, RING, 0);
        /* Each stream's next call after the save drawn and recorded, and
         * each moved since the save (for the next one). */
        wait_past(p, after, 2);
        checked += check_saved(path, fresh, start, jobs, before, after,
                               prev);
    }
    set_allowance(p, before, RING, 1);
    for (int t = 0; t < NTHREADS; t++) {
        pthread_join(tid[t], NULL);
        assert_int_equal(jobs[t].failed, 0);
    }
    /* Every save, every stream: compared against its drawer's next call. */
    assert_int_equal(checked, SAVES * (int)n);
    for (int t = 0; t < NTHREADS; t++)
        for (size_t i = (size_t)t; i < n; i += NTHREADS)
            free(jobs[t].words[i]);
    pthread_cond_destroy(&p->more);
    pthread_mutex_destroy(&p->lock);
    free(jobs);
    free(p);
    rngsnap_close(ctx);
    rngsnap_close(fresh);
}

/* ---- 4. each thread reads its own message -------------------------------- */

#define MSG_ROUNDS 5000

typedef struct msg_job {
    rngsnap *ctx;
    int thread;
    int wrong;
    char first_wrong[600];
} msg_job;

static void *fail_and_read(void *arg)
{
    msg_job *j = arg;
    rngsnap_stream *s;
    for (int r = 0; r < MSG_ROUNDS; r++) {
        char name[64];
        snprintf(name, sizeof name, "t%d-round%d", j->thread, r);
        int rc = rngsnap_stream_find(j->ctx, "cpu", 0, name, &s);
        const char *m = rngsnap_errmsg(j->ctx);
        char want[128];
        snprintf(want, sizeof want, "no stream cpu:0/%s;", name);
        if (rc != RNGSNAP_E_INVALID || !strstr(m, want)) {
            if (j->wrong++ == 0)
                snprintf(j->first_wrong, sizeof j->first_wrong, "%s", m);
        }
    }
    return NULL;
}

static void errmsg_is_per_thread(void **state)
{
    (void)state;
    rngsnap *ctx = open_seeded(0);
    msg_job jobs[NTHREADS];
    pthread_t tid[NTHREADS];
    for (int t = 0; t < NTHREADS; t++) {
        jobs[t] = (msg_job){.ctx = ctx, .thread = t};
        assert_int_equal(pthread_create(&tid[t], NULL, fail_and_read,
                                        &jobs[t]), 0);
    }
    for (int t = 0; t < NTHREADS; t++) {
        pthread_join(tid[t], NULL);
        if (jobs[t].wrong)
            fprintf(stderr, "thread %d read '%s'\n", t, jobs[t].first_wrong);
        assert_int_equal(jobs[t].wrong, 0);
    }
    /* This thread failed nothing on ctx. */
    assert_string_equal(rngsnap_errmsg(ctx), "no error");
    rngsnap_close(ctx);
}

/* ---- 5. the resume gate across threads ----------------------------------- */

typedef struct gate_job {
    rngsnap_stream *s;
    atomic_int refused; /* RNGSNAP_E_ORDER answers before the load */
    atomic_int other_error;
    atomic_int drew;   /* 1 once a draw was allowed */
    uint32_t first[4]; /* the first words a draw was allowed to get */
} gate_job;

static void *draw_when_allowed(void *arg)
{
    gate_job *j = arg;
    for (;;) {
        int rc = rngsnap_generate(j->s, RNGSNAP_U32, j->first, 4);
        if (rc == RNGSNAP_OK) {
            atomic_store(&j->drew, 1);
            return NULL;
        }
        if (rc == RNGSNAP_E_ORDER)
            atomic_fetch_add(&j->refused, 1);
        else {
            atomic_store(&j->other_error, rc);
            return NULL;
        }
        sched_yield();
    }
}

/* Drawers on a RESUME context are refused until the load and then get
 * the checkpoint's words, never those of the state before the load. */
static void gate_opens_with_loaded_states(void **state)
{
    (void)state;
    char path[300];
    tmpfile_named("gate.ckpt", path, sizeof path);
    rngsnap *src = open_seeded(0);
    size_t n = rngsnap_stream_count(src);
    uint32_t skip[100];
    for (size_t i = 0; i < n; i++)
        assert_int_equal(rngsnap_generate(rngsnap_stream_at(src, i),
                                          RNGSNAP_U32, skip, 1 + i), 0);
    assert_int_equal(rngsnap_save(src, path, RNGSNAP_SAVE_NO_SYNC), 0);

    rngsnap *job = open_seeded(RNGSNAP_RESUME);
    gate_job *jobs = calloc(n, sizeof *jobs);
    pthread_t *tid = calloc(n, sizeof *tid);
    assert_non_null(jobs);
    assert_non_null(tid);
    for (size_t i = 0; i < n; i++) {
        jobs[i].s = rngsnap_stream_at(job, i);
        assert_int_equal(pthread_create(&tid[i], NULL, draw_when_allowed,
                                        &jobs[i]), 0);
    }
    /* Load only once every drawer has been refused: each has tried
     * before the load, whatever the machine's speed. */
    for (size_t i = 0; i < n; i++)
        while (atomic_load(&jobs[i].refused) == 0
               && atomic_load(&jobs[i].other_error) == 0
               && atomic_load(&jobs[i].drew) == 0)
            sched_yield();
    assert_int_equal(rngsnap_load(job, path, 0), 0);
    for (size_t i = 0; i < n; i++) {
        pthread_join(tid[i], NULL);
        assert_int_equal(atomic_load(&jobs[i].other_error), 0);
        assert_true(atomic_load(&jobs[i].refused) > 0);
        uint32_t want[4];
        assert_int_equal(rngsnap_generate(rngsnap_stream_at(src, i),
                                          RNGSNAP_U32, want, 4), 0);
        assert_memory_equal(jobs[i].first, want, sizeof want);
    }
    free(jobs);
    free(tid);
    rngsnap_close(job);
    rngsnap_close(src);
}

/* ---- fork() while other threads draw (issue 31, item 4) ----------------- */

#define FORKS 16

typedef struct fork_drawer {
    rngsnap_stream *s;
    atomic_int *stop;
    atomic_long calls;
    atomic_int error;
} fork_drawer;

static void *draw_until_stopped(void *arg)
{
    fork_drawer *d = arg;
    uint32_t w[CALL_WORDS];
    while (!atomic_load(d->stop)) {
        int rc = rngsnap_generate(d->s, RNGSNAP_U32, w, CALL_WORDS);
        if (rc) {
            atomic_store(&d->error, rc);
            return NULL;
        }
        atomic_fetch_add(&d->calls, 1);
    }
    return NULL;
}

/* In the child: every inherited stream refuses to draw, without waiting
 * for a lock a drawer held at the fork (the refusal takes none), and a
 * keyed draw on a stream no drawer used gives the parent's key's words.
 * Bits of the exit status: 1 a draw allowed, 2 the keyed draw. */
static int forked_child(rngsnap *ctx, const uint32_t *keyed)
{
    int code = 0;
    uint32_t w[CALL_WORDS];
    for (size_t i = 0; i < rngsnap_stream_count(ctx); i++)
        if (rngsnap_generate(rngsnap_stream_at(ctx, i), RNGSNAP_U32, w,
                             CALL_WORDS) != RNGSNAP_E_ORDER
            || !strstr(rngsnap_errmsg(ctx), "fork() child"))
            code |= 1;
    rngsnap_philox at;
    if (rngsnap_derive(rngsnap_stream_at(ctx, 0), 5, 1, &at)
        || rngsnap_generate_at(rngsnap_stream_at(ctx, 0), &at, RNGSNAP_U32,
                               w, CALL_WORDS)
        || memcmp(w, keyed, sizeof w) != 0)
        code |= 2;
    return code;
}

/* Forks while NTHREADS threads draw on the parent's context: the
 * children refuse (and do not hang), the parent's drawers never see an
 * error, and every drawer's stream ends where its own calls put it (the
 * fork generation is one relaxed load the parent's threads share, never
 * written in the parent). */
static void fork_while_drawing(void **state)
{
    (void)state;
    rngsnap *ctx = open_seeded(0), *twin = open_seeded(0);
    size_t n = rngsnap_stream_count(ctx);
    assert_true(n >= NTHREADS + 1);
    /* Stream 0 is drawn by no thread: the children's keyed draws take
     * its lock, which a drawer could hold at the fork (rngsnap.h). */
    uint32_t keyed[CALL_WORDS];
    rngsnap_philox at;
    assert_int_equal(rngsnap_derive(rngsnap_stream_at(ctx, 0), 5, 1, &at), 0);
    assert_int_equal(rngsnap_generate_at(rngsnap_stream_at(ctx, 0), &at,
                                         RNGSNAP_U32, keyed, CALL_WORDS), 0);
    atomic_int stop = 0;
    fork_drawer d[NTHREADS];
    pthread_t tid[NTHREADS];
    for (size_t t = 0; t < NTHREADS; t++) {
        d[t].s = rngsnap_stream_at(ctx, 1 + t);
        d[t].stop = &stop;
        atomic_init(&d[t].calls, 0);
        atomic_init(&d[t].error, 0);
        assert_int_equal(pthread_create(&tid[t], NULL, draw_until_stopped,
                                        &d[t]), 0);
    }
    for (int k = 0; k < FORKS; k++) {
        /* fork with every drawer under way: each has made a call more */
        long seen[NTHREADS];
        for (size_t t = 0; t < NTHREADS; t++)
            seen[t] = atomic_load(&d[t].calls);
        for (size_t t = 0; t < NTHREADS; t++)
            while (atomic_load(&d[t].calls) == seen[t]
                   && atomic_load(&d[t].error) == 0)
                sched_yield();
        fflush(stdout);
        fflush(stderr);
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0)
            _exit(forked_child(ctx, keyed));
        int st;
        assert_int_equal(waitpid(pid, &st, 0), pid);
        if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
            fail_msg("fork %d: child %s %d", k,
                     WIFEXITED(st) ? "exited" : "died of signal",
                     WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
    }
    atomic_store(&stop, 1);
    for (size_t t = 0; t < NTHREADS; t++) {
        pthread_join(tid[t], NULL);
        assert_int_equal(atomic_load(&d[t].error), 0);
        /* the twin, which never forked nor drew, skips the same words */
        rngsnap_philox a, b;
        uint64_t words = (uint64_t)atomic_load(&d[t].calls) * CALL_WORDS;
        assert_int_equal(rngsnap_reserve(rngsnap_stream_at(twin, 1 + t),
                                         words, &b), 0);
        assert_int_equal(rngsnap_stream_position(d[t].s, &a), 0);
        assert_int_equal(rngsnap_stream_position(rngsnap_stream_at(twin,
                                                                   1 + t),
                                                 &b), 0);
        assert_memory_equal(&a, &b, sizeof a);
        uint32_t x[4], y[4];
        assert_int_equal(rngsnap_generate(d[t].s, RNGSNAP_U32, x, 4), 0);
        assert_int_equal(rngsnap_generate(rngsnap_stream_at(twin, 1 + t),
                                          RNGSNAP_U32, y, 4), 0);
        assert_memory_equal(x, y, sizeof x);
    }
    rngsnap_close(twin);
    rngsnap_close(ctx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(different_streams_equal_one_thread),
        cmocka_unit_test(same_stream_is_serialised),
        cmocka_unit_test(save_while_drawing),
        cmocka_unit_test(errmsg_is_per_thread),
        cmocka_unit_test(gate_opens_with_loaded_states),
        cmocka_unit_test(fork_while_drawing),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
