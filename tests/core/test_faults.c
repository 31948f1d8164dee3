/*
 * test_faults.c - what the core itself does about a plugin or an rng.ini
 * that would otherwise fail quietly (issue 23):
 *  - RNGSNAP_NO_EMULATION=1 refuses a third-party plugin that reports
 *    emulated(), with the words the built-ins' refusal has;
 *  - at RNGSNAP_LOG=debug each plugin call is logged before it is made,
 *    so the last line before a segfault in a plugin names it;
 *  - a skipped optional backend whose plugin name is a near miss warns at
 *    the default log level, once per open.
 * The plugins: tests/plugins/faults (emuext, crashy).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include <rngsnap.h>

#include "helpers.h"
#include "plugin_files.h"

static const char *faults_dir(void)
{
    return getenv("RNGSNAP_FAULTS_PLUGIN_DIR");
}

/* Resolved path of test plugin NAME, as the loader names it. */
static const char *so_path(const char *name)
{
    static char p[4096];
    char raw[4096];
    snprintf(raw, sizeof raw, "%s/rngsnap_%s.so", faults_dir(), name);
    char *r = realpath(raw, NULL);
    assert_non_null(r);
    snprintf(p, sizeof p, "%s", r);
    free(r);
    return p;
}

/* ---- RNGSNAP_NO_EMULATION ------------------------------------------------ */

static const char *emuext_ini(int required)
{
    return th_write("rng.ini", "[rngsnap]\nplugin_dir = %s:%s\n"
                    "[backend.cpu]\n[backend.emuext]\nrequired = %s\n",
                    faults_dir(), getenv("RNGSNAP_PLUGIN_BUILD_DIR"),
                    required ? "true" : "false");
}

static void test_no_emulation_third_party(void **state)
{
    (void)state;
    const char *ini = emuext_ini(1);
    char ini_copy[4096], want[8192], reason[2048];
    snprintf(ini_copy, sizeof ini_copy, "%s", ini);
    /* Without the variable (or set to 0) the plugin's emulation runs. */
    for (int i = 0; i < 2; i++) {
        if (i)
            setenv("RNGSNAP_NO_EMULATION", "0", 1);
        rngsnap *ctx = th_open_ok(ini_copy, 0);
        assert_int_equal(rngsnap_stream_count(ctx), 1 + 2);
        rngsnap_close(ctx);
    }
    snprintf(reason, sizeof reason, "the plugin emulates its 2 devices "
             "(emulating 2 accelerators in host memory (test plugin)); "
             "emulation ignored (RNGSNAP_NO_EMULATION is set)");
    snprintf(want, sizeof want, "backend emuext is required ([backend.emuext] "
             "at %s:4) but has no device: %s (plugin %s); set 'required = "
             "false' to skip it where it is absent", pf_path("rng.ini"),
             reason, so_path("emuext"));
    setenv("RNGSNAP_NO_EMULATION", "1", 1);
    const char *msg = th_open_fails(ini_copy, 0, RNGSNAP_E_UNAVAILABLE);
    assert_string_equal(msg, want);
    /* Optional: skipped, with the same reason. */
    rngsnap *ctx = th_open_ok(emuext_ini(0), 0);
    assert_int_equal(rngsnap_stream_count(ctx), 1);
    rngsnap_backend_info bi;
    assert_int_equal(rngsnap_backend_get(ctx, 1, &bi), RNGSNAP_OK);
    assert_true(bi.skipped);
    assert_false(bi.emulated); /* nothing emulated is in use */
    assert_int_equal(bi.device_count, 0);
    assert_string_equal(bi.reason, reason);
    rngsnap_close(ctx);
    unsetenv("RNGSNAP_NO_EMULATION");
}

/* ---- a crashing plugin is named ----------------------------------------- */

/* Run a save of [cpu, crashy] in a child whose stderr goes to err_path,
 * at the given RNGSNAP_LOG (NULL: unset); returns the wait status. */
static int crash_child(const char *ini, const char *log, const char *err_path)
{
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        signal(SIGSEGV, SIG_DFL); /* cmocka's handler would carry on */
        FILE *f = freopen(err_path, "w", stderr);
        if (!f)
            _exit(90);
        setvbuf(stderr, NULL, _IONBF, 0);
        if (log)
            setenv("RNGSNAP_LOG", log, 1);
        rngsnap *ctx = NULL;
        if (rngsnap_open(&ctx, ini, 0) || rngsnap_seed_all(ctx, 3))
            _exit(91);
        char ck[4096];
        snprintf(ck, sizeof ck, "%s.ck", ini);
        rngsnap_save(ctx, ck, RNGSNAP_SAVE_REPLACE); /* crashes here */
        _exit(92);
    }
    int st = 0;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    return st;
}

static char *read_text(const char *path)
{
    static char text[65536];
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    size_t n = fread(text, 1, sizeof text - 1, f);
    text[n] = '\0';
    fclose(f);
    return text;
}

