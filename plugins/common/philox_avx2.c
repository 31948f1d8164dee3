/*
 * philox_avx2.c - the AVX2 path (compiled with -mavx2).
 *
 * 32-bit lanes: 8 blocks per vector, each of the four counter words in
 * its own vector (docs/engine.md, "AVX2 layout").  vpmuludq on the even
 * and the odd lanes gives the high halves of the 32x32->64 products,
 * vpmulld the low halves; PX_G groups of 8 blocks are interleaved.  A
 * 4x8 transpose within 128-bit halves puts the words in stream order (the
 * lanes compute blocks in the order that makes that possible).  F64 is
 * built from the two words of each pair before the transpose.
 */
#include "philox_loop.h"

#if defined(__x86_64__) && defined(__AVX2__)
#include <immintrin.h>

/* Groups of 8 blocks interleaved per step.  Measured on an AMD EPYC
 * (Zen 3), see docs/performance.md "AVX2 layout (issue 11 item 1)"; the
 * best count on one CPU need not be the best on another. */
#ifndef PX_G
#define PX_G 6 /* fills below PX_PREFETCH_MIN */
#endif
#ifndef PX_G_LARGE
#define PX_G_LARGE 3 /* fills from PX_PREFETCH_MIN on */
#endif
#define PX_GMAX (PX_G > PX_G_LARGE ? PX_G : PX_G_LARGE)
#define PX_UNROLL_G _Pragma("GCC unroll 8")
/* Fills of at least PX_PREFETCH_MIN bytes prefetch each output line
 * PX_PREFETCH_AHEAD bytes ahead for writing (prefetchw: the read a store
 * miss needs starts early; a no-op on CPUs without it). */
#ifndef PX_PREFETCH_MIN
#define PX_PREFETCH_MIN ((size_t)4 << 20)
#endif
#ifndef PX_PREFETCH_AHEAD
#define PX_PREFETCH_AHEAD 2048
#endif

typedef struct px_keys {
    __m256i k0[10], k1[10];
} px_keys;

/* High halves of the 8 products a * m (32-bit lanes). */
static inline __attribute__((always_inline)) __m256i
px256_mulhi(__m256i a, __m256i m)
{
    __m256i pe = _mm256_mul_epu32(a, m);
    __m256i po = _mm256_mul_epu32(_mm256_srli_epi64(a, 32), m);
    return _mm256_blend_epi32(_mm256_srli_epi64(pe, 32), po, 0xAA);
}

/* Doubles (u64 >> 11) * 2^-53 of the pairs (L, H) in 32-bit lanes 0,1
 * (lo = 1) or 2,3 (lo = 0) of each 128-bit half:
 * (u64 >> 11) * 2^-53 = H * 2^-32 + (L >> 11) * 2^-53, each part made an
 * exact double by putting an exponent above it (2^20 + H * 2^-32,
 * 0.5 + (L >> 11) * 2^-53); subtracting 2^20 + 0.5 and adding are exact,
 * the result having 53 bits. */
static inline __attribute__((always_inline)) __m256d
px256_f64_pairs(__m256i l, __m256i h, const int lo)
{
    const __m256i e20 = _mm256_set1_epi32(0x41300000);  /* 2^20 */
    const __m256i ehalf = _mm256_set1_epi32(0x3FE00000); /* 0.5 */
    l = _mm256_srli_epi32(l, 11);
    __m256i hh = lo ? _mm256_unpacklo_epi32(h, e20) : _mm256_unpackhi_epi32(h, e20);
    __m256i ll = lo ? _mm256_unpacklo_epi32(l, ehalf)
                    : _mm256_unpackhi_epi32(l, ehalf);
    return _mm256_add_pd(_mm256_sub_pd(_mm256_castsi256_pd(hh),
                                       _mm256_set1_pd(0x1p20 + 0.5)),
                         _mm256_castsi256_pd(ll));
}

/* The first two rounds' values that are the same in every lane of a step
 * whose blocks share their high counter word h: round 1 multiplies only
 * the block's low word (the subsequence words are lane-invariant), round 2
 * only the word that round 1 made from those (see px256_step). */
typedef struct px_pre {
    __m256i u0, c0, c1, c2, ul0;
} px_pre;

