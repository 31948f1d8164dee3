/*
 * test_seed.c - rngsnap_seed_all: the documented mixing function (an XXH64
 * of the canonical byte string, built here by hand), determinism across
 * contexts, ranks on distinct subsequences, collision detection.
 * Linked against the static core for rs_derive_seed / rs_find_duplicate.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <xxhash.h>

#include <rngsnap.h>

#include "helpers.h"
#include "internal.h"

/* The byte string of the comment in core/seed.c, written out by hand. */
static uint64_t reference_seed(uint64_t seed, const char *backend,
                               int device, const char *stream)
{
    unsigned char b[1024];
    size_t o = 0;
    memcpy(b, "rngsnap-seed-v1", 16); /* 15 characters + NUL */
    o = 16;
    for (int i = 0; i < 8; i++)
        b[o++] = (unsigned char)(seed >> (8 * i));
    memcpy(b + o, backend, strlen(backend) + 1);
    o += strlen(backend) + 1;
    uint32_t d = (uint32_t)device;
    b[o++] = (unsigned char)d;
    b[o++] = (unsigned char)(d >> 8);
    b[o++] = (unsigned char)(d >> 16);
    b[o++] = (unsigned char)(d >> 24);
    memcpy(b + o, stream, strlen(stream) + 1);
    o += strlen(stream) + 1;
    return XXH64(b, o, 0);
}

static void test_reference_bytes(void **state)
{
    (void)state;
    /* One entry spelled out completely, independent of the helper. */
    static const unsigned char bytes[] = {
        'r', 'n', 'g', 's', 'n', 'a', 'p', '-', 's', 'e', 'e', 'd', '-', 'v',
        '1', 0,
        0x2a, 0, 0, 0, 0, 0, 0, 0, /* seed 42 */
        'c', 'p', 'u', 0,
        1, 0, 0, 0, /* device 1 */
        'd', 'r', 'o', 'p', 'o', 'u', 't', 0};
    assert_int_equal(rs_derive_seed(42, "cpu", 1, "dropout"),
                     XXH64(bytes, sizeof bytes, 0));
    assert_int_equal(reference_seed(42, "cpu", 1, "dropout"),
                     XXH64(bytes, sizeof bytes, 0));
    uint64_t big = 0x0123456789abcdefull;
    assert_int_equal(rs_derive_seed(big, "good", 7, "x"),
                     reference_seed(big, "good", 7, "x"));
}

static void test_library_uses_it(void **state)
{
    (void)state;
    rngsnap *ctx = th_open_ok(
        th_ini("[backend.good]\ndevices = 2\nstreams = default, b\n"), 0);
    assert_int_equal(rngsnap_set_rank(ctx, 3, 5), RNGSNAP_OK);
    const uint64_t seed = 20240601;
    assert_int_equal(rngsnap_seed_all(ctx, seed), RNGSNAP_OK);
    for (size_t i = 0; i < rngsnap_stream_count(ctx); i++) {
        rngsnap_stream *s = rngsnap_stream_at(ctx, i);
        rngsnap_philox at;
        assert_int_equal(rngsnap_stream_position(s, &at), RNGSNAP_OK);
        assert_int_equal(at.seed,
                         reference_seed(seed, rngsnap_stream_backend(s),
                                        rngsnap_stream_device(s),
                                        rngsnap_stream_name(s)));
        assert_int_equal(at.subsequence, 3);
        assert_int_equal(at.offset, 0);
    }
    rngsnap_close(ctx);
}

static void positions(const char *ini, int rank, int world, uint64_t seed,
                      rngsnap_philox *out, size_t n)
{
    rngsnap *ctx = th_open_ok(ini, 0);
    assert_int_equal(rngsnap_stream_count(ctx), n);
    assert_int_equal(rngsnap_set_rank(ctx, rank, world), RNGSNAP_OK);
    assert_int_equal(rngsnap_seed_all(ctx, seed), RNGSNAP_OK);
    for (size_t i = 0; i < n; i++)
        assert_int_equal(rngsnap_stream_position(rngsnap_stream_at(ctx, i),
                                                 &out[i]), RNGSNAP_OK);
    rngsnap_close(ctx);
}

static void test_determinism_and_ranks(void **state)
{
    (void)state;
    char ini[4096];
    snprintf(ini, sizeof ini, "%s",
             th_ini("[backend.good]\ndevices = 3\nstreams = a, b\n"));
    enum { N = 6 };
    rngsnap_philox p1[N], p2[N], p3[N], r1[N];
    positions(ini, 0, 2, 7, p1, N);
    positions(ini, 0, 2, 7, p2, N);
    positions(ini, 0, 2, 8, p3, N);
    positions(ini, 1, 2, 7, r1, N);
    for (size_t i = 0; i < N; i++) {
        assert_memory_equal(&p1[i], &p2[i], sizeof p1[i]); /* same inputs */
        assert_int_not_equal(p1[i].seed, p3[i].seed);       /* other seed */
        assert_int_equal(p1[i].subsequence, 0);
        assert_int_equal(r1[i].subsequence, 1);             /* other rank */
        assert_int_equal(r1[i].seed, p1[i].seed);
        for (size_t j = 0; j < i; j++)                      /* all differ */
            assert_int_not_equal(p1[i].seed, p1[j].seed);
    }
}

static void test_reseed_restarts(void **state)
{
    (void)state;
    rngsnap *ctx = th_open_ok(th_ini("[backend.good]\n"), 0);
    rngsnap_stream *s = rngsnap_stream_at(ctx, 0);
    uint32_t a[8], b[8];
    assert_int_equal(rngsnap_seed_all(ctx, 11), RNGSNAP_OK);
    assert_int_equal(rngsnap_generate(s, RNGSNAP_U32, a, 8), RNGSNAP_OK);
    assert_int_equal(rngsnap_seed_all(ctx, 11), RNGSNAP_OK);
    assert_int_equal(rngsnap_generate(s, RNGSNAP_U32, b, 8), RNGSNAP_OK);
    assert_memory_equal(a, b, sizeof a);
    assert_int_equal(rngsnap_seed_all(NULL, 1), RNGSNAP_E_INVALID);
    rngsnap_close(ctx);
}

static void test_find_duplicate(void **state)
{
    (void)state;
    size_t i = 99, j = 99;
    const uint64_t none[] = {5, 3, 9, 1};
    assert_int_equal(rs_find_duplicate(none, 4, &i, &j), 0);
    assert_int_equal(rs_find_duplicate(none, 0, &i, &j), 0);
    const uint64_t dup[] = {5, 3, 9, 1, 3, 7};
    assert_int_equal(rs_find_duplicate(dup, 6, &i, &j), 1);
    assert_int_equal(i, 1);
    assert_int_equal(j, 4);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reference_bytes),
        cmocka_unit_test(test_library_uses_it),
        cmocka_unit_test(test_determinism_and_ranks),
        cmocka_unit_test(test_reseed_restarts),
        cmocka_unit_test(test_find_duplicate),
    };
    return cmocka_run_group_tests(tests, th_group_setup, th_group_teardown);
}
