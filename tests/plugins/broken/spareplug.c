/*
 * spareplug.c - a small backend with Box-Muller normals that cache their
 * second value, built into several variants (meson.build) for the tests
 * of `rngsnap plugin-check` (tests/tools/test_plugin_check.py):
 *
 *   SP_OK        the spares and their flags are in the state: conformant
 *   SP_LEAK      each normal keeps its spare outside the state
 *   SP_SHARED    normal_f32 and normal_f64 share one spare, outside the state
 *   SP_NOOFFSET  the state is (seed, subsequence): the counter is left out
 *   SP_CRASH     as SP_OK, but get_state crashes (SIGSEGV) on device 1
 *
 * Every variant resets its spares in seed(), so only a save and restore
 * shows the leaks.  Words: SplitMix64 of (seed, subsequence, counter).
 * The cuRAND distributions are not drawn (RNGSNAP_E_UNAVAILABLE).
 * Option: devices = N (default 2).
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <rngsnap/backend.h>

#ifndef PLUG_NAME
#error PLUG_NAME must be defined
#endif

typedef struct sp_backend {
    const rngsnap_host *host;
    int devices;
} sp_backend;

typedef struct sp_stream {
    sp_backend *b;
    int device;
    uint64_t seed, subsequence, offset;
    double spare64;     /* SP_SHARED: the one spare of both normals */
    float spare32;
    uint8_t has64, has32;
} sp_stream;

#if defined(SP_NOOFFSET)
#define SP_STATE 16u
#elif defined(SP_LEAK) || defined(SP_SHARED)
#define SP_STATE 24u
#else
#define SP_STATE 40u /* 24 + spare64 + spare32 + has64 + has32 + 2 zero */
#endif

static int sp_open(const rngsnap_host *host, void **bctx)
{
    sp_backend *b = calloc(1, sizeof *b);
    if (!b)
        return RNGSNAP_E_NOMEM;
    b->host = host;
    b->devices = 2;
    const char *v = host->option(host, "devices");
    if (v)
        b->devices = atoi(v);
    if (b->devices < 1 || b->devices > 8) {
        host->error(host, "devices = '%s': want 1 to 8", v);
        free(b);
        return RNGSNAP_E_CONFIG;
    }
    *bctx = b;
    return RNGSNAP_OK;
}

static void sp_close(void *bctx)
{
    free(bctx);
}

static int sp_device_count(void *bctx, const char **reason)
{
    (void)reason;
    return ((sp_backend *)bctx)->devices;
}

static const char *sp_device_name(void *bctx, int device)
{
    (void)bctx;
    (void)device;
    return "spare test device";
}

static int sp_stream_open(void *bctx, int device, const char *name,
                          void **stream)
{
    (void)name;
    sp_stream *s = calloc(1, sizeof *s);
    if (!s)
        return RNGSNAP_E_NOMEM;
    s->b = bctx;
    s->device = device;
    *stream = s;
    return RNGSNAP_OK;
}

static void sp_stream_close(void *stream)
{
    free(stream);
}

static int sp_seed(void *stream, uint64_t seed, uint64_t subsequence)
{
    sp_stream *s = stream;
    s->seed = seed;
    s->subsequence = subsequence;
    s->offset = 0;
    s->has32 = s->has64 = 0;
    s->spare32 = 0;
    s->spare64 = 0;
    return RNGSNAP_OK;
}

static void put64(uint8_t *b, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        b[i] = (uint8_t)(v >> (8 * i));
}

static uint64_t get64(const uint8_t *b)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = v << 8 | b[i];
    return v;
}

static int sp_get_state(void *stream, void *buf, size_t len)
{
    sp_stream *s = stream;
#ifdef SP_CRASH
    static int *volatile nowhere; /* NULL, unknown to the optimiser */
    if (s->device == 1)
        *nowhere = 1; /* SIGSEGV */
#endif
    if (len != SP_STATE)
        return RNGSNAP_E_INVALID;
    uint8_t *b = buf;
    memset(b, 0, len);
    put64(b, s->seed);
    put64(b + 8, s->subsequence);
#if !defined(SP_NOOFFSET)
    put64(b + 16, s->offset);
#endif
#if SP_STATE == 40u
    uint64_t d;
    uint32_t f;
    memcpy(&d, &s->spare64, 8);
    memcpy(&f, &s->spare32, 4);
    put64(b + 24, d);
    for (int i = 0; i < 4; i++)
        b[32 + i] = (uint8_t)(f >> (8 * i));
    b[36] = s->has64;
    b[37] = s->has32;
#endif
    return RNGSNAP_OK;
}

