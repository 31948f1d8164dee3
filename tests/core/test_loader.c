/*
 * test_loader.c - every bad plugin is refused with RNGSNAP_E_PLUGIN and a
 * message naming the plugin path and the reason; plugin errors from
 * open() reach the caller with the plugin's own words; loading works
 * again after failures (libltdl reference counting) and with several
 * contexts open at once; missing, non-regular and badly named plugin
 * files; optional and probe-only opens past a plugin that cannot be used.
 * Trust checks: test_trust.c; setuid processes: test_secure.c.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include <rngsnap.h>

#include "helpers.h"
#include "plugin_files.h"
#include "rngsnap_build_config.h" /* RNGSNAP_PLUGIN_DIR */

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
    {"nullversion", {"required member 'version' of the backend table is "
                     "NULL"}},
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

/* What a not-found message says of a built-in plugin (value, e.g.
 * "rngsnap_hpu") looked for in folders that leave the built-in folder out
 * (issue 23): where that folder is, and @builtin.  Whether the file is
 * there depends on this machine's installation, so ask it too. */
static const char *builtin_note(const char *value, const char *key)
{
    static char s[4096];
    char there[4096];
    snprintf(there, sizeof there, "%s/%s.so", RNGSNAP_PLUGIN_DIR, value);
    snprintf(s, sizeof s, "; %s is %s %s (pkg-config --variable=plugindir "
             "rngsnap), a folder %s leaves out: add @builtin to %s to "
             "search it too", value,
             access(there, F_OK) == 0 ? "in the built-in plugin folder"
                                      : "a built-in plugin, installed in",
             RNGSNAP_PLUGIN_DIR, key, key);
    return s;
}

/* The not-found message of [backend.hpu] at line 4 of the ini below:
 * the missing folders are named as such (issue 23). */
static const char *missing_hpu_message(void)
{
    static char want[16384];
    snprintf(want, sizeof want, "plugin 'rngsnap_hpu' for [backend.hpu] "
             "(%s:4) not found; tried (folders from plugin_dir): "
             "/no/a/rngsnap_hpu.so, /no/b/rngsnap_hpu.so, "
             "%s/rngsnap_hpu.so; folder /no/a does not exist; folder /no/b "
             "does not exist%s; to search other folders, change "
             "plugin_dir in [rngsnap] (%s:2) or set RNGSNAP_PLUGIN_PATH "
             "(folders separated by ':', searched instead)",
             pf_path("rng.ini"), th_plugin_dir(),
             builtin_note("rngsnap_hpu", "plugin_dir"), pf_path("rng.ini"));
    return want;
}

static const char *write_missing_hpu_ini(int required)
{
    return th_write("rng.ini", "[rngsnap]\nplugin_dir = /no/a:/no/b:%s\n"
                    "[backend.good]\n[backend.hpu]\nrequired = %s\n",
                    th_plugin_dir(), required ? "true" : "false");
}

/* A required backend whose plugin is missing: the open fails, naming
 * every path tried. */
static void test_missing_plugin_lists_paths(void **state)
{
    (void)state;
    const char *msg = th_open_fails(write_missing_hpu_ini(1), 0,
                                    RNGSNAP_E_PLUGIN);
    assert_string_equal(msg, missing_hpu_message());
}

/* An optional backend whose plugin file is missing is skipped with that
 * reason, like an optional backend without a device (issue 8, item 7). */
