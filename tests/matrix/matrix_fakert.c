/*
 * matrix_fakert.c - the device plugins' probes against stand-in vendor
 * runtimes (tests/matrix/fakert: fake libcuda, libSynapse, libze_loader,
 * libascendcl, picked with runtime_library): the "runtime present" paths
 * that machines without the hardware cannot reach otherwise.  Devices and
 * names from the runtime, "driver present, no devices", an init failure
 * named by its entry point, emulation winning over real devices (and
 * saying so), ACL/SynapseAI already initialised, Level Zero non-GPU devices left
 * out.  Public API only.
 *
 * usage: matrix_fakert FAKE_CUDA FAKE_SYNAPSE FAKE_ZE FAKE_ACL HAVE_CUDA
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <rngsnap.h>

#include "matrix_util.h"

typedef struct vendor {
    const char *backend;
    const char *name0;    /* device 0's name with 2 fake devices        */
    const char *none;     /* in the reason when the runtime has 0       */
    const char *fail;     /* RNGSNAP_FAKE_FAIL value for the init call  */
    const char *init;     /* the init entry point, named in the reason  */
    const char *lib;      /* path of the fake runtime                   */
} vendor;

static vendor vendors[] = {
    {"cuda", "cuda0 (Fake GPU 0)", "no devices", "999", "cuInit", NULL},
    {"hpu", "hpu0 (Gaudi via SynapseAI)", "no Gaudi devices", "7",
     "synInitialize", NULL},
    {"xpu", "xpu0 (Fake Arc 0)", "no GPU devices", "2013265921" /* 0x78000001 */,
     "zeInit", NULL},
    {"npu", "npu0 (FakeAscend910)", "no Ascend devices", "100000",
     "aclInit", NULL},
};
#define NV (sizeof vendors / sizeof *vendors)

static int have_cuda;
static char dir[512], ini[600];

static rngsnap *open_one(const vendor *v, int required, int emulate,
                         int *rc_out)
{
    FILE *f = fopen(ini, "w");
    assert_non_null(f);
    fprintf(f, "[rngsnap]\nplugin_dir = %s\n\n[backend.cpu]\n"
               "plugin = rngsnap_cpu\nrequired = true\nstreams = default\n\n"
               "[backend.%s]\nplugin = rngsnap_%s\nrequired = %s\n"
               "streams = default\nruntime_library = %s\n",
            mx_plugin_dir(), v->backend, v->backend,
            required ? "true" : "false", v->lib);
    if (emulate > 0)
        fprintf(f, "emulate_devices = %d\n", emulate);
    fclose(f);
    rngsnap *ctx = NULL;
    *rc_out = rngsnap_open(&ctx, ini, 0);
    return ctx;
}

static void info(rngsnap *ctx, rngsnap_backend_info *bi)
{
    assert_int_equal(rngsnap_backend_count(ctx), 2);
    assert_int_equal(rngsnap_backend_get(ctx, 1, bi), RNGSNAP_OK);
}

static void set_fake(const char *devices, const char *fail)
{
    setenv("RNGSNAP_FAKE_DEVICES", devices, 1);
    setenv("RNGSNAP_FAKE_FAIL", fail, 1);
}

/* The runtime finds 2 devices: names come from it, no emulation. */
static void test_devices_found(void **state)
{
    (void)state;
    set_fake("2", "0");
    for (size_t i = 0; i < NV; i++) {
        int rc;
        rngsnap *ctx = open_one(&vendors[i], 1, 0, &rc);
        assert_int_equal(rc, RNGSNAP_OK);
        rngsnap_backend_info bi;
        info(ctx, &bi);
        printf("# %s: %d devices, status: %s\n", bi.name, bi.device_count,
               bi.status);
        assert_int_equal(bi.device_count, 2);
        assert_false(bi.emulated);
        assert_non_null(strstr(bi.status, "2 devices via"));
        assert_string_equal(rngsnap_backend_device_name(ctx, 1, 0),
                            vendors[i].name0);
        rngsnap_stream *s = NULL;
        assert_int_equal(rngsnap_stream_find(ctx, vendors[i].backend, 1,
                                             "default", &s), RNGSNAP_OK);
        assert_int_equal(rngsnap_seed_all(ctx, 3), RNGSNAP_OK);
        uint32_t w[8];
        if (strcmp(vendors[i].backend, "cuda") == 0 && have_cuda) {
            /* A real cuda device writes device memory; this host buffer
             * is refused (the fake driver has no GPU behind it either),
             * with a message, never a crash. */
            assert_int_equal(rngsnap_stream_memory(s),
                             RNGSNAP_MEMORY_DEVICE);
            assert_non_null(strstr(bi.status, "output in device memory"));
            rc = rngsnap_generate(s, RNGSNAP_U32, w, 8);
            printf("# cuda generate into host memory: %s: %s\n",
                   rngsnap_error_name(rc), rngsnap_errmsg(ctx));
            assert_int_equal(rc, RNGSNAP_E_BACKEND);
        } else {
            assert_int_equal(rngsnap_stream_memory(s), RNGSNAP_MEMORY_HOST);
            assert_non_null(strstr(bi.status, "output in host memory"));
            assert_int_equal(rngsnap_generate(s, RNGSNAP_U32, w, 8),
                             RNGSNAP_OK);
        }
        rngsnap_close(ctx);
    }
}

