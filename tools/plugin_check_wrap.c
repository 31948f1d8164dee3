/*
 * plugin_check_wrap.c - open the rng.ini for one check and put a copy of
 * the backend's table in front of the plugin whose every function records
 * the call (name and "X:1/default") before making it.  The core calls
 * through b->vt, so the calls of rngsnap_save_mem, rngsnap_load_mem and
 * rngsnap_seed_all are recorded as well as the check's own.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"
#include "plugin_check.h"

static rngsnap_backend wrapped;      /* what b->vt points to      */
static const rngsnap_backend *real;  /* the plugin's own table    */
static pc *cur;                      /* the open check, for labels */

/* "X:1/default" of a plugin stream handle. */
static const char *where_of(void *handle, char *buf, size_t len)
{
    struct rngsnap *ctx = cur ? cur->ctx : NULL;
    for (size_t i = 0; ctx && i < ctx->nstreams; i++)
        if (ctx->streams[i].handle == handle)
            return rs_stream_label(&ctx->streams[i], buf, len);
    snprintf(buf, len, "%s (an unknown stream handle)", real->name);
    return buf;
}

#define ENTER_STREAM(call, h)                          \
    char where_[224];                                  \
    pc_enter(call, where_of(h, where_, sizeof where_))
#define ENTER_BACKEND(call) pc_enter(call, real->name)

static void w_close(void *bctx)
{
    ENTER_BACKEND("close");
    real->close(bctx);
    pc_leave();
}

static const char *w_device_name(void *bctx, int device)
{
    ENTER_BACKEND("device_name");
    const char *r = real->device_name(bctx, device);
    pc_leave();
    return r;
}

static void w_stream_close(void *stream)
{
    ENTER_STREAM("stream_close", stream);
    real->stream_close(stream);
    pc_leave();
}

static int w_seed(void *stream, uint64_t seed, uint64_t subsequence)
{
    ENTER_STREAM("seed", stream);
    int rc = real->seed(stream, seed, subsequence);
    pc_leave();
    return rc;
}

static int w_get_state(void *stream, void *buf, size_t len)
{
    ENTER_STREAM("get_state", stream);
    int rc = real->get_state(stream, buf, len);
    pc_leave();
    return rc;
}

static int w_set_state(void *stream, const void *buf, size_t len)
{
    ENTER_STREAM("set_state", stream);
    int rc = real->set_state(stream, buf, len);
    pc_leave();
    return rc;
}

static int w_generate(void *stream, rngsnap_dist dist, void *out, size_t n)
{
    ENTER_STREAM("generate", stream);
    int rc = real->generate(stream, dist, out, n);
    pc_leave();
    return rc;
}

static int w_reserve(void *stream, uint64_t n, rngsnap_philox *at)
{
    ENTER_STREAM("reserve", stream);
    int rc = real->reserve(stream, n, at);
    pc_leave();
    return rc;
}

static rngsnap_memory w_memory(void *stream)
{
    ENTER_STREAM("memory", stream);
    rngsnap_memory m = real->memory(stream);
    pc_leave();
    return m;
}

static int w_validate_state(void *bctx, const void *buf, size_t len)
{
    ENTER_BACKEND("validate_state");
    int rc = real->validate_state(bctx, buf, len);
    pc_leave();
    return rc;
}

static const char *w_status(void *bctx)
{
    ENTER_BACKEND("status");
    const char *r = real->status(bctx);
    pc_leave();
    return r;
}

static int w_emulated(void *bctx)
{
    ENTER_BACKEND("emulated");
    int r = real->emulated(bctx);
    pc_leave();
    return r;
}

/* The copy keeps the plugin's struct_size, so a member its table lacks
 * stays absent for the core (RNGSNAP_BACKEND_HAS). */
