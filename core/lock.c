/*
 * lock.c - slow paths of the stream locks and the whole-context locks
 * (see lock.h for the design).
 */
#include <pthread.h>
#include <sched.h>

#include "lock.h"

void rs_stream_lock_wait(struct rngsnap_stream *s)
{
    for (unsigned spins = 0;; spins++) {
        /* Wait on a plain load (no cache-line ping-pong), then retry. */
        while (atomic_load_explicit(&s->busy, memory_order_relaxed)) {
            if (++spins > 64)
                sched_yield();
        }
        if (!atomic_exchange_explicit(&s->busy, 1, memory_order_acquire))
            return;
    }
}

void rs_ctx_lock(struct rngsnap *ctx)
{
    pthread_mutex_lock(&ctx->lock);
}

void rs_ctx_unlock(struct rngsnap *ctx)
{
    pthread_mutex_unlock(&ctx->lock);
}

void rs_streams_lock_all(struct rngsnap *ctx)
{
    for (size_t i = 0; i < ctx->nstreams; i++)
        rs_stream_lock(&ctx->streams[i]);
}

void rs_streams_unlock_all(struct rngsnap *ctx)
{
    for (size_t i = ctx->nstreams; i-- > 0;)
        rs_stream_unlock(&ctx->streams[i]);
}
