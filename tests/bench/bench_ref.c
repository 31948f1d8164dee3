/*
 * bench_ref.c - the straightforward Philox4x32-10 loop a user would write
 * (one block at a time, the textbook round), the baseline of the fill
 * benchmark.  Meson builds it twice: with the project's flags
 * (BENCH_REF_NAME = bench_ref_fill_project) and with -O3 -march=native
 * (bench_ref_fill_native), where gcc vectorises it.
 */
#include <stddef.h>
#include <stdint.h>

#include "bench.h"

void BENCH_REF_NAME(uint64_t seed, uint64_t sub, uint64_t block,
                    uint32_t *out, size_t nblocks)
{
    for (size_t i = 0; i < nblocks; i++) {
        uint64_t b = block + i;
        uint32_t x0 = (uint32_t)b, x1 = (uint32_t)(b >> 32);
        uint32_t x2 = (uint32_t)sub, x3 = (uint32_t)(sub >> 32);
        uint32_t k0 = (uint32_t)seed, k1 = (uint32_t)(seed >> 32);
        for (int r = 0; r < 10; r++) {
            uint64_t p0 = (uint64_t)0xD2511F53u * x0;
            uint64_t p1 = (uint64_t)0xCD9E8D57u * x2;
            x0 = (uint32_t)(p1 >> 32) ^ x1 ^ k0;
            x1 = (uint32_t)p1;
            x2 = (uint32_t)(p0 >> 32) ^ x3 ^ k1;
            x3 = (uint32_t)p0;
            k0 += 0x9E3779B9u;
            k1 += 0xBB67AE85u;
        }
        out[4 * i] = x0;
        out[4 * i + 1] = x1;
        out[4 * i + 2] = x2;
        out[4 * i + 3] = x3;
    }
}
