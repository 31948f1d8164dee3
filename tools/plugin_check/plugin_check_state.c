/*
 * plugin_check_state.c - the "state" check: state format id and size;
 * get_state writes exactly state_size bytes, the same ones every time;
 * set_state of get_state's bytes is a no-op; the state changes when the
 * stream draws (it holds the position) and with the seed; a backend that
 * says PHX1 really keeps (seed, subsequence, offset) there, and draws the
 * engine's values from it (plugin_check_engine.c).
 */
#include <stdlib.h>
#include <string.h>

#include "plugin_check.h"

#define GUARD 64

static uint64_t le64(const uint8_t *b)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = v << 8 | b[i];
    return v;
}

/* get_state into a buffer prefilled with fill; checks the guard bytes. */
static int get_filled(pc *p, rngsnap_stream *s, uint8_t *buf, uint8_t fill)
{
    size_t size = p->b->vt->state_size;
    memset(buf, fill, size + GUARD);
    int rc = pc_get(p, s, buf, size);
    if (rc) {
        const char *m = pc_plugin_msg(p);
        pc_fail(p, "get_state failed: %s%s%s", rngsnap_error_name(rc),
                m ? ": " : "", m ? m : "");
        return 0;
    }
    for (size_t i = size; i < size + GUARD; i++)
        if (buf[i] != fill) {
            pc_fail(p, "get_state wrote past the %zu bytes of state_size "
                    "(byte %zu changed): write exactly state_size bytes",
                    size, i);
            return 0;
        }
    return 1;
}

static void philox_layout(pc *p, rngsnap_stream *s)
{
    size_t size = p->b->vt->state_size;
    if (size != RNGSNAP_STATE_PHILOX_SIZE) {
        pc_fail(p, "state_format is \"PHX1\" (RNGSNAP_STATE_PHILOX4X32_10) "
                "but state_size is %zu, not 24: use your own format id, or "
                "keep the three little-endian uint64 (seed, subsequence, "
                "offset)", size);
        return;
    }
    uint8_t st[24];
    pc_seed(p, s, 0x1234567890abcdefull, 3);
    if (pc_get(p, s, st, 24))
        return;
    uint32_t w[5];
    int drew = pc_gen(p, s, RNGSNAP_U32, w, 5) == RNGSNAP_OK;
    uint8_t st2[24];
    if (pc_get(p, s, st2, 24))
        return;
    if (le64(st) != 0x1234567890abcdefull || le64(st + 8) != 3
        || le64(st + 16) != 0 || (drew && le64(st2 + 16) != 5)) {
        pc_fail(p, "state_format is \"PHX1\" but the state does not read "
                "(seed, subsequence, offset): after seed(0x1234567890abcdef, "
                "3) it reads (0x%llx, %llu, %llu), and after 5 u32 the "
                "offset is %llu, not 5: a PHX1 checkpoint is loaded by "
                "every Philox backend, so use your own format id",
                (unsigned long long)le64(st), (unsigned long long)le64(st + 8),
                (unsigned long long)le64(st + 16),
                (unsigned long long)le64(st2 + 16));
        return;
    }
    if (RNGSNAP_BACKEND_HAS(p->b->vt, reserve)) {
        rngsnap_philox at;
        if (p->b->vt->reserve(s->handle, 0, &at) == RNGSNAP_OK
            && (at.seed != le64(st2) || at.subsequence != le64(st2 + 8)
                || at.offset != le64(st2 + 16)))
            pc_fail(p, "reserve(0) reports (0x%llx, %llu, %llu) but the "
                    "state reads (0x%llx, %llu, %llu): both must give the "
                    "stream's position",
                    (unsigned long long)at.seed,
                    (unsigned long long)at.subsequence,
                    (unsigned long long)at.offset,
                    (unsigned long long)le64(st2),
                    (unsigned long long)le64(st2 + 8),
                    (unsigned long long)le64(st2 + 16));
    }
    pc_check_engine_words(p, s);
}

void pc_check_state(pc *p)
{
    pc_open(p);
    const rngsnap_backend *vt = p->b->vt;
    size_t size = vt->state_size;
    if (vt->state_format == 0)
        pc_fail(p, "state_format is 0: give the state layout an id of its "
                "own (four ASCII characters, e.g. 0x314e494d = \"MIN1\")");
    uint8_t *a = malloc(size + GUARD), *b = malloc(size + GUARD);
    if (!a || !b) {
        pc_fail(p, "out of memory");
        goto out;
    }
    for (size_t i = 0; i < p->ns; i++) {
        rngsnap_stream *s = p->s[i];
        char l[256];
        pc_label(s, l, sizeof l);
        pc_seed(p, s, 77, 1);
        if (!get_filled(p, s, a, 0x00) || !get_filled(p, s, b, 0xff))
            goto out;
        for (size_t k = 0; k < size; k++)
            if (a[k] != b[k]) {
                pc_fail(p, "get_state leaves byte %zu of the %zu-byte state "
                        "unwritten (it kept what the buffer held): fill all "
                        "state_size bytes, or make state_size smaller", k,
                        size);
                goto out;
            }
        if (pc_set(p, s, a, size) != RNGSNAP_OK
            || !get_filled(p, s, b, 0x5a) || memcmp(a, b, size) != 0) {
            pc_fail(p, "set_state of the bytes get_state gave did not give "
                    "them back on %s: set_state must restore exactly what "
                    "get_state saved", l);
            goto out;
        }
        /* The position: the state after drawing must differ. */
        int d = p->supported & 1u << RNGSNAP_U32 ? RNGSNAP_U32
                                                  : __builtin_ctz(p->supported);
        void *v = pc_draw(p, s, d, 5, "after seed");
        free(v);
        if (!v || !get_filled(p, s, b, 0x00))
            goto out;
        if (memcmp(a, b, size) == 0) {
            pc_fail(p, "the state does not change when the stream draws: "
                    "get_state gave the same bytes before and after "
                    "generate(%s, 5) on %s, so the position (the counter or "
                    "offset) is not in the state; put it into the state",
                    pc_dist_name(d), l);
            goto out;
        }
        pc_seed(p, s, 78, 1);
        if (!get_filled(p, s, b, 0x00))
            goto out;
        if (memcmp(a, b, size) == 0) {
            pc_fail(p, "seed(77, 1) and seed(78, 1) give the same state "
                    "bytes on %s: the seed is not in the state", l);
            goto out;
        }
    }
    if (vt->state_format == RNGSNAP_STATE_PHILOX4X32_10)
        philox_layout(p, p->s[0]);
out:
    free(a);
    free(b);
}