static void test_optional_missing_plugin_skipped(void **state)
{
    (void)state;
    rngsnap *ctx = th_open_ok(write_missing_hpu_ini(0), 0);
    assert_int_equal(rngsnap_backend_count(ctx), 2);
    assert_int_equal(rngsnap_stream_count(ctx), 1);
    rngsnap_backend_info bi;
    assert_int_equal(rngsnap_backend_get(ctx, 1, &bi), RNGSNAP_OK);
    assert_string_equal(bi.name, "hpu");
    assert_true(bi.skipped);
    assert_false(bi.available);
    assert_null(bi.version);
    assert_string_equal(bi.reason, missing_hpu_message());
    assert_int_equal(rngsnap_seed_all(ctx, 1), RNGSNAP_OK);
    rngsnap_close(ctx);

    /* A plugin that is there but refused is an error even when optional:
     * a broken install is fixed, not skipped. */
    const char *msg = th_open_fails(
        th_ini("[backend.good]\n[backend.badabi]\nrequired = false\n"), 0,
        RNGSNAP_E_PLUGIN);
    th_contains(msg, "rngsnap_badabi.so", "ABI version 99");
}

/* The way out of "not found" (issue 16): the plugin file that is there
 * when the value is a near miss of it, and which key or variable chooses
 * the folders searched, for each place the folders come from. */
static const char *elsewhere_plugin_dir(const char *ini)
{
    static char s[8192];
    snprintf(s, sizeof s, "; to search other folders, change plugin_dir in "
             "[rngsnap] (%s:2) or set RNGSNAP_PLUGIN_PATH (folders "
             "separated by ':', searched instead)", ini);
    return s;
}

/* plugin = rngsnap_godo in [backend.good] at ini:line, searched in
 * RNGSNAP_PLUGIN_PATH (the test plugins): the guess, then "change it,
 * or " + unset. */
static void env_typo_message(char *want, size_t len, const char *ini,
                             int line, const char *unset)
{
    snprintf(want, len, "plugin 'rngsnap_godo' for [backend.good] (%s:%d) "
             "not found (did you mean 'rngsnap_good'?); tried (folders from "
             "RNGSNAP_PLUGIN_PATH): %s/rngsnap_godo.so; to search other "
             "folders, change RNGSNAP_PLUGIN_PATH (folders separated by "
             "':'), or %s", ini, line, th_plugin_dir(), unset);
}

