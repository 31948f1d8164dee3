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

/* MPI may be used only between MPI_Init and MPI_Finalize; both queries
 * are allowed at any time. */
static int mpi_usable(void)
{
    int init = 0, fini = 0;
    MPI_Initialized(&init);
    MPI_Finalized(&fini);
    return init && !fini;
}

/* Fill out from comm.  0, or RNGSNAP_E_INVALID when MPI is not usable,
 * comm is MPI_COMM_NULL, or comm is an inter-communicator (its allgather
 * gathers the other group's bytes, not this job's ranks').  Each of these
 * is the same on every rank that passes the same comm. */
static int mpi_comm_fill(MPI_Comm comm, mpi_user *u, rngsnap_comm *out)
{
    int inter = 0;
    if (!mpi_usable() || comm == MPI_COMM_NULL
        || MPI_Comm_test_inter(comm, &inter) != MPI_SUCCESS || inter)
        return RNGSNAP_E_INVALID;
    u->comm = comm;
    out->user = u;
    out->allgather = mpi_allgather;
    out->broadcast = mpi_broadcast;
    if (MPI_Comm_rank(comm, &out->rank) != MPI_SUCCESS
        || MPI_Comm_size(comm, &out->size) != MPI_SUCCESS)
        return RNGSNAP_E_INVALID;
    return 0;
}

/* MPI unusable: nothing collective can run, so refuse on this rank
 * alone.  The core's own check of an empty communicator gives the code
 * (RNGSNAP_E_INVALID) and sets the message on ctx; no public call lets an
 * adapter set a message of its own. */
static int mpi_refuse(rngsnap *ctx, int save, const char *dir, unsigned flags)
{
    rngsnap_comm none = {.rank = -1, .size = 0};
    int rc = save ? rngsnap_save_ranks(ctx, &none, dir, flags)
                  : rngsnap_load_ranks(ctx, &none, dir, flags);
    return rc ? rc : RNGSNAP_E_INVALID;
}

int rngsnap_mpi_save(rngsnap *ctx, MPI_Comm comm, const char *dir, unsigned flags)
{
    mpi_user u;
    rngsnap_comm c;
    if (mpi_comm_fill(comm, &u, &c))
        return mpi_refuse(ctx, 1, dir, flags);
    return rngsnap_save_ranks(ctx, &c, dir, flags);
}

int rngsnap_mpi_load(rngsnap *ctx, MPI_Comm comm, const char *dir, unsigned flags)
{
    mpi_user u;
    rngsnap_comm c;
    if (mpi_comm_fill(comm, &u, &c))
        return mpi_refuse(ctx, 0, dir, flags);
    return rngsnap_load_ranks(ctx, &c, dir, flags);
}
