/*
 * ranks_net.c - the node layout and message patterns of ranks_net.h,
 * over the caller's rngsnap_comm (send, recv, broadcast).
 *
 * A block travels as two messages: its length (8 bytes, little-endian
 * as the host is: both ends are one job on one kind of machine), then
 * its bytes when there are any.
 */
#include "ranks_net.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "context.h"
#include "internal.h"

/* Room for rank 0's payload in a verdict (load: the manifest's summary). */
#define VERDICT_PAYLOAD_MAX 256u

/* ---- layout ---------------------------------------------------------------- */

/* RNGSNAP_RANKS_PER_NODE: 0 when unset, -1 when not a positive number. */
static long ranks_per_node_env(void)
{
    const char *v = getenv("RNGSNAP_RANKS_PER_NODE");
    if (!v || !*v)
        return 0;
    char *end;
    errno = 0;
    long n = strtol(v, &end, 10);
    if (errno || *end || n < 1 || n > (1L << 20))
        return -1;
    return n;
}

static int emulate_nodes(rs_net *n, long per)
{
    const char *no = getenv("RNGSNAP_NO_EMULATION");
    if (no && *no && strcmp(no, "0") != 0)
        return rs_error(n->ctx, RNGSNAP_E_INVALID,
                        "%s %s: RNGSNAP_RANKS_PER_NODE=%ld emulates nodes, "
                        "and RNGSNAP_NO_EMULATION is set: unset one of them",
                        n->op, n->dir, per);
    int first = n->rank - (int)(n->rank % per);
    int count = n->size - first < per ? n->size - first : (int)per;
    n->owned = malloc((size_t)count * sizeof *n->owned);
    if (!n->owned)
        return rs_error(n->ctx, RNGSNAP_E_NOMEM, "%s %s: out of memory",
                        n->op, n->dir);
    for (int i = 0; i < count; i++)
        n->owned[i] = first + i;
    n->node = n->owned;
    n->node_size = count;
    n->emulated = (uint32_t)per;
    if (n->rank == 0)
        rs_log(n->ctx, RNGSNAP_LOG_WARN,
               "%s %s: nodes are emulated: RNGSNAP_RANKS_PER_NODE=%ld "
               "groups consecutive ranks (a test aid; the checkpoint "
               "records it)", n->op, n->dir, per);
    return RNGSNAP_OK;
}

/* The comm's own node list: ascending, in range, this rank in it. */
static int comm_nodes(rs_net *n)
{
    const rngsnap_comm *c = n->c;
    int ok = c->node_size >= 1 && c->node_size <= c->size && c->node_ranks;
    int mine = 0;
    for (int i = 0; ok && i < c->node_size; i++) {
        int r = c->node_ranks[i];
        ok = r >= 0 && r < c->size && (i == 0 || r > c->node_ranks[i - 1]);
        mine |= r == c->rank;
    }
    if (!ok || !mine)
        return rs_error(n->ctx, RNGSNAP_E_INVALID,
                        "%s %s: the communicator's node of rank %d (%d "
                        "ranks in node_ranks) is not a list of ranks of "
                        "0..%d in ascending order holding this rank",
                        n->op, n->dir, c->rank, c->node_size, c->size - 1);
    n->node = c->node_ranks;
    n->node_size = c->node_size;
    return RNGSNAP_OK;
}

int rs_net_open(rs_net *n, struct rngsnap *ctx, const rngsnap_comm *c,
                const char *op, const char *dir, int per_rank)
{
    memset(n, 0, sizeof *n);
    n->ctx = ctx;
    n->c = c;
    n->op = op;
    n->dir = dir;
    n->rank = c->rank;
    n->size = c->size;
    int rc;
    long per = ranks_per_node_env();
    if (per_rank) {
        n->node = &n->rank;
        n->node_size = 1;
        rc = RNGSNAP_OK;
    } else if (per < 0) {
        rc = rs_error(ctx, RNGSNAP_E_INVALID,
                      "%s %s: RNGSNAP_RANKS_PER_NODE=%s is not a number of "
                      "ranks from 1 to %d", op, dir,
                      getenv("RNGSNAP_RANKS_PER_NODE"), 1 << 20);
    } else if (per > 0) {
        rc = emulate_nodes(n, per);
    } else {
        rc = comm_nodes(n);
    }
    if (rc == RNGSNAP_OK)
        n->leader = n->node[0];
    return rc;
}

