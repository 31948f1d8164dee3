/*
 * trace.c - at RNGSNAP_LOG=debug (or log = debug), one line per plugin
 * call, written to stderr BEFORE the call is made: when a plugin crashes,
 * the last line names the backend, the call and the entry in flight.
 *
 * The level is read once per context (rngsnap_open sets ctx->trace), so a
 * draw pays one predictable branch on a field it already has in cache,
 * never a getenv (RS_TRACE in internal.h).
 */
#include <stdio.h>

#include "context.h"
#include "internal.h"

void rs_trace_call(const rs_backend *b, const char *call,
                   const struct rngsnap_stream *s)
{
    char label[600];
    /* stderr is unbuffered: the line is out before the call starts. */
    rs_log(b->ctx, RNGSNAP_LOG_DEBUG, "plugin call: %s %s%s%s (%s)",
           b->name, call, s ? " on " : "",
           s ? rs_stream_label(s, label, sizeof label) : "",
           b->plugin_path ? b->plugin_path : b->plugin);
}
