/*
 * test_dist.c - the engine for every backend (issue 23, item 2): the
 * guide's example plugin (docs/examples/minimal_plugin.c) keeps its
 * streams as Philox positions and draws through the host table's engine
 * (rngsnap_host.philox_generate).  So it draws every distribution with
 * the cpu backend's bits from the same position, including the
 * distributions added after a plugin is written (rngsnap_dist grows);
 * and the core gives it reserve, the stream position and keyed streams
 * with no change of its own.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <rngsnap.h>

#include "helpers.h"

/* cpu and the example plugin (one device each, stream "default"). */
static rngsnap *open_both(void)
{
    const char *ini = th_write("rng.ini", "[rngsnap]\nplugin_dir = %s:%s\n"
                               "[backend.cpu]\n[backend.minimal]\n",
                               getenv("RNGSNAP_EXAMPLE_PLUGIN_DIR"),
                               getenv("RNGSNAP_PLUGIN_BUILD_DIR"));
    rngsnap *ctx = th_open_ok(ini, 0);
    assert_int_equal(rngsnap_seed_all(ctx, 11), RNGSNAP_OK);
    return ctx;
}

static rngsnap_stream *find(rngsnap *ctx, const char *backend)
{
    rngsnap_stream *s = NULL;
    assert_int_equal(rngsnap_stream_find(ctx, backend, 0, "default", &s),
                     RNGSNAP_OK);
    return s;
}

#define MAXN 4099

/* Same position, same values, same advance: the example plugin and the
 * cpu backend, for every distribution, odd and even counts, mid-block
 * starts and a start past 2^32 blocks. */
static void test_same_bits_as_cpu(void **state)
{
    (void)state;
    rngsnap *ctx = open_both();
    rngsnap_stream *cpu = find(ctx, "cpu"), *min = find(ctx, "minimal");
    static double a[MAXN], b[MAXN];
    static const size_t counts[] = {1, 2, 3, 7, 64, 1001, MAXN};
    static const uint64_t offsets[] = {0, 1, 3, 4, 17179869181ull};
    for (int d = 0; d < RNGSNAP_DIST_COUNT; d++)
        for (size_t i = 0; i < sizeof counts / sizeof *counts; i++)
            for (size_t k = 0; k < sizeof offsets / sizeof *offsets; k++) {
                size_t n = counts[i];
                rngsnap_philox pa = {0x1234567890abull + (uint64_t)d, 5,
                                     offsets[k]};
                rngsnap_philox pb = pa, pc = pa;
                memset(a, 0, sizeof a);
                memset(b, 1, sizeof b);
                assert_int_equal(rngsnap_generate_at(cpu, &pa, d, a, n),
                                 RNGSNAP_OK);
                assert_int_equal(rngsnap_generate_at(min, &pb, d, b, n),
                                 RNGSNAP_OK);
                size_t bytes = n * rngsnap_dist_size(d);
                assert_memory_equal(a, b, bytes);
                assert_true(pa.offset == pb.offset);
                /* And the public function itself. */
                assert_int_equal(rngsnap_philox_generate(&pc, d, b, n),
                                 RNGSNAP_OK);
                assert_memory_equal(a, b, bytes);
                assert_true(pc.offset == pa.offset);
                assert_true(pc.offset - offsets[k]
                            == rngsnap_dist_words(d, n));
            }
    rngsnap_close(ctx);
}

/* The example's own stream: position, draws, reserve and keyed streams
 * behave as the cpu backend's do. */
static void test_positions(void **state)
{
    (void)state;
    rngsnap *ctx = open_both();
    rngsnap_stream *min = find(ctx, "minimal");
    rngsnap_philox p, q, r;
    assert_int_equal(rngsnap_stream_position(min, &p), RNGSNAP_OK);
    assert_true(p.offset == 0);
    float got[5], want[5];
    assert_int_equal(rngsnap_generate(min, RNGSNAP_NORMAL_F32, got, 5),
                     RNGSNAP_OK);
    assert_int_equal(rngsnap_philox_generate(&p, RNGSNAP_NORMAL_F32, want, 5),
                     RNGSNAP_OK);
    assert_memory_equal(got, want, sizeof got);
    assert_true(p.offset == 6); /* 5 normals: 3 pairs, no spare kept */
    assert_int_equal(rngsnap_reserve(min, 10, &q), RNGSNAP_OK);
    assert_true(q.seed == p.seed && q.subsequence == p.subsequence
                && q.offset == 6);
    assert_int_equal(rngsnap_stream_position(min, &r), RNGSNAP_OK);
    assert_true(r.offset == 16);
    /* A keyed stream of the example is a pure function of its seeding. */
    assert_int_equal(rngsnap_derive(min, 3, 4, &q), RNGSNAP_OK);
    assert_true(q.seed == p.seed && q.offset == 0);
    uint32_t k1[8], k2[8];
    assert_int_equal(rngsnap_generate_at(min, &q, RNGSNAP_U32, k1, 8),
                     RNGSNAP_OK);
    assert_int_equal(rngsnap_derive(min, 3, 4, &q), RNGSNAP_OK);
    assert_int_equal(rngsnap_philox_generate(&q, RNGSNAP_U32, k2, 8),
                     RNGSNAP_OK);
    assert_memory_equal(k1, k2, sizeof k1);
    rngsnap_close(ctx);
}

/* Bad arguments: a code, and the position unchanged. */
static void test_engine_refusals(void **state)
{
    (void)state;
    rngsnap_philox p = {1, 2, 3};
    uint32_t w[4];
    assert_int_equal(rngsnap_philox_generate(NULL, RNGSNAP_U32, w, 4),
                     RNGSNAP_E_INVALID);
    assert_int_equal(rngsnap_philox_generate(&p, RNGSNAP_DIST_COUNT, w, 4),
                     RNGSNAP_E_INVALID);
    assert_int_equal(rngsnap_philox_generate(&p, RNGSNAP_U32, NULL, 4),
                     RNGSNAP_E_INVALID);
    p.offset = UINT64_MAX - 2;
    assert_int_equal(rngsnap_philox_generate(&p, RNGSNAP_U32, w, 4),
                     RNGSNAP_E_INVALID);
    assert_true(p.seed == 1 && p.subsequence == 2
                && p.offset == UINT64_MAX - 2);
    assert_int_equal(rngsnap_philox_generate(&p, RNGSNAP_U32, w, 0),
                     RNGSNAP_OK);
    assert_true(rngsnap_dist_words(RNGSNAP_NORMAL_F64, 3) == 8);
    assert_true(rngsnap_dist_words(RNGSNAP_DIST_COUNT, 3) == 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_same_bits_as_cpu),
        cmocka_unit_test(test_positions),
        cmocka_unit_test(test_engine_refusals),
    };
    return cmocka_run_group_tests(tests, th_group_setup, th_group_teardown);
}
