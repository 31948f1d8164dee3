/*
 * ranks_save.c - rngsnap_save_ranks: every rank's image to its node's
 * leader, one durable file per node, every node's table to rank 0, and
 * rank 0's manifest last.  Steps (each ends in rs_net_agree, so all
 * ranks go on or all stop with the first failing rank's message):
 *
 *   1. rank 0 readies the folder and draws the checkpoint id;
 *   2. each rank sends its image to its leader; each leader writes its
 *      node's file (temporary, fsync, rename, folder fsync);
 *   3. each leader sends its node's table to rank 0, which writes the
 *      manifest (the commit) and then removes what is nobody's.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define XXH_STATIC_LINKING_ONLY /* XXH3_state_t on the stack */
#include <xxhash.h>

#include "context.h"
#include "internal.h"
#include "manifest.h"
#include "ranks_folder.h"
#include "ranks_int.h"
#include "ranks_wire.h"
#include "store.h"
#include "words.h"

#define SAVE_FLAGS \
    (RNGSNAP_SAVE_REPLACE | RNGSNAP_SAVE_NO_SYNC | RNGSNAP_SAVE_PER_RANK_FILES)

/* One rank's image as its leader received it. */
typedef struct member {
    int rank;
    uint32_t code, napps;
    char coords[RS_COORDS_MAX];
    const uint8_t *hashes; /* 2 * napps u64: (name, bytes) XXH3-64 pairs */
    const uint8_t *image;
    size_t len;
} member;

/* ---- step 2: the image, to the leader ----------------------------------- */

/* This rank's block: its code, then (when 0) its app hashes, its
 * coordinates and its image. */
static int image_block(rs_job *j, int rc, rs_wbuf *w)
{
    struct rngsnap *ctx = j->ctx;
    uint8_t *img = NULL;
    size_t len = 0;
    uint64_t *sums = calloc(ctx->napps + 1, sizeof *sums);
    char label[RS_ERRMSG_MAX / 2];
    snprintf(label, sizeof label, "%s (rank %d)", j->dir, j->c->rank);
    if (!rc && !sums)
        rc = rs_error(ctx, RNGSNAP_E_NOMEM, "%s %s: out of memory", j->op,
                      j->dir);
    if (!rc)
        rc = rs_save_image(ctx, label, &img, &len, sums);
    rs_w_u32(w, (uint32_t)rc);
    if (!rc) {
        rs_w_u32(w, (uint32_t)ctx->napps);
        rs_w_str(w, ctx->coords);
        for (size_t i = 0; i < ctx->napps; i++) {
            const char *n = ctx->apps[i].name;
            rs_w_u64(w, XXH3_64bits(n, strlen(n)));
            rs_w_u64(w, sums[i]);
        }
        rs_w_put(w, img, len);
    }
    free(img);
    free(sums);
    if (w->nomem) { /* send what fits: the code says it failed */
        w->len = 0;
        w->nomem = 0;
        rc = rs_error(ctx, RNGSNAP_E_NOMEM, "%s %s: out of memory", j->op,
                      j->dir);
        rs_w_u32(w, (uint32_t)rc);
    }
    return rc;
}

static void parse_member(const rs_block *b, member *m)
{
    rs_rbuf r = {b->data, b->data + b->len, 0};
    memset(m, 0, sizeof *m);
    m->rank = b->from;
    m->code = rs_r_u32(&r);
    if (m->code)
        return;
    m->napps = rs_r_u32(&r);
    rs_r_str(&r, m->coords, sizeof m->coords);
    size_t hl = (size_t)m->napps * 16;
    if (r.bad || (size_t)(r.end - r.p) < hl) {
        m->code = RNGSNAP_E_BACKEND;
        return;
    }
    m->hashes = r.p;
    m->image = r.p + hl;
    m->len = (size_t)(r.end - m->image);
}

/* The leader: its node's file, the images end to end in rank order, and
 * the node's table for rank 0 into w.  *written: the file is in place. */
