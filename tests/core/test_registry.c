/*
 * test_registry.c - the registry's fixed order, stream lookup, required
 * and optional backends without devices, RNGSNAP_PROBE_ONLY, argument
 * checks of generate/reserve/position, backend listing, error strings.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <pthread.h>
#include <unistd.h>

#include <cmocka.h>

#include <rngsnap.h>

#include "helpers.h"

static void test_order(void **state)
{
    (void)state;
    rngsnap *ctx = th_open_ok(
        th_ini("[backend.good2]\nstreams = x\ndevices = 1\n"
               "[backend.good]\nstreams = b, a\ndevices = 3\n"),
        0);
    static const char *const want[] = {
        "good2:0/x", "good:0/b", "good:0/a", "good:1/b",
        "good:1/a",  "good:2/b", "good:2/a"};
    size_t n = sizeof want / sizeof want[0];
    assert_int_equal(rngsnap_stream_count(ctx), n);
    for (size_t i = 0; i < n; i++) {
        rngsnap_stream *s = rngsnap_stream_at(ctx, i);
        assert_non_null(s);
        char label[128];
        snprintf(label, sizeof label, "%s:%d/%s", rngsnap_stream_backend(s),
                 rngsnap_stream_device(s), rngsnap_stream_name(s));
        assert_string_equal(label, want[i]);
        assert_int_equal(rngsnap_stream_memory(s), RNGSNAP_MEMORY_HOST);
    }
    assert_null(rngsnap_stream_at(ctx, n));
    assert_null(rngsnap_stream_at(NULL, 0));
    assert_int_equal(rngsnap_stream_count(NULL), 0);
    rngsnap_close(ctx);
}

static void test_find(void **state)
{
    (void)state;
    rngsnap *ctx = th_open_ok(
        th_ini("[backend.good]\nstreams = default, dropout\ndevices = 2\n"
               "[backend.good2]\nrequired = false\ndevices = 0\n"
               "reason = no widget found\n"),
        0);
    rngsnap_stream *s = NULL;
    assert_int_equal(rngsnap_stream_find(ctx, "good", 1, "dropout", &s),
                     RNGSNAP_OK);
    assert_ptr_equal(s, rngsnap_stream_at(ctx, 3));

    assert_int_equal(rngsnap_stream_find(ctx, "good", 3, "dropout", &s),
                     RNGSNAP_E_INVALID);
    assert_null(s);
    th_contains(rngsnap_errmsg(ctx), "no stream good:3/dropout",
                "devices good:0..1");
    assert_int_equal(rngsnap_stream_find(ctx, "good", 0, "augment", &s),
                     RNGSNAP_E_INVALID);
    th_contains(rngsnap_errmsg(ctx), "no stream good:0/augment",
                "default, dropout");
    assert_int_equal(rngsnap_stream_find(ctx, "cuda", 0, "default", &s),
                     RNGSNAP_E_INVALID);
    th_contains(rngsnap_errmsg(ctx), "no stream cuda:0/default",
                "configured: good, good2");
    assert_int_equal(rngsnap_stream_find(ctx, "good2", 0, "default", &s),
                     RNGSNAP_E_INVALID);
    th_contains(rngsnap_errmsg(ctx), "good2:0/default", "skipped",
                "no widget found");

    assert_int_equal(rngsnap_stream_find(ctx, "good", -1, "default", &s),
                     RNGSNAP_E_INVALID);
    assert_int_equal(rngsnap_stream_find(ctx, NULL, 0, "default", &s),
                     RNGSNAP_E_INVALID);
    assert_int_equal(rngsnap_stream_find(ctx, "good", 0, NULL, &s),
                     RNGSNAP_E_INVALID);
    assert_int_equal(rngsnap_stream_find(ctx, "good", 0, "default", NULL),
                     RNGSNAP_E_INVALID);
    assert_int_equal(rngsnap_stream_find(NULL, "good", 0, "default", &s),
                     RNGSNAP_E_INVALID);
    rngsnap_close(ctx);
}

static void test_required_without_device(void **state)
{
    (void)state;
    char ini[4096], so[4096];
    snprintf(ini, sizeof ini, "%s",
             th_ini("[backend.good2]\n[backend.good]\ndevices = 0\n"
                    "reason = libwidget.so.1 not found\n"));
    snprintf(so, sizeof so, "%s/rngsnap_good.so", th_plugin_dir());
    const char *msg = th_open_fails(ini, 0, RNGSNAP_E_UNAVAILABLE);
    th_contains(msg, "backend good is required", "libwidget.so.1 not found",
                so, ini, ":4");

    /* The same, probe only: opens, lists, refuses to seed or draw. */
    rngsnap *ctx = th_open_ok(ini, RNGSNAP_PROBE_ONLY);
    rngsnap_backend_info bi;
    assert_int_equal(rngsnap_backend_get(ctx, 1, &bi), RNGSNAP_OK);
    assert_string_equal(bi.name, "good");
    assert_int_equal(bi.required, 1);
    assert_int_equal(bi.available, 0);
    assert_int_equal(bi.skipped, 0);
    assert_int_equal(bi.device_count, 0);
    assert_string_equal(bi.reason, "libwidget.so.1 not found");
    assert_int_equal(rngsnap_stream_count(ctx), 1); /* good2:0/default */
    assert_int_equal(rngsnap_seed_all(ctx, 1), RNGSNAP_E_UNAVAILABLE);
    assert_string_equal(rngsnap_errmsg(ctx),
                        "required backend good is unavailable: "
                        "libwidget.so.1 not found; this context was opened "
                        "with RNGSNAP_PROBE_ONLY and can only list");
    uint32_t w;
    assert_int_equal(rngsnap_generate(rngsnap_stream_at(ctx, 0), RNGSNAP_U32,
                                      &w, 1),
                     RNGSNAP_E_UNAVAILABLE);
    th_contains(rngsnap_errmsg(ctx), "required backend good is unavailable");
    rngsnap_close(ctx);
}

