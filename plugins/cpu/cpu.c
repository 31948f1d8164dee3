/*
 * cpu.c - the "cpu" backend: Philox4x32-10 streams in host memory on one
 * device, the host CPU.  Options of [backend.cpu]:
 *   threads = N   worker threads for large fills (default 1, 0 = online
 *                 CPUs); results never depend on N
 *   isa = auto|scalar|avx2|avx512   engine path (RNGSNAP_PHILOX_ISA, when
 *                 set, overrides it, as RNGSNAP_PLUGIN_PATH does plugin_dir)
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rngsnap/backend.h>

#include "cpu_pool.h"
#include "philox.h"
#include "philox_isa.h"
#include "philox_stream.h"
#include "plugin_options.h"

#define CPU_MAX_THREADS 256
/* Fills smaller than this stay on the calling thread (waking workers
 * costs more than it saves). */
#define CPU_PARALLEL_MIN ((size_t)1 << 20)
/* Pieces of a split fill are multiples of this many blocks. */
#define CPU_SPLIT_BLOCKS 1024

typedef struct cpu_ctx {
    const rngsnap_host *host;
    philox_isa isa;   /* resolved, never AUTO */
    int isa_from_env; /* RNGSNAP_PHILOX_ISA chose it */
    unsigned threads;
    cpu_pool *pool;   /* NULL when threads == 1 */
    char device[128];
    char status[256];
} cpu_ctx;

/* ---- options ------------------------------------------------------------ */

static int cpu_parse_threads(void *pctx, const char *v, int line)
{
    cpu_ctx *c = pctx;
    long t;
    if (plugin_parse_long(v, 0, CPU_MAX_THREADS, &t) != 0) {
        c->host->error(c->host,
                       "%s:%d: threads = %s: expected an integer 0..%d "
                       "(0 = number of online CPUs)", c->host->ini_path,
                       line, v, CPU_MAX_THREADS);
        return RNGSNAP_E_CONFIG;
    }
    if (t == 0) {
        long online = sysconf(_SC_NPROCESSORS_ONLN);
        t = online < 1 ? 1 : online > CPU_MAX_THREADS ? CPU_MAX_THREADS
                                                      : online;
    }
    c->threads = (unsigned)t;
    return RNGSNAP_OK;
}

static int cpu_parse_isa(void *pctx, const char *v, int line)
{
    cpu_ctx *c = pctx;
    int isa = philox_isa_parse(v);
    if (isa < 0) {
        c->host->error(c->host,
                       "%s:%d: isa = %s: expected auto, scalar, avx2, "
                       "avx512 or neon", c->host->ini_path, line, v);
        return RNGSNAP_E_CONFIG;
    }
    if (!philox_isa_supported((philox_isa)isa)) {
        c->host->error(c->host,
                       "%s:%d: isa = %s: this processor does not "
                       "support it", c->host->ini_path, line, v);
        return RNGSNAP_E_CONFIG;
    }
    c->isa = (philox_isa)isa;
    return RNGSNAP_OK;
}

static const plugin_option cpu_options[] = {
    {"threads", cpu_parse_threads},
    {"isa", cpu_parse_isa},
};

/* The same keys for the core (rngsnap_backend.option_keys), which refuses
 * any other key with a did-you-mean before open(). */
static const char *const cpu_option_keys[] = {"threads", "isa", NULL};

/* The CPU model from /proc/cpuinfo, else "cpu0". */
static void cpu_model_name(char *buf, size_t len)
{
    snprintf(buf, len, "cpu0");
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (f == NULL)
        return;
    char line[256];
    while (fgets(line, sizeof line, f) != NULL) {
        if (strncmp(line, "model name", 10) != 0)
            continue;
        const char *v = strchr(line, ':');
        if (v == NULL)
            break;
        v++;
        while (*v == ' ' || *v == '\t')
            v++;
        size_t l = strcspn(v, "\n");
        if (l > 0)
            snprintf(buf, len, "%.*s", (int)l, v);
        break;
    }
    fclose(f);
}

/* ---- backend ------------------------------------------------------------ */

