/*
 * mpi_state.h - the known states the mpirun tests save and check: a
 * "generation" g puts every stream of a rank at a position that depends
 * on (g, rank, stream) and fills three app states, so a new job can
 * rebuild the expected state independently of any checkpoint and
 * compare bit for bit.
 */
#ifndef RNGSNAP_TEST_MPI_STATE_H
#define RNGSNAP_TEST_MPI_STATE_H

#include <rngsnap.h>
#include <stddef.h>
#include <stdint.h>

#define APP_MAX 4096

/* One app state: its live bytes and the failure/kill switches. */
typedef struct app_state {
    const char *name;
    unsigned char buf[APP_MAX];
    size_t len;
    int fail_load;  /* load() returns 1 (injected app failure)            */
    int kill_save;  /* save() raises SIGKILL (a kill mid rank-file write) */
    int armed;      /* 1 only during a real save (load backs up via save) */
} app_state;

/* "marker" (g and rank: tells which checkpoint a job loaded), "blob"
 * (per-rank size and bytes), "shared" (same bytes on every rank). */
enum { APP_MARKER, APP_BLOB, APP_SHARED, APP_COUNT };

extern app_state apps[APP_COUNT];

/* Expected bytes of app state a at generation g on rank. */
void app_expected(int a, uint64_t g, int rank, unsigned char *out, size_t *len);
/* Register app states: all three, or only "shared" (fork jobs). */
int apps_register(rngsnap *ctx, int shared_only);
/* Set the live app states to generation g. */
void apps_set(uint64_t g, int rank);
/* Generation read back from the live "marker" (UINT64_MAX if unreadable). */
uint64_t apps_marker(int rank);

/* Seed and advance every stream of ctx to generation g's positions. */
int streams_set(rngsnap *ctx, uint64_t g);

/* 0 when ctx's streams equal ref's: same positions, and the next draws of
 * several dists bit-equal (both contexts advance).  Else 1 and a reason. */
int streams_compare(rngsnap *ctx, rngsnap *ref, char *why, size_t whylen);

/* Positions of every stream, to show that a failed load changed nothing. */
int positions_get(rngsnap *ctx, rngsnap_philox *out, size_t max, size_t *n);

#endif
