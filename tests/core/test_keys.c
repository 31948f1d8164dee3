/*
 * test_keys.c - unknown keys in rng.ini (issue 8 item 7): the core owns
 * plugin, required and streams; every other key of [backend.X] must be
 * one of the plugin's option_keys, else it is refused before the plugin
 * opens, naming file, line, key and section, with a did-you-mean over
 * every key the section takes.  A plugin that lists no keys still gets
 * near misses of the core keys refused by the core.  [rngsnap] alike.
 * The example plugin of the guide (docs/examples/minimal_plugin.c)
 * declares its keys and refuses unknown ones itself.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <dlfcn.h>

#include <rngsnap.h>
#include <rngsnap/backend.h>

#include "helpers.h"

static char ini_real[4096]; /* absolute path of the last ini written */

/* rng.ini whose plugin_dir finds the built-in plugins, the test plugins
 * and the example plugin, then body. */
static const char *write_ini(const char *body)
{
    const char *p = th_write("rng.ini", "[rngsnap]\nplugin_dir = %s:%s:%s\n%s",
                             getenv("RNGSNAP_PLUGIN_BUILD_DIR"),
                             th_plugin_dir(),
                             getenv("RNGSNAP_EXAMPLE_PLUGIN_DIR"), body);
    char *r = realpath(p, NULL);
    assert_non_null(r);
    snprintf(ini_real, sizeof ini_real, "%s", r);
    free(r);
    return ini_real;
}

/* Open body expecting RNGSNAP_E_CONFIG with exactly "<ini>:<want>". */
static void refused(const char *body, const char *want)
{
    const char *ini = write_ini(body);
    const char *msg = th_open_fails(ini, 0, RNGSNAP_E_CONFIG);
    char full[8192];
    snprintf(full, sizeof full, "%s:%s", ini, want);
    assert_string_equal(msg, full);
}

static void accepted(const char *body)
{
    rngsnap_close(th_open_ok(write_ini(body), 0));
}

/* A plugin that lists its keys: the core refuses the rest with the
 * closest of all the section's keys (core + plugin). */
static void test_listed_keys(void **state)
{
    (void)state;
    static const char cpu_keys[] =
        "(this section takes plugin, required, streams, threads, isa)";
    char want[512];
    snprintf(want, sizeof want, "5: unknown key 'requried' in [backend.cpu]; "
             "did you mean 'required'? %s", cpu_keys);
    refused("[backend.cpu]\nstreams = a, b\nrequried = false\n", want);
    snprintf(want, sizeof want, "4: unknown key 'stream' in [backend.cpu]; "
             "did you mean 'streams'? %s", cpu_keys);
    refused("[backend.cpu]\nstream = a, b\n", want);
    snprintf(want, sizeof want, "4: unknown key 'thread' in [backend.cpu]; "
             "did you mean 'threads'? %s", cpu_keys);
    refused("[backend.cpu]\nthread = 2\n", want);
    snprintf(want, sizeof want, "4: unknown key 'colour' in [backend.cpu] "
             "%s", cpu_keys);
    refused("[backend.cpu]\ncolour = red\n", want);

    refused("[backend.hpu]\nemulate_device = 2\n",
            "4: unknown key 'emulate_device' in [backend.hpu]; did you mean "
            "'emulate_devices'? (this section takes plugin, required, "
            "streams, emulate_devices, runtime_library)");
    refused("[backend.minimal]\ndevice = 2\n",
            "4: unknown key 'device' in [backend.minimal]; did you mean "
            "'devices'? (this section takes plugin, required, streams, "
            "devices)");
    refused("[backend.minimal]\nrequried = false\n",
            "4: unknown key 'requried' in [backend.minimal]; did you mean "
            "'required'? (this section takes plugin, required, streams, "
            "devices)");

    /* A bad value is the plugin's to refuse, with FILE:LINE (the guide's
     * option-error contract) behind the core's "backend NAME (PATH): ". */
    const char *ini = write_ini("[backend.minimal]\nstreams = a\n"
                                "devices = 9\n");
    const char *msg = th_open_fails(ini, 0, RNGSNAP_E_CONFIG);
    char want_value[8192];
    snprintf(want_value, sizeof want_value, "): %s:5: devices = '9' in "
             "[backend.minimal]: want a whole number 0..8", ini);
    th_contains(msg, "backend minimal (");
    th_contains(msg, want_value);

    /* Every listed key is taken. */
    accepted("[backend.cpu]\nplugin = rngsnap_cpu\nrequired = true\n"
             "streams = a\nthreads = 1\nisa = scalar\n"
             "[backend.hpu]\nrequired = false\nemulate_devices = 1\n"
             "runtime_library = libnothing.so\n"
             "[backend.minimal]\ndevices = 2\n");
}

