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
 * - Search: a plugin value containing '/' is a path (absolute, or
 *   relative to the ini's folder, with no ".." component); otherwise
 *   NAME(.so added when missing) is looked up in RNGSNAP_PLUGIN_PATH
 *   (':'-separated, overrides the ini), else the ini's plugin_dir list,
 *   else the folder baked in at build time.  The first candidate that
 *   exists decides: a directory or FIFO there is reported as such.  When
 *   none exists, the message adds the near miss among the folders' files
 *   and which key or variable chooses the folders (plugin_hint.c).
 * - Trust (as sshd's StrictModes and sudo do), checked BEFORE dlopen so
 *   that no constructor of a refused plugin runs: the file must be a
 *   regular file owned by root or the effective user and not writable by
 *   group or others; so must its folder; every folder above it must be
 *   owned by root or the effective user and not writable by group or
 *   others unless it has the sticky bit (/tmp: others cannot rename or
 *   remove what they do not own there).  The checks run on the resolved
 *   path (realpath), the file through an fd opened O_NOFOLLOW|O_NONBLOCK
 *   (never blocks on a FIFO); dlopen then takes the same checked path and
 *   the file's identity (st_dev, st_ino) is compared after it, the fd
 *   still open so that the inode cannot be reused.  Since no other user
 *   can write any folder on the path, only root or this user could swap
 *   the file in between.  We do not dlopen /proc/self/fd/N: glibc and
 *   libltdl match already-loaded objects by name, and that name is
 *   reused by the next plugin opened through the same fd number.
 * - In a secure-execution process (getauxval(AT_SECURE): setuid, setgid,
 *   file capabilities) RNGSNAP_* variables that name a path are ignored
 *   (rs_path_env) and the fact is logged.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <unistd.h>

#include <ltdl.h>

#include "config.h"
#include "context.h"
#include "internal.h"
#include "loader.h"
#include "near_miss.h"
#include "plugin_hint.h"
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

/* ---- environment ------------------------------------------------------ */

int rs_env_paths_trusted(void)
{
    /* The value is the invoking user's, not the program owner's: a
     * setuid program must not load code or read config from it. */
    return !getauxval(AT_SECURE);
}

const char *rs_path_env(const struct rngsnap *ctx, const char *name)
{
    const char *v = getenv(name);
    if (!v || !*v)
        return NULL;
    if (!rs_env_paths_trusted()) {
        rs_log(ctx, RNGSNAP_LOG_WARN, "ignoring %s: this process runs "
               "with elevated privileges (setuid, setgid or file "
               "capabilities), where variables naming paths are not "
               "trusted", name);
        return NULL;
    }
    return v;
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

/* 1 when the '/'-separated path p has a ".." component. */
static int has_dotdot(const char *p)
{
    for (const char *c = p; *c; c += strcspn(c, "/")) {
        c += strspn(c, "/");
        if (c[0] == '.' && c[1] == '.' && (c[2] == '/' || c[2] == '\0'))
            return 1;
    }
    return 0;
}

/* What `plugin =` may say (docs/rng-ini.md): a file name looked up in
 * the plugin folders, an absolute path, or a path relative to the ini's
 * folder that stays below it (no ".."), so that copying an rng.ini never
 * silently reaches into another tree. */
static int check_plugin_value(struct rngsnap *ctx, const rs_backend *b)
{
    const char *v = b->plugin;
    const char *why = NULL;
    if (strcmp(v, ".") == 0 || strcmp(v, "..") == 0)
        why = "is not a file name";
    else if (v[0] != '/' && has_dotdot(v))
        why = "climbs out of the ini's folder with '..'";
    else if (v[strlen(v) - 1] == '/')
        why = "ends in '/' (names a folder)";
    if (!why)
        return RNGSNAP_OK;
    return rs_error(ctx, RNGSNAP_E_CONFIG, "%s:%d: [backend.%s]: plugin = "
                    "'%s' %s; give a file name found in plugin_dir (e.g. "
                    "rngsnap_%s), a path below the ini's folder, or an "
                    "absolute path", ctx->ini_path, b->section_line,
                    b->name, v, why, b->name);
}

/* How a not-found message names each origin of the candidates. */
static const char *const rs_origin_words[] = {
    [RS_PLUGIN_FROM_PATH] = "plugin path relative to the ini's folder",
    [RS_PLUGIN_FROM_ENV] = "folders from RNGSNAP_PLUGIN_PATH",
    [RS_PLUGIN_FROM_PLUGIN_DIR] = "folders from plugin_dir",
    [RS_PLUGIN_FROM_BUILTIN] = "the built-in plugin folder",
};

/* Candidate files for b, and in *origin where the folders came from. */
static int candidates(const struct rngsnap *ctx, const rs_backend *b,
                      const rs_config *cfg, rs_paths *out,
                      rs_plugin_origin *origin)
{
    if (strchr(b->plugin, '/')) {
        *origin = RS_PLUGIN_FROM_PATH;
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
    const char *env = rs_path_env(ctx, "RNGSNAP_PLUGIN_PATH");
    if (env) {
        *origin = RS_PLUGIN_FROM_ENV;
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
                    char *adir = rs_plugin_dir_item(cwd, dir);
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
        *origin = RS_PLUGIN_FROM_PLUGIN_DIR;
        for (size_t i = 0; ok && i < cfg->nplugin_dirs; i++)
            ok = paths_add(out, rs_path_join(cfg->plugin_dirs[i], fname));
    } else {
        *origin = RS_PLUGIN_FROM_BUILTIN;
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

/* The way out of an ABI refusal: the plugin must be compiled again. */
#define RS_REBUILD_HINT                                                     \
    "rebuild the plugin against the installed headers (cc $(pkg-config "   \
    "--cflags rngsnap) ...)"

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
                        "uses ABI version %u: " RS_REBUILD_HINT, path,
                        b->name, (unsigned)vt->abi_version,
                        (unsigned)RNGSNAP_BACKEND_ABI_VERSION);
    if (vt->struct_size < RNGSNAP_BACKEND_MIN_SIZE)
        return rs_error(ctx, RNGSNAP_E_PLUGIN, "plugin %s for [backend.%s]: "
                        "backend table is %u bytes, smaller than the %zu "
                        "bytes this library needs: " RS_REBUILD_HINT, path,
                        b->name, (unsigned)vt->struct_size,
                        (size_t)RNGSNAP_BACKEND_MIN_SIZE);
    if (!vt->name || strcmp(vt->name, b->name) != 0)
        return rs_error(ctx, RNGSNAP_E_PLUGIN, "plugin %s for [backend.%s]: "
                        "%s says it is \"%s\", not \"%s\"", path, b->name,
                        strrchr(path, '/') ? strrchr(path, '/') + 1 : path,
                        vt->name ? vt->name : "(NULL)", b->name);
    /* Required by the plugin guide; a listing tells a loaded plugin from
     * a refused one by it. */
    if (!vt->version)
        return rs_error(ctx, RNGSNAP_E_PLUGIN, "plugin %s for [backend.%s]: "
                        "required member 'version' of the backend table is "
                        "NULL", path, b->name);
    for (size_t i = 0; i < sizeof rs_required / sizeof rs_required[0]; i++) {
        void *fn;
        memcpy(&fn, (const char *)vt + rs_required[i].offset, sizeof fn);
        if (!fn)
            return rs_error(ctx, RNGSNAP_E_PLUGIN, "plugin %s for "
                            "[backend.%s]: required member '%s' of the "
                            "backend table is NULL", path, b->name,
                            rs_required[i].name);
    }
    if (vt->state_size == 0 || vt->state_size > RS_STATE_SIZE_MAX) {
        char fid[32];
        return rs_error(ctx, RNGSNAP_E_PLUGIN, "plugin %s for [backend.%s]: "
                        "state_size %u of state format %s is outside 1..%u",
                        path, b->name, (unsigned)vt->state_size,
                        rs_format_id(vt->state_format, fid, sizeof fid),
                        RS_STATE_SIZE_MAX);
    }
    return RNGSNAP_OK;
}

/* ---- finding the file ------------------------------------------------- */

static const char *file_kind(mode_t m)
{
    if (S_ISDIR(m))
        return "a directory";
    if (S_ISFIFO(m))
        return "a FIFO (named pipe)";
    if (S_ISSOCK(m))
        return "a socket";
    if (S_ISCHR(m))
        return "a character device";
    if (S_ISBLK(m))
        return "a block device";
    if (S_ISLNK(m))
        return "a symbolic link";
    return "a special file";
}

/* Set b->plugin_path to the file b's plugin value names: the first
 * candidate that exists decides (never a later one behind a directory of
 * the same name).  Not found: *missing = 1, b->plugin_path lists the
 * paths tried. */
static int find_plugin(struct rngsnap *ctx, rs_backend *b,
                       const rs_config *cfg, int *missing)
{
    rs_paths tried = {NULL, 0};
    rs_plugin_origin origin = RS_PLUGIN_FROM_BUILTIN;
    free(b->plugin_path);
    b->plugin_path = NULL;
    if (!candidates(ctx, b, cfg, &tried, &origin)) {
        paths_free(&tried);
        return rs_error(ctx, RNGSNAP_E_NOMEM, "out of memory");
    }
    struct stat st;
    const char *found = NULL;
    int err = 0;
    for (size_t i = 0; i < tried.n && !found; i++) {
        if (stat(tried.v[i], &st) == 0)
            found = tried.v[i];
        else if (errno != ENOENT && errno != ENOTDIR && !err)
            err = errno; /* e.g. EACCES: say so rather than "not found" */
    }
    int rc = RNGSNAP_OK;
    if (!found) {
        /* The way out too: the file that is there, where else to look
         * (an optional backend's skip reason is this message). */
        char near[RS_NEAR_MAX + 32], elsewhere[2048], near_path[4096];
        rs_plugin_suggest(b, tried.v, tried.n, near, sizeof near, near_path,
                          sizeof near_path);
        free(b->near_path);
        b->near_path = near_path[0] ? rs_strdup(near_path) : NULL;
        char folders[4096];
        rs_plugin_folders_note(b, tried.v, tried.n, origin, folders,
                               sizeof folders);
        rs_plugin_elsewhere(ctx, b, cfg, origin, elsewhere,
                            sizeof elsewhere);
        *missing = !err;
        b->plugin_path = join_paths(&tried);
        rc = rs_error(ctx, RNGSNAP_E_PLUGIN, "plugin '%s' for [backend.%s] "
                      "(%s:%d) not found%s; tried (%s): %s%s%s%s%s",
                      b->plugin, b->name, ctx->ini_path, b->section_line,
                      near, rs_origin_words[origin],
                      b->plugin_path ? b->plugin_path : "?",
                      err ? "; a folder could not be searched: " : "",
                      err ? strerror(err) : "", folders, elsewhere);
    } else if (!S_ISREG(st.st_mode)) {
        b->plugin_path = rs_strdup(found);
        rc = rs_error(ctx, RNGSNAP_E_PLUGIN, "plugin %s for [backend.%s] "
                      "(%s:%d) is %s, not a plugin file", found, b->name,
                      ctx->ini_path, b->section_line, file_kind(st.st_mode));
    } else {
        b->plugin_path = realpath(found, NULL);
        if (!b->plugin_path)
            b->plugin_path = rs_strdup(found);
        if (!b->plugin_path)
            rc = rs_error(ctx, RNGSNAP_E_NOMEM, "out of memory");
    }
    paths_free(&tried);
    return rc;
}

/* ---- trust: only root or this user may be able to change the code ----- */

enum { RS_TRUSTED, RS_FOREIGN_OWNER, RS_WRITABLE };

/* Whether st (the file, its folder, or a folder `above` them) may hold
 * a plugin.  A sticky folder above (/tmp) is fine although writable:
 * others cannot rename or remove what they do not own in it. */
static int trust_of(const struct stat *st, int above)
{
    if (st->st_uid != 0 && st->st_uid != geteuid())
        return RS_FOREIGN_OWNER;
    if ((st->st_mode & (S_IWGRP | S_IWOTH))
        && !(above && (st->st_mode & S_ISVTX)))
        return RS_WRITABLE;
    return RS_TRUSTED;
}

static const char *uid_label(uid_t uid, char *buf, size_t len)
{
    struct passwd pw, *res = NULL;
    char tmp[1024];
    if (getpwuid_r(uid, &pw, tmp, sizeof tmp, &res) == 0 && res)
        snprintf(buf, len, "%u (%s)", (unsigned)uid, res->pw_name);
    else
        snprintf(buf, len, "%u", (unsigned)uid);
    return buf;
}

/* The refusal: which file or folder, its mode and owner, and the fix. */
static int refuse_untrusted(struct rngsnap *ctx, const rs_backend *b,
                            const char *what, const char *path,
                            const struct stat *st, int problem)
{
    char owner[300];
    uid_label(st->st_uid, owner, sizeof owner);
    unsigned mode = (unsigned)st->st_mode & 07777u;
    if (problem == RS_FOREIGN_OWNER)
        return rs_error(ctx, RNGSNAP_E_PLUGIN, "plugin %s for [backend.%s] "
                        "refused: %s %s (mode %04o, owner %s) is owned by "
                        "neither root nor the user running this process "
                        "(uid %u), and a plugin is code this process runs; "
                        "fix: chown root %s (or install the plugin as uid "
                        "%u)", b->plugin_path, b->name, what, path, mode,
                        owner, (unsigned)geteuid(), path,
                        (unsigned)geteuid());
    const char *who = (mode & 022u) == 022u ? "group and others"
                      : (mode & 020u)       ? "its group"
                                            : "others";
    return rs_error(ctx, RNGSNAP_E_PLUGIN, "plugin %s for [backend.%s] "
                    "refused: %s %s (mode %04o, owner %s) is writable by "
                    "%s, who could change the code this process runs; fix: "
                    "chmod go-w %s", b->plugin_path, b->name, what, path,
                    mode, owner, who, path);
}

/* Open the resolved file without following a link or blocking on a
 * FIFO, and check what the fd holds.  *fd stays open until the plugin
 * is loaded (the identity check after dlopen). */
static int check_file(struct rngsnap *ctx, const rs_backend *b, int *fd,
                      struct stat *st)
{
    const char *path = b->plugin_path;
    *fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC
                         | O_NOCTTY);
    if (*fd < 0)
        return rs_error(ctx, RNGSNAP_E_PLUGIN, "plugin %s for [backend.%s] "
                        "cannot be opened: %s", path, b->name,
                        strerror(errno));
    if (fstat(*fd, st) != 0)
        return rs_error(ctx, RNGSNAP_E_PLUGIN, "plugin %s for [backend.%s]: "
                        "fstat failed: %s", path, b->name, strerror(errno));
    if (!S_ISREG(st->st_mode))
        return rs_error(ctx, RNGSNAP_E_PLUGIN, "plugin %s for [backend.%s] "
                        "is %s, not a plugin file", path, b->name,
                        file_kind(st->st_mode));
    int t = trust_of(st, 0);
    return t ? refuse_untrusted(ctx, b, "the file", path, st, t)
             : RNGSNAP_OK;
}

/* The folder of the resolved file, then every folder above it. */
static int check_folders(struct rngsnap *ctx, const rs_backend *b)
{
    char dir[PATH_MAX];
    if (snprintf(dir, sizeof dir, "%s", b->plugin_path) >= (int)sizeof dir)
        return rs_error(ctx, RNGSNAP_E_PLUGIN, "plugin %s for [backend.%s]: "
                        "path too long", b->plugin_path, b->name);
    for (int above = 0;; above = 1) {
        char *slash = strrchr(dir, '/');
        if (!slash || strcmp(dir, "/") == 0)
            return RNGSNAP_OK;
        slash[slash == dir ? 1 : 0] = '\0';
        struct stat st;
        if (lstat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
            return rs_error(ctx, RNGSNAP_E_PLUGIN, "plugin %s for "
                            "[backend.%s] refused: %s is no longer a folder "
                            "(the path changed while it was checked)",
                            b->plugin_path, b->name, dir);
        int t = trust_of(&st, above);
        if (t)
            return refuse_untrusted(ctx, b, above ? "the folder above it"
                                                  : "its folder",
                                    dir, &st, t);
    }
}

/* ---- load / unload ---------------------------------------------------- */

/* dlopen the checked file, then hand it to libltdl and fetch the entry
 * symbol; *sym set on success (b->dl holds libltdl's handle). */
static int open_checked(struct rngsnap *ctx, rs_backend *b,
                        const struct stat *checked, void **sym)
{
    const char *path = b->plugin_path;
    /* Bind every symbol now (see the top comment). */
    void *now = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!now) {
        const char *e = dlerror();
        return rs_error(ctx, RNGSNAP_E_PLUGIN, "plugin %s for [backend.%s] "
                        "exists but cannot be loaded: %s", path, b->name,
                        e ? e : "unknown dlopen error");
    }
    struct stat again;
    if (stat(path, &again) != 0 || again.st_dev != checked->st_dev
        || again.st_ino != checked->st_ino) {
        dlclose(now);
        return rs_error(ctx, RNGSNAP_E_PLUGIN, "plugin %s for [backend.%s] "
                        "refused: the file was replaced between its checks "
                        "and its loading", path, b->name);
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
    *sym = NULL;
    if (h) {
        *sym = lt_dlsym(h, RNGSNAP_BACKEND_ENTRY);
        e = lt_dlerror();
        snprintf(ltmsg, sizeof ltmsg, "%s", e ? e : "symbol not found");
        if (!*sym) {
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
    if (!*sym)
        return rs_error(ctx, RNGSNAP_E_PLUGIN, "plugin %s for [backend.%s] "
                        "has no symbol " RNGSNAP_BACKEND_ENTRY " (not an "
                        "rngsnap backend plugin?): %s", path, b->name,
                        ltmsg);
    b->dl = h;
    return RNGSNAP_OK;
}

int rs_plugin_load(struct rngsnap *ctx, rs_backend *b, const rs_config *cfg,
                   int *missing)
{
    *missing = 0;
    int fd = -1;
    struct stat st;
    void *sym = NULL;
    int rc = check_plugin_value(ctx, b);
    if (!rc)
        rc = find_plugin(ctx, b, cfg, missing);
    if (!rc)
        rc = check_file(ctx, b, &fd, &st);
    if (!rc)
        rc = check_folders(ctx, b);
    if (!rc)
        rc = open_checked(ctx, b, &st, &sym);
    if (fd >= 0)
        close(fd);
    if (rc)
        return rc;
    const rngsnap_backend *vt = ((rngsnap_backend_entry_fn)sym)();
    rc = check_table(ctx, b, vt);
    if (rc) {
        rs_plugin_unload(b);
        return rc;
    }
    b->vt = vt;
    char fid[32];
    rs_log(ctx, RNGSNAP_LOG_DEBUG, "backend %s: plugin %s, version %s, "
           "state format %s of %u bytes", b->name, b->plugin_path,
           vt->version ? vt->version : "(none)",
           rs_format_id(vt->state_format, fid, sizeof fid),
           (unsigned)vt->state_size);
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