static const rngsnap_backend *wrap(const rngsnap_backend *vt)
{
    real = vt;
    memset(&wrapped, 0, sizeof wrapped);
    size_t n = vt->struct_size < sizeof wrapped ? vt->struct_size
                                                : sizeof wrapped;
    memcpy(&wrapped, vt, n);
    wrapped.close = w_close;
    wrapped.device_name = w_device_name;
    wrapped.stream_close = w_stream_close;
    wrapped.seed = w_seed;
    wrapped.get_state = w_get_state;
    wrapped.set_state = w_set_state;
    wrapped.generate = w_generate;
    if (RNGSNAP_BACKEND_HAS(vt, reserve))
        wrapped.reserve = w_reserve;
    if (RNGSNAP_BACKEND_HAS(vt, memory))
        wrapped.memory = w_memory;
    if (RNGSNAP_BACKEND_HAS(vt, validate_state))
        wrapped.validate_state = w_validate_state;
    if (RNGSNAP_BACKEND_HAS(vt, status))
        wrapped.status = w_status;
    if (RNGSNAP_BACKEND_HAS(vt, emulated))
        wrapped.emulated = w_emulated;
    return &wrapped;
}

/* Which distributions generate draws: one value each on the first stream
 * (RNGSNAP_E_UNAVAILABLE: not drawn; the dists check judges the rest). */
static void probe(pc *p)
{
    pc_doing("probing which distributions %s draws", p->backend);
    p->supported = 0;
    double buf[8];
    for (int d = 0; d < RNGSNAP_DIST_COUNT; d++) {
        pc_seed(p, p->s[0], 1, 0);
        if (pc_gen(p, p->s[0], (rngsnap_dist)d, buf, 1) == RNGSNAP_OK)
            p->supported |= 1u << d;
    }
    pc_doing(NULL);
}

void pc_open(pc *p)
{
    pc_enter("rngsnap_open", "the config (open, device_count, stream_open "
             "and seed of every stream)");
    int rc = rngsnap_open(&p->ctx, p->ini, 0);
    pc_leave();
    if (rc)
        pc_config_error("%s", rngsnap_errmsg(NULL));
    struct rngsnap *ctx = p->ctx;
    p->b = NULL;
    for (size_t i = 0; i < ctx->nbackends; i++)
        if (strcmp(ctx->backends[i].name, p->backend) == 0)
            p->b = &ctx->backends[i];
    if (!p->b) {
        char names[512] = "";
        for (size_t i = 0; i < ctx->nbackends; i++)
            snprintf(names + strlen(names), sizeof names - strlen(names),
                     "%s%s", i ? ", " : "", ctx->backends[i].name);
        pc_config_error("%s has no [backend.%s] (it has %s): add the "
                        "backend's section, or name one of these",
                        ctx->ini_path, p->backend, names);
    }
    if (!p->b->available || !p->b->vt)
        pc_config_error("backend %s has nothing to check: %s (set "
                        "emulate_devices = 2 in [backend.%s] to check a "
                        "device backend without its hardware)", p->backend,
                        p->b->reason ? p->b->reason : "no device",
                        p->backend);
    p->b->vt = wrap(p->b->vt);
    cur = p;
    free(p->s);
    p->s = calloc(ctx->nstreams, sizeof *p->s);
    if (!p->s)
        pc_config_error("out of memory");
    p->ns = 0;
    for (size_t i = 0; i < ctx->nstreams; i++)
        if (ctx->streams[i].backend == p->b)
            p->s[p->ns++] = &ctx->streams[i];
    for (size_t i = 0; i < p->ns; i++)
        if (rngsnap_stream_memory(p->s[i]) != RNGSNAP_MEMORY_HOST) {
            char l[256];
            pc_config_error("%s draws into device memory: plugin-check "
                            "reads what generate writes in host memory; "
                            "check the backend with emulate_devices = 2 in "
                            "[backend.%s]", pc_label(p->s[i], l, sizeof l),
                            p->backend);
        }
    probe(p);
    if (!p->supported) {
        pc_fail(p, "generate draws no distribution (one value of each was "
                "refused on %s): draw at least u32", p->backend);
        pc_close(p);
        _exit(1);
    }
}

void pc_close(pc *p)
{
    if (p->ctx) {
        pc_doing("closing the context (stream_close, close)");
        rngsnap_close(p->ctx);
        pc_doing(NULL);
    }
    p->ctx = NULL;
    p->b = NULL;
    cur = NULL;
    free(p->s);
    p->s = NULL;
    p->ns = 0;
}
