/*
 * checkpoint.c - rngsnap_save, rngsnap_load, their in-memory forms
 * (rngsnap_save_mem, rngsnap_load_mem), rngsnap_register_state and
 * rngsnap_unregister_state.
 *
 * Save and load walk the one registry (ctx->streams) and the one list of
 * app states (ctx->apps): a backend cannot be saved and not restored.
 * Load is all or nothing: read, decode, verify and match EVERYTHING
 * first; only then back up and set states, rolling back on failure.
 * The load is split into prepare / commit / undo / finish (internal.h)
 * so that rngsnap_load_ranks (ranks.c) can make every rank agree between
 * the phases; rs_save_image likewise builds the image without writing.
 * A file and a memory checkpoint are one thing: a save builds the image
 * (rs_save_image) and either writes it (store.c) or hands it out; a load
 * gets the bytes (read from the file, or given) and decodes them with
 * the same rs_load_image.
 *
 * Hot path: one malloc for the file image on save; on load one read
 * buffer, one section array and one scratch block (entry map and state
 * backups).  No per-entry syscalls or allocations.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <xxhash.h>

#include "context.h"
#include "fork.h"
#include "format.h"
#include "internal.h"
#include "lock.h"
#include "mismatch.h"
#include "store.h"
#include "words.h"

#define LOAD_FLAGS 0u
/* Names the bytes of rngsnap_save_mem/rngsnap_load_mem in messages,
 * where a file's path stands for a file. */
#define RS_MEM_NAME "checkpoint bytes"
#define SAVE_FLAGS (RNGSNAP_SAVE_REPLACE | RNGSNAP_SAVE_NO_SYNC)

/* The plugin put its detail in this thread's message (host->error) after
 * mark; keep it behind our own prefix. */
static int plugin_error(struct rngsnap *ctx, int rc, const char *fmt_prefix,
                        const char *path, const char *label,
                        unsigned long mark)
{
    char detail[RS_ERRMSG_MAX];
    const char *said = rs_error_since(ctx, mark);
    snprintf(detail, sizeof detail, "%s",
             said ? said : "(the plugin gave no detail)");
    if (rc <= RNGSNAP_OK || rc > RNGSNAP_E_BACKEND)
        rc = RNGSNAP_E_BACKEND;
    return rs_error(ctx, rc, "%s: %s %s: %s", path, fmt_prefix, label,
                    detail);
}

/* ---- register_state ------------------------------------------------------ */

static int register_state_locked(struct rngsnap *ctx, const char *name,
                                 const rngsnap_state_ops *ops, void *user)
{
    if (!name || !*name || strlen(name) > RS_FMT_NAME_MAX)
        return rs_error(ctx, RNGSNAP_E_INVALID,
                        "%s: name must be 1..%u bytes",
                        rs_word(ctx, RS_W_REGISTER_STATE), RS_FMT_NAME_MAX);
    if (!ops || !ops->size || !ops->save || !ops->load)
        return rs_error(ctx, RNGSNAP_E_INVALID,
                        "%s %s: ops and its size, save and load "
                        "callbacks must all be set",
                        rs_word(ctx, RS_W_REGISTER_STATE), name);
    for (size_t i = 0; i < ctx->napps; i++)
        if (strcmp(ctx->apps[i].name, name) == 0)
            return rs_error(ctx, RNGSNAP_E_INVALID,
                            "%s: app state %s is already registered",
                            rs_word(ctx, RS_W_REGISTER_STATE), name);
    rs_app_state *a = realloc(ctx->apps, (ctx->napps + 1) * sizeof *a);
    if (!a)
        return rs_error(ctx, RNGSNAP_E_NOMEM, "%s %s: out of memory",
                        rs_word(ctx, RS_W_REGISTER_STATE), name);
    ctx->apps = a;
    char *copy = strdup(name);
    if (!copy)
        return rs_error(ctx, RNGSNAP_E_NOMEM, "%s %s: out of memory",
                        rs_word(ctx, RS_W_REGISTER_STATE), name);
    a[ctx->napps].name = copy;
    a[ctx->napps].ops = *ops;
    a[ctx->napps].user = user;
    ctx->napps++;
    return RNGSNAP_OK;
}

/* A callback runs with ctx->lock held: taking it again would deadlock. */
static int in_callback(struct rngsnap *ctx, rs_word_id call,
                       const char *name)
{
    if (!rs_ctx_held_here(ctx))
        return RNGSNAP_OK;
    return rs_error(ctx, RNGSNAP_E_INVALID, "%s %s: called from a save or "
                    "load callback of the same context (it is locked "
                    "while they run)", rs_word(ctx, call),
                    name ? name : "(null)");
}

int rs_register_state(struct rngsnap *ctx, const char *name,
                      const rngsnap_state_ops *ops, void *user)
{
    int rc = in_callback(ctx, RS_W_REGISTER_STATE, name);
    if (rc)
        return rc;
    rs_ctx_lock(ctx);
    rc = register_state_locked(ctx, name, ops, user);
    rs_ctx_unlock(ctx);
    return rc;
}

