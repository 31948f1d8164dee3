/*
 * registry.c - the one list of (backend, device, stream) entries, in its
 * fixed order (backends in rng.ini order, devices 0..n-1, streams in the
 * listed order), and everything that walks or draws from it: lookup,
 * generate/reserve behind the resume, seed and fork gates, and backend
 * listing.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "context.h"
#include "fork.h"
#include "internal.h"
#include "lock.h"
#include "words.h"

/* ---- distributions (data, not a chain of ifs) ---------------------------- */

static const struct {
    const char *name;
    size_t size;
} rs_dists[RNGSNAP_DIST_COUNT] = {
    [RNGSNAP_U32] = {"u32", sizeof(uint32_t)},
    [RNGSNAP_U64] = {"u64", sizeof(uint64_t)},
    [RNGSNAP_F32] = {"f32", sizeof(float)},
    [RNGSNAP_F64] = {"f64", sizeof(double)},
    [RNGSNAP_NORMAL_F32] = {"normal_f32", sizeof(float)},
    [RNGSNAP_NORMAL_F64] = {"normal_f64", sizeof(double)},
    [RNGSNAP_CURAND_UNIFORM_F32] = {"curand_uniform_f32", sizeof(float)},
    [RNGSNAP_CURAND_UNIFORM_F64] = {"curand_uniform_f64", sizeof(double)},
    [RNGSNAP_CURAND_NORMAL_F32] = {"curand_normal_f32", sizeof(float)},
    [RNGSNAP_CURAND_NORMAL_F64] = {"curand_normal_f64", sizeof(double)},
};

size_t rngsnap_dist_size(rngsnap_dist dist)
{
    return (unsigned)dist < RNGSNAP_DIST_COUNT ? rs_dists[dist].size : 0;
}

const char *rngsnap_dist_name(rngsnap_dist dist)
{
    return (unsigned)dist < RNGSNAP_DIST_COUNT ? rs_dists[dist].name
                                               : "unknown";
}

/* ---- build / free ------------------------------------------------------ */

int rs_plugin_rc(struct rngsnap *ctx, rs_backend *b, int rc,
                 const char *call, unsigned long mark)
{
    if (rc <= RNGSNAP_OK || rc > RNGSNAP_E_BACKEND)
        rc = RNGSNAP_E_BACKEND;
    if (!rs_error_since(ctx, mark))
        rs_error(ctx, rc, "backend %s (%s): %s failed: %s", b->name,
                 b->plugin_path ? b->plugin_path : b->plugin, call,
                 rngsnap_strerror(rc));
    return rc;
}

int rs_registry_build(struct rngsnap *ctx)
{
    size_t total = 0;
    for (size_t i = 0; i < ctx->nbackends; i++) {
        const rs_backend *b = &ctx->backends[i];
        if (b->available)
            total += (size_t)b->device_count * b->nstreams;
    }
    if (total == 0)
        return RNGSNAP_OK;
    ctx->streams = calloc(total, sizeof *ctx->streams);
    if (!ctx->streams)
        return rs_error(ctx, RNGSNAP_E_NOMEM, "out of memory");
    for (size_t i = 0; i < ctx->nbackends; i++) {
        rs_backend *b = &ctx->backends[i];
        if (!b->available)
            continue;
        for (int d = 0; d < b->device_count; d++) {
            for (size_t k = 0; k < b->nstreams; k++) {
                struct rngsnap_stream *s = &ctx->streams[ctx->nstreams];
                s->ctx = ctx;
                s->backend = b;
                s->device = d;
                s->name = b->streams[k];
                unsigned long mark = rs_error_mark();
                RS_TRACE(b, "stream_open", s);
                int rc = b->vt->stream_open(b->bctx, d, s->name, &s->handle);
                if (rc) {
                    char call[600];
                    snprintf(call, sizeof call, "stream_open of %s:%d/%s",
                             b->name, d, s->name);
                    return rs_plugin_rc(ctx, b, rc, call, mark);
                }
                ctx->nstreams++;
            }
        }
    }
    return RNGSNAP_OK;
}

void rs_registry_free(struct rngsnap *ctx)
{
    for (size_t i = ctx->nstreams; i-- > 0;) {
        struct rngsnap_stream *s = &ctx->streams[i];
        if (s->handle) {
            RS_TRACE(s->backend, "stream_close", s);
            s->backend->vt->stream_close(s->handle);
        }
    }
    free(ctx->streams);
    ctx->streams = NULL;
    ctx->nstreams = 0;
}