void rs_net_close(rs_net *n)
{
    free(n->owned);
    free(n->leaders);
    n->owned = NULL;
    n->leaders = NULL;
}

void rs_blocks_free(rs_block *b, size_t count)
{
    if (!b)
        return;
    for (size_t i = 0; i < count; i++)
        free(b[i].data);
    free(b);
}

/* ---- messages ---------------------------------------------------------- */

static int broke(rs_net *n, const char *what, int peer, int x)
{
    n->comm_broke = 1;
    return rs_error(n->ctx, RNGSNAP_E_BACKEND,
                    "%s %s: communicator %s rank %d failed (returned %d)",
                    n->op, n->dir, what, peer, x);
}

static int send_raw(rs_net *n, int dest, const void *buf, size_t len)
{
    int x = n->c->send(n->c->user, buf, len, dest);
    return x ? broke(n, "send to", dest, x) : RNGSNAP_OK;
}

/* src -1: any rank; *from gets the sender. */
static int recv_raw(rs_net *n, int src, void *buf, size_t len, int *from)
{
    int who = -1;
    int x = n->c->recv(n->c->user, buf, len, src, &who);
    if (x)
        return broke(n, "receive from", src, x);
    if (who < 0 || who >= n->size || (src >= 0 && who != src))
        return broke(n, "receive (wrong sender) from", who, -1);
    *from = who;
    return RNGSNAP_OK;
}

static int send_block(rs_net *n, int dest, const void *data, size_t len)
{
    uint64_t l = len;
    int rc = send_raw(n, dest, &l, sizeof l);
    if (!rc && len)
        rc = send_raw(n, dest, data, len);
    return rc;
}

static int recv_block(rs_net *n, int src, rs_block *b)
{
    uint64_t l = 0;
    int from = -1;
    memset(b, 0, sizeof *b);
    int rc = recv_raw(n, src, &l, sizeof l, &from);
    if (rc)
        return rc;
    b->from = from;
    b->len = (size_t)l;
    if (!l)
        return RNGSNAP_OK;
    /* The sender goes on either way: a rank that cannot take the bytes
     * leaves the job out of step, like a failed collective. */
    if (!(b->data = malloc(b->len))) {
        n->comm_broke = 1;
        return rs_error(n->ctx, RNGSNAP_E_NOMEM,
                        "%s %s: out of memory for %zu bytes from rank %d; "
                        "the other ranks cannot go on",
                        n->op, n->dir, b->len, from);
    }
    return recv_raw(n, from, b->data, b->len, &from);
}

static int copy_block(rs_net *n, const void *data, size_t len, rs_block *b)
{
    b->from = n->rank;
    b->len = len;
    b->data = NULL;
    if (!len)
        return RNGSNAP_OK;
    if (!(b->data = malloc(len)))
        return rs_error(n->ctx, RNGSNAP_E_NOMEM, "%s %s: out of memory",
                        n->op, n->dir);
    memcpy(b->data, data, len);
    return RNGSNAP_OK;
}

/* ---- agree ------------------------------------------------------------- */

/* What travels up: the lowest failing rank below (or -1) and its code,
 * how many ranks the sender speaks for, and the sender's leader. */
typedef struct vote {
    int32_t code, first, count, leader;
} vote;

static void fold(vote *into, const vote *v)
{
    if (v->first >= 0 && (into->first < 0 || v->first < into->first)) {
        into->first = v->first;
        into->code = v->code;
    }
    into->count += v->count;
}

