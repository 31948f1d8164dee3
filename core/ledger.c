/*
 * ledger.c - the divergence ledger: rngsnap_ledger_open/note/step/close.
 *
 * Each step appends one record (ledger_format.h, docs/format.md): every
 * registry entry's exact Philox position (offset in words, plus a digest
 * of its seed and subsequence), a digest of every app state (the Python
 * package's tracked and registered generators are app states too), and
 * the values noted since the last step.  `rngsnap ledger diff` compares
 * two runs' ledgers step by step and names the first step, rank and
 * entry where they part.
 *
 * One write(2) per record and no fsync per step: a killed process loses
 * nothing already written (the page cache keeps it), and a step stays in
 * the microseconds.  close fsyncs.  Opening an existing ledger continues
 * it (a resumed job): its torn last record, if any, is cut off, and an
 * OPEN record starts a new segment; readers let a step recorded again in
 * a later segment replace the earlier record.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <xxhash.h>

#include "context.h"
#include "internal.h"
#include "ledger_format.h"
#include "lock.h"
#include "words.h"

typedef struct rs_note {
    uint8_t type;
    char *name;
    uint8_t *value;
    uint32_t len;
} rs_note;

struct rs_ledger {
    int fd;
    char *path;
    uint32_t segment;
    char **apps;          /* app names of the last LAYOUT written      */
    size_t napps;
    int layout_unwritten; /* a LAYOUT's write failed: write one again  */
    uint8_t *kinds;       /* per stream: RS_LG_PHILOX or RS_LG_OPAQUE  */
    uint8_t *buf;         /* the record being built                    */
    size_t cap;
    uint8_t *scratch;     /* an app's or opaque stream's state bytes   */
    size_t scap;
    rs_note *notes;       /* noted since the last step                 */
    size_t nnotes, notecap;
};

static int grow(uint8_t **p, size_t *cap, size_t need)
{
    if (need <= *cap)
        return 0;
    size_t c = *cap ? *cap : 256;
    while (c < need)
        c *= 2;
    uint8_t *n = realloc(*p, c);
    if (!n)
        return -1;
    *p = n;
    *cap = c;
    return 0;
}

static void free_apps(struct rs_ledger *l)
{
    for (size_t i = 0; i < l->napps; i++)
        free(l->apps[i]);
    free(l->apps);
    l->apps = NULL;
    l->napps = 0;
}

static void clear_notes(struct rs_ledger *l)
{
    for (size_t i = 0; i < l->nnotes; i++) {
        free(l->notes[i].name);
        free(l->notes[i].value);
    }
    l->nnotes = 0;
}

static void ledger_free(struct rs_ledger *l)
{
    if (!l)
        return;
    if (l->fd >= 0)
        close(l->fd);
    clear_notes(l);
    free(l->notes);
    free_apps(l);
    free(l->kinds);
    free(l->buf);
    free(l->scratch);
    free(l->path);
    free(l);
}

/* Seal the record at b (len bytes, checksum included) in place. */
static void seal(uint8_t *b, size_t len, uint8_t kind)
{
    rs_lg_put32(b, (uint32_t)len);
    b[4] = kind;
    rs_lg_put64(b + len - 8, XXH3_64bits(b, len - 8));
}

