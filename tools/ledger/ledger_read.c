/*
 * ledger_read.c - read a divergence ledger, or a folder of them (one per
 * rank), bounding every length by the bytes the file holds.  A torn last
 * record (a kill in mid-write) is dropped and reported; a damaged record
 * with others after it is an error.
 */
#include "ledger_read.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <xxhash.h>

#include "ledger_format.h"

static int read_whole(const char *path, uint8_t **out, size_t *size,
                      char *err, size_t errlen)
{
    FILE *fp = fopen(path, "rb");
    if (!fp) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return -1;
    }
    size_t cap = 1 << 16, n = 0;
    uint8_t *buf = malloc(cap);
    for (;;) {
        if (!buf) {
            snprintf(err, errlen, "%s: out of memory", path);
            fclose(fp);
            return -1;
        }
        n += fread(buf + n, 1, cap - n, fp);
        if (n < cap)
            break;
        uint8_t *g = realloc(buf, cap * 2);
        if (!g)
            free(buf);
        buf = g;
        cap *= 2;
    }
    int bad = ferror(fp);
    fclose(fp);
    if (bad) {
        snprintf(err, errlen, "%s: read error", path);
        free(buf);
        return -1;
    }
    *out = buf;
    *size = n;
    return 0;
}

void lg_free(lg_file *f)
{
    if (!f)
        return;
    for (size_t i = 0; i < f->nlayouts; i++) {
        lg_layout *l = f->layouts[i];
        for (uint32_t j = 0; j < l->nstreams + l->napps; j++)
            free(l->names[j]);
        free(l->names);
        free(l->kinds);
        free(l);
    }
    free(f->layouts);
    for (size_t i = 0; i < f->nrecs; i++) {
        for (size_t j = 0; j < f->recs[i].nnotes; j++)
            free(f->recs[i].notes[j].name);
        free(f->recs[i].notes);
    }
    free(f->recs);
    free(f->segs);
    free(f->bytes);
    free(f->path);
    free(f);
}

static char *dup_n(const uint8_t *p, size_t n)
{
    char *s = malloc(n + 1);
    if (s) {
        memcpy(s, p, n);
        s[n] = 0;
    }
    return s;
}

#define NEED(n) do { if ((size_t)(end - p) < (size_t)(n)) return -1; } while (0)

static int parse_layout(lg_file *f, const uint8_t *p, const uint8_t *end)
{
    NEED(8);
    lg_layout *l = calloc(1, sizeof *l);
    lg_layout **g = realloc(f->layouts, (f->nlayouts + 1) * sizeof *g);
    if (!l || !g) {
        free(l);
        if (g)
            f->layouts = g;
        return -2;
    }
    f->layouts = g;
    f->layouts[f->nlayouts++] = l;
    l->nstreams = rs_lg_get32(p);
    l->napps = rs_lg_get32(p + 4);
    p += 8;
    /* Each entry takes at least 2 bytes: bounds the counts. */
    if ((uint64_t)l->nstreams + l->napps > (size_t)(end - p) / 2) {
        l->nstreams = l->napps = 0;
        return -1;
    }
    uint32_t total = l->nstreams + l->napps;
    l->names = calloc(total + 1, sizeof *l->names);
    l->kinds = calloc(l->nstreams + 1, 1);
    if (!l->names || !l->kinds) {
        l->nstreams = l->napps = 0;
        return -2;
    }
    for (uint32_t i = 0; i < total; i++) {
        if (i < l->nstreams) {
            NEED(1);
            l->kinds[i] = *p++;
        }
        NEED(2);
        size_t n = rs_lg_get16(p);
        p += 2;
        NEED(n);
        if (!(l->names[i] = dup_n(p, n)))
            return -2;
        p += n;
    }
    return p == end ? 0 : -1;
}

