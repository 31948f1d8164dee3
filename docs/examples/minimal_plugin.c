/*
 * minimal_plugin.c - the smallest complete rngsnap backend, built out of
 * tree against the installed headers (see docs/plugin-guide.md):
 *
 *   cc -shared -fPIC -fvisibility=hidden -Wl,--no-undefined \
 *      -o rngsnap_minimal.so minimal_plugin.c \
 *      $(pkg-config --cflags rngsnap) -lm
 *
 * Backend "minimal": a SplitMix64 generator with its own 8-byte state
 * format (not Philox), one or more devices in host memory.  rng.ini:
 *
 *   [backend.minimal]
 *   plugin = rngsnap_minimal
 *   streams = default, noise
 *   devices = 2            ; this plugin's own option (default 1)
 *
 * It never links against librngsnap: everything it needs from the core
 * comes through the rngsnap_host table handed to open().
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rngsnap/backend.h>

#define MINIMAL_STATE_FORMAT 0x314e494du /* "MIN1" little-endian */
#define MINIMAL_STATE_SIZE 8u

typedef struct minimal_ctx {
    const rngsnap_host *host;
    int devices;
    char names[8][24];
} minimal_ctx;

typedef struct minimal_stream {
    uint64_t x; /* SplitMix64 state: the whole checkpointed state */
    const rngsnap_host *host; /* for error messages (not state) */
} minimal_stream;

