/*
 * philox.h - the Philox4x32-10 engine shared by every built-in plugin.
 *
 * Word j of stream (seed, subsequence) is word j%4 of Philox4x32-10 with
 * key = (seed low, seed high) and counter = (j/4 low, j/4 high,
 * subsequence low, subsequence high): cuRAND's curand_init() numbering.
 * Conversions from words to each rngsnap_dist are documented in
 * docs/engine.md and are the same on every backend that runs this code.
 */
#ifndef RNGSNAP_PHILOX_H
#define RNGSNAP_PHILOX_H

#include <stddef.h>
#include <stdint.h>

#include <rngsnap.h>

#ifdef __cplusplus
extern "C" {
#endif

/* One block: out = Philox4x32-10(counter ctr, key). */
void philox4x32_10(const uint32_t ctr[4], const uint32_t key[2],
                   uint32_t out[4]);

/* Words of the stream that n values of dist consume. */
uint64_t philox_words_for(rngsnap_dist dist, size_t n);

/* The indivisible group of a dist: unit_words words make unit_values
 * values (U32/F32 1:1, U64/F64 2:1, NORMAL_F32 2:2, NORMAL_F64 4:2;
 * CURAND_UNIFORM_F32/F64 1:1, CURAND_NORMAL_F32 2:2, CURAND_NORMAL_F64 4:2).
 * Any split of a fill at unit boundaries gives the same values as the
 * whole fill (how the cpu plugin splits work across threads). */
unsigned philox_unit_words(rngsnap_dist dist);
unsigned philox_unit_values(rngsnap_dist dist);
/* Bytes of one value of dist (4 or 8); 0 for a bad dist. */
unsigned philox_value_size(rngsnap_dist dist);

/* Fill out with n values of dist from position *st and advance
 * st->offset by philox_words_for(dist, n).  Host memory only.
 * Returns RNGSNAP_OK or RNGSNAP_E_INVALID (bad dist). */
int philox_generate(rngsnap_philox *st, rngsnap_dist dist, void *out,
                    size_t n);

/* The last block computed for a stream, so that draws of a few values at
 * a time do not recompute it (one Philox block is ~50 cycles of latency).
 * Keyed by (seed, subsequence, block): it never needs invalidating. */
typedef struct philox_cache {
    uint64_t seed, subsequence, block;
    uint32_t w[4];
    int valid;
} philox_cache;

/* philox_generate_isa with a cache (may be NULL): fills of at most 4
 * values and 8 words come from the cached block(s); larger ones go to the
 * ISA path.  Same values and advance as philox_generate. */
int philox_generate_cached(rngsnap_philox *st, philox_cache *cache,
                           rngsnap_dist dist, void *out, size_t n, int isa);

/* The 24-byte checkpoint state (three little-endian uint64). */
void philox_state_pack(const rngsnap_philox *st, void *buf24);
void philox_state_unpack(const void *buf24, rngsnap_philox *st);

#ifdef __cplusplus
}
#endif

#endif
