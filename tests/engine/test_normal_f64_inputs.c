/*
 * test_normal_f64_inputs.c - NORMAL_F64 builds its inputs as exact doubles
 * from 32-bit words (philox_convert.h, px_normal_f64) so that gcc can
 * vectorise it; the values must equal the 64-bit integer formula of
 * docs/engine.md bit for bit.  Checked here against that formula, written
 * as it was before (53-bit integers converted to double):
 *  - every block of 4 words drawn from 29 edge words (quarter-turn and
 *    rounding boundaries, 0, all ones: 29^4 blocks), plus 2^20 random ones,
 *    through px_normal_f64 itself;
 *  - the same edge and random blocks through each path's own conversion
 *    (px_convert_for: avx2 has NORMAL_F64 in intrinsics), in runs whose
 *    lengths reach every tail;
 *  - u1 at every exponent's ends and next to sqrt(2) (px_log's halving),
 *    which the edge words miss, through each path's conversion;
 *  - fills on every ISA path this CPU supports (the vectorised loop, the
 *    tails, odd counts and unaligned starts) against the formula applied
 *    to the same position's words.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "philox_convert.h"
#include "philox_isa.h"

/* The formula as written with 64-bit integers (b25538c's px_normal_f64). */
static void ref_normal_f64(uint32_t w0, uint32_t w1, uint32_t w2, uint32_t w3,
                           double *z0, double *z1)
{
    uint64_t a64 = px_words_to_u64(w0, w1), b64 = px_words_to_u64(w2, w3);
    double u1 = (double)(int64_t)((a64 >> 11) + 1) * 0x1p-53;
    double r = __builtin_sqrt(-2.0 * px_log(u1));
    uint64_t i = b64 >> 11;
    uint64_t q = (i + (1ull << 50)) >> 51;
    int64_t ri = (int64_t)i - (int64_t)(q << 51);
    double a = (double)ri * 0x1p-51 * 1.57079632679489661923;
    double so, co;
    px_sincos_quarter((uint32_t)q, a, &so, &co);
    *z0 = r * co;
    *z1 = r * so;
}

static const uint32_t edge[] = {
    0u, 1u, 2u, 0x7ffu, 0x800u, 0x801u, 0xfffu, 0x1fffffu, 0x1fffffffu,
    0x20000000u, 0x20000001u, 0x3fffffffu, 0x40000000u, 0x5fffffffu,
    0x60000000u, 0x7fffffffu, 0x80000000u, 0x80000001u, 0x9fffffffu,
    0xa0000000u, 0xbfffffffu, 0xc0000000u, 0xdfffffffu, 0xe0000000u,
    0xe0000001u, 0xfffff7ffu, 0xfffff800u, 0xfffffffeu, 0xffffffffu};
#define NEDGE (sizeof edge / sizeof edge[0])

static void check_block(const uint32_t w[4])
{
    double a[2], b[2];
    px_normal_f64(w[0], w[1], w[2], w[3], &a[0], &a[1]);
    ref_normal_f64(w[0], w[1], w[2], w[3], &b[0], &b[1]);
    if (memcmp(a, b, sizeof a) != 0)
        fail_msg("words %08x %08x %08x %08x: %a %a, formula %a %a", w[0],
                 w[1], w[2], w[3], a[0], a[1], b[0], b[1]);
}

static void test_edge_and_random_words(void **state)
{
    (void)state;
    uint32_t w[4];
    for (size_t i = 0; i < NEDGE; i++)
        for (size_t j = 0; j < NEDGE; j++)
            for (size_t k = 0; k < NEDGE; k++)
                for (size_t l = 0; l < NEDGE; l++) {
                    w[0] = edge[i], w[1] = edge[j], w[2] = edge[k];
                    w[3] = edge[l];
                    check_block(w);
                }
    uint64_t x = 0x9e3779b97f4a7c15ull;
    for (int n = 0; n < (1 << 20); n++) {
        for (int j = 0; j < 4; j++) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            w[j] = (uint32_t)(x >> 16);
        }
        check_block(w);
    }
}