static void test_not_found_way_out(void **state)
{
    (void)state;
    char ini[4096], want[16384];
    /* A typo of a plugin in plugin_dir, with and without ".so". */
    static const char *const typed[][2] = {
        {"rngsnap_godo", "rngsnap_good"},
        {"rngsnap_godo.so", "rngsnap_good.so"},
        {"rngsnap_goo", "rngsnap_good"},
    };
    for (size_t i = 0; i < sizeof typed / sizeof typed[0]; i++) {
        char body[256];
        snprintf(body, sizeof body, "[backend.good]\nplugin = %s\n",
                 typed[i][0]);
        snprintf(ini, sizeof ini, "%s", th_ini(body));
        snprintf(want, sizeof want, "plugin '%s' for [backend.good] (%s:3) "
                 "not found (did you mean '%s'?); tried (folders from "
                 "plugin_dir): %s/%s%s%s", typed[i][0], ini, typed[i][1],
                 th_plugin_dir(), typed[i][0],
                 strstr(typed[i][0], ".so") ? "" : ".so",
                 elsewhere_plugin_dir(ini));
        assert_string_equal(th_open_fails(ini, 0, RNGSNAP_E_PLUGIN), want);
    }

    /* Not close enough: no guess, only the way to other folders. */
    snprintf(ini, sizeof ini, "%s",
             th_ini("[backend.good]\nplugin = rngsnap_zzzz\n"));
    snprintf(want, sizeof want, "plugin 'rngsnap_zzzz' for [backend.good] "
             "(%s:3) not found; tried (folders from plugin_dir): "
             "%s/rngsnap_zzzz.so%s", ini, th_plugin_dir(),
             elsewhere_plugin_dir(ini));
    assert_string_equal(th_open_fails(ini, 0, RNGSNAP_E_PLUGIN), want);

    /* rngsnap_gpu.so is one edit from rngsnap_hpu but is the gpu
     * backend's plugin (its table says "gpu"): never offered for hpu.
     * A file of another name is judged by its distance alone. */
    pf_mkdir("near", 0755);
    th_write("near/rngsnap_gpu.so", "%s", "");
    th_write("near/vendor_hpu.so", "%s", "");
    th_write("near/README", "%s", "");
    const char *near = pf_path("near");
    snprintf(ini, sizeof ini, "%s", th_write("rng.ini", "[rngsnap]\n"
             "plugin_dir = %s\n[backend.hpu]\n[backend.hpu2]\n"
             "plugin = vendor_hpv\n", near));
    snprintf(want, sizeof want, "plugin 'rngsnap_hpu' for [backend.hpu] "
             "(%s:3) not found; tried (folders from plugin_dir): "
             "%s/rngsnap_hpu.so%s%s", ini, near,
             builtin_note("rngsnap_hpu", "plugin_dir"),
             elsewhere_plugin_dir(ini));
    assert_string_equal(th_open_fails(ini, 0, RNGSNAP_E_PLUGIN), want);
    snprintf(ini, sizeof ini, "%s", th_write("rng.ini", "[rngsnap]\n"
             "plugin_dir = %s\n[backend.hpu2]\nplugin = vendor_hpv\n", near));
    snprintf(want, sizeof want, "plugin 'vendor_hpv' for [backend.hpu2] "
             "(%s:3) not found (did you mean 'vendor_hpu'?); tried (folders "
             "from plugin_dir): %s/vendor_hpv.so%s", ini, near,
             elsewhere_plugin_dir(ini));
    assert_string_equal(th_open_fails(ini, 0, RNGSNAP_E_PLUGIN), want);

    /* RNGSNAP_PLUGIN_PATH decides: its folders are searched for the
     * guess, and the way out is to change or unset it. */
    setenv("RNGSNAP_PLUGIN_PATH", th_plugin_dir(), 1);
    snprintf(ini, sizeof ini, "%s", th_write("rng.ini", "[rngsnap]\n"
             "plugin_dir = /nonexistent\n[backend.good]\n"
             "plugin = rngsnap_godo\n"));
    char tail[8192];
    snprintf(tail, sizeof tail, "unset it to search plugin_dir in "
             "[rngsnap] (%s:2)", ini);
    env_typo_message(want, sizeof want, ini, 3, tail);
    assert_string_equal(th_open_fails(ini, 0, RNGSNAP_E_PLUGIN), want);
    snprintf(ini, sizeof ini, "%s", th_write("rng.ini", "[backend.good]\n"
             "plugin = rngsnap_godo\n"));
    snprintf(tail, sizeof tail, "unset it and set plugin_dir in [rngsnap] "
             "of %s", ini);
    env_typo_message(want, sizeof want, ini, 1, tail);
    assert_string_equal(th_open_fails(ini, 0, RNGSNAP_E_PLUGIN), want);
    unsetenv("RNGSNAP_PLUGIN_PATH");

    /* No plugin_dir: the built-in folder (said to be missing where this
     * machine has no installation), and how to add others. */
    char gone[4096] = "";
    if (access(RNGSNAP_PLUGIN_DIR, F_OK) != 0)
        snprintf(gone, sizeof gone, "; folder %s does not exist",
                 RNGSNAP_PLUGIN_DIR);
    snprintf(want, sizeof want, "plugin 'rngsnap_godo' for [backend.good] "
             "(%s:1) not found; tried (the built-in plugin folder): "
             "%s/rngsnap_godo.so%s; to search other folders than the "
             "built-in one, set plugin_dir in [rngsnap] of %s or set "
             "RNGSNAP_PLUGIN_PATH (folders separated by ':', searched "
             "instead)", ini, RNGSNAP_PLUGIN_DIR, gone, ini);
    assert_string_equal(th_open_fails(ini, 0, RNGSNAP_E_PLUGIN), want);

    /* A path names one file: no guess, and how to search instead. */
    snprintf(ini, sizeof ini, "%s", th_ini("[backend.good]\n"
             "plugin = near/rngsnap_good.so\n"));
    snprintf(want, sizeof want, "plugin 'near/rngsnap_good.so' for "
             "[backend.good] (%s:3) not found; tried (plugin path relative "
             "to the ini's folder): %s/rngsnap_good.so; plugin = "
             "'near/rngsnap_good.so' is a path (absolute, or relative to the "
             "ini's folder): correct it, or give a file name (e.g. "
             "rngsnap_good) to search the plugin folders (plugin_dir in "
             "[rngsnap], RNGSNAP_PLUGIN_PATH)", ini, near);
    assert_string_equal(th_open_fails(ini, 0, RNGSNAP_E_PLUGIN), want);

    /* An optional backend skipped for its missing file carries the same
     * guess and way out in its reason (rngsnap backends shows it). */
    snprintf(ini, sizeof ini, "%s", th_ini("[backend.good2]\n"
             "[backend.good]\nplugin = rngsnap_godo\nrequired = false\n"));
    snprintf(want, sizeof want, "plugin 'rngsnap_godo' for [backend.good] "
             "(%s:4) not found (did you mean 'rngsnap_good'?); tried "
             "(folders from plugin_dir): %s/rngsnap_godo.so%s", ini,
             th_plugin_dir(), elsewhere_plugin_dir(ini));
    rngsnap *ctx = th_open_ok(ini, 0);
    rngsnap_backend_info bi;
    assert_int_equal(rngsnap_backend_get(ctx, 1, &bi), RNGSNAP_OK);
    assert_true(bi.skipped);
    assert_string_equal(bi.reason, want);
    rngsnap_close(ctx);
}

