/*
 * test_derive.c - keyed streams: rngsnap_derive and rngsnap_generate_at.
 *
 * On the real cpu plugin: a key's position is a pure function of the
 * stream's seeding and the key (same before and after drawing on s, in
 * another context), distinct keys differ, the subsequence is never s's
 * own, the words drawn equal Philox4x32-10 computed here at that position,
 * s is unchanged, the resume gate applies, and a backend whose state is
 * not a Philox position is refused.
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

static char cpu_ini[4096];

/* Philox4x32-10, word j of (seed, subsequence): the reference. */
static uint32_t philox_word(const rngsnap_philox *p, uint64_t j)
{
    uint64_t b = j / 4;
    uint32_t c[4] = {(uint32_t)b, (uint32_t)(b >> 32),
                     (uint32_t)p->subsequence,
                     (uint32_t)(p->subsequence >> 32)};
    uint32_t k0 = (uint32_t)p->seed, k1 = (uint32_t)(p->seed >> 32);
    for (int r = 0; r < 10; r++) {
        uint64_t m0 = (uint64_t)0xD2511F53u * c[0];
        uint64_t m1 = (uint64_t)0xCD9E8D57u * c[2];
        uint32_t n[4] = {(uint32_t)(m1 >> 32) ^ c[1] ^ k0, (uint32_t)m1,
                         (uint32_t)(m0 >> 32) ^ c[3] ^ k1, (uint32_t)m0};
        memcpy(c, n, sizeof c);
        k0 += 0x9E3779B9u;
        k1 += 0xBB67AE85u;
    }
    return c[j % 4];
}

static int setup(void **state)
{
    th_group_setup(state);
    const char *dir = getenv("RNGSNAP_PLUGIN_BUILD_DIR");
    if (!dir)
        return -1;
    snprintf(cpu_ini, sizeof cpu_ini, "%s", th_write("cpu.ini",
             "[rngsnap]\nplugin_dir = %s\n[backend.cpu]\nplugin = "
             "rngsnap_cpu\nstreams = default, dropout\n", dir));
    return 0;
}

static rngsnap_stream *stream(rngsnap *ctx, const char *name)
{
    rngsnap_stream *s;
    assert_int_equal(rngsnap_stream_find(ctx, "cpu", 0, name, &s), RNGSNAP_OK);
    return s;
}

static int same(const rngsnap_philox *a, const rngsnap_philox *b)
{
    return a->seed == b->seed && a->subsequence == b->subsequence
           && a->offset == b->offset;
}

static void test_pure_function(void **state)
{
    (void)state;
    rngsnap *a = th_open_ok(cpu_ini, 0), *b = th_open_ok(cpu_ini, 0);
    assert_int_equal(rngsnap_seed_all(a, 42), RNGSNAP_OK);
    assert_int_equal(rngsnap_seed_all(b, 42), RNGSNAP_OK);
    rngsnap_stream *s = stream(a, "dropout");
    rngsnap_philox k1, k2, k3, pos;
    assert_int_equal(rngsnap_derive(s, 7, 3, &k1), RNGSNAP_OK);
    uint32_t w[100];
    assert_int_equal(rngsnap_generate(s, RNGSNAP_U32, w, 100), RNGSNAP_OK);
    assert_int_equal(rngsnap_derive(s, 7, 3, &k2), RNGSNAP_OK);
    assert_true(same(&k1, &k2)); /* independent of s's offset */
    assert_int_equal(rngsnap_derive(stream(b, "dropout"), 7, 3, &k3),
                     RNGSNAP_OK);
    assert_true(same(&k1, &k3)); /* and of the context */
    assert_int_equal(rngsnap_stream_position(s, &pos), RNGSNAP_OK);
    assert_int_equal(k1.seed, pos.seed);
    assert_int_equal(k1.offset, 0);
    assert_true(k1.subsequence != pos.subsequence);
    /* the top bit is the flip of s's: never s's own subsequence */
    assert_int_equal(k1.subsequence >> 63, (~pos.subsequence) >> 63);
    rngsnap_close(a);
    rngsnap_close(b);
}

