/*
 * manifest.c - the multi-rank folder's commit record: encode, decode
 * (bounded, every field checked, no code in data) and the public reader
 * rngsnap_manifest_*.  Format: docs/format.md, "Multi-rank folders".
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <xxhash.h>

#include "format.h"
#include "manifest.h"
#include "store.h"

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

/* ---- encode -------------------------------------------------------------- */

int rs_man_encode(int32_t world_size, int64_t created_unix,
                  const uint8_t id[RS_MAN_ID_SIZE],
                  const uint8_t forked_from[RS_MAN_ID_SIZE],
                  const rngsnap_manifest_rank *ranks,
                  const rngsnap_manifest_app *apps, size_t app_count,
                  uint8_t **buf, size_t *len, char *err, size_t errlen)
{
    *buf = NULL;
    *len = 0;
    if (world_size < 1 || world_size > RS_MAN_WORLD_MAX
        || app_count > RS_MAN_APPS_MAX)
        return rs_say(err, errlen, RNGSNAP_E_INVALID,
                   "manifest: %d ranks and %zu app states, at most %d and "
                   "%u allowed",
                   (int)world_size, app_count, RS_MAN_WORLD_MAX,
                   RS_MAN_APPS_MAX);
    size_t total = RS_MAN_HEADER_SIZE + 8;
    for (int32_t r = 0; r < world_size; r++)
        total += 2 + strlen(ranks[r].file) + 16;
    for (size_t i = 0; i < app_count; i++) {
        size_t nl = strlen(apps[i].name);
        if (nl < 1 || nl > RS_MAN_NAME_MAX)
            return rs_say(err, errlen, RNGSNAP_E_INVALID,
                       "manifest: app state name of %zu bytes", nl);
        total += 2 + nl + 9;
    }
    uint8_t *b = malloc(total), *p = b;
    if (!b)
        return rs_say(err, errlen, RNGSNAP_E_NOMEM,
                   "manifest: out of memory for %zu bytes", total);
    memcpy(p, RS_MAN_MAGIC, 8);
    put32(p + 8, RS_MAN_VERSION);
    put32(p + 12, (uint32_t)world_size);
    put64(p + 16, (uint64_t)created_unix);
    memcpy(p + 24, id, RS_MAN_ID_SIZE);
    memcpy(p + 40, forked_from, RS_MAN_ID_SIZE);
    put32(p + 56, (uint32_t)app_count);
    p += RS_MAN_HEADER_SIZE;
    for (int32_t r = 0; r < world_size; r++) {
        size_t nl = strlen(ranks[r].file);
        put16(p, (uint16_t)nl);
        memcpy(p + 2, ranks[r].file, nl);
        p += 2 + nl;
        put64(p, ranks[r].size);
        put64(p + 8, ranks[r].checksum);
        p += 16;
    }
    for (size_t i = 0; i < app_count; i++) {
        size_t nl = strlen(apps[i].name);
        put16(p, (uint16_t)nl);
        memcpy(p + 2, apps[i].name, nl);
        p += 2 + nl;
        put64(p, apps[i].checksum);
        p[8] = apps[i].same_on_all_ranks ? 1 : 0;
        p += 9;
    }
    put64(p, XXH3_64bits(b, (size_t)(p - b)));
    *buf = b;
    *len = total;
    return RNGSNAP_OK;
}

/* ---- decode -------------------------------------------------------------- */

