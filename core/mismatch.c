/*
 * mismatch.c - what a strict load says when the checkpoint's sections and
 * the live registry do not pair up (mismatch.h): device counts that
 * differ, in the admin's terms and with the way out; then the first
 * offender on each side, with what this configuration knows about it (a
 * backend it lacks, an optional backend present on one node only).
 * Only on the error path: a few passes and allocations are fine here.
 */
#include "mismatch.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>

#include "internal.h"
#include "words.h"

#define RS_NONE UINT32_MAX

/* The configured backend named by the len bytes at name, or NULL. */
static const rs_backend *backend_named(const struct rngsnap *ctx,
                                       const char *name, size_t len)
{
    for (size_t i = 0; i < ctx->nbackends; i++)
        if (rs_name_is(ctx->backends[i].name, name, len))
            return &ctx->backends[i];
    return NULL;
}

/* ---- device counts --------------------------------------------------- */

/* Devices of each configured backend in the checkpoint: 1 + the highest
 * device of its stream sections (a save writes devices 0..n-1), 0 where
 * it has none.  fdev has ctx->nbackends slots, zeroed. */
static void file_devices(const struct rngsnap *ctx, const rs_fmt_view *v,
                         int *fdev)
{
    for (size_t i = 0; i < v->header.section_count; i++) {
        const rs_fmt_section *s = &v->sections[i];
        if (s->pub.kind != RNGSNAP_SECTION_STREAM)
            continue;
        const rs_backend *b = backend_named(ctx, s->pub.backend,
                                            s->backend_len);
        int d = s->pub.device;
        if (b && d >= 0 && d < INT_MAX && d + 1 > fdev[b - ctx->backends])
            fdev[b - ctx->backends] = d + 1;
    }
}

/* b has devices here and the checkpoint some of b's, another number. */
static int device_gap(const rs_backend *b, int in_file)
{
    return b->available && in_file > 0 && in_file != b->device_count;
}

/* Where b's device count comes from: the emulate_devices line, or the
 * driver as the plugin's status line reports it. */
static void device_origin(const struct rngsnap *ctx, const rs_backend *b,
                          char *buf, size_t len)
{
    const rngsnap_backend *vt = b->vt;
    if (RNGSNAP_BACKEND_HAS(vt, status))
        RS_TRACE(b, "status", NULL);
    const char *status = RNGSNAP_BACKEND_HAS(vt, status)
                             ? vt->status(b->bctx) : NULL;
    if (RNGSNAP_BACKEND_HAS(vt, emulated))
        RS_TRACE(b, "emulated", NULL);
    if (RNGSNAP_BACKEND_HAS(vt, emulated) && vt->emulated(b->bctx)) {
        for (size_t i = 0; i < b->noptions; i++)
            if (strcmp(b->options[i].key, "emulate_devices") == 0) {
                snprintf(buf, len, "emulate_devices = %s at %s:%d",
                         b->options[i].value, ctx->ini_path,
                         b->options[i].line);
                return;
            }
        snprintf(buf, len, "emulated by plugin %s%s%s", b->plugin_path,
                 status ? ": " : "", status ? status : "");
    } else if (status && *status) {
        snprintf(buf, len, "from the driver: %s", status);
    } else {
        snprintf(buf, len, "from the driver, through plugin %s",
                 b->plugin_path);
    }
}

/* "the checkpoint has 2 cuda devices and this configuration 4 (...)" for
 * every backend whose count differs, "; "-separated; "" when none. */
static void device_gaps(const struct rngsnap *ctx, const int *fdev,
                        char *buf, size_t len)
{
    buf[0] = '\0';
    for (size_t i = 0; i < ctx->nbackends; i++) {
        const rs_backend *b = &ctx->backends[i];
        if (!device_gap(b, fdev[i]))
            continue;
        char origin[700];
        device_origin(ctx, b, origin, sizeof origin);
        size_t used = strlen(buf);
        snprintf(buf + used, len - used, "%sthe checkpoint has %d %s "
                 "device%s and this configuration %d (%s)",
                 used ? "; " : "", fdev[i], b->name, fdev[i] == 1 ? "" : "s",
                 b->device_count, origin);
    }
}

/* A checkpoint section / live entry on a device that only one side has,
 * of a backend whose device count differs: the count says it all. */
