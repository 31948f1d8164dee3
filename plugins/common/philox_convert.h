/*
 * philox_convert.h - the Philox4x32-10 block and every word->value
 * conversion, as small pure inline functions usable from C and from CUDA
 * __device__ code (RNGSNAP_HOSTDEV).  This header is the single definition
 * of the bits every backend must produce; docs/engine.md explains it.
 *
 * Bit-exactness rules (see docs/engine.md, "Normal variates"):
 *  - only IEEE add, sub, mul, div and sqrt in round-to-nearest, written
 *    through the PX_F* / PX_D* macros: on the host they are the plain C
 *    operators (compile with -ffp-contract=off: no FMA contraction); in
 *    CUDA device code they are __fadd_rn/__fmul_rn/... which nvcc never
 *    contracts, whatever -fmad says;
 *  - no libm: log, sin and cos are the polynomials below;
 *  - integer->float conversions are exact or round-to-nearest.
 */
#ifndef RNGSNAP_PHILOX_CONVERT_H
#define RNGSNAP_PHILOX_CONVERT_H

#include <stdint.h>

#if defined(__CUDACC__)
#define RNGSNAP_HOSTDEV static __host__ __device__ __forceinline__
#else
#define RNGSNAP_HOSTDEV static inline
#endif

/* ---- arithmetic that must round the same everywhere -------------------- */
#if defined(__CUDA_ARCH__)
#define PX_FADD(a, b) __fadd_rn((a), (b))
#define PX_FSUB(a, b) __fsub_rn((a), (b))
#define PX_FMUL(a, b) __fmul_rn((a), (b))
#define PX_FDIV(a, b) __fdiv_rn((a), (b))
#define PX_FSQRT(a) __fsqrt_rn(a)
#define PX_DADD(a, b) __dadd_rn((a), (b))
#define PX_DSUB(a, b) __dsub_rn((a), (b))
#define PX_DMUL(a, b) __dmul_rn((a), (b))
#define PX_DDIV(a, b) __ddiv_rn((a), (b))
#define PX_DSQRT(a) __dsqrt_rn(a)
#define PX_U32_TO_F(u) __uint2float_rn(u)
#define PX_F_BITS(f) ((uint32_t)__float_as_uint(f))
#define PX_BITS_F(u) __uint_as_float(u)
#define PX_D_BITS(d) ((uint64_t)__double_as_longlong(d))
#define PX_BITS_D(u) __longlong_as_double((long long)(u))
#else
#define PX_FADD(a, b) ((a) + (b))
#define PX_FSUB(a, b) ((a) - (b))
#define PX_FMUL(a, b) ((a) * (b))
#define PX_FDIV(a, b) ((a) / (b))
#define PX_FSQRT(a) __builtin_sqrtf(a) /* IEEE correctly rounded */
#define PX_DADD(a, b) ((a) + (b))
#define PX_DSUB(a, b) ((a) - (b))
#define PX_DMUL(a, b) ((a) * (b))
#define PX_DDIV(a, b) ((a) / (b))
#define PX_DSQRT(a) __builtin_sqrt(a)
#define PX_U32_TO_F(u) ((float)(uint32_t)(u)) /* round to nearest */
RNGSNAP_HOSTDEV uint32_t px_f_bits(float f)
{
    union { float f; uint32_t u; } v;
    v.f = f;
    return v.u;
}
RNGSNAP_HOSTDEV float px_bits_f(uint32_t u)
{
    union { float f; uint32_t u; } v;
    v.u = u;
    return v.f;
}
RNGSNAP_HOSTDEV uint64_t px_d_bits(double d)
{
    union { double d; uint64_t u; } v;
    v.d = d;
    return v.u;
}
RNGSNAP_HOSTDEV double px_bits_d(uint64_t u)
{
    union { double d; uint64_t u; } v;
    v.u = u;
    return v.d;
}
#define PX_F_BITS(f) px_f_bits(f)
#define PX_BITS_F(u) px_bits_f(u)
#define PX_D_BITS(d) px_d_bits(d)
#define PX_BITS_D(u) px_bits_d(u)
#endif

/* ---- the Philox4x32-10 block (Random123 / cuRAND) ----------------------- */
#define PX_M0 0xD2511F53u
#define PX_M1 0xCD9E8D57u
#define PX_W0 0x9E3779B9u /* golden ratio      */
#define PX_W1 0xBB67AE85u /* sqrt(3) - 1       */