/* Take a u16 length and that many bytes at *pp, bounded by end. */
static int take_name(const uint8_t **pp, const uint8_t *end, size_t max,
                     const uint8_t **name, size_t *nl)
{
    const uint8_t *p = *pp;
    if (end - p < 2)
        return -1;
    size_t n = get16(p);
    if (n < 1 || n > max || (size_t)(end - p - 2) < n)
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
                   what, (unsigned long long)want, (unsigned long long)got);
    uint32_t version = get32(buf + 8);
    if (version != RS_MAN_VERSION)
        return rs_say(err, errlen, RNGSNAP_E_CORRUPT,
                   "%s: manifest format version %u, this library reads %u",
                   what, version, RS_MAN_VERSION);
    int32_t world = (int32_t)get32(buf + 12);
    uint32_t napps = get32(buf + 56);
    if (world < 1 || world > RS_MAN_WORLD_MAX)
        return rs_say(err, errlen, RNGSNAP_E_CORRUPT,
                   "%s: world size %d outside 1..%d", what, (int)world,
                   RS_MAN_WORLD_MAX);
    if (napps > RS_MAN_APPS_MAX)
        return rs_say(err, errlen, RNGSNAP_E_CORRUPT,
                   "%s: %u app states, at most %u", what, napps,
                   RS_MAN_APPS_MAX);
    /* Every record takes at least 17 (rank) or 10 (app) bytes: refuse
     * counts the bytes cannot hold before allocating for them. */
    const uint8_t *p = buf + RS_MAN_HEADER_SIZE, *end = buf + len - 8;
    if ((size_t)(end - p) / 17 < (size_t)world
        || (size_t)(end - p) < (size_t)world * 17 + (size_t)napps * 10)
        return rs_say(err, errlen, RNGSNAP_E_CORRUPT,
                   "%s: %d ranks and %u app states do not fit in %zu bytes",
                   what, (int)world, napps, len);

    struct rngsnap_manifest *m = calloc(1, sizeof *m);
    if (!m)
        return rs_say(err, errlen, RNGSNAP_E_NOMEM, "%s: out of memory", what);
    m->ranks = calloc((size_t)world, sizeof *m->ranks);
    m->apps = calloc(napps ? napps : 1, sizeof *m->apps);
    m->names = malloc(len); /* names with their NULs fit in len */
    m->dir = strdup(dir ? dir : ".");
    int rc = RNGSNAP_OK;
    if (!m->ranks || !m->apps || !m->names || !m->dir) {
        rc = rs_say(err, errlen, RNGSNAP_E_NOMEM, "%s: out of memory", what);
        goto fail;
    }
    memcpy(m->id, buf + 24, RS_MAN_ID_SIZE);
    memcpy(m->forked_from, buf + 40, RS_MAN_ID_SIZE);
    m->info.format_version = version;
    m->info.world_size = world;
    m->info.created_unix = (int64_t)get64(buf + 16);
    m->info.app_count = napps;
    rs_man_hex(m->id, m->info.id);
    static const uint8_t zero[RS_MAN_ID_SIZE];
    if (memcmp(m->forked_from, zero, RS_MAN_ID_SIZE) != 0)
        rs_man_hex(m->forked_from, m->info.forked_from);

    char *q = m->names;
    for (int32_t r = 0; r < world; r++) {
        const uint8_t *name;
        size_t nl;
        char expect[RS_MAN_RANK_NAME_MAX];
        if (take_name(&p, end, RS_MAN_RANK_NAME_MAX - 1, &name, &nl) != 0
            || end - p < 16) {
            rc = rs_say(err, errlen, RNGSNAP_E_CORRUPT,
                     "%s: rank %d's record is truncated or its name length "
                     "is out of range",
                     what, (int)r);
            goto fail;
        }
        /* The only name a rank file may have: no '/', no "..", no NUL,
         * and no file of another rank or checkpoint. */
        rs_man_rank_file((int)r, m->id, expect);
        if (nl != strlen(expect) || memcmp(name, expect, nl) != 0) {
            rc = rs_say(err, errlen, RNGSNAP_E_CORRUPT,
                     "%s: rank %d's file is not named %s", what, (int)r,
                     expect);
            goto fail;
        }
        memcpy(q, name, nl);
        q[nl] = 0;
        m->ranks[r].file = q;
        q += nl + 1;
        m->ranks[r].size = get64(p);
        m->ranks[r].checksum = get64(p + 8);
        p += 16;
        if (m->ranks[r].size < RS_FMT_HEADER_SIZE + RS_FMT_TRAILER_SIZE
            || m->ranks[r].size > RS_FMT_FILE_MAX) {
            rc = rs_say(err, errlen, RNGSNAP_E_CORRUPT,
                     "%s: rank %d's file size %llu is outside %u..%zu", what,
                     (int)r, (unsigned long long)m->ranks[r].size,
                     RS_FMT_HEADER_SIZE + RS_FMT_TRAILER_SIZE,
                     (size_t)RS_FMT_FILE_MAX);
            goto fail;
        }
    }
    for (uint32_t i = 0; i < napps; i++) {
        const uint8_t *name;
        size_t nl;
        if (take_name(&p, end, RS_MAN_NAME_MAX, &name, &nl) != 0
            || end - p < 9 || memchr(name, 0, nl) || p[8] > 1) {
            rc = rs_say(err, errlen, RNGSNAP_E_CORRUPT,
                     "%s: app state record %u is truncated or malformed",
                     what, i);
            goto fail;
        }
        memcpy(q, name, nl);
        q[nl] = 0;
        m->apps[i].name = q;
        q += nl + 1;
        m->apps[i].checksum = get64(p);
        m->apps[i].same_on_all_ranks = p[8];
        p += 9;
    }
    if (p != end) {
        rc = rs_say(err, errlen, RNGSNAP_E_CORRUPT,
                 "%s: %zu bytes after the last record", what,
                 (size_t)(end - p));
        goto fail;
    }
    const char *dup = NULL;
    int twice = name_twice(m->apps, napps, &dup);
    if (twice) {
        rc = twice < 0 ? rs_say(err, errlen, RNGSNAP_E_NOMEM,
                                "%s: out of memory", what)
                       : rs_say(err, errlen, RNGSNAP_E_CORRUPT,
                                "%s: app state %s recorded twice", what,
                                dup);
        goto fail;
    }
    *out = m;
    return RNGSNAP_OK;
