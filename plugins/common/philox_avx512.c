/*
 * philox_avx512.c - the AVX-512 path (compiled with -mavx512f/dq/bw/vl).
 *
 * Layout: a vector holds 8 blocks, one per 64-bit lane, each Philox word
 * in the low half of its lane.  vpmuludq then gives the full 32x32->64
 * product of the low halves directly, so a round is 2 multiplies, a shift
 * and a dword swap (the high halves) and 2 three-way XORs (vpternlog); the
 * junk left in the upper halves is never read by vpmuludq.  The last
 * round packs the words while it XORs (px512_step_n), and one in-lane
 * unpack per vector puts them in stream order.  The 64-bit lanes also hold
 * the whole 64-bit block counter, so the carry into the counter's second
 * word is free.
 * Six groups of 8 blocks run interleaved to hide the multiply latency:
 * 48 blocks (768 bytes of output) per step.
 */
#include "philox_loop.h"

#if defined(__x86_64__) && defined(__AVX512F__) && defined(__AVX512DQ__)
#include <immintrin.h>

#define PX_G 6                /* groups of 8 blocks per step (measured: 4 is
                                 * ~8% slower, 8 spills registers) */
/* Everything in registers: the loops over groups and rounds unrolled. */
#define PX_UNROLL_G _Pragma("GCC unroll 8")
/* The 12 output vectors of a step: unrolled whole, else gcc keeps them in
 * a stack array and reloads each before its store. */
#define PX_UNROLL_V _Pragma("GCC unroll 12")
#define PX_STEP (PX_G * 8)    /* blocks per step             */

typedef struct px_keys {
    __m512i k0[10], k1[10];
} px_keys;

/* ng groups (a constant after inlining) of 8 blocks from block on. */
static inline __attribute__((always_inline)) void
px512_step_n(const px_keys *ks, uint64_t block, __m512i sub_lo,
             __m512i sub_hi, __m512i *out, const int ng)
{
    const __m512i m0 = _mm512_set1_epi64(PX_M0);
    const __m512i m1 = _mm512_set1_epi64(PX_M1);
    /* Lane l holds block 4*(l&1) + l/2 of the group, so that an in-lane
     * unpack of the packed halves puts 4 consecutive blocks per vector. */
    const __m512i lane = _mm512_set_epi64(7, 3, 6, 2, 5, 1, 4, 0);
    __m512i x0[PX_G], x1[PX_G], x2[PX_G], x3[PX_G];
    /* ng <= PX_G */
    PX_UNROLL_G
    for (int g = 0; g < ng; g++) {
        x0[g] = _mm512_add_epi64(_mm512_set1_epi64((long long)(block + 8 * g)),
                                 lane);
        x1[g] = _mm512_srli_epi64(x0[g], 32);
        x2[g] = sub_lo;
        x3[g] = sub_hi;
    }
    _Pragma("GCC unroll 9")
    for (int r = 0; r < 9; r++) {
        PX_UNROLL_G
        for (int g = 0; g < ng; g++) {
            __m512i p0 = _mm512_mul_epu32(x0[g], m0);
            __m512i p1 = _mm512_mul_epu32(x2[g], m1);
            /* high halves: a shift for one, a dword swap for the other,
             * so that shifter and shuffle units share the work */
            __m512i h1 = _mm512_srli_epi64(p1, 32);
            __m512i h0 = _mm512_shuffle_epi32(p0, _MM_PERM_CDAB);
            x0[g] = _mm512_ternarylogic_epi64(h1, x1[g], ks->k0[r], 0x96);
            x2[g] = _mm512_ternarylogic_epi64(h0, x3[g], ks->k1[r], 0x96);
            x1[g] = p1;
            x3[g] = p0;
        }
    }
    /* Round 10 packs as it goes: the dword swap of a product puts its
     * high half (to be XORed) low and its low half (an output word)
     * high; XORing the low dwords only leaves each lane holding
     * (x0 | x1 << 32) and (x2 | x3 << 32), the block's two qwords. */
    PX_UNROLL_G
    for (int g = 0; g < ng; g++) {
        __m512i p0 = _mm512_mul_epu32(x0[g], m0);
        __m512i p1 = _mm512_mul_epu32(x2[g], m1);
        __m512i s1 = _mm512_shuffle_epi32(p1, _MM_PERM_CDAB);
        __m512i s0 = _mm512_shuffle_epi32(p0, _MM_PERM_CDAB);
        __m512i y01 = _mm512_mask_ternarylogic_epi32(s1, 0x5555, x1[g],
                                                     ks->k0[9], 0x96);
        __m512i y23 = _mm512_mask_ternarylogic_epi32(s0, 0x5555, x3[g],
                                                     ks->k1[9], 0x96);
        out[2 * g] = _mm512_unpacklo_epi64(y01, y23);     /* blocks 0-3 */
        out[2 * g + 1] = _mm512_unpackhi_epi64(y01, y23); /* blocks 4-7 */
    }
}

/* One whole step: 6 groups, 48 blocks, 12 vectors of words. */
static inline __attribute__((always_inline)) void
px512_step(const px_keys *ks, uint64_t block, __m512i sub_lo, __m512i sub_hi,
           __m512i out[2 * PX_G])
{
    px512_step_n(ks, block, sub_lo, sub_hi, out, PX_G);
}

/* A small step (2 groups, 16 blocks), out of line: for the few blocks
 * before and after the main loop, so that a short tail does not compute a
 * whole 48-block step. */
