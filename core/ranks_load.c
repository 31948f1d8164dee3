/*
 * ranks_load.c - rngsnap_load_ranks: rank 0 reads and verifies the
 * manifest, checks every rank's coordinates and sends each rank its
 * record; each rank reads and verifies only its own image; all restore
 * together or none does.  Steps (each ends in rs_net_agree):
 *
 *   1. rank 0 reads the manifest; every rank learns its summary (world
 *      size, fork or not, ids, the fork's base seed);
 *   2. every rank's coordinates go to rank 0, which compares them with
 *      the saved ones and sends each rank its record (which image to
 *      restore from; in a fork, its share of images to check too);
 *   3. every rank reads and checks its images, then prepares its load;
 *   4. every rank commits, and undoes if any rank failed.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define XXH_STATIC_LINKING_ONLY /* XXH3_state_t on the stack */
#include <xxhash.h>

#include "context.h"
#include "internal.h"
#include "lock.h"
#include "manifest.h"
#include "ranks_folder.h"
#include "ranks_int.h"
#include "ranks_wire.h"
#include "store.h"
#include "words.h"

#define LOAD_FLAGS RNGSNAP_LOAD_FORK
#define FORK_TAG "rngsnap-fork-v1" /* 16 bytes with its NUL */

/* What every rank learns of the manifest in step 1 (rank 0's payload). */
typedef struct summary {
    int32_t world;       /* saved world size */
    uint32_t fork;       /* 1: another world size, RNGSNAP_LOAD_FORK */
    uint64_t fork_base;  /* fork: the base seed */
    uint32_t apps_len;   /* fork: bytes of the app list broadcast next */
    uint8_t id[RS_MAN_ID_SIZE], forked_from[RS_MAN_ID_SIZE];
} summary;

/* One image to read: where it is and what it must be. */
typedef struct image_ref {
    int rank; /* the saved rank */
    char file[RS_MAN_RANK_NAME_MAX];
    uint64_t offset, len, sum, file_size;
} image_ref;

/* ---- step 1: the manifest ------------------------------------------------ */

static int read_manifest(rs_job *j, struct rngsnap_manifest **m)
{
    char *mpath = rs_folder_join(j->dir, RS_MAN_FILE);
    uint8_t *buf = NULL;
    size_t len;
    char err[RS_ERRMSG_MAX];
    if (!mpath)
        return rs_error(j->ctx, RNGSNAP_E_NOMEM, "%s %s: out of memory",
                        j->op, j->dir);
    int rc = rs_store_read(mpath, 0, &buf, &len, err, sizeof err);
    if (rc == RNGSNAP_E_IO)
        rs_error(j->ctx, rc, "%s %s: not a committed multi-rank "
                 "checkpoint (%s)", j->op, j->dir, err);
    else if (rc)
        rs_error(j->ctx, rc, "%s %s: %s", j->op, j->dir, err);
    else if ((rc = rs_man_decode(buf, len, mpath, j->dir, m, err,
                                 sizeof err)) != 0)
        rs_error(j->ctx, rc, "%s %s: %s", j->op, j->dir, err);
    free(buf);
    free(mpath);
    return rc;
}

/* The fork's base seed (docs/user-guide.md, "Multi-rank checkpoints"):
 * XXH3-64 of the tag, the checkpoint id and every rank image's checksum
 * (little-endian, rank order). */
static uint64_t fork_base(const struct rngsnap_manifest *m)
{
    XXH3_state_t st;
    uint8_t le[8];
    XXH3_64bits_reset(&st);
    XXH3_64bits_update(&st, FORK_TAG, sizeof FORK_TAG);
    XXH3_64bits_update(&st, m->id, RS_MAN_ID_SIZE);
    for (int32_t r = 0; r < m->info.world_size; r++) {
        for (int i = 0; i < 8; i++)
            le[i] = (uint8_t)(m->ranks[r].checksum >> (8 * i));
        XXH3_64bits_update(&st, le, 8);
    }
    return XXH3_64bits_digest(&st);
}

