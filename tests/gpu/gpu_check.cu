/*
 * gpu_check.cu - the cuda backend on a real GPU (meson suite "gpu").
 *
 *  1. cuda stream output (device memory) == the cpu engine's output
 *     (philox_generate, what the cpu backend runs) bit for bit, for U32,
 *     U64, F32, F64 over 1e8 words at several offsets (mid-block, odd, past
 *     2^32 blocks), and for the normals over 1e6 words;
 *  2. a kernel calling cuRAND's own device API, curand_init(seed,
 *     subsequence, offset) / curand(), with a triple from rngsnap_reserve
 *     makes the same words as the stream;
 *  3. save on the GPU, load in a new process (this program re-executed),
 *     bit-exact continuation;
 *  4. timing (CUDA events) of a 1 GiB fill against cudaMemset and
 *     curandGenerate (libcurand opened at run time).
 *
 * Without a GPU (or a driver) it prints why and exits 77 (Meson: skipped).
 *
 * usage: gpu_check                      all checks
 *        gpu_check --continue INI CKPT WANT   (internal: the new process)
 */
#include <cuda_runtime.h>
#include <curand.h>
#include <curand_kernel.h>
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <rngsnap.h>
#include "philox.h" /* the cpu engine: the reference */

#define SKIP 77
#define WORDS_BIG 100000000ull /* 1e8 words per uniform comparison */

static int failures = 0;

#define CHECK(cond, ...)                                               \
    do {                                                               \
        if (!(cond)) {                                                 \
            printf("FAIL %s:%d: ", __FILE__, __LINE__);                \
            printf(__VA_ARGS__);                                       \
            printf("\n");                                              \
            failures++;                                                \
        }                                                              \
    } while (0)

#define CUDA_OK(call)                                                  \
    do {                                                               \
        cudaError_t e_ = (call);                                       \
        if (e_ != cudaSuccess) {                                       \
            printf("FAIL %s:%d: %s: %s\n", __FILE__, __LINE__, #call,  \
                   cudaGetErrorString(e_));                            \
            exit(1);                                                   \
        }                                                              \
    } while (0)

/* ---- setup --------------------------------------------------------------- */

static char g_dir[512], g_ini[600];

static void write_ini(void)
{
    const char *pd = getenv("RNGSNAP_PLUGIN_BUILD_DIR");
    if (pd == NULL) {
        printf("RNGSNAP_PLUGIN_BUILD_DIR not set (run under meson test)\n");
        exit(2);
    }
    const char *t = getenv("TMPDIR");
    snprintf(g_dir, sizeof g_dir, "%s/rngsnap-gpu-XXXXXX",
             t != NULL && *t ? t : "/tmp");
    if (mkdtemp(g_dir) == NULL) {
        perror("mkdtemp");
        exit(2);
    }
    snprintf(g_ini, sizeof g_ini, "%s/gpu.ini", g_dir);
    FILE *f = fopen(g_ini, "w");
    if (f == NULL) {
        perror(g_ini);
        exit(2);
    }
    /* Real devices only: no emulate_devices, cuda required. */
    fprintf(f, "[rngsnap]\nplugin_dir = %s\n\n[backend.cpu]\n"
               "plugin = rngsnap_cpu\nrequired = true\nstreams = default\n\n"
               "[backend.cuda]\nplugin = rngsnap_cuda\nrequired = true\n"
               "streams = default, dropout\n", pd);
    fclose(f);
}

static rngsnap *open_ctx(unsigned flags)
{
    rngsnap *ctx = NULL;
    int rc = rngsnap_open(&ctx, g_ini, flags);
    /* main() saw a GPU, so a cuda backend without devices is a failure. */
    if (rc != RNGSNAP_OK) {
        printf("FAIL: open %s: %s\n", g_ini, rngsnap_errmsg(NULL));
        exit(1);
    }
    rngsnap_set_rank(ctx, 0, 1);
    return ctx;
}

