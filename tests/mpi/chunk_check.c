/*
 * chunk_check.c - librngsnap_mpi's splitting of long buffers (MPI counts
 * are int): the adapter's source built with pieces of 3 bytes, its
 * send/receive (from a given rank and from any) and broadcast checked
 * byte for byte on every rank for lengths 0..40, then a save and load
 * through it compared position for position.
 */
#define RNGSNAP_MPI_CHUNK_MAX 3
#include "../../mpi/rngsnap_mpi.c"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static unsigned char byte_of(int rank, size_t i, size_t len)
{
    return (unsigned char)(rank * 31 + (int)i * 7 + (int)len * 3 + 1);
}

int main(int argc, char **argv)
{
    int rank, world, bad = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &world);
    mpi_user u = {MPI_COMM_WORLD, MPI_COMM_NULL, NULL};
    unsigned char send[40], recv[41], buf[40];
    int next = (rank + 1) % world, prev = (rank + world - 1) % world;
    for (size_t len = 0; len <= 40; len++) {
        /* a ring: each rank sends to the next, receives from the one
         * before it, by its rank for even lengths and from any for odd */
        for (size_t i = 0; i < len; i++)
            send[i] = byte_of(rank, i, len);
        memset(recv, 0xee, sizeof recv);
        int from = -1;
        if (rank % 2 == 0 && mpi_send(&u, send, len, next))
            bad = fprintf(stderr, "rank %d: send len %zu failed\n", rank, len);
        if (mpi_recv(&u, recv, len, len % 2 ? -1 : prev, &from) || from != prev)
            bad = fprintf(stderr, "rank %d: recv len %zu failed (from %d)\n",
                          rank, len, from);
        if (rank % 2 == 1 && mpi_send(&u, send, len, next))
            bad = fprintf(stderr, "rank %d: send len %zu failed\n", rank, len);
        for (size_t i = 0; i < len; i++)
            if (recv[i] != byte_of(prev, i, len))
                bad = fprintf(stderr, "rank %d: recv len %zu: byte %zu wrong\n",
                              rank, len, i);
        if (recv[len] != 0xee)
            bad = fprintf(stderr, "rank %d: recv len %zu wrote past the end\n",
                          rank, len);
        int root = (int)(len % (size_t)world);
        for (size_t i = 0; i < len; i++)
            buf[i] = rank == root ? byte_of(root, i, len) : 0;
        if (mpi_broadcast(&u, buf, len, root))
            bad = fprintf(stderr, "rank %d: broadcast len %zu failed\n", rank, len);
        for (size_t i = 0; i < len; i++)
            if (buf[i] != byte_of(root, i, len))
                bad = fprintf(stderr, "rank %d: broadcast len %zu byte %zu wrong\n",
                              rank, len, i);
    }
    /* A whole save and load with every collective in 3-byte pieces. */
    rngsnap *ctx = NULL;
    rngsnap_philox a[256], b[256];
    size_t n = 0;
    if (rngsnap_open(&ctx, getenv("RNGSNAP_MPI_INI"), 0)
        || rngsnap_seed_all(ctx, 77)) {
        fprintf(stderr, "rank %d: open/seed: %s\n", rank, rngsnap_errmsg(ctx));
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    n = rngsnap_stream_count(ctx);
    for (size_t i = 0; i < n && i < 256; i++) {
        uint32_t w[5];
        rngsnap_generate(rngsnap_stream_at(ctx, i), RNGSNAP_U32, w, 1 + i % 5);
        rngsnap_stream_position(rngsnap_stream_at(ctx, i), &a[i]);
    }
    int rc = rngsnap_mpi_save(ctx, MPI_COMM_WORLD, argv[1], RNGSNAP_SAVE_REPLACE);
    if (rc)
        bad = fprintf(stderr, "rank %d: save: %s\n", rank, rngsnap_errmsg(ctx));
    rngsnap_seed_all(ctx, 78);
    rc = rngsnap_mpi_load(ctx, MPI_COMM_WORLD, argv[1], 0);
    if (rc)
        bad = fprintf(stderr, "rank %d: load: %s\n", rank, rngsnap_errmsg(ctx));
    for (size_t i = 0; i < n && i < 256; i++) {
        rngsnap_stream_position(rngsnap_stream_at(ctx, i), &b[i]);
        if (memcmp(&a[i], &b[i], sizeof a[i]))
            bad = fprintf(stderr, "rank %d: stream %zu not restored\n", rank, i);
    }
    rngsnap_close(ctx);
    int any = 0;
    MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (rank == 0)
        printf("chunked collectives and save/load on %d ranks: %s\n", world,
               any ? "FAILED" : "ok");
    MPI_Finalize();
    return any != 0;
}
