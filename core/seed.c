/*
 * seed.c - rngsnap_seed_all: one seed for every registry entry.
 *
 * Mixing function, version 1 (docs copy this text; changing it changes
 * every seeded stream, so a change needs a new version tag):
 *
 *   bytes  = "rngsnap-seed-v1" 0x00            (16 bytes)
 *            user seed, uint64 little-endian   (8 bytes)
 *            backend name, 0x00                (e.g. "cpu" 0x00)
 *            device, int32 little-endian       (4 bytes)
 *            stream name, 0x00                 (e.g. "default" 0x00)
 *   Philox seed        = XXH64(bytes, length of bytes, 0)
 *   Philox subsequence = rank                  (0 <= rank < world size)
 *
 * So two ranks never share a Philox stream (different subsequences, the
 * same key), and within one rank two entries share one only if their
 * 64-bit seeds collide, which rngsnap_seed_all detects and refuses
 * (RNGSNAP_E_INVALID naming both entries) before seeding anything.
 * Names cannot contain NUL, so the byte string is unambiguous.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <xxhash.h>

#include "context.h"
#include "internal.h"
#include "lock.h"
#include "words.h"

#define RS_SEED_TAG "rngsnap-seed-v1"
/* Where a context never seeded nor loaded keeps its entries. */
#define RS_DEFAULT_SEED 0

static size_t put_le(unsigned char *p, uint64_t v, int bytes)
{
    for (int i = 0; i < bytes; i++)
        p[i] = (unsigned char)(v >> (8 * i));
    return (size_t)bytes;
}

uint64_t rs_derive_seed(uint64_t user_seed, const char *backend, int device,
                        const char *stream)
{
    size_t nb = strlen(backend) + 1, ns = strlen(stream) + 1;
    size_t len = sizeof RS_SEED_TAG + 8 + nb + 4 + ns;
    unsigned char stackbuf[640];
    unsigned char *buf = len <= sizeof stackbuf ? stackbuf : malloc(len);
    if (!buf)
        return 0; /* names are at most 255 bytes: never taken */
    size_t o = 0;
    memcpy(buf + o, RS_SEED_TAG, sizeof RS_SEED_TAG); /* with its NUL */
    o += sizeof RS_SEED_TAG;
    o += put_le(buf + o, user_seed, 8);
    memcpy(buf + o, backend, nb);
    o += nb;
    o += put_le(buf + o, (uint32_t)device, 4);
    memcpy(buf + o, stream, ns);
    o += ns;
    uint64_t h = XXH64(buf, o, 0);
    if (buf != stackbuf)
        free(buf);
    return h;
}

typedef struct {
    uint64_t seed;
    size_t index;
} rs_seed_ix;

static int cmp_seed(const void *a, const void *b)
{
    const rs_seed_ix *x = a, *y = b;
    if (x->seed != y->seed)
        return x->seed < y->seed ? -1 : 1;
    return x->index < y->index ? -1 : x->index > y->index;
}

int rs_find_duplicate(const uint64_t *seeds, size_t n, size_t *i, size_t *j)
{
    if (n < 2)
        return 0;
    rs_seed_ix *v = malloc(n * sizeof *v);
    int found = 0;
    if (!v) { /* quadratic fallback, no memory needed */
        for (size_t a = 0; a < n && !found; a++)
            for (size_t b = a + 1; b < n && !found; b++)
                if (seeds[a] == seeds[b]) {
                    *i = a;
                    *j = b;
                    found = 1;
                }
        return found;
    }
    for (size_t k = 0; k < n; k++) {
        v[k].seed = seeds[k];
        v[k].index = k;
    }
    qsort(v, n, sizeof *v, cmp_seed);
    for (size_t k = 1; k < n && !found; k++) {
        if (v[k].seed == v[k - 1].seed) {
            *i = v[k - 1].index;
            *j = v[k].index;
            found = 1;
        }
    }
    free(v);
    return found;
}

/* Get every state (the backup), then seed every entry; on a failure put
 * the backup back.  The caller holds every stream's lock. */