RNGSNAP_API int rngsnap_register_state(rngsnap *ctx, const char *name,
                                       const rngsnap_state_ops *ops,
                                       void *user)
{
    if (!ctx)
        return RNGSNAP_E_INVALID;
    /* A resumed context's load restored the app states registered
     * before it: one registered after would silently keep this run's
     * values.  (Read unlocked: a load racing with a registration on
     * another thread has no order to keep.) */
    int rc = in_callback(ctx, RS_W_REGISTER_STATE, name);
    if (!rc)
        rc = rs_resumed_register_gate(ctx, name ? name : "(null)");
    return rc ? rc : rs_register_state(ctx, name, ops, user);
}

static int unregister_state_locked(struct rngsnap *ctx, const char *name)
{
    for (size_t i = 0; i < ctx->napps; i++) {
        if (strcmp(ctx->apps[i].name, name) != 0)
            continue;
        free(ctx->apps[i].name);
        /* Keep the others in registration order: save writes them so. */
        memmove(&ctx->apps[i], &ctx->apps[i + 1],
                (ctx->napps - i - 1) * sizeof ctx->apps[0]);
        ctx->napps--;
        return RNGSNAP_OK;
    }
    return rs_error(ctx, RNGSNAP_E_INVALID, "%s: no app state %s is "
                    "registered", rs_word(ctx, RS_W_UNREGISTER_STATE), name);
}

RNGSNAP_API int rngsnap_unregister_state(rngsnap *ctx, const char *name)
{
    if (!ctx)
        return rs_error(NULL, RNGSNAP_E_INVALID,
                        "rngsnap_unregister_state: ctx is NULL");
    if (!name)
        return rs_error(ctx, RNGSNAP_E_INVALID, "%s: name is NULL",
                        rs_word(ctx, RS_W_UNREGISTER_STATE));
    int rc = in_callback(ctx, RS_W_UNREGISTER_STATE, name);
    if (rc)
        return rc;
    rs_ctx_lock(ctx);
    rc = unregister_state_locked(ctx, name);
    rs_ctx_unlock(ctx);
    return rc;
}

/* ---- save --------------------------------------------------------------- */

/* Every stream's state into its section at p (sealed); the caller holds
 * every stream's lock, so each state is one that whole draws reached. */
static int put_stream_sections(struct rngsnap *ctx, const char *path,
                               uint8_t **pp)
{
    uint8_t *p = *pp;
    for (size_t i = 0; i < ctx->nstreams; i++) {
        const struct rngsnap_stream *s = &ctx->streams[i];
        const rngsnap_backend *vt = s->backend->vt;
        size_t bl = strlen(s->backend->name), nl = strlen(s->name);
        uint8_t *st = rs_fmt_put_section(
            p, RNGSNAP_SECTION_STREAM, s->backend->name, bl, s->device,
            s->name, nl, vt->state_format, vt->state_size);
        unsigned long mark = rs_error_mark();
        RS_TRACE(s->backend, "get_state", s);
        if (vt->get_state(s->handle, st, vt->state_size) != RNGSNAP_OK) {
            char label[600];
            rs_stream_label(s, label, sizeof label);
            return plugin_error(ctx, RNGSNAP_E_BACKEND, "get_state of", path,
                                label, mark);
        }
        size_t size = rs_fmt_section_size(bl, nl, vt->state_size);
        rs_fmt_section_seal(p, size);
        p += size;
    }
    *pp = p;
    return RNGSNAP_OK;
}