static rngsnap_stream *cuda_stream(rngsnap *ctx, const char *name)
{
    rngsnap_stream *s = NULL;
    if (rngsnap_stream_find(ctx, "cuda", 0, name, &s) != RNGSNAP_OK) {
        printf("FAIL: no cuda/0/%s: %s\n", name, rngsnap_errmsg(ctx));
        exit(1);
    }
    return s;
}

/* ---- 1. cuda == cpu --------------------------------------------------------- */

static size_t first_diff(const void *a, const void *b, size_t n, size_t sz)
{
    const unsigned char *x = (const unsigned char *)a,
                        *y = (const unsigned char *)b;
    if (memcmp(x, y, n * sz) == 0) /* the common case, fast */
        return n;
    for (size_t i = 0; i < n; i++)
        if (memcmp(x + i * sz, y + i * sz, sz) != 0)
            return i;
    return n;
}

static void compare_at(rngsnap *ctx, rngsnap_stream *s, rngsnap_dist dist,
                       size_t n, void *dev, void *got, void *want)
{
    rngsnap_philox at;
    rngsnap_stream_position(s, &at);
    rngsnap_philox ref = at;
    size_t sz = rngsnap_dist_size(dist);
    int rc = rngsnap_generate(s, dist, dev, n);
    CHECK(rc == RNGSNAP_OK, "generate %s: %s", rngsnap_dist_name(dist),
          rngsnap_errmsg(ctx));
    CUDA_OK(cudaMemcpy(got, dev, n * sz, cudaMemcpyDeviceToHost));
    CHECK(philox_generate(&ref, dist, want, n) == RNGSNAP_OK, "cpu engine");
    rngsnap_philox after;
    rngsnap_stream_position(s, &after);
    CHECK(after.offset == ref.offset, "cuda stream advanced to %llu, cpu "
          "engine to %llu", (unsigned long long)after.offset,
          (unsigned long long)ref.offset);
    size_t d = first_diff(got, want, n, sz);
    printf("  %-10s %10zu values at offset %llu (block %llu + %llu): %s\n",
           rngsnap_dist_name(dist), n, (unsigned long long)at.offset,
           (unsigned long long)(at.offset / 4),
           (unsigned long long)(at.offset % 4),
           d == n ? "equal" : "DIFFERENT");
    CHECK(d == n, "%s differs at value %zu of %zu (offset %llu)",
          rngsnap_dist_name(dist), d, n, (unsigned long long)at.offset);
}