static void test_optional_skipped(void **state)
{
    (void)state;
    rngsnap *ctx = th_open_ok(
        th_ini("[backend.good]\ndevices = 0\nrequired = false\n"
               "reason = no device here\n[backend.good2]\ndevices = 2\n"),
        0);
    assert_int_equal(rngsnap_backend_count(ctx), 2);
    rngsnap_backend_info bi;
    assert_int_equal(rngsnap_backend_get(ctx, 0, &bi), RNGSNAP_OK);
    assert_string_equal(bi.name, "good");
    assert_int_equal(bi.required, 0);
    assert_int_equal(bi.available, 0);
    assert_int_equal(bi.skipped, 1);
    assert_string_equal(bi.reason, "no device here");
    assert_string_equal(bi.version, "test-1");
    assert_int_equal(rngsnap_stream_count(ctx), 2);
    for (size_t i = 0; i < 2; i++)
        assert_string_equal(rngsnap_stream_backend(rngsnap_stream_at(ctx, i)),
                            "good2");
    assert_int_equal(rngsnap_seed_all(ctx, 5), RNGSNAP_OK);
    rngsnap_close(ctx);

    /* Default reason when the plugin gives none is never NULL. */
    ctx = th_open_ok(th_ini("[backend.good]\ndevices = 0\nrequired = no\n"
                            "reason =\n"), 0);
    assert_int_equal(rngsnap_backend_get(ctx, 0, &bi), RNGSNAP_OK);
    assert_non_null(bi.reason);
    assert_int_equal(rngsnap_stream_count(ctx), 0);
    rngsnap_close(ctx);
}

static void test_backend_info(void **state)
{
    (void)state;
    rngsnap *ctx = th_open_ok(
        th_ini("[backend.good]\ndevices = 2\nstreams = p, q\n"), 0);
    rngsnap_backend_info bi;
    assert_int_equal(rngsnap_backend_get(ctx, 0, &bi), RNGSNAP_OK);
    char so[4096];
    snprintf(so, sizeof so, "%s/rngsnap_good.so", th_plugin_dir());
    char *real = realpath(so, NULL);
    assert_non_null(real);
    assert_string_equal(bi.plugin_path, real);
    free(real);
    assert_string_equal(bi.version, "test-1");
    assert_string_equal(bi.status, "test plugin");
    assert_null(bi.reason);
    assert_int_equal(bi.available, 1);
    assert_int_equal(bi.emulated, 0);
    assert_int_equal(bi.device_count, 2);
    assert_int_equal(bi.stream_names, 2);
    assert_string_equal(rngsnap_backend_device_name(ctx, 0, 1),
                        "test device 1");
    assert_null(rngsnap_backend_device_name(ctx, 0, 2));
    assert_null(rngsnap_backend_device_name(ctx, 0, -1));
    assert_null(rngsnap_backend_device_name(ctx, 1, 0));
    assert_string_equal(rngsnap_backend_stream_name(ctx, 0, 1), "q");
    assert_null(rngsnap_backend_stream_name(ctx, 0, 2));
    assert_int_equal(rngsnap_backend_get(ctx, 1, &bi), RNGSNAP_E_INVALID);
    assert_int_equal(rngsnap_backend_get(ctx, 0, NULL), RNGSNAP_E_INVALID);
    assert_int_equal(rngsnap_backend_get(NULL, 0, &bi), RNGSNAP_E_INVALID);
    assert_int_equal(rngsnap_backend_count(NULL), 0);
    rngsnap_close(ctx);
}

