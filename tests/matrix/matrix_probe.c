/*
 * matrix_probe.c - device plugins without their hardware: each reports 0
 * devices with a reason a person can act on; a required one fails the
 * open with RNGSNAP_E_UNAVAILABLE; emulation is reported as such and
 * RNGSNAP_NO_EMULATION turns it off; bad options name key and line; the
 * xpu "Level Zero loader present, no driver" path, for real where the
 * loader is installed (Debian libze1).  Public API only.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dlfcn.h>

#include <cmocka.h>

#include <rngsnap.h>

#include "matrix_util.h"

typedef struct dev_backend {
    const char *name, *library;
} dev_backend;

static const dev_backend devs[] = {
    {"cuda", "libcuda.so.1"},
    {"hpu", "libSynapse.so"},
    {"xpu", "libze_loader.so.1"},
    {"npu", "libascendcl.so"},
};
#define NDEVS (sizeof devs / sizeof *devs)

static char dir[512], ini[600];

/* Write ini: a cpu section, then body. */
static void write_ini(const char *body)
{
    FILE *f = fopen(ini, "w");
    assert_non_null(f);
    fprintf(f, "[rngsnap]\nplugin_dir = %s\n\n[backend.cpu]\n"
               "plugin = rngsnap_cpu\nrequired = true\nstreams = default\n"
               "\n%s", mx_plugin_dir(), body);
    fclose(f);
}

static const char *nowhere = "/nonexistent/rngsnap-test";

static void get_backend(rngsnap *ctx, const char *name,
                        rngsnap_backend_info *bi)
{
    for (size_t i = 0; i < rngsnap_backend_count(ctx); i++) {
        assert_int_equal(rngsnap_backend_get(ctx, i, bi), RNGSNAP_OK);
        if (strcmp(bi->name, name) == 0)
            return;
    }
    fail_msg("backend %s not listed", name);
}

/* An ini with every device plugin as an optional backend, no emulation;
 * missing_runtime: each points runtime_library at a file that is not
 * there, else each loads its vendor's default runtime name. */
static void write_device_sections(int missing_runtime)
{
    char body[4096] = "";
    for (size_t i = 0; i < NDEVS; i++) {
        char runtime[1024] = "";
        if (missing_runtime)
            snprintf(runtime, sizeof runtime, "runtime_library = %s/%s\n",
                     nowhere, devs[i].library);
        size_t used = strlen(body);
        snprintf(body + used, sizeof body - used,
                 "[backend.%s]\nplugin = rngsnap_%s\nrequired = false\n"
                 "streams = default\n%s\n", devs[i].name, devs[i].name,
                 runtime);
    }
    write_ini(body);
}

/* Every device plugin, no emulation, runtime absent: 0 devices, skipped
 * (optional), and the reason names the runtime file it looked for. */
static void test_no_runtime(void **state)
{
    (void)state;
    write_device_sections(1);
    rngsnap *ctx = NULL;
    int rc = rngsnap_open(&ctx, ini, 0);
    assert_int_equal(rc, RNGSNAP_OK);
    for (size_t i = 0; i < NDEVS; i++) {
        rngsnap_backend_info bi;
        get_backend(ctx, devs[i].name, &bi);
        printf("# %s: devices %d, reason: %s\n", bi.name, bi.device_count,
               bi.reason ? bi.reason : "(none)");
        assert_int_equal(bi.device_count, 0);
        assert_false(bi.available);
        assert_true(bi.skipped);
        assert_false(bi.emulated);
        assert_non_null(bi.reason);
        assert_non_null(strstr(bi.reason, "not found"));
        assert_non_null(strstr(bi.reason, devs[i].library));
        assert_non_null(strstr(bi.reason, "emulate_devices")); /* the hint */
    }
    /* Only the cpu stream is in the registry. */
    assert_int_equal(rngsnap_stream_count(ctx), 1);
    rngsnap_close(ctx);
}

/* With the default runtime names: whatever this machine has, a backend
 * with 0 devices says why.  For xpu where the Level Zero loader is
 * installed but no GPU driver is, the reason says exactly that. */
