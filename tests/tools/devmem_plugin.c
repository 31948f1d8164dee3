/*
 * devmem_plugin.c - test-only backend "devmem" whose streams report
 * RNGSNAP_MEMORY_DEVICE, as cuda's do on a real GPU, so that the device
 * path of `rngsnap demo` (reserve, never generate) runs on any machine.
 * generate() fails on purpose: a tool that writes "device memory" through
 * a host pointer is the bug this plugin exists to catch.
 * Options: devices = N (default 2); forget_state = 1 makes set_state
 * accept the blob and keep the stream's current position, the quiet
 * "restored only one backend" bug, so a test can see the demo catch it.
 */
#include <stdlib.h>

#include <rngsnap/backend.h>

#include "philox_stream.h"

typedef struct devmem_ctx {
    const rngsnap_host *host;
    int devices;
    int forget_state;
} devmem_ctx;

static int d_open(const rngsnap_host *host, void **bctx)
{
    devmem_ctx *c = calloc(1, sizeof *c);
    if (!c)
        return RNGSNAP_E_NOMEM;
    const char *v = host->option(host, "devices");
    c->host = host;
    c->devices = v ? atoi(v) : 2;
    v = host->option(host, "forget_state");
    c->forget_state = v && atoi(v) == 1;
    *bctx = c;
    return RNGSNAP_OK;
}

static void d_close(void *bctx) { free(bctx); }

static int d_device_count(void *bctx, const char **reason)
{
    *reason = "devices = 0";
    return ((devmem_ctx *)bctx)->devices;
}

static const char *d_device_name(void *bctx, int device)
{
    (void)bctx;
    static const char *names[] = {"devmem0", "devmem1", "devmem2", "devmem3"};
    return device >= 0 && device < 4 ? names[device] : "devmem";
}

static int d_stream_open(void *bctx, int device, const char *name,
                         void **stream)
{
    (void)name;
    return philox_stream_new(bctx, device, sizeof(philox_stream), stream);
}

static int d_set_state(void *stream, const void *buf, size_t len)
{
    philox_stream *s = stream;
    devmem_ctx *c = s->bctx;
    if (c->forget_state)
        return len == RNGSNAP_STATE_PHILOX_SIZE ? RNGSNAP_OK
                                                : RNGSNAP_E_INVALID;
    return philox_stream_set_state(stream, buf, len);
}

static int d_generate(void *stream, rngsnap_dist dist, void *out, size_t n)
{
    (void)dist, (void)out, (void)n;
    philox_stream *s = stream;
    devmem_ctx *c = s->bctx;
    c->host->error(c->host, "test plugin: generate() into device memory "
                   "called with a host pointer; use rngsnap_reserve");
    return RNGSNAP_E_BACKEND;
}

static rngsnap_memory d_memory(void *stream)
{
    (void)stream;
    return RNGSNAP_MEMORY_DEVICE;
}

static const char *d_status(void *bctx)
{
    (void)bctx;
    return "test plugin: streams in (pretend) device memory";
}

static const rngsnap_backend devmem_backend = {
    .abi_version = RNGSNAP_BACKEND_ABI_VERSION,
    .struct_size = sizeof(rngsnap_backend),
    .name = "devmem",
    .version = "test",
    .state_format = RNGSNAP_STATE_PHILOX4X32_10,
    .state_size = RNGSNAP_STATE_PHILOX_SIZE,
    .open = d_open,
    .close = d_close,
    .device_count = d_device_count,
    .device_name = d_device_name,
    .stream_open = d_stream_open,
    .stream_close = philox_stream_free,
    .seed = philox_stream_seed,
    .get_state = philox_stream_get_state,
    .set_state = d_set_state,
    .generate = d_generate,
    .reserve = philox_stream_reserve,
    .memory = d_memory,
    .validate_state = philox_stream_validate_state,
    .status = d_status,
};

RNGSNAP_PLUGIN_EXPORT const rngsnap_backend *rngsnap_backend_v1(void)
{
    return &devmem_backend;
}
