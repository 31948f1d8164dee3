/*
 * multidev.c - a backend plugin built only for tests: N devices
 * (`devices = N`, default 2) in host memory, with its own, non-Philox
 * state format so that checkpoints mixing state formats are exercised.
 *
 * Built twice from this source (MULTIDEV_NAME "multidev" and "multidev2")
 * so that tests have two distinct backends.  Engine: xorshift128+, state
 * 16 bytes (s0, s1 little-endian), format "MDV1".  U32 = high half of one
 * output, U64 = one output, F32/F64 from the high bits; normals are not
 * offered (RNGSNAP_E_INVALID).
 *
 * Test hooks (rng.ini options): fail_set_state_on_device = D makes every
 * set_state of a stream on device D fail without changing it;
 * fail_get_state_on_device = D does the same for get_state;
 * half_set_state_on_device = D makes every set_state on device D store
 * the new state and THEN fail (a plugin failing halfway: the core must
 * put that stream back too).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rngsnap/backend.h>

#ifndef MULTIDEV_NAME
#define MULTIDEV_NAME "multidev"
#endif

#define MD_STATE_FORMAT 0x3156444du /* "MDV1" */
#define MD_STATE_SIZE 16u
#define MD_MAX_DEVICES 64

typedef struct md_ctx {
    const rngsnap_host *host;
    int devices;
    int fail_set_dev, fail_get_dev, half_set_dev;
    char names[MD_MAX_DEVICES][32];
    char status[64];
} md_ctx;

typedef struct md_stream {
    md_ctx *ctx;
    int device;
    uint64_t s[2];
} md_stream;

