/*
 * format.c - checkpoint bytes: encode a file into one buffer, decode and
 * verify a whole buffer into a view, and the public read API
 * (rngsnap_file_*, rngsnap_philox_decode) used by inspect/verify tools.
 *
 * docs/format.md is the specification; this file follows it field by
 * field.  Every length read from a file is bounded by the bytes that
 * remain before it is used, and nothing is trusted before its checksum.
 */
#include "format.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <xxhash.h>

#include <rngsnap/backend.h>

#include "store.h"

/* ---- little-endian helpers --------------------------------------------- */

static inline void put16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
}
static inline void put32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}
static inline void put64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}
static inline uint16_t get16(const uint8_t *p)
{
    return (uint16_t)(p[0] | (p[1] << 8));
}
static inline uint32_t get32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16
           | (uint32_t)p[3] << 24;
}
static inline uint64_t get64(const uint8_t *p)
{
    return (uint64_t)get32(p) | (uint64_t)get32(p + 4) << 32;
}

/* Header field offsets (docs/format.md, "Header"). */
enum {
    H_MAGIC = 0, H_VERSION = 8, H_HEADER_SIZE = 12, H_LIBVER = 16,
    H_RANK = 32, H_WORLD = 36, H_CREATED = 40, H_COUNT = 48,
    H_RESERVED = 52, H_CHECKSUM = 56
};

/* ---- encoding ----------------------------------------------------------- */

void rs_fmt_put_header(uint8_t *p, int32_t rank, int32_t world_size,
                       int64_t created_unix, uint32_t section_count)
{
    memset(p, 0, RS_FMT_HEADER_SIZE);
    memcpy(p + H_MAGIC, RS_FMT_MAGIC, 8);
    put32(p + H_VERSION, RS_FMT_VERSION);
    put32(p + H_HEADER_SIZE, RS_FMT_HEADER_SIZE);
    /* at most 15 bytes so that the field keeps its NUL */
    strncpy((char *)p + H_LIBVER, RNGSNAP_VERSION_STRING, 15);
    put32(p + H_RANK, (uint32_t)rank);
    put32(p + H_WORLD, (uint32_t)world_size);
    put64(p + H_CREATED, (uint64_t)created_unix);
    put32(p + H_COUNT, section_count);
    put64(p + H_CHECKSUM, XXH3_64bits(p, H_CHECKSUM));
}

uint8_t *rs_fmt_put_section(uint8_t *p, rngsnap_section_kind kind,
                            const char *backend, size_t backend_len,
                            int32_t device, const char *name,
                            size_t name_len, uint32_t state_format,
                            uint32_t state_size)
{
    size_t size = rs_fmt_section_size(backend_len, name_len, state_size);
    put32(p, (uint32_t)kind);
    put32(p + 4, (uint32_t)size);
    p += 8;
    put16(p, (uint16_t)backend_len);
    if (backend_len)
        memcpy(p + 2, backend, backend_len);
    p[2 + backend_len] = 0;
    p += 3 + backend_len;
    put32(p, (uint32_t)device);
    p += 4;
    put16(p, (uint16_t)name_len);
    memcpy(p + 2, name, name_len);
    p[2 + name_len] = 0;
    p += 3 + name_len;
    put32(p, state_format);
    put32(p + 4, state_size);
    return p + 8;
}

void rs_fmt_section_seal(uint8_t *p, size_t size)
{
    put64(p + size - 8, XXH3_64bits(p, size - 8));
}

void rs_fmt_put_trailer(uint8_t *buf, size_t size)
{
    uint8_t *t = buf + size - RS_FMT_TRAILER_SIZE;
    memcpy(t, RS_FMT_END_MAGIC, 8);
    put64(t + 8, (uint64_t)size);
    put64(t + 16, XXH3_64bits(buf, size - 8));
}

/* ---- decoding ----------------------------------------------------------- */