static void test_keys_differ(void **state)
{
    (void)state;
    rngsnap *ctx = th_open_ok(cpu_ini, 0);
    assert_int_equal(rngsnap_seed_all(ctx, 42), RNGSNAP_OK);
    rngsnap_stream *s = stream(ctx, "default");
    rngsnap_philox seen[64], pos;
    assert_int_equal(rngsnap_stream_position(s, &pos), RNGSNAP_OK);
    for (int i = 0; i < 64; i++) {
        /* (k0, k1) and (k1, k0) must differ too */
        uint64_t k0 = (uint64_t)(i / 8), k1 = (uint64_t)(i % 8);
        assert_int_equal(rngsnap_derive(s, k0, k1, &seen[i]), RNGSNAP_OK);
        assert_true(seen[i].subsequence != pos.subsequence);
        for (int j = 0; j < i; j++)
            assert_true(seen[i].subsequence != seen[j].subsequence);
    }
    /* another stream (another seed) gives other positions for a key */
    rngsnap_philox other;
    assert_int_equal(rngsnap_derive(stream(ctx, "dropout"), 0, 0, &other),
                     RNGSNAP_OK);
    assert_true(other.seed != seen[0].seed);
    rngsnap_close(ctx);
}

static void test_generate_at_words(void **state)
{
    (void)state;
    rngsnap *ctx = th_open_ok(cpu_ini, 0);
    assert_int_equal(rngsnap_seed_all(ctx, 9), RNGSNAP_OK);
    rngsnap_stream *s = stream(ctx, "dropout");
    /* the reference is right: s's own first words */
    uint32_t own[9];
    rngsnap_philox start, before, after, at;
    assert_int_equal(rngsnap_stream_position(s, &start), RNGSNAP_OK);
    assert_int_equal(rngsnap_generate(s, RNGSNAP_U32, own, 9), RNGSNAP_OK);
    for (uint64_t j = 0; j < 9; j++)
        assert_int_equal(own[j], philox_word(&start, j));
    assert_int_equal(rngsnap_stream_position(s, &before), RNGSNAP_OK);

    assert_int_equal(rngsnap_derive(s, 1, 2, &at), RNGSNAP_OK);
    rngsnap_philox key = at;
    uint32_t w[11];
    /* two calls (5 + 6 words) continue each other */
    assert_int_equal(rngsnap_generate_at(s, &at, RNGSNAP_U32, w, 5),
                     RNGSNAP_OK);
    assert_int_equal(at.offset, 5);
    assert_int_equal(rngsnap_generate_at(s, &at, RNGSNAP_U32, w + 5, 6),
                     RNGSNAP_OK);
    assert_int_equal(at.offset, 11);
    for (uint64_t j = 0; j < 11; j++)
        assert_int_equal(w[j], philox_word(&key, j));
    /* u64 uses two words each */
    uint64_t d[3];
    assert_int_equal(rngsnap_generate_at(s, &at, RNGSNAP_U64, d, 3),
                     RNGSNAP_OK);
    assert_int_equal(at.offset, 17);
    assert_int_equal(d[0], (uint64_t)philox_word(&key, 11)
                               | (uint64_t)philox_word(&key, 12) << 32);
    /* s itself unchanged, and continues where it was */
    assert_int_equal(rngsnap_stream_position(s, &after), RNGSNAP_OK);
    assert_true(same(&before, &after));
    assert_int_equal(rngsnap_generate(s, RNGSNAP_U32, own, 1), RNGSNAP_OK);
    assert_int_equal(own[0], philox_word(&start, 9));
    rngsnap_close(ctx);
}

static void test_failure_leaves_everything(void **state)
{
    (void)state;
    rngsnap *ctx = th_open_ok(cpu_ini, 0);
    assert_int_equal(rngsnap_seed_all(ctx, 9), RNGSNAP_OK);
    rngsnap_stream *s = stream(ctx, "dropout");
    rngsnap_philox at, was, pos0, pos1;
    assert_int_equal(rngsnap_derive(s, 1, 2, &at), RNGSNAP_OK);
    was = at;
    assert_int_equal(rngsnap_stream_position(s, &pos0), RNGSNAP_OK);
    uint32_t w[4];
    assert_int_equal(rngsnap_generate_at(s, &at, (rngsnap_dist)99, w, 4),
                     RNGSNAP_E_INVALID);
    th_contains(rngsnap_errmsg(ctx), "rngsnap_generate_at", "cpu:0/dropout",
                "unknown distribution");
    assert_int_equal(rngsnap_generate_at(s, NULL, RNGSNAP_U32, w, 4),
                     RNGSNAP_E_INVALID);
    assert_int_equal(rngsnap_derive(s, 1, 2, NULL), RNGSNAP_E_INVALID);
    assert_true(same(&at, &was));
    assert_int_equal(rngsnap_stream_position(s, &pos1), RNGSNAP_OK);
    assert_true(same(&pos0, &pos1));
    rngsnap_close(ctx);
}

