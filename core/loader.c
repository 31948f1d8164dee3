/*
 * loader.c - backend plugins through libltdl.
 *
 * - lt_dlinit/lt_dlexit are paired here only, reference counted (one
 *   reference per open plugin), behind one mutex that also covers every
 *   other libltdl call: libltdl is not thread-safe and lt_dlerror() is a
 *   single slot, read at once under the same lock.
 * - A plugin is always opened by its absolute path, with local symbols
 *   (lt_dladvise_local); we add ".so" ourselves, so no extension advise.
 * - libltdl opens lazily (RTLD_LAZY), so a plugin with an unresolved
 *   function would load and crash at its first call, and libltdl's own
 *   error for a file that exists is often just "file not found".  So the
 *   file is first bound completely with dlopen(RTLD_NOW | RTLD_LOCAL): a
 *   broken plugin is refused at open with the dynamic linker's own words
 *   (which names the missing symbol).  That handle is dropped once
 *   libltdl holds its own reference.
 * - Search: a plugin value containing '/' is a path (relative to the
 *   ini's folder); otherwise NAME(.so added when missing) is looked up in
 *   RNGSNAP_PLUGIN_PATH (':'-separated, overrides the ini), else the
 *   ini's plugin_dir list, else the folder baked in at build time.
 */
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <ltdl.h>

#include "config.h"
#include "context.h"
#include "internal.h"
#include "loader.h"
#include "rngsnap_build_config.h"

static pthread_mutex_t rs_ltdl_lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned rs_ltdl_refs; /* open plugins, all contexts together */

/* ---- libltdl reference, under rs_ltdl_lock ---------------------------- */

static int ltdl_acquire_locked(void)
{
    if (rs_ltdl_refs == 0 && lt_dlinit() != 0)
        return 0;
    rs_ltdl_refs++;
    return 1;
}

static void ltdl_release_locked(void)
{
    if (rs_ltdl_refs > 0 && --rs_ltdl_refs == 0)
        lt_dlexit();
}

/* ---- search ----------------------------------------------------------- */

typedef struct rs_paths {
    char **v;
    size_t n;
} rs_paths;

static void paths_free(rs_paths *p)
{
    for (size_t i = 0; i < p->n; i++)
        free(p->v[i]);
    free(p->v);
    p->v = NULL;
    p->n = 0;
}

static int paths_add(rs_paths *p, char *s)
{
    if (!s)
        return 0;
    char **nv = realloc(p->v, (p->n + 1) * sizeof *nv);
    if (!nv) {
        free(s);
        return 0;
    }
    p->v = nv;
    p->v[p->n++] = s;
    return 1;
}

static int ends_with(const char *s, const char *suffix)
{
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && strcmp(s + a - b, suffix) == 0;
}

/* Candidate files for b, and in *origin where the folders came from. */
static int candidates(const rs_backend *b, const rs_config *cfg,
                      rs_paths *out, const char **origin)
{
    if (strchr(b->plugin, '/')) {
        *origin = "plugin path relative to the ini's folder";
        return paths_add(out, rs_path_join(cfg->ini_dir, b->plugin));
    }
    char *fname;
    if (ends_with(b->plugin, ".so")) {
        fname = rs_strdup(b->plugin);
    } else {
        size_t n = strlen(b->plugin) + 4;
        fname = malloc(n);
        if (fname)
            snprintf(fname, n, "%s.so", b->plugin);
    }
    if (!fname)
        return 0;
    int ok = 1;
    const char *env = getenv("RNGSNAP_PLUGIN_PATH");
    if (env && *env) {
        *origin = "folders from RNGSNAP_PLUGIN_PATH";
        char cwd[PATH_MAX];
        if (!getcwd(cwd, sizeof cwd))
            strcpy(cwd, ".");
        const char *s = env;
        while (ok) {
            const char *e = strchr(s, ':');
            size_t len = e ? (size_t)(e - s) : strlen(s);
            if (len) {
                char *dir = malloc(len + 1);
                ok = dir != NULL;
                if (ok) {
                    memcpy(dir, s, len);
                    dir[len] = '\0';
                    char *adir = rs_path_join(cwd, dir);
                    free(dir);
                    ok = adir && paths_add(out, rs_path_join(adir, fname));
                    free(adir);
                }
            }
            if (!e)
                break;
            s = e + 1;
        }
    } else if (cfg->nplugin_dirs) {
        *origin = "folders from plugin_dir";
        for (size_t i = 0; ok && i < cfg->nplugin_dirs; i++)
            ok = paths_add(out, rs_path_join(cfg->plugin_dirs[i], fname));
    } else {
        *origin = "the built-in plugin folder";
        ok = paths_add(out, rs_path_join(RNGSNAP_PLUGIN_DIR, fname));
    }
    free(fname);
    return ok;
}