static uint64_t splitmix(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static uint64_t next(md_stream *st)
{
    uint64_t s1 = st->s[0];
    const uint64_t s0 = st->s[1];
    const uint64_t r = s0 + s1;
    st->s[0] = s0;
    s1 ^= s1 << 23;
    st->s[1] = s1 ^ s0 ^ (s1 >> 18) ^ (s0 >> 5);
    return r;
}

static int int_option(const rngsnap_host *host, const char *key, int def,
                      int lo, int hi, int *out)
{
    const char *v = host->option(host, key);
    *out = def;
    if (!v)
        return RNGSNAP_OK;
    char *end;
    long n = strtol(v, &end, 10);
    if (end == v || *end || n < lo || n > hi) {
        host->error(host, "option %s = %s: expected an integer in %d..%d",
                    key, v, lo, hi);
        return RNGSNAP_E_CONFIG;
    }
    *out = (int)n;
    return RNGSNAP_OK;
}

static int md_open(const rngsnap_host *host, void **bctx)
{
    md_ctx *c = calloc(1, sizeof *c);
    if (!c)
        return RNGSNAP_E_NOMEM;
    c->host = host;
    int rc = int_option(host, "devices", 2, 0, MD_MAX_DEVICES, &c->devices);
    if (!rc)
        rc = int_option(host, "fail_set_state_on_device", -1, -1,
                        MD_MAX_DEVICES, &c->fail_set_dev);
    if (!rc)
        rc = int_option(host, "fail_get_state_on_device", -1, -1,
                        MD_MAX_DEVICES, &c->fail_get_dev);
    if (!rc)
        rc = int_option(host, "half_set_state_on_device", -1, -1,
                        MD_MAX_DEVICES, &c->half_set_dev);
    if (rc) {
        free(c);
        return rc;
    }
    for (int d = 0; d < c->devices; d++)
        snprintf(c->names[d], sizeof c->names[d], MULTIDEV_NAME " device %d",
                 d);
    snprintf(c->status, sizeof c->status, "test backend, %d devices",
             c->devices);
    *bctx = c;
    return RNGSNAP_OK;
}

static void md_close(void *bctx) { free(bctx); }

static int md_device_count(void *bctx, const char **reason)
{
    md_ctx *c = bctx;
    if (reason)
        *reason = c->devices ? NULL : "devices = 0 in rng.ini";
    return c->devices;
}

static const char *md_device_name(void *bctx, int device)
{
    md_ctx *c = bctx;
    return device >= 0 && device < c->devices ? c->names[device] : NULL;
}

static int md_stream_open(void *bctx, int device, const char *name,
                          void **stream)
{
    (void)name;
    md_ctx *c = bctx;
    if (device < 0 || device >= c->devices) {
        c->host->error(c->host, "no device %d", device);
        return RNGSNAP_E_INVALID;
    }
    md_stream *st = calloc(1, sizeof *st);
    if (!st)
        return RNGSNAP_E_NOMEM;
    st->ctx = c;
    st->device = device;
    st->s[1] = 1; /* never the all-zero state */
    *stream = st;
    return RNGSNAP_OK;
}

static void md_stream_close(void *stream) { free(stream); }

static int md_seed(void *stream, uint64_t seed, uint64_t subsequence)
{
    md_stream *st = stream;
    uint64_t x = seed ^ (subsequence * 0xd1342543de82ef95ull);
    st->s[0] = splitmix(&x);
    st->s[1] = splitmix(&x);
    if (!st->s[0] && !st->s[1])
        st->s[1] = 1;
    return RNGSNAP_OK;
}

static void put64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static uint64_t get64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

static int md_get_state(void *stream, void *buf, size_t len)
{
    md_stream *st = stream;
    const rngsnap_host *h = st->ctx->host;
    if (len != MD_STATE_SIZE) {
        h->error(h, "get_state: %zu bytes, expected %u", len, MD_STATE_SIZE);
        return RNGSNAP_E_INVALID;
    }
    if (st->device == st->ctx->fail_get_dev) {
        h->error(h, "test hook: fail_get_state_on_device = %d",
                 st->device);
        return RNGSNAP_E_BACKEND;
    }
    put64(buf, st->s[0]);
    put64((uint8_t *)buf + 8, st->s[1]);
    return RNGSNAP_OK;
}

static int check_blob(const rngsnap_host *h, const void *buf, size_t len)
{
    if (len != MD_STATE_SIZE) {
        h->error(h, "state of %zu bytes, expected %u", len, MD_STATE_SIZE);
        return RNGSNAP_E_MISMATCH;
    }
    if (!get64(buf) && !get64((const uint8_t *)buf + 8)) {
        h->error(h, "all-zero xorshift128+ state");
        return RNGSNAP_E_CORRUPT;
    }
    return RNGSNAP_OK;
}

static int md_set_state(void *stream, const void *buf, size_t len)
{
    md_stream *st = stream;
    const rngsnap_host *h = st->ctx->host;
    int rc = check_blob(h, buf, len);
    if (rc)
        return rc;
    if (st->device == st->ctx->fail_set_dev) {
        h->error(h, "test hook: fail_set_state_on_device = %d",
                 st->device);
        return RNGSNAP_E_BACKEND;
    }
    st->s[0] = get64(buf);
    st->s[1] = get64((const uint8_t *)buf + 8);
    if (st->device == st->ctx->half_set_dev) {
        h->error(h, "test hook: half_set_state_on_device = %d (state "
                 "changed, then failed)", st->device);
        return RNGSNAP_E_BACKEND;
    }
    return RNGSNAP_OK;
}

static int md_validate_state(void *bctx, const void *buf, size_t len)
{
    md_ctx *c = bctx;
    return check_blob(c->host, buf, len);
}

static int md_generate(void *stream, rngsnap_dist dist, void *out, size_t n)
{
    md_stream *st = stream;
    switch (dist) {
    case RNGSNAP_U32:
        for (size_t i = 0; i < n; i++)
            ((uint32_t *)out)[i] = (uint32_t)(next(st) >> 32);
        return RNGSNAP_OK;
    case RNGSNAP_U64:
        for (size_t i = 0; i < n; i++)
            ((uint64_t *)out)[i] = next(st);
        return RNGSNAP_OK;
    case RNGSNAP_F32:
        for (size_t i = 0; i < n; i++)
            ((float *)out)[i] = (float)(next(st) >> 40) * 0x1p-24f;
        return RNGSNAP_OK;
    case RNGSNAP_F64:
        for (size_t i = 0; i < n; i++)
            ((double *)out)[i] = (double)(next(st) >> 11) * 0x1p-53;
        return RNGSNAP_OK;
    default:
        st->ctx->host->error(st->ctx->host,
                             "distribution %d not offered by this test "
                             "backend",
                             (int)dist);
        return RNGSNAP_E_INVALID;
    }
}

static rngsnap_memory md_memory(void *stream)
{
    (void)stream;
    return RNGSNAP_MEMORY_HOST;
}

static const char *md_status(void *bctx)
{
    return ((md_ctx *)bctx)->status;
}

static const rngsnap_backend md_table = {
    .abi_version = RNGSNAP_BACKEND_ABI_VERSION,
    .struct_size = sizeof(rngsnap_backend),
    .name = MULTIDEV_NAME,
    .version = "test-1",
    .state_format = MD_STATE_FORMAT,
    .state_size = MD_STATE_SIZE,
    .open = md_open,
    .close = md_close,
    .device_count = md_device_count,
    .device_name = md_device_name,
    .stream_open = md_stream_open,
    .stream_close = md_stream_close,
    .seed = md_seed,
    .get_state = md_get_state,
    .set_state = md_set_state,
    .generate = md_generate,
    .memory = md_memory,
    .validate_state = md_validate_state,
    .status = md_status,
};

RNGSNAP_PLUGIN_EXPORT const rngsnap_backend *rngsnap_backend_v1(void)
{
    return &md_table;
}
