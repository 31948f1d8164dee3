/*
 * devicekit.c - the backend table shared by the device plugins: options,
 * emulation, probing at open, per-device Philox streams and generation.
 *
 * Emulation is a test aid and always says so: with emulate_devices = N the
 * backend has N devices "<prefix><i> (emulated)" in host memory, its status
 * line and the log say "emulating", and emulated() is true.  When a real
 * runtime with devices is also present, emulation still wins (a CI config
 * stays deterministic) and the status line and a warning name the real
 * devices that are not used.  RNGSNAP_NO_EMULATION=1 in the environment
 * turns every emulate_devices off, so that hardware runners use the same
 * cluster files and a required backend without devices fails the open.
 */
#include "devicekit.h"

#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "philox.h"
#include "plugin_options.h"

#define DK_STATUS_LEN 1024

typedef struct dk_ctx {
    const dk_vendor *vendor;
    const rngsnap_host *host;
    dk_probe probe;       /* what the real runtime reported             */
    int emulate;          /* emulate_devices (0: off)                   */
    int no_emulation_env; /* RNGSNAP_NO_EMULATION overrode emulate      */
    int emulation_forbidden; /* RNGSNAP_NO_EMULATION is set              */
    int count;            /* devices this backend exposes               */
    char emu_name[DK_MAX_DEVICES][DK_NAME_LEN];
    char status[DK_STATUS_LEN];
} dk_ctx;

typedef struct dk_stream {
    philox_stream ps; /* first member: the philox_stream_* functions work */
} dk_stream;

/* ---- options ----------------------------------------------------------- */

static int dk_parse_emulate(void *pctx, const char *value, int line)
{
    dk_ctx *c = pctx;
    long v;
    if (plugin_parse_long(value, 0, DK_MAX_DEVICES, &v) != 0) {
        c->host->error(c->host, "%s:%d: emulate_devices = '%s' is not a "
                       "number of devices from 0 to %d", c->host->ini_path,
                       line, value, DK_MAX_DEVICES);
        return RNGSNAP_E_CONFIG;
    }
    c->emulate = (int)v;
    return RNGSNAP_OK;
}

static int dk_parse_runtime_library(void *pctx, const char *value, int line)
{
    dk_ctx *c = pctx;
    if (value[0] == '\0') {
        c->host->error(c->host, "%s:%d: runtime_library is empty",
                       c->host->ini_path, line);
        return RNGSNAP_E_CONFIG;
    }
    c->probe.library = value; /* the host keeps option strings alive */
    return RNGSNAP_OK;
}

/* The keys devicekit understands; anything else in the section is an
 * error naming the key and its line. */
static const plugin_option dk_options[] = {
    {"emulate_devices", dk_parse_emulate},
    {"runtime_library", dk_parse_runtime_library},
};

/* The same keys for the core (rngsnap_backend.option_keys), which refuses
 * any other key with a did-you-mean before open(). */
static const char *const dk_option_keys[] = {"emulate_devices",
                                             "runtime_library", NULL};

static int dk_read_options(dk_ctx *c)
{
    int rc = plugin_read_options(c->host, dk_options,
                                 sizeof dk_options / sizeof *dk_options, c);
    if (rc != RNGSNAP_OK)
        return rc;
    const char *env = getenv("RNGSNAP_NO_EMULATION");
    c->emulation_forbidden = env != NULL && env[0] != '\0'
                             && strcmp(env, "0") != 0;
    if (c->emulate > 0 && c->emulation_forbidden) {
        c->no_emulation_env = 1;
        c->emulate = 0;
    }
    return RNGSNAP_OK;
}

static int dk_on_device(const dk_ctx *c)
{
    return c->emulate == 0 && c->vendor->memory == RNGSNAP_MEMORY_DEVICE
           && c->vendor->fill != NULL;
}

/* ---- status ------------------------------------------------------------ */

static void dk_append(char *buf, size_t len, const char *fmt, ...)
{
    size_t used = strlen(buf);
    if (used + 1 >= len)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf + used, len - used, fmt, ap);
    va_end(ap);
}

