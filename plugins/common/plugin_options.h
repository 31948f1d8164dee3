/*
 * plugin_options.h - reading a built-in plugin's own rng.ini options.
 *
 * Every built-in plugin refuses a key it does not know, naming the file,
 * the line and the keys it does know, and parses numbers strictly.  This is
 * the one place that does it, so every plugin words its errors alike.
 */
#ifndef RNGSNAP_PLUGIN_OPTIONS_H
#define RNGSNAP_PLUGIN_OPTIONS_H

#include <rngsnap/backend.h>

typedef struct plugin_option {
    const char *key;
    /* Parse value (from line of the ini) into the plugin's context; on
     * error call host->error and return RNGSNAP_E_CONFIG. */
    int (*parse)(void *pctx, const char *value, int line);
} plugin_option;

/* Hand every option of the backend's section to its parser, in file
 * order.  An unknown key is RNGSNAP_E_CONFIG:
 * "rng.ini:13: unknown key 'x' in [backend.npu] (this backend knows a, b)". */
int plugin_read_options(const rngsnap_host *host, const plugin_option *known,
                        size_t nknown, void *pctx);

/* A whole decimal integer in [min, max]: 0 and *out set, else -1. */
int plugin_parse_long(const char *value, long min, long max, long *out);

#endif
