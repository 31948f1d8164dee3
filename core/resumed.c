/*
 * resumed.c - a context that has loaded a checkpoint resumes that run:
 * what it refuses, how a job leaves it on purpose (rngsnap_branch), and
 * the report at close of a RNGSNAP_RESUME context that never loaded.
 *
 * Strict by default: every successful load (rngsnap_load, _load_mem, the
 * multi-rank load, a world-size fork included) makes the context a
 * resumed one, whatever its open flags.  From then on, until
 * rngsnap_branch:
 *  - rngsnap_seed_all is refused: it would throw the restored positions
 *    away (the "re-seed after restore" mistake);
 *  - a load after a draw is refused: it would rewind the streams drawn
 *    and replay numbers the job has already used;
 *  - rngsnap_register_state is refused: the load restored nothing of a
 *    state registered after it.
 * RNGSNAP_RESUME adds the other half, before the load: draws refused
 * (registry.c, rs_stream_gate), and saves (checkpoint.c, ranks.c).
 *
 * rngsnap_branch is the one deliberate way out, for a run seeded from a
 * checkpoint (load, then re-seed to start a new run off it).  It only
 * clears `resumed`: `loaded` stays, so the seed gate stays open and
 * rs_seed_default never moves the loaded states (a set_rank after the
 * branch keeps them).  A checkpoint records no branch: a seed_all after
 * it clears forked_from as any seeding does (the streams then descend
 * from no checkpoint), and without one the streams still descend from
 * what the load set, forked_from included.
 */
#include <stdio.h>
#include <string.h>

#include "context.h"
#include "fork.h"
#include "internal.h"
#include "lock.h"
#include "words.h"

void rs_mark_loaded(struct rngsnap *ctx)
{
    for (size_t i = 0; i < ctx->nstreams; i++)
        atomic_store_explicit(&ctx->streams[i].drawn, 0,
                              memory_order_relaxed);
    atomic_store(&ctx->loaded, 1);
    atomic_store(&ctx->resumed, 1);
    atomic_store(&ctx->awaiting_load, 0);
}

int rs_resumed_seed_gate(struct rngsnap *ctx)
{
    if (!atomic_load(&ctx->resumed))
        return RNGSNAP_OK;
    return rs_error(ctx, RNGSNAP_E_ORDER, "%s refused: this context has "
                    "loaded a checkpoint, so it resumes that run, and "
                    "seeding now would throw the restored positions away. "
                    "Leave the seeding out when resuming (the load has set "
                    "every stream); to start a new run from this "
                    "checkpoint on purpose, call %s first",
                    rs_word(ctx, RS_W_SEED_ALL), rs_word(ctx, RS_W_BRANCH));
}

int rs_resumed_register_gate(struct rngsnap *ctx, const char *name)
{
    if (!atomic_load(&ctx->resumed))
        return RNGSNAP_OK;
    return rs_error(ctx, RNGSNAP_E_ORDER, "%s %s refused: this context has "
                    "loaded a checkpoint, and that load restored only the "
                    "app states registered before it, so app state %s "
                    "would keep this run's values, not the checkpoint's; "
                    "register every app state before the load (to add one "
                    "to a new run started from this checkpoint on purpose, "
                    "call %s first)", rs_word(ctx, RS_W_REGISTER_STATE),
                    name, name, rs_word(ctx, RS_W_BRANCH));
}

/* A resumed job that loads again after drawing would rewind the streams
 * it drew to the checkpoint's positions and replay numbers it has
 * already used, with nothing to say so; as seeding after the load, that
 * is refused.  `drawn` is cleared by every load, so it names the draws
 * since this one. */
int rs_reload_gate(struct rngsnap *ctx, const char *what)
{
    if (!atomic_load(&ctx->resumed))
        return RNGSNAP_OK;
    char names[900] = "", label[600];
    size_t ndrawn = 0, listed = 0, used = 0;
    for (size_t i = 0; i < ctx->nstreams; i++) {
        rngsnap_stream *s = &ctx->streams[i];
        if (!atomic_load_explicit(&s->drawn, memory_order_relaxed))
            continue;
        ndrawn++;
        rs_stream_label(s, label, sizeof label);
        /* Every one that fits; the rest are counted. */
        size_t need = strlen(label) + (listed ? 2 : 0);
        if (used + need + 1 > sizeof names)
            continue;
        used += (size_t)snprintf(names + used, sizeof names - used, "%s%s",
                                 listed ? ", " : "", label);
        listed++;
    }
    if (ndrawn == 0)
        return RNGSNAP_OK;
    char more[48] = "";
    if (ndrawn > listed)
        snprintf(more, sizeof more, " and %zu more", ndrawn - listed);
    return rs_error(ctx, RNGSNAP_E_ORDER, "%s refused, nothing restored: "
                    "this context has loaded a checkpoint and has drawn "
                    "from stream%s %s%s since its load; loading again would "
                    "rewind %s to the checkpoint's positions and replay "
                    "numbers already used. Load once, before the first "
                    "draw; to go back to a checkpoint on purpose, load it "
                    "into a new context (%s) or call %s first",
                    what, ndrawn > 1 ? "s" : "", names, more,
                    ndrawn > 1 ? "them" : "it", rs_word(ctx, RS_W_OPEN),
                    rs_word(ctx, RS_W_BRANCH));
}

void rs_close_report(const struct rngsnap *ctx)
{
    /* A fork() child closing its copy: the parent reports its own. */
    if (!(ctx->flags & RNGSNAP_RESUME) || atomic_load(&ctx->loaded)
        || rs_forked(ctx))
        return;
    rs_warn_default(ctx, "%s: this context was opened with %s but never "
                    "loaded a checkpoint, so this job resumed nothing (its "
                    "draws and saves, if any, were refused). Call %s right "
                    "after opening; for a first run, open without %s",
                    rs_word(ctx, RS_W_CLOSE), rs_word(ctx, RS_W_RESUME),
                    rs_word(ctx, RS_W_LOAD_ANY), rs_word(ctx, RS_W_RESUME));
}

int rngsnap_branch(rngsnap *ctx)
{
    if (!ctx)
        return rs_error(NULL, RNGSNAP_E_INVALID,
                        "rngsnap_branch: ctx is NULL");
    if (rs_ctx_held_here(ctx)) /* its lock is held: a save/load callback */
        return rs_error(ctx, RNGSNAP_E_INVALID, "%s: called from a save or "
                        "load callback of the same context (it is locked "
                        "while they run)", rs_word(ctx, RS_W_BRANCH));
    rs_ctx_lock(ctx);
    int rc = RNGSNAP_OK;
    if (!atomic_load(&ctx->loaded)) {
        rc = rs_error(ctx, RNGSNAP_E_ORDER, "%s refused: this context has "
                      "not loaded a checkpoint, so there is no run to "
                      "branch from (call %s first); a run that starts "
                      "from no checkpoint needs no branch, only %s",
                      rs_word(ctx, RS_W_BRANCH), rs_word(ctx, RS_W_LOAD_ANY),
                      rs_word(ctx, RS_W_SEED_ALL));
    } else {
        atomic_store(&ctx->resumed, 0);
        rs_log(ctx, RNGSNAP_LOG_INFO, "%s: this context no longer resumes "
               "the checkpoint it loaded; %s, a load and %s are allowed "
               "again", rs_word(ctx, RS_W_BRANCH),
               rs_word(ctx, RS_W_SEED_ALL),
               rs_word(ctx, RS_W_REGISTER_STATE));
    }
    rs_ctx_unlock(ctx);
    return rc;
}