static void test_generate_args(void **state)
{
    (void)state;
    rngsnap *ctx = th_open_ok(th_ini("[backend.good]\n[backend.good2]\n"), 0);
    rngsnap_stream *s = rngsnap_stream_at(ctx, 0);
    rngsnap_stream *s2 = rngsnap_stream_at(ctx, 1);
    assert_int_equal(rngsnap_seed_all(ctx, 1), RNGSNAP_OK);
    uint64_t buf[8];
    assert_int_equal(rngsnap_generate(s, (rngsnap_dist)RNGSNAP_DIST_COUNT,
                                      buf, 1), RNGSNAP_E_INVALID);
    th_contains(rngsnap_errmsg(ctx), "good:0/default", "distribution");
    assert_int_equal(rngsnap_generate(s, (rngsnap_dist)-1, buf, 1),
                     RNGSNAP_E_INVALID);
    assert_int_equal(rngsnap_generate(s, RNGSNAP_U32, NULL, 1),
                     RNGSNAP_E_INVALID);
    th_contains(rngsnap_errmsg(ctx), "good:0/default", "out is NULL");
    assert_int_equal(rngsnap_generate(s, RNGSNAP_U32, NULL, 0), RNGSNAP_OK);
    assert_int_equal(rngsnap_generate(NULL, RNGSNAP_U32, buf, 1),
                     RNGSNAP_E_INVALID);
    assert_int_equal(rngsnap_generate(s, RNGSNAP_U64, buf, SIZE_MAX / 4),
                     RNGSNAP_E_INVALID);

    /* Positions move by the words each dist uses. */
    rngsnap_philox at;
    assert_int_equal(rngsnap_stream_position(s, &at), RNGSNAP_OK);
    assert_int_equal(at.offset, 0);
    assert_int_equal(rngsnap_generate(s, RNGSNAP_U32, buf, 3), RNGSNAP_OK);
    assert_int_equal(rngsnap_generate(s, RNGSNAP_F64, buf, 2), RNGSNAP_OK);
    assert_int_equal(rngsnap_stream_position(s, &at), RNGSNAP_OK);
    assert_int_equal(at.offset, 7);
    assert_int_equal(rngsnap_reserve(s, 10, &at), RNGSNAP_OK);
    assert_int_equal(at.offset, 7);
    assert_int_equal(rngsnap_stream_position(s, &at), RNGSNAP_OK);
    assert_int_equal(at.offset, 17);
    assert_int_equal(rngsnap_reserve(s, 1, NULL), RNGSNAP_E_INVALID);
    assert_int_equal(rngsnap_stream_position(s, NULL), RNGSNAP_E_INVALID);
    assert_int_equal(rngsnap_reserve(NULL, 1, &at), RNGSNAP_E_INVALID);

    /* good2 has no reserve member. */
    assert_int_equal(rngsnap_reserve(s2, 1, &at), RNGSNAP_E_UNAVAILABLE);
    th_contains(rngsnap_errmsg(ctx), "good2:0/default", "no reserve");
    assert_int_equal(rngsnap_stream_position(s2, &at), RNGSNAP_E_UNAVAILABLE);
    th_contains(rngsnap_errmsg(ctx), "good2:0/default");
    rngsnap_close(ctx);
}

