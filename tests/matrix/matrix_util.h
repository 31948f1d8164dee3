/*
 * matrix_util.h - what the backend-matrix programs share: the fixed draw
 * sequence over every stream of a registry (recorded so that two processes
 * can be compared), temp folders and ini files.  Public API only.
 */
#ifndef MATRIX_UTIL_H
#define MATRIX_UTIL_H

#include <stddef.h>
#include <stdio.h>

#include <rngsnap.h>

/* A growing byte buffer. */
typedef struct mx_buf {
    unsigned char *p;
    size_t len, cap;
} mx_buf;

void mx_put(mx_buf *b, const void *data, size_t len);
void mx_free(mx_buf *b);

/* Draw round r on every stream in registry order: every dist with odd
 * counts, then a reserve of an odd number of words, so that later draws
 * start mid-block and at odd offsets.  A stream whose output lies in device
 * memory (a real cuda GPU) cannot be read here: it advances by reserve and
 * only its positions are recorded (tests/gpu checks its values).  Appends
 * to rec one record per stream: "backend/device/name", then the values
 * and positions.  Returns RNGSNAP_OK or the failing call's code (message
 * printed). */
int mx_draw_round(rngsnap *ctx, int r, mx_buf *rec);

/* Compare two recordings; 0 if equal, else prints the first stream that
 * differs and returns 1. */
int mx_compare(const mx_buf *want, const mx_buf *got);

int mx_write_file(const char *path, const void *data, size_t len);
int mx_read_file(const char *path, mx_buf *out);

/* mkdtemp under $TMPDIR (or /tmp); exits on failure. */
void mx_tempdir(char *out, size_t len, const char *tag);
/* Remove the files a test wrote and the folder (best effort). */
void mx_rmdir(const char *dir);

/* The build tree's plugin folder (RNGSNAP_PLUGIN_BUILD_DIR). */
const char *mx_plugin_dir(void);

#define MX_CHECK(cond, ...)                                            \
    do {                                                               \
        if (!(cond)) {                                                 \
            fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);       \
            fprintf(stderr, __VA_ARGS__);                              \
            fprintf(stderr, "\n");                                     \
            return 1;                                                  \
        }                                                              \
    } while (0)

#endif
