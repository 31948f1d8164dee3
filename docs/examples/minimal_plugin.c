/*
 * minimal_plugin.c - the smallest complete rngsnap backend, built out of
 * tree against the installed headers (see docs/plugin-guide.md):
 *
 *   cc -shared -fPIC -fvisibility=hidden -Wl,--no-undefined \
 *      -o rngsnap_minimal.so minimal_plugin.c $(pkg-config --cflags rngsnap)
 *
 * Backend "minimal": one or more devices in host memory whose streams are
 * Philox4x32-10 positions (seed, subsequence, offset), filled by the
 * library's own engine (host->philox_generate).  So it draws the cpu
 * backend's bits, every distribution included (the cuRAND-exact ones
 * too), at the engine's SIMD speed; and because it declares the built-in
 * state format and a reserve member, the core gives it rngsnap_reserve,
 * keyed streams (rngsnap_derive, rngsnap_generate_at) and `rngsnap
 * diff`'s "N words apart", with no change to the core.  rng.ini:
 *
 *   [backend.minimal]
 *   plugin = rngsnap_minimal
 *   streams = default, noise
 *   devices = 2            ; this plugin's own option (default 1)
 *
 * It never links against librngsnap: everything it needs from the core,
 * the engine included, comes through the rngsnap_host table handed to
 * open() (docs/plugin-guide.md, "ABI rules", says why).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rngsnap/backend.h>

typedef struct minimal_ctx {
    const rngsnap_host *host;
    int devices;
    char names[8][24];
} minimal_ctx;

/* The whole state of a stream is its position: nothing is cached
 * between calls (no spare normal, no buffered words), so the 24 bytes of
 * get_state are everything a resume needs. */
typedef struct minimal_stream {
    rngsnap_philox pos;       /* the next word to draw */
    const rngsnap_host *host; /* for the engine and messages (not state) */
} minimal_stream;

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
    /* The engine is a member appended to the host table: a core older
     * than it has none, and this plugin cannot draw there. */
    if (!RNGSNAP_HOST_HAS(host, philox_generate)) {
        host->error(host, "this rngsnap core has no Philox engine in its "
                    "host table (rngsnap_host.philox_generate); install "
                    "rngsnap %s or later", RNGSNAP_VERSION_STRING);
        return RNGSNAP_E_PLUGIN;
    }
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

/* The start of Philox stream (seed, subsequence): what the core derived
 * for this (rank, backend, device, stream name). */
static int m_seed(void *stream, uint64_t seed, uint64_t subsequence)
{
    minimal_stream *s = stream;
    s->pos.seed = seed;
    s->pos.subsequence = subsequence;
    s->pos.offset = 0;
    return RNGSNAP_OK;
}

static int m_get_state(void *stream, void *buf, size_t len)
{
    minimal_stream *s = stream;
    if (len != RNGSNAP_STATE_PHILOX_SIZE)
        return RNGSNAP_E_INVALID;
    rngsnap_philox_state_put(&s->pos, buf); /* little-endian everywhere */
    return RNGSNAP_OK;
}

static int m_set_state(void *stream, const void *buf, size_t len)
{
    minimal_stream *s = stream;
    if (len != RNGSNAP_STATE_PHILOX_SIZE)
        return RNGSNAP_E_INVALID;
    rngsnap_philox_state_get(buf, &s->pos); /* every position is valid */
    return RNGSNAP_OK;
}

/* Every distribution the core knows, those appended after this plugin
 * was built included: the engine is the core's own.  It advances the
 * position by the words used (an odd count of normals: the last pair's
 * second value is dropped, docs/engine.md) and leaves it unchanged on
 * error. */
static int m_generate(void *stream, rngsnap_dist dist, void *out, size_t n)
{
    minimal_stream *s = stream;
    int rc = s->host->philox_generate(&s->pos, dist, out, n);
    if (rc != RNGSNAP_OK)
        s->host->error(s->host, "the Philox engine refused %zu values of "
                       "distribution %d at offset %llu (code %d)", n,
                       (int)dist, (unsigned long long)s->pos.offset, rc);
    return rc;
}

/* Hand the next n words to the app's own kernels: the position of the
 * first, then skip them (n = 0 only reports the position). */
static int m_reserve(void *stream, uint64_t n, rngsnap_philox *at)
{
    minimal_stream *s = stream;
    if (n > UINT64_MAX - s->pos.offset) {
        s->host->error(s->host, "reserve of %llu words would wrap the "
                       "64-bit offset", (unsigned long long)n);
        return RNGSNAP_E_INVALID;
    }
    if (at)
        *at = s->pos;
    s->pos.offset += n;
    return RNGSNAP_OK;
}

static const char *m_status(void *bctx)
{
    (void)bctx;
    return "Philox4x32-10 in host memory, rngsnap's engine (example plugin)";
}

/* Optional members left NULL: memory (host), validate_state (every 24
 * bytes are a valid position), emulated (these are not emulations of a
 * device). */
static const rngsnap_backend minimal_backend = {
    .abi_version = RNGSNAP_BACKEND_ABI_VERSION,
    .struct_size = sizeof(rngsnap_backend),
    .name = "minimal",
    .version = "2.0.0",
    .state_format = RNGSNAP_STATE_PHILOX4X32_10, /* the core reads it */
    .state_size = RNGSNAP_STATE_PHILOX_SIZE,
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
    .reserve = m_reserve,
    .status = m_status,
    .option_keys = minimal_option_keys,
};

RNGSNAP_PLUGIN_EXPORT const rngsnap_backend *rngsnap_backend_v1(void)
{
    return &minimal_backend;
}
