/*
 * ckpt_test.h - helpers shared by the checkpoint tests: a scratch folder
 * with the test plugins, rng.ini files, snapshots of every live state
 * (through the core's internals), file and folder utilities.
 */
#ifndef CKPT_TEST_H
#define CKPT_TEST_H

#include <stddef.h>
#include <stdint.h>

#include <rngsnap.h>

/* A fresh scratch folder "<TMPDIR>/rngsnap-ckpt-XXXXXX" with a plugins/
 * subfolder holding links to rngsnap_multidev.so, rngsnap_multidev2.so
 * and (when built) rngsnap_cpu.so and rngsnap_cuda.so.  Also clears the environment
 * variables that would change the tests (plugin path, rank). */
const char *ct_setup_dir(void);
/* Remove the scratch folder and everything in it. */
void ct_remove_dir(const char *dir);
/* Nonzero when the cpu plugin was found and linked into plugins/. */
int ct_have_cpu(void);

/* Write <dir>/<name> = "[rngsnap]\nplugin_dir = plugins\n" + body and
 * return its path (static buffer per call: copy it). */
char *ct_write_ini(const char *dir, const char *name, const char *body);

/* Open, failing the test (with the message) unless it works. */
rngsnap *ct_open(const char *ini, unsigned flags);

/* Every live stream state, concatenated in registry order. */
typedef struct ct_snap {
    uint8_t *bytes;
    size_t len;
} ct_snap;
ct_snap ct_take(rngsnap *ctx);
int ct_snap_equal(ct_snap a, ct_snap b);
void ct_snap_free(ct_snap *s);

/* Draw n U32 words from every stream (n per stream) into a new buffer. */
uint32_t *ct_draw_all(rngsnap *ctx, size_t n);

/* Whole file into a new buffer (NULL if absent); write a buffer. */
uint8_t *ct_read(const char *path, size_t *len);
void ct_write(const char *path, const void *buf, size_t len);
/* Number of entries in dir other than . and .., and whether one's name
 * contains "tmp". */
size_t ct_count_entries(const char *dir, int *has_tmp);

/* Fail the test unless rngsnap_errmsg(ctx) contains text. */
#define ct_assert_msg(ctx, text)                                         \
    do {                                                                 \
        if (!strstr(rngsnap_errmsg(ctx), text))                          \
            fail_msg("message \"%s\" lacks \"%s\"", rngsnap_errmsg(ctx), \
                     text);                                              \
    } while (0)

/* Path join into a static ring of buffers. */
const char *ct_path(const char *dir, const char *name);

#endif
