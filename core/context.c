/*
 * context.c - rngsnap_open / rngsnap_close and the rank.
 *
 * Open: read rng.ini -> rank from the launcher's variables -> for each
 * backend in file order: load the plugin, open it, count its devices ->
 * build the registry.  Any failure closes everything opened so far and
 * leaves the message in the thread's open error (rngsnap_errmsg(NULL)).
 *
 * ini_path NULL means: environment variable RNGSNAP_CONFIG if set, else
 * the installed default rng.ini (RNGSNAP_DEFAULT_INI).
 *
 * Rank: rngsnap_set_rank may be called at any time; it affects the next
 * rngsnap_seed_all (subsequence = rank) and what later saves record and
 * later loads compare.  A context never seeded nor loaded keeps its
 * entries at seed_all(0)'s positions for its current rank (seed.c,
 * rs_seed_default): open puts them there, set_rank moves them along.
 *
 * Close: a RNGSNAP_RESUME context that never loaded is reported first
 * (resumed.c); a failed open frees what it built without that report.
 * Open also notes the process's fork generation (fork.h).
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "context.h"
#include "fork.h"
#include "internal.h"
#include "loader.h"
#include "lock.h"
#include "rngsnap_build_config.h"
#include "words.h"

#define RS_OPEN_FLAGS (RNGSNAP_RESUME | RNGSNAP_PROBE_ONLY)
#define RS_DEVICES_MAX 65536

/* ---- rank from the environment ---------------------------------------- */