int rs_save_image(struct rngsnap *ctx, const char *path, uint8_t **image,
                  size_t *image_len, uint64_t *app_sums)
{
    int rc = RNGSNAP_OK;
    *image = NULL;
    *image_len = 0;
    /* Size the file: one pass over the registry and the app states. */
    size_t nsec = ctx->nstreams + ctx->napps;
    if (nsec > UINT32_MAX)
        return rs_error(ctx, RNGSNAP_E_INVALID, "save %s: too many sections",
                        path);
    size_t total = RS_FMT_HEADER_SIZE + RS_FMT_TRAILER_SIZE;
    for (size_t i = 0; i < ctx->nstreams; i++) {
        const struct rngsnap_stream *s = &ctx->streams[i];
        size_t bl = strlen(s->backend->name), nl = strlen(s->name);
        uint32_t ss = s->backend->vt->state_size;
        if (bl > RS_FMT_NAME_MAX || nl > RS_FMT_NAME_MAX
            || ss > RS_FMT_STREAM_STATE_MAX)
            return rs_error(ctx, RNGSNAP_E_INVALID,
                            "save %s: %s:%d/%s: name longer than %u bytes or "
                            "state larger than %u bytes",
                            path, s->backend->name, s->device, s->name,
                            RS_FMT_NAME_MAX, RS_FMT_STREAM_STATE_MAX);
        total += rs_fmt_section_size(bl, nl, ss);
    }
    size_t *asz = NULL;
    if (ctx->napps) {
        asz = malloc(ctx->napps * sizeof *asz);
        if (!asz)
            return rs_error(ctx, RNGSNAP_E_NOMEM, "save %s: out of memory",
                            path);
    }
    for (size_t i = 0; i < ctx->napps; i++) {
        const rs_app_state *a = &ctx->apps[i];
        asz[i] = a->ops.size(a->user);
        if (asz[i] > RS_FMT_APP_STATE_MAX) {
            rc = rs_error(ctx, RNGSNAP_E_INVALID,
                          "save %s: app state %s is %zu bytes, more than "
                          "the %u a checkpoint holds",
                          path, a->name, asz[i], RS_FMT_APP_STATE_MAX);
            goto out;
        }
        total += rs_fmt_section_size(0, strlen(a->name), asz[i]);
    }
    if (total > RS_FMT_FILE_MAX) {
        rc = rs_error(ctx, RNGSNAP_E_INVALID,
                      "save %s: checkpoint would be %zu bytes, more than "
                      "the %zu allowed",
                      path, total, (size_t)RS_FMT_FILE_MAX);
        goto out;
    }

    uint8_t *buf = malloc(total);
    if (!buf) {
        rc = rs_error(ctx, RNGSNAP_E_NOMEM,
                      "save %s: out of memory for %zu bytes", path, total);
        goto out;
    }
    rs_fmt_put_header(buf, ctx->rank, ctx->world_size, (int64_t)time(NULL),
                      (uint32_t)nsec);
    uint8_t *p = buf + RS_FMT_HEADER_SIZE;
    rs_streams_lock_all(ctx);
    rc = put_stream_sections(ctx, path, &p);
    rs_streams_unlock_all(ctx);
    if (rc) {
        free(buf);
        goto out;
    }
    for (size_t i = 0; i < ctx->napps; i++) {
        const rs_app_state *a = &ctx->apps[i];
        size_t nl = strlen(a->name);
        uint8_t *st = rs_fmt_put_section(p, RNGSNAP_SECTION_APP, NULL, 0, -1,
                                         a->name, nl, 0, (uint32_t)asz[i]);
        int arc = a->ops.save(a->user, st, asz[i]);
        if (arc != 0) {
            char why[80];
            rs_callback_failed(ctx, "save", arc, why, sizeof why);
            rc = rs_error(ctx, RNGSNAP_E_BACKEND, "save %s: app state %s: %s",
                          path, a->name, why);
            free(buf);
            goto out;
        }
        if (app_sums)
            app_sums[i] = XXH3_64bits(st, asz[i]);
        size_t size = rs_fmt_section_size(0, nl, asz[i]);
        rs_fmt_section_seal(p, size);
        p += size;
    }
    rs_fmt_put_trailer(buf, total);
    *image = buf;
    *image_len = total;
out:
    free(asz);
    return rc;
}

/* What a file save and a memory save share once their arguments are
 * checked: the resume gate, then the image.  what names the target in
 * messages ("save <path>" / "save checkpoint bytes"). */
static int save_checked(struct rngsnap *ctx, const char *what,
                        const char *name, uint8_t **buf, size_t *len)
{
    int rc = rs_check_usable(ctx);
    if (rc)
        return rc;
    if (atomic_load(&ctx->awaiting_load))
        /* Saving a resumed job before its load would write fresh states
         * over the checkpoint it is about to resume from. */
        return rs_error(ctx, RNGSNAP_E_ORDER,
                        "%s: this context was opened with %s and has "
                        "not loaded a checkpoint yet (call %s first). "
                        RS_FIRST_RUN, what, rs_word(ctx, RS_W_RESUME),
                        rs_word(ctx, RS_W_LOAD_ANY),
                        rs_word(ctx, RS_W_RESUME),
                        rs_word(ctx, RS_W_SEED_ALL));
    return rs_save_image(ctx, name, buf, len, NULL);
}

/* A save or load of path in a fork() child: "save <path>" refused. */
static int fork_refused(struct rngsnap *ctx, const char *op,
                        const char *path, int load)
{
    char what[RS_ERRMSG_MAX];
    snprintf(what, sizeof what, "%s %s", op, path ? path : "(null)");
    return rs_fork_refuse(ctx, what, load);
}

/* A file is the bytes of a memory save, written atomically. */
static int save_locked(struct rngsnap *ctx, const char *path, unsigned flags)
{
    if (!path || !*path)
        return rs_error(ctx, RNGSNAP_E_INVALID, "save: no path given");
    if (flags & ~SAVE_FLAGS)
        return rs_error(ctx, RNGSNAP_E_INVALID,
                        "save %s: unknown flags 0x%x", path,
                        flags & ~SAVE_FLAGS);
    char what[RS_ERRMSG_MAX];
    snprintf(what, sizeof what, "save %s", path);
    uint8_t *buf;
    size_t total;
    int rc = save_checked(ctx, what, path, &buf, &total);
    if (rc)
        return rc;
    char err[RS_ERRMSG_MAX];
    rc = rs_store_write(ctx, path, buf, total, flags, err, sizeof err);
    if (rc != RNGSNAP_OK)
        rs_error(ctx, rc, "save %s", err);
    free(buf);
    return rc;
}

