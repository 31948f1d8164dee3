/*
 * helpers.c - see helpers.h.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <ftw.h>

#include <cmocka.h>

#include "helpers.h"

static char th_dir[4096];
static char th_path[4096 + 256];

const char *th_tmpdir(void)
{
    if (!th_dir[0]) {
        const char *t = getenv("TMPDIR");
        snprintf(th_dir, sizeof th_dir, "%s/rngsnap-core-XXXXXX",
                 t && *t ? t : "/tmp");
        if (!mkdtemp(th_dir)) {
            perror("mkdtemp");
            abort();
        }
    }
    return th_dir;
}

static int rm_one(const char *p, const struct stat *sb, int flag,
                  struct FTW *ftw)
{
    (void)sb;
    (void)flag;
    (void)ftw;
    return remove(p);
}

void th_cleanup(void)
{
    if (th_dir[0])
        nftw(th_dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
    th_dir[0] = '\0';
}

const char *th_plugin_dir(void)
{
    const char *d = getenv("RNGSNAP_BROKEN_PLUGIN_DIR");
    if (!d || !*d) {
        fprintf(stderr, "RNGSNAP_BROKEN_PLUGIN_DIR is not set\n");
        abort();
    }
    return d;
}

const char *th_write(const char *name, const char *fmt, ...)
{
    snprintf(th_path, sizeof th_path, "%s/%s", th_tmpdir(), name);
    FILE *f = fopen(th_path, "w");
    if (!f) {
        perror(th_path);
        abort();
    }
    va_list ap;
    va_start(ap, fmt);
    vfprintf(f, fmt, ap);
    va_end(ap);
    fclose(f);
    return th_path;
}

const char *th_ini(const char *body)
{
    return th_write("rng.ini", "[rngsnap]\nplugin_dir = %s\n%s",
                    th_plugin_dir(), body);
}

void th_contains_(const char *msg, const char *file, int line, ...)
{
    va_list ap;
    va_start(ap, line);
    const char *needle;
    while ((needle = va_arg(ap, const char *)) != NULL) {
        if (!msg || !strstr(msg, needle)) {
            va_end(ap);
            fail_msg("%s:%d: message does not contain \"%s\":\n  %s", file,
                     line, needle, msg ? msg : "(NULL)");
        }
    }
    va_end(ap);
}

const char *th_open_fails(const char *ini_path, unsigned flags, int code)
{
    rngsnap *ctx = (rngsnap *)0x1;
    int rc = rngsnap_open(&ctx, ini_path, flags);
    if (rc != code)
        fail_msg("rngsnap_open: expected %s, got %s: %s",
                 rngsnap_error_name(code), rngsnap_error_name(rc),
                 rngsnap_errmsg(NULL));
    assert_null(ctx);
    print_message("  %s: %s\n", rngsnap_error_name(rc), rngsnap_errmsg(NULL));
    return rngsnap_errmsg(NULL);
}

rngsnap *th_open_ok(const char *ini_path, unsigned flags)
{
    rngsnap *ctx = NULL;
    int rc = rngsnap_open(&ctx, ini_path, flags);
    if (rc != RNGSNAP_OK)
        fail_msg("rngsnap_open(%s) failed: %s: %s", ini_path,
                 rngsnap_error_name(rc), rngsnap_errmsg(NULL));
    assert_non_null(ctx);
    return ctx;
}

int th_group_setup(void **state)
{
    (void)state;
    test_clean_env();
    th_tmpdir();
    return 0;
}

int th_group_teardown(void **state)
{
    (void)state;
    th_cleanup();
    return 0;
}
