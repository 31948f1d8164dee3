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
 * (Zen 3), see docs/engine.md "AVX2 layout (issue 11 item 1)"; the
 * best count on one CPU need not be the best on another.  The size from
 * which PX_G_LARGE runs is px_tune.large_min (per CPU family). */
#ifndef PX_G
#define PX_G 6 /* fills below px_tune.large_min */
#endif
#ifndef PX_G_LARGE
#define PX_G_LARGE 3 /* from px_tune.large_min on, rows with 3 groups */
#endif
#define PX_G_LARGE4 4 /* from px_tune.large_min on, rows with 4 groups */
#define PX_MAX(a, b) ((a) > (b) ? (a) : (b))
#define PX_GMAX PX_MAX(PX_G, PX_MAX(PX_G_LARGE, PX_G_LARGE4))
#define PX_UNROLL_G _Pragma("GCC unroll 8")
/* Fills of at least px_tune.prefetch_min bytes (plain stores) prefetch
 * each output line PX_PREFETCH_AHEAD bytes ahead for writing (prefetchw:
 * the read a store miss needs starts early; a no-op on CPUs without it). */
#ifndef PX_PREFETCH_AHEAD
#define PX_PREFETCH_AHEAD 2048
#endif
/* Streaming (non-temporal) fills touch the page PX_TLB_AHEAD bytes ahead
 * once (prefetchnta of its first line) so that its address translation is
 * ready when the stores get there: non-temporal stores do not prefetch,
 * and under a hypervisor a TLB miss is a two-level walk.  +8-22% at
 * 64 MiB on 4 KiB pages (Zen 3 VM), little on 2 MiB pages. */
#ifndef PX_TLB_AHEAD
#define PX_TLB_AHEAD 8192
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
    if (nt && ((uintptr_t)o & 15) != 0)
        nt = 0; /* cannot stream: plain stores (with prefetchw) instead */
    const int pf = !nt && nblocks * 16 >= px_tune.prefetch_min;
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
            if (dist == RNGSNAP_F32) {
                /* converted before the stores, so that the non-temporal
                 * stores leave back to back (with the conversions between
                 * them streaming F32 ran 8-15% behind U32; plain stores
                 * are faster interleaved, below) */
                PX_UNROLL_G
                for (int i = 0; i < 4 * ng; i++)
                    v[i] = px256_convert(dist, v[i]);
            }
            /* once per page: the step whose output is PX_TLB_AHEAD bytes
             * before the page's start (and only inside the output) */
            if (nblocks * 16 > PX_TLB_AHEAD &&
                (((uintptr_t)o + PX_TLB_AHEAD) & 4095) < step * 16)
                __asm__ volatile("prefetchnta %0"
                                 :
                                 : "m"(*(const char *)(o + PX_TLB_AHEAD)));
            PX_UNROLL_G
            for (int i = 0; i < 4 * ng; i++, o += 32)
                _mm256_stream_si256((void *)o, v[i]);
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
            _mm256_storeu_si256((void *)o, dist == RNGSNAP_F32
                                               ? px256_convert(dist, v[i])
                                               : v[i]);
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

/* The group count for this fill: PX_G, or from px_tune.large_min on the
 * row's large_groups (3 or 4), each an inlined copy of the main loop. */
#define PX_FILL_GROUPS(dist, c, out, nblocks, nt)                          \
    do {                                                                  \
        if ((nblocks) * 16 < px_tune.large_min)                           \
            px256_fill_direct(dist, c, out, nblocks, nt, PX_G);           \
        else if (px_tune.large_groups == 4)                               \
            px256_fill_direct(dist, c, out, nblocks, nt, PX_G_LARGE4);    \
        else                                                              \
            px256_fill_direct(dist, c, out, nblocks, nt, PX_G_LARGE);     \
    } while (0)

/* One out-of-line function per output kind. */
static __attribute__((noinline)) void
px256_fill_words(const px_ctr *c, void *out, size_t nblocks, int nt)
{
    PX_FILL_GROUPS(RNGSNAP_U32, c, out, nblocks, nt);
}

