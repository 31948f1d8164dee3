/*
 * test_engine.c - the Philox engine (plugins/common) on every ISA path this
 * processor supports: the shared KAT and cuRAND vectors, every path equal
 * to the scalar reference for every dist at any offset, resume exactness,
 * reserve, state encoding, and normal variates (moments, bound against
 * libm, bit equality across paths).
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "philox.h"
#include "philox_convert.h"
#include "philox_isa.h"
#include "philox_stream.h"
#include "vectors.h"


/* Paths to test: all supported ones (at least scalar). */
static int npaths;
static philox_isa paths[PHILOX_ISA_COUNT];

static int setup(void **state)
{
    (void)state;
    npaths = 0;
    for (int i = PHILOX_ISA_SCALAR; i < PHILOX_ISA_COUNT; i++)
        if (philox_isa_supported((philox_isa)i))
            paths[npaths++] = (philox_isa)i;
        else
            fprintf(stderr, "# path %s not supported here: not tested\n",
                    philox_isa_name((philox_isa)i));
    return 0;
}

/* xorshift64*: test inputs only */
static uint64_t rng_state = 0x9E3779B97F4A7C15ull;
static uint64_t rnd(void)
{
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * 2685821657736338717ull;
}

/* A textbook Philox4x32-10 written independently of philox_convert.h. */
static void ref_block(const uint32_t c[4], const uint32_t k[2], uint32_t o[4])
{
    uint32_t x[4] = {c[0], c[1], c[2], c[3]}, key[2] = {k[0], k[1]};
    for (int r = 0; r < 10; r++) {
        if (r > 0) {
            key[0] += 0x9E3779B9u;
            key[1] += 0xBB67AE85u;
        }
        uint64_t a = (uint64_t)0xD2511F53u * x[0];
        uint64_t b = (uint64_t)0xCD9E8D57u * x[2];
        uint32_t y[4] = {(uint32_t)(b >> 32) ^ x[1] ^ key[0], (uint32_t)b,
                         (uint32_t)(a >> 32) ^ x[3] ^ key[1], (uint32_t)a};
        memcpy(x, y, sizeof x);
    }
    memcpy(o, x, sizeof x);
}

/* Word j of stream (seed, sub) by the textbook definition. */
static uint32_t ref_word(uint64_t seed, uint64_t sub, uint64_t j)
{
    uint64_t b = j / 4;
    uint32_t c[4] = {(uint32_t)b, (uint32_t)(b >> 32), (uint32_t)sub,
                     (uint32_t)(sub >> 32)};
    uint32_t k[2] = {(uint32_t)seed, (uint32_t)(seed >> 32)};
    uint32_t o[4];
    ref_block(c, k, o);
    return o[j % 4];
}

/* ---- known answers --------------------------------------------------- */

static void test_kat_every_path(void **state)
{
    (void)state;
    kat_vec *v = NULL;
    int n = read_kat(&v);
    assert_true(n > 0);
    for (int i = 0; i < n; i++) {
        uint32_t o[4];
        philox4x32_10(v[i].ctr, v[i].key, o);
        assert_memory_equal(o, v[i].expect, sizeof o);
        ref_block(v[i].ctr, v[i].key, o);
        assert_memory_equal(o, v[i].expect, sizeof o);
        /* Each path, with the vector's block in every lane position of
         * a step (the 64-bit block counter may wrap: it does on a GPU too,
         * where the counter is 128 bits and the carry goes to subseq --
         * not reachable from a 64-bit word offset). */
        uint64_t block = v[i].ctr[0] | (uint64_t)v[i].ctr[1] << 32;
        px_ctr c = {{v[i].key[0], v[i].key[1]}, 0,
                    v[i].ctr[2] | (uint64_t)v[i].ctr[3] << 32};
        for (int p = 0; p < npaths; p++) {
            for (unsigned lane = 0; lane < 100; lane++) {
                if (block < lane)
                    continue;
                uint32_t w[101 * 4];
                c.block = block - lane;
                px_fill_for(paths[p])(RNGSNAP_U32, &c, w, lane + 1, 0);
                assert_memory_equal(&w[4 * lane], v[i].expect, 16);
            }
        }
    }
    free(v);
}

static void test_curand_streams_every_path(void **state)
{
    (void)state;
    stream_vec *v = NULL;
    int n = read_streams(&v);
    assert_true(n > 0);
    for (int i = 0; i < n; i++) {
        for (int p = 0; p < npaths; p++) {
            /* exactly at the offset */
            rngsnap_philox st = {v[i].seed, v[i].subsequence, v[i].offset};
            uint32_t w[4 + 300];
            assert_int_equal(philox_generate_isa(&st, RNGSNAP_U32, w, 4,
                                                 paths[p]), RNGSNAP_OK);
            assert_memory_equal(w, v[i].expect, 16);
            assert_true(st.offset == v[i].offset + 4);
            /* starting k words earlier: mid-block starts, and the target
             * inside a long SIMD run */
            for (uint64_t k = 1; k <= 200 && k <= v[i].offset; k += 1 + k / 8) {
                st = (rngsnap_philox){v[i].seed, v[i].subsequence,
                                      v[i].offset - k};
                size_t len = (size_t)k + 4 + (size_t)(k % 7);
                assert_int_equal(philox_generate_isa(&st, RNGSNAP_U32, w,
                                                     len, paths[p]),
                                 RNGSNAP_OK);
                assert_memory_equal(&w[k], v[i].expect, 16);
            }
        }
        /* the textbook definition agrees too */
        for (int j = 0; j < 4; j++)
            assert_int_equal(ref_word(v[i].seed, v[i].subsequence,
                                      v[i].offset + (uint64_t)j),
                             v[i].expect[j]);
    }
    free(v);
}

/* ---- every path equals scalar ---------------------------------------- */

static size_t vsize(rngsnap_dist d)
{
    return philox_value_size(d);
}

static void test_paths_equal_scalar(void **state)
{
    (void)state;
    size_t cap = 70000;
    unsigned char *a = malloc(cap * 8 + 64), *b = malloc(cap * 8 + 64);
    assert_non_null(a);
    assert_non_null(b);
    for (int iter = 0; iter < 400; iter++) {
        rngsnap_dist d = (rngsnap_dist)(rnd() % RNGSNAP_DIST_COUNT);
        uint64_t off;
        switch (iter % 4) {
        case 0: off = rnd() % 64; break;
        case 1: off = ((uint64_t)1 << 34) - rnd() % 300; break; /* carry */
        case 2: off = rnd() >> 3; break;
        default: off = rnd() % 100000; break;
        }
        size_t n = iter % 10 == 0 ? (size_t)(rnd() % cap) : (size_t)(rnd() % 700);
        size_t mis = (size_t)(rnd() % 4) * 4; /* output alignment 4..16 */
        rngsnap_philox s0 = {rnd(), rnd() % 5 == 0 ? rnd() : rnd() % 9, off};
        rngsnap_philox sa = s0;
        memset(a, 0xA5, cap * 8 + 64);
        assert_int_equal(philox_generate_isa(&sa, d, a + mis, n,
                                             PHILOX_ISA_SCALAR), RNGSNAP_OK);
        assert_true(sa.offset == off + philox_words_for(d, n));
        for (int p = 0; p < npaths; p++) {
            rngsnap_philox sb = s0;
            memset(b, 0xA5, cap * 8 + 64);
            assert_int_equal(philox_generate_isa(&sb, d, b + mis, n, paths[p]),
                             RNGSNAP_OK);
            assert_true(sb.offset == sa.offset);
            /* bytes past the end untouched, and all bits equal */
            assert_memory_equal(a, b, cap * 8 + 64);
        }
        /* U32 against the textbook definition, sampled */
        if (d == RNGSNAP_U32 && n > 0) {
            const uint32_t *w = (const uint32_t *)(a + mis);
            for (int t = 0; t < 8; t++) {
                size_t j = (size_t)(rnd() % n);
                assert_int_equal(w[j], ref_word(s0.seed, s0.subsequence,
                                                off + j));
            }
        }
    }
    free(a);
    free(b);
}