static int extra_device(const struct rngsnap *ctx, const int *fdev,
                        const rs_fmt_section *s)
{
    const rs_backend *b = backend_named(ctx, s->pub.backend, s->backend_len);
    return b && device_gap(b, fdev[b - ctx->backends])
           && s->pub.device >= b->device_count;
}

static int missing_device(const struct rngsnap *ctx, const int *fdev,
                          const struct rngsnap_stream *e)
{
    int in_file = fdev[e->backend - ctx->backends];
    return device_gap(e->backend, in_file) && e->device >= in_file;
}

/* ---- other offenders --------------------------------------------------- */

/* What an admin does about an optional backend that is on one node and
 * not on another. */
#define RS_OPTIONAL_FIX                                                     \
    "resume where the same backends are present as where the checkpoint "  \
    "was written, or set 'required = true' so that a node without it "      \
    "stops at %s instead of at the load"

/* Why the checkpoint's stream section s has no live entry, when the
 * configuration says more than "not listed". */
static void why_extra(const struct rngsnap *ctx, const rs_fmt_section *s,
                      char *buf, size_t len)
{
    const rs_backend *b = backend_named(ctx, s->pub.backend, s->backend_len);
    if (!b)
        snprintf(buf, len, " (no [backend.%.*s] in this configuration)",
                 (int)s->backend_len, s->pub.backend);
    else if (b->skipped)
        snprintf(buf, len, " (backend %s is optional, 'required = false', "
                 "and was skipped here: %s; it was present where the "
                 "checkpoint was written: " RS_OPTIONAL_FIX ")", b->name,
                 b->reason ? b->reason : "no device",
                 rs_word(ctx, RS_W_OPEN));
    else
        buf[0] = '\0';
}

/* The same for a live entry that the checkpoint lacks. */
static void why_missing(const struct rngsnap_stream *e, char *buf,
                        size_t len)
{
    if (!e->backend->required)
        snprintf(buf, len, " (backend %s is optional, 'required = false', "
                 "and present here, so it was probably absent where the "
                 "checkpoint was written: " RS_OPTIONAL_FIX ")",
                 e->backend->name, rs_word(e->ctx, RS_W_OPEN));
    else
        buf[0] = '\0';
}

/* "checkpoint has X, which this configuration does not load..." for the
 * sections no entry holds (not used[i]) beyond the device counts. */
static void extra_text(const struct rngsnap *ctx, const rs_fmt_view *v,
                       const uint8_t *used, const int *fdev, int apps_only,
                       char *buf, size_t len, const char **hint,
                       int *streams)
{
    size_t extra = 0, first = 0;
    buf[0] = '\0';
    *hint = NULL; /* the host layer's, for an extra app state */
    if (apps_only) /* a fork leaves the old job's extra sections behind */
        return;
    for (size_t i = 0; i < v->header.section_count; i++) {
        const rs_fmt_section *s = &v->sections[i];
        if (used[i] || (s->pub.kind == RNGSNAP_SECTION_STREAM
                        && extra_device(ctx, fdev, s)))
            continue;
        if (extra++ == 0)
            first = i;
        if (!*hint && s->pub.kind != RNGSNAP_SECTION_STREAM)
            *hint = rs_extra_state_hint(ctx, s->pub.name, s->name_len);
    }
    if (!extra)
        return;
    const rs_fmt_section *s = &v->sections[first];
    char has[600], why[700] = "";
    rs_fmt_section_label(&s->pub, has, sizeof has);
    if (s->pub.kind == RNGSNAP_SECTION_STREAM) {
        why_extra(ctx, s, why, sizeof why);
        *streams |= !why[0] || backend_named(ctx, s->pub.backend,
                                             s->backend_len) == NULL;
        snprintf(buf, len, "checkpoint has %s, which this configuration "
                 "does not load%s", has, why);
    } else {
        /* App states come from the job's calls, not from rng.ini. */
        snprintf(buf, len, "checkpoint has %s, which this context did not "
                 "register (%s before the load)", has,
                 rs_word(ctx, RS_W_REGISTER_APP));
    }
    if (extra > 1)
        snprintf(buf + strlen(buf), len - strlen(buf), " (and %zu more)",
                 extra - 1);
}

/* "this configuration has X, which the checkpoint lacks..." for the live
 * entries and app states without a section, beyond the device counts. */
