/*
 * derive.c - keyed streams: rngsnap_derive and rngsnap_generate_at.
 *
 * A key (k0, k1) of stream s names its own Philox stream: same seed (the
 * Philox key), subsequence = (NOT the top bit of s's subsequence) << 63 |
 * 63 bits of XXH3-64 over ("rngsnap-derive-v1\0", seed, subsequence, k0,
 * k1) as little-endian uint64s, offset 0.  The flipped top bit keeps it
 * off s's own subsequence, so keyed draws never overlap s's draws; it
 * reads only s's seeding, never its offset, so it is a pure function.
 *
 * rngsnap_generate_at borrows s's plugin stream: under s's lock it saves
 * s's state, sets the stream to *at, draws, reads the new position and
 * puts s's state back, so the backend's own engine (and memory) is used
 * and s is left exactly as it was, on success and on failure.
 */
#include <stdio.h>
#include <string.h>

#include <xxhash.h>

#include "context.h"
#include "internal.h"
#include "lock.h"
#include "words.h"

#define RS_DERIVE_TAG "rngsnap-derive-v1" /* hashed with its NUL */

static void put64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static uint64_t get64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = (v << 8) | p[i];
    return v;
}

/* The keyed position of (k0, k1) from s's seeding (seed, subsequence). */
static void derive_at(const rngsnap_philox *pos, uint64_t k0, uint64_t k1,
                      rngsnap_philox *at)
{
    uint8_t msg[sizeof RS_DERIVE_TAG + 32];
    memcpy(msg, RS_DERIVE_TAG, sizeof RS_DERIVE_TAG);
    put64(msg + sizeof RS_DERIVE_TAG, pos->seed);
    put64(msg + sizeof RS_DERIVE_TAG + 8, pos->subsequence);
    put64(msg + sizeof RS_DERIVE_TAG + 16, k0);
    put64(msg + sizeof RS_DERIVE_TAG + 24, k1);
    uint64_t h = XXH3_64bits(msg, sizeof msg) & ~(UINT64_C(1) << 63);
    uint64_t top = ~pos->subsequence & (UINT64_C(1) << 63);
    at->seed = pos->seed;
    at->subsequence = top | h;
    at->offset = 0;
}

/* Keyed streams need the built-in Philox state layout. */
static int need_philox(rngsnap_stream *s, rs_word_id call)
{
    const rngsnap_backend *vt = s->backend->vt;
    if (vt->state_format == RNGSNAP_STATE_PHILOX4X32_10
        && vt->state_size == RNGSNAP_STATE_PHILOX_SIZE
        && RNGSNAP_BACKEND_HAS(vt, reserve))
        return RNGSNAP_OK;
    char label[600], fmt[24];
    return rs_error(s->ctx, RNGSNAP_E_UNAVAILABLE, "%s on %s: backend %s "
                    "(%s) does not keep Philox positions (state format %s, "
                    "%u bytes), so it has no keyed streams",
                    rs_word(s->ctx, call), rs_stream_label(s, label, sizeof label), s->backend->name,
                    s->backend->plugin_path, rs_format_id(vt->state_format,
                    fmt, sizeof fmt), (unsigned)vt->state_size);
}

int rngsnap_derive(rngsnap_stream *s, uint64_t k0, uint64_t k1,
                   rngsnap_philox *at)
{
    int rc = rs_stream_at_args(s, at, RS_W_DERIVE);
    if (!rc)
        rc = rs_stream_gate(s, RS_W_DERIVE);
    if (!rc)
        rc = need_philox(s, RS_W_DERIVE);
    if (!rc) /* keys of an unseeded context would name no run's streams */
        rc = rs_seed_gate(s, RS_W_DERIVE);
    if (rc)
        return rc;
    rngsnap_philox pos;
    if ((rc = rngsnap_stream_position(s, &pos)))
        return rc;
    derive_at(&pos, k0, k1, at);
    return RNGSNAP_OK;
}

/* Under s's lock: s's stream set to *at, n values drawn, *at advanced,
 * s's state put back.  Returns a plugin code; *call names the failing
 * plugin call. */
static int draw_at_locked(rngsnap_stream *s, rngsnap_philox *at,
                          rngsnap_dist dist, void *out, size_t n,
                          const char **call)
{
    const rngsnap_backend *vt = s->backend->vt;
    uint8_t saved[RNGSNAP_STATE_PHILOX_SIZE], want[RNGSNAP_STATE_PHILOX_SIZE];
    RS_TRACE(s->backend, "get_state", s);
    int rc = vt->get_state(s->handle, saved, sizeof saved);
    if (rc) {
        *call = "get_state";
        return rc;
    }
    put64(want, at->seed);
    put64(want + 8, at->subsequence);
    put64(want + 16, at->offset);
    RS_TRACE(s->backend, "set_state", s);
    if ((rc = vt->set_state(s->handle, want, sizeof want))) {
        *call = "set_state";
        goto put_back;
    }
    RS_TRACE(s->backend, "generate", s);
    if ((rc = vt->generate(s->handle, dist, out, n))) {
        *call = "generate";
        goto put_back;
    }
    RS_TRACE(s->backend, "get_state", s);
    if ((rc = vt->get_state(s->handle, want, sizeof want)))
        *call = "get_state";
    else
        at->offset = get64(want + 16);
put_back: /* put s back whatever happened above */
    RS_TRACE(s->backend, "set_state", s);
    int rc2 = vt->set_state(s->handle, saved, sizeof saved);
    if (rc2 && !rc) {
        *call = "set_state (restoring the stream)";
        rc = rc2;
    }
    return rc;
}

int rngsnap_generate_at(rngsnap_stream *s, rngsnap_philox *at,
                        rngsnap_dist dist, void *out, size_t n)
{
    int rc = rs_stream_at_args(s, at, RS_W_GENERATE_AT);
    if (rc)
        return rc;
    char label[600];
    const char *me = rs_word(s->ctx, RS_W_GENERATE_AT);
    if ((unsigned)dist >= RNGSNAP_DIST_COUNT)
        return rs_error(s->ctx, RNGSNAP_E_INVALID, "%s on %s: unknown "
                        "distribution %d", me, rs_stream_label(s, label,
                        sizeof label), (int)dist);
    if (!out && n)
        return rs_error(s->ctx, RNGSNAP_E_INVALID, "%s on %s: out is NULL",
                        me, rs_stream_label(s, label, sizeof label));
    size_t vsize = rngsnap_dist_size(dist);
    if (vsize && n > SIZE_MAX / vsize)
        return rs_error(s->ctx, RNGSNAP_E_INVALID, "%s on %s: n = %zu values "
                        "is too many", me, rs_stream_label(s, label,
                        sizeof label), n);
    rc = rs_stream_gate(s, RS_W_GENERATE_AT);
    if (!rc)
        rc = need_philox(s, RS_W_GENERATE_AT);
    if (rc || n == 0)
        return rc;
    const char *call = "";
    unsigned long mark = rs_error_mark();
    rs_stream_lock(s);
    rc = draw_at_locked(s, at, dist, out, n, &call);
    rs_stream_unlock(s);
    if (!rc)
        return RNGSNAP_OK;
    char what[700];
    snprintf(what, sizeof what, "%s (%s) on %s", me, call,
             rs_stream_label(s, label, sizeof label));
    return rs_plugin_rc(s->ctx, s->backend, rc, what, mark);
}