static __attribute__((noinline)) void
px256_fill_f32(const px_ctr *c, void *out, size_t nblocks, int nt)
{
    PX_FILL_GROUPS(RNGSNAP_F32, c, out, nblocks, nt);
}

static __attribute__((noinline)) void
px256_fill_f64(const px_ctr *c, void *out, size_t nblocks, int nt)
{
    PX_FILL_GROUPS(RNGSNAP_F64, c, out, nblocks, nt);
}

/* ---- NORMAL_F64 ------------------------------------------------------
 * px_normal_f64 (philox_convert.h) written in intrinsics, 4 blocks per
 * vector and PX_NV vectors per iteration: the same IEEE operations in the
 * same order for every value (the bits cannot change; the engine tests
 * compare every path with the formula), but the ln, sin and cos Horner
 * chains of PX_NV vectors interleaved instruction by instruction.  gcc
 * does not schedule before register allocation on x86, so the written
 * order is what the core sees; the vectorised C loop ran its chains one
 * after another and stalled on their latency (docs/engine.md). */
#define PX_NV 4
/* Over the PX_NV vectors, always unrolled (else gcc keeps them on the
 * stack). */
#define PX_FOR_K _Pragma("GCC unroll 4") for (int k = 0; k < PX_NV; k++)

static inline __attribute__((always_inline)) __m256d px256_d(double v)
{
    return _mm256_set1_pd(v);
}

/* Words w0..w3 of 4 blocks (16 consecutive words) into one vector each. */
static inline __attribute__((always_inline)) void
px256_load4(const uint32_t *w, __m128i x[4])
{
    __m128i r0 = _mm_loadu_si128((const __m128i *)w);
    __m128i r1 = _mm_loadu_si128((const __m128i *)(w + 4));
    __m128i r2 = _mm_loadu_si128((const __m128i *)(w + 8));
    __m128i r3 = _mm_loadu_si128((const __m128i *)(w + 12));
    __m128i t0 = _mm_unpacklo_epi32(r0, r1), t1 = _mm_unpackhi_epi32(r0, r1);
    __m128i t2 = _mm_unpacklo_epi32(r2, r3), t3 = _mm_unpackhi_epi32(r2, r3);
    x[0] = _mm_unpacklo_epi64(t0, t2);
    x[1] = _mm_unpackhi_epi64(t0, t2);
    x[2] = _mm_unpacklo_epi64(t1, t3);
    x[3] = _mm_unpackhi_epi64(t1, t3);
}

