/*
 * bench_curand.c - cuRAND's host generator (CURAND_RNG_PSEUDO_PHILOX4_32_10,
 * computed on the CPU), loaded with dlopen at run time so the benchmark
 * builds and runs where cuRAND is absent.
 */
#include <dlfcn.h>
#include <stdio.h>

#include "bench.h"

#define CURAND_RNG_PSEUDO_PHILOX4_32_10 161 /* curand.h */

typedef int (*create_fn)(void **gen, int type);
typedef int (*seed_fn)(void *gen, unsigned long long seed);
typedef int (*gen_u32_fn)(void *gen, unsigned int *out, size_t n);
typedef int (*gen_f32_fn)(void *gen, float *out, size_t n);
typedef int (*gen_f64_fn)(void *gen, double *out, size_t n);
typedef int (*gen_nf32_fn)(void *gen, float *out, size_t n, float m, float s);
typedef int (*gen_nf64_fn)(void *gen, double *out, size_t n, double m,
                           double s);

static void *gen;
static gen_u32_fn gen_u32;
static gen_f32_fn gen_f32;
static gen_f64_fn gen_f64;
static gen_nf32_fn gen_nf32;
static gen_nf64_fn gen_nf64;

int bench_curand_load(char *why, size_t len)
{
    const char *names[] = {"libcurand.so.10", "libcurand.so",
                           "/usr/local/cuda/lib64/libcurand.so.10"};
    void *h = NULL;
    for (size_t i = 0; h == NULL && i < sizeof names / sizeof names[0]; i++)
        h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
    if (h == NULL) {
        snprintf(why, len, "libcurand not found (%s)", dlerror());
        return -1;
    }
    create_fn create = (create_fn)dlsym(h, "curandCreateGeneratorHost");
    seed_fn seed = (seed_fn)dlsym(h, "curandSetPseudoRandomGeneratorSeed");
    gen_u32 = (gen_u32_fn)dlsym(h, "curandGenerate");
    gen_f32 = (gen_f32_fn)dlsym(h, "curandGenerateUniform");
    gen_f64 = (gen_f64_fn)dlsym(h, "curandGenerateUniformDouble");
    gen_nf32 = (gen_nf32_fn)dlsym(h, "curandGenerateNormal");
    gen_nf64 = (gen_nf64_fn)dlsym(h, "curandGenerateNormalDouble");
    if (!create || !seed || !gen_u32 || !gen_f32 || !gen_f64 || !gen_nf32 ||
        !gen_nf64) {
        snprintf(why, len, "libcurand lacks the host generator API");
        return -1;
    }
    int rc = create(&gen, CURAND_RNG_PSEUDO_PHILOX4_32_10);
    if (rc == 0)
        rc = seed(gen, 1234);
    if (rc != 0) {
        snprintf(why, len, "curandCreateGeneratorHost failed (status %d)", rc);
        return -1;
    }
    return 0;
}

int bench_curand_fill(int what, void *out, size_t n)
{
    switch (what) {
    case 0: return gen_u32(gen, out, n);
    case 1: return gen_f32(gen, out, n);
    case 2: return gen_f64(gen, out, n);
    case 3: return gen_nf32(gen, out, n & ~(size_t)1, 0.0f, 1.0f);
    default: return gen_nf64(gen, out, n & ~(size_t)1, 0.0, 1.0);
    }
}