/* A directory or FIFO where the plugin should be is named for what it
 * is, never opened (a FIFO would block), and it hides a plugin of the
 * same name in a later folder: the first candidate that exists decides. */
static void test_non_regular_plugin_files(void **state)
{
    (void)state;
    alarm(20); /* a FIFO opened for reading would block forever */
    pf_mkdir("nonreg", 0755);
    pf_mkdir("nonreg/rngsnap_good.so", 0755);
    if (mkfifo(pf_path("nonreg/rngsnap_fifo.so"), 0644) != 0)
        fail_msg("mkfifo failed");
    static const struct {
        const char *backend, *kind;
    } cases[] = {{"good", "a directory"}, {"fifo", "a FIFO (named pipe)"}};
    for (size_t i = 0; i < 2; i++) {
        char body[512], want[16384], rel[128];
        snprintf(body, sizeof body, "[rngsnap]\nplugin_dir = %s:%s\n"
                 "[backend.%s]\n", pf_path("nonreg"), th_plugin_dir(),
                 cases[i].backend);
        const char *ini = th_write("rng.ini", "%s", body);
        snprintf(rel, sizeof rel, "nonreg/rngsnap_%s.so", cases[i].backend);
        snprintf(want, sizeof want, "plugin %s for [backend.%s] (%s:3) is "
                 "%s, not a plugin file", pf_path(rel), cases[i].backend,
                 pf_path("rng.ini"), cases[i].kind);
        assert_string_equal(th_open_fails(ini, 0, RNGSNAP_E_PLUGIN), want);
    }
    alarm(0);
}

/* What `plugin =` may contain (docs/rng-ini.md): a file name, a path
 * below the ini's folder, an absolute path; never "..". */