/* out = Philox4x32-10(counter c, key k). */
RNGSNAP_HOSTDEV void px_block(const uint32_t c[4], const uint32_t k[2],
                              uint32_t out[4])
{
    uint32_t x0 = c[0], x1 = c[1], x2 = c[2], x3 = c[3];
    uint32_t k0 = k[0], k1 = k[1];
    for (int r = 0; r < 10; r++) {
        uint64_t p0 = (uint64_t)PX_M0 * x0;
        uint64_t p1 = (uint64_t)PX_M1 * x2;
        x0 = (uint32_t)(p1 >> 32) ^ x1 ^ k0;
        x1 = (uint32_t)p1;
        x2 = (uint32_t)(p0 >> 32) ^ x3 ^ k1;
        x3 = (uint32_t)p0;
        k0 += PX_W0;
        k1 += PX_W1;
    }
    out[0] = x0;
    out[1] = x1;
    out[2] = x2;
    out[3] = x3;
}

/* ---- uniform conversions ------------------------------------------------- */

/* F32: (w >> 8) * 2^-24, in [0, 1), exact. */
RNGSNAP_HOSTDEV float px_u32_to_f32(uint32_t w)
{
    return PX_FMUL((float)(int32_t)(w >> 8), 0x1p-24f);
}

/* U64 from two consecutive words, low word first. */
RNGSNAP_HOSTDEV uint64_t px_words_to_u64(uint32_t lo, uint32_t hi)
{
    return (uint64_t)lo | (uint64_t)hi << 32;
}

/* F64: (u64 >> 11) * 2^-53, in [0, 1), exact. */
RNGSNAP_HOSTDEV double px_u64_to_f64(uint64_t u)
{
    return PX_DMUL((double)(int64_t)(u >> 11), 0x1p-53);
}

/* ---- log, sin, cos for Box-Muller ---------------------------------------- */

/* ln x for x a normal float in (0, 1].  x = 2^e * m, m in [sqrt(1/2),
 * sqrt(2)), ln m = 2 atanh(s), s = (m-1)/(m+1), |s| < 0.1716, by its
 * series to s^9; e*ln2 split in two so that e*LN2_HI is exact. */
RNGSNAP_HOSTDEV float px_logf(float x)
{
    uint32_t b = PX_F_BITS(x);
    int32_t e = (int32_t)(b >> 23) - 127;
    uint32_t mb = (b & 0x007fffffu) | 0x3f800000u; /* m in [1, 2) */
    uint32_t big = mb > 0x3fb504f3u; /* m > sqrt(2): halve it (exact) */
    mb -= big << 23;                  /* branch-free: vectorisable     */
    e += (int32_t)big;
    float f = PX_FSUB(PX_BITS_F(mb), 1.0f); /* exact (Sterbenz) */
    float s = PX_FDIV(f, PX_FADD(2.0f, f));
    float z = PX_FMUL(s, s);
    float p = 0x1.c71c72p-3f; /* 2/9 */
    p = PX_FADD(0x1.24924ap-2f /* 2/7 */, PX_FMUL(z, p));
    p = PX_FADD(0x1.99999ap-2f /* 2/5 */, PX_FMUL(z, p));
    p = PX_FADD(0x1.555556p-1f /* 2/3 */, PX_FMUL(z, p));
    float lm = PX_FADD(PX_FADD(s, s), PX_FMUL(PX_FMUL(s, z), p));
    float fe = (float)e;
    return PX_FADD(PX_FMUL(fe, 0x1.62e400p-1f /* ln2 hi */),
                   PX_FADD(lm, PX_FMUL(fe, 0x1.7f7d1cp-20f /* ln2 lo */)));
}

