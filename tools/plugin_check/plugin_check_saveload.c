/*
 * plugin_check_saveload.c - the "save-load" check: the path a job takes,
 * through the public API.  Every stream of every device draws a different
 * prefix (odd counts: cached values pending), rngsnap_save_mem takes the
 * checkpoint, and what each stream draws next is compared with what it
 * draws after rngsnap_load_mem, into the same context after more draws
 * and into a fresh context seeded otherwise.
 */
#include <stdlib.h>
#include <string.h>

#include "plugin_check.h"

#define TAIL 5 /* values of each distribution drawn after the save */

/* Stream i's prefix: distributions drawn with odd counts, from i on. */
static int prefix(pc *p, size_t i)
{
    uint8_t buf[16 * 8];
    int drawn = 0;
    for (int k = 0; k < RNGSNAP_DIST_COUNT; k++) {
        int d = (int)((i + (size_t)k) % RNGSNAP_DIST_COUNT);
        if (!(p->supported & 1u << d) || (k % 3 == 2))
            continue;
        if (rngsnap_generate(p->s[i], (rngsnap_dist)d, buf, 1 + 2 * (i % 3))
            != RNGSNAP_OK) {
            pc_fail(p, "drawing before the save failed: %s",
                    rngsnap_errmsg(p->ctx));
            return 0;
        }
        drawn++;
    }
    return drawn >= 0;
}

/* What every stream draws after the save point: TAIL of each dist. */
static uint8_t *tail(pc *p, size_t *len)
{
    size_t per = 0;
    for (int d = 0; d < RNGSNAP_DIST_COUNT; d++)
        if (p->supported & 1u << d)
            per += TAIL * pc_dist_size(d);
    uint8_t *out = calloc(p->ns, per), *o = out;
    for (size_t i = 0; out && i < p->ns; i++)
        for (int d = 0; d < RNGSNAP_DIST_COUNT; d++) {
            if (!(p->supported & 1u << d))
                continue;
            if (rngsnap_generate(p->s[i], (rngsnap_dist)d, o, TAIL)) {
                pc_fail(p, "drawing after the save point failed: %s",
                        rngsnap_errmsg(p->ctx));
                free(out);
                return NULL;
            }
            o += TAIL * pc_dist_size(d);
        }
    *len = per;
    return out;
}

/* The first stream whose tail differs, as a finding. */
static void compare(pc *p, const uint8_t *want, const uint8_t *got,
                    size_t per, const char *how)
{
    for (size_t i = 0; i < p->ns; i++) {
        const uint8_t *w = want + i * per, *g = got + i * per;
        int d = 0;
        for (; d < RNGSNAP_DIST_COUNT; d++) {
            if (!(p->supported & 1u << d))
                continue;
            size_t bytes = TAIL * pc_dist_size(d);
            if (memcmp(w, g, bytes) != 0) {
                char l[256];
                pc_fail(p, "after rngsnap_load_mem %s, %s draws other %s "
                        "than the uninterrupted stream: the checkpoint "
                        "does not hold everything that decides the next "
                        "values", how, pc_label(p->s[i], l, sizeof l),
                        pc_dist_name(d));
                return;
            }
            w += bytes;
            g += bytes;
        }
    }
}

void pc_check_saveload(pc *p)
{
    void *ckpt = NULL;
    size_t size = 0, per = 0;
    uint8_t *want = NULL, *got = NULL;
    pc_open(p);
    pc_doing("seeding, drawing and saving with rngsnap_save_mem");
    if (rngsnap_seed_all(p->ctx, 31337) != RNGSNAP_OK) {
        pc_fail(p, "rngsnap_seed_all failed: %s", rngsnap_errmsg(p->ctx));
        goto out;
    }
    for (size_t i = 0; i < p->ns; i++)
        if (!prefix(p, i))
            goto out;
    if (rngsnap_save_mem(p->ctx, &ckpt, &size, 0) != RNGSNAP_OK) {
        pc_fail(p, "rngsnap_save_mem failed: %s", rngsnap_errmsg(p->ctx));
        goto out;
    }
    pc_doing("drawing after the save point (the uninterrupted run)");
    if (!(want = tail(p, &per)))
        goto out;
    /* The same context, after it drew more. */
    pc_doing("loading into the same context (rngsnap_load_mem)");
    free(tail(p, &per));
    if (rngsnap_load_mem(p->ctx, ckpt, size, 0) != RNGSNAP_OK) {
        pc_fail(p, "rngsnap_load_mem of the checkpoint just saved failed: "
                "%s", rngsnap_errmsg(p->ctx));
        goto out;
    }
    pc_doing("drawing after the load into the same context");
    if (!(got = tail(p, &per)))
        goto out;
    compare(p, want, got, per, "into the context that saved it");
    free(got);
    got = NULL;
    /* A fresh context: another process resuming. */
    pc_close(p);
    pc_open(p);
    pc_doing("loading into a fresh context (rngsnap_load_mem)");
    if (rngsnap_seed_all(p->ctx, 4) != RNGSNAP_OK) {
        pc_fail(p, "rngsnap_seed_all failed: %s", rngsnap_errmsg(p->ctx));
        goto out;
    }
    for (size_t i = 0; i < p->ns; i++)
        if (!prefix(p, p->ns - 1 - i))
            goto out;
    if (rngsnap_load_mem(p->ctx, ckpt, size, 0) != RNGSNAP_OK) {
        pc_fail(p, "rngsnap_load_mem into a fresh context failed: %s",
                rngsnap_errmsg(p->ctx));
        goto out;
    }
    pc_doing("drawing after the load into a fresh context");
    if (!(got = tail(p, &per)))
        goto out;
    compare(p, want, got, per, "into a fresh context");
out:
    pc_doing(NULL);
    rngsnap_free(ckpt);
    free(want);
    free(got);
}
