/*
 * errors.c - return codes and messages: the table of codes, the per-context
 * message (rs_error), the per-thread message of a failed rngsnap_open, and
 * the library version.
 *
 * A message stays until the next error on the same context: successful
 * calls do not clear it.  Calls that have no context to write to (a NULL
 * ctx or stream) leave their message in the per-thread slot that
 * rngsnap_errmsg(NULL) reads, like a failed rngsnap_open; a successful
 * rngsnap_open clears that slot.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "context.h"
#include "internal.h"

/* One row per return code: the data that rngsnap_strerror and
 * rngsnap_error_name read.  Index = code. */
static const struct {
    const char *name;
    const char *text;
} rs_codes[] = {
    [RNGSNAP_OK] = {"RNGSNAP_OK", "success"},
    [RNGSNAP_E_CONFIG] = {"RNGSNAP_E_CONFIG", "bad configuration (rng.ini)"},
    [RNGSNAP_E_PLUGIN] = {"RNGSNAP_E_PLUGIN",
                          "backend plugin missing or unusable"},
    [RNGSNAP_E_UNAVAILABLE] = {"RNGSNAP_E_UNAVAILABLE",
                               "backend or feature not available"},
    [RNGSNAP_E_IO] = {"RNGSNAP_E_IO", "input/output error"},
    [RNGSNAP_E_EXISTS] = {"RNGSNAP_E_EXISTS", "file exists"},
    [RNGSNAP_E_CORRUPT] = {"RNGSNAP_E_CORRUPT", "checkpoint file is corrupt"},
    [RNGSNAP_E_MISMATCH] = {"RNGSNAP_E_MISMATCH",
                            "checkpoint does not match the configuration"},
    [RNGSNAP_E_ORDER] = {"RNGSNAP_E_ORDER",
                         "call out of order (resume gate)"},
    [RNGSNAP_E_INVALID] = {"RNGSNAP_E_INVALID", "invalid argument"},
    [RNGSNAP_E_NOMEM] = {"RNGSNAP_E_NOMEM", "out of memory"},
    [RNGSNAP_E_BACKEND] = {"RNGSNAP_E_BACKEND", "backend call failed"},
    [RNGSNAP_E_DURABILITY] = {"RNGSNAP_E_DURABILITY",
                              "checkpoint replaced, durability not confirmed"},
};
#define RS_NCODES (sizeof rs_codes / sizeof rs_codes[0])

/* Message of the last failed rngsnap_open of this thread (no context
 * exists to hold it). */
static _Thread_local char rs_open_errmsg[RS_ERRMSG_MAX];

const char *rngsnap_strerror(int code)
{
    if (code < 0 || (size_t)code >= RS_NCODES || !rs_codes[code].text)
        return "unknown error code";
    return rs_codes[code].text;
}

const char *rngsnap_error_name(int code)
{
    if (code < 0 || (size_t)code >= RS_NCODES || !rs_codes[code].name)
        return "RNGSNAP_E_UNKNOWN";
    return rs_codes[code].name;
}

const char *rngsnap_errmsg(const rngsnap *ctx)
{
    const char *m = ctx ? ctx->errmsg : rs_open_errmsg;
    return m[0] ? m : "no error";
}

const char *rngsnap_version(void)
{
    return RNGSNAP_VERSION_STRING;
}

void rs_set_open_error(const char *msg)
{
    snprintf(rs_open_errmsg, sizeof rs_open_errmsg, "%s", msg ? msg : "");
}

int rs_error(struct rngsnap *ctx, int code, const char *fmt, ...)
{
    /* Format aside first: an argument may point into the buffer itself
     * (a prefix added to the plugin's own message). */
    char tmp[RS_ERRMSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    char *dst = ctx ? ctx->errmsg : rs_open_errmsg;
    memcpy(dst, tmp, sizeof tmp);
    return code;
}

char *rs_strdup(const char *s)
{
    if (!s)
        return NULL;
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d)
        memcpy(d, s, n);
    return d;
}

const char *rs_format_id(uint32_t id, char *buf, size_t len)
{
    char letters[5];
    for (int i = 0; i < 4; i++) {
        unsigned char c = (unsigned char)(id >> (8 * i));
        if (c < 0x20 || c > 0x7e) {
            snprintf(buf, len, "0x%08x", (unsigned)id);
            return buf;
        }
        letters[i] = (char)c;
    }
    letters[4] = '\0';
    snprintf(buf, len, "\"%s\" (0x%08x)", letters, (unsigned)id);
    return buf;
}

const char *rs_stream_label(const struct rngsnap_stream *s, char *buf,
                            size_t len)
{
    snprintf(buf, len, "%s:%d/%s", s->backend->name, s->device, s->name);
    return buf;
}