static void check_equal_cpu(void)
{
    printf("1. cuda output == cpu engine output, bit for bit\n");
    rngsnap *ctx = open_ctx(0);
    rngsnap_stream *s = cuda_stream(ctx, "default");
    CHECK(rngsnap_stream_memory(s) == RNGSNAP_MEMORY_DEVICE,
          "cuda stream does not write device memory: is the plugin built "
          "with nvcc?");
    CHECK(rngsnap_seed_all(ctx, 0x5eed) == RNGSNAP_OK, "seed");
    size_t bytes = WORDS_BIG * 4;
    void *dev = NULL;
    CUDA_OK(cudaMalloc(&dev, bytes));
    void *got = malloc(bytes), *want = malloc(bytes);
    if (got == NULL || want == NULL) {
        printf("FAIL: out of host memory\n");
        exit(1);
    }
    /* Offsets: block-aligned, +1, +2, +3 words, then past 2^32 blocks. */
    const uint64_t skips[] = {0, 1, 1, 1, (4ull << 32) + 5};
    const rngsnap_dist uni[] = {RNGSNAP_U32, RNGSNAP_U64, RNGSNAP_F32,
                                RNGSNAP_F64};
    for (size_t k = 0; k < sizeof skips / sizeof *skips; k++) {
        rngsnap_philox at;
        rngsnap_reserve(s, skips[k], &at);
        if (k == 0 || k == 2 || k == 4) { /* 1e8 words: aligned, +2, far */
            for (size_t d = 0; d < 4; d++) {
                size_t n = WORDS_BIG / (rngsnap_dist_size(uni[d]) / 4);
                compare_at(ctx, s, uni[d], n, dev, got, want);
                rngsnap_reserve(s, 1, &at); /* next dist starts elsewhere */
            }
        }
        for (int d = 0; d < RNGSNAP_DIST_COUNT; d++) /* every dist, odd n */
            compare_at(ctx, s, (rngsnap_dist)d, 1000001, dev, got, want);
    }
    /* Tiny draws: 1..9 values at every phase of a block. */
    for (int n = 1; n <= 9; n++)
        for (int d = 0; d < RNGSNAP_DIST_COUNT; d++) {
            rngsnap_philox ref, at;
            rngsnap_stream_position(s, &ref);
            rngsnap_generate(s, (rngsnap_dist)d, dev, (size_t)n);
            CUDA_OK(cudaMemcpy(got, dev, (size_t)n * 8,
                               cudaMemcpyDeviceToHost));
            philox_generate(&ref, (rngsnap_dist)d, want, (size_t)n);
            CHECK(memcmp(got, want, (size_t)n * rngsnap_dist_size(
                                        (rngsnap_dist)d)) == 0,
                  "tiny draw of %d %s differs", n,
                  rngsnap_dist_name((rngsnap_dist)d));
            rngsnap_reserve(s, 1, &at);
        }
    /* A host pointer is refused, not written. */
    int rc = rngsnap_generate(s, RNGSNAP_U32, got, 16);
    printf("  host pointer given to a cuda stream: %s\n",
           rngsnap_error_name(rc));
    CHECK(rc != RNGSNAP_OK, "a host pointer was accepted");
    cudaFree(dev);
    free(got);
    free(want);
    rngsnap_close(ctx);
}

/* ---- 2. cuRAND device API with a reserved triple ----------------------------- */

/* Thread i draws words [i*per, (i+1)*per) of the reserved range with
 * cuRAND's own Philox: curand_init(seed, subsequence, offset + i*per). */
__global__ void curand_words(uint64_t seed, uint64_t subseq, uint64_t offset,
                             unsigned per, unsigned threads, uint32_t *out)
{
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= threads)
        return;
    curandStatePhilox4_32_10_t st;
    curand_init(seed, subseq, offset + (uint64_t)i * per, &st);
    for (unsigned j = 0; j < per; j++)
        out[(size_t)i * per + j] = curand(&st);
}