static char *join_paths(const rs_paths *p)
{
    size_t n = 1;
    for (size_t i = 0; i < p->n; i++)
        n += strlen(p->v[i]) + 2;
    char *s = malloc(n);
    if (!s)
        return NULL;
    s[0] = '\0';
    for (size_t i = 0; i < p->n; i++) {
        if (i)
            strcat(s, ", ");
        strcat(s, p->v[i]);
    }
    return s;
}

/* ---- the table -------------------------------------------------------- */

/* The members every backend must set (all of them up to generate). */
static const struct {
    const char *name;
    size_t offset;
} rs_required[] = {
#define RS_REQ(m) {#m, offsetof(rngsnap_backend, m)}
    RS_REQ(open),       RS_REQ(close),       RS_REQ(device_count),
    RS_REQ(device_name), RS_REQ(stream_open), RS_REQ(stream_close),
    RS_REQ(seed),       RS_REQ(get_state),   RS_REQ(set_state),
    RS_REQ(generate),
#undef RS_REQ
};

static int check_table(struct rngsnap *ctx, rs_backend *b,
                       const rngsnap_backend *vt)
{
    const char *path = b->plugin_path;
    if (!vt)
        return rs_error(ctx, RNGSNAP_E_PLUGIN, "plugin %s for [backend.%s]: "
                        RNGSNAP_BACKEND_ENTRY "() returned NULL", path,
                        b->name);
    if (vt->abi_version != RNGSNAP_BACKEND_ABI_VERSION)
        return rs_error(ctx, RNGSNAP_E_PLUGIN, "plugin %s for [backend.%s] "
                        "was built for backend ABI version %u; this library "
                        "uses ABI version %u", path, b->name,
                        (unsigned)vt->abi_version,
                        (unsigned)RNGSNAP_BACKEND_ABI_VERSION);
    if (vt->struct_size < RNGSNAP_BACKEND_MIN_SIZE)
        return rs_error(ctx, RNGSNAP_E_PLUGIN, "plugin %s for [backend.%s]: "
                        "backend table is %u bytes, smaller than the %zu "
                        "bytes this library needs", path, b->name,
                        (unsigned)vt->struct_size,
                        (size_t)RNGSNAP_BACKEND_MIN_SIZE);
    if (!vt->name || strcmp(vt->name, b->name) != 0)
        return rs_error(ctx, RNGSNAP_E_PLUGIN, "plugin %s for [backend.%s]: "
                        "%s says it is \"%s\", not \"%s\"", path, b->name,
                        strrchr(path, '/') ? strrchr(path, '/') + 1 : path,
                        vt->name ? vt->name : "(NULL)", b->name);
    for (size_t i = 0; i < sizeof rs_required / sizeof rs_required[0]; i++) {
        void *fn;
        memcpy(&fn, (const char *)vt + rs_required[i].offset, sizeof fn);
        if (!fn)
            return rs_error(ctx, RNGSNAP_E_PLUGIN, "plugin %s for "
                            "[backend.%s]: required member '%s' of the "
                            "backend table is NULL", path, b->name,
                            rs_required[i].name);
    }
    if (vt->state_size == 0 || vt->state_size > RS_STATE_SIZE_MAX)
        return rs_error(ctx, RNGSNAP_E_PLUGIN, "plugin %s for [backend.%s]: "
                        "state_size %u is outside 1..%u", path, b->name,
                        (unsigned)vt->state_size, RS_STATE_SIZE_MAX);
    return RNGSNAP_OK;
}

/* ---- load / unload ---------------------------------------------------- */