/* Launchers' variables, in the order they are tried. */
static const struct {
    const char *rank, *size;
} rs_rank_vars[] = {
    {"RANK", "WORLD_SIZE"},                          /* torchrun */
    {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"}, /* Open MPI */
    {"PMI_RANK", "PMI_SIZE"},                        /* MPICH, Slurm PMI */
};

static int env_int(struct rngsnap *ctx, const char *name, const char *v,
                   int *out)
{
    char *end;
    errno = 0;
    long x = strtol(v, &end, 10);
    while (*end == ' ' || *end == '\t' || *end == '\n')
        end++;
    if (errno || end == v || *end || x < INT_MIN || x > INT_MAX)
        return rs_error(ctx, RNGSNAP_E_CONFIG, "environment variable "
                        "%s='%s' is not an integer", name, v);
    *out = (int)x;
    return RNGSNAP_OK;
}

static int rank_from_env(struct rngsnap *ctx)
{
    ctx->rank = 0;
    ctx->world_size = 1;
    for (size_t i = 0; i < sizeof rs_rank_vars / sizeof rs_rank_vars[0];
         i++) {
        const char *rn = rs_rank_vars[i].rank, *sn = rs_rank_vars[i].size;
        const char *r = getenv(rn), *w = getenv(sn);
        if (r && !*r)
            r = NULL;
        if (w && !*w)
            w = NULL;
        if (!r && !w)
            continue;
        if (!r || !w)
            return rs_error(ctx, RNGSNAP_E_CONFIG, "environment variable "
                            "%s is set but %s is not", r ? rn : sn,
                            r ? sn : rn);
        int rank, size, rc;
        if ((rc = env_int(ctx, rn, r, &rank)) || (rc = env_int(ctx, sn, w,
                                                               &size)))
            return rc;
        if (size < 1)
            return rs_error(ctx, RNGSNAP_E_CONFIG, "environment variable "
                            "%s=%d: the world size must be at least 1", sn,
                            size);
        if (rank < 0 || rank >= size)
            return rs_error(ctx, RNGSNAP_E_CONFIG, "environment variable "
                            "%s=%d is outside 0..%d (%s=%d)", rn, rank,
                            size - 1, sn, size);
        ctx->rank = rank;
        ctx->world_size = size;
        return RNGSNAP_OK;
    }
    return RNGSNAP_OK;
}

int rngsnap_set_rank(rngsnap *ctx, int rank, int world_size)
{
    if (!ctx)
        return rs_error(NULL, RNGSNAP_E_INVALID,
                        "rngsnap_set_rank: ctx is NULL");
    if (world_size < 1 || rank < 0 || rank >= world_size)
        return rs_error(ctx, RNGSNAP_E_INVALID, "%s: rank %d with world "
                        "size %d (need world_size >= 1 and 0 <= rank < "
                        "world_size)", rs_word(ctx, RS_W_SET_RANK), rank,
                        world_size);
    rs_ctx_lock(ctx);
    int moved = ctx->rank != rank;
    ctx->rank = rank;
    ctx->world_size = world_size;
    if (moved) /* a never-seeded context's default follows the rank */
        rs_seed_default(ctx);
    rs_ctx_unlock(ctx);
    return RNGSNAP_OK;
}

int rngsnap_get_rank(const rngsnap *ctx, int *rank, int *world_size)
{
    if (!ctx)
        return rs_error(NULL, RNGSNAP_E_INVALID,
                        "rngsnap_get_rank: ctx is NULL");
    /* The lock is not part of the context's value: taking it in a
     * const getter is what makes the pair read consistent. */
    struct rngsnap *c = (struct rngsnap *)ctx;
    rs_ctx_lock(c);
    if (rank)
        *rank = c->rank;
    if (world_size)
        *world_size = c->world_size;
    rs_ctx_unlock(c);
    return RNGSNAP_OK;
}

/* ---- open / close ----------------------------------------------------- */

static void free_context(struct rngsnap *ctx);

/* "rngsnap_rocm" of ".../rngsnap_rocm.so": what `plugin =` would say. */
static const char *near_name(const char *path)
{
    static _Thread_local char name[256];
    const char *base = strrchr(path, '/');
    snprintf(name, sizeof name, "%s", base ? base + 1 : path);
    size_t n = strlen(name);
    if (n > 3 && strcmp(name + n - 3, ".so") == 0)
        name[n - 3] = '\0';
    return name;
}

/* b's plugin could not be used: an optional backend whose plugin file
 * is missing is skipped (absent on this node, like one without a
 * device); in a RNGSNAP_PROBE_ONLY context any refused plugin is marked
 * unavailable with the reason, so that a listing shows every backend.
 * Otherwise the open fails with the loader's code. */
static int plugin_unusable(struct rngsnap *ctx, rs_backend *b, int rc,
                           int missing)
{
    int skip = missing && !b->required;
    if (rc != RNGSNAP_E_PLUGIN || !(skip || (ctx->flags & RNGSNAP_PROBE_ONLY)))
        return rc;
    free(b->reason);
    b->reason = rs_strdup(rngsnap_errmsg(ctx));
    if (!b->reason)
        return rs_error(ctx, RNGSNAP_E_NOMEM, "out of memory");
    b->available = 0;
    b->skipped = skip;
    if (skip && b->near_path) /* likely a typo: never silent (issue 23) */
        rs_warn_default(ctx, "skipping optional backend %s ([backend.%s] at "
                        "%s:%d): plugin '%s' not found; did you mean '%s'? "
                        "(%s is there and would be loaded); until then "
                        "every checkpoint leaves %s out", b->name, b->name,
                        ctx->ini_path, b->section_line, b->plugin,
                        near_name(b->near_path), b->near_path, b->name);
    else
        rs_log(ctx, skip ? RNGSNAP_LOG_INFO : RNGSNAP_LOG_WARN, "%s backend "
               "%s: %s", skip ? "skipping optional" : "probe only: unusable",
               b->name, b->reason);
    return RNGSNAP_OK;
}

/* RNGSNAP_NO_EMULATION set (not empty, not "0"): hardware runners that
 * must fail rather than pass on emulated devices. */
static int no_emulation_env(void)
{
    const char *v = getenv("RNGSNAP_NO_EMULATION");
    return v && *v && strcmp(v, "0") != 0;
}

/* The core's own refusal of emulation under RNGSNAP_NO_EMULATION, for
 * every plugin (the built-in ones already turn emulate_devices off; a
 * third-party one may not): 1 with the reason in buf when b's plugin
 * says its n devices are emulated. */
static int emulation_refused(rs_backend *b, int n, char *buf, size_t len)
{
    if (!no_emulation_env() || !RNGSNAP_BACKEND_HAS(b->vt, emulated))
        return 0;
    RS_TRACE(b, "emulated", NULL);
    if (!b->vt->emulated(b->bctx))
        return 0;
    const char *st = NULL;
    if (RNGSNAP_BACKEND_HAS(b->vt, status)) {
        RS_TRACE(b, "status", NULL);
        st = b->vt->status(b->bctx);
    }
    snprintf(buf, len, "the plugin emulates its %d device%s%s%s%s; "
             "emulation ignored (RNGSNAP_NO_EMULATION is set)", n,
             n == 1 ? "" : "s", st && *st ? " (" : "", st && *st ? st : "",
             st && *st ? ")" : "");
    return 1;
}

/* Load, open and probe one backend. */
static int open_backend(struct rngsnap *ctx, rs_backend *b,
                        const rs_config *cfg)
{
    int missing = 0;
    int rc = rs_plugin_load(ctx, b, cfg, &missing);
    if (rc)
        return plugin_unusable(ctx, b, rc, missing);
    if ((rc = rs_config_check_keys(ctx, b))) /* before the plugin sees them */
        return rc;
    rs_host_init(b);
    void *bctx = NULL;
    unsigned long mark = rs_error_mark();
    RS_TRACE(b, "open", NULL);
    rc = b->vt->open(&b->host, &bctx);
    if (rc)
        return rs_plugin_rc(ctx, b, rc, "open", mark);
    b->bctx = bctx;

    const char *reason = NULL;
    RS_TRACE(b, "device_count", NULL);
    int n = b->vt->device_count(bctx, &reason);
    if (n < 0 || n > RS_DEVICES_MAX)
        return rs_error(ctx, RNGSNAP_E_BACKEND, "backend %s (%s): "
                        "device_count returned %d", b->name, b->plugin_path,
                        n);
    char refused[512];
    if (n > 0 && emulation_refused(b, n, refused, sizeof refused)) {
        n = 0; /* as the built-ins do: no emulated device, and why */
        reason = refused;
        b->emulation_refused = 1;
    }
    b->device_count = n;
    b->available = n > 0;
    if (n > 0)
        return RNGSNAP_OK;

    b->reason = rs_strdup(reason && *reason ? reason
                          : "the plugin found no device and gave no reason");
    if (!b->reason)
        return rs_error(ctx, RNGSNAP_E_NOMEM, "out of memory");
    if (b->required && !(ctx->flags & RNGSNAP_PROBE_ONLY))
        return rs_error(ctx, RNGSNAP_E_UNAVAILABLE, "backend %s is required "
                        "([backend.%s] at %s:%d) but has no device: %s "
                        "(plugin %s); set 'required = false' to skip it "
                        "where it is absent", b->name, b->name,
                        ctx->ini_path, b->section_line, b->reason,
                        b->plugin_path);
    if (!b->required) {
        b->skipped = 1;
        rs_log(ctx, RNGSNAP_LOG_INFO, "skipping optional backend %s: %s",
               b->name, b->reason);
    } else {
        rs_log(ctx, RNGSNAP_LOG_WARN, "required backend %s has no device "
               "(probe only): %s", b->name, b->reason);
    }
    return RNGSNAP_OK;
}

int rngsnap_open(rngsnap **out, const char *ini_path, unsigned flags)
{
    rs_set_open_error("");
    if (!out)
        return rs_error(NULL, RNGSNAP_E_INVALID,
                        "rngsnap_open: ctx pointer is NULL");
    *out = NULL;
    if (flags & ~RS_OPEN_FLAGS)
        return rs_error(NULL, RNGSNAP_E_INVALID, "rngsnap_open: unknown "
                        "flag bits 0x%x", flags & ~RS_OPEN_FLAGS);
    if (!ini_path) {
        ini_path = rs_path_env(NULL, "RNGSNAP_CONFIG"); /* not if setuid */
        if (!ini_path)
            ini_path = RNGSNAP_DEFAULT_INI;
    }
    struct rngsnap *ctx = calloc(1, sizeof *ctx);
    if (!ctx)
        return rs_error(NULL, RNGSNAP_E_NOMEM, "out of memory");
    ctx->id = rs_new_ctx_id();
    ctx->fork_gen = rs_fork_track(); /* this process's, fork.h */
    pthread_mutex_init(&ctx->lock, NULL);
    ctx->flags = flags;
    ctx->awaiting_load = (flags & RNGSNAP_RESUME) ? 1 : 0;
    ctx->loaded = 0;
    ctx->log_level = RS_LOG_UNSET;

    rs_config cfg;
    int rc = rs_config_load(ctx, ini_path, &cfg);
    /* Once per context: draws test this field, never the environment. */
    ctx->trace = rs_log_level(ctx) >= RNGSNAP_LOG_DEBUG;
    if (!rc)
        rc = rank_from_env(ctx);
    for (size_t i = 0; !rc && i < ctx->nbackends; i++)
        rc = open_backend(ctx, &ctx->backends[i], &cfg);
    if (!rc)
        rc = rs_registry_build(ctx);
    rs_config_free(&cfg);
    if (rc) {
        rs_set_open_error(rngsnap_errmsg(ctx));
        free_context(ctx); /* no close report: the job never had it */
        return rc;
    }
    ctx->usable = rs_check_usable(ctx) == RNGSNAP_OK;
    rs_seed_default(ctx); /* entries apart even before any seeding */
    rs_error_clear(ctx); /* what a successful open noted is no error */
    *out = ctx;
    return RNGSNAP_OK;
}

void rngsnap_close(rngsnap *ctx)
{
    if (!ctx)
        return;
    rs_close_report(ctx); /* resumed.c: a RESUME context that never loaded */
    free_context(ctx);
}

static void free_context(struct rngsnap *ctx)
{
    rs_ledger_close(ctx);
    rs_registry_free(ctx);
    /* Streams are closed; now each backend context, then its plugin:
     * nothing points into a plugin when it is unloaded. */
    for (size_t i = ctx->nbackends; i-- > 0;) {
        rs_backend *b = &ctx->backends[i];
        if (b->vt && b->bctx) {
            RS_TRACE(b, "close", NULL);
            b->vt->close(b->bctx);
        }
        b->bctx = NULL;
        rs_plugin_unload(b);
        rs_backend_free_config(b);
    }
    free(ctx->backends);
    for (size_t i = 0; i < ctx->napps; i++)
        free(ctx->apps[i].name);
    free(ctx->apps);
    free(ctx->ini_path);
    pthread_mutex_destroy(&ctx->lock);
    free(ctx);
}