static void test_plugin_value_rules(void **state)
{
    (void)state;
    static const struct {
        const char *value, *why;
    } bad[] = {
        {"../x/rngsnap_good.so", "climbs out of the ini's folder with '..'"},
        {"sub/../../rngsnap_good.so",
         "climbs out of the ini's folder with '..'"},
        {"..", "is not a file name"},
        {"sub/", "ends in '/' (names a folder)"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char body[256], want[8192];
        snprintf(body, sizeof body, "[backend.good]\nplugin = %s\n",
                 bad[i].value);
        const char *ini = th_ini(body);
        snprintf(want, sizeof want, "%s:3: [backend.good]: plugin = '%s' %s; "
                 "give a file name found in plugin_dir (e.g. rngsnap_good), "
                 "a path below the ini's folder, or an absolute path",
                 pf_path("rng.ini"), bad[i].value, bad[i].why);
        assert_string_equal(th_open_fails(ini, 0, RNGSNAP_E_CONFIG), want);
    }
    /* Allowed: a path below the ini's folder, and an absolute path. */
    pf_mkdir("below", 0755);
    pf_copy_plugin("good", "below", 0755);
    rngsnap *ctx = th_open_ok(
        th_ini("[backend.good]\nplugin = ./below/rngsnap_good.so\n"), 0);
    rngsnap_backend_info bi;
    assert_int_equal(rngsnap_backend_get(ctx, 0, &bi), RNGSNAP_OK);
    assert_string_equal(bi.plugin_path, pf_path("below/rngsnap_good.so"));
    rngsnap_close(ctx);
    char body[8192];
    snprintf(body, sizeof body, "[backend.good]\nplugin = %s\n",
             pf_path("below/rngsnap_good.so"));
    rngsnap_close(th_open_ok(th_ini(body), 0));
}

/* The ABI refusals say how to get out (rebuild against the installed
 * headers); a state format id is shown as its four letters. */
static void test_abi_and_format_messages(void **state)
{
    (void)state;
    static const struct {
        const char *variant, *tail;
    } cases[] = {
        {"badabi", "was built for backend ABI version 99; this library uses "
                   "ABI version 1: rebuild the plugin against the installed "
                   "headers (cc $(pkg-config --cflags rngsnap) ...)"},
        {"small", NULL},
        {"statezero", ": state_size 0 of state format \"TEST\" (0x54534554) "
                      "is outside 1..4096"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char body[128], want[8192];
        snprintf(body, sizeof body, "[backend.%s]\n", cases[i].variant);
        const char *msg = th_open_fails(th_ini(body), 0, RNGSNAP_E_PLUGIN);
        if (!cases[i].tail) {
            th_contains(msg, "smaller than the", "bytes this library needs: "
                        "rebuild the plugin against the installed headers "
                        "(cc $(pkg-config --cflags rngsnap) ...)");
            continue;
        }
        snprintf(want, sizeof want, "plugin %s/rngsnap_%s.so for "
                 "[backend.%s]%s%s", th_plugin_dir(), cases[i].variant,
                 cases[i].variant, cases[i].tail[0] == ':' ? "" : " ",
                 cases[i].tail);
        assert_string_equal(msg, want);
    }
    /* The debug log of a loaded plugin shows its format the same way. */
    setenv("RNGSNAP_LOG", "debug", 1);
    pf_stderr_begin();
    rngsnap *ctx = NULL;
    int rc = rngsnap_open(&ctx, th_ini("[backend.good]\n"), 0);
    const char *log = pf_stderr_end();
    unsetenv("RNGSNAP_LOG");
    assert_int_equal(rc, RNGSNAP_OK);
    rngsnap_close(ctx);
    char want[8192];
    snprintf(want, sizeof want, "rngsnap debug: backend good: plugin "
             "%s/rngsnap_good.so, version test-1, state format \"TEST\" "
             "(0x54534554) of 24 bytes\n", th_plugin_dir());
    th_contains(log, want);
}

/* A RNGSNAP_PROBE_ONLY context keeps going past a refused plugin and
 * marks it unavailable with the loader's message as the reason, so that
 * a listing shows every backend; the context cannot draw. */
static void test_probe_only_lists_refused(void **state)
{
    (void)state;
    const char *ini = th_ini("[backend.good]\n[backend.badabi]\n"
                             "[backend.good2]\n");
    const char *msg = th_open_fails(ini, 0, RNGSNAP_E_PLUGIN);
    char want[8192];
    snprintf(want, sizeof want, "%s", msg);
    rngsnap *ctx = th_open_ok(ini, RNGSNAP_PROBE_ONLY);
    assert_int_equal(rngsnap_backend_count(ctx), 3);
    assert_int_equal(rngsnap_stream_count(ctx), 2);
    rngsnap_backend_info bi;
    assert_int_equal(rngsnap_backend_get(ctx, 1, &bi), RNGSNAP_OK);
    assert_string_equal(bi.name, "badabi");
    assert_false(bi.available);
    assert_false(bi.skipped);
    assert_null(bi.version);
    assert_string_equal(bi.reason, want);
    assert_int_equal(rngsnap_backend_get(ctx, 2, &bi), RNGSNAP_OK);
    assert_true(bi.available);
    assert_int_equal(rngsnap_seed_all(ctx, 1), RNGSNAP_E_UNAVAILABLE);
    rngsnap_close(ctx);
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

/* plugin_dir and RNGSNAP_PLUGIN_PATH keep the built-in folder with
 * @builtin (issue 23): it is searched in its place in the list, and the
 * message then has no "leaves out" note. */
static void test_builtin_token(void **state)
{
    (void)state;
    char ini[4096], want[16384], gone[4096] = "";
    if (access(RNGSNAP_PLUGIN_DIR, F_OK) != 0)
        snprintf(gone, sizeof gone, "; folder %s does not exist",
                 RNGSNAP_PLUGIN_DIR);
    snprintf(ini, sizeof ini, "%s", th_write("rng.ini", "[rngsnap]\n"
             "plugin_dir = %s:@builtin\n[backend.good]\n[backend.hpu]\n",
             th_plugin_dir()));
    snprintf(want, sizeof want, "plugin 'rngsnap_hpu' for [backend.hpu] "
             "(%s:4) not found; tried (folders from plugin_dir): "
             "%s/rngsnap_hpu.so, %s/rngsnap_hpu.so%s%s", ini,
             th_plugin_dir(), RNGSNAP_PLUGIN_DIR, gone,
             elsewhere_plugin_dir(ini));
    assert_string_equal(th_open_fails(ini, 0, RNGSNAP_E_PLUGIN), want);
    /* The folders before it still load: good comes from the list. */
    snprintf(ini, sizeof ini, "%s", th_write("rng.ini", "[rngsnap]\n"
             "plugin_dir = @builtin:%s\n[backend.good]\n",
             th_plugin_dir()));
    rngsnap *ctx = th_open_ok(ini, 0);
    rngsnap_close(ctx);
    /* The variable takes it too. */
    char env[4096];
    snprintf(env, sizeof env, "@builtin:%s", th_plugin_dir());
    setenv("RNGSNAP_PLUGIN_PATH", env, 1);
    snprintf(ini, sizeof ini, "%s", th_write("rng.ini", "[backend.hpu]\n"));
    const char *msg = th_open_fails(ini, 0, RNGSNAP_E_PLUGIN);
    unsetenv("RNGSNAP_PLUGIN_PATH");
    snprintf(want, sizeof want, "tried (folders from RNGSNAP_PLUGIN_PATH): "
             "%s/rngsnap_hpu.so, %s/rngsnap_hpu.so%s; to search",
             RNGSNAP_PLUGIN_DIR, th_plugin_dir(), gone);
    th_contains(msg, want);
    assert_null(strstr(msg, "leaves out"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_broken_plugins),
        cmocka_unit_test(test_missing_plugin_lists_paths),
        cmocka_unit_test(test_optional_missing_plugin_skipped),
        cmocka_unit_test(test_not_found_way_out),
        cmocka_unit_test(test_non_regular_plugin_files),
        cmocka_unit_test(test_plugin_value_rules),
        cmocka_unit_test(test_abi_and_format_messages),
        cmocka_unit_test(test_probe_only_lists_refused),
        cmocka_unit_test(test_not_a_shared_object),
        cmocka_unit_test(test_plugin_open_error),
        cmocka_unit_test(test_reload_and_many_contexts),
        cmocka_unit_test(test_threads),
        cmocka_unit_test(test_builtin_token),
    };
    return cmocka_run_group_tests(tests, th_group_setup, th_group_teardown);
}
