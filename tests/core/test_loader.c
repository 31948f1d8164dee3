/*
 * test_loader.c - every bad plugin is refused with RNGSNAP_E_PLUGIN and a
 * message naming the plugin path and the reason; plugin errors from
 * open() reach the caller with the plugin's own words; loading works
 * again after failures (libltdl reference counting) and with several
 * contexts open at once.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>

#include <cmocka.h>

#include <rngsnap.h>

#include "helpers.h"

typedef struct bad_plugin {
    const char *variant; /* rngsnap_<variant>.so, section [backend.variant] */
    const char *want[3];
} bad_plugin;

static const bad_plugin bad_plugins[] = {
    {"nosym", {"has no symbol rngsnap_backend_v1"}},
    {"nulltable", {"rngsnap_backend_v1() returned NULL"}},
    {"badabi", {"ABI version 99", "ABI version 1"}},
    {"small", {"bytes", "smaller"}},
    {"wrongname", {"rngsnap_wrongname.so says it is \"cuda\""}},
    {"nullmember", {"required member 'seed'", "NULL"}},
    {"statezero", {"state_size 0"}},
    {"statebig", {"state_size 5000", "4096"}},
    {"undef_data", {"exists but cannot be loaded",
                    "rngsnap_test_missing_data"}},
    {"undef_fn", {"exists but cannot be loaded",
                  "rngsnap_test_missing_function"}},
};

static void test_broken_plugins(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof bad_plugins / sizeof bad_plugins[0]; i++) {
        const bad_plugin *c = &bad_plugins[i];
        char body[256], so[4096];
        snprintf(body, sizeof body, "[backend.good]\n[backend.%s]\n",
                 c->variant);
        snprintf(so, sizeof so, "%s/rngsnap_%s.so", th_plugin_dir(),
                 c->variant);
        print_message("plugin: %s\n", so);
        const char *msg = th_open_fails(th_ini(body), 0, RNGSNAP_E_PLUGIN);
        th_contains(msg, so, "[backend.");
        for (size_t k = 0; k < 3 && c->want[k]; k++)
            th_contains(msg, c->want[k]);
    }
}

static void test_missing_plugin_lists_paths(void **state)
{
    (void)state;
    const char *p = th_write("rng.ini",
                             "[rngsnap]\nplugin_dir = /no/a:/no/b:%s\n"
                             "[backend.good]\n[backend.hpu]\n"
                             "required = false\n",
                             th_plugin_dir());
    char ini[4096], third[4096];
    snprintf(ini, sizeof ini, "%s", p);
    snprintf(third, sizeof third, "%s/rngsnap_hpu.so", th_plugin_dir());
    /* An optional backend whose plugin is missing is still an error. */
    const char *msg = th_open_fails(ini, 0, RNGSNAP_E_PLUGIN);
    th_contains(msg, "not found", "/no/a/rngsnap_hpu.so",
                "/no/b/rngsnap_hpu.so", third, ini, ":4", "[backend.hpu]");
}

static void test_not_a_shared_object(void **state)
{
    (void)state;
    th_write("rngsnap_junk.so", "this is not an ELF file\n");
    char ini[4096], so[4096];
    snprintf(ini, sizeof ini, "%s",
             th_write("rng.ini", "[backend.junk]\nplugin = ./rngsnap_junk.so\n"));
    snprintf(so, sizeof so, "%s/rngsnap_junk.so", th_tmpdir());
    const char *msg = th_open_fails(ini, 0, RNGSNAP_E_PLUGIN);
    th_contains(msg, so, "exists but cannot be loaded");
}

static void test_plugin_open_error(void **state)
{
    (void)state;
    char so[4096];
    snprintf(so, sizeof so, "%s/rngsnap_good.so", th_plugin_dir());
    const char *msg = th_open_fails(
        th_ini("[backend.good]\nfail_open = 1\n"), 0, RNGSNAP_E_BACKEND);
    th_contains(msg, "backend good", so, "fail_open is set (line 4)");

    /* The plugin reads its options with their lines (option_at). */
    msg = th_open_fails(th_ini("[backend.good]\nstreams = a\n\ncolour = 3\n"),
                        0, RNGSNAP_E_CONFIG);
    th_contains(msg, "backend good", ":6:", "unknown option 'colour'");
    msg = th_open_fails(th_ini("[backend.good]\ndevices = many\n"), 0,
                        RNGSNAP_E_CONFIG);
    th_contains(msg, ":4:", "devices = 'many'");
}

/* Failures leave nothing loaded and the loader usable; contexts share
 * plugins and may be closed in any order. */
static void test_reload_and_many_contexts(void **state)
{
    (void)state;
    char ini[4096];
    snprintf(ini, sizeof ini, "%s",
             th_ini("[backend.good]\ndevices = 2\n[backend.good2]\n"));
    for (int round = 0; round < 3; round++) {
        th_open_fails(th_ini("[backend.good]\n[backend.badabi]\n"), 0,
                      RNGSNAP_E_PLUGIN);
        snprintf(ini, sizeof ini, "%s",
                 th_ini("[backend.good]\ndevices = 2\n[backend.good2]\n"));
        rngsnap *a = th_open_ok(ini, 0);
        rngsnap *b = th_open_ok(ini, 0);
        rngsnap *c = th_open_ok(ini, 0);
        assert_int_equal(rngsnap_stream_count(a), 3);
        rngsnap_close(b);
        assert_int_equal(rngsnap_seed_all(a, 7), RNGSNAP_OK);
        rngsnap_close(a);
        assert_int_equal(rngsnap_seed_all(c, 7), RNGSNAP_OK);
        rngsnap_close(c);
    }
}

/* Opens from several threads at once (the loader lock). */
static char thread_ini[4096];

static void *opener(void *arg)
{
    (void)arg;
    for (int i = 0; i < 20; i++) {
        rngsnap *ctx = NULL;
        if (rngsnap_open(&ctx, thread_ini, 0) != RNGSNAP_OK)
            return (void *)1;
        if (rngsnap_seed_all(ctx, (uint64_t)i) != RNGSNAP_OK) {
            rngsnap_close(ctx);
            return (void *)1;
        }
        rngsnap_close(ctx);
    }
    return NULL;
}

static void test_threads(void **state)
{
    (void)state;
    snprintf(thread_ini, sizeof thread_ini, "%s",
             th_ini("[backend.good]\n[backend.good2]\n"));
    pthread_t t[4];
    for (int i = 0; i < 4; i++)
        assert_int_equal(pthread_create(&t[i], NULL, opener, NULL), 0);
    for (int i = 0; i < 4; i++) {
        void *r;
        assert_int_equal(pthread_join(t[i], &r), 0);
        assert_null(r);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_broken_plugins),
        cmocka_unit_test(test_missing_plugin_lists_paths),
        cmocka_unit_test(test_not_a_shared_object),
        cmocka_unit_test(test_plugin_open_error),
        cmocka_unit_test(test_reload_and_many_contexts),
        cmocka_unit_test(test_threads),
    };
    return cmocka_run_group_tests(tests, th_group_setup, th_group_teardown);
}
