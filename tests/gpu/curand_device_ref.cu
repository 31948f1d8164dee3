/*
 * curand_device_ref.cu - the CURAND_* dists against cuRAND's DEVICE API
 * itself: curand_kernel.h compiled for the host (QUALIFIERS made
 * __host__ __device__), so curand_init + curand_uniform /
 * curand_uniform_double / curand_normal / curand_normal_double run here
 * without a GPU, from any (seed, subsequence, offset), mid-block included.
 *
 * Checked: the uniforms bit for bit; the words consumed (after n calls,
 * cuRAND's next curand() is the engine's next U32, an odd count of normals
 * included: cuRAND keeps the second value of the last pair as its spare,
 * the engine drops it, both have used the same words); the normals within
 * a bound.  The header's host branch uses libm logf/sinf/cosf (double:
 * log, sin, cos); on a GPU it uses logf, __sincosf and sincospi, so this
 * bound is against the host branch (docs/engine.md).
 */
#define QUALIFIERS static __forceinline__ __host__ __device__
#include <curand_kernel.h>
#include <math.h>
#include <string.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

extern "C" {
#include "philox.h"
}

#define N 1001 /* odd: the last pair's second value is cuRAND's spare */

static long bad;

static void fail(const char *what, const rngsnap_philox &at, int i)
{
    if (++bad <= 10)
        printf("FAIL: %s at seed %llx subsequence %llu offset %llu, "
               "value %d\n", what, (unsigned long long)at.seed,
               (unsigned long long)at.subsequence,
               (unsigned long long)at.offset, i);
}

/* After the draw: cuRAND's next word is the engine's next word. */
static void same_position(curandStatePhilox4_32_10_t *cs, rngsnap_philox *st,
                          const rngsnap_philox &at, const char *what)
{
    uint32_t next;
    philox_generate(st, RNGSNAP_U32, &next, 1);
    if (curand(cs) != next)
        fail(what, at, -1);
}

template <typename T>
static double check(rngsnap_dist dist, T (*ref)(curandStatePhilox4_32_10_t *),
                    const rngsnap_philox &at, const char *what, int exact)
{
    static T got[N];
    curandStatePhilox4_32_10_t cs;
    curand_init(at.seed, at.subsequence, at.offset, &cs);
    rngsnap_philox st = at;
    if (philox_generate(&st, dist, got, N) != RNGSNAP_OK)
        fail(what, at, -2);
    double worst = 0;
    for (int i = 0; i < N; i++) {
        T want = ref(&cs);
        if (exact && memcmp(&want, &got[i], sizeof want) != 0)
            fail(what, at, i);
        double e = fabs((double)got[i] - (double)want)
                   / fmax(1.0, fabs((double)want));
        worst = e > worst ? e : worst;
    }
    same_position(&cs, &st, at, what);
    return worst;
}

static float dev_uniform(curandStatePhilox4_32_10_t *s) { return curand_uniform(s); }
static double dev_uniform_double(curandStatePhilox4_32_10_t *s) { return curand_uniform_double(s); }
static float dev_normal(curandStatePhilox4_32_10_t *s) { return curand_normal(s); }
static double dev_normal_double(curandStatePhilox4_32_10_t *s) { return curand_normal_double(s); }

/* Measured here (CUDA 13.0 header, glibc libm): at most 1.3e-6 for
 * floats, 2.9e-15 for doubles, of max(1, |z|); asserted with room. */
#define BOUND_F32 5e-6
#define BOUND_F64 8e-15

int main(void)
{
    static const uint64_t seeds[] = {0, 0x123456789abcdefull};
    static const uint64_t subs[] = {0, 77, (1ull << 40) + 5};
    static const uint64_t offs[] = {0, 1, 2, 3, 5, 4099,
                                    (4ull << 32) - 2, (4ull << 32) + 3};
    double w32 = 0, w64 = 0;
    long draws = 0;
    for (uint64_t seed : seeds)
        for (uint64_t sub : subs)
            for (uint64_t off : offs) {
                rngsnap_philox at = {seed, sub, off};
                check<float>(RNGSNAP_CURAND_UNIFORM_F32, dev_uniform, at,
                             "curand_uniform", 1);
                check<double>(RNGSNAP_CURAND_UNIFORM_F64, dev_uniform_double,
                              at, "curand_uniform_double", 1);
                w32 = fmax(w32, check<float>(RNGSNAP_CURAND_NORMAL_F32,
                                             dev_normal, at, "curand_normal",
                                             0));
                w64 = fmax(w64, check<double>(RNGSNAP_CURAND_NORMAL_F64,
                                              dev_normal_double, at,
                                              "curand_normal_double", 0));
                draws += 4;
            }
    printf("%ld draws of %d values; normals vs the header's host branch: "
           "f32 %.3g, f64 %.3g of max(1, |z|)\n", draws, N, w32, w64);
    if (w32 > BOUND_F32 || w64 > BOUND_F64) {
        printf("FAIL: normals outside the bound (%g, %g)\n", BOUND_F32,
               BOUND_F64);
        bad++;
    }
    return bad != 0;
}