/* NORMAL_F32 through each path's own conversion (avx2: intrinsics) on
 * the words where it could go wrong: u1 from every power of two of w0 and
 * the mantissas at and next to sqrt(2) (px_logf's halving) at each, the
 * smallest and largest w0 (u1 rounding up to 1), and w1 at and next to
 * every quarter-turn boundary; in runs of 1 to 37 pairs (every tail). */
static void test_normal_f32_edge_words(void **state)
{
    (void)state;
    uint32_t w0s[600], w1s[40];
    size_t n0 = 0, n1 = 0;
    for (uint32_t v = 0; v < 64; v++)
        w0s[n0++] = v, w0s[n0++] = 0xffffffffu - v;
    for (int j = 0; j < 32; j++) {
        uint64_t p2 = (uint64_t)1 << j;
        w0s[n0++] = (uint32_t)p2;
        w0s[n0++] = (uint32_t)(p2 - 1);
        /* 0xb504f3 / 2^23 is sqrt(2)'s float mantissa: w0 at 2^(j-23) */
        for (uint64_t m = 0xb504f2; m <= 0xb504f4; m++) {
            uint64_t x = j >= 23 ? m << (j - 23) : m >> (23 - j);
            for (int d = -1; d <= 1; d++)
                if (x + (uint64_t)(int64_t)d <= 0xffffffffu)
                    w0s[n0++] = (uint32_t)(x + (uint64_t)(int64_t)d);
        }
    }
    for (uint32_t q = 0; q <= 4; q++) {
        uint32_t at = q * (1u << 22) + (1u << 21); /* i where q steps */
        for (int d = -1; d <= 0; d++) {
            uint32_t i = (at + (uint32_t)d) & 0xffffffu;
            w1s[n1++] = i << 8;
            w1s[n1++] = (i << 8) | 0xffu;
        }
    }
    w1s[n1++] = 0;
    w1s[n1++] = 0xffffffffu;
    size_t np = n0 * n1;
    uint32_t *w = malloc(np * 8);
    float *want = malloc(np * 8), *got = malloc(np * 8);
    assert_non_null(w);
    assert_non_null(want);
    assert_non_null(got);
    for (size_t i = 0; i < n0; i++)
        for (size_t j = 0; j < n1; j++) {
            size_t k = i * n1 + j;
            w[2 * k] = w0s[i], w[2 * k + 1] = w1s[j];
            px_normal_f32(w0s[i], w1s[j], &want[2 * k], &want[2 * k + 1]);
        }
    size_t nb = np / 2; /* whole blocks (two pairs each) */
    for (int isa = PHILOX_ISA_SCALAR; isa < PHILOX_ISA_COUNT; isa++) {
        px_convert_fn convert = px_convert_for((philox_isa)isa);
        if (!philox_isa_supported((philox_isa)isa) || convert == NULL)
            continue;
        memset(got, 0, np * 8);
        for (size_t at = 0, run = 1; at < nb; at += run, run = run % 37 + 1)
            convert(RNGSNAP_NORMAL_F32, w + 4 * at, got + 4 * at,
                    at + run <= nb ? run : nb - at);
        for (size_t k = 0; k < 2 * nb; k++)
            if (memcmp(&got[2 * k], &want[2 * k], 8) != 0)
                fail_msg("%s: words %08x %08x: %a %a, scalar %a %a",
                         philox_isa_name((philox_isa)isa), w[2 * k],
                         w[2 * k + 1], (double)got[2 * k],
                         (double)got[2 * k + 1], (double)want[2 * k],
                         (double)want[2 * k + 1]);
    }
    free(w);
    free(want);
    free(got);
}

#define WAY_MIB ((size_t)1 << 20)

/* The per-family rows: each known family gets its row, a neighbour
 * outside the row's model range and another vendor get "other". */
