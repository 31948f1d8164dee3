/*
 * ranks.c - rngsnap_save_ranks and rngsnap_load_ranks: one checkpoint of
 * a whole job, a folder of one file per node committed by a manifest
 * written last, over the messages the caller's rngsnap_comm carries.  No
 * MPI here.  The save is ranks_save.c, the load ranks_load.c, how ranks
 * talk ranks_net.c.  Protocol and file system needs: docs/user-guide.md
 * "Multi-rank checkpoints"; formats: docs/format.md "Multi-rank folders".
 */
#include <stdio.h>
#include <string.h>

#include "context.h"
#include "fork.h"
#include "internal.h"
#include "lock.h"
#include "manifest.h"
#include "ranks_int.h"
#include "words.h"

/* Checks every rank makes before anything is sent.  A comm without its
 * functions cannot agree on anything: that one is local. */
static int comm_usable(struct rngsnap *ctx, const rngsnap_comm *c,
                       const char *op)
{
    if (c && c->unusable)
        return rs_error(ctx, RNGSNAP_E_INVALID,
                        "%s: no communicator: %s (nothing collective ran)",
                        op, c->unusable);
    if (!c || !c->broadcast || !c->send || !c->recv || c->size < 1
        || c->rank < 0 || c->rank >= c->size)
        return rs_error(ctx, RNGSNAP_E_INVALID,
                        "%s: the communicator is NULL, lacks broadcast, "
                        "send or recv, or has rank %d outside 0..size-1 "
                        "(size %d)",
                        op, c ? c->rank : -1, c ? c->size : 0);
    /* Every rank has the same size, so every rank refuses alike. */
    if (c->size > RS_MAN_WORLD_MAX)
        return rs_error(ctx, RNGSNAP_E_INVALID,
                        "%s: a communicator of %d ranks; a manifest records "
                        "at most %d (nothing collective ran)",
                        op, c->size, RS_MAN_WORLD_MAX);
    return RNGSNAP_OK;
}

int rs_ranks_first_checks(rs_job *j, unsigned flags, unsigned allowed)
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

/* The public calls: check the communicator, then run op's steps with the
 * context locked for the whole call. */
static int run_job(rngsnap *ctx, const rngsnap_comm *comm, const char *dir,
                   unsigned flags, const char *op,
                   int (*steps)(rs_job *j, unsigned flags))
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
        rs_job j;
        memset(&j, 0, sizeof j);
        j.ctx = ctx;
        j.c = comm;
        j.op = op;
        j.dir = dir ? dir : "";
        rc = steps(&j, flags);
        rs_net_close(&j.net);
    }
    rs_ctx_unlock(ctx);
    return rc;
}

RNGSNAP_API int rngsnap_save_ranks(rngsnap *ctx, const rngsnap_comm *comm,
                                   const char *dir, unsigned flags)
{
    return run_job(ctx, comm, dir, flags, "save_ranks", rs_ranks_save);
}

RNGSNAP_API int rngsnap_load_ranks(rngsnap *ctx, const rngsnap_comm *comm,
                                   const char *dir, unsigned flags)
{
    return run_job(ctx, comm, dir, flags, "load_ranks", rs_ranks_load);
}