/* v as an optional backend opens, is skipped with 0 devices, and its
 * reason contains want. */
static void expect_skipped(const vendor *v, const char *want)
{
    int rc;
    rngsnap *ctx = open_one(v, 0, 0, &rc);
    assert_int_equal(rc, RNGSNAP_OK);
    rngsnap_backend_info bi;
    info(ctx, &bi);
    printf("# %s: %s\n", bi.name, bi.reason ? bi.reason : "(none)");
    assert_int_equal(bi.device_count, 0);
    assert_true(bi.skipped);
    assert_non_null(bi.reason);
    assert_non_null(strstr(bi.reason, want));
    rngsnap_close(ctx);
}

/* The runtime loads and initialises but has no device. */
static void test_driver_no_devices(void **state)
{
    (void)state;
    set_fake("0", "0");
    for (size_t i = 0; i < NV; i++) {
        expect_skipped(&vendors[i], vendors[i].none);
        /* Required: the open fails with that reason. */
        int rc;
        rngsnap *ctx = open_one(&vendors[i], 1, 0, &rc);
        assert_int_equal(rc, RNGSNAP_E_UNAVAILABLE);
        assert_null(ctx);
        assert_non_null(strstr(rngsnap_errmsg(NULL), vendors[i].none));
    }
}

/* The init call fails: the reason names it and its code. */
static void test_init_fails(void **state)
{
    (void)state;
    for (size_t i = 0; i < NV; i++) {
        set_fake("2", vendors[i].fail);
        expect_skipped(&vendors[i], vendors[i].init);
    }
}

/* emulate_devices with real devices present: emulation wins and the
 * status says the real ones are not used. */
static void test_emulation_wins(void **state)
{
    (void)state;
    set_fake("2", "0");
    for (size_t i = 0; i < NV; i++) {
        int rc;
        rngsnap *ctx = open_one(&vendors[i], 1, 1, &rc);
        assert_int_equal(rc, RNGSNAP_OK);
        rngsnap_backend_info bi;
        info(ctx, &bi);
        printf("# %s: %s\n", bi.name, bi.status);
        assert_true(bi.emulated);
        assert_int_equal(bi.device_count, 1);
        assert_non_null(strstr(bi.status, "emulating 1 device"));
        assert_non_null(strstr(bi.status, "2 real devices"));
        assert_non_null(strstr(bi.status, "NOT used"));
        rngsnap_stream *s = NULL;
        assert_int_equal(rngsnap_stream_find(ctx, vendors[i].backend, 0,
                                             "default", &s), RNGSNAP_OK);
        assert_int_equal(rngsnap_stream_memory(s), RNGSNAP_MEMORY_HOST);
        rngsnap_close(ctx);
    }
}

/* Runtime initialised by the app before us: "already initialised" is
 * accepted (ACL_ERROR_REPEAT_INITIALIZE, synAlreadyInitialized). */
static void test_already_initialised(void **state)
{
    (void)state;
    static const struct { size_t v; const char *code; } cases[] = {
        {3, "100002"}, {1, "29"}};
    for (size_t i = 0; i < 2; i++) {
        set_fake("3", cases[i].code);
        int rc;
        rngsnap *ctx = open_one(&vendors[cases[i].v], 1, 0, &rc);
        assert_int_equal(rc, RNGSNAP_OK);
        rngsnap_backend_info bi;
        info(ctx, &bi);
        assert_int_equal(bi.device_count, 3);
        rngsnap_close(ctx);
    }
}

static int setup(void **state)
{
    (void)state;
    mx_tempdir(dir, sizeof dir, "fakert");
    snprintf(ini, sizeof ini, "%s/rng.ini", dir);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    mx_rmdir(dir);
    unsetenv("RNGSNAP_FAKE_DEVICES");
    unsetenv("RNGSNAP_FAKE_FAIL");
    return 0;
}

int main(int argc, char **argv)
{
    if (argc != 6) {
        fprintf(stderr, "usage: %s FAKE_CUDA FAKE_SYNAPSE FAKE_ZE FAKE_ACL "
                "HAVE_CUDA\n", argv[0]);
        return 2;
    }
    for (size_t i = 0; i < NV; i++)
        vendors[i].lib = argv[1 + i];
    have_cuda = strcmp(argv[5], "true") == 0 || strcmp(argv[5], "1") == 0;
    unsetenv("RNGSNAP_NO_EMULATION");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_devices_found),
        cmocka_unit_test(test_driver_no_devices),
        cmocka_unit_test(test_init_fails),
        cmocka_unit_test(test_emulation_wins),
        cmocka_unit_test(test_already_initialised),
    };
    return cmocka_run_group_tests_name("matrix_fakert", tests, setup,
                                       teardown);
}