/* ln x for x a normal double in (0, 1]; same method, series to s^21. */
RNGSNAP_HOSTDEV double px_log(double x)
{
    uint64_t b = PX_D_BITS(x);
    int32_t e = (int32_t)(b >> 52) - 1023;
    uint64_t mb = (b & 0x000fffffffffffffull) | 0x3ff0000000000000ull;
    uint64_t big = mb > 0x3ff6a09e667f3bcdull; /* m > sqrt(2) */
    mb -= big << 52;
    e += (int32_t)big;
    double f = PX_DSUB(PX_BITS_D(mb), 1.0);
    double s = PX_DDIV(f, PX_DADD(2.0, f));
    double z = PX_DMUL(s, s);
    /* 2/(2k+1) for k = 10 down to 1 */
    double p = 2.0 / 21.0;
    p = PX_DADD(2.0 / 19.0, PX_DMUL(z, p));
    p = PX_DADD(2.0 / 17.0, PX_DMUL(z, p));
    p = PX_DADD(2.0 / 15.0, PX_DMUL(z, p));
    p = PX_DADD(2.0 / 13.0, PX_DMUL(z, p));
    p = PX_DADD(2.0 / 11.0, PX_DMUL(z, p));
    p = PX_DADD(2.0 / 9.0, PX_DMUL(z, p));
    p = PX_DADD(2.0 / 7.0, PX_DMUL(z, p));
    p = PX_DADD(2.0 / 5.0, PX_DMUL(z, p));
    p = PX_DADD(2.0 / 3.0, PX_DMUL(z, p));
    double lm = PX_DADD(PX_DADD(s, s), PX_DMUL(PX_DMUL(s, z), p));
    double fe = (double)e;
    return PX_DADD(PX_DMUL(fe, 6.93147180369123816490e-01 /* ln2 hi */),
                        PX_DADD(lm, PX_DMUL(fe, 1.90821492927058770002e-10)));
}

/* sin a and cos a for |a| <= pi/4, Taylor series (to a^9 / a^10). */
RNGSNAP_HOSTDEV void px_sincosf_kernel(float a, float *s, float *c)
{
    float z = PX_FMUL(a, a);
    float ps = PX_FADD(-1.0f / 5040.0f, PX_FMUL(z, 1.0f / 362880.0f));
    ps = PX_FADD(1.0f / 120.0f, PX_FMUL(z, ps));
    ps = PX_FADD(-1.0f / 6.0f, PX_FMUL(z, ps));
    *s = PX_FADD(a, PX_FMUL(PX_FMUL(a, z), ps));
    float pc = PX_FADD(1.0f / 40320.0f, PX_FMUL(z, -1.0f / 3628800.0f));
    pc = PX_FADD(-1.0f / 720.0f, PX_FMUL(z, pc));
    pc = PX_FADD(1.0f / 24.0f, PX_FMUL(z, pc));
    pc = PX_FADD(-0.5f, PX_FMUL(z, pc));
    *c = PX_FADD(1.0f, PX_FMUL(z, pc));
}

/* sin a and cos a for |a| <= pi/4, Taylor series (to a^17 / a^18). */
RNGSNAP_HOSTDEV void px_sincos_kernel(double a, double *s, double *c)
{
    double z = PX_DMUL(a, a);
    double ps = 1.0 / 355687428096000.0; /* 1/17! */
    ps = PX_DADD(-1.0 / 1307674368000.0, PX_DMUL(z, ps));
    ps = PX_DADD(1.0 / 6227020800.0, PX_DMUL(z, ps));
    ps = PX_DADD(-1.0 / 39916800.0, PX_DMUL(z, ps));
    ps = PX_DADD(1.0 / 362880.0, PX_DMUL(z, ps));
    ps = PX_DADD(-1.0 / 5040.0, PX_DMUL(z, ps));
    ps = PX_DADD(1.0 / 120.0, PX_DMUL(z, ps));
    ps = PX_DADD(-1.0 / 6.0, PX_DMUL(z, ps));
    *s = PX_DADD(a, PX_DMUL(PX_DMUL(a, z), ps));
    double pc = -1.0 / 6402373705728000.0; /* -1/18! */
    pc = PX_DADD(1.0 / 20922789888000.0, PX_DMUL(z, pc));
    pc = PX_DADD(-1.0 / 87178291200.0, PX_DMUL(z, pc));
    pc = PX_DADD(1.0 / 479001600.0, PX_DMUL(z, pc));
    pc = PX_DADD(-1.0 / 3628800.0, PX_DMUL(z, pc));
    pc = PX_DADD(1.0 / 40320.0, PX_DMUL(z, pc));
    pc = PX_DADD(-1.0 / 720.0, PX_DMUL(z, pc));
    pc = PX_DADD(1.0 / 24.0, PX_DMUL(z, pc));
    pc = PX_DADD(-0.5, PX_DMUL(z, pc));
    *c = PX_DADD(1.0, PX_DMUL(z, pc));
}

/* ---- normal variates: Box-Muller --------------------------------------- */

/* (sin, cos) of q*pi/2 + a from (s, c) = (sin a, cos a): odd q swaps
 * them, q = 2, 3 negate the sine, q = 1, 2 the cosine.  Selects and
 * negations only (exact, branch-free). */