static void test_tuning_rows(void **state)
{
    (void)state;
    assert_string_equal(px_tuning_for("AuthenticAMD", 0x19, 0x01).family,
                        "AMD Zen 3");
    assert_string_equal(px_tuning_for("AuthenticAMD", 0x19, 0x21).family,
                        "AMD Zen 3");
    /* family 19h model 11h is Zen 4: no row of its own */
    assert_string_equal(px_tuning_for("AuthenticAMD", 0x19, 0x11).family,
                        "other");
    /* Zen 3 keeps its measured groups; its store kind is measured */
    assert_int_equal(px_tuning_for("AuthenticAMD", 0x19, 0x01).nt_probe, 1);
    assert_int_equal(px_tuning_for("AuthenticAMD", 0x19, 0x01).large_groups,
                     4);
    px_tuning z5 = px_tuning_for("AuthenticAMD", 0x1A, 0x02);
    assert_string_equal(z5.family, "AMD Zen 5");
    /* two Zen 5 VMs disagreed: measured from 64 MiB */
    assert_true(z5.nt_min == 64 * WAY_MIB);
    assert_int_equal(z5.nt_probe, 1);
    /* RNGSNAP_PHILOX_NT_MIN: a size replaces nt_min and the probe */
    px_tuning z5env = px_tuning_env(z5, "12345");
    assert_true(z5env.nt_min == 12345);
    assert_int_equal(z5env.nt_probe, 0);
    assert_true(z5env.prefetch_min == z5.prefetch_min);
    px_tuning never = px_tuning_env(z5, "never");
    assert_true(never.nt_min == SIZE_MAX);
    assert_int_equal(never.nt_probe, 0);
    static const char *const keep[] = {NULL, "", "64M", "-", "Never"};
    for (size_t i = 0; i < sizeof keep / sizeof keep[0]; i++) {
        px_tuning k = px_tuning_env(z5, keep[i]);
        assert_true(k.nt_min == z5.nt_min);
        assert_int_equal(k.nt_probe, 1);
    }
    /* Emerald Rapids, the known exception, streams from 16 MiB without
     * measuring; Sapphire Rapids (not measured) and an AMD part with the
     * same family and model numbers get "other", which measures from what
     * the caches say */
    px_tuning emr = px_tuning_for("GenuineIntel", 0x06, 0xCF);
    assert_string_equal(emr.family, "Intel Emerald Rapids");
    assert_true(emr.nt_min == 16 * WAY_MIB);
    assert_int_equal(emr.nt_probe, 0);
    px_tuning other = px_tuning_for("GenuineIntel", 0x06, 0x8F);
    assert_string_equal(other.family, "other");
    assert_true(other.nt_min == 0);
    assert_int_equal(other.nt_probe, 1);
    /* this processor: a probing row measures from no less than the floor
     * its L2 gives */
    px_tuning here = px_tuning_detect();
    if (here.nt_probe)
        assert_true(here.nt_min >= px_cache_floor(px_cache_bytes(2)));
    assert_string_equal(px_tuning_for("AuthenticAMD", 0x06, 0xCF).family,
                        "other");
    assert_string_equal(px_tuning_for(NULL, 0x19, 0x01).family, "other");
    /* cpuid leaf 1 eax -> display family and model */
    static const struct {
        uint32_t eax;
        unsigned family, model;
    } ids[] = {
        {0x00A00F11u, 0x19, 0x01}, /* EPYC 7003 (Zen 3, Milan)       */
        {0x00A20F10u, 0x19, 0x21}, /* Ryzen 5000 (Zen 3, Vermeer)    */
        {0x00A10F11u, 0x19, 0x11}, /* EPYC 9004 (Zen 4, Genoa)       */
        {0x00B00F21u, 0x1A, 0x02}, /* EPYC 9005 (Zen 5, Turin)       */
        {0x00830F10u, 0x17, 0x31}, /* EPYC 7002 (Zen 2, Rome)        */
        {0x000606A6u, 0x06, 0x6A}, /* Xeon Ice Lake SP               */
        {0x00000F29u, 0x0F, 0x02}, /* Pentium 4: family 0xF + 0      */
        {0x00020652u, 0x06, 0x25}, /* Westmere                       */
        {0x00100F42u, 0x10, 0x04}, /* Opteron (K10): 0xF + 1         */
        {0x00050654u, 0x06, 0x55}, /* Skylake SP                     */
        {0x000A0671u, 0x06, 0xA7}, /* Rocket Lake                    */
        {0x00030F00u, 0x0F, 0x30}, /* extended model used at 0xF too */
        {0x00010580u, 0x05, 0x08}, /* base 5: extended model ignored */
        {0x000C06F2u, 0x06, 0xCF}, /* Xeon Emerald Rapids            */
    };
    for (size_t i = 0; i < sizeof ids / sizeof ids[0]; i++) {
        unsigned f = 0, m = 0;
        px_cpuid_display(ids[i].eax, &f, &m);
        if (f != ids[i].family || m != ids[i].model)
            fail_msg("eax %08x: family %x model %x, want %x %x", ids[i].eax,
                     f, m, ids[i].family, ids[i].model);
    }
}

/* Every way a CPU family's row can write a large fill (from 1 MiB). */
static const px_tuning large_ways[] = {
    {"non-temporal, 6 groups", WAY_MIB, SIZE_MAX, SIZE_MAX, 3, 0},
    {"non-temporal, 3 groups", WAY_MIB, SIZE_MAX, 0, 3, 0},
    {"non-temporal, 4 groups", WAY_MIB, SIZE_MAX, 0, 4, 0},
    {"prefetchw, 6 groups", SIZE_MAX, WAY_MIB, SIZE_MAX, 3, 0},
    {"prefetchw, 3 groups", SIZE_MAX, WAY_MIB, 0, 3, 0},
    {"prefetchw, 4 groups", SIZE_MAX, WAY_MIB, 0, 4, 0},
    {"plain, 3 groups", SIZE_MAX, SIZE_MAX, 0, 3, 0},
    {"plain, 4 groups", SIZE_MAX, SIZE_MAX, 0, 4, 0},
};
#define NWAYS (sizeof large_ways / sizeof large_ways[0])

/* Large fills equal scalar, every way a CPU family's row can write them
 * (non-temporal stores, prefetchw, 6, 4 or 3 groups per step on avx2), at
 * every alignment. */
static void test_large_fills(void **state)
{
    (void)state;
    const size_t mib = WAY_MIB;
    philox_isa best;
    /* the row is set once, on the first resolve: before px_tune is set */
    assert_int_equal(philox_isa_resolve(PHILOX_ISA_AUTO, &best, NULL),
                     RNGSNAP_OK);
    px_tuning saved = px_tune;
    size_t n = (mib / 4) + 12345;
    unsigned char *a = malloc(n * 8 + 64), *b = malloc(n * 8 + 64);
    assert_non_null(a);
    assert_non_null(b);
    for (int d = 0; d < RNGSNAP_DIST_COUNT; d++) {
        size_t mis = (size_t)(d * 4) % 64;
        rngsnap_philox s0 = {42 + (uint64_t)d, 7, (uint64_t)d * 3};
        rngsnap_philox sa = s0;
        size_t nd = n / (vsize((rngsnap_dist)d) / 4);
        assert_int_equal(philox_generate_isa(&sa, (rngsnap_dist)d, a + mis, nd,
                                             PHILOX_ISA_SCALAR), RNGSNAP_OK);
        for (size_t wi = 0; wi < NWAYS; wi++) {
            for (int p = 1; p < npaths; p++) {
                rngsnap_philox sb = s0;
                px_tune = large_ways[wi];
                int rc = philox_generate_isa(&sb, (rngsnap_dist)d, b + mis,
                                             nd, paths[p]);
                px_tune = saved;
                assert_int_equal(rc, RNGSNAP_OK);
                if (memcmp(a + mis, b + mis, nd * vsize((rngsnap_dist)d)) != 0)
                    fail_msg("%s, %s: dist %d differs from scalar",
                             large_ways[wi].family,
                             philox_isa_name(paths[p]), d);
            }
        }
    }
    px_tune = saved;
    free(a);
    free(b);
}

/* The kernels' own dists (u32, u64, f32, f64) each way, from outputs
 * 32-, 16-, 8- and 4-byte aligned (streaming with and without the
 * 16-byte step to reach 32, prefetchw where it cannot stream), starting
 * at block 0 and just below 2^32 blocks: the low counter word wraps
 * inside a step of 3, 4 and 6 groups (K odd, K - 1 not a multiple of 24,
 * 32 or 48), or exactly at a step's start (K a multiple of 96). */