int rs_check_usable(struct rngsnap *ctx)
{
    if (ctx->usable)
        return RNGSNAP_OK;
    for (size_t i = 0; i < ctx->nbackends; i++) {
        const rs_backend *b = &ctx->backends[i];
        if (b->required && !b->available)
            /* The reason says which: no device, or a plugin that could
             * not be loaded (a probe-only open goes on past both). */
            return rs_error(ctx, RNGSNAP_E_UNAVAILABLE, "required backend "
                            "%s is unavailable: %s; this context was opened "
                            "with RNGSNAP_PROBE_ONLY and can only list",
                            b->name, b->reason ? b->reason : "no reason");
    }
    return RNGSNAP_OK;
}

/* ---- lookup ------------------------------------------------------------ */

size_t rngsnap_stream_count(const rngsnap *ctx)
{
    return ctx ? ctx->nstreams : 0;
}

rngsnap_stream *rngsnap_stream_at(rngsnap *ctx, size_t i)
{
    return ctx && i < ctx->nstreams ? &ctx->streams[i] : NULL;
}

const char *rngsnap_stream_backend(const rngsnap_stream *s)
{
    return s ? s->backend->name : NULL;
}

int rngsnap_stream_device(const rngsnap_stream *s)
{
    return s ? s->device : -1;
}

const char *rngsnap_stream_name(const rngsnap_stream *s)
{
    return s ? s->name : NULL;
}

rngsnap_memory rngsnap_stream_memory(const rngsnap_stream *s)
{
    if (!s || !RNGSNAP_BACKEND_HAS(s->backend->vt, memory))
        return RNGSNAP_MEMORY_HOST;
    RS_TRACE(s->backend, "memory", s);
    return s->backend->vt->memory(s->handle);
}

/* Append "a, b, c" (the names of list) to buf. */
static void append_names(char *buf, size_t len, char *const *list, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        size_t used = strlen(buf);
        snprintf(buf + used, len - used, "%s%s", i ? ", " : "", list[i]);
    }
}

int rngsnap_stream_find(rngsnap *ctx, const char *backend, int device,
                        const char *name, rngsnap_stream **out)
{
    if (out)
        *out = NULL;
    if (!ctx)
        return rs_error(NULL, RNGSNAP_E_INVALID,
                        "rngsnap_stream_find: ctx is NULL");
    if (!backend || !name || !out)
        return rs_error(ctx, RNGSNAP_E_INVALID, "rngsnap_stream_find: "
                        "needs backend, name and out");
    if (device < 0)
        return rs_error(ctx, RNGSNAP_E_INVALID, "%s: device must be >= 0 "
                        "(got device %d)", rs_word(ctx, RS_W_STREAM_FIND),
                        device);
    for (size_t i = 0; i < ctx->nstreams; i++) {
        struct rngsnap_stream *s = &ctx->streams[i];
        if (s->device == device && strcmp(s->backend->name, backend) == 0
            && strcmp(s->name, name) == 0) {
            *out = s;
            return RNGSNAP_OK;
        }
    }
    /* A miss: say what exists instead. */
    char why[RS_ERRMSG_MAX];
    why[0] = '\0';
    const rs_backend *b = NULL;
    for (size_t i = 0; i < ctx->nbackends; i++)
        if (strcmp(ctx->backends[i].name, backend) == 0)
            b = &ctx->backends[i];
    if (!b) {
        snprintf(why, sizeof why, "no backend '%s' is configured; "
                 "configured: ", backend);
        for (size_t i = 0; i < ctx->nbackends; i++) {
            size_t used = strlen(why);
            snprintf(why + used, sizeof why - used, "%s%s", i ? ", " : "",
                     ctx->backends[i].name);
        }
    } else if (!b->available) {
        snprintf(why, sizeof why, "backend %s %s: %s", b->name,
                 b->skipped ? "was skipped (optional, no device)"
                            : "has no device",
                 b->reason ? b->reason : "no reason given");
    } else {
        snprintf(why, sizeof why, "configured: devices %s:0..%d, streams ",
                 b->name, b->device_count - 1);
        append_names(why, sizeof why, b->streams, b->nstreams);
    }
    return rs_error(ctx, RNGSNAP_E_INVALID, "no stream %s:%d/%s; %s",
                    backend, device, name, why);
}

/* ---- drawing, behind the resume gate ---------------------------------- */