/* nb blocks of words w through each supported path's own conversion, in
 * runs of 1 to 23 blocks (the vector loop and every tail length); every
 * pair must equal want (got: scratch of nb * 2 doubles). */
static void check_each_path_conversion(const uint32_t *w, const double *want,
                                       double *got, size_t nb)
{
    for (int isa = PHILOX_ISA_SCALAR; isa < PHILOX_ISA_COUNT; isa++) {
        px_convert_fn convert = px_convert_for((philox_isa)isa);
        if (!philox_isa_supported((philox_isa)isa) || convert == NULL)
            continue;
        memset(got, 0, nb * 16);
        for (size_t at = 0, run = 1; at < nb; at += run, run = run % 23 + 1)
            convert(RNGSNAP_NORMAL_F64, w + 4 * at, got + 2 * at,
                    at + run <= nb ? run : nb - at);
        for (size_t b = 0; b < nb; b++)
            if (memcmp(&got[2 * b], &want[2 * b], 16) != 0)
                fail_msg("%s: words %08x %08x %08x %08x: %a %a, formula %a %a",
                         philox_isa_name((philox_isa)isa), w[4 * b],
                         w[4 * b + 1], w[4 * b + 2], w[4 * b + 3], got[2 * b],
                         got[2 * b + 1], want[2 * b], want[2 * b + 1]);
    }
}

/* Every edge block and 2^16 random ones, converted by each path in runs
 * of 1 to 23 blocks (the vector loop and every tail length). */
static void test_path_conversions_on_edge_words(void **state)
{
    (void)state;
    size_t nb = NEDGE * NEDGE * NEDGE * NEDGE + (1u << 16);
    uint32_t *w = malloc(nb * 16);
    double *got = malloc(nb * 16), *want = malloc(nb * 16);
    assert_non_null(w);
    assert_non_null(got);
    assert_non_null(want);
    size_t b = 0;
    for (size_t i = 0; i < NEDGE; i++)
        for (size_t j = 0; j < NEDGE; j++)
            for (size_t k = 0; k < NEDGE; k++)
                for (size_t l = 0; l < NEDGE; l++, b++) {
                    w[4 * b] = edge[i], w[4 * b + 1] = edge[j];
                    w[4 * b + 2] = edge[k], w[4 * b + 3] = edge[l];
                }
    uint64_t x = 0x2545f4914f6cdd1dull;
    for (; b < nb; b++)
        for (int j = 0; j < 4; j++) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            w[4 * b + j] = (uint32_t)(x >> 16);
        }
    for (b = 0; b < nb; b++)
        ref_normal_f64(w[4 * b], w[4 * b + 1], w[4 * b + 2], w[4 * b + 3],
                       &want[2 * b], &want[2 * b + 1]);
    check_each_path_conversion(w, want, got, nb);
    free(w);
    free(got);
    free(want);
}

/* u1 = M * 2^-53 for M = (U64(w0,w1) >> 11) + 1: the words of the block
 * whose M is m (low bits of w0 below bit 11 given). */
static void words_for_m(uint64_t m, uint32_t low, uint32_t *w0, uint32_t *w1)
{
    uint64_t nn = m - 1; /* (U64 >> 11) */
    *w0 = (uint32_t)((nn & 0x1fffffu) << 11) | (low & 0x7ffu);
    *w1 = (uint32_t)(nn >> 21);
}

/* What the edge words miss in u1: every exponent's ends (M = 2^j and
 * 2^j - 1, e from -53 to 0) and the mantissa next to sqrt(2) (the `big`
 * halving in px_log: at and either side of 0x3ff6a09e667f3bcd, for every
 * exponent), each with every pair of edge words (w2, w3), through
 * px_normal_f64 and each path's own conversion (runs of 1 to 23). */