static int fail(char *err, size_t errlen, const char *what, const char *fmt,
                ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;

static int fail(char *err, size_t errlen, const char *what, const char *fmt,
                ...)
{
    if (err && errlen) {
        int n = snprintf(err, errlen, "%s: ", what ? what : "checkpoint");
        if (n >= 0 && (size_t)n < errlen) {
            va_list ap;
            va_start(ap, fmt);
            vsnprintf(err + n, errlen - (size_t)n, fmt, ap);
            va_end(ap);
        }
    }
    return RNGSNAP_E_CORRUPT;
}

/* Copy at most len name bytes into out for a message, replacing anything
 * unprintable: names of a section that failed its checksum are shown as a
 * hint only. */
static void sanitize(char *out, size_t outlen, const uint8_t *s, size_t len)
{
    size_t j = 0;
    for (size_t i = 0; i < len && j + 1 < outlen; i++)
        out[j++] = isprint(s[i]) ? (char)s[i] : '?';
    out[j] = 0;
}

void rs_fmt_section_label(const rngsnap_file_section *s, char *out,
                          size_t outlen)
{
    if (s->kind == RNGSNAP_SECTION_STREAM)
        snprintf(out, outlen, "%s:%d/%s", s->backend, s->device, s->name);
    else
        snprintf(out, outlen, "app state %s", s->name);
}

/* Best-effort "cpu:0/dropout" of a section whose bytes are not verified
 * yet ("" when the fields cannot be read): only what lies inside
 * [p, end) is read. */
static void raw_label(const uint8_t *p, const uint8_t *end, char *out,
                      size_t outlen)
{
    char b[64], n[64];
    out[0] = 0;
    if (end - p < 10)
        return;
    uint32_t kind = get32(p);
    size_t bl = get16(p + 8);
    const uint8_t *q = p + 10;
    if ((size_t)(end - q) < bl + 1 + 4 + 2)
        return;
    sanitize(b, sizeof b, q, bl);
    q += bl + 1;
    int32_t dev = (int32_t)get32(q);
    size_t nl = get16(q + 4);
    q += 6;
    if ((size_t)(end - q) < nl)
        return;
    sanitize(n, sizeof n, q, nl);
    if (kind == RNGSNAP_SECTION_STREAM)
        snprintf(out, outlen, "%s:%d/%s", b, (int)dev, n);
    else if (kind == RNGSNAP_SECTION_APP)
        snprintf(out, outlen, "app state %s", n);
}

/* What a message says of a damaged section's label: the section is named
 * by its place, since the damage may have hit the header that names it
 * ("cpu:16/dropout" for the stream saved as cpu:0/dropout). */
static void damaged_hint(const uint8_t *p, const uint8_t *end, char *out,
                         size_t outlen)
{
    char label[160];
    raw_label(p, end, label, sizeof label);
    if (label[0])
        snprintf(out, outlen, " (its label as read from the damaged bytes: "
                 "%s)", label);
    else
        snprintf(out, outlen, " (its label cannot be read from the damaged "
                 "bytes)");
}

/* A name field: u16 len, len bytes without NUL, then a NUL. */
static int get_name(const uint8_t **pp, const uint8_t *end, size_t min,
                    const char **s, uint16_t *len)
{
    const uint8_t *p = *pp;
    if (end - p < 2)
        return 0;
    size_t n = get16(p);
    p += 2;
    if (n < min || n > RS_FMT_NAME_MAX || (size_t)(end - p) < n + 1
        || p[n] != 0 || memchr(p, 0, n) != NULL)
        return 0;
    *s = (const char *)p;
    *len = (uint16_t)n;
    *pp = p + n + 1;
    return 1;
}

static int same_key(const rs_fmt_section *a, const rs_fmt_section *b)
{
    return a->pub.kind == b->pub.kind && a->pub.device == b->pub.device
           && a->name_len == b->name_len && a->backend_len == b->backend_len
           && memcmp(a->pub.name, b->pub.name, a->name_len) == 0
           && (a->backend_len == 0
               || memcmp(a->pub.backend, b->pub.backend, a->backend_len)
                      == 0);
}

/* A section's key (kind, backend, device, name) hashed, and its index:
 * sorting these finds repeated keys in n log n, not n^2 (a 256 MiB file
 * holds millions of sections). */
typedef struct key_ref {
    uint64_t hash;
    uint32_t index;
} key_ref;

static uint64_t key_hash(const rs_fmt_section *s)
{
    uint64_t h = XXH3_64bits_withSeed(
        s->pub.name, s->name_len,
        (uint64_t)s->pub.kind << 32 | (uint32_t)s->pub.device);
    if (s->backend_len)
        h ^= XXH3_64bits(s->pub.backend, s->backend_len)
             * 0x9e3779b97f4a7c15ull;
    return h;
}

static int by_hash_then_index(const void *pa, const void *pb)
{
    const key_ref *a = pa, *b = pb;
    if (a->hash != b->hash)
        return a->hash < b->hash ? -1 : 1;
    return a->index < b->index ? -1 : a->index > b->index;
}

/* The first section (lowest index *i) whose key an earlier one has, and
 * the first such earlier one (*j).  Returns 0 when every key is unique,
 * -1 when out of memory. */
static int find_repeat(const rs_fmt_section *sec, uint32_t n, uint32_t *i,
                       uint32_t *j)
{
    if (n < 2)
        return 0;
    key_ref *r = malloc(n * sizeof *r);
    if (!r)
        return -1;
    for (uint32_t k = 0; k < n; k++) {
        r[k].hash = key_hash(&sec[k]);
        r[k].index = k;
    }
    qsort(r, n, sizeof *r, by_hash_then_index);
    int found = 0;
    for (uint32_t a = 0, b; a < n; a = b) {
        for (b = a + 1; b < n && r[b].hash == r[a].hash; b++)
            ;
        /* [a, b): one hash, indexes ascending.  Equal hashes with
         * different keys are possible: compare the keys themselves. */
        for (uint32_t x = a + 1; x < b; x++) {
            if (found && r[x].index >= *i)
                break;
            for (uint32_t y = a; y < x; y++)
                if (same_key(&sec[r[x].index], &sec[r[y].index])) {
                    *i = r[x].index;
                    *j = r[y].index;
                    found = 1;
                    break;
                }
        }
    }
    free(r);
    return found;
}

/* Parse and verify the section at p, which must end by end. */
static int decode_section(const uint8_t *p, const uint8_t *end, size_t i,
                          const uint8_t *base, const char *what,
                          rs_fmt_section *s, char *err, size_t errlen)
{
    size_t at = (size_t)(p - base);
    char hint[240];
    if (end - p < 8)
        return fail(err, errlen, what,
                    "truncated at byte %zu: section %zu header needs 8 "
                    "bytes, %zu remain before the trailer",
                    at, i, (size_t)(end - p));
    uint32_t kind = get32(p), size = get32(p + 4);
    if (size < RS_FMT_SECTION_MIN || size > (size_t)(end - p)) {
        damaged_hint(p, end, hint, sizeof hint);
        return fail(err, errlen, what,
                    "section %zu at byte %zu: size %u does not fit "
                    "(%zu bytes remain before the trailer)%s",
                    i, at, size, (size_t)(end - p), hint);
    }
    const uint8_t *send = p + size; /* one past the checksum */
    uint64_t sum = get64(send - 8);
    if (XXH3_64bits(p, size - 8) != sum) {
        damaged_hint(p, send - 8, hint, sizeof hint);
        return fail(err, errlen, what,
                    "section %zu at byte %zu: checksum mismatch%s", i, at,
                    hint);
    }
    /* From here the bytes are what the writer wrote; still bound every
     * field by the section's own end, a buggy writer is no excuse. */
    const uint8_t *q = p + 8, *fend = send - 8;
    memset(s, 0, sizeof *s);
    s->offset = (uint32_t)at;
    s->size = size;
    s->pub.checksum = sum;
    if (kind != RNGSNAP_SECTION_STREAM && kind != RNGSNAP_SECTION_APP)
        return fail(err, errlen, what,
                    "section %zu at byte %zu: unknown kind %u", i, at, kind);
    s->pub.kind = (rngsnap_section_kind)kind;
    int stream = kind == RNGSNAP_SECTION_STREAM;
    if (!get_name(&q, fend, stream ? 1 : 0, &s->pub.backend, &s->backend_len)
        || (!stream && s->backend_len != 0))
        return fail(err, errlen, what,
                    "section %zu at byte %zu: bad backend name field", i, at);
    if (fend - q < 4)
        return fail(err, errlen, what,
                    "section %zu at byte %zu: fields overrun the section", i,
                    at);
    s->pub.device = (int32_t)get32(q);
    q += 4;
    if (stream ? s->pub.device < 0 : s->pub.device != -1)
        return fail(err, errlen, what,
                    "section %zu at byte %zu: bad device %d", i, at,
                    s->pub.device);
    if (!get_name(&q, fend, 1, &s->pub.name, &s->name_len))
        return fail(err, errlen, what,
                    "section %zu at byte %zu: bad name field", i, at);
    if (!stream)
        s->pub.backend = NULL;
    /* The label is only formatted on error: this loop is the hot path. */
    char label[600];
    if (fend - q < 8) {
        rs_fmt_section_label(&s->pub, label, sizeof label);
        return fail(err, errlen, what,
                    "section %zu (%s): fields overrun the section", i, label);
    }
    s->pub.state_format = get32(q);
    uint32_t ss = get32(q + 4);
    q += 8;
    uint32_t max = stream ? RS_FMT_STREAM_STATE_MAX : RS_FMT_APP_STATE_MAX;
    if (ss > max || (size_t)(fend - q) != ss) {
        rs_fmt_section_label(&s->pub, label, sizeof label);
        return fail(err, errlen, what,
                    "section %zu (%s): state of %u bytes (limit %u) does "
                    "not fill the section (%zu bytes there)",
                    i, label, ss, max, (size_t)(fend - q));
    }
    s->pub.state_size = ss;
    s->pub.state = q;
    return RNGSNAP_OK;
}

int rs_fmt_decode(const uint8_t *buf, size_t len, const char *what,
                  unsigned flags, rs_fmt_view *v, char *err, size_t errlen)
{
    memset(v, 0, sizeof *v);
    if (len == 0)
        return fail(err, errlen, what, "empty file, not a checkpoint");
    /* Files are refused before reading (store.c); bytes handed in by
     * rngsnap_load_mem meet the same limit here. */
    if (len > RS_FMT_FILE_MAX)
        return fail(err, errlen, what,
                    "%zu bytes, more than the %zu a checkpoint may hold",
                    len, (size_t)RS_FMT_FILE_MAX);
    /* Magic and version come first and never move: a future version
     * is named as such, not as a checksum error. */
    size_t m = len < 8 ? len : 8;
    if (memcmp(buf, RS_FMT_MAGIC, m) != 0)
        return fail(err, errlen, what,
                    "not an rngsnap checkpoint (bad magic)");
    if (len < 12)
        return fail(err, errlen, what,
                    "truncated at byte %zu: the header is %u bytes", len,
                    RS_FMT_HEADER_SIZE);
    uint32_t version = get32(buf + H_VERSION);
    if (version != RS_FMT_VERSION)
        return fail(err, errlen, what,
                    "unknown format version %u (this library reads version "
                    "%u)",
                    version, RS_FMT_VERSION);
    if (len < RS_FMT_HEADER_SIZE)
        return fail(err, errlen, what,
                    "truncated at byte %zu: the header is %u bytes", len,
                    RS_FMT_HEADER_SIZE);
    if (XXH3_64bits(buf, H_CHECKSUM) != get64(buf + H_CHECKSUM))
        return fail(err, errlen, what, "header checksum mismatch");
    uint32_t hsize = get32(buf + H_HEADER_SIZE);
    if (hsize != RS_FMT_HEADER_SIZE)
        return fail(err, errlen, what,
                    "header size %u, version 1 headers are %u bytes", hsize,
                    RS_FMT_HEADER_SIZE);
    if (get32(buf + H_RESERVED) != 0)
        return fail(err, errlen, what, "reserved header field is not zero");
    if (memchr(buf + H_LIBVER, 0, 16) == NULL)
        return fail(err, errlen, what,
                    "library version field is not NUL-terminated");
    int32_t rank = (int32_t)get32(buf + H_RANK);
    int32_t world = (int32_t)get32(buf + H_WORLD);
    if (world < 1 || rank < 0 || rank >= world)
        return fail(err, errlen, what, "bad rank %d of world size %d",
                    (int)rank, (int)world);
    if (len < (size_t)RS_FMT_HEADER_SIZE + RS_FMT_TRAILER_SIZE)
        return fail(err, errlen, what,
                    "truncated at byte %zu: expected a %u-byte trailer "
                    "after the header",
                    len, RS_FMT_TRAILER_SIZE);
    const uint8_t *t = buf + len - RS_FMT_TRAILER_SIZE;
    if (memcmp(t, RS_FMT_END_MAGIC, 8) != 0)
        return fail(err, errlen, what,
                    "truncated or damaged at byte %zu: no trailer at the "
                    "end of the file",
                    len);
    uint64_t fsize = get64(t + 8);
    if (fsize != len)
        return fail(err, errlen, what,
                    "file is %zu bytes but its trailer says %llu", len,
                    (unsigned long long)fsize);

    uint32_t count = get32(buf + H_COUNT);
    size_t body = len - RS_FMT_HEADER_SIZE - RS_FMT_TRAILER_SIZE;
    if (count > body / RS_FMT_SECTION_MIN)
        return fail(err, errlen, what,
                    "%u sections cannot fit in %zu bytes", count, body);

    v->header.format_version = version;
    memcpy(v->header.library_version, buf + H_LIBVER, 16);
    v->header.rank = rank;
    v->header.world_size = world;
    v->header.created_unix = (int64_t)get64(buf + H_CREATED);
    v->header.section_count = count;
    v->header.file_size = fsize;
    v->header.file_checksum = get64(t + 16);

    if (count) {
        v->sections = malloc(count * sizeof *v->sections);
        if (!v->sections) {
            if (err && errlen)
                snprintf(err, errlen, "%s: out of memory for %u sections",
                         what ? what : "checkpoint", count);
            return RNGSNAP_E_NOMEM;
        }
    }
    const uint8_t *p = buf + RS_FMT_HEADER_SIZE;
    int rc = RNGSNAP_OK;
    for (uint32_t i = 0; i < count && rc == RNGSNAP_OK; i++) {
        rc = decode_section(p, t, i, buf, what, &v->sections[i], err,
                            errlen);
        if (rc == RNGSNAP_OK) {
            p += v->sections[i].size;
        } else {
            v->damaged = i + 1;
            raw_label(p, t, v->damaged_label, sizeof v->damaged_label);
        }
    }
    if (rc == RNGSNAP_OK && p != t)
        rc = fail(err, errlen, what,
                  "%zu unaccounted bytes after section %u (byte %zu)",
                  (size_t)(t - p), count, (size_t)(p - buf));
    if (rc == RNGSNAP_OK && XXH3_64bits(buf, len - 8) != v->header.file_checksum)
        rc = fail(err, errlen, what, "file checksum mismatch");
    if (rc == RNGSNAP_OK && (flags & RS_FMT_CHECK_DUPLICATES)) {
        /* The read API only; load finds duplicates while matching
         * against the registry. */
        uint32_t i = 0, j = 0;
        int dup = find_repeat(v->sections, count, &i, &j);
        if (dup < 0) {
            if (err && errlen)
                snprintf(err, errlen, "%s: out of memory for %u sections",
                         what ? what : "checkpoint", count);
            rc = RNGSNAP_E_NOMEM;
        } else if (dup) {
            char label[600];
            rs_fmt_section_label(&v->sections[i].pub, label, sizeof label);
            rc = fail(err, errlen, what, "section %u (%s) repeats section %u",
                      i, label, j);
        }
    }
    if (rc != RNGSNAP_OK)
        rs_fmt_view_free(v);
    return rc;
}

void rs_fmt_view_free(rs_fmt_view *v)
{
    free(v->sections);
    v->sections = NULL;
}

/* ---- public read API ----------------------------------------------------- */

struct rngsnap_file {
    uint8_t *buf;
    size_t len;
    rs_fmt_view view;
};

RNGSNAP_API int rngsnap_file_open(const char *path, rngsnap_file **out,
                                  char *err, size_t errlen)
{
    if (err && errlen)
        err[0] = 0;
    if (!out) {
        if (err && errlen)
            snprintf(err, errlen, "rngsnap_file_open: out is NULL");
        return RNGSNAP_E_INVALID;
    }
    *out = NULL;
    if (!path) {
        if (err && errlen)
            snprintf(err, errlen, "rngsnap_file_open: path is NULL");
        return RNGSNAP_E_INVALID;
    }
    uint8_t *buf;
    size_t len;
    int rc = rs_store_read(path, 0, &buf, &len, err, errlen);
    if (rc != RNGSNAP_OK)
        return rc;
    return rs_fmt_file_adopt(buf, len, path, out, err, errlen);
}

int rs_fmt_file_adopt(uint8_t *buf, size_t len, const char *what,
                      rngsnap_file **out, char *err, size_t errlen)
{
    *out = NULL;
    rngsnap_file *f = calloc(1, sizeof *f);
    if (!f) {
        free(buf);
        if (err && errlen)
            snprintf(err, errlen, "%s: out of memory", what);
        return RNGSNAP_E_NOMEM;
    }
    f->buf = buf;
    f->len = len;
    int rc = rs_fmt_decode(buf, len, what, RS_FMT_CHECK_DUPLICATES, &f->view,
                           err, errlen);
    if (rc != RNGSNAP_OK) {
        free(buf);
        free(f);
        return rc;
    }
    *out = f;
    return RNGSNAP_OK;
}

RNGSNAP_API void rngsnap_file_close(rngsnap_file *f)
{
    if (!f)
        return;
    rs_fmt_view_free(&f->view);
    free(f->buf);
    free(f);
}

RNGSNAP_API const rngsnap_file_header *
rngsnap_file_header_get(const rngsnap_file *f)
{
    return f ? &f->view.header : NULL;
}

RNGSNAP_API size_t rngsnap_file_section_count(const rngsnap_file *f)
{
    return f ? f->view.header.section_count : 0;
}

RNGSNAP_API const rngsnap_file_section *
rngsnap_file_section_at(const rngsnap_file *f, size_t i)
{
    if (!f || i >= f->view.header.section_count)
        return NULL;
    return &f->view.sections[i].pub;
}

RNGSNAP_API int rngsnap_philox_decode(const rngsnap_file_section *sec,
                                      rngsnap_philox *out)
{
    if (!sec || !out || sec->state_format != RNGSNAP_STATE_PHILOX4X32_10
        || sec->state_size != RNGSNAP_STATE_PHILOX_SIZE || !sec->state)
        return RNGSNAP_E_INVALID;
    const uint8_t *p = sec->state;
    out->seed = get64(p);
    out->subsequence = get64(p + 8);
    out->offset = get64(p + 16);
    return RNGSNAP_OK;
}