static int save_mem_locked(struct rngsnap *ctx, void **data, size_t *size,
                           unsigned flags)
{
    if (!data || !size)
        return rs_error(ctx, RNGSNAP_E_INVALID, "rngsnap_save_mem: %s is "
                        "NULL", data ? "size" : "data");
    if (flags)
        return rs_error(ctx, RNGSNAP_E_INVALID, "rngsnap_save_mem: unknown "
                        "flags 0x%x (it takes none: pass 0)", flags);
    uint8_t *buf;
    size_t len;
    int rc = save_checked(ctx, "save " RS_MEM_NAME, RS_MEM_NAME, &buf, &len);
    if (rc)
        return rc;
    *data = buf;
    *size = len;
    return RNGSNAP_OK;
}

RNGSNAP_API int rngsnap_save(rngsnap *ctx, const char *path, unsigned flags)
{
    if (!ctx)
        return RNGSNAP_E_INVALID;
    if (rs_forked(ctx)) /* before the lock: see fork.h */
        return fork_refused(ctx, "save", path, 0);
    rs_ctx_lock(ctx);
    int rc = save_locked(ctx, path, flags);
    rs_ctx_unlock(ctx);
    return rc;
}

RNGSNAP_API int rngsnap_save_mem(rngsnap *ctx, void **data, size_t *size,
                                 unsigned flags)
{
    /* Nothing to free after any failure. */
    if (data)
        *data = NULL;
    if (size)
        *size = 0;
    if (!ctx)
        return rs_error(NULL, RNGSNAP_E_INVALID,
                        "rngsnap_save_mem: ctx is NULL");
    if (rs_forked(ctx))
        return rs_fork_refuse(ctx, "save " RS_MEM_NAME, 0);
    rs_ctx_lock(ctx);
    int rc = save_mem_locked(ctx, data, size, flags);
    rs_ctx_unlock(ctx);
    return rc;
}

RNGSNAP_API void rngsnap_free(void *data)
{
    free(data);
}

/* ---- load: matching ------------------------------------------------------ */

static int stream_is(const struct rngsnap_stream *e, const rs_fmt_section *s)
{
    return e->device == s->pub.device
           && rs_name_is(e->backend->name, s->pub.backend, s->backend_len)
           && rs_name_is(e->name, s->pub.name, s->name_len);
}

static int app_is(const rs_app_state *a, const rs_fmt_section *s)
{
    return rs_name_is(a->name, s->pub.name, s->name_len);
}

/* Entries all matched, but in another order than the registry's (rng.ini
 * sections or stream lists reordered): restored by name, but a job that
 * walks the registry by index now reaches other streams.  Says so, with
 * the first difference. */
static void warn_if_reordered(const struct rngsnap *ctx, const char *path,
                              const rs_fmt_view *v, const uint32_t *smap)
{
    size_t k = 0; /* index among the file's stream sections */
    for (size_t i = 0; i < v->header.section_count; i++) {
        const rs_fmt_section *s = &v->sections[i];
        if (s->pub.kind != RNGSNAP_SECTION_STREAM)
            continue;
        if (smap[k] != i) {
            char has[600], live[600];
            rs_fmt_section_label(&s->pub, has, sizeof has);
            rs_stream_label(&ctx->streams[k], live, sizeof live);
            rs_log(ctx, RNGSNAP_LOG_WARN,
                   "load %s: the checkpoint's entries are in another order "
                   "than this registry (%s): entry %zu is %s in the "
                   "checkpoint but %s here; restored by name, but a job "
                   "that walks the registry by index (%s) now draws from "
                   "other streams than the job that saved",
                   path, ctx->ini_path, k, has, live,
                   rs_word(ctx, RS_W_STREAM_AT));
            return;
        }
        k++;
    }
}

/* Pair every section with its live entry: smap[entry] and amap[app] get
 * the section index.  Sections normally come in registry order, so the
 * next entry is tried first and the search is linear only on a miss. */
