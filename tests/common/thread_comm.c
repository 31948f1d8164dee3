/*
 * thread_comm.c - the in-process communicator of thread_comm.h.
 *
 * The broadcast without a shared buffer: the root publishes a pointer to
 * its bytes, all meet at a barrier, each copies, and all meet again
 * before the root may reuse (or free) them.  Point-to-point messages go
 * through a mailbox per rank: send copies into the receiver's list,
 * recv takes the first message from the rank asked for (or any).
 */
#include "thread_comm.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

typedef struct message {
    struct message *next;
    int from;
    size_t len;
    unsigned char data[];
} message;

typedef struct mailbox {
    pthread_mutex_t mu;
    pthread_cond_t arrived;
    message *head, *tail;
} mailbox;

typedef struct shared {
    int n;
    pthread_barrier_t bar;
    const void **slot; /* slot[root]: the root's bytes for a broadcast */
    mailbox *boxes;    /* boxes[r]: messages sent to rank r            */
    thread_comm_body body;
    void *arg;
    int fail_call, fail_rc;
} shared;

typedef struct rank_ctx {
    shared *sh;
    int rank, calls, result;
    size_t received; /* bytes this rank received (recv and broadcast) */
    int *node; /* this rank's node: the ranks of its group */
    rngsnap_comm comm;
} rank_ctx;

static int fail_call = -1, fail_rc, ranks_per_node;
static size_t received[1024]; /* of the last run, per rank */

size_t thread_comm_received(int rank)
{
    return rank >= 0 && rank < 1024 ? received[rank] : 0;
}

void thread_comm_fail(int call, int rc)
{
    fail_call = call;
    fail_rc = rc;
}

void thread_comm_nodes(int per_node)
{
    ranks_per_node = per_node;
}

static int injected(rank_ctx *r)
{
    return r->calls++ == r->sh->fail_call;
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
    if (r->rank != root) {
        memcpy(buf, sh->slot[root], len);
        r->received += len;
    }
    pthread_barrier_wait(&sh->bar);
    return 0;
}

static int tc_send(void *user, const void *buf, size_t len, int dest)
{
    rank_ctx *r = user;
    if (dest < 0 || dest >= r->sh->n)
        return 1;
    message *m = malloc(sizeof *m + len);
    if (!m)
        return 1;
    m->next = NULL;
    m->from = r->rank;
    m->len = len;
    memcpy(m->data, buf, len);
    mailbox *b = &r->sh->boxes[dest];
    pthread_mutex_lock(&b->mu);
    if (b->tail)
        b->tail->next = m;
    else
        b->head = m;
    b->tail = m;
    pthread_cond_broadcast(&b->arrived);
    pthread_mutex_unlock(&b->mu);
    return 0;
}

/* The first message from src (any rank: -1), waiting for one; a message
 * of another length than len is an error, as MPI's truncation is. */
static int tc_recv(void *user, void *buf, size_t len, int src, int *from)
{
    rank_ctx *r = user;
    mailbox *b = &r->sh->boxes[r->rank];
    pthread_mutex_lock(&b->mu);
    for (;;) {
        message *prev = NULL, *m = b->head;
        while (m && src >= 0 && m->from != src) {
            prev = m;
            m = m->next;
        }
        if (m) {
            if (prev)
                prev->next = m->next;
            else
                b->head = m->next;
            if (b->tail == m)
                b->tail = prev;
            pthread_mutex_unlock(&b->mu);
            int bad = m->len != len;
            if (!bad)
                memcpy(buf, m->data, len);
            r->received += m->len;
            *from = m->from;
            free(m);
            return bad;
        }
        pthread_cond_wait(&b->arrived, &b->mu);
    }
}

static void free_boxes(shared *sh)
{
    for (int k = 0; sh->boxes && k < sh->n; k++) {
        for (message *m = sh->boxes[k].head, *next; m; m = next) {
            next = m->next;
            free(m);
        }
        pthread_mutex_destroy(&sh->boxes[k].mu);
        pthread_cond_destroy(&sh->boxes[k].arrived);
    }
    free(sh->boxes);
}

/* Rank k's node: groups of per consecutive ranks (0: all ranks), or
 * with per < 0 the ranks congruent to k modulo -per (round-robin, as
 * MPI's --map-by node places them). */
static int *make_node(int k, int n, int per, int *size)
{
    if (per < 0) {
        int m = -per, count = 0;
        int *node = malloc((size_t)n * sizeof *node);
        for (int r = k % m; node && r < n; r += m)
            node[count++] = r;
        *size = count;
        return node;
    }
    int first = per > 0 ? k - k % per : 0;
    int count = per > 0 && n - first > per ? per : n - first;
    int *node = malloc((size_t)count * sizeof *node);
    for (int i = 0; node && i < count; i++)
        node[i] = first + i;
    *size = count;
    return node;
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
    sh.boxes = calloc((size_t)nranks, sizeof *sh.boxes);
    if (!rs || !th || !sh.slot || !sh.boxes
        || pthread_barrier_init(&sh.bar, NULL, (unsigned)nranks) != 0) {
        free(rs);
        free(th);
        free(sh.slot);
        free(sh.boxes);
        return -1;
    }
    for (int k = 0; k < nranks; k++) {
        pthread_mutex_init(&sh.boxes[k].mu, NULL);
        pthread_cond_init(&sh.boxes[k].arrived, NULL);
    }
    int started = 0, rc = 0;
    for (int k = 0; k < nranks; k++) {
        int size = 0;
        rs[k].sh = &sh;
        rs[k].rank = k;
        rs[k].node = make_node(k, nranks, ranks_per_node, &size);
        if (!rs[k].node)
            abort(); /* a broken test machine */
        rs[k].comm = (rngsnap_comm){.rank = k, .size = nranks,
                                    .user = &rs[k],
                                    .broadcast = tc_broadcast,
                                    .send = tc_send, .recv = tc_recv,
                                    .node_size = size,
                                    .node_ranks = rs[k].node};
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
    for (int k = 0; k < nranks; k++)
        received[k] = rs[k].received;
    pthread_barrier_destroy(&sh.bar);
    free_boxes(&sh);
    for (int k = 0; k < nranks; k++)
        free(rs[k].node);
    free(rs);
    free(th);
    free(sh.slot);
    return rc;
}
