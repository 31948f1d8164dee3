/*
 * ranks.c - rngsnap_save_ranks and rngsnap_load_ranks: one checkpoint of
 * a whole job, a folder committed by a manifest written last, over the
 * collectives the caller hands in (rngsnap_comm).  No MPI here.
 *
 * Every step of both protocols ends in step(): an allgather of every
 * rank's code (plus a small payload), so that all ranks go on or all
 * stop, with the first failing rank's message.  Protocol and file system
 * needs: docs/user-guide.md "Multi-rank checkpoints"; formats:
 * docs/format.md "Multi-rank folders".
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define XXH_STATIC_LINKING_ONLY /* XXH3_state_t on the stack */
#include <xxhash.h>

#include "context.h"
#include "fork.h"
#include "internal.h"
#include "lock.h"
#include "manifest.h"
#include "store.h"
#include "words.h"

#define SAVE_FLAGS (RNGSNAP_SAVE_REPLACE | RNGSNAP_SAVE_NO_SYNC)
#define LOAD_FLAGS RNGSNAP_LOAD_FORK
/* Broadcasts of the manifest go in pieces of this size, so that a rank
 * that cannot allocate still takes part (into a buffer on its stack). */
#define BCAST_CHUNK 65536u
/* Stale temporaries of rank files older than this belong to no save. */
#define TMP_GRACE_S 60
#define FORK_TAG "rngsnap-fork-v1" /* 16 bytes with its NUL */
/* Bytes of a step kept on the stack: 28-byte records of 145 ranks. */
#define STEP_STACK 4096u

/* One collective call in progress. */
typedef struct job {
    struct rngsnap *ctx;
    const rngsnap_comm *c;
    const char *op;  /* "save_ranks" or "load_ranks" */
    const char *dir;
    int comm_broke;  /* a collective itself failed: ranks may disagree */
    char old_hex[2 * RS_MAN_ID_SIZE + 1]; /* save, rank 0: the id of the
                                              manifest it replaces, or "" */
} job;

/* ---- the collective step ---------------------------------------------------- */

/* Every rank gives its code rc and plen bytes of payload (NULL: zeros);
 * all (c->size * plen bytes, may be NULL) gets every rank's payload.  Returns 0 when every rank's code is 0; otherwise every rank
 * sets "rank R of N: <R's message>" with the first failing rank R's code
 * and returns it. */
static int step(job *j, int rc, const void *payload, size_t plen,
                uint8_t *all)
{
    const rngsnap_comm *c = j->c;
    size_t rec = 4 + plen, n = (size_t)c->size;
    /* A small job's step allocates nothing, so it cannot fail to take
     * part.  A rank that cannot allocate a bigger one returns alone and
     * leaves the others waiting, like a failing collective (documented:
     * the job must then abort). */
    uint8_t small[STEP_STACK], *send = small, *recv = small + rec;
    int heap = rec * (n + 1) > sizeof small;
    if (heap) {
        send = malloc(rec);
        recv = malloc(rec * n);
        if (!send || !recv) {
            free(send);
            free(recv);
            return rs_error(j->ctx, RNGSNAP_E_NOMEM,
                            "%s %s: out of memory for the collective step "
                            "(%zu bytes); the other ranks cannot go on",
                            j->op, j->dir, rec * (n + 1));
        }
    }
    int32_t code = rc;
    memcpy(send, &code, 4);
    if (plen && payload)
        memcpy(send + 4, payload, plen);
    else if (plen) /* a rank that could not build its payload */
        memset(send + 4, 0, plen);
    int x = c->allgather(c->user, send, recv, rec);
    if (heap)
        free(send);
    if (x != 0) {
        if (heap)
            free(recv);
        j->comm_broke = 1;
        return rs_error(j->ctx, RNGSNAP_E_BACKEND,
                        "%s %s: communicator allgather failed (returned %d)",
                        j->op, j->dir, x);
    }
    int first = -1;
    for (size_t r = 0; r < n; r++) {
        memcpy(&code, recv + r * rec, 4);
        if (plen && all)
            memcpy(all + r * plen, recv + r * rec + 4, plen);
        if (code != 0 && first < 0) {
            first = (int)r;
            rc = code;
        }
    }
    if (heap)
        free(recv);
    if (first < 0)
        return RNGSNAP_OK;
    char msg[RS_ERRMSG_MAX];
    if (c->rank == first)
        snprintf(msg, sizeof msg, "%s", rngsnap_errmsg(j->ctx));
    x = c->broadcast(c->user, msg, sizeof msg, first);
    if (x != 0) {
        j->comm_broke = 1;
        return rs_error(j->ctx, RNGSNAP_E_BACKEND,
                        "%s %s: communicator broadcast failed (returned %d) "
                        "after rank %d failed with code %d",
                        j->op, j->dir, x, first, rc);
    }
    msg[sizeof msg - 1] = 0; /* never trust a peer's bytes to end */
    if (rc < RNGSNAP_E_CONFIG || rc > RNGSNAP_E_DURABILITY)
        rc = RNGSNAP_E_BACKEND;
    return rs_error(j->ctx, rc, "rank %d of %d: %s", first, c->size, msg);
}