static int match_sections(struct rngsnap *ctx, const char *path,
                          const rs_fmt_view *v, uint32_t *smap,
                          uint32_t *amap, int apps_only)
{
    const uint32_t none = UINT32_MAX;
    size_t n = v->header.section_count;
    size_t next_s = 0, next_a = 0;
    size_t extra = 0;
    for (size_t i = 0; i < ctx->nstreams; i++)
        smap[i] = none;
    for (size_t i = 0; i < ctx->napps; i++)
        amap[i] = none;
    for (size_t i = 0; i < n; i++) {
        const rs_fmt_section *s = &v->sections[i];
        uint32_t *map;
        size_t found = SIZE_MAX;
        if (apps_only && s->pub.kind == RNGSNAP_SECTION_STREAM)
            continue;
        if (s->pub.kind == RNGSNAP_SECTION_STREAM) {
            map = smap;
            if (next_s < ctx->nstreams && stream_is(&ctx->streams[next_s], s))
                found = next_s;
            else
                for (size_t e = 0; e < ctx->nstreams; e++)
                    if (stream_is(&ctx->streams[e], s)) {
                        found = e;
                        break;
                    }
            next_s = found + 1;
        } else {
            map = amap;
            if (next_a < ctx->napps && app_is(&ctx->apps[next_a], s))
                found = next_a;
            else
                for (size_t e = 0; e < ctx->napps; e++)
                    if (app_is(&ctx->apps[e], s)) {
                        found = e;
                        break;
                    }
            next_a = found + 1;
        }
        if (found == SIZE_MAX && apps_only) {
            /* A fork restores what the new job registered; the rest of
             * the old job's app states stay behind, said so. */
            rs_log(ctx, RNGSNAP_LOG_WARN,
                   "load %s: fork: app state %.*s of the checkpoint is not "
                   "registered here and is left out",
                   path, (int)s->name_len, s->pub.name);
            continue;
        }
        if (found == SIZE_MAX) {
            extra++;
            continue;
        }
        if (map[found] != none) {
            char label[600];
            rs_fmt_section_label(&s->pub, label, sizeof label);
            return rs_error(ctx, RNGSNAP_E_CORRUPT,
                            "%s: section %zu (%s) repeats section %u", path,
                            i, label, map[found]);
        }
        map[found] = (uint32_t)i;
    }
    size_t missing = 0;
    for (size_t e = 0; e < ctx->nstreams && !apps_only; e++)
        missing += smap[e] == none;
    for (size_t e = 0; e < ctx->napps; e++)
        missing += amap[e] == none;
    if (!extra && !missing)
        return RNGSNAP_OK;
    return rs_mismatch_error(ctx, path, v, smap, amap, apps_only);
}

/* Format and size of every stream state, then the plugin's own check. */
static int check_states(struct rngsnap *ctx, const char *path,
                        const rs_fmt_view *v, const uint32_t *smap)
{
    for (size_t e = 0; e < ctx->nstreams; e++) {
        const struct rngsnap_stream *s = &ctx->streams[e];
        const rngsnap_backend *vt = s->backend->vt;
        const rngsnap_file_section *sec = &v->sections[smap[e]].pub;
        if (sec->state_format != vt->state_format
            || sec->state_size != vt->state_size) {
            char label[600], fa[32], fb[32];
            rs_stream_label(s, label, sizeof label);
            return rs_error(ctx, RNGSNAP_E_MISMATCH,
                            "%s: section %u (%s): state format %s of %zu "
                            "bytes, but plugin %s (%s) uses format %s of %u "
                            "bytes; nothing restored (configuration %s)",
                            path, smap[e], label,
                            rs_format_id(sec->state_format, fa, sizeof fa),
                            sec->state_size, s->backend->name,
                            s->backend->plugin_path,
                            rs_format_id(vt->state_format, fb, sizeof fb),
                            vt->state_size, ctx->ini_path);
        }
    }
    for (size_t e = 0; e < ctx->nstreams; e++) {
        const struct rngsnap_stream *s = &ctx->streams[e];
        const rngsnap_backend *vt = s->backend->vt;
        if (!RNGSNAP_BACKEND_HAS(vt, validate_state))
            continue;
        const rngsnap_file_section *sec = &v->sections[smap[e]].pub;
        unsigned long mark = rs_error_mark();
        RS_TRACE(s->backend, "validate_state", s);
        int rc = vt->validate_state(s->backend->bctx, sec->state,
                                    sec->state_size);
        if (rc != RNGSNAP_OK) {
            char label[600];
            rs_stream_label(s, label, sizeof label);
            return plugin_error(ctx, rc, "plugin refuses the state of", path,
                                label, mark);
        }
    }
    return RNGSNAP_OK;
}

/* ---- load: applying ------------------------------------------------------ */

/* Put the backed-up states of entries [0, upto) back. Returns how many
 * could not be restored. */
static size_t rollback_streams(struct rngsnap *ctx, const uint8_t *backup,
                               size_t upto)
{
    size_t failed = 0;
    for (size_t e = 0; e < upto; e++) {
        const struct rngsnap_stream *s = &ctx->streams[e];
        const rngsnap_backend *vt = s->backend->vt;
        RS_TRACE(s->backend, "set_state (rollback)", s);
        if (vt->set_state(s->handle, backup, vt->state_size) != RNGSNAP_OK)
            failed++;
        backup += vt->state_size;
    }
    return failed;
}

static size_t rollback_apps(struct rngsnap *ctx, const uint8_t *backup,
                            const size_t *asz, size_t upto)
{
    size_t failed = 0;
    for (size_t i = 0; i < upto; i++) {
        const rs_app_state *a = &ctx->apps[i];
        if (a->ops.load(a->user, backup, asz[i]) != 0)
            failed++;
        backup += asz[i];
    }
    return failed;
}

/* Back up every app state (so a failed load can be undone) into one
 * block: *asz gets the sizes, *abuf the bytes. */