static void test_u1_boundaries(void **state)
{
    (void)state;
    const uint64_t sq = (1ull << 52) | 0x6a09e667f3bcdull;
    uint64_t ms[53 * 5 + 1];
    size_t nm = 0;
    ms[nm++] = 1ull << 53; /* u1 == 1 */
    for (int k = 0; k < 53; k++) {
        uint64_t b = sq >> k;
        ms[nm++] = b - 1 > 0 ? b - 1 : 1;
        ms[nm++] = b;
        ms[nm++] = b + 1;
        ms[nm++] = 1ull << (52 - k);
        ms[nm++] = (1ull << (53 - k)) - 1;
    }
    size_t nb = nm * 2 * NEDGE * NEDGE;
    uint32_t *w = malloc(nb * 16);
    double *got = malloc(nb * 16), *want = malloc(nb * 16);
    assert_non_null(w);
    assert_non_null(got);
    assert_non_null(want);
    size_t b = 0;
    for (size_t i = 0; i < nm; i++)
        for (uint32_t low = 0; low <= 0x7ffu; low += 0x7ffu)
            for (size_t k = 0; k < NEDGE; k++)
                for (size_t l = 0; l < NEDGE; l++, b++) {
                    words_for_m(ms[i], low, &w[4 * b], &w[4 * b + 1]);
                    w[4 * b + 2] = edge[k], w[4 * b + 3] = edge[l];
                    check_block(&w[4 * b]);
                    ref_normal_f64(w[4 * b], w[4 * b + 1], w[4 * b + 2],
                                   w[4 * b + 3], &want[2 * b],
                                   &want[2 * b + 1]);
                }
    assert_true(b == nb);
    /* the sqrt(2) words are what they claim: u1's mantissa bits */
    uint32_t w0, w1;
    words_for_m(sq, 0, &w0, &w1);
    double u1 = (double)(int64_t)((px_words_to_u64(w0, w1) >> 11) + 1) * 0x1p-53;
    assert_true((px_d_bits(u1) & 0x000fffffffffffffull) == 0x6a09e667f3bcdull);
    check_each_path_conversion(w, want, got, nb);
    free(w);
    free(got);
    free(want);
}

static void test_paths_against_formula(void **state)
{
    (void)state;
    enum { N = 4099 }; /* odd: the last pair keeps one value */
    static uint32_t words[2 * (N + 1)];
    static double got[N + 1], want[N + 1];
    static const uint64_t offs[] = {0, 4, 12, 4096}; /* word offsets */
    static const size_t ns[] = {1, 2, 3, 7, 37, 512, 937, 4098, N};
    for (int isa = PHILOX_ISA_SCALAR; isa < PHILOX_ISA_COUNT; isa++) {
        if (!philox_isa_supported((philox_isa)isa))
            continue;
        for (size_t o = 0; o < sizeof offs / sizeof offs[0]; o++) {
            for (size_t ni = 0; ni < sizeof ns / sizeof ns[0]; ni++) {
                size_t n = ns[ni];
                rngsnap_philox sw = {0x1234567890abcdefull, 77, offs[o]};
                rngsnap_philox sv = sw;
                size_t nw = 2 * (n + (n & 1));
                assert_int_equal(philox_generate_isa(&sw, RNGSNAP_U32, words,
                                                     nw, (philox_isa)isa),
                                 RNGSNAP_OK);
                for (size_t b = 0; b < nw / 4; b++)
                    ref_normal_f64(words[4 * b], words[4 * b + 1],
                                   words[4 * b + 2], words[4 * b + 3],
                                   &want[2 * b], &want[2 * b + 1]);
                /* every other offset starts 8 bytes in (not 16-aligned) */
                double *out = (double *)((char *)got + (o & 1 ? 0 : 8));
                memset(got, 0, sizeof got);
                assert_int_equal(philox_generate_isa(&sv, RNGSNAP_NORMAL_F64,
                                                     out, n, (philox_isa)isa),
                                 RNGSNAP_OK);
                if (memcmp(out, want, n * sizeof(double)) != 0)
                    fail_msg("isa %s offset %llu n %zu differs from the formula",
                             philox_isa_name((philox_isa)isa),
                             (unsigned long long)offs[o], n);
                assert_int_equal(sv.offset, sw.offset);
            }
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_edge_and_random_words),
        cmocka_unit_test(test_path_conversions_on_edge_words),
        cmocka_unit_test(test_u1_boundaries),
        cmocka_unit_test(test_paths_against_formula),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