static void check_curand_device_api(void)
{
    printf("2. cuRAND device API (curand_init/curand) with a triple from "
           "rngsnap_reserve\n");
    rngsnap *ctx = open_ctx(0);
    rngsnap_stream *s = cuda_stream(ctx, "dropout");
    CHECK(rngsnap_seed_all(ctx, 77) == RNGSNAP_OK, "seed");
    rngsnap_philox at;
    rngsnap_reserve(s, 7, &at); /* start mid-block */
    char ck[700];
    snprintf(ck, sizeof ck, "%s/before-reserve.ckpt", g_dir);
    CHECK(rngsnap_save(ctx, ck, RNGSNAP_SAVE_REPLACE) == RNGSNAP_OK,
          "save: %s", rngsnap_errmsg(ctx));
    const unsigned threads = 4096, per = 1001;
    const size_t n = (size_t)threads * per;
    CHECK(rngsnap_reserve(s, n, &at) == RNGSNAP_OK, "reserve");
    printf("  reserved %zu words at (seed %#llx, subsequence %llu, offset "
           "%llu)\n", n, (unsigned long long)at.seed,
           (unsigned long long)at.subsequence,
           (unsigned long long)at.offset);
    uint32_t *dc = NULL, *ds = NULL;
    CUDA_OK(cudaMalloc(&dc, n * 4));
    CUDA_OK(cudaMalloc(&ds, n * 4));
    curand_words<<<(threads + 127) / 128, 128>>>(at.seed, at.subsequence,
                                                  at.offset, per, threads,
                                                  dc);
    CUDA_OK(cudaGetLastError());
    CUDA_OK(cudaDeviceSynchronize());
    /* The stream's own words for the same range: rewind by loading the
     * checkpoint taken before the reserve, then generate on the GPU. */
    CHECK(rngsnap_load(ctx, ck, 0) == RNGSNAP_OK, "load: %s",
          rngsnap_errmsg(ctx));
    CHECK(rngsnap_generate(s, RNGSNAP_U32, ds, n) == RNGSNAP_OK, "generate");
    uint32_t *hc = (uint32_t *)malloc(n * 4), *hs = (uint32_t *)malloc(n * 4),
             *hr = (uint32_t *)malloc(n * 4);
    CUDA_OK(cudaMemcpy(hc, dc, n * 4, cudaMemcpyDeviceToHost));
    CUDA_OK(cudaMemcpy(hs, ds, n * 4, cudaMemcpyDeviceToHost));
    rngsnap_philox ref = at;
    philox_generate(&ref, RNGSNAP_U32, hr, n);
    size_t d1 = first_diff(hc, hs, n, 4), d2 = first_diff(hc, hr, n, 4);
    printf("  cuRAND device API vs cuda stream: %s; vs cpu engine: %s\n",
           d1 == n ? "equal" : "DIFFERENT", d2 == n ? "equal" : "DIFFERENT");
    CHECK(d1 == n, "cuRAND and the stream differ at word %zu", d1);
    CHECK(d2 == n, "cuRAND and the cpu engine differ at word %zu", d2);
    cudaFree(dc);
    cudaFree(ds);
    free(hc);
    free(hs);
    free(hr);
    rngsnap_close(ctx);
}

/* ---- 3. save on the GPU, load in a new process ------------------------------ */

static const size_t RESUME_N = 10000003; /* U32 then F64 then NORMAL_F32 */

static int draw_resume(rngsnap *ctx, unsigned char *host)
{
    static const rngsnap_dist seq[] = {RNGSNAP_U32, RNGSNAP_F64,
                                       RNGSNAP_NORMAL_F32};
    size_t off = 0;
    void *dev = NULL;
    CUDA_OK(cudaMalloc(&dev, RESUME_N * 8));
    const char *names[] = {"default", "dropout"};
    for (int k = 0; k < 2; k++) {
        rngsnap_stream *s = cuda_stream(ctx, names[k]);
        for (size_t d = 0; d < 3; d++) {
            size_t bytes = RESUME_N * rngsnap_dist_size(seq[d]);
            int rc = rngsnap_generate(s, seq[d], dev, RESUME_N);
            if (rc != RNGSNAP_OK) {
                printf("FAIL generate: %s\n", rngsnap_errmsg(ctx));
                return -1;
            }
            CUDA_OK(cudaMemcpy(host + off, dev, bytes,
                               cudaMemcpyDeviceToHost));
            off += bytes;
        }
    }
    cudaFree(dev);
    return (int)(off > 0);
}

static size_t resume_bytes(void) { return RESUME_N * (4 + 8 + 4) * 2; }

static int run_continue(const char *ini, const char *ckpt, const char *want)
{
    snprintf(g_ini, sizeof g_ini, "%s", ini);
    rngsnap *ctx = open_ctx(RNGSNAP_RESUME);
    int rc = rngsnap_load(ctx, ckpt, 0);
    if (rc != RNGSNAP_OK) {
        printf("FAIL load: %s\n", rngsnap_errmsg(ctx));
        return 2;
    }
    size_t nb = resume_bytes();
    unsigned char *got = (unsigned char *)malloc(nb),
                  *exp = (unsigned char *)malloc(nb);
    if (draw_resume(ctx, got) < 0)
        return 2;
    FILE *f = fopen(want, "rb");
    if (f == NULL || fread(exp, 1, nb, f) != nb) {
        printf("FAIL read %s\n", want);
        return 2;
    }
    fclose(f);
    size_t d = first_diff(got, exp, nb, 1);
    printf("  new process: %zu bytes after load %s\n", nb,
           d == nb ? "equal" : "DIFFERENT");
    rngsnap_close(ctx);
    return d == nb ? 0 : 1;
}