static void test_large_fills_kernels(void **state)
{
    (void)state;
    static const rngsnap_dist dists[] = {RNGSNAP_U32, RNGSNAP_U64,
                                         RNGSNAP_F32, RNGSNAP_F64};
    static const size_t mis_of[] = {0, 16, 8, 4};
    const uint64_t two32 = (uint64_t)1 << 32;
    const uint64_t offs[] = {0, 4 * (two32 - 30011), 4 * (two32 - 28800)};
    philox_isa best;
    assert_int_equal(philox_isa_resolve(PHILOX_ISA_AUTO, &best, NULL),
                     RNGSNAP_OK);
    px_tuning saved = px_tune;
    size_t bytes = WAY_MIB + 4096 + 208; /* >= every threshold above */
    /* aligned_alloc wants a size that is a multiple of the alignment */
    size_t cap = (bytes + 64 + 63) & ~(size_t)63;
    unsigned char *a = aligned_alloc(64, cap);
    unsigned char *b = aligned_alloc(64, cap);
    assert_non_null(a);
    assert_non_null(b);
    for (size_t di = 0; di < sizeof dists / sizeof dists[0]; di++) {
        rngsnap_dist d = dists[di];
        size_t nd = bytes / vsize(d);
        for (size_t mi = 0; mi < sizeof mis_of / sizeof mis_of[0]; mi++) {
            size_t mis = mis_of[mi];
            if (mis % vsize(d) != 0)
                continue; /* unaligned for the type: 4 KiB pieces */
            for (size_t oi = 0; oi < sizeof offs / sizeof offs[0]; oi++) {
                rngsnap_philox s0 = {0x9e3779b97f4a7c15ull + di, 3, offs[oi]};
                rngsnap_philox sa = s0;
                memset(a, 0xA5, bytes + 64);
                assert_int_equal(philox_generate_isa(&sa, d, a + mis, nd,
                                                     PHILOX_ISA_SCALAR),
                                 RNGSNAP_OK);
                for (size_t wi = 0; wi < NWAYS; wi++) {
                    for (int p = 1; p < npaths; p++) {
                        rngsnap_philox sb = s0;
                        memset(b, 0xA5, bytes + 64);
                        px_tune = large_ways[wi];
                        int rc = philox_generate_isa(&sb, d, b + mis, nd,
                                                     paths[p]);
                        px_tune = saved;
                        assert_int_equal(rc, RNGSNAP_OK);
                        assert_true(sb.offset == sa.offset);
                        if (memcmp(a, b, bytes + 64) != 0)
                            fail_msg("%s, %s: dist %d from +%zu at word "
                                     "%llu differs from scalar",
                                     large_ways[wi].family,
                                     philox_isa_name(paths[p]), (int)d, mis,
                                     (unsigned long long)offs[oi]);
                    }
                }
            }
        }
    }
    px_tune = saved;
    free(a);
    free(b);
}

/* The probe's verdict from seconds per block of each way's pieces: the
 * median pieces decide, so one slow or lucky piece cannot; streaming
 * unless plain was ahead by more than PX_PROBE_MARGIN (5%), a tie too. */
static void test_nt_verdict(void **state)
{
    (void)state;
    const double one[4] = {1, 1, 1, 1};
    const double half[4] = {.5, .5, .5, .5};
    const double faster[4] = {.94, .94, .94, .94};
    const double plain_near[4] = {.96, .96, .96, .96};  /* within 5% */
    const double plain_ahead[4] = {.94, .94, .94, .94}; /* beyond 5% */
    const double plain_hit[4] = {.5, 9, .5, .5};   /* one slow piece */
    const double nt_hit[4] = {.5, 9, .5, .5};
    const double plain_lucky[4] = {2, .9, 2, 2};   /* one fast plain piece */
    const double nt_lucky[4] = {2, .1, 2, 2};
    const double nt_split[4] = {.5, .5, 1, 1};     /* median .75 */
    assert_int_equal(px_nt_verdict(one, half, 4), 1);
    assert_int_equal(px_nt_verdict(one, faster, 4), 1);
    assert_int_equal(px_nt_verdict(one, one, 4), 1);
    assert_int_equal(px_nt_verdict(plain_near, one, 4), 1);
    assert_int_equal(px_nt_verdict(plain_ahead, one, 4), 0);
    assert_int_equal(px_nt_verdict(half, one, 4), 0);
    assert_int_equal(px_nt_verdict(plain_hit, one, 4), 0);
    assert_int_equal(px_nt_verdict(one, nt_hit, 4), 1);
    assert_int_equal(px_nt_verdict(plain_lucky, one, 4), 1);
    assert_int_equal(px_nt_verdict(one, nt_lucky, 4), 0);
    assert_int_equal(px_nt_verdict(one, nt_split, 4), 1);
    assert_int_equal(px_nt_verdict(nt_split, one, 4), 0);
}

/* A fake piece timer for the probe: it fills (so the bits are the real
 * kernel's) and reports scripted seconds per block for each way (the
 * first round's own, then the later rounds'), and scripted page faults,
 * so the verdict is the test's, not this machine's. */
static double fake_s_per_block[2];
static double fake_warm_s_per_block[2]; /* round 1 (the warm-up) */
static int fake_pieces[2];
static size_t fake_blocks;
static int fake_fault_round; /* 1-based round whose pieces fault; 0 none,
                                -1 every round */

static double fake_piece(px_fill_fn fill, rngsnap_dist dist, const px_ctr *c,
                         void *out, size_t nb, int nt, long *faults)
{
    fill(dist, c, out, nb, nt);
    int round = (fake_pieces[0] + fake_pieces[1]) / PX_PROBE_PIECES + 1;
    fake_pieces[nt != 0]++;
    fake_blocks += nb;
    *faults = fake_fault_round == -1 || fake_fault_round == round ? 3 : 0;
    return (double)nb * (round == 1 ? fake_warm_s_per_block[nt != 0]
                                    : fake_s_per_block[nt != 0]);
}

static void fake_start(double plain, double nt, double warm_plain,
                       double warm_nt, int fault_round)
{
    px_nt_probe_reset();
    px_probe_piece = fake_piece;
    fake_s_per_block[0] = plain;
    fake_s_per_block[1] = nt;
    fake_warm_s_per_block[0] = warm_plain;
    fake_warm_s_per_block[1] = warm_nt;
    fake_fault_round = fault_round;
    fake_pieces[0] = fake_pieces[1] = 0;
    fake_blocks = 0;
}

/* Size classes from nt_min: x1, x4, x16, x64 and up. */
static void test_nt_classes(void **state)
{
    (void)state;
    px_tuning saved = px_tune;
    const size_t m = WAY_MIB;
    px_tune = (px_tuning){"probing", 4 * m, SIZE_MAX, SIZE_MAX, 3, 1};
    assert_int_equal(px_nt_class(4 * m), 0);
    assert_int_equal(px_nt_class(16 * m - 1), 0);
    assert_int_equal(px_nt_class(16 * m), 1);
    assert_int_equal(px_nt_class(64 * m - 1), 1);
    assert_int_equal(px_nt_class(64 * m), 2);
    assert_int_equal(px_nt_class(256 * m - 1), 2);
    assert_int_equal(px_nt_class(256 * m), 3);
    assert_int_equal(px_nt_class(SIZE_MAX), 3);
    px_tune = saved;
    /* the floor: 2 x L2, never below 4 MiB (nor when the OS is silent) */
    assert_true(px_cache_floor(0) == 4 * m);
    assert_true(px_cache_floor(512 * 1024) == 4 * m);
    assert_true(px_cache_floor(2 * m) == 4 * m);
    assert_true(px_cache_floor(3 * m) == 6 * m);
    assert_true(px_cache_floor(SIZE_MAX) == 4 * m);
}