/* Rank 0: the summary, or why the manifest cannot be used. */
static int summarise(rs_job *j, unsigned flags,
                     const struct rngsnap_manifest *m, summary *s,
                     rs_wbuf *apps)
{
    s->world = m->info.world_size;
    memcpy(s->id, m->id, RS_MAN_ID_SIZE);
    memcpy(s->forked_from, m->forked_from, RS_MAN_ID_SIZE);
    if (s->world == j->c->size)
        return RNGSNAP_OK;
    if (!(flags & RNGSNAP_LOAD_FORK))
        return rs_error(j->ctx, RNGSNAP_E_MISMATCH,
                        "checkpoint %s was saved by %d ranks, this job "
                        "has %d; pass %s to fork it onto %d ranks",
                        j->dir, (int)s->world, j->c->size,
                        rs_word(j->ctx, RS_W_LOAD_FORK), j->c->size);
    s->fork = 1;
    s->fork_base = fork_base(m);
    for (size_t i = 0; i < m->info.app_count; i++) {
        rs_w_str(apps, m->apps[i].name);
        rs_w_u32(apps, (uint32_t)m->apps[i].same_on_all_ranks);
    }
    if (apps->nomem)
        return rs_error(j->ctx, RNGSNAP_E_NOMEM, "%s %s: out of memory",
                        j->op, j->dir);
    s->apps_len = (uint32_t)apps->len;
    return RNGSNAP_OK;
}

/* ---- step 2: coordinates and records ------------------------------------- */

static const char *coords_of(const char *table, int rank)
{
    return table + (size_t)rank * RS_COORDS_MAX;
}

/* Rank 0, an exact resume: every rank's coordinates against the saved
 * rank of its number.  The first difference is named with the saved
 * rank that had these coordinates and the rank that has the saved ones:
 * a job re-mapped to other parallel groups (Megatron-LM #6858). */
static int check_coords(rs_job *j, const struct rngsnap_manifest *m,
                        const char *live)
{
    struct rngsnap *ctx = j->ctx;
    int W = m->info.world_size, r = 0, differ = 0;
    for (int k = 0; k < W; k++)
        if (strcmp(coords_of(live, k), m->ranks[k].coords) != 0 && !differ++)
            r = k;
    if (!differ)
        return RNGSNAP_OK;
    const char *now = coords_of(live, r), *saved = m->ranks[r].coords;
    const char *set = rs_word(ctx, RS_W_SET_COORDS);
    if (!*now)
        return rs_error(ctx, RNGSNAP_E_MISMATCH,
                        "%s %s: rank %d has no coordinates, but the "
                        "checkpoint's rank %d was saved with (%s); call %s "
                        "with each rank's coordinates before the load; "
                        "nothing restored",
                        j->op, j->dir, r, r, saved, set);
    if (!*saved)
        return rs_error(ctx, RNGSNAP_E_MISMATCH,
                        "%s %s: the checkpoint's rank %d was saved without "
                        "coordinates, and this job's rank %d has (%s); "
                        "call %s after the load (they are recorded from "
                        "the next save on); nothing restored",
                        j->op, j->dir, r, r, now, set);
    int had = -1, has = -1;
    for (int k = 0; k < W && had < 0; k++)
        if (strcmp(m->ranks[k].coords, now) == 0)
            had = k;
    for (int k = 0; k < W && has < 0; k++)
        if (strcmp(coords_of(live, k), saved) == 0)
            has = k;
    char more[RS_ERRMSG_MAX / 2] = "";
    size_t used = 0;
    if (had >= 0)
        used += (size_t)snprintf(more, sizeof more,
                                 "; the checkpoint's rank %d was saved "
                                 "with (%s)", had, now);
    if (has >= 0 && used < sizeof more)
        snprintf(more + used, sizeof more - used,
                 "; this job's rank %d has (%s)", has, saved);
    return rs_error(ctx, RNGSNAP_E_MISMATCH,
                    "%s %s: rank %d has coordinates (%s) but the "
                    "checkpoint's rank %d was saved with (%s)%s (%d of %d "
                    "ranks differ): this job maps its ranks to other "
                    "parallel groups than the saved job did, so rank %d "
                    "would resume another rank's random streams; launch "
                    "with the saved mapping; nothing restored",
                    j->op, j->dir, r, now, r, saved, more, differ, W, r);
}

static void put_ref(rs_wbuf *w, const struct rngsnap_manifest *m, int r)
{
    const rngsnap_manifest_rank *mr = &m->ranks[r];
    rs_w_u32(w, (uint32_t)r);
    rs_w_str(w, mr->file);
    rs_w_u64(w, mr->offset);
    rs_w_u64(w, mr->size);
    rs_w_u64(w, mr->checksum);
    rs_w_u64(w, m->files[mr->file_index].size);
}