static void check_resume(void)
{
    printf("3. save on the GPU, load in a new process\n");
    rngsnap *ctx = open_ctx(0);
    CHECK(rngsnap_seed_all(ctx, 4242) == RNGSNAP_OK, "seed");
    size_t nb = resume_bytes();
    unsigned char *buf = (unsigned char *)malloc(nb);
    draw_resume(ctx, buf); /* warm-up: odd counts, odd offsets after */
    char ck[700], want[700];
    snprintf(ck, sizeof ck, "%s/gpu.ckpt", g_dir);
    snprintf(want, sizeof want, "%s/want.bin", g_dir);
    CHECK(rngsnap_save(ctx, ck, RNGSNAP_SAVE_REPLACE) == RNGSNAP_OK,
          "save: %s", rngsnap_errmsg(ctx));
    draw_resume(ctx, buf);
    FILE *f = fopen(want, "wb");
    if (f == NULL || fwrite(buf, 1, nb, f) != nb || fclose(f) != 0) {
        printf("FAIL write %s\n", want);
        exit(1);
    }
    rngsnap_close(ctx);
    free(buf);
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        /* This very program, as a new process. */
        execl("/proc/self/exe", "gpu_check", "--continue", g_ini, ck, want,
              (char *)NULL);
        perror("/proc/self/exe");
        _exit(127);
    }
    int st = 0;
    waitpid(pid, &st, 0);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0,
          "the new process did not continue bit for bit (status %d)", st);
}

/* ---- 4. timing --------------------------------------------------------------- */

typedef curandStatus_t (*curand_create_fn)(curandGenerator_t *,
                                           curandRngType_t);
typedef curandStatus_t (*curand_seed_fn)(curandGenerator_t,
                                         unsigned long long);
typedef curandStatus_t (*curand_gen_fn)(curandGenerator_t, unsigned int *,
                                        size_t);
typedef curandStatus_t (*curand_destroy_fn)(curandGenerator_t);

static float time_ms(cudaEvent_t a, cudaEvent_t b)
{
    float ms = 0;
    cudaEventSynchronize(b);
    cudaEventElapsedTime(&ms, a, b);
    return ms;
}

static void report(const char *what, float ms, size_t bytes)
{
    printf("  %-34s %8.3f ms  %7.1f GB/s\n", what, ms,
           (double)bytes / (ms * 1e-3) / 1e9);
}

