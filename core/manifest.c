/*
 * manifest.c - the multi-rank folder's commit record: encode (version
 * 2), decode (versions 1 and 2; bounded, every field checked, the map
 * from ranks to bytes checked whole, no code in data) and the public
 * reader rngsnap_manifest_*.  Format: docs/format.md, "Multi-rank
 * folders".
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <xxhash.h>

#include "coords.h"
#include "format.h"
#include "manifest.h"
#include "store.h"

/* Version 2 (docs/format.md): the version-1 header, then file count,
 * flags and emulated_ranks_per_node, u32 each. */
#define RS_MAN_V2_HEADER_SIZE 72u
#define RS_MAN_FLAG_PER_RANK 0x1u /* files are rank-NNNNN, one rank each */
/* A file record after its name: first_rank, rank_count, size, XXH3-64. */
#define RS_MAN_V2_FILE_FIXED 24u
/* A rank record: file_index, offset, length, XXH3-64, coords length
 * (then the coordinates). */
#define RS_MAN_V2_RANK_FIXED 30u

static void put16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
}

static void put32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static void put64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static uint16_t get16(const uint8_t *p)
{
    return (uint16_t)(p[0] | (p[1] << 8));
}

static uint32_t get32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16
           | (uint32_t)p[3] << 24;
}

static uint64_t get64(const uint8_t *p)
{
    return (uint64_t)get32(p) | (uint64_t)get32(p + 4) << 32;
}


void rs_man_hex(const uint8_t id[RS_MAN_ID_SIZE], char *out)
{
    static const char hex[] = "0123456789abcdef";
    for (unsigned i = 0; i < RS_MAN_ID_SIZE; i++) {
        out[2 * i] = hex[id[i] >> 4];
        out[2 * i + 1] = hex[id[i] & 15];
    }
    out[2 * RS_MAN_ID_SIZE] = 0;
}

void rs_man_rank_file(int rank, const uint8_t id[RS_MAN_ID_SIZE], char *out)
{
    char hex[2 * RS_MAN_ID_SIZE + 1];
    rs_man_hex(id, hex);
    snprintf(out, RS_MAN_RANK_NAME_MAX, "rank-%05d.%s.rngsnap", rank, hex);
}

void rs_man_node_file(int first_rank, const uint8_t id[RS_MAN_ID_SIZE],
                      char *out)
{
    char hex[2 * RS_MAN_ID_SIZE + 1];
    rs_man_hex(id, hex);
    snprintf(out, RS_MAN_RANK_NAME_MAX, "node-%05d.%s.rngsnap", first_rank, hex);
}

/* The only name file i (holding ranks from first) may have. */
static void file_name(int per_rank, size_t i, int32_t first,
                      const uint8_t id[RS_MAN_ID_SIZE], char *out)
{
    (void)i;
    if (per_rank)
        rs_man_rank_file((int)first, id, out);
    else
        rs_man_node_file((int)first, id, out);
}

/* ---- the layout ---------------------------------------------------------- */

/* Is the map from ranks to bytes whole?  Files in ascending order of
 * their first (lowest) rank; every rank in exactly one file (a node's
 * ranks need not be consecutive: MPI may place ranks round-robin); in a
 * file the images of its ranks end to end from offset 0 in ascending
 * rank order, each within the bounds of one checkpoint image, their sum
 * the file's size; one rank each with per_rank.  0, -1 with the field at
 * fault in why, or -2 out of memory. */