static void get_ref(rs_rbuf *r, image_ref *ref)
{
    ref->rank = (int)rs_r_u32(r);
    rs_r_str(r, ref->file, sizeof ref->file);
    ref->offset = rs_r_u64(r);
    ref->len = rs_r_u64(r);
    ref->sum = rs_r_u64(r);
    ref->file_size = rs_r_u64(r);
}

/* Rank r's record: the image it restores from (its own; saved rank 0's
 * in a fork), then the saved images it checks (a fork: r, r + N, ...
 * so that between them the ranks check every image). */
static void put_record(rs_wbuf *w, const struct rngsnap_manifest *m,
                       int fork, int r, int size)
{
    put_ref(w, m, fork ? 0 : r);
    uint32_t share = 0;
    for (int32_t s = r; fork && s < m->info.world_size; s += size)
        share++;
    rs_w_u32(w, share);
    for (int32_t s = r; fork && s < m->info.world_size; s += size)
        put_ref(w, m, s);
}

/* Rank 0: one block per leader, holding its members' records in node
 * order (each as u64 length and bytes); the leaders' member lists come
 * from the coordinate tables (u32 count, then u32 rank and coordinates
 * per member). */
static int records_for_leaders(rs_job *j, const struct rngsnap_manifest *m,
                               int fork, const rs_block *tables,
                               rs_block *out)
{
    rs_net *n = &j->net;
    for (size_t f = 0; f < n->nleaders; f++) {
        rs_rbuf t = {tables[f].data, tables[f].data + tables[f].len, 0};
        uint32_t count = rs_r_u32(&t);
        rs_wbuf w = {0};
        for (uint32_t i = 0; i < count && !t.bad; i++) {
            int r = (int)rs_r_u32(&t);
            char skip[RS_COORDS_MAX];
            rs_r_str(&t, skip, sizeof skip);
            rs_wbuf one = {0};
            put_record(&one, m, fork, r, n->size);
            rs_w_u64(&w, one.len);
            rs_w_put(&w, one.p, one.len);
            w.nomem |= one.nomem;
            free(one.p);
        }
        out[f].data = w.p;
        out[f].len = w.len;
        if (w.nomem)
            return rs_error(j->ctx, RNGSNAP_E_NOMEM, "%s %s: out of memory",
                            j->op, j->dir);
    }
    return RNGSNAP_OK;
}

/* Rank 0: every rank's live coordinates from the leaders' tables. */
static int live_coords(rs_job *j, const rs_block *tables, char **live)
{
    rs_net *n = &j->net;
    *live = calloc((size_t)n->size, RS_COORDS_MAX);
    if (!*live)
        return rs_error(j->ctx, RNGSNAP_E_NOMEM, "%s %s: out of memory",
                        j->op, j->dir);
    for (size_t f = 0; f < n->nleaders; f++) {
        rs_rbuf t = {tables[f].data, tables[f].data + tables[f].len, 0};
        uint32_t count = rs_r_u32(&t);
        for (uint32_t i = 0; i < count && !t.bad; i++) {
            uint32_t r = rs_r_u32(&t);
            if (r >= (uint32_t)n->size) {
                t.bad = 1;
                break;
            }
            rs_r_str(&t, *live + (size_t)r * RS_COORDS_MAX, RS_COORDS_MAX);
        }
        if (t.bad)
            return rs_error(j->ctx, RNGSNAP_E_BACKEND, "%s %s: malformed "
                            "coordinates from leader %d", j->op, j->dir,
                            n->leaders[f]);
    }
    return RNGSNAP_OK;
}

