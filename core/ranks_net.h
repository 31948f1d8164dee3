/*
 * ranks_net.h - how the ranks of a multi-rank save or load talk: the
 * node layout, and the few message patterns ranks.c builds on.  Each
 * pattern moves at most O(ranks on a node) bytes to a leader and
 * O(ranks) bytes to rank 0 in total; every other rank gets O(1) bytes
 * (docs/user-guide.md, "Multi-rank checkpoints").
 *
 * Why the order of messages is safe without tags: messages between two
 * ranks arrive in the order sent, and rank 0 receives from "any rank"
 * only in rs_net_agree, whose messages all have one size, and every
 * rs_net_agree ends with a broadcast from rank 0, so no rank can send
 * rank 0 its next message before rank 0 has received all of this one.
 */
#ifndef RNGSNAP_CORE_RANKS_NET_H
#define RNGSNAP_CORE_RANKS_NET_H

#include <stddef.h>
#include <stdint.h>

#include <rngsnap.h>

struct rngsnap;

typedef struct rs_net {
    struct rngsnap *ctx;
    const rngsnap_comm *c;
    const char *op;   /* "save_ranks" or "load_ranks", for messages */
    const char *dir;
    int rank, size;
    int leader;       /* global rank of this rank's node leader */
    int node_size;    /* ranks on this node                      */
    const int *node;  /* their global ranks, ascending           */
    int *owned;       /* the node list when the core made it     */
    uint32_t emulated;/* RNGSNAP_RANKS_PER_NODE, 0: real nodes   */
    /* Rank 0: the leaders, ascending, learnt by the first agree. */
    int *leaders;
    size_t nleaders;
    int comm_broke;   /* a send/recv/broadcast failed: ranks may disagree */
} rs_net;

/* A message received: bytes (malloc'ed) and who sent them. */
typedef struct rs_block {
    uint8_t *data;
    size_t len;
    int from;
} rs_block;

/* The node layout: per_rank (RNGSNAP_SAVE_PER_RANK_FILES) makes every
 * rank its own node; else RNGSNAP_RANKS_PER_NODE=N when set (nodes of N
 * consecutive ranks, logged as a test aid); else the comm's node_ranks.
 * Local checks only (RNGSNAP_E_INVALID on this rank alone, before any
 * message: every rank of a job with a bad layout refuses alike only if
 * the adapter made it so). */
int rs_net_open(rs_net *n, struct rngsnap *ctx, const rngsnap_comm *c,
                const char *op, const char *dir, int per_rank);
void rs_net_close(rs_net *n);

/* Every rank gives its code rc.  Returns 0 on every rank when every code
 * was 0; otherwise every rank gets the lowest failing rank's code and
 * "rank R of N: <its message>".  root_payload (plen bytes, may be 0) is
 * rank 0's and reaches every rank in it when the verdict is 0 (zeros on
 * failure).  The first call also tells rank 0 the leaders. */
int rs_net_agree(rs_net *n, int rc, void *root_payload, size_t plen);

/* Every rank of the node sends len bytes to its leader; the leader gets
 * node_size blocks in node order (its own copied), others nothing. */
int rs_net_to_leader(rs_net *n, const void *mine, size_t len,
                     rs_block **out);
/* Every leader sends len bytes to rank 0 (other ranks call it and do
 * nothing); rank 0 gets nleaders blocks in leader order. */
int rs_net_to_root(rs_net *n, const void *mine, size_t len, rs_block **out);
/* Rank 0 sends each leader its block (blocks[i] for leaders[i]); every
 * leader gets its own in *mine. */
int rs_net_from_root(rs_net *n, const rs_block *blocks, rs_block *mine);
/* The leader sends member i blocks[i]; every rank gets its own. */
int rs_net_from_leader(rs_net *n, const rs_block *blocks, rs_block *mine);

void rs_blocks_free(rs_block *b, size_t count);

#endif /* RNGSNAP_CORE_RANKS_NET_H */
