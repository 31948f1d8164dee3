/*
 * testplug.c - one small test backend, built many times with different
 * defines into rngsnap_<variant>.so (see meson.build).  The working
 * variant ("good") has a trivial counter state; each broken variant has
 * exactly one defect the loader must refuse.  The "ctor" variant works
 * and has a constructor that leaves a marker file (RS_CTOR_MARKER).
 *
 * Options of the working variants (rng.ini keys of their section):
 *   devices = N            number of devices (default 1); 0 -> no device
 *   reason = text          the reason given when devices = 0
 *   fail_open = 1          open() fails (host->error + RNGSNAP_E_BACKEND)
 *   fail_seed = NAME       seed() fails on the stream called NAME
 * Any other key is refused with RNGSNAP_E_CONFIG naming key and line.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <rngsnap/backend.h>

#ifndef PLUG_NAME
#error PLUG_NAME must be defined
#endif

#ifdef RS_BROKEN_UNDEF_DATA
extern int rngsnap_test_missing_data; /* resolved by nobody */
#endif
#ifdef RS_BROKEN_UNDEF_FN
extern int rngsnap_test_missing_function(void); /* resolved by nobody */
#endif

#ifdef RS_CTOR_MARKER
#include <stdio.h>
/* Appends a line to the file RNGSNAP_TEST_CTOR_MARKER names whenever the
 * plugin is loaded: the loader tests prove with it that no code of a
 * refused plugin ran. */
__attribute__((constructor)) static void tp_constructor(void)
{
    const char *path = getenv("RNGSNAP_TEST_CTOR_MARKER");
    FILE *f = path && *path ? fopen(path, "a") : NULL;
    if (f) {
        fputs("constructor ran\n", f);
        fclose(f);
    }
}
#endif

typedef struct tp_backend {
    const rngsnap_host *host;
    int devices;
    const char *reason;
    const char *fail_seed;
} tp_backend;

typedef struct tp_stream {
    tp_backend *b;
    char name[256];
    uint64_t seed, subsequence, offset; /* the 24-byte state */
} tp_stream;

static int tp_open(const rngsnap_host *host, void **bctx)
{
#ifdef RS_BROKEN_UNDEF_DATA
    if (rngsnap_test_missing_data == 42)
        return RNGSNAP_E_BACKEND;
#endif
#ifdef RS_BROKEN_UNDEF_FN
    if (rngsnap_test_missing_function() == 42)
        return RNGSNAP_E_BACKEND;
#endif
    tp_backend *b = calloc(1, sizeof *b);
    if (!b)
        return RNGSNAP_E_NOMEM;
    b->host = host;
    b->devices = 1;
    b->reason = "test plugin told to have no device";
    for (size_t i = 0; i < host->option_count(host); i++) {
        const char *k, *v;
        int line;
        host->option_at(host, i, &k, &v, &line);
        if (strcmp(k, "devices") == 0) {
            char *end;
            long n = strtol(v, &end, 10);
            if (*end || n < 0 || n > 64) {
                host->error(host, "%s:%d: devices = '%s' is not 0..64",
                            host->ini_path, line, v);
                free(b);
                return RNGSNAP_E_CONFIG;
            }
            b->devices = (int)n;
        } else if (strcmp(k, "reason") == 0) {
            b->reason = v;
        } else if (strcmp(k, "fail_open") == 0) {
            host->error(host, "fail_open is set (line %d)", line);
            free(b);
            return RNGSNAP_E_BACKEND;
        } else if (strcmp(k, "fail_seed") == 0) {
            b->fail_seed = v;
        } else {
            host->error(host, "%s:%d: unknown option '%s'", host->ini_path,
                        line, k);
            free(b);
            return RNGSNAP_E_CONFIG;
        }
    }
    host->log(host, RNGSNAP_LOG_DEBUG, "opened with %d devices",
              b->devices);
    *bctx = b;
    return RNGSNAP_OK;
}

static void tp_close(void *bctx)
{
    free(bctx);
}

static int tp_device_count(void *bctx, const char **reason)
{
    tp_backend *b = bctx;
    if (b->devices == 0)
        *reason = b->reason;
    return b->devices;
}

static const char *tp_device_name(void *bctx, int device)
{
    static const char *names[] = {"test device 0", "test device 1",
                                  "test device 2", "test device 3"};
    (void)bctx;
    return device < 4 ? names[device] : "test device";
}

static int tp_stream_open(void *bctx, int device, const char *name,
                          void **stream)
{
    (void)device;
    tp_stream *s = calloc(1, sizeof *s);
    if (!s)
        return RNGSNAP_E_NOMEM;
    s->b = bctx;
    strncpy(s->name, name, sizeof s->name - 1);
    *stream = s;
    return RNGSNAP_OK;
}

static void tp_stream_close(void *stream)
{
    free(stream);
}