fail:
    rngsnap_manifest_close(m);
    return rc;
}

int rs_man_check_rank(const struct rngsnap_manifest *m, int rank,
                      const char *path, const uint8_t *buf, size_t len,
                      char *err, size_t errlen)
{
    const rngsnap_manifest_rank *r = &m->ranks[rank];
    if (len != r->size)
        return rs_say(err, errlen, RNGSNAP_E_CORRUPT,
                   "%s (rank %d's file): %zu bytes, the manifest of "
                   "checkpoint %s records %llu (damaged, truncated, or "
                   "another checkpoint's file)",
                   path, rank, len, m->info.id,
                   (unsigned long long)r->size);
    uint64_t h = XXH3_64bits(buf, len);
    if (h != r->checksum)
        return rs_say(err, errlen, RNGSNAP_E_CORRUPT,
                   "%s (rank %d's file): XXH3-64 0x%016llx, the manifest of "
                   "checkpoint %s records 0x%016llx (damaged, swapped, or "
                   "another checkpoint's file)",
                   path, rank, (unsigned long long)h, m->info.id,
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

/* Read the bytes once, check them against the record, and decode those
 * same bytes (format.c takes the buffer over). */
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
                   "rngsnap_manifest_open_rank: rank %d outside 0..%d", rank,
                   m ? (int)m->info.world_size - 1 : -1);
    size_t pl = strlen(m->dir) + strlen(m->ranks[rank].file) + 2;
    char *path = malloc(pl);
    if (!path)
        return rs_say(err, errlen, RNGSNAP_E_NOMEM, "out of memory");
    snprintf(path, pl, "%s/%s", m->dir, m->ranks[rank].file);
    uint8_t *buf;
    size_t len;
    int rc = rs_store_read(path, (size_t)m->ranks[rank].size, &buf, &len,
                           err, errlen);
    if (rc == RNGSNAP_OK) {
        rc = rs_man_check_rank(m, rank, path, buf, len, err, errlen);
        if (rc == RNGSNAP_OK)
            rc = rs_fmt_file_adopt(buf, len, path, out, err, errlen);
        else
            free(buf);
    }
    free(path);
    return rc;
}
