/*
 * lock.h - the locks of the thread contract (rngsnap.h, "Threads").
 *
 * A stream's lock is one atomic int, not a pthread mutex: an uncontended
 * draw of one U32 pays one exchange and one store (~3 ns) instead of a
 * mutex's ~10 ns, and the 30 ns budget of a one-value draw is tight.
 * Contention is rare (two threads on one stream, or a save reading every
 * stream for a moment), so the slow path simply yields until it is free.
 *
 * Whole-context calls (save, load, seed_all) take ctx->lock first, then
 * every stream's lock in registry order; a draw holds one stream's lock
 * and never waits for another, so the order cannot deadlock.
 */
#ifndef RNGSNAP_CORE_LOCK_H
#define RNGSNAP_CORE_LOCK_H

#include <stdatomic.h>

#include "context.h"

void rs_stream_lock_wait(struct rngsnap_stream *s);

static inline void rs_stream_lock(struct rngsnap_stream *s)
{
    if (atomic_exchange_explicit(&s->busy, 1, memory_order_acquire))
        rs_stream_lock_wait(s);
}

static inline void rs_stream_unlock(struct rngsnap_stream *s)
{
    atomic_store_explicit(&s->busy, 0, memory_order_release);
}

/* ctx->lock, then every stream's lock in registry order. */
void rs_ctx_lock(struct rngsnap *ctx);
void rs_ctx_unlock(struct rngsnap *ctx);
/* Does the calling thread hold ctx->lock?  (It does while a save or load
 * runs its callbacks.) */
int rs_ctx_held_here(struct rngsnap *ctx);
void rs_streams_lock_all(struct rngsnap *ctx);
void rs_streams_unlock_all(struct rngsnap *ctx);

#endif /* RNGSNAP_CORE_LOCK_H */
