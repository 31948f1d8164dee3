/*
 * philox_stream.h - a host-memory Philox stream with the shape of the
 * rngsnap_backend stream members, so a plugin can put these functions
 * straight into its table.  Device plugins embed philox_stream as the
 * first member of their own stream struct.
 */
#ifndef RNGSNAP_PHILOX_STREAM_H
#define RNGSNAP_PHILOX_STREAM_H

#include <rngsnap/backend.h>

#include "philox.h"

typedef struct philox_stream {
    rngsnap_philox pos; /* next word to draw */
    int device;
    void *bctx;         /* the owning backend context */
    int isa;            /* philox_isa (philox_isa.h); 0 = auto (default) */
    philox_cache cache; /* last block, for draws of a few values */
} philox_stream;

/* Allocate a zeroed stream (seed 0, subsequence 0, offset 0). */
int philox_stream_new(void *bctx, int device, size_t struct_size,
                      void **stream);
void philox_stream_free(void *stream);
int philox_stream_seed(void *stream, uint64_t seed, uint64_t subsequence);
int philox_stream_get_state(void *stream, void *buf, size_t len);
int philox_stream_set_state(void *stream, const void *buf, size_t len);
int philox_stream_validate_state(void *bctx, const void *buf, size_t len);
int philox_stream_generate(void *stream, rngsnap_dist dist, void *out,
                           size_t n);
int philox_stream_reserve(void *stream, uint64_t n, rngsnap_philox *at);

#endif