#define PX_QUADRANT(q, s, c, so, co)                                  \
    do {                                                              \
        uint32_t q_ = (uint32_t)(q);                                  \
        *(so) = (q_ & 1u) ? (c) : (s);                                \
        *(co) = (q_ & 1u) ? (s) : (c);                                \
        *(so) = (q_ & 2u) ? -*(so) : *(so);                           \
        *(co) = ((q_ + 1u) & 2u) ? -*(co) : *(co);                    \
    } while (0)

/* sin and cos of q*pi/2 + a, |a| <= pi/4 (q taken mod 4). */
RNGSNAP_HOSTDEV void px_sincosf_quarter(uint32_t q, float a, float *so,
                                        float *co)
{
    float s, c;
    px_sincosf_kernel(a, &s, &c);
    PX_QUADRANT(q, s, c, so, co);
}

RNGSNAP_HOSTDEV void px_sincos_quarter(uint32_t q, double a, double *so,
                                       double *co)
{
    double s, c;
    px_sincos_kernel(a, &s, &c);
    PX_QUADRANT(q, s, c, so, co);
}

/* Two standard normal floats from two words (one pair).
 * u1 = w0 * 2^-32 + 2^-33 in (0, 1] (cuRAND's curand_uniform formula),
 * theta = 2*pi * (w1 >> 8) * 2^-24, reduced exactly to a quadrant q and
 * a in [-pi/4, pi/4).  z0 = r cos theta, z1 = r sin theta,
 * r = sqrt(-2 ln u1). */
RNGSNAP_HOSTDEV void px_normal_f32(uint32_t w0, uint32_t w1, float *z0,
                                   float *z1)
{
    float u1 = PX_FADD(PX_FMUL(PX_U32_TO_F(w0), 0x1p-32f), 0x1p-33f);
    float r = PX_FSQRT(PX_FMUL(-2.0f, px_logf(u1)));
    uint32_t i = w1 >> 8;                   /* theta = 2pi * i / 2^24 */
    uint32_t q = (i + (1u << 21)) >> 22;    /* nearest quarter turn   */
    int32_t ri = (int32_t)i - (int32_t)(q << 22); /* [-2^21, 2^21)    */
    float a = PX_FMUL(PX_FMUL((float)ri, 0x1p-22f),
                      1.57079632679489661923f /* pi/2 */);
    float so, co;
    px_sincosf_quarter(q, a, &so, &co);
    *z0 = PX_FMUL(r, co);
    *z1 = PX_FMUL(r, so);
}

/* A word as an exact double, w * 2^-32 in [0, 1), through a signed
 * conversion: (int32)(w ^ 2^31) = w - 2^31, then + 0.5 (exact).  AVX2 has
 * no unsigned or 64-bit integer -> double conversion; this vectorises. */
RNGSNAP_HOSTDEV double px_u32_unit_f64(uint32_t w)
{
    return PX_DADD(PX_DMUL((double)(int32_t)(w ^ 0x80000000u), 0x1p-32), 0.5);
}

/* Two standard normal doubles from four words (one block):
 * u1 = ((U64(w0,w1) >> 11) + 1) * 2^-53 in (0, 1],
 * theta = 2*pi * (U64(w2,w3) >> 11) * 2^-53; otherwise as above.
 * The 53-bit integers are never formed: each input is built as a sum of
 * two exact doubles whose exact sum has at most 53 bits, so it equals the
 * 64-bit formula bit for bit (docs/engine.md, "NORMAL_F64 at vector
 * speed"), and gcc vectorises the loop (32-bit -> double only):
 *   u1 = w1 * 2^-32 + ((w0 >> 11) + 1) * 2^-53   ((w0>>11)+1 <= 2^21);
 *   i = U64(w2,w3) >> 11 = w3 * 2^21 + (w2 >> 11); the nearest quarter
 *   turn q = (i + 2^50) >> 51 = (w3 + 2^29) >> 30 (mod 4, the carry from
 *   the low part is nil), ri = i - q 2^51 = h 2^21 + (w2 >> 11) with
 *   h = (int32)(w3 - q 2^30) in [-2^29, 2^29), so
 *   ri * 2^-51 = h * 2^-30 + (w2 >> 11) * 2^-51, exact. */