static int cpu_open(const rngsnap_host *host, void **bctx)
{
    cpu_ctx *c = calloc(1, sizeof *c);
    if (c == NULL)
        return RNGSNAP_E_NOMEM;
    c->host = host;
    c->threads = 1;
    c->isa = PHILOX_ISA_AUTO;
    int rc = plugin_read_options(host, cpu_options,
                                 sizeof cpu_options / sizeof *cpu_options,
                                 c);
    if (rc != RNGSNAP_OK) {
        free(c);
        return rc;
    }
    const char *env = getenv("RNGSNAP_PHILOX_ISA");
    philox_isa want = c->isa;
    if (env != NULL && *env != '\0') {
        want = PHILOX_ISA_AUTO; /* the engine reads the variable */
        c->isa_from_env = 1;
    }
    const char *why = NULL;
    rc = philox_isa_resolve(want, &c->isa, &why);
    if (rc != RNGSNAP_OK) {
        host->error(host, "%s", why ? why : "no usable engine path");
        free(c);
        return RNGSNAP_E_CONFIG;
    }
    if (c->threads > 1) {
        int e = cpu_pool_new(c->threads, &c->pool);
        if (e != 0) {
            host->error(host, "cannot start %u threads: %s", c->threads,
                        strerror(e));
            free(c);
            return e == ENOMEM ? RNGSNAP_E_NOMEM : RNGSNAP_E_BACKEND;
        }
    }
    cpu_model_name(c->device, sizeof c->device);
    char stores[64];
    if (px_tune.nt_min == SIZE_MAX)
        snprintf(stores, sizeof stores, "plain stores");
    else
        snprintf(stores, sizeof stores, "%s from %zu KiB",
                 px_tune.nt_probe ? "store kind measured"
                                  : "non-temporal stores",
                 px_tune.nt_min >> 10);
    snprintf(c->status, sizeof c->status,
             "Philox4x32-10, %s path%s, %u thread%s, large fills: %s row, %s",
             philox_isa_name(c->isa),
             c->isa_from_env ? " (RNGSNAP_PHILOX_ISA)" : "", c->threads,
             c->threads == 1 ? "" : "s", px_tune.family, stores);
    host->log(host, RNGSNAP_LOG_INFO, "%s", c->status);
    *bctx = c;
    return RNGSNAP_OK;
}

static void cpu_close(void *bctx)
{
    cpu_ctx *c = bctx;
    if (c == NULL)
        return;
    cpu_pool_free(c->pool);
    free(c);
}

static int cpu_device_count(void *bctx, const char **reason)
{
    (void)bctx;
    if (reason != NULL)
        *reason = NULL;
    return 1;
}

static const char *cpu_device_name(void *bctx, int device)
{
    cpu_ctx *c = bctx;
    return device == 0 ? c->device : NULL;
}

static int cpu_stream_open(void *bctx, int device, const char *name,
                           void **stream)
{
    cpu_ctx *c = bctx;
    (void)name;
    if (device != 0)
        return RNGSNAP_E_INVALID;
    int rc = philox_stream_new(bctx, device, sizeof(philox_stream), stream);
    if (rc == RNGSNAP_OK)
        ((philox_stream *)*stream)->isa = c->isa;
    return rc;
}

/* A fill split across the pool: piece i covers units [u0, u1) of the
 * whole fill, each boundary a whole number of blocks from the start of
 * the first whole block, so every piece but the first starts a block. */
typedef struct cpu_split {
    rngsnap_philox start;
    rngsnap_dist dist;
    char *out;
    size_t n;          /* values in the whole fill */
    unsigned uw, uv;   /* unit words, unit values  */
    size_t size;       /* bytes per value          */
    size_t bounds[CPU_MAX_THREADS + 1]; /* unit boundaries */
    philox_isa isa;
    int rc[CPU_MAX_THREADS];
} cpu_split;