static uint64_t next64(minimal_stream *s)
{
    uint64_t z = (s->x += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static double uniform01(minimal_stream *s)
{
    return (double)(next64(s) >> 11) * 0x1.0p-53;
}

/* Box-Muller, one value per call (the sine half is dropped: simple). */
static double normal(minimal_stream *s)
{
    double u1 = 1.0 - uniform01(s), u2 = uniform01(s);
    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

/* This plugin's own rng.ini keys.  Listed in the table (option_keys), so
 * the core refuses any other key of the section before open(), with a
 * did-you-mean over these and its own plugin, required, streams. */
static const char *const minimal_option_keys[] = {"devices", NULL};

/* Refuse a key this plugin does not know, naming file and line: a core
 * older than option_keys hands every key through, and a typo must never
 * be taken silently. */
static int m_check_keys(const rngsnap_host *host)
{
    for (size_t i = 0; i < host->option_count(host); i++) {
        const char *key = NULL;
        int line = 0, known = 0;
        host->option_at(host, i, &key, NULL, &line);
        for (const char *const *k = minimal_option_keys; *k; k++)
            known |= strcmp(*k, key) == 0;
        if (!known) {
            host->error(host, "%s:%d: unknown key '%s' in [backend.%s] "
                        "(this plugin knows: devices)", host->ini_path, line,
                        key, host->backend_name);
            return RNGSNAP_E_CONFIG;
        }
    }
    return RNGSNAP_OK;
}

/* The rng.ini line of this plugin's option key (0 if absent). */
static int m_option_line(const rngsnap_host *host, const char *key)
{
    for (size_t i = 0; i < host->option_count(host); i++) {
        const char *k = NULL;
        int line = 0;
        host->option_at(host, i, &k, NULL, &line);
        if (strcmp(k, key) == 0)
            return line;
    }
    return 0;
}

static int m_open(const rngsnap_host *host, void **bctx)
{
    int rc = m_check_keys(host);
    if (rc != RNGSNAP_OK)
        return rc;
    minimal_ctx *c = calloc(1, sizeof *c);
    if (!c) {
        host->error(host, "out of memory");
        return RNGSNAP_E_NOMEM;
    }
    c->host = host;
    c->devices = 1;
    const char *v = host->option(host, "devices");
    if (v) {
        char *end;
        long n = strtol(v, &end, 10);
        if (*end || n < 0 || n > 8) {
            host->error(host, "%s:%d: devices = '%s' in [backend.%s]: want "
                        "a whole number 0..8", host->ini_path,
                        m_option_line(host, "devices"), v,
                        host->backend_name);
            free(c);
            return RNGSNAP_E_CONFIG;
        }
        c->devices = (int)n;
    }
    for (int d = 0; d < c->devices; d++)
        snprintf(c->names[d], sizeof c->names[d], "minimal%d", d);
    *bctx = c;
    return RNGSNAP_OK;
}

static void m_close(void *bctx)
{
    free(bctx);
}

static int m_device_count(void *bctx, const char **reason)
{
    minimal_ctx *c = bctx;
    if (c->devices == 0)
        *reason = "devices = 0 in rng.ini";
    return c->devices;
}

static const char *m_device_name(void *bctx, int device)
{
    minimal_ctx *c = bctx;
    return device >= 0 && device < c->devices ? c->names[device] : NULL;
}

static int m_stream_open(void *bctx, int device, const char *name,
                         void **stream)
{
    (void)device, (void)name;
    minimal_ctx *c = bctx;
    minimal_stream *s = calloc(1, sizeof *s);
    if (!s) {
        c->host->error(c->host, "out of memory");
        return RNGSNAP_E_NOMEM;
    }
    s->host = c->host;
    *stream = s;
    return RNGSNAP_OK;
}

static void m_stream_close(void *stream)
{
    free(stream);
}

static int m_seed(void *stream, uint64_t seed, uint64_t subsequence)
{
    minimal_stream *s = stream;
    s->x = seed ^ (subsequence * 0xd1b54a32d192ed03ull);
    return RNGSNAP_OK;
}

static int m_get_state(void *stream, void *buf, size_t len)
{
    minimal_stream *s = stream;
    unsigned char *b = buf;
    if (len != MINIMAL_STATE_SIZE)
        return RNGSNAP_E_INVALID;
    for (int i = 0; i < 8; i++) /* little-endian on every machine */
        b[i] = (unsigned char)(s->x >> (8 * i));
    return RNGSNAP_OK;
}

static int m_set_state(void *stream, const void *buf, size_t len)
{
    minimal_stream *s = stream;
    const unsigned char *b = buf;
    uint64_t x = 0;
    if (len != MINIMAL_STATE_SIZE)
        return RNGSNAP_E_INVALID;
    for (int i = 0; i < 8; i++)
        x |= (uint64_t)b[i] << (8 * i);
    s->x = x;
    return RNGSNAP_OK;
}

static int m_generate(void *stream, rngsnap_dist dist, void *out, size_t n)
{
    minimal_stream *s = stream;
    for (size_t i = 0; i < n; i++) {
        switch (dist) {
        case RNGSNAP_U32: ((uint32_t *)out)[i] = (uint32_t)(next64(s) >> 32); break;
        case RNGSNAP_U64: ((uint64_t *)out)[i] = next64(s); break;
        case RNGSNAP_F32: ((float *)out)[i] = (float)(next64(s) >> 40) * 0x1.0p-24f; break;
        case RNGSNAP_F64: ((double *)out)[i] = uniform01(s); break;
        case RNGSNAP_NORMAL_F32: ((float *)out)[i] = (float)normal(s); break;
        case RNGSNAP_NORMAL_F64: ((double *)out)[i] = normal(s); break;
        default:
            /* rngsnap_dist grows (values are appended, as the
             * RNGSNAP_CURAND_* ones were): refuse what this plugin does
             * not draw, in words (docs/plugin-guide.md). */
            s->host->error(s->host, "distribution %d is not supported by "
                           "this backend (it draws u32, u64, f32, f64, "
                           "normal_f32 and normal_f64)", (int)dist);
            return RNGSNAP_E_UNAVAILABLE;
        }
    }
    return RNGSNAP_OK;
}

static const char *m_status(void *bctx)
{
    (void)bctx;
    return "SplitMix64 in host memory (example plugin)";
}

/* Optional members left NULL: reserve (no Philox position to hand out),
 * memory (host), validate_state (any 8 bytes are a valid state),
 * emulated (these are not emulations of a device). */
static const rngsnap_backend minimal_backend = {
    .abi_version = RNGSNAP_BACKEND_ABI_VERSION,
    .struct_size = sizeof(rngsnap_backend),
    .name = "minimal",
    .version = "1.0.0",
    .state_format = MINIMAL_STATE_FORMAT,
    .state_size = MINIMAL_STATE_SIZE,
    .open = m_open,
    .close = m_close,
    .device_count = m_device_count,
    .device_name = m_device_name,
    .stream_open = m_stream_open,
    .stream_close = m_stream_close,
    .seed = m_seed,
    .get_state = m_get_state,
    .set_state = m_set_state,
    .generate = m_generate,
    .status = m_status,
    .option_keys = minimal_option_keys,
};

RNGSNAP_PLUGIN_EXPORT const rngsnap_backend *rngsnap_backend_v1(void)
{
    return &minimal_backend;
}