int rs_stream_gate(rngsnap_stream *s, rs_word_id call)
{
    struct rngsnap *ctx = s->ctx;
    int rc = rs_check_usable(ctx);
    if (rc)
        return rc;
    if (atomic_load_explicit(&ctx->awaiting_load, memory_order_acquire)) {
        char label[600];
        return rs_error(ctx, RNGSNAP_E_ORDER, "%s on stream %s refused: the "
                        "context was opened with %s and no checkpoint has "
                        "been loaded yet (call %s first). " RS_FIRST_RUN,
                        rs_word(ctx, call),
                        rs_stream_label(s, label, sizeof label),
                        rs_word(ctx, RS_W_RESUME),
                        rs_word(ctx, RS_W_LOAD_ANY),
                        rs_word(ctx, RS_W_RESUME),
                        rs_word(ctx, RS_W_SEED_ALL));
    }
    return RNGSNAP_OK;
}

int rs_seed_gate(rngsnap_stream *s, rs_word_id call)
{
    struct rngsnap *ctx = s->ctx;
    if (atomic_load_explicit(&ctx->seeded, memory_order_acquire)
        || atomic_load_explicit(&ctx->loaded, memory_order_acquire))
        return RNGSNAP_OK;
    char label[600];
    return rs_error(ctx, RNGSNAP_E_ORDER, "%s on stream %s refused: the "
                    "context has been neither seeded nor loaded, so no seed "
                    "was chosen for this run (call %s with the run's seed "
                    "first, or %s to resume a checkpoint)",
                    rs_word(ctx, call), rs_stream_label(s, label,
                    sizeof label), rs_word(ctx, RS_W_SEED_ALL),
                    rs_word(ctx, RS_W_LOAD_ANY));
}

static int call_failed(rngsnap_stream *s, int rc, const char *call,
                       unsigned long mark)
{
    char what[700], label[600];
    snprintf(what, sizeof what, "%s on %s", call,
             rs_stream_label(s, label, sizeof label));
    return rs_plugin_rc(s->ctx, s->backend, rc, what, mark);
}

int rngsnap_generate(rngsnap_stream *s, rngsnap_dist dist, void *out,
                     size_t n)
{
    if (!s)
        return rs_error(NULL, RNGSNAP_E_INVALID,
                        "rngsnap_generate: stream is NULL");
    char label[600];
    if ((unsigned)dist >= RNGSNAP_DIST_COUNT)
        return rs_error(s->ctx, RNGSNAP_E_INVALID, "%s on %s: unknown "
                        "distribution %d", rs_word(s->ctx, RS_W_GENERATE),
                        rs_stream_label(s, label, sizeof label), (int)dist);
    if (!out && n)
        return rs_error(s->ctx, RNGSNAP_E_INVALID, "%s on %s: out is NULL",
                        rs_word(s->ctx, RS_W_GENERATE),
                        rs_stream_label(s, label, sizeof label));
    if (n > SIZE_MAX / rs_dists[dist].size)
        return rs_error(s->ctx, RNGSNAP_E_INVALID, "%s on %s: n = %zu values "
                        "is too many", rs_word(s->ctx, RS_W_GENERATE),
                        rs_stream_label(s, label, sizeof label), n);
    int rc = rs_stream_gate(s, RS_W_GENERATE);
    if (rc || n == 0) /* 0 values draw nothing: only the resume gate */
        return rc;
    if ((rc = rs_seed_gate(s, RS_W_GENERATE)))
        return rc;
    if (rs_forked(s->ctx))
        return rs_fork_refuse_draw(s, RS_W_GENERATE);
    unsigned long mark = rs_error_mark();
    rs_stream_lock(s);
    atomic_store_explicit(&s->drawn, 1, memory_order_relaxed);
    RS_TRACE(s->backend, "generate", s);
    rc = s->backend->vt->generate(s->handle, dist, out, n);
    rs_stream_unlock(s);
    return rc ? call_failed(s, rc, "generate", mark) : RNGSNAP_OK;
}

int rs_stream_at_args(rngsnap_stream *s, const rngsnap_philox *at,
                      rs_word_id call)
{
    if (!s)
        return rs_error(NULL, RNGSNAP_E_INVALID, "%s: stream is NULL",
                        rs_word(NULL, call));
    char label[600];
    if (!at)
        return rs_error(s->ctx, RNGSNAP_E_INVALID, "%s on %s: at is NULL",
                        rs_word(s->ctx, call),
                        rs_stream_label(s, label, sizeof label));
    return RNGSNAP_OK;
}

