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

/* One byte per thread: its address names the thread in ctx->holder. */
static _Thread_local char rs_this_thread;

void rs_ctx_lock(struct rngsnap *ctx)
{
    pthread_mutex_lock(&ctx->lock);
    atomic_store_explicit(&ctx->holder, (uintptr_t)&rs_this_thread,
                          memory_order_relaxed);
}

void rs_ctx_unlock(struct rngsnap *ctx)
{
    atomic_store_explicit(&ctx->holder, 0, memory_order_relaxed);
    pthread_mutex_unlock(&ctx->lock);
}

/* Only this thread stores its own address, and it clears it before
 * unlocking: another thread's value never equals ours. */
int rs_ctx_held_here(struct rngsnap *ctx)
{
    return atomic_load_explicit(&ctx->holder, memory_order_relaxed)
           == (uintptr_t)&rs_this_thread;
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