static void test_crash_named(void **state)
{
    (void)state;
    char ini[4096], err[4096], want[8192];
    snprintf(ini, sizeof ini, "%s", th_write("rng.ini", "[rngsnap]\n"
             "plugin_dir = %s:%s\n[backend.cpu]\n[backend.crashy]\n"
             "streams = default, noise\n", faults_dir(),
             getenv("RNGSNAP_PLUGIN_BUILD_DIR")));
    snprintf(err, sizeof err, "%s", pf_path("crash.err"));
    int st = crash_child(ini, "debug", err);
    assert_true(WIFSIGNALED(st));
    assert_int_equal(WTERMSIG(st), SIGSEGV);
    char *text = read_text(err);
    /* The last line is the call in flight: the first get_state on
     * crashy's first entry (seed_all backs every state up first; the
     * cpu entry came before it). */
    size_t len = strlen(text);
    assert_true(len > 1 && text[len - 1] == '\n');
    text[len - 1] = '\0';
    const char *last = strrchr(text, '\n');
    last = last ? last + 1 : text;
    print_message("last line: %s\n", last);
    snprintf(want, sizeof want, "rngsnap debug: plugin call: crashy "
             "get_state (backup) on crashy:0/default (%s)",
             so_path("crashy"));
    assert_string_equal(last, want);
    /* Every call before it was logged too, the cpu one included. */
    assert_non_null(strstr(text, "rngsnap debug: plugin call: cpu "
                                 "get_state (backup) on cpu:0/default ("));
    assert_non_null(strstr(text, "plugin call: crashy open ("));
    assert_non_null(strstr(text, "plugin call: crashy stream_open on "
                                 "crashy:1/noise ("));
    /* Below debug: the same crash, not a word of tracing. */
    st = crash_child(ini, NULL, err);
    assert_true(WIFSIGNALED(st));
    assert_string_equal(read_text(err), "");
    st = crash_child(ini, "info", err);
    assert_true(WIFSIGNALED(st));
    assert_null(strstr(read_text(err), "plugin call"));
}

/* ---- near miss of an optional backend's plugin ------------------------- */

static void test_near_miss_warns(void **state)
{
    (void)state;
    char ini[4096], want[8192];
    snprintf(ini, sizeof ini, "%s", th_write("rng.ini", "[rngsnap]\n"
             "plugin_dir = %s:%s\n[backend.cpu]\n[backend.emuext]\n"
             "plugin = rngsnap_emuxet\nrequired = false\n", faults_dir(),
             getenv("RNGSNAP_PLUGIN_BUILD_DIR")));
    snprintf(want, sizeof want, "rngsnap warn: skipping optional backend "
             "emuext ([backend.emuext] at %s:4): plugin 'rngsnap_emuxet' "
             "not found; did you mean 'rngsnap_emuext'? (%s is there and "
             "would be loaded); until then every checkpoint leaves emuext "
             "out\n", pf_path("rng.ini"), so_path("emuext"));
    /* The default level (no RNGSNAP_LOG, no log key) and warn/info: the
     * warning, once per open; at info not a second time as info. */
    static const char *const levels[] = {NULL, "warn", "info"};
    for (size_t i = 0; i < 3; i++) {
        if (levels[i])
            setenv("RNGSNAP_LOG", levels[i], 1);
        pf_stderr_begin();
        rngsnap *ctx = NULL;
        int rc = rngsnap_open(&ctx, ini, 0);
        const char *text = pf_stderr_end();
        assert_int_equal(rc, RNGSNAP_OK);
        assert_int_equal(rngsnap_stream_count(ctx), 1);
        if (levels[i] && strcmp(levels[i], "info") == 0)
            assert_non_null(strstr(text, want));
        else
            assert_string_equal(text, want);
        /* Once: no second warning for the same backend. */
        assert_null(strstr(strstr(text, want) + strlen(want),
                           "rngsnap_emuxet"));
        rngsnap_close(ctx);
        unsetenv("RNGSNAP_LOG");
    }
    /* Turned off explicitly: silent. */
    setenv("RNGSNAP_LOG", "none", 1);
    pf_stderr_begin();
    rngsnap *ctx = th_open_ok(ini, 0);
    assert_string_equal(pf_stderr_end(), "");
    rngsnap_close(ctx);
    unsetenv("RNGSNAP_LOG");
    /* No near miss: no warning at the default level (the reason still
     * says everything in rngsnap backends). */
    snprintf(ini, sizeof ini, "%s", th_write("rng.ini", "[rngsnap]\n"
             "plugin_dir = %s:%s\n[backend.cpu]\n[backend.zzz]\n"
             "required = false\n", faults_dir(),
             getenv("RNGSNAP_PLUGIN_BUILD_DIR")));
    pf_stderr_begin();
    ctx = th_open_ok(ini, 0);
    assert_string_equal(pf_stderr_end(), "");
    rngsnap_close(ctx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_no_emulation_third_party),
        cmocka_unit_test(test_crash_named),
        cmocka_unit_test(test_near_miss_warns),
    };
    return cmocka_run_group_tests(tests, th_group_setup, th_group_teardown);
}