static int sp_set_state(void *stream, const void *buf, size_t len)
{
    sp_stream *s = stream;
    if (len != SP_STATE)
        return RNGSNAP_E_INVALID;
    const uint8_t *b = buf;
#if SP_STATE == 40u
    if (b[36] > 1 || b[37] > 1 || b[38] || b[39]) {
        s->b->host->error(s->b->host, "bad state: flags or padding");
        return RNGSNAP_E_INVALID;
    }
#endif
    s->seed = get64(b);
    s->subsequence = get64(b + 8);
#if !defined(SP_NOOFFSET)
    s->offset = get64(b + 16);
#endif
#if SP_STATE == 40u
    uint64_t d = get64(b + 24);
    uint32_t f = (uint32_t)b[32] | (uint32_t)b[33] << 8
                 | (uint32_t)b[34] << 16 | (uint32_t)b[35] << 24;
    memcpy(&s->spare64, &d, 8);
    memcpy(&s->spare32, &f, 4);
    s->has64 = b[36];
    s->has32 = b[37];
#endif
    return RNGSNAP_OK;
}

static uint32_t word(sp_stream *s)
{
    uint64_t z = s->seed ^ (s->subsequence * 0x9E3779B97F4A7C15ull)
                 ^ (s->offset++ * 0xBF58476D1CE4E5B9ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return (uint32_t)(z ^ (z >> 31));
}

static double u53(sp_stream *s)
{
    uint64_t w = (uint64_t)word(s) | (uint64_t)word(s) << 32;
    return (double)(w >> 11) * 0x1.0p-53;
}

/* One Box-Muller pair from two (0,1] uniforms. */
static void pair(sp_stream *s, double *z0, double *z1)
{
    double u1 = 1.0 - u53(s), u2 = u53(s);
    double r = sqrt(-2.0 * log(u1));
    *z0 = r * cos(6.283185307179586 * u2);
    *z1 = r * sin(6.283185307179586 * u2);
}

static double normal(sp_stream *s, int f32)
{
#ifdef SP_NOOFFSET
    (void)f32;
    double z0, z1;
    pair(s, &z0, &z1); /* no cache: the second value is dropped */
    return z0;
#else
#ifdef SP_SHARED
    (void)f32;
    uint8_t *has = &s->has64;
#else
    uint8_t *has = f32 ? &s->has32 : &s->has64;
#endif
    if (*has) {
        *has = 0;
#ifndef SP_SHARED
        if (f32)
            return s->spare32;
#endif
        return s->spare64;
    }
    double z0, z1;
    pair(s, &z0, &z1);
    *has = 1;
#ifndef SP_SHARED
    if (f32)
        s->spare32 = (float)z1;
    else
#endif
        s->spare64 = z1;
    return z0;
#endif
}

static int sp_generate(void *stream, rngsnap_dist dist, void *out, size_t n)
{
    sp_stream *s = stream;
    for (size_t i = 0; i < n; i++) {
        switch (dist) {
        case RNGSNAP_U32:
            ((uint32_t *)out)[i] = word(s);
            break;
        case RNGSNAP_U64:
            ((uint64_t *)out)[i] = (uint64_t)word(s) | (uint64_t)word(s) << 32;
            break;
        case RNGSNAP_F32:
            ((float *)out)[i] = (float)(word(s) >> 8) * 0x1.0p-24f;
            break;
        case RNGSNAP_F64:
            ((double *)out)[i] = u53(s);
            break;
        case RNGSNAP_NORMAL_F32:
            ((float *)out)[i] = (float)normal(s, 1);
            break;
        case RNGSNAP_NORMAL_F64:
            ((double *)out)[i] = normal(s, 0);
            break;
        default:
            s->b->host->error(s->b->host, "distribution %d is not drawn by "
                              "this backend (it draws u32, u64, f32, f64, "
                              "normal_f32 and normal_f64)", (int)dist);
            return RNGSNAP_E_UNAVAILABLE;
        }
    }
    return RNGSNAP_OK;
}

static const char *const sp_keys[] = {"devices", NULL};

static const rngsnap_backend sp_table = {
    .abi_version = RNGSNAP_BACKEND_ABI_VERSION,
    .struct_size = sizeof(rngsnap_backend),
    .name = PLUG_NAME,
    .version = "spare-1",
    .state_format = 0x31505053u, /* "SPP1" */
    .state_size = SP_STATE,
    .open = sp_open,
    .close = sp_close,
    .device_count = sp_device_count,
    .device_name = sp_device_name,
    .stream_open = sp_stream_open,
    .stream_close = sp_stream_close,
    .seed = sp_seed,
    .get_state = sp_get_state,
    .set_state = sp_set_state,
    .generate = sp_generate,
    .option_keys = sp_keys,
};

RNGSNAP_PLUGIN_EXPORT const rngsnap_backend *rngsnap_backend_v1(void);
const rngsnap_backend *rngsnap_backend_v1(void)
{
    return &sp_table;
}