static void test_resume_gate(void **state)
{
    (void)state;
    char path[4200];
    snprintf(path, sizeof path, "%s/derive.ck", th_tmpdir());
    rngsnap *a = th_open_ok(cpu_ini, 0);
    assert_int_equal(rngsnap_seed_all(a, 5), RNGSNAP_OK);
    rngsnap_philox ka, kr;
    assert_int_equal(rngsnap_derive(stream(a, "default"), 3, 4, &ka),
                     RNGSNAP_OK);
    assert_int_equal(rngsnap_save(a, path, RNGSNAP_SAVE_REPLACE),
                     RNGSNAP_OK);
    rngsnap *r = th_open_ok(cpu_ini, RNGSNAP_RESUME);
    rngsnap_stream *s = stream(r, "default");
    uint32_t w[2];
    rngsnap_philox at = ka;
    assert_int_equal(rngsnap_derive(s, 3, 4, &kr), RNGSNAP_E_ORDER);
    th_contains(rngsnap_errmsg(r), "rngsnap_derive", "cpu:0/default",
                "RNGSNAP_RESUME");
    assert_int_equal(rngsnap_generate_at(s, &at, RNGSNAP_U32, w, 2),
                     RNGSNAP_E_ORDER);
    assert_int_equal(rngsnap_load(r, path, 0), RNGSNAP_OK);
    assert_int_equal(rngsnap_derive(s, 3, 4, &kr), RNGSNAP_OK);
    assert_true(same(&ka, &kr)); /* the restored seeding gives the same key */
    /* A keyed draw moves no position a load restores: loading again is
     * not refused, as it is after a draw of the stream itself. */
    assert_int_equal(rngsnap_generate_at(s, &kr, RNGSNAP_U32, w, 2),
                     RNGSNAP_OK);
    assert_int_equal(rngsnap_load(r, path, 0), RNGSNAP_OK);
    assert_int_equal(rngsnap_generate(s, RNGSNAP_U32, w, 2), RNGSNAP_OK);
    assert_int_equal(rngsnap_load(r, path, 0), RNGSNAP_E_ORDER);
    th_contains(rngsnap_errmsg(r), "cpu:0/default since its load");
    rngsnap_close(a);
    rngsnap_close(r);
}

static void test_not_philox_refused(void **state)
{
    (void)state;
    /* the test plugin "good" keeps a "TEST" state, not a Philox position */
    rngsnap *ctx = th_open_ok(th_ini("[backend.good]\n"), 0);
    rngsnap_stream *s;
    assert_int_equal(rngsnap_stream_find(ctx, "good", 0, "default", &s),
                     RNGSNAP_OK);
    rngsnap_philox at = {1, 2, 3};
    uint32_t w[2];
    assert_int_equal(rngsnap_derive(s, 1, 2, &at), RNGSNAP_E_UNAVAILABLE);
    th_contains(rngsnap_errmsg(ctx), "rngsnap_derive", "good",
                "Philox");
    assert_int_equal(rngsnap_generate_at(s, &at, RNGSNAP_U32, w, 2),
                     RNGSNAP_E_UNAVAILABLE);
    assert_int_equal(at.offset, 3);
    rngsnap_close(ctx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pure_function),
        cmocka_unit_test(test_keys_differ),
        cmocka_unit_test(test_generate_at_words),
        cmocka_unit_test(test_failure_leaves_everything),
        cmocka_unit_test(test_resume_gate),
        cmocka_unit_test(test_not_philox_refused),
    };
    return cmocka_run_group_tests(tests, setup, th_group_teardown);
}
