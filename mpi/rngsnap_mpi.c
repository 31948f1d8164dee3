/*
 * rngsnap_mpi.c - librngsnap_mpi: an rngsnap_comm made of MPI collectives.
 *
 * The multi-rank protocol lives in the core (rngsnap_save_ranks,
 * rngsnap_load_ranks); this file only maps its two collectives onto an
 * MPI communicator the caller passes in (never MPI_COMM_WORLD assumed).
 */
#include <rngsnap/mpi.h>

#include <limits.h>
#include <stddef.h>
#include <string.h>

/* MPI counts are int: longer buffers go in pieces of at most this many
 * bytes.  A test builds this file with a tiny value to exercise the
 * splitting (tests/mpi/chunk_check.c). */
#ifndef RNGSNAP_MPI_CHUNK_MAX
#define RNGSNAP_MPI_CHUNK_MAX INT_MAX
#endif

typedef struct mpi_user {
    MPI_Comm comm;
} mpi_user;

/* Rank r's len bytes land at recv + r * len.  A piece [off, off + n) of
 * every rank's bytes is gathered in one call through a receive type of n
 * bytes whose extent is len, so no staging buffer is needed. */
static int mpi_allgather(void *user, const void *send, void *recv, size_t len)
{
    MPI_Comm comm = ((mpi_user *)user)->comm;
    if (len <= (size_t)RNGSNAP_MPI_CHUNK_MAX)
        return MPI_Allgather(send, (int)len, MPI_BYTE, recv, (int)len,
                             MPI_BYTE, comm) != MPI_SUCCESS;
    if (len > (size_t)PTRDIFF_MAX)
        return 1; /* same len on every rank: every rank refuses alike */
    for (size_t off = 0; off < len;) {
        size_t n = len - off;
        if (n > (size_t)RNGSNAP_MPI_CHUNK_MAX)
            n = (size_t)RNGSNAP_MPI_CHUNK_MAX;
        MPI_Datatype piece, strided;
        if (MPI_Type_contiguous((int)n, MPI_BYTE, &piece) != MPI_SUCCESS)
            return 1;
        int rc = MPI_Type_create_resized(piece, 0, (MPI_Aint)len, &strided);
        MPI_Type_free(&piece);
        if (rc != MPI_SUCCESS)
            return 1;
        rc = MPI_Type_commit(&strided);
        if (rc == MPI_SUCCESS)
            rc = MPI_Allgather((const char *)send + off, (int)n, MPI_BYTE,
                               (char *)recv + off, 1, strided, comm);
        MPI_Type_free(&strided);
        if (rc != MPI_SUCCESS)
            return 1;
        off += n;
    }
    return 0;
}

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

/* Fill out from comm.  When MPI is not usable, comm is MPI_COMM_NULL or
 * comm is an inter-communicator (its allgather gathers the other group's
 * bytes, not this job's ranks'), out->unusable says which, and the core
 * refuses on this rank alone with that text.  Each of these is the same
 * on every rank that passes the same comm. */
static void mpi_comm_fill(MPI_Comm comm, mpi_user *u, rngsnap_comm *out)
{
    int init = 0, fini = 0, inter = 0;
    memset(out, 0, sizeof *out);
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
    if (out->unusable)
        return;
    u->comm = comm;
    out->user = u;
    out->allgather = mpi_allgather;
    out->broadcast = mpi_broadcast;
}

int rngsnap_mpi_save(rngsnap *ctx, MPI_Comm comm, const char *dir, unsigned flags)
{
    mpi_user u;
    rngsnap_comm c;
    mpi_comm_fill(comm, &u, &c);
    return rngsnap_save_ranks(ctx, &c, dir, flags);
}

int rngsnap_mpi_load(rngsnap *ctx, MPI_Comm comm, const char *dir, unsigned flags)
{
    mpi_user u;
    rngsnap_comm c;
    mpi_comm_fill(comm, &u, &c);
    return rngsnap_load_ranks(ctx, &c, dir, flags);
}
