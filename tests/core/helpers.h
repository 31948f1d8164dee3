/*
 * helpers.h - shared bits of the tests/core programs: a temp folder per
 * program, ini files written into it, and the message checks.
 */
#ifndef RNGSNAP_TESTS_CORE_HELPERS_H
#define RNGSNAP_TESTS_CORE_HELPERS_H

#include "clean_env.h" /* test_clean_env() */
#include <rngsnap.h>

/* A fresh folder under $TMPDIR (or /tmp); removed by th_cleanup. */
const char *th_tmpdir(void);
void th_cleanup(void);
/* cmocka group setup/teardown: clean environment and a fresh folder;
 * remove it afterwards. */
int th_group_setup(void **state);
int th_group_teardown(void **state);
/* Folder of the tests/plugins/broken plugins (from the environment). */
const char *th_plugin_dir(void);
/* Write text (printf format) to <tmpdir>/<name>; returns the full path
 * (static buffer, valid until the next call). */
const char *th_write(const char *name, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* "[rngsnap]\nplugin_dir = <broken dir>\n" followed by body, written to
 * rng.ini; returns the path. */
const char *th_ini(const char *body);
/* Fail the test unless msg contains every NULL-terminated needle. */
void th_contains_(const char *msg, const char *file, int line, ...);
#define th_contains(msg, ...) \
    th_contains_((msg), __FILE__, __LINE__, __VA_ARGS__, (const char *)NULL)
/* Open ini_path expecting failure `code`; check *ctx is NULL and the
 * per-thread message; returns the message. */
const char *th_open_fails(const char *ini_path, unsigned flags, int code);
/* Open expecting success. */
rngsnap *th_open_ok(const char *ini_path, unsigned flags);

#endif