#define PX_COLD 16
static __attribute__((noinline)) void
px512_step_cold(const px_keys *ks, uint64_t block, __m512i sub_lo,
                __m512i sub_hi, __m512i out[PX_COLD / 4])
{
    px512_step_n(ks, block, sub_lo, sub_hi, out, PX_COLD / 8);
}

static inline __attribute__((always_inline)) __m512i
px512_convert(rngsnap_dist dist, __m512i v)
{
    if (dist == RNGSNAP_F32) {
        __m512 f = _mm512_cvtepi32_ps(_mm512_srli_epi32(v, 8));
        return _mm512_castps_si512(_mm512_mul_ps(f, _mm512_set1_ps(0x1p-24f)));
    }
    if (dist == RNGSNAP_F64) {
        __m512d d = _mm512_cvtepi64_pd(_mm512_srli_epi64(v, 11));
        return _mm512_castpd_si512(_mm512_mul_pd(d, _mm512_set1_pd(0x1p-53)));
    }
    return v; /* U32, U64: the words themselves */
}

/* Whole steps of U32/U64/F32/F64 straight to out; the last partial step
 * goes through a buffer.  dist is a constant in each caller below. */
static inline __attribute__((always_inline)) void
px512_fill_direct(rngsnap_dist dist, const px_ctr *c, void *out,
                  size_t nblocks, int nt)
{
    px_keys ks;
    uint32_t k0 = c->key[0], k1 = c->key[1];
    for (int r = 0; r < 10; r++, k0 += PX_W0, k1 += PX_W1) {
        ks.k0[r] = _mm512_set1_epi64(k0);
        ks.k1[r] = _mm512_set1_epi64(k1);
    }
    const __m512i sub_lo = _mm512_set1_epi64((uint32_t)c->subseq);
    const __m512i sub_hi = _mm512_set1_epi64((uint32_t)(c->subseq >> 32));
    uint64_t block = c->block;
    char *o = out;
    __m512i v[2 * PX_G];
    /* Non-temporal stores need 64-byte alignment: reach it (16 bytes per
     * block) through the buffered path, or give up on them. */
    if (nt && ((uintptr_t)o & 15) != 0)
        nt = 0;
    if (nt) {
        size_t lead = ((64 - ((uintptr_t)o & 63)) & 63) / 16;
        if (lead > nblocks)
            lead = nblocks;
        if (lead > 0) {
            px512_step_cold(&ks, block, sub_lo, sub_hi, v);
            for (int i = 0; i < PX_COLD / 4; i++)
                v[i] = px512_convert(dist, v[i]);
            memcpy(o, v, lead * 16);
            o += lead * 16;
            block += lead;
            nblocks -= lead;
        }
    }
    for (; nblocks >= PX_STEP; nblocks -= PX_STEP, block += PX_STEP) {
        px512_step(&ks, block, sub_lo, sub_hi, v);
        if (nt) {
            PX_UNROLL_V
            for (int i = 0; i < 2 * PX_G; i++, o += 64)
                _mm512_stream_si512((void *)o, px512_convert(dist, v[i]));
        } else {
            PX_UNROLL_V
            for (int i = 0; i < 2 * PX_G; i++, o += 64)
                _mm512_storeu_si512((void *)o, px512_convert(dist, v[i]));
        }
    }
    while (nblocks > 0) { /* tail, 16 blocks at a time */
        px512_step_cold(&ks, block, sub_lo, sub_hi, v);
        for (int i = 0; i < PX_COLD / 4; i++)
            v[i] = px512_convert(dist, v[i]);
        size_t nb = nblocks < PX_COLD ? nblocks : PX_COLD;
        memcpy(o, v, nb * 16);
        o += nb * 16;
        block += nb;
        nblocks -= nb;
    }
    if (nt)
        _mm_sfence();
}

/* One out-of-line copy of the main loop per output kind. */
static __attribute__((noinline)) void
px512_fill_words(const px_ctr *c, void *out, size_t nblocks, int nt)
{
    px512_fill_direct(RNGSNAP_U32, c, out, nblocks, nt);
}

static __attribute__((noinline)) void
px512_fill_f32(const px_ctr *c, void *out, size_t nblocks, int nt)
{
    px512_fill_direct(RNGSNAP_F32, c, out, nblocks, nt);
}

static __attribute__((noinline)) void
px512_fill_f64(const px_ctr *c, void *out, size_t nblocks, int nt)
{
    px512_fill_direct(RNGSNAP_F64, c, out, nblocks, nt);
}

void px_convert_avx512(rngsnap_dist dist, const uint32_t *w, void *out,
                       size_t nblocks)
{
    px_convert_loop(dist, w, out, nblocks); /* vectorised with AVX-512 */
}

void px_fill_avx512(rngsnap_dist dist, const px_ctr *c, void *out,
                    size_t nblocks, int nt)
{
    px_fill_dispatch(dist, c, out, nblocks, nt, px512_fill_words,
                     px512_fill_f32, px512_fill_f64, px_convert_avx512);
}

#else /* not built for AVX-512: never selected, see philox_select.c */
void px_fill_avx512(rngsnap_dist dist, const px_ctr *c, void *out,
                    size_t nblocks, int nt)
{
    px_fill_scalar(dist, c, out, nblocks, nt);
}

void px_convert_avx512(rngsnap_dist dist, const uint32_t *w, void *out,
                       size_t nblocks)
{
    px_convert_loop(dist, w, out, nblocks);
}
#endif
