/*
 * test_curand_host.c - the CURAND_* dists against NVIDIA cuRAND's own host
 * generator (curandCreateGeneratorHost, CURAND_RNG_PSEUDO_PHILOX4_32_10),
 * loaded with dlopen: exit 77 (skip) where libcurand is absent.
 *
 * The host generator's order (measured here, CURAND_ORDERING_PSEUDO_DEFAULT):
 * output group g comes from subsequence g % 65536 and the (g / 65536)-th
 * run of that subsequence's words; a group is one Philox block (4 floats:
 * uniforms, or the two curand_normal pairs (w0,w1), (w2,w3)) or, for
 * curandGenerateNormalDouble, two blocks (4 doubles: two
 * curand_normal_double pairs).  curandSetGeneratorOffset(k) skips k
 * outputs.  Its curandGenerateUniformDouble uses two words per value
 * (curand_uniform2_double's formula), not curand_uniform_double's one word:
 * CURAND_UNIFORM_F64 is checked against the device header instead
 * (tests/gpu/curand_device_ref.cu).
 *
 * Uniforms: bit for bit.  Normals: within the bound docs/engine.md gives
 * (the host library's logf/sinf/cosf are not this engine's polynomials).
 */
#include <dlfcn.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "philox.h"
#include "philox_isa.h"

#define CURAND_RNG_PSEUDO_PHILOX4_32_10 161 /* curand.h */
#define HOST_SUBSEQS 65536u /* groups per round of the host generator */
#define ROUNDS 2            /* every subsequence's groups 0 and 1 */

typedef int (*create_fn)(void **gen, int type);
typedef int (*set_fn)(void *gen, unsigned long long v);
typedef int (*gen_f32_fn)(void *gen, float *out, size_t n);
typedef int (*gen_n32_fn)(void *gen, float *out, size_t n, float m, float s);
typedef int (*gen_n64_fn)(void *gen, double *out, size_t n, double m,
                          double s);

static struct {
    void *gen;
    set_fn seed, offset;
    gen_f32_fn uniform;
    gen_n32_fn normal;
    gen_n64_fn normal_double;
} cu;

static int curand_load(void)
{
    const char *names[] = {"libcurand.so.10", "libcurand.so",
                           "/usr/local/cuda/lib64/libcurand.so.10",
                           "/usr/local/cuda/lib64/libcurand.so"};
    void *h = NULL;
    for (size_t i = 0; h == NULL && i < sizeof names / sizeof *names; i++)
        h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
    if (h == NULL)
        return -1;
    create_fn create = (create_fn)dlsym(h, "curandCreateGeneratorHost");
    cu.seed = (set_fn)dlsym(h, "curandSetPseudoRandomGeneratorSeed");
    cu.offset = (set_fn)dlsym(h, "curandSetGeneratorOffset");
    cu.uniform = (gen_f32_fn)dlsym(h, "curandGenerateUniform");
    cu.normal = (gen_n32_fn)dlsym(h, "curandGenerateNormal");
    cu.normal_double = (gen_n64_fn)dlsym(h, "curandGenerateNormalDouble");
    if (!create || !cu.seed || !cu.offset || !cu.uniform || !cu.normal ||
        !cu.normal_double)
        return -1;
    return create(&cu.gen, CURAND_RNG_PSEUDO_PHILOX4_32_10) == 0 ? 0 : -1;
}

/* The seed does not reset the position: set both. */
static void curand_at(uint64_t seed, uint64_t offset)
{
    assert_int_equal(cu.seed(cu.gen, seed), 0);
    assert_int_equal(cu.offset(cu.gen, offset), 0);
}

/* The host generator's first ROUNDS * 65536 groups of G values of dist,
 * made by the engine on path isa: each subsequence's ROUNDS * G values
 * from offset 0 in one fill, scattered to the groups they feed. */
static void *engine_layout(rngsnap_dist dist, unsigned G, uint64_t seed,
                           philox_isa isa)
{
    size_t size = philox_value_size(dist), per = (size_t)ROUNDS * G;
    char *all = malloc(per * HOST_SUBSEQS * size), *mine = malloc(per * size);
    assert_non_null(all);
    assert_non_null(mine);
    for (uint64_t s = 0; s < HOST_SUBSEQS; s++) {
        rngsnap_philox st = {seed, s, 0};
        assert_int_equal(philox_generate_isa(&st, dist, mine, per, isa),
                         RNGSNAP_OK);
        for (unsigned r = 0; r < ROUNDS; r++)
            memcpy(all + ((r * HOST_SUBSEQS + s) * G) * size,
                   mine + (size_t)r * G * size, G * size);
    }
    free(mine);
    return all;
}

