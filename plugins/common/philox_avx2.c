/*
 * philox_avx2.c - the AVX2 path (compiled with -mavx2).
 *
 * Same layout as philox_avx512.c with 4 blocks per vector: each word in
 * the low half of a 64-bit lane, vpmuludq for the 32x32->64 products,
 * the 64-bit block counter in the lanes.  AVX2 has no 64-bit integer to
 * double conversion, so F64 splits the 53-bit integer in two exact halves.
 */
#include "philox_loop.h"

#if defined(__x86_64__) && defined(__AVX2__)
#include <immintrin.h>

#define PX_G 4             /* groups of 4 blocks per step (measured: 3 and 5
                              * are ~15% slower) */
/* Everything in registers: the loops over groups and rounds unrolled. */
#define PX_UNROLL_G _Pragma("GCC unroll 8")
#define PX_STEP (PX_G * 4) /* blocks per step                               */

typedef struct px_keys {
    __m256i k0[10], k1[10];
} px_keys;

/* F64 straight from a block's two words in a lane, low word L (junk
 * above it) and high word H (its product's high half above it):
 * (u64 >> 11) * 2^-53 = H * 2^-32 + (L >> 11) * 2^-53.  Each part is made
 * an exact double by writing the exponent over the junk (2^20 + H*2^-32,
 * 0.5 + (L>>11)*2^-53); subtracting 2^20 + 0.5 and adding are exact, as
 * the result has 53 bits.  5 instructions per 4 values, no multiply. */
static inline __attribute__((always_inline)) __m256d
px256_f64_lane(__m256i lw, __m256i hw)
{
    const __m256i e20 = _mm256_set1_epi64x(0x4130000000000000LL);  /* 2^20 */
    const __m256i ehalf = _mm256_set1_epi64x(0x3FE0000000000000LL); /* 0.5 */
    __m256d h = _mm256_castsi256_pd(_mm256_blend_epi32(hw, e20, 0xAA));
    __m256d l = _mm256_castsi256_pd(
        _mm256_blend_epi32(_mm256_srli_epi32(lw, 11), ehalf, 0xAA));
    return _mm256_add_pd(_mm256_sub_pd(h, _mm256_set1_pd(0x1p20 + 0.5)), l);
}

/* One step: 2*PX_G vectors of words in stream order, or with f64 of
 * F64 values (converted before the pack, see px256_f64_lane). */
static inline __attribute__((always_inline)) void
px256_step(const px_keys *ks, uint64_t block, __m256i sub_lo, __m256i sub_hi,
           __m256i out[2 * PX_G], const int f64)
{
    const __m256i m0 = _mm256_set1_epi64x(PX_M0);
    const __m256i m1 = _mm256_set1_epi64x(PX_M1);
    const __m256i lane = _mm256_set_epi64x(3, 2, 1, 0);
    __m256i x0[PX_G], x1[PX_G], x2[PX_G], x3[PX_G];
    PX_UNROLL_G
    for (int g = 0; g < PX_G; g++) {
        x0[g] = _mm256_add_epi64(_mm256_set1_epi64x((long long)(block + 4 * g)),
                                 lane);
        x1[g] = _mm256_srli_epi64(x0[g], 32);
        x2[g] = sub_lo;
        x3[g] = sub_hi;
    }
    _Pragma("GCC unroll 10")
    for (int r = 0; r < 10; r++) {
        PX_UNROLL_G
        for (int g = 0; g < PX_G; g++) {
            __m256i p0 = _mm256_mul_epu32(x0[g], m0);
            __m256i p1 = _mm256_mul_epu32(x2[g], m1);
            x0[g] = _mm256_xor_si256(_mm256_xor_si256(_mm256_srli_epi64(p1, 32),
                                                      x1[g]), ks->k0[r]);
            x2[g] = _mm256_xor_si256(_mm256_xor_si256(_mm256_srli_epi64(p0, 32),
                                                      x3[g]), ks->k1[r]);
            x1[g] = p1;
            x3[g] = p0;
        }
    }
    /* Pack: lane b -> qwords (x0|x1<<32, x2|x3<<32), blocks in order. */
    PX_UNROLL_G
    for (int g = 0; g < PX_G; g++) {
        if (f64) { /* the same pack, of the two doubles of each block */
            __m256d d01 = px256_f64_lane(x0[g], x1[g]);
            __m256d d23 = px256_f64_lane(x2[g], x3[g]);
            __m256d a = _mm256_unpacklo_pd(d01, d23); /* blocks 0, 2 */
            __m256d b = _mm256_unpackhi_pd(d01, d23); /* blocks 1, 3 */
            out[2 * g] = _mm256_castpd_si256(_mm256_permute2f128_pd(a, b, 0x20));
            out[2 * g + 1] =
                _mm256_castpd_si256(_mm256_permute2f128_pd(a, b, 0x31));
            continue;
        }
        __m256i y01 = _mm256_blend_epi32(x0[g], _mm256_slli_epi64(x1[g], 32),
                                         0xAA);
        __m256i y23 = _mm256_blend_epi32(x2[g], _mm256_slli_epi64(x3[g], 32),
                                         0xAA);
        __m256i a = _mm256_unpacklo_epi64(y01, y23); /* blocks 0, 2 */
        __m256i b = _mm256_unpackhi_epi64(y01, y23); /* blocks 1, 3 */
        out[2 * g] = _mm256_permute2x128_si256(a, b, 0x20);
        out[2 * g + 1] = _mm256_permute2x128_si256(a, b, 0x31);
    }
}