/* Checks every rank makes before the first step.  A comm without its
 * functions cannot agree on anything: that one is local. */
static int comm_usable(struct rngsnap *ctx, const rngsnap_comm *c,
                       const char *op)
{
    if (c && c->unusable)
        return rs_error(ctx, RNGSNAP_E_INVALID,
                        "%s: no communicator: %s (nothing collective ran)",
                        op, c->unusable);
    if (!c || !c->allgather || !c->broadcast || c->size < 1 || c->rank < 0
        || c->rank >= c->size)
        return rs_error(ctx, RNGSNAP_E_INVALID,
                        "%s: the communicator is NULL, lacks allgather or "
                        "broadcast, or has rank %d outside 0..size-1 "
                        "(size %d)",
                        op, c ? c->rank : -1, c ? c->size : 0);
    /* Every rank has the same size, so every rank refuses alike, before
     * any collective (and before a step sized by it). */
    if (c->size > RS_MAN_WORLD_MAX)
        return rs_error(ctx, RNGSNAP_E_INVALID,
                        "%s: a communicator of %d ranks; a manifest records "
                        "at most %d (nothing collective ran)",
                        op, c->size, RS_MAN_WORLD_MAX);
    return RNGSNAP_OK;
}

static int first_checks(job *j, unsigned flags, unsigned allowed)
{
    struct rngsnap *ctx = j->ctx;
    if (j->c->rank != ctx->rank || j->c->size != ctx->world_size)
        return rs_error(ctx, RNGSNAP_E_INVALID,
                        "%s %s: the communicator is rank %d of %d but the "
                        "context is rank %d of %d (%s or the launcher's "
                        "variables); they must be equal",
                        j->op, j->dir, j->c->rank, j->c->size, ctx->rank,
                        ctx->world_size, rs_word(ctx, RS_W_SET_RANK));
    if (!j->dir[0])
        return rs_error(ctx, RNGSNAP_E_INVALID, "%s: no folder given",
                        j->op);
    if (flags & ~allowed)
        return rs_error(ctx, RNGSNAP_E_INVALID, "%s %s: unknown flags 0x%x",
                        j->op, j->dir, flags & ~allowed);
    return rs_check_usable(ctx);
}

/* dir/name into a new string (NULL: no memory). */
static char *join(const char *dir, const char *name)
{
    size_t n = strlen(dir) + strlen(name) + 2;
    char *p = malloc(n);
    if (p)
        snprintf(p, n, "%s/%s", dir, name);
    return p;
}

/* ---- save ---------------------------------------------------------------- */

/* The id of the manifest a REPLACE save replaces: after the commit its
 * files are nobody's and go at once.  Unreadable or damaged: its files
 * are left to the age rule of clean_folder. */
static void note_replaced(job *j, const char *mpath)
{
    uint8_t *buf;
    size_t len;
    char err[RS_ERRMSG_MAX];
    struct rngsnap_manifest *m;
    if (rs_store_read(mpath, 0, &buf, &len, err, sizeof err) != 0)
        return;
    if (rs_man_decode(buf, len, mpath, j->dir, &m, err, sizeof err) == 0) {
        memcpy(j->old_hex, m->info.id, sizeof j->old_hex);
        rngsnap_manifest_close(m);
    }
    free(buf);
}

/* Rank 0, before anything is written: the folder exists (one level is
 * created), it holds no committed checkpoint unless REPLACE, and a new
 * checkpoint id. */