RNGSNAP_HOSTDEV void px_normal_f64(uint32_t w0, uint32_t w1, uint32_t w2,
                                   uint32_t w3, double *z0, double *z1)
{
    double u1 = PX_DADD(px_u32_unit_f64(w1),
                        PX_DMUL((double)(int32_t)((w0 >> 11) + 1), 0x1p-53));
    uint32_t q = (w3 + (1u << 29)) >> 30;
    int32_t h = (int32_t)(w3 - (q << 30));
    double t = PX_DADD(PX_DMUL((double)h, 0x1p-30),
                       PX_DMUL((double)(int32_t)(w2 >> 11), 0x1p-51));
    double a = PX_DMUL(t, 1.57079632679489661923 /* pi/2 */);
    /* r = sqrt(-2 px_log(u1)) and px_sincos_kernel(a): the same operations
     * in the same order within each chain, but the three Horner chains
     * (ln, sin, cos) interleaved statement by statement, so that the
     * vectorised loop keeps independent work next to each other (the loop
     * is latency-bound: +20% on Zen 3).  Keep in step with px_log and
     * px_sincos_kernel; the engine vector tests pin the bits. */
    uint64_t b = PX_D_BITS(u1);
    int32_t e = (int32_t)(b >> 52) - 1023;
    uint64_t mb = (b & 0x000fffffffffffffull) | 0x3ff0000000000000ull;
    uint64_t big = mb > 0x3ff6a09e667f3bcdull; /* m > sqrt(2) */
    mb -= big << 52;
    e += (int32_t)big;
    double f = PX_DSUB(PX_BITS_D(mb), 1.0);
    double s = PX_DDIV(f, PX_DADD(2.0, f));
    double za = PX_DMUL(a, a);
    double ps = 1.0 / 355687428096000.0;   /* 1/17!  */
    double pc = -1.0 / 6402373705728000.0; /* -1/18! */
    ps = PX_DADD(-1.0 / 1307674368000.0, PX_DMUL(za, ps));
    pc = PX_DADD(1.0 / 20922789888000.0, PX_DMUL(za, pc));
    ps = PX_DADD(1.0 / 6227020800.0, PX_DMUL(za, ps));
    pc = PX_DADD(-1.0 / 87178291200.0, PX_DMUL(za, pc));
    double z = PX_DMUL(s, s);
    double p = 2.0 / 21.0;
    p = PX_DADD(2.0 / 19.0, PX_DMUL(z, p));
    ps = PX_DADD(-1.0 / 39916800.0, PX_DMUL(za, ps));
    pc = PX_DADD(1.0 / 479001600.0, PX_DMUL(za, pc));
    p = PX_DADD(2.0 / 17.0, PX_DMUL(z, p));
    ps = PX_DADD(1.0 / 362880.0, PX_DMUL(za, ps));
    pc = PX_DADD(-1.0 / 3628800.0, PX_DMUL(za, pc));
    p = PX_DADD(2.0 / 15.0, PX_DMUL(z, p));
    ps = PX_DADD(-1.0 / 5040.0, PX_DMUL(za, ps));
    pc = PX_DADD(1.0 / 40320.0, PX_DMUL(za, pc));
    p = PX_DADD(2.0 / 13.0, PX_DMUL(z, p));
    ps = PX_DADD(1.0 / 120.0, PX_DMUL(za, ps));
    pc = PX_DADD(-1.0 / 720.0, PX_DMUL(za, pc));
    p = PX_DADD(2.0 / 11.0, PX_DMUL(z, p));
    ps = PX_DADD(-1.0 / 6.0, PX_DMUL(za, ps));
    pc = PX_DADD(1.0 / 24.0, PX_DMUL(za, pc));
    p = PX_DADD(2.0 / 9.0, PX_DMUL(z, p));
    double sa = PX_DADD(a, PX_DMUL(PX_DMUL(a, za), ps));
    pc = PX_DADD(-0.5, PX_DMUL(za, pc));
    p = PX_DADD(2.0 / 7.0, PX_DMUL(z, p));
    double ca = PX_DADD(1.0, PX_DMUL(za, pc));
    p = PX_DADD(2.0 / 5.0, PX_DMUL(z, p));
    p = PX_DADD(2.0 / 3.0, PX_DMUL(z, p));
    double lm = PX_DADD(PX_DADD(s, s), PX_DMUL(PX_DMUL(s, z), p));
    double fe = (double)e;
    double lg = PX_DADD(PX_DMUL(fe, 6.93147180369123816490e-01 /* ln2 hi */),
                        PX_DADD(lm, PX_DMUL(fe, 1.90821492927058770002e-10)));
    double r = PX_DSQRT(PX_DMUL(-2.0, lg));
    double so, co;
    PX_QUADRANT(q, sa, ca, &so, &co);
    *z0 = PX_DMUL(r, co);
    *z1 = PX_DMUL(r, so);
}

