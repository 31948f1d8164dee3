/*
 * rk_test.h - helpers of the multi-rank tests: a scratch folder with the
 * test plugins, rng.ini files, per-rank contexts and app states, and
 * snapshots of every live state (through the core's internals).
 */
#ifndef RK_TEST_H
#define RK_TEST_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <rngsnap.h>

/* Inside a rank's body: count a failed expectation and go on (a rank
 * that stopped early would leave the others waiting in a collective). */
#define EXPECT(cond)                                                       \
    do {                                                                   \
        if (!(cond)) {                                                     \
            fprintf(stderr, "rank %d: %s:%d: expected %s\n", rank,        \
                    __FILE__, __LINE__, #cond);                            \
            bad++;                                                         \
        }                                                                  \
    } while (0)
#define EXPECT_RC(got, want, ctx)                                          \
    do {                                                                   \
        int got_ = (got);                                                  \
        if (got_ != (want)) {                                              \
            fprintf(stderr, "rank %d: %s:%d: %s gave %s, expected %s: %s\n", \
                    rank, __FILE__, __LINE__, #got,                        \
                    rngsnap_error_name(got_), rngsnap_error_name(want),    \
                    rngsnap_errmsg(ctx));                                  \
            bad++;                                                         \
        }                                                                  \
    } while (0)
/* The message on ctx contains s. */
#define EXPECT_MSG(ctx, s)                                                 \
    do {                                                                   \
        if (!strstr(rngsnap_errmsg(ctx), (s))) {                           \
            fprintf(stderr, "rank %d: %s:%d: message lacks \"%s\": %s\n",  \
                    rank, __FILE__, __LINE__, (s), rngsnap_errmsg(ctx));   \
            bad++;                                                         \
        }                                                                  \
    } while (0)

/* Scratch folder with plugins/ (multidev, multidev2, cpu links). */
const char *rk_setup(void);
/* dir/name in a ring of static buffers. */
const char *rk_path(const char *dir, const char *name);
/* Write dir/name = "[rngsnap]\nplugin_dir = plugins\n" + body; returns
 * a path in a ring of static buffers. */
const char *rk_ini(const char *dir, const char *name, const char *body);

/* An app state of 16 bytes whose callbacks can be told to fail. */
typedef struct rk_app {
    uint8_t bytes[16];
    int fail_load, fail_save;
} rk_app;
int rk_register(rngsnap *ctx, const char *name, rk_app *a);

/* Open ini as rank/size (flags as rngsnap_open); NULL on failure, with
 * the message on stderr. */
rngsnap *rk_open(const char *ini, int rank, int size, unsigned flags);

/* Every live stream state, concatenated in registry order (malloc). */
uint8_t *rk_take(rngsnap *ctx, size_t *len);
/* n U32 words from every stream, in registry order (malloc). */
uint32_t *rk_draw(rngsnap *ctx, size_t n);

/* Whole file (malloc, NULL if absent); write; count entries of dir. */
uint8_t *rk_read(const char *path, size_t *len);
void rk_write(const char *path, const void *buf, size_t len);
size_t rk_count(const char *dir);

#endif