static int backup_apps(struct rngsnap *ctx, const char *path, size_t **asz,
                       uint8_t **abuf)
{
    *asz = NULL;
    *abuf = NULL;
    if (!ctx->napps)
        return RNGSNAP_OK;
    size_t *sz = malloc(ctx->napps * sizeof *sz), total = 0;
    if (!sz)
        return rs_error(ctx, RNGSNAP_E_NOMEM, "load %s: out of memory", path);
    for (size_t i = 0; i < ctx->napps; i++) {
        sz[i] = ctx->apps[i].ops.size(ctx->apps[i].user);
        /* The bound a save applies: it also keeps the total from
         * wrapping into a short allocation. */
        if (sz[i] > RS_FMT_APP_STATE_MAX) {
            int rc = rs_error(ctx, RNGSNAP_E_INVALID,
                              "load %s: app state %s is %zu bytes, more "
                              "than the %u a checkpoint holds; nothing "
                              "restored",
                              path, ctx->apps[i].name, sz[i],
                              RS_FMT_APP_STATE_MAX);
            free(sz);
            return rc;
        }
        total += sz[i];
    }
    uint8_t *b = malloc(total ? total : 1);
    if (!b) {
        free(sz);
        return rs_error(ctx, RNGSNAP_E_NOMEM, "load %s: out of memory", path);
    }
    uint8_t *p = b;
    for (size_t i = 0; i < ctx->napps; i++) {
        const rs_app_state *a = &ctx->apps[i];
        int arc = a->ops.save(a->user, p, sz[i]);
        if (arc != 0) {
            char why[80];
            rs_callback_failed(ctx, "save", arc, why, sizeof why);
            free(sz);
            free(b);
            return rs_error(ctx, RNGSNAP_E_BACKEND,
                            "load %s: backing up app state %s: %s; nothing "
                            "restored", path, a->name, why);
        }
        p += sz[i];
    }
    *asz = sz;
    *abuf = b;
    return RNGSNAP_OK;
}

/* Entry e's new state: the file's section, or (a fork) its seed. */
static int set_entry(struct rngsnap *ctx, const rs_load_plan *pl, size_t e)
{
    const struct rngsnap_stream *s = &ctx->streams[e];
    RS_TRACE(s->backend, pl->seeds ? "seed" : "set_state", s);
    if (pl->seeds)
        return s->backend->vt->seed(s->handle, pl->seeds[e],
                                    (uint64_t)ctx->rank);
    const rngsnap_file_section *sec = &pl->v.sections[pl->smap[e]].pub;
    return s->backend->vt->set_state(s->handle, sec->state, sec->state_size);
}

int rs_load_commit(struct rngsnap *ctx, rs_load_plan *pl)
{
    const char *path = pl->path;
    uint8_t *backup = pl->backup;
    /* Back up every live state before changing any. */
    uint8_t *p = backup;
    for (size_t e = 0; e < ctx->nstreams; e++) {
        const struct rngsnap_stream *s = &ctx->streams[e];
        const rngsnap_backend *vt = s->backend->vt;
        unsigned long mark = rs_error_mark();
        RS_TRACE(s->backend, "get_state (backup)", s);
        if (vt->get_state(s->handle, p, vt->state_size) != RNGSNAP_OK) {
            char label[600];
            rs_stream_label(s, label, sizeof label);
            return plugin_error(ctx, RNGSNAP_E_BACKEND,
                                "backing up (nothing restored)", path,
                                label, mark);
        }
        p += vt->state_size;
    }
    int rc = backup_apps(ctx, path, &pl->asz, &pl->abuf);
    if (rc)
        return rc;
    size_t *asz = pl->asz;
    uint8_t *abuf = pl->abuf;

    /* A failing set_state or load callback must leave its own state
     * unchanged.  Its backup is put back anyway, against one that failed
     * halfway; that retry is not counted as a failed rollback (what
     * refuses every state of an entry changed nothing). */
    p = backup;
    for (size_t e = 0; e < ctx->nstreams; e++) {
        const struct rngsnap_stream *s = &ctx->streams[e];
        const rngsnap_backend *vt = s->backend->vt;
        unsigned long mark = rs_error_mark();
        if (set_entry(ctx, pl, e) != RNGSNAP_OK) {
            char label[600], what[64], detail[RS_ERRMSG_MAX];
            rs_stream_label(s, label, sizeof label);
            /* Keep the plugin's words: rollback calls may overwrite
             * them. */
            const char *said = rs_error_since(ctx, mark);
            snprintf(detail, sizeof detail, "%s", said ? said : "");
            size_t bad = rollback_streams(ctx, backup, e);
            RS_TRACE(s->backend, "set_state (rollback)", s);
            (void)vt->set_state(s->handle, p, vt->state_size);
            mark = rs_error_mark();
            if (detail[0])
                rs_error(ctx, RNGSNAP_E_BACKEND, "%s", detail);
            snprintf(what, sizeof what, "%s (rolled back%s) of",
                     pl->seeds ? "seed" : "set_state",
                     bad ? ", ROLLBACK INCOMPLETE" : "");
            return plugin_error(ctx, RNGSNAP_E_BACKEND, what, path, label,
                                mark);
        }
        p += vt->state_size;
    }
    const uint8_t *ab = abuf;
    for (size_t i = 0; i < ctx->napps; i++) {
        const rs_app_state *a = &ctx->apps[i];
        const rngsnap_file_section *sec = &pl->v.sections[pl->amap[i]].pub;
        int arc = a->ops.load(a->user, sec->state, sec->state_size);
        if (arc != 0) {
            size_t bad = rollback_apps(ctx, abuf, asz, i)
                         + rollback_streams(ctx, backup, ctx->nstreams);
            (void)a->ops.load(a->user, ab, asz[i]);
            char why[80];
            rs_callback_failed(ctx, "load", arc, why, sizeof why);
            return rs_error(ctx, RNGSNAP_E_BACKEND,
                            "load %s: app state %s: %s; %s",
                            path, a->name, why,
                            bad ? "ROLLBACK INCOMPLETE"
                                : "everything rolled back");
        }
        ab += asz[i];
    }
    pl->committed = 1;
    return RNGSNAP_OK;
}

