/*
 * plugin_hint.c - the admin's way out of "plugin not found"
 * (plugin_hint.h): the nearest plugin file in the folders searched, and
 * which key or variable chooses those folders.
 */
#include "plugin_hint.h"

#include <dirent.h>
#include <stdarg.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "loader.h"
#include "near_miss.h"
#include "rngsnap_build_config.h"

/* The plugins this project builds (plugins/meson.build): installed in
 * the built-in folder. */
static const char *const rs_builtin_plugins[] = {
    "rngsnap_cpu", "rngsnap_cuda", "rngsnap_hpu", "rngsnap_xpu",
    "rngsnap_npu", NULL};

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
                        size_t *best_d, char *best_path, size_t pathlen)
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
            snprintf(best_path, pathlen, "%s%s%s", dir,
                     strcmp(dir, "/") == 0 ? "" : "/", e->d_name);
        }
    }
    closedir(d);
}

void rs_plugin_suggest(const rs_backend *b, char *const *tried, size_t n,
                       char *buf, size_t len, char *path, size_t pathlen)
{
    char typed[RS_NEAR_MAX], best[RS_NEAR_MAX] = "";
    size_t best_d = SIZE_MAX;
    int had_so;
    buf[0] = '\0';
    path[0] = '\0';
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
        scan_folder(dir[0] ? dir : "/", typed, b->name, best, &best_d,
                    path, pathlen);
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

/* Append printf text to buf (cut at len). */
static void append(char *buf, size_t len, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void append(char *buf, size_t len, const char *fmt, ...)
{
    size_t used = strlen(buf);
    if (used + 1 >= len)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf + used, len - used, fmt, ap);
    va_end(ap);
}

/* Folder of path p into dir ("/" for a file at the root). */
static int folder_of(const char *p, char *dir, size_t len)
{
    const char *slash = strrchr(p, '/');
    if (!slash || (size_t)(slash - p) >= len)
        return 0;
    snprintf(dir, len, "%.*s", (int)(slash - p), p);
    if (!dir[0])
        snprintf(dir, len, "/");
    return 1;
}

static int is_builtin_plugin(const char *value)
{
    char base[RS_NEAR_MAX];
    int had_so;
    if (strchr(value, '/') || !strip_so(value, base, &had_so))
        return 0;
    for (const char *const *p = rs_builtin_plugins; *p; p++)
        if (strcmp(*p, base) == 0)
            return 1;
    return 0;
}

void rs_plugin_folders_note(const rs_backend *b, char *const *tried,
                            size_t n, rs_plugin_origin origin, char *buf,
                            size_t len)
{
    buf[0] = '\0';
    int builtin_searched = 0;
    for (size_t i = 0; i < n; i++) {
        char dir[4096];
        struct stat st;
        if (!folder_of(tried[i], dir, sizeof dir))
            continue;
        builtin_searched |= strcmp(dir, RNGSNAP_PLUGIN_DIR) == 0;
        int seen = 0; /* name each missing folder once */
        for (size_t j = 0; j < i && !seen; j++) {
            char other[4096];
            seen = folder_of(tried[j], other, sizeof other)
                   && strcmp(other, dir) == 0;
        }
        if (seen)
            continue;
        if (stat(dir, &st) != 0 && (errno == ENOENT || errno == ENOTDIR))
            append(buf, len, "; folder %s does not exist", dir);
        else if (stat(dir, &st) == 0 && !S_ISDIR(st.st_mode))
            append(buf, len, "; %s is not a folder", dir);
    }
    if (builtin_searched || origin == RS_PLUGIN_FROM_PATH
        || origin == RS_PLUGIN_FROM_BUILTIN)
        return;
    char there[4096];
    snprintf(there, sizeof there, "%s/%s%s", RNGSNAP_PLUGIN_DIR, b->plugin,
             strlen(b->plugin) > 3
                     && strcmp(b->plugin + strlen(b->plugin) - 3, ".so") == 0
                 ? "" : ".so");
    int exists = access(there, F_OK) == 0;
    if (!exists && !is_builtin_plugin(b->plugin))
        return;
    const char *key = origin == RS_PLUGIN_FROM_ENV ? "RNGSNAP_PLUGIN_PATH"
                                                   : "plugin_dir";
    append(buf, len, "; %s is %s %s (pkg-config --variable=plugindir "
           "rngsnap), a folder %s leaves out: add " RS_BUILTIN_TOKEN " to %s "
           "to search it too", b->plugin,
           exists ? "in the built-in plugin folder"
                  : "a built-in plugin, installed in",
           RNGSNAP_PLUGIN_DIR, key, key);
}