/* A probing row: from nt_min, the first PX_PROBE_ROUNDS fills of a size
 * class on a path are each written in 8 pieces, 4 plain and 4
 * non-temporal, covering its whole blocks once (the bits equal scalar for
 * u32, f64, the normals and the 32-byte blocks of curand_uniform_f64, from
 * an output 8 bytes off a line); the verdict follows the (scripted) times
 * of the rounds after the first, and holds for every later fill of that
 * class and path, whose bits equal scalar too, without probing again. */
static void test_nt_probe(void **state)
{
    (void)state;
    static const rngsnap_dist dists[] = {RNGSNAP_U32, RNGSNAP_F64,
                                         RNGSNAP_NORMAL_F64,
                                         RNGSNAP_CURAND_UNIFORM_F64};
    /* warm: the first round's times, which must not decide (a first
     * non-temporal pass over lines plain stores left dirty is slow) */
    static const struct {
        double plain, nt, warm_plain, warm_nt;
        int stream;
    } cases[] = {{2e-9, 1e-9, 1e-9, 3e-9, 1},
                 {1e-9, 2e-9, 2e-9, 1e-9, 0},
                 {1e-9, 1.02e-9, 1e-9, 0.5e-9, 1},
                 {1e-9, 1.08e-9, 2e-9, 1e-9, 0}};
    philox_isa best;
    assert_int_equal(philox_isa_resolve(PHILOX_ISA_AUTO, &best, NULL),
                     RNGSNAP_OK);
    px_tuning saved = px_tune;
    /* the threshold counts 16 bytes a block (curand_uniform_f64 writes
     * 32): half of the fill below, for every dist */
    const size_t nt_at = WAY_MIB / 2;
    const px_tuning probing = {"probing", nt_at, SIZE_MAX, SIZE_MAX, 3, 1};
    size_t bytes = WAY_MIB + 4096;
    unsigned char *a = aligned_alloc(64, bytes + 64);
    unsigned char *b = aligned_alloc(64, bytes + 64);
    assert_non_null(a);
    assert_non_null(b);
    for (size_t di = 0; di < sizeof dists / sizeof dists[0]; di++) {
        rngsnap_dist d = dists[di];
        size_t nd = bytes / vsize(d); /* a multiple of 4 values */
        rngsnap_philox s0 = {77 + di, 5, 0};
        rngsnap_philox sa = s0;
        px_tune = saved;
        assert_int_equal(philox_generate_isa(&sa, d, a + 8, nd,
                                             PHILOX_ISA_SCALAR), RNGSNAP_OK);
        size_t nb = (size_t)philox_words_for(d, nd) / 4;
        for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
            for (int p = 0; p < npaths; p++) {
                fake_start(cases[ci].plain, cases[ci].nt, cases[ci].warm_plain,
                           cases[ci].warm_nt, 0);
                px_tune = probing;
                assert_string_equal(px_nt_verdict_name(paths[p], nb * 16),
                                    "not measured yet");
                for (int fill = 1; fill <= PX_PROBE_ROUNDS + 1; fill++) {
                    rngsnap_philox sb = s0;
                    memset(b, 0xA5, bytes + 64);
                    assert_int_equal(philox_generate_isa(&sb, d, b + 8, nd,
                                                         paths[p]),
                                     RNGSNAP_OK);
                    assert_true(sb.offset == sa.offset);
                    if (memcmp(a + 8, b + 8, nd * vsize(d)) != 0)
                        fail_msg("%s, dist %d, case %zu, fill %d: differs "
                                 "from scalar", philox_isa_name(paths[p]),
                                 (int)d, ci, fill);
                    /* one round a fill, until decided */
                    int rounds = fill < PX_PROBE_ROUNDS ? fill
                                                        : PX_PROBE_ROUNDS;
                    assert_int_equal(fake_pieces[0], 4 * rounds);
                    assert_int_equal(fake_pieces[1], 4 * rounds);
                    assert_true(fake_blocks == nb * (size_t)rounds);
                    if (fill < PX_PROBE_ROUNDS)
                        assert_string_equal(
                            px_nt_verdict_name(paths[p], nb * 16),
                            "being measured");
                }
                assert_string_equal(px_nt_verdict_name(paths[p], nb * 16),
                                    cases[ci].stream ? "non-temporal stores"
                                                     : "plain stores");
                double med[2];
                assert_int_equal(px_nt_probe_medians(paths[p], nb * 16, med),
                                 PX_PROBE_SAMPLES);
                /* the later rounds' times, not the warm-up's */
                assert_true(fabs(med[0] - cases[ci].plain) <
                                1e-6 * cases[ci].plain &&
                            fabs(med[1] - cases[ci].nt) < 1e-6 * cases[ci].nt);
                assert_int_equal(px_nt_choice(paths[p], nt_at),
                                 cases[ci].stream);
                assert_int_equal(px_nt_choice(paths[p], nt_at - 1), 0);
                /* another size class is measured on its own */
                assert_string_equal(px_nt_verdict_name(paths[p], nt_at * 4),
                                    "not measured yet");
            }
        }
    }
    /* a round whose pages faulted in is not counted: one fill more */
    fake_start(2e-9, 1e-9, 2e-9, 1e-9, 2);
    px_tune = probing;
    size_t n32 = bytes / 4, nb32 = n32 / 4;
    for (int fill = 1; fill <= PX_PROBE_ROUNDS + 1; fill++) {
        rngsnap_philox s = {5, 6, 0};
        assert_string_equal(px_nt_verdict_name(best, nb32 * 16),
                            fill == 1 ? "not measured yet" : "being measured");
        assert_int_equal(philox_generate_isa(&s, RNGSNAP_U32, b, n32, best),
                         RNGSNAP_OK);
    }
    assert_int_equal(fake_pieces[0] + fake_pieces[1],
                     PX_PROBE_PIECES * (PX_PROBE_ROUNDS + 1));
    assert_string_equal(px_nt_verdict_name(best, nb32 * 16),
                        "non-temporal stores");
    /* fills that always fault (fresh buffers): after PX_PROBE_TRIES
     * rounds, plain stores, however the pieces timed */
    fake_start(2e-9, 1e-9, 2e-9, 1e-9, -1);
    for (int fill = 1; fill <= PX_PROBE_TRIES + 1; fill++) {
        rngsnap_philox s = {5, 6, 0};
        assert_int_equal(philox_generate_isa(&s, RNGSNAP_U32, b, n32, best),
                         RNGSNAP_OK);
    }
    assert_int_equal(fake_pieces[0] + fake_pieces[1],
                     PX_PROBE_PIECES * PX_PROBE_TRIES);
    assert_string_equal(px_nt_verdict_name(best, nb32 * 16), "plain stores");
    assert_int_equal(px_nt_probe_medians(best, nb32 * 16, (double[2]){0, 0}),
                     0);
    /* below nt_min: never probed */
    fake_start(1e-9, 1e-9, 1e-9, 1e-9, 0);
    rngsnap_philox s = {1, 2, 0};
    assert_int_equal(philox_generate_isa(&s, RNGSNAP_U32, b, nt_at / 4 - 4,
                                         best), RNGSNAP_OK);
    assert_int_equal(fake_pieces[0] + fake_pieces[1], 0);
    assert_string_equal(px_nt_verdict_name(best, nt_at), "not measured yet");
    /* one probe at a time: while it runs, other fills write plain */
    assert_int_equal(px_nt_choice(best, nt_at), PX_NT_PROBE);
    assert_int_equal(px_nt_choice(best, nt_at), 0);
    /* a fill of fewer blocks than pieces: plain, and the next one asks */
    fake_start(1e-9, 1e-9, 1e-9, 1e-9, 0);
    px_tune = (px_tuning){"probing", 0, SIZE_MAX, SIZE_MAX, 3, 1};
    uint32_t w[28], want[28];
    rngsnap_philox s1 = {9, 9, 0}, s2 = s1;
    assert_int_equal(philox_generate_isa(&s1, RNGSNAP_U32, w, 28, best),
                     RNGSNAP_OK);
    assert_string_equal(px_nt_verdict_name(best, 16), "not measured yet");
    assert_int_equal(px_nt_choice(best, 16), PX_NT_PROBE);
    px_tune = saved;
    assert_int_equal(philox_generate_isa(&s2, RNGSNAP_U32, want, 28,
                                         PHILOX_ISA_SCALAR), RNGSNAP_OK);
    assert_memory_equal(w, want, sizeof w);
    px_nt_probe_reset();
    free(a);
    free(b);
}