static void px256_normal_f64(const uint32_t *w, double *out, size_t nblocks)
{
    const __m128i sign32 = _mm_set1_epi32((int)0x80000000u);
    const __m256i mant = _mm256_set1_epi64x(0x000fffffffffffffLL);
    const __m256i one = _mm256_set1_epi64x(0x3ff0000000000000LL);
    const __m256i sqrt2 = _mm256_set1_epi64x(0x3ff6a09e667f3bcdLL);
    const __m256i bit52 = _mm256_set1_epi64x(0x0010000000000000LL);
    const __m256i two52 = _mm256_set1_epi64x(0x4330000000000000LL);
    size_t i = 0;
    for (; i + 4 * PX_NV <= nblocks; i += 4 * PX_NV) {
        __m256d a[PX_NV], za[PX_NV], s[PX_NV], z[PX_NV], fe[PX_NV];
        __m256d p[PX_NV], ps[PX_NV], pc[PX_NV];
        __m256i q[PX_NV];
        PX_FOR_K {
            __m128i x[4];
            px256_load4(w + 4 * (i + 4 * (size_t)k), x);
            /* u1 = unit(w1) + ((w0 >> 11) + 1) * 2^-53 */
            __m256d x1 = _mm256_add_pd(
                _mm256_mul_pd(_mm256_cvtepi32_pd(_mm_xor_si128(x[1], sign32)),
                              px256_d(0x1p-32)),
                px256_d(0.5));
            __m256d x0 = _mm256_mul_pd(
                _mm256_cvtepi32_pd(_mm_add_epi32(_mm_srli_epi32(x[0], 11),
                                                 _mm_set1_epi32(1))),
                px256_d(0x1p-53));
            __m256d u1 = _mm256_add_pd(x1, x0);
            /* quarter turn q and the angle a */
            __m128i q32 = _mm_srli_epi32(
                _mm_add_epi32(x[3], _mm_set1_epi32(1 << 29)), 30);
            __m128i h = _mm_sub_epi32(x[3], _mm_slli_epi32(q32, 30));
            __m256d t = _mm256_add_pd(
                _mm256_mul_pd(_mm256_cvtepi32_pd(h), px256_d(0x1p-30)),
                _mm256_mul_pd(_mm256_cvtepi32_pd(_mm_srli_epi32(x[2], 11)),
                              px256_d(0x1p-51)));
            a[k] = _mm256_mul_pd(t, px256_d(1.57079632679489661923));
            q[k] = _mm256_cvtepu32_epi64(q32);
            /* ln: exponent e and mantissa m in [sqrt(2)/2, sqrt(2)) */
            __m256i b = _mm256_castpd_si256(u1);
            __m256i mb = _mm256_or_si256(_mm256_and_si256(b, mant), one);
            __m256i big = _mm256_cmpgt_epi64(mb, sqrt2); /* all ones */
            mb = _mm256_sub_epi64(mb, _mm256_and_si256(big, bit52));
            /* e + 1023 (0..1024) made a double exactly: 2^52 + n - 2^52 */
            __m256i eb = _mm256_sub_epi64(_mm256_srli_epi64(b, 52), big);
            fe[k] = _mm256_sub_pd(
                _mm256_sub_pd(_mm256_castsi256_pd(_mm256_or_si256(eb, two52)),
                              px256_d(0x1p52)),
                px256_d(1023.0));
            __m256d f = _mm256_sub_pd(_mm256_castsi256_pd(mb), px256_d(1.0));
            s[k] = _mm256_div_pd(f, _mm256_add_pd(px256_d(2.0), f));
            za[k] = _mm256_mul_pd(a[k], a[k]);
            ps[k] = px256_d(1.0 / 355687428096000.0);   /* 1/17!  */
            pc[k] = px256_d(-1.0 / 6402373705728000.0); /* -1/18! */
            p[k] = px256_d(2.0 / 21.0);
        }
        /* the Horner chains, in px_log's and px_sincos_kernel's order */
#define PX_STEP(acc, c, zz)                                                 \
    PX_FOR_K                                         \
        acc[k] = _mm256_add_pd(px256_d(c), _mm256_mul_pd(zz[k], acc[k]))
        PX_STEP(ps, -1.0 / 1307674368000.0, za);
        PX_STEP(pc, 1.0 / 20922789888000.0, za);
        PX_FOR_K
            z[k] = _mm256_mul_pd(s[k], s[k]);
        PX_STEP(ps, 1.0 / 6227020800.0, za);
        PX_STEP(pc, -1.0 / 87178291200.0, za);
        PX_STEP(p, 2.0 / 19.0, z);
        PX_STEP(ps, -1.0 / 39916800.0, za);
        PX_STEP(pc, 1.0 / 479001600.0, za);
        PX_STEP(p, 2.0 / 17.0, z);
        PX_STEP(ps, 1.0 / 362880.0, za);
        PX_STEP(pc, -1.0 / 3628800.0, za);
        PX_STEP(p, 2.0 / 15.0, z);
        PX_STEP(ps, -1.0 / 5040.0, za);
        PX_STEP(pc, 1.0 / 40320.0, za);
        PX_STEP(p, 2.0 / 13.0, z);
        PX_STEP(ps, 1.0 / 120.0, za);
        PX_STEP(pc, -1.0 / 720.0, za);
        PX_STEP(p, 2.0 / 11.0, z);
        PX_STEP(ps, -1.0 / 6.0, za);
        PX_STEP(pc, 1.0 / 24.0, za);
        PX_STEP(p, 2.0 / 9.0, z);
        PX_STEP(pc, -0.5, za);
        PX_STEP(p, 2.0 / 7.0, z);
        PX_STEP(p, 2.0 / 5.0, z);
        PX_STEP(p, 2.0 / 3.0, z);
#undef PX_STEP
        PX_FOR_K {
            __m256d sa = _mm256_add_pd(
                a[k], _mm256_mul_pd(_mm256_mul_pd(a[k], za[k]), ps[k]));
            __m256d ca = _mm256_add_pd(px256_d(1.0),
                                       _mm256_mul_pd(za[k], pc[k]));
            __m256d lm = _mm256_add_pd(
                _mm256_add_pd(s[k], s[k]),
                _mm256_mul_pd(_mm256_mul_pd(s[k], z[k]), p[k]));
            __m256d lg = _mm256_add_pd(
                _mm256_mul_pd(fe[k], px256_d(6.93147180369123816490e-01)),
                _mm256_add_pd(lm, _mm256_mul_pd(
                                      fe[k],
                                      px256_d(1.90821492927058770002e-10))));
            __m256d r = _mm256_sqrt_pd(_mm256_mul_pd(px256_d(-2.0), lg));
            /* PX_QUADRANT: odd q swaps, q = 2, 3 negate the sine, q = 1, 2
             * the cosine (sign-bit XORs: what unary minus does) */
            __m256d swap = _mm256_castsi256_pd(_mm256_slli_epi64(q[k], 63));
            __m256d so = _mm256_blendv_pd(sa, ca, swap);
            __m256d co = _mm256_blendv_pd(ca, sa, swap);
            __m256i two = _mm256_set1_epi64x(2);
            so = _mm256_xor_pd(so, _mm256_castsi256_pd(_mm256_slli_epi64(
                                       _mm256_and_si256(q[k], two), 62)));
            co = _mm256_xor_pd(
                co, _mm256_castsi256_pd(_mm256_slli_epi64(
                        _mm256_and_si256(
                            _mm256_add_epi64(q[k], _mm256_set1_epi64x(1)), two),
                        62)));
            __m256d z0 = _mm256_mul_pd(r, co), z1 = _mm256_mul_pd(r, so);
            /* (z0, z1) of each block, blocks in order */
            __m256d lo = _mm256_unpacklo_pd(z0, z1); /* blocks 0, 2 */
            __m256d hi = _mm256_unpackhi_pd(z0, z1); /* blocks 1, 3 */
            double *o = out + 2 * (i + 4 * (size_t)k);
            _mm256_storeu_pd(o, _mm256_permute2f128_pd(lo, hi, 0x20));
            _mm256_storeu_pd(o + 4, _mm256_permute2f128_pd(lo, hi, 0x31));
        }
    }
    for (; i < nblocks; i++)
        px_normal_f64(w[4 * i], w[4 * i + 1], w[4 * i + 2], w[4 * i + 3],
                      &out[2 * i], &out[2 * i + 1]);
}

