/*
 * rngsnap_mpi.c - librngsnap_mpi: an rngsnap_comm made of MPI collectives.
 *
 * The multi-rank protocol lives in the core (rngsnap_save_ranks,
 * rngsnap_load_ranks); this file only maps its messages (broadcast, send,
 * receive) and the node layout onto an MPI communicator the caller
 * passes in (never MPI_COMM_WORLD assumed).
 */
#include <rngsnap/mpi.h>

#include <limits.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

/* MPI counts are int: longer buffers go in pieces of at most this many
 * bytes.  A test builds this file with a tiny value to exercise the
 * splitting (tests/mpi/chunk_check.c). */
#ifndef RNGSNAP_MPI_CHUNK_MAX
#define RNGSNAP_MPI_CHUNK_MAX INT_MAX
#endif

/* One call's communicators: a duplicate of the caller's, so that
 * rngsnap's messages can never match the job's own, and the node's (the
 * ranks sharing memory with this one). */
typedef struct mpi_user {
    MPI_Comm comm, node;
    int *node_ranks;
} mpi_user;

/* A tag of our own (any would do on the private duplicate). */
#define RS_TAG 0x72736e

static int mpi_broadcast(void *user, void *buf, size_t len, int root)
{
    MPI_Comm comm = ((mpi_user *)user)->comm;
    for (size_t off = 0; off < len;) {
        size_t n = len - off;
        if (n > (size_t)RNGSNAP_MPI_CHUNK_MAX)
            n = (size_t)RNGSNAP_MPI_CHUNK_MAX;
        if (MPI_Bcast((char *)buf + off, (int)n, MPI_BYTE, root, comm)
            != MPI_SUCCESS)
            return 1;
        off += n;
    }
    return 0;
}

static int mpi_send(void *user, const void *buf, size_t len, int dest)
{
    MPI_Comm comm = ((mpi_user *)user)->comm;
    size_t off = 0;
    do { /* a zero-length message is still one message */
        size_t n = len - off;
        if (n > (size_t)RNGSNAP_MPI_CHUNK_MAX)
            n = (size_t)RNGSNAP_MPI_CHUNK_MAX;
        if (MPI_Send((const char *)buf + off, (int)n, MPI_BYTE, dest, RS_TAG,
                     comm) != MPI_SUCCESS)
            return 1;
        off += n;
    } while (off < len);
    return 0;
}

/* Exactly len bytes, in the pieces mpi_send made: the first from src (or
 * any rank), the rest from the same sender. */
static int mpi_recv(void *user, void *buf, size_t len, int src, int *from)
{
    MPI_Comm comm = ((mpi_user *)user)->comm;
    int who = src < 0 ? MPI_ANY_SOURCE : src;
    size_t off = 0;
    do {
        size_t n = len - off;
        if (n > (size_t)RNGSNAP_MPI_CHUNK_MAX)
            n = (size_t)RNGSNAP_MPI_CHUNK_MAX;
        MPI_Status st;
        int got = -1;
        if (MPI_Recv((char *)buf + off, (int)n, MPI_BYTE, who, RS_TAG, comm,
                     &st) != MPI_SUCCESS
            || MPI_Get_count(&st, MPI_BYTE, &got) != MPI_SUCCESS
            || got != (int)n)
            return 1;
        who = st.MPI_SOURCE;
        off += n;
    } while (off < len);
    *from = who;
    return 0;
}

static int by_rank(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

/* The node: MPI_Comm_split_type(MPI_COMM_TYPE_SHARED), and its members'
 * ranks in comm, ascending (an allgather inside the node only). */
static const char *node_of(mpi_user *u, rngsnap_comm *out)
{
    int size = 0;
    if (MPI_Comm_split_type(u->comm, MPI_COMM_TYPE_SHARED, out->rank,
                            MPI_INFO_NULL, &u->node) != MPI_SUCCESS
        || MPI_Comm_size(u->node, &size) != MPI_SUCCESS)
        return "MPI_Comm_split_type(MPI_COMM_TYPE_SHARED) failed";
    u->node_ranks = malloc((size_t)size * sizeof *u->node_ranks);
    if (!u->node_ranks)
        return "out of memory for the node's ranks";
    if (MPI_Allgather(&out->rank, 1, MPI_INT, u->node_ranks, 1, MPI_INT,
                      u->node) != MPI_SUCCESS)
        return "MPI_Allgather of the node's ranks failed";
    qsort(u->node_ranks, (size_t)size, sizeof *u->node_ranks, by_rank);
    out->node_size = size;
    out->node_ranks = u->node_ranks;
    return NULL;
}

/* Fill out from comm.  When MPI is not usable, comm is MPI_COMM_NULL or
 * comm is an inter-communicator (its collectives reach the other group,
 * not this job's ranks), out->unusable says which, and the core refuses
 * on this rank alone with that text.  Each of these is the same on every
 * rank that passes the same comm. */
static void mpi_comm_fill(MPI_Comm comm, mpi_user *u, rngsnap_comm *out)
{
    int init = 0, fini = 0, inter = 0;
    memset(out, 0, sizeof *out);
    u->comm = MPI_COMM_NULL;
    u->node = MPI_COMM_NULL;
    u->node_ranks = NULL;
    /* MPI may be used only between MPI_Init and MPI_Finalize; these two
     * queries are allowed at any time. */
    MPI_Initialized(&init);
    MPI_Finalized(&fini);
    if (!init)
        out->unusable = "MPI is not initialised (call MPI_Init first)";
    else if (fini)
        out->unusable = "MPI has already been finalised";
    else if (comm == MPI_COMM_NULL)
        out->unusable = "the communicator is MPI_COMM_NULL";
    else if (MPI_Comm_test_inter(comm, &inter) != MPI_SUCCESS || inter)
        out->unusable = "the communicator is an inter-communicator; pass "
                        "an intra-communicator of the job's ranks";
    else if (MPI_Comm_rank(comm, &out->rank) != MPI_SUCCESS
             || MPI_Comm_size(comm, &out->size) != MPI_SUCCESS)
        out->unusable = "MPI_Comm_rank or MPI_Comm_size failed";
    else if (MPI_Comm_dup(comm, &u->comm) != MPI_SUCCESS)
        out->unusable = "MPI_Comm_dup failed";
    else
        out->unusable = node_of(u, out);
    if (out->unusable)
        return;
    out->user = u;
    out->broadcast = mpi_broadcast;
    out->send = mpi_send;
    out->recv = mpi_recv;
}

static void mpi_comm_free(mpi_user *u)
{
    if (u->node != MPI_COMM_NULL)
        MPI_Comm_free(&u->node);
    if (u->comm != MPI_COMM_NULL)
        MPI_Comm_free(&u->comm);
    free(u->node_ranks);
}

int rngsnap_mpi_save(rngsnap *ctx, MPI_Comm comm, const char *dir, unsigned flags)
{
    mpi_user u;
    rngsnap_comm c;
    mpi_comm_fill(comm, &u, &c);
    int rc = rngsnap_save_ranks(ctx, &c, dir, flags);
    mpi_comm_free(&u);
    return rc;
}

int rngsnap_mpi_load(rngsnap *ctx, MPI_Comm comm, const char *dir, unsigned flags)
{
    mpi_user u;
    rngsnap_comm c;
    mpi_comm_fill(comm, &u, &c);
    int rc = rngsnap_load_ranks(ctx, &c, dir, flags);
    mpi_comm_free(&u);
    return rc;
}