static inline __attribute__((always_inline)) void
px256_pre(const px_ctr *c, uint32_t h, px_pre *pre)
{
    uint32_t s0 = (uint32_t)c->subseq, s1 = (uint32_t)(c->subseq >> 32);
    uint64_t p = (uint64_t)PX_M1 * s0;
    uint32_t u0 = (uint32_t)(p >> 32) ^ h ^ c->key[0]; /* x0 after round 1 */
    uint32_t u1 = (uint32_t)p;                          /* x1 after round 1 */
    uint64_t q = (uint64_t)PX_M0 * u0;
    pre->u0 = _mm256_set1_epi32((int)u0);
    pre->c0 = _mm256_set1_epi32((int)(s1 ^ c->key[1]));
    pre->c1 = _mm256_set1_epi32((int)(u1 ^ (c->key[0] + PX_W0)));
    pre->c2 = _mm256_set1_epi32((int)((uint32_t)(q >> 32) ^ (c->key[1] + PX_W1)));
    pre->ul0 = _mm256_set1_epi32((int)(uint32_t)q);
}

/* One step: 4*PX_G vectors of words in stream order, or with f64 of
 * F64 values (converted before the transpose, see px256_f64_pairs).
 * pre: NULL, or the lane-invariant part of rounds 1-2 when the step's
 * blocks share their high counter word (no carry inside the step). */
static inline __attribute__((always_inline)) void
px256_step(const px_keys *ks, uint64_t block, __m256i sub_lo, __m256i sub_hi,
           const px_pre *pre, __m256i out[4 * PX_GMAX], const int f64,
           const int ng)
{
    const __m256i m0 = _mm256_set1_epi32((int)PX_M0);
    const __m256i m1 = _mm256_set1_epi32((int)PX_M1);
    /* lane l computes block 2*(l & 3) + l/2 of the group (for the
     * transpose below) */
    const __m256i lane = _mm256_set_epi32(7, 5, 3, 1, 6, 4, 2, 0);
    const __m256i bias = _mm256_set1_epi32((int)0x80000000u);
    __m256i x0[PX_GMAX], x1[PX_GMAX], x2[PX_GMAX], x3[PX_GMAX];
    int r0 = 0;
    if (pre) {
        /* rounds 1 and 2 with their lane-invariant products precomputed:
         * same values as the loop below (docs/engine.md) */
        PX_UNROLL_G
        for (int g = 0; g < ng; g++) {
            __m256i c = _mm256_add_epi32(
                _mm256_set1_epi32((int)(uint32_t)(block + 8 * (uint64_t)g)),
                lane);
            x2[g] = _mm256_xor_si256(px256_mulhi(c, m0), pre->c0);
            x3[g] = _mm256_mullo_epi32(c, m0);
        }
        PX_UNROLL_G
        for (int g = 0; g < ng; g++) {
            x0[g] = _mm256_xor_si256(px256_mulhi(x2[g], m1), pre->c1);
            x1[g] = _mm256_mullo_epi32(x2[g], m1);
            x2[g] = _mm256_xor_si256(x3[g], pre->c2);
            x3[g] = pre->ul0;
        }
        r0 = 2;
    } else {
        PX_UNROLL_G
        for (int g = 0; g < ng; g++) {
            uint64_t b = block + 8 * (uint64_t)g;
            __m256i lo = _mm256_set1_epi32((int)(uint32_t)b);
            x0[g] = _mm256_add_epi32(lo, lane);
            /* carry into the high word where the low one wrapped */
            __m256i carry = _mm256_cmpgt_epi32(_mm256_xor_si256(lo, bias),
                                               _mm256_xor_si256(x0[g], bias));
            x1[g] = _mm256_sub_epi32(
                _mm256_set1_epi32((int)(uint32_t)(b >> 32)), carry);
            x2[g] = sub_lo;
            x3[g] = sub_hi;
        }
    }
    _Pragma("GCC unroll 10")
    for (int r = r0; r < 10; r++) {
        PX_UNROLL_G
        for (int g = 0; g < ng; g++) {
            __m256i h0 = px256_mulhi(x0[g], m0);
            __m256i l0 = _mm256_mullo_epi32(x0[g], m0);
            __m256i h1 = px256_mulhi(x2[g], m1);
            __m256i l1 = _mm256_mullo_epi32(x2[g], m1);
            x0[g] = _mm256_xor_si256(_mm256_xor_si256(h1, x1[g]), ks->k0[r]);
            x2[g] = _mm256_xor_si256(_mm256_xor_si256(h0, x3[g]), ks->k1[r]);
            x1[g] = l1;
            x3[g] = l0;
        }
    }
    PX_UNROLL_G
    for (int g = 0; g < ng; g++) {
        if (f64) {
            /* lanes 0,1 | 4,5 are blocks 0,2 | 1,3; lanes 2,3 | 6,7 are
             * blocks 4,6 | 5,7 */
            __m256d a = px256_f64_pairs(x0[g], x1[g], 1);
            __m256d b = px256_f64_pairs(x2[g], x3[g], 1);
            __m256d c = px256_f64_pairs(x0[g], x1[g], 0);
            __m256d d = px256_f64_pairs(x2[g], x3[g], 0);
            out[4 * g] = _mm256_castpd_si256(_mm256_unpacklo_pd(a, b));
            out[4 * g + 1] = _mm256_castpd_si256(_mm256_unpackhi_pd(a, b));
            out[4 * g + 2] = _mm256_castpd_si256(_mm256_unpacklo_pd(c, d));
            out[4 * g + 3] = _mm256_castpd_si256(_mm256_unpackhi_pd(c, d));
            continue;
        }
        /* 4x8 transpose within halves: vector v = lanes v | v+4 */
        __m256i t0 = _mm256_unpacklo_epi32(x0[g], x1[g]);
        __m256i t1 = _mm256_unpackhi_epi32(x0[g], x1[g]);
        __m256i t2 = _mm256_unpacklo_epi32(x2[g], x3[g]);
        __m256i t3 = _mm256_unpackhi_epi32(x2[g], x3[g]);
        out[4 * g] = _mm256_unpacklo_epi64(t0, t2);
        out[4 * g + 1] = _mm256_unpackhi_epi64(t0, t2);
        out[4 * g + 2] = _mm256_unpacklo_epi64(t1, t3);
        out[4 * g + 3] = _mm256_unpackhi_epi64(t1, t3);
    }
}