/* The same step, out of line: for the few blocks before and after the
 * main loop (keeps one inlined copy of the rounds per dist). */
static __attribute__((noinline)) void
px256_step_cold(const px_keys *ks, uint64_t block, __m256i sub_lo, __m256i sub_hi,
             __m256i out[2 * PX_G])
{
    px256_step(ks, block, sub_lo, sub_hi, out, 0);
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
                  size_t nblocks, int nt)
{
    px_keys ks;
    uint32_t k0 = c->key[0], k1 = c->key[1];
    for (int r = 0; r < 10; r++, k0 += PX_W0, k1 += PX_W1) {
        ks.k0[r] = _mm256_set1_epi64x(k0);
        ks.k1[r] = _mm256_set1_epi64x(k1);
    }
    const __m256i sub_lo = _mm256_set1_epi64x((uint32_t)c->subseq);
    const __m256i sub_hi = _mm256_set1_epi64x((uint32_t)(c->subseq >> 32));
    uint64_t block = c->block;
    char *o = out;
    __m256i v[2 * PX_G];
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
    for (; nblocks >= PX_STEP; nblocks -= PX_STEP, block += PX_STEP) {
        px256_step(&ks, block, sub_lo, sub_hi, v, dist == RNGSNAP_F64);
        if (nt) {
            PX_UNROLL_G
            for (int i = 0; i < 2 * PX_G; i++, o += 32)
                _mm256_stream_si256((void *)o, dist == RNGSNAP_F64
                                          ? v[i] : px256_convert(dist, v[i]));
        } else {
            PX_UNROLL_G
            for (int i = 0; i < 2 * PX_G; i++, o += 32)
                _mm256_storeu_si256((void *)o, dist == RNGSNAP_F64
                                           ? v[i] : px256_convert(dist, v[i]));
        }
    }
    if (nblocks > 0) {
        px256_step_cold(&ks, block, sub_lo, sub_hi, v);
        for (int i = 0; i < 2 * PX_G; i++)
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
    px256_fill_direct(RNGSNAP_U32, c, out, nblocks, nt);
}

static __attribute__((noinline)) void
px256_fill_f32(const px_ctr *c, void *out, size_t nblocks, int nt)
{
    px256_fill_direct(RNGSNAP_F32, c, out, nblocks, nt);
}

static __attribute__((noinline)) void
px256_fill_f64(const px_ctr *c, void *out, size_t nblocks, int nt)
{
    px256_fill_direct(RNGSNAP_F64, c, out, nblocks, nt);
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