int rngsnap_reserve(rngsnap_stream *s, uint64_t n, rngsnap_philox *at)
{
    int rc = rs_stream_at_args(s, at, RS_W_RESERVE);
    if (rc)
        return rc;
    char label[600];
    rc = rs_stream_gate(s, RS_W_RESERVE);
    if (!rc && n) /* n = 0 only reports the position */
        rc = rs_seed_gate(s, RS_W_RESERVE);
    if (!rc && n && rs_forked(s->ctx))
        rc = rs_fork_refuse_draw(s, RS_W_RESERVE);
    if (rc)
        return rc;
    if (!RNGSNAP_BACKEND_HAS(s->backend->vt, reserve))
        return rs_error(s->ctx, RNGSNAP_E_UNAVAILABLE, "%s on %s: backend %s "
                        "(%s) has no reserve (its streams are not Philox "
                        "positions)", rs_word(s->ctx, RS_W_RESERVE),
                        rs_stream_label(s, label, sizeof label),
                        s->backend->name, s->backend->plugin_path);
    unsigned long mark = rs_error_mark();
    rs_stream_lock(s);
    if (n) /* 0 only reports the position */
        atomic_store_explicit(&s->drawn, 1, memory_order_relaxed);
    RS_TRACE(s->backend, "reserve", s);
    rc = s->backend->vt->reserve(s->handle, n, at);
    rs_stream_unlock(s);
    return rc ? call_failed(s, rc, "reserve", mark) : RNGSNAP_OK;
}

int rngsnap_stream_position(rngsnap_stream *s, rngsnap_philox *at)
{
    if (!s || !at)
        return rs_error(s ? s->ctx : NULL, RNGSNAP_E_INVALID,
                        "rngsnap_stream_position: stream and at must not "
                        "be NULL");
    char label[600];
    if (!RNGSNAP_BACKEND_HAS(s->backend->vt, reserve))
        return rs_error(s->ctx, RNGSNAP_E_UNAVAILABLE,
                        "%s on %s: backend %s (%s) has no Philox position",
                        rs_word(s->ctx, RS_W_POSITION),
                        rs_stream_label(s, label, sizeof label),
                        s->backend->name, s->backend->plugin_path);
    unsigned long mark = rs_error_mark();
    rs_stream_lock(s);
    RS_TRACE(s->backend, "reserve(0)", s);
    int rc = s->backend->vt->reserve(s->handle, 0, at);
    rs_stream_unlock(s);
    return rc ? call_failed(s, rc, "reserve(0)", mark) : RNGSNAP_OK;
}

/* ---- backends, for listing tools ------------------------------------- */

size_t rngsnap_backend_count(const rngsnap *ctx)
{
    return ctx ? ctx->nbackends : 0;
}

int rngsnap_backend_get(const rngsnap *ctx, size_t i,
                        rngsnap_backend_info *out)
{
    if (!ctx || !out || i >= ctx->nbackends)
        return RNGSNAP_E_INVALID;
    const rs_backend *b = &ctx->backends[i];
    const rngsnap_backend *vt = b->vt;
    memset(out, 0, sizeof *out);
    out->name = b->name;
    out->plugin_path = b->plugin_path;
    out->version = vt ? vt->version : NULL;
    int st = vt && b->bctx && RNGSNAP_BACKEND_HAS(vt, status);
    if (st)
        RS_TRACE(b, "status", NULL);
    out->status = st ? vt->status(b->bctx) : NULL;
    out->reason = b->reason;
    out->required = b->required;
    out->available = b->available;
    out->skipped = b->skipped;
    int em = vt && b->bctx && RNGSNAP_BACKEND_HAS(vt, emulated)
             && !b->emulation_refused; /* nothing emulated is in use */
    if (em)
        RS_TRACE(b, "emulated", NULL);
    out->emulated = em ? vt->emulated(b->bctx) != 0 : 0;
    out->device_count = b->device_count;
    out->stream_names = b->nstreams;
    return RNGSNAP_OK;
}

const char *rngsnap_backend_device_name(const rngsnap *ctx, size_t backend,
                                        int device)
{
    if (!ctx || backend >= ctx->nbackends)
        return NULL;
    const rs_backend *b = &ctx->backends[backend];
    if (!b->vt || !b->bctx || device < 0 || device >= b->device_count)
        return NULL;
    RS_TRACE(b, "device_name", NULL);
    return b->vt->device_name(b->bctx, device);
}

const char *rngsnap_backend_stream_name(const rngsnap *ctx, size_t backend,
                                        size_t i)
{
    if (!ctx || backend >= ctx->nbackends)
        return NULL;
    const rs_backend *b = &ctx->backends[backend];
    return i < b->nstreams ? b->streams[i] : NULL;
}