static int check_layout(int32_t world, const rngsnap_manifest_file *files,
                        size_t nfiles, const rngsnap_manifest_rank *ranks,
                        int per_rank, char *why, size_t whylen)
{
    for (size_t i = 0; i < nfiles; i++) {
        int32_t first = files[i].first_rank;
        if (first < 0 || first >= world
            || (i > 0 && first <= files[i - 1].first_rank))
            return rs_say(why, whylen, -1,
                          "file %zu: first_rank %d, expected one of "
                          "0..%d above file %zu's (files in ascending "
                          "order of their lowest rank)",
                          i, (int)first, (int)world - 1, i ? i - 1 : 0);
    }
    /* at most 2^20 images of 256 MiB per file: no overflow */
    uint64_t *at = calloc(nfiles + 1, sizeof *at);
    uint32_t *count = calloc(nfiles + 1, sizeof *count);
    int rc = 0;
    if (!at || !count) {
        rc = rs_say(why, whylen, -2, "out of memory");
        goto out;
    }
    for (int32_t r = 0; r < world && !rc; r++) {
        const rngsnap_manifest_rank *k = &ranks[r];
        size_t f = k->file_index;
        if (f >= nfiles)
            rc = rs_say(why, whylen, -1, "rank %d: file_index %zu outside "
                        "0..%zu", (int)r, f, nfiles - 1);
        else if (count[f] == 0 && files[f].first_rank != r)
            rc = rs_say(why, whylen, -1, "rank %d: file_index %zu, whose "
                        "first_rank is %d (a file's lowest rank)",
                        (int)r, f, (int)files[f].first_rank);
        else if (k->offset != at[f])
            rc = rs_say(why, whylen, -1,
                        "rank %d: offset %llu, expected %llu (images lie "
                        "end to end from offset 0: a gap or an overlap)",
                        (int)r, (unsigned long long)k->offset,
                        (unsigned long long)at[f]);
        else if (k->size < RS_FMT_HEADER_SIZE + RS_FMT_TRAILER_SIZE
                 || k->size > RS_FMT_FILE_MAX)
            rc = rs_say(why, whylen, -1, "rank %d: length %llu outside "
                        "%u..%zu", (int)r, (unsigned long long)k->size,
                        RS_FMT_HEADER_SIZE + RS_FMT_TRAILER_SIZE,
                        (size_t)RS_FMT_FILE_MAX);
        else {
            at[f] += k->size;
            count[f]++;
        }
    }
    for (size_t i = 0; i < nfiles && !rc; i++) {
        const rngsnap_manifest_file *f = &files[i];
        if (f->rank_count != count[i] || (per_rank && f->rank_count != 1))
            rc = rs_say(why, whylen, -1, "file %zu: rank_count %u, expected "
                        "%u (the ranks whose file_index is %zu)%s", i,
                        f->rank_count, count[i], i,
                        per_rank ? ", and 1 with per-rank files" : "");
        else if (f->size != at[i])
            rc = rs_say(why, whylen, -1,
                        "file %zu: size %llu, its ranks' images sum to %llu",
                        i, (unsigned long long)f->size,
                        (unsigned long long)at[i]);
    }
out:
    free(at);
    free(count);
    return rc;
}

/* Is s (n bytes) empty or canonical coordinates?  0, or -1 with why. */
static int check_coords(const char *s, char *why, size_t whylen)
{
    char canon[RS_COORDS_MAX], e[512];
    if (rs_coords_canon(s, canon, e, sizeof e) != RNGSNAP_OK)
        return rs_say(why, whylen, -1, "%s", e);
    if (strcmp(canon, s) != 0)
        return rs_say(why, whylen, -1,
                      "coordinates \"%s\" are not in canonical form (%s)",
                      s, canon);
    return 0;
}

/* ---- encode -------------------------------------------------------------- */

/* Version 2: header, file records, rank records, app records, XXH3-64
 * (docs/format.md, "Manifest, version 2"). */