/* Step 2 on every rank: its record in *rec. */
static int exchange_records(rs_job *j, const struct rngsnap_manifest *m,
                            int fork, rs_block *rec)
{
    rs_net *n = &j->net;
    struct rngsnap *ctx = j->ctx;
    rs_block *up = NULL, *tables = NULL, *down = NULL, node = {0};
    rs_wbuf w = {0};
    memset(rec, 0, sizeof *rec);
    /* Coordinates up: to the leader, then each node's table to rank 0. */
    rs_w_str(&w, ctx->coords);
    int x = rs_net_to_leader(n, w.p, w.len, &up);
    free(w.p);
    memset(&w, 0, sizeof w);
    if (x)
        return x;
    if (n->leader == n->rank) {
        rs_w_u32(&w, (uint32_t)n->node_size);
        for (int i = 0; i < n->node_size; i++) {
            rs_w_u32(&w, (uint32_t)up[i].from);
            rs_w_put(&w, up[i].data, up[i].len); /* a wire string */
        }
    }
    rs_blocks_free(up, (size_t)n->node_size);
    x = rs_net_to_root(n, w.p, w.len, &tables);
    free(w.p);
    if (x)
        return x;
    int rc = RNGSNAP_OK;
    if (n->rank == 0) {
        char *live = NULL;
        rc = live_coords(j, tables, &live);
        if (!rc && !fork)
            rc = check_coords(j, m, live);
        free(live);
        if (!rc && !(down = calloc(n->nleaders, sizeof *down)))
            rc = rs_error(ctx, RNGSNAP_E_NOMEM, "%s %s: out of memory",
                          j->op, j->dir);
        if (!rc)
            rc = records_for_leaders(j, m, fork, tables, down);
    }
    rs_blocks_free(tables, n->nleaders);
    if ((rc = rs_net_agree(n, rc, NULL, 0)) != 0) {
        rs_blocks_free(down, n->nleaders);
        return rc;
    }
    /* Records down: rank 0 to the leaders, the leaders to their ranks. */
    x = rs_net_from_root(n, down, &node);
    rs_blocks_free(down, n->nleaders);
    if (x)
        return x;
    rs_block *mine = NULL;
    if (n->leader == n->rank && !(mine = calloc((size_t)n->node_size,
                                                sizeof *mine)))
        x = rs_error(ctx, RNGSNAP_E_NOMEM, "%s %s: out of memory", j->op,
                     j->dir);
    rs_rbuf r = {node.data, node.data + node.len, 0};
    for (int i = 0; mine && i < n->node_size; i++) {
        size_t l = (size_t)rs_r_u64(&r);
        if (r.bad || (size_t)(r.end - r.p) < l) {
            x = rs_error(ctx, RNGSNAP_E_BACKEND, "%s %s: malformed records "
                         "from rank 0", j->op, j->dir);
            break;
        }
        mine[i].data = (uint8_t *)r.p; /* points into node.data */
        mine[i].len = l;
        r.p += l;
    }
    if (!x)
        x = rs_net_from_leader(n, mine, rec);
    free(mine);
    free(node.data);
    return x;
}

/* ---- step 3: this rank's images ------------------------------------------ */

/* Read one image and check it against its record.  A missing file is
 * RNGSNAP_E_IO, a damaged, truncated or grown one RNGSNAP_E_CORRUPT;
 * the message names the file, the rank and what this load is (how). */
static int read_image(rs_job *j, const image_ref *ref, const char *id_hex,
                      const char *how, char **path, uint8_t **buf)
{
    char err[RS_ERRMSG_MAX];
    *buf = NULL;
    if (!(*path = rs_folder_join(j->dir, ref->file)))
        return rs_error(j->ctx, RNGSNAP_E_NOMEM, "%s %s: out of memory",
                        j->op, j->dir);
    int rc = rs_store_read_range(*path, ref->offset, (size_t)ref->len,
                                 ref->file_size, buf, err, sizeof err);
    uint64_t sum = rc ? 0 : XXH3_64bits(*buf, (size_t)ref->len);
    if (!rc && sum != ref->sum) {
        char what[96];
        if (ref->offset == 0 && ref->len == ref->file_size)
            snprintf(what, sizeof what, "rank %d's file", ref->rank);
        else
            snprintf(what, sizeof what, "rank %d's image, %llu bytes at "
                     "offset %llu", ref->rank, (unsigned long long)ref->len,
                     (unsigned long long)ref->offset);
        rc = RNGSNAP_E_CORRUPT;
        snprintf(err, sizeof err, "%s (%s): XXH3-64 0x%016llx, the manifest "
                 "of checkpoint %s records 0x%016llx (damaged, swapped, or "
                 "another checkpoint's file)", *path, what,
                 (unsigned long long)sum, id_hex,
                 (unsigned long long)ref->sum);
    }
    if (rc) {
        free(*buf);
        *buf = NULL;
        rs_error(j->ctx, rc, "%s %s: %s%s; nothing restored", j->op, j->dir,
                 how, err);
    }
    return rc;
}