size_t rs_load_undo(struct rngsnap *ctx, rs_load_plan *pl)
{
    if (!pl->committed)
        return 0;
    pl->committed = 0;
    return rollback_apps(ctx, pl->abuf, pl->asz, ctx->napps)
           + rollback_streams(ctx, pl->backup, ctx->nstreams);
}

void rs_load_finish(rs_load_plan *pl)
{
    free(pl->asz);
    free(pl->abuf);
    free(pl->scratch);
    rs_fmt_view_free(&pl->v);
    memset(pl, 0, sizeof *pl);
}

/* ---- load: preparing ----------------------------------------------------- */

/* The decoder names a damaged section by its place and gives its label
 * only as read from the damaged bytes: say which entry this context
 * writes at that place (streams in registry order, then app states), ""
 * when the label read is that entry's or the place is past this
 * context's entries. */
static void damaged_entry(const struct rngsnap *ctx, const rs_fmt_view *v,
                          char *buf, size_t len)
{
    char label[600];
    size_t i = v->damaged ? v->damaged - 1 : SIZE_MAX;
    buf[0] = '\0';
    if (i < ctx->nstreams)
        rs_stream_label(&ctx->streams[i], label, sizeof label);
    else if (i != SIZE_MAX && i - ctx->nstreams < ctx->napps)
        snprintf(label, sizeof label, "app state %s",
                 ctx->apps[i - ctx->nstreams].name);
    else
        return;
    if (strcmp(label, v->damaged_label) != 0)
        snprintf(buf, len, "; this context saves %s there", label);
}

int rs_load_prepare(struct rngsnap *ctx, const char *path,
                    const uint8_t *buf, size_t len, const uint64_t *seeds,
                    int32_t fork_world, rs_load_plan *pl)
{
    memset(pl, 0, sizeof *pl);
    pl->path = path;
    pl->seeds = seeds;
    size_t backups = 0;
    for (size_t e = 0; e < ctx->nstreams; e++)
        backups += ctx->streams[e].backend->vt->state_size;

    char err[RS_ERRMSG_MAX];
    int rc = rs_fmt_decode(buf, len, path, 0, &pl->v, err, sizeof err);
    if (rc) {
        char entry[700];
        damaged_entry(ctx, &pl->v, entry, sizeof entry);
        return rs_error(ctx, rc, "%s%s; nothing restored", err, entry);
    }
    const rngsnap_file_header *h = &pl->v.header;
    if (seeds && (h->rank != 0 || h->world_size != fork_world))
        return rs_error(ctx, RNGSNAP_E_MISMATCH,
                        "%s: checkpoint is rank %d of %d, a fork reads "
                        "rank 0 of %d; nothing restored",
                        path, (int)h->rank, (int)h->world_size,
                        (int)fork_world);
    if (!seeds
        && (h->rank != ctx->rank || h->world_size != ctx->world_size))
        return rs_error(ctx, RNGSNAP_E_MISMATCH,
                        "%s: checkpoint is rank %d of %d, this process is "
                        "rank %d of %d; nothing restored (configuration "
                        "%s). Each rank loads the file its own rank saved, "
                        "with the same world size: check the launcher's "
                        "RANK/WORLD_SIZE (or OMPI_COMM_WORLD_*, PMI_*) or "
                        "%s, and which file this rank opens",
                        path, (int)h->rank, (int)h->world_size, ctx->rank,
                        ctx->world_size, ctx->ini_path,
                        rs_word(ctx, RS_W_SET_RANK));
    /* One scratch block: entry -> section maps, then state backups. */
    size_t maps = (ctx->nstreams + ctx->napps) * sizeof(uint32_t);
    pl->scratch = malloc(maps + backups + 1);
    if (!pl->scratch)
        return rs_error(ctx, RNGSNAP_E_NOMEM, "load %s: out of memory",
                        path);
    pl->smap = (uint32_t *)pl->scratch;
    pl->amap = pl->smap + ctx->nstreams;
    pl->backup = pl->scratch + maps;
    rc = match_sections(ctx, path, &pl->v, pl->smap, pl->amap, seeds != NULL);
    if (!rc && !seeds)
        rc = check_states(ctx, path, &pl->v, pl->smap);
    if (!rc && !seeds)
        warn_if_reordered(ctx, path, &pl->v, pl->smap);
    return rc;
}