/* The same step, out of line: for the few blocks before and after the
 * main loop (keeps one inlined copy of the rounds per dist). */
static __attribute__((noinline)) void
px256_step_cold(const px_keys *ks, uint64_t block, __m256i sub_lo, __m256i sub_hi,
             __m256i out[4 * PX_GMAX])
{
    px256_step(ks, block, sub_lo, sub_hi, NULL, out, 0, PX_GMAX);
}

static inline __attribute__((always_inline)) __m256i
px256_convert(rngsnap_dist dist, __m256i v)
{
    if (dist == RNGSNAP_F32) {
        __m256 f = _mm256_cvtepi32_ps(_mm256_srli_epi32(v, 8));
        return _mm256_castps_si256(_mm256_mul_ps(f, _mm256_set1_ps(0x1p-24f)));
    }
    if (dist == RNGSNAP_F64) {
        /* u = v >> 11 < 2^53 = hi * 2^32 + lo; both halves made exact
         * doubles with the 2^52 / 2^84 exponent trick, then summed
         * exactly (the sum is an integer below 2^53). */
        __m256i u = _mm256_srli_epi64(v, 11);
        __m256i lo = _mm256_blend_epi32(
            u, _mm256_set1_epi64x(0x4330000000000000LL), 0xAA); /* 2^52+lo */
        __m256i hi = _mm256_or_si256(_mm256_srli_epi64(u, 32),
                                     _mm256_set1_epi64x(0x4530000000000000LL));
        __m256d h = _mm256_sub_pd(_mm256_castsi256_pd(hi),
                                  _mm256_set1_pd(0x1p84 + 0x1p52));
        __m256d d = _mm256_add_pd(h, _mm256_castsi256_pd(lo));
        return _mm256_castpd_si256(_mm256_mul_pd(d, _mm256_set1_pd(0x1p-53)));
    }
    return v;
}