static int write_all(struct rngsnap *ctx, struct rs_ledger *l,
                     const uint8_t *p, size_t n, const char *call)
{
    while (n) {
        ssize_t w = write(l->fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return rs_error(ctx, RNGSNAP_E_IO, "%s: write to ledger %s "
                            "failed: %s", call, l->path,
                            w < 0 ? strerror(errno) : "nothing written");
        p += w;
        n -= (size_t)w;
    }
    return RNGSNAP_OK;
}

/* Append an OPEN record's bytes at *off in l->buf. */
static int put_open(struct rngsnap *ctx, struct rs_ledger *l, size_t *off,
                    unsigned flags)
{
    size_t len = RS_LG_REC_HEAD + 4 + 2 + 4 + 4 + 8 + 8;
    if (grow(&l->buf, &l->cap, *off + len))
        return -1;
    uint8_t *b = l->buf + *off;
    uint8_t *p = b + RS_LG_REC_HEAD;
    rs_lg_put32(p, l->segment);
    rs_lg_put16(p + 4, (uint16_t)flags);
    rs_lg_put32(p + 6, (uint32_t)ctx->rank);
    rs_lg_put32(p + 10, (uint32_t)ctx->world_size);
    rs_lg_put64(p + 14, (uint64_t)(int64_t)time(NULL));
    seal(b, len, RS_LG_OPEN);
    *off += len;
    return 0;
}

/* Append a LAYOUT record (every stream, ctx's apps now) at *off, and
 * remember the apps it names. */
static int put_layout(struct rngsnap *ctx, struct rs_ledger *l, size_t *off)
{
    char label[600];
    size_t len = RS_LG_REC_HEAD + 8 + 8;
    for (size_t i = 0; i < ctx->nstreams; i++)
        len += 3 + strlen(rs_stream_label(&ctx->streams[i], label,
                                          sizeof label));
    for (size_t i = 0; i < ctx->napps; i++)
        len += 2 + strlen(ctx->apps[i].name);
    free_apps(l);
    if (grow(&l->buf, &l->cap, *off + len))
        return -1;
    if (ctx->napps && !(l->apps = calloc(ctx->napps, sizeof *l->apps)))
        return -1;
    uint8_t *b = l->buf + *off;
    uint8_t *p = b + RS_LG_REC_HEAD;
    rs_lg_put32(p, (uint32_t)ctx->nstreams);
    rs_lg_put32(p + 4, (uint32_t)ctx->napps);
    p += 8;
    for (size_t i = 0; i < ctx->nstreams; i++) {
        size_t n = strlen(rs_stream_label(&ctx->streams[i], label,
                                          sizeof label));
        *p++ = l->kinds[i];
        rs_lg_put16(p, (uint16_t)n);
        memcpy(p + 2, label, n);
        p += 2 + n;
    }
    for (size_t i = 0; i < ctx->napps; i++) {
        size_t n = strlen(ctx->apps[i].name);
        rs_lg_put16(p, (uint16_t)n);
        memcpy(p + 2, ctx->apps[i].name, n);
        p += 2 + n;
        if (!(l->apps[i] = rs_strdup(ctx->apps[i].name)))
            return -1;
        l->napps = i + 1;
    }
    seal(b, len, RS_LG_LAYOUT);
    *off += len;
    return 0;
}

static int layout_changed(const struct rngsnap *ctx, const struct rs_ledger *l)
{
    if (l->layout_unwritten || ctx->napps != l->napps)
        return 1;
    for (size_t i = 0; i < l->napps; i++)
        if (strcmp(ctx->apps[i].name, l->apps[i]) != 0)
            return 1;
    return 0;
}

/* The end of the last whole record of an existing ledger (0 when the
 * file is new or empty), after checking that it is a ledger of this
 * rank; its last segment number goes to *segment. */
static int scan_existing(struct rngsnap *ctx, struct rs_ledger *l,
                         off_t *end, off_t *size_out, uint32_t *segment)
{
    const char *call = rs_word(ctx, RS_W_LEDGER_OPEN);
    struct stat st;
    if (fstat(l->fd, &st) != 0)
        return rs_error(ctx, RNGSNAP_E_IO, "%s %s: %s", call, l->path,
                        strerror(errno));
    *end = 0;
    *segment = 0;
    *size_out = st.st_size;
    if (st.st_size == 0)
        return RNGSNAP_OK;
    size_t size = (size_t)st.st_size;
    uint8_t *buf = malloc(size);
    if (!buf)
        return rs_error(ctx, RNGSNAP_E_NOMEM, "%s %s: out of memory for "
                        "%zu bytes", call, l->path, size);
    size_t got = 0;
    while (got < size) {
        ssize_t r = pread(l->fd, buf + got, size - got, (off_t)got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        got += (size_t)r;
    }
    int rc = RNGSNAP_OK;
    if (got < RS_LG_PREFIX_SIZE
        || memcmp(buf, RS_LG_MAGIC, 8) != 0) {
        rc = rs_error(ctx, RNGSNAP_E_CORRUPT, "%s %s: the file exists and "
                      "is not a ledger (no %s prefix): pass another path",
                      call, l->path, RS_LG_MAGIC);
        goto out;
    }
    if (rs_lg_get32(buf + 8) != RS_LG_VERSION) {
        rc = rs_error(ctx, RNGSNAP_E_CORRUPT, "%s %s: ledger format version "
                      "%u, this library writes %u: pass another path",
                      call, l->path, rs_lg_get32(buf + 8), RS_LG_VERSION);
        goto out;
    }
    size_t off = RS_LG_PREFIX_SIZE;
    while (off + RS_LG_REC_MIN <= got) {
        size_t len = rs_lg_get32(buf + off);
        if (len < RS_LG_REC_MIN || len > got - off)
            break; /* torn last record */
        if (rs_lg_get64(buf + off + len - 8)
            != XXH3_64bits(buf + off, len - 8)) {
            if (off + len == got)
                break; /* torn last record */
            rc = rs_error(ctx, RNGSNAP_E_CORRUPT, "%s %s: the record at byte "
                          "%zu is damaged (checksum mismatch) and more follow:"
                          " the ledger cannot be continued; pass another "
                          "path", call, l->path, off);
            goto out;
        }
        if (buf[off + 4] == RS_LG_OPEN && len >= RS_LG_REC_HEAD + 14 + 8) {
            const uint8_t *p = buf + off + RS_LG_REC_HEAD;
            int32_t rank = (int32_t)rs_lg_get32(p + 6);
            int32_t world = (int32_t)rs_lg_get32(p + 10);
            *segment = rs_lg_get32(p);
            if (rank != ctx->rank || world != ctx->world_size) {
                rc = rs_error(ctx, RNGSNAP_E_MISMATCH, "%s %s: the ledger "
                              "was written by rank %d of %d, this context is "
                              "rank %d of %d: give each rank its own ledger "
                              "(a path ending in / makes one per rank)",
                              call, l->path, rank, world, ctx->rank,
                              ctx->world_size);
                goto out;
            }
        }
        off += len;
    }
    *end = (off_t)off;
out:
    free(buf);
    return rc;
}

/* mkdir -p: the job's folder may not exist yet (ranks race: EEXIST is
 * fine).  0, or -1 with errno. */
static int make_dirs(const char *path)
{
    char *p = rs_strdup(path);
    if (!p) {
        errno = ENOMEM;
        return -1;
    }
    int rc = 0;
    for (char *s = p + 1; rc == 0; s++) {
        if (*s != '/' && *s != '\0')
            continue;
        char c = *s;
        *s = '\0';
        if (mkdir(p, 0777) != 0 && errno != EEXIST)
            rc = -1;
        *s = c;
        if (c == '\0')
            break;
    }
    free(p);
    return rc;
}

/* path, or path/rank-NNNNN.ledger when path names a folder (or ends in
 * '/', and is then made, with its parents): one ledger per rank from one
 * argument. */
static char *ledger_path(struct rngsnap *ctx, const char *path)
{
    size_t n = strlen(path);
    struct stat st;
    int dir = (n && path[n - 1] == '/')
              || (stat(path, &st) == 0 && S_ISDIR(st.st_mode));
    if (!dir)
        return rs_strdup(path);
    if (make_dirs(path) != 0) {
        rs_error(ctx, RNGSNAP_E_IO, "%s %s: cannot make the folder: %s",
                 rs_word(ctx, RS_W_LEDGER_OPEN), path, strerror(errno));
        return NULL;
    }
    char *out = malloc(n + 32);
    if (out)
        snprintf(out, n + 32, "%s%srank-%05d.ledger", path,
                 path[n - 1] == '/' ? "" : "/", ctx->rank);
    else
        rs_error(ctx, RNGSNAP_E_NOMEM, "%s: out of memory",
                 rs_word(ctx, RS_W_LEDGER_OPEN));
    return out;
}

static int open_locked(struct rngsnap *ctx, const char *path)
{
    const char *call = rs_word(ctx, RS_W_LEDGER_OPEN);
    if (ctx->ledger)
        return rs_error(ctx, RNGSNAP_E_INVALID, "%s %s: ledger %s is already "
                        "open on this context: close it first", call, path,
                        ctx->ledger->path);
    struct rs_ledger *l = calloc(1, sizeof *l);
    if (!l)
        return rs_error(ctx, RNGSNAP_E_NOMEM, "%s: out of memory", call);
    l->fd = -1;
    int rc = RNGSNAP_E_NOMEM;
    if (!(l->path = ledger_path(ctx, path))) {
        rc = RNGSNAP_E_IO;
        goto fail;
    }
    if (!(l->kinds = malloc(ctx->nstreams + 1)))
        goto nomem;
    for (size_t i = 0; i < ctx->nstreams; i++)
        l->kinds[i] = RNGSNAP_BACKEND_HAS(ctx->streams[i].backend->vt,
                                          reserve)
                          ? RS_LG_PHILOX : RS_LG_OPAQUE;
    l->fd = open(l->path, O_RDWR | O_CREAT | O_CLOEXEC, 0666);
    if (l->fd < 0) {
        rc = rs_error(ctx, RNGSNAP_E_IO, "%s %s: %s", call, l->path,
                      strerror(errno));
        goto fail;
    }
    off_t end = 0, size = 0;
    uint32_t last = 0;
    if ((rc = scan_existing(ctx, l, &end, &size, &last)))
        goto fail;
    if ((end != size && ftruncate(l->fd, end) != 0)
        || lseek(l->fd, end, SEEK_SET) < 0) {
        rc = rs_error(ctx, RNGSNAP_E_IO, "%s %s: cannot cut the torn last "
                      "record: %s", call, l->path, strerror(errno));
        goto fail;
    }
    size_t off = 0;
    unsigned flags = (ctx->flags & RNGSNAP_RESUME) ? RS_LG_F_RESUME : 0;
    if (end == 0) {
        if (grow(&l->buf, &l->cap, RS_LG_PREFIX_SIZE))
            goto nomem;
        memcpy(l->buf, RS_LG_MAGIC, 8);
        rs_lg_put32(l->buf + 8, RS_LG_VERSION);
        rs_lg_put32(l->buf + 12, 0);
        off = RS_LG_PREFIX_SIZE;
    } else {
        l->segment = last + 1;
        flags |= RS_LG_F_CONTINUED;
    }
    if (put_open(ctx, l, &off, flags) || put_layout(ctx, l, &off))
        goto nomem;
    if ((rc = write_all(ctx, l, l->buf, off, call)))
        goto fail;
    /* The start of the ledger is durable before any step depends on it. */
    if (fsync(l->fd) != 0) {
        rc = rs_error(ctx, RNGSNAP_E_IO, "%s %s: fsync: %s", call, l->path,
                      strerror(errno));
        goto fail;
    }
    ctx->ledger = l;
    return RNGSNAP_OK;
nomem:
    rc = rs_error(ctx, RNGSNAP_E_NOMEM, "%s %s: out of memory", call, path);
fail:
    ledger_free(l);
    return rc;
}

/* Calls from a save/load callback would deadlock on ctx->lock. */
static int in_callback(struct rngsnap *ctx, rs_word_id call)
{
    return rs_ctx_held_here(ctx)
               ? rs_error(ctx, RNGSNAP_E_INVALID, "%s: called from a save "
                          "or load callback of the same context (it is "
                          "locked while they run)", rs_word(ctx, call))
               : RNGSNAP_OK;
}

RNGSNAP_API int rngsnap_ledger_open(rngsnap *ctx, const char *path,
                                    unsigned flags)
{
    if (!ctx)
        return rs_error(NULL, RNGSNAP_E_INVALID,
                        "rngsnap_ledger_open: ctx is NULL");
    const char *call = rs_word(ctx, RS_W_LEDGER_OPEN);
    if (!path || !*path)
        return rs_error(ctx, RNGSNAP_E_INVALID, "%s: path is %s", call,
                        path ? "empty" : "NULL");
    if (flags)
        return rs_error(ctx, RNGSNAP_E_INVALID, "%s %s: flags 0x%x (it takes "
                        "none: pass 0)", call, path, flags);
    int rc = in_callback(ctx, RS_W_LEDGER_OPEN);
    if (rc)
        return rc;
    rs_ctx_lock(ctx);
    rc = open_locked(ctx, path);
    rs_ctx_unlock(ctx);
    return rc;
}

static int no_ledger(struct rngsnap *ctx, rs_word_id call)
{
    return rs_error(ctx, RNGSNAP_E_INVALID, "%s: no ledger is open on this "
                    "context: call %s first", rs_word(ctx, call),
                    rs_word(ctx, RS_W_LEDGER_OPEN));
}

static int note_locked(struct rngsnap *ctx, const char *name, int type,
                       const void *value, size_t size)
{
    struct rs_ledger *l = ctx->ledger;
    const char *call = rs_word(ctx, RS_W_LEDGER_NOTE);
    if (!l)
        return no_ledger(ctx, RS_W_LEDGER_NOTE);
    size_t nl = strlen(name);
    if (nl == 0 || nl > RS_LG_NOTE_NAME_MAX)
        return rs_error(ctx, RNGSNAP_E_INVALID, "%s: a note's name has 1 "
                        "to %d bytes, not %zu", call, RS_LG_NOTE_NAME_MAX,
                        nl);
    if (size > RS_LG_NOTE_VALUE_MAX)
        return rs_error(ctx, RNGSNAP_E_INVALID, "%s %s: value of %zu bytes, "
                        "more than the %u a note holds (note a digest "
                        "instead)", call, name, size, RS_LG_NOTE_VALUE_MAX);
    rs_note *n = NULL;
    for (size_t i = 0; i < l->nnotes; i++)
        if (strcmp(l->notes[i].name, name) == 0)
            n = &l->notes[i]; /* noted again: the last value counts */
    if (!n) {
        if (l->nnotes == l->notecap) {
            size_t c = l->notecap ? 2 * l->notecap : 8;
            rs_note *g = realloc(l->notes, c * sizeof *g);
            if (!g)
                return rs_error(ctx, RNGSNAP_E_NOMEM, "%s: out of memory",
                                call);
            l->notes = g;
            l->notecap = c;
        }
        n = &l->notes[l->nnotes];
        memset(n, 0, sizeof *n);
        if (!(n->name = rs_strdup(name)))
            return rs_error(ctx, RNGSNAP_E_NOMEM, "%s: out of memory", call);
        l->nnotes++;
    }
    uint8_t *v = malloc(size ? size : 1);
    if (!v)
        return rs_error(ctx, RNGSNAP_E_NOMEM, "%s: out of memory", call);
    if (size)
        memcpy(v, value, size);
    free(n->value);
    n->value = v;
    n->len = (uint32_t)size;
    n->type = (uint8_t)type;
    return RNGSNAP_OK;
}

int rs_ledger_note_typed(struct rngsnap *ctx, const char *name, int type,
                         const void *value, size_t size)
{
    if (!ctx)
        return rs_error(NULL, RNGSNAP_E_INVALID,
                        "rngsnap_ledger_note: ctx is NULL");
    if (!name || (!value && size))
        return rs_error(ctx, RNGSNAP_E_INVALID, "%s: %s is NULL",
                        rs_word(ctx, RS_W_LEDGER_NOTE),
                        name ? "value" : "name");
    int rc = in_callback(ctx, RS_W_LEDGER_NOTE);
    if (rc)
        return rc;
    rs_ctx_lock(ctx);
    rc = note_locked(ctx, name, type, value, size);
    rs_ctx_unlock(ctx);
    return rc;
}

RNGSNAP_API int rngsnap_ledger_note(rngsnap *ctx, const char *name,
                                    const void *value, size_t size)
{
    return rs_ledger_note_typed(ctx, name, RS_LG_NOTE_BYTES, value, size);
}

/* One stream's two words: its Philox offset and key digest, or 0 and the
 * digest of its opaque state. */
static int stream_words(struct rngsnap *ctx, struct rs_ledger *l, size_t i,
                        uint8_t *p, uint64_t step)
{
    struct rngsnap_stream *s = &ctx->streams[i];
    const rngsnap_backend *vt = s->backend->vt;
    unsigned long mark = rs_error_mark();
    int rc;
    if (l->kinds[i] == RS_LG_PHILOX) {
        rngsnap_philox at;
        rs_stream_lock(s);
        rc = vt->reserve(s->handle, 0, &at);
        rs_stream_unlock(s);
        if (!rc) {
            uint8_t key[16];
            rs_lg_put64(key, at.seed);
            rs_lg_put64(key + 8, at.subsequence);
            rs_lg_put64(p, at.offset);
            rs_lg_put64(p + 8, XXH3_64bits(key, sizeof key));
            return RNGSNAP_OK;
        }
    } else {
        if (grow(&l->scratch, &l->scap, vt->state_size))
            return rs_error(ctx, RNGSNAP_E_NOMEM, "%s %llu: out of memory",
                            rs_word(ctx, RS_W_LEDGER_STEP),
                            (unsigned long long)step);
        rs_stream_lock(s);
        rc = vt->get_state(s->handle, l->scratch, vt->state_size);
        rs_stream_unlock(s);
        if (!rc) {
            rs_lg_put64(p, 0);
            rs_lg_put64(p + 8, XXH3_64bits(l->scratch, vt->state_size));
            return RNGSNAP_OK;
        }
    }
    return rs_plugin_rc(ctx, s->backend, rc,
                        l->kinds[i] == RS_LG_PHILOX ? "reserve(0)"
                                                    : "get_state",
                        mark);
}

static int step_locked(struct rngsnap *ctx, uint64_t step)
{
    struct rs_ledger *l = ctx->ledger;
    const char *call = rs_word(ctx, RS_W_LEDGER_STEP);
    if (!l)
        return no_ledger(ctx, RS_W_LEDGER_STEP);
    int rc;
    if (layout_changed(ctx, l)) {
        /* Its own write, before the step's: the step may still fail (an
         * app state's callback), and a LAYOUT with no step after it is
         * harmless. */
        size_t n = 0;
        l->layout_unwritten = 1;
        if (put_layout(ctx, l, &n))
            goto nomem;
        if ((rc = write_all(ctx, l, l->buf, n, call)))
            return rc;
        l->layout_unwritten = 0;
    }
    size_t off = 0;
    size_t len = RS_LG_REC_HEAD + 8 + 16 * ctx->nstreams + 8 * ctx->napps
                 + 2 + 8;
    for (size_t i = 0; i < l->nnotes; i++)
        len += 6 + strlen(l->notes[i].name) + l->notes[i].len;
    if (l->nnotes > 0xffff)
        return rs_error(ctx, RNGSNAP_E_INVALID, "%s %llu: %zu notes, more "
                        "than the 65535 a step holds", call,
                        (unsigned long long)step, l->nnotes);
    if (grow(&l->buf, &l->cap, off + len))
        goto nomem;
    uint8_t *b = l->buf + off;
    uint8_t *p = b + RS_LG_REC_HEAD;
    rs_lg_put64(p, step);
    p += 8;
    for (size_t i = 0; i < ctx->nstreams; i++, p += 16)
        if ((rc = stream_words(ctx, l, i, p, step)))
            return rc;
    for (size_t i = 0; i < ctx->napps; i++, p += 8) {
        const rs_app_state *a = &ctx->apps[i];
        size_t n = a->ops.size(a->user);
        if (grow(&l->scratch, &l->scap, n ? n : 1))
            goto nomem;
        int arc = a->ops.save(a->user, l->scratch, n);
        if (arc != 0)
            return rs_error(ctx, RNGSNAP_E_BACKEND, "%s %llu: app state %s: "
                            "save callback returned %d", call,
                            (unsigned long long)step, a->name, arc);
        b = l->buf + off; /* unchanged: only scratch grew */
        rs_lg_put64(p, XXH3_64bits(l->scratch, n));
    }
    rs_lg_put16(p, (uint16_t)l->nnotes);
    p += 2;
    for (size_t i = 0; i < l->nnotes; i++) {
        const rs_note *n = &l->notes[i];
        size_t nl = strlen(n->name);
        p[0] = n->type;
        p[1] = (uint8_t)nl;
        rs_lg_put32(p + 2, n->len);
        memcpy(p + 6, n->name, nl);
        if (n->len)
            memcpy(p + 6 + nl, n->value, n->len);
        p += 6 + nl + n->len;
    }
    seal(b, len, RS_LG_STEP);
    if ((rc = write_all(ctx, l, l->buf, off + len, call)))
        return rc;
    clear_notes(l);
    return RNGSNAP_OK;
nomem:
    return rs_error(ctx, RNGSNAP_E_NOMEM, "%s %llu: out of memory", call,
                    (unsigned long long)step);
}

RNGSNAP_API int rngsnap_ledger_step(rngsnap *ctx, uint64_t step)
{
    if (!ctx)
        return rs_error(NULL, RNGSNAP_E_INVALID,
                        "rngsnap_ledger_step: ctx is NULL");
    int rc = in_callback(ctx, RS_W_LEDGER_STEP);
    if (rc)
        return rc;
    rs_ctx_lock(ctx);
    rc = step_locked(ctx, step);
    rs_ctx_unlock(ctx);
    return rc;
}

/* Close and free ctx's ledger; RNGSNAP_E_IO when its last records could
 * not be made durable. */
int rs_ledger_close(struct rngsnap *ctx)
{
    struct rs_ledger *l = ctx->ledger;
    if (!l)
        return RNGSNAP_OK;
    ctx->ledger = NULL;
    int rc = RNGSNAP_OK;
    int bad = fsync(l->fd) != 0 ? errno : 0;
    if (close(l->fd) != 0 && !bad)
        bad = errno;
    l->fd = -1;
    if (bad)
        rc = rs_error(ctx, RNGSNAP_E_IO, "%s: ledger %s: %s",
                      rs_word(ctx, RS_W_LEDGER_CLOSE), l->path,
                      strerror(bad));
    ledger_free(l);
    return rc;
}

RNGSNAP_API int rngsnap_ledger_close(rngsnap *ctx)
{
    if (!ctx)
        return rs_error(NULL, RNGSNAP_E_INVALID,
                        "rngsnap_ledger_close: ctx is NULL");
    int rc = in_callback(ctx, RS_W_LEDGER_CLOSE);
    if (rc)
        return rc;
    rs_ctx_lock(ctx);
    if (!ctx->ledger)
        rc = no_ledger(ctx, RS_W_LEDGER_CLOSE);
    else
        rc = rs_ledger_close(ctx);
    rs_ctx_unlock(ctx);
    return rc;
}
