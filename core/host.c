/*
 * host.c - the services table (rngsnap_host) each plugin receives: its own
 * rng.ini options, error reporting into the context's message, logging,
 * the Philox engine.
 *
 * Log lines go to stderr when their level is at most the effective level:
 * environment variable RNGSNAP_LOG (none|error|warn|info|debug or -1..3)
 * if set and valid, else the ini's [rngsnap] log key, else nothing.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "context.h"
#include "internal.h"

int rs_log_level_parse(const char *s)
{
    static const struct {
        const char *word;
        int level;
    } levels[] = {
        {"none", -1}, {"off", -1}, {"-1", -1},
        {"error", RNGSNAP_LOG_ERROR}, {"0", RNGSNAP_LOG_ERROR},
        {"warn", RNGSNAP_LOG_WARN}, {"warning", RNGSNAP_LOG_WARN},
        {"1", RNGSNAP_LOG_WARN},
        {"info", RNGSNAP_LOG_INFO}, {"2", RNGSNAP_LOG_INFO},
        {"debug", RNGSNAP_LOG_DEBUG}, {"3", RNGSNAP_LOG_DEBUG},
    };
    for (size_t i = 0; s && i < sizeof levels / sizeof levels[0]; i++)
        if (strcasecmp(s, levels[i].word) == 0)
            return levels[i].level;
    return -2;
}

int rs_log_level(const struct rngsnap *ctx)
{
    int lv = rs_log_level_parse(getenv("RNGSNAP_LOG"));
    if (lv != -2)
        return lv;
    return ctx ? ctx->log_level : -1;
}

static const char *const rs_level_names[] = {"error", "warn", "info",
                                             "debug"};

static void vlog(const struct rngsnap *ctx, const char *who, int level,
                 const char *fmt, va_list ap)
{
    if (level < RNGSNAP_LOG_ERROR || level > RNGSNAP_LOG_DEBUG
        || level > rs_log_level(ctx))
        return;
    char line[1024];
    vsnprintf(line, sizeof line, fmt, ap);
    fprintf(stderr, "rngsnap %s%s%s: %s\n", rs_level_names[level],
            who ? " " : "", who ? who : "", line);
}

void rs_log(const struct rngsnap *ctx, int level, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vlog(ctx, NULL, level, fmt, ap);
    va_end(ap);
}

void rs_warn_default(const struct rngsnap *ctx, const char *fmt, ...)
{
    int unset = rs_log_level_parse(getenv("RNGSNAP_LOG")) == -2
                && (!ctx || ctx->log_level == RS_LOG_UNSET);
    if (!unset && rs_log_level(ctx) < RNGSNAP_LOG_WARN)
        return;
    char line[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    fprintf(stderr, "rngsnap warn: %s\n", line);
}

/* ---- the services ------------------------------------------------------ */

static const rs_backend *host_backend(const rngsnap_host *host)
{
    return host ? (const rs_backend *)host->core : NULL;
}

static const char *host_option(const rngsnap_host *host, const char *key)
{
    const rs_backend *b = host_backend(host);
    if (!b || !key)
        return NULL;
    for (size_t i = 0; i < b->noptions; i++)
        if (strcmp(b->options[i].key, key) == 0)
            return b->options[i].value;
    return NULL;
}

static size_t host_option_count(const rngsnap_host *host)
{
    const rs_backend *b = host_backend(host);
    return b ? b->noptions : 0;
}

static int host_option_at(const rngsnap_host *host, size_t i,
                          const char **key, const char **value, int *line)
{
    const rs_backend *b = host_backend(host);
    if (!b || i >= b->noptions)
        return RNGSNAP_E_INVALID;
    if (key)
        *key = b->options[i].key;
    if (value)
        *value = b->options[i].value;
    if (line)
        *line = b->options[i].line;
    return RNGSNAP_OK;
}

static void host_error(const rngsnap_host *host, const char *fmt, ...)
{
    const rs_backend *b = host_backend(host);
    if (!b)
        return;
    char text[RS_ERRMSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    rs_error(b->ctx, RNGSNAP_E_BACKEND, "backend %s (%s): %s", b->name,
             b->plugin_path ? b->plugin_path : b->plugin, text);
}

static void host_log(const rngsnap_host *host, int level, const char *fmt,
                     ...)
{
    const rs_backend *b = host_backend(host);
    va_list ap;
    va_start(ap, fmt);
    vlog(b ? b->ctx : NULL, b ? b->name : NULL, level, fmt, ap);
    va_end(ap);
}

void rs_host_init(rs_backend *b)
{
    rngsnap_host *h = &b->host;
    memset(h, 0, sizeof *h);
    h->abi_version = RNGSNAP_BACKEND_ABI_VERSION;
    h->struct_size = (uint32_t)sizeof *h;
    h->backend_name = b->name;
    h->ini_path = b->ctx->ini_path;
    h->plugin_path = b->plugin_path;
    h->option = host_option;
    h->option_count = host_option_count;
    h->option_at = host_option_at;
    h->error = host_error;
    h->log = host_log;
    h->core = b;
    h->philox_generate = rngsnap_philox_generate; /* engine.c */
}
