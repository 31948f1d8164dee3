/*
 * philox_loop.h - convert whole blocks of words (4 per block) into values
 * of a distribution.  Included by every kernel file so that each compiles
 * it with its own ISA flags (gcc may vectorise it; the bits cannot change,
 * see philox_convert.h).
 */
#ifndef RNGSNAP_PHILOX_LOOP_H
#define RNGSNAP_PHILOX_LOOP_H

#include <string.h>

#include "philox_convert.h"
#include "philox_isa.h"

/* One unit of a converted dist (not U32/U64) from its words x into out. */
static inline void px_convert_unit(rngsnap_dist dist, const uint32_t *x,
                                   void *out)
{
    float *f = out;
    double *d = out;
    switch (dist) {
    case RNGSNAP_F32: f[0] = px_u32_to_f32(x[0]); break;
    case RNGSNAP_F64: d[0] = px_u64_to_f64(px_words_to_u64(x[0], x[1])); break;
    case RNGSNAP_NORMAL_F32: px_normal_f32(x[0], x[1], &f[0], &f[1]); break;
    case RNGSNAP_NORMAL_F64:
        px_normal_f64(x[0], x[1], x[2], x[3], &d[0], &d[1]);
        break;
    case RNGSNAP_CURAND_UNIFORM_F32: f[0] = px_curand_uniform(x[0]); break;
    case RNGSNAP_CURAND_UNIFORM_F64:
        d[0] = px_curand_uniform_double(x[0]);
        break;
    case RNGSNAP_CURAND_NORMAL_F32:
        px_curand_normal_f32(x[0], x[1], &f[0], &f[1]);
        break;
    case RNGSNAP_CURAND_NORMAL_F64:
        px_curand_normal_f64(x[0], x[1], x[2], x[3], &d[0], &d[1]);
        break;
    default: break;
    }
}

/* Bytes of output one block of words makes (16 but for
 * CURAND_UNIFORM_F64: one 8-byte value per word). */
static inline size_t px_block_bytes(rngsnap_dist dist)
{
    return dist == RNGSNAP_CURAND_UNIFORM_F64 ? 32 : 16;
}

static inline void px_convert_loop(rngsnap_dist dist, const uint32_t *w,
                                   void *out, size_t nblocks)
{
    size_t nw = nblocks * 4;
    switch (dist) {
    case RNGSNAP_U32:
    case RNGSNAP_U64: /* little-endian: the words are the values */
        memcpy(out, w, nw * 4);
        break;
    case RNGSNAP_F32: {
        float *f = out;
        for (size_t i = 0; i < nw; i++)
            f[i] = px_u32_to_f32(w[i]);
        break;
    }
    case RNGSNAP_F64: {
        double *d = out;
        for (size_t i = 0; i < nw / 2; i++)
            d[i] = px_u64_to_f64(px_words_to_u64(w[2 * i], w[2 * i + 1]));
        break;
    }
    case RNGSNAP_NORMAL_F32: {
        float *f = out;
        for (size_t i = 0; i < nw / 2; i++)
            px_normal_f32(w[2 * i], w[2 * i + 1], &f[2 * i], &f[2 * i + 1]);
        break;
    }
    case RNGSNAP_NORMAL_F64: {
        double *d = out;
        for (size_t i = 0; i < nblocks; i++)
            px_normal_f64(w[4 * i], w[4 * i + 1], w[4 * i + 2], w[4 * i + 3],
                          &d[2 * i], &d[2 * i + 1]);
        break;
    }
    case RNGSNAP_CURAND_UNIFORM_F32: {
        float *f = out;
        for (size_t i = 0; i < nw; i++)
            f[i] = px_curand_uniform(w[i]);
        break;
    }
    case RNGSNAP_CURAND_UNIFORM_F64: {
        double *d = out;
        for (size_t i = 0; i < nw; i++)
            d[i] = px_curand_uniform_double(w[i]);
        break;
    }
    case RNGSNAP_CURAND_NORMAL_F32: {
        float *f = out;
        for (size_t i = 0; i < nw / 2; i++)
            px_curand_normal_f32(w[2 * i], w[2 * i + 1], &f[2 * i],
                                 &f[2 * i + 1]);
        break;
    }
    case RNGSNAP_CURAND_NORMAL_F64: {
        double *d = out;
        for (size_t i = 0; i < nblocks; i++)
            px_curand_normal_f64(w[4 * i], w[4 * i + 1], w[4 * i + 2],
                                 w[4 * i + 3], &d[2 * i], &d[2 * i + 1]);
        break;
    }
    }
}

/* A kernel that writes nblocks blocks from counter c (non-temporal when nt). */
typedef void (*px_blocks_fn)(const px_ctr *c, void *out, size_t nblocks,
                             int nt);

/* Blocks of words converted per batch: a multiple of every kernel's step
 * (48 blocks on avx2 and avx512, 16 on neon), so that no batch ends in a
 * partly used step.  (avx2's 3- and 4-group steps, 24 and 32 blocks, run
 * only from px_tune.large_min on, never for a 3840-byte batch with a
 * family's row; 240 is not a multiple of 32.) */
#define PX_NORMAL_CHUNK 240

/* Words from `words` into a small buffer, then converted to dist by the
 * path's `convert`: how a path serves a distribution it has no kernel of
 * its own for. */
static inline void px_fill_converted(rngsnap_dist dist, const px_ctr *c,
                                     void *out, size_t nblocks,
                                     px_blocks_fn words, px_convert_fn convert)
{
    uint32_t w[PX_NORMAL_CHUNK * 4] __attribute__((aligned(64)));
    px_ctr cc = *c;
    char *o = out;
    while (nblocks > 0) {
        size_t nb = nblocks < PX_NORMAL_CHUNK ? nblocks : PX_NORMAL_CHUNK;
        words(&cc, w, nb, 0);
        convert(dist, w, o, nb);
        cc.block += nb;
        o += nb * px_block_bytes(dist);
        nblocks -= nb;
    }
}

/* The dispatch every SIMD file shares: integers and uniforms straight from
 * that file's kernels; normals as words into a cached buffer, then
 * converted by the path's `convert` (px_convert_for names it). */
static inline void px_fill_dispatch(rngsnap_dist dist, const px_ctr *c,
                                    void *out, size_t nblocks, int nt,
                                    px_blocks_fn words, px_blocks_fn f32,
                                    px_blocks_fn f64, px_convert_fn convert)
{
    switch (dist) {
    case RNGSNAP_U32:
    case RNGSNAP_U64:
        words(c, out, nblocks, nt);
        return;
    case RNGSNAP_F32:
        f32(c, out, nblocks, nt);
        return;
    case RNGSNAP_F64:
        f64(c, out, nblocks, nt);
        return;
    default:
        px_fill_converted(dist, c, out, nblocks, words, convert);
        return;
    }
}

#endif