static void test_dist_table(void **state)
{
    (void)state;
    static const struct {
        rngsnap_dist d;
        size_t size;
        const char *name;
    } want[] = {
        {RNGSNAP_U32, 4, "u32"},        {RNGSNAP_U64, 8, "u64"},
        {RNGSNAP_F32, 4, "f32"},        {RNGSNAP_F64, 8, "f64"},
        {RNGSNAP_NORMAL_F32, 4, "normal_f32"},
        {RNGSNAP_NORMAL_F64, 8, "normal_f64"},
        /* the names issue 11 fixed (tests outside the project use them) */
        {RNGSNAP_CURAND_UNIFORM_F32, 4, "curand_uniform_f32"},
        {RNGSNAP_CURAND_UNIFORM_F64, 8, "curand_uniform_f64"},
        {RNGSNAP_CURAND_NORMAL_F32, 4, "curand_normal_f32"},
        {RNGSNAP_CURAND_NORMAL_F64, 8, "curand_normal_f64"},
    };
    /* the existing values never move */
    assert_int_equal(RNGSNAP_NORMAL_F64, 5);
    assert_int_equal(RNGSNAP_CURAND_UNIFORM_F32, 6);
    assert_int_equal(RNGSNAP_CURAND_NORMAL_F64, 9);
    assert_int_equal(RNGSNAP_DIST_COUNT, 10);
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        assert_int_equal(rngsnap_dist_size(want[i].d), want[i].size);
        assert_string_equal(rngsnap_dist_name(want[i].d), want[i].name);
    }
    assert_int_equal(rngsnap_dist_size((rngsnap_dist)RNGSNAP_DIST_COUNT), 0);
    assert_non_null(rngsnap_dist_name((rngsnap_dist)99));
}

static void test_open_args_and_errors(void **state)
{
    (void)state;
    char ini[4096];
    snprintf(ini, sizeof ini, "%s", th_ini("[backend.good]\n"));
    assert_int_equal(rngsnap_open(NULL, ini, 0), RNGSNAP_E_INVALID);
    th_open_fails(ini, 0x80, RNGSNAP_E_INVALID);
    th_contains(rngsnap_errmsg(NULL), "0x80");
    rngsnap_close(NULL);

    /* NULL path: RNGSNAP_CONFIG names the file. */
    setenv("RNGSNAP_CONFIG", ini, 1);
    rngsnap *ctx = th_open_ok(NULL, 0);
    assert_int_equal(rngsnap_stream_count(ctx), 1);
    rngsnap_close(ctx);
    unsetenv("RNGSNAP_CONFIG");

    /* Codes: every one has a name and a text. */
    static const char *const names[] = {
        "RNGSNAP_OK", "RNGSNAP_E_CONFIG", "RNGSNAP_E_PLUGIN",
        "RNGSNAP_E_UNAVAILABLE", "RNGSNAP_E_IO", "RNGSNAP_E_EXISTS",
        "RNGSNAP_E_CORRUPT", "RNGSNAP_E_MISMATCH", "RNGSNAP_E_ORDER",
        "RNGSNAP_E_INVALID", "RNGSNAP_E_NOMEM", "RNGSNAP_E_BACKEND"};
    for (int c = 0; c <= RNGSNAP_E_BACKEND; c++) {
        assert_string_equal(rngsnap_error_name(c), names[c]);
        assert_non_null(rngsnap_strerror(c));
        assert_true(strlen(rngsnap_strerror(c)) > 0);
    }
    assert_non_null(rngsnap_strerror(-1));
    assert_non_null(rngsnap_strerror(1000));
    assert_non_null(rngsnap_error_name(1000));
    assert_string_equal(rngsnap_version(), RNGSNAP_VERSION_STRING);
}

/* The open error is kept per thread. */
static void *fail_in_thread(void *arg)
{
    rngsnap *ctx;
    rngsnap_open(&ctx, (const char *)arg, 0);
    return NULL;
}

static void test_open_error_per_thread(void **state)
{
    (void)state;
    char missing[4096];
    snprintf(missing, sizeof missing, "%s/missing-here.ini", th_tmpdir());
    th_open_fails(missing, 0, RNGSNAP_E_CONFIG);
    char mine[4096];
    snprintf(mine, sizeof mine, "%s", rngsnap_errmsg(NULL));
    static char other[4096];
    snprintf(other, sizeof other, "%s/missing-there.ini", th_tmpdir());
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, fail_in_thread, other), 0);
    pthread_join(t, NULL);
    assert_string_equal(rngsnap_errmsg(NULL), mine);
    th_contains(mine, "missing-here.ini");
}

/* A plugin failing in seed: the error names the backend and the plugin's
 * reason, and streams seeded before it are put back. */