static int write_node(rs_job *j, unsigned flags, const uint8_t *id,
                      const rs_block *blocks, char **path, int *written,
                      rs_wbuf *w)
{
    struct rngsnap *ctx = j->ctx;
    rs_net *n = &j->net;
    member *ms = calloc((size_t)n->node_size, sizeof *ms);
    if (!ms)
        return rs_error(ctx, RNGSNAP_E_NOMEM, "%s %s: out of memory", j->op,
                        j->dir);
    size_t total = 0;
    for (int i = 0; i < n->node_size; i++) {
        parse_member(&blocks[i], &ms[i]);
        if (ms[i].code) { /* that rank says why at the next agree */
            free(ms);
            return RNGSNAP_OK;
        }
        total += ms[i].len;
    }
    char name[RS_MAN_RANK_NAME_MAX];
    if (flags & RNGSNAP_SAVE_PER_RANK_FILES)
        rs_man_rank_file(n->rank, id, name);
    else
        rs_man_node_file(n->rank, id, name);
    uint8_t *buf = malloc(total ? total : 1);
    *path = rs_folder_join(j->dir, name);
    if (!buf || !*path) {
        free(buf);
        free(ms);
        return rs_error(ctx, RNGSNAP_E_NOMEM, "%s %s: out of memory", j->op,
                        j->dir);
    }
    rs_w_u32(w, (uint32_t)n->node_size);
    rs_w_u64(w, total);
    size_t off = 0;
    for (int i = 0; i < n->node_size; i++) {
        memcpy(buf + off, ms[i].image, ms[i].len);
        rs_w_u32(w, (uint32_t)ms[i].rank);
        rs_w_u64(w, off);
        rs_w_u64(w, ms[i].len);
        rs_w_u64(w, XXH3_64bits(ms[i].image, ms[i].len));
        rs_w_str(w, ms[i].coords);
        rs_w_u32(w, ms[i].napps);
        rs_w_put(w, ms[i].hashes, (size_t)ms[i].napps * 16);
        off += ms[i].len;
    }
    rs_w_u64(w, XXH3_64bits(buf, total));
    free(ms);
    char err[RS_ERRMSG_MAX];
    /* Leftovers of killed saves are removed by rank 0 after the commit
     * (rs_folder_clean), not by a scan per leader here. */
    int rc = rs_store_write(ctx, *path, buf, total,
                            (flags & RNGSNAP_SAVE_NO_SYNC)
                                | RS_STORE_FRESH_NAME,
                            err, sizeof err);
    free(buf);
    *written = rc == RNGSNAP_OK || rc == RNGSNAP_E_DURABILITY;
    if (rc == RNGSNAP_E_DURABILITY) /* not durable: cannot commit */
        rc = rs_error(ctx, RNGSNAP_E_IO, "%s (the file of node %s)", err,
                      name);
    else if (rc)
        rs_error(ctx, rc, "%s (the file of node %s)", err, name);
    if (!rc && w->nomem)
        rc = rs_error(ctx, RNGSNAP_E_NOMEM, "%s %s: out of memory", j->op,
                      j->dir);
    return rc;
}

/* ---- step 3: the manifest, on rank 0 ---------------------------------- */

/* What rank 0 gathers: every file and rank record, and every rank's app
 * hashes (to tell which app states are the same on all ranks). */
typedef struct gathered {
    rngsnap_manifest_file *files;
    rngsnap_manifest_rank *ranks;
    const uint8_t **hashes; /* per rank */
    uint32_t *napps;
    char *coords;           /* world * RS_COORDS_MAX */
} gathered;

static int bad_table(rs_job *j, int leader, const char *why)
{
    return rs_error(j->ctx, RNGSNAP_E_BACKEND,
                    "%s %s: node table of leader %d: %s", j->op, j->dir,
                    leader, why);
}

static int read_tables(rs_job *j, const rs_block *tables, gathered *g)
{
    rs_net *n = &j->net;
    for (size_t f = 0; f < n->nleaders; f++) {
        rs_rbuf r = {tables[f].data, tables[f].data + tables[f].len, 0};
        uint32_t count = rs_r_u32(&r);
        g->files[f].first_rank = n->leaders[f];
        g->files[f].rank_count = count;
        g->files[f].size = rs_r_u64(&r);
        for (uint32_t i = 0; i < count && !r.bad; i++) {
            uint32_t rank = rs_r_u32(&r);
            if (rank >= (uint32_t)n->size || g->ranks[rank].file)
                return bad_table(j, n->leaders[f], "a rank twice or out "
                                 "of range");
            rngsnap_manifest_rank *mr = &g->ranks[rank];
            mr->file = ""; /* seen; the encoder names the files */
            mr->file_index = f;
            mr->offset = rs_r_u64(&r);
            mr->size = rs_r_u64(&r);
            mr->checksum = rs_r_u64(&r);
            char *co = g->coords + (size_t)rank * RS_COORDS_MAX;
            rs_r_str(&r, co, RS_COORDS_MAX);
            mr->coords = co;
            g->napps[rank] = rs_r_u32(&r);
            size_t hl = (size_t)g->napps[rank] * 16;
            if ((size_t)(r.end - r.p) < hl)
                r.bad = 1;
            else {
                g->hashes[rank] = r.p;
                r.p += hl;
            }
        }
        g->files[f].checksum = rs_r_u64(&r);
        if (r.bad || r.p != r.end)
            return bad_table(j, n->leaders[f], "malformed");
    }
    for (int r = 0; r < n->size; r++)
        if (!g->ranks[r].file)
            return bad_table(j, 0, "a rank is in no node");
    return RNGSNAP_OK;
}