static inline __attribute__((always_inline)) void
px256_fill_direct(rngsnap_dist dist, const px_ctr *c, void *out,
                  size_t nblocks, int nt, const int ng)
{
    const size_t step = (size_t)ng * 8; /* blocks per step */
    px_keys ks;
    uint32_t k0 = c->key[0], k1 = c->key[1];
    for (int r = 0; r < 10; r++, k0 += PX_W0, k1 += PX_W1) {
        ks.k0[r] = _mm256_set1_epi32((int)k0);
        ks.k1[r] = _mm256_set1_epi32((int)k1);
    }
    const __m256i sub_lo = _mm256_set1_epi32((int)(uint32_t)c->subseq);
    const __m256i sub_hi = _mm256_set1_epi32((int)(uint32_t)(c->subseq >> 32));
    uint64_t block = c->block;
    char *o = out;
    __m256i v[4 * PX_GMAX];
    const int pf = !nt && nblocks * 16 >= PX_PREFETCH_MIN;
    if (nt && ((uintptr_t)o & 15) != 0)
        nt = 0;
    if (nt && ((uintptr_t)o & 31) != 0 && nblocks > 0) { /* reach 32 bytes */
        px256_step_cold(&ks, block, sub_lo, sub_hi, v);
        v[0] = px256_convert(dist, v[0]);
        memcpy(o, v, 16);
        o += 16;
        block += 1;
        nblocks -= 1;
    }
    for (; nblocks >= step; nblocks -= step, block += step) {
        if ((uint32_t)block > UINT32_MAX - (step - 1)) {
            /* the low counter word wraps inside this step (once per 2^32
             * blocks): the general rounds, F64 converted after them */
            px256_step_cold(&ks, block, sub_lo, sub_hi, v);
            if (dist == RNGSNAP_F64)
                for (int i = 0; i < 4 * ng; i++)
                    v[i] = px256_convert(dist, v[i]);
        } else {
            px_pre pre;
            px256_pre(c, (uint32_t)(block >> 32), &pre);
            px256_step(&ks, block, sub_lo, sub_hi, &pre, v,
                       dist == RNGSNAP_F64, ng);
        }
        if (nt) {
            PX_UNROLL_G
            for (int i = 0; i < 4 * ng; i++, o += 32)
                _mm256_stream_si256((void *)o, dist == RNGSNAP_F64
                                          ? v[i] : px256_convert(dist, v[i]));
            continue;
        }
        if (pf && nblocks * 16 > PX_PREFETCH_AHEAD + step * 16) {
            /* one prefetchw per 64-byte line of this step's output */
            PX_UNROLL_G
            for (int i = 0; i < ng * 128; i += 64)
                __asm__ volatile("prefetchw %0"
                                 :
                                 : "m"(*(const char *)(o + PX_PREFETCH_AHEAD + i)));
        }
        PX_UNROLL_G
        for (int i = 0; i < 4 * ng; i++, o += 32)
            _mm256_storeu_si256((void *)o, dist == RNGSNAP_F64
                                       ? v[i] : px256_convert(dist, v[i]));
    }
    if (nblocks > 0) {
        px256_step_cold(&ks, block, sub_lo, sub_hi, v);
        for (int i = 0; i < 4 * PX_GMAX; i++)
            v[i] = px256_convert(dist, v[i]);
        memcpy(o, v, nblocks * 16);
    }
    if (nt)
        _mm_sfence();
}

/* One out-of-line copy of the main loop per output kind. */
static __attribute__((noinline)) void
px256_fill_words(const px_ctr *c, void *out, size_t nblocks, int nt)
{
    if (nblocks * 16 >= PX_PREFETCH_MIN)
        px256_fill_direct(RNGSNAP_U32, c, out, nblocks, nt, PX_G_LARGE);
    else
        px256_fill_direct(RNGSNAP_U32, c, out, nblocks, nt, PX_G);
}

static __attribute__((noinline)) void
px256_fill_f32(const px_ctr *c, void *out, size_t nblocks, int nt)
{
    if (nblocks * 16 >= PX_PREFETCH_MIN)
        px256_fill_direct(RNGSNAP_F32, c, out, nblocks, nt, PX_G_LARGE);
    else
        px256_fill_direct(RNGSNAP_F32, c, out, nblocks, nt, PX_G);
}

static __attribute__((noinline)) void
px256_fill_f64(const px_ctr *c, void *out, size_t nblocks, int nt)
{
    if (nblocks * 16 >= PX_PREFETCH_MIN)
        px256_fill_direct(RNGSNAP_F64, c, out, nblocks, nt, PX_G_LARGE);
    else
        px256_fill_direct(RNGSNAP_F64, c, out, nblocks, nt, PX_G);
}

void px_fill_avx2(rngsnap_dist dist, const px_ctr *c, void *out,
                  size_t nblocks, int nt)
{
    px_fill_dispatch(dist, c, out, nblocks, nt, px256_fill_words,
                     px256_fill_f32, px256_fill_f64);
}

#else
void px_fill_avx2(rngsnap_dist dist, const px_ctr *c, void *out,
                  size_t nblocks, int nt)
{
    px_fill_scalar(dist, c, out, nblocks, nt);
}
#endif