static void test_default_runtimes(void **state)
{
    (void)state;
    write_device_sections(0);
    rngsnap *ctx = NULL;
    assert_int_equal(rngsnap_open(&ctx, ini, 0), RNGSNAP_OK);
    for (size_t i = 0; i < NDEVS; i++) {
        rngsnap_backend_info bi;
        get_backend(ctx, devs[i].name, &bi);
        printf("# %s: %d devices; status: %s\n", bi.name, bi.device_count,
               bi.status ? bi.status : "(none)");
        assert_false(bi.emulated);
        if (bi.device_count == 0) {
            assert_non_null(bi.reason);
            assert_true(strlen(bi.reason) > 10);
        }
    }
    rngsnap_backend_info xb;
    get_backend(ctx, "xpu", &xb);
    void *ze = dlopen("libze_loader.so.1", RTLD_NOW | RTLD_LOCAL);
    if (ze == NULL) {
        printf("# libze_loader.so.1 absent here: the loader-present path "
               "is not exercised (install libze1)\n");
        assert_non_null(strstr(xb.reason, "not found"));
    } else if (xb.device_count == 0) {
        /* The real "loader present, no driver" path. */
        assert_non_null(strstr(xb.reason, "Level Zero loader present"));
        assert_non_null(strstr(xb.reason, "no driver"));
    } else {
        printf("# this machine has %d Intel GPU(s): no-driver path not "
               "reachable\n", xb.device_count);
    }
    if (ze != NULL)
        dlclose(ze);
    rngsnap_close(ctx);
}

/* required = true and no device: the open fails, naming backend and
 * reason. */
static void test_required_unavailable(void **state)
{
    (void)state;
    for (size_t i = 0; i < NDEVS; i++) {
        char body[1024];
        snprintf(body, sizeof body,
                 "[backend.%s]\nplugin = rngsnap_%s\nrequired = true\n"
                 "streams = default\nruntime_library = %s/%s\n",
                 devs[i].name, devs[i].name, nowhere, devs[i].library);
        write_ini(body);
        rngsnap *ctx = (rngsnap *)1;
        int rc = rngsnap_open(&ctx, ini, 0);
        const char *msg = rngsnap_errmsg(NULL);
        printf("# required %s: %s: %s\n", devs[i].name,
               rngsnap_error_name(rc), msg);
        assert_int_equal(rc, RNGSNAP_E_UNAVAILABLE);
        assert_null(ctx);
        assert_non_null(strstr(msg, devs[i].name));
        assert_non_null(strstr(msg, devs[i].library));
    }
}

/* Emulation: N devices in host memory, reported as emulated everywhere. */
static void test_emulation(void **state)
{
    (void)state;
    for (size_t i = 0; i < NDEVS; i++) {
        char body[1024];
        snprintf(body, sizeof body,
                 "[backend.%s]\nplugin = rngsnap_%s\nrequired = true\n"
                 "streams = default, dropout\nemulate_devices = 3\n",
                 devs[i].name, devs[i].name);
        write_ini(body);
        rngsnap *ctx = NULL;
        int rc = rngsnap_open(&ctx, ini, 0);
        assert_int_equal(rc, RNGSNAP_OK);
        rngsnap_backend_info bi;
        get_backend(ctx, devs[i].name, &bi);
        assert_true(bi.available);
        assert_true(bi.emulated);
        assert_int_equal(bi.device_count, 3);
        assert_non_null(bi.status);
        assert_non_null(strstr(bi.status, "emulating 3 devices"));
        size_t bidx = 1; /* cpu is backend 0 */
        for (int d = 0; d < 3; d++) {
            char want[64];
            snprintf(want, sizeof want, "%s%d (emulated)", devs[i].name, d);
            assert_string_equal(rngsnap_backend_device_name(ctx, bidx, d),
                                want);
        }
        assert_int_equal(rngsnap_stream_count(ctx), 1 + 3 * 2);
        rngsnap_stream *s = NULL;
        assert_int_equal(rngsnap_stream_find(ctx, devs[i].name, 2, "dropout",
                                             &s), RNGSNAP_OK);
        assert_int_equal(rngsnap_stream_memory(s), RNGSNAP_MEMORY_HOST);
        assert_int_equal(rngsnap_seed_all(ctx, 5), RNGSNAP_OK);
        double v[5];
        assert_int_equal(rngsnap_generate(s, RNGSNAP_F64, v, 5), RNGSNAP_OK);
        for (int k = 0; k < 5; k++)
            assert_true(v[k] >= 0.0 && v[k] < 1.0);
        rngsnap_close(ctx);
    }
}

/* RNGSNAP_NO_EMULATION=1: the same emulated file on a machine without the
 * hardware fails, as on a hardware CI runner that lost its devices. */