int rs_man_encode(const rs_man_out *o, uint8_t **buf, size_t *len,
                  char *err, size_t errlen)
{
    char why[768];
    *buf = NULL;
    *len = 0;
    if (o->world_size < 1 || o->world_size > RS_MAN_WORLD_MAX
        || o->app_count > RS_MAN_APPS_MAX || o->file_count < 1
        || o->file_count > (size_t)o->world_size
        || o->emulated_ranks_per_node > RS_MAN_WORLD_MAX)
        return rs_say(err, errlen, RNGSNAP_E_INVALID,
                      "manifest: %d ranks, %zu files, %zu app states and "
                      "%u emulated ranks per node; allowed 1..%d ranks, "
                      "1..ranks files, at most %u app states and %d per "
                      "node",
                      (int)o->world_size, o->file_count, o->app_count,
                      o->emulated_ranks_per_node, RS_MAN_WORLD_MAX,
                      RS_MAN_APPS_MAX, RS_MAN_WORLD_MAX);
    int lc = check_layout(o->world_size, o->files, o->file_count, o->ranks,
                          o->per_rank_files, why, sizeof why);
    if (lc)
        return rs_say(err, errlen, lc == -2 ? RNGSNAP_E_NOMEM
                                            : RNGSNAP_E_INVALID,
                      "manifest: %s", why);
    size_t total = RS_MAN_V2_HEADER_SIZE + 8;
    char name[RS_MAN_RANK_NAME_MAX];
    for (size_t i = 0; i < o->file_count; i++) {
        file_name(o->per_rank_files, i, o->files[i].first_rank, o->id, name);
        total += 2 + strlen(name) + RS_MAN_V2_FILE_FIXED;
    }
    for (int32_t r = 0; r < o->world_size; r++) {
        const char *c = o->ranks[r].coords ? o->ranks[r].coords : "";
        if (strlen(c) >= RS_COORDS_MAX || check_coords(c, why, sizeof why))
            return rs_say(err, errlen, RNGSNAP_E_INVALID,
                          "manifest: rank %d: %s", (int)r,
                          strlen(c) >= RS_COORDS_MAX ? "coordinates too long"
                                                     : why);
        total += RS_MAN_V2_RANK_FIXED + strlen(c);
    }
    for (size_t i = 0; i < o->app_count; i++) {
        size_t nl = strlen(o->apps[i].name);
        if (nl < 1 || nl > RS_MAN_NAME_MAX)
            return rs_say(err, errlen, RNGSNAP_E_INVALID,
                          "manifest: app state name of %zu bytes", nl);
        total += 2 + nl + 9;
    }
    uint8_t *b = malloc(total), *p = b;
    if (!b)
        return rs_say(err, errlen, RNGSNAP_E_NOMEM,
                      "manifest: out of memory for %zu bytes", total);
    static const uint8_t zero[RS_MAN_ID_SIZE];
    memcpy(p, RS_MAN_MAGIC, 8);
    put32(p + 8, RS_MAN_VERSION);
    put32(p + 12, (uint32_t)o->world_size);
    put64(p + 16, (uint64_t)o->created_unix);
    memcpy(p + 24, o->id, RS_MAN_ID_SIZE);
    memcpy(p + 40, o->forked_from ? o->forked_from : zero, RS_MAN_ID_SIZE);
    put32(p + 56, (uint32_t)o->app_count);
    put32(p + 60, (uint32_t)o->file_count);
    put32(p + 64, o->per_rank_files ? RS_MAN_FLAG_PER_RANK : 0);
    put32(p + 68, o->emulated_ranks_per_node);
    p += RS_MAN_V2_HEADER_SIZE;
    for (size_t i = 0; i < o->file_count; i++) {
        const rngsnap_manifest_file *f = &o->files[i];
        file_name(o->per_rank_files, i, f->first_rank, o->id, name);
        size_t nl = strlen(name);
        put16(p, (uint16_t)nl);
        memcpy(p + 2, name, nl);
        p += 2 + nl;
        put32(p, (uint32_t)f->first_rank);
        put32(p + 4, f->rank_count);
        put64(p + 8, f->size);
        put64(p + 16, f->checksum);
        p += RS_MAN_V2_FILE_FIXED;
    }
    for (int32_t r = 0; r < o->world_size; r++) {
        const rngsnap_manifest_rank *k = &o->ranks[r];
        const char *c = k->coords ? k->coords : "";
        size_t cl = strlen(c);
        put32(p, (uint32_t)k->file_index);
        put64(p + 4, k->offset);
        put64(p + 12, k->size);
        put64(p + 20, k->checksum);
        put16(p + 28, (uint16_t)cl);
        memcpy(p + 30, c, cl);
        p += RS_MAN_V2_RANK_FIXED + cl;
    }
    for (size_t i = 0; i < o->app_count; i++) {
        size_t nl = strlen(o->apps[i].name);
        put16(p, (uint16_t)nl);
        memcpy(p + 2, o->apps[i].name, nl);
        p += 2 + nl;
        put64(p, o->apps[i].checksum);
        p[8] = o->apps[i].same_on_all_ranks ? 1 : 0;
        p += 9;
    }
    put64(p, XXH3_64bits(b, (size_t)(p - b)));
    *buf = b;
    *len = total;
    return RNGSNAP_OK;
}

/* ---- decode -------------------------------------------------------------- */

/* Take a u16 length (min..max) and that many bytes at *pp, bounded by
 * end. */
static int take_name(const uint8_t **pp, const uint8_t *end, size_t min,
                     size_t max, const uint8_t **name, size_t *nl)
{
    const uint8_t *p = *pp;
    if (end - p < 2)
        return -1;
    size_t n = get16(p);
    if (n < min || n > max || (size_t)(end - p - 2) < n)
        return -1;
    *name = p + 2;
    *nl = n;
    *pp = p + 2 + n;
    return 0;
}

