/*
 * plugin_check_errors.c - the "errors" check: get_state, set_state and
 * validate_state refuse a length other than state_size; bad state bytes
 * (zeros, ones, random) are either refused with the stream untouched, or
 * accepted as a state the stream then draws from without crashing; and
 * validate_state agrees with set_state, since a load validates every
 * section first and only then sets them.
 */
#include <stdlib.h>
#include <string.h>

#include "plugin_check.h"

static uint64_t mix(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static void bad_lengths(pc *p, rngsnap_stream *s, const uint8_t *good)
{
    const rngsnap_backend *vt = p->b->vt;
    size_t size = vt->state_size;
    size_t lens[] = {0, size - 1, size + 1};
    uint8_t *buf = calloc(1, size + 2);
    if (!buf)
        return;
    for (size_t i = 0; i < 3; i++) {
        size_t len = lens[i];
        if (len == size)
            continue; /* state_size 1: size - 1 is 0 */
        memcpy(buf, good, size);
        pc_doing("calling get_state with %zu bytes (state_size %zu)", len,
                 size);
        if (pc_get(p, s, buf, len) == RNGSNAP_OK)
            pc_fail(p, "get_state accepted a buffer of %zu bytes "
                    "(state_size is %zu): refuse any other length with "
                    "RNGSNAP_E_INVALID", len, size);
        pc_doing("calling set_state with %zu bytes (state_size %zu)", len,
                 size);
        memcpy(buf, good, size);
        if (pc_set(p, s, buf, len) == RNGSNAP_OK)
            pc_fail(p, "set_state accepted %zu bytes (state_size is %zu): "
                    "refuse any other length with RNGSNAP_E_INVALID", len,
                    size);
        if (RNGSNAP_BACKEND_HAS(vt, validate_state)) {
            pc_doing("calling validate_state with %zu bytes", len);
            if (vt->validate_state(p->b->bctx, buf, len) == RNGSNAP_OK)
                pc_fail(p, "validate_state accepted %zu bytes (state_size "
                        "is %zu): refuse any other length", len, size);
        }
        if (p->failures)
            break;
    }
    free(buf);
}

/* One bad blob: refused (nothing changed) or usable. */
static void bad_bytes(pc *p, rngsnap_stream *s, const uint8_t *blob,
                      const char *what)
{
    const rngsnap_backend *vt = p->b->vt;
    size_t size = vt->state_size;
    char l[256];
    pc_label(s, l, sizeof l);
    pc_seed(p, s, 606, 0);
    uint8_t *before = pc_state(p, s);
    if (!before)
        return;
    int valid = -1;
    if (RNGSNAP_BACKEND_HAS(vt, validate_state)) {
        pc_doing("calling validate_state with %s", what);
        valid = vt->validate_state(p->b->bctx, blob, size) == RNGSNAP_OK;
    }
    pc_doing("calling set_state on %s with %s", l, what);
    int rc = pc_set(p, s, blob, size);
    if (valid == 1 && rc != RNGSNAP_OK)
        pc_fail(p, "validate_state accepted %s but set_state refused them: "
                "a load validates every section, then sets them; make the "
                "two agree", what);
    else if (valid == 0 && rc == RNGSNAP_OK)
        pc_fail(p, "validate_state refused %s but set_state accepted them: "
                "make the two agree", what);
    if (rc != RNGSNAP_OK) {
        uint8_t *after = pc_state(p, s);
        if (after && memcmp(before, after, size) != 0)
            pc_fail(p, "set_state refused %s but changed the stream: a "
                    "refused state leaves the stream as it was", what);
        free(after);
    } else {
        /* Accepted: every distribution must still draw. */
        for (int d = 0; d < RNGSNAP_DIST_COUNT; d++) {
            if (!(p->supported & 1u << d))
                continue;
            uint8_t out[9 * 8];
            pc_doing("drawing %s x9 on %s after set_state accepted %s",
                     pc_dist_name(d), l, what);
            (void)pc_gen(p, s, (rngsnap_dist)d, out, 9);
        }
        free(pc_state(p, s));
    }
    free(before);
    pc_doing(NULL);
}

void pc_check_errors(pc *p)
{
    pc_open(p);
    size_t size = p->b->vt->state_size;
    rngsnap_stream *s = p->s[p->ns - 1];
    pc_seed(p, s, 505, 0);
    uint8_t *good = pc_state(p, s), *blob = malloc(size);
    if (!good || !blob)
        goto out;
    bad_lengths(p, s, good);
    memset(blob, 0, size);
    bad_bytes(p, s, blob, "state bytes all 0x00");
    memset(blob, 0xff, size);
    bad_bytes(p, s, blob, "state bytes all 0xff");
    uint64_t x = 42;
    for (int k = 0; k < 4; k++) {
        for (size_t i = 0; i < size; i++)
            blob[i] = (uint8_t)mix(&x);
        char what[64];
        snprintf(what, sizeof what, "random state bytes (set %d)", k + 1);
        bad_bytes(p, s, blob, what);
    }
out:
    free(good);
    free(blob);
}
