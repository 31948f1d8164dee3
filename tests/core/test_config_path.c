/*
 * test_config_path.c - the rngsnap command's choice of rng.ini
 * (tools/config_path.c, compiled in here): RNGSNAP_CONFIG is followed in
 * an ordinary process and ignored, with a note on stderr, in a
 * secure-execution one (getauxval wrapped to say AT_SECURE).
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

#include "cli.h"
#include "helpers.h"
#include "plugin_files.h"
#include "rngsnap_build_config.h"

static int secure;

unsigned long __real_getauxval(unsigned long type);
unsigned long __wrap_getauxval(unsigned long type);
unsigned long __wrap_getauxval(unsigned long type)
{
    return type == AT_SECURE ? (unsigned long)secure
                             : __real_getauxval(type);
}

/* config_path.c's cli_open_failed prints through cli_err (main.c). */
void cli_err(const char *cmd, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "rngsnap %s: ", cmd);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

static void test_config_variable(void **state)
{
    (void)state;
    const char *origin = NULL;
    cli_globals g = {NULL, "rngsnap"};
    setenv("RNGSNAP_CONFIG", "/users/own.ini", 1);

    secure = 0;
    assert_string_equal(cli_config_path(&g, &origin), "/users/own.ini");
    assert_string_equal(origin, "RNGSNAP_CONFIG");

    secure = 1;
    pf_stderr_begin();
    const char *ini = cli_config_path(&g, &origin);
    const char *err = pf_stderr_end();
    assert_string_equal(ini, RNGSNAP_DEFAULT_INI); /* not the build tree's */
    assert_string_equal(origin, "installed default");
    assert_string_equal(err, "rngsnap: ignoring RNGSNAP_CONFIG: this "
                        "process runs with elevated privileges (setuid, "
                        "setgid or file capabilities), where variables "
                        "naming paths are not trusted\n");
    /* -c is the invoker's choice on the command line: it still wins. */
    g.config = "/explicit.ini";
    assert_string_equal(cli_config_path(&g, &origin), "/explicit.ini");
    assert_string_equal(origin, "-c");
    secure = 0;
    unsetenv("RNGSNAP_CONFIG");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_config_variable),
    };
    return cmocka_run_group_tests(tests, th_group_setup, th_group_teardown);
}