/* A plugin without option_keys (tests/plugins/broken "good"): the core
 * refuses what is a near miss of its own keys, the plugin the rest. */
static void test_unlisted_keys(void **state)
{
    (void)state;
    refused("[backend.good]\nrequried = no\n",
            "4: unknown key 'requried' in [backend.good]; did you mean "
            "'required'? (the core reads plugin, required and streams; "
            "plugin rngsnap_good does not list its own keys)");
    refused("[backend.good]\nstreams = a\nplugins = rngsnap_good\n",
            "5: unknown key 'plugins' in [backend.good]; did you mean "
            "'plugin'? (the core reads plugin, required and streams; "
            "plugin rngsnap_good does not list its own keys)");
    /* Its own keys, far from the core's, still reach it. */
    accepted("[backend.good]\ndevices = 2\nreason = none\n");
}

static void test_global_keys(void **state)
{
    (void)state;
    const char *ini = th_write("rng.ini", "[rngsnap]\nplugin_dirs = /x\n"
                               "[backend.cpu]\n");
    char *real = realpath(ini, NULL);
    assert_non_null(real);
    const char *msg = th_open_fails(real, 0, RNGSNAP_E_CONFIG);
    char want[8192];
    snprintf(want, sizeof want, "%s:2: unknown key 'plugin_dirs' in "
             "[rngsnap]; did you mean 'plugin_dir'? (this section takes "
             "plugin_dir, log)", real);
    assert_string_equal(msg, want);
    free(real);
    refused("lg = warn\n[backend.cpu]\n",
            "3: unknown key 'lg' in [rngsnap]; did you mean 'log'? (this "
            "section takes plugin_dir, log)");
    refused("colour = red\n[backend.cpu]\n",
            "3: unknown key 'colour' in [rngsnap] (this section takes "
            "plugin_dir, log)");
}

/* ---- the example plugin on its own (as an older core would run it) ---- */

static const char *const fake_keys[] = {"devices", "noise"};
static const int fake_lines[] = {7, 8};
static char fake_error[1024];

static size_t fake_option_count(const rngsnap_host *host)
{
    (void)host;
    return 2;
}

static int fake_option_at(const rngsnap_host *host, size_t i,
                          const char **key, const char **value, int *line)
{
    (void)host;
    if (i >= 2)
        return RNGSNAP_E_INVALID;
    if (key)
        *key = fake_keys[i];
    if (value)
        *value = "1";
    if (line)
        *line = fake_lines[i];
    return RNGSNAP_OK;
}

static const char *fake_option(const rngsnap_host *host, const char *key)
{
    (void)host;
    return strcmp(key, "devices") == 0 || strcmp(key, "noise") == 0 ? "1"
                                                                    : NULL;
}

static void fake_host_error(const rngsnap_host *host, const char *fmt, ...)
{
    (void)host;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(fake_error, sizeof fake_error, fmt, ap);
    va_end(ap);
}

static void fake_log(const rngsnap_host *host, int level, const char *fmt,
                     ...)
{
    (void)host, (void)level, (void)fmt;
}

static void test_example_refuses_itself(void **state)
{
    (void)state;
    char path[4096];
    snprintf(path, sizeof path, "%s/rngsnap_minimal.so",
             getenv("RNGSNAP_EXAMPLE_PLUGIN_DIR"));
    void *dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    assert_non_null(dl);
    rngsnap_backend_entry_fn entry;
    *(void **)&entry = dlsym(dl, RNGSNAP_BACKEND_ENTRY);
    assert_non_null(entry);
    const rngsnap_backend *t = entry();
    assert_true(RNGSNAP_BACKEND_HAS(t, option_keys));
    assert_string_equal(t->option_keys[0], "devices");
    assert_null(t->option_keys[1]);

    rngsnap_host h = {
        .abi_version = RNGSNAP_BACKEND_ABI_VERSION,
        .struct_size = sizeof h,
        .backend_name = "minimal",
        .ini_path = "/etc/rng.ini",
        .plugin_path = path,
        .option = fake_option,
        .option_count = fake_option_count,
        .option_at = fake_option_at,
        .error = fake_host_error,
        .log = fake_log,
    };
    void *bctx = NULL;
    assert_int_equal(t->open(&h, &bctx), RNGSNAP_E_CONFIG);
    assert_null(bctx);
    assert_string_equal(fake_error, "/etc/rng.ini:8: unknown key 'noise' in "
                        "[backend.minimal] (this plugin knows: devices)");
    dlclose(dl);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_listed_keys),
        cmocka_unit_test(test_unlisted_keys),
        cmocka_unit_test(test_global_keys),
        cmocka_unit_test(test_example_refuses_itself),
    };
    return cmocka_run_group_tests(tests, th_group_setup, th_group_teardown);
}
