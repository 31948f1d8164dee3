/*
 * plugin_check_wrap.c - open the rng.ini for one check and put a copy of
 * the backend's table in front of the plugin whose every function records
 * the call (name and "X:1/default") before making it.  The core calls
 * through that copy, so the calls of rngsnap_open, rngsnap_seed_all,
 * rngsnap_save_mem and rngsnap_load_mem are recorded as well as the
 * check's own.
 *
 * The copy is put in place where the loader fetches the plugin's entry:
 * the rngsnap command links the core's static library with
 * -Wl,--wrap=lt_dlsym (tools/plugin_check/meson.build), so the loader's
 * lt_dlsym comes here first.  Outside plugin-check (no target) it is
 * lt_dlsym itself.
 */
#include <ltdl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"
#include "plugin_check.h"

static rngsnap_backend wrapped;      /* what b->vt points to      */
static const rngsnap_backend *real;  /* the plugin's own table    */
static const char *target;           /* the backend under check   */
static rngsnap_backend_entry_fn real_entry;

/* Stream handles the plugin gave, for "X:1/default" in the records. */
typedef struct known {
    void *handle;
    int device;
    char name[96];
} known;
static known *streams;
static size_t nstreams, cap;

static const char *where_of(void *handle, char *buf, size_t len)
{
    for (size_t i = 0; i < nstreams; i++)
        if (streams[i].handle == handle) {
            snprintf(buf, len, "%s:%d/%s", real->name, streams[i].device,
                     streams[i].name);
            return buf;
        }
    snprintf(buf, len, "%s (an unknown stream handle)", real->name);
    return buf;
}

#define ENTER_STREAM(call, h)                          \
    char where_[224];                                  \
    pc_enter(call, where_of(h, where_, sizeof where_))
#define ENTER_BACKEND(call) pc_enter(call, real->name)

static int w_open(const rngsnap_host *host, void **bctx)
{
    ENTER_BACKEND("open");
    int rc = real->open(host, bctx);
    pc_leave();
    return rc;
}

static int w_device_count(void *bctx, const char **reason)
{
    ENTER_BACKEND("device_count");
    int n = real->device_count(bctx, reason);
    pc_leave();
    return n;
}

static int w_stream_open(void *bctx, int device, const char *name,
                         void **stream)
{
    char where[224];
    snprintf(where, sizeof where, "%s:%d/%s", real->name, device, name);
    pc_enter("stream_open", where);
    int rc = real->stream_open(bctx, device, name, stream);
    pc_leave();
    if (rc == RNGSNAP_OK && nstreams == cap) {
        known *k = realloc(streams, (cap ? cap * 2 : 16) * sizeof *k);
        if (!k)
            return rc; /* only the records' labels suffer */
        streams = k;
        cap = cap ? cap * 2 : 16;
    }
    if (rc == RNGSNAP_OK) {
        known *k = &streams[nstreams++];
        k->handle = *stream;
        k->device = device;
        snprintf(k->name, sizeof k->name, "%s", name);
    }
    return rc;
}

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

/* The copy keeps the plugin's struct_size and its NULL members, so the
 * loader judges the plugin's own table (RNGSNAP_BACKEND_HAS, required
 * members) and a member it lacks stays absent. */
#define WRAP(m, fn)                                              \
    if (offsetof(rngsnap_backend, m) + sizeof(void *) <= n && vt->m) \
        wrapped.m = fn
static const rngsnap_backend *wrap(const rngsnap_backend *vt)
{
    real = vt;
    nstreams = 0;
    memset(&wrapped, 0, sizeof wrapped);
    size_t n = vt->struct_size < sizeof wrapped ? vt->struct_size
                                                : sizeof wrapped;
    memcpy(&wrapped, vt, n);
    WRAP(open, w_open);
    WRAP(close, w_close);
    WRAP(device_count, w_device_count);
    WRAP(device_name, w_device_name);
    WRAP(stream_open, w_stream_open);
    WRAP(stream_close, w_stream_close);
    WRAP(seed, w_seed);
    WRAP(get_state, w_get_state);
    WRAP(set_state, w_set_state);
    WRAP(generate, w_generate);
    WRAP(reserve, w_reserve);
    WRAP(memory, w_memory);
    WRAP(validate_state, w_validate_state);
    WRAP(status, w_status);
    WRAP(emulated, w_emulated);
    return &wrapped;
}

static const rngsnap_backend *pc_entry(void)
{
    const rngsnap_backend *vt = real_entry();
    if (!vt || !vt->name || strcmp(vt->name, target) != 0
        || vt->abi_version != RNGSNAP_BACKEND_ABI_VERSION
        || vt->struct_size < RNGSNAP_BACKEND_MIN_SIZE)
        return vt; /* the loader refuses it, or it is another backend */
    return wrap(vt);
}

void *__real_lt_dlsym(lt_dlhandle h, const char *name);
void *__wrap_lt_dlsym(lt_dlhandle h, const char *name);
void *__wrap_lt_dlsym(lt_dlhandle h, const char *name)
{
    void *sym = __real_lt_dlsym(h, name);
    if (!sym || !target || strcmp(name, RNGSNAP_BACKEND_ENTRY) != 0)
        return sym;
    real_entry = (rngsnap_backend_entry_fn)sym; /* as the loader does */
    return (void *)pc_entry;
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
    target = p->backend;
    pc_doing("opening %s (rngsnap_open)", p->ini);
    int rc = rngsnap_open(&p->ctx, p->ini, 0);
    pc_doing(NULL);
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
    if (p->b->vt != &wrapped)
        pc_config_error("backend %s: its table could not be wrapped (is "
                        "the rngsnap command linked with "
                        "-Wl,--wrap=lt_dlsym?)", p->backend);
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
    free(p->s);
    p->s = NULL;
    p->ns = 0;
}