static int parse_step(lg_file *f, const uint8_t *p, const uint8_t *end,
                      size_t offset)
{
    if (!f->nlayouts || !f->nsegs)
        return -1;
    const lg_layout *l = f->layouts[f->nlayouts - 1];
    NEED(8);
    lg_record r = {0};
    r.step = rs_lg_get64(p);
    r.segment = f->segs[f->nsegs - 1].number;
    r.offset = offset;
    r.layout = l;
    p += 8;
    size_t words = 16 * (size_t)l->nstreams + 8 * (size_t)l->napps;
    NEED(words);
    r.words = p;
    p += words;
    NEED(2);
    r.nnotes = rs_lg_get16(p);
    p += 2;
    if (r.nnotes && !(r.notes = calloc(r.nnotes, sizeof *r.notes)))
        return -2;
    lg_record *g = realloc(f->recs, (f->nrecs + 1) * sizeof *g);
    if (!g) {
        free(r.notes);
        return -2;
    }
    f->recs = g;
    lg_record *rec = &f->recs[f->nrecs++];
    *rec = r;
    for (size_t i = 0; i < rec->nnotes; i++) {
        NEED(6);
        lg_note *n = &rec->notes[i];
        n->type = p[0];
        size_t nl = p[1];
        n->len = rs_lg_get32(p + 2);
        p += 6;
        NEED(nl);
        if (!(n->name = dup_n(p, nl)))
            return -2;
        p += nl;
        NEED(n->len);
        n->value = p;
        p += n->len;
    }
    return p == end ? 0 : -1;
}

static int parse_open(lg_file *f, const uint8_t *p, const uint8_t *end,
                      size_t offset)
{
    NEED(22);
    lg_segment *g = realloc(f->segs, (f->nsegs + 1) * sizeof *g);
    if (!g)
        return -2;
    f->segs = g;
    lg_segment *s = &f->segs[f->nsegs++];
    s->number = rs_lg_get32(p);
    s->flags = rs_lg_get16(p + 4);
    int32_t rank = (int32_t)rs_lg_get32(p + 6);
    int32_t world = (int32_t)rs_lg_get32(p + 10);
    s->time = (int64_t)rs_lg_get64(p + 14);
    s->offset = offset;
    if (f->nsegs == 1) {
        f->rank = rank;
        f->world_size = world;
    } else if (rank != f->rank || world != f->world_size) {
        return -3;
    }
    return 0;
}

lg_file *lg_read(const char *path, char *err, size_t errlen)
{
    lg_file *f = calloc(1, sizeof *f);
    if (!f || !(f->path = dup_n((const uint8_t *)path, strlen(path)))) {
        snprintf(err, errlen, "%s: out of memory", path);
        free(f);
        return NULL;
    }
    if (read_whole(path, &f->bytes, &f->size, err, errlen))
        goto fail;
    const uint8_t *b = f->bytes;
    if (f->size < RS_LG_PREFIX_SIZE || memcmp(b, RS_LG_MAGIC, 8) != 0) {
        snprintf(err, errlen, "%s: not a ledger (it does not begin with "
                 "%s)", path, RS_LG_MAGIC);
        goto fail;
    }
    if (rs_lg_get32(b + 8) != RS_LG_VERSION) {
        snprintf(err, errlen, "%s: ledger format version %u, this program "
                 "reads %u", path, rs_lg_get32(b + 8), RS_LG_VERSION);
        goto fail;
    }
    size_t off = RS_LG_PREFIX_SIZE;
    while (off < f->size) {
        size_t left = f->size - off;
        size_t len = left >= 4 ? rs_lg_get32(b + off) : 0;
        int whole = left >= RS_LG_REC_MIN && len >= RS_LG_REC_MIN
                    && len <= left && len <= RS_LG_REC_MAX;
        if (whole && rs_lg_get64(b + off + len - 8)
                         != XXH3_64bits(b + off, len - 8)) {
            if (off + len != f->size) {
                snprintf(err, errlen, "%s: the record at byte %zu is "
                         "damaged (checksum mismatch) and more follow",
                         path, off);
                goto fail;
            }
            whole = 0;
        }
        if (!whole) { /* a torn last record: dropped */
            f->torn_offset = off;
            f->torn_bytes = left;
            break;
        }
        const uint8_t *p = b + off + RS_LG_REC_HEAD;
        const uint8_t *end = b + off + len - 8;
        int rc;
        switch (b[off + 4]) {
        case RS_LG_OPEN: rc = parse_open(f, p, end, off); break;
        case RS_LG_LAYOUT: rc = parse_layout(f, p, end); break;
        case RS_LG_STEP: rc = parse_step(f, p, end, off); break;
        default: rc = 0; /* a later version's record: skipped */
        }
        if (rc == -2) {
            snprintf(err, errlen, "%s: out of memory", path);
            goto fail;
        }
        if (rc == -3) {
            snprintf(err, errlen, "%s: the segment at byte %zu is another "
                     "rank's (one ledger file per rank)", path, off);
            goto fail;
        }
        if (rc) {
            snprintf(err, errlen, "%s: the record at byte %zu ('%c') does "
                     "not parse%s", path, off, b[off + 4],
                     f->nsegs ? "" : " (no OPEN record before it)");
            goto fail;
        }
        off += len;
    }
    if (!f->nsegs) {
        snprintf(err, errlen, "%s: no whole record in the ledger", path);
        goto fail;
    }
    return f;
fail:
    lg_free(f);
    return NULL;
}