/* ---- conversions -------------------------------------------------------- */

static void test_uniform_formulas(void **state)
{
    (void)state;
    for (int i = 0; i < 1000; i++) {
        uint32_t w0 = (uint32_t)rnd(), w1 = (uint32_t)rnd();
        assert_true(px_u32_to_f32(w0) == (float)((double)(w0 >> 8) / 16777216.0));
        uint64_t u = (uint64_t)w0 | (uint64_t)w1 << 32;
        assert_true(px_u64_to_f64(u) == ldexp((double)(u >> 11), -53));
    }
    assert_true(px_u32_to_f32(0xffffffffu) < 1.0f);
    assert_true(px_u64_to_f64(UINT64_MAX) < 1.0);
    assert_true(px_u32_to_f32(0) == 0.0f);
    /* through generate: F32 value i is word i converted, F64 value i is
     * words 2i, 2i+1 (low first) converted */
    for (int p = 0; p < npaths; p++) {
        rngsnap_philox s = {5, 6, 3}, t = s, q = s;
        uint32_t w[202];
        float f[101];
        double g[101];
        uint64_t u[101];
        philox_generate_isa(&s, RNGSNAP_U32, w, 202, paths[p]);
        philox_generate_isa(&t, RNGSNAP_F32, f, 101, paths[p]);
        philox_generate_isa(&q, RNGSNAP_F64, g, 101, paths[p]);
        rngsnap_philox r = {5, 6, 3};
        philox_generate_isa(&r, RNGSNAP_U64, u, 101, paths[p]);
        for (int i = 0; i < 101; i++) {
            assert_true(f[i] == px_u32_to_f32(w[i]));
            assert_true(u[i] == ((uint64_t)w[2 * i] | (uint64_t)w[2 * i + 1] << 32));
            assert_true(g[i] == px_u64_to_f64(u[i]));
        }
        assert_true(q.offset == 3 + 202 && r.offset == 3 + 202 && t.offset == 3 + 101);
    }
}

/* Our log/sin/cos against libm over their whole input ranges. */
static void test_math_bounds(void **state)
{
    (void)state;
    double worst_lf = 0, worst_l = 0, worst_sf = 0, worst_s = 0;
    for (int i = 0; i < 200000; i++) {
        uint32_t w = (uint32_t)rnd();
        float x = (float)w * 0x1p-32f + 0x1p-33f;
        double e = fabs((double)px_logf(x) - log((double)x));
        if (e > worst_lf) worst_lf = e;
        double xd = (double)((rnd() >> 11) + 1) * 0x1p-53;
        if (i % 3 == 0)
            xd = ldexp(xd, -(int)(rnd() % 50)); /* small u: the tail */
        double ed = fabs(px_log(xd) - log(xd)) / fabs(log(xd) == 0 ? 1 : log(xd));
        if (ed > worst_l) worst_l = ed;
        float a = ((float)(int32_t)(rnd() % (1u << 22)) - 2097152.0f) * 0x1p-22f *
                  1.57079632679489661923f;
        float s, c;
        px_sincosf_kernel(a, &s, &c);
        double es = fmax(fabs(s - sin((double)a)), fabs(c - cos((double)a)));
        if (es > worst_sf) worst_sf = es;
        double ad = ((double)(rnd() % (1ull << 51)) - 0x1p50) * 0x1p-51 *
                    1.57079632679489661923;
        double sd, cd;
        px_sincos_kernel(ad, &sd, &cd);
        double esd = fmax(fabs(sd - sin(ad)), fabs(cd - cos(ad)));
        if (esd > worst_s) worst_s = esd;
    }
    print_message("# worst: logf abs %.3g, log rel %.3g, sincosf abs %.3g, "
                  "sincos abs %.3g\n", worst_lf, worst_l, worst_sf, worst_s);
    /* documented bounds (docs/engine.md) */
    assert_true(worst_lf <= 1e-6);
    assert_true(worst_l <= 4e-16);
    assert_true(worst_sf <= 1.2e-7);
    assert_true(worst_s <= 2.3e-16);
    assert_true(px_logf(1.0f) == 0.0f && px_log(1.0) == 0.0);
}