/* A leader: its node's votes into one.  A member naming another leader
 * means the ranks disagree on the layout: refused here. */
static int collect_node(rs_net *n, vote *v)
{
    int bad = -1;
    for (int i = 1; i < n->node_size; i++) {
        vote m;
        int from = -1, rc = recv_raw(n, n->node[i], &m, sizeof m, &from);
        if (rc)
            return rc;
        if (m.leader != n->rank && bad < 0)
            bad = from;
        fold(v, &m);
    }
    if (bad >= 0) {
        vote mine = {rs_error(n->ctx, RNGSNAP_E_INVALID,
                              "%s %s: rank %d counts rank %d in its node, "
                              "but rank %d names another leader: the "
                              "communicator's node_ranks differ between "
                              "ranks", n->op, n->dir, n->rank, bad, bad),
                     n->rank, 0, n->rank};
        fold(v, &mine);
    }
    return RNGSNAP_OK;
}

static int learn_leader(rs_net *n, int leader)
{
    int *l = realloc(n->leaders, (n->nleaders + 1) * sizeof *l);
    if (!l)
        return rs_error(n->ctx, RNGSNAP_E_NOMEM, "%s %s: out of memory",
                        n->op, n->dir);
    n->leaders = l;
    size_t i = n->nleaders++;
    while (i > 0 && l[i - 1] > leader) { /* keep them ascending */
        l[i] = l[i - 1];
        i--;
    }
    l[i] = leader;
    return RNGSNAP_OK;
}

/* Rank 0: the other leaders' votes, from any rank, until every rank is
 * counted. */
static int collect_leaders(rs_net *n, vote *v)
{
    int learn = n->nleaders == 0;
    if (learn && learn_leader(n, 0))
        return RNGSNAP_E_NOMEM;
    while (v->count < n->size) {
        vote m;
        int from = -1, rc = recv_raw(n, -1, &m, sizeof m, &from);
        if (rc)
            return rc;
        if (learn && learn_leader(n, from))
            return RNGSNAP_E_NOMEM;
        fold(v, &m);
    }
    if (v->count > n->size) {
        vote mine = {rs_error(n->ctx, RNGSNAP_E_INVALID,
                              "%s %s: the leaders' nodes hold %d ranks in "
                              "all, the job has %d: the communicator's "
                              "node_ranks overlap", n->op, n->dir,
                              (int)v->count, n->size),
                     0, 0, 0};
        fold(v, &mine);
    }
    return RNGSNAP_OK;
}

int rs_net_agree(rs_net *n, int rc, void *root_payload, size_t plen)
{
    if (plen > VERDICT_PAYLOAD_MAX)
        return rs_error(n->ctx, RNGSNAP_E_INVALID, "%s: verdict payload "
                        "of %zu bytes", n->op, plen);
    vote v = {rc, rc ? n->rank : -1, 1, n->leader};
    int x = RNGSNAP_OK;
    if (n->leader == n->rank)
        x = collect_node(n, &v);
    if (!x && n->rank == 0)
        x = collect_leaders(n, &v);
    else if (!x)
        x = send_raw(n, n->leader == n->rank ? 0 : n->leader, &v, sizeof v);
    if (x)
        return x;
    /* The verdict, with rank 0's payload. */
    uint8_t verdict[8 + VERDICT_PAYLOAD_MAX] = {0};
    if (n->rank == 0) {
        memcpy(verdict, &v.code, 4);
        memcpy(verdict + 4, &v.first, 4);
        if (plen && v.first < 0)
            memcpy(verdict + 8, root_payload, plen);
    }
    x = n->c->broadcast(n->c->user, verdict, 8 + plen, 0);
    if (x)
        return broke(n, "broadcast from", 0, x);
    int32_t code, first;
    memcpy(&code, verdict, 4);
    memcpy(&first, verdict + 4, 4);
    if (first < 0) {
        if (plen && n->rank != 0)
            memcpy(root_payload, verdict + 8, plen);
        return RNGSNAP_OK;
    }
    char msg[RS_ERRMSG_MAX];
    if (n->rank == first)
        snprintf(msg, sizeof msg, "%s", rngsnap_errmsg(n->ctx));
    x = n->c->broadcast(n->c->user, msg, sizeof msg, first);
    if (x) {
        n->comm_broke = 1;
        return rs_error(n->ctx, RNGSNAP_E_BACKEND,
                        "%s %s: communicator broadcast failed (returned %d) "
                        "after rank %d failed with code %d",
                        n->op, n->dir, x, first, code);
    }
    msg[sizeof msg - 1] = 0; /* never trust a peer's bytes to end */
    if (code < RNGSNAP_E_CONFIG || code > RNGSNAP_E_DURABILITY)
        code = RNGSNAP_E_BACKEND;
    return rs_error(n->ctx, code, "rank %d of %d: %s", first, n->size, msg);
}