static int prepare_dir(job *j, unsigned flags, uint8_t id[RS_MAN_ID_SIZE])
{
    struct rngsnap *ctx = j->ctx;
    struct stat st;
    if (mkdir(j->dir, 0777) != 0 && errno != EEXIST)
        return rs_error(ctx, RNGSNAP_E_IO, "%s %s: cannot create the "
                        "folder: %s", j->op, j->dir, strerror(errno));
    if (stat(j->dir, &st) != 0 || !S_ISDIR(st.st_mode))
        return rs_error(ctx, RNGSNAP_E_IO, "%s %s: not a folder", j->op,
                        j->dir);
    char *mpath = join(j->dir, RS_MAN_FILE);
    if (!mpath)
        return rs_error(ctx, RNGSNAP_E_NOMEM, "%s %s: out of memory", j->op,
                        j->dir);
    int rc = RNGSNAP_OK;
    if (lstat(mpath, &st) == 0) {
        /* Valid or not, a manifest is someone's commit record. */
        if (!(flags & RNGSNAP_SAVE_REPLACE))
            rc = rs_error(ctx, RNGSNAP_E_EXISTS,
                          "%s %s: %s exists (a committed checkpoint); pass "
                          "%s to replace it",
                          j->op, j->dir, mpath,
                          rs_word(ctx, RS_W_SAVE_REPLACE));
        else
            note_replaced(j, mpath);
    } else if (errno != ENOENT) {
        rc = rs_error(ctx, RNGSNAP_E_IO, "%s %s: cannot stat %s: %s", j->op,
                      j->dir, mpath, strerror(errno));
    }
    free(mpath);
    if (!rc && getrandom(id, RS_MAN_ID_SIZE, 0) != (ssize_t)RS_MAN_ID_SIZE)
        rc = rs_error(ctx, RNGSNAP_E_IO, "%s %s: getrandom failed: %s",
                      j->op, j->dir, strerror(errno));
    return rc;
}

/* "rank-" digits "." 32 hex ".rngsnap": a rank file of some checkpoint. */
static int is_rank_file(const char *n)
{
    if (strncmp(n, "rank-", 5) != 0)
        return 0;
    const char *p = n + 5;
    size_t digits = 0;
    while (*p >= '0' && *p <= '9') {
        p++;
        digits++;
    }
    if (digits < 5 || *p++ != '.')
        return 0;
    for (unsigned i = 0; i < 2 * RS_MAN_ID_SIZE; i++, p++)
        if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f')))
            return 0;
    return strcmp(p, ".rngsnap") == 0;
}

/* Rank 0, after the commit: remove the rank files of the manifest it
 * replaced, and rank files and their temporaries that no save has
 * touched for TMP_GRACE_S (saves that never committed).  A young rank
 * file of another id may be another job's, about to be committed (two
 * jobs in one folder are not supported, but must not end in a manifest
 * naming removed files).  Only names of these shapes are ever removed. */
static void clean_folder(job *j, const char *keep_hex)
{
    DIR *d = opendir(j->dir);
    if (!d)
        return;
    struct dirent *e;
    time_t now = time(NULL);
    while ((e = readdir(d)) != NULL) {
        const char *n = e->d_name;
        if (strstr(n, keep_hex))
            continue;
        int rank_file = is_rank_file(n), stale = 0;
        if (rank_file && j->old_hex[0] && strstr(n, j->old_hex))
            stale = 1;
        else if (rank_file
                 || (n[0] == '.' && strncmp(n + 1, "rank-", 5) == 0
                     && strstr(n, ".rngsnap.tmp-"))) {
            struct stat st;
            stale = fstatat(dirfd(d), n, &st, AT_SYMLINK_NOFOLLOW) == 0
                    && S_ISREG(st.st_mode)
                    && now - st.st_mtime > TMP_GRACE_S;
        }
        if (stale && unlinkat(dirfd(d), n, 0) == 0)
            rs_log(j->ctx, RNGSNAP_LOG_INFO,
                   "%s %s: removed %s (not part of committed checkpoint %s)",
                   j->op, j->dir, n, keep_hex);
    }
    closedir(d);
}

/* What each rank tells the others after writing its file. */
typedef struct rank_rec {
    uint64_t size, sum;
    uint32_t napps, pad;
} rank_rec;

/* Rank 0: the manifest from every rank's record and app list, written
 * last (temporary, fsync, rename, folder fsync: rs_store_write). */
