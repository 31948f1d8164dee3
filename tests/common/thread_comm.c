/*
 * thread_comm.c - the in-process communicator of thread_comm.h.
 *
 * Collectives without a shared buffer: each rank publishes a pointer to
 * its bytes, all meet at a barrier, each copies what it needs, and all
 * meet again before anyone may reuse (or free) its bytes.
 */
#include "thread_comm.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

typedef struct shared {
    int n;
    pthread_barrier_t bar;
    const void **slot; /* slot[r]: rank r's bytes for this call */
    thread_comm_body body;
    void *arg;
    int fail_call, fail_rc;
} shared;

typedef struct rank_ctx {
    shared *sh;
    int rank, calls, result;
    rngsnap_comm comm;
} rank_ctx;

static int fail_call = -1, fail_rc;

void thread_comm_fail(int call, int rc)
{
    fail_call = call;
    fail_rc = rc;
}

static int injected(rank_ctx *r)
{
    return r->calls++ == r->sh->fail_call;
}

static int tc_allgather(void *user, const void *send, void *recv, size_t len)
{
    rank_ctx *r = user;
    shared *sh = r->sh;
    if (injected(r))
        return sh->fail_rc;
    sh->slot[r->rank] = send;
    pthread_barrier_wait(&sh->bar);
    for (int k = 0; k < sh->n; k++)
        memcpy((char *)recv + (size_t)k * len, sh->slot[k], len);
    pthread_barrier_wait(&sh->bar);
    return 0;
}

static int tc_broadcast(void *user, void *buf, size_t len, int root)
{
    rank_ctx *r = user;
    shared *sh = r->sh;
    if (injected(r))
        return sh->fail_rc;
    if (r->rank == root)
        sh->slot[root] = buf;
    pthread_barrier_wait(&sh->bar);
    if (r->rank != root)
        memcpy(buf, sh->slot[root], len);
    pthread_barrier_wait(&sh->bar);
    return 0;
}

static void *run_one(void *p)
{
    rank_ctx *r = p;
    r->result = r->sh->body(r->rank, &r->comm, r->sh->arg);
    return NULL;
}

int thread_comm_run(int nranks, thread_comm_body body, void *arg)
{
    if (nranks < 1 || nranks > 1024 || !body)
        return -1;
    shared sh = {.n = nranks, .body = body, .arg = arg,
                 .fail_call = fail_call, .fail_rc = fail_rc};
    fail_call = -1;
    rank_ctx *rs = calloc((size_t)nranks, sizeof *rs);
    pthread_t *th = calloc((size_t)nranks, sizeof *th);
    sh.slot = calloc((size_t)nranks, sizeof *sh.slot);
    if (!rs || !th || !sh.slot
        || pthread_barrier_init(&sh.bar, NULL, (unsigned)nranks) != 0) {
        free(rs);
        free(th);
        free(sh.slot);
        return -1;
    }
    int started = 0, rc = 0;
    for (int k = 0; k < nranks; k++) {
        rs[k].sh = &sh;
        rs[k].rank = k;
        rs[k].comm = (rngsnap_comm){.rank = k, .size = nranks,
                                    .user = &rs[k],
                                    .allgather = tc_allgather,
                                    .broadcast = tc_broadcast};
    }
    for (; started < nranks; started++)
        if (pthread_create(&th[started], NULL, run_one, &rs[started]) != 0)
            break;
    /* A thread that did not start would leave the others waiting at the
     * barrier: that is a broken test machine, so give up loudly. */
    if (started < nranks)
        abort();
    for (int k = 0; k < nranks; k++)
        pthread_join(th[k], NULL);
    for (int k = 0; k < nranks && !rc; k++)
        rc = rs[k].result;
    pthread_barrier_destroy(&sh.bar);
    free(rs);
    free(th);
    free(sh.slot);
    return rc;
}