/* A fork: every live app state must be in the checkpoint and the same on
 * every saved rank; every stream gets what rngsnap_seed_all(base) gives
 * at this rank.  apps: the manifest's app list as step 1 sent it. */
static int fork_plan(rs_job *j, const summary *s, const uint8_t *apps,
                     uint64_t *seeds)
{
    struct rngsnap *ctx = j->ctx;
    for (size_t i = 0; i < ctx->napps; i++) {
        const char *n = ctx->apps[i].name;
        rs_rbuf r = {apps, apps + s->apps_len, 0};
        int found = 0, same = 0;
        while (!found && r.p < r.end && !r.bad) {
            char name[RS_MAN_NAME_MAX + 1];
            rs_r_str(&r, name, sizeof name);
            same = (int)rs_r_u32(&r);
            found = !r.bad && strcmp(name, n) == 0;
        }
        char hex[2 * RS_MAN_ID_SIZE + 1];
        rs_man_hex(s->id, hex);
        if (!found)
            return rs_error(ctx, RNGSNAP_E_MISMATCH,
                            "%s %s: fork: app state %s is not in checkpoint "
                            "%s; nothing restored", j->op, j->dir, n, hex);
        if (!same)
            return rs_error(ctx, RNGSNAP_E_MISMATCH,
                            "%s %s: fork refused: app state %s differs "
                            "between saved ranks, so no one copy of it "
                            "belongs on every new rank; nothing restored",
                            j->op, j->dir, n);
    }
    for (size_t e = 0; e < ctx->nstreams; e++) {
        const struct rngsnap_stream *st = &ctx->streams[e];
        seeds[e] = rs_derive_seed(s->fork_base, st->backend->name,
                                  st->device, st->name);
    }
    size_t a, b;
    if (rs_find_duplicate(seeds, ctx->nstreams, &a, &b)) {
        char la[600], lb[600];
        return rs_error(ctx, RNGSNAP_E_INVALID,
                        "%s %s: fork: entries %s and %s derive the same "
                        "Philox seed 0x%016llx; rename one of the streams",
                        j->op, j->dir,
                        rs_stream_label(&ctx->streams[a], la, sizeof la),
                        rs_stream_label(&ctx->streams[b], lb, sizeof lb),
                        (unsigned long long)seeds[a]);
    }
    return RNGSNAP_OK;
}

/* This rank's share (a fork) and the image it restores from, read and
 * checked; the latter kept in *buf for the plan. */
static int read_images(rs_job *j, const rs_block *rec, const char *id_hex,
                       const char *how, image_ref *src, char **path,
                       uint8_t **buf)
{
    rs_rbuf r = {rec->data, rec->data + rec->len, 0};
    get_ref(&r, src);
    uint32_t share = rs_r_u32(&r);
    if (r.bad)
        return rs_error(j->ctx, RNGSNAP_E_BACKEND, "%s %s: malformed record",
                        j->op, j->dir);
    for (uint32_t i = 0; i < share; i++) {
        image_ref ref;
        char *p;
        uint8_t *b;
        get_ref(&r, &ref);
        if (r.bad)
            return rs_error(j->ctx, RNGSNAP_E_BACKEND, "%s %s: malformed "
                            "record", j->op, j->dir);
        int rc = read_image(j, &ref, id_hex, how, &p, &b);
        free(p);
        free(b);
        if (rc)
            return rc;
    }
    return read_image(j, src, id_hex, how, path, buf);
}

/* ---- the protocol --------------------------------------------------------- */

