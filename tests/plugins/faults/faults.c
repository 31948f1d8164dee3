/*
 * faults.c - third-party-style test backends (not installed) for the
 * core's own safeguards (issue 23), built from this one source:
 *
 *   FAULT_EMULATES   "emuext": 2 devices whose emulated() is true and which
 *                    ignore RNGSNAP_NO_EMULATION (as a plugin the project
 *                    does not ship may), so only the core can refuse them;
 *   FAULT_CRASH_GET  "crashy": get_state dereferences NULL (SIGSEGV), so
 *                    the core's debug trace must name the call in flight;
 *   FAULT_OWN_F32    "ownconv": a PHX1 state whose f32 values are its own
 *                    conversion of the engine's words (23 bits, not 24), so
 *                    `rngsnap plugin-check` must find them unlike the engine's.
 *
 * Streams are Philox positions drawn through host->philox_generate.
 */
#include <stdlib.h>

#include <rngsnap/backend.h>

#ifndef FAULT_NAME
#error "build with -DFAULT_NAME=\"...\""
#endif

typedef struct f_stream {
    rngsnap_philox pos;
    const rngsnap_host *host;
} f_stream;

static int f_open(const rngsnap_host *host, void **bctx)
{
    if (!RNGSNAP_HOST_HAS(host, philox_generate)) {
        host->error(host, "no engine in the host table");
        return RNGSNAP_E_PLUGIN;
    }
    *bctx = (void *)host;
    return RNGSNAP_OK;
}

static void f_close(void *bctx)
{
    (void)bctx;
}

static int f_device_count(void *bctx, const char **reason)
{
    (void)bctx, (void)reason;
    return 2;
}

static const char *f_device_name(void *bctx, int device)
{
    (void)bctx;
    return device == 0 ? FAULT_NAME "0" : device == 1 ? FAULT_NAME "1" : NULL;
}

static int f_stream_open(void *bctx, int device, const char *name,
                         void **stream)
{
    (void)device, (void)name;
    f_stream *s = calloc(1, sizeof *s);
    if (!s)
        return RNGSNAP_E_NOMEM;
    s->host = bctx;
    *stream = s;
    return RNGSNAP_OK;
}

static void f_stream_close(void *stream)
{
    free(stream);
}

static int f_seed(void *stream, uint64_t seed, uint64_t subsequence)
{
    f_stream *s = stream;
    s->pos = (rngsnap_philox){seed, subsequence, 0};
    return RNGSNAP_OK;
}

/* The crash is on purpose: UBSan must not turn it into a report and an
 * exit (scripts/test.sh's ASan + UBSan build), the process must die of
 * SIGSEGV as it would in a user's job. */
#if defined(FAULT_CRASH_GET) && defined(__GNUC__)
__attribute__((no_sanitize("undefined")))
#endif
static int f_get_state(void *stream, void *buf, size_t len)
{
    f_stream *s = stream;
#ifdef FAULT_CRASH_GET
    *(volatile int *)NULL = 1; /* the crash the trace must name */
#endif
    if (len != RNGSNAP_STATE_PHILOX_SIZE)
        return RNGSNAP_E_INVALID;
    rngsnap_philox_state_put(&s->pos, buf);
    return RNGSNAP_OK;
}

static int f_set_state(void *stream, const void *buf, size_t len)
{
    f_stream *s = stream;
    if (len != RNGSNAP_STATE_PHILOX_SIZE)
        return RNGSNAP_E_INVALID;
    rngsnap_philox_state_get(buf, &s->pos);
    return RNGSNAP_OK;
}

static int f_generate(void *stream, rngsnap_dist dist, void *out, size_t n)
{
    f_stream *s = stream;
#ifdef FAULT_OWN_F32
    /* Its own float conversion of the engine's words: 23 bits, not 24. */
    if (dist == RNGSNAP_F32) {
        int rc = s->host->philox_generate(&s->pos, RNGSNAP_U32, out, n);
        for (size_t i = 0; rc == RNGSNAP_OK && i < n; i++) {
            uint32_t w = ((uint32_t *)out)[i];
            ((float *)out)[i] = (float)(w >> 9) * 0x1p-23f;
        }
        return rc;
    }
#endif
    int rc = s->host->philox_generate(&s->pos, dist, out, n);
    if (rc != RNGSNAP_OK)
        s->host->error(s->host, "the engine refused distribution %d (code "
                       "%d)", (int)dist, rc);
    return rc;
}

static const char *f_status(void *bctx)
{
    (void)bctx;
#ifdef FAULT_EMULATES
    return "emulating 2 accelerators in host memory (test plugin)";
#else
    return "2 test devices in host memory";
#endif
}

static int f_emulated(void *bctx)
{
    (void)bctx;
#ifdef FAULT_EMULATES
    return 1;
#else
    return 0;
#endif
}

static const char *const f_keys[] = {NULL};

static const rngsnap_backend f_backend = {
    .abi_version = RNGSNAP_BACKEND_ABI_VERSION,
    .struct_size = sizeof(rngsnap_backend),
    .name = FAULT_NAME,
    .version = "0.1",
    .state_format = RNGSNAP_STATE_PHILOX4X32_10,
    .state_size = RNGSNAP_STATE_PHILOX_SIZE,
    .open = f_open,
    .close = f_close,
    .device_count = f_device_count,
    .device_name = f_device_name,
    .stream_open = f_stream_open,
    .stream_close = f_stream_close,
    .seed = f_seed,
    .get_state = f_get_state,
    .set_state = f_set_state,
    .generate = f_generate,
    .status = f_status,
    .emulated = f_emulated,
    .option_keys = f_keys,
};

RNGSNAP_PLUGIN_EXPORT const rngsnap_backend *rngsnap_backend_v1(void)
{
    return &f_backend;
}