/* ---- NORMAL_F32 ------------------------------------------------------
 * px_normal_f32 the same way: 8 pairs of words per vector, PX_NV vectors
 * per iteration, the ln, sin and cos chains side by side; per value the
 * operations and their order of px_normal_f32, px_logf and
 * px_sincosf_kernel. */

/* (float)w for unsigned w, rounded to nearest as a C conversion is: the
 * two 16-bit halves are exact floats, hi * 2^16 is exact, and the one
 * rounding is the final add. */
static inline __attribute__((always_inline)) __m256 px256_u32_to_f(__m256i w)
{
    __m256 hi = _mm256_cvtepi32_ps(_mm256_srli_epi32(w, 16));
    __m256 lo = _mm256_cvtepi32_ps(_mm256_and_si256(w, _mm256_set1_epi32(0xffff)));
    return _mm256_add_ps(_mm256_mul_ps(hi, _mm256_set1_ps(65536.0f)), lo);
}

static inline __attribute__((always_inline)) __m256 px256_f(float v)
{
    return _mm256_set1_ps(v);
}

static void px256_normal_f32(const uint32_t *w, float *out, size_t npairs)
{
    size_t i = 0;
    for (; i + 8 * PX_NV <= npairs; i += 8 * PX_NV) {
        __m256 s[PX_NV], z[PX_NV], fe[PX_NV], a[PX_NV], za[PX_NV];
        __m256 p[PX_NV], ps[PX_NV], pc[PX_NV];
        __m256i q[PX_NV];
        PX_FOR_K {
            /* words w0 of 8 pairs in one vector, w1 in another; both in
             * the lane order (0 1 4 5 | 2 3 6 7) of the pairs, which the
             * unpacks at the store undo */
            const float *src = (const float *)(const void *)(w + 2 * (i + 8 * (size_t)k));
            __m256 lo8 = _mm256_loadu_ps(src), hi8 = _mm256_loadu_ps(src + 8);
            __m256i x0 = _mm256_castps_si256(_mm256_shuffle_ps(lo8, hi8, 0x88));
            __m256i x1 = _mm256_castps_si256(_mm256_shuffle_ps(lo8, hi8, 0xDD));
            __m256 u1 = _mm256_add_ps(
                _mm256_mul_ps(px256_u32_to_f(x0), px256_f(0x1p-32f)),
                px256_f(0x1p-33f));
            /* quarter turn q and the angle a */
            __m256i ii = _mm256_srli_epi32(x1, 8);
            q[k] = _mm256_srli_epi32(
                _mm256_add_epi32(ii, _mm256_set1_epi32(1 << 21)), 22);
            __m256i ri = _mm256_sub_epi32(ii, _mm256_slli_epi32(q[k], 22));
            a[k] = _mm256_mul_ps(
                _mm256_mul_ps(_mm256_cvtepi32_ps(ri), px256_f(0x1p-22f)),
                px256_f(1.57079632679489661923f));
            /* ln: exponent e and mantissa m in [sqrt(2)/2, sqrt(2)) */
            __m256i b = _mm256_castps_si256(u1);
            __m256i mb = _mm256_or_si256(
                _mm256_and_si256(b, _mm256_set1_epi32(0x007fffff)),
                _mm256_set1_epi32(0x3f800000));
            __m256i big = _mm256_cmpgt_epi32(mb, _mm256_set1_epi32(0x3fb504f3));
            mb = _mm256_sub_epi32(mb, _mm256_and_si256(big, _mm256_set1_epi32(1 << 23)));
            __m256i e = _mm256_sub_epi32(
                _mm256_sub_epi32(_mm256_srli_epi32(b, 23), _mm256_set1_epi32(127)),
                big);
            fe[k] = _mm256_cvtepi32_ps(e);
            __m256 f = _mm256_sub_ps(_mm256_castsi256_ps(mb), px256_f(1.0f));
            s[k] = _mm256_div_ps(f, _mm256_add_ps(px256_f(2.0f), f));
            za[k] = _mm256_mul_ps(a[k], a[k]);
            z[k] = _mm256_mul_ps(s[k], s[k]);
            ps[k] = _mm256_add_ps(px256_f(-1.0f / 5040.0f),
                                  _mm256_mul_ps(za[k], px256_f(1.0f / 362880.0f)));
            pc[k] = _mm256_add_ps(px256_f(1.0f / 40320.0f),
                                  _mm256_mul_ps(za[k], px256_f(-1.0f / 3628800.0f)));
            p[k] = px256_f(0x1.c71c72p-3f); /* 2/9 */
        }
#define PX_STEPF(acc, c, zz)                                                \
    PX_FOR_K                                                                \
        acc[k] = _mm256_add_ps(px256_f(c), _mm256_mul_ps(zz[k], acc[k]))
        PX_STEPF(p, 0x1.24924ap-2f, z); /* 2/7 */
        PX_STEPF(ps, 1.0f / 120.0f, za);
        PX_STEPF(pc, -1.0f / 720.0f, za);
        PX_STEPF(p, 0x1.99999ap-2f, z); /* 2/5 */
        PX_STEPF(ps, -1.0f / 6.0f, za);
        PX_STEPF(pc, 1.0f / 24.0f, za);
        PX_STEPF(p, 0x1.555556p-1f, z); /* 2/3 */
        PX_STEPF(pc, -0.5f, za);
#undef PX_STEPF
        PX_FOR_K {
            __m256 sa = _mm256_add_ps(
                a[k], _mm256_mul_ps(_mm256_mul_ps(a[k], za[k]), ps[k]));
            __m256 ca = _mm256_add_ps(px256_f(1.0f), _mm256_mul_ps(za[k], pc[k]));
            __m256 lm = _mm256_add_ps(
                _mm256_add_ps(s[k], s[k]),
                _mm256_mul_ps(_mm256_mul_ps(s[k], z[k]), p[k]));
            __m256 lg = _mm256_add_ps(
                _mm256_mul_ps(fe[k], px256_f(0x1.62e400p-1f)),
                _mm256_add_ps(lm, _mm256_mul_ps(fe[k], px256_f(0x1.7f7d1cp-20f))));
            __m256 r = _mm256_sqrt_ps(_mm256_mul_ps(px256_f(-2.0f), lg));
            /* PX_QUADRANT, as for NORMAL_F64 (q in 0..4, taken mod 4) */
            __m256 swap = _mm256_castsi256_ps(_mm256_slli_epi32(q[k], 31));
            __m256 so = _mm256_blendv_ps(sa, ca, swap);
            __m256 co = _mm256_blendv_ps(ca, sa, swap);
            __m256i two = _mm256_set1_epi32(2);
            so = _mm256_xor_ps(so, _mm256_castsi256_ps(_mm256_slli_epi32(
                                       _mm256_and_si256(q[k], two), 30)));
            co = _mm256_xor_ps(
                co, _mm256_castsi256_ps(_mm256_slli_epi32(
                        _mm256_and_si256(
                            _mm256_add_epi32(q[k], _mm256_set1_epi32(1)), two),
                        30)));
            __m256 z0 = _mm256_mul_ps(r, co), z1 = _mm256_mul_ps(r, so);
            /* lanes 0 1 | 4 5 hold pairs 0 1 | 2 3, lanes 2 3 | 6 7 pairs
             * 4 5 | 6 7: the unpacks give the pairs in order */
            float *o = out + 2 * (i + 8 * (size_t)k);
            _mm256_storeu_ps(o, _mm256_unpacklo_ps(z0, z1));
            _mm256_storeu_ps(o + 8, _mm256_unpackhi_ps(z0, z1));
        }
    }
    for (; i < npairs; i++)
        px_normal_f32(w[2 * i], w[2 * i + 1], &out[2 * i], &out[2 * i + 1]);
}

void px_convert_avx2(rngsnap_dist dist, const uint32_t *w, void *out,
                     size_t nblocks)
{
    if (dist == RNGSNAP_NORMAL_F64)
        px256_normal_f64(w, out, nblocks);
    else if (dist == RNGSNAP_NORMAL_F32)
        px256_normal_f32(w, out, nblocks * 2);
    else
        px_convert_loop(dist, w, out, nblocks);
}

void px_fill_avx2(rngsnap_dist dist, const px_ctr *c, void *out,
                  size_t nblocks, int nt)
{
    px_fill_dispatch(dist, c, out, nblocks, nt, px256_fill_words,
                     px256_fill_f32, px256_fill_f64, px_convert_avx2);
}

#else
void px_fill_avx2(rngsnap_dist dist, const px_ctr *c, void *out,
                  size_t nblocks, int nt)
{
    px_fill_scalar(dist, c, out, nblocks, nt);
}

void px_convert_avx2(rngsnap_dist dist, const uint32_t *w, void *out,
                     size_t nblocks)
{
    px_convert_loop(dist, w, out, nblocks);
}
#endif