static void check_timing(void)
{
    printf("4. 1 GiB fill (CUDA events, best of 5)\n");
    const size_t bytes = (size_t)1 << 30, n = bytes / 4;
    rngsnap *ctx = open_ctx(0);
    rngsnap_stream *s = cuda_stream(ctx, "default");
    rngsnap_seed_all(ctx, 1);
    void *dev = NULL;
    CUDA_OK(cudaMalloc(&dev, bytes));
    cudaEvent_t a, b;
    cudaEventCreate(&a);
    cudaEventCreate(&b);
    float best = 1e30f;
    for (int r = 0; r < 6; r++) { /* run 0 warms up */
        cudaEventRecord(a, 0);
        CUDA_OK(cudaMemset(dev, r, bytes));
        cudaEventRecord(b, 0);
        float ms = time_ms(a, b);
        if (r > 0 && ms < best)
            best = ms;
    }
    float memset_ms = best;
    report("cudaMemset", memset_ms, bytes);
    const rngsnap_dist dists[] = {RNGSNAP_U32, RNGSNAP_F32, RNGSNAP_F64,
                                  RNGSNAP_NORMAL_F32};
    for (size_t d = 0; d < 4; d++) {
        size_t cnt = bytes / rngsnap_dist_size(dists[d]);
        best = 1e30f;
        for (int r = 0; r < 6; r++) {
            cudaEventRecord(a, 0);
            int rc = rngsnap_generate(s, dists[d], dev, cnt);
            cudaEventRecord(b, 0);
            float ms = time_ms(a, b);
            CHECK(rc == RNGSNAP_OK, "generate: %s", rngsnap_errmsg(ctx));
            if (r > 0 && ms < best)
                best = ms;
        }
        char label[64];
        snprintf(label, sizeof label, "rngsnap_generate %s",
                 rngsnap_dist_name(dists[d]));
        report(label, best, bytes);
    }
    /* cuRAND host API, opened at run time (no link dependency). */
    void *lib = dlopen("libcurand.so.10", RTLD_NOW | RTLD_LOCAL);
    if (lib == NULL)
        lib = dlopen("/usr/local/cuda/lib64/libcurand.so.10",
                     RTLD_NOW | RTLD_LOCAL);
    if (lib == NULL) {
        printf("  curandGenerate: libcurand.so.10 not found (%s), not "
               "timed\n", dlerror());
    } else {
        curand_create_fn create =
            (curand_create_fn)dlsym(lib, "curandCreateGenerator");
        curand_seed_fn seed =
            (curand_seed_fn)dlsym(lib, "curandSetPseudoRandomGeneratorSeed");
        curand_gen_fn gen = (curand_gen_fn)dlsym(lib, "curandGenerate");
        curand_destroy_fn destroy =
            (curand_destroy_fn)dlsym(lib, "curandDestroyGenerator");
        curandGenerator_t g;
        if (create && seed && gen && destroy
            && create(&g, CURAND_RNG_PSEUDO_PHILOX4_32_10)
                   == CURAND_STATUS_SUCCESS) {
            seed(g, 1);
            best = 1e30f;
            for (int r = 0; r < 6; r++) {
                cudaEventRecord(a, 0);
                curandStatus_t cs = gen(g, (unsigned *)dev, n);
                cudaEventRecord(b, 0);
                float ms = time_ms(a, b);
                CHECK(cs == CURAND_STATUS_SUCCESS, "curandGenerate: %d",
                      (int)cs);
                if (r > 0 && ms < best)
                    best = ms;
            }
            report("curandGenerate (Philox4_32_10)", best, bytes);
            destroy(g);
        } else {
            printf("  curandGenerate: could not create a generator\n");
        }
    }
    cudaEventDestroy(a);
    cudaEventDestroy(b);
    cudaFree(dev);
    rngsnap_close(ctx);
}

/* ---- main ------------------------------------------------------------------- */

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    void *drv = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (drv == NULL) {
        printf("skipped: no CUDA driver here (libcuda.so.1: %s)\n",
               dlerror());
        return SKIP;
    }
    int ndev = 0;
    cudaError_t e = cudaGetDeviceCount(&ndev);
    if (e != cudaSuccess || ndev == 0) {
        printf("skipped: no CUDA GPU here (%s)\n",
               e != cudaSuccess ? cudaGetErrorString(e) : "0 devices");
        return SKIP;
    }
    if (argc == 5 && strcmp(argv[1], "--continue") == 0)
        return run_continue(argv[2], argv[3], argv[4]);
    cudaDeviceProp prop;
    cudaGetDeviceProperties(&prop, 0);
    printf("GPU 0: %s (sm_%d%d)\n", prop.name, prop.major, prop.minor);
    write_ini();
    check_equal_cpu();
    check_curand_device_api();
    check_resume();
    check_timing();
    printf("%s: %d failure(s)\n", failures ? "FAILED" : "PASSED", failures);
    return failures ? 1 : 0;
}
