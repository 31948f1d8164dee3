/*
 * plugin_check_engine.c - part of the "state" check for a backend whose
 * state_format is PHX1: every distribution it draws gives the engine's
 * bits (rngsnap_philox_generate) from the position its state holds, and
 * moves that position by the engine's word count.  A PHX1 position is read
 * by every Philox backend, by reserve (the caller's own kernels) and by
 * `rngsnap diff` ("N words apart"), so the same position must mean the
 * same numbers everywhere.
 */
#include <stdlib.h>
#include <string.h>

#include "plugin_check.h"

/* Counts drawn from a mid-block position: one value, an odd count, more
 * than one Philox block of every distribution. */
static const size_t counts[] = {1, 7, 64};
#define NCOUNTS (sizeof counts / sizeof counts[0])

static uint64_t le64(const uint8_t *b)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = v << 8 | b[i];
    return v;
}

/* The position in s's state (a PHX1 state: 24 bytes, checked before). */
static int position(pc *p, rngsnap_stream *s, rngsnap_philox *at)
{
    uint8_t st[RNGSNAP_STATE_PHILOX_SIZE];
    if (pc_get(p, s, st, sizeof st))
        return 0;
    at->seed = le64(st);
    at->subsequence = le64(st + 8);
    at->offset = le64(st + 16);
    return 1;
}

static void hex_value(char *buf, size_t len, const void *v, size_t size)
{
    if (size == 4) {
        uint32_t x;
        memcpy(&x, v, 4);
        snprintf(buf, len, "0x%08x", x);
    } else {
        uint64_t x;
        memcpy(&x, v, 8);
        snprintf(buf, len, "0x%016llx", (unsigned long long)x);
    }
}

/* One distribution, one count, from (seed, 5, offset 3). Returns 0 after a
 * finding. */
static int one(pc *p, rngsnap_stream *s, int d, size_t n)
{
    char l[256], got[24], want[24];
    size_t vs = pc_dist_size(d);
    pc_label(s, l, sizeof l);
    pc_seed(p, s, 0x5eed0f5eedull, 5);
    uint32_t skip[3];
    if (pc_gen(p, s, RNGSNAP_U32, skip, 3))
        return 1; /* the dists check reports a failed draw */
    rngsnap_philox from, at;
    if (!position(p, s, &from))
        return 0;
    at = from;
    void *ref = calloc(n, vs);
    if (!ref) {
        pc_fail(p, "out of memory");
        return 0;
    }
    if (rngsnap_philox_generate(&at, (rngsnap_dist)d, ref, n) != RNGSNAP_OK) {
        free(ref); /* a distribution the engine does not know: not ours */
        return 1;
    }
    void *out = pc_draw(p, s, d, n, "from a PHX1 position");
    int ok = out != NULL;
    for (size_t i = 0; ok && i < n; i++)
        if (memcmp((char *)out + i * vs, (char *)ref + i * vs, vs) != 0) {
            hex_value(got, sizeof got, (char *)out + i * vs, vs);
            hex_value(want, sizeof want, (char *)ref + i * vs, vs);
            pc_fail(p, "state_format is \"PHX1\" but %s draws other %s than "
                    "the engine from the same position: value %zu of %zu "
                    "from (seed 0x%llx, subsequence %llu, offset %llu) is "
                    "%s where rngsnap_philox_generate gives %s; draw through "
                    "host->philox_generate (docs/plugin-guide.md), or give "
                    "the state a format id of its own",
                    l, pc_dist_name(d), i, n,
                    (unsigned long long)from.seed,
                    (unsigned long long)from.subsequence,
                    (unsigned long long)from.offset, got, want);
            ok = 0;
        }
    rngsnap_philox after;
    if (ok && position(p, s, &after) && after.offset != at.offset) {
        pc_fail(p, "state_format is \"PHX1\" but %zu %s on %s moved the "
                "offset from %llu to %llu, where the engine uses %llu words: "
                "advance the position by the words the engine uses "
                "(rngsnap_dist_words)", n, pc_dist_name(d), l,
                (unsigned long long)from.offset,
                (unsigned long long)after.offset,
                (unsigned long long)(at.offset - from.offset));
        ok = 0;
    }
    free(out);
    free(ref);
    return ok;
}

void pc_check_engine_words(pc *p, rngsnap_stream *s)
{
    if (!(p->supported & 1u << RNGSNAP_U32))
        return; /* the dists check names a PHX1 backend without u32 */
    for (int d = 0; d < 32; d++) {
        if (!(p->supported & 1u << d))
            continue;
        for (size_t k = 0; k < NCOUNTS; k++)
            if (!one(p, s, d, counts[k]))
                return; /* one finding per backend is enough to act on */
    }
}