int rs_plugin_load(struct rngsnap *ctx, rs_backend *b, const rs_config *cfg)
{
    rs_paths tried = {NULL, 0};
    const char *origin = "";
    if (!candidates(b, cfg, &tried, &origin)) {
        paths_free(&tried);
        return rs_error(ctx, RNGSNAP_E_NOMEM, "out of memory");
    }
    const char *found = NULL;
    for (size_t i = 0; i < tried.n && !found; i++) {
        struct stat st;
        if (stat(tried.v[i], &st) == 0 && S_ISREG(st.st_mode))
            found = tried.v[i];
    }
    free(b->plugin_path);
    b->plugin_path = NULL;
    if (!found) {
        b->plugin_path = join_paths(&tried);
        int rc = rs_error(ctx, RNGSNAP_E_PLUGIN, "plugin '%s' for "
                          "[backend.%s] (%s:%d) not found; tried (%s): %s",
                          b->plugin, b->name, ctx->ini_path, b->section_line,
                          origin, b->plugin_path ? b->plugin_path : "?");
        paths_free(&tried);
        return rc;
    }
    b->plugin_path = realpath(found, NULL);
    if (!b->plugin_path)
        b->plugin_path = rs_strdup(found);
    paths_free(&tried);
    if (!b->plugin_path)
        return rs_error(ctx, RNGSNAP_E_NOMEM, "out of memory");
    const char *path = b->plugin_path;

    /* Bind every symbol now (see the top comment). */
    void *now = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!now) {
        const char *e = dlerror();
        return rs_error(ctx, RNGSNAP_E_PLUGIN, "plugin %s for [backend.%s] "
                        "exists but cannot be loaded: %s", path, b->name,
                        e ? e : "unknown dlopen error");
    }

    pthread_mutex_lock(&rs_ltdl_lock);
    if (!ltdl_acquire_locked()) {
        const char *e = lt_dlerror();
        pthread_mutex_unlock(&rs_ltdl_lock);
        dlclose(now);
        return rs_error(ctx, RNGSNAP_E_PLUGIN, "plugin %s for [backend.%s]: "
                        "lt_dlinit failed: %s", path, b->name,
                        e ? e : "unknown error");
    }
    lt_dladvise advise;
    lt_dlhandle h = NULL;
    if (lt_dladvise_init(&advise) == 0) {
        if (lt_dladvise_local(&advise) == 0)
            h = lt_dlopenadvise(path, advise);
        lt_dladvise_destroy(&advise);
    }
    char ltmsg[512];
    const char *e = lt_dlerror();
    snprintf(ltmsg, sizeof ltmsg, "%s", e ? e : "unknown libltdl error");
    int opened = h != NULL;
    void *sym = NULL;
    if (h) {
        sym = lt_dlsym(h, RNGSNAP_BACKEND_ENTRY);
        e = lt_dlerror();
        snprintf(ltmsg, sizeof ltmsg, "%s", e ? e : "symbol not found");
        if (!sym) {
            lt_dlclose(h);
            h = NULL;
        }
    }
    if (!h)
        ltdl_release_locked();
    pthread_mutex_unlock(&rs_ltdl_lock);
    dlclose(now); /* libltdl holds its own reference now (if it opened) */

    if (!opened)
        return rs_error(ctx, RNGSNAP_E_PLUGIN, "plugin %s for [backend.%s] "
                        "exists but libltdl could not open it: %s", path,
                        b->name, ltmsg);
    if (!sym)
        return rs_error(ctx, RNGSNAP_E_PLUGIN, "plugin %s for [backend.%s] "
                        "has no symbol " RNGSNAP_BACKEND_ENTRY " (not an "
                        "rngsnap backend plugin?): %s", path, b->name,
                        ltmsg);
    const rngsnap_backend *vt = ((rngsnap_backend_entry_fn)sym)();
    b->dl = h;
    int rc = check_table(ctx, b, vt);
    if (rc) {
        rs_plugin_unload(b);
        return rc;
    }
    b->vt = vt;
    return RNGSNAP_OK;
}

void rs_plugin_unload(rs_backend *b)
{
    if (!b->dl)
        return;
    pthread_mutex_lock(&rs_ltdl_lock);
    lt_dlclose((lt_dlhandle)b->dl);
    ltdl_release_locked();
    pthread_mutex_unlock(&rs_ltdl_lock);
    b->dl = NULL;
    b->vt = NULL;
}