/* ---- cuRAND-exact conversions (curand_uniform.h, curand_normal.h) ------- */

/* curand_uniform(): w * 2^-32 + 2^-33 in float, in (0, 1].  The product is
 * exact, so cuRAND's FMA-contracted device form gives the same bits. */
RNGSNAP_HOSTDEV float px_curand_uniform(uint32_t w)
{
    return PX_FADD(PX_FMUL(PX_U32_TO_F(w), 0x1p-32f), 0x1p-33f);
}

/* curand_uniform_double() for Philox4_32_10 takes ONE word:
 * w * 2^-32 + 2^-32, in (0, 1], exact. */
RNGSNAP_HOSTDEV double px_curand_uniform_double(uint32_t w)
{
    return PX_DADD(PX_DMUL((double)w, 0x1p-32), 0x1p-32);
}

/* curand_normal() pair (_curand_box_muller): u = curand_uniform(w0),
 * angle v = 2 pi (w1 + 1/2) / 2^32, z0 = r sin v, z1 = r cos v (cuRAND's
 * order), r = sqrt(-2 ln u).  cuRAND rounds v to a float before its fast
 * __sincosf; here v is reduced exactly: t = 2 w1 + 1 of 2^33 per turn. */
RNGSNAP_HOSTDEV void px_curand_normal_f32(uint32_t w0, uint32_t w1,
                                          float *z0, float *z1)
{
    float r = PX_FSQRT(PX_FMUL(-2.0f, px_logf(px_curand_uniform(w0))));
    uint64_t t = 2 * (uint64_t)w1 + 1;
    uint32_t q = (uint32_t)((t + (1ull << 30)) >> 31); /* quarter turns */
    int32_t ri = (int32_t)((int64_t)t - ((int64_t)q << 31)); /* odd */
    float a = PX_FMUL(PX_FMUL((float)ri, 0x1p-31f),
                      1.57079632679489661923f /* pi/2 */);
    float so, co;
    px_sincosf_quarter(q, a, &so, &co);
    *z0 = PX_FMUL(r, so);
    *z1 = PX_FMUL(r, co);
}

/* curand_normal_double() pair (_curand_box_muller_double) from four words:
 * u = zx * 2^-53 + 2^-54, v = zy * 2^-52 + 2^-53 (both rounded as cuRAND
 * does), zx = w0 ^ w1 << 21, zy = w2 ^ w3 << 21; z0 = r sin(pi v),
 * z1 = r cos(pi v).  v * 2^53 is an integer below 2^54 + 1: the angle is
 * reduced exactly from it, so only ln, sin, cos and sqrt round. */
RNGSNAP_HOSTDEV void px_curand_normal_f64(uint32_t w0, uint32_t w1,
                                          uint32_t w2, uint32_t w3,
                                          double *z0, double *z1)
{
    uint64_t zx = (uint64_t)w0 ^ (uint64_t)w1 << 21;
    uint64_t zy = (uint64_t)w2 ^ (uint64_t)w3 << 21;
    double u = PX_DADD(PX_DMUL((double)(int64_t)zx, 0x1p-53), 0x1p-54);
    double r = PX_DSQRT(PX_DMUL(-2.0, px_log(u)));
    double v = PX_DADD(PX_DMUL((double)(int64_t)zy, 0x1p-52), 0x1p-53);
    uint64_t t = (uint64_t)PX_DMUL(v, 0x1p53); /* exact, 2^54 per turn */
    uint64_t q = (t + (1ull << 51)) >> 52;
    int64_t ri = (int64_t)t - (int64_t)(q << 52); /* [-2^51, 2^51] */
    double a = PX_DMUL(PX_DMUL((double)ri, 0x1p-52),
                       1.57079632679489661923 /* pi/2 */);
    double so, co;
    px_sincos_quarter((uint32_t)q, a, &so, &co);
    *z0 = PX_DMUL(r, so);
    *z1 = PX_DMUL(r, co);
}

#endif /* RNGSNAP_PHILOX_CONVERT_H */