static void dk_make_status(dk_ctx *c)
{
    const dk_vendor *v = c->vendor;
    char *s = c->status;
    s[0] = '\0';
    if (c->emulate > 0) {
        dk_append(s, DK_STATUS_LEN, "emulating %d device%s in host memory "
                  "(emulate_devices = %d)", c->emulate,
                  c->emulate == 1 ? "" : "s", c->emulate);
        if (c->probe.count > 0)
            dk_append(s, DK_STATUS_LEN, "; %d real device%s found by %s "
                      "NOT used", c->probe.count,
                      c->probe.count == 1 ? "" : "s", v->runtime);
    } else if (c->probe.count > 0) {
        dk_append(s, DK_STATUS_LEN, "%d device%s via %s, output in %s "
                  "memory", c->probe.count,
                  c->probe.count == 1 ? "" : "s", v->runtime,
                  dk_on_device(c) ? "device" : "host");
    } else {
        dk_append(s, DK_STATUS_LEN, "0 devices: %s", c->probe.reason);
    }
    if (c->no_emulation_env && c->count > 0) /* else the reason says it */
        dk_append(s, DK_STATUS_LEN, "; emulate_devices ignored "
                  "(RNGSNAP_NO_EMULATION is set)");
    if (v->build_note != NULL)
        dk_append(s, DK_STATUS_LEN, "; %s", v->build_note);
}

/* ---- backend members --------------------------------------------------- */

/* One vendor per plugin file.  Atomic: contexts may be opened on several
 * threads at once, and each open stores the (same) pointer again. */
static const dk_vendor *_Atomic dk_the_vendor;

static int dk_open(const rngsnap_host *host, void **bctx)
{
    const dk_vendor *v = atomic_load_explicit(&dk_the_vendor,
                                              memory_order_acquire);
    dk_ctx *c = calloc(1, sizeof *c);
    if (c == NULL) {
        host->error(host, "out of memory");
        return RNGSNAP_E_NOMEM;
    }
    c->vendor = v;
    c->host = host;
    c->probe.host = host;
    c->probe.library = v->library;
    int rc = dk_read_options(c);
    if (rc != RNGSNAP_OK) {
        free(c);
        return rc;
    }
    /* Probe even when emulating, so the status can say that real devices
     * are present and not used. */
    v->probe(&c->probe);
    if (c->probe.count < 0)
        c->probe.count = 0;
    if (c->probe.count > DK_MAX_DEVICES)
        c->probe.count = DK_MAX_DEVICES;
    if (c->probe.count == 0 && c->probe.reason[0] == '\0')
        dk_reason(&c->probe, "%s reported no devices", v->runtime);
    /* What else can be done, said once here for every vendor: emulation,
     * but only where RNGSNAP_NO_EMULATION does not forbid it. */
    if (c->probe.count == 0 && c->emulate == 0) {
        if (c->no_emulation_env)
            dk_append(c->probe.reason, sizeof c->probe.reason,
                      "; emulate_devices ignored (RNGSNAP_NO_EMULATION is "
                      "set)");
        else if (!c->emulation_forbidden)
            dk_append(c->probe.reason, sizeof c->probe.reason,
                      "; to run without the hardware, set emulate_devices");
    }

    if (c->emulate > 0) {
        c->count = c->emulate;
        for (int i = 0; i < c->emulate; i++)
            snprintf(c->emu_name[i], DK_NAME_LEN, "%s%d (emulated)",
                     v->device_prefix, i);
    } else {
        c->count = c->probe.count;
    }
    dk_make_status(c);
    if (c->emulate > 0 && c->probe.count > 0)
        host->log(host, RNGSNAP_LOG_WARN, "%s: %s", v->name, c->status);
    else
        host->log(host, c->emulate > 0 ? RNGSNAP_LOG_INFO
                                       : RNGSNAP_LOG_DEBUG,
                  "%s: %s", v->name, c->status);
    *bctx = c;
    return RNGSNAP_OK;
}

static void dk_close(void *bctx)
{
    dk_ctx *c = bctx;
    if (c == NULL)
        return;
    if (c->vendor->release != NULL)
        c->vendor->release(&c->probe);
    free(c);
}