static void test_normals(void **state)
{
    (void)state;
    size_t n = 1 << 20;
    float *f = malloc(n * sizeof *f);
    double *d = malloc(n * sizeof *d);
    float *f2 = malloc(n * sizeof *f);
    double *d2 = malloc(n * sizeof *d);
    assert_non_null(f);
    assert_non_null(d);
    assert_non_null(f2);
    assert_non_null(d2);
    rngsnap_philox s = {2024, 3, 1}; /* odd offset: unaligned pairs too */
    assert_int_equal(philox_generate_isa(&s, RNGSNAP_NORMAL_F32, f, n,
                                         PHILOX_ISA_SCALAR), RNGSNAP_OK);
    assert_true(s.offset == 1 + n);
    rngsnap_philox t = {2024, 3, 4};
    assert_int_equal(philox_generate_isa(&t, RNGSNAP_NORMAL_F64, d, n,
                                         PHILOX_ISA_SCALAR), RNGSNAP_OK);
    assert_true(t.offset == 4 + 2 * (uint64_t)n);
    double mf = 0, vf = 0, md = 0, vd = 0, maxf = 0;
    for (size_t i = 0; i < n; i++) {
        mf += f[i];
        vf += (double)f[i] * f[i];
        md += d[i];
        vd += d[i] * d[i];
        if (fabs(f[i]) > maxf) maxf = fabs(f[i]);
        assert_true(isfinite(f[i]) && isfinite(d[i]));
    }
    mf /= (double)n; vf = vf / (double)n - mf * mf;
    md /= (double)n; vd = vd / (double)n - md * md;
    print_message("# normal f32 mean %.5f var %.5f max %.3f; f64 mean %.5f var %.5f\n",
                  mf, vf, maxf, md, vd);
    /* 1M samples: sd of the mean 0.001, of the variance 0.0014 */
    assert_true(fabs(mf) < 0.005 && fabs(vf - 1) < 0.007);
    assert_true(fabs(md) < 0.005 && fabs(vd - 1) < 0.007);
    assert_true(maxf < 6.8f);

    /* each value against Box-Muller in libm double precision */
    rngsnap_philox w0 = {2024, 3, 1};
    uint32_t *w = malloc((n + 1) * 4);
    assert_non_null(w);
    philox_generate_isa(&w0, RNGSNAP_U32, w, n, PHILOX_ISA_SCALAR);
    double worst = 0;
    for (size_t i = 0; i + 1 < n; i += 2) {
        double u1 = (double)(float)((float)w[i] * 0x1p-32f + 0x1p-33f);
        double th = 2 * M_PI * (double)(w[i + 1] >> 8) * 0x1p-24;
        double r = sqrt(-2 * log(u1));
        double e0 = fabs(f[i] - r * cos(th)), e1 = fabs(f[i + 1] - r * sin(th));
        double e = fmax(e0, e1) / fmax(1.0, r);
        if (e > worst) worst = e;
    }
    print_message("# normal f32 vs libm: worst |diff|/max(1,r) %.3g\n", worst);
    assert_true(worst < 2e-6);
    free(w);

    /* every path gives the same bits, for any start */
    for (int p = 1; p < npaths; p++) {
        for (uint64_t off = 0; off < 8; off++) {
            size_t m = n - (size_t)off * 333;
            rngsnap_philox a = {2024, 3, off}, b = a;
            philox_generate_isa(&a, RNGSNAP_NORMAL_F32, f, m, PHILOX_ISA_SCALAR);
            philox_generate_isa(&b, RNGSNAP_NORMAL_F32, f2, m, paths[p]);
            assert_memory_equal(f, f2, m * sizeof *f);
            a = (rngsnap_philox){2024, 3, off};
            b = a;
            philox_generate_isa(&a, RNGSNAP_NORMAL_F64, d, m / 2, PHILOX_ISA_SCALAR);
            philox_generate_isa(&b, RNGSNAP_NORMAL_F64, d2, m / 2, paths[p]);
            assert_memory_equal(d, d2, m / 2 * sizeof *d);
        }
    }
    free(f);
    free(d);
    free(f2);
    free(d2);
}

/* Odd counts of normals: the spare value of the last pair is dropped and
 * the stream moves past the whole pair. */
static void test_normal_odd_count(void **state)
{
    (void)state;
    assert_true(philox_words_for(RNGSNAP_NORMAL_F32, 3) == 4);
    assert_true(philox_words_for(RNGSNAP_NORMAL_F64, 3) == 8);
    assert_true(philox_words_for(RNGSNAP_NORMAL_F32, 4) == 4);
    float all[4], one[3];
    rngsnap_philox a = {1, 2, 0}, b = a;
    philox_generate(&a, RNGSNAP_NORMAL_F32, all, 4);
    philox_generate(&b, RNGSNAP_NORMAL_F32, one, 3);
    assert_memory_equal(all, one, sizeof one);
    assert_true(a.offset == b.offset);
    double d4[4], d3[3];
    a = (rngsnap_philox){1, 2, 0};
    b = a;
    philox_generate(&a, RNGSNAP_NORMAL_F64, d4, 4);
    philox_generate(&b, RNGSNAP_NORMAL_F64, d3, 3);
    assert_memory_equal(d4, d3, sizeof d3);
    assert_true(a.offset == b.offset);
}

/* The cuRAND-exact dists use cuRAND's words: curand_uniform_double takes
 * one word (8 bytes out of 4), an odd count of curand_normal(_double)
 * uses the whole last pair (cuRAND's spare is dropped, not kept). */
static void test_curand_word_use(void **state)
{
    (void)state;
    assert_true(philox_words_for(RNGSNAP_CURAND_UNIFORM_F32, 5) == 5);
    assert_true(philox_words_for(RNGSNAP_CURAND_UNIFORM_F64, 5) == 5);
    assert_true(philox_words_for(RNGSNAP_CURAND_NORMAL_F32, 5) == 6);
    assert_true(philox_words_for(RNGSNAP_CURAND_NORMAL_F64, 5) == 12);
    static const rngsnap_dist nd[] = {RNGSNAP_CURAND_NORMAL_F32,
                                      RNGSNAP_CURAND_NORMAL_F64};
    for (size_t i = 0; i < 2; i++)
        for (uint64_t off = 0; off < 5; off++) {
            double all[6], odd[5]; /* room for either type */
            rngsnap_philox a = {9, 3, off}, b = a;
            philox_generate(&a, nd[i], all, 6);
            philox_generate(&b, nd[i], odd, 5);
            assert_memory_equal(all, odd, 5 * vsize(nd[i]));
            assert_true(a.offset == b.offset);
        }
}

/* ---- resume exactness, reserve, state ----------------------------------- */

static void test_pieces_equal_whole(void **state)
{
    (void)state;
    size_t n = 20000;
    unsigned char *whole = malloc(n * 8), *part = malloc(n * 8);
    assert_non_null(whole);
    assert_non_null(part);
    for (int d = 0; d < RNGSNAP_DIST_COUNT; d++) {
        unsigned uv = philox_unit_values((rngsnap_dist)d);
        for (int p = 0; p < npaths; p++) {
            rngsnap_philox s = {77, 1, (uint64_t)(rnd() % 9)}, t = s;
            philox_generate_isa(&s, (rngsnap_dist)d, whole, n, paths[p]);
            size_t done = 0;
            while (done < n) {
                size_t k = (size_t)(rnd() % 300) * uv; /* whole units */
                if (k > n - done)
                    k = n - done;
                assert_int_equal(philox_generate_isa(&t, (rngsnap_dist)d,
                                                     part + done * vsize((rngsnap_dist)d),
                                                     k, paths[p]), RNGSNAP_OK);
                done += k;
            }
            assert_true(s.offset == t.offset);
            assert_memory_equal(whole, part, n * vsize((rngsnap_dist)d));
        }
    }
    free(whole);
    free(part);
}

