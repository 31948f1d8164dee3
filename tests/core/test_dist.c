/*
 * test_dist.c - rngsnap_dist grows (issue 16, item 4): a plugin meets
 * values appended after it was written.  The guide's example plugin
 * (docs/examples/minimal_plugin.c) refuses one it does not draw the way
 * docs/plugin-guide.md says: RNGSNAP_E_UNAVAILABLE, its own words behind
 * the core's prefix, and the stream not moved.
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

/* A context of the example plugin (one device, stream "default"),
 * seeded; *so gets the plugin's resolved path. */
static rngsnap *open_minimal(char *so, size_t len)
{
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", getenv("RNGSNAP_EXAMPLE_PLUGIN_DIR"));
    const char *ini = th_write("rng.ini", "[rngsnap]\nplugin_dir = %s\n"
                               "[backend.minimal]\n", dir);
    rngsnap *ctx = th_open_ok(ini, 0);
    assert_int_equal(rngsnap_seed_all(ctx, 11), RNGSNAP_OK);
    rngsnap_backend_info bi;
    assert_int_equal(rngsnap_backend_get(ctx, 0, &bi), RNGSNAP_OK);
    snprintf(so, len, "%s", bi.plugin_path);
    return ctx;
}

static void test_unsupported_distribution(void **state)
{
    (void)state;
    char so[4096], want[8192];
    rngsnap *ctx = open_minimal(so, sizeof so);
    rngsnap_stream *s;
    assert_int_equal(rngsnap_stream_find(ctx, "minimal", 0, "default", &s),
                     RNGSNAP_OK);
    static const rngsnap_dist later[] = {
        RNGSNAP_CURAND_UNIFORM_F32, RNGSNAP_CURAND_UNIFORM_F64,
        RNGSNAP_CURAND_NORMAL_F32, RNGSNAP_CURAND_NORMAL_F64};
    double out[4];
    for (size_t i = 0; i < sizeof later / sizeof later[0]; i++) {
        assert_int_equal(rngsnap_generate(s, later[i], out, 4),
                         RNGSNAP_E_UNAVAILABLE);
        snprintf(want, sizeof want, "backend minimal (%s): distribution %d "
                 "is not supported by this backend (it draws u32, u64, "
                 "f32, f64, normal_f32 and normal_f64)", so, (int)later[i]);
        assert_string_equal(rngsnap_errmsg(ctx), want);
    }
    /* Nothing drawn: the next word is the first of a fresh seeding. */
    uint64_t after, fresh;
    assert_int_equal(rngsnap_generate(s, RNGSNAP_U64, &after, 1), RNGSNAP_OK);
    rngsnap_close(ctx);
    ctx = open_minimal(so, sizeof so);
    assert_int_equal(rngsnap_stream_find(ctx, "minimal", 0, "default", &s),
                     RNGSNAP_OK);
    assert_int_equal(rngsnap_generate(s, RNGSNAP_U64, &fresh, 1), RNGSNAP_OK);
    assert_true(after == fresh);
    rngsnap_close(ctx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_unsupported_distribution),
    };
    return cmocka_run_group_tests(tests, th_group_setup, th_group_teardown);
}