static int dk_device_count(void *bctx, const char **reason)
{
    dk_ctx *c = bctx;
    if (reason != NULL)
        *reason = c->count == 0 ? c->probe.reason : NULL;
    return c->count;
}

static const char *dk_device_name(void *bctx, int device)
{
    dk_ctx *c = bctx;
    if (device < 0 || device >= c->count)
        return NULL;
    return c->emulate > 0 ? c->emu_name[device] : c->probe.name[device];
}

static const char *dk_status(void *bctx)
{
    return ((dk_ctx *)bctx)->status;
}

static int dk_emulated(void *bctx)
{
    return ((dk_ctx *)bctx)->emulate > 0;
}

static int dk_stream_open(void *bctx, int device, const char *name,
                          void **stream)
{
    dk_ctx *c = bctx;
    if (device < 0 || device >= c->count) {
        c->host->error(c->host, "stream '%s': device %d out of range "
                       "(%d devices)", name, device, c->count);
        return RNGSNAP_E_INVALID;
    }
    return philox_stream_new(bctx, device, sizeof(dk_stream), stream);
}

static rngsnap_memory dk_memory(void *stream)
{
    const dk_stream *s = stream;
    return dk_on_device(s->ps.bctx) ? RNGSNAP_MEMORY_DEVICE
                                    : RNGSNAP_MEMORY_HOST;
}

static int dk_generate(void *stream, rngsnap_dist dist, void *out, size_t n)
{
    dk_stream *s = stream;
    dk_ctx *c = s->ps.bctx;
    /* Emulated too: a refused value is reported (rngsnap plugin-check). */
    if ((unsigned)dist >= RNGSNAP_DIST_COUNT) {
        c->host->error(c->host, "unknown distribution %d", (int)dist);
        return RNGSNAP_E_INVALID;
    }
    if (!dk_on_device(c))
        return philox_stream_generate(stream, dist, out, n);
    if (n == 0)
        return RNGSNAP_OK;
    if (out == NULL) {
        c->host->error(c->host, "generate: out is NULL");
        return RNGSNAP_E_INVALID;
    }
    if (philox_words_for(dist, n) > UINT64_MAX - s->ps.pos.offset) {
        c->host->error(c->host, "generate: %zu values would run past the "
                       "end of the stream (64-bit word offset)", n);
        return RNGSNAP_E_INVALID;
    }
    dk_fill f = {c->host, c->probe.vendor_state, s->ps.device, s->ps.pos,
                 dist, out, n};
    int rc = c->vendor->fill(&f);
    if (rc == RNGSNAP_OK)
        s->ps.pos.offset += philox_words_for(dist, n);
    return rc;
}

/* ---- the table --------------------------------------------------------- */

static rngsnap_backend dk_table;
static pthread_once_t dk_once = PTHREAD_ONCE_INIT;

static void dk_build_table(void)
{
    const dk_vendor *v = atomic_load_explicit(&dk_the_vendor,
                                              memory_order_acquire);
    dk_table = (rngsnap_backend){
        .abi_version = RNGSNAP_BACKEND_ABI_VERSION,
        .struct_size = sizeof(rngsnap_backend),
        .name = v->name,
        .version = v->version,
        .state_format = RNGSNAP_STATE_PHILOX4X32_10,
        .state_size = RNGSNAP_STATE_PHILOX_SIZE,
        .open = dk_open,
        .close = dk_close,
        .device_count = dk_device_count,
        .device_name = dk_device_name,
        .stream_open = dk_stream_open,
        .stream_close = philox_stream_free,
        .seed = philox_stream_seed,
        .get_state = philox_stream_get_state,
        .set_state = philox_stream_set_state,
        .generate = dk_generate,
        .reserve = philox_stream_reserve,
        .memory = dk_memory,
        .validate_state = philox_stream_validate_state,
        .status = dk_status,
        .emulated = dk_emulated,
        .option_keys = dk_option_keys,
    };
}

const rngsnap_backend *devicekit_backend(const dk_vendor *v)
{
    /* The same pointer on every call from this file. */
    atomic_store_explicit(&dk_the_vendor, v, memory_order_release);
    pthread_once(&dk_once, dk_build_table);
    return &dk_table;
}
