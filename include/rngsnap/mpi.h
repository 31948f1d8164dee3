/*
 * rngsnap/mpi.h - multi-rank checkpoints over MPI (librngsnap_mpi,
 * pkg-config rngsnap-mpi).
 *
 * A thin adapter: it fills an rngsnap_comm from a private duplicate of
 * comm (MPI_Comm_dup: rngsnap's messages never match the job's own;
 * broadcast with MPI_Bcast, send and receive with MPI_Send/MPI_Recv, the
 * node from MPI_Comm_split_type(MPI_COMM_TYPE_SHARED)) and calls
 * rngsnap_save_ranks / rngsnap_load_ranks, which hold the whole protocol
 * (docs/user-guide.md, "Multi-rank checkpoints"; the folder format is in
 * docs/format.md).  The core itself never links MPI.
 *
 * Both calls are collective over comm: every rank of comm calls them with
 * the same dir and flags, and every rank returns the same code, with a
 * message (rngsnap_errmsg) that names the first failing rank and why.
 * The context's rank and world size (rngsnap_set_rank, or the launcher's
 * variables) must equal comm's rank and size, else RNGSNAP_E_INVALID on
 * every rank, naming both.
 *
 * Not collective in one case: when MPI is not initialised (or already
 * finalised) no collective can run, so the call returns
 * RNGSNAP_E_INVALID on the calling rank alone, with a message saying
 * which, and touches nothing.
 * MPI_COMM_NULL and inter-communicators are refused the same way
 * (comm must be an intra-communicator such as MPI_COMM_WORLD or one made
 * by MPI_Comm_split).
 *
 * The collectives run on the calling thread: call from a thread that may
 * make MPI calls (the level given to MPI_Init_thread).
 *
 * Errors of MPI itself follow comm's error handler: with MPI's default
 * (MPI_ERRORS_ARE_FATAL) a failing collective aborts the job, which keeps
 * ranks from disagreeing; with MPI_ERRORS_RETURN the call fails with
 * RNGSNAP_E_BACKEND.  Buffers longer than INT_MAX bytes (MPI counts are
 * int) are sent in pieces.
 */
#ifndef RNGSNAP_MPI_H
#define RNGSNAP_MPI_H

#include <mpi.h>
#include <rngsnap.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Flags as rngsnap_save_ranks: RNGSNAP_SAVE_REPLACE, RNGSNAP_SAVE_NO_SYNC,
 * RNGSNAP_SAVE_PER_RANK_FILES. */
RNGSNAP_API int rngsnap_mpi_save(rngsnap *ctx, MPI_Comm comm, const char *dir, unsigned flags);
/* Flags as rngsnap_load_ranks: RNGSNAP_LOAD_FORK. */
RNGSNAP_API int rngsnap_mpi_load(rngsnap *ctx, MPI_Comm comm, const char *dir, unsigned flags);

#ifdef __cplusplus
}
#endif
#endif /* RNGSNAP_MPI_H */