/* ---- blocks ------------------------------------------------------------ */

int rs_net_to_leader(rs_net *n, const void *mine, size_t len, rs_block **out)
{
    *out = NULL;
    if (n->leader != n->rank)
        return send_block(n, n->leader, mine, len);
    rs_block *b = calloc((size_t)n->node_size, sizeof *b);
    if (!b) {
        n->comm_broke = 1;
        return rs_error(n->ctx, RNGSNAP_E_NOMEM, "%s %s: out of memory",
                        n->op, n->dir);
    }
    int rc = copy_block(n, mine, len, &b[0]);
    for (int i = 1; i < n->node_size && !rc; i++)
        rc = recv_block(n, n->node[i], &b[i]);
    if (rc) {
        n->comm_broke = 1; /* members' bytes may be left unreceived */
        rs_blocks_free(b, (size_t)n->node_size);
        return rc;
    }
    *out = b;
    return RNGSNAP_OK;
}

int rs_net_to_root(rs_net *n, const void *mine, size_t len, rs_block **out)
{
    *out = NULL;
    if (n->leader != n->rank)
        return RNGSNAP_OK;
    if (n->rank != 0)
        return send_block(n, 0, mine, len);
    rs_block *b = calloc(n->nleaders, sizeof *b);
    if (!b) {
        n->comm_broke = 1;
        return rs_error(n->ctx, RNGSNAP_E_NOMEM, "%s %s: out of memory",
                        n->op, n->dir);
    }
    int rc = copy_block(n, mine, len, &b[0]);
    for (size_t i = 1; i < n->nleaders && !rc; i++)
        rc = recv_block(n, n->leaders[i], &b[i]);
    if (rc) {
        n->comm_broke = 1;
        rs_blocks_free(b, n->nleaders);
        return rc;
    }
    *out = b;
    return RNGSNAP_OK;
}

int rs_net_from_root(rs_net *n, const rs_block *blocks, rs_block *mine)
{
    memset(mine, 0, sizeof *mine);
    if (n->leader != n->rank)
        return RNGSNAP_OK;
    if (n->rank != 0)
        return recv_block(n, 0, mine);
    int rc = RNGSNAP_OK;
    for (size_t i = 1; i < n->nleaders && !rc; i++)
        rc = send_block(n, n->leaders[i], blocks[i].data, blocks[i].len);
    return rc ? rc : copy_block(n, blocks[0].data, blocks[0].len, mine);
}

int rs_net_from_leader(rs_net *n, const rs_block *blocks, rs_block *mine)
{
    memset(mine, 0, sizeof *mine);
    if (n->leader != n->rank)
        return recv_block(n, n->leader, mine);
    int rc = RNGSNAP_OK;
    for (int i = 1; i < n->node_size && !rc; i++)
        rc = send_block(n, n->node[i], blocks[i].data, blocks[i].len);
    return rc ? rc : copy_block(n, blocks[0].data, blocks[0].len, mine);
}
