/*
 * plugin_hint.c - the admin's way out of "plugin not found"
 * (plugin_hint.h): the nearest plugin file in the folders searched, and
 * which key or variable chooses those folders.
 */
#include "plugin_hint.h"

#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "loader.h"
#include "near_miss.h"

#define RS_SO ".so"
#define RS_PLUGIN_PREFIX "rngsnap_"

/* name without a trailing ".so" into out (RS_NEAR_MAX bytes); 0 when it
 * is too long to be compared. */
static int strip_so(const char *name, char out[RS_NEAR_MAX], int *had_so)
{
    size_t n = strlen(name), s = strlen(RS_SO);
    *had_so = n > s && strcmp(name + n - s, RS_SO) == 0;
    if (*had_so)
        n -= s;
    if (n >= RS_NEAR_MAX)
        return 0;
    memcpy(out, name, n);
    out[n] = '\0';
    return 1;
}

/* rngsnap_Y with Y not `backend`: another backend's plugin. */
static int other_backends_plugin(const char *base, const char *backend)
{
    size_t p = strlen(RS_PLUGIN_PREFIX);
    return strncmp(base, RS_PLUGIN_PREFIX, p) == 0
           && strcmp(base + p, backend) != 0;
}

/* The best near miss of typed among the *.so files of dir, kept in
 * best/best_d (fewest edits; on a tie the smaller name, so that the
 * order of readdir does not choose). */
static void scan_folder(const char *dir, const char *typed,
                        const char *backend, char best[RS_NEAR_MAX],
                        size_t *best_d)
{
    DIR *d = opendir(dir);
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        char base[RS_NEAR_MAX];
        int had_so;
        size_t dist;
        if (!strip_so(e->d_name, base, &had_so) || !had_so || !base[0]
            || other_backends_plugin(base, backend)
            || !rs_near_miss(typed, base, &dist))
            continue;
        if (dist < *best_d || (dist == *best_d && strcmp(base, best) < 0)) {
            *best_d = dist;
            snprintf(best, RS_NEAR_MAX, "%s", base);
        }
    }
    closedir(d);
}

void rs_plugin_suggest(const rs_backend *b, char *const *tried, size_t n,
                       char *buf, size_t len)
{
    char typed[RS_NEAR_MAX], best[RS_NEAR_MAX] = "";
    size_t best_d = SIZE_MAX;
    int had_so;
    buf[0] = '\0';
    /* A path names its file exactly; only a file name is looked up. */
    if (strchr(b->plugin, '/') || !strip_so(b->plugin, typed, &had_so))
        return;
    for (size_t i = 0; i < n; i++) {
        const char *slash = strrchr(tried[i], '/');
        char dir[4096];
        if (!slash || (size_t)(slash - tried[i]) >= sizeof dir)
            continue;
        snprintf(dir, sizeof dir, "%.*s", (int)(slash - tried[i]),
                 tried[i]);
        scan_folder(dir[0] ? dir : "/", typed, b->name, best, &best_d);
    }
    if (best[0])
        snprintf(buf, len, " (did you mean '%s%s'?)", best,
                 had_so ? RS_SO : "");
}

void rs_plugin_elsewhere(const struct rngsnap *ctx, const rs_backend *b,
                         const rs_config *cfg, rs_plugin_origin origin,
                         char *buf, size_t len)
{
    /* A setuid process ignores the variable: do not offer it there. */
    const char *env = rs_env_paths_trusted()
                          ? " or set RNGSNAP_PLUGIN_PATH (folders "
                            "separated by ':', searched instead)"
                          : "";
    switch (origin) {
    case RS_PLUGIN_FROM_PATH:
        snprintf(buf, len, "; plugin = '%s' is a path (absolute, or "
                 "relative to the ini's folder): correct it, or give a file name (e.g. rngsnap_%s) "
                 "to search the plugin folders (plugin_dir in [rngsnap]%s)",
                 b->plugin, b->name,
                 *env ? ", RNGSNAP_PLUGIN_PATH" : "");
        break;
    case RS_PLUGIN_FROM_ENV:
        if (cfg->nplugin_dirs)
            snprintf(buf, len, "; to search other folders, change "
                     "RNGSNAP_PLUGIN_PATH (folders separated by ':'), or "
                     "unset it to search plugin_dir in [rngsnap] (%s:%d)",
                     ctx->ini_path, cfg->plugin_dir_line);
        else
            snprintf(buf, len, "; to search other folders, change "
                     "RNGSNAP_PLUGIN_PATH (folders separated by ':'), or "
                     "unset it and set plugin_dir in [rngsnap] of %s",
                     ctx->ini_path);
        break;
    case RS_PLUGIN_FROM_PLUGIN_DIR:
        snprintf(buf, len, "; to search other folders, change plugin_dir in "
                 "[rngsnap] (%s:%d)%s", ctx->ini_path, cfg->plugin_dir_line,
                 env);
        break;
    case RS_PLUGIN_FROM_BUILTIN:
    default:
        snprintf(buf, len, "; to search other folders than the built-in "
                 "one, set plugin_dir in [rngsnap] of %s%s", ctx->ini_path,
                 env);
        break;
    }
}