static void test_stream_reserve_state(void **state)
{
    (void)state;
    void *sp;
    assert_int_equal(philox_stream_new(NULL, 0, sizeof(philox_stream), &sp),
                     RNGSNAP_OK);
    philox_stream *s = sp;
    philox_stream_seed(s, 0x0123456789abcdefull, 9);
    rngsnap_philox at;
    assert_int_equal(philox_stream_reserve(s, 0, &at), RNGSNAP_OK);
    assert_true(at.seed == 0x0123456789abcdefull && at.subsequence == 9 &&
                at.offset == 0);
    assert_true(s->pos.offset == 0);
    uint32_t w[10];
    philox_stream_generate(s, RNGSNAP_U32, w, 3);
    assert_int_equal(philox_stream_reserve(s, 5, &at), RNGSNAP_OK);
    assert_true(at.offset == 3 && s->pos.offset == 8);
    uint32_t x[2];
    philox_stream_generate(s, RNGSNAP_U32, x, 2);
    rngsnap_philox r = {0x0123456789abcdefull, 9, 0};
    philox_generate(&r, RNGSNAP_U32, w, 10);
    assert_memory_equal(x, &w[8], sizeof x);

    /* state: 24 bytes LE (seed, subsequence, offset), round trip */
    unsigned char buf[24];
    assert_int_equal(philox_stream_get_state(s, buf, 24), RNGSNAP_OK);
    static const unsigned char expect[24] = {
        0xef, 0xcd, 0xab, 0x89, 0x67, 0x45, 0x23, 0x01, 9, 0, 0, 0, 0, 0, 0, 0,
        10, 0, 0, 0, 0, 0, 0, 0};
    assert_memory_equal(buf, expect, 24);
    assert_int_equal(philox_stream_get_state(s, buf, 23), RNGSNAP_E_INVALID);
    assert_int_equal(philox_stream_validate_state(NULL, buf, 25),
                     RNGSNAP_E_INVALID);
    for (int i = 0; i < 100; i++) {
        rngsnap_philox a = {rnd(), rnd(), rnd()}, b;
        philox_state_pack(&a, buf);
        philox_state_unpack(buf, &b);
        assert_memory_equal(&a, &b, sizeof a);
        assert_int_equal(philox_stream_set_state(s, buf, 24), RNGSNAP_OK);
        assert_memory_equal(&s->pos, &a, sizeof a);
    }
    /* n = 0: nothing written, nothing moved; NULL out refused */
    rngsnap_philox z = {3, 4, 5};
    assert_int_equal(philox_generate(&z, RNGSNAP_F64, NULL, 0), RNGSNAP_OK);
    assert_true(z.offset == 5);
    assert_int_equal(philox_generate(&z, RNGSNAP_F64, NULL, 1),
                     RNGSNAP_E_INVALID);
    assert_true(z.offset == 5);
    /* the very end of the word range is reachable, exactly */
    rngsnap_philox end = {1, 1, UINT64_MAX - 4};
    assert_int_equal(philox_generate(&end, RNGSNAP_U32, w, 4), RNGSNAP_OK);
    assert_true(end.offset == UINT64_MAX);
    assert_int_equal(w[0], ref_word(1, 1, UINT64_MAX - 4));
    assert_int_equal(w[3], ref_word(1, 1, UINT64_MAX - 1));
    /* offsets that would wrap are refused and change nothing */
    rngsnap_philox big = {1, 1, UINT64_MAX - 2};
    assert_int_equal(philox_generate(&big, RNGSNAP_U32, w, 4),
                     RNGSNAP_E_INVALID);
    assert_true(big.offset == UINT64_MAX - 2);
    assert_int_equal(philox_generate(&big, (rngsnap_dist)99, w, 1),
                     RNGSNAP_E_INVALID);
    philox_stream_free(s);
}

/* Small draws through a stream (the cached-block path), mixed with seed,
 * set_state and reserve, equal the reference fill from a shadow position. */
static void test_small_draws_cached(void **state)
{
    (void)state;
    void *sp;
    assert_int_equal(philox_stream_new(NULL, 0, sizeof(philox_stream), &sp),
                     RNGSNAP_OK);
    philox_stream *s = sp;
    rngsnap_philox shadow = {0, 0, 0};
    for (int i = 0; i < 20000; i++) {
        unsigned op = (unsigned)(rnd() % 16);
        if (op == 0) {
            uint64_t seed = rnd() % 3, sub = rnd() % 3; /* collide often */
            philox_stream_seed(s, seed, sub);
            shadow = (rngsnap_philox){seed, sub, 0};
        } else if (op == 1) {
            rngsnap_philox p = {rnd() % 3, rnd() % 3,
                                rnd() % 2 ? rnd() % 50 : ((uint64_t)1 << 34) - 5};
            unsigned char buf[24];
            philox_state_pack(&p, buf);
            philox_stream_set_state(s, buf, 24);
            shadow = p;
        } else if (op == 2) {
            uint64_t k = rnd() % 9;
            rngsnap_philox at;
            philox_stream_reserve(s, k, &at);
            assert_memory_equal(&at, &shadow, sizeof at);
            shadow.offset += k;
        } else {
            rngsnap_dist d = (rngsnap_dist)(rnd() % RNGSNAP_DIST_COUNT);
            size_t n = 1 + (size_t)(rnd() % 6);
            unsigned char got[64], ref[64];
            s->isa = paths[rnd() % (uint64_t)npaths];
            assert_int_equal(philox_stream_generate(s, d, got, n), RNGSNAP_OK);
            assert_int_equal(philox_generate_isa(&shadow, d, ref, n,
                                                 PHILOX_ISA_SCALAR), RNGSNAP_OK);
            assert_memory_equal(got, ref, n * vsize(d));
            assert_memory_equal(&s->pos, &shadow, sizeof shadow);
        }
    }
    philox_stream_free(s);
}

static void test_isa_names(void **state)
{
    (void)state;
    assert_int_equal(philox_isa_parse("avx512"), PHILOX_ISA_AVX512);
    assert_int_equal(philox_isa_parse("auto"), PHILOX_ISA_AUTO);
    assert_int_equal(philox_isa_parse("sse9"), -1);
    assert_true(philox_isa_supported(PHILOX_ISA_SCALAR));
    philox_isa got;
    assert_int_equal(philox_isa_resolve(PHILOX_ISA_SCALAR, &got, NULL),
                     RNGSNAP_OK);
    assert_int_equal(got, PHILOX_ISA_SCALAR);
    assert_int_equal(philox_isa_resolve((philox_isa)17, &got, NULL),
                     RNGSNAP_E_CONFIG);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_kat_every_path),
        cmocka_unit_test(test_curand_streams_every_path),
        cmocka_unit_test(test_paths_equal_scalar),
        cmocka_unit_test(test_large_fills),
        cmocka_unit_test(test_large_fills_kernels),
        cmocka_unit_test(test_tuning_rows),
        cmocka_unit_test(test_nt_verdict),
        cmocka_unit_test(test_nt_classes),
        cmocka_unit_test(test_nt_probe),
        cmocka_unit_test(test_normal_f32_edge_words),
        cmocka_unit_test(test_uniform_formulas),
        cmocka_unit_test(test_math_bounds),
        cmocka_unit_test(test_normals),
        cmocka_unit_test(test_normal_odd_count),
        cmocka_unit_test(test_curand_word_use),
        cmocka_unit_test(test_pieces_equal_whole),
        cmocka_unit_test(test_stream_reserve_state),
        cmocka_unit_test(test_small_draws_cached),
        cmocka_unit_test(test_isa_names),
    };
    return cmocka_run_group_tests_name("engine", tests, setup, NULL);
}