/* An app state is the same on all ranks when every rank has one of that
 * name (hash) with the same bytes (hash) as rank 0.  Ranks normally
 * register alike: the same place is tried first. */
static int same_on_all(const gathered *g, int size, size_t i,
                       const uint8_t *mine)
{
    for (int r = 1; r < size; r++) {
        const uint8_t *l = g->hashes[r];
        int found = i < g->napps[r] && memcmp(l + 16 * i, mine, 16) == 0;
        for (uint32_t k = 0; k < g->napps[r] && !found; k++)
            found = memcmp(l + 16 * k, mine, 16) == 0;
        if (!found)
            return 0;
    }
    return 1;
}

static int commit_manifest(rs_job *j, unsigned flags, const uint8_t *id,
                           const rs_block *tables)
{
    struct rngsnap *ctx = j->ctx;
    rs_net *n = &j->net;
    size_t W = (size_t)n->size;
    gathered g = {calloc(n->nleaders, sizeof *g.files),
                  calloc(W, sizeof *g.ranks), calloc(W, sizeof *g.hashes),
                  calloc(W, sizeof *g.napps), malloc(W * RS_COORDS_MAX)};
    rngsnap_manifest_app *apps = calloc(ctx->napps + 1, sizeof *apps);
    char *mpath = rs_folder_join(j->dir, RS_MAN_FILE);
    uint8_t *buf = NULL;
    size_t len;
    int rc;
    if (!g.files || !g.ranks || !g.hashes || !g.napps || !g.coords || !apps
        || !mpath) {
        rc = rs_error(ctx, RNGSNAP_E_NOMEM, "%s %s: out of memory", j->op,
                      j->dir);
        goto out;
    }
    if ((rc = read_tables(j, tables, &g)) != 0)
        goto out;
    for (size_t i = 0; i < ctx->napps; i++) {
        apps[i].name = ctx->apps[i].name;
        apps[i].checksum = 0;
        memcpy(&apps[i].checksum, g.hashes[0] + 16 * i + 8, 8);
        apps[i].same_on_all_ranks =
            same_on_all(&g, n->size, i, g.hashes[0] + 16 * i);
    }
    rs_man_out o = {
        .world_size = n->size,
        .created_unix = (int64_t)time(NULL),
        .id = id,
        .forked_from = ctx->forked_from,
        .per_rank_files = (flags & RNGSNAP_SAVE_PER_RANK_FILES) != 0,
        .emulated_ranks_per_node = n->emulated,
        .files = g.files,
        .file_count = n->nleaders,
        .ranks = g.ranks,
        .apps = apps,
        .app_count = ctx->napps,
    };
    char err[RS_ERRMSG_MAX];
    if ((rc = rs_man_encode(&o, &buf, &len, err, sizeof err)) != 0) {
        rs_error(ctx, rc, "%s %s: %s", j->op, j->dir, err);
        goto out;
    }
    unsigned wf = flags & (RNGSNAP_SAVE_REPLACE | RNGSNAP_SAVE_NO_SYNC);
    rc = rs_store_write(ctx, mpath, buf, len, wf, err, sizeof err);
    if (rc == RNGSNAP_E_EXISTS)
        rs_error(ctx, rc, "%s %s: %s (another save committed first)", j->op,
                 j->dir, err);
    else if (rc)
        rs_error(ctx, rc, "%s %s: committing the manifest: %s", j->op,
                 j->dir, err);
out:
    free(buf);
    free(mpath);
    free(apps);
    free(g.files);
    free(g.ranks);
    free(g.hashes);
    free(g.napps);
    free(g.coords);
    return rc;
}

