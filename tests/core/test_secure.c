/*
 * test_secure.c - in a secure-execution process (getauxval(AT_SECURE)
 * != 0: setuid, setgid, file capabilities) the RNGSNAP_* variables that
 * name a path are ignored, and that is logged: a user who runs a setuid
 * program must not make it load their plugin or read their rng.ini.
 *
 * getauxval is wrapped (-Wl,--wrap=getauxval, this program links the
 * static core) so that the test decides what AT_SECURE says.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>

#include <cmocka.h>

#include <rngsnap.h>

#include "helpers.h"
#include "plugin_files.h"
#include "rngsnap_build_config.h"

static int secure; /* what AT_SECURE says */

unsigned long __real_getauxval(unsigned long type);
unsigned long __wrap_getauxval(unsigned long type);
unsigned long __wrap_getauxval(unsigned long type)
{
    return type == AT_SECURE ? (unsigned long)secure
                             : __real_getauxval(type);
}

/* plugin_dir leads nowhere; RNGSNAP_PLUGIN_PATH leads to the plugins. */
static const char *ini_without_plugins(void)
{
    return th_write("rng.ini", "[rngsnap]\nplugin_dir = /nonexistent\n"
                    "[backend.good]\n");
}

static void test_plugin_path_ignored(void **state)
{
    (void)state;
    setenv("RNGSNAP_PLUGIN_PATH", th_plugin_dir(), 1);
    setenv("RNGSNAP_LOG", "warn", 1);

    secure = 0; /* an ordinary process follows the variable */
    rngsnap_close(th_open_ok(ini_without_plugins(), 0));

    secure = 1;
    char want[8192];
    snprintf(want, sizeof want, "plugin 'rngsnap_good' for [backend.good] "
             "(%s:3) not found; tried (folders from plugin_dir): "
             "/nonexistent/rngsnap_good.so; folder /nonexistent does not "
             "exist; to search other folders, "
             "change plugin_dir in [rngsnap] (%s:2)", pf_path("rng.ini"),
             pf_path("rng.ini"));
    const char *ini = ini_without_plugins();
    pf_stderr_begin();
    rngsnap *ctx = NULL;
    int rc = rngsnap_open(&ctx, ini, 0);
    const char *log = pf_stderr_end();
    secure = 0;
    unsetenv("RNGSNAP_PLUGIN_PATH");
    unsetenv("RNGSNAP_LOG");
    assert_int_equal(rc, RNGSNAP_E_PLUGIN);
    assert_string_equal(rngsnap_errmsg(NULL), want);
    assert_string_equal(log, "rngsnap warn: ignoring RNGSNAP_PLUGIN_PATH: "
                        "this process runs with elevated privileges "
                        "(setuid, setgid or file capabilities), where "
                        "variables naming paths are not trusted\n");
}

static void test_config_ignored(void **state)
{
    (void)state;
    char ini[4096];
    snprintf(ini, sizeof ini, "%s",
             th_ini("[backend.good]\n")); /* a usable rng.ini */
    setenv("RNGSNAP_CONFIG", ini, 1);
    setenv("RNGSNAP_LOG", "warn", 1);

    secure = 0;
    rngsnap_close(th_open_ok(NULL, 0));

    secure = 1; /* the installed default instead, which is not there */
    pf_stderr_begin();
    rngsnap *ctx = NULL;
    int rc = rngsnap_open(&ctx, NULL, 0);
    const char *log = pf_stderr_end();
    secure = 0;
    unsetenv("RNGSNAP_CONFIG");
    unsetenv("RNGSNAP_LOG");
    if (rc == RNGSNAP_OK)
        rngsnap_close(ctx);
    th_contains(rngsnap_errmsg(NULL), RNGSNAP_DEFAULT_INI);
    assert_true(strstr(rngsnap_errmsg(NULL), ini) == NULL);
    th_contains(log, "rngsnap warn: ignoring RNGSNAP_CONFIG: this process "
                "runs with elevated privileges");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_plugin_path_ignored),
        cmocka_unit_test(test_config_ignored),
    };
    return cmocka_run_group_tests(tests, th_group_setup, th_group_teardown);
}
