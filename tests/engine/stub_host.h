/*
 * stub_host.h - a minimal rngsnap_host for loading a backend plugin with
 * dlopen, without the core: fixed option list, error text kept in a
 * buffer.  Used by the plugin tests and by rngsnap-bench.
 */
#ifndef RNGSNAP_TEST_STUB_HOST_H
#define RNGSNAP_TEST_STUB_HOST_H

#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rngsnap/backend.h>

typedef struct stub_option {
    const char *key, *value;
    int line;
} stub_option;

typedef struct stub_host {
    rngsnap_host host; /* first: the plugin sees this */
    const stub_option *opts;
    size_t nopts;
    char error[1024];
} stub_host;

static inline const char *stub_option_get(const rngsnap_host *h, const char *key)
{
    const stub_host *s = (const stub_host *)h;
    for (size_t i = 0; i < s->nopts; i++)
        if (strcmp(s->opts[i].key, key) == 0)
            return s->opts[i].value;
    return NULL;
}

static size_t stub_option_count(const rngsnap_host *h)
{
    return ((const stub_host *)h)->nopts;
}

static int stub_option_at(const rngsnap_host *h, size_t i, const char **key,
                          const char **value, int *line)
{
    const stub_host *s = (const stub_host *)h;
    if (i >= s->nopts)
        return RNGSNAP_E_INVALID;
    *key = s->opts[i].key;
    *value = s->opts[i].value;
    *line = s->opts[i].line;
    return RNGSNAP_OK;
}

static void stub_error(const rngsnap_host *h, const char *fmt, ...)
{
    stub_host *s = (stub_host *)h;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(s->error, sizeof s->error, fmt, ap);
    va_end(ap);
}

static void stub_log(const rngsnap_host *h, int level, const char *fmt, ...)
{
    (void)h;
    (void)level;
    (void)fmt;
}

static inline void stub_host_init(stub_host *s, const char *backend,
                           const stub_option *opts, size_t nopts)
{
    memset(s, 0, sizeof *s);
    s->host.abi_version = RNGSNAP_BACKEND_ABI_VERSION;
    s->host.struct_size = sizeof(rngsnap_host);
    s->host.backend_name = backend;
    s->host.ini_path = "/stub/rng.ini";
    s->host.plugin_path = "/stub/plugin.so";
    s->host.option = stub_option_get;
    s->host.option_count = stub_option_count;
    s->host.option_at = stub_option_at;
    s->host.error = stub_error;
    s->host.log = stub_log;
    s->opts = opts;
    s->nopts = nopts;
}

/* The table of <plugin dir>/rngsnap_<name>.so, or NULL (message on
 * stderr).  The module stays loaded for the life of the process. */
static inline const rngsnap_backend *stub_load_plugin(const char *name)
{
    const char *dir = getenv("RNGSNAP_PLUGIN_BUILD_DIR");
    char path[4096];
    snprintf(path, sizeof path, "%s/rngsnap_%s.so", dir ? dir : "plugins",
             name);
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (h == NULL) {
        fprintf(stderr, "dlopen %s: %s\n", path, dlerror());
        return NULL;
    }
    rngsnap_backend_entry_fn fn =
        (rngsnap_backend_entry_fn)dlsym(h, RNGSNAP_BACKEND_ENTRY);
    return fn ? fn() : NULL;
}

#endif
