/*
 * plugin_files.h - what the loader tests need beyond helpers.h: copies of
 * the test plugins in folders with chosen modes and owners, the marker
 * file of the "ctor" plugin, and stderr captured into a string.
 */
#ifndef RNGSNAP_TESTS_CORE_PLUGIN_FILES_H
#define RNGSNAP_TESTS_CORE_PLUGIN_FILES_H

#include <sys/types.h>

/* <tmpdir>/<rel>, the folder resolved as the loader resolves it
 * (realpath); a static buffer of 4 that the calls take in turn. */
const char *pf_path(const char *rel);
/* mkdir <tmpdir>/<rel> and chmod it to mode (whatever the umask). */
const char *pf_mkdir(const char *rel, mode_t mode);
/* Copy rngsnap_<variant>.so of the test plugins to <tmpdir>/<dir>/ with
 * mode; returns the copy's path. */
const char *pf_copy_plugin(const char *variant, const char *dir,
                           mode_t mode);
/* chmod / chown of <tmpdir>/<rel>, failing the test on error. */
void pf_chmod(const char *rel, mode_t mode);
void pf_chown(const char *rel, uid_t uid);
/* "65534 (nobody)", as the loader names an owner. */
const char *pf_owner(uid_t uid);

/* The "ctor" plugin's marker: set RNGSNAP_TEST_CTOR_MARKER to a fresh
 * path (removed); pf_marker_lines() counts the constructor runs since. */
void pf_marker_reset(void);
int pf_marker_lines(void);

/* Capture what the library writes to stderr between begin and end;
 * end returns it (static buffer). */
void pf_stderr_begin(void);
const char *pf_stderr_end(void);

#endif