uint64_t lg_stream_a(const lg_record *r, uint32_t i)
{
    return rs_lg_get64(r->words + 16 * (size_t)i);
}

uint64_t lg_stream_b(const lg_record *r, uint32_t i)
{
    return rs_lg_get64(r->words + 16 * (size_t)i + 8);
}

uint64_t lg_app(const lg_record *r, uint32_t j)
{
    return rs_lg_get64(r->words + 16 * (size_t)r->layout->nstreams
                       + 8 * (size_t)j);
}

const char *lg_note_text(const lg_note *n, char *buf, size_t len)
{
    if (n->type == RS_LG_NOTE_INT && n->len == 8) {
        snprintf(buf, len, "%" PRId64, (int64_t)rs_lg_get64(n->value));
    } else if (n->type == RS_LG_NOTE_FLOAT && n->len == 8) {
        uint64_t u = rs_lg_get64(n->value);
        double d;
        memcpy(&d, &u, sizeof d);
        snprintf(buf, len, "%.17g", d);
    } else if (n->type == RS_LG_NOTE_STR) {
        snprintf(buf, len, "\"%.*s\"", (int)(n->len < 200 ? n->len : 200),
                 (const char *)n->value);
    } else {
        size_t k = snprintf(buf, len, "0x");
        for (uint32_t i = 0; i < n->len && k + 3 < len && i < 32; i++)
            k += snprintf(buf + k, len - k, "%02x", n->value[i]);
        if (n->len > 32 && k + 4 < len)
            snprintf(buf + k, len - k, "...");
    }
    return buf;
}

static int by_rank(const void *a, const void *b)
{
    const lg_file *x = *(lg_file *const *)a, *y = *(lg_file *const *)b;
    return (x->rank > y->rank) - (x->rank < y->rank);
}

static int is_ledger(const char *path)
{
    FILE *fp = fopen(path, "rb");
    char m[8];
    int yes = fp && fread(m, 1, 8, fp) == 8 && memcmp(m, RS_LG_MAGIC, 8) == 0;
    if (fp)
        fclose(fp);
    return yes;
}

lg_file **lg_read_set(const char *path, size_t *n, char *err, size_t errlen)
{
    struct stat st;
    *n = 0;
    if (stat(path, &st) != 0) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return NULL;
    }
    lg_file **set = NULL;
    if (!S_ISDIR(st.st_mode)) {
        set = malloc(sizeof *set);
        if (!set || !(set[0] = lg_read(path, err, errlen))) {
            if (set)
                free(set);
            else
                snprintf(err, errlen, "%s: out of memory", path);
            return NULL;
        }
        *n = 1;
        return set;
    }
    DIR *d = opendir(path);
    if (!d) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return NULL;
    }
    struct dirent *e;
    size_t cap = 0;
    int ok = 1;
    while (ok && (e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        char file[4096];
        snprintf(file, sizeof file, "%s/%s", path, e->d_name);
        if (stat(file, &st) != 0 || !S_ISREG(st.st_mode) || !is_ledger(file))
            continue;
        if (*n == cap) {
            cap = cap ? 2 * cap : 8;
            lg_file **g = realloc(set, cap * sizeof *g);
            if (!g) {
                snprintf(err, errlen, "%s: out of memory", path);
                ok = 0;
                break;
            }
            set = g;
        }
        if (!(set[*n] = lg_read(file, err, errlen)))
            ok = 0;
        else
            (*n)++;
    }
    closedir(d);
    if (ok && *n == 0) {
        snprintf(err, errlen, "%s: no ledger file in the folder", path);
        ok = 0;
    }
    if (ok) {
        qsort(set, *n, sizeof *set, by_rank);
        for (size_t i = 1; i < *n; i++)
            if (set[i]->rank == set[i - 1]->rank) {
                snprintf(err, errlen, "%s: %s and %s are both rank %d's "
                         "ledger", path, set[i - 1]->path, set[i]->path,
                         set[i]->rank);
                ok = 0;
                break;
            }
    }
    if (!ok) {
        lg_free_set(set, *n);
        *n = 0;
        return NULL;
    }
    return set;
}

void lg_free_set(lg_file **set, size_t n)
{
    for (size_t i = 0; i < n; i++)
        lg_free(set[i]);
    free(set);
}
