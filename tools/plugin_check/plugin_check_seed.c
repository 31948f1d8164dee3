/*
 * plugin_check_seed.c - the "seeding" check: rngsnap_seed_all with the same
 * seed in two fresh contexts gives every stream the same words; every
 * pair of streams (devices and names) draws different words; another seed
 * gives other words; seed() honours the subsequence.
 */
#include <stdlib.h>
#include <string.h>

#include "plugin_check.h"

#define WORDS 16

/* Open a fresh context, seed_all(seed), draw WORDS u32 from each stream
 * (the public API, as a job does) into w[stream][WORDS]. */
static int words_after_seed_all(pc *p, uint64_t seed, uint32_t **w,
                                size_t *ns)
{
    pc_open(p);
    pc_doing("rngsnap_seed_all(%llu) in a fresh context",
             (unsigned long long)seed);
    if (rngsnap_seed_all(p->ctx, seed) != RNGSNAP_OK) {
        pc_fail(p, "rngsnap_seed_all(%llu) failed: %s",
                (unsigned long long)seed, rngsnap_errmsg(p->ctx));
        return 0;
    }
    *ns = p->ns;
    *w = calloc(p->ns * WORDS, sizeof **w);
    for (size_t i = 0; *w && i < p->ns; i++) {
        int d = p->supported & 1u << RNGSNAP_U32 ? RNGSNAP_U32
                                                  : __builtin_ctz(p->supported);
        uint8_t buf[WORDS * 8];
        if (rngsnap_generate(p->s[i], (rngsnap_dist)d, buf,
                             WORDS * 4 / pc_dist_size(d)) != RNGSNAP_OK) {
            pc_fail(p, "drawing after rngsnap_seed_all failed: %s",
                    rngsnap_errmsg(p->ctx));
            return 0;
        }
        memcpy(*w + i * WORDS, buf, WORDS * 4);
    }
    pc_doing(NULL);
    return *w != NULL;
}

void pc_check_seeding(pc *p)
{
    uint32_t *a = NULL, *b = NULL, *c = NULL;
    size_t na = 0, nb = 0, nc = 0;
    char l1[256], l2[256];
    if (!words_after_seed_all(p, 2026, &a, &na))
        goto out;
    pc_close(p);
    if (!words_after_seed_all(p, 2026, &b, &nb))
        goto out;
    pc_close(p);
    if (!words_after_seed_all(p, 2027, &c, &nc))
        goto out;
    /* p now holds the third context: its labels name the streams. */
    for (size_t i = 0; i < na; i++) {
        pc_label(p->s[i], l1, sizeof l1);
        if (memcmp(a + i * WORDS, b + i * WORDS, WORDS * 4) != 0) {
            pc_fail(p, "rngsnap_seed_all(2026) in two fresh contexts gives "
                    "%s other words: seeding depends on something besides "
                    "(seed, subsequence) (a global, the time, an address)",
                    l1);
            goto out;
        }
        if (memcmp(a + i * WORDS, c + i * WORDS, WORDS * 4) == 0) {
            pc_fail(p, "rngsnap_seed_all(2026) and (2027) give %s the same "
                    "words: seed() ignores its seed", l1);
            goto out;
        }
        for (size_t j = 0; j < i; j++)
            if (memcmp(a + i * WORDS, a + j * WORDS, WORDS * 4) == 0) {
                pc_label(p->s[j], l2, sizeof l2);
                pc_fail(p, "%s and %s draw the same words after "
                        "rngsnap_seed_all(2026): seed() must use both the "
                        "seed and the subsequence the core derives for "
                        "each stream", l2, l1);
                goto out;
            }
    }
    /* seed() itself: the subsequence alone must matter. */
    rngsnap_stream *s = p->s[0];
    uint32_t x[8], y[8];
    pc_label(s, l1, sizeof l1);
    if (p->supported & 1u << RNGSNAP_U32) {
        pc_seed(p, s, 9, 0);
        int r1 = pc_gen(p, s, RNGSNAP_U32, x, 8);
        pc_seed(p, s, 9, 1);
        int r2 = pc_gen(p, s, RNGSNAP_U32, y, 8);
        if (!r1 && !r2 && memcmp(x, y, sizeof x) == 0)
            pc_fail(p, "seed(9, 0) and seed(9, 1) give %s the same u32: "
                    "seed() ignores the subsequence (the core passes the "
                    "rank there)", l1);
    }
out:
    free(a);
    free(b);
    free(c);
}
