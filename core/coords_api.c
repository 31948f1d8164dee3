/*
 * coords_api.c - rngsnap_set_coords / rngsnap_get_coords: a rank's
 * parallel coordinates ("dp=3,tp=1,pp=0,ep=2"), kept in the context in
 * canonical form (coords.c, rs_coords_canon: sorted by name, no leading
 * zeros).  rngsnap_save_ranks records them per rank in the manifest and
 * an exact rngsnap_load_ranks compares them (ranks.c).
 *
 * The text is checked and made canonical before the lock is taken, so a
 * refused call changes nothing and the lock is held for one copy.
 */
#include <string.h>

#include "context.h"
#include "coords.h"
#include "fork.h"
#include "internal.h"
#include "lock.h"
#include "words.h"

int rngsnap_set_coords(rngsnap *ctx, const char *coords)
{
    if (!ctx)
        return rs_error(NULL, RNGSNAP_E_INVALID,
                        "rngsnap_set_coords: ctx is NULL");
    const char *call = rs_word(ctx, RS_W_SET_COORDS);
    /* Before the lock (fork.h): a lock another of the parent's threads
     * held at the fork stays held in the child.  And the child's saves
     * and loads are refused, so its coordinates would never be used. */
    if (rs_forked(ctx))
        return rs_error(ctx, RNGSNAP_E_ORDER, "%s refused: this process "
                        "is a fork() child of the process that opened the "
                        "context, whose saves and loads are refused here, "
                        "so coordinates set here would never be recorded "
                        "nor checked. Set them in the process that opened "
                        "the context", call);
    /* A save or load runs its callbacks with ctx->lock held. */
    if (rs_ctx_held_here(ctx))
        return rs_error(ctx, RNGSNAP_E_INVALID, "%s: called from a save or "
                        "load callback of the same context (it is locked "
                        "while they run); set the coordinates before the "
                        "save or load", call);
    char canon[RS_COORDS_MAX], why[RS_ERRMSG_MAX / 2];
    int rc = rs_coords_canon(coords, canon, why, sizeof why);
    if (rc)
        return rs_error(ctx, rc, "%s: %s", call, why);
    rs_ctx_lock(ctx);
    memcpy(ctx->coords, canon, sizeof canon);
    rs_ctx_unlock(ctx);
    return RNGSNAP_OK;
}

const char *rngsnap_get_coords(const rngsnap *ctx)
{
    return ctx ? ctx->coords : "";
}
