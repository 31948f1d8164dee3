/*
 * philox_neon.c - the aarch64 NEON path (Advanced SIMD is part of every
 * ARMv8-A AArch64 processor, so no flags and no run-time check).
 *
 * Layout: 4 blocks per 128-bit vector, one block per 32-bit lane, so word
 * i of the 4 blocks is one vector x_i.  The 32x32->64 products come from
 * vmull_u32 / vmull_high_u32 (two lanes each); vuzp1q/vuzp2q take their
 * low and high halves back into 4 lanes.  PX_G independent groups of 4
 * blocks are interleaved per step so that the multiplier latency overlaps.
 * vst4q_u32 interleaves (x0, x1, x2, x3) on the store: block b's words are
 * written as x0[b] x1[b] x2[b] x3[b], the scalar path's buffer order.
 *
 * Conversions are not written again here: F32/F64 and the normals go
 * through the shared px_convert_loop (philox_loop.h) on words made by this
 * kernel, as px_fill_dispatch does for the normals of the x86 paths.
 * Non-temporal stores are not used (nt is ignored).
 *
 * Speed has not been measured on arm hardware (only under qemu-user, where
 * figures mean nothing): PX_G = 4 is a reasoned choice (16 state vectors
 * + keys and constants fit the 32 vector registers), not a tuned one.
 */
#include "philox_loop.h"

#if defined(__aarch64__) && defined(__ARM_NEON)
#include <arm_neon.h>

#define PX_G 4             /* groups of 4 blocks per step */
#define PX_STEP (PX_G * 4) /* blocks per step             */

/* One step: PX_STEP blocks from block (64-bit counter, carried per lane)
 * written as 4 * PX_STEP words to w in stream order. */
static inline __attribute__((always_inline)) void
pxn_step(uint32_t k0, uint32_t k1, uint64_t block, uint32x4_t sub_lo,
         uint32x4_t sub_hi, uint32_t *w)
{
    static const uint32_t lane_init[4] = {0, 1, 2, 3};
    const uint32x4_t lane = vld1q_u32(lane_init);
    const uint32x2_t m0 = vdup_n_u32(PX_M0);
    const uint32x2_t m1 = vdup_n_u32(PX_M1);
    const uint32x4_t w0 = vdupq_n_u32(PX_W0);
    const uint32x4_t w1 = vdupq_n_u32(PX_W1);
    uint32x4_t x0[PX_G], x1[PX_G], x2[PX_G], x3[PX_G];
    _Pragma("GCC unroll 8")
    for (int g = 0; g < PX_G; g++) {
        uint64_t b = block + 4 * (uint64_t)g;
        uint32x4_t base = vdupq_n_u32((uint32_t)b);
        x0[g] = vaddq_u32(base, lane);
        /* a lane whose low word wrapped carries into the high word: the
         * compare gives all ones (-1) there, subtracted adds 1 */
        x1[g] = vsubq_u32(vdupq_n_u32((uint32_t)(b >> 32)),
                          vcltq_u32(x0[g], base));
        x2[g] = sub_lo;
        x3[g] = sub_hi;
    }
    uint32x4_t kk0 = vdupq_n_u32(k0), kk1 = vdupq_n_u32(k1);
    _Pragma("GCC unroll 10")
    for (int r = 0; r < 10; r++) {
        _Pragma("GCC unroll 8")
        for (int g = 0; g < PX_G; g++) {
            uint32x4_t p0lo = vreinterpretq_u32_u64(
                vmull_u32(vget_low_u32(x0[g]), m0));
            uint32x4_t p0hi = vreinterpretq_u32_u64(
                vmull_high_u32(x0[g], vcombine_u32(m0, m0)));
            uint32x4_t p1lo = vreinterpretq_u32_u64(
                vmull_u32(vget_low_u32(x2[g]), m1));
            uint32x4_t p1hi = vreinterpretq_u32_u64(
                vmull_high_u32(x2[g], vcombine_u32(m1, m1)));
            /* little-endian: low halves in the even lanes */
            uint32x4_t hi0 = vuzp2q_u32(p0lo, p0hi), lo0 = vuzp1q_u32(p0lo, p0hi);
            uint32x4_t hi1 = vuzp2q_u32(p1lo, p1hi), lo1 = vuzp1q_u32(p1lo, p1hi);
            x0[g] = veorq_u32(veorq_u32(hi1, x1[g]), kk0);
            x2[g] = veorq_u32(veorq_u32(hi0, x3[g]), kk1);
            x1[g] = lo1;
            x3[g] = lo0;
        }
        kk0 = vaddq_u32(kk0, w0);
        kk1 = vaddq_u32(kk1, w1);
    }
    _Pragma("GCC unroll 8")
    for (int g = 0; g < PX_G; g++) {
        uint32x4x4_t v = {{x0[g], x1[g], x2[g], x3[g]}};
        vst4q_u32(w + 16 * g, v);
    }
}

/* The same step, out of line, for the last blocks of a fill. */
static __attribute__((noinline)) void
pxn_step_cold(uint32_t k0, uint32_t k1, uint64_t block, uint32x4_t sub_lo,
              uint32x4_t sub_hi, uint32_t *w)
{
    pxn_step(k0, k1, block, sub_lo, sub_hi, w);
}

/* nblocks whole blocks of words from c into out (any alignment). */
static __attribute__((noinline)) void
pxn_fill_words(const px_ctr *c, void *out, size_t nblocks, int nt)
{
    (void)nt;
    const uint32x4_t sub_lo = vdupq_n_u32((uint32_t)c->subseq);
    const uint32x4_t sub_hi = vdupq_n_u32((uint32_t)(c->subseq >> 32));
    uint64_t block = c->block;
    uint32_t *o = out;
    for (; nblocks >= PX_STEP; nblocks -= PX_STEP, block += PX_STEP,
                               o += 4 * PX_STEP)
        pxn_step(c->key[0], c->key[1], block, sub_lo, sub_hi, o);
    if (nblocks > 0) {
        uint32_t w[4 * PX_STEP];
        pxn_step_cold(c->key[0], c->key[1], block, sub_lo, sub_hi, w);
        memcpy(o, w, nblocks * 16);
    }
}

/* F32 and F64 have no NEON kernel of their own (the words kernel plus the
 * shared conversion loop). */
static __attribute__((noinline)) void
pxn_fill_f32(const px_ctr *c, void *out, size_t nblocks, int nt)
{
    (void)nt;
    px_fill_converted(RNGSNAP_F32, c, out, nblocks, pxn_fill_words,
                      px_convert_neon);
}

static __attribute__((noinline)) void
pxn_fill_f64(const px_ctr *c, void *out, size_t nblocks, int nt)
{
    (void)nt;
    px_fill_converted(RNGSNAP_F64, c, out, nblocks, pxn_fill_words,
                      px_convert_neon);
}

void px_convert_neon(rngsnap_dist dist, const uint32_t *w, void *out,
                     size_t nblocks)
{
    px_convert_loop(dist, w, out, nblocks); /* vectorised for NEON */
}

void px_fill_neon(rngsnap_dist dist, const px_ctr *c, void *out,
                  size_t nblocks, int nt)
{
    px_fill_dispatch(dist, c, out, nblocks, nt, pxn_fill_words, pxn_fill_f32,
                     pxn_fill_f64, px_convert_neon);
}

#else
void px_fill_neon(rngsnap_dist dist, const px_ctr *c, void *out,
                  size_t nblocks, int nt)
{
    px_fill_scalar(dist, c, out, nblocks, nt);
}
#endif