/* ---- the protocol --------------------------------------------------------- */

int rs_ranks_save(rs_job *j, unsigned flags)
{
    struct rngsnap *ctx = j->ctx;
    rs_net *n = &j->net;
    uint8_t id[RS_MAN_ID_SIZE] = {0};
    char old_hex[2 * RS_MAN_ID_SIZE + 1] = "";
    int rc = rs_ranks_first_checks(j, flags, SAVE_FLAGS);
    if (!rc && atomic_load(&ctx->awaiting_load))
        rc = rs_error(ctx, RNGSNAP_E_ORDER,
                      "%s %s: this context was opened with %s and has not "
                      "loaded a checkpoint yet (call %s first). "
                      RS_FIRST_RUN, j->op, j->dir, rs_word(ctx, RS_W_RESUME),
                      rs_word(ctx, RS_W_LOAD_RANKS),
                      rs_word(ctx, RS_W_RESUME),
                      rs_word(ctx, RS_W_SEED_ALL));
    /* A layout this rank cannot use fails here alone (ranks_net.h). */
    int lrc = rs_net_open(n, ctx, j->c, j->op, j->dir,
                          (flags & RNGSNAP_SAVE_PER_RANK_FILES) != 0);
    if (lrc)
        return lrc;
    if (!rc && n->rank == 0)
        rc = rs_folder_prepare(ctx, j->op, j->dir,
                               (flags & RNGSNAP_SAVE_REPLACE) != 0, id,
                               old_hex);
    /* Step 1: the folder is ready, and rank 0's id reaches every rank. */
    if ((rc = rs_net_agree(n, rc, id, sizeof id)) != 0)
        return rc;
    char hex[2 * RS_MAN_ID_SIZE + 1];
    rs_man_hex(id, hex);

    /* Step 2: images to the leaders, one file per node. */
    rs_wbuf mine = {0}, table = {0};
    rs_block *blocks = NULL;
    char *path = NULL;
    int written = 0;
    rc = image_block(j, RNGSNAP_OK, &mine);
    int x = rs_net_to_leader(n, mine.p, mine.len, &blocks);
    free(mine.p);
    if (x)
        return x;
    if (n->leader == n->rank) { /* its own image's failure comes first */
        int wrc = write_node(j, flags, id, blocks, &path, &written, &table);
        rc = rc ? rc : wrc;
    }
    rs_blocks_free(blocks, (size_t)n->node_size);
    rc = rs_net_agree(n, rc, NULL, 0);

    /* Step 3: rank 0 commits from every node's table; all learn how
     * that went. */
    int maybe_committed = 0;
    if (!rc) {
        rs_block *tables = NULL;
        x = rs_net_to_root(n, table.p, table.len, &tables);
        int crc = x;
        if (!x && n->rank == 0)
            crc = commit_manifest(j, flags, id, tables);
        rs_blocks_free(tables, n->nleaders);
        if (x) {
            rc = x;
        } else {
            n->comm_broke = 0;
            rc = rs_net_agree(n, crc, NULL, 0);
        }
        if (rc == RNGSNAP_OK && n->rank == 0)
            rs_folder_clean(ctx, j->op, j->dir, hex, old_hex);
        /* DURABILITY: the manifest naming this node's file is in place.
         * A message that failed here hides rank 0's outcome, and rank 0
         * may have renamed the manifest: keep the file (the next save's
         * rs_folder_clean removes it if it was not committed). */
        maybe_committed = rc == RNGSNAP_E_DURABILITY
                          || (n->rank == 0 ? crc == RNGSNAP_OK
                                                 || crc == RNGSNAP_E_DURABILITY
                                           : n->comm_broke);
        if (rc && maybe_committed && written && rc != RNGSNAP_E_DURABILITY) {
            char keep[RS_ERRMSG_MAX];
            snprintf(keep, sizeof keep, "%s", rngsnap_errmsg(ctx));
            rs_error(ctx, rc, "%s; rank 0 %s the manifest of checkpoint %s, "
                     "so rank %d keeps its node's file",
                     keep, n->rank == 0 ? "committed" : "may have committed",
                     hex, n->rank);
        }
    }
    free(table.p);
    /* Not committed: this node's new file is nobody's. */
    if (rc && !maybe_committed && written)
        unlink(path);
    free(path);
    return rc;
}