__attribute__((unused)) /* unused in the nullmember variant */
static int tp_seed(void *stream, uint64_t seed, uint64_t subsequence)
{
    tp_stream *s = stream;
    if (s->b->fail_seed && strcmp(s->b->fail_seed, s->name) == 0) {
        s->b->host->error(s->b->host, "seed refused on stream %s (fail_seed)",
                          s->name);
        return RNGSNAP_E_BACKEND;
    }
    s->seed = seed;
    s->subsequence = subsequence;
    s->offset = 0;
    return RNGSNAP_OK;
}

static int tp_get_state(void *stream, void *buf, size_t len)
{
    tp_stream *s = stream;
    if (len != 24)
        return RNGSNAP_E_INVALID;
    uint64_t v[3] = {s->seed, s->subsequence, s->offset};
    memcpy(buf, v, 24);
    return RNGSNAP_OK;
}

static int tp_set_state(void *stream, const void *buf, size_t len)
{
    tp_stream *s = stream;
    if (len != 24)
        return RNGSNAP_E_INVALID;
    uint64_t v[3];
    memcpy(v, buf, 24);
    s->seed = v[0];
    s->subsequence = v[1];
    s->offset = v[2];
    return RNGSNAP_OK;
}

/* A made-up word function: enough to see that streams differ and move. */
static uint32_t tp_word(const tp_stream *s, uint64_t j)
{
    uint64_t z = s->seed ^ (s->subsequence * 0x9E3779B97F4A7C15ull)
                 ^ (j * 0xBF58476D1CE4E5B9ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return (uint32_t)(z ^ (z >> 31));
}

static int tp_generate(void *stream, rngsnap_dist dist, void *out, size_t n)
{
    tp_stream *s = stream;
    size_t words = (dist == RNGSNAP_U64 || dist == RNGSNAP_F64
                    || dist == RNGSNAP_NORMAL_F64
                    || dist == RNGSNAP_CURAND_UNIFORM_F64
                    || dist == RNGSNAP_CURAND_NORMAL_F64) ? 2 : 1;
    uint32_t *w = out; /* test plugin: raw words for every dist */
    for (size_t i = 0; i < n * words; i++)
        w[i] = tp_word(s, s->offset++);
    return RNGSNAP_OK;
}

#ifndef RS_NO_RESERVE
static int tp_reserve(void *stream, uint64_t n, rngsnap_philox *at)
{
    tp_stream *s = stream;
    at->seed = s->seed;
    at->subsequence = s->subsequence;
    at->offset = s->offset;
    s->offset += n;
    return RNGSNAP_OK;
}
#endif

static const char *tp_status(void *bctx)
{
    (void)bctx;
    return "test plugin";
}

static const rngsnap_backend tp_table = {
#ifdef RS_BROKEN_BADABI
    .abi_version = 99,
#else
    .abi_version = RNGSNAP_BACKEND_ABI_VERSION,
#endif
#ifdef RS_BROKEN_SMALL
    .struct_size = offsetof(rngsnap_backend, generate),
#else
    .struct_size = sizeof(rngsnap_backend),
#endif
    .name = PLUG_NAME,
#ifdef RS_BROKEN_NULLVERSION
    .version = NULL,
#else
    .version = "test-1",
#endif
    .state_format = 0x54534554u, /* "TEST": bytes T, E, S, T (LE) */
#if defined(RS_BROKEN_STATEZERO)
    .state_size = 0,
#elif defined(RS_BROKEN_STATEBIG)
    .state_size = 5000,
#else
    .state_size = 24,
#endif
    .open = tp_open,
    .close = tp_close,
    .device_count = tp_device_count,
    .device_name = tp_device_name,
    .stream_open = tp_stream_open,
    .stream_close = tp_stream_close,
#ifdef RS_BROKEN_NULLMEMBER
    .seed = NULL,
#else
    .seed = tp_seed,
#endif
    .get_state = tp_get_state,
    .set_state = tp_set_state,
    .generate = tp_generate,
#ifndef RS_NO_RESERVE
    .reserve = tp_reserve,
#endif
    .status = tp_status,
};

#if defined(RS_BROKEN_NOSYM)
/* Exports a different name: the loader finds no rngsnap_backend_v1. */
RNGSNAP_PLUGIN_EXPORT const rngsnap_backend *rngsnap_backend_v0(void);
const rngsnap_backend *rngsnap_backend_v0(void)
{
    return &tp_table;
}
#else
RNGSNAP_PLUGIN_EXPORT const rngsnap_backend *rngsnap_backend_v1(void);
const rngsnap_backend *rngsnap_backend_v1(void)
{
#ifdef RS_BROKEN_NULLTABLE
    (void)tp_table;
    return NULL;
#else
    return &tp_table;
#endif
}
#endif