static int npaths;
static philox_isa paths[PHILOX_ISA_COUNT];

static int setup(void **state)
{
    (void)state;
    for (int i = PHILOX_ISA_SCALAR; i < PHILOX_ISA_COUNT; i++)
        if (philox_isa_supported((philox_isa)i))
            paths[npaths++] = (philox_isa)i;
    return 0;
}

static const uint64_t seeds[] = {0, 0x123456789abcdefull, 0xfedcba9876543210ull};
#define NVALS ((size_t)ROUNDS * HOST_SUBSEQS * 4)

static void test_uniform_f32_bit_exact(void **state)
{
    (void)state;
    float *got = malloc(NVALS * sizeof *got);
    assert_non_null(got);
    for (size_t si = 0; si < sizeof seeds / sizeof *seeds; si++)
        for (int p = 0; p < npaths; p++) {
            float *want = engine_layout(RNGSNAP_CURAND_UNIFORM_F32, 4,
                                        seeds[si], paths[p]);
            for (uint64_t off = 0; off < 8; off += 3) { /* 0, 3, 6 */
                curand_at(seeds[si], off);
                assert_int_equal(cu.uniform(cu.gen, got, NVALS - off), 0);
                assert_memory_equal(got, want + off,
                                    (NVALS - off) * sizeof *got);
            }
            free(want);
        }
    free(got);
}

/* Largest |a - b| / max(1, |b|), b cuRAND's value. */
static double worst(const double *a, const double *b, size_t n)
{
    double w = 0;
    for (size_t i = 0; i < n; i++) {
        double e = fabs(a[i] - b[i]) / fmax(1.0, fabs(b[i]));
        w = e > w ? e : w;
    }
    return w;
}

/* Measured on this machine (CUDA 13.0 libcurand, x86-64, 3 seeds x 2^19
 * values): at most 2.1e-6 for floats, 2.9e-15 for doubles; asserted with
 * some room, as docs/engine.md states. */
#define BOUND_F32 5e-6
#define BOUND_F64 8e-15

static void test_normal_f32_within_bound(void **state)
{
    (void)state;
    float *got = malloc(NVALS * sizeof *got);
    double *g = malloc(NVALS * sizeof *g), *w = malloc(NVALS * sizeof *w);
    assert_true(got && g && w);
    for (size_t si = 0; si < sizeof seeds / sizeof *seeds; si++)
        for (int p = 0; p < npaths; p++) {
            float *want = engine_layout(RNGSNAP_CURAND_NORMAL_F32, 4,
                                        seeds[si], paths[p]);
            curand_at(seeds[si], 0);
            assert_int_equal(cu.normal(cu.gen, got, NVALS, 0.0f, 1.0f), 0);
            for (size_t i = 0; i < NVALS; i++) {
                g[i] = got[i];
                w[i] = want[i];
            }
            double e = worst(w, g, NVALS);
            fprintf(stderr, "# curand_normal_f32 seed %zu %s: %.3g\n", si,
                    philox_isa_name(paths[p]), e);
            assert_true(e <= BOUND_F32);
            free(want);
        }
    free(got);
    free(g);
    free(w);
}

static void test_normal_f64_within_bound(void **state)
{
    (void)state;
    /* a group: two blocks, 4 doubles (two curand_normal_double pairs) */
    double *got = malloc(NVALS * sizeof *got);
    assert_non_null(got);
    for (size_t si = 0; si < sizeof seeds / sizeof *seeds; si++)
        for (int p = 0; p < npaths; p++) {
            double *want = engine_layout(RNGSNAP_CURAND_NORMAL_F64, 4,
                                         seeds[si], paths[p]);
            curand_at(seeds[si], 0);
            assert_int_equal(cu.normal_double(cu.gen, got, NVALS, 0.0, 1.0),
                             0);
            double e = worst(want, got, NVALS);
            fprintf(stderr, "# curand_normal_f64 seed %zu %s: %.3g\n", si,
                    philox_isa_name(paths[p]), e);
            assert_true(e <= BOUND_F64);
            free(want);
        }
    free(got);
}

int main(void)
{
    if (curand_load() != 0) {
        printf("skipped: libcurand's host generator is not available\n");
        return 77;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_uniform_f32_bit_exact),
        cmocka_unit_test(test_normal_f32_within_bound),
        cmocka_unit_test(test_normal_f64_within_bound),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