static int commit_manifest(job *j, unsigned flags,
                           const uint8_t id[RS_MAN_ID_SIZE],
                           const rank_rec *recs, const uint64_t *apps_all,
                           uint32_t maxapps, const uint64_t *mine)
{
    struct rngsnap *ctx = j->ctx;
    int n = j->c->size, rc;
    rngsnap_manifest_rank *ranks = calloc((size_t)n, sizeof *ranks);
    rngsnap_manifest_file *files = calloc((size_t)n, sizeof *files);
    rngsnap_manifest_app *apps = calloc(ctx->napps + 1, sizeof *apps);
    uint8_t *buf = NULL;
    size_t len;
    char *mpath = join(j->dir, RS_MAN_FILE);
    if (!ranks || !files || !apps || !mpath) {
        rc = rs_error(ctx, RNGSNAP_E_NOMEM, "%s %s: out of memory", j->op,
                      j->dir);
        goto out;
    }
    /* Bridge to the version-2 manifest until the node protocol lands:
     * one file per rank, the image its whole file.  The allgather
     * carries no coordinates, so none are recorded yet. */
    for (int r = 0; r < n; r++) {
        files[r].first_rank = r;
        files[r].rank_count = 1;
        files[r].size = ranks[r].size = recs[r].size;
        files[r].checksum = ranks[r].checksum = recs[r].sum;
        ranks[r].file_index = (size_t)r;
        ranks[r].coords = "";
    }
    /* An app state is the same on all ranks when every rank has one of
     * that name (hash) with the same bytes (hash) as rank 0.  Ranks
     * normally register alike: the same place is tried first, so the
     * search is linear only on a miss. */
    for (size_t i = 0; i < ctx->napps; i++) {
        apps[i].name = ctx->apps[i].name;
        apps[i].checksum = mine[2 * i + 1];
        int same = 1;
        for (int r = 1; r < n && same; r++) {
            const uint64_t *l = apps_all + (size_t)r * 2 * maxapps;
            int found = i < recs[r].napps && l[2 * i] == mine[2 * i]
                        && l[2 * i + 1] == mine[2 * i + 1];
            for (uint32_t k = 0; k < recs[r].napps && !found; k++)
                found = l[2 * k] == mine[2 * i]
                        && l[2 * k + 1] == mine[2 * i + 1];
            same = found;
        }
        apps[i].same_on_all_ranks = same;
    }
    char err[RS_ERRMSG_MAX];
    rs_man_out o = {.world_size = n, .created_unix = (int64_t)time(NULL),
                    .id = id, .forked_from = ctx->forked_from,
                    .per_rank_files = 1, .files = files, .file_count = (size_t)n,
                    .ranks = ranks, .apps = apps, .app_count = ctx->napps};
    rc = rs_man_encode(&o, &buf, &len, err, sizeof err);
    if (rc) {
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
    free(files);
    free(ranks);
    return rc;
}

static int save_ranks_locked(job *j, unsigned flags)
{
    struct rngsnap *ctx = j->ctx;
    const rngsnap_comm *c = j->c;
    uint8_t id[RS_MAN_ID_SIZE] = {0};
    int rc = first_checks(j, flags, SAVE_FLAGS);
    if (!rc && atomic_load(&ctx->awaiting_load))
        rc = rs_error(ctx, RNGSNAP_E_ORDER,
                      "%s %s: this context was opened with %s and has not "
                      "loaded a checkpoint yet (call %s first). "
                      RS_FIRST_RUN, j->op, j->dir, rs_word(ctx, RS_W_RESUME),
                      rs_word(ctx, RS_W_LOAD_RANKS),
                      rs_word(ctx, RS_W_RESUME),
                      rs_word(ctx, RS_W_SEED_ALL));
    if (!rc && c->rank == 0)
        rc = prepare_dir(j, flags, id);
    uint8_t *ids = malloc((size_t)c->size * RS_MAN_ID_SIZE);
    if (!ids && !rc)
        rc = rs_error(ctx, RNGSNAP_E_NOMEM, "%s %s: out of memory", j->op,
                      j->dir);
    /* Step 1: the folder is ready, and rank 0's id reaches every rank. */
    rc = step(j, rc, id, RS_MAN_ID_SIZE, ids);
    if (!rc)
        memcpy(id, ids, RS_MAN_ID_SIZE);
    free(ids);
    if (rc)
        return rc;

    /* Step 2: every rank writes its own file durably, then tells its
     * size, checksum and app state count. */
    char name[RS_MAN_RANK_NAME_MAX], hex[2 * RS_MAN_ID_SIZE + 1];
    rs_man_rank_file(c->rank, id, name);
    rs_man_hex(id, hex);
    char *path = join(j->dir, name);
    uint64_t *mine = calloc(2 * ctx->napps + 1, sizeof *mine);
    uint64_t *sums = calloc(ctx->napps + 1, sizeof *sums);
    uint8_t *img = NULL;
    size_t len = 0;
    int written = 0;
    rank_rec rec = {0, 0, (uint32_t)ctx->napps, 0};
    if (!path || !mine || !sums)
        rc = rs_error(ctx, RNGSNAP_E_NOMEM, "%s %s: out of memory", j->op,
                      j->dir);
    if (!rc)
        rc = rs_save_image(ctx, path, &img, &len, sums);
    if (!rc) {
        char err[RS_ERRMSG_MAX];
        /* Leftovers of killed saves are removed by rank 0 after the
         * commit (clean_folder), not by a scan per rank here. */
        rc = rs_store_write(ctx, path, img, len,
                            (flags & RNGSNAP_SAVE_NO_SYNC)
                                | RS_STORE_FRESH_NAME,
                            err, sizeof err);
        written = rc == RNGSNAP_OK || rc == RNGSNAP_E_DURABILITY;
        if (rc == RNGSNAP_E_DURABILITY) /* not durable: cannot commit */
            rc = rs_error(ctx, RNGSNAP_E_IO, "%s (rank %d's file)", err,
                          c->rank);
        else if (rc)
            rs_error(ctx, rc, "%s (rank %d's file)", err, c->rank);
        rec.size = len;
        rec.sum = XXH3_64bits(img, len);
    }
    free(img);
    if (!rc) /* (name hash, bytes hash) pairs, in registration order */
        for (size_t i = 0; i < ctx->napps; i++) {
            mine[2 * i + 1] = sums[i];
            mine[2 * i] = XXH3_64bits(ctx->apps[i].name,
                                      strlen(ctx->apps[i].name));
        }
    rank_rec *recs = malloc((size_t)c->size * sizeof *recs);
    if (!recs && !rc)
        rc = rs_error(ctx, RNGSNAP_E_NOMEM, "%s %s: out of memory", j->op,
                      j->dir);
    rc = step(j, rc, &rec, sizeof rec, (uint8_t *)recs);

    /* Step 2b: every rank's (name, bytes) hashes of its app states, so
     * rank 0 can record which are the same on every rank. */
    uint32_t maxapps = 0;
    uint64_t *apps_all = NULL, *pay = NULL;
    if (!rc) {
        for (int r = 0; r < c->size; r++)
            if (recs[r].napps > maxapps)
                maxapps = recs[r].napps;
    }
    if (!rc && maxapps) {
        size_t plen = (size_t)maxapps * 16;
        pay = calloc(maxapps, 16);
        apps_all = malloc(plen * (size_t)c->size);
        int lrc = RNGSNAP_OK;
        if (!pay || !apps_all)
            lrc = rs_error(ctx, RNGSNAP_E_NOMEM, "%s %s: out of memory",
                           j->op, j->dir);
        else
            memcpy(pay, mine, ctx->napps * 16);
        rc = step(j, lrc, pay, plen, (uint8_t *)apps_all);
    }

    /* Step 3: rank 0 commits; all learn how that went. */
    int maybe_committed = 0;
    if (!rc) {
        int crc = RNGSNAP_OK;
        if (c->rank == 0)
            crc = commit_manifest(j, flags, id, recs, apps_all, maxapps,
                                  mine);
        j->comm_broke = 0;
        rc = step(j, crc, NULL, 0, NULL);
        if (rc == RNGSNAP_OK && c->rank == 0)
            clean_folder(j, hex);
        /* DURABILITY: the manifest naming this rank's file is in place.
         * A collective that failed here hides rank 0's outcome, and rank
         * 0 may have renamed the manifest: keep the file (the next
         * save's clean_folder removes it if it was not committed). */
        maybe_committed = rc == RNGSNAP_E_DURABILITY
                          || (c->rank == 0 ? crc == RNGSNAP_OK
                                                 || crc == RNGSNAP_E_DURABILITY
                                           : j->comm_broke);
        if (rc && maybe_committed && rc != RNGSNAP_E_DURABILITY) {
            char keep[RS_ERRMSG_MAX];
            snprintf(keep, sizeof keep, "%s", rngsnap_errmsg(ctx));
            rs_error(ctx, rc, "%s; rank 0 %s the manifest of checkpoint %s, "
                     "so rank %d keeps its file",
                     keep, c->rank == 0 ? "committed" : "may have committed",
                     hex, c->rank);
        }
    }
    /* Not committed: this rank's new file is nobody's. */
    if (rc && !maybe_committed && written)
        unlink(path);
    free(pay);
    free(apps_all);
    free(recs);
    free(sums);
    free(mine);
    free(path);
    return rc;
}

/* The public calls: check the communicator, then run op's steps with the
 * context locked for the whole call. */
static int run_job(rngsnap *ctx, const rngsnap_comm *comm, const char *dir,
                   unsigned flags, const char *op,
                   int (*steps)(job *j, unsigned flags))
{
    if (!ctx)
        return RNGSNAP_E_INVALID;
    if (rs_forked(ctx)) { /* this process alone, before the lock (fork.h) */
        char what[RS_ERRMSG_MAX];
        snprintf(what, sizeof what, "%s %s", op, dir ? dir : "");
        return rs_fork_refuse(ctx, what, strcmp(op, "load_ranks") == 0);
    }
    rs_ctx_lock(ctx);
    int rc = comm_usable(ctx, comm, op);
    if (!rc) {
        job j = {ctx, comm, op, dir ? dir : "", 0, ""};
        rc = steps(&j, flags);
    }
    rs_ctx_unlock(ctx);
    return rc;
}

RNGSNAP_API int rngsnap_save_ranks(rngsnap *ctx, const rngsnap_comm *comm,
                                   const char *dir, unsigned flags)
{
    return run_job(ctx, comm, dir, flags, "save_ranks", save_ranks_locked);
}

/* ---- load ---------------------------------------------------------------- */

/* Rank 0's manifest bytes to every rank, in pieces (see BCAST_CHUNK). */
static int bcast_bytes(job *j, uint8_t *buf, size_t len)
{
    uint8_t spare[BCAST_CHUNK];
    for (size_t off = 0; off < len; off += BCAST_CHUNK) {
        size_t n = len - off < BCAST_CHUNK ? len - off : BCAST_CHUNK;
        int x = j->c->broadcast(j->c->user, buf ? buf + off : spare, n, 0);
        if (x != 0)
            return rs_error(j->ctx, RNGSNAP_E_BACKEND,
                            "%s %s: communicator broadcast failed "
                            "(returned %d)",
                            j->op, j->dir, x);
    }
    return RNGSNAP_OK;
}

/* The fork's base seed (docs/user-guide.md, "Multi-rank checkpoints"):
 * XXH3-64 of the tag, the checkpoint id and every rank file's checksum
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

/* A fork: every live app state must be in the manifest and the same on
 * every saved rank; every stream gets what rngsnap_seed_all(base) gives
 * at this rank. */
static int fork_plan(job *j, const struct rngsnap_manifest *m,
                     uint64_t *seeds)
{
    struct rngsnap *ctx = j->ctx;
    for (size_t i = 0; i < ctx->napps; i++) {
        const char *n = ctx->apps[i].name;
        const rngsnap_manifest_app *a = NULL;
        if (i < m->info.app_count && strcmp(m->apps[i].name, n) == 0)
            a = &m->apps[i]; /* registered as the saving job did */
        for (size_t k = 0; k < m->info.app_count && !a; k++)
            if (strcmp(m->apps[k].name, n) == 0)
                a = &m->apps[k];
        if (!a)
            return rs_error(ctx, RNGSNAP_E_MISMATCH,
                            "%s %s: fork: app state %s is not in checkpoint "
                            "%s; nothing restored",
                            j->op, j->dir, n, m->info.id);
        if (!a->same_on_all_ranks)
            return rs_error(ctx, RNGSNAP_E_MISMATCH,
                            "%s %s: fork refused: app state %s differs "
                            "between saved ranks, so no one copy of it "
                            "belongs on every new rank; nothing restored",
                            j->op, j->dir, n);
    }
    uint64_t base = fork_base(m);
    for (size_t e = 0; e < ctx->nstreams; e++) {
        const struct rngsnap_stream *s = &ctx->streams[e];
        seeds[e] = rs_derive_seed(base, s->backend->name, s->device,
                                  s->name);
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

/* Read saved rank r's file whole and check it against the manifest (size,
 * then XXH3-64).  A missing file is RNGSNAP_E_IO (as any unreadable one),
 * a damaged, truncated or foreign one RNGSNAP_E_CORRUPT; the message
 * names the file, after how (what this load is, "" for an exact one). */
static int read_rank_file(job *j, const struct rngsnap_manifest *m, int r,
                          const char *how, char **path, uint8_t **buf,
                          size_t *len)
{
    char err[RS_ERRMSG_MAX];
    *buf = NULL;
    if (!(*path = join(j->dir, m->ranks[r].file)))
        return rs_error(j->ctx, RNGSNAP_E_NOMEM, "%s %s: out of memory",
                        j->op, j->dir);
    int rc = rs_store_read(*path, (size_t)m->ranks[r].size, buf, len, err,
                           sizeof err);
    if (!rc && (rc = rs_man_check_rank(m, r, *path, *buf, *len, err,
                                       sizeof err)) != 0) {
        free(*buf);
        *buf = NULL;
    }
    if (rc)
        rs_error(j->ctx, rc, "%s %s: %s%s; nothing restored", j->op, j->dir,
                 how, err);
    return rc;
}

/* This rank's share of the saved rank files: r, r + N, r + 2N, ... for
 * rank r of this job's N ranks, so that between them the ranks check
 * every file the manifest names (an exact resume: each its own; a fork:
 * all W of them, whatever W).  The bytes and path of file src, when in
 * the share, are kept for the restore; the others are freed. */
static int check_share(job *j, const struct rngsnap_manifest *m, int src,
                       const char *how, char **spath, uint8_t **sbuf,
                       size_t *slen)
{
    for (int32_t r = j->c->rank; r < m->info.world_size; r += j->c->size) {
        char *path;
        uint8_t *buf;
        size_t len;
        int rc = read_rank_file(j, m, r, how, &path, &buf, &len);
        if (rc == RNGSNAP_OK && r == src) {
            *spath = path;
            *sbuf = buf;
            *slen = len;
            continue;
        }
        free(path);
        free(buf);
        if (rc)
            return rc;
    }
    return RNGSNAP_OK;
}

/* Step 1 on rank 0: read and verify the manifest. */
static int read_manifest(job *j, uint8_t **buf, size_t *len)
{
    char *mpath = join(j->dir, RS_MAN_FILE);
    if (!mpath)
        return rs_error(j->ctx, RNGSNAP_E_NOMEM, "%s %s: out of memory",
                        j->op, j->dir);
    char err[RS_ERRMSG_MAX];
    int rc = rs_store_read(mpath, 0, buf, len, err, sizeof err);
    free(mpath);
    if (rc == RNGSNAP_E_IO)
        return rs_error(j->ctx, rc, "%s %s: not a committed multi-rank "
                        "checkpoint (%s)", j->op, j->dir, err);
    if (rc)
        return rs_error(j->ctx, rc, "%s %s: %s", j->op, j->dir, err);
    return RNGSNAP_OK;
}

static int load_ranks_locked(job *j, unsigned flags)
{
    struct rngsnap *ctx = j->ctx;
    const rngsnap_comm *c = j->c;
    uint8_t *mbuf = NULL, *fbuf = NULL;
    size_t mlen = 0, flen = 0;
    struct rngsnap_manifest *m = NULL;
    uint64_t *seeds = NULL;
    char *fpath = NULL;
    rs_load_plan plan;
    memset(&plan, 0, sizeof plan);

    int rc = first_checks(j, flags, LOAD_FLAGS);
    if (!rc) { /* refused on every rank together, at step 1 */
        char what[RS_ERRMSG_MAX];
        snprintf(what, sizeof what, "%s %s", j->op, j->dir);
        rc = rs_reload_gate(ctx, what);
    }
    if (!rc && c->rank == 0)
        rc = read_manifest(j, &mbuf, &mlen);
    uint64_t len64 = mlen, *lens = malloc((size_t)c->size * 8);
    if (!lens && !rc)
        rc = rs_error(ctx, RNGSNAP_E_NOMEM, "%s %s: out of memory", j->op,
                      j->dir);
    /* Step 1: the manifest is there (and its length reaches all). */
    rc = step(j, rc, &len64, 8, (uint8_t *)lens);
    if (!rc)
        mlen = (size_t)lens[0];
    free(lens);
    if (rc)
        goto out;
    if (c->rank != 0)
        mbuf = malloc(mlen ? mlen : 1);
    rc = bcast_bytes(j, mbuf, mlen);
    if (rc)
        goto out;

    /* Step 2: every rank decodes the manifest and checks its share of
     * the rank files against it (check_share): a damaged or incomplete
     * folder is refused as such, whatever the flags, before anything is
     * matched or restored. */
    char err[RS_ERRMSG_MAX], how[96] = "";
    char *mpath = join(j->dir, RS_MAN_FILE);
    if (!mbuf || !mpath)
        rc = rs_error(ctx, RNGSNAP_E_NOMEM, "%s %s: out of memory", j->op,
                      j->dir);
    else if ((rc = rs_man_decode(mbuf, mlen, mpath, j->dir, &m, err,
                                 sizeof err)) != 0)
        rs_error(ctx, rc, "%s %s: %s", j->op, j->dir, err);
    free(mpath);
    int fork = 0;
    if (!rc && m->info.world_size != c->size) {
        if (!(flags & RNGSNAP_LOAD_FORK))
            rc = rs_error(ctx, RNGSNAP_E_MISMATCH,
                          "checkpoint %s was saved by %d ranks, this job "
                          "has %d; pass %s to fork it onto %d ranks",
                          j->dir, (int)m->info.world_size, c->size,
                          rs_word(ctx, RS_W_LOAD_FORK), c->size);
        fork = 1;
        snprintf(how, sizeof how, "fork of %d ranks onto %d: ",
                 (int)m->info.world_size, c->size);
    }
    int src = fork ? 0 : c->rank;
    if (!rc)
        rc = check_share(j, m, src, how, &fpath, &fbuf, &flen);
    rc = step(j, rc, NULL, 0, NULL);
    if (rc)
        goto out;

    /* Step 3: every rank matches the file it restores from (its own;
     * rank 0's in a fork, which ranks other than 0 read again) against
     * its registry. */
    if (fork) {
        seeds = malloc((ctx->nstreams + 1) * sizeof *seeds);
        rc = seeds ? fork_plan(j, m, seeds)
                   : rs_error(ctx, RNGSNAP_E_NOMEM, "%s %s: out of memory",
                              j->op, j->dir);
    }
    if (!rc && !fbuf)
        rc = read_rank_file(j, m, src, how, &fpath, &fbuf, &flen);
    if (!rc)
        rc = rs_load_prepare(ctx, fpath, fbuf, flen, seeds,
                             m->info.world_size, &plan);
    rc = step(j, rc, NULL, 0, NULL);
    if (rc)
        goto out;

    /* Step 4: every rank is ready; all commit, and undo if any failed.
     * Streams stay locked until the outcome is known, so no draw sees a
     * state that is then rolled back. */
    rs_streams_lock_all(ctx);
    rc = rs_load_commit(ctx, &plan);
    rc = step(j, rc, NULL, 0, NULL);
    if (rc) {
        size_t bad = rs_load_undo(ctx, &plan);
        if (bad) {
            char keep[RS_ERRMSG_MAX];
            snprintf(keep, sizeof keep, "%s", rngsnap_errmsg(ctx));
            rs_error(ctx, rc, "%s; rank %d's undo of its committed states "
                     "was INCOMPLETE (%zu states)", keep, c->rank, bad);
        }
    } else {
        memcpy(ctx->forked_from, fork ? m->id : m->forked_from,
               sizeof ctx->forked_from);
        rs_mark_loaded(ctx); /* a fork onto another world size too */
    }
    rs_streams_unlock_all(ctx);
out:
    rs_load_finish(&plan);
    rngsnap_manifest_close(m);
    free(seeds);
    free(fpath);
    free(fbuf);
    free(mbuf);
    return rc;
}

RNGSNAP_API int rngsnap_load_ranks(rngsnap *ctx, const rngsnap_comm *comm,
                                   const char *dir, unsigned flags)
{
    return run_job(ctx, comm, dir, flags, "load_ranks", load_ranks_locked);
}