static void test_no_emulation_env(void **state)
{
    (void)state;
    write_ini("[backend.hpu]\nplugin = rngsnap_hpu\nrequired = true\n"
              "streams = default\nemulate_devices = 2\n"
              "runtime_library = /nonexistent/rngsnap-test/libSynapse.so\n");
    setenv("RNGSNAP_NO_EMULATION", "1", 1);
    rngsnap *ctx = NULL;
    int rc = rngsnap_open(&ctx, ini, 0);
    const char *msg = rngsnap_errmsg(NULL);
    printf("# RNGSNAP_NO_EMULATION=1: %s: %s\n", rngsnap_error_name(rc), msg);
    unsetenv("RNGSNAP_NO_EMULATION");
    assert_int_equal(rc, RNGSNAP_E_UNAVAILABLE);
    assert_null(ctx);
    assert_non_null(strstr(msg, "libSynapse.so"));
    /* It says why emulation did not happen, and does not offer it. */
    assert_non_null(strstr(msg, "emulate_devices ignored "
                                "(RNGSNAP_NO_EMULATION is set)"));
    assert_null(strstr(msg, "set emulate_devices"));
    /* Without the variable the same file emulates. */
    assert_int_equal(rngsnap_open(&ctx, ini, 0), RNGSNAP_OK);
    rngsnap_close(ctx);
    /* No emulate_devices in the file and the variable set: the reason
     * offers no emulation either (a hardware runner cannot use it). */
    write_ini("[backend.hpu]\nplugin = rngsnap_hpu\nrequired = true\n"
              "streams = default\n"
              "runtime_library = /nonexistent/rngsnap-test/libSynapse.so\n");
    setenv("RNGSNAP_NO_EMULATION", "1", 1);
    rc = rngsnap_open(&ctx, ini, 0);
    msg = rngsnap_errmsg(NULL);
    printf("# RNGSNAP_NO_EMULATION=1, no emulate_devices: %s\n", msg);
    unsetenv("RNGSNAP_NO_EMULATION");
    assert_int_equal(rc, RNGSNAP_E_UNAVAILABLE);
    assert_non_null(strstr(msg, "libSynapse.so"));
    assert_null(strstr(msg, "emulate_devices"));
}

static void expect_config_error(const char *body, const char *key,
                                const char *line)
{
    write_ini(body);
    rngsnap *ctx = NULL;
    int rc = rngsnap_open(&ctx, ini, 0);
    const char *msg = rngsnap_errmsg(NULL);
    printf("# %s: %s\n", rngsnap_error_name(rc), msg);
    assert_int_equal(rc, RNGSNAP_E_CONFIG);
    assert_null(ctx);
    assert_non_null(strstr(msg, key));
    assert_non_null(strstr(msg, line));
}

/* Bad options name the key and its line (the cpu section takes lines 1-8,
 * the device section starts on line 9). */
static void test_bad_options(void **state)
{
    (void)state;
    expect_config_error("[backend.npu]\nplugin = rngsnap_npu\n"
                        "required = false\nstreams = default\n"
                        "emulate_device = 2\n",
                        "emulate_device", ":13");
    expect_config_error("[backend.xpu]\nplugin = rngsnap_xpu\n"
                        "required = false\nemulate_devices = two\n"
                        "streams = default\n",
                        "emulate_devices", ":12");
    expect_config_error("[backend.cuda]\nplugin = rngsnap_cuda\n"
                        "emulate_devices = 65\nrequired = false\n"
                        "streams = default\n",
                        "emulate_devices", ":11");
    expect_config_error("[backend.hpu]\nplugin = rngsnap_hpu\n"
                        "emulate_devices = -1\nstreams = default\n",
                        "emulate_devices", ":11");
}

static int setup(void **state)
{
    (void)state;
    mx_tempdir(dir, sizeof dir, "probe");
    snprintf(ini, sizeof ini, "%s/rng.ini", dir);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    mx_rmdir(dir);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_no_runtime),
        cmocka_unit_test(test_default_runtimes),
        cmocka_unit_test(test_required_unavailable),
        cmocka_unit_test(test_emulation),
        cmocka_unit_test(test_no_emulation_env),
        cmocka_unit_test(test_bad_options),
    };
    return cmocka_run_group_tests_name("matrix_probe", tests, setup,
                                       teardown);
}
