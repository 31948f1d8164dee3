/*
 * plugin_check_threads.c - the "threads" check: the thread contract of
 * include/rngsnap/backend.h.  Every stream of the backend runs the same
 * program of draws, get_state and set_state, first one stream after
 * another, then all at once (one thread per stream, started together);
 * each stream must draw the same values both ways (the state bytes may
 * hold what does not decide a value, so only values are compared).  The
 * verdict compares values only, never timings.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <xxhash.h>

#include "plugin_check.h"

#define ROUNDS 12
#define MAXT 32

/* 262145: past the cpu backend's 1 MiB threshold of its parallel fill. */
static const size_t counts[] = {1, 2, 3, 8, 33, 1000, 5001, 262145};
#define NC (sizeof counts / sizeof counts[0])

typedef struct job {
    pc *p;
    rngsnap_stream *s;
    pthread_barrier_t *start;
    uint64_t digest;
    int rc;              /* first failing call's code, 0 if none */
    char what[160];
} job;

static void *program(void *arg)
{
    job *j = arg;
    pc *p = j->p;
    size_t size = p->b->vt->state_size;
    XXH64_state_t *h = XXH64_createState();
    uint8_t *st = malloc(size);
    void *out = malloc(262145 * 8);
    if (!h || !st || !out) {
        j->rc = RNGSNAP_E_NOMEM;
        goto done;
    }
    XXH64_reset(h, 0);
    if (j->start)
        pthread_barrier_wait(j->start);
    for (int r = 0; r < ROUNDS && !j->rc; r++)
        for (int d = 0; d < RNGSNAP_DIST_COUNT && !j->rc; d++) {
            if (!(p->supported & 1u << d))
                continue;
            size_t n = counts[(size_t)(r + d) % NC];
            int rc = pc_gen(p, j->s, (rngsnap_dist)d, out, n);
            if (rc) {
                j->rc = rc;
                snprintf(j->what, sizeof j->what, "generate(%s, %zu)",
                         pc_dist_name(d), n);
                break;
            }
            XXH64_update(h, out, n * pc_dist_size(d));
            /* A get/set round trip between draws, as a save would do. */
            if ((rc = pc_get(p, j->s, st, size))
                || (rc = pc_set(p, j->s, st, size))) {
                j->rc = rc;
                snprintf(j->what, sizeof j->what, "get_state/set_state");
            }
        }
    j->digest = XXH64_digest(h);
done:
    XXH64_freeState(h);
    free(st);
    free(out);
    return NULL;
}

static void seed_all(pc *p)
{
    for (size_t i = 0; i < p->ns; i++)
        pc_seed(p, p->s[i], 88 + i, (uint64_t)p->s[i]->device);
}

void pc_check_threads(pc *p)
{
    pc_open(p);
    size_t n = p->ns < MAXT ? p->ns : MAXT;
    if (n < 2) {
        pc_note(p, "one stream only: nothing runs at once (add a stream "
                "name to check the thread contract)");
        return;
    }
    job serial[MAXT], par[MAXT];
    char l[256];
    pc_doing("running each stream's program alone, one after another");
    seed_all(p);
    for (size_t i = 0; i < n; i++) {
        serial[i] = (job){.p = p, .s = p->s[i]};
        program(&serial[i]);
        if (serial[i].rc) {
            pc_fail(p, "%s on %s failed: %s", serial[i].what,
                    pc_label(p->s[i], l, sizeof l),
                    rngsnap_error_name(serial[i].rc));
            return;
        }
    }
    pc_doing("running every stream's program at once, one thread each");
    seed_all(p);
    pthread_barrier_t start;
    pthread_barrier_init(&start, NULL, (unsigned)n);
    pthread_t t[MAXT];
    size_t started = 0;
    for (size_t i = 0; i < n; i++) {
        par[i] = (job){.p = p, .s = p->s[i], .start = &start};
        if (pthread_create(&t[i], NULL, program, &par[i]) != 0)
            break;
        started++;
    }
    if (started < n) {
        /* Cannot release the barrier: the threads wait forever. */
        pc_config_error("could not start %zu threads", n);
    }
    for (size_t i = 0; i < n; i++)
        pthread_join(t[i], NULL);
    pthread_barrier_destroy(&start);
    pc_doing(NULL);
    for (size_t i = 0; i < n; i++) {
        pc_label(p->s[i], l, sizeof l);
        if (par[i].rc)
            pc_fail(p, "%s on %s failed while other streams drew at the "
                    "same time (it did not alone): %s", par[i].what, l,
                    rngsnap_error_name(par[i].rc));
        else if (par[i].digest != serial[i].digest)
            pc_fail(p, "%s drew other values while the other %zu streams "
                    "drew at the same time: keep per-stream state in the "
                    "stream, and lock what the streams share in the "
                    "backend context", l, n - 1);
        else
            continue;
        return;
    }
}
