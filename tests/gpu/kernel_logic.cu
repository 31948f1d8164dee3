/*
 * kernel_logic.cu - the cuda fill kernel's per-thread code
 * (plugins/cuda/cuda_fill_kernel.cuh), run on the HOST over every Philox
 * block of a draw, against the cpu engine (philox_generate): every dist,
 * starts at every phase of a block and past 2^32 blocks, odd and even
 * counts, aligned and unaligned output, and no write past the end.  Needs
 * nvcc to build but no GPU to run, so the indexing of the kernel is
 * checked on every machine; tests/gpu/gpu_check checks the GPU itself.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_fill_kernel.cuh"
extern "C" {
#include "philox.h"
}

template <int DIST>
static void run_threads(const fill_args &a, void *out)
{
    typedef typename unit_shape<DIST>::T T;
    /* Whole warps, as the launch makes them. */
    uint64_t blocks = a.last - a.base + 1;
    uint64_t threads = (blocks + FILL_THREADS - 1) / FILL_THREADS
                       * FILL_THREADS;
    for (uint64_t t = 0; t < threads; t++)
        fill_thread<DIST>(a, (T *)out, a.base + t, (unsigned)(t & 31u));
}

int main(void)
{
    static const int W[] = {1, 2, 1, 2, 2, 4, 1, 1, 2, 4},
                     V[] = {1, 1, 1, 1, 2, 2, 1, 1, 2, 2};
    static const size_t SZ[] = {4, 8, 4, 8, 4, 8, 4, 8, 4, 8};
    static void (*const run[])(const fill_args &, void *) = {
        run_threads<0>, run_threads<1>, run_threads<2>, run_threads<3>,
        run_threads<4>, run_threads<5>, run_threads<6>, run_threads<7>,
        run_threads<8>, run_threads<9>};
    static_assert(sizeof run / sizeof *run == RNGSNAP_DIST_COUNT,
                  "a kernel per dist");
    static const uint64_t starts[] = {0, 1, 2, 3, 5, 6, 7, 4096 + 2,
                                      (4ull << 32) + 3, (4ull << 32) + 6};
    static const size_t counts[] = {1, 2, 3, 4, 5, 7, 8, 9, 31, 64, 127,
                                    1000, 4099, 70001};
    const size_t cap = 70001 * 8 + 256;
    unsigned char *got = (unsigned char *)malloc(cap),
                  *want = (unsigned char *)malloc(cap);
    long checks = 0, bad = 0;
    for (int dist = 0; dist < RNGSNAP_DIST_COUNT; dist++)
        for (size_t si = 0; si < sizeof starts / sizeof *starts; si++)
            for (size_t ci = 0; ci < sizeof counts / sizeof *counts; ci++)
                for (int shift = 0; shift < 2; shift++) {
                    size_t n = counts[ci];
                    rngsnap_philox st = {0x123456789abcdefull, 77,
                                         starts[si]};
                    uint64_t words =
                        philox_words_for((rngsnap_dist)dist, n);
                    memset(got, 0xAA, cap);
                    /* 16-aligned, or one value off (no vector stores) */
                    unsigned char *out = got + 16 + shift * SZ[dist];
                    fill_args a;
                    a.key[0] = (uint32_t)st.seed;
                    a.key[1] = (uint32_t)(st.seed >> 32);
                    a.subsequence = st.subsequence;
                    a.start = st.offset;
                    a.nunits = (n + V[dist] - 1) / V[dist];
                    a.n = n;
                    a.base = st.offset / 4;
                    a.last = (st.offset + words - 1) / 4;
                    if (a.nunits * W[dist] != words) {
                        printf("FAIL: kernel and engine disagree on words "
                               "for dist %d\n", dist);
                        return 1;
                    }
                    run[dist](a, out);
                    philox_generate(&st, (rngsnap_dist)dist, want, n);
                    int overrun = 0;
                    for (size_t k = 0; k < 64; k++)
                        overrun |= out[n * SZ[dist] + k] != 0xAA;
                    checks++;
                    if (memcmp(out, want, n * SZ[dist]) != 0 || overrun) {
                        if (++bad <= 10)
                            printf("FAIL: dist %d start %llu n %zu shift %d"
                                   "%s\n", dist,
                                   (unsigned long long)starts[si], n, shift,
                                   overrun ? " (wrote past the end)" : "");
                    }
                }
    printf("kernel per-thread code vs cpu engine: %ld draws, %ld bad\n",
           checks, bad);
    free(got);
    free(want);
    return bad != 0;
}