static void cpu_split_task(void *arg, unsigned i)
{
    cpu_split *s = arg;
    size_t u0 = s->bounds[i], u1 = s->bounds[i + 1];
    size_t v0 = u0 * s->uv, v1 = u1 * s->uv < s->n ? u1 * s->uv : s->n;
    rngsnap_philox pos = s->start;
    pos.offset += (uint64_t)u0 * s->uw;
    s->rc[i] = v1 > v0 ? philox_generate_isa(&pos, s->dist,
                                             s->out + v0 * s->size, v1 - v0,
                                             s->isa)
                       : RNGSNAP_OK;
}

static int cpu_generate(void *stream, rngsnap_dist dist, void *out, size_t n)
{
    philox_stream *ps = stream;
    cpu_ctx *c = ps->bctx;
    unsigned size = philox_value_size(dist);
    if (size == 0) {
        c->host->error(c->host, "unknown distribution %d", (int)dist);
        return RNGSNAP_E_INVALID;
    }
    if (n < CPU_PARALLEL_MIN / size || n > SIZE_MAX / 16 ||
        !cpu_pool_usable(c->pool)) /* no pool, or a fork child */
        return philox_generate_cached(&ps->pos, &ps->cache, dist, out, n,
                                      ps->isa);
    uint64_t words = philox_words_for(dist, n);
    if (out == NULL || words > UINT64_MAX - ps->pos.offset)
        return RNGSNAP_E_INVALID;

    cpu_split s = {.start = ps->pos, .dist = dist, .out = out, .n = n,
                   .uw = philox_unit_words(dist),
                   .uv = philox_unit_values(dist), .size = size,
                   .isa = (philox_isa)ps->isa};
    size_t units = (n + s.uv - 1) / s.uv;
    uint64_t off = ps->pos.offset;
    size_t head = off % s.uw == 0 ? (size_t)((4 - off % 4) % 4) / s.uw : 0;
    if (head > units)
        head = units;
    size_t grain = (size_t)CPU_SPLIT_BLOCKS * 4 / s.uw; /* units */
    size_t chunks = (units - head + grain - 1) / grain;
    unsigned t = cpu_pool_size(c->pool);
    size_t per = (chunks + t - 1) / t * grain;
    for (unsigned i = 0; i <= t; i++) {
        size_t b = i == 0 ? 0 : head + (size_t)i * per;
        s.bounds[i] = b > units || i == t ? units : b;
    }
    cpu_pool_run(c->pool, cpu_split_task, &s);
    for (unsigned i = 0; i < t; i++)
        if (s.rc[i] != RNGSNAP_OK)
            return s.rc[i];
    ps->pos.offset += words;
    return RNGSNAP_OK;
}

static rngsnap_memory cpu_memory(void *stream)
{
    (void)stream;
    return RNGSNAP_MEMORY_HOST;
}

static const char *cpu_status(void *bctx)
{
    return ((cpu_ctx *)bctx)->status;
}

static int cpu_emulated(void *bctx)
{
    (void)bctx;
    return 0;
}

static const rngsnap_backend cpu_backend = {
    .abi_version = RNGSNAP_BACKEND_ABI_VERSION,
    .struct_size = sizeof(rngsnap_backend),
    .name = "cpu",
    .version = RNGSNAP_VERSION_STRING,
    .state_format = RNGSNAP_STATE_PHILOX4X32_10,
    .state_size = RNGSNAP_STATE_PHILOX_SIZE,
    .open = cpu_open,
    .close = cpu_close,
    .device_count = cpu_device_count,
    .device_name = cpu_device_name,
    .stream_open = cpu_stream_open,
    .stream_close = philox_stream_free,
    .seed = philox_stream_seed,
    .get_state = philox_stream_get_state,
    .set_state = philox_stream_set_state,
    .generate = cpu_generate,
    .reserve = philox_stream_reserve,
    .memory = cpu_memory,
    .validate_state = philox_stream_validate_state,
    .status = cpu_status,
    .emulated = cpu_emulated,
    .option_keys = cpu_option_keys,
};

RNGSNAP_PLUGIN_EXPORT const rngsnap_backend *rngsnap_backend_v1(void)
{
    return &cpu_backend;
}