static void missing_text(const struct rngsnap *ctx, const uint32_t *smap,
                         const uint32_t *amap, const int *fdev,
                         int apps_only, char *buf, size_t len, int *streams)
{
    size_t missing = 0;
    char lack[600] = "", why[400] = "";
    const char *has = "this configuration has";
    buf[0] = '\0';
    for (size_t e = 0; e < ctx->nstreams && !apps_only; e++) {
        const struct rngsnap_stream *s = &ctx->streams[e];
        if (smap[e] != RS_NONE || missing_device(ctx, fdev, s))
            continue;
        if (missing++ == 0) {
            rs_stream_label(s, lack, sizeof lack);
            why_missing(s, why, sizeof why);
            *streams |= !why[0];
        }
    }
    for (size_t a = 0; a < ctx->napps; a++)
        if (amap[a] == RS_NONE && missing++ == 0) {
            /* App states come from the job's calls, not from rng.ini. */
            has = "this context has";
            snprintf(lack, sizeof lack, "app state %s (registered with %s)",
                     ctx->apps[a].name, rs_word(ctx, RS_W_REGISTER_APP));
        }
    if (!missing)
        return;
    snprintf(buf, len, "%s %s, which the checkpoint lacks%s", has, lack,
             why);
    if (missing > 1)
        snprintf(buf + strlen(buf), len - strlen(buf), " (and %zu more)",
                 missing - 1);
}

int rs_mismatch_error(struct rngsnap *ctx, const char *path,
                      const rs_fmt_view *v, const uint32_t *smap,
                      const uint32_t *amap, int apps_only)
{
    size_t n = v->header.section_count;
    uint8_t *used = calloc(n + 1, 1);
    int *fdev = calloc(ctx->nbackends + 1, sizeof *fdev);
    if (!used || !fdev) {
        free(used);
        free(fdev);
        return rs_error(ctx, RNGSNAP_E_NOMEM, "load %s: out of memory",
                        path);
    }
    for (size_t e = 0; e < ctx->nstreams && !apps_only; e++)
        if (smap[e] != RS_NONE)
            used[smap[e]] = 1;
    for (size_t a = 0; a < ctx->napps; a++)
        if (amap[a] != RS_NONE)
            used[amap[a]] = 1;
    if (!apps_only) /* a fork draws new streams: devices may differ */
        file_devices(ctx, v, fdev);

    char gaps[1200], a[1500], b[1200];
    device_gaps(ctx, fdev, gaps, sizeof gaps);
    const char *hint;
    int streams = 0; /* a stream offender that no backend explains */
    extra_text(ctx, v, used, fdev, apps_only, a, sizeof a, &hint, &streams);
    missing_text(ctx, smap, amap, fdev, apps_only, b, sizeof b, &streams);
    free(used);
    free(fdev);
    if (!gaps[0] && !streams) /* app states only: rng.ini plays no part */
        return rs_error(ctx, RNGSNAP_E_MISMATCH, "%s: %s%s%s; nothing "
                        "restored%s%s", path, a, a[0] && b[0] ? "; " : "",
                        b, hint ? "; " : "", hint ? hint : "");
    if (!gaps[0])
        /* Other streams: most often a checkpoint of another rng.ini. */
        return rs_error(ctx, RNGSNAP_E_MISMATCH, "%s: %s%s%s; nothing "
                        "restored (configuration %s). If the checkpoint "
                        "was written under another rng.ini, open this job "
                        "with that one (%s, or RNGSNAP_CONFIG); 'rngsnap "
                        "inspect %s' lists the streams it holds%s%s", path,
                        a, a[0] && b[0] ? "; " : "", b, ctx->ini_path,
                        rs_word(ctx, RS_W_CONFIG), path, hint ? "; " : "",
                        hint ? hint : "");
    return rs_error(ctx, RNGSNAP_E_MISMATCH, "%s: %s%s%s%s%s; nothing "
                    "restored (configuration %s). Resume where the same "
                    "devices are present as where the checkpoint was "
                    "written; 'rngsnap inspect %s' shows what the "
                    "checkpoint holds%s%s", path, gaps, a[0] ? "; " : "", a,
                    b[0] ? "; " : "", b, ctx->ini_path, path,
                    hint ? "; " : "", hint ? hint : "");
}