static int by_name(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* A name that n app records share (*dup), 0 when all differ, -1 out of
 * memory.  Sorted, not pairwise: 65536 crafted 255-byte names that
 * differ only at their end took 35 s to compare pair by pair, on every
 * rank of a load. */
static int name_twice(const rngsnap_manifest_app *apps, uint32_t n,
                      const char **dup)
{
    if (n < 2)
        return 0;
    const char **v = malloc(n * sizeof *v);
    if (!v)
        return -1;
    for (uint32_t i = 0; i < n; i++)
        v[i] = apps[i].name;
    qsort(v, n, sizeof *v, by_name);
    int found = 0;
    for (uint32_t i = 1; i < n && !found; i++)
        if (strcmp(v[i - 1], v[i]) == 0) {
            *dup = v[i];
            found = 1;
        }
    free(v);
    return found;
}

/* The bytes between the header and the checksum, and where decoded names
 * go: one pass over the records. */
typedef struct cursor {
    const uint8_t *p, *end;
    char *q; /* next free byte of m->names */
    const char *what;
    char *err;
    size_t errlen;
} cursor;

/* Copy n name bytes into the names block as a C string. */
static const char *keep(cursor *c, const uint8_t *s, size_t n)
{
    char *r = c->q;
    memcpy(r, s, n);
    r[n] = 0;
    c->q += n + 1;
    return r;
}

/* Is the name at s (n bytes) exactly expect?  A rank's or node's file
 * may have no other: no '/', "..", NUL, nor another checkpoint's file. */
static int named(const uint8_t *s, size_t n, const char *expect)
{
    return n == strlen(expect) && memcmp(s, expect, n) == 0;
}

/* Version 1: W records of name, size, checksum; one file per rank. */
static int decode_v1_ranks(cursor *c, struct rngsnap_manifest *m)
{
    int32_t world = m->info.world_size;
    for (int32_t r = 0; r < world; r++) {
        const uint8_t *name;
        size_t nl;
        char expect[RS_MAN_RANK_NAME_MAX];
        if (take_name(&c->p, c->end, 1, RS_MAN_RANK_NAME_MAX - 1, &name, &nl)
                != 0
            || c->end - c->p < 16)
            return rs_say(c->err, c->errlen, RNGSNAP_E_CORRUPT,
                          "%s: rank %d's record is truncated or its name "
                          "length is out of range",
                          c->what, (int)r);
        rs_man_rank_file((int)r, m->id, expect);
        if (!named(name, nl, expect))
            return rs_say(c->err, c->errlen, RNGSNAP_E_CORRUPT,
                          "%s: rank %d's file is not named %s", c->what,
                          (int)r, expect);
        rngsnap_manifest_file *f = &m->files[r];
        rngsnap_manifest_rank *k = &m->ranks[r];
        f->name = k->file = keep(c, name, nl);
        f->first_rank = r;
        f->rank_count = 1;
        f->size = k->size = get64(c->p);
        f->checksum = k->checksum = get64(c->p + 8);
        k->file_index = (size_t)r;
        k->coords = "";
        c->p += 16;
        if (k->size < RS_FMT_HEADER_SIZE + RS_FMT_TRAILER_SIZE
            || k->size > RS_FMT_FILE_MAX)
            return rs_say(c->err, c->errlen, RNGSNAP_E_CORRUPT,
                          "%s: rank %d's file size %llu is outside %u..%zu",
                          c->what, (int)r, (unsigned long long)k->size,
                          RS_FMT_HEADER_SIZE + RS_FMT_TRAILER_SIZE,
                          (size_t)RS_FMT_FILE_MAX);
    }
    return RNGSNAP_OK;
}

/* Version 2: the file records, then the rank records, then the whole
 * layout. */
static int decode_v2_tables(cursor *c, struct rngsnap_manifest *m,
                            int per_rank)
{
    int32_t world = m->info.world_size;
    for (size_t i = 0; i < m->info.file_count; i++) {
        const uint8_t *name;
        size_t nl;
        if (take_name(&c->p, c->end, 1, RS_MAN_RANK_NAME_MAX - 1, &name, &nl)
                != 0
            || (size_t)(c->end - c->p) < RS_MAN_V2_FILE_FIXED)
            return rs_say(c->err, c->errlen, RNGSNAP_E_CORRUPT,
                          "%s: file record %zu is truncated or its name "
                          "length is out of range",
                          c->what, i);
        rngsnap_manifest_file *f = &m->files[i];
        f->first_rank = (int32_t)get32(c->p);
        f->rank_count = get32(c->p + 4);
        f->size = get64(c->p + 8);
        f->checksum = get64(c->p + 16);
        c->p += RS_MAN_V2_FILE_FIXED;
        char expect[RS_MAN_RANK_NAME_MAX];
        /* Every file is named by its first_rank: one out of range is
         * named as such, not as a wrong name. */
        if (f->first_rank < 0 || f->first_rank >= world)
            return rs_say(c->err, c->errlen, RNGSNAP_E_CORRUPT,
                          "%s: file %zu: first_rank %d outside 0..%d",
                          c->what, i, (int)f->first_rank, (int)world - 1);
        file_name(per_rank, i, f->first_rank, m->id, expect);
        if (!named(name, nl, expect))
            return rs_say(c->err, c->errlen, RNGSNAP_E_CORRUPT,
                          "%s: file record %zu: name \"%.*s\", expected %s",
                          c->what, i, (int)nl, (const char *)name, expect);
        f->name = keep(c, name, nl);
    }
    for (int32_t r = 0; r < world; r++) {
        rngsnap_manifest_rank *k = &m->ranks[r];
        if ((size_t)(c->end - c->p) < RS_MAN_V2_RANK_FIXED)
            return rs_say(c->err, c->errlen, RNGSNAP_E_CORRUPT,
                          "%s: rank record %d is truncated", c->what,
                          (int)r);
        uint32_t fi = get32(c->p);
        k->offset = get64(c->p + 4);
        k->size = get64(c->p + 12);
        k->checksum = get64(c->p + 20);
        size_t cl = get16(c->p + 28);
        c->p += RS_MAN_V2_RANK_FIXED;
        if (fi >= m->info.file_count)
            return rs_say(c->err, c->errlen, RNGSNAP_E_CORRUPT,
                          "%s: rank %d: file_index %u, the manifest has %zu "
                          "files",
                          c->what, (int)r, fi, m->info.file_count);
        if (cl >= RS_COORDS_MAX || (size_t)(c->end - c->p) < cl
            || memchr(c->p, 0, cl))
            return rs_say(c->err, c->errlen, RNGSNAP_E_CORRUPT,
                          "%s: rank %d: coordinates of %zu bytes (at most "
                          "%u, no NUL, within the manifest)",
                          c->what, (int)r, cl, RS_COORDS_MAX - 1);
        k->file_index = fi;
        k->file = m->files[fi].name;
        k->coords = keep(c, c->p, cl);
        c->p += cl;
        char why[768];
        if (check_coords(k->coords, why, sizeof why))
            return rs_say(c->err, c->errlen, RNGSNAP_E_CORRUPT,
                          "%s: rank %d: %s", c->what, (int)r, why);
    }
    char why[768];
    int lc = check_layout(world, m->files, m->info.file_count, m->ranks,
                          per_rank, why, sizeof why);
    if (lc)
        return rs_say(c->err, c->errlen, lc == -2 ? RNGSNAP_E_NOMEM
                                                  : RNGSNAP_E_CORRUPT,
                      "%s: %s", c->what, why);
    return RNGSNAP_OK;
}

static int decode_apps(cursor *c, struct rngsnap_manifest *m)
{
    for (uint32_t i = 0; i < m->info.app_count; i++) {
        const uint8_t *name;
        size_t nl;
        if (take_name(&c->p, c->end, 1, RS_MAN_NAME_MAX, &name, &nl) != 0
            || c->end - c->p < 9 || memchr(name, 0, nl) || c->p[8] > 1)
            return rs_say(c->err, c->errlen, RNGSNAP_E_CORRUPT,
                          "%s: app state record %u is truncated or "
                          "malformed",
                          c->what, i);
        m->apps[i].name = keep(c, name, nl);
        m->apps[i].checksum = get64(c->p);
        m->apps[i].same_on_all_ranks = c->p[8];
        c->p += 9;
    }
    if (c->p != c->end)
        return rs_say(c->err, c->errlen, RNGSNAP_E_CORRUPT,
                      "%s: %zu bytes after the last record", c->what,
                      (size_t)(c->end - c->p));
    const char *dup = NULL;
    int twice = name_twice(m->apps, (uint32_t)m->info.app_count, &dup);
    if (twice < 0)
        return rs_say(c->err, c->errlen, RNGSNAP_E_NOMEM,
                      "%s: out of memory", c->what);
    if (twice)
        return rs_say(c->err, c->errlen, RNGSNAP_E_CORRUPT,
                      "%s: app state %s recorded twice", c->what, dup);
    return RNGSNAP_OK;
}

int rs_man_decode(const uint8_t *buf, size_t len, const char *what,
                  const char *dir, struct rngsnap_manifest **out, char *err,
                  size_t errlen)
{
    *out = NULL;
    if (len < RS_MAN_HEADER_SIZE + 8 || memcmp(buf, RS_MAN_MAGIC, 8) != 0)
        return rs_say(err, errlen, RNGSNAP_E_CORRUPT,
                      "%s: not a rngsnap manifest (%zu bytes, no \"%s\" "
                      "magic)",
                      what, len, RS_MAN_MAGIC);
    uint64_t want = get64(buf + len - 8), got = XXH3_64bits(buf, len - 8);
    if (want != got)
        return rs_say(err, errlen, RNGSNAP_E_CORRUPT,
                      "%s: manifest checksum is 0x%016llx, its bytes give "
                      "0x%016llx (damaged or truncated)",
                      what, (unsigned long long)want,
                      (unsigned long long)got);
    uint32_t version = get32(buf + 8);
    if (version != 1 && version != RS_MAN_VERSION)
        return rs_say(err, errlen, RNGSNAP_E_CORRUPT,
                      "%s: manifest format version %u, this library reads "
                      "1 and %u",
                      what, version, RS_MAN_VERSION);
    size_t hsize = version == 1 ? RS_MAN_HEADER_SIZE : RS_MAN_V2_HEADER_SIZE;
    if (len < hsize + 8)
        return rs_say(err, errlen, RNGSNAP_E_CORRUPT,
                      "%s: %zu bytes, a version %u manifest has at least "
                      "%zu",
                      what, len, version, hsize + 8);
    int32_t world = (int32_t)get32(buf + 12);
    uint32_t napps = get32(buf + 56);
    uint32_t nfiles = version == 1 ? (uint32_t)world : get32(buf + 60);
    uint32_t flags = version == 1 ? 0 : get32(buf + 64);
    uint32_t emulated = version == 1 ? 0 : get32(buf + 68);
    if (world < 1 || world > RS_MAN_WORLD_MAX)
        return rs_say(err, errlen, RNGSNAP_E_CORRUPT,
                      "%s: world size %d outside 1..%d", what, (int)world,
                      RS_MAN_WORLD_MAX);
    if (napps > RS_MAN_APPS_MAX)
        return rs_say(err, errlen, RNGSNAP_E_CORRUPT,
                      "%s: %u app states, at most %u", what, napps,
                      RS_MAN_APPS_MAX);
    if (nfiles < 1 || nfiles > (uint32_t)world)
        return rs_say(err, errlen, RNGSNAP_E_CORRUPT,
                      "%s: file count %u outside 1..%d (the world size)",
                      what, nfiles, (int)world);
    if (flags & ~(uint32_t)RS_MAN_FLAG_PER_RANK)
        return rs_say(err, errlen, RNGSNAP_E_CORRUPT,
                      "%s: flags 0x%x, only 0x%x (per-rank files) is "
                      "defined",
                      what, flags, RS_MAN_FLAG_PER_RANK);
    if (emulated > RS_MAN_WORLD_MAX)
        return rs_say(err, errlen, RNGSNAP_E_CORRUPT,
                      "%s: emulated_ranks_per_node %u, at most %d", what,
                      emulated, RS_MAN_WORLD_MAX);
    /* Refuse counts the bytes cannot hold before allocating for them:
     * every record has a least size.  At most 2^20 * 30 + 65536 * 10:
     * no overflow. */
    const uint8_t *p = buf + hsize, *end = buf + len - 8;
    uint64_t least = version == 1
                         ? (uint64_t)world * 17
                         : (uint64_t)nfiles * (3 + RS_MAN_V2_FILE_FIXED)
                               + (uint64_t)world * RS_MAN_V2_RANK_FIXED;
    least += (uint64_t)napps * 10;
    if ((uint64_t)(end - p) < least)
        return rs_say(err, errlen, RNGSNAP_E_CORRUPT,
                      "%s: %d ranks, %u files and %u app states do not fit "
                      "in %zu bytes",
                      what, (int)world, nfiles, napps, len);

    struct rngsnap_manifest *m = calloc(1, sizeof *m);
    if (!m)
        return rs_say(err, errlen, RNGSNAP_E_NOMEM, "%s: out of memory",
                      what);
    m->ranks = calloc((size_t)world, sizeof *m->ranks);
    m->files = calloc(nfiles, sizeof *m->files);
    m->apps = calloc(napps ? napps : 1, sizeof *m->apps);
    /* Each string takes its length prefix (>= 1 byte) in buf for its
     * NUL here: all of them fit in len. */
    m->names = malloc(len);
    m->dir = strdup(dir ? dir : ".");
    int rc = RNGSNAP_OK;
    if (!m->ranks || !m->files || !m->apps || !m->names || !m->dir) {
        rc = rs_say(err, errlen, RNGSNAP_E_NOMEM, "%s: out of memory",
                    what);
        goto fail;
    }
    memcpy(m->id, buf + 24, RS_MAN_ID_SIZE);
    memcpy(m->forked_from, buf + 40, RS_MAN_ID_SIZE);
    m->info.format_version = version;
    m->info.world_size = world;
    m->info.created_unix = (int64_t)get64(buf + 16);
    m->info.app_count = napps;
    m->info.file_count = nfiles;
    m->info.emulated_ranks_per_node = emulated;
    rs_man_hex(m->id, m->info.id);
    static const uint8_t zero[RS_MAN_ID_SIZE];
    if (memcmp(m->forked_from, zero, RS_MAN_ID_SIZE) != 0)
        rs_man_hex(m->forked_from, m->info.forked_from);

    cursor c = {p, end, m->names, what, err, errlen};
    rc = version == 1
             ? decode_v1_ranks(&c, m)
             : decode_v2_tables(&c, m, (flags & RS_MAN_FLAG_PER_RANK) != 0);
    if (!rc)
        rc = decode_apps(&c, m);
    if (rc)
        goto fail;
    *out = m;
    return RNGSNAP_OK;
fail:
    rngsnap_manifest_close(m);
    return rc;
}

/* "rank R's file" when the file is the rank's alone, else where in the
 * node's file its image lies. */
static void image_label(const struct rngsnap_manifest *m, int rank,
                        char *out, size_t outlen)
{
    const rngsnap_manifest_rank *k = &m->ranks[rank];
    if (m->files[k->file_index].rank_count == 1)
        snprintf(out, outlen, "rank %d's file", rank);
    else
        snprintf(out, outlen, "rank %d's image at offset %llu", rank,
                 (unsigned long long)k->offset);
}

int rs_man_check_rank(const struct rngsnap_manifest *m, int rank,
                      const char *path, const uint8_t *buf, size_t len,
                      char *err, size_t errlen)
{
    const rngsnap_manifest_rank *r = &m->ranks[rank];
    char label[96];
    image_label(m, rank, label, sizeof label);
    if (len != r->size)
        return rs_say(err, errlen, RNGSNAP_E_CORRUPT,
                      "%s (%s): %zu bytes, the manifest of checkpoint %s "
                      "records %llu (damaged, truncated, or another "
                      "checkpoint's file)",
                      path, label, len, m->info.id,
                      (unsigned long long)r->size);
    uint64_t h = XXH3_64bits(buf, len);
    if (h != r->checksum)
        return rs_say(err, errlen, RNGSNAP_E_CORRUPT,
                      "%s (%s): XXH3-64 0x%016llx, the manifest of "
                      "checkpoint %s records 0x%016llx (damaged, swapped, "
                      "or another checkpoint's file)",
                      path, label, (unsigned long long)h, m->info.id,
                      (unsigned long long)r->checksum);
    return RNGSNAP_OK;
}

/* ---- public reader -------------------------------------------------------- */

RNGSNAP_API int rngsnap_manifest_open(const char *dir, rngsnap_manifest **out,
                                      char *err, size_t errlen)
{
    if (err && errlen)
        err[0] = 0;
    if (!out)
        return rs_say(err, errlen, RNGSNAP_E_INVALID,
                   "rngsnap_manifest_open: out is NULL");
    *out = NULL;
    if (!dir || !*dir)
        return rs_say(err, errlen, RNGSNAP_E_INVALID,
                   "rngsnap_manifest_open: no folder given");
    size_t dl = strlen(dir);
    char *path = malloc(dl + sizeof RS_MAN_FILE + 1);
    if (!path)
        return rs_say(err, errlen, RNGSNAP_E_NOMEM, "%s: out of memory", dir);
    snprintf(path, dl + sizeof RS_MAN_FILE + 1, "%s/%s", dir, RS_MAN_FILE);
    uint8_t *buf;
    size_t len;
    char why[1024];
    int rc = rs_store_read(path, 0, &buf, &len, why, sizeof why);
    if (rc == RNGSNAP_E_IO)
        rs_say(err, errlen, rc, "%s: not a committed multi-rank checkpoint "
            "(%s)", dir, why);
    else if (rc)
        rs_say(err, errlen, rc, "%s", why);
    else {
        rc = rs_man_decode(buf, len, path, dir, out, err, errlen);
        free(buf);
    }
    free(path);
    return rc;
}

RNGSNAP_API void rngsnap_manifest_close(rngsnap_manifest *m)
{
    if (!m)
        return;
    free(m->dir);
    free(m->ranks);
    free(m->files);
    free(m->apps);
    free(m->names);
    free(m);
}

RNGSNAP_API const rngsnap_manifest_info *
rngsnap_manifest_info_get(const rngsnap_manifest *m)
{
    return m ? &m->info : NULL;
}

RNGSNAP_API const rngsnap_manifest_rank *
rngsnap_manifest_rank_at(const rngsnap_manifest *m, int rank)
{
    if (!m || rank < 0 || rank >= m->info.world_size)
        return NULL;
    return &m->ranks[rank];
}

RNGSNAP_API const rngsnap_manifest_app *
rngsnap_manifest_app_at(const rngsnap_manifest *m, size_t i)
{
    if (!m || i >= m->info.app_count)
        return NULL;
    return &m->apps[i];
}

RNGSNAP_API const rngsnap_manifest_file *
rngsnap_manifest_file_at(const rngsnap_manifest *m, size_t i)
{
    if (!m || i >= m->info.file_count)
        return NULL;
    return &m->files[i];
}

/* Read only the rank's bytes once, check them against the record, and
 * decode those same bytes (format.c takes the buffer over). */
RNGSNAP_API int rngsnap_manifest_open_rank(const rngsnap_manifest *m,
                                           int rank, rngsnap_file **out,
                                           char *err, size_t errlen)
{
    if (err && errlen)
        err[0] = 0;
    if (!out)
        return rs_say(err, errlen, RNGSNAP_E_INVALID,
                      "rngsnap_manifest_open_rank: out is NULL");
    *out = NULL;
    if (!m || rank < 0 || rank >= m->info.world_size)
        return rs_say(err, errlen, RNGSNAP_E_INVALID,
                      "rngsnap_manifest_open_rank: rank %d outside 0..%d",
                      rank, m ? (int)m->info.world_size - 1 : -1);
    const rngsnap_manifest_rank *k = &m->ranks[rank];
    const rngsnap_manifest_file *f = &m->files[k->file_index];
    size_t pl = strlen(m->dir) + strlen(k->file) + 2;
    char *path = malloc(pl), what[1200];
    if (!path)
        return rs_say(err, errlen, RNGSNAP_E_NOMEM, "out of memory");
    snprintf(path, pl, "%s/%s", m->dir, k->file);
    /* In a node's file the image is named by its rank and place. */
    if (f->rank_count > 1) {
        char label[96];
        image_label(m, rank, label, sizeof label);
        snprintf(what, sizeof what, "%s (%s)", path, label);
    } else {
        snprintf(what, sizeof what, "%s", path);
    }
    uint8_t *buf;
    int rc = rs_store_read_range(path, k->offset, (size_t)k->size, f->size,
                                 &buf, err, errlen);
    if (rc == RNGSNAP_OK) {
        rc = rs_man_check_rank(m, rank, path, buf, (size_t)k->size, err,
                               errlen);
        if (rc == RNGSNAP_OK)
            rc = rs_fmt_file_adopt(buf, (size_t)k->size, what, out, err,
                                   errlen);
        else
            free(buf);
    }
    free(path);
    return rc;
}