int rs_ranks_load(rs_job *j, unsigned flags)
{
    struct rngsnap *ctx = j->ctx;
    rs_net *n = &j->net;
    struct rngsnap_manifest *m = NULL;
    summary s;
    rs_wbuf apps = {0};
    rs_block rec = {0};
    uint8_t *applist = NULL, *fbuf = NULL;
    uint64_t *seeds = NULL;
    char *fpath = NULL;
    char label[RS_ERRMSG_MAX / 2];
    rs_load_plan plan;
    memset(&plan, 0, sizeof plan);
    memset(&s, 0, sizeof s);

    int rc = rs_ranks_first_checks(j, flags, LOAD_FLAGS);
    if (!rc) { /* refused on every rank together, at step 1 */
        char what[RS_ERRMSG_MAX];
        snprintf(what, sizeof what, "%s %s", j->op, j->dir);
        rc = rs_reload_gate(ctx, what);
    }
    /* A layout this rank cannot use fails here alone (ranks_net.h). */
    int lrc = rs_net_open(n, ctx, j->c, j->op, j->dir, 0);
    if (lrc)
        return lrc;
    if (!rc && n->rank == 0 && (rc = read_manifest(j, &m)) == 0)
        rc = summarise(j, flags, m, &s, &apps);

    /* Step 1: every rank learns the summary. */
    if ((rc = rs_net_agree(n, rc, &s, sizeof s)) != 0)
        goto out;
    if (s.fork) { /* the app list, for fork_plan (O(app states) bytes) */
        applist = n->rank == 0 ? apps.p : malloc(s.apps_len + 1);
        int x = applist ? n->c->broadcast(n->c->user, applist, s.apps_len, 0)
                        : -1;
        if (n->rank == 0)
            apps.p = NULL; /* applist owns it now */
        if (x) {
            n->comm_broke = 1;
            rc = rs_error(ctx, RNGSNAP_E_BACKEND, "%s %s: communicator "
                          "broadcast of the app list failed", j->op, j->dir);
            goto out;
        }
    }

    /* Step 2: coordinates checked, records out. */
    if ((rc = exchange_records(j, m, (int)s.fork, &rec)) != 0)
        goto out;

    /* Step 3: every rank checks its images: a damaged or incomplete
     * folder is refused as such, whatever else is wrong, before anything
     * is matched; then each matches the image it restores from (its own;
     * saved rank 0's in a fork) against its registry. */
    char how[96] = "", hex[2 * RS_MAN_ID_SIZE + 1];
    if (s.fork)
        snprintf(how, sizeof how, "fork of %d ranks onto %d: ",
                 (int)s.world, n->size);
    rs_man_hex(s.id, hex);
    image_ref src;
    memset(&src, 0, sizeof src);
    rc = read_images(j, &rec, hex, how, &src, &fpath, &fbuf);
    if ((rc = rs_net_agree(n, rc, NULL, 0)) != 0)
        goto out;
    if (s.fork) {
        seeds = malloc((ctx->nstreams + 1) * sizeof *seeds);
        rc = seeds ? fork_plan(j, &s, applist, seeds)
                   : rs_error(ctx, RNGSNAP_E_NOMEM, "%s %s: out of memory",
                              j->op, j->dir);
    }
    /* A rank's own file is named as any checkpoint file; an image in a
     * node's file by its place. */
    if (src.offset == 0 && src.len == src.file_size)
        snprintf(label, sizeof label, "%s", fpath ? fpath : j->dir);
    else
        snprintf(label, sizeof label, "%s (rank %d's image at offset %llu)",
                 fpath ? fpath : j->dir, src.rank,
                 (unsigned long long)src.offset);
    if (!rc)
        rc = rs_load_prepare(ctx, label, fbuf, (size_t)src.len, seeds,
                             s.world, &plan);
    if ((rc = rs_net_agree(n, rc, NULL, 0)) != 0)
        goto out;

    /* Step 4: every rank is ready; all commit, and undo if any failed.
     * Streams stay locked until the outcome is known, so no draw sees a
     * state that is then rolled back. */
    rs_streams_lock_all(ctx);
    rc = rs_load_commit(ctx, &plan);
    rc = rs_net_agree(n, rc, NULL, 0);
    if (rc) {
        size_t bad = rs_load_undo(ctx, &plan);
        if (bad) {
            char keep[RS_ERRMSG_MAX];
            snprintf(keep, sizeof keep, "%s", rngsnap_errmsg(ctx));
            rs_error(ctx, rc, "%s; rank %d's undo of its committed states "
                     "was INCOMPLETE (%zu states)", keep, n->rank, bad);
        }
    } else {
        memcpy(ctx->forked_from, s.fork ? s.id : s.forked_from,
               sizeof ctx->forked_from);
        rs_mark_loaded(ctx); /* a fork onto another world size too */
    }
    rs_streams_unlock_all(ctx);
out:
    rs_load_finish(&plan);
    rngsnap_manifest_close(m);
    free(rec.data);
    free(apps.p);
    free(applist);
    free(seeds);
    free(fpath);
    free(fbuf);
    return rc;
}