static int seed_streams(struct rngsnap *ctx, const uint64_t *seeds,
                        unsigned char *saved)
{
    size_t n = ctx->nstreams;
    char la[600], lb[600];
    size_t off = 0;
    for (size_t k = 0; k < n; k++) {
        struct rngsnap_stream *s = &ctx->streams[k];
        size_t sz = s->backend->vt->state_size;
        unsigned long mark = rs_error_mark();
        RS_TRACE(s->backend, "get_state (backup)", s);
        int prc = s->backend->vt->get_state(s->handle, saved + off, sz);
        if (prc) {
            snprintf(la, sizeof la, "get_state of %s",
                     rs_stream_label(s, lb, sizeof lb));
            return rs_plugin_rc(ctx, s->backend, prc, la, mark);
        }
        off += sz;
    }
    for (size_t k = 0; k < n; k++) {
        struct rngsnap_stream *s = &ctx->streams[k];
        unsigned long mark = rs_error_mark();
        RS_TRACE(s->backend, "seed", s);
        int prc = s->backend->vt->seed(s->handle, seeds[k],
                                       (uint64_t)ctx->rank);
        if (!prc)
            continue;
        snprintf(la, sizeof la, "seed of %s",
                 rs_stream_label(s, lb, sizeof lb));
        int rc = rs_plugin_rc(ctx, s->backend, prc, la, mark);
        /* Entries 0..k (k too: its seed may have failed halfway); the
         * message above is already formatted. */
        char keep[RS_ERRMSG_MAX];
        memcpy(keep, rs_errbuf(ctx), sizeof keep);
        size_t back = 0;
        for (size_t r = 0; r <= k; r++) {
            struct rngsnap_stream *t = &ctx->streams[r];
            size_t sz = t->backend->vt->state_size;
            RS_TRACE(t->backend, "set_state (rollback)", t);
            t->backend->vt->set_state(t->handle, saved + back, sz);
            back += sz;
        }
        memcpy(rs_errbuf(ctx), keep, sizeof keep);
        return rc;
    }
    return RNGSNAP_OK;
}

/* Every entry seeded from seed (the mixing function above), all or
 * nothing.  The caller holds ctx's lock. */
static int seed_entries(struct rngsnap *ctx, uint64_t seed)
{
    int rc;
    size_t n = ctx->nstreams;
    if (n == 0)
        return RNGSNAP_OK;

    uint64_t *seeds = malloc(n * sizeof *seeds);
    size_t total = 0;
    for (size_t k = 0; k < n; k++)
        total += ctx->streams[k].backend->vt->state_size;
    unsigned char *saved = malloc(total);
    if (!seeds || !saved) {
        free(seeds);
        free(saved);
        return rs_error(ctx, RNGSNAP_E_NOMEM, "out of memory");
    }
    for (size_t k = 0; k < n; k++) {
        const struct rngsnap_stream *s = &ctx->streams[k];
        seeds[k] = rs_derive_seed(seed, s->backend->name, s->device,
                                  s->name);
    }
    size_t a, b;
    char la[600], lb[600];
    if (rs_find_duplicate(seeds, n, &a, &b)) {
        rc = rs_error(ctx, RNGSNAP_E_INVALID, "%s: entries %s and %s derive "
                      "the same Philox seed 0x%016llx from seed %llu; rename "
                      "one of the streams", rs_word(ctx, RS_W_SEED_ALL),
                      rs_stream_label(&ctx->streams[a], la, sizeof la),
                      rs_stream_label(&ctx->streams[b], lb, sizeof lb),
                      (unsigned long long)seeds[a],
                      (unsigned long long)seed);
        goto out;
    }
    /* Keep every state, so that a plugin failing midway changes nothing;
     * draws on other threads wait while the streams change. */
    rs_streams_lock_all(ctx);
    rc = seed_streams(ctx, seeds, saved);
    rs_streams_unlock_all(ctx);
out:
    free(seeds);
    free(saved);
    return rc;
}

static int seed_all_locked(struct rngsnap *ctx, uint64_t seed)
{
    int rc = rs_check_usable(ctx);
    if (rc)
        return rc;
    if ((rc = rs_resumed_seed_gate(ctx))) /* resumed.c */
        return rc;
    rc = seed_entries(ctx, seed);
    if (!rc) { /* fresh seeds: no fork in this job's history any more */
        memset(ctx->forked_from, 0, sizeof ctx->forked_from);
        atomic_store(&ctx->seeded, 1);
    }
    return rc;
}

void rs_seed_default(struct rngsnap *ctx)
{
    if (!ctx->usable || atomic_load(&ctx->seeded)
        || atomic_load(&ctx->loaded))
        return;
    /* Nothing to report: draws stay refused, and the seed_all or load
     * the user calls next reports whatever failed here. */
    char keep[RS_ERRMSG_MAX];
    memcpy(keep, rs_errbuf(ctx), sizeof keep);
    (void)seed_entries(ctx, RS_DEFAULT_SEED);
    memcpy(rs_errbuf(ctx), keep, sizeof keep);
}

int rngsnap_seed_all(rngsnap *ctx, uint64_t seed)
{
    if (!ctx)
        return rs_error(NULL, RNGSNAP_E_INVALID,
                        "rngsnap_seed_all: ctx is NULL");
    rs_ctx_lock(ctx);
    int rc = seed_all_locked(ctx, seed);
    rs_ctx_unlock(ctx);
    return rc;
}