/* ---- load ---------------------------------------------------------------- */

int rs_load_image(struct rngsnap *ctx, const char *path, const uint8_t *buf,
                  size_t len)
{
    rs_load_plan pl;
    int rc = rs_load_prepare(ctx, path, buf, len, NULL, 0, &pl);
    if (!rc) {
        /* Draws on other threads wait while the states change, and see
         * the gate open only with the loaded states in place. */
        rs_streams_lock_all(ctx);
        rc = rs_load_commit(ctx, &pl);
        if (!rc) {
            /* a single file records no fork history */
            memset(ctx->forked_from, 0, sizeof ctx->forked_from);
            rs_mark_loaded(ctx);
        }
        rs_streams_unlock_all(ctx);
    }
    rs_load_finish(&pl);
    return rc;
}

static int load_locked(struct rngsnap *ctx, const char *path,
                       unsigned flags)
{
    if (!path || !*path)
        return rs_error(ctx, RNGSNAP_E_INVALID, "load: no path given");
    if (flags & RNGSNAP_LOAD_FORK)
        return rs_error(ctx, RNGSNAP_E_INVALID,
                        "load %s: fork applies to multi-rank folders (%s)",
                        path, rs_word(ctx, RS_W_LOAD_RANKS));
    if (flags & ~LOAD_FLAGS)
        return rs_error(ctx, RNGSNAP_E_INVALID, "load %s: unknown flags 0x%x",
                        path, flags & ~LOAD_FLAGS);
    int rc = rs_check_usable(ctx);
    if (rc)
        return rc;
    char what[RS_ERRMSG_MAX];
    snprintf(what, sizeof what, "load %s", path);
    rc = rs_reload_gate(ctx, what);
    if (rc)
        return rc;

    /* The file this registry would write: its size is the read's hint
     * (only a hint: a wrong one costs one more read() at most). */
    size_t hint = RS_FMT_HEADER_SIZE + RS_FMT_TRAILER_SIZE;
    for (size_t e = 0; e < ctx->nstreams; e++) {
        const struct rngsnap_stream *s = &ctx->streams[e];
        hint += rs_fmt_section_size(strlen(s->backend->name),
                                    strlen(s->name),
                                    s->backend->vt->state_size);
    }
    for (size_t i = 0; i < ctx->napps; i++)
        hint += rs_fmt_section_size(0, strlen(ctx->apps[i].name),
                                    ctx->apps[i].ops.size(ctx->apps[i].user));

    char err[RS_ERRMSG_MAX];
    uint8_t *buf;
    size_t len;
    rc = rs_store_read(path, hint, &buf, &len, err, sizeof err);
    if (rc)
        return rs_error(ctx, rc, "load %s", err);
    /* From here a file is bytes in memory, decoded as rngsnap_load_mem
     * decodes them. */
    rc = rs_load_image(ctx, path, buf, len);
    free(buf);
    return rc;
}

static int load_mem_locked(struct rngsnap *ctx, const void *data,
                           size_t size, unsigned flags)
{
    if (!data)
        return rs_error(ctx, RNGSNAP_E_INVALID,
                        "rngsnap_load_mem: data is NULL");
    if (size == 0)
        return rs_error(ctx, RNGSNAP_E_INVALID,
                        "rngsnap_load_mem: size is 0 (no checkpoint bytes)");
    if (flags)
        return rs_error(ctx, RNGSNAP_E_INVALID, "rngsnap_load_mem: unknown "
                        "flags 0x%x (it takes none: pass 0)", flags);
    int rc = rs_check_usable(ctx);
    if (!rc)
        rc = rs_reload_gate(ctx, "load " RS_MEM_NAME);
    if (rc)
        return rc;
    return rs_load_image(ctx, RS_MEM_NAME, data, size);
}

RNGSNAP_API int rngsnap_load(rngsnap *ctx, const char *path, unsigned flags)
{
    if (!ctx)
        return RNGSNAP_E_INVALID;
    if (rs_forked(ctx))
        return fork_refused(ctx, "load", path, 1);
    rs_ctx_lock(ctx);
    int rc = load_locked(ctx, path, flags);
    rs_ctx_unlock(ctx);
    return rc;
}

RNGSNAP_API int rngsnap_load_mem(rngsnap *ctx, const void *data, size_t size,
                                 unsigned flags)
{
    if (!ctx)
        return rs_error(NULL, RNGSNAP_E_INVALID,
                        "rngsnap_load_mem: ctx is NULL");
    if (rs_forked(ctx))
        return rs_fork_refuse(ctx, "load " RS_MEM_NAME, 1);
    rs_ctx_lock(ctx);
    int rc = load_mem_locked(ctx, data, size, flags);
    rs_ctx_unlock(ctx);
    return rc;
}
