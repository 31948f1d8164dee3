/*
 * plugin_options.c - see plugin_options.h.
 */
#include "plugin_options.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int plugin_parse_long(const char *value, long min, long max, long *out)
{
    char *end = NULL;
    errno = 0;
    long v = strtol(value, &end, 10);
    if (errno != 0 || end == value || *end != '\0' || v < min || v > max)
        return -1;
    *out = v;
    return 0;
}

static const plugin_option *find(const plugin_option *known, size_t n,
                                 const char *key)
{
    for (size_t k = 0; k < n; k++)
        if (strcmp(known[k].key, key) == 0)
            return &known[k];
    return NULL;
}

/* "a, b" for the error message. */
static void list_keys(const plugin_option *known, size_t n, char *buf,
                      size_t len)
{
    buf[0] = '\0';
    for (size_t k = 0; k < n; k++) {
        size_t used = strlen(buf);
        snprintf(buf + used, len - used, "%s%s", k ? ", " : "",
                 known[k].key);
    }
}

int plugin_read_options(const rngsnap_host *host, const plugin_option *known,
                        size_t nknown, void *pctx)
{
    size_t n = host->option_count(host);
    for (size_t i = 0; i < n; i++) {
        const char *key = NULL, *value = NULL;
        int line = 0;
        if (host->option_at(host, i, &key, &value, &line) != RNGSNAP_OK)
            continue;
        const plugin_option *opt = find(known, nknown, key);
        if (opt == NULL) {
            char keys[256];
            list_keys(known, nknown, keys, sizeof keys);
            host->error(host, "%s:%d: unknown key '%s' in [backend.%s] "
                        "(this backend knows %s)", host->ini_path, line, key,
                        host->backend_name, keys);
            return RNGSNAP_E_CONFIG;
        }
        int rc = opt->parse(pctx, value, line);
        if (rc != RNGSNAP_OK)
            return rc;
    }
    return RNGSNAP_OK;
}