static void test_seed_failure_rolls_back(void **state)
{
    (void)state;
    rngsnap *ctx = th_open_ok(
        th_ini("[backend.good]\nstreams = a, b, c\nfail_seed = c\n"), 0);
    rngsnap_philox before[3], after[3];
    /* No seed_all succeeds here: a load of its own save lets it draw,
     * and rngsnap_branch lets it seed again (a loaded context refuses
     * seed_all otherwise: test_gate.c). */
    char path[4200];
    snprintf(path, sizeof path, "%s/rollback.rngsnap", th_tmpdir());
    assert_int_equal(rngsnap_save(ctx, path, RNGSNAP_SAVE_REPLACE), RNGSNAP_OK);
    assert_int_equal(rngsnap_load(ctx, path, 0), RNGSNAP_OK);
    assert_int_equal(rngsnap_branch(ctx), RNGSNAP_OK);
    for (size_t i = 0; i < 3; i++) {
        rngsnap_stream *s = rngsnap_stream_at(ctx, i);
        uint32_t w[5];
        assert_int_equal(rngsnap_generate(s, RNGSNAP_U32, w, 5), RNGSNAP_OK);
        assert_int_equal(rngsnap_stream_position(s, &before[i]), RNGSNAP_OK);
    }
    assert_int_equal(rngsnap_seed_all(ctx, 99), RNGSNAP_E_BACKEND);
    th_contains(rngsnap_errmsg(ctx), "backend good", "rngsnap_good.so",
                "seed refused on stream c");
    for (size_t i = 0; i < 3; i++) {
        assert_int_equal(rngsnap_stream_position(rngsnap_stream_at(ctx, i),
                                                 &after[i]), RNGSNAP_OK);
        assert_memory_equal(&before[i], &after[i], sizeof before[i]);
    }
    rngsnap_close(ctx);
}

/* Run open+close with stderr captured into a file; returns what was
 * written (static buffer). */
static const char *captured_open(const char *ini)
{
    static char out[8192];
    char path[4096];
    snprintf(path, sizeof path, "%s/stderr.txt", th_tmpdir());
    fflush(stderr);
    int saved = dup(2);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    assert_true(saved >= 0 && fd >= 0);
    dup2(fd, 2);
    close(fd);
    rngsnap *ctx = th_open_ok(ini, 0);
    rngsnap_close(ctx);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    FILE *f = fopen(path, "r");
    size_t n = fread(out, 1, sizeof out - 1, f);
    fclose(f);
    out[n] = '\0';
    return out;
}

static void test_log_levels(void **state)
{
    (void)state;
    char ini[4096];
    snprintf(ini, sizeof ini, "%s",
             th_ini("[backend.good]\ndevices = 0\nrequired = false\n"
                    "reason = nothing here\n"));
    /* Default: silent. */
    assert_string_equal(captured_open(ini), "");
    /* info: the core's skip line, not the plugin's debug line. */
    setenv("RNGSNAP_LOG", "info", 1);
    const char *out = captured_open(ini);
    th_contains(out, "skipping optional backend good: nothing here");
    assert_null(strstr(out, "opened with"));
    /* debug (as a number): the plugin's line through host->log too. */
    setenv("RNGSNAP_LOG", "3", 1);
    th_contains(captured_open(ini), "good: opened with 0 devices");
    /* The ini's log key, when the variable is unset. */
    unsetenv("RNGSNAP_LOG");
    snprintf(ini, sizeof ini, "%s",
             th_write("rng.ini", "[rngsnap]\nplugin_dir = %s\nlog = debug\n"
                      "[backend.good]\n", th_plugin_dir()));
    th_contains(captured_open(ini), "good: opened with 1 devices");
    /* The variable wins over the ini. */
    setenv("RNGSNAP_LOG", "none", 1);
    assert_string_equal(captured_open(ini), "");
    unsetenv("RNGSNAP_LOG");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_order),
        cmocka_unit_test(test_find),
        cmocka_unit_test(test_required_without_device),
        cmocka_unit_test(test_optional_skipped),
        cmocka_unit_test(test_backend_info),
        cmocka_unit_test(test_generate_args),
        cmocka_unit_test(test_dist_table),
        cmocka_unit_test(test_open_args_and_errors),
        cmocka_unit_test(test_open_error_per_thread),
        cmocka_unit_test(test_seed_failure_rolls_back),
        cmocka_unit_test(test_log_levels),
    };
    return cmocka_run_group_tests(tests, th_group_setup, th_group_teardown);
}
